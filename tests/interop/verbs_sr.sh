#!/bin/bash
# SPDX-License-Identifier: MIT
# sr and ec over a verbs port on the kernel's Soft-RoCE: uroce's engine
# keeps the decisions (SACKs, RACK, retransmissions, parity and its
# rebuilding, paths) and hands each segment to the NIC's UC QPs, keyed by
# immediate. Two guests (srv, cli) and a host-side AF_XDP peer on the lab
# bridge. Every pingpong case runs uroce-pingpong with -c (--chk: every
# buffer's bytes checked) and must complete every iteration; the first
# five cases run once with sr and once with ec, and with be (below):
#   afxdp      guest on verbs:rxe0 against the host on AF_XDP (--imm-keyed),
#              both roles: one connection, a NIC end and a frame end; and
#              uroce-perf send_bw (64 KiB x 200, 4 QPs) the same way;
#   verbs      guest against guest, both on verbs:rxe0;
#   loss       the same three with 1% of the RoCEv2 packets dropped as they
#              enter the lab bridge from each end (uroce-impair's XDP on the
#              host's bridge port and on both guests' taps): the engine
#              resends what was lost;
#   be         be (best effort, bounded completion) keyed the same way:
#              the three pingpongs lossless, data checked; uroce-perf
#              send_bw with --allow-partial lossless and at 1% loss, where
#              the receiving end must report the receives that ended
#              before they were whole and the bytes not placed;
#   paths      8 paths from the guest: the NIC's UDP source ports, one per
#              UC QP, counted in a capture at the bridge: 9 ports carried
#              the guest's packets (the 8 of the pool, the control QP's);
#   rc pool    guest to guest over a pool of RC QPs (--nic-rc, a NIC
#              without UC): sr on 4 paths (5 source ports of srv's on the
#              wire: every pool QP was paired through the POOL message), ec
#              on 2, be, and sr at 1% loss;
#   cc         congestion control in the engine at 1% loss: cubic on 4
#              paths guest to guest, swift against the host;
#   mismatch   a verbs end against an AF_XDP end without --imm-keyed, and
#              an RC pool against UC QPs: both ends say what differs and
#              exit 1.
#
#   verbs_sr.sh VMLAB_SH UROCE_PINGPONG_BIN UROCE_PERF_BIN UROCE_IMPAIR_BIN
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 4 ] || { echo "usage: $0 VMLAB_SH UROCE_PINGPONG_BIN UROCE_PERF_BIN UROCE_IMPAIR_BIN" >&2; exit 2; }
VMLAB=$1 PP=$2 PERF=$3 IMPAIR=$4
for b in "$PP" "$PERF" "$IMPAIR"; do [ -x "$b" ] || { echo "FAIL: $b not found" >&2; exit 1; }; done
for t in ping tcpdump; do
	command -v $t >/dev/null || { echo "FAIL: $t not found (apt-get install iputils-ping tcpdump)" >&2; exit 1; }
done

vm_lab_vars uvvsr uvs0 verbs-sr
N=300
SIZE=16384

vm_case_traps
in_lab() { ip netns exec "$UROCE_VMLAB_LAB" "$@"; }

vm_boot_host
"$VMLAB" boot cli "$CLI_IP" >/dev/null
U="$vm_uroce_env /tmp/u"
for g in srv cli; do vm_put_uroce "$g" "$PP" "$PERF"; done

G="$U/uroce-pingpong rc -d verbs:rxe0 -g 1 -n $N -s $SIZE -c"
H="$PP rc -d afxdp:$IFACE -g 1 -n $N -s $SIZE -c --imm-keyed"

