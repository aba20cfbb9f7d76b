#!/bin/bash
# SPDX-License-Identifier: MIT
# QP failover across ports (SHIFT), uroce to uroce: A and B joined by two
# rails, each a bridge in a switch namespace (fo_topo.sh), then by two veth
# pairs and nothing between (fo_topo.sh --direct). fo_xfer streams
# numbered SENDs and WRITE_WITH_IMMs from A to B over one QP whose member
# 0 is rail 1 and member 1 rail 2, and checks every message (exactly once,
# in order, every byte) and every send completion (once, in order,
# successful); the script fails rails while it runs. For rc and for sr:
#   base      no failure: no failover either
#   a-down    rail 1 down at A's side mid-transfer: A fails over (cause link)
#   flap      rail 1 down at A's side for 2 s, then up: A fails back to member 0
#   b-down    rail 1 down at B's side: B sees its link go (cause link), A
#             learns from B's notice or its own timeouts; then back up
#   fb-prim   the primary goes down again while A fails back (fo_xfer
#             downs it the moment A leaves Fallback for WaitSignaled/WaitSinked)
#   fb-back   the backup goes down while A fails back (the same trigger)
#   both      both rails down at A's side for 3 s (under the QP's 10 s
#             down_timeout: nothing may fail), then rail 2 comes back
#   hole      rail 1 forwards nothing, no link state changes: only
#             timeouts find it (cause rto); then it forwards again
# Direct ("direct-" before the case's name), a link set down at either end
# takes the carrier off both: a-down, b-down, flap, fb-prim, fb-back and
# both run there too, and each also checks that both ends saw the link go
# (cause=link at A and at B); base and hole do not (a black hole needs a
# switch, and only a switch fails one side without the other seeing it).
# A case passes when both ends exit 0 (fo_xfer checked every message) and
# the failover counters say what the case expects. rxe cannot follow a
# failover QP (two QP numbers, notices and probes of uroce's own), so the
# peer is uroce.
#   failover.sh FO_XFER [CASES] [RELS] [TOPOS]
# CASES/RELS/TOPOS: space-separated subsets (default all cases, "rc sr",
# "bridged direct"; direct runs those of CASES it can).
# FO_KEEP_LOGS=DIR keeps both ends' logs of every passing case there.
set -u
. "$(dirname "$0")/../lib/netns.sh"
XF=${1:?usage: failover.sh FO_XFER [CASES] [RELS] [TOPOS]}
CASES=${2:-base a-down flap b-down fb-prim fb-back both hole}
RELS=${3:-rc sr}
TOPOS=${4:-bridged direct}
DIRECT_CASES=" a-down flap b-down fb-prim fb-back both "
netns_test uroce-fo
. "$(dirname "$0")/fo_topo.sh"

PIN_A=() PIN_B=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
fi
LIMIT=60 # seconds a run may take (fo_xfer --max-sec); killed 10 s later
STARTED=$SECONDS

# The QP's settings: rc retransmits after 4.096 us x 2^12 = 17 ms, sr's RTO
# floor is 20 ms, and three timeouts in a row fail a member: on a busy
# two-CPU machine a busy-polling end is now and then off its CPU for
# milliseconds, and sr's 200 us floor then times out spuriously (the
# receiver had every packet), which with rto_fail 1 fails the member.
# Probes every 500 us (the default).
COMMON=(--max-sec "$LIMIT" --stall-sec 30 --rc-timeout 12 --rto-min-us 20000 --rto-fail 3 --beat-ms 50)

# run_start NAME REL [fo_xfer sender args]: B receives, A sends until
# $TMP/NAME.stop exists
run_start() {
	local name=$1 rel=$2
	shift 2
	CUR=$TPFX$name-$rel
	SLOG=$TMP/$CUR.send.log RLOG=$TMP/$CUR.recv.log
	: >"$SLOG"
	: >"$RLOG"
	rm -f "$TMP/$CUR.shm" "$TMP/$CUR.stop"
	netns_start "$FO_B" "$RLOG" "${PIN_B[@]}" timeout -k 5 $((LIMIT + 10)) "$XF" --role recv --rel "$rel" \
		--dev afxdp:vb1,afxdp:vb2 --shm "$TMP/$CUR.shm" "${COMMON[@]}"
	RPID=$NETNS_PID
	netns_start "$FO_A" "$SLOG" "${PIN_A[@]}" timeout -k 5 $((LIMIT + 10)) "$XF" --role send --rel "$rel" \
		--dev afxdp:va1,afxdp:va2 --shm "$TMP/$CUR.shm" --stop "$TMP/$CUR.stop" "${COMMON[@]}" "$@"
	SPID=$NETNS_PID
}

