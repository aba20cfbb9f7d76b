#!/bin/bash
# SPDX-License-Identifier: MIT
# The verbs port against rxe's own RC and against uroce's AF_XDP path, in
# the same two Soft-RoCE guests (TCG, one vCPU each), lossless and with a
# share of the sender's RoCEv2 packets dropped at its bridge port
# (uroce-impair, seeded). 64 KiB messages, client -> server:
#   rxe RC          ib_write_bw at both ends: the kernel's go-back-N (baseline)
#   uroce on verbs  uroce-perf write_bw -d verbs:rxe0 at both ends: uroce's
#                   API over the NIC's own RC QP (rxe's go-back-N under it)
#   uroce rc afxdp  uroce-perf write_bw -d afxdp:eth0: uroce's own RC
#   uroce sr afxdp  the same with --reliability sr: selective repeat
#   rxe RC send     ib_send_bw at both ends (the baseline of the next)
#   uroce sr verbs  uroce-perf send_bw -d verbs:rxe0 --reliability sr: sr's
#                   engine, its segments on rxe's UC QPs (keyed by
#                   immediate; a keyed QP carries no plain WRITE, so SENDs)
#   uroce sr verbs RC pool  the same over a pool of rxe's RC QPs (--nic-rc)
#   uroce ec verbs  the same with --reliability ec (RS 32+8) on UC QPs
#   uroce sr afxdp send  uroce-perf send_bw -d afxdp:eth0 --reliability sr:
#                   the frame path doing what the three above do
# Each cell is the average MB/s of a run that completed, "timed out" when
# it did not within --timeout; ratios are to rxe RC of the same operation
# in the same column.
#
#   verbs_bw.sh VMLAB_SH UROCE_PERF_BIN UROCE_IMPAIR_BIN [--iters N] [--loss P] [--timeout S]
# Use a build without sanitizers (meson setup -Db_sanitize=none).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../interop/vm_preamble.sh"
vm_need_root
[ $# -ge 3 ] || { echo "usage: $0 VMLAB_SH UROCE_PERF_BIN UROCE_IMPAIR_BIN [--iters N] [--loss P] [--timeout S]" >&2; exit 2; }
VMLAB=$1 PERF=$2 IMPAIR=$3
shift 3
ITERS=400 LOSS=0.01 TMO=120
while [ $# -gt 0 ]; do
	case $1 in
	--iters) ITERS=$2; shift 2 ;;
	--loss) LOSS=$2; shift 2 ;;
	--timeout) TMO=$2; shift 2 ;;
	*) echo "unknown option $1; accepted: --iters N, --loss P, --timeout S" >&2; exit 2 ;;
	esac
done
vm_lab_vars uvvbw uvp0 verbs-bw

vm_case_traps

vm_boot_host >/dev/null
"$VMLAB" boot cli "$CLI_IP" >/dev/null
for g in srv cli; do vm_put_uroce "$g" "$PERF"; done
U="$vm_uroce_env /tmp/u/uroce-perf"

# run NAME SERVER_CMD CLIENT_CMD: the client's average MB/s, or "timed out"
run() {
	local srv=$1 cli=$2 job out
	job=$("$VMLAB" start srv "$srv")
	wait_listening_in srv 18515 || { echo "no server"; return; }
	if out=$("$VMLAB" exec cli --timeout "$TMO" "$cli" 2>&1); then
		awk -v s=65536 '$1 == s && NF >= 4 { print $4; found = 1 } END { if (!found) print "no result" }' <<<"$out"
	else
		echo "timed out"
	fi
	"$VMLAB" wait srv "$job" --timeout 20 >/dev/null 2>&1 ||
		"$VMLAB" exec srv --timeout 10 'pkill -f ib_write_bw; pkill -f ib_send_bw; pkill -f uroce-perf' >/dev/null 2>&1 || true
	sleep 1
}

MODES=("rxe RC" "uroce on verbs" "uroce rc afxdp" "uroce sr afxdp" "rxe RC send" "uroce sr verbs"
	"uroce sr verbs RC pool" "uroce ec verbs" "uroce sr afxdp send")
BASE=(0 0 0 0 4 4 4 4 4) # the row each is compared with: rxe RC of the same operation
SRV_CMD=("ib_write_bw -d rxe0 -x 1 -s 65536 -n $ITERS"
	"$U write_bw -d verbs:rxe0 -x 1 -s 65536 -n $ITERS"
	"$U write_bw -d afxdp:eth0 -x 1 -s 65536 -n $ITERS"
	"$U write_bw -d afxdp:eth0 -x 1 -s 65536 -n $ITERS --reliability sr"
	"ib_send_bw -d rxe0 -x 1 -s 65536 -n $ITERS"
	"$U send_bw -d verbs:rxe0 -x 1 -s 65536 -n $ITERS --reliability sr"
	"$U send_bw -d verbs:rxe0 -x 1 -s 65536 -n $ITERS --reliability sr --nic-rc"
	"$U send_bw -d verbs:rxe0 -x 1 -s 65536 -n $ITERS --reliability ec"
	"$U send_bw -d afxdp:eth0 -x 1 -s 65536 -n $ITERS --reliability sr")
declare -A BW
for loss in 0 "$LOSS"; do
	tap_off() { ip netns exec "$UROCE_VMLAB_LAB" "$IMPAIR" tp-cli --off >/dev/null 2>&1 || true; }
	tap_off
	for i in "${!MODES[@]}"; do
		if [ "$loss" != 0 ]; then
			# the same seed: every mode meets the same drop pattern
			ip netns exec "$UROCE_VMLAB_LAB" "$IMPAIR" tp-cli --drop "$loss" --seed 7 >/dev/null ||
				fail "uroce-impair on tp-cli"
		fi
		BW[$i,$loss]=$(run "${SRV_CMD[$i]}" "${SRV_CMD[$i]} $SRV_IP")
		tap_off
		echo "  ${MODES[$i]}, loss $loss: ${BW[$i,$loss]}" >&2
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
echo "64 KiB x $ITERS, guest cli -> guest srv (TCG), drops on cli's bridge port; $(date -u +%F), commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo ?)"
echo "| path | lossless MB/s | x rxe RC | $LOSS loss MB/s | x rxe RC |"
echo "|---|---:|---:|---:|---:|"
for i in "${!MODES[@]}"; do
	b=${BASE[$i]}
	echo "| ${MODES[$i]} | ${BW[$i,0]} | $(ratio "${BW[$i,0]}" "${BW[$b,0]}") | ${BW[$i,$LOSS]} | $(ratio "${BW[$i,$LOSS]}" "${BW[$b,$LOSS]}") |"
done
