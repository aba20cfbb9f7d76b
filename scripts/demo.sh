#!/bin/bash
# SPDX-License-Identifier: MIT
# The main demo: a real RC connection between two network namespaces, each
# end a uroce AF_XDP port, routed through a third namespace. First on a
# clean link, then with the router dropping a share of the RoCEv2 packets
# (uroce-impair, a seeded XDP program): uroce-pingpong --chk, uroce-perf
# write_bw and write_lat with rc (go-back-N); then on the same lossy link
# with the reliability chosen in software (sr: selective repeat, ec:
# Reed-Solomon); then a summary (bandwidth, latency p50/p99, retransmits,
# drops by reason, packets the impairment dropped). Run as root.
#
#   scripts/demo.sh [--drop P] [--seed S] [--build DIR]
#     --drop P     share of RoCEv2 packets dropped in the second run: 0..1 or N% (default 1%)
#     --seed S     seed of the drop pattern (default 1)
#     --build DIR  use this existing meson build (skips installing and building)
set -euo pipefail
CALLER_DIR=$PWD
cd "$(dirname "$0")/.."

DROP=1%
SEED=1
BUILD=
while [ $# -gt 0 ]; do
	case "$1" in
	--drop) DROP=${2:?--drop needs a value}; shift 2 ;;
	--seed) SEED=${2:?--seed needs a value}; shift 2 ;;
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "demo: unknown option $1 (accepted: --drop P, --seed S, --build DIR, --help)" >&2; exit 2 ;;
	esac
done
# --build DIR is relative to where the demo was started from.
if [ -n "$BUILD" ]; then
	b=$(cd "$CALLER_DIR" && realpath -e -- "$BUILD" 2>/dev/null) || { echo "demo: --build $BUILD: no such directory" >&2; exit 2; }
	BUILD=$b
fi
[ "$(id -u)" = 0 ] || { echo "demo: run as root (network namespaces, XDP); e.g. su -c scripts/demo.sh" >&2; exit 2; }

if [ -z "$BUILD" ]; then
	./scripts/install-deps.sh >/dev/null
	BUILD=build-demo
	[ -d "$BUILD" ] || meson setup "$BUILD" --buildtype=release >/dev/null
	echo "== building uroce-pingpong, uroce-perf, uroce-impair in $BUILD"
	ninja -C "$BUILD" apps/uroce-pingpong apps/uroce-perf apps/uroce-impair >/dev/null
fi
PP=$BUILD/apps/uroce-pingpong
PERF=$BUILD/apps/uroce-perf
IMPAIR=$BUILD/apps/uroce-impair
for t in "$PP" "$PERF" "$IMPAIR"; do
	[ -x "$t" ] || { echo "demo: $t is missing (a build without AF_XDP? see meson's summary)" >&2; exit 1; }
done

# Sizes chosen so that both runs together take well under a minute on two cores.
PP_SIZE=65536 PP_ITERS=100
BW_SIZE=65536 BW_ITERS=500
LAT_SIZE=64 LAT_ITERS=1000

# The topology, namespaces and veths from tests/lib/netns.sh (which also
# cleans up at exit, processes by PID):
#   A (a0 10.99.1.2) --- (m0 10.99.1.1) M (m1 10.99.2.1) --- (b0 10.99.2.2) B
# uroce's XDP redirect program sits on a0 and b0; M is a plain Linux
# router whose ingress interfaces m0 and m1 carry the impairment. One MTU
# on every hop: the ports' path MTU must fit the router's links.
. tests/lib/netns.sh
START=$SECONDS
netns_init uroce-demo
TMP=$NETNS_TMP
NA=$NETNS_PREFIX-a NM=$NETNS_PREFIX-m NB=$NETNS_PREFIX-b
A_IP=10.99.1.2 B_IP=10.99.2.2
netns_add "$NA" "$NM" "$NB"
netns_veth "$NA" a0 "$NM" m0 --ip-a $A_IP/24 --ip-b 10.99.1.1/24 --mtu 1500
netns_veth "$NB" b0 "$NM" m1 --ip-a $B_IP/24 --ip-b 10.99.2.1/24 --mtu 1500
ip netns exec "$NM" sysctl -qw net.ipv4.ip_forward=1
# --drop and --seed are checked by the tool itself, before the first run.
ip netns exec "$NM" "$IMPAIR" m0 --drop "$DROP" --seed "$SEED" >/dev/null || exit 2
ip netns exec "$NM" "$IMPAIR" m0 --off >/dev/null
ip -n "$NA" route add default via 10.99.1.1
ip -n "$NB" route add default via 10.99.2.1
ip netns exec "$NA" ping -c 1 -W 2 $B_IP >/dev/null || { echo "demo: $B_IP unreachable through the router" >&2; exit 1; }

