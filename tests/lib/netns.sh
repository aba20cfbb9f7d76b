# SPDX-License-Identifier: MIT
# Network namespaces, veth pairs and background processes for the shell
# tests: setup, bounded waits, and one EXIT trap that cleans up by PID.
#
# Usage (bash; works under set -euo pipefail):
#   . "$(dirname "$0")/../lib/netns.sh"
#   netns_need_root                  # not root: "SKIP: ..." and exit 77
#   netns_init uroce-xyz             # NETNS_PREFIX=uroce-xyz-$$, NETNS_TMP (a fresh
#                                    # temporary folder), the cleanup trap
#   NA=$NETNS_PREFIX-a NB=$NETNS_PREFIX-b
#   netns_add "$NA" "$NB"            # namespaces with lo up, deleted at exit
#   netns_veth "$NA" va "$NB" vb --ip-a 10.9.0.1/24 --ip-b 10.9.0.2/24 --mtu 4200
#   netns_start "$NB" "$NETNS_TMP/srv.log" timeout 60 server ARGS...
#   srv=$NETNS_PID                   # killed at exit unless waited for
#   netns_wait_tcp "$NB" 18515 "$srv" || netns_die "server never listened"
#   netns_wait "$srv" || netns_die "server exited $?"
#
# Setup helpers (netns_add, netns_veth, netns_addr) print "FAIL: ..." and
# exit 1 when the kernel refuses, because no test can go on without its
# link. Waits return 0 or 1 and leave the verdict to the test. Every wait is
# bounded in seconds; a process is killed by the PID netns_start recorded,
# never by name. Interface names are at most 15 characters (IFNAMSIZ).
#
# Functions:
#   netns_need_root [WHAT]          exit 77 (meson's skip) unless root
#   netns_init PREFIX               NETNS_PREFIX=PREFIX-$$, NETNS_TMP, EXIT/INT/TERM traps
#   netns_add NS...                 create namespaces (lo up), remember them
#   netns_veth NSA IFA NSB IFB [--ip-a CIDR]... [--ip-b CIDR]... [--mtu N] [--queues N]
#                                   a veth pair, addresses (IPv6 without DAD), MTU,
#                                   both ends up and waited for
#   netns_addr NS IF CIDR...        more addresses on an interface (IPv6 without DAD)
#   netns_mtu MTU NS IF [NS IF]...  set the MTU of interfaces
#   netns_mac NS IF                 print the interface's MAC
#   netns_wait_link NS IF [SEC]     until the interface is operationally up (10 s)
#   netns_wait_ll NS IF [SEC]       until its IPv6 link-local address has passed
#                                   duplicate address detection (5 s; DAD takes ~1 s)
#   netns_start NS LOG CMD...       run CMD in NS in the background, stdout and
#                                   stderr to LOG; NETNS_PID is its PID (remembered)
#   netns_wait PID                  wait for it, forget it; returns its status
#   netns_stop PID                  SIGTERM (SIGKILL after 5 s), then netns_wait
#   netns_forget PID...             no longer kill these at exit
#   netns_wait_file FILE [PID] [SEC]         until FILE exists (10 s); 1 if PID ends first
#   netns_wait_tcp NS PORT [PID] [SEC]       until a TCP socket listens on PORT in NS (30 s),
#                                            read from /proc: the port is never connected to
#   netns_wait_until SEC CMD...              until CMD succeeds (polled every 0.1 s)
#   netns_die MSG                   "FAIL: MSG", the logs in NETNS_TMP, exit 1
#   netns_show_logs                 print NETNS_TMP/*.log (NETNS_LOG_LINES: only the last N)
#   netns_cleanup                   what the EXIT trap runs; a test may set
#                                   NETNS_ON_EXIT to a command to run first
#   netns_need_cmd CMD [PACKAGE]    exit 77 (meson's skip) unless CMD is installed
#   netns_test PREFIX [WHAT]        a test's start: netns_need_root WHAT, netns_init
#                                   PREFIX, TMP=NETNS_TMP, P=NETNS_PREFIX, the names
#                                   NA NB NM ($P-a, -b, -m) and fail (netns_die)
#   netns_usage_error TEXT CMD ARGS...  CMD must exit 2 saying TEXT (else fail)
#   netns_routed NET                A a0 NET.1.2 -- m0 NET.1.1 M m1 NET.2.1 -- b0 NET.2.2 B
#                                   (NA, NM, NB; MTU 1500), M forwards, default routes
#                                   through M, B answers a ping; IPB=NET.2.2

