#!/bin/bash
# SPDX-License-Identifier: MIT
# leafspine.sh end to end: its argument errors; a 2-leaf 2-spine fabric of
# uroce-fabric switches with one host per leaf (rate, queue, ECN, trimming
# and delay on every port), where RoCEv2 from host 1 to host 2 arrives
# intact (roce_traffic, a different UDP source port per frame) and both
# spines' counters move, an RC uroce-pingpong --chk crosses it, a second
# up under the same name is refused, and down stops every switch and
# deletes every namespace; then the same fabric from Linux routers
# (--kernel: multipath routes hashing UDP ports, tbf), where both spines'
# interfaces count the traffic. No rate is asserted.
#   leafspine_test.sh UROCE_FABRIC ROCE_TRAFFIC UROCE_PINGPONG
set -u
. "$(dirname "$0")/../lib/netns.sh"
USAGE="usage: leafspine_test.sh UROCE_FABRIC ROCE_TRAFFIC UROCE_PINGPONG"
FABRIC=${1:?$USAGE}
TRAFFIC=${2:?$USAGE}
PP=${3:?$USAGE}
LS=$(dirname "$0")/leafspine.sh
netns_test uroce-ls
STATE=$TMP/state
# leafspine's own down stops its switches by PID; should its state be gone,
# its namespaces (all named after this test's unique prefix) still go
# shellcheck disable=SC2034 # netns_cleanup runs it
NETNS_ON_EXIT='"$LS" down --prefix "$P" --state-dir "$STATE" >/dev/null 2>&1
	for ns in $(ip netns list | awk "{print \$1}" | grep "^$P-"); do ip netns del "$ns"; done'
ls_() { "$LS" "$1" --prefix "$P" --state-dir "$STATE" "${@:2}"; }

# ---- argument errors: exit 2 and what is accepted
expect_usage_error() { netns_usage_error "$1" "$LS" "${@:2}"; } # EXPECTED_TEXT ARGS...
expect_usage_error "accepted: up, down, hosts, switches" bogus
expect_usage_error "accepted: 1-32 letters" up --prefix "a b" --kernel
expect_usage_error "accepted: 2..4" up --prefix x --leaves 5 --kernel
expect_usage_error "accepted: 1..4" up --prefix x --spines 0 --kernel
expect_usage_error "accepted: 1..8" up --prefix x --hosts-per-leaf 9 --kernel
expect_usage_error "accepted: 0..1" up --prefix x --trim 2 --kernel
expect_usage_error "needs a value" up --prefix
expect_usage_error "unknown option '--frob'" up --prefix x --frob 1
expect_usage_error "--fabric PATH/uroce-fabric is needed" up --prefix x
expect_usage_error "refuses the port options 'rate=fast'" up --prefix x --fabric "$FABRIC" --rate fast
"$LS" --help | grep -q -- "--hosts-per-leaf K" || fail "--help does not describe --hosts-per-leaf"
out=$("$LS" down --prefix nothing-here --state-dir "$STATE" 2>&1) && fail "down of nothing succeeded: $out"
grep -q "nothing up under" <<<"$out" || fail "down of nothing: '$out'"

# rx_frames of one switch port, or of the whole switch without PORT
sw_rx() { # NAME [PORT]
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["rx_frames"] if len(sys.argv) < 3 else d["ports"][int(sys.argv[2])]["rx_frames"])' "$STATE/$P/$1.json" "${@:2}"
}

# traffic TAG: 2000 frames host 1 -> host 2, every one intact
traffic() {
	local rpid
	read -r H1 IF1 _ _ GWMAC1 <<<"$(sed -n 1p "$TMP/hosts")"
	read -r H2 IF2 A2 _ <<<"$(sed -n 2p "$TMP/hosts")"
	netns_start "$H2" "$TMP/$1-recv.log" "$TRAFFIC" recv --port "afxdp:$IF2" --count 2000 --window 64 \
		--timeout-ms 60000 --ready-file "$TMP/$1.ready"
	rpid=$NETNS_PID
	netns_wait_file "$TMP/$1.ready" "$rpid" 10 || fail "$1: receiver did not start"
	ip netns exec "$H1" "$TRAFFIC" send --port "afxdp:$IF1" --count 2000 --window 64 --dst-ip "${A2%/*}" \
		--dst-mac "$GWMAC1" --seed 9 --timeout-ms 60000 >"$TMP/$1-send.log" 2>&1 || fail "$1: sender failed"
	netns_wait "$rpid" || fail "$1: receiver failed: $(tail -1 "$TMP/$1-recv.log")"
	grep -q "recv: OK intact=2000/2000" "$TMP/$1-recv.log" || fail "$1: $(tail -1 "$TMP/$1-recv.log")"
	echo "ok: $1: $H1 -> $H2: $(grep -o 'intact=[^ ]* lost=[^ ]* dup=[^ ]* corrupt=[^ ]* out_of_order=[^ ]*' \
		"$TMP/$1-recv.log")"
}

