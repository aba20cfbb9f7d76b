#!/bin/bash
# SPDX-License-Identifier: MIT
# The interop matrix: RoCE programs against each other across the vmlab
# bridge, every case bounded in time, one PASS/FAIL line per case and a table
# at the end. Guests are booted once and reused for every case.
#
#   matrix.sh guests VMLAB_SH
#       rdma-core's and perftest's programs in two rdma_rxe guests, server in
#       one, client in the other: the runner's own baseline.
#   matrix.sh rxe VMLAB_SH PINGPONG_BIN PERF_BIN
#       rdma_rxe in one guest against uroce-pingpong / uroce-perf on an AF_XDP
#       port in a host netns on the bridge, both directions (uroce as server
#       and as client).
#
# Options (before the mode): --mtus "1024 4096"  --only REGEX (case names)
#   --skip REGEX (leave out the cases it matches, after --only)
#   --iters-pp N (pingpong, default 20)  --iters-perf N (perftest, default 100)
#   --outdir DIR (keep every case's commands and output there)
#   --case-timeout S (default 90)  --keep-going (default; a failing case does
#   not stop the run)  --list (print the case names and exit)
# Case names: MTU/TOOL/SIZE/DIRECTION, e.g. 4096/ib_write_bw/65536/uroce-srv,
# over IPv4 GIDs; rxe mode adds MTU/TOOL/SIZE/DIRECTION/GID over IPv6, GID
# ipv6-ll (GID 0 on both ends: fe80:: EUI-64) or ipv6-global (fd47::),
# e.g. 1024/ib_write_bw/65536/uroce-cli/ipv6-ll (--only ipv6 runs just them).
# Exit 0 only when every case passed; the output of both sides of each
# failing case is printed after the table.
set -euo pipefail
# The whole script is one compound command, read before it runs: editing
# the file under a running matrix does not change what that run executes.
{

MTUS="1024 4096"
ONLY=
SKIP=
ITERS_PP=20
ITERS_PERF=100
CASE_TIMEOUT=90
LIST=0
OUTDIR=
while [ $# -gt 0 ]; do
	case "$1" in
	--mtus) MTUS=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--skip) SKIP=$2; shift 2 ;;
	--iters-pp) ITERS_PP=$2; shift 2 ;;
	--iters-perf) ITERS_PERF=$2; shift 2 ;;
	--case-timeout) CASE_TIMEOUT=$2; shift 2 ;;
	--keep-going) shift ;;
	--list) LIST=1; shift ;;
	--outdir) OUTDIR=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "matrix.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*) break ;;
	esac
done
MODE=${1:-}
case "$MODE" in
guests) [ $# -eq 2 ] || { echo "usage: matrix.sh [OPTIONS] guests VMLAB_SH" >&2; exit 2; } ;;
rxe) [ $# -eq 4 ] || { echo "usage: matrix.sh [OPTIONS] rxe VMLAB_SH PINGPONG_BIN PERF_BIN" >&2; exit 2; } ;;
*) echo "matrix.sh: mode '$MODE': use guests or rxe (see --help)" >&2; exit 2 ;;
esac
VMLAB=$2
PP_BIN=${3:-}
PERF_BIN=${4:-}
for m in $MTUS; do
	case "$m" in 1024 | 4096) ;; *) echo "matrix.sh: --mtus: '$m' is not 1024 or 4096" >&2; exit 2 ;; esac
done
for v in "$ITERS_PP" "$ITERS_PERF" "$CASE_TIMEOUT"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "matrix.sh: '$v' is not a positive whole number" >&2; exit 2; }
done
[ "$ITERS_PERF" -ge 5 ] || { echo "matrix.sh: --iters-perf must be at least 5 (perftest's minimum)" >&2; exit 2; }

