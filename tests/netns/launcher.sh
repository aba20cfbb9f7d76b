#!/bin/bash
# SPDX-License-Identifier: MIT
# uroce, the launcher, driven as an operator drives it. Two hosts joined by
# two veth pairs (fo_topo.sh --direct: A va1/va2, B vb1/vb2), afxdp ports.
#
#  1. interactive: tmux types into a launcher's prompt in A and reads the
#     screen, against a launcher in B run from a --cmdline-file with
#     --json: help and tab completion, bad commands answered with their
#     usage (the prompt stays), an rc QP with a backup created, connected
#     (perftest's exchange), a capture started, traffic started (the live
#     status line drawn), port stop 0 and the failover seen in show qp,
#     port start 0 and the failback, stop with its summary; B's JSON says
#     every slot written arrived intact; uroce-pcap checks the capture.
#  2. the same steps as a --cmdline-file script with --json, parsed: an rc
#     QP with a backup and an sr QP of 4 paths, SEND traffic checked
#     message by message at B, --stats-period printing JSON at B.
#  3. a script against uroce-perf write_bw as the server (perftest's flow:
#     it prints the launcher's numbers and exits 0).
#  4. loop ports in one launcher: set loss on an sr QP, the data still whole.
#  5. bad command lines: exit 2 with what is wrong and what is accepted.
# No rate is asserted.
#   launcher.sh UROCE UROCE_PCAP UROCE_PERF
set -u
. "$(dirname "$0")/../lib/netns.sh"
. "$(dirname "$0")/fo_topo.sh"
LAUNCHER=${1:?usage: launcher.sh UROCE UROCE_PCAP UROCE_PERF}
PCAP=${2:?}
PERF=${3:?}
netns_test uroce-ln
netns_need_cmd tmux tmux
NETNS_LOG_LINES=60
TCP1=$((20000 + $$ % 10000))
TCP2=$((TCP1 + 1))

# ---- 5. the command line ----
netns_usage_error "-l CORES is required" "$LAUNCHER" -p loop:0
netns_usage_error "is not a core list" "$LAUNCHER" -l x -p loop:0
netns_usage_error "accepted: afxdp" "$LAUNCHER" -l 0 -p bogus:1
netns_usage_error "is not a number of seconds in 0.1..3600" "$LAUNCHER" -l 0 -p loop:0 --stats-period 0
netns_usage_error "unknown option" "$LAUNCHER" -l 0 -p loop:0 --frobnicate
netns_usage_error "goes with --cmdline-file" "$LAUNCHER" -l 0 -p loop:0,loop:1 --no-interactive
echo "ok: bad command lines exit 2 with a message"

# jget FILE PY-EXPR: evaluate EXPR over the JSON lines of FILE (list J)
jget() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
J = []
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith('{'):
        J.append(json.loads(line))
print(eval(" ".join(sys.argv[2].split())))
EOF
}

# ---- 4. loop ports, one launcher ----
cat >"$TMP/loop.txt" <<EOF
create qp sr port 0 paths 4 policy rr
create qp sr port 1
set traffic send size 8192 depth 16 verify on
connect qp 0 local 1
set loss 0 3
start
sleep 1
stop
show qp 0
quit
EOF
timeout 60 "$LAUNCHER" -l 0 -p loop:0,loop:1 --cmdline-file "$TMP/loop.txt" --no-interactive --json \
	>"$TMP/loop.log" 2>&1 || fail "loop: the launcher exited $?"
[ "$(jget "$TMP/loop.log" "[e for e in J if e.get('event')=='stop'][0]['completed'] > 0")" = True ] ||
	fail "loop: nothing completed"
[ "$(jget "$TMP/loop.log" "[e for e in J if e.get('event')=='stop'][0]['retransmits'] > 0")" = True ] ||
	fail "loop: 3% loss and no retransmission"
[ "$(jget "$TMP/loop.log" "[(e['verified'], e['bad']) for e in J if e.get('event')=='peer_done'][0]")" != "" ] ||
	fail "loop: no receiver report"
[ "$(jget "$TMP/loop.log" "[e for e in J if e.get('event')=='peer_done'][0]['bad'] == 0 and
	[e for e in J if e.get('event')=='peer_done'][0]['verified'] == [e for e in J if e.get('event')=='stop'][0]['completed']")" = True ] ||
	fail "loop: not every message arrived intact"
