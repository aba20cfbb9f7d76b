#!/bin/bash
# SPDX-License-Identifier: MIT
# Port-layer benchmark: RoCEv2 frames between two network namespaces over a
# veth pair, for several payload sizes, with every contender measured in the
# same run on the same pair:
#   kernel-udp   kernel UDP socket, sendmmsg/recvmmsg, same frame length
#   xsk-bare     bare libxdp loop: prebuilt frame, no parse, no ICRC
#   xsk-place    the same sender; the receiver is xsk-bare's loop plus the copy
#                of every frame's RDMA payload into a 64 MiB buffer at the RETH
#                address (xsk_bare recv --place): the placement ceiling
#   uroce-afxdp  uroce afxdp port: per-frame build + ICRC, parse + ICRC check
#   uroce-dpdk   uroce dpdk port (net_af_xdp vdev) sending, uroce afxdp receiving
# Rates are what the RECEIVER counted (delivered frames), over the time from
# its first to its last frame. Ratios are against kernel-udp and xsk-bare.
#
#   sudo tests/bench/raw_bench.sh [--build DIR] [--duration SEC] [--sizes "64 1024 4096"]
#                                  [--only "kernel-udp xsk-bare xsk-place uroce-afxdp uroce-dpdk"]
set -euo pipefail

BUILD=build
DURATION=3
SIZES="64 1024 4096"
ONLY="kernel-udp xsk-bare xsk-place uroce-afxdp uroce-dpdk"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--duration) DURATION=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "raw_bench: unknown option $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "raw_bench: must run as root (namespaces, XDP)" >&2; exit 2; }
PERF=$BUILD/apps/uroce-perf
UDP=$BUILD/tests/bench/udp_baseline
XSK=$BUILD/tests/bench/xsk_bare
for b in "$UDP" $( [[ "$ONLY" == *xsk-* ]] && echo "$XSK") $( [[ "$ONLY" == *uroce* ]] && echo "$PERF"); do
	[ -x "$b" ] || { echo "raw_bench: $b not built (ninja -C $BUILD)" >&2; exit 2; }
done

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-bench
IPA=10.99.0.1 IPB=10.99.0.2
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24
# Optional: run the receiving veth's NAPI in a kernel thread, so the
# sender's core does not also carry the receive side (RAW_BENCH_THREADED=1).
if [ "${RAW_BENCH_THREADED:-0}" = 1 ]; then
	# veth has NAPI only with GRO (or XDP) on.
	ip netns exec "$NB" ethtool -K vb gro on >/dev/null
	ip netns exec "$NA" ethtool -K va gro on >/dev/null
	ip netns exec "$NB" sh -c 'echo 1 > /sys/class/net/vb/threaded'
	ip netns exec "$NA" sh -c 'echo 1 > /sys/class/net/va/threaded'
fi
# Resolve neighbours once, so every contender starts with a warm ARP entry.
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null
MACB=$(ip netns exec "$NB" cat /sys/class/net/vb/address)

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2"; }
# Sum of the receiver's drop counters ("drops":{"a":N,...}); empty if none reported.
drops() {
	grep -q '"drops":' <<<"$1" || return 0
	sed -n 's/.*"drops":{\([^}]*\)}.*/\1/p' <<<"$1" | tr ',' '\n' | awk -F: 'NF==2{s+=$2} END{print s+0}'
}

# run_pair NAME RECV_CMD... -- SEND_CMD...: receiver in NB, sender in NA.
run_pair() {
	local name=$1 size=$2
	shift 2
	local recv=() send=()
	while [ "$1" != "--" ]; do recv+=("$1"); shift; done
	shift
	send=("$@")
	local out=$NETNS_TMP/recv.log rpid
	netns_start "$NB" "$out" "${recv[@]}"
	rpid=$NETNS_PID
	netns_wait_until 5 grep -qs receiving "$out" || true
	local sres
	if ! sres=$(ip netns exec "$NA" "${send[@]}" 2>&1 | grep '^{' | tail -1); then sres=; fi
	netns_wait "$rpid" || true
	local rres
	rres=$(grep '^{' "$out" | tail -1 || true)
	if [ -z "$rres" ]; then
		echo "raw_bench: $name size $size: receiver gave no result:" >&2
		cat "$out" >&2
	fi
	RES_MPPS[$name:$size]=$(field mpps "$rres")
	RES_GBPS[$name:$size]=$(field gbps "$rres")
	RES_TX[$name:$size]=$(field mpps "$sres")
	RES_DROP[$name:$size]=$(drops "$rres")
	rm -f "$out"
	sleep 1 # queues rebind cleanly after the previous process exits
}

