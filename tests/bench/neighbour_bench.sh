#!/bin/bash
# SPDX-License-Identifier: MIT
# Goodput under a busy neighbour: a process that spins on one CPU (a bash
# `while :; do :; done` loop, pinned to --neighbour-cpu, default 1) while,
# between two network namespaces over a veth pair (link MTU 4200), run
#   bare   the bare AF_XDP loop (tests/bench/xsk_bare), 4 KiB-payload frames
#          (goodput: the frames the receiver counted x the payload)
#   rc     uroce-perf write_bw -s 65536 -m 4096 -D SEC --reliability rc
#   sr     the same with --reliability sr
# interleaved over --reps rounds (bare, rc, sr in each round), and with
# --quiet-too each also without the neighbour in the same round. The table
# shows Gbit/s of payload per mode, the ratio to the bare loop of the same
# round and competition, and the sender's retransmissions (and ACK/RTO
# timeouts) as a fraction of the data packets it sent, from uroce-perf's
# --counters. The neighbour is started by this script and killed by its
# PID after each run; the namespaces go at exit.
#
#   flock /tmp/uroce-bench.lock tests/bench/neighbour_bench.sh --build DIR [--reps N]
#       [--duration SEC] [--neighbour-cpu C] [--ends free|A,B] [--quiet-too]
#       [--modes "bare rc sr"] [--perf-opts "OPTS"] [--wait-quiet SEC]
#
# --build DIR: a build with apps/uroce-perf and tests/bench/xsk_bare
# (release: meson setup DIR --buildtype=release; nothing is built here).
# --ends: where the two ends run: free (default: where the kernel puts
# them, as an application would) or A,B (sender on CPU A, receiver on B).
# --perf-opts: more options for both uroce-perf ends (e.g. "--idle-yield-us off").
# --wait-quiet SEC: before each round wait (at most SEC s) until the CPUs
# were 90% idle for a second: other people's work disturbs every mode.
# Exit 1 when a run fails (its cell shows FAIL).
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
REPS=3
DURATION=3
NCPU=1
ENDS=free
QUIET_TOO=0
MODES="bare rc sr"
PERF_OPTS=
QUIET=0
die2() { echo "neighbour_bench: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--duration) DURATION=${2:?--duration needs seconds}; shift 2 ;;
	--neighbour-cpu) NCPU=${2:?--neighbour-cpu needs a CPU}; shift 2 ;;
	--ends) ENDS=${2:?--ends needs free or A,B}; shift 2 ;;
	--quiet-too) QUIET_TOO=1; shift ;;
	--modes) MODES=${2:?--modes needs a list}; shift 2 ;;
	--perf-opts) PERF_OPTS=${2?--perf-opts needs options}; shift 2 ;;
	--wait-quiet) QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
	-h|--help) sed -n '2,30p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (accepted: --build, --reps, --duration, --neighbour-cpu, --ends, --quiet-too, --modes, --perf-opts, --wait-quiet)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (a release build with apps/uroce-perf and tests/bench/xsk_bare)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
