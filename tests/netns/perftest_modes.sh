#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-perf's perftest modes beyond the six basic ones, uroce to uroce on
# afxdp ports at the two ends of a veth pair (one namespace each):
#   atomic_bw and atomic_lat, FETCH_AND_ADD and CMP_AND_SWAP (-A);
#   -b (both ends send) for write_bw, read_bw, atomic_bw and send_bw: both
#     ends print a row, and each end's row is the sum of both directions
#     (larger than either end's own: checked through --out_json);
#   -e (completion channels: the client sleeps in poll()) for send_bw,
#     read_lat, send_lat and atomic_bw;
#   -D with --report-period: lines while the run goes, then the table;
#   --run_infinitely: lines until SIGINT, then the table, exit 0;
#   --out_json / --out_json_file: perftest's field names, parsed back;
#   --output bandwidth / latency: one number;
# and the bad combinations: exit 2 with what is accepted; -b on one end
# only: both ends exit 1 saying so. No rate is asserted.
#   perftest_modes.sh UROCE_PERF
set -u
. "$(dirname "$0")/../lib/netns.sh"
PERF=$(realpath "${1:?usage: perftest_modes.sh UROCE_PERF}")

IPA=10.84.0.1
IPB=10.84.0.2
TCP_PORT=$((20000 + ($$ + 17) % 10000))
netns_test uroce-ptm
NETNS_LOG_LINES=40

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24
ip netns exec "$NA" ping -c 2 -i 0.2 -W 2 $IPB >/dev/null 2>&1 || fail "no IP path across the veth pair"

# row LOG ITERS: the size column and ITERS in a result row (the size is
# any: atomics are 8 bytes)
row() { grep -Eq "^ [0-9]+ +$2 +[0-9]" "$1"; }

# pair TAG SERVER_ARGS -- CLIENT_ARGS: server in NB, client in NA (both
# bounded); the logs in $TMP/TAG-{server,client}.log; fails unless both
# exit 0
pair() {
	local tag=$1 sargs=() cargs=() crc src spid
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	netns_start "$NB" "$TMP/$tag-server.log" timeout 120 "$PERF" "${sargs[@]}" -d afxdp:vb -x 1 -p $TCP_PORT \
		--timeout 20 -F
	spid=$NETNS_PID
	timeout 120 ip netns exec "$NA" "$PERF" "${cargs[@]}" -d afxdp:va -x 1 -p $TCP_PORT --timeout 20 -F $IPB \
		>"$TMP/$tag-client.log" 2>&1
	crc=$?
	netns_wait $spid
	src=$?
	[ $crc = 0 ] || { cat "$TMP/$tag-client.log" >&2; fail "$tag: client exited $crc"; }
	[ $src = 0 ] || { cat "$TMP/$tag-server.log" >&2; fail "$tag: server exited $src"; }
}

# json_field FILE EXPR: a value of the JSON file (python's json)
json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# atomics: both kinds, bandwidth and latency
for at in FETCH_AND_ADD CMP_AND_SWAP; do
	pair "atomic_bw-$at" atomic_bw -A $at -n 300 -- atomic_bw -A $at -n 300
	row "$TMP/atomic_bw-$at-client.log" 300 || fail "atomic_bw $at: no client row"
	grep -q "Atomic BW Test" "$TMP/atomic_bw-$at-client.log" || fail "atomic_bw $at: no title"
	grep -q "Atomic type     : $at" "$TMP/atomic_bw-$at-client.log" || fail "atomic_bw $at: the type is not shown"
	pair "atomic_lat-$at" atomic_lat -A $at -n 200 -- atomic_lat -A $at -n 200
	row "$TMP/atomic_lat-$at-client.log" 200 || fail "atomic_lat $at: no client row"
	echo "ok: atomic_bw and atomic_lat, $at"
done

