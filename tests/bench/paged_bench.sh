#!/bin/bash
# SPDX-License-Identifier: MIT
# Paged writes against one large WRITE (TransferEngine's observation: paged
# writes saturate the link from about 32 KiB pages): paged_bench between
# two network namespaces on one veth pair (no loss, link MTU 4200 so the
# path MTU is 4096, afxdp ports), for rc and sr. Each transfer moves
# --total bytes, either as uroce_post_paged_write (source pages in order,
# random distinct destination pages, a fresh permutation every transfer)
# or as one RDMA_WRITE_WITH_IMM; the receiver's QP counts the immediate
# (rel.imm_counter) and uroce_expect_imm_count says when it is all there.
# Per page size, --reps transfers of each kind, alternating; the table
# gives the median Gbit/s of each and their ratio. The ends are pinned to
# CPUs 0 and 1 when there are two.
#
#   tests/bench/paged_bench.sh --build DIR [--quick] [--modes "rc sr"]
#       [--total BYTES] [--pages "4k 8k ..."] [--reps N] [--mtu 4200|1500]
#       [--seed S] [--wait-quiet S] [--csv FILE] [--plot FILE]
#
# --build DIR: a release build with tests/bench/paged_bench (nothing is
# built here). --total: bytes a transfer moves (default 64m). --reps:
# transfers of each kind per page size (default 3; --quick: 1, and 16m).
# --wait-quiet S: before each mode wait up to S seconds for the CPUs to be
# 90% idle over a second (others' jobs on a shared machine).
# --csv FILE: "mode,page,paged_gbps,single_gbps,ratio" rows. --plot FILE:
# the ratio against the page size, drawn by plot_paged.py with
# /usr/bin/python3 (matplotlib). Exit 1 when a run fails, 2 on a bad
# argument or a missing tool.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
QUICK=0
MODES="rc sr"
TOTAL=
PAGES="4k 8k 16k 32k 64k 128k 256k 512k 1m"
REPS=
MTU=4200
SEED=1
QUIET=0
CSV=
PLOT=
die2() { echo "paged_bench.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--modes) MODES=${2:?--modes needs a list}; shift 2 ;;
	--total) TOTAL=${2:?--total needs bytes}; shift 2 ;;
	--pages) PAGES=${2:?--pages needs a list}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--mtu) MTU=${2:?--mtu needs 4200 or 1500}; shift 2 ;;
	--seed) SEED=${2:?--seed needs a number}; shift 2 ;;
	--wait-quiet) QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
	--csv) CSV=${2:?--csv needs a file}; shift 2 ;;
	--plot) PLOT=${2:?--plot needs a file}; shift 2 ;;
	-h|--help) sed -n '2,26p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (accepted: --build, --quick, --modes, --total, --pages, --reps, --mtu, --seed, --wait-quiet, --csv, --plot)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (a release build with tests/bench/paged_bench)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
if [ $QUICK = 1 ]; then TOTAL=${TOTAL:-16m}; REPS=${REPS:-1}; else TOTAL=${TOTAL:-64m}; REPS=${REPS:-3}; fi
for m in $MODES; do
	[ "$m" = rc ] || [ "$m" = sr ] || die2 "--modes: '$m'; accepted rc and sr"
done
[[ $REPS =~ ^[1-9][0-9]?$ ]] && [ "$REPS" -le 20 ] || die2 "--reps $REPS: accepted 1..20"
[ "$MTU" = 4200 ] || [ "$MTU" = 1500 ] || die2 "--mtu $MTU: accepted 4200 (path MTU 4096) or 1500 (path MTU 1024)"
[[ $SEED =~ ^[0-9]+$ ]] || die2 "--seed $SEED: accepted a whole number"
bench_check_quiet
[[ $TOTAL =~ ^[1-9][0-9]*[kmg]?$ ]] || die2 "--total $TOTAL: accepted bytes with an optional k/m/g suffix"
for p in $PAGES; do
	[[ $p =~ ^[1-9][0-9]*[kmg]?$ ]] || die2 "--pages: '$p' is not a size (bytes with an optional k/m suffix)"
