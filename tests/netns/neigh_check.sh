#!/bin/bash
# Neighbour and route resolution (dataplane/neigh.c) on a veth pair: IPv4
# and IPv6, on-link and through a gateway, with and without CAP_NET_ADMIN;
# see neigh_check.c.
#   neigh_check.sh NEIGH_CHECK
set -u
BIN=${1:?usage: neigh_check.sh NEIGH_CHECK}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces)"
	exit 77
fi
NA=uroce-nbr-a-$$
NB=uroce-nbr-b-$$
cleanup() {
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
}
trap cleanup EXIT
ip netns add "$NA" && ip netns add "$NB" || { echo "FAIL: cannot create namespaces"; exit 1; }
ip link add va netns "$NA" type veth peer name vb netns "$NB" || { echo "FAIL: cannot create the veth pair"; exit 1; }
ip -n "$NA" addr add 10.83.0.1/24 dev va
ip -n "$NB" addr add 10.83.0.2/24 dev vb
ip -n "$NA" addr add fd00::1/64 dev va nodad
ip -n "$NB" addr add fd00::2/64 dev vb nodad
ip -n "$NA" link set va up
ip -n "$NB" link set vb up
ip -n "$NA" route add 10.99.0.0/24 via 10.83.0.2
ip -n "$NA" route add fd99::/64 via fd00::2
MACB=$(ip -n "$NB" link show vb | awk '/link\/ether/ { print $2 }')
# Neighbour solicitations go out from the link-local address, which is
# usable only after its duplicate address detection (about a second).
ll_ready() { ip -n "$1" -6 addr show dev "$2" scope link | grep inet6 | grep -qv tentative; }
for _ in $(seq 100); do
	ll_ready "$NA" va && ll_ready "$NB" vb && break
	sleep 0.05
done
echo "== as root (the kernel is asked to resolve with RTM_NEWNEIGH/NTF_USE)"
timeout 60 ip netns exec "$NA" "$BIN" va "$MACB" || exit 1
# Without CAP_NET_ADMIN, RTM_NEWNEIGH is refused and a datagram to the
# discard port makes the kernel resolve instead.
echo "== without CAP_NET_ADMIN (resolution by datagram)"
ip -n "$NA" neigh flush all
ip -n "$NA" -6 neigh flush all
timeout 60 ip netns exec "$NA" setpriv --inh-caps=-net_admin --bounding-set=-net_admin "$BIN" va "$MACB" || exit 1
echo PASS