# -b: both ends' rows, each the sum of the two directions
for mode in write_bw read_bw atomic_bw send_bw; do
	tag=$mode-b
	pair $tag $mode -b -n 300 --out_json_file "$TMP/$tag-server.json" -- \
		$mode -b -n 300 --out_json_file "$TMP/$tag-client.json"
	for side in client server; do
		row "$TMP/$tag-$side.log" 300 || fail "$tag: no $side row"
		grep -q "Bidirectional" "$TMP/$tag-$side.log" || fail "$tag: the $side does not say bidirectional"
		t=$(json_field "$TMP/$tag-$side.json" 'd["test_info"]["test"]')
		case $t in *Bidirectional_BW_Test) ;; *) fail "$tag: $side's JSON test name '$t'" ;; esac
	done
	echo "ok: $tag: client $(grep -E '^ [0-9]+ +300 ' "$TMP/$tag-client.log")"
done

# -e: the client waits on completion channels (the server polls)
pair send_bw-e send_bw -n 300 -- send_bw -e -n 300
grep -q "Test with events" "$TMP/send_bw-e-client.log" || fail "send_bw -e: not said"
row "$TMP/send_bw-e-client.log" 300 || fail "send_bw -e: no client row"
pair read_lat-e read_lat -n 200 -- read_lat -e -n 200
row "$TMP/read_lat-e-client.log" 200 || fail "read_lat -e: no client row"
pair send_lat-e send_lat -e -n 200 -- send_lat -e -n 200
row "$TMP/send_lat-e-client.log" 200 || fail "send_lat -e: no client row"
pair atomic_bw-e atomic_bw -e -n 300 -b -- atomic_bw -e -n 300 -b
row "$TMP/atomic_bw-e-client.log" 300 || fail "atomic_bw -e -b: no client row"
echo "ok: -e on send_bw, read_lat, send_lat, atomic_bw -b"

# -D with --report-period: lines while it runs
pair dur write_bw -D 3 -- write_bw -D 3 --report-period 1
n=$(grep -cE '^ +[0-9]+\.[0-9] s +[0-9]+ +messages in' "$TMP/dur-client.log")
[ "$n" -ge 2 ] || fail "-D 3 --report-period 1: $n period lines (want 2 or more)"
grep -Eq '^ 65536 +[0-9]+ +[0-9]' "$TMP/dur-client.log" || fail "-D 3: no table row"
echo "ok: -D 3 --report-period 1: $n lines before the table"

# --run_infinitely: lines until SIGINT, then the table and exit 0
netns_start "$NB" "$TMP/inf-server.log" timeout 120 "$PERF" write_bw -d afxdp:vb -x 1 -p $TCP_PORT --timeout 20 -F
spid=$NETNS_PID
netns_start "$NA" "$TMP/inf-client.log" timeout 120 "$PERF" write_bw --run_infinitely --report-period 1 -d afxdp:va \
	-x 1 -p $TCP_PORT --timeout 20 -F $IPB
cpid=$NETNS_PID
for _ in $(seq 100); do
	[ "$(grep -cE 'messages in' "$TMP/inf-client.log")" -ge 3 ] && break
	sleep 0.2
done
[ "$(grep -cE 'messages in' "$TMP/inf-client.log")" -ge 3 ] || fail "--run_infinitely: fewer than 3 lines in 20 s"
# (the PID is timeout's: ip netns exec became it; it passes SIGINT on)
kill -INT "$cpid"
netns_wait $cpid || fail "--run_infinitely: the client did not exit 0 after SIGINT: $(tail -5 "$TMP/inf-client.log")"
netns_wait $spid || fail "--run_infinitely: the server did not exit 0"
grep -Eq '^ 65536 +[0-9]+ +[0-9]' "$TMP/inf-client.log" || fail "--run_infinitely: no table after SIGINT"
echo "ok: --run_infinitely: $(grep -c 'messages in' "$TMP/inf-client.log") lines, then the table on SIGINT"

