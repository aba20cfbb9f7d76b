#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark (not a test): NCCL's allreduce over the uroce net plugin, the
# sweep. nccl_coll (tests/nccl/nccl_coll.c) on every rank, each rank in
# its own namespace behind one Linux bridge (tests/nccl/coll_topo.sh), the
# plugin's engine inline by default; for each loss rate (uroce-impair on
# every bridge port), rank count and reliability mode, ring and tree
# allreduce over a range of sizes, every element checked as in the test.
# Then the 1 KiB allreduce latency at each rank count and mode (loss 0,
# more iterations).
#
# Output: a CSV of every timed iteration (mode,loss,coll,algo,nranks,size,
# iter,time_us,lost_bytes; time = the slowest rank's, from the end of the
# barrier before it until that rank's output was final), and two markdown
# tables: mode, loss, ranks, algo, size, mean, p99, p99 / the mean of the
# same mode, ranks, algo and size without loss, lost bytes (be's deadline
# cuts summed over the ranks and iterations); and the 1 KiB latency.
#
#   nccl_coll_bench.sh NCCL_COLL PLUGIN_DIR UROCE_IMPAIR [CSV]
# Use a build without sanitizers (e.g. meson setup build-rel
# --buildtype=release): they cost half the speed. CSV defaults to
# ./nccl_coll_bench.csv (overwritten).
#
# The defaults finish in about 17 minutes on a 2-CPU host (64 MiB takes
# about 5 s an iteration there, and under loss each packet lost at the end
# of a message waits for the plugin's local ACK timeout). The extent:
#   BENCH_RANKS="4 8"          rank counts
#   BENCH_MODES="rc sr ec be"  UROCE_NCCL_RELIABILITY values
#   BENCH_LOSSES="0 0.001 0.01" drop probabilities (0 is needed for the ratio)
#   BENCH_ALGOS="ring tree"    allreduce algorithms
#   BENCH_SIZES="1K 16K 256K 4M 64M"   bytes per rank (the full range:
#                              "1K 4K 16K 64K 256K 1M 4M 16M 64M")
#   BENCH_ITERS=50             iterations up to 1 MiB,
#   BENCH_ITERS_BIG=20         up to 4 MiB,
#   BENCH_ITERS_HUGE=5         above
#   BENCH_LOSS_MAX_SIZE=256K   the largest size run with loss
#   BENCH_ITERS_LOSS=20        iterations of every size with loss
#   BENCH_WARMUP=2             warm-up iterations (each size)
#   BENCH_LAT_ITERS=200        iterations of the 1 KiB latency runs (0: none)
#   BENCH_CORES=inline         UROCE_NCCL_CORES
#   BENCH_BE_TIMEOUT_US=       UROCE_NCCL_BE_TIMEOUT_US (unset: the plugin's default)
#   BENCH_TIMEOUT=120          nccl_coll's --timeout (seconds, each wait)
#   BENCH_BUDGET_S=1320        no run starts after this many seconds
#   BENCH_TCPBASE_DIR=         the folder of libnccl-net-tcpbase.so (tests/nccl in the
#                              build): adds mode "tcp", the same sweep at loss 0 (the
#                              impairment drops only RoCEv2) over kernel TCP, NCCL's
#                              socket transport's way, as the baseline
# Any other UROCE_NCCL_* variable in the environment reaches every rank as
# it is (ip netns exec keeps the environment), e.g. UROCE_NCCL_RC_TIMEOUT
# (the ACK timeout of rc and of every mode's control QP: under loss it sets
# the tail) or UROCE_NCCL_BE_US_PER_MIB.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/netns.sh"
. "$HERE/../nccl/coll_topo.sh"
USAGE="usage: nccl_coll_bench.sh NCCL_COLL PLUGIN_DIR UROCE_IMPAIR [CSV]"
COLL=$(realpath "${1:?$USAGE}") || exit 2
PLUGDIR=$(realpath "${2:?$USAGE}") || exit 2
IMPAIR=$(realpath "${3:?$USAGE}") || exit 2
CSV=$(realpath -m "${4:-nccl_coll_bench.csv}")
[ -e "$PLUGDIR/libnccl-net-uroce.so" ] || { echo "no libnccl-net-uroce.so in $PLUGDIR"; exit 2; }
TCPDIR=
if [ -n "${BENCH_TCPBASE_DIR:-}" ]; then
	TCPDIR=$(realpath "$BENCH_TCPBASE_DIR") && [ -e "$TCPDIR/libnccl-net-tcpbase.so" ] ||
		{ echo "BENCH_TCPBASE_DIR=$BENCH_TCPBASE_DIR: no libnccl-net-tcpbase.so there"; exit 2; }
fi
netns_need_root
netns_init uroce-collbench
TMP=$NETNS_TMP

