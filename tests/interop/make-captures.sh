#!/bin/bash
# SPDX-License-Identifier: MIT
# Regenerate the reference captures in tests/data/: two vmlab guests talk
# through the kernel's rdma_rxe while the bridge is captured, one capture per
# scenario. Each capture is checked (with tshark) to hold the opcodes it is
# kept for before it replaces the file in the tree.
#
#   tests/interop/make-captures.sh [-o DIR] [SCENARIO...]
#
# Scenarios (default: all): rc_send uc_send ud_send rc_write rc_read
# rc_atomic rc_send_v6 rc_send_vlan rc_send_imm rc_write_imm. Writes
# DIR/rxe_<scenario>.pcap (DIR defaults to tests/data) and keeps each run's
# program output in $UROCE_VMLAB_CACHE/captures/. Run as root. The two
# immediate scenarios run tests/interop/rxe_imm.c, compiled here against the
# host's libibverbs (libibverbs-dev), which is the guest's version too.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VMLAB=$HERE/vmlab.sh
OUT=$HERE/../data
ALL="rc_send uc_send ud_send rc_write rc_read rc_atomic rc_send_v6 rc_send_vlan rc_send_imm rc_write_imm"

die() { echo "make-captures: $*" >&2; exit 1; }
log() { echo "make-captures: $*" >&2; }

while getopts o: opt; do
	case $opt in
	o) OUT=$OPTARG ;;
	*) die "usage: $0 [-o DIR] [SCENARIO...]" ;;
	esac
done
shift $((OPTIND - 1))
SCENARIOS=${*:-$ALL}
for s in $SCENARIOS; do
	case " $ALL " in *" $s "*) ;; *) die "unknown scenario '$s' (known: $ALL)" ;; esac
done
[ "$(id -u)" = 0 ] || die "must run as root"
command -v tshark >/dev/null || die "tshark is needed to check the captures (apt-get install tshark)"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

export UROCE_VMLAB_LAB=uvcap$$
SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}
CACHE=${UROCE_VMLAB_CACHE:-/var/cache/uroce-vmlab}
SRV_IP=$SUBNET.11
CLI_IP=$SUBNET.12
# The VLAN scenario's second subnet, on eth0.100 in both guests.
VLAN_ID=100
VSRV_IP=10.48.$VLAN_ID.11
VCLI_IP=10.48.$VLAN_ID.12
TXT=$CACHE/captures
mkdir -p "$TXT"
WORK=$(mktemp -d)

cleanup() {
	"$VMLAB" down >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$VMLAB" setup
"$VMLAB" up
"$VMLAB" boot srv "$SRV_IP"
"$VMLAB" boot cli "$CLI_IP"
case " $SCENARIOS " in
*_imm*)
	[ -f /usr/include/infiniband/verbs.h ] || die "the *_imm scenarios need libibverbs-dev on the host"
	cc -std=gnu11 -O2 -Wall -Wextra -o "$WORK/rxe_imm" "$HERE/rxe_imm.c" -libverbs
	"$VMLAB" put srv "$WORK/rxe_imm" >/dev/null
	"$VMLAB" put cli "$WORK/rxe_imm" >/dev/null
	;;
esac

# wait_listening PORT: from the server guest's socket table (vm_preamble.sh)
. "$HERE/vm_preamble.sh"

