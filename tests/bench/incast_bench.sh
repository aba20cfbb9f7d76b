#!/bin/bash
# SPDX-License-Identifier: MIT
# The incast experiment: three bulk senders and a victim into one
# receiver through uroce-fabric, whose port to the receiver is the
# bottleneck (--rate, a drop-tail queue of --queue bytes, RED-like ECN
# marking --ecn, trimming on), for each congestion controller in one
# invocation. The victim sends small messages one at a time (--victim-size,
# --victim-gap-us between the completion of one and the post of the next)
# while the bulk flows keep --depth messages of --size outstanding; the
# victim's per-message completion time (post to acknowledgment) and the
# switch's deepest queue on the receiver's port tell how much queue each
# controller leaves.
#
#   s1 ─┐
#   s2 ─┤                  (--rate, --queue, ecn, trim=1)
#   s3 ─┼── F uroce-fabric ───────────────────────────── r
#   v  ─┘
#
#   tests/bench/incast_bench.sh --build DIR [--cc "none dcqcn swift cubic eqds"]
#       [--rate 200m] [--queue 256k] [--ecn 16k:128k:10%] [--trim 1]
#       [--size 1m] [--depth 2] [--victim-size 4096] [--victim-gap-us 200]
#       [--duration 6] [--warmup 1] [--reps 3] [--base-rtt-us auto|N]
#       [--idle-us 20] [--wait-quiet S] [--keep DIR] [--plot FILE] [-- fab_flows options]
#
# Every host is a namespace with one fab_flows process (tests/bench/fab_flows.c),
# the receiver one process and context for the four flows (so EQDS's pull
# pacer on its port grants the four in turn). Links are veth (MTU 1500,
# path MTU 1024); only the switch's port towards r is limited. ECN and
# trimming are on in every run: only DCQCN's packets are ECT (the others
# are not marked), and trimmed packets are NACKed and resent at once
# whatever the controller, so none, Swift and CUBIC also recover from
# overflow without a timeout. Each run starts a fresh switch, so its
# max_depth_bytes (--stats JSON, read after SIGTERM) is that run's.
#
# Per repetition: the victim alone (cc none, no bulk flow: its unloaded
# completion time, the baseline), then the incast under each --cc in
# order. The switch rewrites its JSON every second; a sampler keeps the
# receiver's port's queue depth from each ("median queue": the median of
# those samples after the warm-up, about DURATION - WARMUP of them a run,
# the standing queue; "max queue": the deepest it ever was).
# --base-rtt-us auto (the default) takes the median completion time
# of the first repetition's lone victim, rounded up to 10 us, as every
# controller's base RTT (Swift's target, EQDS's speculative BDP), and
# --link-mbps is --rate's. Tables (medians over the repetitions; the
# victim's p50/p99 of its messages pooled over the repetitions): victim
# FCT p50/p99 and their ratios to none's and to the lone victim's, bulk
# goodput, the switch's deepest queue and its drops, marks and trims,
# retransmissions. --plot FILE: the victim's FCT CDFs (plot_spray.py).
# Root; its own namespaces and processes, stopped by PID at exit. Exit 1
# when a run failed, 2 on a bad argument.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
CCS="none dcqcn swift cubic eqds"
RATE=200m
QUEUE=256k
ECN=16k:128k:10%
TRIM=1
SIZE=1m
DEPTH=2
VSIZE=4096
VGAP=200
DURATION=6
WARMUP=1
REPS=3
BASE_RTT=auto
IDLE_US=20
QUIET=0
KEEP=
PLOT=
EXTRA=()
die2() { echo "incast_bench.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--cc) CCS=${2:?}; shift 2 ;;
	--rate) RATE=${2:?}; shift 2 ;;
	--queue) QUEUE=${2:?}; shift 2 ;;
	--ecn) ECN=${2:?}; shift 2 ;;
	--trim) TRIM=${2:?}; shift 2 ;;
	--size) SIZE=${2:?}; shift 2 ;;
	--depth) DEPTH=${2:?}; shift 2 ;;
	--victim-size) VSIZE=${2:?}; shift 2 ;;
	--victim-gap-us) VGAP=${2:?}; shift 2 ;;
	--duration) DURATION=${2:?}; shift 2 ;;
	--warmup) WARMUP=${2:?}; shift 2 ;;
	--reps) REPS=${2:?}; shift 2 ;;
	--base-rtt-us) BASE_RTT=${2:?}; shift 2 ;;
	--idle-us) IDLE_US=${2:?}; shift 2 ;;
	--wait-quiet) QUIET=${2:?}; shift 2 ;;
	--keep) KEEP=${2:?}; shift 2 ;;
	--plot) PLOT=${2:?}; shift 2 ;;
	--) shift; EXTRA=("$@"); break ;;
	-h|--help) sed -n '2,47p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (see --help)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (with tests/bench/fab_flows and apps/uroce-fabric)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