declare -A RES_MPPS RES_GBPS RES_TX RES_NOTE RES_DROP
RECV_T=$(awk "BEGIN{print $DURATION + 20}")
for size in $SIZES; do
	# The smallest MTU that carries the frame: veth refuses native XDP on
	# MTUs above a page unless the program and socket handle fragments.
	mtu=$(( size + 100 < 1500 ? 1500 : size + 100 ))
	netns_mtu $mtu "$NA" va "$NB" vb
	for c in $ONLY; do
		# DPDK 22.11's net_af_xdp has no multi-buffer: MTU 3434 at most.
		if [ "$c" = uroce-dpdk ] && [ $mtu -gt 3434 ]; then
			RES_NOTE[$c:$size]="n/a: net_af_xdp (DPDK 22.11) takes MTU <= 3434"
			continue
		fi
		case "$c" in
		kernel-udp)
			run_pair $c "$size" "$UDP" recv --duration "$RECV_T" -- \
				"$UDP" send --dst-ip $IPB --size "$size" --duration "$DURATION" ;;
		xsk-bare)
			run_pair $c "$size" "$XSK" recv --iface vb --duration "$RECV_T" -- \
				"$XSK" send --iface va --dst-mac "$MACB" --src-ip $IPA --dst-ip $IPB \
				--size "$size" --duration "$DURATION" ;;
		xsk-place)
			run_pair $c "$size" "$XSK" recv --iface vb --place --duration "$RECV_T" -- \
				"$XSK" send --iface va --dst-mac "$MACB" --src-ip $IPA --dst-ip $IPB \
				--size "$size" --duration "$DURATION" ;;
		uroce-afxdp)
			run_pair $c "$size" "$PERF" raw recv --port afxdp:vb --json --duration "$RECV_T" -- \
				"$PERF" raw send --port afxdp:va --dst-ip $IPB --dst-mac "$MACB" --size "$size" \
				--duration "$DURATION" --json ;;
		uroce-dpdk)
			run_pair $c "$size" "$PERF" raw recv --port afxdp:vb --json --duration "$RECV_T" -- \
				"$PERF" raw send --port dpdk --dst-ip $IPB --dst-mac "$MACB" --size "$size" \
				--duration "$DURATION" --json -- --no-huge -m 512 --no-pci \
				--log-level=error --vdev "net_af_xdp0,iface=va,busy_budget=0" ;;
		*) echo "raw_bench: unknown contender $c" >&2; exit 2 ;;
		esac
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
echo
echo "| payload | contender | rx Mpps | rx Gbit/s | tx Mpps | rx drops | vs kernel-udp | vs xsk-bare |"
echo "|---|---|---|---|---|---|---|---|"
for size in $SIZES; do
	for c in $ONLY; do
		m=${RES_MPPS[$c:$size]:-}
		if [ -n "${RES_NOTE[$c:$size]:-}" ]; then
			printf '| %s B | %s | %s | | | | | |\n' "$size" "$c" "${RES_NOTE[$c:$size]}"
			continue
		fi
		printf '| %s B | %s | %s | %s | %s | %s | %s | %s |\n' "$size" "$c" "${m:--}" "${RES_GBPS[$c:$size]:--}" \
			"${RES_TX[$c:$size]:--}" "${RES_DROP[$c:$size]:--}" "$(ratio "$m" "${RES_MPPS[kernel-udp:$size]:-}")" \
			"$(ratio "$m" "${RES_MPPS[xsk-bare:$size]:-}")"
	done
done
