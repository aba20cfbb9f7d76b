#!/bin/bash
# SPDX-License-Identifier: MIT
# The GID table over a veth pair in namespaces this test creates: with a
# context open on an afxdp port (gid_watch, dedicated engine thread), an
# IPv6 or IPv4 address added or removed shows in uroce_query_gid with a
# GID_CHANGE event, in rxe's order (fe80:: EUI-64, ::ffff:IPv4..., IPv6...);
# the peer's link going down and up gives PORT_ERR and PORT_ACTIVE. Then RC
# between two uroce ends over IPv6, uroce-pingpong rc --chk and uroce-perf
# write_bw, with GID 0 (link-local) and with a global address's GID (and
# UD pingpong over GID 0), and a GID of the other family than the peer's refused. When DPDK is built
# (HAVE_DPDK 1), RC over GID 0 with a DPDK end (net_af_packet on vb, the
# kernel's IPv6 turned off there), so the port's own NS/NA is what resolves
# both ways.
#   ipv6_gid.sh GID_WATCH UROCE_PINGPONG UROCE_PERF [HAVE_DPDK]
set -u
. "$(dirname "$0")/../lib/netns.sh"
WATCH=${1:?usage: ipv6_gid.sh GID_WATCH UROCE_PINGPONG UROCE_PERF}
PP=${2:?usage: ipv6_gid.sh GID_WATCH UROCE_PINGPONG UROCE_PERF}
PERF=${3:?usage: ipv6_gid.sh GID_WATCH UROCE_PINGPONG UROCE_PERF}
HAVE_DPDK=${4:-0}
netns_test uroce-h3gid

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.86.0.1/24 --ip-b 10.86.0.2/24 --mtu 4200
netns_wait_ll "$NA" va || fail "va's link-local address never left DAD"
netns_wait_ll "$NB" vb || fail "vb's link-local address never left DAD"
LL_A=$(ip -n "$NA" -6 addr show dev va scope link | sed -n 's/.*inet6 \([^/]*\)\/.*/\1/p' | head -1)
[ -n "$LL_A" ] || fail "va has no link-local address"

# --- the table follows the kernel -------------------------------------------
LOG=$TMP/watch.log
netns_start "$NA" "$LOG" "$WATCH" va 120
WPID=$NETNS_PID
last_table() { grep '^table ' "$LOG" | tail -1; }
# expect_table WHAT EXPECTED_LINE: the last table line becomes EXPECTED_LINE
# within 5 s (after a GID_CHANGE when it is not the first)
WANT=
table_is() { [ "$(last_table)" = "$WANT" ]; }
expect_table() {
	WANT=$2
	netns_wait_until 5 table_is || fail "$1: table is '$(last_table)', wanted '$2'"
	echo "ok: $1: $2"
}
events() { grep -c "^event $1 port 1$" "$LOG"; }
EV=
events_are() { [ "$(events "$EV")" = "$WANT" ]; }
expect_events() { # NAME COUNT
	EV=$1 WANT=$2
	netns_wait_until 5 events_are || fail "$1 events: $(events "$1"), wanted $2"
}

expect_table "at open" "table 2 $LL_A ::ffff:10.86.0.1"
ip -n "$NA" addr add fd86::1/64 dev va nodad || fail "cannot add fd86::1"
expect_table "global IPv6 added" "table 3 $LL_A ::ffff:10.86.0.1 fd86::1"
expect_events GID_CHANGE 1
ip -n "$NA" addr add 10.86.1.1/24 dev va || fail "cannot add 10.86.1.1"
expect_table "second IPv4 added (before the IPv6)" "table 4 $LL_A ::ffff:10.86.0.1 ::ffff:10.86.1.1 fd86::1"
expect_events GID_CHANGE 2
ip -n "$NA" addr del 10.86.1.1/24 dev va || fail "cannot remove 10.86.1.1"
expect_table "second IPv4 removed" "table 3 $LL_A ::ffff:10.86.0.1 fd86::1"
ip -n "$NA" addr del fd86::1/64 dev va || fail "cannot remove fd86::1"
expect_table "global IPv6 removed" "table 2 $LL_A ::ffff:10.86.0.1"
expect_events GID_CHANGE 4
# A tentative address (DAD running) is not a GID yet: the kernel would not
# answer neighbour solicitations for it.
ip -n "$NA" addr add fd86::99/64 dev va || fail "cannot add fd86::99"
no_tentative() { ! ip -n "$NA" -6 addr show dev va | grep -q tentative; }
netns_wait_until 5 no_tentative || fail "DAD never ended"
expect_table "address after DAD" "table 3 $LL_A ::ffff:10.86.0.1 fd86::99"
ip -n "$NA" addr del fd86::99/64 dev va
expect_table "address after DAD removed" "table 2 $LL_A ::ffff:10.86.0.1"
# carrier: the peer's end going down takes va's carrier with it
ip -n "$NB" link set vb down || fail "cannot take vb down"
expect_events PORT_ERR 1
ip -n "$NB" link set vb up || fail "cannot bring vb up"
expect_events PORT_ACTIVE 1
echo "ok: link down/up: PORT_ERR, PORT_ACTIVE"
netns_wait_link "$NA" va || fail "va never came back up"
netns_stop "$WPID" || fail "gid_watch exited $?"
grep -q '^lost' "$LOG" && fail "events were lost"
[ "$(events PORT_ERR)" = 1 ] && [ "$(events PORT_ACTIVE)" = 1 ] || fail "extra port events: $(cat "$LOG")"
# the peer's link-local needs DAD again after its link came back
netns_wait_ll "$NB" vb || fail "vb's link-local address never left DAD"
netns_wait_ll "$NA" va || fail "va's link-local address never left DAD"

