#!/bin/bash
# SPDX-License-Identifier: MIT
# Throughput against message size: Gbit/s of RDMA payload for each message
# size, every contender measured in the same run on one veth pair between two
# network namespaces (link MTU 4200, path MTU 4096):
#   rc             uroce-perf write_bw, RC, 1 QP, MTU 4096, -D SEC (go-back-N)
#   sr             the same with --reliability sr (selective repeat)
#   frame-ceiling  uroce-perf raw send/recv: uroce's afxdp port, per-frame
#                  build + ICRC, parse + ICRC check, no transport
#   xsk-bare       the bare libxdp loop (xsk_bare): prebuilt frame, no parse
#   xsk-place      xsk_bare recv --place: the bare loop plus the copy of every
#                  payload into a 64 MiB buffer (the placement ceiling)
#   kernel-udp     udp_baseline: kernel UDP, sendmmsg/recvmmsg, datagrams
#                  framed exactly like the RoCEv2 frames
# The ceilings send one frame per message up to 4096 bytes; a larger message
# travels as MTU-sized (4096-byte payload) packets, so for sizes above 4096
# the ceilings are the 4 KiB-frame ceilings: measured once per frame payload
# (min(size, 4096)) and repeated on those rows. Ceiling rates are what the
# receiver counted, as frames x frame payload (kernel-udp's datagrams carry
# BTH+RETH+ICRC-sized filler besides, so its frames have the same length;
# only the RDMA-payload part is counted). rc/sr: the client's BW average.
# All contenders share the one link MTU 4200 (so xsk_bare always runs its
# multi-buffer path, as uroce's port does at this MTU).
#
#   sudo tests/bench/size_sweep.sh [--build DIR] [--duration SEC (whole, default 2)] [--sizes "64 256 ..."]
#        [--out DIR] [--only "rc sr frame-ceiling xsk-bare xsk-place kernel-udp"] [--plot FILE]
# --out (default BUILD/size_sweep) gets size_sweep.csv; --plot FILE draws it
# with plot_sweep.py (needs matplotlib: apt-get install -y python3-matplotlib;
# not in scripts/install-deps.sh, it is for benchmarks only).
set -euo pipefail

BUILD=build
DURATION=2
SIZES="64 256 1024 4096 16384 65536 262144 1048576 4194304"
OUT=
ONLY="rc sr frame-ceiling xsk-bare xsk-place kernel-udp"
PLOT=
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--duration) DURATION=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--plot) PLOT=$2; shift 2 ;;
	-h|--help) sed -n '2,28p' "$0"; exit 0 ;;
	*) echo "size_sweep: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "size_sweep: must run as root (namespaces, XDP)" >&2; exit 2; }
ALL="rc sr frame-ceiling xsk-bare xsk-place kernel-udp"
for c in $ONLY; do
	[[ " $ALL " == *" $c "* ]] || { echo "size_sweep: unknown contender $c (known: $ALL)" >&2; exit 2; }
done
for s in $SIZES; do
	[[ "$s" =~ ^[0-9]+$ ]] && [ "$s" -ge 1 ] || { echo "size_sweep: bad size $s" >&2; exit 2; }
done
[[ "$DURATION" =~ ^[0-9]+$ ]] && [ "$DURATION" -ge 1 ] ||
	{ echo "size_sweep: --duration takes whole seconds (uroce-perf -D)" >&2; exit 2; }
OUT=${OUT:-$BUILD/size_sweep}
PERF=$BUILD/apps/uroce-perf
UDP=$BUILD/tests/bench/udp_baseline
XSK=$BUILD/tests/bench/xsk_bare
need=()
[[ "$ONLY" == *rc* || "$ONLY" == *sr* || "$ONLY" == *frame-ceiling* ]] && need+=("$PERF")
[[ "$ONLY" == *xsk-* ]] && need+=("$XSK")
[[ "$ONLY" == *kernel-udp* ]] && need+=("$UDP")
for b in "${need[@]}"; do
	[ -x "$b" ] || { echo "size_sweep: $b not built (ninja -C $BUILD)" >&2; exit 2; }
done
PLOTTER=$(dirname "$0")/plot_sweep.py
if [ -n "$PLOT" ]; then
	/usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
		{ echo "size_sweep: --plot needs matplotlib (apt-get install -y python3-matplotlib)" >&2; exit 2; }
fi
mkdir -p "$OUT"

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-sweep
IPA=10.95.0.1 IPB=10.95.0.2
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24 --mtu 4200
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null
MACB=$(netns_mac "$NB" vb)
# Every process is bounded: a receiver waits at most RECV_T seconds for
# frames, and anything still running KILL_T seconds after its start gets
# SIGTERM (SIGKILL 5 s later).
RECV_T=$((DURATION + 20))
KILL_T=$((DURATION + 40))

log() { echo "size_sweep: $*" >&2; }
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2" | tail -1; }
# MPPS PAYLOAD -> Gbit/s of payload
gbps() { [ -n "$1" ] && awk -v m="$1" -v p="$2" 'BEGIN{printf "%.3f", m * 1e6 * p * 8 / 1e9}' || true; }

