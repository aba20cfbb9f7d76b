#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-impair on a routed link: A -- M -- B, M a Linux router whose ingress
# interfaces carry the impairment. Checks the tool's argument errors, that
# the program outlives the tool, refuses an interface with another XDP
# program, drops only RoCEv2 (IPv4, IPv6, 802.1Q) and passes the rest, that
# an RC uroce-pingpong --chk recovers every message by retransmission, that
# the drop pattern is the documented seeded one (the same seed drops the
# same packets of a fixed sequence, --burst drops runs) and that --off
# detaches it.
#   impair.sh UROCE_IMPAIR UROCE_PINGPONG
set -u
. "$(dirname "$0")/../lib/netns.sh"
IMPAIR=${1:?usage: impair.sh UROCE_IMPAIR UROCE_PINGPONG}
PP=${2:?usage: impair.sh UROCE_IMPAIR UROCE_PINGPONG}
netns_test uroce-impair

# ---- argument errors: exit 2 and a message saying what is accepted
expect_usage_error() { netns_usage_error "$1" "$IMPAIR" "${@:2}"; } # EXPECTED_TEXT ARGS...
expect_usage_error "no interface given" --stats
expect_usage_error "exactly one of --drop P, --stats, --off" lo
expect_usage_error "exactly one of --drop P, --stats, --off" lo --stats --off
expect_usage_error "accepted: a probability 0..1" lo --drop 2
expect_usage_error "accepted: a probability 0..1" lo --drop 101%
expect_usage_error "accepted: a probability 0..1" lo --drop abc
expect_usage_error "accepted: a probability 0..1" lo --drop 0.5x
expect_usage_error "accepted: 1..1000000" lo --drop 1% --burst 0
expect_usage_error "accepted: 0..2^64-1" lo --drop 1% --seed -3
expect_usage_error "go with --drop only" lo --stats --seed 3
expect_usage_error "accepted options" lo --frobnicate
expect_usage_error "at most 15 characters" averyveryverylongname --stats
out=$("$IMPAIR" nosuchif0 --stats 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no interface 'nosuchif0'" <<<"$out" || fail "missing interface: exit $rc, '$out'"
"$IMPAIR" --help | grep -q -- "--burst N" || fail "--help does not describe --burst"
# uroce-pingpong's --hop-limit: its range (the default, 64, crosses the router; rdma-core's AV says 1, the kernel sends 64)
out=$("$PP" rc -d afxdp:lo --hop-limit 0 2>&1); rc=$?
[ $rc = 2 ] && grep -q -- "--hop-limit.*1..255" <<<"$out" || fail "pingpong --hop-limit 0: exit $rc, '$out'"

# ---- the routed topology:  A a0 10.93.1.2 -- m0 10.93.1.1  M  m1 10.93.2.1 -- b0 10.93.2.2 B
netns_routed 10.93
netns_addr "$NA" a0 fd00:93:1::2/64
netns_addr "$NM" m0 fd00:93:1::1/64

m_impair() { ip netns exec "$NM" "$IMPAIR" "$@"; }
# stat DEV FIELD: one counter of the program on DEV in M
impair_stat() { m_impair "$1" --stats | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }
# impair_get VAR DEV FIELD: VAR = that counter, for arithmetic; fails the
# test when it cannot be read as a number (fail inside $(...) would not)
impair_get() {
	local v
	v=$(impair_stat "$2" "$3")
	[[ $v =~ ^[0-9]+$ ]] || fail "cannot read the counter $3 on $2: uroce-impair $2 --stats says '$(m_impair "$2" --stats 2>&1)'"
	printf -v "$1" %s "$v"
}

# ---- nothing attached yet: --stats and --off say so, exit 1
out=$(m_impair m0 --stats 2>&1) && fail "--stats with nothing attached succeeded: $out"
grep -q "no uroce-impair program attached" <<<"$out" || fail "--stats with nothing attached: '$out'"
out=$(m_impair m0 --off 2>&1) && fail "--off with nothing attached succeeded: $out"
grep -q "nothing to detach" <<<"$out" || fail "--off with nothing attached: '$out'"

# ---- udp_send NS DST PORT COUNT [FIRST]: COUNT UDP packets numbered FIRST.., paced
# so that no queue on the way drops one (the sequence the program sees is then
# exactly this one); udp_recv NS PORT FILE: the numbers that arrive, one a line,
# until 1 s passes without one.
udp_send() {
	ip netns exec "$1" python3 - "$2" "$3" "$4" "${5:-0}" <<'EOF'
import socket, struct, sys, time
dst, port, count, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET6 if ':' in dst else socket.AF_INET, socket.SOCK_DGRAM)
for i in range(first, first + count):
    s.sendto(struct.pack('!I', i) + bytes(60), (dst, port))
    if i % 32 == 31:
        time.sleep(0.002)
EOF
}
# vlan_send NS IF DSTMAC COUNT: COUNT IPv4/UDP 4791 frames with an 802.1Q tag, written
# raw (this kernel may lack 8021q); the program sees them, the kernel drops them.
vlan_send() {
	ip netns exec "$1" python3 - "$2" "$3" "$4" <<'EOF'
import socket, struct, sys
ifname, mac, count = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), int(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
src = s.getsockname()[4]
udp = struct.pack('!HHHH', 49152, 4791, 8 + 32, 0) + bytes(32)
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                 socket.inet_aton('10.93.1.2'), socket.inet_aton('10.93.1.1'))
frame = mac + src + struct.pack('!HHH', 0x8100, 5, 0x0800) + ip + udp
for _ in range(count):
    s.send(frame)
