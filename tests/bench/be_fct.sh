#!/bin/bash
# SPDX-License-Identifier: MIT
# Per-message completion time of be (OptiNIC best effort) against rc and sr
# on veth, lossless and lossy: be_fct (one closed-loop message at a time,
# from the sender's start of the message to the receiver's completion,
# CLOCK_MONOTONIC of two processes meeting through a shared file) between
# namespaces A and B routed by M, whose ingress interfaces carry
# uroce-impair (rel_goodput.sh's topology: veth MTU 1500, path MTU 1024):
# --drop 0, 1e-3 and 1e-2 on both directions. The ends are pinned to CPUs 0
# and 1 when there are two.
#
# Per size: a lossless be warm-up run with a long deadline (1 s) gives the
# median completion time W; every be run after it sets T = 1.25 W + 50 us
# on its QPs through uroce_tmo_warmup (a group of one QP per end). Then, in
# each of --reps repetitions, rc, sr and be lossless, at 1%, and be at
# 1e-3, each a run of count / reps messages; the tables pool the
# repetitions' messages (so the neighbours' load falls on every mode alike).
#
#   tests/bench/be_fct.sh --build DIR [--quick] [--sizes "4096 65536 ..."]
#       [--count "SIZE=N ..."] [--reps R] [--max-sec S] [--rc-timeout T]
#       [--seed S] [--no-pin] [--wait-quiet S] [--keep DIR] [--plot FILE]
#       [--plot-size SIZE]
#
# --build DIR: a release build with tests/bench/be_fct and apps/uroce-impair
# (meson setup DIR --buildtype=release && ninja -C DIR; nothing is built
# here). --quick: a fifth of the messages, four sizes. --count: the
# messages of a point per size (default 2000 up to 16 KiB, 1000 at 64 KiB,
# 500 at 256 KiB, 400 at 1 MiB, 300 at 4 MiB); --reps (default 2, 1..9);
# a run also stops after --max-sec seconds (default 40), with the messages
# it had. --rc-timeout: the rc local ACK timeout exponent (default 14:
# 4.096 us x 2^14 = 67 ms, perftest's). --no-pin: leave the ends to the
# scheduler. --wait-quiet S: before each run wait up to S seconds for the
# CPUs to be 90% idle over a second (others' jobs on a shared machine).
# --keep DIR: keep the per-message files there ("i time_ns byte_len
# wc_flags handshake_ns snd_wait_ns rcv_wait_ns", one per run; its old
# *.txt are removed first). --plot FILE: the CDF of be, rc and sr
# at 1% and be lossless for --plot-size (default 1048576), drawn by
# plot_be_fct.py with /usr/bin/python3 (matplotlib; files kept in --keep,
# or BUILD/be_fct). Exit 1 when a run fails (FAIL in its log line, the
# pooled point keeps the other runs' messages), 2 on a bad argument or a
# missing tool.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
QUICK=0
SIZES=
COUNTS=
MAX_SEC=40
REPS=2
PIN=1
RC_TIMEOUT=14
SEED=1
QUIET=0
KEEP=
PLOT=
PLOT_SIZE=1048576
die2() { echo "be_fct.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--sizes) SIZES=${2:?--sizes needs a list}; shift 2 ;;
	--count) COUNTS=${2:?--count needs SIZE=N pairs}; shift 2 ;;
	--max-sec) MAX_SEC=${2:?--max-sec needs seconds}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--no-pin) PIN=0; shift ;;
	--rc-timeout) RC_TIMEOUT=${2:?--rc-timeout needs 1..31}; shift 2 ;;
	--seed) SEED=${2:?--seed needs a number}; shift 2 ;;
	--wait-quiet) QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
	--keep) KEEP=${2:?--keep needs a directory}; shift 2 ;;
	--plot) PLOT=${2:?--plot needs a file}; shift 2 ;;
	--plot-size) PLOT_SIZE=${2:?--plot-size needs bytes}; shift 2 ;;
	-h|--help) sed -n '2,40p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (accepted: --build, --quick, --sizes, --count, --max-sec, --reps, --no-pin, --rc-timeout, --seed, --wait-quiet, --keep, --plot, --plot-size)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (a release build with tests/bench/be_fct and apps/uroce-impair)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
