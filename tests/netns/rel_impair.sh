#!/bin/bash
# SPDX-License-Identifier: MIT
# The reliability modes on veth through an impaired router: rc, sr (ordered,
# and unordered at one loss rate), ec RS and XOR (8+2 at every loss rate,
# the default 32+8 at 1e-2), each at 0, 1e-4, 1e-3 and 1e-2 loss, with 1%
# duplication and 1% reordering in both directions at every rate. Every
# run of every tool must complete on both ends; the test fails on any
# failed or hung run (the tools' --timeout and an outer timeout bound each
# one) and prints a table of mode x loss with the tools' counters.
#
#   A a0 10.94.1.2 -- m0  M  m1 -- b0 10.94.2.2 B      (M routes; r0-r1: M's delay lane)
#
# The impairment, all in M, on RoCEv2 (UDP 4791) only:
#   loss         uroce-impair --drop P --seed S on m0 and m1 (XDP, ingress)
#   duplication  tc on m0/m1 ingress: a classic-BPF classifier picks 1% at
#                random (ld rand), mirred mirrors the packet back into the
#                same ingress, so the router forwards it twice
#   reordering   tc on m1/m0 egress (after routing): 1% picked the same way
#                are redirected to the veth r0; a Python process reads them
#                from r1 and sends them out of m1/m0 $DELAY_US us later
#                (PACKET_QDISC_BYPASS: not picked again), so they arrive
#                behind packets sent after them
# uroce-impair drops only (docs/cli.md); the duplication and the delay lane
# stand in for the reordering and duplication it does not have.
#
# What each run verifies, per mode and loss (the tools' own checks):
#   uroce-pingpong --chk  PP_ITERS x 64 KiB SEND each way, one at a time: every
#                         receive completion is a RECV of exactly 64 KiB, both ends
#                         count PP_ITERS sends and receives; the first byte of every
#                         page of the final buffer is checked (not every byte, and
#                         every message carries the same bytes)
#   uroce-perf send_bw    BW_ITERS x 64 KiB SEND, 128 in flight: the client counts
#                         exactly BW_ITERS send completions, the server BW_ITERS
#                         receives of 64 KiB, every status SUCCESS; no data check
#   uroce-perf write_lat  LAT_ITERS x 16 KiB WRITE each way, one at a time: each end
#                         spins until the last byte of the peer's write holds the
#                         message's number (one byte of each message checked)
# No tool checks every byte of every message or that no completion arrives
# twice after the last expected one.
#
#   rel_impair.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF
# Environment: REL_IMPAIR_OPTS="--rto-min-us 20000" adds options to every sr
# and ec run; REL_IMPAIR_{PP,BW,LAT}_ITERS change the message counts.
set -u
. "$(dirname "$0")/../lib/netns.sh"
IMPAIR=${1:?usage: rel_impair.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF}
PP=${2:?usage: rel_impair.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF}
PERF=${3:?usage: rel_impair.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF}
netns_need_cmd tc iproute2
netns_need_cmd python3
netns_test uroce-relimp
NETNS_LOG_LINES=40

PP_ITERS=${REL_IMPAIR_PP_ITERS:-100}
BW_ITERS=${REL_IMPAIR_BW_ITERS:-300}
LAT_ITERS=${REL_IMPAIR_LAT_ITERS:-100}
DUP=0.01 REORDER=0.01 DELAY_US=200
# Both ends busy-poll: on one CPU they would take turns a scheduler tick
# (4 ms) at a time, which no RTO of a few hundred microseconds survives;
# with two or more CPUs each end gets its own.
PIN_A=() PIN_B=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
fi
# More reliability options for every sr/ec run (e.g. --rto-min-us 20000); none by default
read -r -a EXTRA <<<"${REL_IMPAIR_OPTS:-}"
TOOL_TIMEOUT=10             # the tools' --timeout: no progress for this long fails a run
BUDGET_S=${REL_IMPAIR_BUDGET_S:-330} # no case starts after this (meson's timeout is 420 s)
START=$SECONDS

# ---- the routed topology, as tests/netns/impair.sh and scripts/demo.sh build it
netns_routed 10.94
netns_veth "$NM" r0 "$NM" r1 --mtu 1500
MAC_A=$(netns_mac "$NA" a0) MAC_B=$(netns_mac "$NB" b0)

