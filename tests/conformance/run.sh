#!/bin/bash
# SPDX-License-Identifier: MIT
# The conformance suite's entry: four namespaces (srv: conf_peer server on two
# AF_XDP ports; cli: the legitimate conf_peer client on an AF_XDP port; atk:
# the scapy attacker on the kernel stack; br: the bridge joining them), then
# conformance.py's cases, then cleanup by PID. Exit 0 only when every case
# passes and both uroce ends finish clean.
#   run.sh CONF_PEER CONFORMANCE_PY [--only SUBSTRING] [--wire-v1]
set -u
PEER=${1:?usage: run.sh CONF_PEER CONFORMANCE_PY [--only SUBSTRING] [--wire-v1]}
SCRIPT=${2:?usage: run.sh CONF_PEER CONFORMANCE_PY [--only SUBSTRING] [--wire-v1]}
shift 2
. "$(dirname "$0")/../lib/netns.sh"
netns_need_root
# Debian's scapy lives in /usr/bin/python3's path (a pyenv python3 on PATH has none)
PY=/usr/bin/python3
if ! "$PY" -c 'import scapy.contrib.roce' 2>/dev/null; then
	echo "SKIP: python3-scapy is not installed for $PY (scripts/install-deps.sh installs it)"
	exit 77
fi
netns_test h5conf
SRV=$P-srv CLI=$P-cli ATK=$P-atk BR=$P-br
NET=10.86.$(($$ % 200 + 20))
SRV_IP=$NET.1 CLI_IP=$NET.2 ATK_IP=$NET.3 SPOOF_IP=$NET.4 OTHER_IP=$NET.99
SRV_IP2=$NET.5 # a second address of the server's port: in its GID table, not the QPs' own
# The server's second port (the failover victim's backup member) on the
# same bridge, in a subnet of its own, and the attacker's second address
# in it: the backup member's peer.
NETB=10.87.$(($$ % 200 + 20))
SRV_B_IP=$NETB.1 ATK_IP2=$NETB.3
netns_add "$SRV" "$CLI" "$ATK" "$BR"
ip -n "$BR" link add br0 type bridge || netns_die "cannot create the bridge"
ip -n "$BR" link set br0 up
# Bridged IPv4 must not go through netfilter, which drops frames shorter than
# their IP length before the server could count them.
ip netns exec "$BR" sh -c 'for f in /proc/sys/net/bridge/bridge-nf-call-*; do [ -e "$f" ] && echo 0 >"$f"; done'
netns_veth "$SRV" h5s "$BR" h5s-b --ip-a "$SRV_IP/24" --ip-a "$SRV_IP2/24"
netns_veth "$SRV" h5s2 "$BR" h5s2-b --ip-a "$SRV_B_IP/24"
netns_veth "$CLI" h5c "$BR" h5c-b --ip-a "$CLI_IP/24"
netns_veth "$ATK" h5a "$BR" h5a-b --ip-a "$ATK_IP/24" --ip-a "$ATK_IP2/24"
for p in h5s-b h5s2-b h5c-b h5a-b; do ip -n "$BR" link set "$p" master br0 || netns_die "cannot bridge $p"; done
# Neighbours fixed up front, so no ARP races the first packets of a QP.
SRV_MAC=$(netns_mac "$SRV" h5s) SRV_MAC2=$(netns_mac "$SRV" h5s2)
CLI_MAC=$(netns_mac "$CLI" h5c) ATK_MAC=$(netns_mac "$ATK" h5a)
# The bridge knows both server ports from the start: a frame to a MAC it
# has not learnt yet is flooded, and the other server port would take it
# as its own (a port does not filter on the destination MAC).
ip netns exec "$BR" bridge fdb replace "$SRV_MAC" dev h5s-b master static &&
	ip netns exec "$BR" bridge fdb replace "$SRV_MAC2" dev h5s2-b master static ||
	netns_die "cannot pin the server's MACs in the bridge"
ip -n "$SRV" neigh replace "$ATK_IP2" lladdr "$ATK_MAC" dev h5s2 nud permanent
ip -n "$ATK" neigh replace "$SRV_B_IP" lladdr "$SRV_MAC2" dev h5a nud permanent
ip -n "$SRV" neigh replace "$CLI_IP" lladdr "$CLI_MAC" dev h5s nud permanent
ip -n "$SRV" neigh replace "$ATK_IP" lladdr "$ATK_MAC" dev h5s nud permanent
ip -n "$CLI" neigh replace "$SRV_IP" lladdr "$SRV_MAC" dev h5c nud permanent
ip -n "$ATK" neigh replace "$SRV_IP" lladdr "$SRV_MAC" dev h5a nud permanent
netns_wait_until 10 ip netns exec "$CLI" ping -c 1 -W 1 "$SRV_IP" >/dev/null ||
	netns_die "the bridge does not carry traffic between cli and srv"

CTL=$NETNS_TMP/ctl.sock
netns_start "$SRV" "$NETNS_TMP/server.log" timeout 290 "$PEER" --role server --port afxdp:h5s \
	--port2 afxdp:h5s2 --peer-ip "$ATK_IP" --peer-ip2 "$ATK_IP2" --ctl "$CTL" --ready "$NETNS_TMP/ready" --duration 280
srv=$NETNS_PID
netns_wait_tcp "$SRV" 18777 "$srv" 30 || netns_die "the server never listened"
netns_start "$CLI" "$NETNS_TMP/client.log" timeout 290 "$PEER" --role client --port afxdp:h5c \
	--server-ip "$SRV_IP" --duration 280
cli=$NETNS_PID
netns_wait_file "$NETNS_TMP/ready" "$srv" 30 || netns_die "the legit connection did not come up"

ip netns exec "$ATK" timeout 200 "$PY" "$SCRIPT" --iface h5a --my-mac "$ATK_MAC" --ctl "$CTL" \
	--my-ip "$ATK_IP" --my-ip2 "$ATK_IP2" --spoof-ip "$SPOOF_IP" --other-ip "$OTHER_IP" --srv-ip2 "$SRV_IP2" "$@"
rc=$?
# The client first, so it does not see the server go away mid-iteration.
netns_stop "$cli"; crc=$?
netns_stop "$srv"; src=$?
echo "--- server: $(tail -n 1 "$NETNS_TMP/server.log")"
echo "--- client: $(tail -n 1 "$NETNS_TMP/client.log")"
if [ $rc != 0 ] || [ $src != 0 ] || [ $crc != 0 ]; then
	NETNS_LOG_LINES=40 netns_die "conformance: cases exit $rc, server exit $src, client exit $crc"
fi
echo "conformance: all cases passed"
