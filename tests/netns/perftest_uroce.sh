#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce-perf's perftest-compatible modes, uroce to uroce: a server and a
# client on afxdp ports at the two ends of a veth pair (one namespace each),
# perftest's TCP exchange through the kernel on the same veth (the XDP
# program passes it). All six modes over RC at two sizes (one of many
# packets), send_bw and send_lat over UD too, UC for write_bw and send_lat;
# both sides must exit 0 and print perftest's table with the right sizes
# and iteration counts. A client written from perftest's source checks the
# exchange byte for byte. Then bad arguments: exit 2 and a clear message.
# No rate is asserted.
#   perftest_uroce.sh UROCE_PERF
set -u
. "$(dirname "$0")/../lib/netns.sh"
PERF=${1:?usage: perftest_uroce.sh UROCE_PERF}

IPA=10.83.0.1
IPB=10.83.0.2
TCP_PORT=$((20000 + $$ % 10000))
netns_test uroce-pt
NETNS_LOG_LINES=40

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24
ip netns exec "$NA" ping -c 2 -i 0.2 -W 2 $IPB >/dev/null 2>&1 || fail "no IP path across the veth pair"

BW_HDR='#bytes     #iterations    BW peak\[MB/sec\]    BW average\[MB/sec\]   MsgRate\[Mpps\]'
LAT_HDR='#bytes #iterations    t_min\[usec\]    t_max\[usec\]  t_typical\[usec\]    t_avg\[usec\]    t_stdev\[usec\]   99% percentile\[usec\]   99.9% percentile\[usec\]'

# row_ok LOG SIZE ITERS: a result row for SIZE with ITERS iterations.
row_ok() { grep -Eq "^ $2 +$3 +[0-9]" "$1"; }

# one MODE CONN SIZE ITERS [extra args]: server in NB, client in NA.
one() {
	local mode=$1 conn=$2 size=$3 iters=$4 tag rows
	shift 4
	# perftest's #iterations column counts the messages of all QPs
	rows=$iters
	[ "${1:-}" = -q ] && rows=$((iters * $2))
	tag="$mode-$conn-$size"
	netns_start "$NB" "$TMP/$tag-server.log" timeout 120 "$PERF" "$mode" -d afxdp:vb -x 1 -c "$conn" -s "$size" \
		-n "$iters" -p $TCP_PORT --timeout 20 -F "$@"
	local spid=$NETNS_PID
	timeout 120 ip netns exec "$NA" "$PERF" "$mode" -d afxdp:va -x 1 -c "$conn" -s "$size" -n "$iters" \
		-p $TCP_PORT --timeout 20 -F "$@" $IPB >"$TMP/$tag-client.log" 2>&1
	local crc=$?
	netns_wait $spid
	local src=$?
	[ $crc = 0 ] || fail "$tag: client exited $crc"
	[ $src = 0 ] || fail "$tag: server exited $src"
	case $mode in
	*_bw)
		for side in client server; do
			grep -Eq -- "$BW_HDR" "$TMP/$tag-$side.log" || fail "$tag: $side printed no bw table"
		done
		row_ok "$TMP/$tag-client.log" "$size" $rows || fail "$tag: client has no row for $size x $rows"
		# write/read_bw servers print the client's row; send_bw servers their own
		row_ok "$TMP/$tag-server.log" "$size" $rows || fail "$tag: server has no row for $size x $rows"
		;;
	read_lat)
		grep -Eq -- "$LAT_HDR" "$TMP/$tag-client.log" || fail "$tag: client printed no lat table"
		row_ok "$TMP/$tag-client.log" "$size" $rows || fail "$tag: client has no row for $size x $rows"
		grep -q -- '-----------------' "$TMP/$tag-server.log" || fail "$tag: server printed no result line"
		;;
	*_lat)
		for side in client server; do
			grep -Eq -- "$LAT_HDR" "$TMP/$tag-$side.log" || fail "$tag: $side printed no lat table"
			row_ok "$TMP/$tag-$side.log" "$size" $rows || fail "$tag: $side has no row for $size x $rows"
		done
		;;
	esac
	echo "ok: $tag ($rows iterations): $(grep -E "^ $size +$rows " "$TMP/$tag-client.log" | head -1)"
	rm -f "$TMP/$tag-"*.log
}

for mode in write_bw read_bw send_bw; do
	one $mode RC 64 500
	one $mode RC 65536 200 # 64 packets each at the veth's MTU 1024
done
for mode in write_lat read_lat send_lat; do
	one $mode RC 2 200
	one $mode RC 8192 100 # 8 packets each way
done
one send_bw UD 512 200
one send_bw UD 1024 200 # a full MTU
one send_lat UD 64 100
one write_bw UC 4096 200
one send_lat UC 2048 100
one write_bw RC 4096 200 -q 2 # two QPs: each is in the exchange

# The exchange byte for byte: a client written from perftest's
# perftest_communication.c (not from our code) talks to a uroce-perf
# server; the write/read_bw and read_lat servers need no traffic for it.
cat >"$TMP/fake_client.py" <<'PYEOF'
import re, socket, struct, sys, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = None
for _ in range(200):
    try:
        s = socket.create_connection((host, port), timeout=20)
        break
    except OSError:
        time.sleep(0.1)
if s is None:
    sys.exit("fake client: cannot connect")
