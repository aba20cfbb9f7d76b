#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-stat on running processes: a uroce-perf write_bw with sr over four
# paths and Swift, each end on an afxdp port in its own namespace (the
# server EMBEDDED, the client with one engine thread, DEDICATED), read
# while it runs: text and --json (parsed), the counters nonzero and
# growing between samples, the QP with its mode, state and paths, --watch
# with -c 2 two samples with rates. A NAME of two processes, a process
# without an endpoint and bad arguments are refused as documented; once
# the tools exit their endpoints are gone. No rate is asserted.
#   stat_live.sh UROCE_PERF UROCE_STAT
set -u
. "$(dirname "$0")/../lib/netns.sh"
PERF=${1:?usage: stat_live.sh UROCE_PERF UROCE_STAT}
STAT=${2:?}
netns_test uroce-stl
TCP=$((21000 + $$ % 9000))
netns_need_cmd python3

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.85.0.1/24 --ip-b 10.85.0.2/24

args=(write_bw -x 1 -s 65536 -D 8 -p $TCP --timeout 30 --reliability sr --paths 4 --cc swift)
netns_start "$NB" "$TMP/srv.log" timeout 60 "$PERF" "${args[@]}" -d afxdp:vb
tsrv=$NETNS_PID
netns_wait_tcp "$NB" $TCP $tsrv || fail "the write_bw server never listened"
netns_start "$NA" "$TMP/cli.log" timeout 60 "$PERF" "${args[@]}" -d afxdp:va --cores 0 10.85.0.2
tcli=$NETNS_PID
# the tools run under timeout(1): their PIDs are its children
child_of() { cat /proc/"$1"/task/*/children 2>/dev/null | awk '{ print $1 }'; }
# evaluated at each try (a "$(child_of ..)" argument would be read once,
# before timeout(1) had forked)
has_child() { test -n "$(child_of "$1")"; }
netns_wait_until 10 has_child $tsrv || fail "no uroce-perf under the server's timeout"
netns_wait_until 10 has_child $tcli || fail "no uroce-perf under the client's timeout"
srv=$(child_of $tsrv) cli=$(child_of $tcli)

# json_eval PID EXPR: one --json sample of PID, EXPR (python3, on d, c, q) true
json_eval() {
	"$STAT" "$1" --json >"$TMP/j.json" 2>"$TMP/j.err" || return 1
	python3 -c "import json,sys; d=json.load(open('$TMP/j.json')); c=d['contexts'][0]; q=c['qps'][0] if c['qps'] else None; sys.exit(0 if ($2) else 1)"
}
# traffic under way on both ends (the exchange done, the QPs in RTS)
for p in $srv $cli; do
	netns_wait_until 20 json_eval $p "q and q['state'] == 'RTS' and q['stats']['tx_packets'] > 0" ||
		{ cat "$TMP/j.json" "$TMP/j.err"; fail "uroce-stat $p: no QP in RTS with packets sent"; }
done
echo "ok: both ends publish an RTS QP with traffic"

# text, one sample each
for p in $srv $cli; do
	"$STAT" $p >"$TMP/t-$p.txt" 2>&1 || { cat "$TMP/t-$p.txt"; fail "uroce-stat $p exited $?"; }
	grep -Eq "^pid $p \(uroce-perf\) context 0: engine (embedded|dedicated)" "$TMP/t-$p.txt" &&
		grep -Eq "^  engine: loops [1-9][0-9]*, idle [0-9.]+%" "$TMP/t-$p.txt" &&
		grep -Eq "^  port 1 afxdp:v[ab] \(link up\): rx [1-9][0-9]* pkts [1-9][0-9]* bytes, tx [1-9][0-9]* pkts" \
			"$TMP/t-$p.txt" &&
		grep -Eq "^  qp 0x[0-9a-f]{6} -> 0x[0-9a-f]{6} sr RTS port 1 cc swift" "$TMP/t-$p.txt" &&
		grep -Eq "^    drops:" "$TMP/t-$p.txt" &&
		grep -Eq "^    tx [0-9]+ pkts, rx [0-9]+ pkts, retransmits [0-9]+, timeouts [0-9]+" "$TMP/t-$p.txt" ||
		{ cat "$TMP/t-$p.txt"; fail "uroce-stat $p: the text lacks a section"; }
done
grep -q "engine embedded" "$TMP/t-$srv.txt" && grep -q "engine dedicated on cpu 0" "$TMP/t-$cli.txt" ||
	fail "engine modes: server '$(head -1 "$TMP/t-$srv.txt")', client '$(head -1 "$TMP/t-$cli.txt")'"
grep -Eq "^    paths: 4$" "$TMP/t-$cli.txt" && grep -Eq "^      path 3 sport [0-9]+ port 1 (up|DOWN)" "$TMP/t-$cli.txt" ||
	{ cat "$TMP/t-$cli.txt"; fail "the client's four paths are not listed"; }
echo "ok: text on both ends (ports, drops, the sr QP, its paths and controller, the engine)"

# --json with --watch and -c 2: two objects, the counters growing, rates in the second
for p in $srv $cli; do
	"$STAT" $p --json --watch 1 -c 2 >"$TMP/w-$p.json" 2>&1 || { cat "$TMP/w-$p.json"; fail "--json --watch $p"; }
	python3 - "$TMP/w-$p.json" <<'EOF' || fail "uroce-stat $p --json --watch 1 -c 2: see above"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, f"{len(lines)} samples, not 2"
a, b = (json.loads(l) for l in lines)
ca, cb = a["contexts"][0], b["contexts"][0]
pa, pb = ca["ports"][0], cb["ports"][0]
qa, qb = ca["qps"][0], cb["qps"][0]
assert cb["version"] == 1 and qb["mode"] == "sr" and qb["reliability"] == "sr" and qb["cc"] == "swift", qb
assert qb["qpn"] == qa["qpn"] and qb["state"] == "RTS", (qa["qpn"], qb["qpn"], qb["state"])
for k in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes"):
    assert pb[k] > pa[k] > 0, f"port {k}: {pa[k]} -> {pb[k]}"
assert qb["stats"]["tx_packets"] + qb["stats"]["rx_packets"] > qa["stats"]["tx_packets"] + qa["stats"]["rx_packets"] > 0
assert cb["engine"]["loops"] > ca["engine"]["loops"] > 0
assert 0 <= cb["engine"]["idle_share"] <= 1
assert "rates" not in pa and pb["rates"]["rx_packets"] > 0, "rates only from the second sample"
assert qb["paths_total"] == 4 or ca["mode"] == "embedded", qb["paths_total"]
assert isinstance(pb["drops"], dict)
print("ok", sys.argv[1])
EOF
done
echo "ok: --json --watch 1 -c 2: two samples, counters grow, rates in the second"

# text --watch -c 2: two samples, rates in the second
"$STAT" $cli --watch 0.5 -c 2 >"$TMP/wt.txt" 2>&1 || { cat "$TMP/wt.txt"; fail "--watch 0.5 -c 2"; }
[ "$(grep -c "^pid $cli " "$TMP/wt.txt")" = 2 ] && grep -q "loops/s" "$TMP/wt.txt" &&
	grep -q "pkt/s" "$TMP/wt.txt" || { cat "$TMP/wt.txt"; fail "--watch 0.5 -c 2: not two samples with rates"; }
echo "ok: --watch 0.5 -c 2"

# NAME: two uroce-perf processes (at least) are ambiguous, exit 2 with the candidates
out=$("$STAT" uroce-perf 2>&1)
rc=$?
[ $rc = 2 ] && grep -q "names [2-9][0-9]* processes" <<<"$out" && grep -q "^  $srv uroce-perf" <<<"$out" &&
	grep -q "^  $cli uroce-perf" <<<"$out" || fail "an ambiguous NAME: exit $rc, '$out'"
out=$("$STAT" no-such-proc-$$ 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "no process is named" <<<"$out" || fail "an unknown NAME: exit $rc, '$out'"
echo "ok: NAME ambiguous (exit 2, candidates listed) and unknown (exit 1)"

# a process without an endpoint: this shell
out=$("$STAT" $$ 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "has no uroce statistics endpoint" <<<"$out" || fail "a non-uroce PID: exit $rc, '$out'"
echo "ok: a process without an endpoint: exit 1, said so"

# bad arguments: exit 2, what is wrong and what is accepted
netns_usage_error "which process" "$STAT"
netns_usage_error "--watch: seconds" "$STAT" $srv --watch 0
netns_usage_error "-c: a count" "$STAT" $srv -c 0
netns_usage_error "unknown option" "$STAT" $srv --bogus
netns_usage_error "one process at a time" "$STAT" $srv $cli
echo "ok: bad arguments exit 2"

# a --watch that outlives the client: it ends saying the endpoint is gone
"$STAT" $cli --watch 0.5 >"$TMP/gone.txt" 2>&1 &
watcher=$!
NETNS_PIDS+=("$watcher")
netns_wait $tcli || fail "the write_bw client exited $?"
netns_wait $tsrv || fail "the write_bw server exited $?"
netns__kill_after 5 $watcher
netns_wait $watcher
rc=$?
[ $rc = 1 ] && grep -q "is gone" "$TMP/gone.txt" || { tail -3 "$TMP/gone.txt"; fail "the watch of an exiting process: exit $rc"; }
for p in $srv $cli; do
	ls /dev/shm/uroce-stat.$p.* >/dev/null 2>&1 && fail "process $p left its endpoint behind"
	out=$("$STAT" $p 2>&1)
	rc=$?
	[ $rc = 1 ] && grep -Eq "no process $p|has no uroce statistics endpoint" <<<"$out" ||
		fail "uroce-stat of exited $p: exit $rc, '$out'"
done
echo "ok: after exit the endpoints are gone (uroce-stat exits 1, saying so)"
echo PASS
