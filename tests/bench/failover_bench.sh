#!/bin/bash
# SPDX-License-Identifier: MIT
# Failover time and goodput across a link failure (SHIFT section 5.1.1:
# 2.30 ms mean fall-back on ConnectX-6, from the error completion to the
# traffic on the backup), for rc and sr QPs with one backup, on the
# failover test's topology (tests/netns/fo_topo.sh): A and B joined by two
# rails, each a Linux bridge in a switch namespace, afxdp ports.
# failover_bench in A keeps 16 WRITEs of 64 KiB in flight to B and takes
# A's port of rail 1's bridge (s1a in namespace S1) down itself with
# SIOCSIFFLAGS, which drops the carrier of A's va1 at once (veth peer).
#
# (i) failover time: --trials failures per mode; failover time =
# last_switch_tx_ns (the first packet on the backup, engine clock) - t0
# (CLOCK_MONOTONIC right before the ioctl); detection = last_fail_ns - t0.
# After each the port comes back and the trial waits for the fail-back.
# The transport reads each port's carrier (ETHTOOL_GLINK) every 100 us
# while a failover group exists, and the netlink message the kernel's
# linkwatch worker sends (--linkwatch below), which a physical NIC gets
# batched. A trial's cause says what failed the member first: its link
# state (link) or, when that came later than three timeouts in a row, rto.
# (ii) goodput every --bin-ms over --duration s, rail 1 down at 1 s, up at
# 2 s, as CSV; plot_failover.py draws both modes with the events marked.
#
#   tests/bench/failover_bench.sh --build DIR [--modes "rc sr"] [--trials N]
#       [--duration S] [--bin-ms M] [--mtu 4200|1500] [--linkwatch urgent|batched]
#       [--csv-dir DIR] [--plot FILE] [--wait-quiet S] [--skip-time] [--skip-tput]
#
# --linkwatch: fo_topo.sh's interface indices; "urgent" (default): the
# kernel sends a carrier change's netlink message at once; "batched": at
# most one linkwatch run a second, as for a physical NIC.
# --build DIR: a release build with tests/bench/failover_bench (nothing is
# built here). --csv-dir: where failover_tput_MODE.csv go (default a
# temporary folder). --plot FILE: the goodput figure (/usr/bin/python3 with
# matplotlib). Exit 1 when a run fails, 2 on a bad argument or missing tool.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
MODES="rc sr"
TRIALS=100
DURATION=3
BIN=10
MTU=4200
CSVDIR=
LINKWATCH=urgent
PLOT=
QUIET=0
DO_TIME=1
DO_TPUT=1
die2() { echo "failover_bench.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--modes) MODES=${2:?--modes needs a list}; shift 2 ;;
	--trials) TRIALS=${2:?--trials needs a number}; shift 2 ;;
	--duration) DURATION=${2:?--duration needs seconds}; shift 2 ;;
	--bin-ms) BIN=${2:?--bin-ms needs milliseconds}; shift 2 ;;
	--mtu) MTU=${2:?--mtu needs 4200 or 1500}; shift 2 ;;
	--csv-dir) CSVDIR=${2:?--csv-dir needs a directory}; shift 2 ;;
	--linkwatch) LINKWATCH=${2:?--linkwatch needs urgent or batched}; shift 2 ;;
	--plot) PLOT=${2:?--plot needs a file}; shift 2 ;;
	--wait-quiet) QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
	--skip-time) DO_TIME=0; shift ;;
	--skip-tput) DO_TPUT=0; shift ;;
	-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (accepted: --build, --modes, --trials, --duration, --bin-ms, --mtu, --linkwatch, --csv-dir, --plot, --wait-quiet, --skip-time, --skip-tput)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (a release build with tests/bench/failover_bench)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
for m in $MODES; do
	[ "$m" = rc ] || [ "$m" = sr ] || die2 "--modes: '$m'; accepted rc and sr"