echo "ok: loop ports, sr with 3% loss: every message checked at the receiver"

fo_topo_build --direct
A=$FO_A B=$FO_B

# start_b LOG SCRIPT [args]: the launcher in B from a script
start_b() {
	local log=$1 script=$2
	shift 2
	netns_start "$B" "$log" env HOME="$TMP" timeout 150 "$LAUNCHER" -l 1 -p afxdp:vb1,afxdp:vb2 \
		--cmdline-file "$script" --no-interactive --json "$@"
	BPID=$NETNS_PID
}

# ---- 1. interactive, through tmux ----
TM=(tmux -L "uroce-ln-$$" -f /dev/null)
NETNS_ON_EXIT='tm_cleanup'
TMPID=''
tm_cleanup() {
	[ -n "$TMPID" ] && kill "$TMPID" 2>/dev/null
	"${TM[@]}" kill-server 2>/dev/null
	true
}
screen() { "${TM[@]}" capture-pane -p -J -t ui -S -5000; }
# wait_screen REGEX [SEC]: until the screen shows it
wait_screen() {
	local end=$((SECONDS + ${2:-20}))
	while [ $SECONDS -lt $end ]; do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.2
	done
	return 1
}
type_line() {
	"${TM[@]}" send-keys -t ui -l -- "$1"
	"${TM[@]}" send-keys -t ui Enter
}
# expect LINE REGEX [SEC]: type LINE, then the screen must show REGEX
expect() {
	type_line "$1"
	wait_screen "$2" "${3:-20}" || { screen | tail -40; fail "after '$1' the screen never showed /$2/"; }
}

# show_qp_until REGEX: type show qp 0 every half second until the screen
# shows REGEX (20 s)
show_qp_until() {
	for _ in $(seq 40); do
		type_line "show qp 0"
		sleep 0.5
		screen | grep -Eq -- "$1" && return 0
	done
	return 1
}

cat >"$TMP/b1.txt" <<EOF
create qp rc port 0 backup 1
set traffic write size 65536 depth 16
accept qp 0 tcp-port $TCP1 timeout 60
wait qp 0 timeout 120
show qp 0
quit
EOF
start_b "$TMP/b1.log" "$TMP/b1.txt"
netns_wait_tcp "$B" $TCP1 $BPID 30 || fail "B's launcher never listened"

"${TM[@]}" new-session -d -s ui -x 200 -y 50 \
	"ip netns exec $A env HOME=$TMP $LAUNCHER -l 0 -p afxdp:va1,afxdp:va2 -i; echo LAUNCHER-EXITED-\$?; sleep 120" ||
	fail "tmux cannot start"
TMPID=$("${TM[@]}" display-message -p -t ui '#{pid}')
wait_screen '^uroce> ' 30 || { screen; fail "no prompt"; }
expect "help create qp" "usage: create qp rc\|uc\|ud\|sr\|ec\|be"
# tab completion: "sho" + Tab becomes "show ", "show po" + Tab "show port "
"${TM[@]}" send-keys -t ui -l "sho"
"${TM[@]}" send-keys -t ui Tab
"${TM[@]}" send-keys -t ui -l "po"
"${TM[@]}" send-keys -t ui Tab
"${TM[@]}" send-keys -t ui -l "info 0"
"${TM[@]}" send-keys -t ui Enter
wait_screen "uroce> show port info 0" 10 || { screen | tail; fail "tab did not complete 'sho' and 'po'"; }
wait_screen "Infos for port 0" 10 || fail "show port info 0 (completed) gave no port"
wait_screen "XDP: native" 5 || fail "show port info names no XDP mode"
expect "bogus" "unknown command 'bogus': type help"
expect "create qp zz" "'zz' is not a QP kind"
wait_screen "usage: create qp" 5 || fail "a bad create qp printed no usage"
expect "show port info 7" "'7' is not a port: ports are 0..1"
expect "set traffic write size 0" "size '0' is not a number of bytes"
expect "create qp rc paths 4" "paths, policy and cc are for sr, ec and be QPs"
expect "show engine" "engine 0: core 0, 2 port\(s\), loops"
echo "ok: help, completion, bad commands answered with usage, the prompt still up"

