#!/bin/bash
# SPDX-License-Identifier: MIT
# The uroce-to-uroce part of the interop matrix: uroce-pingpong and
# uroce-perf against themselves over a veth pair, each end in its own
# network namespace, with AF_XDP on both ends (path MTU 1024 and 4096) and
# with DPDK (net_af_xdp vdev) on one end, as server and as client (path MTU
# 1024: DPDK's af_xdp PMD takes no MTU above a page). Same pass rule as
# matrix.sh: both ends exit 0 having reported their iterations.
#
#   matrix_veth.sh [--only REGEX] [--skip REGEX] [--list] PINGPONG_BIN PERF_BIN
#
# The data veth (10.85.0.0/24) carries RoCEv2; the TCP exchange goes over a
# second veth pair (10.86.0.0/24), because the net_af_xdp PMD's XDP program
# takes every frame of its interface from the kernel. The tools take their
# GIDs from the data veth's address, so the client finds the server's RoCE
# address in the exchange, not from the name it connects to.
set -euo pipefail
# The whole script is one compound command, read before it runs: editing
# the file under a running matrix does not change what that run executes.
{

ONLY=
SKIP=
LIST=0
while [ $# -gt 0 ]; do
	case "$1" in
	--only) ONLY=$2; shift 2 ;;
	--skip) SKIP=$2; shift 2 ;;
	--list) LIST=1; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "matrix_veth.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -eq 2 ] || { echo "usage: matrix_veth.sh [--only REGEX] [--skip REGEX] [--list] PINGPONG_BIN PERF_BIN" >&2; exit 2; }
PP_BIN=$1
PERF_BIN=$2
CASE_TIMEOUT=60
ITERS_PP=50
ITERS_PERF=200

# Case: ENDS/MTU/TOOL/SIZE, ENDS = server-client backends.
all_cases() {
	local ends mtu
	for ends in afxdp-afxdp dpdk-afxdp afxdp-dpdk; do
		for mtu in 1024 4096; do
			[ "$ends" = afxdp-afxdp ] || [ "$mtu" = 1024 ] || continue
			echo "$ends/$mtu/rc/65536"
			echo "$ends/$mtu/uc/16384"
			echo "$ends/$mtu/ud/$mtu"
			echo "$ends/$mtu/write_bw/65536"
			echo "$ends/$mtu/read_bw/65536"
			echo "$ends/$mtu/send_lat/64"
		done
	done
}
CASES=()
while read -r c; do
	[ -z "$ONLY" ] || [[ $c =~ $ONLY ]] || continue
	[ -z "$SKIP" ] || ! [[ $c =~ $SKIP ]] || continue
	CASES+=("$c")
done < <(all_cases)
if [ $LIST = 1 ]; then
	printf '%s\n' "${CASES[@]}"
	exit 0
fi
[ ${#CASES[@]} -gt 0 ] || { echo "matrix_veth.sh: no case left by --only '$ONLY' --skip '$SKIP'" >&2; exit 2; }
. "$(dirname "$0")/../lib/netns.sh"
netns_need_root
for b in "$PP_BIN" "$PERF_BIN"; do
	[ -x "$b" ] || { echo "FAIL: $b is not an executable" >&2; exit 1; }
done

netns_test uroce-matrix-veth
NS_S=$NETNS_PREFIX-s # server end
NS_C=$NETNS_PREFIX-c # client end
WORK=$NETNS_TMP

netns_add "$NS_S" "$NS_C"
for ns in "$NS_S" "$NS_C"; do
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
netns_veth "$NS_S" vs "$NS_C" vc --ip-a 10.85.0.2/24 --ip-b 10.85.0.1/24
netns_veth "$NS_S" ts "$NS_C" tc --ip-a 10.86.0.2/24 --ip-b 10.86.0.1/24

# DPDK processes: no hugepages, the vdev on the data veth. LeakSanitizer's
# one known PMD leak is suppressed for them only (docs/ports.md).
printf 'leak:xsk_umem__create\n' >"$WORK/lsan.supp"
dev_args() { # BACKEND IFACE: -d ... for the tool, EAL args go last
	if [ "$1" = dpdk ]; then echo "-d dpdk"; else echo "-d afxdp:$2"; fi
}
eal_args() { # BACKEND IFACE
	[ "$1" = dpdk ] && echo "-- --no-huge -m 512 --no-pci --vdev net_af_xdp0,iface=$2"
	true
}
tool_cmd() { # TOOL SIZE MTU BACKEND IFACE SERVER
	local tool=$1 size=$2 mtu=$3 be=$4 ifc=$5 srv=$6
	case "$tool" in
	ud) echo "$PP_BIN ud $(dev_args "$be" "$ifc") -g 1 -s $size -n $ITERS_PP -c $srv $(eal_args "$be" "$ifc")" ;;
	rc | uc) echo "$PP_BIN $tool $(dev_args "$be" "$ifc") -g 1 -s $size -n $ITERS_PP -m $mtu -c $srv $(eal_args "$be" "$ifc")" ;;
	*) echo "$PERF_BIN $tool $(dev_args "$be" "$ifc") -x 1 -s $size -n $ITERS_PERF -m $mtu $srv $(eal_args "$be" "$ifc")" ;;
	esac
}

