#!/bin/bash
# SPDX-License-Identifier: MIT
# Failover between two RDMA devices: two Soft-RoCE guests (srv, cli), each
# with two virtio NICs and an rxe device on each (rxe0 on eth0, rxe1 on
# eth1, two bridges). verbs_fo streams checked messages (SENDs and
# WRITE_WITH_IMMs in turn) from cli to srv over one sr QP whose member 0
# is port 1 (verbs:rxe0) and member 1 port 2 (verbs:rxe1), and a NIC is
# taken down mid-transfer, then brought back:
#   sender     cli's eth0 goes down: its rxe0 reports PORT_ERR, cli fails
#              over to rxe1 and tells srv; eth0 comes back, a probe is
#              answered and cli fails back to rxe0;
#   receiver   srv's eth0 goes down: srv fails member 0 and its notice
#              (on member 1) moves cli over; then back;
#   refusals   an rc QP (the NIC's own) with backups, failover over an RC
#              pool, a QP on port 2, a backup on port 1 or without the
#              peer's numbers behind it, numbers of a port the QP has none
#              on: each refused with a message saying what is accepted.
# Each case: every message arrives once, in order, with its bytes (the
# receiver checks), every WR completes once, in order (the sender
# checks), and the sender's failover count and failback count are >= 1.
#
#   verbs_failover.sh VMLAB_SH VERBS_FO_BIN
set -euo pipefail

. "$(dirname "$0")/vm_preamble.sh"
vm_need_root
[ $# -ge 2 ] || { echo "usage: $0 VMLAB_SH VERBS_FO_BIN" >&2; exit 2; }
VMLAB=$1 FO=$2
[ -x "$FO" ] || { echo "FAIL: $FO not found" >&2; exit 1; }

vm_lab_vars uvvfo uvf0 verbs-fo
export UROCE_VMLAB_SUBNET2=${UROCE_VMLAB_SUBNET2:-10.47.1}
SRV_IP2=$UROCE_VMLAB_SUBNET2.11
CLI_IP2=$UROCE_VMLAB_SUBNET2.12
N=2000

vm_case_traps
"$VMLAB" setup
"$VMLAB" up
"$VMLAB" boot srv "$SRV_IP" "$SRV_IP2"
touch "$WORK/booted"
"$VMLAB" boot cli "$CLI_IP" "$CLI_IP2" >/dev/null
vm_put_uroce srv "$FO"
vm_put_uroce cli "$FO"
U="$vm_uroce_env /tmp/u/verbs_fo -d verbs:rxe0,verbs:rxe1 -n $N --max-msg 4096 --pace-us 5000 --max-sec 240 --rto-min-us 50000"

# until the output of JOB in GUEST has a line matching PATTERN (egrep), at
# most S seconds, and not once it failed
wait_out() {
	local guest=$1 job=$2 pat=$3 s=$4 i
	for i in $(seq $((s * 5))); do
		"$VMLAB" output "$guest" "$job" >"$WORK/peek" 2>/dev/null || true
		grep -Eq "$pat" "$WORK/peek" && return 0
		! grep -q 'FAIL' "$WORK/peek" || return 1
		sleep 0.2
	done
	return 1
}

# link GUEST IFACE up|down
link() { "$VMLAB" exec "$1" --timeout 20 "/usr/sbin/ip link set $2 $3"; }

# fo_case DOWN_GUEST: the stream, DOWN_GUEST's eth0 down and up again mid-way
fo_case() {
	local down=$1 rj sj src=0 crc=0
	echo "=== $CASE"
	rj=$("$VMLAB" start srv "$U --role recv")
	wait_listening_in srv 18600 || fail "receiver never listened: $("$VMLAB" output srv "$rj")"
	sj=$("$VMLAB" start cli "$U --role send --peer $SRV_IP")
	wait_out srv "$rj" 'at msgs=([3-9][0-9][0-9]|[0-9]{4})' 120 ||
		fail "the stream never reached 300 messages: $("$VMLAB" output srv "$rj" | tail -5)"
	echo "  $down: eth0 down"
	link "$down" eth0 down
	wait_out cli "$sj" 'failovers=[1-9]' 60 || fail "the sender never failed over: $("$VMLAB" output cli "$sj" | tail -5)"
	sleep 2
	echo "  $down: eth0 up"
	link "$down" eth0 up
	wait_out cli "$sj" 'failbacks=[1-9]' 60 || fail "the sender never failed back: $("$VMLAB" output cli "$sj" | tail -5)"
	"$VMLAB" wait cli "$sj" --timeout 240 >"$WORK/cli.out" 2>&1 || crc=$?
	"$VMLAB" wait srv "$rj" --timeout 60 >"$WORK/srv.out" 2>&1 || src=$?
	grep -E 'connected|event|final|ok|FAIL' "$WORK/srv.out" | sed 's/^/  srv: /'
	grep -E 'connected|event|final|ok|FAIL' "$WORK/cli.out" | sed 's/^/  cli: /'
	[ $src = 0 ] && [ $crc = 0 ] || fail "srv exit $src, cli exit $crc"
	# rxe stamps no completions: arrival times are the engine's clock
	grep -q 'arrival times: engine clock, engine clock' "$WORK/srv.out" || fail "rxe's completions said to be stamped"
	grep -q "final msgs=$N " "$WORK/srv.out" && grep -q 'verbs_fo\[recv\]: ok' "$WORK/srv.out" ||
		fail "the receiver did not check all $N messages"
	grep -Eq "final msgs=$N .*failovers=[1-9][0-9]* failbacks=[1-9]" "$WORK/cli.out" ||
		fail "the sender's final line lacks $N messages, a failover and a failback"
	PASSED=$((PASSED + 1))
}

CASE="refusals: what a verbs context refuses about failover, each with what it accepts"
echo "=== $CASE"
"$VMLAB" exec srv --timeout 60 "$U --role refusals" >"$WORK/ref.out" 2>&1 || { cat "$WORK/ref.out"; fail "a refusal is missing or says the wrong thing"; }
sed 's/^/  srv: /' "$WORK/ref.out"
grep -q 'verbs_fo\[refusals\]: ok' "$WORK/ref.out" || fail "no ok"
PASSED=$((PASSED + 1))

CASE="sender's NIC down: cli fails over rxe0 -> rxe1 and back, all $N messages once, in order"
fo_case cli
CASE="receiver's NIC down: srv's notice moves cli to rxe1, and back, all $N messages once, in order"
fo_case srv

echo "verbs_failover: $PASSED cases passed"
