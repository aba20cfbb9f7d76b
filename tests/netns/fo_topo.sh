# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Two rails between two hosts for the failover tests and bench (sourced,
# after tests/lib/netns.sh and netns_init). Bridged (the default), each
# rail is a switch: a namespace with a Linux bridge joining a veth to A and
# a veth to B.
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
# Direct (--direct), two veth pairs and nothing between, in namespaces of
# their own (DA, DB), so that a test can hold both topologies at once:
#
#   DA:va1 10.86.1.1/24 ------------------------ DB:vb1 10.86.1.2/24
#   DA:va2 10.86.2.1/24 ------------------------ DB:vb2 10.86.2.2/24
#
# fo_link RAIL SIDE down sets that host's own interface down, and a veth
# takes the carrier off both its ends: both hosts see the link go. One side
# cannot fail without the other seeing it, and there is no black hole
# (fo_hole refuses).
#
# Interface indices are chosen (A's ends 1101/1102, B's 1301/1302, the
# switches' ports 1201/1202 and 1401/1402) because the kernel's linkwatch
# tells of a carrier change at once only on a device whose iflink differs
# from its ifindex (a veth whose peer has another index). Otherwise (a
# physical NIC, or a veth whose peer in another namespace happens to have
# the same index) the change is batched, one linkwatch run a second at
# most, and the netlink message (IFF_RUNNING) can come up to a second
# late. With "batched" the switches' ports take their host end's index, so
# every host interface is of the second kind; direct, B's ends take A's
# indices (1101/1102), so that va1 and vb1 are each other's iflink.
#
#   fo_topo_build [--direct] [MTU] [urgent|batched]
#                            FO_A FO_B (namespaces), FO_S1 FO_S2 (bridged; empty
#                            when direct), FO_DIRECT (1 when direct, else 0); built
#                            and pinged
#   fo_link RAIL a|b up|down bridged: the bridge port of rail 1|2 facing A or B;
#                            direct: A's or B's own end of rail 1|2
#   fo_ifspec RAIL a|b       NSPATH:IF of the interface fo_link RAIL a|b sets (for
#                            a program that sets it itself, SIOCSIFFLAGS via setns)
#   fo_hole RAIL on|off      rail 1|2 forwards nothing / again (bridged only)
#   fo_carrier NS IF         0 when IF in NS has its carrier (LOWER_UP), else 1

FO_A='' FO_B='' FO_S1='' FO_S2='' FO_DIRECT=0

# fo__veth NSH IFH IDXH NSS IFS IDXS CIDR MTU: host end IFH (address CIDR), switch end IFS
fo__veth() {
	fo__direct "$1" "$2" "$3" "$4" "$5" "$6" "$7" "" "$8"
}

# fo__direct NSA IFA IDXA NSB IFB IDXB CIDRA CIDRB MTU: a veth pair, an address on
# each end (none on IFB when CIDRB is empty)
fo__direct() {
	ip link add name "$2" index "$3" netns "$1" type veth peer name "$5" index "$6" netns "$4" ||
		{ echo "FAIL: cannot create the veth pair $2-$5"; exit 1; }
	netns_addr "$1" "$2" "$7"
	[ -z "$8" ] || netns_addr "$4" "$5" "$8"
	netns_mtu "$9" "$1" "$2" "$4" "$5"
	if ! ip -n "$1" link set dev "$2" up || ! ip -n "$4" link set dev "$5" up; then
		echo "FAIL: cannot bring $2 and $5 up"
		exit 1
	fi
	if ! netns_wait_link "$1" "$2" || ! netns_wait_link "$4" "$5"; then
		echo "FAIL: the veth pair $2-$5 did not come up"
		exit 1
	fi
}

fo_topo_build() {
	local direct=0 mtu lw r s sa sb db
	if [ "${1:-}" = --direct ]; then
		direct=1
		shift
	fi
	mtu=${1:-1500} lw=${2:-urgent}
	case "$lw" in
	urgent) sa=1200 sb=1400 db=1300 ;;
	batched) sa=1100 sb=1300 db=1100 ;;
	*) echo "FAIL: fo_topo_build: '$lw', accepted urgent or batched"; exit 1 ;;
	esac
	FO_DIRECT=$direct
	if [ $direct = 1 ]; then
		FO_A=$NETNS_PREFIX-da FO_B=$NETNS_PREFIX-db FO_S1='' FO_S2=''
		netns_add "$FO_A" "$FO_B"
		# B's ends: 1301/1302 (urgent), or A's own indices (batched)
		for r in 1 2; do
			fo__direct "$FO_A" va$r $((1100 + r)) "$FO_B" vb$r $((db + r)) \
				10.86.$r.1/24 10.86.$r.2/24 "$mtu"
		done
	else
		FO_A=$NETNS_PREFIX-a FO_B=$NETNS_PREFIX-b FO_S1=$NETNS_PREFIX-s1 FO_S2=$NETNS_PREFIX-s2
		netns_add "$FO_A" "$FO_B" "$FO_S1" "$FO_S2"
		for r in 1 2; do
			s=FO_S$r
			s=${!s}
			fo__veth "$FO_A" va$r $((1100 + r)) "$s" s${r}a $((sa + r)) 10.86.$r.1/24 "$mtu"
			fo__veth "$FO_B" vb$r $((1300 + r)) "$s" s${r}b $((sb + r)) 10.86.$r.2/24 "$mtu"
			# no STP: the ports forward at once, and their state can be set by hand (fo_hole)
			ip -n "$s" link add br$r type bridge stp_state 0 mcast_snooping 0 ||
				{ echo "FAIL: cannot create bridge br$r in $s"; exit 1; }
			if ! ip -n "$s" link set br$r mtu "$mtu" up || ! ip -n "$s" link set s${r}a master br$r ||
				! ip -n "$s" link set s${r}b master br$r; then
				echo "FAIL: cannot join s${r}a and s${r}b to br$r in $s"
				exit 1
			fi
		done
	fi
	for r in 1 2; do
		netns_wait_until 10 ip netns exec "$FO_A" ping -c 1 -W 1 10.86.$r.2 >/dev/null 2>&1 ||
			{ echo "FAIL: A cannot ping B across rail $r"; exit 1; }
	done
}

# fo__where RAIL a|b: "NS IF" of the interface fo_link sets
fo__where() {
	local s=FO_S$1
	if [ "$FO_DIRECT" = 1 ]; then
		if [ "$2" = a ]; then echo "$FO_A va$1"; else echo "$FO_B vb$1"; fi
	else
		echo "${!s} s$1$2"
	fi
}

fo_link() {
	local w
	w=$(fo__where "$1" "$2")
	ip -n "${w% *}" link set "${w#* }" "$3"
}

fo_ifspec() {
	local w
	w=$(fo__where "$1" "$2")
	echo "/var/run/netns/${w% *}:${w#* }"
}

fo_hole() {
	local s=FO_S$1 st=3 p
	if [ "$FO_DIRECT" = 1 ]; then
		echo "fo_hole: no switch between two direct veth pairs" >&2
		return 1
	fi
	[ "$2" = on ] && st=0
	for p in a b; do
		ip netns exec "${!s}" bridge link set dev "s$1$p" state $st || return 1
	done
}

fo_carrier() {
	ip -n "$1" -o link show dev "$2" 2>/dev/null | grep -q '[<,]LOWER_UP[,>]'
}