# ---- duplication and reordering: tc in M
# pick P: classic BPF (tc's "bytecode"), on the frame from its Ethernet header:
# IPv4 (ldh [12]), UDP (ldb [23]), destination port 4791 (ldh [36], no IP
# options: uroce sends none), then ld rand (SKF_AD_OFF + SKF_AD_RANDOM) below
# P * 2^32: match (-1), else 0.
pick() {
	local thr
	thr=$(python3 -c "import sys; print(int(float(sys.argv[1]) * 2**32))" "$1") || return 1
	echo "10,40 0 0 12,21 0 7 2048,48 0 0 23,21 0 5 17,40 0 0 36,21 0 3 4791,32 0 0 4294963256,53 1 0 $thr,6 0 0 4294967295,6 0 0 0"
}
m_tc() { ip netns exec "$NM" tc "$@"; }
for dev in m0 m1; do
	m_tc qdisc add dev $dev clsact || fail "tc: no clsact qdisc on $dev"
	m_tc filter add dev $dev ingress prio 1 bpf bytecode "$(pick $DUP)" action mirred ingress mirror dev $dev ||
		fail "tc: cannot add the duplicating filter on $dev"
	m_tc filter add dev $dev egress prio 1 bpf bytecode "$(pick $REORDER)" action mirred egress redirect dev r0 ||
		fail "tc: cannot add the reordering filter on $dev"
done
# tc_pkts DEV DIR: packets the filter's mirred action handled so far
tc_pkts() {
	m_tc -s filter show dev "$1" "$2" | awk '/Sent [0-9]+ bytes [0-9]+ pkt/ { s += $4 } END { print s + 0 }'
}
tc_dups() { echo $(($(tc_pkts m0 ingress) + $(tc_pkts m1 ingress))); }
tc_reordered() { echo $(($(tc_pkts m0 egress) + $(tc_pkts m1 egress))); }

# The delay lane: frames from r1, out of the interface whose far end owns
# their destination MAC, DELAY_US later; bounded by the test's budget.
cat >"$TMP/lane.py" <<'EOF'
import collections, select, signal, socket, sys, time
inif, delay, limit, stats = sys.argv[1], float(sys.argv[2]) / 1e6, float(sys.argv[3]), sys.argv[4]
outs = {}
for spec in sys.argv[5:]:
    ifname, mac = spec.split("=")
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS: no tc (not picked twice)
    s.bind((ifname, 0))
    outs[bytes.fromhex(mac.replace(":", ""))] = s
r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
r.bind((inif, 0x0800))
r.setblocking(False)
q = collections.deque()
n = {"in": 0, "out": 0, "other": 0, "lost": 0}
def done(*_):
    with open(stats, "w") as f:
        f.write(" ".join("%s=%d" % kv for kv in n.items()) + " queued=%d\n" % len(q))
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
open(stats + ".ready", "w").close()
end = time.monotonic() + limit
while time.monotonic() < end:
    now = time.monotonic()
    while q and q[0][0] <= now:
        f = q.popleft()[1]
        try:
            outs[f[:6]].send(f)
            n["out"] += 1
        except OSError:
            n["lost"] += 1
    rl, _, _ = select.select([r], [], [], max(q[0][0] - now, 0) if q else 0.1)
    for _ in range(256 if rl else 0):
        try:
            f, addr = r.recvfrom(4096)
        except BlockingIOError:
            break
        if f[:6] in outs:
            q.append((time.monotonic() + delay, f))
            n["in"] += 1
        else:
            n["other"] += 1
done()
EOF
netns_start "$NM" "$TMP/lane.log" python3 "$TMP/lane.py" r1 $DELAY_US $((BUDGET_S + 120)) "$TMP/lane.stats" \
	m1=$MAC_B m0=$MAC_A
LANE=$NETNS_PID
netns_wait_file "$TMP/lane.stats.ready" "$LANE" 10 || fail "the delay lane did not start"

