#!/bin/bash
# SPDX-License-Identifier: MIT
# RC transport benchmark: uroce-perf's perftest modes between two network
# namespaces over a veth pair (afxdp ports, path MTU 4096 on a 4200-byte
# link MTU), each beside its baseline in the same run on the same pair:
#   write_bw, RC, 64 KiB messages, 1 QP  vs  the frame ceiling (uroce-perf raw
#       at 4 KiB payload frames: RDMA payload Gbit/s) and iperf3 UDP (4 KiB datagrams)
#   write_lat, 64 B                      vs  sockperf UDP ping-pong, 64 B (blocking, as
#       sockperf runs), and a kernel UDP ping-pong that busy-polls both ends
#   message rate of 64 B writes          vs  the frame ceiling at 64 B frames
# and the QP scale test (qp_scale: 10 000 QPs on one context).
#
#   sudo tests/bench/rc_bench.sh [--build DIR] [--duration SEC]
set -euo pipefail

BUILD=build
DURATION=3
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--duration) DURATION=$2; shift 2 ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "rc_bench: unknown option $1 (accepted: --build DIR, --duration SEC)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "rc_bench: must run as root (namespaces, XDP)" >&2; exit 2; }
PERF=$BUILD/apps/uroce-perf
SCALE=$BUILD/tests/bench/qp_scale
UPP=$BUILD/tests/bench/udp_pingpong
for b in "$PERF" "$SCALE" "$UPP"; do
	[ -x "$b" ] || { echo "rc_bench: $b not built (ninja -C $BUILD)" >&2; exit 2; }
done
for t in iperf3 sockperf; do
	command -v $t >/dev/null || { echo "rc_bench: $t missing (scripts/install-deps.sh)" >&2; exit 2; }
done

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-rcb
IPA=10.96.0.1 IPB=10.96.0.2
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24 --mtu 4200
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null
MACB=$(ip netns exec "$NB" cat /sys/class/net/vb/address)

bg() { # NS LOG CMD...: start in the background, remember the PID
	netns_start "$@"
	LAST=$NETNS_PID
}

# --- frame ceiling: uroce-perf raw, receiver-counted
raw() { # SIZE -> "mpps gbps_payload"
	local size=$1
	bg "$NB" "$TMP/raw.r" "$PERF" raw recv --port afxdp:vb --json --duration $((DURATION + 20))
	netns_wait_until 5 grep -q receiving "$TMP/raw.r" || true
	ip netns exec "$NA" "$PERF" raw send --port afxdp:va --dst-ip $IPB --dst-mac "$MACB" --size "$size" \
		--duration "$DURATION" --json >/dev/null 2>&1
	netns_wait "$LAST" || true
	local mpps
	mpps=$(sed -n 's/.*"mpps":\([0-9.]*\).*/\1/p' "$TMP/raw.r" | tail -1)
	awk -v m="$mpps" -v s="$size" 'BEGIN{printf "%s %.3f", m, m * 1e6 * s * 8 / 1e9}'
	sleep 1
}

# --- uroce-perf perftest modes: server in NB, client in NA
perftest() { # MODE ARGS... -> prints the client's output
	local mode=$1
	shift
	bg "$NB" "$TMP/srv" "$PERF" "$mode" -d afxdp:vb -x 1 "$@"
	sleep 0.5
	ip netns exec "$NA" "$PERF" "$mode" -d afxdp:va -x 1 "$@" $IPB 2>&1 || true
	netns_wait "$LAST" || true
	sleep 1
}

echo "rc_bench: frame ceiling" >&2
read -r RAW4K_MPPS RAW4K_GBPS <<<"$(raw 4096)"
read -r RAW64_MPPS RAW64_GBPS <<<"$(raw 64)"

echo "rc_bench: iperf3 UDP" >&2
bg "$NB" "$TMP/iperf.s" iperf3 -s -1 -B $IPB
sleep 0.5
IPERF_GBPS=$(ip netns exec "$NA" iperf3 -c $IPB -u -b 0 -l 4096 -t "$DURATION" -f g 2>&1 |
	awk '/receiver/{for (i=1;i<=NF;i++) if ($i=="Gbits/sec") print $(i-1)}' | tail -1)
netns_wait "$LAST" || true

echo "rc_bench: write_bw" >&2
WBW_OUT=$(perftest write_bw -s 65536 -m 4096 -n 20000 --report_gbits)
# perftest's table line: #bytes #iterations BW-peak BW-average MsgRate
WBW_GBPS=$(awk '$1=="65536"{print $4}' <<<"$WBW_OUT" | tail -1)