read -r -a RANKS <<<"${BENCH_RANKS:-4 8}"
read -r -a MODES <<<"${BENCH_MODES:-rc sr ec be}"
read -r -a LOSSES <<<"${BENCH_LOSSES:-0 0.001 0.01}"
read -r -a ALGOS <<<"${BENCH_ALGOS:-ring tree}"
read -r -a SIZES <<<"${BENCH_SIZES:-1K 16K 256K 4M 64M}"
ITERS=${BENCH_ITERS:-50} ITERS_BIG=${BENCH_ITERS_BIG:-20} ITERS_HUGE=${BENCH_ITERS_HUGE:-5}
ITERS_LOSS=${BENCH_ITERS_LOSS:-20} WARMUP=${BENCH_WARMUP:-2} LAT_ITERS=${BENCH_LAT_ITERS:-200}
TIMEOUT=${BENCH_TIMEOUT:-120} BUDGET_S=${BENCH_BUDGET_S:-1320}
export COLL_CORES=${BENCH_CORES:-inline}
[ -z "${BENCH_BE_TIMEOUT_US:-}" ] || export COLL_BE_TIMEOUT_US=$BENCH_BE_TIMEOUT_US
export COLL_OUTER_TIMEOUT=$((BUDGET_S + 600))
START=$SECONDS SEED=0

