#!/bin/bash
# SPDX-License-Identifier: MIT
# The permutation experiment: spraying against a single path on a
# leaf-spine of uroce-fabric switches whose ECMP puts single-path flows on
# the same spine. tests/netns/leafspine.sh builds --leaves x --spines with
# --hosts-per-leaf hosts, every switch port rate-limited to --rate (so the
# ports, not the two CPUs, bound each flow); host k of leaf l sends to host
# k of leaf l+1 (the last leaf to the first): a permutation in which every
# flow crosses the spines and every host sends one flow and receives one.
# One fab_flows process per host (tests/bench/fab_flows.c: one context per
# host, per-message completion times, CLOCK_MONOTONIC of all hosts).
#
#   tests/bench/spray_bench.sh --build DIR [--kernel] [--leaves 2] [--spines 2] [--hosts-per-leaf 2]
#       [--rate 200m] [--queue 256k] [--mtu N] [--seed S|auto] [--seeds-max 8]
#       [--paths "1 8 16"] [--policy p2c] [--rc] [--cc cubic] [--link-mbps N] [--base-rtt-us N]
#       [--size 1m] [--depth 1] [--duration 6] [--warmup 1] [--reps 3] [--idle-us 20]
#       [--wait-quiet S] [--keep DIR] [--plot FILE] [-- fab_flows options]
#
# --mtu N: every link's MTU (leafspine.sh --mtu; 4200 gives path MTU 4096,
# a quarter of the packets of the default 1500's 1024 for the same bytes).
# --kernel: the same topology of Linux routers (leafspine.sh --kernel:
# multipath routes hashing the UDP ports, every router port shaped by tbf
# to --rate with --queue as tbf's limit, each router's multipath hash seed
# from --seed); the uplink counters are the leaves' u* interfaces'
# tx_bytes, and every run also reports the packets the tbf queues dropped
# (uplinks, spine downlinks and leaf-to-host ports) and the CPUs' time
# over the run (user, system, softirq, idle: the routers forward in
# softirq, on the same two CPUs as the hosts).
#
# Collisions: with one path a flow keeps one UDP source port, which the
# source leaf hashes onto one spine for the whole run. --seed auto (the
# default) brings the fabric up with seeds 1, 2, ... (each switch k runs
# with seed + k) and keeps the first under which a 1 s single-path probe
# of the permutation puts two flows of one leaf on one spine (read from
# the leaves' uplink counters: a collision is a leaf whose busiest uplink
# carried more than 3/4 of its uplinks' bytes); --seed S takes S as
# it is. With one host per leaf no two flows share a leaf's uplinks, so
# auto takes seed 1 without a probe. Every run reports, per leaf, the
# share of the uplinks' bytes its busiest uplink carried (0.5 = evenly
# spread over 2 spines).
#
# Every run also prints the CPUs' split over it (/proc/stat), the packets
# the kernel's per-CPU backlogs and the hosts' AF_XDP sockets dropped, and
# the hosts' own CPU seconds (user, system) and the seconds they waited,
# runnable, for a CPU (fab_flows' port lines); the table's "of capacity" is the aggregate
# over what the permutation could carry: per leaf min(hosts, spines) x
# --rate (every host's downlink and every uplink at --rate).
#
# Per repetition, in order: rc (with --rc), then sr --paths N for each N
# of --paths (the first must be 1: the baseline), all with --cc (default
# cubic, one window per path: UCCL's default with spraying). Messages
# of --size, --depth outstanding per flow, during --duration s, the first
# --warmup s left out. Tables (medians over the repetitions): aggregate
# goodput (sum of the flows' Mbit/s) and the slowest flow's, FCT p50 and
# p99 of all flows' messages pooled, retransmissions, and the ratios to
# --paths 1 of the same repetition. --keep DIR keeps the per-message files
# (fab_flows --out) and logs; --plot FILE draws the FCT CDFs per
# configuration (plot_spray.py). Options after -- go to every fab_flows
# run (e.g. -- --rto-min-us 5000 --window-pkts 128). Root; namespaces and processes of its
# own (leafspine's state under a temporary folder), stopped by PID at exit.
# Exit 1 when a run failed, 2 on a bad argument.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
KERNEL=0
LEAVES=2 SPINES=2 HPL=2
RATE=200m
QUEUE=
MTU=
SEED=auto
SEEDS_MAX=8
PATHS_LIST="1 8 16"
POLICY=p2c
RC=0
CC=cubic
LINK_MBPS=
BASE_RTT=
SIZE=1m
DEPTH=1
DURATION=6
WARMUP=1
REPS=3
IDLE_US=20
QUIET=0
KEEP=
PLOT=
EXTRA=()
die2() { echo "spray_bench.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--kernel) KERNEL=1; shift ;;
	--leaves) LEAVES=${2:?}; shift 2 ;;
	--spines) SPINES=${2:?}; shift 2 ;;
	--hosts-per-leaf) HPL=${2:?}; shift 2 ;;
	--rate) RATE=${2:?}; shift 2 ;;
	--queue) QUEUE=${2:?}; shift 2 ;;
	--mtu) MTU=${2:?}; shift 2 ;;
	--seed) SEED=${2:?}; shift 2 ;;
	--seeds-max) SEEDS_MAX=${2:?}; shift 2 ;;
	--paths) PATHS_LIST=${2:?}; shift 2 ;;
	--policy) POLICY=${2:?}; shift 2 ;;
	--rc) RC=1; shift ;;
	--cc) CC=${2:?}; shift 2 ;;
	--link-mbps) LINK_MBPS=${2:?}; shift 2 ;;
	--base-rtt-us) BASE_RTT=${2:?}; shift 2 ;;
	--size) SIZE=${2:?}; shift 2 ;;
	--depth) DEPTH=${2:?}; shift 2 ;;
	--duration) DURATION=${2:?}; shift 2 ;;
	--warmup) WARMUP=${2:?}; shift 2 ;;
	--reps) REPS=${2:?}; shift 2 ;;
	--idle-us) IDLE_US=${2:?}; shift 2 ;;
	--wait-quiet) QUIET=${2:?}; shift 2 ;;
	--keep) KEEP=${2:?}; shift 2 ;;
	--plot) PLOT=${2:?}; shift 2 ;;
	-h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
	--) shift; EXTRA=("$@"); break ;;
	*) die2 "unknown option $1 (see --help)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (with tests/bench/fab_flows and apps/uroce-fabric)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