# --- RC over IPv6 between two uroce ends ------------------------------------
ip -n "$NA" addr add fd86::1/64 dev va nodad
ip -n "$NB" addr add fd86::2/64 dev vb nodad
tport=18860
# pingpong NAME GIDX WANT_GID_PREFIX [MODE ARGS...]: --chk, both ends on GID
# index GIDX (default: rc, 5000-byte messages at path MTU 1024)
pingpong() {
	local name=$1 g=$2 want=$3 srv=$TMP/$1-server.log cli=$TMP/$1-client.log rc
	shift 3
	[ $# -gt 0 ] || set -- rc -m 1024 -s 5000
	tport=$((tport + 1))
	netns_start "$NB" "$srv" timeout 60 "$PP" "$@" -d afxdp:vb -g "$g" -n 200 -c -p $tport --timeout 20
	local spid=$NETNS_PID
	netns_wait_tcp "$NB" $tport "$spid" || fail "$name: server never listened"
	ip netns exec "$NA" timeout 60 "$PP" "$@" -d afxdp:va -g "$g" -n 200 -c -p $tport \
		--timeout 20 10.86.0.2 >"$cli" 2>&1
	rc=$?
	netns_wait "$spid"; local src=$?
	[ $rc = 0 ] && [ $src = 0 ] || fail "$name: client exited $rc, server $src"
	for f in "$srv" "$cli"; do
		grep -q "local address: .*GID $want" "$f" || fail "$name: no local GID $want in $f"
		grep -q "remote address: .*GID $want" "$f" || fail "$name: no remote GID $want in $f"
		grep -q "^200 iters in" "$f" || fail "$name: no iters line in $f"
		grep -q "invalid data" "$f" && fail "$name: --chk found invalid data ($f)"
	done
	echo "ok: $name: $(grep usec/iter "$cli")"
}
pingpong "rc-gid0-link-local" 0 "fe80::"
pingpong "rc-gid2-global" 2 "fd86::"
pingpong "rc-gid1-ipv4" 1 "::ffff:10.86.0."
pingpong "ud-gid0-link-local" 0 "fe80::" ud -s 1024

# write_bw NAME GIDX: uroce-perf both ends on GID index GIDX
write_bw() {
	local name=$1 g=$2 srv=$TMP/$1-server.log cli=$TMP/$1-client.log rc
	tport=$((tport + 1))
	netns_start "$NB" "$srv" timeout 60 "$PERF" write_bw -d afxdp:vb -x "$g" -s 65536 -n 200 -p $tport
	local spid=$NETNS_PID
	netns_wait_tcp "$NB" $tport "$spid" || fail "$name: server never listened"
	ip netns exec "$NA" timeout 60 "$PERF" write_bw -d afxdp:va -x "$g" -s 65536 -n 200 -p $tport 10.86.0.2 \
		>"$cli" 2>&1
	rc=$?
	netns_wait "$spid"; local src=$?
	[ $rc = 0 ] && [ $src = 0 ] || fail "$name: client exited $rc, server $src"
	grep -Eq "^ 65536 +200 +[0-9]" "$cli" || fail "$name: no result line in $cli"
	echo "ok: $name"
}
write_bw "write_bw-gid0-link-local" 0
write_bw "write_bw-gid2-global" 2

# A GID of the other family than the peer's: refused with perftest's words.
tport=$((tport + 1))
netns_start "$NB" "$TMP/mixed-server.log" timeout 30 "$PERF" write_bw -d afxdp:vb -x 1 -s 4096 -n 10 -p $tport
spid=$NETNS_PID
netns_wait_tcp "$NB" $tport "$spid" || fail "mixed: server never listened"
ip netns exec "$NA" timeout 30 "$PERF" write_bw -d afxdp:va -x 0 -s 4096 -n 10 -p $tport 10.86.0.2 \
	>"$TMP/mixed-client.log" 2>&1 && fail "mixed: an IPv6 GID against an IPv4 one was accepted"
grep -q "Found Incompatibility issue with GID types" "$TMP/mixed-client.log" ||
	fail "mixed: no GID type message in $(cat "$TMP/mixed-client.log")"
netns_stop "$spid" >/dev/null 2>&1 || true
echo "ok: mixed GID families refused"
# -g past the table: rdma-core's words
out=$(ip netns exec "$NA" "$PP" rc -d afxdp:va -g 9 -p $((tport + 1)) --timeout 1 10.86.0.2 2>&1) &&
	fail "-g 9 accepted"
grep -q "can't read sgid of index 9" <<<"$out" || fail "-g 9: $out"
echo "ok: -g past the table refused"

# --- a DPDK end: its own Neighbor Discovery ------------------------------------
if [ "$HAVE_DPDK" = 1 ]; then
	mac_b=$(netns_mac "$NB" vb)
	# vb's kernel link-local is fe80:: EUI-64 of the same MAC: the DPDK port's GID 0
	ll_b=$(ip -n "$NB" -6 addr show dev vb scope link | sed -n 's/.*inet6 \([^/]*\)\/.*/\1/p' | head -1)
	[ -n "$ll_b" ] || fail "vb has no link-local address"
	# The kernel stops answering for vb's fe80:: (and forgets its addresses):
	# an answer now can only come from the DPDK port on the same MAC.
	ip netns exec "$NB" sysctl -qw net.ipv6.conf.vb.disable_ipv6=1 || fail "cannot turn IPv6 off on vb"
	# net_af_packet takes frames up to 1500
	netns_mtu 1500 "$NA" va "$NB" vb
	ip -n "$NA" -6 neigh flush dev va
	printf 'leak:xsk_umem__create\n' >"$TMP/lsan.supp"
	tport=$((tport + 2))
	netns_start "$NB" "$TMP/dpdk-server.log" timeout 60 \
		env "LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$TMP/lsan.supp" \
		"$PP" rc -d dpdk --ip 10.86.0.3 -g 0 -m 1024 -s 5000 -n 200 -c -p $tport --timeout 20 \
		-- --no-huge -m 512 --no-pci --vdev net_af_packet0,iface=vb
	spid=$NETNS_PID
	netns_wait_tcp "$NB" $tport "$spid" || fail "dpdk: server never listened"
	ip netns exec "$NA" timeout 60 "$PP" rc -d afxdp:va -g 0 -m 1024 -s 5000 -n 200 -c -p $tport \
		--timeout 20 10.86.0.2 >"$TMP/dpdk-client.log" 2>&1
	rc=$?
	netns_wait "$spid"; src=$?
	[ $rc = 0 ] && [ $src = 0 ] || fail "dpdk: client exited $rc, server $src"
	for f in "$TMP/dpdk-server.log" "$TMP/dpdk-client.log"; do
		grep -q "local address: .*GID fe80::" "$f" || fail "dpdk: no link-local GID in $f"
		grep -q "^200 iters in" "$f" || fail "dpdk: no iters line in $f"
		grep -q "invalid data" "$f" && fail "dpdk: --chk found invalid data ($f)"
	done
	grep -q "remote address: .*GID $ll_b" "$TMP/dpdk-client.log" || fail "dpdk: server's GID is not $ll_b"
	# the kernel on va learned the DPDK port's MAC from its NA
	ip -n "$NA" -6 neigh show dev va | grep -q "^$ll_b lladdr $mac_b" ||
		fail "dpdk: va has no neighbour entry $ll_b -> $mac_b: $(ip -n "$NA" -6 neigh show dev va)"
	echo "ok: rc over GID 0 with a DPDK end (its NS/NA): $(grep usec/iter "$TMP/dpdk-client.log")"
fi
echo "PASS"
