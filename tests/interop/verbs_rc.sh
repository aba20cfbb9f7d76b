#!/bin/bash
# SPDX-License-Identifier: MIT
# The verbs port on the kernel's Soft-RoCE: uroce's programs in vmlab guests
# on `-d verbs:rxe0`, where the NIC's own RC and UC QPs run the transport
# behind uroce's API. Two guests (srv, cli) and a host-side AF_XDP peer on
# the lab bridge. Cases, each bounded and each with its data checked
# (--chk / -c) where the program offers it:
#   rdma-core  uroce-pingpong rc|uc|ud on verbs against ibv_rc_pingpong /
#              ibv_uc_pingpong / ibv_ud_pingpong in the other guest, both
#              roles;
#   srq        verbs_srq: three RC QPs receiving through one SRQ of the NIC;
#   gids       verbs_gid_watch: an address added to the guest's interface
#              appears in the verbs port's GID table, with GID_CHANGE;
#   perftest   uroce-perf write_bw / read_bw on verbs against ib_write_bw /
#              ib_read_bw in the other guest;
#   afxdp      uroce-pingpong on verbs (guest) against uroce-pingpong on the
#              host's AF_XDP port, both roles: uroce's own RC meets the NIC's;
#   bad input  a device that does not exist (the message lists rxe0), a port
#              the device lacks, a device without a RoCEv2 GID (rxe1 on a
#              VLAN without addresses), sr with dcqcn on a verbs port (the
#              NIC keeps the CE marks; sr, ec and be run there with none,
#              swift or cubic: verbs_sr.sh).
#
#   verbs_rc.sh VMLAB_SH UROCE_PINGPONG_BIN UROCE_PERF_BIN VERBS_SRQ_BIN VERBS_GID_WATCH_BIN
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 5 ] || { echo "usage: $0 VMLAB_SH UROCE_PINGPONG_BIN UROCE_PERF_BIN VERBS_SRQ_BIN VERBS_GID_WATCH_BIN" >&2; exit 2; }
VMLAB=$1 PP=$2 PERF=$3 SRQ=$4 GIDW=$5
for b in "$PP" "$PERF" "$SRQ" "$GIDW"; do [ -x "$b" ] || { echo "FAIL: $b not found" >&2; exit 1; }; done
command -v ping >/dev/null || { echo "FAIL: ping not found (apt-get install iputils-ping)" >&2; exit 1; }

vm_lab_vars uvvrc uvp0 verbs-rc

vm_case_traps

vm_boot_host
"$VMLAB" boot cli "$CLI_IP" >/dev/null
U="$vm_uroce_env /tmp/u"
for g in srv cli; do vm_put_uroce "$g" "$PP" "$PERF" "$SRQ" "$GIDW"; done

# pair SERVER_GUEST SERVER_CMD CLIENT_GUEST CLIENT_CMD PORT [EXPECT...]
# The server starts, listens on PORT; the client runs; both must exit 0
# and the output of each must hold every EXPECT (an egrep pattern).
pair() {
	local srv_g=$1 srv_cmd=$2 cli_g=$3 cli_cmd=$4 port=$5 job src=0 crc=0
	shift 5
	echo "=== $CASE"
	job=$("$VMLAB" start "$srv_g" "$srv_cmd")
	wait_listening_in "$srv_g" "$port" || fail "server never listened: $("$VMLAB" output "$srv_g" "$job")"
	"$VMLAB" exec "$cli_g" --timeout 120 "$cli_cmd" >"$WORK/cli.out" 2>&1 || crc=$?
	"$VMLAB" wait "$srv_g" "$job" --timeout 60 >"$WORK/srv.out" 2>&1 || src=$?
	sed 's/^/  server: /' "$WORK/srv.out"
	sed 's/^/  client: /' "$WORK/cli.out"
	[ $src = 0 ] && [ $crc = 0 ] || fail "server exit $src, client exit $crc"
	for pat in "$@"; do
		grep -Eq "$pat" "$WORK/srv.out" || fail "server output lacks /$pat/"
		grep -Eq "$pat" "$WORK/cli.out" || fail "client output lacks /$pat/"
	done
	PASSED=$((PASSED + 1))
}

# rdma-core's pingpongs, uroce on either side, -c/--chk checking every buffer
for mode in rc uc ud; do
	size=8192
	[ $mode != ud ] || size=512 # one MTU
	CASE="$mode: uroce-pingpong on verbs serves ibv_${mode}_pingpong"
	pair srv "$U/uroce-pingpong $mode -d verbs:rxe0 -g 1 -n 200 -s $size -c" \
		cli "ibv_${mode}_pingpong -d rxe0 -g 1 -n 200 -s $size -c $SRV_IP" 18515 '200 iters in'
	CASE="$mode: ibv_${mode}_pingpong serves uroce-pingpong on verbs"
	pair srv "ibv_${mode}_pingpong -d rxe0 -g 1 -n 200 -s $size -c" \
		cli "$U/uroce-pingpong $mode -d verbs:rxe0 -g 1 -n 200 -s $size -c $SRV_IP" 18515 '200 iters in'
done

