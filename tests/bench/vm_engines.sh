#!/bin/bash
# SPDX-License-Identifier: MIT
# Two engines against one, on two QEMU guests of 2 vCPUs whose virtio-net
# has 2 queue pairs with RSS (MTU 3500): uroce-perf write_bw, 64 KiB, 4 RC
# QPs, guest cli -> guest srv, rounds interleaved:
#   1 engine    -d afxdp:eth0:0-0 --cores 0: every QP on queue 0's engine,
#               their packets steered there
#   2 engines   -d afxdp:eth0:0-1 --cores 0,1: two QPs on each engine, each
#               engine fed by its own queue
# Printed per round: the client's MB/s and, for each engine of both ends,
# its CPU time over the run's wall time and the packets it received.
#
#   vm_engines.sh VMLAB_SH UROCE_PERF_BIN [--iters N] [--rounds R] [--timeout S]
# Use a build without sanitizers (meson setup -Db_sanitize=none).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../interop/vm_preamble.sh"
vm_need_root
[ $# -ge 2 ] || { echo "usage: $0 VMLAB_SH UROCE_PERF_BIN [--iters N] [--rounds R] [--timeout S]" >&2; exit 2; }
VMLAB=$1 PERF=$2
shift 2
ITERS=400 ROUNDS=3 TMO=180
while [ $# -gt 0 ]; do
	case $1 in
	--iters) ITERS=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--timeout) TMO=$2; shift 2 ;;
	*) echo "unknown option $1; accepted: --iters N, --rounds R, --timeout S" >&2; exit 2 ;;
	esac
done
[ -x "$PERF" ] || { echo "FAIL: $PERF not found" >&2; exit 1; }
vm_lab_vars uveng uvp0 engines
vm_case_traps

vm_boot_pair 2 2 3500 "$PERF"
U="$vm_uroce_env /tmp/u/uroce-perf"
VCACHE=${UROCE_VMLAB_CACHE:-/var/cache/uroce-vmlab}
PROFILE=$(cat "$VCACHE/run/$UROCE_VMLAB_LAB/guest-srv/profile")

NAMES=("1 engine" "2 engines")
SPECS=("-d afxdp:eth0:0-0 --cores 0" "-d afxdp:eth0:0-1 --cores 0,1")
declare -A BW
echo "Guests: $(cat "$VCACHE/kpkg"), $(awk '{ printf "%s vCPU, %s queue pairs, MTU %s, accel %s", $2, $3, $4, $1 }' <<<"$PROFILE"); write_bw 64 KiB x $ITERS per QP, 4 RC QPs; $(date -u +%F), commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo ?)"
for r in $(seq "$ROUNDS"); do
	for i in 0 1; do
		cmd="$U write_bw ${SPECS[$i]} -q 4 -n $ITERS -s 65536 -u 18 --timeout 60"
		job=$("$VMLAB" start srv "$cmd")
		wait_listening_in srv 18515 || fail "no server"
		out=$("$VMLAB" exec cli --timeout "$TMO" "$cmd $SRV_IP" 2>&1) || true
		sout=$("$VMLAB" wait srv "$job" --timeout 60 2>&1) || true
		BW[$i,$r]=$(awk '$1 == 65536 && NF >= 5 { print $4; f = 1 } END { if (!f) print "failed" }' <<<"$out")
		echo "round $r, ${NAMES[$i]}: ${BW[$i,$r]} MB/s"
		for side in cli srv; do
			[ $side = cli ] && o=$out || o=$sout
			grep "^uroce engine" <<<"$o" | sed -E "s/^uroce engine ([0-9]+): ([^ ]+) on CPU ([0-9-]+): ([0-9]+) QP\(s\), rx_packets=([0-9]+) tx_packets=([0-9]+) no_qp=([0-9]+), engine CPU ([0-9.]+) s of ([0-9.]+) s \(([0-9]+)%\).*/  $side engine \1 (\2, CPU \3): \4 QPs, rx \5, tx \6, no_qp \7, CPU \8 s of \9 s/"
		done
		sleep 1
	done
done
med() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'; }
m0=$(for r in $(seq "$ROUNDS"); do echo -n "${BW[0,$r]} "; done | med)
m1=$(for r in $(seq "$ROUNDS"); do echo -n "${BW[1,$r]} "; done | med)
echo
echo "| engines | MB/s (median of $ROUNDS) | rounds | x 1 engine |"
echo "|---|---:|---|---:|"
echo "| 1 | $m0 | $(for r in $(seq "$ROUNDS"); do echo -n "${BW[0,$r]} "; done) | 1.00 |"
echo "| 2 | $m1 | $(for r in $(seq "$ROUNDS"); do echo -n "${BW[1,$r]} "; done) | $(awk -v a="$m1" -v b="$m0" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }') |"
