# Sourced by the benchmark scripts (after quiet.sh and their options):
#   bench_pin [0|1]       PIN_A=(taskset -c 0) PIN_B=(taskset -c 1) when asked
#                         (default), there are two CPUs or more and taskset;
#                         else both empty: the ends run where the kernel puts them
#   bench_load            "load average A B C, CPU pressure (some) ...", for the
#                         header a run prints before it starts
#   bench_commit          the checkout's short commit, or ?
#   bench_check_quiet     QUIET (--wait-quiet) is 0..3600 seconds, or die2 says so

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