# ---- one run of a tool pair: server in B, client in A
# pair TAG PORT TOOL ARGS...: 0 when both ends exit 0; logs in TMP/TAG.{c,s}.log
pair() {
	local tag=$1 port=$2 crc=0 src=0 spid
	shift 2
	netns_start "$NB" "$TMP/$tag.s.log" "${PIN_B[@]}" timeout 60 "$@" -d afxdp:b0 -p "$port" --counters
	spid=$NETNS_PID
	netns_wait_tcp "$NB" "$port" "$spid" 10 ||
		{ netns_stop "$spid"; echo "server of $tag did not listen on $port" >>"$TMP/$tag.s.log"; return 1; }
	ip netns exec "$NA" "${PIN_A[@]}" timeout 60 "$@" -d afxdp:a0 -p "$port" --counters $IPB >"$TMP/$tag.c.log" 2>&1 || crc=$?
	netns_wait "$spid" || src=$?
	[ $crc = 0 ] && [ $src = 0 ] && return 0
	echo "client exit $crc, server exit $src" >>"$TMP/$tag.s.log"
	return 1
}

# check_pp TAG: both ends did every iteration and found nothing wrong
check_pp() {
	local side
	for side in c s; do
		grep -q "^$PP_ITERS iters in" "$TMP/$1.$side.log" || return 1
		grep -q "invalid data\|receive completion with opcode" "$TMP/$1.$side.log" && return 1
	done
	return 0
}
# check_perf TAG SIZE ITERS: both ends print the result line of SIZE x ITERS
check_perf() {
	local side
	for side in c s; do
		grep -Eq "^ +$2 +$3 " "$TMP/$1.$side.log" || return 1
	done
	return 0
}

# counter FIELD FILE...: FIELD summed over the "uroce counters:" lines, or "-" when none has it
counter() {
	local key=$1
	shift
	awk -v k="$key" '/^uroce counters: / { for (i = 3; i <= NF; i++) { split($i, kv, "=");
		if (kv[1] == k) { s += kv[2]; f = 1 } } } END { if (f) print s + 0; else print "-" }' "$@"
}

ROWS=()
FAILED=()
printf -v HDR '%-16s %-6s %-6s %5s %6s %4s %5s %6s %5s %4s %5s %5s %5s %5s %6s %s' mode loss result secs \
	dropped dup reord retx tmo rack tlp rto spur ec_rec nacks "bad_pkts"
