#!/bin/bash
# SPDX-License-Identifier: MIT
# The examples run as their comments say: each pair of processes in two
# network namespaces joined by a veth pair, over AF_XDP ports. They must
# exit 0 and print what they verified.
#   run_examples.sh RC_WRITE_IMM SR_PINGPONG
set -euo pipefail
WRITE_IMM=${1:?usage: run_examples.sh RC_WRITE_IMM SR_PINGPONG}
SR_PINGPONG=${2:?usage: run_examples.sh RC_WRITE_IMM SR_PINGPONG}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../tests/lib/netns.sh"

netns_test exam
netns_add "$NA" "$NB"
netns_veth "$NA" exa0 "$NB" exb0 --ip-a 10.94.0.1/24 --ip-b 10.94.0.2/24

# run_pair NAME PROG ROLE_A ROLE_B: ROLE_A in NA, ROLE_B in NB, their
# files in a folder of their own; both must exit 0
run_pair() {
	local name=$1 prog=$2 ra=$3 rb=$4 dir=$TMP/$1 a b rc=0
	mkdir "$dir"
	netns_start "$NB" "$TMP/$name-$rb.log" timeout 60 "$prog" "$rb" exb0 "$dir"
	b=$NETNS_PID
	netns_start "$NA" "$TMP/$name-$ra.log" timeout 60 "$prog" "$ra" exa0 "$dir"
	a=$NETNS_PID
	netns_wait "$a" || rc=$?
	[ $rc = 0 ] || { cat "$TMP/$name-$ra.log" "$TMP/$name-$rb.log"; netns_die "$name $ra exited $rc"; }
	netns_wait "$b" || rc=$?
	[ $rc = 0 ] || { cat "$TMP/$name-$ra.log" "$TMP/$name-$rb.log"; netns_die "$name $rb exited $rc"; }
	cat "$TMP/$name-$ra.log" "$TMP/$name-$rb.log"
}

run_pair rc_write_imm "$WRITE_IMM" sender receiver
grep -q 'receiver: 65536 bytes written, immediate 0x600dcafe: verified' "$TMP/rc_write_imm-receiver.log" ||
	netns_die "rc_write_imm: the receiver did not verify the write"
run_pair sr_pingpong "$SR_PINGPONG" client server
for r in client server; do
	grep -q "$r: 200 messages of 4096 bytes echoed and checked" "$TMP/sr_pingpong-$r.log" ||
		netns_die "sr_pingpong: the $r did not check every message"
done
echo "PASS"
