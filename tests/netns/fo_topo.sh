# shellcheck shell=bash
# Two rails between two hosts for the failover tests and bench (sourced,
# after tests/lib/netns.sh and netns_init). Each rail is a switch: a
# namespace with a Linux bridge joining a veth to A and a veth to B.
#
#   A:va1 10.86.1.1/24 -- [S1: s1a  br1  s1b] -- B:vb1 10.86.1.2/24
#   A:va2 10.86.2.1/24 -- [S2: s2a  br2  s2b] -- B:vb2 10.86.2.2/24
#
# A link down at a switch (fo_link RAIL SIDE down: the bridge port facing
# that host) takes the carrier of that host's interface only: the host on
# the other side of the switch sees nothing. A black hole (fo_hole RAIL on)
# stops the bridge forwarding (both its ports in the disabled state) and
# no link state shows it: only timeouts can find it.
#
#   fo_topo_build [MTU]      FO_A FO_B FO_S1 FO_S2 (namespaces), built and pinged
#   fo_link RAIL a|b up|down the bridge port of rail 1|2 facing A or B
#   fo_hole RAIL on|off      rail 1|2 forwards nothing / again
#   fo_carrier NS IF         0 when IF in NS has its carrier (RUNNING), else 1

FO_A='' FO_B='' FO_S1='' FO_S2=''

fo_topo_build() {
	local mtu=${1:-1500} r s
	FO_A=$NETNS_PREFIX-a FO_B=$NETNS_PREFIX-b FO_S1=$NETNS_PREFIX-s1 FO_S2=$NETNS_PREFIX-s2
	netns_add "$FO_A" "$FO_B" "$FO_S1" "$FO_S2"
	for r in 1 2; do
		s=FO_S$r
		s=${!s}
		netns_veth "$FO_A" va$r "$s" s${r}a --ip-a 10.86.$r.1/24 --mtu "$mtu"
		netns_veth "$FO_B" vb$r "$s" s${r}b --ip-a 10.86.$r.2/24 --mtu "$mtu"
		# no STP: the ports forward at once, and their state can be set by hand (fo_hole)
		ip -n "$s" link add br$r type bridge stp_state 0 mcast_snooping 0 ||
			{ echo "FAIL: cannot create bridge br$r in $s"; exit 1; }
		if ! ip -n "$s" link set br$r mtu "$mtu" up || ! ip -n "$s" link set s${r}a master br$r ||
			! ip -n "$s" link set s${r}b master br$r; then
			echo "FAIL: cannot join s${r}a and s${r}b to br$r in $s"
			exit 1
		fi
	done
	for r in 1 2; do
		netns_wait_until 10 ip netns exec "$FO_A" ping -c 1 -W 1 10.86.$r.2 >/dev/null 2>&1 ||
			{ echo "FAIL: A cannot ping B across rail $r"; exit 1; }
	done
}

fo_link() {
	local s=FO_S$1
	ip -n "${!s}" link set "s$1$2" "$3"
}

fo_hole() {
	local s=FO_S$1 st=3 p
	[ "$2" = on ] && st=0
	for p in a b; do
		ip netns exec "${!s}" bridge link set dev "s$1$p" state $st || return 1
	done
}

fo_carrier() {
	ip -n "$1" -o link show dev "$2" 2>/dev/null | grep -q '[<,]LOWER_UP[,>]'
}
