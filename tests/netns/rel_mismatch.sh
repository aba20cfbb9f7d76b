#!/bin/bash
# SPDX-License-Identifier: MIT
# Two ends started with different --reliability modes must both fail in the
# TCP exchange, before any traffic, and say why; this does not need sr or ec
# to work, only the exchange (apps/rel_exchange.h). Over a veth pair, one
# namespace per end, afxdp ports:
#   uroce-pingpong: server --reliability sr, client rc (the default); then
#     server rc, client sr. Each end exits non-zero well before --timeout
#     and names both modes ("peer uses reliability rc (or is not uroce),
#     this end sr", "peer uses reliability sr, this end rc").
#   uroce-perf write_bw: server --reliability ec --ec xor, client
#     --reliability ec --ec rs: both name both codes.
#   uroce-pingpong with --reliability rc --ordering ordered on both ends: the
#     explicit default runs as before.
# Then the options' bad values and combinations: exit 2, a clear message.
#   rel_mismatch.sh UROCE_PINGPONG UROCE_PERF
set -u
. "$(dirname "$0")/../lib/netns.sh"
PP=${1:?usage: rel_mismatch.sh UROCE_PINGPONG UROCE_PERF}
PERF=${2:?usage: rel_mismatch.sh UROCE_PINGPONG UROCE_PERF}
netns_test uroce-rel
IPB=10.84.0.2
TCP_PORT=$((30000 + $$ % 10000))
TIMEOUT=20 # each tool's --timeout; a mismatch must end far sooner

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.84.0.1/24 --ip-b $IPB/24

# pair NAME 'SERVER CMD...' 'CLIENT CMD...': the server in NB, the client in
# NA (server address appended), both bounded by timeout(1) beyond
# --timeout; sets SRC_RC, CLI_RC and ELAPSED (seconds, whole run).
pair() {
	local name=$1 start
	# shellcheck disable=SC2206 # the commands are word lists on purpose
	local srv=($2) cli=($3)
	start=$(date +%s)
	netns_start "$NB" "$TMP/$name-server.log" timeout $((TIMEOUT * 2)) "${srv[@]}"
	local spid=$NETNS_PID
	netns_wait_tcp "$NB" $TCP_PORT "$spid" 30 || fail "$name: the server never listened"
	ip netns exec "$NA" timeout $((TIMEOUT * 2)) "${cli[@]}" $IPB >"$TMP/$name-client.log" 2>&1
	CLI_RC=$?
	netns_wait "$spid"
	SRC_RC=$?
	ELAPSED=$(($(date +%s) - start))
}

# mismatch NAME 'SERVER CMD' 'CLIENT CMD' SERVER_TEXT CLIENT_TEXT
mismatch() {
	local name=$1
	pair "$1" "$2" "$3"
	[ $SRC_RC != 0 ] || fail "$name: the server exited 0"
	[ $CLI_RC != 0 ] || fail "$name: the client exited 0"
	[ $SRC_RC != 124 ] && [ $CLI_RC != 124 ] || fail "$name: an end hung until timeout(1) killed it"
	[ "$ELAPSED" -lt $TIMEOUT ] || fail "$name: took $ELAPSED s, not less than --timeout $TIMEOUT"
	grep -qF -- "$4" "$TMP/$name-server.log" || fail "$name: the server did not say '$4'"
	grep -qF -- "$5" "$TMP/$name-client.log" || fail "$name: the client did not say '$5'"
	grep -q "iters in\|#bytes " "$TMP/$name-"*.log && fail "$name: traffic ran despite the mismatch"
	echo "ok: $name: server exit $SRC_RC, client exit $CLI_RC in ${ELAPSED} s:" \
		"$(grep -F -- "$4" "$TMP/$name-server.log" | head -1)"
	TCP_PORT=$((TCP_PORT + 1))
}

PPS="$PP rc -d afxdp:vb -g 1 --timeout $TIMEOUT -n 100"
PPC="$PP rc -d afxdp:va -g 1 --timeout $TIMEOUT -n 100"
mismatch pp-sr-server "$PPS -p $TCP_PORT --reliability sr" "$PPC -p $TCP_PORT" \
	"peer uses reliability rc (or is not uroce), this end sr: start both ends with the same --reliability" \
	"peer uses reliability sr, this end rc: start both ends with the same --reliability"
mismatch pp-sr-client "$PPS -p $TCP_PORT" "$PPC -p $TCP_PORT --reliability sr" \
	"peer uses reliability sr, this end rc: start both ends with the same --reliability" \
	"peer uses reliability rc (or is not uroce), this end sr: start both ends with the same --reliability"
mismatch pp-ordering "$PPS -p $TCP_PORT --reliability sr --ordering unordered" \
	"$PPC -p $TCP_PORT --reliability sr" \
	"peer uses ordering ordered, this end unordered" "peer uses ordering unordered, this end ordered"

