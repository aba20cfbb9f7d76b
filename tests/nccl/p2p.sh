#!/bin/bash
# SPDX-License-Identifier: MIT
# NCCL's net plugin driven as NCCL drives it, between two namespaces joined
# by a veth pair (AF_XDP ports): nccl_p2p on each side, the plugin found by
# NCCL's name rule (NCCL_NET_PLUGIN=uroce -> libnccl-net-uroce.so on
# LD_LIBRARY_PATH), once per exported version (v8 .. v12), then sr, ec and
# be on v12. Each run: 4 comms each way, sizes 0 .. 1 GiB (v12 and v8, the
# int-size version; 16 MiB for the others), 8 requests in flight per comm
# in both directions, grouped receives, closes in a shuffled order; every
# byte checked (nccl_p2p.c). v12 runs its engines on threads pinned to
# CPUs 0 and 1 (UROCE_NCCL_CORES), the rest inline. Then what a user who
# gets the environment wrong reads: init refused with the variable, the
# value and what is accepted (no devices, a bad reliability, paths or
# cores, paths on rc, an interface that is not there), and two ranks whose
# reliabilities differ: both fail, the connector naming both.
#   p2p.sh NCCL_P2P PLUGIN_DIR
set -u
. "$(dirname "$0")/../lib/netns.sh"
P2P=${1:?usage: p2p.sh NCCL_P2P PLUGIN_DIR}
PLUGDIR=${2:?usage: p2p.sh NCCL_P2P PLUGIN_DIR}
[ -e "$PLUGDIR/libnccl-net-uroce.so" ] || { echo "FAIL: no libnccl-net-uroce.so in $PLUGDIR"; exit 1; }
netns_test uroce-ncclp2p
NETNS_LOG_LINES=30

netns_add "$NA" "$NB"
netns_veth "$NA" va "$NB" vb --ip-a 10.97.0.1/24 --ip-b 10.97.0.2/24
ip netns exec "$NA" ping -c 2 -i 0.2 -W 2 10.97.0.2 >/dev/null 2>&1 || fail "no IP path across the veth pair"
NCPU=$(nproc)

# run NAME VERSION RELIABILITY MAX CORES [extra]
run() {
	local name=$1 ver=$2 rel=$3 max=$4 cores=$5 d="$TMP/$1" t0=$SECONDS
	shift 5
	mkdir -p "$d"
	local ca=inline cb=inline
	if [ "$cores" = pinned ]; then ca=0; cb=$((NCPU > 1 ? 1 : 0)); fi
	netns_start "$NB" "$d/b.log" env LD_LIBRARY_PATH="$PLUGDIR" UROCE_NCCL_DEVICES=afxdp:vb \
		UROCE_NCCL_RELIABILITY=$rel UROCE_NCCL_CORES=$cb NETP_DEBUG=1 \
		timeout 200 "$P2P" --side b --dir "$d" --plugin uroce --version "$ver" --max-size "$max" --timeout 180 "$@"
	local bpid=$NETNS_PID
	ip netns exec "$NA" env LD_LIBRARY_PATH="$PLUGDIR" UROCE_NCCL_DEVICES=afxdp:va UROCE_NCCL_RELIABILITY=$rel \
		UROCE_NCCL_CORES=$ca NETP_DEBUG=1 \
		timeout 200 "$P2P" --side a --dir "$d" --plugin uroce --version "$ver" --max-size "$max" --timeout 180 "$@" \
		>"$d/a.log" 2>&1
	local arc=$?
	netns_wait $bpid
	local brc=$?
	if [ $arc != 0 ] || [ $brc != 0 ]; then
		echo "--- $name side a (exit $arc)"; grep -v "^    #\|^$" "$d/a.log" | head -n 40
		echo "--- $name side b (exit $brc)"; grep -v "^    #\|^$" "$d/b.log" | head -n 40
		fail "$name: side a exited $arc, side b $brc"
	fi
	grep -q "ncclNetPlugin_v$ver" "$d/a.log" || fail "$name: did not run on ncclNetPlugin_v$ver"
	grep -q 'NET/uroce: device 0' "$d/a.log" || fail "$name: the plugin logged no device line through NCCL's logger"
	printf '%-14s %-4s %-3s %11s %-7s %4ss  pass\n' "$name" "v$ver" "$rel" "$max" "$cores" $((SECONDS - t0))
}

printf '%-14s %-4s %-3s %11s %-7s %5s\n' run version rel max-bytes engine time
UROCE_NCCL_RC_TIMEOUT=18 run v12-rc 12 rc 1073741824 pinned
run v11-rc 11 rc 16777216 inline
run v10-rc 10 rc 16777216 inline
run v9-rc 9 rc 16777216 inline
# inline, an engine runs only inside its process's calls: filling or
# checking 1 GiB takes longer than 8 x 67 ms
UROCE_NCCL_RC_TIMEOUT=18 run v8-rc 8 rc 1073741824 inline
run v12-sr 12 sr 16777216 inline
run v12-ec 12 ec 16777216 inline
# be on a clean link: nothing may be cut
UROCE_NCCL_BE_TIMEOUT_US=2000000 run v12-be 12 be 16777216 inline

