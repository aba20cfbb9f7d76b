#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce against the kernel's Soft-RoCE on the same two QEMU guests (the
# cloud-VM case: virtio-net, Debian's kernel, one vCPU and one queue pair
# each, MTU 3500; uroce on AF_XDP in native XDP, copy mode), in one
# invocation, the contenders interleaved size by size:
#   goodput     write 64 B .. 4 MiB: rxe ib_write_bw, uroce-perf write_bw rc
#               and sr; send: rxe ib_send_bw, uroce-perf send_bw rc. The
#               64 B runs give the message rate.
#   CPU         each run's busy CPU time of both guests (/proc/stat), per GB
#               moved.
#   latency     write_lat, 64 B: p50 (perftest's t_typical) and p99.
#   loss        1% of the sender's RoCEv2 packets dropped as they enter the
#               bridge (uroce-impair on its tap, one seed for all): rxe's
#               go-back-N against uroce rc, sr and ec, 64 KiB writes.
#   interop     uroce-pingpong (AF_XDP) in one guest against rdma-core's
#               ibv_rc_pingpong (rxe) in the other, both ways, -c: every
#               buffer checked.
# A cell is the client's average of a run that completed; "timed out" or
# "failed" otherwise. Ratios are uroce / rxe of the same operation and size.
#
#   vm_side_by_side.sh VMLAB_SH UROCE_PERF_BIN UROCE_PINGPONG_BIN UROCE_IMPAIR_BIN
#       [--bytes B] [--rounds R] [--csv FILE] [--timeout S] [--kernel 6.1|6.12]
# Use a build without sanitizers (meson setup -Db_sanitize=none). The plot:
#   /usr/bin/python3 tests/bench/plot_side_by_side.py FILE.csv docs/vm_side_by_side.png
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../interop/vm_preamble.sh"
vm_need_root
USAGE="usage: $0 VMLAB_SH UROCE_PERF_BIN UROCE_PINGPONG_BIN UROCE_IMPAIR_BIN [--bytes B] [--rounds R] [--csv FILE] [--timeout S] [--kernel 6.1|6.12]"
[ $# -ge 4 ] || { echo "$USAGE" >&2; exit 2; }
VMLAB=$1 PERF=$2 PP=$3 IMPAIR=$4
shift 4
BYTES=$((32 << 20)) ROUNDS=1 CSV=/dev/null TMO=120 KERNEL=6.1
while [ $# -gt 0 ]; do
	case $1 in
	--bytes) BYTES=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--csv) CSV=$2; shift 2 ;;
	--timeout) TMO=$2; shift 2 ;;
	--kernel) KERNEL=$2; shift 2 ;;
	*) echo "unknown option $1; $USAGE" >&2; exit 2 ;;
	esac
done
case "$KERNEL" in
6.1) ;;
6.12) vm_use_612 ;;
*) echo "--kernel '$KERNEL': accepted 6.1, 6.12" >&2; exit 2 ;;
esac
for b in "$PERF" "$PP" "$IMPAIR"; do [ -x "$b" ] || { echo "FAIL: $b not found" >&2; exit 1; }; done
vm_lab_vars uvsbs uvp0 side-by-side
vm_case_traps

vm_boot_pair 1 1 3500 "$PERF" "$PP"
U="$vm_uroce_env /tmp/u"
VCACHE=${UROCE_VMLAB_CACHE:-/var/cache/uroce-vmlab}
PROFILE=$(cat "$VCACHE/run/$UROCE_VMLAB_LAB/guest-srv/profile")
KPKG=$(cat "$VCACHE/kpkg")

# busy USER_HZ ticks of a guest so far (every CPU: user nice system irq softirq steal)
busy() { "$VMLAB" exec "$1" --timeout 10 "head -1 /proc/stat" | awk '{ print $2 + $3 + $4 + $7 + $8 + $9 }'; }

# run SERVER_CMD CLIENT_CMD: the client's output in $OUT, status in $RC;
# CPU ticks of both guests over the run in $TICKS
run() {
	local job s0 c0
	s0=$(busy srv) c0=$(busy cli)
	job=$("$VMLAB" start srv "$1")
	if ! wait_listening_in srv 18515; then
		OUT="no server" RC=1 TICKS=0
		return
	fi
	RC=0
	OUT=$("$VMLAB" exec cli --timeout "$TMO" "$2 $SRV_IP" 2>&1) || RC=$?
	"$VMLAB" wait srv "$job" --timeout 30 >/dev/null 2>&1 ||
		"$VMLAB" exec srv --timeout 10 'pkill -f ib_; pkill -f uroce-' >/dev/null 2>&1 || true
	TICKS=$(($(busy srv) - s0 + $(busy cli) - c0))
	sleep 0.5
}