CASE="srq: three RC QPs receive through one SRQ of the NIC"
echo "=== $CASE"
"$VMLAB" exec srv --timeout 60 "$U/verbs_srq verbs:rxe0 1" >"$WORK/srq.out" 2>&1 || { cat "$WORK/srq.out"; fail "verbs_srq failed"; }
sed 's/^/  /' "$WORK/srq.out"
grep -q 'verbs_srq: PASS 30 SENDs over 3 QPs through one SRQ' "$WORK/srq.out" || fail "no PASS line"
PASSED=$((PASSED + 1))

# perftest: the NIC's keys and addresses travel in perftest's exchange
for t in write read; do
	CASE="perftest: uroce-perf ${t}_bw on verbs against ib_${t}_bw"
	pair srv "ib_${t}_bw -d rxe0 -x 1 -s 65536 -n 200" \
		cli "$U/uroce-perf ${t}_bw -d verbs:rxe0 -x 1 -s 65536 -n 200 $SRV_IP" 18515 '^ 65536 +200 '
done

# uroce's own RC over AF_XDP on the host against the NIC's in the guest
G="$U/uroce-pingpong rc -d verbs:rxe0 -g 1 -n 300 -s 16384 -c"
H="$PP rc -d afxdp:$IFACE -g 1 -n 300 -s 16384 -c"
CASE="afxdp: host uroce-pingpong (afxdp) serves guest uroce-pingpong (verbs)"
vm_host_serves "$H" "$G" '300 iters in'
CASE="afxdp: guest uroce-pingpong (verbs) serves host uroce-pingpong (afxdp)"
vm_guest_serves "$G" "$H" '300 iters in'

# the port's GID table follows the interface's addresses
CASE="gids: an address added to cli's eth0 appears in the verbs port's table"
echo "=== $CASE"
job=$("$VMLAB" start cli "$U/verbs_gid_watch verbs:rxe0 30")
for _ in $(seq 100); do
	"$VMLAB" output cli "$job" | grep -q '^watching' && break
	sleep 0.1
done
"$VMLAB" exec cli --timeout 10 "ip addr add $SUBNET.99/24 dev eth0" || fail "cannot add an address"
grc=0
"$VMLAB" wait cli "$job" --timeout 40 >"$WORK/gid.out" 2>&1 || grc=$?
sed 's/^/  /' "$WORK/gid.out"
[ $grc = 0 ] || fail "verbs_gid_watch exit $grc"
grep -q "^event GID table change port 1" "$WORK/gid.out" || fail "no GID_CHANGE event"
grep -q "^after gid [0-9]* ::ffff:$SUBNET.99\$" "$WORK/gid.out" || fail "::ffff:$SUBNET.99 is not in the table after"
! grep -q "^before gid [0-9]* ::ffff:$SUBNET.99\$" "$WORK/gid.out" || fail "::ffff:$SUBNET.99 was there before"
"$VMLAB" exec cli --timeout 10 "ip addr del $SUBNET.99/24 dev eth0" || fail "cannot remove the address"
PASSED=$((PASSED + 1))

# bad input: each refused with what is wrong and what is accepted
bad_in() {
	local g=$1 cmd=$2 rc=0
	shift 2
	echo "=== $CASE"
	"$VMLAB" exec "$g" --timeout 30 "$cmd" >"$WORK/bad.out" 2>&1 || rc=$?
	sed 's/^/  /' "$WORK/bad.out"
	[ $rc != 0 ] || fail "exit 0; expected a refusal"
	grep -Eq 'AddressSanitizer|runtime error' "$WORK/bad.out" && fail "sanitizer report"
	for pat in "$@"; do
		grep -Eq "$pat" "$WORK/bad.out" || fail "message lacks /$pat/"
	done
	PASSED=$((PASSED + 1))
}
CASE="bad input: no such device"
bad_in srv "$U/uroce-pingpong rc -d verbs:mlx5_9 -g 1" "no RDMA device 'mlx5_9'; devices present: rxe0"
CASE="bad input: no such port"
bad_in srv "$U/uroce-pingpong rc -d verbs:rxe0:2 -g 1" "'rxe0' has no port 2; accepted: 1-1"
CASE="bad input: sr with dcqcn on a verbs port"
bad_in srv "$U/uroce-pingpong rc -d verbs:rxe0 -g 1 --reliability sr --cc dcqcn 127.0.0.1" "sr, ec and be on a verbs port: accepted with .*cc none, swift or cubic"

# last, since it takes cli's addresses: a port whose interface lost its
# addresses keeps only its default GID (fe80:: from the MAC, which the
# kernel keeps for every RoCE port), and -g names an index past it. (A
# device with no RoCEv2 GID at all is refused at open, "has no RoCEv2
# GID"; rxe always has the default one, so that message is not reached
# here.)
CASE="bad input: a GID index the port no longer has"
"$VMLAB" exec cli --timeout 30 'sysctl -q -w net.ipv6.conf.eth0.disable_ipv6=1; ip addr flush dev eth0 &&
	for i in $(seq 100); do ibv_devinfo -v -d rxe0 | grep -q ffff: || exit 0; sleep 0.1; done;
	ibv_devinfo -v -d rxe0 | grep GID; exit 1' || fail "cli's rxe0 keeps its IPv4 GID after the address went"
bad_in cli "$U/uroce-pingpong rc -d verbs:rxe0 -g 1" "port 1 has 1 GIDs; index 1 is past the end \\(accepted: 0-0\\)"

echo "verbs_rc: $PASSED cases passed"