if [ -z "$SIZES" ]; then
	if [ $QUICK = 1 ]; then SIZES="4096 65536 1048576 4194304"; else SIZES="4096 16384 65536 262144 1048576 4194304"; fi
fi
for s in $SIZES; do
	[[ $s =~ ^[1-9][0-9]*$ ]] && [ "$s" -le 67108864 ] || die2 "--sizes: '$s' is not a size in 1..67108864 bytes"
done
for kv in $COUNTS; do
	[[ $kv =~ ^[1-9][0-9]*=[1-9][0-9]*$ ]] || die2 "--count: '$kv' is not SIZE=N"
done
[[ $MAX_SEC =~ ^[1-9][0-9]*$ ]] && [ "$MAX_SEC" -le 600 ] || die2 "--max-sec $MAX_SEC: accepted 1..600 (whole seconds)"
[[ $REPS =~ ^[1-9]$ ]] || die2 "--reps $REPS: accepted 1..9"
[[ $RC_TIMEOUT =~ ^[0-9]+$ ]] && [ "$RC_TIMEOUT" -ge 1 ] && [ "$RC_TIMEOUT" -le 31 ] ||
	die2 "--rc-timeout $RC_TIMEOUT: accepted 1..31"
[[ $SEED =~ ^[0-9]+$ ]] || die2 "--seed $SEED: accepted a whole number"
bench_check_quiet
[[ $PLOT_SIZE =~ ^[1-9][0-9]*$ ]] || die2 "--plot-size $PLOT_SIZE: accepted a size in bytes"
FCT=$BUILD/tests/bench/be_fct
IMPAIR=$BUILD/apps/uroce-impair
for t in "$FCT" "$IMPAIR"; do
	[ -x "$t" ] || die2 "$t is missing (ninja -C $BUILD tests/bench/be_fct apps/uroce-impair)"
done
command -v ip >/dev/null || die2 "ip (iproute2) is missing"
PLOTTER=$(dirname "$0")/plot_be_fct.py
if [ -n "$PLOT" ]; then
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
		die2 "--plot needs /usr/bin/python3 with matplotlib"
	[[ " $SIZES " == *" $PLOT_SIZE "* ]] || die2 "--plot-size $PLOT_SIZE is not one of --sizes ($SIZES)"
fi

count_for() { # SIZE -> N
	local kv
	for kv in $COUNTS; do
		[ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }
	done
	local n
	if [ "$1" -le 16384 ]; then n=2000
	elif [ "$1" -le 65536 ]; then n=1000
	elif [ "$1" -le 262144 ]; then n=500
	elif [ "$1" -le 1048576 ]; then n=400
	else n=300; fi
	[ $QUICK = 1 ] && n=$((n / 5))
	echo $n
}

# wait_quiet: wait for a quiet machine before a run (--wait-quiet S = $QUIET)
. "$(dirname "$0")/quiet.sh"

. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-befct
DATA=$TMP/data
if [ -n "$KEEP" ] || [ -n "$PLOT" ]; then
	DATA=${KEEP:-$BUILD/be_fct}
	rm -f "$DATA"/*.txt 2>/dev/null
fi
mkdir -p "$DATA" || netns_die "cannot create $DATA"
NA=$NETNS_PREFIX-a NM=$NETNS_PREFIX-m NB=$NETNS_PREFIX-b
IPB=10.93.2.2
netns_add "$NA" "$NM" "$NB"
netns_veth "$NA" a0 "$NM" m0 --ip-a 10.93.1.2/24 --ip-b 10.93.1.1/24 --mtu 1500
netns_veth "$NB" b0 "$NM" m1 --ip-a $IPB/24 --ip-b 10.93.2.1/24 --mtu 1500
ip netns exec "$NM" sysctl -qw net.ipv4.ip_forward=1
ip -n "$NA" route add default via 10.93.1.1
ip -n "$NB" route add default via 10.93.2.1
ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null || netns_die "B is not reachable through the router"
ip netns exec "$NB" ping -c 1 -W 2 10.93.1.2 >/dev/null || netns_die "A is not reachable through the router"
bench_pin $PIN

CUR_LOSS=
impair() { # P: both directions
	local dev
	[ "$CUR_LOSS" = "$1" ] && return
	for dev in m0 m1; do
		ip netns exec "$NM" "$IMPAIR" $dev --drop "$1" --seed "$SEED" >/dev/null || netns_die "uroce-impair $dev --drop $1"
	done
	CUR_LOSS=$1
}
dropped() {
	local dev s=0 v
	for dev in m0 m1; do
		v=$(ip netns exec "$NM" "$IMPAIR" $dev --stats | sed -n 's/.* dropped=\([0-9]*\).*/\1/p')
		s=$((s + ${v:-0}))
	done
	echo $s
}
kv() { # KEY LINE -> value
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"
}