pingpong() { # TAG: RC with data checked, host 2 serving host 1
	local spid
	netns_start "$H2" "$TMP/$1-pp-server.log" timeout 60 "$PP" rc -d "afxdp:$IF2" -g 1 --chk -s 8192 -n 200 --timeout 30
	spid=$NETNS_PID
	netns_wait_tcp "$H2" 18515 "$spid" 10 || fail "$1: pingpong server did not listen"
	ip netns exec "$H1" timeout 60 "$PP" rc -d "afxdp:$IF1" -g 1 --chk -s 8192 -n 200 --timeout 30 "${A2%/*}" \
		>"$TMP/$1-pp-client.log" 2>&1 || fail "$1: pingpong client failed"
	netns_wait "$spid" || fail "$1: pingpong server failed"
	grep -q "^200 iters in" "$TMP/$1-pp-client.log" && ! grep -q "invalid data" "$TMP/$1-pp-"*.log ||
		fail "$1: pingpong did not complete with good data"
	echo "ok: $1: pingpong rc --chk across the fabric: $(grep usec/iter "$TMP/$1-pp-client.log")"
}

# ---- uroce-fabric switches
ls_ up --fabric "$FABRIC" --leaves 2 --spines 2 --hosts-per-leaf 1 --rate 1g --queue 256k --ecn 64k --trim 1 \
	--delay 10us --seed 3 --max-sec 240 || fail "up failed"
ls_ hosts >"$TMP/hosts" || fail "hosts failed"
ls_ switches >"$TMP/switches" || fail "switches failed"
cat "$TMP/hosts"
[ "$(wc -l <"$TMP/hosts")" = 2 ] && grep -Eq "^$P-h1-1 h0 10\.1\.1\.2/24 10\.1\.1\.1 02:00:0a:01:01:01$" "$TMP/hosts" &&
	grep -Eq "^$P-h2-1 h0 10\.2\.1\.2/24 10\.2\.1\.1 02:00:0a:02:01:01$" "$TMP/hosts" ||
	fail "hosts printed: $(cat "$TMP/hosts")"
[ "$(wc -l <"$TMP/switches")" = 4 ] && grep -q "^spine2 $P-spine2 $STATE/$P/spine2.json$" "$TMP/switches" ||
	fail "switches printed: $(cat "$TMP/switches")"
cp "$STATE/$P/pids" "$TMP/pids"
out=$(ls_ up --fabric "$FABRIC" 2>&1) && fail "a second up under one name succeeded"
grep -q "is up" <<<"$out" || fail "a second up: '$out'"
[ -f "$STATE/$P/pids" ] && ip netns list | grep -q "^$P-spine1" || fail "the refused up removed the running fabric"

traffic fabric
# every frame of the run (and its credit ACKs) crossed one spine or the
# other; a different source port per frame spreads them over both
spines_moved() {
	local s1 s2
	s1=$(sw_rx spine1 0) s2=$(sw_rx spine2 0)
	[ $((s1 + s2)) -ge 2000 ] && [ "$s1" -ge 400 ] && [ "$s2" -ge 400 ]
}
netns_wait_until 5 spines_moved ||
	fail "spines from leaf 1: spine1 $(sw_rx spine1 0), spine2 $(sw_rx spine2 0) of 2000 frames"
echo "ok: ECMP: from leaf 1, spine1 took $(sw_rx spine1 0) frames, spine2 $(sw_rx spine2 0)"
pingpong fabric
ls_ down || fail "down failed"
while read -r pid start name; do
	[ "$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null)" = "$start" ] && fail "$name (PID $pid) still runs after down"
done <"$TMP/pids"
ip netns list | grep -q "^$P-" && fail "namespaces left after down: $(ip netns list | grep "^$P-")"
[ -e "$STATE/$P" ] && fail "state left after down"
echo "ok: down: every switch stopped, every namespace deleted"

# ---- Linux routers (--kernel): the same topology as a cross-check
ls_ up --kernel --leaves 2 --spines 2 --hosts-per-leaf 1 --rate 1g --queue 256k >"$TMP/kernel-up.log" 2>&1 ||
	fail "up --kernel failed: $(cat "$TMP/kernel-up.log")"
ls_ hosts >"$TMP/hosts" || fail "hosts failed"
ip -n "$P-leaf1" route show 10.0.0.0/8 | grep -c nexthop | grep -q 2 || fail "leaf1 has no two-way multipath route"
ip netns exec "$P-leaf1" tc qdisc show dev u1 | grep -q "tbf.*rate 1Gbit" || fail "no tbf on leaf1's uplink"
rxp() { ip netns exec "$P-spine$1" cat /sys/class/net/l1/statistics/rx_packets; }
k1=$(rxp 1) k2=$(rxp 2)
traffic kernel
k1=$(($(rxp 1) - k1)) k2=$(($(rxp 2) - k2))
[ $((k1 + k2)) -ge 2000 ] && [ "$k1" -ge 400 ] && [ "$k2" -ge 400 ] ||
	fail "kernel ECMP: spine1 took $k1, spine2 $k2 of 2000 frames"
echo "ok: kernel ECMP: from leaf 1, spine1 took $k1 packets, spine2 $k2"
pingpong kernel
ls_ down || fail "down --kernel failed"
ip netns list | grep -q "^$P-" && fail "namespaces left after down: $(ip netns list | grep "^$P-")"
echo "PASS"
