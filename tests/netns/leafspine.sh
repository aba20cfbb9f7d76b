#!/bin/bash
# SPDX-License-Identifier: MIT
# A leaf-spine test fabric in network namespaces: hosts, one uroce-fabric
# switch per leaf and per spine (each in its own namespace), every leaf
# wired to every spine, the leaves spreading traffic over the spines by
# ECMP. With --kernel the same topology from plain Linux routers
# (multipath routes hashing the UDP ports, tbf shaping) as a cross-check.
# Run as root. A library too: source it and call ls_up, ls_down, ls_hosts,
# ls_switches with the same arguments as the commands.
#
#   leafspine.sh up --prefix NAME --fabric PATH/uroce-fabric [options]
#   leafspine.sh up --prefix NAME --kernel [options]
#   leafspine.sh hosts --prefix NAME
#   leafspine.sh switches --prefix NAME
#   leafspine.sh down --prefix NAME
# Options of up:
#   --leaves N          2..4 (default 2)
#   --spines N          1..4 (default 2)
#   --hosts-per-leaf K  1..8 (default 1)
#   --rate R            egress rate of every switch port: uroce-fabric's rate= (1g, 100m),
#                       tbf's rate with --kernel (default: unlimited)
#   --queue Q           queue bound of every switch port, bytes (256k; default: the switch's;
#                       tbf's limit with --kernel)
#   --ecn B             CE threshold of every switch port (64k; default off)
#   --trim 0|1          packet trimming on every switch port (default 0)
#   --delay D           propagation delay of every switch port (10us; default 0)
#   --mtu N             MTU of every link, 1280..9000 (default: veth's 1500); 4200 takes
#                       RoCE's path MTU 4096
#   --seed S            base seed; switch k runs with S + k (default 1); with --kernel,
#                       router k's net.ipv4.fib_multipath_hash_seed is S + k (leaves
#                       first, then spines; 0 is the kernel's own random seed), where
#                       the kernel has that setting (6.11 and later)
#   --max-sec N         the switches exit by themselves after N s (default 3600; 0 = never)
#   --fabric PATH       the uroce-fabric binary (needed without --kernel)
#   --kernel            Linux routers instead of uroce-fabric: forwarding, multipath
#                       routes, net.ipv4.fib_multipath_hash_policy=1, tbf for --rate; this
#                       kernel has no netem or RED, so --ecn, --trim and --delay are
#                       ignored there (with a warning)
#   --state-dir DIR     where state is kept (default $LEAFSPINE_STATE_DIR or
#                       /tmp/uroce-leafspine); the same for hosts, switches and down
#
# Namespaces: NAME-h<L>-<K> (host K of leaf L), NAME-leaf<L>, NAME-spine<S>.
# Addresses (within the namespaces): host K of leaf L is 10.L.K.2/24 on h0,
# its gateway 10.L.K.1 on the leaf's port d<K>; leaf L's port u<S> is
# 10.<100+S>.L.1/24, spine S's port l<L> 10.<100+S>.L.2/24. Every MAC is
# 02:00 followed by the interface's IPv4 address, and every neighbour
# entry is permanent (no ARP). Hosts route 10.0.0.0/8 via their gateway.
# A switch port's index is its order: on a leaf d1..dK then u1..uS, on a
# spine l1..lL. In both modes the routers' kernels forward what the
# switches do not take (TCP, ICMP: the exchange of uroce-pingpong and
# uroce-perf), over the same multipath routes; with uroce-fabric running,
# RoCEv2 (UDP 4791) goes through the switches.
#
# hosts prints one line per host:  NAMESPACE IFACE ADDRESS/24 GATEWAY GATEWAY_MAC
#   e.g. "ls-h1-1 h0 10.1.1.2/24 10.1.1.1 02:00:0a:01:01:01"
# switches prints one line per switch:  NAME NAMESPACE STATS_JSON (or "kernel")
# State: PIDs (with their start times, so down never signals a reused PID),
# namespaces, logs and the switches' JSON counters under STATE_DIR/NAME.
# Exit status: 0 done, 1 a failure (up undoes what it made), 2 bad arguments.

LS_FABRIC_READY_SEC=15
LS_STOP_SEC=5

