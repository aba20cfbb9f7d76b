#!/bin/bash
# Proof that a NIC could receive uroce's sr data packets: the kernel's
# rdma_rxe, in a vmlab guest, runs uc_sink, a UC QP that receives them and
# checks its memory. sr_uc_send, a uroce RC QP with reliability sr on an
# AF_XDP port in a host-side netns bridged to the guest, sends one RDMA WRITE
# (65636 bytes: 64 full packets and a 100-byte one at path MTU 1024) and one
# RDMA WRITE with immediate (3109 bytes: 3 full packets and a 37-byte one,
# pad 3). Every sr data packet is a UC WRITE Only (with Immediate) with its
# own RETH. No SACK comes back (a UC QP sends none; the control path is
# uroce to uroce), so the sender retransmits each packet once and its WRs end
# in RETRY_EXC_ERR and WR_FLUSH_ERR, which is expected.
#
# Passes when uc_sink prints PASS (both regions hold exactly the pattern,
# the guards around them are untouched, every data packet of the WRITE with
# immediate gave a RECV_RDMA_WITH_IMM completion whose immediate decodes to
# message 0, kind 0 or last, each index at least once), sr_uc_send exits 0,
# and uroce-pcap finds every RoCEv2 packet of the capture well-formed with a
# good ICRC.
#
#   sr_to_rxe_uc.sh VMLAB_SH SR_UC_SEND_BIN UC_SINK_C [UROCE_PCAP_BIN]
# Environment: UROCE_SR_UC_SEED (pattern seed, default 24301),
# UROCE_SR_UC_RETRY (the sender's retry_cnt, default 1).
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces, XDP, QEMU)"
	exit 77
fi
[ $# -ge 3 ] || { echo "usage: $0 VMLAB_SH SR_UC_SEND_BIN UC_SINK_C [UROCE_PCAP_BIN]" >&2; exit 2; }
VMLAB=$1 SENDER=$2 SINK_SRC=$3 PCAPTOOL=${4:-}
[ -x "$SENDER" ] || { echo "FAIL: sender binary $SENDER not found" >&2; exit 1; }
[ -f "$SINK_SRC" ] || { echo "FAIL: uc_sink source $SINK_SRC not found" >&2; exit 1; }
command -v ping >/dev/null || { echo "FAIL: ping not found (apt-get install iputils-ping)" >&2; exit 1; }
command -v cc >/dev/null || { echo "FAIL: no C compiler (cc) to build uc_sink for the guest" >&2; exit 1; }
[ -f /usr/include/infiniband/verbs.h ] ||
	{ echo "FAIL: uc_sink needs libibverbs-dev on the host (apt-get install libibverbs-dev)" >&2; exit 1; }

export UROCE_VMLAB_LAB=uvsruc$$
SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}
SRV_IP=$SUBNET.11
HOST_IP=$SUBNET.2
IFACE=uvp0
SEED=${UROCE_SR_UC_SEED:-24301}
RETRY=${UROCE_SR_UC_RETRY:-1}
WRITE_LEN=65636   # 64 x 1024 + 100
IMM_LEN=3109      # 3 x 1024 + 37
WORK=$(mktemp -d /tmp/uroce-sruc.XXXXXX)
SENDER_PID=
CAPTURE_PID=
T0=$(date +%s.%N)

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

elapsed() { echo "$(date +%s.%N) $T0" | awk '{printf "%.1f", $1 - $2}'; }

