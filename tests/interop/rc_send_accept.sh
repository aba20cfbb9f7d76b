#!/bin/bash
# SPDX-License-Identifier: MIT
# Acceptance: the kernel's rdma_rxe accepts RC SENDs built by uroce. A vmlab
# guest runs `ibv_rc_pingpong -d rxe0 -g 1` as the server; rc_pingpong_peer,
# on a uroce AF_XDP port in a host-side netns bridged to the guest, is the
# client. Passes when the guest's server exits 0 with its "N iters in" line,
# for a one-packet message (SEND_ONLY) and a four-packet one (FIRST/MIDDLE/
# LAST at path MTU 1024), and the capture of both holds well-formed packets.
#
#   rc_send_accept.sh VMLAB_SH PEER_BIN [UROCE_PCAP_BIN]
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 2 ] || { echo "usage: $0 VMLAB_SH PEER_BIN [UROCE_PCAP_BIN]" >&2; exit 2; }
VMLAB=$1 PEER=$2 PCAPTOOL=${3:-}
[ -x "$PEER" ] || { echo "FAIL: peer binary $PEER not found" >&2; exit 1; }
command -v ping >/dev/null || { echo "FAIL: ping not found (apt-get install iputils-ping)" >&2; exit 1; }

export UROCE_VMLAB_LAB=uvacc$$
SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}
SRV_IP=$SUBNET.11
HOST_IP=$SUBNET.2
IFACE=uvp0
WORK=$(mktemp -d /tmp/uroce-accept.XXXXXX)
HOSTNS=

# after a failure the capture is kept
keep_capture() {
	if [ "$1" != 0 ] && [ -f "$WORK/capture.pcap" ]; then
		keep=/tmp/uroce-accept-$$.pcap
		cp "$WORK/capture.pcap" "$keep" && echo "capture kept in $keep" >&2
	fi
}
vm_case_traps "" keep_capture

vm_boot_host

"$VMLAB" capture-start acc "$WORK/capture.pcap" 'udp port 4791'


run_case() {
	local iters=$1 size=$2 job peer_rc=0 srv_rc=0
	shift 2
	echo "=== ibv_rc_pingpong -n $iters -s $size: guest server, uroce client $*"
	job=$("$VMLAB" start srv "ibv_rc_pingpong -d rxe0 -g 1 -n $iters -s $size")
	wait_listening 18515 || fail "server never listened: $("$VMLAB" output srv "$job")"
	in_host timeout 120 "$PEER" --port "afxdp:$IFACE" --server "$SRV_IP" -n "$iters" -s "$size" "$@" \
		>"$WORK/peer.out" 2>&1 || peer_rc=$?
	sed 's/^/  peer: /' "$WORK/peer.out"
	"$VMLAB" wait srv "$job" --timeout 30 >"$WORK/srv.out" 2>&1 || srv_rc=$?
	sed 's/^/  guest: /' "$WORK/srv.out"
	echo "  guest rxe counters: $(rxe_counters)"
	[ $peer_rc = 0 ] || fail "rc_pingpong_peer exited $peer_rc (-n $iters -s $size)"
	[ $srv_rc = 0 ] || fail "guest ibv_rc_pingpong exited $srv_rc (-n $iters -s $size)"
	grep -q "^$iters iters in " "$WORK/srv.out" || fail "guest server did not report '$iters iters in'"
	echo "  => guest server exited 0: $(grep "iters in" "$WORK/srv.out")"
}

run_case 10 64     # SEND_ONLY
run_case 10 4096   # SEND_FIRST, 2 x SEND_MIDDLE, SEND_LAST
# rxe must drop packets with a wrong ICRC, and the peer's retransmission
# (after a timeout, or at once on rxe's PSN-sequence NAK) must recover: the
# first message loses both packets, the second only its first.
run_case 5 2048 --corrupt-icrc 3
retrans=$(sed -n 's/.* \([0-9]*\) retransmitted.*/\1/p' "$WORK/peer.out")
[ "${retrans:-0}" -ge 3 ] || fail "3 packets went out with a bad ICRC but only ${retrans:-0} were retransmitted"

sleep 0.3
"$VMLAB" capture-stop acc

# The capture, checked by uroce's own decoder when it is built: every RoCEv2
# packet on the bridge (ours and rxe's) must be well-formed, with a good ICRC
# except the ones corrupted on purpose.
if [ -n "$PCAPTOOL" ] && [ -x "$PCAPTOOL" ]; then
	# Exit 1 is expected, for the three packets corrupted on purpose; 2
	# would be a usage or file error.
	dec_rc=0
	"$PCAPTOOL" "$WORK/capture.pcap" >"$WORK/decode.txt" 2>"$WORK/decode.err" || dec_rc=$?
	echo "uroce-pcap (exit $dec_rc): $(cat "$WORK/decode.err")"
	[ $dec_rc -le 1 ] || fail "uroce-pcap could not read the capture"
	bad=$(grep -c 'icrc=bad' "$WORK/decode.txt" || true)
	[ "$bad" = 3 ] || { cat "$WORK/decode.txt" >&2; fail "expected exactly 3 bad-ICRC packets in the capture, found $bad"; }
	! grep -q malformed "$WORK/decode.txt" || { grep malformed "$WORK/decode.txt" >&2; fail "malformed packets in the capture"; }
	# 10 x 1 and 10 x 4 packets each way, plus ACKs, at the least.
	total=$(wc -l <"$WORK/decode.txt")
	[ "$total" -ge 100 ] || fail "capture holds only $total RoCEv2 packets"
	for op in RC_SEND_ONLY RC_SEND_FIRST RC_SEND_MIDDLE RC_SEND_LAST RC_ACKNOWLEDGE; do
		grep -qw "$op" "$WORK/decode.txt" || fail "no $op in the capture"
	done
else
	echo "uroce-pcap not built: capture not decoded"
fi
echo "PASS: rdma_rxe completed ibv_rc_pingpong against uroce-built RC SENDs"