NETNS_PREFIX=
NETNS_TMP=
NETNS_NAMES=()
NETNS_PIDS=()
NETNS_PID=
NETNS_ON_EXIT=
NETNS_LOG_LINES=

netns_need_root() {
	[ "$(id -u)" = 0 ] && return 0
	echo "SKIP: needs root (${1:-network namespaces, XDP})"
	exit 77
}

netns_init() {
	local prefix=${1:?netns_init PREFIX}
	NETNS_PREFIX=$prefix-$$
	NETNS_TMP=$(mktemp -d "/tmp/$prefix.XXXXXX") || { echo "FAIL: cannot create a temporary folder"; exit 1; }
	trap netns_cleanup EXIT
	# A signal ends the test through exit, so the EXIT trap cleans up
	# (meson's timeout sends SIGTERM).
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

netns_add() {
	local ns
	for ns in "$@"; do
		ip netns add "$ns" || { echo "FAIL: cannot create namespace $ns"; exit 1; }
		NETNS_NAMES+=("$ns")
		ip -n "$ns" link set lo up || { echo "FAIL: cannot bring lo up in $ns"; exit 1; }
	done
}

netns_addr() {
	local ns=$1 dev=$2 cidr
	shift 2
	for cidr in "$@"; do
		case "$cidr" in
		*:*) ip -n "$ns" addr add "$cidr" dev "$dev" nodad ;;
		*) ip -n "$ns" addr add "$cidr" dev "$dev" ;;
		esac || { echo "FAIL: cannot add $cidr to $dev in $ns"; exit 1; }
	done
}

