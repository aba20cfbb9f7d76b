#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-fabric, the AF_XDP software switch, between three host namespaces:
#
#   A a0 10.96.1.2 -- f1 \               / f2 -- b0 10.96.2.2 B
#                          F uroce-fabric
#                        / f3 -- c0 10.96.3.2 C
#
# Every host routes 10.96.0.0/16 via its switch port's address, whose MAC
# is a permanent neighbour entry (no ARP needed). Checks: the argument
# errors; RoCEv2 delivery A -> B over IPv4, IPv6 and 802.1Q and C -> A
# (roce_traffic, every frame intact once) and an RC uroce-pingpong --chk
# through it (its TCP exchange through F's kernel), with the switch's JSON
# counters agreeing; a rate-limited
# port with ECN marking under kernel UDP to port 4791 sent ECT(0), ECT(1)
# and Not-ECT (queueing seen, CE on ECT only and exactly as many as the
# switch counted, every datagram delivered or counted as a tail drop); a
# rate-limited trimming port (every trimmed packet a valid RoCEv2 packet
# without payload at DSCP 63, as many as the switch counted); SIGTERM
# ends it with exit 0 and final counters. No rate is asserted.
#   fabric.sh UROCE_FABRIC ROCE_TRAFFIC UROCE_PINGPONG UROCE_PCAP
set -u
. "$(dirname "$0")/../lib/netns.sh"
USAGE="usage: fabric.sh UROCE_FABRIC ROCE_TRAFFIC UROCE_PINGPONG UROCE_PCAP"
FABRIC=${1:?$USAGE}
TRAFFIC=${2:?$USAGE}
PP=${3:?$USAGE}
PCAP=${4:?$USAGE}
netns_test uroce-fabric
NC=$P-c NF=$P-f

# ---- argument errors: exit 2 and a message saying what is accepted
expect_usage_error() { netns_usage_error "$1" "$FABRIC" "${@:2}"; } # EXPECTED_TEXT ARGS...
P0=x0,peer=02:00:00:00:00:01
expect_usage_error "no --port given" --route 10.0.0.0/8=0
expect_usage_error "no --route given" --port $P0
expect_usage_error "no peer MAC" --port x0 --route 10.0.0.0/8=0
expect_usage_error "accepted: bits per second" --port $P0,rate=fast --route 10.0.0.0/8=0
expect_usage_error "unknown key 'colour'" --port $P0,colour=red --route 10.0.0.0/8=0
expect_usage_error "port 1 does not exist" --port $P0 --route 10.0.0.0/8=0+1
expect_usage_error "the network address" --port $P0 --route 10.0.0.1/8=0
expect_usage_error "each interface once" --port $P0 --port $P0 --route 10.0.0.0/8=0
expect_usage_error "accepted: an integer 1..100000" --port $P0 --route 10.0.0.0/8=0 --idle-us 0
expect_usage_error "is below --idle-us" --port $P0 --route 10.0.0.0/8=0 --idle-us 100 --deep-idle-us 50
out=$("$FABRIC" --port $P0,rate=1g,ecn=8k --route 10.0.0.0/8=0 --check) && grep -q "the options are good" <<<"$out" ||
	fail "--check of good options: '$out'"
expect_usage_error "unexpected argument" --port $P0 --route 10.0.0.0/8=0 stray
expect_usage_error "accepted options" --port $P0 --route 10.0.0.0/8=0 --frobnicate
help=$("$FABRIC" --help) || fail "--help exited non-zero"
for opt in --port --route --seed --stats --max-sec --idle-us --deep-idle-us --ready-file --nframes --quiet --check \
	peer= mac= rate= \
	queue= prio= ecn= trim= dscp= delay=; do
	grep -q -- "$opt" <<<"$help" || fail "--help does not describe $opt"
done
out=$("$FABRIC" --port nosuch0,peer=02:00:00:00:00:01 --route 10.0.0.0/8=0 --max-sec 1 2>&1)
[ $? = 1 ] && grep -q "nosuch0" <<<"$out" || fail "a missing interface: '$out'"

# ---- the topology
netns_add "$NA" "$NB" "$NC" "$NF"
netns_veth "$NA" a0 "$NF" f1 --ip-a 10.96.1.2/24 --ip-b 10.96.1.1/24
netns_veth "$NB" b0 "$NF" f2 --ip-a 10.96.2.2/24 --ip-b 10.96.2.1/24
netns_veth "$NC" c0 "$NF" f3 --ip-a 10.96.3.2/24 --ip-b 10.96.3.1/24
MA=$(netns_mac "$NA" a0) MB=$(netns_mac "$NB" b0) MC=$(netns_mac "$NC" c0)
F1=$(netns_mac "$NF" f1) F2=$(netns_mac "$NF" f2) F3=$(netns_mac "$NF" f3)
for h in "$NA a0 1 $F1" "$NB b0 2 $F2" "$NC c0 3 $F3"; do
	set -- $h
	ip -n "$1" route add 10.96.0.0/16 via 10.96.$3.1 dev "$2" &&
		ip -n "$1" neigh replace 10.96.$3.1 lladdr "$4" dev "$2" nud permanent ||
		fail "cannot route $1 through the switch"