# the bandwidth table's line for SIZE: "MB/s msgrate", or the failure
bw_of() {
	local size=$1
	[ "$RC" = 0 ] || { [ "$RC" = 124 ] && echo "timed-out -" || echo "failed -"; return; }
	awk -v s="$size" '$1 == s && NF >= 5 { print $4, $5; f = 1 } END { if (!f) print "no-result -" }' <<<"$OUT"
}

iters_for() { # iterations moving about BYTES, 16..3000
	local n=$((BYTES / $1))
	[ $n -ge 16 ] || n=16
	[ $n -le 3000 ] || n=3000
	echo $n
}

SIZES="64 256 1024 4096 16384 65536 262144 1048576 4194304"
NAMES=("rxe write" "uroce rc write" "uroce sr write" "rxe send" "uroce rc send")
declare -A BW RATE CPU
echo "size,contender,round,mbs,mpps,cpu_s_per_gb" >"$CSV"
for round in $(seq "$ROUNDS"); do
	for size in $SIZES; do
		n=$(iters_for "$size")
		CMDS=("ib_write_bw -d rxe0 -x 1 -s $size -n $n -F"
			"$U/uroce-perf write_bw -d afxdp:eth0 -x 1 -s $size -n $n"
			"$U/uroce-perf write_bw -d afxdp:eth0 -x 1 -s $size -n $n --reliability sr"
			"ib_send_bw -d rxe0 -x 1 -s $size -n $n -F"
			"$U/uroce-perf send_bw -d afxdp:eth0 -x 1 -s $size -n $n")
		for i in "${!NAMES[@]}"; do
			run "${CMDS[$i]}" "${CMDS[$i]}"
			read -r mbs rate <<<"$(bw_of "$size")"
			cpu=$(awk -v t="$TICKS" -v b="$((size * n))" 'BEGIN { printf "%.1f", t / 100 / (b / 1e9) }')
			[[ $mbs =~ ^[0-9.]+$ ]] || cpu=-
			BW[$i,$size,$round]=$mbs RATE[$i,$size,$round]=$rate CPU[$i,$size,$round]=$cpu
			echo "$size,${NAMES[$i]},$round,$mbs,$rate,$cpu" >>"$CSV"
			echo "  round $round, $size B x $n, ${NAMES[$i]}: $mbs MB/s, $rate Mpps, $cpu CPU s/GB" >&2
		done
	done
done

# latency: p50 (t_typical) and p99 of 64 B writes
LNAMES=("rxe" "uroce rc" "uroce sr")
LCMDS=("ib_write_lat -d rxe0 -x 1 -s 64 -n 2000 -F"
	"$U/uroce-perf write_lat -d afxdp:eth0 -x 1 -s 64 -n 2000"
	"$U/uroce-perf write_lat -d afxdp:eth0 -x 1 -s 64 -n 2000 --reliability sr")
declare -A P50 P99
for i in "${!LNAMES[@]}"; do
	run "${LCMDS[$i]}" "${LCMDS[$i]}"
	if [ "$RC" = 0 ]; then
		read -r P50[$i] P99[$i] <<<"$(awk '$1 == 64 && NF >= 8 { print $5, $8; f = 1 } END { if (!f) print "- -" }' <<<"$OUT")"
	else
		P50[$i]=failed P99[$i]=-
	fi
	echo "  latency ${LNAMES[$i]}: p50 ${P50[$i]} us, p99 ${P99[$i]} us" >&2
done

# 1% loss on the sender's (cli's) bridge port, the same seed for each
ONAMES=("rxe write (go-back-N)" "uroce rc write" "uroce sr write" "uroce ec write")
n=$(iters_for 65536)
OCMDS=("ib_write_bw -d rxe0 -x 1 -s 65536 -n $n -F"
	"$U/uroce-perf write_bw -d afxdp:eth0 -x 1 -s 65536 -n $n"
	"$U/uroce-perf write_bw -d afxdp:eth0 -x 1 -s 65536 -n $n --reliability sr"
	"$U/uroce-perf write_bw -d afxdp:eth0 -x 1 -s 65536 -n $n --reliability ec")