echo "== uroce demo: RC queue pairs between namespaces A (a0 $A_IP) and B (b0 $B_IP),"
echo "   routed by namespace M; each end is a uroce AF_XDP port"

FAILED=0
# run_pair TAG PROGRAM ARGS...: the server in B, the client in A (the tools
# take the server's address last); their output in $TMP/TAG.s and .c.
run_pair() {
	local tag=$1 crc=0 src=0 t0=$SECONDS
	shift
	netns_start "$NB" "$TMP/$tag.s" timeout 60 "$@" -d afxdp:b0
	ip netns exec "$NA" timeout 60 "$@" -d afxdp:a0 $B_IP >"$TMP/$tag.c" 2>&1 || crc=$?
	netns_wait "$NETNS_PID" || src=$?
	echo "   ($((SECONDS - t0)) s)"
	if [ $crc != 0 ] || [ $src != 0 ]; then
		echo "   FAILED ($tag: client exit $crc, server exit $src); their output:"
		sed 's/^/   client| /' "$TMP/$tag.c"
		sed 's/^/   server| /' "$TMP/$tag.s"
		FAILED=1
		return 1
	fi
}

# counter FILE... KEY: a QP counter summed over both ends' --counters lines;
# prints nothing and returns 1 when no line carries KEY.
counter() {
	local key=${*: -1}
	awk -v k="$key" '/^uroce counters: qp / { for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) { s += kv[2]; f = 1 } } }
		END { if (!f) exit 1; print s + 0 }' "${@:1:$#-1}"
}
# drops FILE...: the ports' drops by reason, summed over both ends.
drops() {
	awk '/^uroce counters: port / { for (i = 5; i <= NF; i++) if ($i !~ /^(rx_packets|tx_packets|drops)=/) {
			split($i, kv, "="); d[kv[1]] += kv[2] } }
		END { n = 0; for (r in d) { printf "%s%s=%d", n++ ? " " : "", r, d[r] } if (!n) printf "none"; print "" }' "$@"
}
# impaired FIELD: a counter of the impairment, summed over m0 and m1; says
# why on stderr and returns 1 when a device's counter cannot be read.
impaired() {
	local s=0 v out dev
	for dev in m0 m1; do
		out=$(ip netns exec "$NM" "$IMPAIR" $dev --stats 2>&1) ||
			{ echo "demo: uroce-impair $dev --stats failed: $out" >&2; return 1; }
		v=$(sed -n "s/.* $1=\([0-9][0-9]*\).*/\1/p" <<<"$out")
		[[ $v =~ ^[0-9]+$ ]] || { echo "demo: no $1= counter in uroce-impair $dev --stats: $out" >&2; return 1; }
		s=$((s + v))
	done
	echo $s
}
# demo_fail MSG: the demo cannot be trusted; the EXIT trap still cleans up.
demo_fail() {
	echo "demo: FAIL: $*" >&2
	exit 1
}