# The GID index of address $2 in guest $1 (IPv4-mapped), waited for.
gid_index_of() {
	local guest=$1 ip=$2 hex a b c d
	IFS=. read -r a b c d <<<"$ip"
	hex=$(printf '%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	"$VMLAB" exec "$guest" --timeout 20 "
		n=0
		while [ \$n -lt 100 ]; do
			for i in 0 1 2 3 4 5 6 7 8 9; do
				g=\$(cat /sys/class/infiniband/rxe0/ports/1/gids/\$i 2>/dev/null)
				[ \"\$g\" = 0000:0000:0000:0000:0000:ffff:$hex ] && { echo \$i; exit 0; }
			done
			usleep 100000; n=\$((n + 1))
		done
		exit 1"
}

# scenario -> SRV_CMD (the client runs it with the server's address added),
# SRV_CMD2 (an optional second session into the same capture), PORT, FILTER,
# EXPECT (opcodes that must appear, in decimal as tshark prints them), COUNT
# (packets of a run without loss or retransmission: a TCG guest now and then
# fires rxe's 67 ms retransmit timer, and such a run is redone)
plan() {
	local g=1
	PORT=18515
	FILTER='udp port 4791'
	SRV_CMD2=
	case "$1" in
	rc_send)
		SRV_CMD="ibv_rc_pingpong -d rxe0 -g $g -n 3 -s 4096"
		COUNT=30 EXPECT="0 1 2 17" ;;              # RC SEND FIRST/MIDDLE/LAST, ACK
	uc_send)
		SRV_CMD="ibv_uc_pingpong -d rxe0 -g $g -n 3 -s 4096"
		COUNT=24 EXPECT="32 33 34" ;;              # UC SEND FIRST/MIDDLE/LAST
	ud_send)
		SRV_CMD="ibv_ud_pingpong -d rxe0 -g $g -n 3 -s 64"
		COUNT=6 EXPECT="100" ;;                   # UD SEND ONLY
	rc_write)
		SRV_CMD="ib_write_bw -d rxe0 -x $g -n 5 -s 4096"
		COUNT=25 EXPECT="6 7 8 17" ;;              # RC WRITE FIRST/MIDDLE/LAST, ACK
	rc_read)
		SRV_CMD="ib_read_bw -d rxe0 -x $g -n 5 -s 4096"
		COUNT=25 EXPECT="12 13 14 15" ;;           # READ REQUEST, RESPONSE FIRST/MIDDLE/LAST
	rc_atomic)
		# two sessions into one capture: FETCH_ADD, then CMP_SWAP
		SRV_CMD="ib_atomic_bw -d rxe0 -x $g -n 5 -A FETCH_AND_ADD"
		SRV_CMD2="ib_atomic_bw -d rxe0 -x $g -n 5 -A CMP_AND_SWAP"
		COUNT=20 EXPECT="18 19 20" ;;              # ATOMIC ACK, CMP_SWAP, FETCH_ADD
	rc_send_v6)
		g=0                               # GID 0: fe80:: from the MAC
		SRV_CMD="ibv_rc_pingpong -d rxe0 -g $g -n 3 -s 4096"
		COUNT=30 EXPECT="0 1 2 17" ;;
	rc_send_vlan)
		FILTER='udp port 4791 or (vlan and udp port 4791)'
		SRV_CMD="ibv_rc_pingpong -d rxe0 -g VGID -n 1 -s 64"
		COUNT=4 EXPECT="4 17" ;;                  # RC SEND ONLY, ACK
	rc_send_imm)
		PORT=18516
		SRV_CMD="/mnt/host/rxe_imm -d rxe0 -g $g -n 2 -s 64"
		SRV_CMD2="/mnt/host/rxe_imm -d rxe0 -g $g -n 2 -s 2048"
		COUNT=10 EXPECT="5 0 3 17" ;;              # SEND_ONLY_IMM; SEND_FIRST, SEND_LAST_IMM; ACK
	rc_write_imm)
		PORT=18516
		SRV_CMD="/mnt/host/rxe_imm -d rxe0 -g $g -n 2 -s 64 -w"
		SRV_CMD2="/mnt/host/rxe_imm -d rxe0 -g $g -n 2 -s 2048 -w"
		COUNT=10 EXPECT="11 6 9 17" ;;             # WRITE_ONLY_IMM; WRITE_FIRST, WRITE_LAST_IMM; ACK
	esac
}

vlan_up() {
	local guest=$1 ip=$2
	"$VMLAB" exec "$guest" --timeout 20 "
		/usr/sbin/ip link add link eth0 name eth0.$VLAN_ID type vlan id $VLAN_ID &&
		/usr/sbin/ip addr add $ip/24 dev eth0.$VLAN_ID &&
		/usr/sbin/ip link set eth0.$VLAN_ID up" >/dev/null
}

