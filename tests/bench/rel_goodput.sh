#!/bin/bash
# SPDX-License-Identifier: MIT
# Goodput at 1% loss against lossless, on veth, for the reliability modes
# side by side: rc (go-back-N), sr (selective repeat), ec RS(32,8) and ec
# XOR(32,8). uroce-perf send_bw (SEND: the one operation every mode carries
# the same way; a WRITE without immediate on an ec QP goes as sr, without
# parity) between namespaces A and B routed by M, whose ingress interfaces
# carry uroce-impair (tests/netns/impair.sh's topology): --drop 0 for the
# lossless points, --drop 1% on both directions (data and ACK/SACK) for the
# lossy ones. Each point is one client run of ITERS messages; the
# repetitions alternate lossless and lossy, mode after mode, so that the
# neighbours' load falls on all of them alike; the table shows the median
# Gbit/s (payload bytes completed at the sender over the run), the ratio
# lossy / lossless per mode, and sr's and ec's ratios and lossy goodput
# against rc's. The ends are pinned to CPUs 0 and 1 when there are two.
#
#   tests/bench/rel_goodput.sh --build DIR [--reps N] [--sizes "65536 4096"]
#       [--iters "SIZE=N ..."] [--modes "rc sr ec-rs ec-xor"] [--rel-opts "OPTS"] [--seed S]
#       [--op send_bw|write_bw] [--loss-dir both|fwd]
#
# --op write_bw: plain RDMA WRITEs instead (on an ec QP they go as sr,
# without parity). --loss-dir fwd: the loss only on M's ingress from A
# (the data direction), ACKs and SACKs lossless; both (the default): on
# both directions.
#
# --build DIR: a build with apps/uroce-perf and apps/uroce-impair (release:
# meson setup DIR --buildtype=release; nothing is built here). --rel-opts:
# more options for every sr and ec run (e.g. "--rto-min-us 20000"); none
# by default. Exit 1 when a run fails (its point shows FAIL).
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
REPS=3
SIZES="65536 4096"
ITERS="65536=6000 4096=60000"
MODES="rc sr ec-rs ec-xor"
REL_OPTS=
SEED=1
OP=send_bw
LOSS_DIR=both
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--sizes) SIZES=${2:?--sizes needs a list}; shift 2 ;;
	--iters) ITERS=${2:?--iters needs SIZE=N pairs}; shift 2 ;;
	--modes) MODES=${2:?--modes needs a list}; shift 2 ;;
	--rel-opts) REL_OPTS=${2?--rel-opts needs options}; shift 2 ;;
	--seed) SEED=${2:?--seed needs a number}; shift 2 ;;
	--op) OP=${2:?--op needs send_bw or write_bw}; shift 2 ;;
	--loss-dir) LOSS_DIR=${2:?--loss-dir needs both or fwd}; shift 2 ;;
	-h|--help) sed -n '2,30p' "$0"; exit 0 ;;
	*) echo "rel_goodput: unknown option $1 (accepted: --build, --reps, --sizes, --iters, --modes, --rel-opts, --seed, --op, --loss-dir)" >&2
	   exit 2 ;;
	esac
done
case "$OP" in send_bw|write_bw) ;; *) echo "rel_goodput: --op $OP: accepted send_bw, write_bw" >&2; exit 2 ;; esac
case "$LOSS_DIR" in both|fwd) ;; *) echo "rel_goodput: --loss-dir $LOSS_DIR: accepted both, fwd" >&2; exit 2 ;; esac
[ -n "$BUILD" ] || { echo "rel_goodput: --build DIR is required (a release build with the tools)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "rel_goodput: run as root (namespaces, XDP)" >&2; exit 2; }
[[ $REPS =~ ^[1-9][0-9]?$ ]] || { echo "rel_goodput: --reps $REPS: accepted 1..99" >&2; exit 2; }
PERF=$BUILD/apps/uroce-perf
IMPAIR=$BUILD/apps/uroce-impair
for t in "$PERF" "$IMPAIR"; do
	[ -x "$t" ] || { echo "rel_goodput: $t is missing (ninja -C $BUILD apps/uroce-perf apps/uroce-impair)" >&2; exit 2; }
done
iters_for() { # SIZE -> N
	local kv
	for kv in $ITERS; do
		[ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return 0; }
	done
	echo $((400000000 / $1)) # about 400 MB
}
mode_opts() { # MODE -> uroce-perf options
	case "$1" in
	rc) echo "--reliability rc" ;;
	sr) echo "--reliability sr $REL_OPTS" ;;
	ec-rs) echo "--reliability ec --ec rs --ec-k 32 --ec-m 8 $REL_OPTS" ;;
	ec-xor) echo "--reliability ec --ec xor --ec-k 32 --ec-m 8 $REL_OPTS" ;;
	*) echo "rel_goodput: unknown mode $1 (accepted: rc sr ec-rs ec-xor)" >&2; return 1 ;;
	esac
}
for m in $MODES; do mode_opts "$m" >/dev/null || exit 2; done

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-relgp
IPB=10.92.2.2
netns_add "$NA" "$NM" "$NB"
netns_veth "$NA" a0 "$NM" m0 --ip-a 10.92.1.2/24 --ip-b 10.92.1.1/24 --mtu 1500
netns_veth "$NB" b0 "$NM" m1 --ip-a $IPB/24 --ip-b 10.92.2.1/24 --mtu 1500
ip netns exec "$NM" sysctl -qw net.ipv4.ip_forward=1
ip -n "$NA" route add default via 10.92.1.1
ip -n "$NB" route add default via 10.92.2.1
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null || netns_die "B is not reachable through the router"
bench_pin