# ------------------------------------------------------------------ cases
# Message sizes: a one-packet size and one spanning many packets at both
# path MTUs (65536 = 64 packets at 1024, 16 at 4096). UC has no
# retransmission, so a lost packet loses the message: 16 KiB keeps it to
# 16 / 4 packets. UD messages must fit one MTU.
pp_sizes() { # TOOL MTU
	case "$1" in
	rc) echo "64 65536" ;;
	uc) echo "64 16384" ;;
	ud) echo "64 $2" ;;
	esac
}
PERF_TOOLS="write_bw read_bw send_bw write_lat read_lat send_lat"
perf_sizes() { echo "64 65536"; }
# perftest's atomics (8 bytes: no -s) and -b (TOOL-b: both ends send and
# both report), at the first MTU. -b at 16 KiB and with -u 18 on both ends
# (a packet given up after 8 x 1.07 s, not 8 x 67 ms): traffic both ways
# at once keeps rxe's one TCG vCPU so busy that its ACKs came later than
# uroce's 537 ms give-up bound (retry exceeded; completer_retry_err in the
# thousands on rxe's side), in about one run of three
EXTRA_PERF="atomic_bw atomic_lat write_bw-b read_bw-b send_bw-b atomic_bw-b"
extra_size() { case "$1" in atomic_*) echo 8 ;; *) echo 16384 ;; esac; }

# Directions: in 'rxe' mode uroce-srv (uroce serves, the guest's program is
# the client) and uroce-cli; in 'guests' mode rxe-rxe.
directions() {
	if [ "$MODE" = rxe ]; then echo "uroce-srv uroce-cli"; else echo "rxe-rxe"; fi
}

# IPv6 cases (rxe mode): few, at the first MTU only, since both address
# kinds and both directions multiply them: rc_pingpong (data checked) and
# ib_write_bw.
IPV6_GIDS="ipv6-ll ipv6-global"
ipv6_cases() {
	local mtu=${MTUS%% *} g d
	[ "$MODE" = rxe ] || return 0
	for g in $IPV6_GIDS; do
		for d in $(directions); do
			echo "$mtu/ibv_rc_pingpong/8192/$d/$g"
			echo "$mtu/ib_write_bw/65536/$d/$g"
		done
	done
}

all_cases() {
	local mtu t s d
	ipv6_cases
	for mtu in $MTUS; do
		for t in rc uc ud; do
			for s in $(pp_sizes $t "$mtu"); do
				for d in $(directions); do echo "$mtu/ibv_${t}_pingpong/$s/$d"; done
			done
		done
		for t in $PERF_TOOLS; do
			for s in $(perf_sizes); do
				for d in $(directions); do echo "$mtu/ib_$t/$s/$d"; done
			done
		done
		if [ "$mtu" = "${MTUS%% *}" ]; then
			for t in $EXTRA_PERF; do
				for d in $(directions); do echo "$mtu/ib_$t/$(extra_size $t)/$d"; done
			done
		fi
	done
}

