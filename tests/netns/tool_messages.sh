#!/bin/bash
# SPDX-License-Identifier: MIT
# The messages a first run of uroce-pingpong and uroce-perf meets, checked
# from outside (exit status and text), on a veth pair in two namespaces:
#  1. -d dpdk without EAL arguments: the whole message, not cut at 256
#     characters (it ends with what EAL accepts, or with where EAL said
#     why); without DPDK built, that it was not built in.
#  2. -d loop:0: said in the tools' terms (no internal names), exit 2.
#  3. uroce-perf ends whose -q, -s or -n (send_bw) differ: both exit 1
#     right after connecting, each naming both values.
#  4. a read_bw server and a write_bw client: both refuse, naming both.
#  5. a client given the server's IPv4 and its IPv6 (a ULA on the veth)
#     address: pingpong, perf and the launcher's exchange connect; a server
#     whose namespace has IPv6 off still takes an IPv4 client.
#  6. as nobody: which call the kernel refused and to run as root, no
#     libbpf lines, exit 1.
#  7. uroce-perf -d IFACE (bare) runs as afxdp:IFACE, as uroce-pingpong.
# No rate is asserted; every tool runs under timeout.
#   tool_messages.sh UROCE_PINGPONG UROCE_PERF UROCE_LAUNCHER HAVE_DPDK
set -u
. "$(dirname "$0")/../lib/netns.sh"
PP=${1:?usage: tool_messages.sh UROCE_PINGPONG UROCE_PERF UROCE_LAUNCHER HAVE_DPDK}
PERF=${2:?}
LAUNCHER=${3:?}
HAVE_DPDK=${4:?}
netns_test uroce-msg
NETNS_LOG_LINES=20
TCP=$((22000 + $$ % 9000))
IPA=10.87.0.1 IPB=10.87.0.2
IP6A=fd00:87::1 IP6B=fd00:87::2

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24 --ip-a $IP6A/64 --ip-b $IP6B/64
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null 2>&1 || fail "no IPv4 path across the veth pair"
netns_wait_until 5 ip netns exec "$NA" ping -6 -c 1 -W 1 $IP6B >/dev/null 2>&1 ||
	fail "no IPv6 path across the veth pair"

# expect STATUS TEXT CMD...: CMD (run in A) exits STATUS and its output
# holds TEXT (fixed string); the output is left in $TMP/out.
expect() {
	local want=$1 text=$2 rc=0
	shift 2
	timeout 60 ip netns exec "$NA" "$@" >"$TMP/out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] && grep -qF -- "$text" "$TMP/out" ||
		{ cat "$TMP/out"; fail "$(basename "$1") ${*:2}: exit $rc (wanted $want), no '$text'"; }
}

# no_internal: the last output names no code (fields, types, API calls)
no_internal() {
	! grep -Eq "attr->|loop_fabric|uroce_[a-z_]+:" "$TMP/out" || fail "an internal name: $(cat "$TMP/out")"
}

