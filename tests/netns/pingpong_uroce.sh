#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-pingpong against itself over a veth pair, afxdp ports on both ends,
# each end in its own network namespace; the TCP address exchange crosses the
# same veth through the kernel (the XDP program passes it). RC and UC at two
# sizes (one message spanning several 1024-byte packets), UD, with --chk; the
# mode also chosen through the uroce-X-pingpong names. Both ends must exit 0,
# print rdma-core's two result lines, and each must name the other's QPN.
# Bad arguments must get a clear message and exit status 2, a server nobody
# connects to must give up after --timeout. When DPDK is built (second
# argument 1), the server also runs on a DPDK port (net_af_packet vdev on the
# same veth, its own IP given with --ip, EAL args after --). No rate is
# asserted.
#   pingpong_uroce.sh UROCE_PINGPONG [HAVE_DPDK]
set -u
. "$(dirname "$0")/../lib/netns.sh"
PP=${1:?usage: pingpong_uroce.sh UROCE_PINGPONG [HAVE_DPDK]}
HAVE_DPDK=${2:-0}
netns_test uroce-pp

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.83.0.1/24 --ip-b 10.83.0.2/24

# Bad arguments: a message that says what is wrong and what is accepted, exit 2.
expect_usage_error() { netns_usage_error "$1" "$PP" "${@:2}"; } # EXPECTED_TEXT ARGS...
expect_usage_error "mode: rc, uc or ud" -d afxdp:va
expect_usage_error "mode: rc, uc or ud" xx -d afxdp:va
expect_usage_error "0..255" rc -d afxdp:va -g 256
expect_usage_error "accepted: 256, 512, 1024, 2048, 4096" rc -d afxdp:va -m 1000
expect_usage_error "not an option of ud_pingpong" ud -d afxdp:va -m 1024
expect_usage_error "on-demand paging is not supported" rc -d afxdp:va -o
expect_usage_error "timestamps are not supported" rc -d afxdp:va -t
expect_usage_error "device memory is not supported" rc -d afxdp:va -j
expect_usage_error "-d/--ib-dev is required" uc
expect_usage_error "not a number in 1..65535" rc -d afxdp:va -p 70000
expect_usage_error "not a number in 1..1073741824" rc -d afxdp:va -s 0
expect_usage_error "accepted: 1" rc -d afxdp:va -i 2
expect_usage_error "one server name at most" rc -d afxdp:va a b

# A port that cannot open: a message naming it, exit 1.
out=$(ip netns exec "$NA" "$PP" rc -d afxdp:nosuch0 2>&1)
[ $? = 1 ] && grep -q "nosuch0" <<<"$out" || fail "opening a missing interface: '$out'"