# ib_TOOL[-b] SIZE: perftest's options of the case beyond the common ones
perf_args() {
	local a=""
	case "$1" in *-b) a="-b -u 18" ;; esac
	case "$1" in ib_atomic_*) ;; *) a="$a -s $2" ;; esac
	echo "$a"
}
perf_tool() { local t=${1%-b}; echo "${t#ib_}"; }

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
[ ${#CASES[@]} -gt 0 ] || { echo "matrix.sh: no case left by --only '$ONLY' --skip '$SKIP'" >&2; exit 2; }

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces, XDP, QEMU)"
	exit 77
fi
if [ "$MODE" = rxe ]; then
	for b in "$PP_BIN" "$PERF_BIN"; do
		[ -x "$b" ] || { echo "FAIL: $b is not an executable" >&2; exit 1; }
	done
fi

# ------------------------------------------------------------------ lab
export UROCE_VMLAB_LAB=uvmx$$
SUBNET=${UROCE_VMLAB_SUBNET:-10.47.0}
SRV_IP=$SUBNET.11 # the guest "srv"
CLI_IP=$SUBNET.12 # the guest "cli" (guests mode)
HOST_IP=$SUBNET.2 # the host peer (rxe mode)
IFACE=uvm$$
IFACE=${IFACE:0:15}
TCP_PORT=18515
WORK=$(mktemp -d /tmp/uroce-matrix.XXXXXX)
HOSTNS=
HOST_PIDS=()
GUESTS=()
T0=$SECONDS

# shellcheck disable=SC2317 # run by the trap
cleanup() {
	local rc=$? p
	for p in "${HOST_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	"$VMLAB" down >/dev/null 2>&1 || true
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "matrix: $*"; }

"$VMLAB" setup
"$VMLAB" up
"$VMLAB" boot srv "$SRV_IP"
GUESTS+=(srv)
if [ "$MODE" = guests ]; then
	"$VMLAB" boot cli "$CLI_IP"
	GUESTS+=(cli)
	SERVER_IP=$SRV_IP
else
	HOSTNS=$("$VMLAB" attach host "$HOST_IP" "$IFACE")
	ok=0
	for _ in $(seq 10); do
		if ip netns exec "$HOSTNS" ping -c 1 -W 1 "$SRV_IP" >/dev/null 2>&1; then
			ok=1
			break
		fi
	done
	[ $ok = 1 ] || { echo "FAIL: guest $SRV_IP does not answer ping from the host netns" >&2; exit 1; }
fi

# IPv6 for the ipv6-* cases: fd47::11 on the guest, fd47::2 on the host end
# (no DAD: both are fresh on a private bridge), link-locals past DAD; then
# rxe's indices of its RoCE v2 entries for the guest's fe80:: and fd47::11
# (rxe adds GIDs on the address events, asynchronously).
GLOBAL6_SRV=fd47::11
GLOBAL6_HOST=fd47::2
setup_ipv6() {
	local ll
	# vmlab attach turns IPv6 off on the host end to keep the wire quiet;
	# back on, still without router solicitations
	ip netns exec "$HOSTNS" sysctl -q -w "net.ipv6.conf.$IFACE.accept_ra=0" \
		"net.ipv6.conf.$IFACE.router_solicitations=0" "net.ipv6.conf.$IFACE.disable_ipv6=0" ||
		{ echo "FAIL: cannot turn IPv6 on for $IFACE" >&2; exit 1; }
	ip netns exec "$HOSTNS" ip addr add $GLOBAL6_HOST/64 dev "$IFACE" nodad ||
		{ echo "FAIL: cannot add $GLOBAL6_HOST to $IFACE" >&2; exit 1; }
	# (the guest's busybox ip has no nodad: DAD is turned off instead)
	"$VMLAB" exec srv --timeout 20 "echo 0 >/proc/sys/net/ipv6/conf/eth0/accept_dad && \
		ip addr add $GLOBAL6_SRV/64 dev eth0" >/dev/null ||
		{ echo "FAIL: cannot add $GLOBAL6_SRV in guest srv" >&2; exit 1; }
	# Up to 10 s for the link-local address to leave DAD (~1 s). The output
	# is captured, not piped into grep -q: under pipefail an early grep exit
	# could fail ip with SIGPIPE, and a bare failing $(...) under set -e
	# would end the matrix without a FAIL line.
	ll=
	for _ in $(seq 100); do
		ll=$(ip netns exec "$HOSTNS" ip -6 addr show dev "$IFACE" scope link 2>/dev/null) || ll=
		ll=$(grep inet6 <<<"$ll" | grep -v tentative) || ll=
		[ -n "$ll" ] && break
		sleep 0.1
	done
	[ -n "$ll" ] || { echo "FAIL: $IFACE's link-local address never left DAD (10 s) or could not be read" >&2; exit 1; }
	# shellcheck disable=SC2016 # expanded in the guest
	RXE_GIDX_LL=$("$VMLAB" exec srv --timeout 30 'for n in $(seq 200); do
		for i in $(seq 0 15); do
			g=$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null)
			t=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)
			case "$g" in fe80:*) [ "$t" = "RoCE v2" ] && { echo $i; exit 0; } ;; esac
		done; usleep 100000; done; exit 1') ||
		{ echo "FAIL: rxe0 in guest srv shows no RoCE v2 link-local GID" >&2; exit 1; }
	# shellcheck disable=SC2016 # expanded in the guest
	RXE_GIDX_GLOBAL=$("$VMLAB" exec srv --timeout 30 'for n in $(seq 200); do
		for i in $(seq 0 15); do
			g=$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null)
			t=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)
			case "$g" in fd47:0000:0000:0000:0000:0000:0000:0011) [ "$t" = "RoCE v2" ] && { echo $i; exit 0; } ;; esac
		done; usleep 100000; done; exit 1') ||
		{ echo "FAIL: rxe0 in guest srv shows no RoCE v2 GID for $GLOBAL6_SRV" >&2; exit 1; }
	RXE_GIDX_LL=${RXE_GIDX_LL//[!0-9]/}
	RXE_GIDX_GLOBAL=${RXE_GIDX_GLOBAL//[!0-9]/}
	log "IPv6: rxe GID $RXE_GIDX_LL (fe80::) and $RXE_GIDX_GLOBAL ($GLOBAL6_SRV), uroce 0 and 2"
}

# Link MTU for a path MTU: rxe's port MTU is the largest IB MTU that fits
# the netdev MTU less 80 bytes of headers (4096 needs >= 4176); 4200 also
# makes the AF_XDP port use multi-buffer frames. Ports first, then the
# bridge (it cannot exceed its smallest port). rxe follows eth0's MTU
# change at once (NETDEV_CHANGEMTU).
set_mtu() {
	local pmtu=$1 lmtu=1500 g dev
	[ "$pmtu" = 1024 ] || lmtu=4200
	for dev in $(ip netns exec "$UROCE_VMLAB_LAB" ls /sys/class/net); do
		case "$dev" in tp-* | vp-*) ip netns exec "$UROCE_VMLAB_LAB" ip link set "$dev" mtu $lmtu ;; esac
	done
	ip netns exec "$UROCE_VMLAB_LAB" ip link set br0 mtu $lmtu
	[ -z "$HOSTNS" ] || ip netns exec "$HOSTNS" ip link set "$IFACE" mtu $lmtu
	for g in "${GUESTS[@]}"; do
		"$VMLAB" exec "$g" --timeout 20 "ip link set eth0 mtu $lmtu && \
			for i in \$(seq 50); do ibv_devinfo -d rxe0 | grep -q 'active_mtu:.*$pmtu' && exit 0; usleep 100000; done; \
			ibv_devinfo -d rxe0 | grep mtu; exit 1" >/dev/null ||
			{ echo "FAIL: guest $g: rxe0 active_mtu did not become $pmtu at link MTU $lmtu" >&2; exit 1; }
	done
	log "link MTU $lmtu everywhere, rxe active_mtu $pmtu"
}

