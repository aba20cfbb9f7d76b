#!/bin/bash
# SPDX-License-Identifier: MIT
# A uroce context over two AF_XDP ports. Two namespaces joined by two veth
# pairs (va1-vb1 on 10.84.1.0/24, va2-vb2 on 10.84.2.0/24). The server
# opens both of its interfaces as one device (-d afxdp:vb1,afxdp:vb2) and
# puts its QP on port 1 or port 2 (-i); the client opens only the interface
# of that pair, so an exchange completes only if the server's QP sends from
# the port it was given. The veth counters must show the traffic on that
# pair and not on the other. uroce-pingpong rc/uc/ud with --chk, and
# uroce-perf write_bw and send_bw (UD, through an AH of port 2). Bad port
# numbers and a port named twice get a message and exit 2 / 1. When DPDK is
# built (third argument 1), the server's device is also a DPDK port
# (net_af_packet on vb1, its own address from --ip) next to an AF_XDP port
# (vb2), one context over both kinds. No rate is asserted.
#   multiport_afxdp.sh UROCE_PINGPONG UROCE_PERF [HAVE_DPDK]
set -u
. "$(dirname "$0")/../lib/netns.sh"
PP=${1:?usage: multiport_afxdp.sh UROCE_PINGPONG UROCE_PERF [HAVE_DPDK]}
PERF=${2:?usage: multiport_afxdp.sh UROCE_PINGPONG UROCE_PERF [HAVE_DPDK]}
HAVE_DPDK=${3:-0}
netns_test uroce-mp

netns_add "$NA" "$NB"
for i in 1 2; do
	netns_veth "$NA" va$i "$NB" vb$i --ip-a 10.84.$i.1/24 --ip-b 10.84.$i.2/24
done
for i in 1 2; do
	ip netns exec "$NA" ping -c 2 -i 0.2 -W 2 10.84.$i.2 >/dev/null 2>&1 || fail "no IP path across pair $i"
done

# Bad arguments: exit 2 with a message naming what is accepted.
expect_usage_error() { netns_usage_error "$@"; } # EXPECTED_TEXT CMD ARGS...
expect_usage_error "accepted: 1-2" "$PP" rc -d afxdp:vb1,afxdp:vb2 -i 3
expect_usage_error "accepted: 1-2" "$PERF" write_bw -d afxdp:vb1,afxdp:vb2 -i 3
expect_usage_error "names no port" "$PP" rc -d , -i 1
# A port named twice: the device cannot open, and says why.
out=$(ip netns exec "$NB" "$PP" rc -d afxdp:vb1,afxdp:vb1 -g 1 --timeout 1 2>&1)
[ $? = 1 ] && grep -q "opened once" <<<"$out" || fail "a port named twice: '$out'"

# packets the namespace's interface sent (veth counts AF_XDP's copy-mode TX)
txp() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_packets"; }

qpn_of() { sed -n "s/^  $2 address: *LID 0x[0-9a-f]*, QPN \(0x[0-9a-f]*\),.*/\1/p" "$1"; }

