#!/bin/bash
# SPDX-License-Identifier: MIT
# Late duplicates through a router, for every reliability mode: a fraction
# of the client's RoCEv2 packets reach the server a second time 50 to 200 ms
# after the first, long after their message completed and its buffer was
# reused. For each of rc, sr, ec and be, late_peer's client sends N messages
# (SENDs and WRITEs with immediate in turn, one at a time) from A to B
# through M; the server overwrites each message's buffer with a pattern as
# it completes, and once the router has sent its last late copy, checks
# that not a byte of any reused buffer changed and prints its drop counters
# by reason (duplicate, stale_msg, late).
#
#   A a0 10.95.1.2 -- m0  M  m1 -- b0 10.95.2.2 B      (M routes; r0-r1: M's delay lane)
#
# The impairment, all in M, on RoCEv2 (UDP 4791) from A to B only:
#   tc on m1 egress (after routing): a classic-BPF classifier picks DUP of
#   the packets at random (ld rand); mirred mirrors a copy to the veth r0,
#   the original goes on to B at once. A Python process reads the copies
#   from r1 and sends each out of m1 after a delay drawn uniformly from
#   DELAY_MIN_MS..DELAY_MAX_MS (PACKET_QDISC_BYPASS: not picked again).
#   (XDP, uroce-impair's hook, can drop but not clone or delay a packet;
#   tests/netns/rel_impair.sh's delay lane redirects, this one mirrors.)
#
# The test fails when a run fails or hangs (every wait is bounded), when a
# byte of a reused buffer changed, when a message arrived wrong or partial,
# or when the impairment did nothing: the lane sent no copy during a mode,
# or the server counted no late copy, or none after its last message.
#
#   late_dup.sh LATE_PEER
# Environment: LATE_DUP_MSGS (messages per mode, 300), LATE_DUP_FRACTION (0.2).
set -u
. "$(dirname "$0")/../lib/netns.sh"
PEER=${1:?usage: late_dup.sh LATE_PEER}
netns_need_cmd tc iproute2
netns_need_cmd python3
netns_test uroce-latedup
NETNS_LOG_LINES=30

NMSG=${LATE_DUP_MSGS:-300}
DUP=${LATE_DUP_FRACTION:-0.2}
DELAY_MIN_MS=50 DELAY_MAX_MS=200
PACE_US=1000          # between the client's messages
RUN_S=30              # the peers' --timeout-s: the bound of each of their waits
SETTLE_S=10           # the lane must be empty within this after the client ends
PIN_A=() PIN_B=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
fi

# ---- the routed topology (as rel_impair.sh)
netns_routed 10.95
netns_veth "$NM" r0 "$NM" r1 --mtu 1500
MAC_B=$(netns_mac "$NB" b0)

# ---- the duplicating filter: classic BPF on the frame from its Ethernet
# header: IPv4 (ldh [12]), UDP (ldb [23]), destination port 4791 (ldh [36],
# no IP options: uroce sends none), then ld rand below P * 2^32: match (-1)
pick() {
	local thr
	thr=$(python3 -c "import sys; print(int(float(sys.argv[1]) * 2**32))" "$1") || return 1
	echo "10,40 0 0 12,21 0 7 2048,48 0 0 23,21 0 5 17,40 0 0 36,21 0 3 4791,32 0 0 4294963256,53 1 0 $thr,6 0 0 4294967295,6 0 0 0"
}
m_tc() { ip netns exec "$NM" tc "$@"; }
m_tc qdisc add dev m1 clsact || fail "tc: no clsact qdisc on m1"
m_tc filter add dev m1 egress prio 1 bpf bytecode "$(pick "$DUP")" action mirred egress mirror dev r0 ||
	fail "tc: cannot add the duplicating filter on m1"
tc_mirrored() {
	m_tc -s filter show dev m1 egress | awk '/Sent [0-9]+ bytes [0-9]+ pkt/ { s += $4 } END { print s + 0 }'
}