FF=$BUILD/tests/bench/fab_flows
FABRIC=$BUILD/apps/uroce-fabric
LS=$(cd "$(dirname "$0")/../netns" && pwd)/leafspine.sh
TOOLS=("$FF")
[ $KERNEL = 1 ] || TOOLS+=("$FABRIC")
for t in "${TOOLS[@]}"; do [ -x "$t" ] || die2 "$t is missing (ninja -C $BUILD)"; done
# --rate in Mbit/s (200m, 1g, 400mbit), for the capacity
RATE_MBPS=$(awk -v r="$RATE" 'BEGIN { r = tolower(r); sub(/bit$/, "", r); m = 1e-6
	if (r ~ /k$/) m = 1e-3; else if (r ~ /m$/) m = 1; else if (r ~ /g$/) m = 1e3; else if (r ~ /t$/) m = 1e6
	v = r + 0; if (v <= 0) exit 1; printf "%g", v * m }') || die2 "--rate $RATE: a rate such as 200m or 1g"
[ -x "$LS" ] || die2 "$LS is missing"
[[ $SEED == auto || $SEED =~ ^[0-9]+$ ]] || die2 "--seed $SEED: auto or a number"
[[ $SEEDS_MAX =~ ^[1-9][0-9]*$ ]] || die2 "--seeds-max $SEEDS_MAX: a number"
set -- $PATHS_LIST
[ "${1:-}" = 1 ] || die2 "--paths '$PATHS_LIST': the first must be 1 (the baseline)"
for n in $PATHS_LIST; do [[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 256 ] || die2 "--paths: '$n' is not 1..256"; done
[[ $REPS =~ ^[1-9]$ ]] || die2 "--reps $REPS: accepted 1..9"
[[ $QUIET =~ ^[0-9]+$ ]] || die2 "--wait-quiet $QUIET: seconds"
[ -z "$PLOT" ] || { /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || die2 "--plot needs /usr/bin/python3 with matplotlib"; }

. "$(dirname "$0")/quiet.sh"
. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-spray
STATE=$TMP/state
P=sb$$
DATA=${KEEP:-$TMP/data}
mkdir -p "$DATA" || netns_die "cannot create $DATA"
rm -f "$DATA"/*.txt "$DATA"/*.log 2>/dev/null
# leafspine.sh down stops its switches by PID (recorded with start times)
NETNS_ON_EXIT='"$LS" down --prefix "$P" --state-dir "$STATE" >/dev/null 2>&1'
UP=0
ls_() { "$LS" "$1" --prefix "$P" --state-dir "$STATE" "${@:2}"; }

# the hosts in leafspine's order (h1-1, h1-2, ..., h2-1, ...) and the flows
NH=$((LEAVES * HPL))
FLOWS=
for ((l = 1; l <= LEAVES; l++)); do
	for ((k = 1; k <= HPL; k++)); do
		src=$(((l - 1) * HPL + k - 1)) dst=$(((l % LEAVES) * HPL + k - 1))
		FLOWS+=${FLOWS:+,}$src\>$dst
	done
done

fabric_up() { # SEED
	local q=() sw=(--fabric "$FABRIC")
	[ -z "$QUEUE" ] || q=(--queue "$QUEUE")
	[ -z "$MTU" ] || q+=(--mtu "$MTU")
	[ $KERNEL = 0 ] || sw=(--kernel)
	ls_ up "${sw[@]}" --leaves "$LEAVES" --spines "$SPINES" --hosts-per-leaf "$HPL" --rate "$RATE" \
		"${q[@]}" --seed "$1" --max-sec $((24 * 3600)) >/dev/null || netns_die "leafspine up (seed $1) failed"
	UP=1
	mapfile -t HOSTNS < <(ls_ hosts | awk '{ print $1 }')
	[ ${#HOSTNS[@]} = "$NH" ] || netns_die "leafspine gave ${#HOSTNS[@]} hosts, expected $NH"
}
fabric_down() { ls_ down >/dev/null 2>&1; UP=0; }

# uplink bytes of every leaf now: "leaf1 b1 b2 ..." (data queue sent_bytes of ports u1..uS;
# with --kernel the tx_bytes of the leaves' interfaces u1..uS)
uplinks() {
	local l s b
	if [ $KERNEL = 1 ]; then
		for ((l = 1; l <= LEAVES; l++)); do
			b=
			for ((s = 1; s <= SPINES; s++)); do
				b+=" $(ip netns exec "$P-leaf$l" cat "/sys/class/net/u$s/statistics/tx_bytes")"
			done
			echo "leaf$l$b"
		done
		return
	fi
	sleep 1.2 # the switches write their counters every second
	for ((l = 1; l <= LEAVES; l++)); do
		python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[2], " ".join(str(p["data"]["sent_bytes"]) for p in d["ports"] if p["name"].startswith("u")))' \
			"$STATE/$P/leaf$l.json" "leaf$l"
	done
}
# spread BEFORE AFTER: per leaf, the busiest uplink's share of the bytes
# sent between the two snapshots ("0.52/0.97"); sets COLLIDED=1 when
# a leaf's share is above 3/4
spread() {
	local out
	out=$(paste -d' ' <(echo "$1") <(echo "$2") | awk -v S="$SPINES" '{
		t = 0; m = 0
		for (s = 1; s <= S; s++) { d = $(S + 2 + s) - $(1 + s); t += d; if (d > m) m = d }
		printf "%s%.2f", (NR > 1 ? "/" : ""), (t ? m / t : 0); if (t && m / t > 0.75) c = 1 }
		END { printf " %d\n", c }')
	SPREAD=${out% *} COLLIDED=${out#* }
}

# tbf drops now, with --kernel: "UP SPINE DOWN", the packets dropped by the
# leaves' uplinks (u*), the spines' ports (l*) and the leaves' host ports (d*)
qdrops() {
	local l s up=0 sp=0 dn=0
	[ $KERNEL = 1 ] || { echo "- - -"; return; }
	qd() { ip netns exec "$1" tc -s qdisc show | awk -v pat="$2" '
		/^qdisc/ { dev = ""; for (i = 1; i <= NF; i++) if ($i == "dev") dev = $(i + 1) }
		/dropped/ && dev ~ pat { for (i = 1; i <= NF; i++) if ($i ~ /dropped$/) { v = $(i + 1); sub(/,/, "", v); s += v } }
		END { print s + 0 }'; }
	for ((l = 1; l <= LEAVES; l++)); do
		up=$((up + $(qd "$P-leaf$l" '^u'))) dn=$((dn + $(qd "$P-leaf$l" '^d')))
	done
	for ((s = 1; s <= SPINES; s++)); do sp=$((sp + $(qd "$P-spine$s" '^l'))); done
	echo "$up $sp $dn"
}
# packets the kernel's per-CPU backlogs dropped (/proc/net/softnet_stat's
# second column, summed over the CPUs: veth hands a packet to the next
# namespace through it; the whole machine's, not only this run's)
backlog_drops() { local s=0 h; for h in $(awk '{ print $2 }' /proc/net/softnet_stat); do s=$((s + 16#$h)); done; echo $s; }
# the CPUs' split between two /proc/stat lines: "usr% sys% softirq% idle%"
# (usr with nice, idle with iowait; over all CPUs)
cpusplit() {
	awk -v a="$1" -v b="$2" 'BEGIN { split(a, x); split(b, y); for (i = 2; i <= 11; i++) d[i] = y[i] - x[i]
		t = 0; for (i = 2; i <= 9; i++) t += d[i]; if (!t) t = 1
		printf "%.0f %.0f %.0f %.0f", 100 * (d[2] + d[3]) / t, 100 * (d[4] + d[7]) / t, 100 * d[8] / t, 100 * (d[5] + d[6]) / t }'
}

# run TAG ARGS...: one permutation run, every host's fab_flows; sets OK,
# the per-flow lines in $DATA/TAG.log and messages in $DATA/TAG.*.txt
FAILED=0
run() {
	local tag=$1 shm pids=() i rc before after d0 d1 c0 c1 b0
	shift
	shm=$TMP/$tag.shm
	rm -f "$shm"
	wait_quiet
	before=$(uplinks)
	d0=$(qdrops)
	b0=$(backlog_drops)
	c0=$(head -1 /proc/stat)
	for ((i = 0; i < NH; i++)); do
		netns_start "${HOSTNS[$i]}" "$TMP/$tag.$i.log" timeout -k 5 $((DURATION + 90)) "$FF" --shm "$shm" \
			--host $i --hosts "$NH" --dev afxdp:h0 --flows "$FLOWS" --duration "$DURATION" --warmup "$WARMUP" \
			--max-sec $((DURATION + 60)) --size "$SIZE" --depth "$DEPTH" --idle-us "$IDLE_US" \
			--out "$DATA/$tag.$i.txt" "$@" "${EXTRA[@]}"
		pids+=("$NETNS_PID")
	done
	OK=1
	for i in "${!pids[@]}"; do
		netns_wait "${pids[$i]}" || { rc=$?; OK=0; echo "spray_bench.sh: $tag: host $i exited $rc" >&2; }
	done
	c1=$(head -1 /proc/stat)
	BACKLOG=$(($(backlog_drops) - b0))
	d1=$(qdrops)
	after=$(uplinks)
	spread "$before" "$after"
	CPU=$(cpusplit "$c0" "$c1")
	DROPS=$(awk -v a="$d0" -v b="$d1" 'BEGIN { n = split(a, x); split(b, y)
		if (x[1] == "-") { print "-"; exit } printf "%d/%d/%d", y[1] - x[1], y[2] - x[2], y[3] - x[3] }')
	cat "$TMP/$tag".*.log >"$DATA/$tag.log"
	XSK=$(grep -h '^fab_flows port ' "$DATA/$tag.log" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^drop_no_buffer=/) { split($i, a, "="); s += a[2] } } END { print s + 0 }')
	HCPU=$(grep -h '^fab_flows port ' "$DATA/$tag.log" | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "=")
		if (a[1] == "cpu_user_s") u += a[2]; else if (a[1] == "cpu_sys_s") y += a[2]; else if (a[1] == "run_delay_s") d += a[2] } }
		END { printf "%.1f/%.1f/%.1f", u, y, d }')
	if [ $OK = 0 ]; then
		FAILED=1
		grep -v '^fab_flows ' "$DATA/$tag.log" | head -5 | sed 's/^/   /' >&2
	fi
	rm -f "$shm"
	sleep 0.5
}

kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
# summary TAG -> "agg_mbps min_mbps p50_us p99_us retx"
summary() {
	local tag=$1 f
	[ -s "$DATA/$tag.log" ] || { echo "- - - - -"; return; }
	f=$(grep '^fab_flows flow ' "$DATA/$tag.log")
	[ "$(wc -l <<<"$f")" = "$NH" ] || { echo "- - - - -"; return; }
	local agg min retx
	agg=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^goodput_mbps=/) { split($i, a, "="); s += a[2] } } END { printf "%.1f", s }' <<<"$f")
	min=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^goodput_mbps=/) { split($i, a, "="); if (m == "" || a[2] < m) m = a[2] } } END { printf "%.1f", m }' <<<"$f")
	retx=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^retx=/) { split($i, a, "="); s += a[2] } } END { print s + 0 }' <<<"$f")
	cat "$DATA/$tag".*.txt 2>/dev/null | awk '{ print $5 }' | sort -n | awk -v agg="$agg" -v min="$min" -v retx="$retx" '
		{ v[NR] = $1 }
		function q(r,  k) { k = int(r * NR); if (k < r * NR) k++; if (k < 1) k = 1; return v[k] / 1000 }
		END { if (!NR) { print agg, min, "-", "-", retx; exit }
		      printf "%s %s %.1f %.1f %s\n", agg, min, q(0.5), q(0.99), retx }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
median() {
	printf '%s\n' "$@" | grep -v '^-$' | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-";
		else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

CCARGS=(--cc "$CC")
[ -z "$LINK_MBPS" ] || CCARGS+=(--link-mbps "$LINK_MBPS")
[ -z "$BASE_RTT" ] || CCARGS+=(--base-rtt-us "$BASE_RTT")
CONFIGS=()
[ $RC = 0 ] || CONFIGS+=(rc)
for n in $PATHS_LIST; do CONFIGS+=("sr$n"); done
cfg_args() { # CONFIG -> fab_flows transport options
	case "$1" in
	rc) echo "--rel rc" ;;
	sr*) echo "--rel sr --paths ${1#sr} --path-policy $POLICY ${CCARGS[*]}" ;;
	esac
}
cfg_name() { case "$1" in rc) echo "rc (flat)" ;; sr1) echo "sr, 1 path" ;; *) echo "sr, ${1#sr} paths ($POLICY)" ;; esac; }

echo "== spray_bench: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(nproc) CPUs, $(bench_commit), build $BUILD"
CAP_MBPS=$(awk -v l="$LEAVES" -v h="$HPL" -v s="$SPINES" -v r="$RATE_MBPS" 'BEGIN { printf "%g", l * (h < s ? h : s) * r }')
echo "   leaf-spine $LEAVES x $SPINES of $([ $KERNEL = 1 ] && echo "Linux routers (tbf)" || echo uroce-fabric)," \
	"$HPL host(s) per leaf, ports at $RATE${QUEUE:+, queue $QUEUE}${MTU:+, MTU $MTU} (capacity $CAP_MBPS Mbit/s); flows $FLOWS;" \
	"$SIZE B messages, depth $DEPTH, $DURATION s (first $WARMUP s left out), cc $CC, idle sleep $IDLE_US us; load average $(cut -d' ' -f1-3 /proc/loadavg)"
START=$SECONDS
if [ "$SEED" = auto ] && [ "$HPL" = 1 ]; then
	echo "   one host per leaf: no two flows share a leaf's uplinks; seed 1 without a probe"
	SEED=1
fi
if [ "$SEED" = auto ]; then
	for ((s = 1; s <= SEEDS_MAX; s++)); do
		fabric_up $s
		DURATION_SAVE=$DURATION WARMUP_SAVE=$WARMUP
		DURATION=1 WARMUP=0
		run "probe.seed$s" --rel sr --paths 1 "${CCARGS[@]}"
		DURATION=$DURATION_SAVE WARMUP=$WARMUP_SAVE
		echo "   seed $s: busiest uplink's share per leaf $SPREAD$([ "$COLLIDED" = 1 ] && echo ': collision')"
		[ "$COLLIDED" = 1 ] && [ $OK = 1 ] && { SEED=$s; break; }
		fabric_down
	done
	[ "$SEED" != auto ] || netns_die "no seed in 1..$SEEDS_MAX made two single-path flows of a leaf share a spine"
	FAILED=0
else
	fabric_up "$SEED"
fi
echo "   seed $SEED"
declare -A R SP CPUS DR
for rep in $(seq 1 "$REPS"); do
	for c in "${CONFIGS[@]}"; do
		# shellcheck disable=SC2046 # the options split on purpose
		run "$c.r$rep" $(cfg_args "$c")
		R[$c.$rep]=$(summary "$c.r$rep")
		SP[$c.$rep]=$SPREAD
		CPUS[$c.$rep]=$CPU
		DR[$c.$rep]=$DROPS
		read -r a m p50 p99 x <<<"${R[$c.$rep]}"
		printf '   %-10s aggregate %8s Mbit/s  slowest flow %7s  FCT p50 %9s us  p99 %9s us  retx %-7s uplink share %s  cpu usr/sys/si/idle %% %s  tbf drops up/spine/down %s  backlog drops %s  xsk drops %s  hosts cpu usr/sys/wait s %s%s\n' \
			"$c.r$rep" "$a" "$m" "$p50" "$p99" "$x" "$SPREAD" "${CPU// //}" "$DROPS" "$BACKLOG" "$XSK" "$HCPU" "$([ $OK = 1 ] || echo '  FAILED')"
	done
done

col() { # CONFIG FIELD(1..5) -> the values of every repetition
	local rep
	for rep in $(seq 1 "$REPS"); do awk -v f="$2" '{ print $f }' <<<"${R[$1.$rep]:-- - - - -}"; done
}
echo
echo "== permutation on the leaf-spine (seed $SEED): medians of $REPS repetitions; ratios to sr with 1 path of the same repetition"
echo "| configuration | aggregate Mbit/s | of capacity | slowest flow Mbit/s | FCT p50 us | FCT p99 us | retx | aggregate / 1 path | p50 / 1 path | p99 / 1 path | busiest uplink share per leaf | CPU idle % | tbf drops up/spine/down | failed runs |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for c in "${CONFIGS[@]}"; do
	ra=() r50=() r99=()
	for rep in $(seq 1 "$REPS"); do
		read -r a _ p50 p99 _ <<<"${R[$c.$rep]:-- - - - -}"
		read -r b _ q50 q99 _ <<<"${R[sr1.$rep]:-- - - - -}"
		ra+=("$(ratio "$a" "$b")") r50+=("$(ratio "$p50" "$q50")") r99+=("$(ratio "$p99" "$q99")")
	done
	shares= idle=() drops= nfail=0
	for rep in $(seq 1 "$REPS"); do
		shares+=${shares:+, }${SP[$c.$rep]}
		idle+=("$(awk '{ print $4 }' <<<"${CPUS[$c.$rep]}")")
		drops+=${drops:+, }${DR[$c.$rep]}
		[ "${R[$c.$rep]%% *}" != - ] || nfail=$((nfail + 1))
	done
	agg=$(median $(col "$c" 1))
	echo "| $(cfg_name "$c") | $agg | $(ratio "$agg" "$CAP_MBPS") | $(median $(col "$c" 2)) | $(median $(col "$c" 3)) |" \
		"$(median $(col "$c" 4)) | $(median $(col "$c" 5)) | $(median "${ra[@]}") | $(median "${r50[@]}") |" \
		"$(median "${r99[@]}") | $shares | $(median "${idle[@]}") | $drops | $nfail of $REPS |"
done
echo "   ($((SECONDS - START)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "$PLOT" ]; then
	args=()
	for c in "${CONFIGS[@]}"; do args+=("$(cfg_name "$c")=$(ls "$DATA/$c".r*.*.txt 2>/dev/null | paste -sd,)"); done
	/usr/bin/python3 "$(dirname "$0")/plot_spray.py" --out "$PLOT" --title "permutation, $LEAVES x $SPINES leaf-spine at $RATE, seed $SEED" \
		"${args[@]}" || echo "spray_bench.sh: the plot failed" >&2
fi
exit $FAILED
