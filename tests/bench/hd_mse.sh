#!/bin/bash
# SPDX-License-Identifier: MIT
# OptiNIC's Figure 7 on real be transfers: the error loss leaves in
# float32 data sent raw, Hadamard-coded per message, per block, and per
# block with stride, across drop rates and block sizes; and the
# transform's CPU cost against memcpy (hd_cost). Topology as rel_goodput.sh:
# A -- M -- B, uroce-impair on both of M's ingress interfaces (veth MTU
# 1500, path MTU 1024: 256 floats a packet), the ends pinned to CPUs 0 and
# 1. Every point is one hd_mse run (tests/bench/hd_mse.c) of --count
# messages of --floats floats, the same data in every run (--seed).
#
# Configurations per block size B (--blocks):
#   raw      no coding (the receiver zeroes its buffer before each post)
#   msg      one transform over the message (B = the message's floats)
#   blk      blocks of B contiguous floats (stride 1)
#   str      blocks of B floats interleaved over stride S = min(256, floats / B)
#            groups (S = 256: a packet carries one coefficient of each of 256 blocks)
# The coded receivers decode through rel.hd_block (the engine zeroes what
# never arrived; uroce_poll_cq decodes).
#
#   tests/bench/hd_mse.sh --build DIR [--quick] [--drops "0.001 ..."]
#       [--blocks "256 ..."] [--floats N] [--count M] [--seed S] [--plot FILE]
#       [--keep DIR]
#
# --build DIR: a release build with tests/bench/hd_mse, tests/bench/hd_cost
# and apps/uroce-impair (nothing is built here). --quick: drops 0.01 and
# 0.1, blocks 256 and 4096, 3 messages. Defaults: drops 0.001 0.003 0.01
# 0.03 0.1, blocks 256 1024 4096 16384 65536, 1M floats (4 MiB), 6
# messages. --plot FILE: the figure (plot_hd_mse.py, matplotlib) from the
# table kept in --keep (default BUILD/hd_mse). Columns: lost (the share of
# the data's bytes that did not arrive), nmse (squared error over the
# data's energy), max (the largest error, in rms of the data), >0.1 (the
# share of floats off by more than 0.1 rms), encode/decode ns a float.
# Exit 1 when a run fails, 2 on a bad argument or a missing tool.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD= QUICK=0 DROPS= BLOCKS= FLOATS=1048576 COUNT= SEED=1 PLOT= KEEP=
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--drops) DROPS=$2; shift 2 ;;
	--blocks) BLOCKS=$2; shift 2 ;;
	--floats) FLOATS=$2; shift 2 ;;
	--count) COUNT=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--plot) PLOT=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	-h|--help) sed -n '3,36p' "$0"; exit 0 ;;
	*) echo "hd_mse.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