# point TAG MODE SIZE LOSS N [be_fct options]: one run of N messages,
# per-message lines to $DATA/TAG.txt; sets RES (the receiver's result line,
# or FAIL) and SND (the sender's line).
FAILS=0
point() {
	local tag=$1 mode=$2 size=$3 loss=$4 n=$5 rpid spid rrc=0 src=0 shm d0
	shift 5
	shm=$TMP/$tag.shm
	rm -f "$shm" "$DATA/$tag.txt"
	impair "$loss"
	wait_quiet
	d0=$(dropped)
	local args=(--shm "$shm" --mode "$mode" --size "$size" --count "$n" --max-sec "$MAX_SEC" --rc-timeout "$RC_TIMEOUT" "$@")
	netns_start "$NB" "$TMP/$tag.r.log" "${PIN_B[@]}" timeout -k 5 $((MAX_SEC + 90)) "$FCT" --role recv --dev afxdp:b0 \
		"${args[@]}" --out "$DATA/$tag.txt"
	rpid=$NETNS_PID
	netns_start "$NA" "$TMP/$tag.s.log" "${PIN_A[@]}" timeout -k 5 $((MAX_SEC + 90)) "$FCT" --role send --dev afxdp:a0 \
		"${args[@]}"
	spid=$NETNS_PID
	netns_wait "$spid" || src=$?
	netns_wait "$rpid" || rrc=$?
	RES=$(grep '^be_fct result' "$TMP/$tag.r.log" | tail -1)
	SND=$(grep '^be_fct sender' "$TMP/$tag.s.log" | tail -1)
	DROPPED=$(($(dropped) - d0))
	if [ $rrc != 0 ] || [ $src != 0 ] || [ -z "$RES" ]; then
		echo "be_fct.sh: $tag failed (sender $src, receiver $rrc):" >&2
		cat "$TMP/$tag.s.log" "$TMP/$tag.r.log" | grep -v '^be_fct ' | head -6 | sed 's/^/   /' >&2
		RES=FAIL
		FAILS=$((FAILS + 1))
		rm -f "$DATA/$tag.txt"
	fi
	rm -f "$shm"
	printf '   %-24s n=%-5s p50 %9s us  p99 %9s us  max %9s us  bytes %-8s  P/T/X %s/%s/%s  hs %s us  retx %s  bad %s  router dropped %s  disturbed %s\n' \
		"$tag" "$(kv n "$RES")" "$(kv p50_us "$RES")" "$(kv p99_us "$RES")" "$(kv max_us "$RES")" \
		"$(kv bytes_frac "$RES")" "$(kv partial "$RES")" "$(kv timeout "$RES")" "$(kv preempted "$RES")" \
		"$(kv handshake_p50_us "$RES")" "$(kv retransmits "$SND")" "$(kv bad_data "$RES")" "$DROPPED" \
		"$(kv disturbed "$RES")"
	sleep 0.5 # the AF_XDP sockets go with the processes; let the queues be released
}