echo "rc_bench: message rate" >&2
MR_OUT=$(perftest write_bw -s 64 -m 4096 -n 500000 --report_gbits)
MR_MPPS=$(awk '$1=="64"{print $5}' <<<"$MR_OUT" | tail -1)

echo "rc_bench: write_lat vs sockperf" >&2
WLAT_OUT=$(perftest write_lat -s 64 -n 20000)
# #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9
WLAT_TYP=$(awk '$1=="64"{print $5}' <<<"$WLAT_OUT" | tail -1)
WLAT_AVG=$(awk '$1=="64"{print $6}' <<<"$WLAT_OUT" | tail -1)
WLAT_P99=$(awk '$1=="64"{print $8}' <<<"$WLAT_OUT" | tail -1)
bg "$NB" "$TMP/sp" sockperf server -i $IPB -p 11111
sleep 0.5
SP_OUT=$(ip netns exec "$NA" sockperf ping-pong -i $IPB -p 11111 -m 64 -t "$DURATION" 2>&1 | sed 's/\x1b\[[0-9;]*m//g')
netns_stop "$LAST" 2>/dev/null || true
SP_AVG=$(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' <<<"$SP_OUT" | tail -1)
SP_P50=$(awk '/percentile 50.000/{print $NF}' <<<"$SP_OUT" | tail -1)
SP_P99=$(awk '/percentile 99.000/{print $NF}' <<<"$SP_OUT" | tail -1)
bg "$NB" "$TMP/upp" "$UPP" server --ip $IPB --duration 60
netns_wait_until 5 grep -q serving "$TMP/upp" || true
UPP_OUT=$(ip netns exec "$NA" "$UPP" client --ip $IPB --size 64 --iters 20000 2>&1 || true)
netns_stop "$LAST" 2>/dev/null || true
UPP_P50=$(sed -n 's/.*"median_us":\([0-9.]*\).*/\1/p' <<<"$UPP_OUT")
UPP_AVG=$(sed -n 's/.*"avg_us":\([0-9.]*\).*/\1/p' <<<"$UPP_OUT")
UPP_P99=$(sed -n 's/.*"p99_us":\([0-9.]*\).*/\1/p' <<<"$UPP_OUT")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
echo
echo "| measure | uroce | baseline | value | uroce / baseline |"
echo "|---|---|---|---|---|"
echo "| write_bw RC 64 KiB, 1 QP, MTU 4096 (Gbit/s of payload) | ${WBW_GBPS:--} | frame ceiling, 4 KiB payload frames | ${RAW4K_GBPS:--} | $(ratio "${WBW_GBPS:-}" "${RAW4K_GBPS:-}") |"
echo "| | | iperf3 UDP, 4 KiB datagrams (receiver) | ${IPERF_GBPS:--} | $(ratio "${WBW_GBPS:-}" "${IPERF_GBPS:-}") |"
echo "| message rate, 64 B writes (Mpps) | ${MR_MPPS:--} | frame ceiling, 64 B payload frames | ${RAW64_MPPS:--} | $(ratio "${MR_MPPS:-}" "${RAW64_MPPS:-}") |"
echo "| write_lat 64 B, typical (median) us | ${WLAT_TYP:--} | sockperf UDP ping-pong 64 B, median RTT/2 us | ${SP_P50:--} | $(ratio "${WLAT_TYP:-}" "${SP_P50:-}") |"
echo "| | | busy-polling kernel UDP ping-pong 64 B, median RTT/2 us | ${UPP_P50:--} | $(ratio "${WLAT_TYP:-}" "${UPP_P50:-}") |"
echo "| write_lat 64 B, average us | ${WLAT_AVG:--} | sockperf average RTT/2 us | ${SP_AVG:--} | $(ratio "${WLAT_AVG:-}" "${SP_AVG:-}") |"
echo "| | | busy-polling kernel UDP, average us | ${UPP_AVG:--} | $(ratio "${WLAT_AVG:-}" "${UPP_AVG:-}") |"
echo "| write_lat 64 B, 99th percentile us | ${WLAT_P99:--} | sockperf 99th percentile us | ${SP_P99:--} | $(ratio "${WLAT_P99:-}" "${SP_P99:-}") |"
echo "| | | busy-polling kernel UDP, 99th percentile us | ${UPP_P99:--} | $(ratio "${WLAT_P99:-}" "${UPP_P99:-}") |"
echo
"$SCALE" --qps 10000
