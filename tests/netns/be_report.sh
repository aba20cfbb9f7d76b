#!/bin/bash
# SPDX-License-Identifier: MIT
# The tools tell the truth in be, where a message may end before it is
# whole (its deadline, preemption). A and B through a router M:
#
#   A a0 10.95.1.2 -- m0  M  m1 -- b0 10.95.2.2 B
#
#   1. uroce-pingpong --reliability be --chk on the clean link passes (a be
#      receive's deadline starts once the exchange is over: it used to run
#      out during it), and a failure says which message ended and why;
#   2. uroce-perf write_bw be with a 1 us deadline (every WR ends before
#      its packets are out): the client fails, saying how many messages
#      ended partial and how many bytes were not sent; with
#      --allow-partial both ends succeed and the bandwidth printed is the
#      goodput: below the same run's posted rate by the bytes not sent;
#   3. uroce-perf send_bw be through 5% RoCEv2 loss (uroce-impair on
#      m0/m1): the server fails, counting the receives that ended before
#      their message was whole and the bytes not placed; with
#      --allow-partial it succeeds and says the same.
#   4. --allow-partial without be is refused, saying what it is for.
#
#   be_report.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF
set -u
. "$(dirname "$0")/../lib/netns.sh"
IMPAIR=${1:?usage: be_report.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF}
PP=${2:?usage: be_report.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF}
PERF=${3:?usage: be_report.sh UROCE_IMPAIR UROCE_PINGPONG UROCE_PERF}
netns_test uroce-bereport
NETNS_LOG_LINES=30

netns_routed 10.95

PORT=18900
# run TAG CLIENT_RC_WANT SERVER_RC_WANT TOOL ARGS...: one client/server
# pair; "0" wants success, "x" a failure (non-zero, not a timeout), "-" either
run() {
	local tag=$1 cwant=$2 swant=$3 crc=0 src=0 spid
	shift 3
	PORT=$((PORT + 1))
	netns_start "$NB" "$TMP/$tag.s.log" timeout 60 "$@" -d afxdp:b0 -p $PORT
	spid=$NETNS_PID
	netns_wait_tcp "$NB" $PORT "$spid" 10 || fail "$tag: the server did not listen"
	ip netns exec "$NA" timeout 60 "$@" -d afxdp:a0 -p $PORT $IPB >"$TMP/$tag.c.log" 2>&1 || crc=$?
	netns_wait "$spid" || src=$?
	echo "$tag: client exit $crc, server exit $src"
	echo "$crc $src" >"$TMP/$tag.rc"
	ok() { case $2 in 0) [ "$1" = 0 ] ;; x) [ "$1" != 0 ] && [ "$1" != 124 ] ;; *) [ "$1" != 124 ] ;; esac; }
	ok $crc "$cwant" && ok $src "$swant" ||
		{ cat "$TMP/$tag.c.log" "$TMP/$tag.s.log"; fail "$tag: wanted client $cwant, server $swant"; }
}
# the average bandwidth (MB/s) of a uroce-perf log's result line
bw_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { print v + 0 }' "$1"; }

# 1. pingpong be --chk on the clean link. A receive's deadline starts once
# the exchange is over (fe1c937's ran out during it: 2 runs in 3 failed
# here at the default 1 ms); with 1 ms a round trip on this 2-vCPU machine
# still sometimes takes longer (be's nature: said, and failed), and 20 ms
# once ran out while the whole suite and builds shared the machine, so the
# check runs with 100 ms deadlines.
run pp_be 0 0 "$PP" rc --reliability be --chk -g 1 -n 200 -s 4096 --timeout-us 100000

# 2. write_bw be, every WR ended by a 1 us deadline
BW=(write_bw -x 1 -s 65536 -n 200 --reliability be)
run wbw_part x - "$PERF" "${BW[@]}" --timeout-us 1
grep -q "ended before they were whole" "$TMP/wbw_part.c.log" ||
	{ cat "$TMP/wbw_part.c.log"; fail "write_bw be: the client did not say its messages ended partial"; }
grep -q "bytes not sent" "$TMP/wbw_part.c.log" || fail "write_bw be: no count of the bytes not sent"
run wbw_allow 0 0 "$PERF" "${BW[@]}" --timeout-us 1 --allow-partial
grep -q "ended before they were whole" "$TMP/wbw_allow.c.log" ||
	fail "write_bw be --allow-partial: the partial messages went unreported"
run wbw_whole 0 0 "$PERF" "${BW[@]}" --timeout-us 1000000
! grep -q "ended before" "$TMP/wbw_whole.c.log" || fail "write_bw be, 1 s deadline: partial messages reported"
part=$(bw_of "$TMP/wbw_allow.c.log") whole=$(bw_of "$TMP/wbw_whole.c.log")
echo "write_bw be: goodput with 1 us deadlines $part MB/s, every WR whole $whole MB/s"
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a < b else 1)" "$part" "$whole" ||
	fail "write_bw be: the goodput of WRs cut short ($part MB/s) is not below a whole run's ($whole MB/s)"

# 3. send_bw be through 5% loss
for m in m0 m1; do
	ip netns exec "$NM" "$IMPAIR" $m --drop 5% --seed 3 >/dev/null || fail "uroce-impair on $m"
done
SBW=(send_bw -x 1 -s 65536 -n 200 --reliability be --timeout-us 20000)
run sbw_part - x "$PERF" "${SBW[@]}"
grep -q "ended before they were whole" "$TMP/sbw_part.s.log" ||
	{ cat "$TMP/sbw_part.s.log"; fail "send_bw be: the server did not say its receives ended partial"; }
grep -q "bytes not placed" "$TMP/sbw_part.s.log" || fail "send_bw be: no count of the bytes not placed"
run sbw_allow 0 0 "$PERF" "${SBW[@]}" --allow-partial
grep -q "bytes not placed" "$TMP/sbw_allow.s.log" || fail "send_bw be --allow-partial: the loss went unreported"

# 4. --allow-partial without be
out=$("$PERF" write_bw --allow-partial -d afxdp:lo 2>&1); rc=$?
[ $rc = 2 ] && grep -q "is for --reliability be" <<<"$out" || fail "--allow-partial with rc: exit $rc ($out)"

echo "be_report: every tool told the truth"
exit 0