FF=$BUILD/tests/bench/fab_flows
FABRIC=$BUILD/apps/uroce-fabric
for t in "$FF" "$FABRIC"; do [ -x "$t" ] || die2 "$t is missing (ninja -C $BUILD)"; done
for c in $CCS; do case "$c" in none|dcqcn|swift|cubic|eqds) ;; *) die2 "--cc: '$c'; accepted none dcqcn swift cubic eqds" ;; esac; done
[[ " $CCS " == *" none "* ]] || die2 "--cc must include none (the baseline)"
[[ $REPS =~ ^[1-9]$ ]] || die2 "--reps $REPS: accepted 1..9"
[[ $BASE_RTT == auto || $BASE_RTT =~ ^[1-9][0-9]*$ ]] || die2 "--base-rtt-us $BASE_RTT: auto or microseconds"
[[ $TRIM =~ ^[01]$ ]] || die2 "--trim $TRIM: 0 or 1"
[[ $QUIET =~ ^[0-9]+$ ]] || die2 "--wait-quiet $QUIET: seconds"
[ -z "$PLOT" ] || { /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || die2 "--plot needs /usr/bin/python3 with matplotlib"; }
LINK_MBPS=$(awk -v r="$RATE" 'BEGIN { m = 1; if (r ~ /[kK]$/) m = 1e-3; else if (r ~ /[gG]$/) m = 1000; else if (r ~ /[mM]$/) m = 1; else m = 1e-6
	sub(/[kKmMgG]$/, "", r); v = r * m; if (v < 1) v = 1; printf "%d", v }')
PORT_OPTS=",rate=$RATE,queue=$QUEUE${ECN:+,ecn=$ECN},trim=$TRIM"
"$FABRIC" --port "x,peer=02:00:00:00:00:01$PORT_OPTS" --route 10.0.0.0/8=0 --check >/dev/null ||
	die2 "uroce-fabric refuses the port options '${PORT_OPTS#,}'"