# ------------------------------------------------------------------ sides
# A side is "g:GUEST" or "h" (the host netns). Commands are bounded by
# `timeout` on the side that runs them, so nothing outlives its case.
# Not in a $(...): a host process must be a child of this shell to be
# waited for.
side_start() { # SIDE CMD OUT: start CMD in the background; its handle in HANDLE
	local side=$1 cmd=$2 out=$3
	case "$side" in
	g:*)
		HANDLE=$("$VMLAB" start "${side#g:}" "echo \$\$ >/tmp/matrix-case.pid; exec timeout $CASE_TIMEOUT $cmd")
		;;
	h)
		# shellcheck disable=SC2086
		ip netns exec "$HOSTNS" timeout -k 5 "$CASE_TIMEOUT" $cmd >"$out" 2>&1 </dev/null &
		HANDLE=$!
		HOST_PIDS+=("$HANDLE")
		;;
	esac
}

side_wait() { # SIDE HANDLE OUT: wait for it, its output in OUT, returns its rc
	local side=$1 h=$2 out=$3 rc=0
	case "$side" in
	g:*)
		"$VMLAB" wait "${side#g:}" "$h" --timeout $((CASE_TIMEOUT + 15)) >"$out" 2>&1 || rc=$?
		;;
	h)
		wait "$h" || rc=$?
		;;
	esac
	return $rc
}

# Kill a case's leftover server (after a failure) by the pid it recorded.
side_kill() { # SIDE HANDLE
	# shellcheck disable=SC2016 # expanded in the guest
	case "$1" in
	g:*) "$VMLAB" exec "${1#g:}" --timeout 10 'kill $(cat /tmp/matrix-case.pid) 2>/dev/null; true' >/dev/null 2>&1 || true ;;
	h) kill "$2" 2>/dev/null || true ;;
	esac
}

side_run() { # SIDE CMD OUT: run CMD to its end, returns its rc
	local side=$1 cmd=$2 out=$3 rc=0
	case "$side" in
	g:*)
		"$VMLAB" exec "${side#g:}" --timeout $((CASE_TIMEOUT + 15)) "timeout $CASE_TIMEOUT $cmd" >"$out" 2>&1 || rc=$?
		;;
	h)
		# shellcheck disable=SC2086
		ip netns exec "$HOSTNS" timeout -k 5 "$CASE_TIMEOUT" $cmd >"$out" 2>&1 </dev/null || rc=$?
		;;
	esac
	return $rc
}