# What a user who gets it wrong reads (NCCL's logger, NCCL_DEBUG=WARN).
# bad NAME EXPECTED-TEXT VAR=VALUE...: side a alone, init must fail.
bad() {
	local name=$1 want=$2 out="$TMP/bad-$1.log"
	shift 2
	ip netns exec "$NA" env -u UROCE_NCCL_DEVICES LD_LIBRARY_PATH="$PLUGDIR" "$@" \
		timeout 60 "$P2P" --side a --dir "$TMP/bad" --plugin uroce --timeout 5 >"$out" 2>&1
	local rc=$?
	[ $rc = 1 ] || { cat "$out"; fail "bad $name: exit $rc, want 1"; }
	grep -qF -- "$want" "$out" || { cat "$out"; fail "bad $name: no '$want' in the log"; }
	printf '%-22s refused: %s\n' "$name" "$(grep -F -- "$want" "$out" | head -1 | sed 's/.*NET\/uroce: //' | cut -c1-90)"
}
mkdir -p "$TMP/bad"
bad no-devices "UROCE_NCCL_DEVICES is not set" UROCE_NCCL_RELIABILITY=rc
bad bad-rel "UROCE_NCCL_RELIABILITY=xx: accepted are rc, sr, ec and be" UROCE_NCCL_DEVICES=afxdp:va \
	UROCE_NCCL_RELIABILITY=xx
bad bad-paths "UROCE_NCCL_PATHS=999: not a number in 1..256" UROCE_NCCL_DEVICES=afxdp:va UROCE_NCCL_PATHS=999
bad rc-paths "needs UROCE_NCCL_RELIABILITY sr, ec or be" UROCE_NCCL_DEVICES=afxdp:va UROCE_NCCL_PATHS=4
bad bad-cores "UROCE_NCCL_CORES=x: give 'inline' or up to" UROCE_NCCL_DEVICES=afxdp:va UROCE_NCCL_CORES=x
bad no-iface "device afxdp:nosuch" UROCE_NCCL_DEVICES=afxdp:nosuch
bad hd-not-be "UROCE_NCCL_HADAMARD=256 needs UROCE_NCCL_RELIABILITY=be" UROCE_NCCL_DEVICES=afxdp:va \
	UROCE_NCCL_RELIABILITY=sr UROCE_NCCL_HADAMARD=256
bad hd-block "block 100; accepted a power of two" UROCE_NCCL_DEVICES=afxdp:va UROCE_NCCL_RELIABILITY=be \
	UROCE_NCCL_HADAMARD=100:4
bad hd-form "UROCE_NCCL_HADAMARD=256x: accepted BLOCK or BLOCK:STRIDE" UROCE_NCCL_DEVICES=afxdp:va \
	UROCE_NCCL_RELIABILITY=be UROCE_NCCL_HADAMARD=256x
# pair NAME "B's env" "A's env": side b (listening) and side a (connecting)
# with their own settings; their exit codes in arc and brc, logs in $TMP/NAME
pair() {
	local d="$TMP/$1" benv aenv bpid
	read -r -a benv <<<"$2"
	read -r -a aenv <<<"$3"
	mkdir -p "$d"
	netns_start "$NB" "$d/b.log" env LD_LIBRARY_PATH="$PLUGDIR" UROCE_NCCL_DEVICES=afxdp:vb "${benv[@]}" \
		UROCE_NCCL_CORES=inline timeout 60 "$P2P" --side b --dir "$d" --plugin uroce --timeout 8
	bpid=$NETNS_PID
	ip netns exec "$NA" env LD_LIBRARY_PATH="$PLUGDIR" UROCE_NCCL_DEVICES=afxdp:va "${aenv[@]}" \
		UROCE_NCCL_CORES=inline timeout 60 "$P2P" --side a --dir "$d" --plugin uroce --timeout 8 >"$d/a.log" 2>&1
	arc=$?
	netns_wait $bpid
	brc=$?
}
# two ranks that disagree on the reliability: the connector names both
pair mismatch "UROCE_NCCL_RELIABILITY=rc" "UROCE_NCCL_RELIABILITY=sr"
d="$TMP/mismatch"
[ $arc = 1 ] && [ $brc = 1 ] || fail "reliability mismatch: sides exited $arc and $brc, want 1 and 1"
grep -q "this rank runs reliability sr, the listener rc" "$d/a.log" || { cat "$d/a.log"; fail "mismatch: no message naming both"; }
echo "reliability sr against rc: both sides fail; a says: this rank runs reliability sr, the listener rc"
# two ranks that disagree on the Hadamard coding: the connect fails, naming both
pair hd-mismatch "UROCE_NCCL_RELIABILITY=be UROCE_NCCL_HADAMARD=256:16" "UROCE_NCCL_RELIABILITY=be"
d="$TMP/hd-mismatch"
[ $arc != 0 ] && [ $brc != 0 ] || fail "Hadamard mismatch: sides exited $arc and $brc, want both to fail"
grep -q "UROCE_NCCL_HADAMARD 256:16, the peer 0:0\|UROCE_NCCL_HADAMARD 0:0, the peer 256:16" "$d/a.log" "$d/b.log" ||
	{ cat "$d/a.log" "$d/b.log"; fail "Hadamard mismatch: no message naming both"; }
echo "be coded 256:16 against uncoded: both sides fail; $(grep -ho "this end codes.*" "$d/a.log" "$d/b.log" | head -1)"
echo "all runs passed"