set_mtu() {
	local lmtu=1500
	[ "$1" = 1024 ] || lmtu=4200
	netns_mtu $lmtu "$NS_S" vs "$NS_C" vc
}

check_out() { # TOOL SIZE OUT
	case "$1" in
	rc | uc | ud) grep -q "^$ITERS_PP iters in " "$3" ;;
	*) grep -Eq "^ *$2 +$ITERS_PERF " "$3" ;;
	esac
}

RESULTS=()
FAILED=()
cur_mtu=
for c in "${CASES[@]}"; do
	IFS=/ read -r ends mtu tool size <<<"$c"
	if [ "$mtu" != "$cur_mtu" ]; then
		set_mtu "$mtu"
		cur_mtu=$mtu
	fi
	d=$WORK/${c//\//_}
	mkdir -p "$d"
	s_cmd=$(tool_cmd "$tool" "$size" "$mtu" "${ends%-*}" vs "")
	c_cmd=$(tool_cmd "$tool" "$size" "$mtu" "${ends#*-}" vc 10.86.0.2)
	echo "$s_cmd" >"$d/server.cmd"
	echo "$c_cmd" >"$d/client.cmd"
	t0=$SECONDS s_rc=0 c_rc=0 why=
	# shellcheck disable=SC2086
	netns_start "$NS_S" "$d/server.out" env LSAN_OPTIONS=suppressions=$WORK/lsan.supp \
		timeout -k 5 $CASE_TIMEOUT $s_cmd
	spid=$NETNS_PID
	# TCP 18515, perftest's and rdma-core's port, in LISTEN (never probed)
	if netns_wait_tcp "$NS_S" 18515 "$spid" 30; then
		# shellcheck disable=SC2086
		LSAN_OPTIONS=suppressions=$WORK/lsan.supp ip netns exec "$NS_C" timeout -k 5 $CASE_TIMEOUT $c_cmd \
			>"$d/client.out" 2>&1 </dev/null || c_rc=$?
	else
		why="server never listened; "
		: >"$d/client.out"
	fi
	[ "$c_rc" = 0 ] || kill "$spid" 2>/dev/null || true
	netns_wait "$spid" || s_rc=$?
	[ -n "$why" ] || [ $c_rc = 0 ] || why="client exited $c_rc; "
	[ $s_rc = 0 ] || why="${why}server exited $s_rc; "
	[ $s_rc != 0 ] || check_out "$tool" "$size" "$d/server.out" || why="${why}server did not report its iterations; "
	[ $c_rc != 0 ] || [ -n "$why" ] || check_out "$tool" "$size" "$d/client.out" || why="${why}client did not report its iterations; "
	if [ -z "$why" ]; then
		line=$(printf 'PASS %-36s %4ss' "$c" $((SECONDS - t0)))
	else
		line=$(printf 'FAIL %-36s %4ss  %s' "$c" $((SECONDS - t0)) "${why%; }")
		FAILED+=("$c")
	fi
	echo "$line"
	RESULTS+=("$line")
done

echo
echo "=== interop matrix (uroce-uroce over veth): ${#CASES[@]} cases, ${#FAILED[@]} failed"
printf '%s\n' "${RESULTS[@]}"
for c in "${FAILED[@]}"; do
	d=$WORK/${c//\//_}
	echo
	echo "=== FAILED $c"
	echo "--- server: $(cat "$d/server.cmd")"
	sed 's/^/  | /' "$d/server.out"
	echo "--- client: $(cat "$d/client.cmd")"
	sed 's/^/  | /' "$d/client.out"
done
[ ${#FAILED[@]} = 0 ] || exit 1
echo "PASS: all ${#CASES[@]} cases"
exit
}