cleanup() {
	local rc=$?
	local pid
	for pid in "$SENDER_PID" "$CAPTURE_PID"; do
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	if [ $rc != 0 ] && [ -f "$WORK/booted" ]; then
		echo "--- guest console (tail):" >&2
		"$VMLAB" console srv 2>/dev/null | tail -n 15 >&2 || true
	fi
	"$VMLAB" down >/dev/null 2>&1 || true
	if [ $rc != 0 ] && [ -f "$WORK/capture.pcap" ]; then
		keep=/tmp/uroce-sruc-$$.pcap
		cp "$WORK/capture.pcap" "$keep" && echo "capture kept in $keep" >&2
	fi
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# uc_sink runs in the guest, which has Debian 12's libibverbs and the rxe
# provider; it is built here against the host's, as make-captures.sh builds
# rxe_imm.
cc -std=gnu11 -O2 -Wall -Wextra -o "$WORK/uc_sink" "$SINK_SRC" -libverbs ||
	fail "cannot compile $SINK_SRC"

"$VMLAB" setup
"$VMLAB" up
"$VMLAB" boot srv "$SRV_IP"
touch "$WORK/booted"
HOSTNS=$("$VMLAB" attach host "$HOST_IP" "$IFACE")
in_host() { ip netns exec "$HOSTNS" "$@"; }

ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
	if in_host ping -c 1 -W 1 "$SRV_IP" >/dev/null 2>&1; then
		ok=1
		break
	fi
done
[ $ok = 1 ] || fail "guest $SRV_IP does not answer ping from the host netns"
SINK=$("$VMLAB" put srv "$WORK/uc_sink")

rxe_counters() {
	"$VMLAB" exec srv --timeout 10 \
		'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f=$(cat $f)"; done' |
		tr '\n' ' '
}
counter() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# uc_sink accepts one connection: readiness is read from the guest's socket
# table, never by connecting.
wait_listening() {
	for _ in $(seq 100); do
		"$VMLAB" exec srv --timeout 10 "netstat -ltn | grep -q ':18517 '" && return 0
		sleep 0.1
	done
	return 1
}

# The capture, on the bridge. Not vmlab.sh capture-start: its -s 0 with
# --immediate-mode gives libpcap a ring of about 8 frames of 256 KiB, and the
# sender's burst of 70 packets arrives in ~3 ms (a first try captured 32 of
# 129). A snap length of 2048 (every frame whole at MTU 1024) and a 32 MiB
# buffer keep them all. Its pid is killed in cleanup.
start_capture() {
	ip netns exec "$UROCE_VMLAB_LAB" tcpdump -Z root -i br0 -s 2048 -B 32768 --immediate-mode -U -n \
		-w "$WORK/capture.pcap" 'udp port 4791' </dev/null >/dev/null 2>"$WORK/tcpdump.err" &
	CAPTURE_PID=$!
	for _ in $(seq 100); do
		grep -q 'listening on' "$WORK/tcpdump.err" && return 0
		kill -0 "$CAPTURE_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/tcpdump.err" >&2
	fail "tcpdump did not start on the lab bridge"
}
stop_capture() {
	kill -INT "$CAPTURE_PID" 2>/dev/null || true
	wait "$CAPTURE_PID" 2>/dev/null || true
	CAPTURE_PID=
	echo "tcpdump: $(grep -E 'packets (captured|received by filter|dropped)' "$WORK/tcpdump.err" | tr '\n' ' ')"
}

before=$(rxe_counters)
start_capture

echo "=== uc_sink (rxe UC QP) <- sr_uc_send (uroce sr QP, retry_cnt $RETRY), seed $SEED"
job=$("$VMLAB" start srv "timeout 90 $SINK -d rxe0 -g 1 -w $WRITE_LEN -i $IMM_LEN -S $SEED -r 64 -t 60")
wait_listening || fail "uc_sink never listened: $("$VMLAB" output srv "$job")"

sender_rc=0
in_host timeout 120 "$SENDER" --port "afxdp:$IFACE" --server "$SRV_IP" --retry-cnt "$RETRY" \
	--rto-min-us 100000 --timeout 60 \
	>"$WORK/sender.out" 2>&1 &
SENDER_PID=$!
wait "$SENDER_PID" || sender_rc=$?
SENDER_PID=
sed 's/^/  host: /' "$WORK/sender.out"
sink_rc=0
"$VMLAB" wait srv "$job" --timeout 60 >"$WORK/sink.out" 2>&1 || sink_rc=$?
sed 's/^/  guest: /' "$WORK/sink.out"
after=$(rxe_counters)
echo "  guest rxe counters before: $before"
echo "  guest rxe counters after:  $after"
sleep 0.3
stop_capture

# What the NIC placed decides (uc_sink's checks); the sender must have seen
# its WRs end as expected (RETRY_EXC_ERR, then WR_FLUSH_ERR).
[ $sink_rc = 0 ] || fail "uc_sink exited $sink_rc: $(grep 'uc_sink: FAIL' "$WORK/sink.out" | tail -n 1)"
grep -q '^uc_sink: PASS' "$WORK/sink.out" || fail "uc_sink did not print PASS"
[ $sender_rc = 0 ] || fail "sr_uc_send exited $sender_rc"

# The capture: sr data packets as they were on the bridge, decoded by uroce's
# own decoder.
if [ -n "$PCAPTOOL" ] && [ -x "$PCAPTOOL" ]; then
	dec_rc=0
	"$PCAPTOOL" "$WORK/capture.pcap" >"$WORK/decode.txt" 2>"$WORK/decode.err" || dec_rc=$?
	echo "uroce-pcap (exit $dec_rc): $(cat "$WORK/decode.err")"
	[ $dec_rc = 0 ] || { grep -v 'icrc=ok' "$WORK/decode.txt" >&2 || true; fail "uroce-pcap: malformed packets or bad ICRCs in the capture"; }
	n_write=$(grep -c ' UC_RDMA_WRITE_ONLY dqpn' "$WORK/decode.txt" || true)
	n_desc=$(grep ' UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE ' "$WORK/decode.txt" | grep -c ' len=32 ' || true)
	n_imm=$(grep ' UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE ' "$WORK/decode.txt" | grep -vc ' len=32 ' || true)
	total=$(wc -l <"$WORK/decode.txt")
	others=$((total - n_write - n_desc - n_imm))
	copies=$((RETRY + 1))
	echo "capture: $total RoCEv2 packets: $n_write UC WRITE Only (the plain WRITE's 65 packets x $copies)," \
		"$n_imm UC WRITE Only with Immediate with data (4 x $copies), $n_desc descriptors (32 bytes, 1 x $copies), $others other"
	[ "$others" = 0 ] || { grep -v 'UC_RDMA_WRITE_ONLY' "$WORK/decode.txt" >&2; fail "packets other than UC WRITE Only (with Immediate) on the wire"; }
	# Every packet goes out retry_cnt + 1 times: the RTO floor of 100 ms
	# lets the whole first copy leave before any retransmission.
	[ "$n_write" = $((65 * copies)) ] && [ "$n_imm" = $((4 * copies)) ] && [ "$n_desc" = "$copies" ] ||
		fail "expected $((65 * copies)) WRITE Only, $((4 * copies)) data WRITE Only with Immediate and $copies descriptors on the wire"
	host_tx=$(sed -n 's/.* qp: tx_packets=\([0-9]*\) .*/\1/p' "$WORK/sender.out")
	[ "${host_tx:-x}" = "$total" ] || fail "the sender counted ${host_tx:-no} packets sent, the bridge saw $total"
	comps=$(sed -n 's/.* \([0-9]*\) RECV_RDMA_WITH_IMM completions.*/\1/p' "$WORK/sink.out")
	r0=$(counter "$before" rcvd_pkts) r1=$(counter "$after" rcvd_pkts)
	rcvd=$(( ${r1:-0} - ${r0:-0} ))
	echo "rxe: rcvd_pkts +$rcvd of the $total on the wire; ${comps:-no} RECV_RDMA_WITH_IMM completions for the $n_imm data packets with immediate"
	if [ "$rcvd" = "$total" ]; then
		# All reached rxe: each data packet with immediate (first copies
		# and retransmissions alike) must have made one completion.
		[ -z "$comps" ] || [ "$comps" = "$n_imm" ] ||
			fail "rxe received all $total packets but completed $comps of the $n_imm WRITE Only with Immediate data packets"
	else
		echo "note: $((total - rcvd)) packets on the bridge did not reach rxe (the guest's tap or virtio queue):" \
			"the completion count is not compared"
	fi
else
	echo "uroce-pcap not built: capture not decoded"
fi

echo "PASS: rdma_rxe's UC QP placed uroce's sr RDMA WRITE and WRITE with immediate exactly ($(elapsed) s)"
