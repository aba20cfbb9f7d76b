#!/bin/bash
# Striping over two ports against one port (TransferEngine's DomainGroup:
# one transfer sharded over the NICs of a group), in one run: stripe_bench
# between two network namespaces joined by two veth pairs (no loss, link
# MTU 4200 so the path MTU is 4096), afxdp ports, each end one context over
# both of its interfaces, for rc and sr. Per size, --reps transfers of each
# kind alternate: "1 port" (QP 0 alone, on port 1) and "2 ports"
# (uroce_stripe_post_write over both QPs, min shard 64 KiB); the receiver
# counts the shards' immediate (IMMCOUNTER) and checks every word. The
# table gives the median Gbit/s of each and their ratio. The ends are
# pinned to CPUs 0 and 1 when there are two; each end's one thread drives
# both of its ports (embedded engine).
#
#   tests/bench/stripe_bench.sh --build DIR [--quick] [--modes "rc sr"]
#       [--sizes "1m 4m 16m 64m"] [--reps N] [--wait-quiet S] [--csv FILE]
#
# --build DIR: a release build with tests/bench/stripe_bench (nothing is
# built here). --reps: transfers of each kind per size (default 5;
# --quick: 2). --wait-quiet S: before each mode wait up to S seconds for
# the CPUs to be 90% idle over a second. --csv FILE: "mode,size,
# one_gbps,two_gbps,ratio" rows. Exit 1 when a run fails, 2 on a bad
# argument or a missing tool.
set -uo pipefail

BUILD=
QUICK=0
MODES="rc sr"
SIZES="1m 4m 16m 64m"
REPS=
QUIET=0
CSV=
die2() { echo "stripe_bench.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--modes) MODES=${2:?--modes needs a list}; shift 2 ;;
	--sizes) SIZES=${2:?--sizes needs a list}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--wait-quiet) QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
	--csv) CSV=${2:?--csv needs a file}; shift 2 ;;
	-h|--help) sed -n '2,22p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (accepted: --build, --quick, --modes, --sizes, --reps, --wait-quiet, --csv)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (a release build with tests/bench/stripe_bench)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
if [ $QUICK = 1 ]; then REPS=${REPS:-2}; else REPS=${REPS:-5}; fi
for m in $MODES; do
	[ "$m" = rc ] || [ "$m" = sr ] || die2 "--modes: '$m'; accepted rc and sr"
done
[[ $REPS =~ ^[1-9][0-9]?$ ]] && [ "$REPS" -le 20 ] || die2 "--reps $REPS: accepted 1..20"
[[ $QUIET =~ ^[0-9]+$ ]] && [ "$QUIET" -le 3600 ] || die2 "--wait-quiet $QUIET: accepted 0..3600 seconds"
for s in $SIZES; do
	[[ $s =~ ^[1-9][0-9]*[kmg]?$ ]] || die2 "--sizes: '$s' is not a size (bytes with an optional k/m/g suffix)"
done
SB=$BUILD/tests/bench/stripe_bench
[ -x "$SB" ] || die2 "$SB is missing (ninja -C $BUILD tests/bench/stripe_bench)"
command -v ip >/dev/null || die2 "ip (iproute2) is missing"
SIZES_ARG=$(tr ' ' ',' <<<"$SIZES")

# wait_quiet: wait for a quiet machine before a run (--wait-quiet S = $QUIET)
. "$(dirname "$0")/quiet.sh"

. "$(dirname "$0")/../lib/netns.sh"
netns_init uroce-stripeb
TMP=$NETNS_TMP
NA=$NETNS_PREFIX-a NB=$NETNS_PREFIX-b
netns_add "$NA" "$NB"
for i in 1 2; do
	netns_veth "$NA" pa$i "$NB" pb$i --ip-a 10.97.$i.1/24 --ip-b 10.97.$i.2/24 --mtu 4200
	ip netns exec "$NA" ping -c 1 -W 2 10.97.$i.2 >/dev/null || netns_die "B is not reachable over pair $i"
done
PIN_A=() PIN_B=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
fi
LIMIT=300

echo "== stripe_bench: one transfer over 2 veth pairs (striped) vs 1, A -> B (MTU 4200), $(nproc) CPUs," \
	"ends on ${PIN_A[*]:-any} / ${PIN_B[*]:-any}"
echo "   $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')," \
	"build $BUILD, $REPS transfer(s) of each kind per size"