# --out_json (perftest's default file, in the working directory) and --output
(cd "$TMP" && pair json write_bw -n 200 -s 4096 -- write_bw -n 200 -s 4096 --out_json) || exit 1
[ -s "$TMP/perftest_out.json" ] || fail "--out_json: no perftest_out.json"
[ "$(json_field "$TMP/perftest_out.json" 'd["results"]["MsgSize"]')" = 4096 ] || fail "--out_json: MsgSize"
[ "$(json_field "$TMP/perftest_out.json" 'd["results"]["n_iterations"]')" = 200 ] || fail "--out_json: n_iterations"
json_field "$TMP/perftest_out.json" 'd["results"]["BW_average"] > 0 and d["results"]["MsgRate"] > 0' | grep -q True ||
	fail "--out_json: BW_average/MsgRate"
[ "$(json_field "$TMP/perftest_out.json" 'd["test_info"]["test"]')" = RDMA_Write_BW_Test ] || fail "--out_json: test name"
pair out write_bw -n 200 -- write_bw -n 200 --output bandwidth
grep -Eq '^[0-9]+\.[0-9]+$' "$TMP/out-client.log" || fail "--output bandwidth: not one number: $(cat "$TMP/out-client.log")"
grep -q '#bytes' "$TMP/out-client.log" && fail "--output bandwidth: the table was printed too"
pair outl send_lat -n 100 -- send_lat -n 100 --output latency --out_json_file "$TMP/lat.json"
grep -Eq '^[0-9]+\.[0-9]+$' "$TMP/outl-client.log" || fail "--output latency: not one number"
json_field "$TMP/lat.json" 'd["results"]["t_avg"] > 0 and "percentile_99.9" in d["results"]' | grep -q True ||
	fail "--out_json (lat): t_avg / percentile_99.9"
echo "ok: --out_json (perftest's fields), --output bandwidth and latency"

# refusals: exit 2 and what is accepted
bad() {
	local want=$1 out rc
	shift
	out=$(ip netns exec "$NA" "$PERF" "$@" -d afxdp:va 2>&1)
	rc=$?
	[ $rc = 2 ] || fail "'$*': exit $rc, want 2 ($out)"
	echo "$out" | grep -q -- "$want" || fail "'$*': message lacks '$want': $out"
}
bad "accepted CMP_AND_SWAP, FETCH_AND_ADD" atomic_bw -A XOR
bad "an atomic is 8 bytes" atomic_bw -s 64
bad "atomics need -c RC" atomic_lat -c UC
bad "atomics need -c RC and --reliability rc" atomic_bw --reliability sr
bad "-A/--atomic_type is for atomic_bw" write_bw -A FETCH_AND_ADD
bad "-b/--bidirectional is for the _bw modes" send_lat -b
bad "write_lat polls memory" write_lat -e
bad "--report-period needs -D or --run_infinitely" write_bw --report-period 1
bad "-D and --run_infinitely cannot be combined" write_bw -D 2 --run_infinitely
bad "accepted: bandwidth, message_rate" write_bw --output latency
bad "accepted bandwidth, message_rate, latency" write_bw --output speed
echo "ok: bad combinations refused"

# -b on one end only: both ends say so and exit 1
netns_start "$NB" "$TMP/mb-server.log" timeout 60 "$PERF" write_bw -b -d afxdp:vb -x 1 -p $TCP_PORT --timeout 20 -F
spid=$NETNS_PID
timeout 60 ip netns exec "$NA" "$PERF" write_bw -d afxdp:va -x 1 -p $TCP_PORT --timeout 20 -F $IPB \
	>"$TMP/mb-client.log" 2>&1
crc=$?
netns_wait $spid
src=$?
[ $crc = 1 ] && [ $src = 1 ] || fail "-b on one end: client exit $crc, server exit $src (want 1 and 1)"
for side in client server; do
	grep -q "give both ends -b, or neither" "$TMP/mb-$side.log" || fail "-b on one end: the $side does not say so"
done
echo "ok: -b on one end only: both ends refuse"

echo "PASS: perftest_modes: atomics, -b, -e, -D with --report-period, --run_infinitely, --out_json, --output"
