#!/bin/bash
# SPDX-License-Identifier: MIT
# write_bw spread round robin over many QPs: uroce-perf write_bw between two
# network namespaces over a veth pair (afxdp ports, path MTU 4096 on a
# 4200-byte link MTU), for each reliability mode and QP count, and the
# aggregate goodput's ratio to the same mode's 1-QP run and to the frame
# ceiling (uroce-perf raw at 4 KiB payload frames, measured once per run of
# this script, as rc_bench.sh does). Server in namespace B, client in A.
#
#   tests/bench/qp_scale_bw.sh [--build DIR] [--duration SEC] [--qps "1 10 100 1000 10000"]
#       [--modes "rc sr"] [--size BYTES] [--tx-depth N|auto] [--cq-mod N|auto] [--logs DIR]
#
# --logs DIR: keep every run's server and client output there (the QP
# addresses, the tables, --counters' lines); otherwise they go with the
# temporary folder, and only a failed run's last lines are shown.
#
# Queue depths: perftest's tx_depth 128 per QP times 10 000 QPs would mean
# a send CQ of 1.28 M entries (uroce's limit is 2^20) and 8 MiB posted
# ahead on every QP, so --tx-depth auto keeps about 256 WRs posted in
# all: 128 (perftest's default) for 1 QP, max(2, 256 / QPs) beyond.
# --cq-mod auto signals every WR at depth 2 or less, else every
# tx_depth / 2 (perftest requires cq_mod <= tx_depth). Give numbers to use
# one depth for every run.
#
# Columns: Gbit/s: the client's BW average (perftest's, payload bits of
# the signalled, completed WRs over the run). setup s: server = from its
# start until it listens on the TCP port (context, buffers, all QPs
# created); client = from its start until its bw table header is printed
# (QPs created, connected to the server, the per-QP exchange twice, QPs to
# RTS; includes perftest's 1 s pause before the version exchange). RSS:
# peak resident memory (GNU /usr/bin/time's %M, the process's maximum RSS
# as the kernel reports it at exit); "-" without /usr/bin/time. retx: the
# client's QP retransmits; drops: each port's dropped packets, all reasons
# (--counters; the server counts every retransmitted duplicate as one, and
# a failed run's logs, or --logs, give them by reason).
set -euo pipefail

BUILD=build
DURATION=3
QPS="1 10 100 1000 10000"
MODES="rc sr"
SIZE=65536
TXD=auto
CQM=auto
LOGS=
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--duration) DURATION=${2:?--duration needs seconds}; shift 2 ;;
	--qps) QPS=${2:?--qps needs a list}; shift 2 ;;
	--modes) MODES=${2:?--modes needs a list}; shift 2 ;;
	--size) SIZE=${2:?--size needs bytes}; shift 2 ;;
	--tx-depth) TXD=${2:?--tx-depth needs a number or auto}; shift 2 ;;
	--cq-mod) CQM=${2:?--cq-mod needs a number or auto}; shift 2 ;;
	--logs) LOGS=${2:?--logs needs a directory}; shift 2 ;;
	-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
	*) echo "qp_scale_bw: unknown option $1 (accepted: --build DIR, --duration SEC, --qps LIST, --modes LIST," \
		"--size BYTES, --tx-depth N|auto, --cq-mod N|auto, --logs DIR)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "qp_scale_bw: must run as root (namespaces, XDP)" >&2; exit 2; }
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || { echo "qp_scale_bw: --duration $DURATION: whole seconds, 1 or more" >&2; exit 2; }
[[ $SIZE =~ ^[1-9][0-9]*$ ]] || { echo "qp_scale_bw: --size $SIZE: bytes, 1 or more" >&2; exit 2; }
for n in $QPS; do
	[[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 16384 ] ||
		{ echo "qp_scale_bw: --qps: '$n' is not a QP count in 1..16384" >&2; exit 2; }
done
for m in $MODES; do
	case "$m" in rc|sr) ;; *) echo "qp_scale_bw: --modes: '$m'; accepted: rc sr" >&2; exit 2 ;; esac