# the verdict, then both logs without their periodic "at" lines
fail() {
	local f
	echo "FAIL: $CUR: $*"
	for f in "$SLOG" "$RLOG"; do
		echo "--- $f"
		grep -v ' at msgs=' "$f" | tail -n 60
	done
	exit 1
}

# the last msgs= of a log (0 before the first)
msgs() { sed -n 's/.* msgs=\([0-9]*\).*/\1/p' "$1" | tail -1 | grep . || echo 0; }
# the last value of KEY on an event/at/final line of a log
last_kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | tail -1; }
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

alive() { kill -0 "$SPID" 2>/dev/null && kill -0 "$RPID" 2>/dev/null; }

# wait_msgs LOG N SEC: until LOG's msgs >= N (1 when a process ended or SEC passed)
wait_msgs__ok() { [ "$(msgs "$1")" -ge "$2" ] || { alive || return 2; return 1; }; }
wait_msgs() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		wait_msgs__ok "$1" "$2" && return 0
		[ $? = 2 ] && return 1
		sleep 0.05
	done
	wait_msgs__ok "$1" "$2"
}
# wait_re LOG ERE SEC [FROM]: until a line of LOG (from line FROM on) matches
wait_re() {
	local i from=${4:-1}
	for ((i = 0; i < $3 * 20; i++)); do
		tail -n +"$from" "$1" | grep -Eq "$2" && return 0
		alive || break
		sleep 0.05
	done
	tail -n +"$from" "$1" | grep -Eq "$2"
}
# the number of the next line LOG will get
next_line() { echo $(($(wc -l <"$1") + 1)); }
DEFAULT_RE=' (event|at) .*state=Default active=0 .*failbacks=[1-9]'
# more N SEC: the sender completes N more messages
more() {
	local m
	m=$(msgs "$SLOG")
	wait_msgs "$SLOG" $((m + $1)) "$2" || fail "the transfer did not go on ($(msgs "$SLOG") messages, wanted $((m + $1)) within $2 s)"
}

# run_end: stop the sender, wait for both, check their verdicts; FINAL_S
# and FINAL_R are their final lines
run_end() {
	local src=0 rrc=0
	touch "$TMP/$CUR.stop"
	netns_wait "$SPID" || src=$?
	netns_wait "$RPID" || rrc=$?
	[ $src = 0 ] && [ $rrc = 0 ] || fail "fo_xfer exited: sender $src, receiver $rrc"
	grep -q ']: t=[0-9.]* ok$' "$SLOG" && grep -q ']: t=[0-9.]* ok$' "$RLOG" || fail "no ok line"
	FINAL_S=$(grep ' final ' "$SLOG" | tail -1)
	FINAL_R=$(grep ' final ' "$RLOG" | tail -1)
	[ "$(kv msgs "$FINAL_S")" = "$(kv msgs "$FINAL_R")" ] || fail "the ends disagree on the messages"
}

# expect WHO KEY OP VALUE: a numeric check on the final line of WHO (S or R)
expect() {
	local line v
	if [ "$1" = S ]; then line=$FINAL_S; else line=$FINAL_R; fi
	v=$(kv "$2" "$line")
	[[ $v =~ ^[0-9]+$ ]] && test "$v" "$3" "$4" ||
		fail "$([ "$1" = S ] && echo sender || echo receiver): $2=$v, wanted $3 $4 ($line)"
}
expect_str() { # WHO KEY VALUE
	local line v
	if [ "$1" = S ]; then line=$FINAL_S; else line=$FINAL_R; fi
	v=$(kv "$2" "$line")
	[ "$v" = "$3" ] || fail "$([ "$1" = S ] && echo sender || echo receiver): $2=$v, wanted $3 ($line)"
}

# first_cause S|R CAUSE: the cause on the event line of that end's first failover
first_cause() {
	local log line
	if [ "$1" = S ]; then log=$SLOG; else log=$RLOG; fi
	line=$(grep -m1 ' event .*failovers=1 ' "$log")
	[ "$(kv cause "$line")" = "$2" ] ||
		fail "$([ "$1" = S ] && echo sender || echo receiver): the first failover's cause is not $2: $line"
}

# every rail back as built: links up, forwarding, carriers seen, pings
restore() {
	local r
	for r in 1 2; do
		fo_link $r a up
		fo_link $r b up
		# (a port still without its carrier refuses; the bridge makes it forwarding when the carrier comes)
		[ "$FO_DIRECT" = 1 ] || fo_hole $r off 2>/dev/null
	done
	for r in 1 2; do
		netns_wait_until 10 fo_carrier "$FO_A" va$r && netns_wait_until 10 fo_carrier "$FO_B" vb$r ||
			netns_die "rail $r: no carrier after restoring it"
		netns_wait_until 10 ip netns exec "$FO_A" ping -c 1 -W 1 10.86.$r.2 >/dev/null 2>&1 ||
			netns_die "rail $r: no ping after restoring it"
	done
}