# The servers accept() exactly one connection, so readiness is read from
# the side's socket table, never probed by connecting.
side_listening() { # SIDE HANDLE: wait (<= 30 s) until TCP_PORT listens
	local side=$1 h=$2 hex
	hex=$(printf '%04X' $TCP_PORT)
	case "$side" in
	g:*)
		"$VMLAB" exec "${side#g:}" --timeout 40 "for i in \$(seq 300); do \
			netstat -ltn | grep -q ':$TCP_PORT ' && exit 0; \
			[ -e /proc/\$(cat /tmp/matrix-case.pid 2>/dev/null || echo 0) ] || [ \$i -lt 20 ] || exit 1; \
			usleep 100000; done; exit 1" >/dev/null 2>&1
		;;
	h)
		for _ in $(seq 300); do
			ip netns exec "$HOSTNS" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
				awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' &&
				return 0
			kill -0 "$h" 2>/dev/null || return 1
			sleep 0.1
		done
		return 1
		;;
	esac
}

# ------------------------------------------------------------------ commands
# Command lines for each tool on each kind of side. SERVER is empty for the
# server, the server's address for the client.
# GID indices (-g / -x) per case kind: rxe's table holds a RoCE v1 and a
# v2 entry per address, so its indices are read from its sysfs (rxe_gidx);
# uroce's is fe80:: 0, ::ffff:IPv4 1, then the IPv6 addresses (docs/api.md).
RXE_GIDX_V4=1
RXE_GIDX_LL=
RXE_GIDX_GLOBAL=
rxe_gidx() { # GID kind ('' = IPv4)
	case "$1" in
	ipv6-ll) echo "$RXE_GIDX_LL" ;;
	ipv6-global) echo "$RXE_GIDX_GLOBAL" ;;
	*) echo "$RXE_GIDX_V4" ;;
	esac
}
uroce_gidx() { # GID kind ('' = IPv4)
	case "$1" in
	ipv6-ll) echo 0 ;;
	ipv6-global) echo 2 ;;
	*) echo 1 ;;
	esac
}

rxe_cmd() { # TOOL SIZE MTU SERVER [GID kind]
	local tool=$1 size=$2 mtu=$3 srv=$4 g
	g=$(rxe_gidx "${5:-}")
	case "$tool" in
	ibv_ud_pingpong) echo "ibv_ud_pingpong -d rxe0 -g $g -s $size -n $ITERS_PP -c $srv" ;;
	ibv_*) echo "$tool -d rxe0 -g $g -s $size -n $ITERS_PP -m $mtu -c $srv" ;;
	ib_*) echo "ib_$(perf_tool "$tool") -d rxe0 -x $g -F $(perf_args "$tool" "$size") -n $ITERS_PERF -m $mtu $srv" ;;
	esac
}

uroce_cmd() { # TOOL SIZE MTU SERVER [GID kind]
	local tool=$1 size=$2 mtu=$3 srv=$4 t g
	g=$(uroce_gidx "${5:-}")
	case "$tool" in
	ibv_ud_pingpong) echo "$PP_BIN ud -d afxdp:$IFACE -g $g -s $size -n $ITERS_PP -c $srv" ;;
	ibv_*)
		t=${tool#ibv_}
		t=${t%_pingpong}
		echo "$PP_BIN $t -d afxdp:$IFACE -g $g -s $size -n $ITERS_PP -m $mtu -c $srv"
		;;
	ib_*) echo "$PERF_BIN $(perf_tool "$tool") -d afxdp:$IFACE -x $g $(perf_args "$tool" "$size") -n $ITERS_PERF -m $mtu $srv" ;;
	esac
}