EOF
}
udp_recv_start() {
	netns_start "$1" "$3.log" python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# 2000 datagrams may wait while this process is off its CPU: a default
# buffer (about 300 of them) would drop some, counted as drops of the program
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE (root)
s.bind(("0.0.0.0", int(sys.argv[1])))
open(sys.argv[2] + ".ready", "w").close()
s.settimeout(5)
out = open(sys.argv[2], "w")
try:
    while True:
        d = s.recv(2048)
        out.write("%d\n" % struct.unpack("!I", d[:4])[0])
        out.flush()
        s.settimeout(1)
except socket.timeout:
    pass
' "$2" "$3"
	netns_wait_file "$3.ready" "$NETNS_PID" 5 || fail "UDP receiver did not start"
	RECV_PID=$NETNS_PID
}
udp_recv_wait() { netns_wait "$RECV_PID" || fail "UDP receiver failed"; }

# ---- attach with a seed; the attachment outlives the tool
m_impair m0 --drop 3% --burst 2 --seed 42 >"$TMP/attach.log" 2>&1 || fail "attach on m0: $(cat "$TMP/attach.log")"
m_impair m1 --drop 0.03 --burst 2 --seed 43 >>"$TMP/attach.log" 2>&1 || fail "attach on m1: $(cat "$TMP/attach.log")"
ip -n "$NM" link show dev m0 | grep -q "prog/xdp.*name xdp_impair" || fail "no xdp_impair on m0 after the tool exited"
ip -n "$NM" link show dev m1 | grep -q "prog/xdp.*name xdp_impair" || fail "no xdp_impair on m1 after the tool exited"
[ "$(impair_stat m0 dropped)" = 0 ] && [ "$(impair_stat m0 roce)" = 0 ] || fail "fresh counters are not zero: $(m_impair m0 --stats)"
m_impair m0 --stats | grep -q "drop=0.03 burst=2 seed=42" || fail "--stats does not show the configuration: $(m_impair m0 --stats)"

# ---- an RC connection through it: every message checked, losses recovered
netns_start "$NB" "$TMP/pp_server.log" timeout 60 "$PP" rc -d afxdp:b0 -g 1 --chk -s 16384 -n 300 \
	--hop-limit 64 --timeout 30 --counters
SPID=$NETNS_PID
netns_wait_tcp "$NB" 18515 "$SPID" 10 || fail "pingpong server did not listen"
# b0 now carries uroce's redirect program: uroce-impair must leave it alone
out=$(ip netns exec "$NB" "$IMPAIR" b0 --drop 1% 2>&1) && fail "attached over uroce's XDP program: $out"
grep -q "another XDP program" <<<"$out" || fail "attach over uroce's program: '$out'"
out=$(ip netns exec "$NB" "$IMPAIR" b0 --off 2>&1) && fail "--off detached uroce's XDP program: $out"
ip netns exec "$NA" timeout 60 "$PP" rc -d afxdp:a0 -g 1 --chk -s 16384 -n 300 --hop-limit 64 --timeout 30 \
	--counters 10.93.2.2 >"$TMP/pp_client.log" 2>&1 || fail "pingpong client failed"
netns_wait "$SPID" || fail "pingpong server failed"
for side in client server; do
	grep -q "^300 iters in" "$TMP/pp_$side.log" || fail "pingpong $side did not complete 300 iterations"
	grep -q "invalid data" "$TMP/pp_$side.log" && fail "pingpong $side found invalid data"
	grep -q "bad_icrc=" "$TMP/pp_$side.log" && fail "pingpong $side counted bad ICRCs"
done
rtx=$(cat "$TMP/pp_client.log" "$TMP/pp_server.log" | sed -n 's/^uroce counters: qp .* retransmits=\([0-9]*\) .*/\1/p' |
	awk '{ s += $1 } END { print s + 0 }')
impair_get d0 m0 dropped; impair_get d1 m1 dropped; impair_get r0 m0 roce; impair_get r1 m1 roce
dropped=$((d0 + d1)) roce=$((r0 + r1))
echo "pingpong rc --chk 300 x 16 KiB through the router: $dropped of $roce RoCEv2 packets dropped, $rtx retransmits"
[ "$dropped" -gt 0 ] || fail "the impairment dropped nothing ($(m_impair m0 --stats); $(m_impair m1 --stats))"
[ "$rtx" -gt 0 ] || fail "the QPs counted no retransmits although $dropped packets were dropped"

