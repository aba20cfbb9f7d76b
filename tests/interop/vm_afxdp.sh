#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce on AF_XDP inside two QEMU guests on virtio-net, the cloud-VM case:
# Debian's kernel (6.1, or 6.12 with --kernel 6.12), XDP in the virtio_net
# driver, and guest to guest over the lab bridge.
#   native    uroce-pingpong rc, then sr, guest to guest with every buffer
#             checked (-c): each port reports XDP native (--counters);
#   zc        the server asks for zero-copy (afxdp:eth0:0:zc), which these
#             kernels' virtio_net lack: the port says so and runs in copy
#             mode;
#   queue pairs  with as many queue pairs as vCPUs the port says XDP has
#             no TX queues of its own and what the device needs;
#   mtu 4000  (6.1) a frame past MTU 3502 needs multi-buffer AF_XDP, which
#             6.1 lacks (6.6): the refusal says so and names the MTU;
#   engines   (with --queues 2) two engines per guest on queues 0 and 1
#             (uroce-perf -d afxdp:eth0:0-1 --cores 0,1, 4 RC QPs): every
#             message completes, and on the receiving guest each engine got
#             its QPs' packets from its own queue: no engine saw a packet of
#             another's QP (no_qp=0), and what its queue's XDP redirected is
#             what it received (ethtool -S).
# With --queues 2 the guests have 2 vCPUs and eth0 2 queue pairs with the
# device's RSS (4, which would give XDP TX queues of its own, leave two
# receive queues idle, and QEMU's RSS stalls on those: docs/ports.md). The
# single-queue cases first send every flow to queue 0 (ethtool -X eth0
# equal 1): a one-engine port sees only the flows RSS gives its queue.
#
#   vm_afxdp.sh [--kernel 6.1|6.12] [--queues 1|2] VMLAB_SH UROCE_PINGPONG_BIN UROCE_PERF_BIN
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
KERNEL=6.1 QUEUES=2
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) KERNEL=$2; shift 2 ;;
	--queues) QUEUES=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 3 ] || { echo "usage: $0 [--kernel 6.1|6.12] [--queues 1|2] VMLAB_SH UROCE_PINGPONG_BIN UROCE_PERF_BIN" >&2; exit 2; }
VMLAB=$1 PP=$2 PERF=$3
for b in "$PP" "$PERF"; do [ -x "$b" ] || { echo "FAIL: $b not found" >&2; exit 1; }; done
case "$KERNEL" in
6.1) ;;
6.12) vm_use_612 ;;
*) echo "FAIL: --kernel '$KERNEL': accepted 6.1, 6.12" >&2; exit 2 ;;
esac
case "$QUEUES" in
1) SMP=1 ;;
2) SMP=2 ;;
*) echo "FAIL: --queues '$QUEUES': accepted 1, 2" >&2; exit 2 ;;
esac

vm_lab_vars "uvxdp${KERNEL/./}q$QUEUES-" uvx0 vm-afxdp
N=100
SIZE=16384
MTU=3500
vm_case_traps

vm_boot_pair $SMP $QUEUES $MTU "$PP" "$PERF"
U="$vm_uroce_env /tmp/u"

# run_pair SERVER_CMD CLIENT_CMD: the server in srv, its client in cli
# (given srv's address); outputs in $WORK/srv.out and $WORK/cli.out.
run_pair() {
	local job src=0 crc=0
	echo "=== $CASE"
	job=$("$VMLAB" start srv "$1")
	wait_listening_in srv 18515 || fail "server never listened: $("$VMLAB" output srv "$job")"
	"$VMLAB" exec cli --timeout 150 "$2 $SRV_IP" >"$WORK/cli.out" 2>&1 || crc=$?
	"$VMLAB" wait srv "$job" --timeout 90 >"$WORK/srv.out" 2>&1 || src=$?
	sed 's/^/  srv: /' "$WORK/srv.out"
	sed 's/^/  cli: /' "$WORK/cli.out"
	[ $src = 0 ] && [ $crc = 0 ] || fail "srv exit $src, cli exit $crc"
}

both() { for g in srv cli; do "$VMLAB" exec "$g" --timeout 20 "$1" || fail "$g: $1 failed"; done; }

# one engine per guest: every flow to queue 0
[ "$QUEUES" = 1 ] || both 'ethtool -X eth0 equal 1'

# -u 18: retries 8 x 1.07 s, not 8 x 67 ms: two TCG guests of two vCPUs on
# the host's cores, under the sanitizer build, stall for longer than that
G="$U/uroce-pingpong rc -g 1 -n $N -s $SIZE -c -u 18 --counters"
for rel in rc sr; do
	CASE="native $rel"
	run_pair "$G -d afxdp:eth0:0:zc --reliability $rel" "$G -d afxdp:eth0 --reliability $rel"
	for e in srv cli; do
		grep -q "$N iters in" "$WORK/$e.out" || fail "$e lacks '$N iters in'"
		grep -q "uroce port 1: XDP native" "$WORK/$e.out" || fail "$e's port is not in native XDP mode"
	done
	PASSED=$((PASSED + 1))