bench_check_quiet
. "$(dirname "$0")/quiet.sh"
[[ $REPS =~ ^[1-9][0-9]?$ ]] || die2 "--reps $REPS: accepted 1..99"
[[ $DURATION =~ ^[1-9][0-9]?$ ]] && [ "$DURATION" -le 60 ] || die2 "--duration $DURATION: accepted 1..60 seconds"
[[ $NCPU =~ ^[0-9]+$ ]] && [ "$NCPU" -lt "$(nproc)" ] || die2 "--neighbour-cpu $NCPU: accepted 0..$(($(nproc) - 1)) (the CPUs online)"
PIN_S=() PIN_R=()
if [ "$ENDS" != free ]; then
	[[ $ENDS =~ ^([0-9]+),([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -lt "$(nproc)" ] && [ "${BASH_REMATCH[2]}" -lt "$(nproc)" ] ||
		die2 "--ends $ENDS: accepted free, or A,B (sender's and receiver's CPUs, 0..$(($(nproc) - 1)))"
	PIN_S=(taskset -c "${BASH_REMATCH[1]}") PIN_R=(taskset -c "${BASH_REMATCH[2]}")
fi
for m in $MODES; do
	case "$m" in bare|rc|sr) ;; *) die2 "--modes: unknown mode $m (accepted: bare rc sr)" ;; esac
done
command -v taskset >/dev/null || die2 "taskset is missing (util-linux)"
PERF=$BUILD/apps/uroce-perf
XSK=$BUILD/tests/bench/xsk_bare
for t in "$PERF" "$XSK"; do
	[ -x "$t" ] || die2 "$t is missing (ninja -C $BUILD apps/uroce-perf tests/bench/xsk_bare)"
done

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-nbb
IPA=10.93.0.1 IPB=10.93.0.2
SIZE=4096 # the bare loop's payload per frame: one path-MTU packet of write_bw
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24 --mtu 4200
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null || netns_die "B does not answer a ping"
MACB=$(ip netns exec "$NB" cat /sys/class/net/vb/address)
LIMIT=$((DURATION + 60)) # every process is bounded by timeout

NPID=
neighbour_start() { # the busy neighbour: its own bounded spin, pinned
	netns_start "$NA" "$TMP/neighbour.log" timeout -k 2 $LIMIT taskset -c "$NCPU" bash -c 'while :; do :; done'
	NPID=$NETNS_PID
	sleep 0.2
}
neighbour_stop() {
	[ -n "$NPID" ] || return 0
	netns_stop "$NPID" 2>/dev/null || true
	NPID=
}

# run_bare: prints "GBPS 0 0" (payload Gbit/s the receiver counted) or FAIL
run_bare() {
	local rpid out=$TMP/bare.r mpps
	netns_start "$NB" "$out" "${PIN_R[@]}" timeout -k 2 $LIMIT "$XSK" recv --iface vb --duration $((DURATION + 20)) --idle-ms 500
	rpid=$NETNS_PID
	netns_wait_until 5 grep -qs receiving "$out" || true
	ip netns exec "$NA" "${PIN_S[@]}" timeout -k 2 $LIMIT "$XSK" send --iface va --dst-mac "$MACB" --src-ip $IPA \
		--dst-ip $IPB --size $SIZE --duration "$DURATION" >"$TMP/bare.s" 2>&1 || true
	netns_wait "$rpid" || true
	mpps=$(sed -n 's/.*"mpps":\([0-9.]*\).*/\1/p' "$out" | tail -1)
	[ -n "$mpps" ] || { echo "neighbour_bench: bare: no result:" >&2; head -4 "$out" "$TMP/bare.s" >&2; echo FAIL; return; }
	awk -v m="$mpps" -v s=$SIZE 'BEGIN { printf "%.3f 0 0 0\n", m * 1e6 * s * 8 / 1e9 }'
}

# run_uroce REL: prints "GBPS RETX TIMEOUTS DATA_PKTS" (the sender's) or FAIL
run_uroce() {
	local rel=$1 spid crc=0 src=0 gbps cl opts
	read -r -a opts <<<"--reliability $rel $PERF_OPTS"
	netns_start "$NB" "$TMP/$rel.s" "${PIN_R[@]}" timeout -k 2 $LIMIT "$PERF" write_bw -d afxdp:vb -x 1 -s 65536 -m 4096 \
		-D "$DURATION" --report_gbits --timeout 20 --counters "${opts[@]}"
	spid=$NETNS_PID
	netns_wait_tcp "$NB" 18515 "$spid" 10 || { netns_stop "$spid"; echo FAIL; return; }
	ip netns exec "$NA" "${PIN_S[@]}" timeout -k 2 $LIMIT "$PERF" write_bw -d afxdp:va -x 1 -s 65536 -m 4096 \
		-D "$DURATION" --report_gbits --timeout 20 --counters "${opts[@]}" $IPB >"$TMP/$rel.c" 2>&1 || crc=$?
	netns_wait "$spid" || src=$?
	gbps=$(awk '$1 == 65536 { print $4; exit }' "$TMP/$rel.c")
	cl=$(grep '^uroce counters: qp ' "$TMP/$rel.c" | head -1)
	if [ $crc != 0 ] || [ $src != 0 ] || [ -z "$gbps" ] || [ -z "$cl" ]; then
		echo "neighbour_bench: $rel failed (client $crc, server $src):" >&2
		grep -h -e "uroce-perf:" -e "Failed" "$TMP/$rel.c" "$TMP/$rel.s" | head -4 | sed 's/^/   /' >&2
		echo FAIL
		return
	fi
	echo "$gbps $(bench_kv retransmits "$cl") $(bench_kv timeouts "$cl") $(bench_kv tx_packets "$cl")"
}

COMPS=busy
[ $QUIET_TOO = 1 ] && COMPS="busy none"
echo "== neighbour_bench: $(nproc) CPUs, neighbour spinning on CPU $NCPU, ends ${ENDS}, $DURATION s per run," \
	"$(uname -r), commit $(bench_commit), build $BUILD, uroce-perf options: ${PERF_OPTS:-the defaults}"
echo "   before: $(bench_load)"
declare -A R
FAILS=0
START=$SECONDS
for rep in $(seq 1 "$REPS"); do
	wait_quiet >&2
	for comp in $COMPS; do
		for mode in $MODES; do
			[ "$comp" = busy ] && neighbour_start
			if [ "$mode" = bare ]; then res=$(run_bare); else res=$(run_uroce "$mode"); fi
			neighbour_stop
			[ "$res" = FAIL ] && FAILS=$((FAILS + 1))
			R[$rep.$comp.$mode]=$res
			echo "   round $rep, neighbour $comp, $mode: $res (Gbit/s retransmits timeouts packets)" >&2
			sleep 1 # the queues rebind cleanly after the previous process exits
		done
	done
done

cell() { # REP COMP MODE -> "| Gbit/s | vs bare | retx % | timeouts |"
	awk -v r="${R[$1.$2.$3]:-FAIL}" -v b="${R[$1.$2.bare]:-}" -v mode="$3" 'BEGIN {
		if (r == "FAIL") { printf "| FAIL | - | - | - "; exit }
		split(r, v, " "); split(b, w, " ")
		vs = (b != "" && b != "FAIL" && w[1] > 0) ? sprintf("%.2f", v[1] / w[1]) : "-"
		if (mode == "bare") { printf "| %.2f | %s | - | - ", v[1], vs; exit }
		printf "| %.2f | %s | %.2f%% (%d of %d) | %d ", v[1], vs, (v[4] > 0 ? 100 * v[2] / v[4] : 0), v[2], v[4], v[3] }'
}
echo
echo "| round | neighbour | mode | Gbit/s | vs bare | retransmits / packets sent | timeouts |"
echo "|---|---|---|---|---|---|---|"
for rep in $(seq 1 "$REPS"); do
	for comp in $COMPS; do
		for mode in $MODES; do
			echo "| $rep | $comp | $mode $(cell "$rep" "$comp" "$mode")|"
		done
	done