PFS="$PERF write_bw -d afxdp:vb -x 1 --timeout $TIMEOUT -n 100"
PFC="$PERF write_bw -d afxdp:va -x 1 --timeout $TIMEOUT -n 100"
mismatch perf-ec-code "$PFS -p $TCP_PORT --reliability ec --ec xor" "$PFC -p $TCP_PORT --reliability ec --ec rs" \
	"peer uses ec code rs, this end xor: start both ends with the same --ec" \
	"peer uses ec code xor, this end rs: start both ends with the same --ec"
mismatch perf-sr-rc "$PFS -p $TCP_PORT --reliability sr" "$PFC -p $TCP_PORT" \
	"peer uses reliability rc (or is not uroce), this end sr" "peer uses reliability sr, this end rc"
mismatch perf-ec-k "$PFS -p $TCP_PORT --reliability ec --ec-k 16" "$PFC -p $TCP_PORT --reliability ec" \
	"peer uses ec k 32, this end 16" "peer uses ec k 16, this end 32"

# The explicit default is the default: rc traffic as before.
pair pp-rc-explicit "$PPS -p $TCP_PORT --reliability rc --ordering ordered" "$PPC -p $TCP_PORT --reliability rc"
[ $SRC_RC = 0 ] && [ $CLI_RC = 0 ] || fail "pp-rc-explicit: server exit $SRC_RC, client exit $CLI_RC"
for side in server client; do
	grep -q "^100 iters in [0-9.]* seconds = [0-9.]* usec/iter$" "$TMP/pp-rc-explicit-$side.log" ||
		fail "pp-rc-explicit: the $side printed no rdma-core iters line"
done
echo "ok: pp-rc-explicit: $(grep usec/iter "$TMP/pp-rc-explicit-client.log")"

# Bad values and combinations: exit 2, what is wrong and what is accepted.
expect_usage_error() { netns_usage_error "$@"; } # EXPECTED_TEXT CMD ARGS...
expect_usage_error "--reliability 'xx': accepted: rc, sr, ec, be" "$PP" rc -d afxdp:va --reliability xx
expect_usage_error "--ordering 'any': accepted: ordered, unordered" "$PP" rc -d afxdp:va --reliability sr --ordering any
expect_usage_error "--ec 'lrc': accepted: rs, xor" "$PERF" write_bw -d afxdp:va --reliability ec --ec lrc
expect_usage_error "--ec-k '0' is not a number in 1..64" "$PERF" write_bw -d afxdp:va --reliability ec --ec-k 0
expect_usage_error "--ec-m '33' is not a number in 1..32" "$PP" rc -d afxdp:va --reliability ec --ec-m 33
expect_usage_error "--window-pkts '8' is not a number in 16..1024" "$PP" rc -d afxdp:va --reliability sr --window-pkts 8
expect_usage_error "--loss 'fast': accepted: rack, rto" "$PERF" send_bw -d afxdp:va --reliability sr --loss fast
expect_usage_error "--rto-min-us 'x' is not a number" "$PERF" send_bw -d afxdp:va --reliability sr --rto-min-us x
expect_usage_error "--reliability sr works over RC only" "$PP" ud -d afxdp:va --reliability sr
expect_usage_error "--reliability ec works over RC only" "$PERF" send_bw -d afxdp:va -c UD --reliability ec
expect_usage_error "read needs --reliability rc" "$PERF" read_bw -d afxdp:va --reliability sr
expect_usage_error "read needs --reliability rc" "$PERF" read_lat -d afxdp:va --reliability ec
expect_usage_error "--ec applies to --reliability ec only" "$PP" rc -d afxdp:va --reliability sr --ec xor
expect_usage_error "--rto-rtts applies to --reliability sr or ec only" "$PERF" write_bw -d afxdp:va --rto-rtts 3
expect_usage_error "--ordering unordered needs --reliability sr or ec" "$PP" rc -d afxdp:va --ordering unordered
expect_usage_error "--timeout-us applies to --reliability be only" "$PERF" send_bw -d afxdp:va --reliability sr --timeout-us 500
expect_usage_error "--window-pkts applies to --reliability sr or ec only (be sends nothing twice)" "$PP" rc -d afxdp:va --reliability be --window-pkts 64
expect_usage_error "--timeout-us '0' is not a number in 1..60000000" "$PERF" send_bw -d afxdp:va --reliability be --timeout-us 0
for tool in "$PP rc" "$PERF write_bw"; do
	# shellcheck disable=SC2086 # the tool and its mode
	$tool --help 2>&1 | grep -q -- "--reliability rc|sr|ec|be" || fail "$tool --help does not list --reliability"
done
echo "PASS: reliability mismatches fail in the exchange on both ends, with both modes named"