# run_suite LABEL: the three runs, their numbers into R_<label>_*.
run_suite() {
	local l=$1 r0=0 d0=0 r1 d1
	if [ "$l" = lossy ]; then
		r0=$(impaired roce) || demo_fail "cannot read the impairment's roce counter before the lossy run"
		d0=$(impaired dropped) || demo_fail "cannot read the impairment's dropped counter before the lossy run"
	fi
	echo "-- uroce-pingpong rc --chk: $PP_ITERS x $PP_SIZE bytes each way, received data checked"
	if run_pair "$l.pp" "$PP" rc -g 1 --chk -s $PP_SIZE -n $PP_ITERS --hop-limit 64 --timeout 20 --counters; then
		grep -E 'iters in' "$TMP/$l.pp.c" | sed 's/^/   /'
		eval "R_${l}_pp=verified"
	else
		eval "R_${l}_pp=FAILED"
	fi
	echo "-- uroce-perf write_bw: $BW_ITERS x $BW_SIZE bytes"
	if run_pair "$l.bw" "$PERF" write_bw -x 1 -s $BW_SIZE -n $BW_ITERS --timeout 20 --counters; then
		grep -A1 '#bytes' "$TMP/$l.bw.c" | sed 's/^/   /'
		eval "R_${l}_bw=\"$(awk '/#bytes/ { getline; printf "%.1f MB/s", $4 }' "$TMP/$l.bw.c")\""
	else
		eval "R_${l}_bw=FAILED"
	fi
	echo "-- uroce-perf write_lat: $LAT_ITERS x $LAT_SIZE bytes"
	if run_pair "$l.lat" "$PERF" write_lat -x 1 -s $LAT_SIZE -n $LAT_ITERS --timeout 20 --counters; then
		grep -A1 '#bytes' "$TMP/$l.lat.c" | sed 's/^/   /'
		eval "R_${l}_lat=\"$(awk '/#bytes/ { getline; printf "%s / %s us", $5, $8 }' "$TMP/$l.lat.c")\""
	else
		eval "R_${l}_lat=FAILED"
	fi
	# "unread": the run printed no counters (checked after the summary)
	local t rtx tmo
	for t in pp bw lat; do
		rtx=$(counter "$TMP/$l.$t".[cs] retransmits) || rtx=unread
		tmo=$(counter "$TMP/$l.$t".[cs] timeouts) || tmo=unread
		eval "R_${l}_${t}_rtx=$rtx R_${l}_${t}_tmo=$tmo"
	done
	eval "R_${l}_drops=\"$(drops "$TMP/$l".*.[cs])\""
	if [ "$l" = lossy ]; then
		r1=$(impaired roce) || demo_fail "cannot read the impairment's roce counter after the lossy run"
		d1=$(impaired dropped) || demo_fail "cannot read the impairment's dropped counter after the lossy run"
		R_lossy_roce=$((r1 - r0))
		R_lossy_dropped=$((d1 - d0))
	fi
}

echo
echo "== 1. clean link"
run_suite clean

echo
echo "== 2. the router drops RoCEv2 packets: uroce-impair --drop $DROP --seed $SEED on m0 and m1"
for dev in m0 m1; do
	ip netns exec "$NM" "$IMPAIR" $dev --drop "$DROP" --seed "$SEED" | sed 's/^/   /'
done
run_suite lossy

# rel_counter FILE... KEY: an sr/ec counter (the "rel" line of --counters),
# summed over both ends.
rel_counter() {
	local key=${*: -1}
	awk -v k="$key" '/^uroce counters: rel / { for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) { s += kv[2]; f = 1 } } }
		END { if (!f) exit 1; print s + 0 }' "${@:1:$#-1}"
}

echo
echo "== 3. the same lossy link, reliability chosen in software (docs/reliability.md)"
echo "-- uroce-pingpong rc --chk --reliability sr: selective repeat, received data checked"
if run_pair sr.pp "$PP" rc -g 1 --chk -s $PP_SIZE -n $PP_ITERS --hop-limit 64 --timeout 20 --counters \
	--reliability sr; then
	R_sr_pp=verified
else
	R_sr_pp=FAILED
fi
echo "-- uroce-perf write_bw --reliability sr: $BW_ITERS x $BW_SIZE bytes"
if run_pair sr.bw "$PERF" write_bw -x 1 -s $BW_SIZE -n $BW_ITERS --timeout 20 --counters --reliability sr; then
	grep -A1 '#bytes' "$TMP/sr.bw.c" | sed 's/^/   /'
	R_sr_bw=$(awk '/#bytes/ { getline; printf "%.1f MB/s", $4 }' "$TMP/sr.bw.c")
else
	R_sr_bw=FAILED
fi
echo "-- uroce-perf send_bw --reliability ec: Reed-Solomon 32 + 8, $BW_ITERS x $BW_SIZE bytes"
if run_pair ec.bw "$PERF" send_bw -x 1 -s $BW_SIZE -n $BW_ITERS --timeout 20 --counters --reliability ec; then
	grep -A1 '#bytes' "$TMP/ec.bw.c" | sed 's/^/   /'
	R_ec_bw=$(awk '/#bytes/ { getline; printf "%.1f MB/s", $4 }' "$TMP/ec.bw.c")
else
	R_ec_bw=FAILED