[ -n "$BUILD" ] || { echo "hd_mse.sh: --build DIR is required (a release build)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "hd_mse.sh: run as root (namespaces, XDP)" >&2; exit 2; }
if [ $QUICK = 1 ]; then
	DROPS=${DROPS:-"0.01 0.1"} BLOCKS=${BLOCKS:-"256 4096"} COUNT=${COUNT:-3}
else
	DROPS=${DROPS:-"0.001 0.003 0.01 0.03 0.1"} BLOCKS=${BLOCKS:-"256 1024 4096 16384 65536"} COUNT=${COUNT:-6}
fi
[[ $FLOATS =~ ^[0-9]+$ ]] && [ $((FLOATS & (FLOATS - 1))) = 0 ] && [ "$FLOATS" -ge 65536 ] &&
	[ "$FLOATS" -le 16777216 ] || { echo "hd_mse.sh: --floats $FLOATS: accepted a power of two 65536..16777216" >&2; exit 2; }
MSE=$BUILD/tests/bench/hd_mse COST=$BUILD/tests/bench/hd_cost IMPAIR=$BUILD/apps/uroce-impair
for t in "$MSE" "$COST" "$IMPAIR"; do
	[ -x "$t" ] || { echo "hd_mse.sh: $t is missing (ninja -C $BUILD)" >&2; exit 2; }
done
KEEP=${KEEP:-$BUILD/hd_mse}
mkdir -p "$KEEP" && rm -f "$KEEP"/*.txt

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-hdmse
netns_routed 10.78
bench_pin

echo "== hd_mse: be transfers of $COUNT x $FLOATS floats A -> B through M (uroce-impair both ways), $(nproc) CPUs," \
	"$(bench_commit), $(date -u +%Y-%m-%d)"
bench_load

echo "-- the transform's CPU cost: ns per float, best of 5 over 64 MiB, against memcpy of the same buffer"
"${PIN_A[@]}" "$COST" --mib 64 --reps 5 | tee "$KEEP/cost.txt"

FAILED=0
# point CFG BLOCK STRIDE DROP: one run, a table row
point() {
	local cfg=$1 blk=$2 str=$3 drop=$4 rpid src rrc r s
	local args=(--shm "$TMP/p.shm" --floats "$FLOATS" --count "$COUNT" --seed "$SEED" --timeout-us 300000 --max-sec 120)
	[ "$blk" = 0 ] || args+=(--block "$blk" --stride "$str")
	rm -f "$TMP/p.shm"
	netns_start "$NB" "$TMP/recv.log" "${PIN_B[@]}" timeout -k 5 300 "$MSE" --role recv --dev afxdp:b0 "${args[@]}"
	rpid=$NETNS_PID
	ip netns exec "$NA" "${PIN_A[@]}" timeout -k 5 300 "$MSE" --role send --dev afxdp:a0 "${args[@]}" \
		>"$TMP/send.log" 2>&1
	src=$?
	netns_wait $rpid
	rrc=$?
	r=$(grep '^hd_mse result ' "$TMP/recv.log") s=$(grep '^hd_mse sender ' "$TMP/send.log")
	if [ $src != 0 ] || [ $rrc != 0 ] || [ -z "$r" ]; then
		echo "hd_mse.sh: $cfg B=$blk S=$str drop=$drop FAILED (sender $src, receiver $rrc)" >&2
		tail -3 "$TMP/send.log" "$TMP/recv.log" >&2
		FAILED=1
		return
	fi
	v() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
	printf "%-4s %6s %4s %6s  %8.5f %10.3e %9.3g %9.5f %7s %7s\n" "$cfg" "$blk" "$str" "$drop" "$(v lost_frac "$r")" \
		"$(v nmse "$r")" "$(v max_err_rms "$r")" "$(v frac_err_gt_0.1rms "$r")" "$(v encode_ns_per_float "$s")" \
		"$(v decode_ns_per_float "$r")" | tee -a "$KEEP/table.txt"
}

echo "-- error after loss (lost: share of bytes missing; nmse: error energy / data energy; max: largest error in rms;"
echo "   >0.1: share of floats off by more than 0.1 rms; enc/dec: ns a float, encode at the sender, decode in poll_cq)"
printf "%-4s %6s %4s %6s  %8s %10s %9s %9s %7s %7s\n" cfg block str drop lost nmse max ">0.1" enc dec
for drop in $DROPS; do
	for dev in m0 m1; do
		ip netns exec "$NM" "$IMPAIR" $dev --drop "$drop" --seed "$SEED" >/dev/null || netns_die "uroce-impair $dev"
	done
	point raw 0 1 "$drop"
	point msg "$FLOATS" 1 "$drop"
	for b in $BLOCKS; do
		s=$((FLOATS / b < 256 ? FLOATS / b : 256))
		point blk "$b" 1 "$drop"
		point str "$b" "$s" "$drop"
	done
done
if [ -n "$PLOT" ]; then
	/usr/bin/python3 "$(dirname "$0")/plot_hd_mse.py" "$KEEP/table.txt" "$PLOT" || FAILED=1
fi
exit $FAILED
