#!/bin/bash
# SPDX-License-Identifier: MIT
# NCCL's collectives over the uroce net plugin (nccl_coll): 4 and 8 ranks,
# each in its own namespace behind one Linux bridge (coll_topo.sh), the
# plugin found by NCCL's name rule (--plugin uroce: libnccl-net-uroce.so
# on LD_LIBRARY_PATH), its engine inline (UROCE_NCCL_CORES=inline: eight
# ranks on a host of two CPUs). Each of rc, sr, ec and be at 0 and 1% loss
# (uroce-impair on every bridge port: RoCEv2 leaving each rank), every
# rank running ring and tree allreduce, ring allgather and ring
# reduce-scatter at 4 KiB and 256 KiB per rank, a few iterations each; then
# ring allreduce on each exported version of the plugin's table (v8 .. v12),
# 4 ranks, rc; and ring and tree allreduce over the benchmark's baseline,
# libnccl-net-tcpbase.so in TCPBASE_DIR (kernel TCP). Every element of every result is checked by nccl_coll after
# every iteration: exact under rc, sr and ec; under be a collective that
# lost no byte on any rank (uroceNcclLostBytes) must be exact.
#
# A case passes when every rank exits 0, rank 0 reports every collective,
# rc/sr/ec report no lost byte and no wrong element, and the impairment
# dropped nothing at 0 and something at 1% (summed over the 1% cases).
# The table at the end: per case the seconds, the RoCEv2 packets dropped,
# the lost bytes and wrong elements (be), and the mean time (the slowest
# rank's, us) of each collective at the largest size.
#
#   coll.sh NCCL_COLL PLUGIN_DIR UROCE_IMPAIR TCPBASE_DIR
# Environment: COLL_ONLY=GLOB runs only the cases whose name matches (names
# as in the table, e.g. '8r-*' or '4r-be-0.01'); COLL_ONLY=repro-no-linger
# runs the one case not in the default set: 4 ranks, rc, no loss, with
# nccl_coll --no-linger (the ranks do not keep calling into the plugin
# after their final barrier; see nccl_coll.c). COLL_BUDGET_S: no case
# starts after this many seconds (default 240; meson's timeout is 300).
set -u
. "$(dirname "$0")/../lib/netns.sh"
. "$(dirname "$0")/coll_topo.sh"
USAGE="usage: coll.sh NCCL_COLL PLUGIN_DIR UROCE_IMPAIR TCPBASE_DIR"
COLL=${1:?$USAGE}
PLUGDIR=${2:?$USAGE}
IMPAIR=${3:?$USAGE}
TCPDIR=${4:?$USAGE}
[ -e "$PLUGDIR/libnccl-net-uroce.so" ] || { echo "FAIL: no libnccl-net-uroce.so in $PLUGDIR"; exit 1; }
netns_test uroce-coll
ONLY=${COLL_ONLY:-*}
BUDGET_S=${COLL_BUDGET_S:-240}
START=$SECONDS
SIZES=4K,256K ITERS=3 WARMUP=1
export COLL_OUTER_TIMEOUT=120 # one rank's whole run; nccl_coll's own --timeout is 60 s per wait

# ---- bad arguments: exit 2 and a message saying what is accepted
A=(--rank 0 --nranks 4 --dir "$TMP" --plugin uroce)
netns_usage_error "accepted allreduce, allgather, reducescatter or all" "$COLL" "${A[@]}" --coll x --algo ring --sizes 4K
netns_usage_error "accepted ring, tree or all" "$COLL" "${A[@]}" --coll all --algo star --sizes 4K
netns_usage_error "the tree is allreduce's only" "$COLL" "${A[@]}" --coll allgather --algo tree --sizes 4K
netns_usage_error "a multiple of 4" "$COLL" "${A[@]}" --coll all --algo ring --sizes 4K,6
netns_usage_error "accepted 0..3" "$COLL" --rank 4 --nranks 4 --dir "$TMP" --plugin uroce --coll all --algo ring --sizes 4
netns_usage_error "accepted 8..12" "$COLL" "${A[@]}" --coll all --algo ring --sizes 4K --version 7
netns_usage_error "--dir is missing" "$COLL" --rank 0 --nranks 4 --plugin uroce --coll all --algo ring --sizes 4K
netns_usage_error "unknown option '--frobnicate'" "$COLL" "${A[@]}" --coll all --algo ring --sizes 4K --frobnicate 1

