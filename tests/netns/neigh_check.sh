#!/bin/bash
# SPDX-License-Identifier: MIT
# Neighbour and route resolution (dataplane/neigh.c) on a veth pair: IPv4
# and IPv6, on-link and through a gateway, with and without CAP_NET_ADMIN;
# see neigh_check.c.
#   neigh_check.sh NEIGH_CHECK
set -u
. "$(dirname "$0")/../lib/netns.sh"
BIN=${1:?usage: neigh_check.sh NEIGH_CHECK}
netns_test uroce-nbr "network namespaces"
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.83.0.1/24 --ip-a fd00::1/64 --ip-b 10.83.0.2/24 --ip-b fd00::2/64
ip -n "$NA" route add 10.99.0.0/24 via 10.83.0.2
ip -n "$NA" route add fd99::/64 via fd00::2
MACB=$(netns_mac "$NB" vb)
# Neighbour solicitations go out from the link-local address, which is
# usable only after its duplicate address detection (about a second).
netns_wait_ll "$NA" va
netns_wait_ll "$NB" vb
echo "== as root (the kernel is asked to resolve with RTM_NEWNEIGH/NTF_USE)"
timeout 60 ip netns exec "$NA" "$BIN" va "$MACB" || exit 1
# Without CAP_NET_ADMIN, RTM_NEWNEIGH is refused and a datagram to the
# discard port makes the kernel resolve instead.
echo "== without CAP_NET_ADMIN (resolution by datagram)"
ip -n "$NA" neigh flush all
ip -n "$NA" -6 neigh flush all
timeout 60 ip netns exec "$NA" setpriv --inh-caps=-net_admin --bounding-set=-net_admin "$BIN" va "$MACB" || exit 1
echo PASS