summary() {
	echo "ok: $CUR: $(kv msgs "$FINAL_S") msgs, $(kv secs "$FINAL_S") s; A: failovers=$(kv failovers "$FINAL_S")" \
		"failbacks=$(kv failbacks "$FINAL_S") active=$(kv active "$FINAL_S") state=$(kv state "$FINAL_S")" \
		"cause=$(kv cause "$FINAL_S") rewound=$(kv rewound "$FINAL_S") retx=$(kv retransmits "$FINAL_S");" \
		"B: failovers=$(kv failovers "$FINAL_R") failbacks=$(kv failbacks "$FINAL_R") cause=$(kv cause "$FINAL_R")" \
		"${1:-}"
}

# saw_link S|R: direct, that end saw a member's link go itself (cause=link
# on a line of its log), whatever the other end's notice told it first
saw_link() {
	local log
	[ "$FO_DIRECT" = 1 ] || return 0
	if [ "$1" = S ]; then log=$SLOG; else log=$RLOG; fi
	grep -Eq ' (event|at|final) .* cause=link ' "$log" ||
		fail "$([ "$1" = S ] && echo sender || echo receiver) never saw a link go (no cause=link)"
}

case_base() {
	run_start base "$1"
	wait_msgs "$SLOG" 3000 30 || fail "3000 messages did not complete (at $(msgs "$SLOG"))"
	run_end
	expect S failovers -eq 0
	expect R failovers -eq 0
	expect_str S active 0
	summary
}

case_a-down() {
	run_start a-down "$1"
	wait_msgs "$SLOG" 1000 30 || fail "no traffic before the failure (at $(msgs "$SLOG"))"
	fo_link 1 a down
	wait_re "$SLOG" ' failovers=[1-9]' 10 || fail "A did not fail over within 10 s"
	more 2000 30
	run_end
	expect S failovers -ge 1
	expect_str S active 1
	first_cause S link
	saw_link R
	summary
}

case_flap() {
	local from
	run_start flap "$1"
	wait_msgs "$SLOG" 1000 30 || fail "no traffic before the failure"
	fo_link 1 a down
	sleep 2
	from=$(next_line "$SLOG")
	fo_link 1 a up
	wait_re "$SLOG" "$DEFAULT_RE" 15 "$from" || fail "A did not fail back within 15 s of the link's return"
	more 1000 30
	run_end
	expect S failovers -ge 1
	expect S failbacks -ge 1
	expect_str S active 0
	expect_str S state Default
	saw_link S
	saw_link R
	summary
}

case_b-down() {
	local from
	run_start b-down "$1"
	wait_msgs "$SLOG" 1000 30 || fail "no traffic before the failure"
	fo_link 1 b down
	wait_re "$RLOG" ' event .*up=0x2 ' 10 || fail "B did not see member 0 fail within 10 s"
	wait_re "$SLOG" ' failovers=[1-9]' 10 || fail "A did not fail over within 10 s"
	more 1000 30
	from=$(next_line "$SLOG")
	fo_link 1 b up
	wait_re "$SLOG" "$DEFAULT_RE" 15 "$from" || fail "A did not fail back within 15 s of B's link return"
	more 500 30
	run_end
	expect S failovers -ge 1
	expect S failbacks -ge 1
	expect_str S active 0
	expect_str R active 0
	# B saw its own link go; A learnt it from B's notice (or its own timeouts)
	[ "$(kv cause "$(grep -m1 ' event .*up=0x2 ' "$RLOG")")" = link ] ||
		fail "B's first failure is not its link: $(grep -m1 ' event .*up=0x2 ' "$RLOG")"
	# (direct, A sees its own carrier go too: link, unless B's notice came first)
	case $FO_DIRECT:$(kv cause "$(grep -m1 ' event .*failovers=1 ' "$SLOG")") in
	?:peer | ?:rto | 1:link) ;;
	*) fail "A's first failover has cause $(kv cause "$(grep -m1 ' event .*failovers=1 ' "$SLOG")"), wanted peer or rto" ;;
	esac
	saw_link S
	summary "(A's first failover: $(kv cause "$(grep -m1 ' event .*failovers=1 ' "$SLOG")"))"
}

