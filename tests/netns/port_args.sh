#!/bin/bash
# SPDX-License-Identifier: MIT
# Bad port specs and arguments give clear errors (and the exit status the
# tool documents), and the neighbour lookup resolves on-link hosts and
# gateways and reports the unresolvable, on a veth pair in two namespaces.
#   port_args.sh ROCE_TRAFFIC
set -u
. "$(dirname "$0")/../lib/netns.sh"
TRAFFIC=${1:?usage: port_args.sh ROCE_TRAFFIC}
netns_test uroce-afxa
FAILS=0

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.82.0.1/24 --ip-b 10.82.0.2/24
# An off-link network reached through vb: the sender must use the gateway's MAC.
ip -n "$NA" route add 10.99.0.0/24 via 10.82.0.2
MACB=$(netns_mac "$NB" vb)

# expect STATUS PATTERN ARGS...: run the tool in namespace A and check the
# exit status and that stderr matches PATTERN (extended regex).
expect() {
	local want=$1 pat=$2
	shift 2
	timeout 30 ip netns exec "$NA" "$TRAFFIC" "$@" >"$TMP/out" 2>"$TMP/err"
	local got=$?
	if [ "$got" != "$want" ] || ! grep -Eq -- "$pat" "$TMP/err"; then
		echo "FAIL: roce_traffic $* -> status $got (want $want), stderr:"
		sed 's/^/    /' "$TMP/err"
		FAILS=$((FAILS + 1))
	else
		echo "ok: roce_traffic $* -> $(grep -Eo -- "$pat" "$TMP/err" | head -1)"
	fi
}

# Port specs and port options.
expect 1 "no interface 'nosuch0' in this network namespace" recv --port afxdp:nosuch0 --count 1
expect 1 "no interface name" recv --port afxdp: --count 1
expect 1 "unknown port spec 'bogus:1'; accepted: afxdp:IFACE" recv --port bogus:1 --count 1
expect 1 "queue 'x' is not a number 0-1023" recv --port afxdp:va:x --count 1
expect 1 "va has [0-9]+ queues? \(0-[0-9]+\); queue 1000 does not exist" recv --port afxdp:va:1000 --count 1
expect 1 "lo is not an Ethernet interface" recv --port afxdp:lo --count 1
# XDP runs in the driver (native) or, only when the spec asks, in the
# kernel's generic (skb) mode: a bridge device has no native XDP
ip -n "$NA" link add dum0 type bridge
ip -n "$NA" link set dum0 up
expect 1 "dum0: the driver \(bridge\) takes no XDP program in native mode \(.*\); generic \(skb\) XDP costs an skb per frame and runs only when asked: afxdp:dum0:0:generic" \
	recv --port afxdp:dum0 --count 1
expect 1 "option 'skb'; accepted: generic" recv --port afxdp:dum0:0:skb --count 1
expect 0 "port afxdp:dum0:0:generic open: .*copy mode, skb XDP" hold --port afxdp:dum0:0:generic --timeout-ms 300
expect 0 "port afxdp:va open: .*native XDP" hold --port afxdp:va --timeout-ms 300
# Zero-copy: tried quietly by default; asked for (zc), its refusal is said
# (veth has none) and the port runs in copy mode; copy skips the attempt.
expect 0 "port afxdp:va:0:zc: zero-copy refused by veth on va queue 0 \(.*\): copy mode" \
	hold --port afxdp:va:0:zc --timeout-ms 300
expect 0 "port afxdp:va:0:copy open: .*copy mode, native XDP" hold --port afxdp:va:0:copy --timeout-ms 300
if grep -q "zero-copy refused" "$TMP/err"; then
	echo "FAIL: afxdp:va:0:copy noted a zero-copy refusal"
	FAILS=$((FAILS + 1))
fi
expect 1 "option 'zerocopy'; accepted: generic .*, zc .*, copy" recv --port afxdp:va:0:zerocopy --count 1
# A queue the device has but does not use: the message names the ethtool
# command that brings it in.
ip -n "$NA" link add vq0 numtxqueues 4 numrxqueues 4 type veth peer name vq1 numtxqueues 4 numrxqueues 4
ip netns exec "$NA" ethtool -L vq0 rx 1 tx 1 2>/dev/null || echo "note: ethtool -L on veth failed"
ip -n "$NA" link set vq0 up
ip -n "$NA" link set vq1 up
expect 1 "vq0 uses 1 queue now \(0-0\) of the 4 it has: queue 2 needs more: ethtool -L vq0 rx 3" \
	recv --port afxdp:vq0:2 --count 1