# ---- 1. -d dpdk without EAL arguments: the whole message ----
for tool in "$PP rc" "$PERF write_bw"; do
	if [ "$HAVE_DPDK" = 1 ]; then
		rc=0
		timeout 60 ip netns exec "$NA" $tool -d dpdk >"$TMP/out" 2>&1 || rc=$?
		line=$(grep -E "DPDK (EAL initialisation failed|port 0 does not exist)" "$TMP/out")
		[ $rc = 1 ] && [ ${#line} -gt 256 ] ||
			{ cat "$TMP/out"; fail "$tool -d dpdk: exit $rc, no whole DPDK message"; }
		# it ends where the message ends, with what is accepted or where EAL said why
		grep -Eq "(no hugepages are reserved\)|reported by EAL above)(; not run as root: .*\))?$" <<<"$line" ||
			fail "$tool -d dpdk: the message is cut: '$line'"
		no_internal
	else
		expect 1 "the dpdk backend was not built in" $tool -d dpdk
	fi
done
echo "ok: -d dpdk without EAL arguments: the whole message"

# ---- 2. -d loop:0: the tools' terms, exit 2 ----
LOOP_MSG="loop ports exist only inside one process (the launcher \`uroce\`, or the API's loop fabric); use afxdp:IFACE, dpdk or verbs:DEV"
expect 2 "uroce-pingpong: -d/--ib-dev loop:0: $LOOP_MSG" "$PP" rc -d loop:0
no_internal
expect 2 "uroce-perf: -d/--ib-dev loop:0: $LOOP_MSG" "$PERF" write_bw -d loop:0
no_internal
expect 2 "uroce-perf: -d/--ib-dev loop:1: $LOOP_MSG" "$PERF" write_bw -d va,loop:1
no_internal
expect 2 "unknown port spec 'bogus:1'; accepted: IFACE (meaning afxdp:IFACE), afxdp:IFACE" "$PERF" write_bw -d bogus:1
grep -q "loop:" "$TMP/out" && fail "the accepted list offers loop ports: $(cat "$TMP/out")"
echo "ok: -d loop:0 refused in the tools' terms (exit 2)"

# pair NAME SERVER_ARGS -- CLIENT_ARGS: uroce-perf server in B, client in A
# (to $IPB unless the client's arguments name the server); sets SRC, CRC,
# and ELAPSED (the client's seconds).
pair() {
	local name=$1 sargs=() cargs=()
	shift
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	netns_start "$NB" "$TMP/$name-srv.log" timeout 60 "${sargs[@]}"
	local spid=$NETNS_PID
	netns_wait_tcp "$NB" $TCP $spid 30 || fail "$name: the server never listened"
	local t0=$SECONDS
	CRC=0
	timeout 60 ip netns exec "$NA" "${cargs[@]}" >"$TMP/$name-cli.log" 2>&1 || CRC=$?
	ELAPSED=$((SECONDS - t0))
	SRC=0
	netns_wait $spid || SRC=$?
}

# mismatch NAME SERVER_MSG CLIENT_MSG SERVER_ARGS -- CLIENT_ARGS: both ends
# exit 1 well before their --timeout (30 s), each with its line
mismatch() {
	local name=$1 smsg=$2 cmsg=$3
	shift 3
	pair "$name" "$@"
	[ $SRC = 1 ] && [ $CRC = 1 ] || fail "$name: server exit $SRC, client exit $CRC (wanted 1 and 1)"
	[ $ELAPSED -lt 20 ] || fail "$name: the client took ${ELAPSED} s, as long as its --timeout"
	grep -qF -- "$smsg" "$TMP/$name-srv.log" || fail "$name: the server did not say '$smsg'"
	grep -qF -- "$cmsg" "$TMP/$name-cli.log" || fail "$name: the client did not say '$cmsg'"
	! grep -q "timed out" "$TMP/$name-srv.log" "$TMP/$name-cli.log" || fail "$name: a timeout instead of the reason"
	echo "ok: $name: both ends exit 1: $(grep -F -- "$cmsg" "$TMP/$name-cli.log")"
}

SO=(-d afxdp:vb -x 1 -p $TCP --timeout 30)
CO=(-d afxdp:va -x 1 -p $TCP --timeout 30)

# ---- 3. options both ends must agree on ----
mismatch qps "the QP counts differ: this end (the server) -q 1, the client -q 2; start both ends with the same -q" \
	"the QP counts differ: this end (the client) -q 2, the server -q 1" \
	"$PERF" write_bw "${SO[@]}" -n 100 -- "$PERF" write_bw "${CO[@]}" -n 100 -q 2 $IPB
mismatch size "the message sizes differ: this end (the server) -s 65536, the client -s 4096" \
	"the message sizes differ: this end (the client) -s 4096, the server -s 65536" \
	"$PERF" write_bw "${SO[@]}" -n 100 -- "$PERF" write_bw "${CO[@]}" -n 100 -s 4096 $IPB
mismatch iters "the iteration counts differ: this end (the server) -n 100, the client -n 200" \
	"the iteration counts differ: this end (the client) -n 200, the server -n 100" \
	"$PERF" send_bw "${SO[@]}" -n 100 -- "$PERF" send_bw "${CO[@]}" -n 200 $IPB
# ---- 4. the tests themselves ----
mismatch mode "the two ends run different tests: this end (the server) read_bw, the client write_bw" \
	"the two ends run different tests: this end (the client) write_bw, the server read_bw" \
	"$PERF" read_bw "${SO[@]}" -n 100 -- "$PERF" write_bw "${CO[@]}" -n 100 $IPB

# write_bw's server only answers: the client's -n is its own, as in perftest
pair iters_bw "$PERF" write_bw "${SO[@]}" -n 100 -- "$PERF" write_bw "${CO[@]}" -n 300 $IPB
[ $SRC = 0 ] && [ $CRC = 0 ] || fail "write_bw with -n 100 / 300: server $SRC, client $CRC (wanted 0, 0)"
echo "ok: write_bw: the client's -n alone counts, as in perftest"

# ---- 5 and 7. IPv4 and IPv6 server addresses; a bare IFACE in uroce-perf ----
for dst in $IPB $IP6B; do
	pair "perf-$dst" "$PERF" write_bw -d vb -x 1 -p $TCP --timeout 30 -n 200 -- \
		"$PERF" write_bw -d va -x 1 -p $TCP --timeout 30 -n 200 $dst
	[ $SRC = 0 ] && [ $CRC = 0 ] || fail "uroce-perf -d IFACE to $dst: server $SRC, client $CRC"
	grep -Eq "^ 65536 +200 +[0-9.]+ +[0-9.]+" "$TMP/perf-$dst-cli.log" || fail "uroce-perf to $dst: no result row"
	echo "ok: uroce-perf -d va (bare IFACE) to the server's $dst"
	pair "pp-$dst" "$PP" rc -d vb -g 1 -n 50 -p $TCP --timeout 30 -- "$PP" rc -d va -g 1 -n 50 -p $TCP --timeout 30 $dst
	[ $SRC = 0 ] && [ $CRC = 0 ] || fail "uroce-pingpong to $dst: server $SRC, client $CRC"
	echo "ok: uroce-pingpong to the server's $dst"
done
# the launcher's exchange (tcp_exchange.c too): a script against uroce-perf over IPv6
cat >"$TMP/l.txt" <<EOF
create qp rc port 0
set traffic write size 65536 depth 16 verify off
connect qp 0 $IP6B tcp-port $TCP timeout 30
start
sleep 1
stop
quit
EOF
netns_start "$NB" "$TMP/l-srv.log" timeout 60 "$PERF" write_bw -d afxdp:vb -x 1 -s 65536 -p $TCP --timeout 30 -F
lpid=$NETNS_PID
netns_wait_tcp "$NB" $TCP $lpid 30 || fail "uroce-perf never listened for the launcher"
ip netns exec "$NA" env HOME="$TMP" timeout 60 "$LAUNCHER" -l 0 -p afxdp:va --cmdline-file "$TMP/l.txt" \
	--no-interactive >"$TMP/l-cli.log" 2>&1 || fail "the launcher against uroce-perf over IPv6 exited $?"
netns_wait $lpid || fail "uroce-perf (the launcher's peer over IPv6) exited $?"
grep -q "Errors: 0" "$TMP/l-cli.log" || fail "the launcher over IPv6: errors"
echo "ok: the launcher's exchange to the server's $IP6B"
# IPv6 off in the server's namespace: it still listens, IPv4 clients get in
ip netns exec "$NB" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 || fail "cannot turn IPv6 off in $NB"
pair pp-v6off "$PP" rc -d vb -g 1 -n 20 -p $TCP --timeout 30 -- "$PP" rc -d va -g 1 -n 20 -p $TCP --timeout 30 $IPB
[ $SRC = 0 ] && [ $CRC = 0 ] || fail "IPv6 off at the server: server $SRC, client $CRC"
ip netns exec "$NB" sysctl -qw net.ipv6.conf.all.disable_ipv6=0
echo "ok: a server whose namespace has IPv6 off takes an IPv4 client"

# ---- 6. not root ----
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
ROOT_MSG="run as root (needs CAP_NET_ADMIN, CAP_BPF and CAP_SYS_ADMIN"
for tool in "$PP rc -d va" "$PERF write_bw -d afxdp:va"; do
	expect 1 "$ROOT_MSG" "${NOBODY[@]}" $tool
	grep -q "the kernel refused to load the XDP program, bpf(): Operation not permitted" "$TMP/out" ||
		fail "$tool as nobody: the refused call is not named: $(cat "$TMP/out")"
	! grep -q "^libbpf:" "$TMP/out" || fail "$tool as nobody: libbpf's lines: $(cat "$TMP/out")"
	no_internal
done
# with the XDP program's capabilities but not CAP_NET_RAW: socket(AF_XDP) is named
expect 1 "va: cannot create an AF_XDP socket for the UMEM, socket(AF_XDP): Operation not permitted; $ROOT_MSG" \
	"${NOBODY[@]}" --inh-caps=+bpf,+net_admin,+sys_admin,+ipc_lock --ambient-caps=+bpf,+net_admin,+sys_admin,+ipc_lock \
	"$PP" rc -d va
echo "ok: as nobody: the refused call named, run as root, no libbpf lines (exit 1)"
echo PASS
