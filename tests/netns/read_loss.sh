#!/bin/bash
# SPDX-License-Identifier: MIT
# READs through a router that drops READ responses (uroce-impair, seeded):
# a lost response asks again from the first missing PSN, and a response
# that arrives past a gap asks nothing more. fe1c937 asked again for each
# such response, each request restarting the responder's stream from the
# gap. read_bw of 1 MiB at -o 16 must complete and resend at most half the
# responses; the counters are printed (0.02% lost, seed 7: fe1c937 sent
# 19 846 requests for 300 READs and resent 15.7 M responses, exit 1; now
# 369 requests, 40 882 of 335 k resent).
#
#   A a0 10.97.1.2 -- m0  M  m1 -- b0 10.97.2.2 B   (responses lost at m1)
#
#   read_loss.sh UROCE_IMPAIR UROCE_PERF
set -u
. "$(dirname "$0")/../lib/netns.sh"
IMPAIR=${1:?usage: read_loss.sh UROCE_IMPAIR UROCE_PERF}
PERF=${2:?usage: read_loss.sh UROCE_IMPAIR UROCE_PERF}
netns_test uroce-rdloss
NETNS_LOG_LINES=30

netns_routed 10.97
# m1's ingress carries B's READ responses (RoCEv2 only)
ip netns exec "$NM" "$IMPAIR" m1 --drop 0.0002 --seed 7 >/dev/null || fail "uroce-impair m1 --drop"

PORT=18990
netns_start "$NB" "$TMP/s.log" timeout 120 "$PERF" read_bw -s 1048576 -n 300 -o 16 -d afxdp:b0 -x 1 -p $PORT
spid=$NETNS_PID
netns_wait_tcp "$NB" $PORT "$spid" 10 || fail "the server did not listen"
crc=0 src=0
ip netns exec "$NA" timeout 120 "$PERF" read_bw -s 1048576 -n 300 -o 16 -d afxdp:a0 -x 1 -p $PORT --counters \
	$IPB >"$TMP/c.log" 2>&1 || crc=$?
netns_wait "$spid" || src=$?
dropped=$(ip netns exec "$NM" "$IMPAIR" m1 --stats | sed -n 's/.* dropped=\([0-9]*\).*/\1/p')
qp=$(grep -h "uroce counters: qp" "$TMP/c.log")
echo "client exit $crc, server exit $src, responses dropped at m1: ${dropped:-?}"
echo "  $qp"
retx=$(sed -n 's/.* retransmits=\([0-9]*\).*/\1/p' <<<"$qp")
rxp=$(sed -n 's/.* rx_packets=\([0-9]*\).*/\1/p' <<<"$qp")
[ $crc = 0 ] && [ $src = 0 ] || { cat "$TMP/c.log" "$TMP/s.log"; fail "wanted both ends to exit 0"; }
[ "${dropped:-0}" -gt 0 ] || fail "the router dropped nothing: the impairment is not in the path"
[ -n "$retx" ] && [ -n "$rxp" ] && [ "$retx" -le $((rxp / 2)) ] ||
	fail "$retx of $rxp responses resent, wanted at most half"
echo "read_loss: READs through ${dropped} lost responses completed, $retx of $rxp resent"
exit 0