netns_mtu() {
	local mtu=$1
	shift
	while [ $# -ge 2 ]; do
		ip -n "$1" link set dev "$2" mtu "$mtu" || { echo "FAIL: cannot set MTU $mtu on $2 in $1"; exit 1; }
		shift 2
	done
}

netns_veth() {
	local nsa=$1 ifa=$2 nsb=$3 ifb=$4 mtu= queues=() ipa=() ipb=()
	shift 4
	while [ $# -gt 0 ]; do
		case "$1" in
		--ip-a) ipa+=("$2") ;;
		--ip-b) ipb+=("$2") ;;
		--mtu) mtu=$2 ;;
		--queues) queues=(numtxqueues "$2" numrxqueues "$2") ;;
		*) echo "FAIL: netns_veth: unknown option '$1' (accepted: --ip-a, --ip-b, --mtu, --queues)"; exit 1 ;;
		esac
		shift 2
	done
	ip link add name "$ifa" "${queues[@]}" netns "$nsa" type veth peer name "$ifb" "${queues[@]}" netns "$nsb" ||
		{ echo "FAIL: cannot create the veth pair $ifa-$ifb"; exit 1; }
	[ ${#ipa[@]} = 0 ] || netns_addr "$nsa" "$ifa" "${ipa[@]}"
	[ ${#ipb[@]} = 0 ] || netns_addr "$nsb" "$ifb" "${ipb[@]}"
	[ -z "$mtu" ] || netns_mtu "$mtu" "$nsa" "$ifa" "$nsb" "$ifb"
	ip -n "$nsa" link set dev "$ifa" up && ip -n "$nsb" link set dev "$ifb" up ||
		{ echo "FAIL: cannot bring $ifa and $ifb up"; exit 1; }
	netns_wait_link "$nsa" "$ifa" && netns_wait_link "$nsb" "$ifb" ||
		{ echo "FAIL: the veth pair $ifa-$ifb did not come up"; exit 1; }
}

netns_mac() {
	ip -n "$1" -o link show dev "$2" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2
}

netns_wait_link() {
	netns_wait_until "${3:-10}" netns__link_up "$1" "$2"
}

netns__link_up() {
	ip -n "$1" -o link show dev "$2" 2>/dev/null | grep -q 'state UP'
}

netns_wait_ll() {
	netns_wait_until "${3:-5}" netns__ll_ready "$1" "$2"
}

netns__ll_ready() {
	ip -n "$1" -6 addr show dev "$2" scope link | grep inet6 | grep -qv tentative
}

netns_wait_until() {
	local sec=$1 i
	shift
	for ((i = 0; i < sec * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

netns_start() {
	local ns=$1 log=$2
	shift 2
	ip netns exec "$ns" "$@" >"$log" 2>&1 &
	NETNS_PID=$!
	NETNS_PIDS+=("$NETNS_PID")
}

netns_forget() {
	local p q keep=()
	for p in "${NETNS_PIDS[@]}"; do
		for q in "$@"; do [ "$p" = "$q" ] && continue 2; done
		keep+=("$p")
	done
	NETNS_PIDS=("${keep[@]}")
}

netns_wait() {
	local st=0
	wait "$1" || st=$?
	netns_forget "$1"
	return $st
}

netns_stop() {
	kill -TERM "$1" 2>/dev/null || true
	netns__kill_after 5 "$1"
	netns_wait "$1"
}

# netns__kill_after SEC PID: SIGKILL if PID is still there after SEC seconds
# (a process that ignores SIGTERM must not hang the test).
netns__kill_after() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$2" 2>/dev/null || true
}

netns_wait_file() {
	local file=$1 pid=${2:-} sec=${3:-10} i
	for ((i = 0; i < sec * 10; i++)); do
		[ -e "$file" ] && return 0
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	[ -e "$file" ]
}

# From /proc/net/tcp{,6} of the namespace: the port is never connected to,
# so a server that takes one connection is not used up by the wait.
netns__listening() {
	local hex
	hex=$(printf '%04X' "$2")
	ip netns exec "$1" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

netns_wait_tcp() {
	local ns=$1 port=$2 pid=${3:-} sec=${4:-30} i
	for ((i = 0; i < sec * 10; i++)); do
		netns__listening "$ns" "$port" && return 0
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	netns__listening "$ns" "$port"
}

netns_show_logs() {
	local f
	[ -n "$NETNS_TMP" ] || return 0
	for f in "$NETNS_TMP"/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f"
		if [ -n "$NETNS_LOG_LINES" ]; then tail -n "$NETNS_LOG_LINES" "$f"; else cat "$f"; fi
	done
}

netns_die() {
	echo "FAIL: $*"
	netns_show_logs
	exit 1
}

# Kill what is left by PID (SIGTERM, then SIGKILL after 5 s), delete the
# namespaces, remove NETNS_TMP; the test's exit status stays its own. The
# namespaces and NETNS_TMP go right after the SIGTERMs, before any wait:
# meson kills a timed-out test half a second after its own SIGTERM, and a
# namespace deleted while a process still runs in it is freed when that
# process ends.
netns_cleanup() {
	local rc=$? p ns
	set +e
	[ -z "$NETNS_ON_EXIT" ] || eval "$NETNS_ON_EXIT"
	for p in "${NETNS_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for ns in "${NETNS_NAMES[@]}"; do ip netns del "$ns" 2>/dev/null; done
	NETNS_NAMES=()
	[ -z "$NETNS_TMP" ] || rm -rf "$NETNS_TMP"
	for p in "${NETNS_PIDS[@]}"; do
		netns__kill_after 5 "$p"
		wait "$p" 2>/dev/null
	done
	NETNS_PIDS=()
	exit "$rc"
}

netns_need_cmd() {
	command -v "$1" >/dev/null && return 0
	echo "SKIP: no $1${2:+ ($2)}"
	exit 77
}

netns_test() {
	netns_need_root "${2:-}"
	netns_init "$1"
	TMP=$NETNS_TMP
	P=$NETNS_PREFIX
	NA=$P-a NB=$P-b NM=$P-m
	fail() { netns_die "$@"; }
}

# Bad arguments get a message naming what is accepted, and exit status 2.
netns_usage_error() {
	local want=$1 out rc=0 what
	shift
	what="$(basename "$1") ${*:2}"
	out=$("$@" 2>&1) || rc=$?
	[ $rc = 2 ] || fail "$what: exit $rc, wanted 2 ($out)"
	grep -qF -- "$want" <<<"$out" || fail "$what: message '$out' lacks '$want'"
}

netns_routed() {
	local net=$1
	IPB=$net.2.2
	netns_add "$NA" "$NM" "$NB"
	netns_veth "$NA" a0 "$NM" m0 --ip-a "$net.1.2/24" --ip-b "$net.1.1/24" --mtu 1500
	netns_veth "$NB" b0 "$NM" m1 --ip-a "$IPB/24" --ip-b "$net.2.1/24" --mtu 1500
	ip netns exec "$NM" sysctl -qw net.ipv4.ip_forward=1 || fail "cannot enable forwarding in $NM"
	ip -n "$NA" route add default via "$net.1.1" && ip -n "$NB" route add default via "$net.2.1" ||
		fail "cannot add the default routes"
	ip netns exec "$NA" ping -c 1 -W 2 "$IPB" >/dev/null || fail "B is not reachable through the router"
}
