#!/bin/bash
# SPDX-License-Identifier: MIT
# Proof that a NIC could receive uroce's sr data packets: the kernel's
# rdma_rxe, in a vmlab guest, runs uc_sink, a UC QP that receives them and
# checks its memory. sr_uc_send, a uroce RC QP with reliability sr on an
# AF_XDP port in a host-side netns bridged to the guest, sends one RDMA WRITE
# (65636 bytes: 64 full packets and a 100-byte one at path MTU 1024) and one
# RDMA WRITE with immediate (3109 bytes: 3 full packets and a 37-byte one,
# pad 3). Every sr data packet is a UC WRITE Only (with Immediate) with its
# own RETH. No SACK comes back (a UC QP sends none; the control path is
# uroce to uroce), so the sender sends every packet retry_cnt + 1 times and
# its WRs end in RETRY_EXC_ERR and WR_FLUSH_ERR, which is expected. The RTO
# floor is 100 ms, so the whole first copy leaves before any retransmission
# (with sr's 1 ms initial RTO a stall of the AF_XDP TX path after 32 packets
# of about 3 ms, seen here, interleaves them).
#
# Three sessions on one guest, each a new uc_sink QP and sr QP:
#   clean  retry_cnt 1: exactly 2 copies of the 70 packets on the wire, all
#          reach rxe, one RECV_RDMA_WITH_IMM per data packet with immediate;
#   srq    the same with uc_sink's receives on an SRQ: one REM_ACCESS_ERR
#          completion per copy of the descriptor (rkey 0) too;
#   lossy  retry_cnt 4, uroce-impair drops 10% of the RoCEv2 packets at the
#          bridge port (seeded): packets placed after a PSN gap, the data
#          of a dropped first copy placed by its retransmission.
# Each passes when uc_sink prints PASS (both regions hold exactly the
# pattern, the guards around them are untouched, every completion is a
# RECV_RDMA_WITH_IMM whose immediate decodes to message 0, index 0..3, kind
# 0 or last on index 3, every index at least once), sr_uc_send exits 0, and
# uroce-pcap finds every RoCEv2 packet of the capture well-formed with a good
# ICRC; plus the per-session counts below.
#
#   sr_to_rxe_uc.sh VMLAB_SH SR_UC_SEND_BIN UC_SINK_C [UROCE_PCAP_BIN [UROCE_IMPAIR_BIN]]
# Without UROCE_IMPAIR_BIN the lossy session is left out (said so in the
# output). Environment: UROCE_SR_UC_SEED (data pattern seed, default 24301),
# UROCE_SR_UC_DROP_SEED (uroce-impair's seed, default 1).
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 3 ] ||
	{ echo "usage: $0 VMLAB_SH SR_UC_SEND_BIN UC_SINK_C [UROCE_PCAP_BIN [UROCE_IMPAIR_BIN]]" >&2; exit 2; }
VMLAB=$1 SENDER=$2 SINK_SRC=$3 PCAPTOOL=${4:-} IMPAIR=${5:-}
[ -x "$SENDER" ] || { echo "FAIL: sender binary $SENDER not found" >&2; exit 1; }
[ -f "$SINK_SRC" ] || { echo "FAIL: uc_sink source $SINK_SRC not found" >&2; exit 1; }
[ -z "$IMPAIR" ] || [ -x "$IMPAIR" ] || { echo "FAIL: uroce-impair binary $IMPAIR not found" >&2; exit 1; }
command -v ping >/dev/null || { echo "FAIL: ping not found (apt-get install iputils-ping)" >&2; exit 1; }
command -v tcpdump >/dev/null || { echo "FAIL: tcpdump not found (vmlab.sh setup installs it)" >&2; exit 1; }
command -v cc >/dev/null || { echo "FAIL: no C compiler (cc) to build uc_sink for the guest" >&2; exit 1; }
[ -f /usr/include/infiniband/verbs.h ] ||
	{ echo "FAIL: uc_sink needs libibverbs-dev on the host (apt-get install libibverbs-dev)" >&2; exit 1; }