done
# roce_traffic's IPv6 frames carry fd75:726f:6365::<the IPv4 address>
v6of() { local IFS=.; set -- $1; printf 'fd75:726f:6365::%x:%x' $(($1 * 256 + $2)) $(($3 * 256 + $4)); }
ROUTES=(--route 10.96.1.0/24=0 --route 10.96.2.0/24=1 --route 10.96.3.0/24=2
	--route "$(v6of 10.96.1.2)=0" --route "$(v6of 10.96.2.2)=1" --route "$(v6of 10.96.3.2)=2")

# fabric_start NAME PORT2_OPTIONS: the switch, the port towards B configured
# with PORT2_OPTIONS (",rate=..." or empty); stats in $TMP/NAME.json
FPID=
fabric_start() {
	FNAME=$1
	netns_start "$NF" "$TMP/$1.log" timeout 200 "$FABRIC" --port f1,peer=$MA --port "f2,peer=$MB$2" \
		--port f3,peer=$MC "${ROUTES[@]}" --seed 5 --stats "$TMP/$1.json" --ready-file "$TMP/$1.ready" \
		--max-sec 180
	FPID=$NETNS_PID
	netns_wait_file "$TMP/$1.ready" "$FPID" 10 || fail "uroce-fabric ($1) did not open its ports"
}
# fabric_stop: SIGTERM; exit 0, the final line, the final counters
fabric_stop() {
	netns_stop "$FPID" || fail "uroce-fabric ($FNAME) exited $? on SIGTERM"
	grep -q "^uroce-fabric: rx=[0-9]* tx=[0-9]* dropped=" "$TMP/$FNAME.log" || fail "no final line from $FNAME"
	[ -f "$TMP/$FNAME.json" ] && [ ! -e "$TMP/$FNAME.json.tmp" ] || fail "no final stats from $FNAME"
}
# j NAME EXPR: a value of the switch's last JSON (python expression over d)
j() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$TMP/$1.json" "$2"; }

# ---- delivery: roce_traffic A -> B (IPv4, IPv6, 802.1Q) and C -> A (IPv4)
traffic() { # TAG SRC_NS SRC_IF DST_NS DST_IF DST_IP SWITCH_MAC L3
	netns_start "$4" "$TMP/$1-recv.log" "$TRAFFIC" recv --port afxdp:$5 --count 2000 --window 64 \
		--timeout-ms 60000 --ready-file "$TMP/$1.rready"
	local rpid=$NETNS_PID
	netns_wait_file "$TMP/$1.rready" "$rpid" 10 || fail "$1: receiver did not start"
	ip netns exec "$2" "$TRAFFIC" send --port afxdp:$3 --count 2000 --window 64 --dst-ip "$6" --dst-mac "$7" \
		--l3 "$8" --seed 3 --timeout-ms 60000 >"$TMP/$1-send.log" 2>&1 || fail "$1: sender failed"
	netns_wait "$rpid" || fail "$1: receiver failed: $(tail -1 "$TMP/$1-recv.log")"
	grep -q "recv: OK intact=2000/2000" "$TMP/$1-recv.log" || fail "$1: $(tail -1 "$TMP/$1-recv.log")"
	echo "ok: $1: $(grep -o 'intact=[^ ]* lost=[^ ]* dup=[^ ]* corrupt=[^ ]*' "$TMP/$1-recv.log")"
}
fabric_start plain ""
traffic a-to-b "$NA" a0 "$NB" b0 10.96.2.2 "$F1" mix
traffic c-to-a "$NC" c0 "$NA" a0 10.96.1.2 "$F3" v4

# ---- RC through the switch: every message checked. The switch takes only UDP
# 4791 (its ports' XDP program passes the rest to F's kernel), so the TCP
# exchange of the pingpong goes through F's kernel, forwarding for this part
ip netns exec "$NF" sysctl -qw net.ipv4.ip_forward=1 || fail "cannot enable forwarding in $NF"
netns_start "$NB" "$TMP/pp_server.log" timeout 60 "$PP" rc -d afxdp:b0 -g 1 --chk -s 16384 -n 200 --timeout 30
SPID=$NETNS_PID
netns_wait_tcp "$NB" 18515 "$SPID" 10 || fail "pingpong server did not listen"
ip netns exec "$NA" timeout 60 "$PP" rc -d afxdp:a0 -g 1 --chk -s 16384 -n 200 --timeout 30 10.96.2.2 \
	>"$TMP/pp_client.log" 2>&1 || fail "pingpong client failed"
