# SPDX-License-Identifier: MIT
# Sourced by the benchmark scripts (be_fct.sh, paged_bench.sh).
# wait_quiet: with --wait-quiet S, before a run wait (at most S seconds)
# until the CPUs were at least 90% idle over one second: nothing of ours
# runs then, so anything busy is someone else's work, which would disturb
# the run. Prints how long it waited when it did.
busy_pct() { # over one second, all CPUs
	local a b
	a=($(head -1 /proc/stat)); sleep 1; b=($(head -1 /proc/stat))
	awk -v u=$((b[1] + b[2] + b[3] + b[6] + b[7] + b[8] - a[1] - a[2] - a[3] - a[6] - a[7] - a[8])) \
		-v i=$((b[4] + b[5] - a[4] - a[5])) 'BEGIN { printf "%d", u + i ? 100 * u / (u + i) : 0 }'
}
wait_quiet() {
	local t0=$SECONDS b
	[ "$QUIET" -gt 0 ] || return 0
	while b=$(busy_pct); [ "$b" -ge 10 ] && [ $((SECONDS - t0)) -lt "$QUIET" ]; do :; done
	[ $((SECONDS - t0)) -le 1 ] || echo "   (waited $((SECONDS - t0)) s for a quiet machine; last second ${b}% busy)"
}