. "$(dirname "$0")/quiet.sh"
. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-incast
DATA=${KEEP:-$TMP/data}
mkdir -p "$DATA" || netns_die "cannot create $DATA"
rm -f "$DATA"/*.txt "$DATA"/*.log "$DATA"/*.json 2>/dev/null
P=$NETNS_PREFIX
NF=$P-f
HOSTS=(s1 s2 s3 v r)
NH=${#HOSTS[@]}
FLOWS="0>4,1>4,2>4,3>4:victim"
netns_add "$NF"
ip netns exec "$NF" sysctl -qw net.ipv4.ip_forward=1
FPORTS=() FROUTES=()
for i in "${!HOSTS[@]}"; do
	h=${HOSTS[$i]} n=$((i + 1))
	netns_add "$P-$h"
	netns_veth "$P-$h" h0 "$NF" "f$n" --ip-a "10.95.$n.2/24" --ip-b "10.95.$n.1/24" --mtu 1500
	hm=$(netns_mac "$P-$h" h0) fm=$(netns_mac "$NF" "f$n")
	ip -n "$P-$h" route add 10.95.0.0/16 via "10.95.$n.1" dev h0 &&
		ip -n "$P-$h" neigh replace "10.95.$n.1" lladdr "$fm" dev h0 nud permanent &&
		ip -n "$NF" neigh replace "10.95.$n.2" lladdr "$hm" dev "f$n" nud permanent ||
		netns_die "cannot route $h through the switch"
	opts=
	[ "$h" = r ] && opts=$PORT_OPTS
	FPORTS+=(--port "f$n,peer=$hm$opts")
	FROUTES+=(--route "10.95.$n.0/24=$i")
done

FPID= SPID=
# depth_sampler JSON OUT: the receiver's port's data queue depth each time
# the switch rewrites its JSON (every second): "time_ns depth_bytes" lines
depth_sampler() {
	local last= line
	while :; do
		line=$(grep -o '"time_ns":[0-9]*\|"depth_bytes":[0-9]*' "$1" 2>/dev/null |
			awk -F: 'NR == 1 { t = $2 } /depth_bytes/ { d[++n] = $2 } END { if (n >= 2) print t, d[n - 1] }')
		[ -z "$line" ] || [ "$line" = "$last" ] || { echo "$line" >>"$2"; last=$line; }
		sleep 0.3
	done
}
fabric_start() { # TAG
	rm -f "$TMP/fabric.ready"
	netns_start "$NF" "$DATA/$1.fabric.log" timeout $((DURATION + 200)) "$FABRIC" "${FPORTS[@]}" "${FROUTES[@]}" \
		--seed 1 --stats "$DATA/$1.fabric.json" --ready-file "$TMP/fabric.ready" --max-sec $((DURATION + 180))
	FPID=$NETNS_PID
	netns_wait_file "$TMP/fabric.ready" "$FPID" 15 || netns_die "uroce-fabric did not open its ports"
	depth_sampler "$DATA/$1.fabric.json" "$DATA/$1.depth" &
	SPID=$!
	NETNS_PIDS+=("$SPID")
}
fabric_stop() {
	netns_stop "$SPID" >/dev/null 2>&1
	netns_stop "$FPID" >/dev/null 2>&1
	FPID= SPID=
}
# standing TAG START_NS: the median of the depth samples (KiB) from the start
# of the counted messages (the hosts' start + warm-up) on; - when none
standing() {
	awk -v s="$2" '$1 >= s { print $2 }' "$DATA/$1.depth" 2>/dev/null | sort -n |
		awk '{ v[NR] = $1 } END { if (!NR) print "-"; else printf "%.1f\n", v[int((NR + 1) / 2)] / 1024 }'
}

# run TAG FLOWS ARGS...: a fresh switch, every host of FLOWS its fab_flows; sets OK
FAILED=0
run() {
	local tag=$1 flows=$2 shm pids=() i rc hosts
	shift 2
	shm=$TMP/$tag.shm
	rm -f "$shm"
	wait_quiet
	fabric_start "$tag"
	# CLOCK_MONOTONIC, the switch's time_ns: the counted messages start about a warm-up later
	RUN_T0=$(python3 -c 'import sys, time; print(time.monotonic_ns() + int(float(sys.argv[1]) * 1e9))' "$WARMUP")
	hosts=$(tr ',' '\n' <<<"$flows" | sed 's/:.*//' | tr '>' '\n' | sort -nu)
	for i in $hosts; do
		netns_start "$P-${HOSTS[$i]}" "$TMP/$tag.$i.log" timeout -k 5 $((DURATION + 90)) "$FF" --shm "$shm" \
			--host "$i" --hosts "$NH" --dev afxdp:h0 --flows "$flows" --duration "$DURATION" --warmup "$WARMUP" \
			--max-sec $((DURATION + 60)) --size "$SIZE" --depth "$DEPTH" --victim-size "$VSIZE" \
			--victim-gap-us "$VGAP" --idle-us "$IDLE_US" --out "$DATA/$tag.$i.txt" "$@" "${EXTRA[@]}"
		pids+=("$NETNS_PID")
	done
	OK=1
	for i in "${!pids[@]}"; do
		netns_wait "${pids[$i]}" || { rc=$?; OK=0; echo "incast_bench.sh: $tag: a host exited $rc" >&2; }
	done
	fabric_stop
	cat "$TMP/$tag".*.log >"$DATA/$tag.log"
	if [ $OK = 0 ]; then
		FAILED=1
		grep -v '^fab_flows ' "$DATA/$tag.log" | head -5 | sed 's/^/   /' >&2
	fi
	rm -f "$shm"
	sleep 0.5
}