netns_wait "$SPID" || fail "pingpong server failed"
for side in client server; do
	grep -q "^200 iters in" "$TMP/pp_$side.log" || fail "pingpong $side did not complete 200 iterations"
	grep -q "invalid data" "$TMP/pp_$side.log" && fail "pingpong $side found invalid data"
done
echo "ok: pingpong rc --chk through the switch: $(grep usec/iter "$TMP/pp_client.log")"
ip netns exec "$NF" sysctl -qw net.ipv4.ip_forward=0 || fail "cannot disable forwarding in $NF"
fabric_stop
# A -> B went out of port 1, B -> A (credits, RC responses) out of port 0,
# C -> A entered port 2; the switch dropped nothing
[ "$(j plain 'd["drops_total"]')" = 0 ] || fail "the clean switch dropped frames: $(j plain 'd["drops"]')"
[ "$(j plain 'd["ports"][1]["tx_frames"]')" -ge 2200 ] && [ "$(j plain 'd["ports"][2]["rx_frames"]')" -ge 2000 ] &&
	[ "$(j plain 'd["ports"][0]["tx_frames"]')" -ge 2200 ] ||
	fail "port counters do not show the traffic: $(cat "$TMP/plain.json")"
[ "$(j plain 'd["rx_frames"]')" = "$(j plain 'd["tx_frames"]')" ] || fail "clean switch: rx != tx"
echo "ok: clean switch: $(j plain 'd["rx_frames"]') frames in, all out, drops 0"

# ---- ECN: port 1 at 20 Mbit/s, 64 KiB queue, CE from 8 KiB on; kernel UDP from
# A with ECT(0), Not-ECT and ECT(1) in turn; B's kernel receives
fabric_start ecn ",rate=20m,queue=64k,ecn=8k"
netns_start "$NB" "$TMP/ecn-recv.log" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE: no loss at this socket
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind(("0.0.0.0", 4791))
open(sys.argv[1], "w").close()
s.settimeout(10)
n, pairs = 0, {}
try:
    while True:
        d, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(1))
        tos = [c[2][0] for c in anc if c[0] == socket.IPPROTO_IP and c[1] == socket.IP_TOS][0]
        n += 1
        k = (d[0] & 3, tos & 3)
        pairs[k] = pairs.get(k, 0) + 1
        s.settimeout(2)
except socket.timeout:
    pass
print("received", n)
for (sent, got), c in sorted(pairs.items()):
    print("pair", sent, got, c)
' "$TMP/ecn.rready"
RPID=$NETNS_PID
netns_wait_file "$TMP/ecn.rready" "$RPID" 10 || fail "ECN receiver did not start"
# (UDP checksum 0, SO_NO_CHECK: veth leaves a checksum to offload, which the
# AF_XDP copy through the switch would carry on unfinished; about twice
# what the port drains, so the queue stays full)
ip netns exec "$NA" python3 -c '
import socket, time
socks = []
for tos in (2, 0, 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.setsockopt(socket.SOL_SOCKET, 11, 1)  # SO_NO_CHECK
    socks.append((tos, s))
for i in range(3000):
    tos, s = socks[i % 3]
    s.sendto(bytes([tos]) + i.to_bytes(4, "big") + bytes(995), ("10.96.2.2", 4791))
    if i % 10 == 9:
        time.sleep(0.002)
' || fail "ECN sender failed"
netns_wait "$RPID" || fail "ECN receiver failed"
fabric_stop
cat "$TMP/ecn-recv.log"
got=$(sed -n 's/^received //p' "$TMP/ecn-recv.log")
pair() { local v; v=$(sed -n "s/^pair $1 $2 //p" "$TMP/ecn-recv.log"); echo "${v:-0}"; }
ce=$(($(pair 2 3) + $(pair 1 3)))
marked=$(j ecn 'd["ports"][1]["data"]["ecn_marked"]')
tail=$(j ecn 'd["ports"][1]["data"]["tail_drops"]')
sent=$(j ecn 'd["ports"][1]["tx_frames"]')
maxd=$(j ecn 'd["ports"][1]["data"]["max_depth_bytes"]')
echo "ECN: $got of 3000 received, $ce CE (switch: marked $marked, tail drops $tail, sent $sent, max depth $maxd)"
[ "$(pair 0 3)" = 0 ] && [ "$(pair 0 1)" = 0 ] && [ "$(pair 0 2)" = 0 ] || fail "a Not-ECT datagram arrived marked"
[ "$ce" -gt 0 ] && [ "$ce" = "$marked" ] || fail "CE received $ce, the switch marked $marked"
[ "$(pair 2 1)" = 0 ] && [ "$(pair 1 2)" = 0 ] || fail "an ECT codepoint changed into the other"
[ "$maxd" -ge 8192 ] && [ "$maxd" -le 65536 ] || fail "max queue depth $maxd: no queueing, or above the bound"
[ "$got" = "$sent" ] && [ $((sent + tail)) = 3000 ] || fail "received $got, sent $sent + tail drops $tail != 3000"
echo "ok: ECN: CE on ECT only, as many as the switch marked; the queue reached $maxd bytes"

# ---- trimming: port 1 at 20 Mbit/s, 16 KiB queue, trim=1; roce_traffic blasts
# 1000 frames of 1000 bytes at B, whose kernel side captures them
fabric_start trim ",rate=20m,queue=16k,trim=1"
netns_start "$NB" "$TMP/trim-cap.log" python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)
s.bind(("b0", 0))
pcap = open(sys.argv[1], "wb")
pcap.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
tos = open(sys.argv[1] + ".tos", "w")
open(sys.argv[2], "w").close()
s.settimeout(10)
try:
    while True:
        d, addr = s.recvfrom(65535)
        if addr[2] == socket.PACKET_OUTGOING or len(d) < 42 or d[23] != 17 or d[36:38] != b"\x12\xb7":
            continue
        pcap.write(struct.pack("<IIII", 0, 0, len(d), len(d)) + d)
        tos.write("%d\n" % d[15])
        s.settimeout(2)