declare -A LOSS
impair() { ip netns exec "$UROCE_VMLAB_LAB" "$IMPAIR" tp-cli "$@"; }
for i in "${!ONAMES[@]}"; do
	impair --drop 0.01 --seed 7 >/dev/null || fail "uroce-impair on tp-cli"
	run "${OCMDS[$i]}" "${OCMDS[$i]}"
	read -r LOSS[$i] _ <<<"$(bw_of 65536)"
	echo "  1% loss ${ONAMES[$i]}: ${LOSS[$i]} MB/s ($(impair --stats))" >&2
	impair --off >/dev/null
done

# interop, data checked, both ways
INTEROP=()
for dir in "uroce srv, rxe cli" "rxe srv, uroce cli"; do
	UP="$U/uroce-pingpong rc -d afxdp:eth0 -g 1 -n 200 -s 4096 -c"
	RP="ibv_rc_pingpong -d rxe0 -g 1 -n 200 -s 4096 -c"
	if [ "$dir" = "uroce srv, rxe cli" ]; then run "$UP" "$RP"; else run "$RP" "$UP"; fi
	if [ "$RC" = 0 ] && grep -q "200 iters in" <<<"$OUT"; then
		INTEROP+=("$dir: 200 x 4 KiB checked, $(grep -o '[0-9.]* usec/iter' <<<"$OUT")")
	else
		INTEROP+=("$dir: FAILED ($(tail -1 <<<"$OUT"))")
	fi
	echo "  interop ${INTEROP[-1]}" >&2
done

# ---- tables
med() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }'; }
cell() { # cell ARRAY i size: median over rounds
	local -n a=$1
	local r vals=""
	for r in $(seq "$ROUNDS"); do vals="$vals ${a[$2,$3,$r]}"; done
	local m
	m=$(echo $vals | med)
	[ "$m" != - ] || m=$(echo $vals | awk '{ print $1 }')
	echo "$m"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

echo "Guests: $KPKG, $(awk '{ printf "%s vCPU, %s queue pair, MTU %s, vhost-net %s, accel %s", $2, $3, $4, $5, $1 }' <<<"$PROFILE"); uroce on afxdp:eth0, XDP native, copy mode; $(date -u +%F), commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo ?), median of $ROUNDS round(s)"
echo
echo "| size | rxe write MB/s | uroce rc | x rxe | uroce sr | x rxe | rxe send MB/s | uroce rc send | x rxe |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for size in $SIZES; do
	w0=$(cell BW 0 "$size") w1=$(cell BW 1 "$size") w2=$(cell BW 2 "$size") s0=$(cell BW 3 "$size") s1=$(cell BW 4 "$size")
	echo "| $size | $w0 | $w1 | $(ratio "$w1" "$w0") | $w2 | $(ratio "$w2" "$w0") | $s0 | $s1 | $(ratio "$s1" "$s0") |"
done
echo
echo "| 64 B message rate, Mpps | rxe write | uroce rc write | x rxe | rxe send | uroce rc send | x rxe |"
echo "|---|---:|---:|---:|---:|---:|---:|"
r0=$(cell RATE 0 64) r1=$(cell RATE 1 64) r3=$(cell RATE 3 64) r4=$(cell RATE 4 64)
echo "| | $r0 | $r1 | $(ratio "$r1" "$r0") | $r3 | $r4 | $(ratio "$r4" "$r3") |"
echo
echo "| CPU s per GB (both guests) | rxe write | uroce rc write | uroce sr write | rxe send | uroce rc send |"
echo "|---|---:|---:|---:|---:|---:|"
for size in 65536 1048576; do
	echo "| $size B | $(cell CPU 0 $size) | $(cell CPU 1 $size) | $(cell CPU 2 $size) | $(cell CPU 3 $size) | $(cell CPU 4 $size) |"
done
echo
echo "| write_lat 64 B | p50 us | x rxe | p99 us | x rxe |"
echo "|---|---:|---:|---:|---:|"
for i in "${!LNAMES[@]}"; do
	echo "| ${LNAMES[$i]} | ${P50[$i]} | $(ratio "${P50[$i]}" "${P50[0]}") | ${P99[$i]} | $(ratio "${P99[$i]}" "${P99[0]}") |"
done
echo
echo "| 64 KiB writes, 1% of the sender's packets dropped | MB/s | x rxe |"
echo "|---|---:|---:|"
for i in "${!ONAMES[@]}"; do
	echo "| ${ONAMES[$i]} | ${LOSS[$i]} | $(ratio "${LOSS[$i]}" "${LOSS[0]}") |"
done
echo
for l in "${INTEROP[@]}"; do echo "- interop $l"; done