# the receiver's port (the last): max depth, tail drops, marks, trims
switch_stats() { # TAG -> "maxdepth_kb drops marked trimmed"
	python3 -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("- - - -"); sys.exit(0)
q = d["ports"][-1]["data"]
print("%.1f %d %d %d" % (q["max_depth_bytes"] / 1024, q["tail_drops"] + q["trim_drops"], q["ecn_marked"], q["trimmed"]))' \
		"$DATA/$1.fabric.json"
}
kvsum() { # KEY LINES -> the sum of KEY over the lines
	awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { s += substr($i, length(k) + 2) } } END { printf "%.1f", s }' <<<"$2"
}
# victim TAG... -> "n p50 p99" of the victim messages of the runs
victim() {
	local t files=()
	for t in "$@"; do files+=("$DATA/$t".*.txt); done
	cat "${files[@]}" 2>/dev/null | awk '$2 == "victim" { print $5 }' | sort -n | awk '
		{ v[NR] = $1 }
		function q(r,  k) { k = int(r * NR); if (k < r * NR) k++; if (k < 1) k = 1; return v[k] / 1000 }
		END { if (!NR) print "0 - -"; else printf "%d %.1f %.1f\n", NR, q(0.5), q(0.99) }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
median() {
	printf '%s\n' "$@" | grep -v '^-$' | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-";
		else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "== incast_bench: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(nproc) CPUs, $(bench_commit), build $BUILD"
echo "   3 bulk senders ($SIZE B, depth $DEPTH) + a victim ($VSIZE B, one at a time, $VGAP us apart) -> r; switch port to r:" \
	"${PORT_OPTS#,}; $DURATION s a run (first $WARMUP s left out), idle sleep $IDLE_US us; load average $(cut -d' ' -f1-3 /proc/loadavg)"
START=$SECONDS
declare -A S Q V
for rep in $(seq 1 "$REPS"); do
	run "alone.r$rep" "3>4:victim" --cc none
	read -r n p50 p99 <<<"$(victim "alone.r$rep")"
	printf '   %-14s victim alone: n %5s  FCT p50 %8s us  p99 %8s us%s\n' "alone.r$rep" "$n" "$p50" "$p99" \
		"$([ $OK = 1 ] || echo '  FAILED')"
	if [ "$BASE_RTT" = auto ]; then
		[ "$p50" != - ] || netns_die "the lone victim completed nothing: no base RTT (--base-rtt-us N)"
		BASE_RTT=$(awk -v p="$p50" 'BEGIN { printf "%d", int((p + 9.999) / 10) * 10 }')
		echo "   base RTT for the controllers: $BASE_RTT us (the lone victim's median); link $LINK_MBPS Mbit/s"
	fi
	for cc in $CCS; do
		tag=$cc.r$rep
		run "$tag" "$FLOWS" --cc "$cc" --link-mbps "$LINK_MBPS" --base-rtt-us "$BASE_RTT"
		f=$(grep '^fab_flows flow ' "$DATA/$tag.log" | grep 'class=bulk')
		S[$tag]=$(kvsum goodput_mbps "$f")
		S[$tag.retx]=$(kvsum retx "$(grep '^fab_flows flow ' "$DATA/$tag.log")")
		Q[$tag]=$(switch_stats "$tag")
		Q[$tag]+=" $(standing "$tag" "$RUN_T0")"
		V[$tag]=$(victim "$tag")
		read -r n p50 p99 <<<"${V[$tag]}"
		read -r qd dr mk tr sq <<<"${Q[$tag]}"
		printf '   %-14s victim n %5s  FCT p50 %8s us  p99 %8s us  bulk %7s Mbit/s  queue max %6s KiB, median %6s KiB  drops %6s  marks %6s  trims %6s  retx %s%s\n' \
			"$tag" "$n" "$p50" "$p99" "${S[$tag]}" "$qd" "$sq" "$dr" "$mk" "$tr" "${S[$tag.retx]}" "$([ $OK = 1 ] || echo '  FAILED')"
	done
done

tags() { local rep; for rep in $(seq 1 "$REPS"); do echo "$1.r$rep"; done; }
col() { local rep; for rep in $(seq 1 "$REPS"); do awk -v f="$2" '{ print $f }' <<<"${Q[$1.r$rep]:-- - - - -}"; done; }
read -r an a50 a99 <<<"$(victim $(tags alone))"
read -r nn n50 n99 <<<"$(victim $(tags none))"
echo
echo "== incast, victim FCT (messages pooled over $REPS repetitions) and the switch's queue to r (medians); lone victim: n $an, p50 $a50 us, p99 $a99 us"
echo "| cc | victim msgs | victim p50 us | victim p99 us | p99 / none's | p99 / lone victim's p50 | bulk goodput Mbit/s | max queue KiB | median queue KiB | drops | ECN marks | trims | retx |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for cc in $CCS; do
	read -r n p50 p99 <<<"$(victim $(tags "$cc"))"
	g=() x=()
	for t in $(tags "$cc"); do g+=("${S[$t]:--}") x+=("${S[$t.retx]:--}"); done
	echo "| $cc | $n | $p50 | $p99 | $(ratio "$p99" "$n99") | $(ratio "$p99" "$a50") | $(median "${g[@]}") |" \
		"$(median $(col "$cc" 1)) | $(median $(col "$cc" 5)) | $(median $(col "$cc" 2)) | $(median $(col "$cc" 3)) |" \
		"$(median $(col "$cc" 4)) | $(median "${x[@]}") |"
done
echo "   ($((SECONDS - START)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "$PLOT" ]; then
	args=("victim alone=$(ls "$DATA"/alone.r*.*.txt 2>/dev/null | paste -sd,)")
	for cc in $CCS; do args+=("$cc=$(ls "$DATA/$cc".r*.*.txt 2>/dev/null | paste -sd,)"); done
	/usr/bin/python3 "$(dirname "$0")/plot_spray.py" --out "$PLOT" --class victim --logx \
		--title "incast 3+1 -> 1 at $RATE: the victim's $VSIZE B messages" "${args[@]}" || echo "incast_bench.sh: the plot failed" >&2
fi
exit $FAILED