# guests SERVER_GUEST CLIENT_GUEST EXTRA_OPTS: srv's uroce-pingpong serves
# cli's, both on verbs
guests() {
	local job src=0 crc=0
	echo "=== $CASE"
	job=$("$VMLAB" start srv "$G $3")
	wait_listening_in srv 18515 || fail "server never listened: $("$VMLAB" output srv "$job")"
	"$VMLAB" exec cli --timeout 120 "$G $3 $SRV_IP" >"$WORK/cli.out" 2>&1 || crc=$?
	"$VMLAB" wait srv "$job" --timeout 60 >"$WORK/srv.out" 2>&1 || src=$?
	sed 's/^/  srv: /' "$WORK/srv.out"
	sed 's/^/  cli: /' "$WORK/cli.out"
	[ $src = 0 ] && [ $crc = 0 ] || fail "srv exit $src, cli exit $crc"
	grep -q "$N iters in" "$WORK/srv.out" && grep -q "$N iters in" "$WORK/cli.out" || fail "an end lacks '$N iters in'"
	PASSED=$((PASSED + 1))
}

# -u 18: retries for 8 x 1.07 s, not perftest's 8 x 67 ms: a TCG guest's
# engine, rxe and the sanitizer build make RTTs of tens of milliseconds,
# and 4 QPs at 1% loss resend a packet several times within one RTO ladder
GP="$U/uroce-perf send_bw -d verbs:rxe0 -x 1 -s 65536 -n 200 -q 4 -u 18 --counters"
HP="$PERF send_bw -d afxdp:$IFACE -x 1 -s 65536 -n 200 -q 4 -u 18 --imm-keyed --counters"

# both_roles RELIABILITY WHAT
both_roles() {
	local r="--reliability $1" what="$1$2"
	CASE="afxdp $what: host (AF_XDP) serves guest (verbs)"
	vm_host_serves "$H $r" "$G $r" "$N iters in"
	CASE="afxdp $what: guest (verbs) serves host (AF_XDP)"
	vm_guest_serves "$G $r" "$H $r" "$N iters in"
	CASE="verbs $what: guest serves guest"
	guests srv cli "$r"
	# perftest's report line: size, iterations (4 QPs x 200), peak and average MB/s
	CASE="perf $what: uroce-perf send_bw, host (AF_XDP) serves guest (verbs)"
	vm_host_serves "$HP $r" "$GP $r" '^ 65536 +800 '
	CASE="perf $what: uroce-perf send_bw, guest (verbs) serves host (AF_XDP)"
	vm_guest_serves "$GP $r" "$HP $r" '^ 65536 +800 '
}

# be_cases WHAT: pingpongs with a receive deadline of 2 s (a TCG guest's
# round trip takes tens of milliseconds). be has no flow control: the host
# sends faster than rxe in a TCG guest takes, so the guest loses much of
# it; perf runs take what arrived (--allow-partial), 25 messages a QP with
# 200 ms deadlines so that receives ending at their deadline stay within
# the tools' exchange timeout; at 1% loss the receiving end must say what
# it lost
BE="--reliability be --timeout-us 2000000"
BEP="-n 25 --reliability be --timeout-us 200000 --allow-partial --counters"
GPB="$U/uroce-perf send_bw -d verbs:rxe0 -x 1 -s 65536 -q 4 $BEP"
HPB="$PERF send_bw -d afxdp:$IFACE -x 1 -s 65536 -q 4 --imm-keyed $BEP"
be_cases() {
	local what=$1
	if [ -z "$what" ]; then
		CASE="afxdp be: host (AF_XDP) serves guest (verbs)"
		vm_host_serves "$H $BE" "$G $BE" "$N iters in"
		CASE="afxdp be: guest (verbs) serves host (AF_XDP)"
		vm_guest_serves "$G $BE" "$H $BE" "$N iters in"
		CASE="verbs be: guest serves guest"
		guests srv cli "$BE"
	fi
	CASE="perf be$what: uroce-perf send_bw --allow-partial, host (AF_XDP) serves guest (verbs)"
	vm_host_serves "$HPB" "$GPB" '^ 65536 +100 '
	[ -z "$what" ] || grep -q "bytes not placed" "$WORK/host.out" || fail "the receiving host did not report the loss"
	CASE="perf be$what: uroce-perf send_bw --allow-partial, guest (verbs) serves host (AF_XDP)"
	vm_guest_serves "$GPB" "$HPB" '^ 65536 +100 '
	[ -z "$what" ] || grep -q "bytes not placed" "$WORK/guest.out" || fail "the receiving guest did not report the loss"
}