# fb_back_up: rail 1 back at A until fo_xfer's fault goes off during the
# fail-back. fo_xfer reads the state once a loop turn, and a fail-back that
# finds nothing outstanding passes Fallback -> WaitSignaled -> WaitSinked ->
# Default within one turn (one fo_run), unseen: then rail 1 fails and comes
# back again, three tries in all. FB_TRIES: the tries it took.
fb_back_up() {
	local from i
	for ((FB_TRIES = 1; FB_TRIES <= 3; FB_TRIES++)); do
		from=$(next_line "$SLOG")
		fo_link 1 a up
		for ((i = 0; i < 300; i++)); do
			grep -q ' fault: ' "$SLOG" && return 0
			tail -n +"$from" "$SLOG" | grep -Eq "$DEFAULT_RE" && break
			alive || fail "an end ended while A failed back"
			sleep 0.05
		done
		grep -q ' fault: ' "$SLOG" && return 0
		[ $i -lt 300 ] || fail "A neither started failing back (no WaitSignaled/WaitSinked) nor failed back within 15 s"
		[ $FB_TRIES -lt 3 ] || break
		from=$(next_line "$SLOG")
		fo_link 1 a down
		wait_re "$SLOG" ' (event|at) .*state=Fallback active=1 ' 10 "$from" ||
			fail "A did not fail over again within 10 s (after a fail-back the fault missed)"
		more 200 30
	done
	fail "A failed back $FB_TRIES times, each within one of fo_xfer's loop turns: the fault never went off"
}

# fb NAME REL FAULT_NS:IF RAIL_TO_RESTORE: fail rail 1 at A, bring it back;
# fo_xfer takes FAULT down the moment A starts failing back
case_fb() {
	local name=$1 rel=$2 fault=$3 back=$4 from
	run_start "$name" "$rel" --failback-fault "$fault"
	wait_msgs "$SLOG" 1000 30 || fail "no traffic before the failure"
	fo_link 1 a down
	wait_re "$SLOG" ' failovers=[1-9]' 10 || fail "A did not fail over within 10 s"
	more 500 30
	fb_back_up
	more 1000 30
	# the faulted link returns: A must end on member 0, every message whole
	FB_LINE=$(grep ' fault: ' "$SLOG" | head -1)
	from=$(next_line "$SLOG")
	fo_link "$back" a up
	wait_re "$SLOG" ' (event|at) .*state=Default active=0 ' 15 "$from" ||
		fail "A was not back on member 0 within 15 s of the fault's repair"
	more 500 30
	run_end
	expect S failovers -ge 1
	expect S failbacks -ge 1
	expect_str S active 0
	saw_link R
	summary "(${FB_LINE#*]: }$([ $FB_TRIES = 1 ] || echo ", at fail-back $FB_TRIES"))"
}
case_fb-prim() { case_fb fb-prim "$1" "$(fo_ifspec 1 a)" 1; }
case_fb-back() { case_fb fb-back "$1" "$(fo_ifspec 2 a)" 2; }

case_both() {
	local m0 m1
	run_start both "$1"
	wait_msgs "$SLOG" 1000 30 || fail "no traffic before the failure"
	fo_link 1 a down
	fo_link 2 a down
	sleep 1
	m0=$(msgs "$SLOG")
	sleep 2
	m1=$(msgs "$SLOG")
	alive || fail "an end ended while both rails were down"
	[ "$m1" -le $((m0 + 64)) ] || fail "messages completed with both rails down ($m0 -> $m1)"
	fo_link 2 a up
	more 1000 30
	run_end
	expect S failovers -ge 1
	expect_str S active 1
	saw_link R
	summary "(stalled at $m1 messages for 3 s)"
}

case_hole() {
	local from
	run_start hole "$1"
	wait_msgs "$SLOG" 1000 30 || fail "no traffic before the failure"
	fo_hole 1 on
	wait_re "$SLOG" ' failovers=[1-9]' 10 || fail "A did not fail over within 10 s of the black hole"
	more 1000 30
	from=$(next_line "$SLOG")
	fo_hole 1 off
	wait_re "$SLOG" "$DEFAULT_RE" 15 "$from" || fail "A did not fail back within 15 s of the rail's return"
	more 500 30
	run_end
	expect S failovers -ge 1
	expect S failbacks -ge 1
	expect_str S active 0
	first_cause S rto
	summary
}

for topo in $TOPOS; do
	t1=$SECONDS
	case $topo in
	bridged) fo_topo_build 1500 && TPFX= ;;
	direct) fo_topo_build --direct 1500 && TPFX=direct- ;;
	*) echo "FAIL: topology '$topo', accepted bridged or direct"; exit 1 ;;
	esac
	echo "$topo: $FO_A, $FO_B ($((SECONDS - t1)) s to build)"
	for rel in $RELS; do
		for c in $CASES; do
			[ "$topo" = bridged ] || [[ $DIRECT_CASES == *" $c "* ]] || continue
			t0=$SECONDS
			"case_$c" "$rel"
			restore
			[ -z "${FO_KEEP_LOGS:-}" ] || cp "$TMP/$CUR".*.log "$FO_KEEP_LOGS"/ 2>/dev/null
			rm -f "$TMP/$CUR".*
			echo "   ($((SECONDS - t0)) s)"
		done
	done
done
echo "failover: all passed ($((SECONDS - STARTED)) s)"
