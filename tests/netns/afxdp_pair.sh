#!/bin/bash
# SPDX-License-Identifier: MIT
# afxdp to afxdp over a veth pair between two network namespaces:
#  1. with the XDP program attached at both ends, the kernel's own traffic
#     (ARP, ICMP both ways, a TCP transfer, UDP to another port) still works
#     while UDP 4791 goes to the socket, and the program is gone once the
#     ports close;
#  2. 100 000 RoCEv2 frames of mixed sizes (16-4000 B payload, multi-buffer
#     at MTU 4200), opcodes, IPv4/IPv6 and 802.1Q tags arrive, none lost,
#     duplicated or corrupted;
#  3. the reverse direction at MTU 1500 (single-buffer frames) on the
#     configurable second UDP port.
#   afxdp_pair.sh ROCE_TRAFFIC TCP_ECHO
set -u
. "$(dirname "$0")/../lib/netns.sh"
TRAFFIC=${1:?usage: afxdp_pair.sh ROCE_TRAFFIC TCP_ECHO}
TCP=${2:?usage: afxdp_pair.sh ROCE_TRAFFIC TCP_ECHO}

IPA=10.81.0.1
IPB=10.81.0.2
COUNT=${AFXDP_PAIR_COUNT:-100000}
netns_test uroce-afxp

xdp_on() { ip -n "$1" link show dev "$2" | grep -q 'prog/xdp'; }

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24 --mtu 4200

echo "== kernel traffic next to the XDP program"
netns_start "$NA" "$TMP/hold-a.log" timeout 60 "$TRAFFIC" hold --port afxdp:va --ready-file "$TMP/ha" --timeout-ms 50000
HA=$NETNS_PID
netns_start "$NB" "$TMP/hold-b.log" timeout 60 "$TRAFFIC" hold --port afxdp:vb --ready-file "$TMP/hb" --timeout-ms 50000
HB=$NETNS_PID
netns_wait_file "$TMP/ha" $HA || fail "port afxdp:va did not open"
netns_wait_file "$TMP/hb" $HB || fail "port afxdp:vb did not open"
xdp_on "$NA" va || fail "no XDP program on va while its port is open"
xdp_on "$NB" vb || fail "no XDP program on vb while its port is open"

ip netns exec "$NA" ping -c 3 -i 0.2 -W 2 $IPB >"$TMP/ping.log" 2>&1 || fail "ping $IPA -> $IPB"
ip netns exec "$NB" ping -c 3 -i 0.2 -W 2 $IPA >>"$TMP/ping.log" 2>&1 || fail "ping $IPB -> $IPA"
# Full-size ICMP: a frame at the MTU still reaches the kernel.
ip netns exec "$NA" ping -c 2 -i 0.2 -W 2 -M do -s 4172 $IPB >>"$TMP/ping.log" 2>&1 || fail "MTU-sized ping"
echo "ok: ping both ways, also at the MTU"

netns_start "$NB" "$TMP/tcp-server.log" timeout 30 "$TCP" server 5201 --ready-file "$TMP/tcp" --timeout-ms 20000
TS=$NETNS_PID
netns_wait_file "$TMP/tcp" $TS || fail "TCP server did not start"
timeout 30 ip netns exec "$NA" "$TCP" client $IPB 5201 4194304 --timeout-ms 20000 >"$TMP/tcp-client.log" 2>&1 ||
	fail "TCP transfer across the pair"
netns_wait $TS || fail "TCP server"
echo "ok: $(cat "$TMP/tcp-client.log")"

# UDP: port 4791 goes to the socket, any other port to the kernel (which
# counts it under NoPorts, having no listener).
noports() { ip netns exec "$NB" awk '/^Udp:/ { if (h) print $3; h = 1 }' /proc/net/snmp; }
before=$(noports)
for _ in 1 2 3; do
	ip netns exec "$NA" bash -c "echo kernel > /dev/udp/$IPB/4792" || fail "UDP send to port 4792"
	ip netns exec "$NA" bash -c "echo roce > /dev/udp/$IPB/4791" || fail "UDP send to port 4791"
done
sleep 0.3
after=$(noports)
[ $((after - before)) = 3 ] || fail "UDP to port 4792 should reach vb's kernel 3 times, NoPorts went $before -> $after"

kill -TERM $HA $HB
netns_wait $HA || fail "hold on va exited with an error"
netns_wait $HB || fail "hold on vb exited with an error"
grep -q '^hold: frames=3$' "$TMP/hold-b.log" || fail "the port on vb should have taken the 3 datagrams to 4791: $(grep '^hold' "$TMP/hold-b.log")"
echo "ok: UDP 4791 to the socket, UDP 4792 to the kernel"
xdp_on "$NA" va && fail "XDP program still on va after its port closed"
xdp_on "$NB" vb && fail "XDP program still on vb after its port closed"
echo "ok: XDP programs detached on close"

# run_traffic NAME RECV_NS SEND_NS SEND_PORT RECV_PORT DST_IP COUNT ARGS...
run_traffic() {
	local name=$1 rns=$2 sns=$3 sport=$4 rport=$5 dst=$6 count=$7
	shift 7
	rm -f "$TMP/ready"
	netns_start "$rns" "$TMP/$name-recv.log" timeout 120 "$TRAFFIC" recv --port "$rport" --count "$count" \
		--ready-file "$TMP/ready" --idle-ms 5000 --timeout-ms 100000 "$@"
	local rp=$NETNS_PID
	netns_wait_file "$TMP/ready" $rp || fail "$name: receiver did not open its port"
	timeout 120 ip netns exec "$sns" "$TRAFFIC" send --port "$sport" --count "$count" --dst-ip "$dst" \
		--idle-ms 5000 --timeout-ms 100000 "$@" >"$TMP/$name-send.log" 2>&1 ||
		fail "$name: sender failed"
	netns_wait $rp || fail "$name: receiver reports loss or damage"
	grep '^send:' "$TMP/$name-send.log"
	grep '^recv:' "$TMP/$name-recv.log"
	grep -q "^recv: OK intact=$count/$count lost=0 dup=0 corrupt=0" "$TMP/$name-recv.log" ||
		fail "$name: summary does not show $count intact frames"
}

echo "== $COUNT frames va -> vb, MTU 4200 (multi-buffer), mixed sizes, opcodes, IPv4/IPv6, VLAN"
# The window keeps the sender within what the receiver's rings hold, so a
# receiver descheduled on a busy machine slows the sender instead of losing
# frames (AF_XDP has no flow control of its own).
run_traffic jumbo "$NB" "$NA" afxdp:va afxdp:vb $IPB "$COUNT" --window 1024 --l3 mix --seed 7
grep -q 'multi-buffer' "$TMP/jumbo-recv.log" || fail "jumbo: the receiver is not in multi-buffer mode"

echo "== 20000 frames vb -> va, MTU 1500, second UDP port 4792"
netns_mtu 1500 "$NA" va "$NB" vb
run_traffic extra "$NA" "$NB" afxdp:vb afxdp:va $IPA 20000 --window 1024 --l3 mix --seed 11 \
	--dport 4792 --extra-port 4792
grep -q 'multi-buffer' "$TMP/extra-recv.log" && fail "extra: MTU 1500 should not need multi-buffer"

ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null || fail "ping after the ports closed"
echo "PASS"
