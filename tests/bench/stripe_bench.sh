#!/bin/bash
# SPDX-License-Identifier: MIT
# Striping over two ports against one port (TransferEngine's DomainGroup:
# one transfer sharded over the NICs of a group), in one run, over two
# kinds of rails:
#
#  veth    two network namespaces A and B joined by two veth pairs (no
#          loss, link MTU 4200 so the path MTU is 4096). A veth pair has
#          no line rate: its bandwidth is the CPU that moves the frames.
#  fabric  the same two namespaces, each rail through a rate-limited port
#          of uroce-fabric (one switch process in a third namespace S with
#          four ports: A's rail i enters by sa<i> and leaves for B by sb<i>,
#          B's answers the other way; every port rate=--rate-mbps, a
#          drop-tail queue of --queue, so the link, not the CPU, bounds a
#          rail, as a NIC's line rate does). Hosts route the other side's
#          /24 through their switch port (a permanent neighbour entry).
#          The switch runs at nice -5 (it stands for the wire, and a late
#          switch delivers a burst of frames at once; its CPU time is
#          reported). sr's RTO floor is raised to --sr-rto-min-us here:
#          with no congestion control the default 1 MiB window queues up
#          to 42 ms at 200 Mbit/s, and the default 200 us floor then times
#          out spuriously (a retransmission storm; --sr-rto-min-us 0 shows
#          it).
#
# afxdp ports, each end one context over both of its interfaces, for rc
# and sr. Per size, --reps transfers of each kind alternate: "1 port" (QP
# 0 alone, on port 1) and "2 ports" (uroce_stripe_post_write over both
# QPs, min shard 64 KiB); the receiver counts the shards' immediate
# (IMMCOUNTER) and checks every word. The tables give the median Gbit/s of
# each and their ratio; for fabric also the payload ceiling of one rail
# (the rate x 4096 / 4154: a full frame is 4154 bytes, Ethernet to ICRC,
# for 4096 of payload), the switch's counters and the sender's
# retransmissions. The ends are pinned to CPUs 0 and 1 when there are two;
# each end's one thread drives both of its ports (embedded engine).
#
#   tests/bench/stripe_bench.sh --build DIR [--quick] [--modes "rc sr"]
#       [--rails "veth fabric"] [--sizes "1m 4m 16m 64m"] [--reps N]
#       [--rate-mbps 200] [--queue 2m] [--sr-rto-min-us 50000]
#       [--wait-quiet S] [--csv FILE]
#
# --build DIR: a release build with tests/bench/stripe_bench and
# apps/uroce-fabric (nothing is built here). --rails: which kinds to run
# (default both, veth first). --reps: transfers of each kind per size
# (default 5; --quick: 2). --rate-mbps: every switch port's rate, 1..10000
# Mbit/s (default 200: two rails' 400 Mbit/s leave the two CPUs room, the
# switch alone saturates near 0.9 Gbit/s here). --queue: each switch
# port's data queue (default 2m: two windows, so nothing is tail-dropped).
# --sr-rto-min-us: sr's RTO floor on the fabric rails (default 50000; 0 =
# the transport's 200 us). --wait-quiet S: before each mode wait up to S
# seconds for the CPUs to be 90% idle over a second. --csv FILE:
# "rails,mode,size,one_gbps,two_gbps,ratio" rows. Exit 1 when a run fails,
# 2 on a bad argument or a missing tool.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
QUICK=0
MODES="rc sr"
RAILS="veth fabric"
SIZES="1m 4m 16m 64m"
REPS=
RATE_MBPS=200
QUEUE=2m
SR_RTO_MIN=50000
QUIET=0
CSV=
die2() { echo "stripe_bench.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--modes) MODES=${2:?--modes needs a list}; shift 2 ;;
	--rails) RAILS=${2:?--rails needs a list}; shift 2 ;;
	--sizes) SIZES=${2:?--sizes needs a list}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--rate-mbps) RATE_MBPS=${2:?--rate-mbps needs a number}; shift 2 ;;
	--queue) QUEUE=${2:?--queue needs a size}; shift 2 ;;
	--sr-rto-min-us) SR_RTO_MIN=${2:?--sr-rto-min-us needs a number}; shift 2 ;;
	--wait-quiet) QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
	--csv) CSV=${2:?--csv needs a file}; shift 2 ;;
	-h|--help) sed -n '2,51p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (accepted: --build, --quick, --modes, --rails, --sizes, --reps, --rate-mbps, --queue, --sr-rto-min-us, --wait-quiet, --csv)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (a release build with tests/bench/stripe_bench and apps/uroce-fabric)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