ls__usage() {
	sed -n '2,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

ls__die() { echo "leafspine: $*" >&2; exit 1; }
ls__bad() { echo "leafspine: $* (leafspine.sh --help)" >&2; exit 2; }

# ls__args ARGS...: the options into LS_* variables
ls__args() {
	LS_PREFIX='' LS_LEAVES=2 LS_SPINES=2 LS_HOSTS=1 LS_RATE='' LS_QUEUE='' LS_ECN='' LS_TRIM=0 LS_DELAY='' LS_SEED=1
	LS_MAXSEC=3600 LS_FABRIC='' LS_KERNEL=0 LS_MTU='' LS_STATE=${LEAFSPINE_STATE_DIR:-/tmp/uroce-leafspine}
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) LS_KERNEL=1; shift; continue ;;
		--prefix | --leaves | --spines | --hosts-per-leaf | --rate | --queue | --ecn | --trim | --delay | --seed | \
			--max-sec | --fabric | --state-dir | --mtu)
			[ $# -ge 2 ] || ls__bad "$1 needs a value" ;;
		*) ls__bad "unknown option '$1'; accepted: --prefix --leaves --spines --hosts-per-leaf --rate --queue" \
			"--ecn --trim --delay --mtu --seed --max-sec --fabric --kernel --state-dir" ;;
		esac
		case "$1" in
		--prefix) LS_PREFIX=$2 ;;
		--leaves) LS_LEAVES=$2 ;;
		--spines) LS_SPINES=$2 ;;
		--hosts-per-leaf) LS_HOSTS=$2 ;;
		--rate) LS_RATE=$2 ;;
		--queue) LS_QUEUE=$2 ;;
		--ecn) LS_ECN=$2 ;;
		--trim) LS_TRIM=$2 ;;
		--delay) LS_DELAY=$2 ;;
		--seed) LS_SEED=$2 ;;
		--max-sec) LS_MAXSEC=$2 ;;
		--fabric) LS_FABRIC=$2 ;;
		--state-dir) LS_STATE=$2 ;;
		--mtu) LS_MTU=$2 ;;
		esac
		shift 2
	done
	[[ $LS_PREFIX =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$ ]] ||
		ls__bad "--prefix '$LS_PREFIX': accepted: 1-32 letters, digits, '_', '.', '-' (namespace names start with it)"
	LS_DIR=$LS_STATE/$LS_PREFIX
}

ls__range() { # NAME VALUE MIN MAX
	[[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || ls__bad "$1 '$2': accepted: $3..$4"
}

# 02:00 and the four bytes of an IPv4 address
ls__mac() { local IFS=.; set -- $1; printf '02:00:%02x:%02x:%02x:%02x' "$1" "$2" "$3" "$4"; }

ls__ns() { # record, then create, so a failure half way is undone by down
	echo "$1" >>"$LS_DIR/namespaces"
	ip netns add "$1" && ip -n "$1" link set lo up || ls__die "cannot create namespace $1"
}

# ls__link NS_A IF_A IP_A NS_B IF_B IP_B: a veth pair, /24 addresses, MACs from them, up
ls__link() {
	local mtu=()
	[ -z "$LS_MTU" ] || mtu=(mtu "$LS_MTU")
	ip -n "$1" link add name "$2" "${mtu[@]}" type veth peer name "$5" netns "$4" "${mtu[@]}" &&
		ip -n "$1" link set dev "$2" address "$(ls__mac "$3")" &&
		ip -n "$4" link set dev "$5" address "$(ls__mac "$6")" &&
		ip -n "$1" addr add "$3/24" dev "$2" && ip -n "$4" addr add "$6/24" dev "$5" &&
		ip -n "$1" link set dev "$2" up && ip -n "$4" link set dev "$5" up ||
		ls__die "cannot wire $1:$2 to $4:$5"
	# each end knows the other: no ARP
	ip -n "$1" neigh replace "$6" lladdr "$(ls__mac "$6")" dev "$2" nud permanent &&
		ip -n "$4" neigh replace "$3" lladdr "$(ls__mac "$3")" dev "$5" nud permanent ||
		ls__die "cannot add the neighbours of $1:$2 and $4:$5"
}

ls__router() { # NS [SEED]: forwarding, L4 multipath hash, no reverse-path filter (ECMP returns by any spine)
	ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 >/dev/null ||
		ls__die "cannot make $1 a router"
	# the hash seed, so a --seed gives the same spines again (a kernel without it: random)
	[ -z "${2:-}" ] || [ ! -e /proc/sys/net/ipv4/fib_multipath_hash_seed ] ||
		ip netns exec "$1" sysctl -qw net.ipv4.fib_multipath_hash_seed="$2" >/dev/null ||
		ls__die "cannot set $1's multipath hash seed"
}

ls__tbf() { # NS IF: shape to --rate, queue --queue
	local limit=${LS_QUEUE:-256k}
	ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$(ls__tbf_rate)" burst 64kb limit "$limit" ||
		ls__die "tc tbf on $1:$2 (rate $LS_RATE, limit $limit) refused"
}

ls__tbf_rate() { # uroce-fabric's 1g / 100m / 2.5g as tc's 1gbit / 100mbit
	case "$LS_RATE" in
	*[kKmMgGtT]) echo "${LS_RATE}bit" ;;
	*[0-9]) echo "${LS_RATE}bit" ;;
	*) echo "$LS_RATE" ;;
	esac
}

