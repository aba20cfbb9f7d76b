#!/bin/bash
# SPDX-License-Identifier: MIT
# READ at every size and depth: uroce-perf read_bw -a (2 B to 8 MiB) at
# -o 1 and -o 16, and read_lat -a, between two namespaces over AF_XDP veth.
# Every size must complete on both ends. A requester asks for at most
# RC_READ_RESP_PKTS (2048) READ responses at once beyond its first READ,
# and a gap in the responses asks again from the first missing PSN, so an
# 8 MiB READ at depth 16 no longer floods its own receive ring (fe1c937,
# -s 8 MiB -n 200 -o 16: 6 ACK timeouts, 175 505 responses dropped as
# stale of 1.8 M; after: none timed out). A response past a gap does not
# count as progress, so it does not ask again (fe1c937 asked again on each:
# -a -o 16 resent millions). The counters of each run are printed; the test
# requires completion and at most half the responses resent.
#
#   read_sizes.sh UROCE_PERF
set -u
. "$(dirname "$0")/../lib/netns.sh"
PERF=${1:?usage: read_sizes.sh UROCE_PERF}
netns_test uroce-rdsz
IPB=10.96.0.2
NETNS_LOG_LINES=30

netns_add "$NA" "$NB"
netns_veth "$NA" a0 "$NB" b0 --ip-a 10.96.0.1/24 --ip-b $IPB/24 --mtu 1500
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null || fail "B is not reachable"

PORT=18980
# run TAG MODE ARGS...: one client/server pair; both must exit 0 and the
# client must print a result row for every size of -a (2 B .. 8 MiB: 23)
run() {
	local tag=$1 crc=0 src=0 spid rows
	shift
	PORT=$((PORT + 1))
	netns_start "$NB" "$TMP/$tag.s.log" timeout 120 "$PERF" "$@" -d afxdp:b0 -x 1 -p $PORT --counters
	spid=$NETNS_PID
	netns_wait_tcp "$NB" $PORT "$spid" 10 || fail "$tag: the server did not listen"
	ip netns exec "$NA" timeout 120 "$PERF" "$@" -d afxdp:a0 -x 1 -p $PORT --counters $IPB >"$TMP/$tag.c.log" 2>&1 ||
		crc=$?
	netns_wait "$spid" || src=$?
	rows=$(awk '$1 ~ /^[0-9]+$/ && $1 >= 2 && NF >= 4 { n++ } END { print n + 0 }' "$TMP/$tag.c.log")
	echo "$tag: client exit $crc, server exit $src, $rows sizes"
	grep -h "uroce counters" "$TMP/$tag.c.log" | sed 's/^/  /'
	[ $crc = 0 ] && [ $src = 0 ] && [ "$rows" = "${ROWS:-23}" ] ||
		{ cat "$TMP/$tag.c.log" "$TMP/$tag.s.log"; fail "$tag: wanted both ends 0 and ${ROWS:-23} sizes"; }
	# a lost or overflowed response costs what follows it, not a stream
	# restarted per stale response: at most half the responses resent
	# (fe1c937, -a -o 16: 1 827 137 and 3 616 534 resent for 331 k; here a
	# loaded run whose ring overflowed 82 times resent 370 520 of 1.9 M)
	retx=$(sed -n 's/.*counters: qp .* retransmits=\([0-9]*\).*/\1/p' "$TMP/$tag.c.log")
	rxp=$(sed -n 's/.*counters: qp .* rx_packets=\([0-9]*\).*/\1/p' "$TMP/$tag.c.log")
	[ -n "$retx" ] && [ -n "$rxp" ] && [ "$retx" -le $((rxp / 2)) ] ||
		fail "$tag: $retx of $rxp responses resent, wanted at most half"
}

run bw_o1 read_bw -a -n 20 -o 1
run bw_o16 read_bw -a -n 20 -o 16
run lat read_lat -a -n 20
# 200 READs of 8 MiB at depth 16, long enough for the ring to overflow
ROWS=1 run big read_bw -s 8388608 -n 200 -o 16
echo "read_sizes: every size completed at -o 1 and -o 16, and read_lat; at most half resent"
exit 0