echo "   before the run: load average $(cut -d' ' -f1-3 /proc/loadavg), CPU pressure (some) $(sed -n 's/^some avg10=\([0-9.]*\) avg60=\([0-9.]*\).*/avg10 \1% avg60 \2%/p' /proc/pressure/cpu 2>/dev/null || echo unknown)"
[ -z "$CSV" ] || echo "mode,size,one_gbps,two_gbps,ratio" >"$CSV"
txb() { ip netns exec "$NA" cat "/sys/class/net/$1/statistics/tx_bytes"; }
FAILS=0
START=$SECONDS
declare -A ROWS PAIRS
for mode in $MODES; do
	shm=$TMP/$mode.shm
	rm -f "$shm"
	wait_quiet
	t1=$(txb pa1) t2=$(txb pa2)
	args=(--shm "$shm" --mode "$mode" --sizes "$SIZES_ARG" --reps "$REPS" --max-sec $LIMIT)
	netns_start "$NB" "$TMP/$mode.r.log" "${PIN_B[@]}" timeout -k 5 $((LIMIT + 60)) "$SB" --role recv \
		--dev afxdp:pb1,afxdp:pb2 "${args[@]}"
	rpid=$NETNS_PID
	netns_start "$NA" "$TMP/$mode.s.log" "${PIN_A[@]}" timeout -k 5 $((LIMIT + 60)) "$SB" --role send \
		--dev afxdp:pa1,afxdp:pa2 "${args[@]}"
	spid=$NETNS_PID
	src=0 rrc=0
	netns_wait "$spid" || src=$?
	netns_wait "$rpid" || rrc=$?
	grep '^stripe_bench xfer' "$TMP/$mode.r.log" | sed "s/^stripe_bench xfer/   $mode/"
	if [ $src != 0 ] || [ $rrc != 0 ]; then
		echo "stripe_bench.sh: $mode failed (sender $src, receiver $rrc):" >&2
		cat "$TMP/$mode.s.log" "$TMP/$mode.r.log" | grep -v '^stripe_bench ' | head -6 | sed 's/^/   /' >&2
		FAILS=$((FAILS + 1))
	fi
	bad=$(sed -n 's/^stripe_bench xfer .* bad=\([0-9]*\).*/\1/p' "$TMP/$mode.r.log" | awk '{ s += $1 } END { print s + 0 }')
	[ "$bad" = 0 ] || { echo "stripe_bench.sh: $mode: $bad words were not as written" >&2; FAILS=$((FAILS + 1)); }
	ROWS[$mode]=$(grep '^stripe_bench size=' "$TMP/$mode.r.log")
	PAIRS[$mode]="pa1 sent $(($(txb pa1) - t1)) bytes, pa2 $(($(txb pa2) - t2)); $(awk '/^stripe_bench xfer / {
		n = split($NF, a, "="); t++; if (a[2] + 0 > 2000) c++ }
		END { printf "%d of %d transfers had the receiver wait over 2 ms for its CPU (another task ran there)", c, t }' \
		"$TMP/$mode.r.log")"
	rm -f "$shm"
	sleep 0.5 # the AF_XDP sockets go with the processes
done

kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
bytes_of() { # 64k -> 65536
	awk -v p="$1" 'BEGIN { m = 1; if (p ~ /k$/) m = 1024; else if (p ~ /m$/) m = 1048576; else if (p ~ /g$/) m = 1073741824
		printf "%d", p * m }'
}
echo
echo "== Gbit/s of one transfer (median of $REPS each): 1 port, striped over 2 ports, and 2 ports / 1 port"
echo "| size | $(for m in $MODES; do printf '%s 1 port | %s 2 ports | %s 2/1 | ' $m $m $m; done | sed 's/ | $//') |"
echo "|---|$(for m in $MODES; do printf -- '---|---|---|'; done)"
for s in $SIZES; do
	b=$(bytes_of "$s")
	line="| $s |"
	for m in $MODES; do
		r=$(grep " size=$b " <<<" ${ROWS[$m]:-}" | head -1)
		if [ -z "$r" ]; then line+=" - | - | - |"; continue; fi
		line+=" $(kv one_gbps "$r") | $(kv all_gbps "$r") | **$(kv ratio "$r")** |"
		[ -z "$CSV" ] || echo "$m,$b,$(kv one_gbps "$r"),$(kv all_gbps "$r"),$(kv ratio "$r")" >>"$CSV"
	done
	echo "$line"
done
for m in $MODES; do
	echo "   $m: ${PAIRS[$m]:-}"
done
echo "   ($((SECONDS - START)) s)"
[ $FAILS = 0 ] || exit 1