if [ $QUICK = 1 ]; then REPS=${REPS:-2}; else REPS=${REPS:-5}; fi
for m in $MODES; do
	[ "$m" = rc ] || [ "$m" = sr ] || die2 "--modes: '$m'; accepted rc and sr"
done
[ -n "$RAILS" ] || die2 "--rails: an empty list; accepted veth and fabric"
for r in $RAILS; do
	[ "$r" = veth ] || [ "$r" = fabric ] || die2 "--rails: '$r'; accepted veth and fabric"
done
[[ $REPS =~ ^[1-9][0-9]?$ ]] && [ "$REPS" -le 20 ] || die2 "--reps $REPS: accepted 1..20"
[[ $RATE_MBPS =~ ^[1-9][0-9]{0,4}$ ]] && [ "$RATE_MBPS" -le 10000 ] || die2 "--rate-mbps $RATE_MBPS: accepted 1..10000"
[[ $QUEUE =~ ^[1-9][0-9]*[km]?$ ]] || die2 "--queue $QUEUE: bytes with an optional k/m suffix (64..64m)"
[[ $SR_RTO_MIN =~ ^[0-9]{1,7}$ ]] && [ "$SR_RTO_MIN" -le 1000000 ] || die2 "--sr-rto-min-us $SR_RTO_MIN: accepted 0..1000000"
bench_check_quiet
for s in $SIZES; do
	[[ $s =~ ^[1-9][0-9]*[kmg]?$ ]] || die2 "--sizes: '$s' is not a size (bytes with an optional k/m/g suffix)"
done
SB=$BUILD/tests/bench/stripe_bench
FABRIC=$BUILD/apps/uroce-fabric
[ -x "$SB" ] || die2 "$SB is missing (ninja -C $BUILD tests/bench/stripe_bench)"
if [[ " $RAILS " == *" fabric "* ]]; then
	[ -x "$FABRIC" ] || die2 "$FABRIC is missing (ninja -C $BUILD apps/uroce-fabric)"
	"$FABRIC" --port x0,peer=02:00:00:00:00:01,rate=${RATE_MBPS}m,queue=$QUEUE --route 10.0.0.0/8=0 --check >/dev/null ||
		die2 "uroce-fabric refuses rate=${RATE_MBPS}m,queue=$QUEUE"
	command -v python3 >/dev/null || die2 "python3 is missing (reads the switch's JSON)"
fi
command -v ip >/dev/null || die2 "ip (iproute2) is missing"
SIZES_ARG=$(tr ' ' ',' <<<"$SIZES")

# wait_quiet: wait for a quiet machine before a run (--wait-quiet S = $QUIET)
. "$(dirname "$0")/quiet.sh"

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-stripeb
NS=$P-s
netns_add "$NA" "$NB"
bench_pin
LIMIT=300

echo "== stripe_bench: one transfer striped over 2 rails vs 1, A -> B, rails: $RAILS; $(nproc) CPUs," \
	"ends on ${PIN_A[*]:-any} / ${PIN_B[*]:-any}"
echo "   $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(bench_commit)," \
	"build $BUILD, $REPS transfer(s) of each kind per size"
echo "   before the run: $(bench_load)"
[ -z "$CSV" ] || echo "rails,mode,size,one_gbps,two_gbps,ratio" >"$CSV"
txb() { ip netns exec "$NA" cat "/sys/class/net/$1/statistics/tx_bytes"; }
FAILS=0
START=$SECONDS
declare -A ROWS PAIRS RETX

# veth_up: rail i = veth pair pa<i> (A, 10.97.i.1) -- pb<i> (B, 10.97.i.2)
veth_up() {
	local i
	for i in 1 2; do
		netns_veth "$NA" pa$i "$NB" pb$i --ip-a 10.97.$i.1/24 --ip-b 10.97.$i.2/24 --mtu 4200
		ip netns exec "$NA" ping -c 1 -W 2 10.97.$i.2 >/dev/null || netns_die "B is not reachable over pair $i"
	done
	IFA=(pa1 pa2) IFB=(pb1 pb2)
}