# What a side must print, beyond exiting 0, to have completed its
# iterations: pingpong prints "N iters in"; perftest's reporting side prints
# a result row "SIZE ITERS ...".
check_out() { # TOOL SIZE OUT ROLE(server|client)
	local tool=$1 size=$2 out=$3 role=$4
	case "$tool" in
	ibv_*) grep -q "^$ITERS_PP iters in " "$out" ;;
	ib_*-b)
		# -b: each end runs and prints both directions' sum
		grep -Eq "^ *$size +$ITERS_PERF " "$out"
		;;
	ib_atomic_lat)
		[ "$role" = server ] || grep -Eq "^ *$size +$ITERS_PERF " "$out"
		;;
	ib_*_lat | ib_send_bw)
		# Both sides report (send_bw's receiver counts what it received;
		# write_lat / send_lat both ping-pong; read_lat's server is passive).
		if [ "$tool" = ib_read_lat ] && [ "$role" = server ]; then
			return 0
		fi
		grep -Eq "^ *$size +$ITERS_PERF " "$out"
		;;
	ib_*)
		# write_bw / read_bw: the passive server reports nothing.
		[ "$role" = server ] || grep -Eq "^ *$size +$ITERS_PERF " "$out"
		;;
	esac
}

# The path MTU as seen on the bridge: RoCEv2 packets (UDP payload = BTH
# to ICRC) carry at most MTU bytes of payload, and a message larger than
# the MTU goes out in full-MTU packets. Headers between BTH and payload:
# BTH 12 + ICRC 4, plus at most RETH 16 / AETH 4 / ImmDt 4 / DETH 8.
check_wire() { # TOOL SIZE MTU PCAP [GID kind]: prints what is wrong, nothing if fine
	local tool=$1 size=$2 mtu=$3 pcap=$4 gk=${5:-} n max wrong filter='ip and udp dst port 4791' other='ip6'
	case "$gk" in
	ipv6-ll) filter='ip6 and src net fe80::/64 and dst net fe80::/64 and udp dst port 4791' other=ip ;;
	ipv6-global) filter='ip6 and src net fd47::/64 and dst net fd47::/64 and udp dst port 4791' other=ip ;;
	esac
	# every RoCEv2 packet of the case in the GIDs' family (captured, not
	# piped into grep -q: under pipefail tcpdump's SIGPIPE would hide them)
	if ! wrong=$(tcpdump -r "$pcap" -nn -q "$other and udp dst port 4791" 2>/dev/null); then
		echo "tcpdump cannot read $pcap"
		return
	fi
	if [ -n "$wrong" ]; then
		echo "RoCEv2 packets over $other in a case whose GIDs are not: $(head -n 1 <<<"$wrong")"
		return
	fi
	read -r n max < <(tcpdump -r "$pcap" -nn -q "$filter" 2>/dev/null |
		awk '{ n++; l = $NF + 0; if (l > m) m = l } END { print n + 0, m + 0 }')
	if [ "$n" = 0 ]; then
		echo "no RoCEv2 packet ($filter) on the bridge"
	elif [ "$max" -gt $((mtu + 16 + 24)) ]; then
		echo "a RoCEv2 packet of $max bytes (BTH to ICRC) exceeds path MTU $mtu"
	elif [ "$size" -gt "$mtu" ] && [ "$max" -lt $((mtu + 16)) ]; then
		echo "a $size-byte message went out in packets of at most $max bytes, not full path MTU $mtu"
	fi
}

RESULTS=()
FAILED=()