both_roles sr ""
both_roles ec ""
be_cases ""

# 1% of what each end sends, dropped where it enters the bridge: the
# host's veth and each guest's tap (seeded)
seed=7
for dev in vp-host tp-srv tp-cli; do
	in_lab "$IMPAIR" $dev --drop 0.01 --seed $seed | sed 's/^/  /'
	seed=$((seed + 1))
done
both_roles sr " at 1% loss"
both_roles ec " at 1% loss"
be_cases " at 1% loss"
total=0
for dev in vp-host tp-srv tp-cli; do
	stats=$(in_lab "$IMPAIR" $dev --stats)
	echo "  $dev: $stats"
	in_lab "$IMPAIR" $dev --off >/dev/null
	dropped=$(sed -n 's/.*dropped=\([0-9]*\).*/\1/p' <<<"$stats")
	total=$((total + ${dropped:-0}))
done
[ "$total" -gt 0 ] || fail "uroce-impair dropped nothing"

# cap_start / cap_ports N: a capture of srv's RoCEv2 packets on the lab
# bridge (AF_XDP takes the host's packets before a capture there could);
# cap_ports stops it and wants them from exactly N UDP source ports.
# ip netns exec execs tcpdump, so $! is tcpdump
cap_start() {
	: >"$WORK/tcpdump.err"
	ip netns exec "$UROCE_VMLAB_LAB" tcpdump -Z root -i br0 -s 128 -B 32768 --immediate-mode -U -nn \
		-w "$WORK/paths.pcap" "udp dst port 4791 and src host $SRV_IP" </dev/null >/dev/null 2>"$WORK/tcpdump.err" &
	CAP=$!
	for _ in $(seq 100); do
		grep -q 'listening on' "$WORK/tcpdump.err" && break
		sleep 0.1
	done
}
cap_ports() {
	local want=$1 what=$2 ports
	sleep 0.5
	kill "$CAP"
	wait "$CAP" 2>/dev/null || true
	ports=$(tcpdump -r "$WORK/paths.pcap" -nn 2>/dev/null | sed -n "s/.* $SRV_IP\.\([0-9]*\) > .*/\1/p" | sort | uniq -c)
	echo "$ports" | sed 's/^/  packets from source port: /'
	[ "$(echo "$ports" | grep -c .)" = "$want" ] ||
		fail "srv's packets came from $(echo "$ports" | grep -c .) source ports, not $want ($what)"
}

# 8 paths from the guest: each UC QP's source port on the wire
CASE="paths: 8 paths from the guest (verbs), each its own UDP source port"
cap_start
vm_guest_serves "$G --reliability sr --paths 8 --spray-min 1" "$H --reliability sr" "$N iters in"
cap_ports 9 "8 paths and the control QP"

# the RC pool (a NIC without UC), guest to guest: each pool QP paired with
# the peer's through the POOL message; the srv's packets (its data, and its
# RC ACKs of cli's on the same QPs) from 4 pool QPs and the control QP
CASE="rc pool: sr over 4 RC QPs, guest serves guest"
cap_start
guests srv cli "--reliability sr --nic-rc --paths 4 --spray-min 1"
cap_ports 5 "4 RC pool QPs and the control QP"
CASE="rc pool: ec over 2 RC QPs, guest serves guest"
guests srv cli "--reliability ec --nic-rc --paths 2 --spray-min 1"
CASE="rc pool: be, guest serves guest"
guests srv cli "$BE --nic-rc"
for dev in tp-srv tp-cli; do
	in_lab "$IMPAIR" $dev --drop 0.01 --seed 11 | sed 's/^/  /'