# pp NAME PORT ARGS...: server on both vb ports (SRV_D, SRV_IP, SRV_EAL) with
# its QP on PORT and the GID SRV_GID_PORT; client on vaPORT only.
SRV_D=afxdp:vb1,afxdp:vb2
SRV_IP=
SRV_EAL=
# DPDK 22.11's af_packet/af_xdp PMDs leave a small allocation behind at
# exit (not ours; dpdk_afxdp.sh suppresses the same)
printf 'leak:xsk_umem__create\n' >"$TMP/lsan.supp"
port=18700
pp() {
	local name=$1 p=$2 other src=$TMP/$1-server.log cli=$TMP/$1-client.log rc src_rc
	local tx_used tx_other spid tport=$((port++))
	shift 2
	other=$((3 - p))
	tx_used=$(txp "$NB" vb$p)
	tx_other=$(txp "$NB" vb$other)
	# shellcheck disable=SC2086 # SRV_IP and SRV_EAL are word lists
	netns_start "$NB" "$src" timeout 60 env "LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$TMP/lsan.supp" \
		"$PP" "$@" -d "$SRV_D" $SRV_IP -i "$p" -g 1 -p $tport --timeout 20 $SRV_EAL
	spid=$NETNS_PID
	ip netns exec "$NA" timeout 60 "$PP" "$@" -d afxdp:va$p -g 1 -p $tport --timeout 20 10.84.$p.2 >"$cli" 2>&1
	rc=$?
	netns_wait $spid; src_rc=$?
	[ $rc = 0 ] || fail "$name: client exited $rc"
	[ $src_rc = 0 ] || fail "$name: server exited $src_rc"
	for f in "$src" "$cli"; do
		grep -q "^200 iters in [0-9.]* seconds = [0-9.]* usec/iter$" "$f" || fail "$name: no iters line in $f"
		grep -q "invalid data" "$f" && fail "$name: --chk found invalid data ($f)"
	done
	grep -q "local address: .*GID ::ffff:10.84.$p.${SRV_GID_HOST[$p]}$" "$src" ||
		fail "$name: the server's GID is not port $p's"
	[ "$(qpn_of "$cli" remote)" = "$(qpn_of "$src" local)" ] || fail "$name: QPNs do not match"
	tx_used=$(($(txp "$NB" vb$p) - tx_used))
	tx_other=$(($(txp "$NB" vb$other) - tx_other))
	# 200 iterations are at least 200 frames; the other pair saw only what
	# the kernel sends by itself (IPv6 ND and the like, a handful)
	[ "$tx_used" -ge 200 ] || fail "$name: vb$p sent $tx_used frames, wanted >= 200"
	[ "$tx_other" -lt 20 ] || fail "$name: vb$other sent $tx_other frames while the QP was on port $p"
	echo "ok: $name: vb$p sent $tx_used frames, vb$other $tx_other; $(grep usec/iter "$cli")"
}

SRV_GID_HOST=(x 2 2)
pp rc-port2 2 rc -s 8192 -n 200 -c
pp rc-port1 1 rc -s 8192 -n 200 -c
pp uc-port2 2 uc -s 4096 -n 200 -c
pp ud-port2 2 ud -s 1024 -n 200 -c

# uroce-perf: write_bw (RC) and send_bw (UD, AH on port 2), server on port 2.
perf() { # NAME ARGS...
	local name=$1 tport=$((port++)) rc src_rc tx_used spid
	shift
	tx_used=$(txp "$NA" va2)
	netns_start "$NB" "$TMP/$name-server.log" timeout 60 "$PERF" "$@" -d afxdp:vb1,afxdp:vb2 -i 2 -x 1 -p $tport \
		--timeout 20
	spid=$NETNS_PID
	ip netns exec "$NA" timeout 60 "$PERF" "$@" -d afxdp:va2 -x 1 -p $tport --timeout 20 10.84.2.2 \
		>"$TMP/$name-client.log" 2>&1
	rc=$?
	netns_wait $spid; src_rc=$?
	[ $rc = 0 ] && [ $src_rc = 0 ] || fail "$name: client exited $rc, server $src_rc"
	grep -q "over uroce port afxdp:vb2" "$TMP/$name-server.log" || fail "$name: server not on port 2"
	grep -Eq "^ $3 +$5 +[0-9]" "$TMP/$name-client.log" || fail "$name: no result row"
	tx_used=$(($(txp "$NA" va2) - tx_used))
	echo "ok: $name: va2 sent $tx_used frames; $(grep -E "^ $3 +$5 " "$TMP/$name-client.log")"
	rm -f "$TMP/$name-"*.log
}
if [ "$HAVE_DPDK" = 1 ]; then
	# port 1 a DPDK port with its own address 10.84.1.3, port 2 AF_XDP
	SRV_D=dpdk,afxdp:vb2
	SRV_IP="--ip 10.84.1.3"
	SRV_EAL="-- --no-huge -m 512 --no-pci --vdev net_af_packet0,iface=vb1"
	SRV_GID_HOST=(x 3 2)
	pp dpdk-afxdp-rc-port1 1 rc -s 8192 -n 200 -c
	pp dpdk-afxdp-ud-port2 2 ud -s 1024 -n 200 -c
	SRV_D=afxdp:vb1,afxdp:vb2
	SRV_IP=
	SRV_EAL=
fi

perf write_bw write_bw -s 65536 -n 1000 -c RC
perf send_bw_ud send_bw -s 1024 -n 1000 -c UD

echo "multiport_afxdp: all passed"