# bytes SIZE: 4K -> 4096
bytes() {
	case "$1" in
	*[kK]) echo $((${1%?} << 10)) ;;
	*[mM]) echo $((${1%?} << 20)) ;;
	*[gG]) echo $((${1%?} << 30)) ;;
	*) echo $(($1)) ;;
	esac
}
LOSS_MAX=$(bytes "${BENCH_LOSS_MAX_SIZE:-256K}")
ALGO_ARG=all
[ ${#ALGOS[@]} = 1 ] && ALGO_ARG=${ALGOS[0]}
MAXN=0
for n in "${RANKS[@]}"; do [ "$n" -gt "$MAXN" ] && MAXN=$n; done

coll_topo_build "$MAXN"
PORTS=$COLL_N
echo "mode,loss,coll,algo,nranks,size,iter,time_us,lost_bytes" >"$CSV"
SUMMARY=$TMP/summary.txt # mode loss ranks algo size iters mean p50 p99 max lost bad (rank 0's lines)
LAT=$TMP/lat.txt
: >"$SUMMARY"
: >"$LAT"
FAILED=()
SKIPPED=()

# one_run TAG MODE LOSS N ITERS SIZES_CSV ALGO OUTFILE: one nccl_coll run of every rank;
# rank 0's result lines appended to OUTFILE with mode and loss in front (mode tcp: the
# baseline plugin)
one_run() {
	local tag=$1 mode=$2 loss=$3 n=$4 iters=$5 sizes=$6 algo=$7 out=$8 t0=$SECONDS log r pdir=$PLUGDIR
	if [ $((SECONDS - START)) -ge "$BUDGET_S" ]; then
		SKIPPED+=("$tag")
		return
	fi
	COLL_PLUGIN=uroce
	[ "$mode" != tcp ] || { COLL_PLUGIN=tcpbase pdir=$TCPDIR; }
	export COLL_PLUGIN
	log=$TMP/$tag.out
	COLL_N=$PORTS
	coll_impair "$IMPAIR" "$loss" $((SEED += 16))
	COLL_N=$n
	rm -f "$TMP/run.csv"
	if ! coll_run "$log" "$mode" "$COLL" "$pdir" --coll allreduce --algo "$algo" --sizes "$sizes" \
		--iters "$iters" --warmup "$WARMUP" --timeout "$TIMEOUT" --csv "$TMP/run.csv"; then
		FAILED+=("$tag: exit ${COLL_RC[*]}")
		echo "  $tag: FAILED (exit ${COLL_RC[*]})"
		for ((r = 0; r < n; r++)); do
			grep -h "nccl_coll: rank\|WARN" "$log.$r" | head -n 3 | sed "s/^/    rank $r: /"
		done
		COLL_N=$PORTS
		return
	fi
	COLL_N=$PORTS
	awk -v m="$mode" -v l="$loss" '$1 == "allreduce" && $3 ~ /^[0-9]+$/ {
		print m, l, $3, $2, $4, $5, $6, $7, $8, $9, $10, $11 }' "$log" >>"$out"
	[ ! -f "$TMP/run.csv" ] || tail -n +2 "$TMP/run.csv" | sed "s/^/$mode,$loss,/" >>"$CSV"
	echo "  $tag: $((SECONDS - t0)) s, $(coll_dropped "$IMPAIR") packets dropped"
}

echo "nccl_coll_bench: ranks ${RANKS[*]}, modes ${MODES[*]}, losses ${LOSSES[*]}, allreduce ${ALGOS[*]}," \
	"sizes ${SIZES[*]} (with loss up to ${BENCH_LOSS_MAX_SIZE:-256K}); engine $COLL_CORES; budget $BUDGET_S s"
for loss in "${LOSSES[@]}"; do
	for n in "${RANKS[@]}"; do
		modes=("${MODES[@]}")
		[ -z "$TCPDIR" ] || [ "$loss" != 0 ] || modes+=(tcp)
		for mode in "${modes[@]}"; do
			small=() big=() huge=() lossy=()
			for s in "${SIZES[@]}"; do
				b=$(bytes "$s")
				if [ "$loss" != 0 ]; then
					[ "$b" -gt "$LOSS_MAX" ] || lossy+=("$s")
				elif [ "$b" -le $((1 << 20)) ]; then
					small+=("$s")
				elif [ "$b" -le $((4 << 20)) ]; then
					big+=("$s")
				else
					huge+=("$s")
				fi
			done
			join() { local IFS=,; echo "$*"; }
			[ ${#small[@]} = 0 ] || one_run "${n}r-$mode-$loss-small" "$mode" "$loss" "$n" "$ITERS" "$(join "${small[@]}")" \
				"$ALGO_ARG" "$SUMMARY"
			[ ${#big[@]} = 0 ] || one_run "${n}r-$mode-$loss-big" "$mode" "$loss" "$n" "$ITERS_BIG" "$(join "${big[@]}")" \
				"$ALGO_ARG" "$SUMMARY"
			[ ${#huge[@]} = 0 ] || one_run "${n}r-$mode-$loss-huge" "$mode" "$loss" "$n" "$ITERS_HUGE" \
				"$(join "${huge[@]}")" "$ALGO_ARG" "$SUMMARY"
			[ ${#lossy[@]} = 0 ] || one_run "${n}r-$mode-$loss" "$mode" "$loss" "$n" "$ITERS_LOSS" "$(join "${lossy[@]}")" \
				"$ALGO_ARG" "$SUMMARY"
		done
	done
done
if [ "$LAT_ITERS" -gt 0 ]; then
	for n in "${RANKS[@]}"; do
		modes=("${MODES[@]}")
		[ -z "$TCPDIR" ] || modes+=(tcp)
		for mode in "${modes[@]}"; do
			one_run "${n}r-$mode-lat" "$mode" 0 "$n" "$LAT_ITERS" 1K "$ALGO_ARG" "$LAT"
		done
	done
fi

echo
echo "## allreduce over libnccl-net-uroce.so${TCPDIR:+ (tcp: libnccl-net-tcpbase.so, kernel TCP)} ($((SECONDS - START)) s; engine $COLL_CORES; $(nproc) CPUs)"
echo
echo "Times in us, the slowest rank's; p99/lossless: this p99 over the mean of the same mode, ranks,"
echo "algorithm and size at loss 0; lost: bytes be's deadline cut, all ranks and iterations."
echo
awk '
	{ key = $1 " " $3 " " $4 " " $5 } # mode ranks algo size
	$2 == 0 { base[key] = $7 }
	{ row[NR] = $0 }
	END {
		print "| mode | loss | ranks | algo | size | iters | mean | p99 | p99/lossless | lost bytes |"
		print "|---|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= NR; i++) {
			split(row[i], f, " ")
			k = f[1] " " f[3] " " f[4] " " f[5]
			sz = f[5] >= 1048576 ? sprintf("%g MiB", f[5] / 1048576) : sprintf("%g KiB", f[5] / 1024)
			ratio = (k in base) && base[k] > 0 ? sprintf("%.2f", f[9] / base[k]) : "-"
			printf "| %s | %s | %s | %s | %s | %s | %.1f | %.1f | %s | %s |\n", f[1], f[2], f[3], f[4], sz, f[6], f[7], f[9], ratio, f[11]
		}
	}' <(sort -s -k1,1 -k2,2g -k3,3n -k4,4 -k5,5n "$SUMMARY")
if [ -s "$LAT" ]; then
	echo
	echo "## 1 KiB allreduce latency (loss 0, $LAT_ITERS iterations; us)"
	echo
	echo "| ranks | mode | algo | mean | p50 | p99 | max |"
	echo "|---|---|---|---|---|---|---|"
	awk '{ printf "| %s | %s | %s | %.1f | %.1f | %.1f | %.1f |\n", $3, $1, $4, $7, $8, $9, $10 }' "$LAT"
fi
echo
echo "CSV: $CSV ($(($(wc -l <"$CSV") - 1)) iterations)"
[ ${#SKIPPED[@]} = 0 ] || echo "not run (the budget of $BUDGET_S s was spent): ${SKIPPED[*]}"
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "FAILED runs:"
	printf '  %s\n' "${FAILED[@]}"
	exit 1
fi