# Run one client/server session; server and client output appended to $1.
session() {
	local txt=$1 srv_cmd=$2 cli_cmd=$3 job rc=0 src=0
	job=$("$VMLAB" start srv "$srv_cmd")
	wait_listening "$PORT" || die "server did not listen: $("$VMLAB" output srv "$job")"
	{ echo "--- server: $srv_cmd"; } >>"$txt.srv"
	{ echo "--- client: $cli_cmd"; } >>"$txt.cli"
	"$VMLAB" exec cli --timeout 120 "$cli_cmd" >>"$txt.cli" 2>&1 || rc=$?
	"$VMLAB" wait srv "$job" --timeout 60 >>"$txt.srv" 2>&1 || src=$?
	[ $rc = 0 ] && [ $src = 0 ] || {
		cat "$txt.srv" "$txt.cli" >&2
		die "session failed: server rc=$src client rc=$rc"
	}
}

run_scenario() {
	local s=$1 try
	for try in 1 2 3; do
		capture_scenario "$s" && return 0
		log "$s: attempt $try had $GOT packets, not $COUNT (retransmissions?); again"
	done
	die "$s: no clean run in 3 attempts"
}

# One capture of scenario $1; returns 1 (GOT set) when the packet count is
# not the clean run's.
capture_scenario() {
	local s=$1 pcap=$WORK/rxe_$1.pcap txt=$WORK/$1 srv_cmd cli_cmd
	plan "$s"
	srv_cmd=$SRV_CMD
	local peer=$SRV_IP
	if [ "$s" = rc_send_vlan ]; then
		vlan_up srv "$VSRV_IP"
		vlan_up cli "$VCLI_IP"
		local vs vc
		vs=$(gid_index_of srv "$VSRV_IP") || die "no GID for $VSRV_IP in srv"
		vc=$(gid_index_of cli "$VCLI_IP") || die "no GID for $VCLI_IP in cli"
		srv_cmd=${SRV_CMD/VGID/$vs}
		cli_cmd="${SRV_CMD/VGID/$vc} $peer"
	else
		cli_cmd="$srv_cmd $peer"
	fi
	: >"$txt.srv"
	: >"$txt.cli"
	# shellcheck disable=SC2086
	"$VMLAB" capture-start cap "$pcap" $FILTER
	local t0=$SECONDS
	session "$txt" "$srv_cmd" "$cli_cmd"
	[ -z "$SRV_CMD2" ] || session "$txt" "$SRV_CMD2" "$SRV_CMD2 $peer"
	# rxe may still be sending the last ACK when the programs exit.
	sleep 0.5
	"$VMLAB" capture-stop cap 2>"$txt.tcpdump"
	local secs=$((SECONDS - t0))

	GOT=$(tshark -r "$pcap" 2>/dev/null | wc -l)
	[ "$GOT" = "$COUNT" ] || return 1
	local ops have o
	ops=$(tshark -r "$pcap" -d udp.port==4791,infiniband -T fields -e infiniband.bth.opcode 2>/dev/null | sort -un | tr '\n' ' ')
	for o in $EXPECT; do
		case " $ops " in *" $o "*) ;; *) die "$s: opcode $o missing from the capture (have: $ops)" ;; esac
	done
	if [ "$s" = rc_send_v6 ]; then
		have=$(tshark -r "$pcap" -Y 'ipv6 && udp.dstport == 4791' 2>/dev/null | wc -l)
		[ "$have" -gt 0 ] || die "$s: no RoCEv2-over-IPv6 packets captured"
	fi
	if [ "$s" = rc_send_vlan ]; then
		have=$(tshark -r "$pcap" -Y "vlan.id == $VLAN_ID && udp.dstport == 4791" 2>/dev/null | wc -l)
		[ "$have" -gt 0 ] || die "$s: no VLAN-tagged RoCEv2 packets captured"
	fi
	cp "$pcap" "$OUT/rxe_$s.pcap"
	{ cat "$txt.srv"; cat "$txt.cli"; } >"$TXT/rxe_$s.txt"
	log "$s: $(stat -c %s "$pcap") bytes, $(tshark -r "$pcap" 2>/dev/null | wc -l) packets, opcodes {$ops} (${secs}s)"
	grep -h -E 'iters in|bytes in|^ *[0-9]+ +[0-9]+ |^(server|client): ' "$txt.srv" "$txt.cli" | sed 's/^/    /' >&2 || true
}

for s in $SCENARIOS; do
	run_scenario "$s"
done
"$VMLAB" versions >"$TXT/versions"
log "done: $OUT (program output in $TXT)"