# fabric_up: rail i = A ra<i> (10.98.i.2) -- sa<i> [switch S] sb<i> -- rb<i>
# B (10.99.i.2); one uroce-fabric over sa1 sb1 sa2 sb2 (ports 0..3), every
# port rate-limited; SW_PID, SW_JSON
SW_PID=
fabric_up() {
	local i p=0 ports=() routes=()
	netns_add "$NS"
	for i in 1 2; do
		netns_veth "$NA" ra$i "$NS" sa$i --ip-a 10.98.$i.2/24 --ip-b 10.98.$i.1/24 --mtu 4200
		netns_veth "$NB" rb$i "$NS" sb$i --ip-a 10.99.$i.2/24 --ip-b 10.99.$i.1/24 --mtu 4200
		ip -n "$NA" route add 10.99.$i.0/24 via 10.98.$i.1 dev ra$i &&
			ip -n "$NA" neigh replace 10.98.$i.1 lladdr "$(netns_mac "$NS" sa$i)" dev ra$i nud permanent &&
			ip -n "$NB" route add 10.98.$i.0/24 via 10.99.$i.1 dev rb$i &&
			ip -n "$NB" neigh replace 10.99.$i.1 lladdr "$(netns_mac "$NS" sb$i)" dev rb$i nud permanent ||
			netns_die "cannot route rail $i through the switch"
		ports+=(--port "sa$i,peer=$(netns_mac "$NA" ra$i),rate=${RATE_MBPS}m,queue=$QUEUE"
			--port "sb$i,peer=$(netns_mac "$NB" rb$i),rate=${RATE_MBPS}m,queue=$QUEUE")
		routes+=(--route "10.98.$i.0/24=$p" --route "10.99.$i.0/24=$((p + 1))")
		p=$((p + 2))
	done
	SW_JSON=$TMP/switch.json
	# nice and ip netns exec exec it: NETNS_PID is the switch's own PID
	netns_start "$NS" "$TMP/switch.log" nice -n -5 "$FABRIC" "${ports[@]}" "${routes[@]}" --seed 1 \
		--stats "$SW_JSON" --ready-file "$TMP/switch.ready" --max-sec $((LIMIT * 4)) --quiet
	SW_PID=$NETNS_PID
	netns_wait_file "$TMP/switch.ready" "$SW_PID" 10 || netns_die "uroce-fabric did not open its ports"
	IFA=(ra1 ra2) IFB=(rb1 rb2)
}
sw_cpu_s() { # the switch's CPU seconds so far (user + system)
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$SW_PID/stat" 2>/dev/null
}
# sw_counters: bytes the switch sent on sb1, sb2 (to B) and its drops by reason
sw_counters() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
p = {q["name"]: q for q in d["ports"]}
drops = ", ".join("%s %d" % (k, v) for k, v in d["drops"].items() if v) or "none"
print("switch sent B %d bytes on sb1, %d on sb2; deepest data queue %d bytes; drops: %s" % (
    p["sb1"]["tx_bytes"], p["sb2"]["tx_bytes"],
    max(q["data"]["max_depth_bytes"] for q in d["ports"]), drops))' "$SW_JSON" 2>/dev/null || echo "switch counters unreadable"
}

