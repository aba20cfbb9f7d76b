#!/bin/bash
# SPDX-License-Identifier: MIT
# A uroce-to-rxe RC connection whose port fails ends in a clean error, with
# no hang (docs/failover.md, "A standard RC peer cannot follow"): rxe binds
# an RC QP to one address pair, so uroce cannot move the QP to another
# port, and its retries must run out into an error completion. A vmlab
# guest runs perftest's `ib_write_bw -d rxe0 -x 1` as the server; uroce-perf
# write_bw on a uroce AF_XDP port in a host-side netns is the client, with
# WRITEs always outstanding (a ping-pong can sit between messages with
# nothing in flight, and then rightly never times out). Once the WRITEs
# flow, the host side's link goes down: uroce-perf must exit non-zero by
# itself, with a completion failed on "transport retry counter exceeded",
# well inside its bound (not killed by timeout).
#
#   rxe_link_fail.sh VMLAB_SH UROCE_PERF
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 2 ] || { echo "usage: $0 VMLAB_SH UROCE_PERF" >&2; exit 2; }
VMLAB=$1 PP=$2
[ -x "$PP" ] || { echo "FAIL: $PP not found" >&2; exit 1; }

export UROCE_VMLAB_LAB=uvlf$$
SUBNET=${UROCE_VMLAB_SUBNET:-10.48.0}
export UROCE_VMLAB_SUBNET=$SUBNET
SRV_IP=$SUBNET.11
HOST_IP=$SUBNET.2
IFACE=uvl0
WORK=$(mktemp -d /tmp/uroce-linkfail.XXXXXX)
HOSTNS=
PP_PID=

stop_pingpong() {
	if [ -n "$PP_PID" ] && kill -0 "$PP_PID" 2>/dev/null; then
		kill "$PP_PID" 2>/dev/null || true
		wait "$PP_PID" 2>/dev/null || true
	fi
}
vm_case_traps stop_pingpong

vm_boot_host

rxe_sent() {
	"$VMLAB" exec srv --timeout 10 'cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts' 2>/dev/null || echo 0
}

ITERS=5000000
job=$("$VMLAB" start srv "ib_write_bw -d rxe0 -x 1 -F -s 4096 -n $ITERS")
wait_listening 18515 || fail "server never listened: $("$VMLAB" output srv "$job")"
# uroce-perf's defaults as perftest's: local ACK timeout 14 (67 ms), retry_cnt 7
in_host timeout 120 "$PP" write_bw -d "afxdp:$IFACE" -x 1 -s 4096 -n "$ITERS" "$SRV_IP" >"$WORK/pp.out" 2>&1 &
PP_PID=$!

# the exchange runs: rxe has sent a few hundred packets
base=$(rxe_sent)
for _ in $(seq 100); do
	now=$(rxe_sent)
	[ $((now - base)) -ge 200 ] && break
	kill -0 "$PP_PID" 2>/dev/null || { cat "$WORK/pp.out" >&2; fail "uroce-perf ended before the link went down"; }
	sleep 0.2
done
[ $((now - base)) -ge 200 ] || { cat "$WORK/pp.out" >&2; fail "the exchange never ran (rxe sent $((now - base)) packets)"; }
kill -0 "$PP_PID" 2>/dev/null || { cat "$WORK/pp.out" >&2; fail "uroce-perf ended before the link went down"; }

echo "=== exchange running (rxe sent $((now - base)) packets): taking the host side's link down"
t0=$(date +%s%N)
in_host ip link set "$IFACE" down
pp_rc=0
wait "$PP_PID" || pp_rc=$?
PP_PID=
t1=$(date +%s%N)
sed 's/^/  uroce-perf: /' "$WORK/pp.out"
ms=$(((t1 - t0) / 1000000))
echo "  exit $pp_rc, $ms ms after the link went down"
[ $pp_rc != 0 ] || fail "uroce-perf exited 0 with its port down"
[ $pp_rc != 124 ] && [ $pp_rc != 137 ] || fail "uroce-perf hung: killed by its timeout"
grep -q "completion failed: transport retry counter exceeded" "$WORK/pp.out" ||
	fail "no retry-exceeded error completion in uroce-perf's output"
[ $ms -lt 30000 ] || fail "the error took $ms ms"
echo "PASS: the uroce-to-rxe RC connection ended in a retry-exceeded error $ms ms after its port failed"