done
# Medians per competition and mode, of Gbit/s and of the ratio to bare.
echo
echo "| neighbour | mode | median Gbit/s | median vs bare | retransmits / packets, all rounds |"
echo "|---|---|---|---|---|"
for comp in $COMPS; do
	for mode in $MODES; do
		g= v= rt=0 pk=0
		for rep in $(seq 1 "$REPS"); do
			r=${R[$rep.$comp.$mode]:-FAIL} b=${R[$rep.$comp.bare]:-FAIL}
			[ "$r" = FAIL ] && continue
			read -r -a x <<<"$r"
			g+="${x[0]} " rt=$((rt + x[1])) pk=$((pk + x[3]))
			[ "$b" != FAIL ] && v+="$(awk -v a="${x[0]}" -v c="${b%% *}" 'BEGIN { if (c > 0) printf "%.4f", a / c }') "
		done
		med() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ a[NR] = $1 } END { if (!NR) print "-";
			else if (NR % 2) printf "%.2f", a[(NR + 1) / 2]; else printf "%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
		rf=-
		[ "$mode" != bare ] && rf=$(awk -v a=$rt -v b=$pk 'BEGIN { printf "%.2f%% (%d of %d)", b ? 100 * a / b : 0, a, b }')
		echo "| $comp | $mode | $(med <<<"$g") | $(med <<<"$v") | $rf |"
	done
done
echo "   ($((SECONDS - START)) s; after: $(bench_load))"
[ $FAILS = 0 ] || { echo "neighbour_bench: $FAILS run(s) failed (FAIL above)" >&2; exit 1; }