# run_rails RAILS: every mode over the rails now up (IFA, IFB)
run_rails() {
	local rails=$1 mode shm args extra t1 t2 src rrc spid rpid bad tag
	for mode in $MODES; do
		tag=$rails.$mode
		shm=$TMP/$tag.shm
		rm -f "$shm"
		wait_quiet
		t1=$(txb "${IFA[0]}") t2=$(txb "${IFA[1]}")
		extra=()
		[ "$rails" != fabric ] || [ "$mode" != sr ] || [ "$SR_RTO_MIN" = 0 ] || extra=(--rto-min-us "$SR_RTO_MIN")
		bench_pair stripe_bench "$SB" "$TMP/$tag" "$rails $mode" "afxdp:${IFB[0]},afxdp:${IFB[1]}" \
			"afxdp:${IFA[0]},afxdp:${IFA[1]}" "words were not as written" \
			--shm "$shm" --mode "$mode" --sizes "$SIZES_ARG" --reps "$REPS" --max-sec "$LIMIT" "${extra[@]}"
		ROWS[$tag]=$(grep '^stripe_bench size=' "$TMP/$tag.r.log")
		RETX[$tag]=$(sed -n 's/^stripe_bench qps role=send retransmits=//p' "$TMP/$tag.s.log")
		PAIRS[$tag]="${IFA[0]} sent $(($(txb "${IFA[0]}") - t1)) bytes, ${IFA[1]} $(($(txb "${IFA[1]}") - t2)); $(awk '/^stripe_bench xfer / {
			n = split($NF, a, "="); t++; if (a[2] + 0 > 2000) c++ }
			END { printf "%d of %d transfers had the receiver wait over 2 ms for its CPU (another task ran there)", c, t }' \
			"$TMP/$tag.r.log")"
		rm -f "$shm"
		sleep 0.5 # the AF_XDP sockets go with the processes
	done
}

# table RAILS: the Gbit/s table of those rails
table() {
	local rails=$1 s b line r m
	bench_head size "1 port" "2 ports" 2/1
	for s in $SIZES; do
		b=$(bench_bytes "$s")
		line="| $s |"
		for m in $MODES; do
			r=$(bench_row "size=$b" "${ROWS[$rails.$m]:-}")
			line+=$(bench_cells "$r" one_gbps all_gbps '*ratio')
			[ -z "$r" ] || [ -z "$CSV" ] || echo "$rails,$m,$b,$(bench_kv one_gbps "$r"),$(bench_kv all_gbps "$r"),$(bench_kv ratio "$r")" >>"$CSV"
		done
		echo "$line"
	done
}

REPORT=()
for rails in $RAILS; do
	t0=$SECONDS
	case $rails in
	veth)
		echo "-- veth: two veth pairs (MTU 4200), no line rate"
		veth_up
		run_rails veth
		REPORT+=("" "== veth rails: Gbit/s of one transfer (median of $REPS each): 1 port, striped over 2 ports, and 2 ports / 1 port"
			"$(table veth)")
		for m in $MODES; do REPORT+=("   $m: ${PAIRS[veth.$m]:-}"); done
		;;
	fabric)
		echo "-- fabric: each rail through a uroce-fabric port pair at $RATE_MBPS Mbit/s (queue $QUEUE)"
		fabric_up
		c0=$(sw_cpu_s)
		run_rails fabric
		c1=$(sw_cpu_s)
		netns_stop "$SW_PID" || { echo "stripe_bench.sh: uroce-fabric exited $? on SIGTERM" >&2; FAILS=$((FAILS + 1)); }
		ceil=$(awk -v r="$RATE_MBPS" 'BEGIN { printf "%.3f", r / 1000 * 4096 / 4154 }')
		REPORT+=("" "== fabric rails ($RATE_MBPS Mbit/s a port): Gbit/s of one transfer (median of $REPS each): 1 rail, striped over 2 rails, and 2 / 1; payload ceiling $ceil Gbit/s a rail, $(awk -v c="$ceil" 'BEGIN { printf "%.3f", 2 * c }') for two"
			"$(table fabric)")
		for m in $MODES; do
			REPORT+=("   $m: ${PAIRS[fabric.$m]:-}"
				"   $m: sender's QP 0, QP 1: packets sent again / $([ "$m" = rc ] && echo "ACK timeouts" || echo "packets lost by the RTO"): ${RETX[fabric.$m]:-?}$([ "$m" != sr ] || [ "$SR_RTO_MIN" = 0 ] || echo ", sr RTO floor $SR_RTO_MIN us")")
		done
		REPORT+=("   $(sw_counters); switch CPU $(awk -v a="${c0:-0}" -v b="${c1:-0}" 'BEGIN { printf "%.1f", b - a }') s over the $((SECONDS - t0)) s of the fabric runs")
		;;
	esac
done
printf '%s\n' "${REPORT[@]}"
echo "   ($((SECONDS - START)) s)"
[ $FAILS = 0 ] || exit 1