# stats SIZE FILE...: the messages of every repetition together: "n=..
# p50_us=.. p90_us=.. p99_us=.. max_us=.. mean_us=.. bytes_frac=.. partial=..
# timeout=.. preempted=.. disturbed=.. clean_n=.. clean_p50_us=..
# clean_p99_us=..", or FAIL. Disturbed: a message during which either end
# waited for its CPU (columns 6 and 7: another task ran there) more than
# 20 us and more than a tenth of the message's time; clean: the others.
stats() {
	local size=$1
	shift
	local f files=()
	for f in "$@"; do [ -s "$f" ] && files+=("$f"); done
	[ ${#files[@]} -gt 0 ] || { echo FAIL; return; }
	cat "${files[@]}" | sort -k2,2n | awk -v size="$size" '
		{ t[NR] = $2; b += $3; f = $4; sum += $2
		  p += int(f / 256) % 2; to += int(f / 512) % 2; x += int(f / 1024) % 2
		  w = $6 > $7 ? $6 : $7
		  if (w > 20000 && w > $2 / 10) d++; else c[++nc] = $2 }
		function q(a, n, r,  k) { if (!n) return "-"; k = int(r * n); if (k < r * n) k++; if (k < 1) k = 1
			return sprintf("%.1f", a[k] / 1000) }
		END { printf "n=%d p50_us=%s p90_us=%s p99_us=%s max_us=%.1f mean_us=%.1f bytes_frac=%.4f partial=%d timeout=%d preempted=%d",
			NR, q(t, NR, 0.5), q(t, NR, 0.9), q(t, NR, 0.99), t[NR] / 1000, sum / NR / 1000, b / (NR * size), p, to, x
		      printf " disturbed=%d clean_n=%d clean_p50_us=%s clean_p99_us=%s\n", d, nc, q(c, nc, 0.5), q(c, nc, 0.99) }'
}

echo "== be_fct: per-message completion time, A -> B through M (uroce-impair on both directions), $(nproc) CPUs," \
	"ends on ${PIN_A[*]:-any} / ${PIN_B[*]:-any}"
echo "   $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(bench_commit)," \
	"build $BUILD, rc timeout $RC_TIMEOUT, max $MAX_SEC s a point"
echo "   before the run: $(bench_load)"
declare -A R W T
START=$SECONDS
for size in $SIZES; do
	n=$(count_for "$size")
	per=$(((n + REPS - 1) / REPS))
	warm=$((n / 4 < 50 ? 50 : n / 4))
	echo "-- size $size: $n messages a point, $REPS repetition(s) of $per; warm-up $warm"
	point "warm.$size" be "$size" 0 "$warm" --timeout-us 1000000
	W[$size]=0
	[ "$RES" != FAIL ] && W[$size]=$(awk -v p="$(kv p50_us "$RES")" 'BEGIN { printf "%d", p * 1000 }')
	R[warm.$size]=$(stats "$size" "$DATA/warm.$size.txt")
	for rep in $(seq 1 "$REPS"); do
		for loss in 0 0.01 0.001; do
			for mode in rc sr be; do
				[ "$loss" = 0.001 ] && [ $mode != be ] && continue
				if [ $mode = be ]; then
					[ "${W[$size]}" -gt 0 ] || continue
					point "$mode.$size.$loss.r$rep" be "$size" "$loss" "$per" --warmup-ns "${W[$size]}"
					[ "$RES" != FAIL ] && T[$size]=$(kv deadline_us "$RES")
				else
					point "$mode.$size.$loss.r$rep" "$mode" "$size" "$loss" "$per"
				fi
			done
		done
	done
	for loss in 0 0.01 0.001; do
		for mode in rc sr be; do
			R[$mode.$size.$loss]=$(stats "$size" "$DATA"/$mode.$size.$loss.r*.txt)
		done
	done
done
impair 0

v() { # KEY POINT -> value or -
	local r=${R[$2]:-FAIL} x
	[ "$r" = FAIL ] && { echo -; return; }
	x=$(kv "$1" "$r")
	echo "${x:--}"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-";
	else if (a / b < 0.1) printf "%.4f", a / b; else printf "%.2f", a / b }'; }

# fct_table PREFIX: p50 / p99 of every mode and size, of all messages
# (PREFIX "") or of the clean ones (PREFIX clean_)
fct_table() {
	local k=$1 size mode l3p50 l3p99 l3n
	echo "| size | mode | lossless p50 | lossless p99 | 1% p50 | 1% p99 | 1e-3 p50 | 1e-3 p99 | n (0 / 1% / 1e-3) | disturbed (0 / 1% / 1e-3) |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for size in $SIZES; do
		for mode in rc sr be; do
			if [ $mode = be ]; then
				l3p50=$(v ${k}p50_us be.$size.0.001) l3p99=$(v ${k}p99_us be.$size.0.001)
				l3n=$(v ${k:+clean_}n be.$size.0.001) l3d=$(v disturbed be.$size.0.001)
			else
				l3p50=- l3p99=- l3n=- l3d=-
			fi
			echo "| $size | $mode | $(v ${k}p50_us $mode.$size.0) | $(v ${k}p99_us $mode.$size.0) |" \
				"$(v ${k}p50_us $mode.$size.0.01) | $(v ${k}p99_us $mode.$size.0.01) | $l3p50 | $l3p99 |" \
				"$(v ${k:+clean_}n $mode.$size.0) / $(v ${k:+clean_}n $mode.$size.0.01) / $l3n |" \
				"$(v disturbed $mode.$size.0) / $(v disturbed $mode.$size.0.01) / $l3d |"
		done
	done
}
echo
echo "== completion time, us, all messages (loss on both directions)"
fct_table ""
echo
echo "== the same without the disturbed messages (either end waited for its CPU > 20 us and > 1/10 of the message's time)"
fct_table clean_
echo
echo "== be against rc and sr at 1% loss, and against itself lossless (all messages; clean ones in brackets)"
echo "| size | warm-up p50 us | T us | be/rc p50 | be/rc p99 | be/sr p50 | be/sr p99 | be 1% p99 / be lossless p50 | be 1e-3 p99 / be lossless p50 |"
echo "|---|---|---|---|---|---|---|---|---|"
for size in $SIZES; do
	b50=$(v p50_us be.$size.0.01) b99=$(v p99_us be.$size.0.01) b0=$(v p50_us be.$size.0)
	c99=$(v clean_p99_us be.$size.0.01) c0=$(v clean_p50_us be.$size.0)
	echo "| $size | $(v p50_us warm.$size) | ${T[$size]:--} | $(ratio "$b50" "$(v p50_us rc.$size.0.01)") |" \
		"$(ratio "$b99" "$(v p99_us rc.$size.0.01)") | $(ratio "$b50" "$(v p50_us sr.$size.0.01)") |" \
		"$(ratio "$b99" "$(v p99_us sr.$size.0.01)") | **$(ratio "$b99" "$b0")** ($(ratio "$c99" "$c0")) |" \
		"$(ratio "$(v p99_us be.$size.0.001)" "$b0") ($(ratio "$(v clean_p99_us be.$size.0.001)" "$c0")) |"
done
echo
echo "== be: bytes delivered (sum of byte_len / sum of message lengths) and how its receives ended"
echo "| size | loss | bytes delivered | PARTIAL | TIMEOUT | PREEMPTED | messages |"
echo "|---|---|---|---|---|---|---|"
for size in $SIZES; do
	for loss in 0 0.001 0.01; do
		p=be.$size.$loss
		echo "| $size | $loss | $(v bytes_frac $p) | $(v partial $p) | $(v timeout $p) | $(v preempted $p) | $(v n $p) |"
	done
done
echo "   ($((SECONDS - START)) s)"
if [ -n "$PLOT" ]; then
	/usr/bin/python3 "$PLOTTER" --size "$PLOT_SIZE" --out "$PLOT" ${T[$PLOT_SIZE]:+--deadline-us ${T[$PLOT_SIZE]}} \
		"be 1%=$(ls "$DATA"/be.$PLOT_SIZE.0.01.r*.txt | paste -sd,)" \
		"rc 1%=$(ls "$DATA"/rc.$PLOT_SIZE.0.01.r*.txt | paste -sd,)" \
		"sr 1%=$(ls "$DATA"/sr.$PLOT_SIZE.0.01.r*.txt | paste -sd,)" \
		"be lossless=$(ls "$DATA"/be.$PLOT_SIZE.0.r*.txt | paste -sd,)" || echo "be_fct.sh: the plot failed" >&2
fi
[ $FAILS = 0 ] || { echo "be_fct.sh: $FAILS point(s) failed (FAIL / - above)" >&2; exit 1; }
