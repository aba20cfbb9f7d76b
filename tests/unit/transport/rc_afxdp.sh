#!/bin/bash
# RC over real AF_XDP sockets: two uroce contexts on afxdp ports at the two
# ends of a veth pair (MTU 4200) in namespaces this test creates; RDMA
# WRITE, READ and SEND of sizes 1 B .. 1 MB at path MTU 1024 and 4096 over
# IPv4, and at 4096 over IPv6 GIDs, every byte verified at both ends.
#   rc_afxdp.sh RC_AFXDP_PEER
set -u
PEER=${1:?usage: rc_afxdp.sh RC_AFXDP_PEER}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces, XDP)"
	exit 77
fi
NA=uroce-rcx-a-$$
NB=uroce-rcx-b-$$
TMP=$(mktemp -d)
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	for f in "$TMP"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done
	exit 1
}

ip netns add "$NA" || fail "cannot create namespace $NA"
ip netns add "$NB" || fail "cannot create namespace $NB"
ip link add va netns "$NA" type veth peer name vb netns "$NB" || fail "cannot create the veth pair"
ip -n "$NA" addr add 10.82.0.1/24 dev va
ip -n "$NB" addr add 10.82.0.2/24 dev vb
ip -n "$NA" addr add fd82::1/64 dev va nodad
ip -n "$NB" addr add fd82::2/64 dev vb nodad
ip -n "$NA" link set va mtu 4200 up
ip -n "$NB" link set vb mtu 4200 up
ip -n "$NA" link set lo up
ip -n "$NB" link set lo up

for run in 1024:1 4096:1 4096:2; do
	mtu=${run%:*}
	gid=${run#*:}
	d="$TMP/run-$mtu-$gid"
	mkdir -p "$d"
	ip netns exec "$NB" "$PEER" server vb "$d" $mtu $gid >"$TMP/server-$mtu.log" 2>&1 &
	S=$!
	PIDS+=("$S")
	ip netns exec "$NA" "$PEER" client va "$d" $mtu $gid >"$TMP/client-$mtu.log" 2>&1 &
	C=$!
	PIDS+=("$C")
	# both bound their own waits (30 s per step); this is the outer guard
	for _ in $(seq 1200); do
		kill -0 "$C" 2>/dev/null || kill -0 "$S" 2>/dev/null || break
		sleep 0.1
	done
	wait "$C"; rc_c=$?
	wait "$S"; rc_s=$?
	PIDS=()
	[ $rc_c = 0 ] || fail "client at MTU $mtu exited $rc_c"
	[ $rc_s = 0 ] || fail "server at MTU $mtu exited $rc_s"
	grep -q "1000000 bytes: write, read, send ok" "$TMP/client-$mtu.log" || fail "client at MTU $mtu did not finish"
	grep -q "1000000 bytes: write and send verified" "$TMP/server-$mtu.log" || fail "server at MTU $mtu did not verify"
	echo "MTU $mtu, GID index $gid:"; cat "$TMP/client-$mtu.log" "$TMP/server-$mtu.log" | grep -E "tx|1000000"
done
echo "PASS"