done
[ "$TXD" = auto ] || [[ $TXD =~ ^[1-9][0-9]*$ ]] || { echo "qp_scale_bw: --tx-depth $TXD: a number or auto" >&2; exit 2; }
[ "$CQM" = auto ] || [[ $CQM =~ ^[1-9][0-9]*$ ]] || { echo "qp_scale_bw: --cq-mod $CQM: a number or auto" >&2; exit 2; }
[ -z "$LOGS" ] || mkdir -p "$LOGS" || { echo "qp_scale_bw: --logs $LOGS: cannot create it" >&2; exit 2; }
PERF=$BUILD/apps/uroce-perf
[ -x "$PERF" ] || { echo "qp_scale_bw: $PERF not built (ninja -C $BUILD)" >&2; exit 2; }
TIME=()
[ -x /usr/bin/time ] && /usr/bin/time -f x true >/dev/null 2>&1 && TIME=(/usr/bin/time -f "qp_scale_bw: maxrss_kb=%M")
STDBUF=()
command -v stdbuf >/dev/null && STDBUF=(stdbuf -oL) # the header reaches the log when printed

# Bounds: every wait ends. A side's setup (10 000 QPs) is given SETUP_MAX
# seconds, the whole run DURATION + 2 * SETUP_MAX + the tool's own --timeout.
SETUP_MAX=120
PERF_TIMEOUT=30
RUN_MAX=$((DURATION + 2 * SETUP_MAX + PERF_TIMEOUT))

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-qpsbw
IPA=10.97.0.1 IPB=10.97.0.2
netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a $IPA/24 --ip-b $IPB/24 --mtu 4200
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null
MACB=$(ip netns exec "$NB" cat /sys/class/net/vb/address)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b - a}'; }

# --- frame ceiling: uroce-perf raw at 4 KiB payload, receiver-counted
raw4k() { # -> RAW: Gbit/s of payload
	netns_start "$NB" "$TMP/raw.r" timeout $((DURATION + 20)) "$PERF" raw recv --port afxdp:vb --json \
		--duration $((DURATION + 15))
	local pid=$NETNS_PID mpps
	netns_wait_until 5 grep -q receiving "$TMP/raw.r" || true
	ip netns exec "$NA" timeout $((DURATION + 20)) "$PERF" raw send --port afxdp:va --dst-ip $IPB \
		--dst-mac "$MACB" --size 4096 --duration "$DURATION" --json >/dev/null 2>&1 || true
	netns_wait "$pid" || true
	mpps=$(sed -n 's/.*"mpps":\([0-9.]*\).*/\1/p' "$TMP/raw.r" | tail -1)
	RAW=-
	[ -z "$mpps" ] || RAW=$(awk -v m="$mpps" 'BEGIN{printf "%.3f", m * 1e6 * 4096 * 8 / 1e9}')
	sleep 1
}

depth_for() { # QPS -> tx_depth
	if [ "$TXD" != auto ]; then echo "$TXD"; elif [ "$1" = 1 ]; then echo 128; else
		local d=$((256 / $1)); echo $((d < 2 ? 2 : d)); fi
}
cqmod_for() { # TX_DEPTH -> cq_mod
	if [ "$CQM" != auto ]; then echo "$CQM"; elif [ "$1" -le 2 ]; then echo 1; else echo $(($1 / 2)); fi
}
field() { # KEY FILE: the last KEY=number in FILE
	sed -n "s/.*[ :]$1=\([0-9]*\).*/\1/p" "$2" | tail -1
}

