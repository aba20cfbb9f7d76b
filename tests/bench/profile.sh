#!/bin/bash
# SPDX-License-Identifier: MIT
# Where the cycles go: one uroce-perf perftest run between two namespaces
# over a veth pair (afxdp ports, link MTU 4200), with `perf record` on the
# server and the client process, then `perf report` of each side's top
# symbols (kernel and user). The machine's PMU may be virtualised away, so
# the sampling event is the cpu-clock software timer.
#
#   sudo tests/bench/profile.sh [--build DIR] [--out DIR] [--top N] [--steps]
#                               MODE [uroce-perf args...]
#   e.g. tests/bench/profile.sh --build build-rel write_bw -s 65536 -n 200000
#        tests/bench/profile.sh write_bw -s 65536 -n 200000 --reliability sr
#        tests/bench/profile.sh --steps --top 0 write_bw -s 64 -n 200000
#
#   --top N   the N top symbols of each side (40; 0: none)
#   --steps   also the cost per packet of each datapath step, in ns, for both
#             sides (profile_steps.py: a markdown table, also in OUT/steps.md);
#             passes --counters to uroce-perf for the packet counts. Build with
#             -Dc_args=-fno-omit-frame-pointer: the steps come from call chains.
#             Again on a kept OUT, other options: profile_steps.py --dir OUT --help
set -euo pipefail

BUILD=build
OUT=
TOP=40
STEPS=0
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; KEEP=1; shift 2 ;;
	--top) TOP=$2; shift 2 ;;
	--steps) STEPS=1; shift ;;
	-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "profile: a uroce-perf mode is needed (write_bw, send_bw, write_lat, ...)" >&2; exit 2; }
MODE=$1
shift
[ "$(id -u)" = 0 ] || { echo "profile: must run as root (namespaces, XDP)" >&2; exit 2; }
command -v perf >/dev/null || { echo "profile: perf missing (apt-get install linux-perf)" >&2; exit 2; }
PERF=$BUILD/apps/uroce-perf
[ -x "$PERF" ] || { echo "profile: $PERF not built (ninja -C $BUILD)" >&2; exit 2; }
PERF=$(readlink -f "$PERF")
STEPS_PY=$(dirname "$(readlink -f "$0")")/profile_steps.py
if [ "$STEPS" = 1 ]; then
	PY=$(command -v python3 || echo /usr/bin/python3)
	[ -f "$STEPS_PY" ] || { echo "profile: $STEPS_PY missing" >&2; exit 2; }
	# The packet counts come from the counters uroce-perf prints at exit.
	case " $* " in *" --counters "*) ;; *) set -- "$@" --counters ;; esac
fi
TITLE="$MODE $*"

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-prof
IPA=10.95.0.1 IPB=10.95.0.2
OUT=${OUT:-$NETNS_TMP}
mkdir -p "$OUT"
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24 --mtu 4200
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null

netns_start "$NB" "$OUT/server.log" perf record -e cpu-clock -F 4999 -g -o "$OUT/server.data" -- \
	"$PERF" "$MODE" -d afxdp:vb -x 1 "$@"
SRV=$NETNS_PID
netns_wait_tcp "$NB" 18515 "$SRV" 10 || netns_die "server never listened"
ip netns exec "$NA" perf record -e cpu-clock -F 4999 -g -o "$OUT/client.data" -- \
	"$PERF" "$MODE" -d afxdp:va -x 1 "$@" $IPB >"$OUT/client.log" 2>&1 || true
netns_wait "$SRV" || true
cat "$OUT/client.log" | grep -v '^\[' || true
if [ "$TOP" -gt 0 ]; then
	for side in client server; do
		echo "=== $side: top symbols (self, % of samples)"
		# head may close the pipe before perf report is done: not a failure
		perf report -i "$OUT/$side.data" --no-children --sort sym --stdio 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -"$TOP" || true
	done
fi
if [ "$STEPS" = 1 ]; then
	# Without --out the folder goes at exit: no point naming it.
	if [ "$KEEP" = 1 ]; then
		echo "=== cost per packet of each step (again, other options: $STEPS_PY --dir $OUT --help)"
	else
		echo "=== cost per packet of each step"
	fi
	"$PY" "$STEPS_PY" --dir "$OUT" --title "$TITLE" | tee "$OUT/steps.md"
fi
true