# run_case MODE LOSS SEED REL_ARGS...: the three tools through the impairment
run_case() {
	local mode=$1 loss=$2 seed=$3 t0=$SECONDS result=ok dup0 reo0 dev d tag logs
	shift 3
	if [ $((SECONDS - START)) -ge "$BUDGET_S" ]; then
		FAILED+=("$mode @ $loss: not run, the test's time budget of $BUDGET_S s was spent")
		ROWS+=("$(printf '%-16s %-6s %s' "$mode" "$loss" "NOT RUN (time budget)")")
		return
	fi
	[ "$mode" = rc ] || set -- "$@" "${EXTRA[@]}"
	for dev in m0 m1; do
		ip netns exec "$NM" "$IMPAIR" $dev --drop "$loss" --seed "$seed" >/dev/null ||
			fail "uroce-impair $dev --drop $loss"
	done
	dup0=$(tc_dups) reo0=$(tc_reordered)
	tag="${mode}_$loss"
	tag=${tag//[^A-Za-z0-9_.-]/_}
	if ! pair "$tag.pp" 18515 "$PP" rc -g 1 --chk -s 65536 -n $PP_ITERS --hop-limit 64 \
		--timeout $TOOL_TIMEOUT "$@" || ! check_pp "$tag.pp"; then
		result="FAIL(pingpong)"
	elif ! pair "$tag.bw" 18516 "$PERF" send_bw -x 1 -s 65536 -n $BW_ITERS \
		--timeout $TOOL_TIMEOUT "$@" || ! check_perf "$tag.bw" 65536 $BW_ITERS; then
		result="FAIL(send_bw)"
	elif ! pair "$tag.lat" 18516 "$PERF" write_lat -x 1 -s 16384 -n $LAT_ITERS \
		--timeout $TOOL_TIMEOUT "$@" || ! check_perf "$tag.lat" 16384 $LAT_ITERS; then
		result="FAIL(write_lat)"
	fi
	logs=("$TMP/$tag".*.log)
	grep -q "bad_icrc=" "${logs[@]}" && result="FAIL(bad ICRC)"
	for f in "${logs[@]}"; do # veth takes XDP natively: the tools must say so
		grep -q "^uroce port 1: XDP native" "$f" || result="FAIL(XDP mode not reported native)"
	done
	d=$(($(ip netns exec "$NM" "$IMPAIR" m0 --stats | sed -n 's/.* dropped=\([0-9]*\).*/\1/p') +
		$(ip netns exec "$NM" "$IMPAIR" m1 --stats | sed -n 's/.* dropped=\([0-9]*\).*/\1/p')))
	ROWS+=("$(printf '%-16s %-6s %-6s %5s %6s %4s %5s %6s %5s %4s %5s %5s %5s %5s %6s %s' "$mode" "$loss" \
		"${result%%(*}" $((SECONDS - t0)) "$d" $(($(tc_dups) - dup0)) $(($(tc_reordered) - reo0)) \
		"$(counter retransmits "${logs[@]}")" "$(counter timeouts "${logs[@]}")" \
		"$(counter rack_losses "${logs[@]}")" "$(counter tlp_probes "${logs[@]}")" \
		"$(counter rto_losses "${logs[@]}")" "$(counter spurious_retx "${logs[@]}")" \
		"$(counter ec_recovered "${logs[@]}")" "$(counter ec_nacks_rcvd "${logs[@]}")" \
		"$(awk '/^uroce counters: port / { for (i = 5; i <= NF; i++) if ($i !~ /^(rx_packets|tx_packets|drops)=/) {
			split($i, kv, "="); d[kv[1]] += kv[2] } } END { n = 0; for (r in d) { printf "%s%s=%d", n++ ? "," : "", r, d[r] }
			if (!n) printf "-" }' "${logs[@]}")")")
	echo "${ROWS[-1]}"
	if [ "$result" != ok ]; then
		FAILED+=("$mode @ $loss: $result")
		for f in "$TMP/$tag".*.log; do
			echo "--- $(basename "$f"): errors, then the counters"
			grep -E "failed|Failed|timed out|invalid|exit|did not|expected|no completion" "$f" | head -5
			grep "^uroce counters" "$f"
		done
	fi
}

echo "$DUP duplicated and $REORDER delayed by $DELAY_US us in both directions; each case: pingpong --chk" \
	"$PP_ITERS x 64 KiB, send_bw $BW_ITERS x 64 KiB, write_lat $LAT_ITERS x 16 KiB; ends on CPUs" \
	"${PIN_A[*]:-any} / ${PIN_B[*]:-any}; sr/ec options: ${EXTRA[*]:-the defaults}"
echo "$HDR"
seed=0
for loss in 0 0.0001 0.001 0.01; do
	run_case rc $loss $((++seed)) --reliability rc
	run_case sr $loss $((++seed)) --reliability sr
	run_case ec-rs-8+2 $loss $((++seed)) --reliability ec --ec rs --ec-k 8 --ec-m 2
	run_case ec-xor-8+2 $loss $((++seed)) --reliability ec --ec xor --ec-k 8 --ec-m 2
done
run_case sr-unordered 0.01 $((++seed)) --reliability sr --ordering unordered
run_case ec-rs-32+8 0.01 $((++seed)) --reliability ec --ec rs
run_case ec-xor-32+8 0.01 $((++seed)) --reliability ec --ec xor

netns_stop "$LANE" || true
lane=$(cat "$TMP/lane.stats" 2>/dev/null)
echo
echo "== rel_impair: $((SECONDS - START)) s; delay lane: ${lane:-no statistics}"
echo "   dropped: RoCEv2 packets uroce-impair dropped (both directions); dup / reord: packets the"
echo "   router duplicated / delayed by $DELAY_US us; retx .. nacks: the QP counters of both ends of the"
echo "   three runs summed (tmo = ACK timeouts (rc) / RTO expiries (sr, ec), rack/tlp/rto: sr's losses found by RACK, the"
echo "   tail probe and the RTO, spur: DSACK-confirmed spurious retransmissions, ec_rec: packets"
echo "   rebuilt from parity, nacks: ec NACKs received); bad_pkts: drops by reason at the uroce ports."
printf '%s\n' "$HDR" "${ROWS[@]}"
[ "$(tc_dups)" -gt 0 ] || fail "the router duplicated nothing: the tc filters are not in the path"
[ "$(tc_reordered)" -gt 0 ] || fail "the router delayed nothing: the tc filters are not in the path"
[[ $lane =~ out=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] || fail "the delay lane sent nothing on: '$lane'"
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "FAIL: ${#FAILED[@]} case(s):"
	printf '  %s\n' "${FAILED[@]}"
	exit 1
fi
echo "PASS"
