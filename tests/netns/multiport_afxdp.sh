#!/bin/bash
# A uroce context over two AF_XDP ports. Two namespaces joined by two veth
# pairs (va1-vb1 on 10.84.1.0/24, va2-vb2 on 10.84.2.0/24). The server
# opens both of its interfaces as one device (-d afxdp:vb1,afxdp:vb2) and
# puts its QP on port 1 or port 2 (-i); the client opens only the interface
# of that pair, so an exchange completes only if the server's QP sends from
# the port it was given. The veth counters must show the traffic on that
# pair and not on the other. uroce-pingpong rc/uc/ud with --chk, and
# uroce-perf write_bw and send_bw (UD, through an AH of port 2). Bad port
# numbers and a port named twice get a message and exit 2 / 1. No rate is
# asserted.
#   multiport_afxdp.sh UROCE_PINGPONG UROCE_PERF
set -u
PP=${1:?usage: multiport_afxdp.sh UROCE_PINGPONG UROCE_PERF}
PERF=${2:?usage: multiport_afxdp.sh UROCE_PINGPONG UROCE_PERF}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces, XDP)"
	exit 77
fi

NA=uroce-mp-a-$$
NB=uroce-mp-b-$$
TMP=$(mktemp -d)
SPID=
cleanup() {
	[ -n "$SPID" ] && { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$TMP"/*.log; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

ip netns add "$NA" && ip netns add "$NB" || fail "cannot create namespaces"
for i in 1 2; do
	ip link add va$i netns "$NA" type veth peer name vb$i netns "$NB" || fail "cannot create veth pair $i"
	ip -n "$NA" addr add 10.84.$i.1/24 dev va$i
	ip -n "$NB" addr add 10.84.$i.2/24 dev vb$i
	ip -n "$NA" link set va$i up
	ip -n "$NB" link set vb$i up
done
ip -n "$NA" link set lo up
ip -n "$NB" link set lo up
for i in 1 2; do
	ip netns exec "$NA" ping -c 2 -i 0.2 -W 2 10.84.$i.2 >/dev/null 2>&1 || fail "no IP path across pair $i"
done

# Bad arguments: exit 2 with a message naming what is accepted.
expect_usage_error() { # EXPECTED_TEXT CMD ARGS...
	local want=$1 out rc
	shift
	out=$("$@" 2>&1); rc=$?
	[ $rc = 2 ] || fail "$*: exit $rc, wanted 2 ($out)"
	grep -q -- "$want" <<<"$out" || fail "$*: message '$out' lacks '$want'"
}
expect_usage_error "accepted: 1-2" "$PP" rc -d afxdp:vb1,afxdp:vb2 -i 3
expect_usage_error "accepted: 1-2" "$PERF" write_bw -d afxdp:vb1,afxdp:vb2 -i 3
expect_usage_error "names no port" "$PP" rc -d , -i 1
# A port named twice: the device cannot open, and says why.
out=$(ip netns exec "$NB" "$PP" rc -d afxdp:vb1,afxdp:vb1 -g 0 --timeout 1 2>&1)
[ $? = 1 ] && grep -q "opened once" <<<"$out" || fail "a port named twice: '$out'"

# packets the namespace's interface sent (veth counts AF_XDP's copy-mode TX)
txp() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_packets"; }

qpn_of() { sed -n "s/^  $2 address: *LID 0x[0-9a-f]*, QPN \(0x[0-9a-f]*\),.*/\1/p" "$1"; }

# pp NAME PORT ARGS...: server on both vb ports with its QP on PORT, client
# on vaPORT only.
port=18700
pp() {
	local name=$1 p=$2 other src=$TMP/$1-server.log cli=$TMP/$1-client.log rc src_rc
	local tx_used tx_other tport=$((port++))
	shift 2
	other=$((3 - p))
	tx_used=$(txp "$NB" vb$p)
	tx_other=$(txp "$NB" vb$other)
	ip netns exec "$NB" timeout 60 "$PP" "$@" -d afxdp:vb1,afxdp:vb2 -i "$p" -g 0 -p $tport --timeout 20 \
		>"$src" 2>&1 &
	SPID=$!
	ip netns exec "$NA" timeout 60 "$PP" "$@" -d afxdp:va$p -g 0 -p $tport --timeout 20 10.84.$p.2 >"$cli" 2>&1
	rc=$?
	wait "$SPID"; src_rc=$?
	SPID=
	[ $rc = 0 ] || fail "$name: client exited $rc"
	[ $src_rc = 0 ] || fail "$name: server exited $src_rc"
	for f in "$src" "$cli"; do
		grep -q "^200 iters in [0-9.]* seconds = [0-9.]* usec/iter$" "$f" || fail "$name: no iters line in $f"
		grep -q "invalid data" "$f" && fail "$name: --chk found invalid data ($f)"
	done
	grep -q "local address: .*GID ::ffff:10.84.$p.2$" "$src" || fail "$name: the server's GID is not port $p's"
	[ "$(qpn_of "$cli" remote)" = "$(qpn_of "$src" local)" ] || fail "$name: QPNs do not match"
	tx_used=$(($(txp "$NB" vb$p) - tx_used))
	tx_other=$(($(txp "$NB" vb$other) - tx_other))
	# 200 iterations are at least 200 frames; the other pair saw only what
	# the kernel sends by itself (IPv6 ND and the like, a handful)
	[ "$tx_used" -ge 200 ] || fail "$name: vb$p sent $tx_used frames, wanted >= 200"
	[ "$tx_other" -lt 20 ] || fail "$name: vb$other sent $tx_other frames while the QP was on port $p"
	echo "ok: $name: vb$p sent $tx_used frames, vb$other $tx_other; $(grep usec/iter "$cli")"
}

pp rc-port2 2 rc -s 8192 -n 200 -c
pp rc-port1 1 rc -s 8192 -n 200 -c
pp uc-port2 2 uc -s 4096 -n 200 -c
pp ud-port2 2 ud -s 1024 -n 200 -c

# uroce-perf: write_bw (RC) and send_bw (UD, AH on port 2), server on port 2.
perf() { # NAME ARGS...
	local name=$1 tport=$((port++)) rc src_rc tx_used
	shift
	tx_used=$(txp "$NA" va2)
	ip netns exec "$NB" timeout 60 "$PERF" "$@" -d afxdp:vb1,afxdp:vb2 -i 2 -x 1 -p $tport --timeout 20 \
		>"$TMP/$name-server.log" 2>&1 &
	SPID=$!
	ip netns exec "$NA" timeout 60 "$PERF" "$@" -d afxdp:va2 -x 1 -p $tport --timeout 20 10.84.2.2 \
		>"$TMP/$name-client.log" 2>&1
	rc=$?
	wait "$SPID"; src_rc=$?
	SPID=
	[ $rc = 0 ] && [ $src_rc = 0 ] || fail "$name: client exited $rc, server $src_rc"
	grep -q "over uroce port afxdp:vb2" "$TMP/$name-server.log" || fail "$name: server not on port 2"
	grep -Eq "^ $3 +$5 +[0-9]" "$TMP/$name-client.log" || fail "$name: no result row"
	tx_used=$(($(txp "$NA" va2) - tx_used))
	echo "ok: $name: va2 sent $tx_used frames; $(grep -E "^ $3 +$5 " "$TMP/$name-client.log")"
	rm -f "$TMP/$name-"*.log
}
perf write_bw write_bw -s 65536 -n 1000 -c RC
perf send_bw_ud send_bw -s 1024 -n 1000 -c UD

echo "multiport_afxdp: all passed"