# One run: MODE QPS -> RESULT="gbps srv_setup cli_setup srv_rss_mb cli_rss_mb retx drops status
# tx_depth cq_mod" (not in a $(...): the processes must stay this shell's,
# so the exit trap can end them)
run_one() {
	local mode=$1 n=$2 txd cqm args srv cli t0 t1 tl th gbps ss cs sr cr retx dp dc st=ok
	txd=$(depth_for "$n")
	cqm=$(cqmod_for "$txd")
	args=(write_bw -x 1 -s "$SIZE" -m 4096 -q "$n" -D "$DURATION" --report_gbits -t "$txd" -Q "$cqm"
		--timeout "$PERF_TIMEOUT" --counters)
	[ "$mode" = rc ] || args+=(--reliability "$mode")
	srv=$TMP/srv-$mode-$n.log cli=$TMP/cli-$mode-$n.log
	t0=$(now)
	netns_start "$NB" "$srv" timeout -k 5 "$RUN_MAX" "${TIME[@]}" "${STDBUF[@]}" "$PERF" "${args[@]}" -d afxdp:vb
	local spid=$NETNS_PID
	if netns_wait_tcp "$NB" 18515 "$spid" "$SETUP_MAX"; then
		tl=$(now)
		ss=$(elapsed "$t0" "$tl")
	else
		ss=- st="server-not-listening"
	fi
	if [ "$st" = ok ]; then
		t1=$(now)
		netns_start "$NA" "$cli" timeout -k 5 "$RUN_MAX" "${TIME[@]}" "${STDBUF[@]}" "$PERF" "${args[@]}" \
			-d afxdp:va $IPB
		local cpid=$NETNS_PID
		# the client's table header: its setup is over
		if netns_wait_until "$SETUP_MAX" grep -qs '#bytes' "$cli"; then
			th=$(now)
			cs=$(elapsed "$t1" "$th")
		else
			cs=-
		fi
		netns_wait "$cpid" || st="client-exit-$?"
	else
		cs=-
	fi
	netns_wait "$spid" || { [ "$st" != ok ] || st="server-exit-$?"; }
	gbps=$(awk -v s="$SIZE" '$1==s && NF>=5 {print $4}' "$cli" | tail -1)
	sr=$(field maxrss_kb "$srv") cr=$(field maxrss_kb "$cli")
	retx=$(field retransmits "$cli")
	dp=$(field drops "$srv") dc=$(field drops "$cli")
	[ -n "$sr" ] && sr=$((sr / 1024)) || sr=-
	[ -n "$cr" ] && cr=$((cr / 1024)) || cr=-
	[ -z "$LOGS" ] || cp "$srv" "$cli" "$LOGS"/ 2>/dev/null || true
	RESULT="${gbps:--} $ss $cs $sr $cr ${retx:--} ${dc:--}/${dp:--} $st $txd $cqm"
	sleep 1
}

echo "qp_scale_bw: frame ceiling (raw, 4 KiB payload)" >&2
raw4k

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || a == "-" || b == "" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
ROWS=()
FAILED=0
for mode in $MODES; do
	BASE=
	for n in $QPS; do
		echo "qp_scale_bw: $mode, $n QPs" >&2
		run_one "$mode" "$n"
		read -r G SS CS SR CR RX DR ST TXDEPTH CQMOD <<<"$RESULT"
		if [ "$ST" != ok ]; then
			FAILED=1
			echo "qp_scale_bw: $mode $n QPs: $ST; logs:" >&2
			for f in "$TMP/srv-$mode-$n.log" "$TMP/cli-$mode-$n.log"; do
				[ -f "$f" ] && { echo "--- $f (last 15 lines)" >&2; tail -n 15 "$f" >&2; }
			done
		fi
		[ "$n" = 1 ] && [ "$G" != - ] && BASE=$G
		ROWS+=("| $mode | $n | $TXDEPTH/$CQMOD | $G | $(ratio "$G" "$BASE") | $(ratio "$G" "$RAW") | $SS / $CS | $SR / $CR | $RX | $DR | $ST |")
	done
done

echo
echo "write_bw, $SIZE B messages, MTU 4096, ${DURATION} s per run; frame ceiling (raw, 4 KiB payload frames): $RAW Gbit/s"
echo
echo "| mode | QPs | tx_depth/cq_mod | Gbit/s | / 1 QP | / frame ceiling | setup s (server / client) | peak RSS MiB (server / client) | retx | drops (client / server) | status |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for r in "${ROWS[@]}"; do echo "$r"; done
exit $FAILED