impair() { # P: both directions, or only A's (fwd)
	local dev p
	for dev in m0 m1; do
		p=$1
		[ "$LOSS_DIR" = fwd ] && [ $dev = m1 ] && p=0
		ip netns exec "$NM" "$IMPAIR" $dev --drop "$p" --seed "$SEED" >/dev/null || netns_die "uroce-impair $dev --drop $p"
	done
}
dropped() {
	local dev s=0 v
	for dev in m0 m1; do
		v=$(ip netns exec "$NM" "$IMPAIR" $dev --stats | sed -n 's/.* dropped=\([0-9]*\).*/\1/p')
		s=$((s + ${v:-0}))
	done
	echo $s
}
# point TAG SIZE MODE: one send_bw run; prints "GBPS RETX DROPPED" or "FAIL"
point() {
	local tag=$1 size=$2 mode=$3 n spid crc=0 src=0 opts gbps retx
	n=$(iters_for "$size")
	read -r -a opts <<<"$(mode_opts "$mode")"
	netns_start "$NB" "$TMP/$tag.s" "${PIN_B[@]}" timeout 180 "$PERF" "$OP" -d afxdp:b0 -x 1 -s "$size" -n "$n" \
		--report_gbits --timeout 20 --counters "${opts[@]}"
	spid=$NETNS_PID
	netns_wait_tcp "$NB" 18515 "$spid" 10 || { netns_stop "$spid"; echo FAIL; return; }
	ip netns exec "$NA" "${PIN_A[@]}" timeout 180 "$PERF" "$OP" -d afxdp:a0 -x 1 -s "$size" -n "$n" \
		--report_gbits --timeout 20 --counters "${opts[@]}" $IPB >"$TMP/$tag.c" 2>&1 || crc=$?
	netns_wait "$spid" || src=$?
	gbps=$(awk -v s="$size" -v n="$n" '$1 == s && $2 == n { print $4; exit }' "$TMP/$tag.c")
	retx=$(sed -n 's/^uroce counters: qp .* retransmits=\([0-9]*\) .*/\1/p' "$TMP/$tag.c" | head -1)
	if [ $crc != 0 ] || [ $src != 0 ] || [ -z "$gbps" ]; then
		echo "rel_goodput: $tag failed (client $crc, server $src):" >&2
		grep -h -e "uroce-perf:" -e "Failed" "$TMP/$tag.c" "$TMP/$tag.s" | head -4 | sed 's/^/   /' >&2
		echo FAIL
		return
	fi
	echo "$gbps ${retx:-0}"
}

echo "== rel_goodput: uroce-perf $OP A -> B through M (uroce-impair on $([ "$LOSS_DIR" = fwd ] && echo "A's direction only" || echo "both directions")), $(nproc) CPUs," \
	"ends on ${PIN_A[*]:-any} / ${PIN_B[*]:-any}"
echo "   $(uname -r), $(bench_commit), build $BUILD," \
	"sr/ec options: ${REL_OPTS:-the defaults}"
declare -A R
FAILS=0
START=$SECONDS
for rep in $(seq 1 "$REPS"); do
	for size in $SIZES; do
		for mode in $MODES; do
			for loss in 0 0.01; do
				impair $loss
				d0=$(dropped)
				res=$(point "$mode.$size.$loss.$rep" "$size" "$mode" $loss)
				d=$(($(dropped) - d0))
				[ "$res" = FAIL ] && FAILS=$((FAILS + 1))
				R[$mode.$size.$loss]+="${res%% *} "
				printf '   rep %d  %-6s %6d B  loss %-4s  %s  (retransmits %s, router dropped %s)\n' "$rep" "$mode" \
					"$size" "$loss" "${res%% *}" "$(awk '{ print $2 }' <<<"$res")" "$d"
			done
		done
	done
done

median() { # values (FAIL counts as 0) -> median
	tr ' ' '\n' | sed '/^$/d; s/^FAIL$/0/' | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print 0;
		else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo
echo "== goodput, median of $REPS (Gbit/s of message payload completed at the sender; 1% loss on $LOSS_DIR)"
printf '%-8s %-7s %10s %10s %8s %10s %12s   %s\n' size mode lossless "1% loss" ratio "ratio/rc" "lossy/rc" "runs (lossless | lossy)"
for size in $SIZES; do
	rc0=$(median <<<"${R[rc.$size.0]:-}") rc1=$(median <<<"${R[rc.$size.0.01]:-}")
	for mode in $MODES; do
		g0=$(median <<<"${R[$mode.$size.0]}") g1=$(median <<<"${R[$mode.$size.0.01]}")
		awk -v s="$size" -v m="$mode" -v g0="$g0" -v g1="$g1" -v r0="$rc0" -v r1="$rc1" -v runs="${R[$mode.$size.0]}| ${R[$mode.$size.0.01]}" \
			-v hasrc="${R[rc.$size.0]:+1}" 'BEGIN {
			ratio = 0; rcr = 0; vs = "-"; lossy = "-"
			if (g0 > 0) ratio = g1 / g0
			if (r0 > 0) rcr = r1 / r0
			if (hasrc && rcr > 0) vs = sprintf("%.2f", ratio / rcr)
			if (hasrc && r1 > 0) lossy = sprintf("%.2f", g1 / r1)
			printf "%-8s %-7s %10.3f %10.3f %8.2f %10s %12s   %s\n", s, m, g0, g1, ratio, vs, lossy, runs }'
	done
done
echo "   ratio = 1% loss / lossless; ratio/rc = that ratio over rc's; lossy/rc = goodput at 1% over rc's at 1%"
echo "   ($((SECONDS - START)) s)"
[ $FAILS = 0 ] || { echo "rel_goodput: $FAILS run(s) failed (FAIL above, counted as 0 in the medians)" >&2; exit 1; }