# ls__start NAME NS ARGS...: a uroce-fabric in NS, PID and start time recorded
ls__start() {
	local name=$1 ns=$2 pid start
	shift 2
	ip netns exec "$ns" "$LS_FABRIC" "$@" --seed $((LS_SEED + ${#LS_STARTED[@]})) --stats "$LS_DIR/$name.json" \
		--ready-file "$LS_DIR/$name.ready" --max-sec "$LS_MAXSEC" --quiet </dev/null >"$LS_DIR/$name.log" 2>&1 &
	pid=$!
	start=$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null)
	echo "$pid ${start:-0} $name" >>"$LS_DIR/pids"
	echo "$name $ns $LS_DIR/$name.json" >>"$LS_DIR/switches"
	LS_STARTED+=("$name:$pid")
}

ls__port_opts() {
	local o=
	[ -z "$LS_RATE" ] || o+=",rate=$LS_RATE"
	[ -z "$LS_QUEUE" ] || o+=",queue=$LS_QUEUE"
	[ -z "$LS_ECN" ] || o+=",ecn=$LS_ECN"
	[ "$LS_TRIM" = 0 ] || o+=",trim=1"
	[ -z "$LS_DELAY" ] || o+=",delay=$LS_DELAY"
	echo "$o"
}

ls__up_body() {
	local L S K l s k p ns leaf spine opts args
	ls__range --leaves "$LS_LEAVES" 2 4
	ls__range --spines "$LS_SPINES" 1 4
	ls__range --hosts-per-leaf "$LS_HOSTS" 1 8
	ls__range --trim "$LS_TRIM" 0 1
	ls__range --max-sec "$LS_MAXSEC" 0 31536000
	[ -z "$LS_MTU" ] || ls__range --mtu "$LS_MTU" 1280 9000
	[[ $LS_SEED =~ ^[0-9]+$ ]] || ls__bad "--seed '$LS_SEED': accepted: a decimal integer"
	L=$LS_LEAVES S=$LS_SPINES K=$LS_HOSTS
	[ "$(id -u)" = 0 ] || ls__die "needs root (network namespaces, XDP)"
	if [ "$LS_KERNEL" = 1 ]; then
		[ -z "$LS_ECN$LS_DELAY" ] && [ "$LS_TRIM" = 0 ] ||
			echo "leafspine: --kernel: this kernel has no netem or RED; --ecn, --trim and --delay are ignored" >&2
		[ -z "$LS_QUEUE" ] || [ -n "$LS_RATE" ] ||
			echo "leafspine: --kernel: --queue is tbf's limit and needs --rate; ignored" >&2
	else
		[ -n "$LS_FABRIC" ] || ls__bad "--fabric PATH/uroce-fabric is needed (or --kernel)"
		[ -x "$LS_FABRIC" ] || ls__bad "--fabric '$LS_FABRIC' is not an executable"
		# the switch's own checks of the port options, before anything is built
		opts=$(ls__port_opts)
		"$LS_FABRIC" --port "x,peer=02:00:00:00:00:01$opts" --route 10.0.0.0/8=0 --check >/dev/null ||
			ls__bad "uroce-fabric refuses the port options '${opts#,}'"
	fi
	[ ! -e "$LS_DIR" ] || ls__die "$LS_DIR exists: '$LS_PREFIX' is up (leafspine.sh down --prefix $LS_PREFIX first)"
	mkdir -p "$LS_DIR" || ls__die "cannot create $LS_DIR"
	LS_MADE=1
	: >"$LS_DIR/namespaces"
	: >"$LS_DIR/pids"
	: >"$LS_DIR/switches"
	: >"$LS_DIR/hosts"
	printf 'leaves=%s spines=%s hosts_per_leaf=%s rate=%s queue=%s ecn=%s trim=%s delay=%s seed=%s kernel=%s mtu=%s\n' \
		"$L" "$S" "$K" "$LS_RATE" "$LS_QUEUE" "$LS_ECN" "$LS_TRIM" "$LS_DELAY" "$LS_SEED" "$LS_KERNEL" "$LS_MTU" \
		>"$LS_DIR/config"

	for ((l = 1; l <= L; l++)); do ls__ns "$LS_PREFIX-leaf$l"; done
	for ((s = 1; s <= S; s++)); do ls__ns "$LS_PREFIX-spine$s"; done
	for ((l = 1; l <= L; l++)); do
		leaf=$LS_PREFIX-leaf$l
		ls__router "$leaf" $((LS_SEED + l - 1))
		for ((k = 1; k <= K; k++)); do
			ns=$LS_PREFIX-h$l-$k
			ls__ns "$ns"
			ls__link "$ns" h0 10.$l.$k.2 "$leaf" d$k 10.$l.$k.1
			ip -n "$ns" route add 10.0.0.0/8 via 10.$l.$k.1 dev h0 || ls__die "cannot route $ns"
			echo "$ns h0 10.$l.$k.2/24 10.$l.$k.1 $(ls__mac 10.$l.$k.1)" >>"$LS_DIR/hosts"
		done
		for ((s = 1; s <= S; s++)); do
			ls__link "$leaf" u$s 10.$((100 + s)).$l.1 "$LS_PREFIX-spine$s" l$l 10.$((100 + s)).$l.2
		done
	done
	# kernel routes (the whole fabric with --kernel; what the switches do not take otherwise)
	for ((l = 1; l <= L; l++)); do
		args=()
		for ((s = 1; s <= S; s++)); do args+=(nexthop via "10.$((100 + s)).$l.2" dev "u$s"); done
		ip -n "$LS_PREFIX-leaf$l" route add 10.0.0.0/8 "${args[@]}" || ls__die "cannot add leaf$l's multipath route"
	done
	for ((s = 1; s <= S; s++)); do
		spine=$LS_PREFIX-spine$s
		ls__router "$spine" $((LS_SEED + L + s - 1))
		for ((l = 1; l <= L; l++)); do
			ip -n "$spine" route add 10.$l.0.0/16 via 10.$((100 + s)).$l.1 dev l$l || ls__die "cannot route $spine"
		done
	done

	if [ "$LS_KERNEL" = 1 ]; then
		if [ -n "$LS_RATE" ]; then
			for ((l = 1; l <= L; l++)); do
				for ((k = 1; k <= K; k++)); do ls__tbf "$LS_PREFIX-leaf$l" d$k; done
				for ((s = 1; s <= S; s++)); do ls__tbf "$LS_PREFIX-leaf$l" u$s; done
			done
			for ((s = 1; s <= S; s++)); do
				for ((l = 1; l <= L; l++)); do ls__tbf "$LS_PREFIX-spine$s" l$l; done
			done
		fi
		for ((l = 1; l <= L; l++)); do echo "leaf$l $LS_PREFIX-leaf$l kernel" >>"$LS_DIR/switches"; done
		for ((s = 1; s <= S; s++)); do echo "spine$s $LS_PREFIX-spine$s kernel" >>"$LS_DIR/switches"; done
		return 0
	fi

	LS_STARTED=()
	opts=$(ls__port_opts)
	for ((l = 1; l <= L; l++)); do
		args=()
		for ((k = 1; k <= K; k++)); do
			args+=(--port "d$k,peer=$(ls__mac 10.$l.$k.2)$opts" --route "10.$l.$k.0/24=$((k - 1))")
		done
		p=
		for ((s = 1; s <= S; s++)); do
			args+=(--port "u$s,peer=$(ls__mac 10.$((100 + s)).$l.2)$opts")
			p+=${p:++}$((K + s - 1))
		done
		ls__start leaf$l "$LS_PREFIX-leaf$l" "${args[@]}" --route "0.0.0.0/0=$p"
	done
	for ((s = 1; s <= S; s++)); do
		args=()
		for ((l = 1; l <= L; l++)); do
			args+=(--port "l$l,peer=$(ls__mac 10.$((100 + s)).$l.1)$opts" --route "10.$l.0.0/16=$((l - 1))")
		done
		ls__start spine$s "$LS_PREFIX-spine$s" "${args[@]}"
	done
	for p in "${LS_STARTED[@]}"; do
		local name=${p%%:*} pid=${p#*:} i
		for ((i = 0; i < LS_FABRIC_READY_SEC * 10; i++)); do
			[ -e "$LS_DIR/$name.ready" ] && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		[ -e "$LS_DIR/$name.ready" ] || ls__die "uroce-fabric $name did not start: $(tail -3 "$LS_DIR/$name.log")"
	done
}

ls_up() {
	(
		ls__args "$@"
		# a failure half way undoes what this call made (the subshell's exit)
		LS_MADE=0
		# shellcheck disable=SC2154 # rc is the trap's own
		trap 'rc=$?; [ $rc = 0 ] || [ $LS_MADE = 0 ] || ls__down_dir "$LS_DIR" >/dev/null 2>&1; exit $rc' EXIT
		ls__up_body
		echo "leafspine: $LS_PREFIX up: $LS_LEAVES leaves, $LS_SPINES spines, $LS_HOSTS hosts per leaf$( \
			[ "$LS_KERNEL" = 1 ] && echo ", Linux routers" || echo ", uroce-fabric")"
	)
}

# Stop by PID (only a PID whose start time is the recorded one), delete the
# namespaces, remove the state.
ls__down_dir() {
	local dir=$1 pid start name now i ns
	[ -d "$dir" ] || return 1
	if [ -f "$dir/pids" ]; then
		while read -r pid start name; do
			now=$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null) || continue
			[ "$now" = "$start" ] || continue
			kill -TERM "$pid" 2>/dev/null
		done <"$dir/pids"
		while read -r pid start name; do
			for ((i = 0; i < LS_STOP_SEC * 10; i++)); do
				now=$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null) || break
				[ "$now" = "$start" ] || break
				sleep 0.1
			done
			now=$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null) && [ "$now" = "$start" ] &&
				kill -KILL "$pid" 2>/dev/null
		done <"$dir/pids"
	fi
	if [ -f "$dir/namespaces" ]; then
		while read -r ns; do
			[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
		done <"$dir/namespaces"
	fi
	rm -rf "$dir"
}

ls_down() {
	(
		ls__args "$@"
		[ -d "$LS_DIR" ] || ls__die "nothing up under '$LS_PREFIX' ($LS_DIR does not exist)"
		ls__down_dir "$LS_DIR"
		echo "leafspine: $LS_PREFIX down"
	)
}

ls_hosts() {
	(
		ls__args "$@"
		[ -f "$LS_DIR/hosts" ] || ls__die "nothing up under '$LS_PREFIX' ($LS_DIR/hosts does not exist)"
		cat "$LS_DIR/hosts"
	)
}

ls_switches() {
	(
		ls__args "$@"
		[ -f "$LS_DIR/switches" ] || ls__die "nothing up under '$LS_PREFIX' ($LS_DIR/switches does not exist)"
		cat "$LS_DIR/switches"
	)
}

ls_main() {
	local cmd=${1:-}
	[ $# -gt 0 ] && shift
	case "$cmd" in
	up) ls_up "$@" ;;
	down) ls_down "$@" ;;
	hosts) ls_hosts "$@" ;;
	switches) ls_switches "$@" ;;
	-h | --help | help) ls__usage ;;
	*) echo "leafspine: '$cmd': accepted: up, down, hosts, switches, --help" >&2; return 2 ;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	ls_main "$@"
	exit $?
fi
