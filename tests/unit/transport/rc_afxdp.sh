#!/bin/bash
# SPDX-License-Identifier: MIT
# RC over real AF_XDP sockets: two uroce contexts on afxdp ports at the two
# ends of a veth pair (MTU 4200) in namespaces this test creates; RDMA
# WRITE, READ and SEND of sizes 1 B .. 1 MB at path MTU 1024 and 4096 over
# IPv4, and at 4096 over IPv6 GIDs, every byte verified at both ends.
# Namespaces, processes and cleanup (by PID, also on INT/TERM) come from
# tests/lib/netns.sh.
#   rc_afxdp.sh RC_AFXDP_PEER
set -u
PEER=${1:?usage: rc_afxdp.sh RC_AFXDP_PEER}
. "$(dirname "$0")/../../lib/netns.sh"
netns_test uroce-rcx "network namespaces, XDP"

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.82.0.1/24 --ip-a fd82::1/64 --ip-b 10.82.0.2/24 --ip-b fd82::2/64 --mtu 4200

# Each peer bounds its own waits (30 s per step); GUARD is the outer bound
# of one run, after which whatever still runs is killed and the test fails.
GUARD=120
for run in 1024:1 4096:1 4096:2; do
	mtu=${run%:*}
	gid=${run#*:}
	d="$TMP/run-$mtu-$gid"
	mkdir -p "$d" || fail "cannot create $d"
	slog=$TMP/server-$mtu-$gid.log clog=$TMP/client-$mtu-$gid.log
	netns_start "$NB" "$slog" "$PEER" server vb "$d" "$mtu" "$gid"
	S=$NETNS_PID
	netns_start "$NA" "$clog" "$PEER" client va "$d" "$mtu" "$gid"
	C=$NETNS_PID
	for ((i = 0; i < GUARD * 10; i++)); do
		kill -0 "$C" 2>/dev/null || kill -0 "$S" 2>/dev/null || break
		sleep 0.1
	done
	late=
	kill -0 "$C" 2>/dev/null && late="client "
	kill -0 "$S" 2>/dev/null && late="${late}server "
	if [ -n "$late" ]; then
		netns_stop "$C"
		netns_stop "$S"
		fail "MTU $mtu, GID index $gid: ${late}still running after $GUARD s (killed)"
	fi
	rc_c=0 rc_s=0
	netns_wait "$C" || rc_c=$?
	netns_wait "$S" || rc_s=$?
	[ $rc_c = 0 ] || fail "client at MTU $mtu, GID index $gid exited $rc_c"
	[ $rc_s = 0 ] || fail "server at MTU $mtu, GID index $gid exited $rc_s"
	grep -q "1000000 bytes: write, read, send ok" "$clog" || fail "client at MTU $mtu, GID index $gid did not finish"
	grep -q "1000000 bytes: write and send verified" "$slog" ||
		fail "server at MTU $mtu, GID index $gid did not verify"
	echo "MTU $mtu, GID index $gid:"
	cat "$clog" "$slog" | grep -E "tx|1000000"
done
echo "PASS"