except socket.timeout:
    pass
' "$TMP/trim.pcap" "$TMP/trim.cready"
CPID=$NETNS_PID
netns_wait_file "$TMP/trim.cready" "$CPID" 10 || fail "capture did not start"
ip netns exec "$NA" "$TRAFFIC" send --port afxdp:a0 --count 1000 --dst-ip 10.96.2.2 --dst-mac "$F1" \
	--min-payload 1000 --max-payload 1000 --timeout-ms 30000 >"$TMP/trim-send.log" 2>&1 || fail "trim sender failed"
netns_wait "$CPID" || fail "capture failed"
fabric_stop
"$PCAP" --json "$TMP/trim.pcap" >"$TMP/trim-pcap.json" 2>"$TMP/trim-pcap.log" ||
	fail "uroce-pcap: a captured packet is malformed or has a bad ICRC: $(grep -v '"icrc":"ok"' "$TMP/trim-pcap.json" | head -3)"
python3 - "$TMP/trim-pcap.json" "$TMP/trim.pcap.tos" >"$TMP/trim-check.log" <<'EOF' || fail "trimmed packets: $(cat "$TMP/trim-check.log")"
import json, sys
pkts = [json.loads(l) for l in open(sys.argv[1])]
tos = [int(l) for l in open(sys.argv[2])]
assert len(pkts) == len(tos), "%d decoded, %d captured" % (len(pkts), len(tos))
trimmed = [i for i, p in enumerate(pkts) if p["payload_len"] == 0]
whole = [i for i, p in enumerate(pkts) if p["payload_len"] == 1000]
assert len(trimmed) + len(whole) == len(pkts), "payloads other than 0 and 1000"
bad = [i for i in trimmed if tos[i] >> 2 != 63 or pkts[i]["pad"] != 0]
assert not bad, "trimmed without DSCP 63 or with pad: %s" % bad[:5]
bad = [i for i in whole if tos[i] >> 2 != 0]
assert not bad, "whole packets with another DSCP: %s" % bad[:5]
print(len(pkts), len(trimmed), len(whole))
EOF
read -r captured trimmed whole <"$TMP/trim-check.log"
t_sw=$(j trim 'd["ports"][1]["data"]["trimmed"] - d["ports"][1]["data"]["trim_drops"]')
t_sent=$(j trim 'd["ports"][1]["prio"]["sent"]')
w_sent=$(j trim 'd["ports"][1]["data"]["sent"]')
echo "trim: captured $captured ($trimmed trimmed, $whole whole); switch: trimmed $t_sw, sent $t_sent trimmed + $w_sent whole"
[ "$trimmed" -gt 0 ] && [ "$trimmed" = "$t_sw" ] && [ "$trimmed" = "$t_sent" ] ||
	fail "captured $trimmed trimmed packets, the switch trimmed $t_sw and sent $t_sent"
[ "$whole" = "$w_sent" ] || fail "captured $whole whole packets, the switch sent $w_sent"
[ $((trimmed + whole + $(j trim 'd["drops_total"]'))) = 1000 ] || fail "trimmed + whole + dropped != 1000"
echo "ok: trimming: $trimmed valid header-only packets at DSCP 63, $whole whole"
echo "PASS"
