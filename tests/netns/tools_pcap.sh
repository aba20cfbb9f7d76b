#!/bin/bash
# SPDX-License-Identifier: MIT
# --pcap FILE of uroce-pingpong and uroce-perf: every frame of the QPs' port,
# sent and received, in a pcap file (tcpdump on an AF_XDP port's interface
# sees none of them). A pingpong with --chk and a write_bw run, each end on
# an afxdp port in its own namespace, capture; uroce-pcap reads every file
# with no bad packet, each file holds RoCEv2 frames both ways (requests one
# way, ACKs the other), and each tool says how many frames it wrote. A file
# that cannot be created fails the tool with the reason. No rate is asserted.
#   tools_pcap.sh UROCE_PINGPONG UROCE_PERF UROCE_PCAP
set -u
. "$(dirname "$0")/../lib/netns.sh"
PP=${1:?usage: tools_pcap.sh UROCE_PINGPONG UROCE_PERF UROCE_PCAP}
PERF=${2:?}
PCAP=${3:?}
netns_test uroce-tpc
TCP=$((21000 + $$ % 9000))

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.84.0.1/24 --ip-b 10.84.0.2/24

# check_capture FILE LOG TOOL: the tool's line names FILE and its frames,
# uroce-pcap reads FILE clean, and the frames go both ways
check_capture() {
	local n
	n=$(sed -n "s|^$3: --pcap $1: \([0-9]*\) frames.*|\1|p" "$2")
	[ -n "$n" ] && [ "$n" -gt 0 ] || { cat "$2"; fail "$3 did not say how many frames $1 holds"; }
	"$PCAP" "$1" >"$1.txt" 2>&1 || { tail "$1.txt"; fail "uroce-pcap found bad packets in $1"; }
	grep -Eq "^uroce-pcap: $n frames: [1-9][0-9]* RoCEv2 \([1-9][0-9]* good, 0 bad ICRC, 0 malformed\)" "$1.txt" ||
		{ tail -3 "$1.txt"; fail "$1: the tool said $n frames, uroce-pcap counted otherwise"; }
	grep -q "ACKNOWLEDGE\|ACK " "$1.txt" || fail "$1 holds no ACK"
	grep -Eq "SEND|WRITE" "$1.txt" || fail "$1 holds no request"
}

netns_start "$NB" "$TMP/pp-srv.log" timeout 60 "$PP" rc -d afxdp:vb -g 1 -p $TCP -n 50 -s 4096 --chk \
	--pcap "$TMP/pp-srv.pcap"
srv=$NETNS_PID
netns_wait_tcp "$NB" $TCP $srv || fail "the pingpong server never listened"
ip netns exec "$NA" timeout 60 "$PP" rc -d afxdp:va -g 1 -p $TCP -n 50 -s 4096 --chk --pcap "$TMP/pp-cli.pcap" \
	10.84.0.2 >"$TMP/pp-cli.log" 2>&1 || { cat "$TMP/pp-cli.log"; fail "the pingpong client failed"; }
netns_wait $srv || fail "the pingpong server exited $?"
check_capture "$TMP/pp-srv.pcap" "$TMP/pp-srv.log" uroce-pingpong
check_capture "$TMP/pp-cli.pcap" "$TMP/pp-cli.log" uroce-pingpong
echo "ok: uroce-pingpong --pcap on both ends"

netns_start "$NB" "$TMP/bw-srv.log" timeout 60 "$PERF" write_bw -d afxdp:vb -x 1 -s 65536 -n 200 -p $TCP --timeout 20
srv=$NETNS_PID
netns_wait_tcp "$NB" $TCP $srv || fail "the write_bw server never listened"
ip netns exec "$NA" timeout 60 "$PERF" write_bw -d afxdp:va -x 1 -s 65536 -n 200 -p $TCP --timeout 20 \
	--pcap "$TMP/bw.pcap" 10.84.0.2 >"$TMP/bw-cli.log" 2>&1 || { cat "$TMP/bw-cli.log"; fail "write_bw failed"; }
netns_wait $srv || fail "the write_bw server exited $?"
check_capture "$TMP/bw.pcap" "$TMP/bw-cli.log" uroce-perf
echo "ok: uroce-perf write_bw --pcap"

out=$(ip netns exec "$NA" timeout 20 "$PERF" write_bw -d afxdp:va -x 1 --pcap /nonexistent-dir/x.pcap 10.84.0.2 2>&1)
rc=$?
[ $rc != 0 ] && grep -q -- "--pcap /nonexistent-dir/x.pcap: .*No such file" <<<"$out" ||
	fail "an unwritable --pcap: exit $rc, '$out'"
out=$(ip netns exec "$NA" timeout 20 "$PP" rc -d afxdp:va -g 1 --pcap /nonexistent-dir/x.pcap 10.84.0.2 2>&1)
rc=$?
[ $rc != 0 ] && grep -q -- "--pcap /nonexistent-dir/x.pcap: .*No such file" <<<"$out" ||
	fail "an unwritable --pcap (pingpong): exit $rc, '$out'"
echo "ok: an unwritable --pcap fails with the reason"
echo PASS