done
CASE="rc pool: sr over 4 RC QPs at 1% loss, guest serves guest"
guests srv cli "--reliability sr --nic-rc --paths 4 --spray-min 1"
for dev in tp-srv tp-cli; do
	echo "  $dev: $(in_lab "$IMPAIR" $dev --stats)"
	in_lab "$IMPAIR" $dev --off >/dev/null
done

# congestion control in the engine over the NIC's QPs: cubic (loss and
# SACKs) on 4 paths, guest to guest; swift (delay, from the engine's own
# send times and SACK arrivals) against the host, its base RTT a TCG
# guest's (tens of milliseconds); both at 1% loss. The swift case: 20
# iterations, and a packet given up after 8 timeouts of 2^18 x 4.096 us
# (-u 18), not 67 ms: the guest's RTT is 20-90 ms and its stalls longer,
# so most of the host's timeouts and tail-loss probes are spurious, each
# halving swift's windows (1-2 s per 16 KiB ping-pong here)
for dev in vp-host tp-srv tp-cli; do
	in_lab "$IMPAIR" $dev --drop 0.01 --seed 13 | sed 's/^/  /'
done
CASE="cc: sr with cubic on 4 paths at 1% loss, guest serves guest"
guests srv cli "--reliability sr --cc cubic --paths 4 --spray-min 1"
CASE="cc: sr with swift at 1% loss, host (AF_XDP) serves guest (verbs)"
SW="--reliability sr --cc swift --base-rtt-us 40000 -u 18"
vm_host_serves "${H/-n $N/-n 20} $SW" "${G/-n $N/-n 20} $SW" "20 iters in"
for dev in vp-host tp-srv tp-cli; do
	in_lab "$IMPAIR" $dev --off >/dev/null
done

CASE="mismatch: an RC pool against UC QPs"
echo "=== $CASE"
job=$("$VMLAB" start srv "$G --reliability sr --nic-rc")
wait_listening_in srv 18515 || fail "server never listened: $("$VMLAB" output srv "$job")"
crc=0
"$VMLAB" exec cli --timeout 60 "$G --reliability sr $SRV_IP" >"$WORK/cli.out" 2>&1 || crc=$?
src=0
"$VMLAB" wait srv "$job" --timeout 30 >"$WORK/srv.out" 2>&1 || src=$?
sed 's/^/  srv: /' "$WORK/srv.out"
sed 's/^/  cli: /' "$WORK/cli.out"
[ $src = 1 ] && [ $crc = 1 ] || fail "srv exit $src, cli exit $crc; expected 1 and 1"
grep -q "give both ends --nic-rc" "$WORK/srv.out" && grep -q "give both ends --nic-rc" "$WORK/cli.out" ||
	fail "an end does not say what differs"
PASSED=$((PASSED + 1))

CASE="mismatch: a verbs end against an AF_XDP end without --imm-keyed"
echo "=== $CASE"
job=$("$VMLAB" start srv "$G --reliability sr")
wait_listening 18515 || fail "guest never listened"
hrc=0
in_host timeout 60 $PP rc -d afxdp:$IFACE -g 1 -n 5 --reliability sr "$SRV_IP" >"$WORK/host.out" 2>&1 || hrc=$?
grc=0
"$VMLAB" wait srv "$job" --timeout 30 >"$WORK/guest.out" 2>&1 || grc=$?
sed 's/^/  guest: /' "$WORK/guest.out"
sed 's/^/  host: /' "$WORK/host.out"
[ $hrc = 1 ] && [ $grc = 1 ] || fail "host exit $hrc, guest exit $grc; expected 1 and 1"
grep -q "keyed by immediate" "$WORK/host.out" || fail "the host does not say what differs"
grep -q "keyed by immediate" "$WORK/guest.out" || fail "the guest does not say what differs"
PASSED=$((PASSED + 1))

echo "verbs_sr: $PASSED cases passed"