done
CASE=zc
grep -q "uroce port 1: .*zero-copy refused by virtio_net on eth0 queue 0 (.*): copy mode" "$WORK/srv.out" ||
	fail "the server asked for zero-copy but said nothing of its refusal"
grep -q "uroce port 1: XDP native, copy mode" "$WORK/srv.out" || fail "the server's port is not in copy mode"
! grep -q "zero-copy refused" "$WORK/cli.out" || fail "the client did not ask for zero-copy, yet noted its refusal"
echo "=== zc: refused by virtio_net and said; copy mode"
PASSED=$((PASSED + 1))

# as many queue pairs as vCPUs, all in use: XDP has no TX queues of its
# own, and the port says what the device needs
CASE="queue pairs"
grep -q "virtio_net on eth0: $QUEUES queue pairs in use of $QUEUES, and XDP wants $SMP more .*give the device $((QUEUES + SMP)) queue pairs" \
	"$WORK/srv.out" || fail "no note of the queue pairs XDP lacks"
echo "=== queue pairs: $QUEUES for $SMP vCPU(s), the shortfall said"
PASSED=$((PASSED + 1))

# past MTU 3502 a frame needs two buffers, and 6.1 has no multi-buffer
# AF_XDP (6.6): the port says so and what MTU works
if [ "$KERNEL" = 6.1 ]; then
	CASE="mtu 4000"
	"$VMLAB" exec srv --timeout 20 "/usr/sbin/ip link set eth0 mtu 4000" || fail "cannot set MTU 4000"
	"$VMLAB" exec srv --timeout 60 "$U/uroce-pingpong rc -d afxdp:eth0 -g 1 -n 1 127.0.0.1" >"$WORK/mtu.out" 2>&1 &&
		fail "the port opened at MTU 4000 on 6.1's virtio_net"
	sed 's/^/  srv: /' "$WORK/mtu.out"
	grep -q "eth0: the kernel refused multi-buffer AF_XDP (XDP_USE_SG, Linux 6.6+), which MTU 4000 needs with 4096-byte frames; lower the MTU to 3502 or less" \
		"$WORK/mtu.out" || fail "the refusal does not name the MTU limit"
	"$VMLAB" exec srv --timeout 20 "/usr/sbin/ip link set eth0 mtu $MTU" || fail "cannot restore MTU $MTU"
	echo "=== mtu 4000: refused on 6.1 (no multi-buffer AF_XDP), said"
	PASSED=$((PASSED + 1))
fi

if [ "$QUEUES" -gt 1 ]; then
	CASE=engines
	both "ethtool -X eth0 equal 2"
	redirects() { # redirects QUEUE: XDP redirects of srv's eth0 queue QUEUE so far
		# (6.1 names it rx_queue_N_xdp_redirects, 6.12 rxN_xdp_redirects)
		"$VMLAB" exec srv --timeout 20 "ethtool -S eth0" |
			awk -v a="rx_queue_$1_xdp_redirects:" -v b="rx$1_xdp_redirects:" '$1 == a || $1 == b { print $2 }'
	}
	r0=$(redirects 0) r1=$(redirects 1)
	[ -n "$r0" ] && [ -n "$r1" ] || fail "srv's ethtool -S has no per-queue XDP redirect counters"
	# few packets in flight (4 QPs x 4 x 4): TCG guests drain their rings late
	P="$U/uroce-perf write_bw -d afxdp:eth0:0-1 --cores 0,1 -q 4 -n $N -s 8192 -t 4 -u 18 --timeout 60"
	run_pair "$P" "$P"
	grep -Eq "^ 8192 +$((4 * N)) " "$WORK/cli.out" || fail "the client's table lacks $((4 * N)) messages of 8192 bytes"
	d0=$(($(redirects 0) - r0)) d1=$(($(redirects 1) - r1))
	for k in 0 1; do
		line=$(grep "^uroce engine $k: afxdp:eth0:$k on CPU $k: 2 QP(s)," "$WORK/srv.out") ||
			fail "srv reports no engine $k on queue $k and CPU $k with 2 QPs"
		rx=$(sed -n 's/.* rx_packets=\([0-9]*\) .*/\1/p' <<<"$line")
		noqp=$(sed -n 's/.* no_qp=\([0-9]*\),.*/\1/p' <<<"$line")
		eval "d=\$d$k"
		echo "  engine $k: received $rx packets, queue $k redirected $d, no_qp $noqp"
		[ "$noqp" = 0 ] || fail "engine $k got $noqp packets of QPs it does not own"
		[ "$rx" -gt 0 ] || fail "engine $k received nothing"
		# what the queue's XDP redirected reached its engine (the
		# kernel drops a few when the socket's ring is full)
		[ "$rx" -le "$d" ] && [ $((rx * 100)) -ge $((d * 95)) ] ||
			fail "engine $k received $rx packets but queue $k redirected $d"
	done
	PASSED=$((PASSED + 1))
fi

echo "PASS: $PASSED cases (kernel $KERNEL, $SMP vCPU, $QUEUES queue pair(s), MTU $MTU)"