run_case() { # CASE
	local c=$1 mtu tool size dir gk s_side c_side s_cmd c_cmd h s_rc=0 c_rc=0 why="" t0=$SECONDS
	IFS=/ read -r mtu tool size dir gk <<<"$c"
	# the TCP exchange stays on IPv4 whatever the GIDs are
	case "$dir" in
	uroce-srv) s_side=h c_side=g:srv s_cmd=$(uroce_cmd "$tool" "$size" "$mtu" "" "$gk") c_cmd=$(rxe_cmd "$tool" "$size" "$mtu" "$HOST_IP" "$gk") ;;
	uroce-cli) s_side=g:srv c_side=h s_cmd=$(rxe_cmd "$tool" "$size" "$mtu" "" "$gk") c_cmd=$(uroce_cmd "$tool" "$size" "$mtu" "$SRV_IP" "$gk") ;;
	rxe-rxe) s_side=g:srv c_side=g:cli s_cmd=$(rxe_cmd "$tool" "$size" "$mtu" "") c_cmd=$(rxe_cmd "$tool" "$size" "$mtu" "$SERVER_IP") ;;
	esac
	local d=$WORK/${c//\//_}
	[ -z "$OUTDIR" ] || d=$OUTDIR/${c//\//_}
	mkdir -p "$d"
	echo "$s_cmd" >"$d/server.cmd"
	echo "$c_cmd" >"$d/client.cmd"
	: >"$d/server.out"
	: >"$d/client.out"
	# RoCEv2 and the TCP exchange: --outdir keeps both for debugging.
	"$VMLAB" capture-start mx "$d/wire.pcap" udp port 4791 or tcp port $TCP_PORT 2>/dev/null
	side_start "$s_side" "$s_cmd" "$d/server.out"
	h=$HANDLE
	if side_listening "$s_side" "$h"; then
		side_run "$c_side" "$c_cmd" "$d/client.out" || c_rc=$?
		[ $c_rc = 0 ] || side_kill "$s_side" "$h"
	else
		why="server never listened on $TCP_PORT; "
		side_kill "$s_side" "$h"
	fi
	side_wait "$s_side" "$h" "$d/server.out" || s_rc=$?
	"$VMLAB" capture-stop mx 2>/dev/null
	[ -z "$why" ] || c_rc=-
	[ "$s_rc" = 0 ] || why="${why}server exited $s_rc; "
	[ "$c_rc" = 0 ] || [ "$c_rc" = - ] || why="${why}client exited $c_rc; "
	if [ "$s_rc" = 0 ] && ! check_out "$tool" "$size" "$d/server.out" server; then
		why="${why}server did not report its iterations; "
	fi
	if [ "$c_rc" = 0 ] && ! check_out "$tool" "$size" "$d/client.out" client; then
		why="${why}client did not report its iterations; "
	fi
	# perftest prints the path MTU it set up; on the rxe side it must be
	# the case's.
	local role side
	for role in server client; do
		side=$s_side
		[ $role = server ] || side=$c_side
		if [ -z "$why" ] && [[ $tool == ib_* ]] && [ "$side" != h ] &&
			! grep -Eq "Mtu +: $mtu\[B\]" "$d/$role.out"; then
			why="rxe $role did not run at path MTU $mtu; "
		fi
	done
	if [ -z "$why" ]; then
		why=$(check_wire "$tool" "$size" "$mtu" "$d/wire.pcap" "$gk")
	fi
	local secs=$((SECONDS - t0)) line
	if [ -z "$why" ]; then
		line=$(printf 'PASS %-40s %4ss' "$c" "$secs")
	else
		line=$(printf 'FAIL %-40s %4ss  %s' "$c" "$secs" "${why%; }")
		FAILED+=("$c")
	fi
	echo "$line"
	RESULTS+=("$line")
}

if [[ " ${CASES[*]}" == *"/ipv6-"* ]]; then
	setup_ipv6
fi
cur_mtu=1024
for c in "${CASES[@]}"; do
	mtu=${c%%/*}
	if [ "$mtu" != "$cur_mtu" ]; then
		set_mtu "$mtu"
		cur_mtu=$mtu
	fi
	run_case "$c"
done

echo
echo "=== interop matrix ($MODE): ${#CASES[@]} cases, ${#FAILED[@]} failed, $((SECONDS - T0)) s"
printf '%s\n' "${RESULTS[@]}"
for c in "${FAILED[@]}"; do
	d=$WORK/${c//\//_}
	[ -z "$OUTDIR" ] || d=$OUTDIR/${c//\//_}
	echo
	echo "=== FAILED $c"
	echo "--- server: $(cat "$d/server.cmd")"
	sed 's/^/  | /' "$d/server.out"
	echo "--- client: $(cat "$d/client.cmd")"
	sed 's/^/  | /' "$d/client.out"
done
if [ ${#FAILED[@]} -gt 0 ]; then
	for g in "${GUESTS[@]}"; do
		echo "--- guest $g rxe counters:"
		# shellcheck disable=SC2016 # expanded in the guest
		"$VMLAB" exec "$g" --timeout 10 \
			'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f=$(cat $f)"; done' |
			tr '\n' ' ' || true
		echo
	done
	exit 1
fi
echo "PASS: all ${#CASES[@]} cases"
exit
}
