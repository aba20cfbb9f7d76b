# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# N ranks behind one switch for the collectives (sourced, after
# tests/lib/netns.sh and netns_init; coll.sh and
# tests/bench/nccl_coll_bench.sh). The switch is a namespace holding a
# Linux bridge; each rank a namespace of its own with one veth, its end
# eth0 (10.96.0.(R+1)/24, MTU 1500), the other end port pR of the bridge:
#
#   R0 eth0 10.96.0.1 -- p0 \
#   R1 eth0 10.96.0.2 -- p1  [SW: br0]
#   ...                     /
#   RN-1 eth0 10.96.0.N -- pN-1
#
# Loss: uroce-impair on every bridge port, in the switch namespace; it
# drops RoCEv2 at XDP ingress there, i.e. packets leaving their rank. At
# loss 0 it is attached as well (--drop 0), so that every run of a sweep
# takes the same path through the kernel.
#
# Every rank runs nccl_coll in its own namespace (ip netns exec), with the
# plugin found by NCCL's rule (--plugin uroce: libnccl-net-uroce.so on
# LD_LIBRARY_PATH) and configured by UROCE_NCCL_* in the environment; they
# meet through files in a fresh folder.
#
#   coll_topo_build N           COLL_N, COLL_SW, COLL_NS[0..N-1]; built and pinged
#   coll_impair IMPAIR LOSS SEED   uroce-impair on every port (rank R's: seed SEED+R)
#   coll_dropped IMPAIR         RoCEv2 packets dropped so far on all ports (since attach)
#   coll_run LOG MODE NCCL_COLL PLUGIN_DIR ARGS...
#                               every rank of nccl_coll with ARGS (--rank, --nranks,
#                               --dir, --plugin added) under reliability MODE
#                               (UROCE_NCCL_RELIABILITY); rank R's
#                               output in LOG.R, rank 0's also in LOG; 0 when every rank
#                               exits 0, else 1 (COLL_RC[R]: each rank's exit status)
# Environment read by coll_run: COLL_CORES (UROCE_NCCL_CORES, default inline),
# COLL_BE_TIMEOUT_US (UROCE_NCCL_BE_TIMEOUT_US, unset: the plugin's default),
# COLL_OUTER_TIMEOUT (seconds for the whole run of one rank, default 300),
# COLL_PIN=1 (rank R on CPU R mod nproc), COLL_PLUGIN (the --plugin name, default uroce;
# tests/bench's libnccl-net-tcpbase.so is "tcpbase", given eth0 by UROCE_TCPBASE_IFACE).

COLL_N=0 COLL_SW='' COLL_NS=() COLL_RC=()

coll_topo_build() {
	local n=${1:?coll_topo_build N} r
	[ "$n" -ge 2 ] && [ "$n" -le 64 ] || { echo "FAIL: coll_topo_build: N=$n, accepted 2..64"; exit 1; }
	COLL_N=$n COLL_SW=$NETNS_PREFIX-sw COLL_NS=()
	netns_add "$COLL_SW"
	# no STP, no multicast snooping: the ports forward at once
	ip -n "$COLL_SW" link add br0 type bridge stp_state 0 mcast_snooping 0 &&
		ip -n "$COLL_SW" link set br0 mtu 1500 up || { echo "FAIL: cannot create the bridge br0 in $COLL_SW"; exit 1; }
	for ((r = 0; r < n; r++)); do
		COLL_NS+=("$NETNS_PREFIX-r$r")
		netns_add "${COLL_NS[r]}"
		netns_veth "${COLL_NS[r]}" eth0 "$COLL_SW" p$r --ip-a 10.96.0.$((r + 1))/24 --mtu 1500
		ip -n "$COLL_SW" link set p$r master br0 || { echo "FAIL: cannot join p$r to br0 in $COLL_SW"; exit 1; }
	done
	for ((r = 1; r < n; r++)); do
		netns_wait_until 10 ip netns exec "${COLL_NS[0]}" ping -c 1 -W 1 10.96.0.$((r + 1)) >/dev/null 2>&1 ||
			{ echo "FAIL: rank 0 cannot ping rank $r (10.96.0.$((r + 1))) through the bridge"; exit 1; }
	done
}

coll_impair() {
	local impair=$1 loss=$2 seed=$3 r
	for ((r = 0; r < COLL_N; r++)); do
		ip netns exec "$COLL_SW" "$impair" p$r --drop "$loss" --seed $((seed + r)) >/dev/null ||
			{ echo "FAIL: uroce-impair p$r --drop $loss"; exit 1; }
	done
}

coll_dropped() {
	local impair=$1 r d s=0
	for ((r = 0; r < COLL_N; r++)); do
		d=$(ip netns exec "$COLL_SW" "$impair" p$r --stats 2>/dev/null | sed -n 's/.* dropped=\([0-9]*\).*/\1/p')
		s=$((s + ${d:-0}))
	done
	echo $s
}

coll_run() {
	local log=$1 mode=$2 prog=$3 pdir=$4 dir r rc=0 pids=() pin=() env=()
	shift 4
	dir=$(mktemp -d "$NETNS_TMP/rdv.XXXXXX") || { echo "FAIL: cannot create a rendezvous folder"; exit 1; }
	env=(LD_LIBRARY_PATH="$pdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" UROCE_NCCL_DEVICES=afxdp:eth0
		UROCE_NCCL_RELIABILITY="$mode" UROCE_NCCL_CORES="${COLL_CORES:-inline}" UROCE_TCPBASE_IFACE=eth0)
	[ -z "${COLL_BE_TIMEOUT_US:-}" ] || env+=(UROCE_NCCL_BE_TIMEOUT_US="$COLL_BE_TIMEOUT_US")
	[ -z "${COLL_HD:-}" ] || env+=(UROCE_NCCL_HADAMARD="$COLL_HD")
	COLL_RC=()
	for ((r = 0; r < COLL_N; r++)); do
		pin=()
		[ "${COLL_PIN:-0}" != 1 ] || pin=(taskset -c $((r % $(nproc))))
		netns_start "${COLL_NS[r]}" "$log.$r" env "${env[@]}" "${pin[@]}" timeout -k 5 "${COLL_OUTER_TIMEOUT:-300}" \
			"$prog" --rank $r --nranks "$COLL_N" --dir "$dir" --plugin "${COLL_PLUGIN:-uroce}" "$@"
		pids+=("$NETNS_PID")
	done
	for ((r = 0; r < COLL_N; r++)); do
		COLL_RC[r]=0
		netns_wait "${pids[r]}" || COLL_RC[r]=$?
		[ "${COLL_RC[r]}" = 0 ] || rc=1
	done
	cp "$log.0" "$log" 2>/dev/null
	rm -rf "$dir"
	return $rc
}