# ---- the delay lane: frames from r1, out of m1 (they are already routed:
# B's MAC) DELAY_MIN_MS..DELAY_MAX_MS later, in order of their due time;
# its counters go to a file every 50 ms; bounded by LIMIT seconds
cat >"$TMP/lane.py" <<'EOF'
import heapq, random, select, signal, socket, sys, time
inif, outif, dmin, dmax, limit, stats = (sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1e3,
                                        float(sys.argv[4]) / 1e3, float(sys.argv[5]), sys.argv[6])
out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
out.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS: no tc (not picked twice)
out.bind((outif, 0))
r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
r.bind((inif, 0x0800))
r.setblocking(False)
q, seq = [], 0
n = {"in": 0, "out": 0, "lost": 0, "max_late_ms": 0}
def write():
    with open(stats + ".tmp", "w") as f:
        f.write(" ".join("%s=%d" % kv for kv in n.items()) + " queued=%d\n" % len(q))
    import os
    os.replace(stats + ".tmp", stats)
def done(*_):
    write()
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
write()
end = time.monotonic() + limit
next_write = 0
while time.monotonic() < end:
    now = time.monotonic()
    while q and q[0][0] <= now:
        due, _, f = heapq.heappop(q)
        try:
            out.send(f)
            n["out"] += 1
            n["max_late_ms"] = max(n["max_late_ms"], int((time.monotonic() - due) * 1000))
        except OSError:
            n["lost"] += 1
    if now >= next_write:
        write()
        next_write = now + 0.05
    rl, _, _ = select.select([r], [], [], min(max(q[0][0] - now, 0), 0.05) if q else 0.05)
    for _ in range(256 if rl else 0):
        try:
            f = r.recv(4096)
        except BlockingIOError:
            break
        seq += 1
        heapq.heappush(q, (time.monotonic() + random.uniform(dmin, dmax), seq, f))
        n["in"] += 1
done()
EOF
netns_start "$NM" "$TMP/lane.log" python3 "$TMP/lane.py" r1 m1 $DELAY_MIN_MS $DELAY_MAX_MS 250 "$TMP/lane.stats"
LANE=$NETNS_PID
netns_wait_file "$TMP/lane.stats" "$LANE" 10 || fail "the delay lane did not start"
# lane KEY: that counter of the lane now
lane() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" "$TMP/lane.stats"; }

# lane_settled: nothing queued and nothing new for 300 ms (a mirrored
# frame is read within a few ms), checked every 100 ms for SETTLE_S
lane_settled() {
	local i in0 in1 quiet=0
	in0=$(lane in)
	for ((i = 0; i < SETTLE_S * 10; i++)); do
		sleep 0.1
		in1=$(lane in)
		if [ "$(lane queued)" = 0 ] && [ "$in1" = "$in0" ]; then
			quiet=$((quiet + 1))
			[ $quiet -ge 3 ] && return 0
		else
			quiet=0
		fi
		in0=$in1
	done
	return 1
}

