#!/bin/bash
# SPDX-License-Identifier: MIT
# Striping (uroce_stripe_*) over real AF_XDP sockets: two namespaces joined
# by two veth pairs (sa1-sb1 on 10.96.1.0/24, sa2-sb2 on 10.96.2.0/24),
# each end one context over both of its interfaces. stripe_bench sends
# transfers of edge sizes (1 byte, one either side of the 64 KiB shard, a
# few MiB) once over one port and once striped over both, for rc and sr;
# the receiver counts each transfer's immediate (IMMCOUNTER) and checks
# every 8-byte word. Then the veth counters (sysfs) must show the striped
# half of the bytes on pair 2, and everything else on pair 1; uroce's own
# port counters must agree. Bad arguments get exit 2 and a message.
#   stripe.sh STRIPE_PEER (tests/bench/stripe_bench.c built as tests/netns/stripe_peer)
set -u
. "$(dirname "$0")/../lib/netns.sh"
SB=${1:?usage: stripe.sh STRIPE_PEER}
netns_test uroce-stripe

netns_add "$NA" "$NB"
for i in 1 2; do
	netns_veth "$NA" sa$i "$NB" sb$i --ip-a 10.96.$i.1/24 --ip-b 10.96.$i.2/24 --mtu 4200
done
for i in 1 2; do
	ip netns exec "$NA" ping -c 1 -W 2 10.96.$i.2 >/dev/null 2>&1 || fail "no IP path across pair $i"
done

out=$("$SB" --role send --dev afxdp:x --shm "$TMP/x" --mode be 2>&1); rc=$?
[ $rc = 2 ] && grep -q "accepted rc or sr" <<<"$out" || fail "--mode be: exit $rc, '$out'"
out=$("$SB" --role send --dev afxdp:x --shm "$TMP/x" --mode rc --sizes 0 2>&1); rc=$?
[ $rc = 2 ] && grep -q "sizes from 1 byte" <<<"$out" || fail "--sizes 0: exit $rc, '$out'"

stat_of() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }

# sizes over 64 KiB go as two shards striped, one unstriped
SIZES=1,4095,65536,65537,1000003,8388608
STRIPED=$((65537 + 1000003 + 8388608)) # the transfers that take two shards
ALL=$((1 + 4095 + 65536 + 65537 + 1000003 + 8388608))
for mode in rc sr; do
	declare -A before=()
	for i in 1 2; do
		before[a$i]=$(stat_of "$NA" sa$i tx_bytes)
		before[b$i]=$(stat_of "$NB" sb$i rx_bytes)
	done
	args=(--shm "$TMP/$mode.shm" --mode "$mode" --sizes $SIZES --reps 1 --max-sec 60)
	netns_start "$NB" "$TMP/$mode-recv.log" timeout -k 5 120 "$SB" --role recv --dev afxdp:sb1,afxdp:sb2 "${args[@]}"
	rpid=$NETNS_PID
	ip netns exec "$NA" timeout -k 5 120 "$SB" --role send --dev afxdp:sa1,afxdp:sa2 "${args[@]}" \
		>"$TMP/$mode-send.log" 2>&1
	src=$?
	netns_wait $rpid; rrc=$?
	[ $src = 0 ] && [ $rrc = 0 ] || fail "$mode: sender exited $src, receiver $rrc"
	n=$(grep -c '^stripe_bench xfer ' "$TMP/$mode-recv.log")
	[ "$n" = 12 ] || fail "$mode: $n transfers, wanted 12"
	grep '^stripe_bench xfer ' "$TMP/$mode-recv.log" | grep -v ' bad=0 ' && fail "$mode: words not as written"
	grep -q '^stripe_bench xfer size=8388608 kind=all qps=2 shards=2 ' "$TMP/$mode-recv.log" ||
		fail "$mode: 8 MiB did not go as two shards"
	grep -q '^stripe_bench xfer size=65536 kind=all qps=2 shards=1 ' "$TMP/$mode-recv.log" ||
		fail "$mode: 64 KiB did not go as one shard"
	for i in 1 2; do
		d[$i]=$(($(stat_of "$NA" sa$i tx_bytes) - before[a$i]))
		r[$i]=$(($(stat_of "$NB" sb$i rx_bytes) - before[b$i]))
	done
	# pair 2 carried the second half of every striped transfer (headers
	# only add); pair 1 the rest: the one-port transfers and first halves
	want2=$((STRIPED / 2 - 3 * 4096))
	want1=$((ALL + (ALL - STRIPED) + STRIPED / 2 - 3 * 4096))
	[ "${d[2]}" -ge $want2 ] && [ "${r[2]}" -ge $want2 ] ||
		fail "$mode: pair 2 carried ${d[2]} / ${r[2]} bytes (sa2 sent / sb2 received), wanted >= $want2"
	[ "${d[1]}" -ge $want1 ] && [ "${r[1]}" -ge $want1 ] ||
		fail "$mode: pair 1 carried ${d[1]} / ${r[1]} bytes, wanted >= $want1"
	# uroce's own counters: both ports of both ends moved the bytes
	for role in send recv; do
		b=$(sed -n 's/^stripe_bench ports role=[a-z]* bytes=//p' "$TMP/$mode-$role.log")
		p1=${b%%,*} p2=${b##*,}
		[ -n "$b" ] && [ "$p1" -ge $want1 ] && [ "$p2" -ge $want2 ] ||
			fail "$mode: uroce's $role port counters '$b', wanted >= $want1,$want2"
	done
	echo "ok: $mode: 12 transfers (6 sizes, 1 port and 2), every word checked; pair 1 sa1 sent ${d[1]} bytes," \
		"sb1 received ${r[1]}; pair 2 ${d[2]} and ${r[2]}"
	rm -f "$TMP/$mode.shm"
	sleep 0.5 # the AF_XDP sockets go with the processes
done
echo "stripe: all passed"
