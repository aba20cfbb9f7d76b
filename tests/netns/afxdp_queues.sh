#!/bin/bash
# Several afxdp ports on a 2-queue veth pair: in one process at MTU 1500
# (single-buffer frames) and 4200 (multi-buffer), see afxdp_queues.c; then
# in two processes, which share the XDP program (the second adopts the
# first's), keep it attached while either runs, and detach it when both are
# gone.
#   afxdp_queues.sh AFXDP_QUEUES ROCE_TRAFFIC
set -u
BIN=${1:?usage: afxdp_queues.sh AFXDP_QUEUES ROCE_TRAFFIC}
TRAFFIC=${2:?usage: afxdp_queues.sh AFXDP_QUEUES ROCE_TRAFFIC}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces, XDP)"
	exit 77
fi
NA=uroce-afxq-a-$$
NB=uroce-afxq-b-$$
TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
}
trap cleanup EXIT

ip netns add "$NA" && ip netns add "$NB" || { echo "FAIL: cannot create namespaces"; exit 1; }
ip link add va numtxqueues 2 numrxqueues 2 netns "$NA" type veth \
	peer name vb numtxqueues 2 numrxqueues 2 netns "$NB" || { echo "FAIL: cannot create the veth pair"; exit 1; }
ip -n "$NA" link set va up
ip -n "$NB" link set vb up
rc=0
for mtu in 1500 4200; do
	echo "== MTU $mtu"
	ip -n "$NA" link set va mtu $mtu
	ip -n "$NB" link set vb mtu $mtu
	timeout 120 "$BIN" "$NA" va "$NB" vb || rc=1
done

echo "== two processes on queues 0 and 1 of va"
fail() { echo "FAIL: $*"; rc=1; }
xdp_id() { ip -n "$NA" -d link show dev va | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p'; }
ip netns exec "$NA" "$TRAFFIC" hold --port afxdp:va:0 --ready-file "$TMP/r0" --timeout-ms 30000 \
	>"$TMP/h0.log" 2>&1 &
H0=$!
PIDS+=($H0)
for _ in $(seq 100); do [ -e "$TMP/r0" ] && break; sleep 0.05; done
ip netns exec "$NA" "$TRAFFIC" hold --port afxdp:va:1 --ready-file "$TMP/r1" --timeout-ms 30000 \
	>"$TMP/h1.log" 2>&1 &
H1=$!
PIDS+=($H1)
for _ in $(seq 100); do [ -e "$TMP/r1" ] && break; sleep 0.05; done
id0=$(xdp_id)
grep -q "XDP prog $id0 attached by us" "$TMP/h0.log" || fail "first process did not attach program $id0: $(cat "$TMP/h0.log")"
grep -q "XDP prog $id0 shared" "$TMP/h1.log" || fail "second process did not adopt program $id0: $(cat "$TMP/h1.log")"
kill -TERM $H0; wait $H0
[ "$(xdp_id)" = "$id0" ] || fail "program $id0 left va while the second process still uses it"
kill -TERM $H1; wait $H1
PIDS=()
[ -z "$(xdp_id)" ] || fail "program still on va after both processes exited"
# A process that dies without closing its port leaves nothing attached.
# (hold bounds itself with --timeout-ms; no timeout(1) in between, so the
# PID is the tool's own.)
rm -f "$TMP/r0"
ip netns exec "$NA" "$TRAFFIC" hold --port afxdp:va:0 --ready-file "$TMP/r0" --timeout-ms 30000 \
	>"$TMP/h0.log" 2>&1 &
H0=$!
PIDS+=($H0)
for _ in $(seq 100); do [ -e "$TMP/r0" ] && break; sleep 0.05; done
[ -n "$(xdp_id)" ] || fail "no program on va"
kill -KILL $H0; wait $H0 2>/dev/null
PIDS=()
for _ in $(seq 40); do [ -z "$(xdp_id)" ] && break; sleep 0.05; done
[ -z "$(xdp_id)" ] || fail "program still on va after its process was killed"
[ $rc = 0 ] && echo "ok: shared across processes, detached after the last one, also after SIGKILL"

[ $rc = 0 ] && echo PASS || echo FAIL
exit $rc