done
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] && [ "$TRIALS" -le 10000 ] || die2 "--trials $TRIALS: accepted 1..10000"
[[ $DURATION =~ ^[3-9]$|^[1-5][0-9]$|^60$ ]] || die2 "--duration $DURATION: accepted 3..60 seconds"
[[ $BIN =~ ^[1-9][0-9]*$ ]] && [ "$BIN" -le 1000 ] || die2 "--bin-ms $BIN: accepted 1..1000"
[ "$MTU" = 4200 ] || [ "$MTU" = 1500 ] || die2 "--mtu $MTU: accepted 4200 (path MTU 4096) or 1500 (path MTU 1024)"
[ "$LINKWATCH" = urgent ] || [ "$LINKWATCH" = batched ] || die2 "--linkwatch $LINKWATCH: accepted urgent or batched"
bench_check_quiet
FB=$BUILD/tests/bench/failover_bench
[ -x "$FB" ] || die2 "$FB is missing (ninja -C $BUILD tests/bench/failover_bench)"
command -v ip >/dev/null && command -v bridge >/dev/null || die2 "ip and bridge (iproute2) are needed"
if [ -n "$PLOT" ]; then
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
		die2 "--plot needs /usr/bin/python3 with matplotlib"
fi
HERE=$(dirname "$0")

# wait_quiet: wait for a quiet machine before a run (--wait-quiet S = $QUIET)
. "$HERE/quiet.sh"
. "$HERE/../lib/netns.sh"
netns_test uroce-fobench
[ -n "$CSVDIR" ] || CSVDIR=$TMP
mkdir -p "$CSVDIR" || die2 "cannot create $CSVDIR"
. "$HERE/../netns/fo_topo.sh"
fo_topo_build "$MTU" "$LINKWATCH"
bench_pin
SW=/var/run/netns/$FO_S1:s1a
# rc: ACK timeout 4.096 us x 2^12 = 17 ms; sr: RTO floor 20 ms; 3 timeouts
# fail a member (the failures here are links going down: netlink finds them)
QPARGS=(--rc-timeout 12 --rto-min-us 20000 --rto-fail 3)
LIMIT=$((TRIALS * 3 + 120))

echo "== failover_bench: rc/sr QP with one backup, A -> B over two bridged rails (MTU $MTU, linkwatch $LINKWATCH), $(nproc) CPUs," \
	"ends on ${PIN_A[*]:-any} / ${PIN_B[*]:-any}; rail 1 failed by taking A's bridge port s1a down (SIOCSIFFLAGS in S1)"
echo "   $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?')," \
	"build $BUILD; 16 x 64 KiB WRITEs in flight"
echo "   before the run: load average $(cut -d' ' -f1-3 /proc/loadavg)"
FAILS=0
declare -A SUM TP

# run NAME MODE-ARGS...: one sender/receiver pair; the sender's log is $TMP/NAME.s.log
run() {
	local name=$1 rel=$2 src=0 rrc=0 rpid spid
	shift 2
	rm -f "$TMP/$name.shm"
	netns_start "$FO_B" "$TMP/$name.r.log" "${PIN_B[@]}" timeout -k 5 $((LIMIT + 30)) "$FB" --role recv \
		--rel "$rel" --dev afxdp:vb1,afxdp:vb2 --shm "$TMP/$name.shm" --max-sec "$LIMIT" "${QPARGS[@]}"
	rpid=$NETNS_PID
	netns_start "$FO_A" "$TMP/$name.s.log" "${PIN_A[@]}" timeout -k 5 $((LIMIT + 30)) "$FB" --role send \
		--rel "$rel" --dev afxdp:va1,afxdp:va2 --shm "$TMP/$name.shm" --max-sec "$LIMIT" --switch "$SW" \
		"${QPARGS[@]}" "$@"
	spid=$NETNS_PID
	netns_wait "$spid" || src=$?
	netns_wait "$rpid" || rrc=$?
	fo_link 1 a up # whatever happened
	if [ $src != 0 ] || [ $rrc != 0 ]; then
		echo "failover_bench.sh: $name failed (sender $src, receiver $rrc):" >&2
		grep -h -v '^failover_bench trial' "$TMP/$name.s.log" "$TMP/$name.r.log" | tail -8 | sed 's/^/   /' >&2
		cp "$TMP/$name.s.log" "$CSVDIR/failover_failed_$name.log"
		echo "   (the sender's log: $CSVDIR/failover_failed_$name.log)" >&2
		FAILS=$((FAILS + 1))
		return 1
	fi
	sleep 1 # the AF_XDP sockets go with the processes; the bridge port forwards again
}

kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

for rel in $MODES; do
	if [ $DO_TIME = 1 ]; then
		wait_quiet
		if run "time-$rel" "$rel" --mode time --trials "$TRIALS"; then
			SUM[$rel]=$(grep '^failover_bench summary' "$TMP/time-$rel.s.log")
			cp "$TMP/time-$rel.s.log" "$CSVDIR/failover_trials_${rel}_$LINKWATCH.log"
			echo "   $rel: ${SUM[$rel]#failover_bench summary }"
		fi
	fi
	if [ $DO_TPUT = 1 ]; then
		wait_quiet
		if run "tput-$rel" "$rel" --mode tput --duration "$DURATION" --bin-ms "$BIN" --csv "$CSVDIR/failover_tput_$rel.csv"; then
			TP[$rel]=$(grep '^failover_bench tput' "$TMP/tput-$rel.s.log")
			echo "   $rel: ${TP[$rel]#failover_bench tput }"
		fi
	fi
done

if [ $DO_TIME = 1 ]; then
	echo
	echo "== failover time, $TRIALS trials per mode: from just before the link down (t0) to the detection" \
		"(last_fail_ns) and to the first packet on the backup (last_switch_tx_ns), us"
	echo "| QP | found by link | detect p50 | detect p99 | detect max | **failover p50** | **failover p99** | failover max | ioctl p50 | fail-back p50 (ms) |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for rel in $MODES; do
		s=${SUM[$rel]:-}
		name="uroce $rel, linkwatch $LINKWATCH"
		[ -n "$s" ] || { echo "| $name | failed | | | | | | | | |"; continue; }
		echo "| $name | $(kv by_link "$s")/$(kv n "$s") | $(kv detect_p50_us "$s") | $(kv detect_p99_us "$s") | $(kv detect_max_us "$s") |" \
			"**$(kv switch_p50_us "$s")** | **$(kv switch_p99_us "$s")** | $(kv switch_max_us "$s") |" \
			"$(kv ioctl_p50_us "$s") | $(kv failback_p50_ms "$s") |"
	done
	echo "| SHIFT (ConnectX-6, paper 5.1.1) | | | | | 2300 (mean, sd 340) | | | | |"
fi
if [ $DO_TPUT = 1 ]; then
	echo
	echo "== goodput over ${DURATION} s in ${BIN} ms bins: rail 1 down at 1 s, up at 2 s (ms from the start)"
	echo "| QP | GB moved | down | detected | on backup | up | back on primary |"
	echo "|---|---|---|---|---|---|---|"
	for rel in $MODES; do
		s=${TP[$rel]:-}
		[ -n "$s" ] || { echo "| $rel | failed | | | | | |"; continue; }
		echo "| uroce $rel | $(kv gbytes "$s") | $(kv down_ms "$s") | $(kv detect_ms "$s") | $(kv switch_ms "$s") |" \
			"$(kv up_ms "$s") | $(kv failback_ms "$s") |"
	done
	if [ -n "$PLOT" ]; then
		csvs=()
		for rel in $MODES; do
			[ -f "$CSVDIR/failover_tput_$rel.csv" ] && csvs+=("$rel=$CSVDIR/failover_tput_$rel.csv")
		done
		if [ ${#csvs[@]} -gt 0 ]; then
			/usr/bin/python3 "$HERE/plot_failover.py" --out "$PLOT" \
				--title "uroce failover: goodput in ${BIN} ms bins, rail 1 down at 1 s and up at 2 s (veth + bridges, MTU $MTU)" \
				"${csvs[@]}" || { echo "failover_bench.sh: the plot failed" >&2; FAILS=$((FAILS + 1)); }
		fi
	fi
fi
[ $FAILS = 0 ] || exit 1