# The runners set RESULT rather than print it: a process started in a $(...)
# subshell would be missing from the PIDs the cleanup trap kills.
# ceiling PAYLOAD RECV_CMD... -- SEND_CMD...: receiver in NB, sender in NA;
# RESULT is the receiver's Mpps (empty when it counted nothing).
ceiling() {
	local recv=() send=() out=$TMP/recv.log rpid res
	shift # payload: only for the log
	while [ "$1" != "--" ]; do recv+=("$1"); shift; done
	shift
	send=("$@")
	rm -f "$out"
	netns_start "$NB" "$out" timeout -k 5 $KILL_T "${recv[@]}"
	rpid=$NETNS_PID
	netns_wait_until 5 grep -qs receiving "$out" || log "receiver not ready: ${recv[*]}"
	netns_start "$NA" "$TMP/send.log" timeout -k 5 $KILL_T "${send[@]}"
	netns_wait "$NETNS_PID" || { log "sender failed: ${send[*]}"; cat "$TMP/send.log" >&2; }
	netns_wait "$rpid" || true
	res=$(grep '^{' "$out" | tail -1 || true)
	[ -n "$res" ] || { log "receiver gave no result: ${recv[*]}"; cat "$out" >&2; }
	RESULT=$(field mpps "$res")
	sleep 1 # the AF_XDP queue is released after the process exits
}

# perftest SIZE ARGS...: write_bw server in NB, client in NA; RESULT is the
# client's BW average (Gbit/s), empty when there was none.
perftest() {
	local size=$1 spid out cpid
	shift
	local args=(write_bw -x 1 -s "$size" -m 4096 -D "$DURATION" --report_gbits --timeout 20 "$@")
	netns_start "$NB" "$TMP/srv.log" timeout -k 5 $KILL_T "$PERF" "${args[@]}" -d afxdp:vb
	spid=$NETNS_PID
	netns_wait_tcp "$NB" 18515 "$spid" 10 || log "write_bw server not listening (size $size $*)"
	netns_start "$NA" "$TMP/cli.log" timeout -k 5 $KILL_T "$PERF" "${args[@]}" -d afxdp:va $IPB
	cpid=$NETNS_PID
	netns_wait "$cpid" || true
	netns_wait "$spid" || true
	out=$(cat "$TMP/cli.log")
	# perftest's table line: #bytes #iterations BW-peak BW-average MsgRate
	local bw
	bw=$(awk -v s="$size" '$1 == s && NF >= 5 {print $4}' <<<"$out" | tail -1)
	[ -n "$bw" ] || { log "write_bw size $size $* gave no result:"; tail -5 <<<"$out" >&2; }
	RESULT=$bw
	sleep 1
}

RESULT=
declare -A GB CEIL # GB[contender:size]; CEIL[contender:payload] (measured once)
for size in $SIZES; do
	p=$((size < 4096 ? size : 4096))
	for c in $ONLY; do
		log "$c, size $size"
		case "$c" in
		rc) perftest "$size"; GB[$c:$size]=$RESULT ;;
		sr) perftest "$size" --reliability sr; GB[$c:$size]=$RESULT ;;
		*)
			if [ -z "${CEIL[$c:$p]+set}" ]; then
				case "$c" in
				frame-ceiling)
					ceiling "$p" "$PERF" raw recv --port afxdp:vb --json --duration $RECV_T -- \
						"$PERF" raw send --port afxdp:va --dst-ip $IPB --dst-mac "$MACB" --size "$p" \
						--duration "$DURATION" --json ;;
				xsk-bare | xsk-place)
					place=()
					[ "$c" = xsk-place ] && place=(--place)
					ceiling "$p" "$XSK" recv --iface vb "${place[@]}" --duration $RECV_T -- \
						"$XSK" send --iface va --dst-mac "$MACB" --src-ip $IPA --dst-ip $IPB \
						--size "$p" --duration "$DURATION" ;;
				kernel-udp)
					ceiling "$p" "$UDP" recv --duration $RECV_T -- \
						"$UDP" send --dst-ip $IPB --size "$p" --duration "$DURATION" ;;
				esac
				CEIL[$c:$p]=$(gbps "$RESULT" "$p")
			fi
			GB[$c:$size]=${CEIL[$c:$p]} ;;
		esac
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
human() { awk -v s="$1" 'BEGIN{ if (s >= 1048576 && s % 1048576 == 0) printf "%d MiB", s / 1048576;
	else if (s >= 1024 && s % 1024 == 0) printf "%d KiB", s / 1024; else printf "%d B", s }'; }
CSV=$OUT/size_sweep.csv
{
	echo "# size_sweep: Gbit/s of RDMA payload; $(date -u +%Y-%m-%dT%H:%M:%SZ); duration ${DURATION}s; link MTU 4200"
	echo "size,frame_payload,rc,sr,frame_ceiling,xsk_bare,xsk_place,kernel_udp"
	for size in $SIZES; do
		p=$((size < 4096 ? size : 4096))
		row="$size,$p"
		for c in $ALL; do row+=",${GB[$c:$size]:-}"; done
		echo "$row"
	done
} >"$CSV"

echo
echo "Gbit/s of RDMA payload; ceilings at frame payload min(size, 4096)"
echo
echo "| size | rc | sr | frame-ceiling | xsk-bare | xsk-place | kernel-udp | rc/frame-ceiling | sr/frame-ceiling | rc/xsk-place | sr/xsk-place |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for size in $SIZES; do
	row="| $(human "$size") |"
	for c in $ALL; do row+=" ${GB[$c:$size]:--} |"; done
	rc=${GB[rc:$size]:-} sr=${GB[sr:$size]:-} fc=${GB[frame-ceiling:$size]:-} xp=${GB[xsk-place:$size]:-}
	row+=" $(ratio "$rc" "$fc") | $(ratio "$sr" "$fc") | $(ratio "$rc" "$xp") | $(ratio "$sr" "$xp") |"
	echo "$row"
done
echo
echo "size_sweep: wrote $CSV"
if [ -n "$PLOT" ]; then
	/usr/bin/python3 "$PLOTTER" "$CSV" "$PLOT"
	echo "size_sweep: wrote $PLOT"
fi