s.settimeout(20)
def rd(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit("fake client: server closed after %d of %d bytes" % (len(b), n))
        b += c
    return b
def xchg(mine):
    s.sendall(mine)
    return rd(len(mine))
KEY = re.compile(rb"^([0-9a-f]{4}):([0-9a-f]{4}):([0-9a-f]{6}):([0-9a-f]{6}):([0-9a-f]{8}):([0-9a-f]{16}):((?:[0-9a-f]{2}:){16})([0-9a-f]{8}):\x00$")
def hs():
    mine = b"0000:0010:0000aa:123456:00001234:00007f0000001000:" + \
        b"".join(b"%02x:" % x for x in [0]*10 + [255, 255, 10, 83, 0, 1]) + b"00000000:\x00"
    assert len(mine) == 108, len(mine)
    t = xchg(mine)
    m = KEY.match(t)
    if not m:
        sys.exit("fake client: malformed key message %r" % t)
    gid = bytes(int(x, 16) for x in m.group(7).split(b":")[:16])
    if gid != bytes([0]*10 + [255, 255, 10, 83, 0, 2]):
        sys.exit("fake client: server GID %s is not ::ffff:10.83.0.2" % gid.hex())
    if int(m.group(3), 16) == 0 or int(m.group(5), 16) == 0 or int(m.group(6), 16) == 0:
        sys.exit("fake client: QPN, RKEY and VADDR must be set: %r" % t)
    return m
v = xchg(b"6.06".ljust(16, b"\x00"))
if v.rstrip(b"\x00") != b"6.06" or len(v) != 16:
    sys.exit("fake client: version %r" % v)
if struct.unpack(">i", xchg(struct.pack(">i", 4096)))[0] != 4096:
    sys.exit("fake client: cycle buffer")
if struct.unpack(">i", xchg(struct.pack(">i", 64)))[0] != 64:
    sys.exit("fake client: cache line")
mtu = xchg(b"3\x00")
if mtu not in (b"3\x00", b"1\x00", b"2\x00"):
    sys.exit("fake client: MTU message %r" % mtu)
if mode in ("write_bw", "read_bw"):
    hs(); hs(); hs()                 # per QP; after RTR; per QP again
    hs()                             # the client's end
    rep = [struct.pack(">Q", 65536), struct.pack(">Q", 4321), struct.pack(">d", 1234.5),
           struct.pack(">d", 1111.25), struct.pack(">d", 0.017781)]
    for r in rep:
        xchg(r)                      # the server's numbers are not used
elif mode == "read_lat":
    hs(); hs(); hs(); hs()           # one; per QP; per QP again; after RTR
hs()                                 # close
s.sendall(b"done\x00")
if rd(5) != b"done\x00":
    sys.exit("fake client: no done from the server")
print("fake client: %s exchange ok" % mode)
PYEOF
for mode in write_bw read_bw read_lat; do
	netns_start "$NB" "$TMP/fake-$mode-server.log" timeout 60 "$PERF" $mode -d afxdp:vb -p $TCP_PORT --timeout 20
	spid=$NETNS_PID
	timeout 60 ip netns exec "$NA" python3 "$TMP/fake_client.py" $mode $IPB $TCP_PORT >"$TMP/fake-$mode-client.log" 2>&1 ||
		fail "$mode: the perftest-format client failed"
	netns_wait $spid || fail "$mode: server exited $? against the perftest-format client"
	if [ $mode != read_lat ]; then
		grep -Eq '^ 65536 +4321 +1234\.50 +1111\.25[[:space:]]+0\.017781' "$TMP/fake-$mode-server.log" ||
			fail "$mode: the server did not print the client's report"
	fi
	echo "ok: $(cat "$TMP/fake-$mode-client.log")"
	rm -f "$TMP/fake-$mode-"*.log
done

# Bad arguments: a clear message, exit status 2, nothing started.
expect_usage_error() { netns_usage_error "$1" "$PERF" "${@:2}"; } # EXPECTED_TEXT ARGS...
expect_usage_error "is accepted for send_bw and send_lat only" write_bw -d afxdp:va -c UD
expect_usage_error "UC has no RDMA READ" read_bw -d afxdp:va -c UC
expect_usage_error "accepted RC, UC, UD" send_bw -d afxdp:va -c XRC
expect_usage_error "accepted 256, 512, 1024, 2048, 4096" write_bw -d afxdp:va -m 1500
expect_usage_error "-x/--gid-index '300' is not a number in 0..255" write_bw -d afxdp:va -x 300
expect_usage_error "-u/--qp-timeout '32' is not a number in 0..31" write_bw -d afxdp:va -u 32
expect_usage_error "--idle-yield-us '-1': accepted 0..1000000" write_bw -d afxdp:va --idle-yield-us -1
expect_usage_error "--idle-yield-us '2000000': accepted 0..1000000" write_bw -d afxdp:va --idle-yield-us 2000000
expect_usage_error "--idle-yield-us 'soon': accepted 0..1000000 (microseconds without work before the transport yields the CPU) or off" write_bw -d afxdp:va --idle-yield-us soon
expect_usage_error "rdma_cm" write_bw -d afxdp:va -R
expect_usage_error "perftest's --use_cuda" write_bw -d afxdp:va --use_cuda=0
expect_usage_error "-d SPEC is required" write_lat
expect_usage_error "accepted: raw, write_bw" bogus_bw

# A client with no server: bounded wait, exit 1.
out=$(timeout 30 ip netns exec "$NA" "$PERF" write_bw -d afxdp:va -p $TCP_PORT --timeout 2 $IPB 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "Couldn't connect to $IPB:$TCP_PORT within 2 s" <<<"$out" || fail "client without a server: exit $rc, '$out'"
echo "PASS: perftest-compatible modes, uroce to uroce"