expect "create qp rc port 0 backup 1" "QP 0 created: rc on port 0, backup port afxdp:va2"
expect "set traffic write size 65536 depth 16" "traffic: write, 65536 B, 16 in flight"
expect "connect qp 0 10.86.1.2 tcp-port $TCP1 timeout 30" "QP 0 connected to 10.86.1.2"
expect "pcap start 0 $TMP/ui.pcap" "port 0: capturing to"
expect "start" "traffic started: write 65536 B x 16 on 1 QP"
wait_screen '\[write 65536 B x 16, 1 QP\(s\)\] [0-9.]+ MB/s' 15 || { screen | tail; fail "no live status line"; }
expect "show qp 0" "Failover: state Default, active member 0"
expect "port stop 0" "port 0 \(afxdp:va1\): link down"
show_qp_until "Failover: state Fallback, active member 1 \(backup\).*failovers 1" ||
	{ screen | tail -30; fail "port stop 0: no failover seen in show qp"; }
echo "ok: port stop 0, the QP failed over (show qp: Fallback on member 1)"
expect "port start 0" "port 0 \(afxdp:va1\): link up"
show_qp_until "Failover: state Default, active member 0 \(primary\).*failbacks 1" ||
	{ screen | tail -30; fail "port start 0: no failback seen in show qp"; }
echo "ok: port start 0, the QP failed back"
expect "stop" "Forward statistics for QP 0 \(write 65536 B x 16 to 10.86.1.2"
wait_screen "Errors: 0" 5 || { screen | tail -20; fail "the run had errors"; }
wait_screen "run closed with 10.86.1.2" 20 || { screen | tail -20; fail "the run did not close with the peer"; }
expect "pcap stop 0" "capture $TMP/ui.pcap closed: [1-9][0-9]* frames"
expect "show port stats all" "NIC statistics for port 1"
type_line "quit"
wait_screen "LAUNCHER-EXITED-0" 30 || { screen | tail -20; fail "quit did not exit 0"; }
screen >"$TMP/ui-screen.txt"
# the operator's screen, kept when asked (docs/launcher.md's transcript comes from it)
[ -n "${UROCE_LAUNCHER_SCREEN:-}" ] && cp "$TMP/ui-screen.txt" "$UROCE_LAUNCHER_SCREEN"
netns_wait $BPID || fail "B's launcher exited $?"
[ -n "${UROCE_LAUNCHER_SCREEN:-}" ] && cp "$TMP/b1.log" "$UROCE_LAUNCHER_SCREEN.peer"
[ "$(jget "$TMP/b1.log" "[e for e in J if e.get('event')=='peer_done'][0]['verified'] > 0")" = True ] ||
	fail "B: no slot written was checked"
[ "$(jget "$TMP/b1.log" "[e for e in J if e.get('event')=='peer_done'][0]['bad']")" = 0 ] ||
	fail "B: written data arrived damaged"
[ "$(jget "$TMP/b1.log" "[e for e in J if 'failover' in e][0]['failover']['failovers'] >= 1")" = True ] ||
	fail "B: its QP saw no failover"
"$PCAP" --quiet "$TMP/ui.pcap" >"$TMP/ui-pcap.txt" 2>&1 || { cat "$TMP/ui-pcap.txt"; fail "uroce-pcap found bad packets"; }
grep -Eq "[1-9][0-9]* RoCEv2 \([1-9][0-9]* good, 0 bad ICRC, 0 malformed\)" "$TMP/ui-pcap.txt" ||
	{ cat "$TMP/ui-pcap.txt"; fail "the capture holds no good RoCEv2 packet"; }
echo "ok: interactive run: data checked at B, B failed over too, the capture read by uroce-pcap"