export UROCE_VMLAB_LAB=uvsruc$$
SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}
SRV_IP=$SUBNET.11
HOST_IP=$SUBNET.2
IFACE=uvp0
SEED=${UROCE_SR_UC_SEED:-24301}
DROP_SEED=${UROCE_SR_UC_DROP_SEED:-1}
WRITE_LEN=65636   # 64 x 1024 + 100
IMM_LEN=3109      # 3 x 1024 + 37
NPKT=70           # 65 WRITE Only, 1 descriptor, 4 WRITE Only with Immediate
WORK=$(mktemp -d /tmp/uroce-sruc.XXXXXX)
SENDER_PID=
CAPTURE_PID=
SESSION=
T0=$(date +%s.%N)

fail() {
	echo "FAIL: ${SESSION:+$SESSION: }$*" >&2
	exit 1
}

elapsed() { echo "$(date +%s.%N) $T0" | awk '{printf "%.1f", $1 - $2}'; }

cleanup() {
	local rc=$? pid
	for pid in "$SENDER_PID" "$CAPTURE_PID"; do
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	vm_console_tail $rc
	# the impairment goes with the lab's netns and its veth
	"$VMLAB" down >/dev/null 2>&1 || true
	if [ $rc != 0 ] && [ -n "$SESSION" ] && [ -f "$WORK/$SESSION.pcap" ]; then
		keep=/tmp/uroce-sruc-$$-$SESSION.pcap
		cp "$WORK/$SESSION.pcap" "$keep" && echo "capture kept in $keep" >&2
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

vm_boot_host
in_lab() { ip netns exec "$UROCE_VMLAB_LAB" "$@"; }
SINK=$("$VMLAB" put srv "$WORK/uc_sink")

counter() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# The capture, on the bridge. Not vmlab.sh capture-start: its -s 0 with
# --immediate-mode gives libpcap a ring of about 8 frames of 256 KiB, and the
# sender's first 70 packets leave in ~3 ms (a first try captured 32 of 129).
# A snap length of 2048 (every frame whole at MTU 1024) and a 32 MiB buffer
# keep them all. Its pid is killed in cleanup.
start_capture() {
	# directly backgrounded (not through in_lab, a function, which would
	# make $! a subshell): ip netns exec execs tcpdump, so $! is tcpdump
	ip netns exec "$UROCE_VMLAB_LAB" tcpdump -Z root -i br0 -s 2048 -B 32768 --immediate-mode -U -n \
		-w "$WORK/$SESSION.pcap" 'udp port 4791' </dev/null >/dev/null 2>"$WORK/tcpdump.err" &
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
	echo "  tcpdump: $(grep -E 'packets (captured|received by filter|dropped)' "$WORK/tcpdump.err" | tr '\n' ' ')"
}

# session NAME RETRY_CNT [DROP [SINK_OPTS]]: one uc_sink QP, one sr_uc_send
# QP; DROP (a uroce-impair probability, or '') on the bridge port of the
# host's veth; SINK_OPTS more uc_sink options (-q: receives on an SRQ).
session() {
	SESSION=$1
	local retry=$2 drop=${3:-} sink_opts=${4:-} job sender_rc=0 sink_rc=0 before after stats=
	local what="retry_cnt $retry"
	[ -z "$drop" ] || what="$what, $drop of the RoCEv2 packets dropped at the bridge (seed $DROP_SEED)"
	[ -z "$sink_opts" ] || what="$what, uc_sink $sink_opts"
	echo "=== $SESSION: uc_sink (rxe UC QP) <- sr_uc_send (uroce sr QP, $what)"
	if [ -n "$drop" ]; then
		# XDP on vp-host's ingress: the host's packets, before the bridge
		# (so the capture holds only what got through).
		in_lab "$IMPAIR" vp-host --drop "$drop" --seed "$DROP_SEED" | sed 's/^/  /'
	fi
	before=$(rxe_counters)
	start_capture
	job=$("$VMLAB" start srv "timeout 90 $SINK -d rxe0 -g 1 -w $WRITE_LEN -i $IMM_LEN -S $SEED -r 64 -t 60 $sink_opts")
	wait_listening 18517 || fail "uc_sink never listened: $("$VMLAB" output srv "$job")"
	# $! is the pid that becomes timeout (see start_capture)
	ip netns exec "$HOSTNS" timeout 120 "$SENDER" --port "afxdp:$IFACE" --server "$SRV_IP" --retry-cnt "$retry" \
		--rto-min-us 100000 --timeout 60 >"$WORK/sender.out" 2>&1 &
	SENDER_PID=$!
	wait "$SENDER_PID" || sender_rc=$?
	SENDER_PID=
	sed 's/^/  host: /' "$WORK/sender.out"
	"$VMLAB" wait srv "$job" --timeout 60 >"$WORK/sink.out" 2>&1 || sink_rc=$?
	sed 's/^/  guest: /' "$WORK/sink.out"
	after=$(rxe_counters)
	echo "  guest rxe counters after: $after"
	sleep 0.3
	stop_capture
	if [ -n "$drop" ]; then
		stats=$(in_lab "$IMPAIR" vp-host --stats)
		echo "  $stats"
		in_lab "$IMPAIR" vp-host --off >/dev/null
	fi

	# What the NIC placed decides (uc_sink's checks); the sender must have
	# seen its WRs end as expected (RETRY_EXC_ERR, then WR_FLUSH_ERR).
	[ $sink_rc = 0 ] || fail "uc_sink exited $sink_rc: $(grep 'uc_sink: FAIL' "$WORK/sink.out" | tail -n 1)"
	grep -q '^uc_sink: PASS' "$WORK/sink.out" || fail "uc_sink did not print PASS"
	[ $sender_rc = 0 ] || fail "sr_uc_send exited $sender_rc"

	local copies=$((retry + 1)) host_tx comps r0 r1 rcvd dropped=0 roce
	host_tx=$(sed -n 's/.* qp: tx_packets=\([0-9]*\) .*/\1/p' "$WORK/sender.out")
	comps=$(sed -n 's/.* \([0-9]*\) RECV_RDMA_WITH_IMM completions.*/\1/p' "$WORK/sink.out")
	# Every packet leaves retry_cnt + 1 times: the RTO floor lets the whole
	# first copy leave before any retransmission.
	[ "${host_tx:-x}" = $((NPKT * copies)) ] ||
		fail "the sender sent ${host_tx:-no} packets; expected $NPKT x $copies"
	if [ -n "$drop" ]; then
		dropped=$(sed -n 's/.* dropped=\([0-9]*\).*/\1/p' <<<"$stats")
		roce=$(sed -n 's/.* roce=\([0-9]*\).*/\1/p' <<<"$stats")
		[ "${roce:-x}" = "$host_tx" ] || fail "uroce-impair saw ${roce:-no} RoCEv2 packets, the sender sent $host_tx"
		[ "${dropped:-0}" -gt 0 ] || fail "uroce-impair dropped nothing"
	fi
	r0=$(counter "$before" rcvd_pkts) r1=$(counter "$after" rcvd_pkts)
	rcvd=$((${r1:-0} - ${r0:-0}))

	# The capture, decoded by uroce's own decoder.
	if [ -z "$PCAPTOOL" ] || [ ! -x "$PCAPTOOL" ]; then
		echo "  uroce-pcap not built: capture not decoded"
		return 0
	fi
	local dec_rc=0 n_write n_desc n_imm total others
	"$PCAPTOOL" "$WORK/$SESSION.pcap" >"$WORK/decode.txt" 2>"$WORK/decode.err" || dec_rc=$?
	echo "  uroce-pcap (exit $dec_rc): $(cat "$WORK/decode.err")"
	[ $dec_rc = 0 ] || { grep -v 'icrc=ok' "$WORK/decode.txt" >&2 || true; fail "uroce-pcap: malformed packets or bad ICRCs in the capture"; }
	n_write=$(grep -c ' UC_RDMA_WRITE_ONLY dqpn' "$WORK/decode.txt" || true)
	n_desc=$(grep ' UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE ' "$WORK/decode.txt" | grep -c ' len=32 ' || true)
	n_imm=$(grep ' UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE ' "$WORK/decode.txt" | grep -vc ' len=32 ' || true)
	total=$(wc -l <"$WORK/decode.txt")
	others=$((total - n_write - n_desc - n_imm))
	echo "  capture: $total RoCEv2 packets: $n_write UC WRITE Only (the plain WRITE, 65 a copy)," \
		"$n_imm UC WRITE Only with Immediate with data (4 a copy), $n_desc descriptors (32 bytes, 1 a copy), $others other"
	[ "$others" = 0 ] || { grep -v 'UC_RDMA_WRITE_ONLY' "$WORK/decode.txt" >&2; fail "packets other than UC WRITE Only (with Immediate) on the wire"; }
	[ "$total" = $((host_tx - dropped)) ] ||
		fail "the bridge saw $total packets; the sender sent $host_tx${drop:+ and $dropped were dropped}"
	if [ -z "$drop" ]; then
		[ "$n_write" = $((65 * copies)) ] && [ "$n_imm" = $((4 * copies)) ] && [ "$n_desc" = "$copies" ] ||
			fail "expected $((65 * copies)) WRITE Only, $((4 * copies)) data WRITE Only with Immediate and $copies descriptors"
	else
		# PSNs in the order they crossed the bridge: a PSN that first
		# appears after a higher one was placed after a gap, by a
		# retransmission, its first copy dropped.
		local gaps psn0
		psn0=$(sed -n 's/.*, PSN 0x\([0-9a-f]*\) -> .*/\1/p' "$WORK/sender.out")
		[ -n "$psn0" ] || fail "no first PSN in sr_uc_send's output"
		gaps=$("$PCAPTOOL" --json "$WORK/$SESSION.pcap" 2>/dev/null | sed -n 's/.*"psn":\([0-9]*\),.*/\1/p' |
			awk -v base=$((16#$psn0)) '{ d = ($1 - base + 16777216) % 16777216;
				if (!(d in seen) && n_seen && d < hi) n++; seen[d] = 1; n_seen++; if (d > hi) hi = d }
				END { print n + 0 }')
		echo "  capture: $gaps packets first crossed the bridge after a higher PSN (their first copy dropped)"
		[ "$gaps" -gt 0 ] || fail "no packet arrived after a PSN gap: the drop pattern did not test reordering"
	fi
	echo "  rxe: rcvd_pkts +$rcvd of the $total on the bridge; ${comps:-no} RECV_RDMA_WITH_IMM completions for the $n_imm data packets with immediate"
	if [ "$rcvd" = "$total" ]; then
		# All reached rxe: each data packet with immediate (first copies
		# and retransmissions alike) must have made one completion.
		[ -z "$comps" ] || [ "$comps" = "$n_imm" ] ||
			fail "rxe received all $total packets but completed $comps of the $n_imm WRITE Only with Immediate data packets"
		if [ "$sink_opts" = -q ]; then
			# on an SRQ each descriptor copy ends in REM_ACCESS_ERR
			local rej
			rej=$(sed -n 's/.* srq: \([0-9]*\) REM_ACCESS_ERR.*/\1/p' "$WORK/sink.out")
			echo "  rxe: ${rej:-no} REM_ACCESS_ERR completions on the SRQ for the $n_desc descriptors (rkey 0)"
			[ "${rej:-x}" = "$n_desc" ] || fail "expected one REM_ACCESS_ERR completion per descriptor"
		fi
	else
		echo "  note: $((total - rcvd)) packets on the bridge did not reach rxe (the guest's tap or virtio queue):" \
			"the completion count is not compared"
	fi
	echo "  => $SESSION: PASS"
	SESSION=
}

session clean 1
# The same with the receives on an SRQ: rxe then completes every descriptor
# copy (rkey 0) with REM_ACCESS_ERR, IBTA's UC class D, instead of dropping
# it; the data is placed all the same.
session srq 1 '' -q
if [ -n "$IMPAIR" ]; then
	# retry_cnt 4: each packet goes out 5 times, so at 10% loss a packet
	# loses every copy with probability 1e-5 (70 packets: under 0.1% a run).
	session lossy 4 10%
else
	echo "=== lossy: left out (no uroce-impair binary given)"
fi
echo "PASS: rdma_rxe's UC QP placed uroce's sr RDMA WRITE and WRITE with immediate exactly ($(elapsed) s)"