coll_topo_build 8
COLL_PORTS=$COLL_N

ROWS=()
FAILED=()
DROP1=0 # dropped in the 1% cases
printf -v HDR '%-16s %-6s %5s %8s %10s %9s %11s %11s %11s %11s' case result secs dropped lost_bytes bad_elems \
	ar_ring_us ar_tree_us ag_us rs_us
# field LOG COLL ALGO SIZE COLUMN: a column of rank 0's result line (1-based), or "-"
field() {
	awk -v c="$2" -v a="$3" -v s="$4" -v k="$5" '$1 == c && $2 == a && $4 == s { v = $k } END { print v == "" ? "-" : v }' "$1"
}
# run_case NAME NRANKS MODE LOSS SEED NRESULTS ARGS...: one run of every rank
run_case() {
	local name=$1 n=$2 mode=$3 loss=$4 seed=$5 nres=$6 t0=$SECONDS result=ok log d lost bad r got
	shift 6
	# shellcheck disable=SC2053 # COLL_ONLY is a glob
	[[ $name == $ONLY ]] || return 0
	if [ $((SECONDS - START)) -ge "$BUDGET_S" ]; then
		FAILED+=("$name: not run, the test's time budget of $BUDGET_S s was spent")
		ROWS+=("$(printf '%-16s %s' "$name" "NOT RUN (time budget)")")
		return
	fi
	log=$TMP/$name.out
	COLL_N=$COLL_PORTS
	coll_impair "$IMPAIR" "$loss" "$seed"
	COLL_N=$n
	if ! coll_run "$log" "$mode" "$COLL" "${CASE_PLUGDIR:-$PLUGDIR}" --timeout 60 --iters $ITERS --warmup $WARMUP "$@"; then
		result="FAIL(exit ${COLL_RC[*]})"
	fi
	COLL_N=$COLL_PORTS
	d=$(coll_dropped "$IMPAIR")
	got=$(awk '$1 ~ /^(allreduce|allgather|reducescatter)$/ && $3 ~ /^[0-9]+$/' "$log" | wc -l)
	lost=$(awk '$1 ~ /^(allreduce|allgather|reducescatter)$/ && $3 ~ /^[0-9]+$/ { s += $10 } END { print s + 0 }' "$log")
	bad=$(awk '$1 ~ /^(allreduce|allgather|reducescatter)$/ && $3 ~ /^[0-9]+$/ { s += $11 } END { print s + 0 }' "$log")
	if [ "$result" = ok ]; then
		if [ "$got" != "$nres" ]; then
			result="FAIL(rank 0 reported $got of $nres collectives)"
		elif [ "$mode" != be ] && { [ "$lost" != 0 ] || [ "$bad" != 0 ]; }; then
			result="FAIL($mode: lost $lost bytes, $bad wrong elements)"
		elif [ "$loss" = 0 ] && [ "$d" != 0 ]; then
			result="FAIL(dropped $d packets at loss 0)"
		fi
	fi
	[ "$loss" = 0 ] || DROP1=$((DROP1 + d))
	ROWS+=("$(printf '%-16s %-6s %5s %8s %10s %9s %11s %11s %11s %11s' "$name" "${result%%(*}" $((SECONDS - t0)) "$d" \
		"$lost" "$bad" "$(field "$log" allreduce ring 262144 6)" "$(field "$log" allreduce tree 262144 6)" \
		"$(field "$log" allgather ring 262144 6)" "$(field "$log" reducescatter ring 262144 6)")")
	echo "${ROWS[-1]}"
	if [ "$result" != ok ]; then
		FAILED+=("$name: $result")
		for ((r = 0; r < n; r++)); do
			echo "--- $name rank $r (exit ${COLL_RC[r]:-?}): the last lines"
			grep -v "^allreduce\|^allgather\|^reducescatter\|^coll " "$log.$r" | tail -n 6
		done
	fi
}

echo "nccl_coll: ring+tree allreduce, allgather, reduce-scatter at $SIZES per rank, $ITERS iterations" \
	"(+$WARMUP warm-up) each; engine inline; loss by uroce-impair on the bridge ports"
echo "$HDR"
seed=0
ALL=(--coll all --algo all --sizes "$SIZES")
for n in 4 8; do
	for mode in rc sr ec be; do
		for loss in 0 0.01; do
			run_case "${n}r-$mode-$loss" $n $mode $loss $((seed += 16)) 8 "${ALL[@]}"
		done
	done
done
# be with Hadamard coding (UROCE_NCCL_HADAMARD): block 256, a power of 4,
# codes this integer data exactly, so a collective that lost no byte must
# still be exact: the receivers decoded what the senders encoded. Lossless
# with a deadline no load reaches (nothing cut: every collective checked
# exactly; 256 KiB a rank is coded, 4 KiB is under one group), then at 1%.
COLL_HD=256:16 COLL_BE_TIMEOUT_US=2000000 run_case 4r-be-hd-0 4 be 0 $((seed += 16)) 8 "${ALL[@]}"
COLL_HD=256:16 run_case 4r-be-hd-0.01 4 be 0.01 $((seed += 16)) 8 "${ALL[@]}"
for v in 8 9 10 11 12; do
	run_case "4r-rc-v$v" 4 rc 0 $((seed += 16)) 2 --coll allreduce --algo ring --sizes "$SIZES" --version $v
	# shellcheck disable=SC2053
	if [[ "4r-rc-v$v" == $ONLY ]] && ! grep -q "ncclNetPlugin_v$v," "$TMP/4r-rc-v$v.out"; then
		FAILED+=("4r-rc-v$v: did not run on ncclNetPlugin_v$v")
	fi
done
# the benchmark's baseline (tests/bench/nccl_net_tcp.c, kernel TCP) through the same checks
COLL_PLUGIN=tcpbase CASE_PLUGDIR=$TCPDIR run_case 4r-tcpbase 4 tcp 0 $((seed += 16)) 4 --coll allreduce --algo all \
	--sizes "$SIZES"
if [ "$ONLY" = repro-no-linger ]; then
	run_case repro-no-linger 4 rc 0 1 1 --coll allreduce --algo ring --sizes 4K --no-linger
fi

echo
echo "== coll: $((SECONDS - START)) s. dropped: RoCEv2 packets uroce-impair dropped on the bridge ports;"
echo "   lost_bytes, bad_elems: summed over the collectives and ranks (be's deadline cuts; 0 elsewhere);"
echo "   *_us: the mean time (the slowest rank's) at 256 KiB per rank of ring allreduce, tree"
echo "   allreduce, allgather, reduce-scatter"
printf '%s\n' "$HDR" "${ROWS[@]}"
[ ${#ROWS[@]} -gt 0 ] || fail "COLL_ONLY='$ONLY' matches no case"
# shellcheck disable=SC2053
if [[ "4r-rc-0.01" == $ONLY ]] && [ "$DROP1" = 0 ]; then
	FAILED+=("the 1% cases dropped nothing: uroce-impair is not in the path")
fi
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "FAIL: ${#FAILED[@]} case(s):"
	printf '  %s\n' "${FAILED[@]}"
	exit 1
fi
echo "PASS"