# A server that nobody connects to gives up after --timeout, exit 1.
out=$(ip netns exec "$NB" timeout 20 "$PP" rc -d afxdp:vb -g 1 -p 18600 --timeout 1 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "no client connected" <<<"$out" || fail "idle server: exit $rc, '$out'"

# The mode from the name it is run as.
for m in rc uc ud; do ln -s "$(readlink -f "$PP")" "$TMP/uroce-$m-pingpong"; done

qpn_of() { sed -n "s/^  $2 address: *LID 0x[0-9a-f]*, QPN \(0x[0-9a-f]*\),.*/\1/p" "$1"; }

# The server's port: afxdp on vb, or (SRV_DEV=dpdk) a DPDK port with its
# own address 10.83.0.3 on a net_af_packet vdev over vb; TCP stays on the
# kernel's 10.83.0.2 either way.
SRV_DEV=afxdp
srv_port_args() {
	if [ "$SRV_DEV" = dpdk ]; then
		echo "-d dpdk --ip 10.83.0.3"
	else
		echo "-d afxdp:vb"
	fi
}
srv_eal_args() {
	[ "$SRV_DEV" = dpdk ] && echo "-- --no-huge -m 512 --no-pci --vdev net_af_packet0,iface=vb"
}
# DPDK 22.11's af_xdp PMD leaks libxdp's UMEM handle (not ours, not used here
# either, but the same suppression as dpdk_afxdp.sh keeps LSan quiet).
printf 'leak:xsk_umem__create\n' >"$TMP/lsan.supp"

run_pair() { # NAME TCPPORT CMD ARGS... (CMD is the binary, mode word included if any)
	local name=$1 tport=$2 src=$TMP/$1-server.log cli=$TMP/$1-client.log rc
	shift 2
	# shellcheck disable=SC2046 # word splitting of the port arguments is wanted
	netns_start "$NB" "$src" timeout 60 env "LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$TMP/lsan.supp" \
		"$@" $(srv_port_args) -g 1 -p "$tport" --timeout 20 $(srv_eal_args)
	local spid=$NETNS_PID
	ip netns exec "$NA" timeout 60 "$@" -d afxdp:va -g 1 -p "$tport" --timeout 20 10.83.0.2 >"$cli" 2>&1
	rc=$?
	netns_wait $spid; local src_rc=$?
	[ $rc = 0 ] || fail "$name: client exited $rc"
	[ $src_rc = 0 ] || fail "$name: server exited $src_rc"
	for f in "$src" "$cli"; do
		grep -q "^100 iters in [0-9.]* seconds = [0-9.]* usec/iter$" "$f" || fail "$name: no iters line in $f"
		grep -q "^[0-9]* bytes in [0-9.]* seconds = [0-9.]* Mbit/sec$" "$f" || fail "$name: no bytes line in $f"
		grep -q "local address: .*GID ::ffff:10.83.0." "$f" || fail "$name: no IPv4-mapped GID in $f"
		grep -q "invalid data" "$f" && fail "$name: --chk found invalid data ($f)"
	done
	[ "$(qpn_of "$cli" remote)" = "$(qpn_of "$src" local)" ] || fail "$name: client's remote QPN is not the server's"
	[ "$(qpn_of "$src" remote)" = "$(qpn_of "$cli" local)" ] || fail "$name: server's remote QPN is not the client's"
	echo "ok: $name: $(grep usec/iter "$cli")"
}

port=18610
for size in 64 8192; do
	run_pair "rc-$size" $((port++)) "$PP" rc -m 1024 -s "$size" -n 100 -c
	run_pair "uc-$size" $((port++)) "$TMP/uroce-uc-pingpong" -m 1024 -s "$size" -n 100 -c
done
run_pair "rc-default-size" $((port++)) "$TMP/uroce-rc-pingpong" -n 100 -r 16
for size in 64 1024; do
	run_pair "ud-$size" $((port++)) "$PP" ud -s "$size" -n 100 -c
done
run_pair "ud-default-events" $((port++)) "$TMP/uroce-ud-pingpong" -n 100 -e
# -e: both ends sleep on a completion channel, an engine thread each
run_pair "rc-events" $((port++)) "$PP" rc -m 1024 -s 8192 -n 100 -c -e

# A client with nobody listening gives up after --timeout, exit 1.
tport=$((port++))
out=$(ip netns exec "$NA" timeout 20 "$PP" uc -d afxdp:va -g 1 -p $tport --timeout 1 10.83.0.2 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "Couldn't connect to 10.83.0.2" <<<"$out" || fail "client without server: exit $rc, '$out'"

# A peer that stops answering: the server does 50 exchanges, the client
# wants 100; the client must stop after --timeout with exit 1 and say how
# far it got, the server exits 0.
tport=$((port++))
netns_start "$NB" "$TMP/stall-server.log" timeout 60 "$PP" ud -d afxdp:vb -g 1 -p $tport -n 50 --timeout 20
spid=$NETNS_PID
out=$(ip netns exec "$NA" timeout 60 "$PP" ud -d afxdp:va -g 1 -p $tport -n 100 --timeout 2 10.83.0.2 2>&1)
rc=$?
netns_wait $spid; src_rc=$?
[ $rc = 1 ] && grep -q "timed out: no completion for 2 s" <<<"$out" &&
	grep -q "received 50/100" <<<"$out" || fail "stalled peer: client exit $rc, '$out'"
grep -q "^50 iters in" "$TMP/stall-server.log" && [ $src_rc = 0 ] || fail "stalled peer: server exit $src_rc"
echo "ok: a stalled peer and a missing server end in --timeout"
if [ "$HAVE_DPDK" = 1 ]; then
	SRV_DEV=dpdk
	run_pair "dpdk-rc-8192" $((port++)) "$PP" rc -m 1024 -s 8192 -n 100 -c
	grep -q "local address: .*GID ::ffff:10.83.0.3$" "$TMP/dpdk-rc-8192-server.log" ||
		fail "dpdk: the server's GID is not its --ip"
	run_pair "dpdk-ud-512" $((port++)) "$PP" ud -s 512 -n 100 -c
	SRV_DEV=afxdp
fi
echo "PASS: rc, uc, ud between two uroce-pingpong ends"