ROWS=()
FAILED=()
printf -v HDR '%-4s %-6s %5s %7s %7s %9s %9s %5s %6s  %s' mode result msgs copies late@B after dup stale late changed
# run_mode MODE: one client/server pair through the router
run_mode() {
	local mode=$1 port=$((18790 + ${#ROWS[@]})) spid crc=0 src=0 out0 out1 line result=ok
	local late='-' after='-' dup='-' stale='-' lt='-' changed='-'
	out0=$(lane out)
	rm -f "$TMP/settled.$mode"
	netns_start "$NB" "$TMP/$mode.s.log" "${PIN_B[@]}" timeout $((RUN_S * 2 + SETTLE_S + 10)) "$PEER" --role server \
		--port afxdp:b0 --rel "$mode" -n "$NMSG" --settled "$TMP/settled.$mode" --tcp-port $port --timeout-s $RUN_S
	spid=$NETNS_PID
	if ! netns_wait_tcp "$NB" $port "$spid" 20; then
		netns_stop "$spid" || true
		result="FAIL(server did not listen)"
	else
		ip netns exec "$NA" "${PIN_A[@]}" timeout $((RUN_S + 10)) "$PEER" --role client --port afxdp:a0 --rel "$mode" \
			-n "$NMSG" --server-ip $IPB --tcp-port $port --pace-us $PACE_US --timeout-s $RUN_S \
			>"$TMP/$mode.c.log" 2>&1 || crc=$?
		lane_settled || result="FAIL(the delay lane did not drain in $SETTLE_S s)"
		touch "$TMP/settled.$mode"
		netns_wait "$spid" || src=$?
		[ $crc = 0 ] || result="FAIL(client exit $crc)"
		[ $src = 0 ] || result="FAIL(server exit $src)"
	fi
	out1=$(lane out)
	line=$(grep "^late_peer: server $mode: " "$TMP/$mode.s.log" | tail -n 1)
	if [[ $line =~ ([0-9]+)\ bytes\ changed\;\ late\ copies:\ ([0-9]+)\ \(after\ the\ last\ message:\ ([0-9]+)\)\;\ drops:\ duplicate=([0-9]+)\ stale_msg=([0-9]+)\ late=([0-9]+) ]]; then
		changed=${BASH_REMATCH[1]} late=${BASH_REMATCH[2]} after=${BASH_REMATCH[3]}
		dup=${BASH_REMATCH[4]} stale=${BASH_REMATCH[5]} lt=${BASH_REMATCH[6]}
		[ "$changed" = 0 ] || result="FAIL($changed bytes of reused buffers changed)"
		if [ "$result" != ok ]; then
			:
		elif [ $((out1 - out0)) -le 0 ]; then
			result="FAIL(the delay lane sent no copy)"
		elif [ "$late" -le 0 ]; then
			result="FAIL(the server counted no late copy)"
		elif [ "$after" -le 0 ]; then
			result="FAIL(no late copy after the last message)"
		fi
	elif [ "$result" = ok ]; then
		result="FAIL(no result line from the server)"
	fi
	ROWS+=("$(printf '%-4s %-6s %5s %7s %7s %9s %9s %5s %6s  %s' "$mode" "${result%%(*}" "$NMSG" $((out1 - out0)) \
		"$late" "$after" "$dup" "$stale" "$lt" "$changed")")
	echo "${ROWS[-1]}"
	if [ "$result" != ok ]; then
		FAILED+=("$mode: $result")
		for f in "$TMP/$mode".*.log; do
			echo "--- $(basename "$f")"
			tail -n 8 "$f"
		done
	fi
}

echo "late_dup: $NMSG messages per mode (SEND and WRITE with immediate in turn, 1000..7999 bytes, MTU 1024)," \
	"$DUP of A->B RoCEv2 packets copied and sent again $DELAY_MIN_MS..$DELAY_MAX_MS ms later"
echo "$HDR"
for mode in rc sr ec be; do
	run_mode $mode
done
netns_stop "$LANE" || true
echo
echo "== late_dup: tc mirrored $(tc_mirrored) packets; lane: $(cat "$TMP/lane.stats" 2>/dev/null)"
echo "   copies: sent again by the lane during the mode; late@B: the server's drops a late copy is counted"
echo "   as (rc: duplicate; sr, ec: duplicate + stale_msg + late; be: late, its duplicates are mostly the"
echo "   copy of each message's last packet that be sends itself); after: those after the last message"
echo "   completed; dup, stale, late: the server's drop counters by reason; changed: bytes of reused buffers"
printf '%s\n' "$HDR" "${ROWS[@]}"
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "FAIL: ${#FAILED[@]} mode(s):"
	printf '  %s\n' "${FAILED[@]}"
	exit 1
fi
echo "PASS"
