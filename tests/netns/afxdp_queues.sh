#!/bin/bash
# SPDX-License-Identifier: MIT
# Several afxdp ports on a 2-queue veth pair: in one process at MTU 1500
# (single-buffer frames) and 4200 (multi-buffer), see afxdp_queues.c; then
# in two processes, which share the XDP program (the second adopts the
# first's), keep it attached while either runs, and detach it when both are
# gone.
#   afxdp_queues.sh AFXDP_QUEUES ROCE_TRAFFIC
set -u
. "$(dirname "$0")/../lib/netns.sh"
BIN=${1:?usage: afxdp_queues.sh AFXDP_QUEUES ROCE_TRAFFIC}
TRAFFIC=${2:?usage: afxdp_queues.sh AFXDP_QUEUES ROCE_TRAFFIC}
netns_test uroce-afxq
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --queues 2
rc=0
for mtu in 1500 4200; do
	echo "== MTU $mtu"
	netns_mtu $mtu "$NA" va "$NB" vb
	timeout 120 "$BIN" "$NA" va "$NB" vb || rc=1
done

echo "== two processes on queues 0 and 1 of va"
fail() { echo "FAIL: $*"; rc=1; }
xdp_id() { ip -n "$NA" -d link show dev va | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p'; }
netns_start "$NA" "$TMP/h0.log" "$TRAFFIC" hold --port afxdp:va:0 --ready-file "$TMP/r0" --timeout-ms 30000
H0=$NETNS_PID
netns_wait_file "$TMP/r0" $H0 5
netns_start "$NA" "$TMP/h1.log" "$TRAFFIC" hold --port afxdp:va:1 --ready-file "$TMP/r1" --timeout-ms 30000
H1=$NETNS_PID
netns_wait_file "$TMP/r1" $H1 5
id0=$(xdp_id)
grep -q "XDP prog $id0 attached by us" "$TMP/h0.log" || fail "first process did not attach program $id0: $(cat "$TMP/h0.log")"
grep -q "XDP prog $id0 shared" "$TMP/h1.log" || fail "second process did not adopt program $id0: $(cat "$TMP/h1.log")"
netns_stop $H0
[ "$(xdp_id)" = "$id0" ] || fail "program $id0 left va while the second process still uses it"
netns_stop $H1
[ -z "$(xdp_id)" ] || fail "program still on va after both processes exited"
# A process that dies without closing its port leaves nothing attached.
# (hold bounds itself with --timeout-ms; no timeout(1) in between, so the
# PID is the tool's own.)
rm -f "$TMP/r0"
netns_start "$NA" "$TMP/h0.log" "$TRAFFIC" hold --port afxdp:va:0 --ready-file "$TMP/r0" --timeout-ms 30000
H0=$NETNS_PID
netns_wait_file "$TMP/r0" $H0 5
[ -n "$(xdp_id)" ] || fail "no program on va"
kill -KILL $H0
netns_wait $H0 2>/dev/null
no_xdp() { [ -z "$(xdp_id)" ]; }
netns_wait_until 2 no_xdp || fail "program still on va after its process was killed"
[ $rc = 0 ] && echo "ok: shared across processes, detached after the last one, also after SIGKILL"

[ $rc = 0 ] && echo PASS || echo FAIL
exit $rc