# ---- only RoCEv2 is dropped: everything at 100%
m_impair m0 --drop 100% >/dev/null || fail "attach --drop 100%"
ip netns exec "$NA" ping -c 2 -i 0.2 -W 2 10.93.2.2 >/dev/null || fail "ICMP did not pass --drop 100%"
udp_recv_start "$NB" 4792 "$TMP/other"
udp_send "$NA" 10.93.2.2 4792 200 || fail "UDP sender failed"
udp_recv_wait
[ "$(wc -l <"$TMP/other")" = 200 ] || fail "UDP to port 4792: $(wc -l <"$TMP/other") of 200 arrived under --drop 100%"
impair_get base_r m0 roce; impair_get base_d m0 dropped
udp_send "$NA" 10.93.1.1 4791 50 || fail "UDP sender failed (IPv4)"
udp_send "$NA" fd00:93:1::1 4791 50 || fail "UDP sender failed (IPv6)"
vlan_send "$NA" a0 "$(netns_mac "$NM" m0)" 50 || fail "raw sender failed (802.1Q)"
impair_get r m0 roce; impair_get d m0 dropped
r=$((r - base_r)) d=$((d - base_d))
[ "$r" = 150 ] && [ "$d" = 150 ] || fail "IPv4 + IPv6 + 802.1Q RoCEv2: saw $r, dropped $d, wanted 150 and 150"

# ---- the drop pattern: a model of the documented generator (splitmix64 of the
# seed, then xorshift64 per packet, drop when the top 32 bits < P * 2^32, then
# BURST-1 more) gives the packets that must be missing; the kernel's sequence
# must match it exactly, twice for the same seed.
model() { # SEED P BURST COUNT: the numbers the model drops
	python3 - "$@" <<'EOF'
import sys
M = (1 << 64) - 1
seed, p, burst, count = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
x = (seed + 0x9e3779b97f4a7c15) & M
x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
x ^= x >> 31
x = x or 0x9e3779b97f4a7c15
thr, left = round(p * (1 << 32)), 0
for i in range(count):
    if left:
        left -= 1
        print(i)
        continue
    x ^= (x << 13) & M
    x ^= x >> 7
    x ^= (x << 17) & M
    if (x >> 32) < thr:
        left = burst - 1
        print(i)
EOF
}
pattern_run() { # TAG SEED BURST: send 2000 through m0 (drop 5%), the missing numbers into TAG.missing
	m_impair m0 --drop 0.05 --burst "$3" --seed "$2" >/dev/null || fail "attach seed $2"
	udp_recv_start "$NB" 4791 "$TMP/$1"
	udp_send "$NA" 10.93.2.2 4791 2000 || fail "UDP sender failed"
	udp_recv_wait
	[ "$(impair_stat m0 roce)" = 2000 ] || fail "seed $2: the program saw $(impair_stat m0 roce) RoCEv2 packets, wanted 2000"
	seq 0 1999 | sort >"$TMP/all"
	sort "$TMP/$1" | comm -23 "$TMP/all" - | sort -n >"$TMP/$1.missing"
	[ "$(wc -l <"$TMP/$1.missing")" = "$(impair_stat m0 dropped)" ] ||
		fail "seed $2: $(wc -l <"$TMP/$1.missing") packets missing at B, the program dropped $(impair_stat m0 dropped)"
	model "$2" 0.05 "$3" 2000 >"$TMP/$1.model"
	cmp -s "$TMP/$1.missing" "$TMP/$1.model" ||
		fail "seed $2 burst $3: dropped packets differ from the model: $(diff "$TMP/$1.model" "$TMP/$1.missing" | head -5)"
}
pattern_run s7a 7 1
pattern_run s7b 7 1
pattern_run s8 8 1
pattern_run s7burst 7 4
cmp -s "$TMP/s7a.missing" "$TMP/s7b.missing" || fail "seed 7 twice: different packets dropped"
cmp -s "$TMP/s7a.missing" "$TMP/s8.missing" && fail "seeds 7 and 8 dropped the same packets"
[ "$(wc -l <"$TMP/s7burst.missing")" -gt "$(wc -l <"$TMP/s7a.missing")" ] || fail "--burst 4 dropped no more than --burst 1"
echo "drop pattern: seed 7 dropped $(wc -l <"$TMP/s7a.missing") of 2000 twice alike, seed 8 $(wc -l <"$TMP/s8.missing"), burst 4 $(wc -l <"$TMP/s7burst.missing"); all as the model"

# ---- --off detaches
m_impair m0 --off >/dev/null && m_impair m1 --off >/dev/null || fail "--off failed"
ip -n "$NM" link show dev m0 | grep -q "prog/xdp" && fail "m0 still carries an XDP program after --off"
m_impair m0 --stats >/dev/null 2>&1 && fail "--stats succeeded after --off"
echo "PASS"
