#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-perf raw end to end, as the README's demo runs it: a sender and a
# receiver on afxdp ports at the two ends of a veth pair. The receiver must
# count good (ICRC-checked) frames and no malformed ones, its --pcap dump
# must decode cleanly with uroce-pcap, and bad arguments must get a clear
# message and exit status 2. No rate is asserted.
#   perf_raw.sh UROCE_PERF UROCE_PCAP
set -u
. "$(dirname "$0")/../lib/netns.sh"
PERF=${1:?usage: perf_raw.sh UROCE_PERF UROCE_PCAP}
PCAP=${2:?usage: perf_raw.sh UROCE_PERF UROCE_PCAP}
netns_test uroce-perf

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.82.0.1/24 --ip-b 10.82.0.2/24

# Bad arguments: a message that says what is accepted, exit status 2.
expect_usage_error() { netns_usage_error "$1" "$PERF" "${@:2}"; } # EXPECTED_TEXT ARGS...
expect_usage_error "accepted: afxdp:IFACE" raw send --port bogus --dst-ip 10.0.0.1 --size 64
expect_usage_error "not a number in 0..8192" raw send --port afxdp:va --dst-ip 10.0.0.1 --size 99999
expect_usage_error "needs --dst-ip" raw send --port afxdp:va --size 64
expect_usage_error "not an IPv4 address" raw send --port afxdp:va --dst-ip 10.0.0 --size 64
expect_usage_error "accepted: raw" bogus
expect_usage_error "--port is required" raw recv

# A port that cannot open: clear message, exit 1.
out=$(ip netns exec "$NA" "$PERF" raw recv --port afxdp:nosuch0 --duration 1 2>&1)
[ $? = 1 ] && grep -q "nosuch0" <<<"$out" || fail "opening a missing interface: '$out'"

# Traffic: the sender resolves the receiver's MAC through the kernel.
netns_start "$NB" "$TMP/recv.log" "$PERF" raw recv --port afxdp:vb --duration 30 --idle-ms 1000 \
	--pcap "$TMP/first.pcap" --pcap-count 8
RPID=$NETNS_PID
netns_wait_until 5 grep -q receiving "$TMP/recv.log" || fail "receiver did not start"
ip netns exec "$NA" "$PERF" raw send --port afxdp:va --dst-ip 10.82.0.2 --size 1024 --duration 1 \
	>"$TMP/send.log" 2>&1 || fail "sender failed"
netns_wait "$RPID"; rc=$?
[ $rc = 0 ] || fail "receiver exited $rc"
cat "$TMP/send.log" "$TMP/recv.log"
good=$(sed -n 's/.*: \([0-9]*\) good RoCEv2 frames.*/\1/p' "$TMP/recv.log")
[ -n "$good" ] && [ "$good" -gt 0 ] || fail "no good frames counted"
for bad in bad_icrc bad_pad bad_length short_frame unknown_opcode bad_ip_csum; do
	grep -q "$bad=" "$TMP/recv.log" && fail "receiver counted $bad drops"
done
"$PCAP" "$TMP/first.pcap" >"$TMP/pcap.log" 2>&1 || fail "uroce-pcap rejected the receiver's dump"
[ "$(grep -c 'RC_RDMA_WRITE_ONLY.*len=1024 icrc=ok' "$TMP/pcap.log")" = 8 ] || fail "dump does not hold 8 good 1024-byte WRITEs"
echo "PASS: $good good frames, dump decoded"