done
PB=$BUILD/tests/bench/paged_bench
[ -x "$PB" ] || die2 "$PB is missing (ninja -C $BUILD tests/bench/paged_bench)"
command -v ip >/dev/null || die2 "ip (iproute2) is missing"
PLOTTER=$(dirname "$0")/plot_paged.py
if [ -n "$PLOT" ]; then
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
		die2 "--plot needs /usr/bin/python3 with matplotlib"
	[ -n "$CSV" ] || CSV=$(mktemp /tmp/paged_bench.XXXXXX.csv)
fi
PAGES_ARG=$(tr ' ' ',' <<<"$PAGES")

# wait_quiet: wait for a quiet machine before a run (--wait-quiet S = $QUIET)
. "$(dirname "$0")/quiet.sh"

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-paged
netns_add "$NA" "$NB"
netns_veth "$NA" pa "$NB" pb --ip-a 10.94.0.1/24 --ip-b 10.94.0.2/24 --mtu "$MTU"
ip netns exec "$NA" ping -c 1 -W 2 10.94.0.2 >/dev/null || netns_die "B is not reachable"
bench_pin
# A run's bound: 120 s a transfer at most inside paged_bench; the whole
# run gets --max-sec 600 and a kill 60 s after that.
LIMIT=600

echo "== paged_bench: paged writes vs one WRITE_WITH_IMM of $TOTAL, veth A -> B (MTU $MTU), $(nproc) CPUs," \
	"ends on ${PIN_A[*]:-any} / ${PIN_B[*]:-any}"
echo "   $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(bench_commit)," \
	"build $BUILD, $REPS transfer(s) of each kind per page size"
echo "   before the run: $(bench_load)"
[ -z "$CSV" ] || echo "mode,page,paged_gbps,single_gbps,ratio" >"$CSV"
FAILS=0
START=$SECONDS
declare -A ROWS
for mode in $MODES; do
	shm=$TMP/$mode.shm
	rm -f "$shm"
	wait_quiet
	bench_pair paged_bench "$PB" "$TMP/$mode" "$mode" afxdp:pb afxdp:pa "stamps were not where they should be" \
		--shm "$shm" --mode "$mode" --total "$TOTAL" --pages "$PAGES_ARG" --reps "$REPS" --seed "$SEED" --max-sec $LIMIT
	ROWS[$mode]=$(grep '^paged_bench page=' "$TMP/$mode.r.log")
	rm -f "$shm"
	sleep 0.5 # the AF_XDP sockets go with the processes
done

echo
echo "== Gbit/s of $TOTAL transfers (median of $REPS each), paged / single per page size"
bench_head page paged single paged/single
for p in $PAGES; do
	b=$(bench_bytes "$p")
	line="| $p |"
	for m in $MODES; do
		r=$(bench_row "page=$b" "${ROWS[$m]:-}")
		line+=$(bench_cells "$r" paged_gbps single_gbps '*ratio')
		[ -z "$r" ] || [ -z "$CSV" ] || echo "$m,$b,$(bench_kv paged_gbps "$r"),$(bench_kv single_gbps "$r"),$(bench_kv ratio "$r")" >>"$CSV"
	done
	echo "$line"
done
echo
echo "== the paged post call alone (uroce_post_paged_write: a WR per run of adjacent pages), median us, and its WRs"
bench_head page "post us" WRs
for p in $PAGES; do
	b=$(bench_bytes "$p")
	line="| $p |"
	for m in $MODES; do
		line+=$(bench_cells "$(bench_row "page=$b" "${ROWS[$m]:-}")" paged_post_us wrs)
	done
	echo "$line"
done
echo "   ($((SECONDS - START)) s)"
if [ -n "$PLOT" ]; then
	/usr/bin/python3 "$PLOTTER" --csv "$CSV" --out "$PLOT" --title "paged writes / one WRITE_WITH_IMM of $TOTAL, veth MTU $MTU" ||
		echo "paged_bench.sh: the plot failed" >&2
fi
[ $FAILS = 0 ] || exit 1