fi
for t in sr.pp sr.bw ec.bw; do
	v=$(counter "$TMP/$t".[cs] retransmits) || v=unread
	eval "R_${t/./_}_rtx=$v"
	v=$(rel_counter "$TMP/$t".[cs] ec_recovered) || v=unread
	eval "R_${t/./_}_rec=$v"
done
for dev in m0 m1; do
	ip netns exec "$NM" "$IMPAIR" $dev --stats | sed 's/^/   /'
	ip netns exec "$NM" "$IMPAIR" $dev --off >/dev/null
done

echo
echo "== summary                            clean link              $DROP RoCEv2 loss"
row() { printf '   %-34s %-23s %s\n' "$1" "$2" "$3"; }
row "pingpong rc --chk ($PP_ITERS x $((PP_SIZE / 1024)) KiB)" "$R_clean_pp" "$R_lossy_pp"
row "write_bw ($BW_ITERS x $((BW_SIZE / 1024)) KiB)" "$R_clean_bw" "$R_lossy_bw"
row "write_lat p50 / p99 ($LAT_SIZE B)" "$R_clean_lat" "$R_lossy_lat"
row "retransmits: pingpong/bw/lat" "$R_clean_pp_rtx / $R_clean_bw_rtx / $R_clean_lat_rtx" \
	"$R_lossy_pp_rtx / $R_lossy_bw_rtx / $R_lossy_lat_rtx"
row "ACK timeouts: pingpong/bw/lat" "$R_clean_pp_tmo / $R_clean_bw_tmo / $R_clean_lat_tmo" \
	"$R_lossy_pp_tmo / $R_lossy_bw_tmo / $R_lossy_lat_tmo"
row "RoCEv2 packets dropped by the router" "0 (no impairment)" "$R_lossy_dropped of $R_lossy_roce"
echo "   the same lossy link with the reliability chosen in software:"
row "pingpong sr --chk" "" "$R_sr_pp, $R_sr_pp_rtx retransmits"
row "write_bw sr (selective repeat)" "" "$R_sr_bw, $R_sr_bw_rtx retransmits"
row "send_bw ec (RS 32+8)" "" "$R_ec_bw, $R_ec_bw_rtx retransmits, $R_ec_bw_rec rebuilt"
echo "   drops by reason at the uroce ports (both ends, runs 1 and 2):"
echo "     clean: $R_clean_drops"
echo "     lossy: $R_lossy_drops"
echo "   (after a lost packet go-back-N discards what follows it as psn_out_of_window and the"
echo "   requester sends it again; duplicate = a retransmitted request the responder already had)"
echo "   Verified: every message of every run completed (a QP that gave up would fail the run);"
echo "   every received packet's ICRC is checked (bad_icrc would show above); pingpong --chk checks"
echo "   the first byte of every page of the received buffer and that every receive completion is"
echo "   a RECV of exactly $PP_SIZE bytes; with sr, every byte of every message. write_bw, write_lat and"
echo "   send_bw do not check data (neither does perftest)."
echo "   ($((SECONDS - START)) s for both runs)"
if [ $FAILED != 0 ]; then
	echo "demo: a run FAILED (see its output above)" >&2
	exit 1
fi
# The lossy run must have been lossy, and uroce must have recovered by
# retransmitting: otherwise the second half of the demo showed nothing.
for l in clean lossy; do
	for t in pp bw lat; do
		for c in rtx tmo; do
			v=R_${l}_${t}_$c
			[[ ${!v} =~ ^[0-9]+$ ]] || demo_fail "the $l $t run printed no QP counters (--counters), $c unread"
		done
	done
done
# (--drop 0 asks for no loss: then only the counters are checked)
if awk -v d="${DROP%\%}" 'BEGIN { exit !(d + 0 == 0) }'; then
	exit 0
fi
[ "$R_lossy_roce" -gt 0 ] || demo_fail "the router saw no RoCEv2 packets in the lossy run (uroce-impair not in the path?)"
[ "$R_lossy_dropped" -gt 0 ] ||
	demo_fail "the router dropped 0 of $R_lossy_roce RoCEv2 packets in the lossy run (--drop $DROP): nothing was lost"
[ $((R_lossy_pp_rtx + R_lossy_bw_rtx + R_lossy_lat_rtx)) -gt 0 ] ||
	demo_fail "the lossy runs counted no retransmits although the router dropped $R_lossy_dropped packets"