# ---- 2. the same as scripts, --json parsed ----
cat >"$TMP/b2.txt" <<EOF
create qp rc port 0 backup 1
create qp sr port 1
set traffic send size 16384 depth 16
accept qp 0 tcp-port $TCP1 timeout 60
accept qp 1 tcp-port $TCP2 timeout 60
wait qp all timeout 120
show qp all
quit
EOF
cat >"$TMP/a2.txt" <<EOF
create qp rc port 0 backup 1
create qp sr port 1 paths 4 policy rr cc swift
set traffic send size 16384 depth 16
connect qp 0 10.86.1.2 tcp-port $TCP1 timeout 30
connect qp 1 10.86.2.2 tcp-port $TCP2 timeout 30
pcap start 1 $TMP/a2.pcap max 500
start
sleep 1
port stop 0
sleep 1
show qp 0
port start 0
sleep 1
stop
pcap stop 1
show stats json
quit
EOF
start_b "$TMP/b2.log" "$TMP/b2.txt" --stats-period 0.5
netns_wait_tcp "$B" $TCP1 $BPID 30 || fail "B's launcher never listened (script)"
ip netns exec "$A" env HOME="$TMP" timeout 120 "$LAUNCHER" -l 0 -p afxdp:va1,afxdp:va2 --cmdline-file "$TMP/a2.txt" \
	--no-interactive --json >"$TMP/a2.log" 2>&1 || fail "A's script exited $?"
netns_wait $BPID || fail "B's launcher exited $? (script)"
for q in 0 1; do
	[ "$(jget "$TMP/a2.log" "[e for e in J if e.get('event')=='stop' and e['qp']==$q][0]['errors']")" = 0 ] ||
		fail "script: QP $q had errors"
	[ "$(jget "$TMP/b2.log" "[e for e in J if e.get('event')=='peer_done' and e['qp']==$q][0]['verified'] ==
		[e for e in J if e.get('event')=='peer_done' and e['qp']==$q][0]['recv_msgs'] > 0")" = True ] ||
		fail "script: QP $q's messages were not all checked at B"
	[ "$(jget "$TMP/b2.log" "[e for e in J if e.get('event')=='peer_done' and e['qp']==$q][0]['bad']")" = 0 ] ||
		fail "script: QP $q's messages arrived damaged"
done
[ "$(jget "$TMP/a2.log" "[e for e in J if e.get('qp')==0 and 'failover' in e][0]['failover']['failovers'] >= 1")" = True ] ||
	fail "script: port stop 0 and no failover in show qp"
[ "$(jget "$TMP/a2.log" "len([e for e in J if 'engines' in e][0]['qps'])")" = 2 ] || fail "script: show stats json lacks a QP"
[ "$(jget "$TMP/b2.log" "len([e for e in J if 'ports' in e and 'time' in e]) >= 2")" = True ] ||
	fail "script: --stats-period printed no statistics"
grep -q "closed: 500 frames" "$TMP/a2.log" || fail "script: pcap max 500 did not bound the capture"
grep -q "NOT written" "$TMP/a2.log" || fail "script: frames past the bound were not reported"
"$PCAP" --quiet "$TMP/a2.pcap" >/dev/null 2>&1 || fail "script: uroce-pcap rejected the capture"
echo "ok: the same as scripts: rc with a backup and sr over 4 paths, SENDs checked at B, JSON parsed"

# ---- 3. against uroce-perf (perftest's server) ----
cat >"$TMP/a3.txt" <<EOF
create qp rc port 0
set traffic write size 65536 depth 16 verify off
connect qp 0 10.86.1.2 tcp-port $TCP1 timeout 30
start
sleep 1
stop
quit
EOF
netns_start "$B" "$TMP/perf.log" timeout 90 "$PERF" write_bw -d afxdp:vb1 -x 1 -s 65536 -p $TCP1 --timeout 30 -F
ppid=$NETNS_PID
netns_wait_tcp "$B" $TCP1 $ppid 30 || fail "uroce-perf never listened"
ip netns exec "$A" env HOME="$TMP" timeout 90 "$LAUNCHER" -l 0 -p afxdp:va1,afxdp:va2 --cmdline-file "$TMP/a3.txt" \
	--no-interactive >"$TMP/a3.log" 2>&1 || fail "A against uroce-perf exited $?"
netns_wait $ppid || fail "uroce-perf exited $?"
grep -Eq "^ 65536 +[1-9][0-9]* +[0-9.]+ +[0-9.]+" "$TMP/perf.log" || fail "uroce-perf printed no row for the launcher's run"
grep -q "Errors: 0" "$TMP/a3.log" || fail "against uroce-perf: errors"
echo "ok: a launcher script against uroce-perf write_bw (perftest's exchange and ending)"
echo PASS
