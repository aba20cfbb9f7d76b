# SPDX-License-Identifier: MIT
# Sourced by the benchmark scripts (after quiet.sh and their options):
#   bench_pin [0|1]       PIN_A=(taskset -c 0) PIN_B=(taskset -c 1) when asked
#                         (default), there are two CPUs or more and taskset;
#                         else both empty: the ends run where the kernel puts them
#   bench_load            "load average A B C, CPU pressure (some) ...", for the
#                         header a run prints before it starts
#   bench_commit          the checkout's short commit, or ?
#   bench_check_quiet     QUIET (--wait-quiet) is 0..3600 seconds, or die2 says so
#   bench_kv KEY LINE     the value of KEY=VALUE in LINE
#   bench_bytes SIZE      64k -> 65536 (k, m, g: x1024)
#   bench_head FIRST COL...  a table's header and separator lines: FIRST,
#                         then "MODE COL" for each mode of $MODES and COL
#   bench_row KEY=V ROWS  the first of the lines ROWS with " KEY=V "
#   bench_cells ROW K...  " v | v |" table cells of ROW's keys K (*K: in
#                         bold), " - |" each when ROW is empty
#   bench_pair ...        one ns_pair program's receiver and sender run to
#                         their end and checked (below)

bench_pin() {
	PIN_A=() PIN_B=()
	if [ "${1:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
		PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
	fi
}

bench_load() {
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg), CPU pressure (some) $(sed -n 's/^some avg10=\([0-9.]*\) avg60=\([0-9.]*\).*/avg10 \1% avg60 \2%/p' /proc/pressure/cpu 2>/dev/null || echo unknown)"
}

bench_commit() {
	git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo '?'
}

bench_check_quiet() {
	[[ $QUIET =~ ^[0-9]+$ ]] && [ "$QUIET" -le 3600 ] || die2 "--wait-quiet $QUIET: accepted 0..3600 seconds"
}

bench_kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

bench_head() {
	local h="| $1 |" sep="|---|" m c
	shift
	for m in $MODES; do
		for c; do
			h+=" $m $c |" sep+="---|"
		done
	done
	printf '%s\n%s\n' "$h" "$sep"
}

bench_row() { grep " $1 " <<<" $2" | head -1; }

bench_cells() {
	local row=$1 k
	shift
	for k; do
		if [ -z "$row" ]; then
			printf ' - |'
		elif [ "$k" != "${k#\*}" ]; then
			printf ' **%s** |' "$(bench_kv "${k#\*}" "$row")"
		else
			printf ' %s |' "$(bench_kv "$k" "$row")"
		fi
	done
}

bench_bytes() {
	awk -v p="$1" 'BEGIN { m = 1; if (p ~ /k$/) m = 1024; else if (p ~ /m$/) m = 1048576; else if (p ~ /g$/) m = 1073741824
		printf "%d", p * m }'
}

# bench_pair PROG BIN LOG LABEL RDEV SDEV WHAT ARGS...: BIN's receiver in
# namespace $NB on RDEV and its sender in $NA on SDEV (pinned by PIN_B and
# PIN_A, killed $LIMIT + 60 s on), both with ARGS and their output in
# LOG.r.log and LOG.s.log, are waited for. Prints the receiver's "PROG xfer"
# lines as "   LABEL ..."; a failed end (its output) and a nonzero sum of
# their bad= ("N WHAT") each add one to FAILS.
bench_pair() {
	local prog=$1 bin=$2 log=$3 label=$4 rdev=$5 sdev=$6 what=$7 rpid spid src=0 rrc=0 bad
	shift 7
	netns_start "$NB" "$log.r.log" "${PIN_B[@]}" timeout -k 5 $((LIMIT + 60)) "$bin" --role recv --dev "$rdev" "$@"
	rpid=$NETNS_PID
	netns_start "$NA" "$log.s.log" "${PIN_A[@]}" timeout -k 5 $((LIMIT + 60)) "$bin" --role send --dev "$sdev" "$@"
	spid=$NETNS_PID
	netns_wait "$spid" || src=$?
	netns_wait "$rpid" || rrc=$?
	grep "^$prog xfer" "$log.r.log" | sed "s/^$prog xfer/   $label/"
	if [ $src != 0 ] || [ $rrc != 0 ]; then
		echo "$prog.sh: $label failed (sender $src, receiver $rrc):" >&2
		cat "$log.s.log" "$log.r.log" | grep -v "^$prog " | head -6 | sed 's/^/   /' >&2
		FAILS=$((FAILS + 1))
	fi
	bad=$(sed -n "s/^$prog xfer .* bad=\([0-9]*\).*/\1/p" "$log.r.log" | awk '{ s += $1 } END { print s + 0 }')
	[ "$bad" = 0 ] || { echo "$prog.sh: $label: $bad $what" >&2; FAILS=$((FAILS + 1)); }
}