expect 1 "vq0 has 4 queues \(0-3\); queue 5 does not exist" recv --port afxdp:vq0:5 --count 1
# verbs ports: the spec is checked before any device is looked for; this
# host has no RDMA device (the guests of verbs_rc.sh have rxe0)
expect 1 "no RDMA device name \(e.g. verbs:rxe0" recv --port verbs: --count 1
expect 1 "device port '0' is not a number 1-255" recv --port verbs:rxe0:0 --count 1
expect 1 "no RDMA device 'nosuch0'" recv --port verbs:nosuch0 --count 1
expect 1 "frame_size 3000: must be a power of two" recv --port afxdp:va --frame-size 3000 --count 1
expect 1 "nframes 10: must be from 64" recv --port afxdp:va --nframes 10 --count 1
# Tool arguments.
expect 2 "missing mode" 
expect 2 "unknown mode 'talk'" talk --port afxdp:va
expect 2 "--port is required" recv --count 1
expect 2 "--count 'abc': not a number" recv --port afxdp:va --count abc
expect 2 "--count '0': not a number in 1-" recv --port afxdp:va --count 0
expect 2 "send needs --dst-ip" send --port afxdp:va
expect 2 "--dst-ip '10.82.0': not an IPv4 address" send --port afxdp:va --dst-ip 10.82.0
expect 2 "--dst-mac 'zz:00:00:00:00:00': not a MAC address" send --port afxdp:va --dst-ip 10.82.0.2 --dst-mac zz:00:00:00:00:00
expect 2 "--l3 'v5': accepted: v4, v6, mix" send --port afxdp:va --dst-ip 10.82.0.2 --l3 v5
expect 2 "--min-payload 100 is larger than --max-payload 50" send --port afxdp:va --dst-ip 10.82.0.2 --min-payload 100 --max-payload 50
expect 2 "unexpected argument 'stray'" recv --port afxdp:va stray

# Neighbour resolution: on-link, through a gateway, and the failures.
expect 0 "dst $MACB" send --port afxdp:va --dst-ip 10.82.0.2 --count 1 --linger-ms 0
ip -n "$NA" neigh flush dev va
expect 0 "dst $MACB" send --port afxdp:va --dst-ip 10.99.0.7 --count 1 --linger-ms 0
expect 1 "cannot resolve the MAC of 10.82.0.99: (Connection timed out|No route to host)" send --port afxdp:va --dst-ip 10.82.0.99 --count 1
expect 1 "cannot resolve the MAC of 192.0.2.1: Network is unreachable" send --port afxdp:va --dst-ip 192.0.2.1 --count 1

# A queue another process holds: the port waits for it (a closing socket
# lets go within a second) and then says who has it.
rm -f "$TMP/ready"
netns_start "$NA" "$TMP/hold.log" timeout 30 "$TRAFFIC" hold --port afxdp:va --ready-file "$TMP/ready" \
	--timeout-ms 20000
H1=$NETNS_PID
netns_wait_file "$TMP/ready" $H1 5
expect 1 "va queue 0 is busy: another AF_XDP socket holds it" hold --port afxdp:va --timeout-ms 100
# ... and takes the queue over when its holder exits while it waits.
rm -f "$TMP/ready2"
netns_start "$NA" "$TMP/hold2.log" "$TRAFFIC" hold --port afxdp:va --ready-file "$TMP/ready2" --timeout-ms 500
H2=$NETNS_PID
sleep 0.5
netns_stop $H1 2>/dev/null
if netns_wait_file "$TMP/ready2" "" 3 && netns_wait $H2; then
	echo "ok: a waiting port takes the queue over once its holder exits"
else
	echo "FAIL: the waiting port did not open after the holder exited:"
	sed 's/^/    /' "$TMP/hold2.log"
	FAILS=$((FAILS + 1))
fi

if [ $FAILS = 0 ]; then
	echo PASS
	exit 0
fi
echo "FAIL: $FAILS check(s)"
exit 1
