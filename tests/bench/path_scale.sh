#!/bin/bash
# SPDX-License-Identifier: MIT
# The path and QP scale experiment: goodput from 1 to 256 paths, and from 1 to
# 10 000 QPs with sr over 4 paths against rc (flat: one path, no
# controller), uroce-perf write_bw between two namespaces, each against
# its baseline measured in the same run (paths: --paths 1; QPs: rc at the
# same QP count, and the mode's own 1-QP run).
#
#   tests/bench/path_scale.sh --build DIR [--duration SEC] [--reps R]
#       [--paths "1 4 16 64 256"] [--policy p2c] [--qps "1 10 100 1000 10000"]
#       [--qp-paths 4] [--parts "paths qps"] [--topos "veth fabric"]
#       [--queues 1] [--mtu 4200] [--size 65536] [--wait-quiet S]
#       [--plot FILE] [--logs DIR]
#
# Topologies (--topos): veth = A and B on one veth pair; fabric = A and B
# each on a veth pair to namespace F, where one uroce-fabric switches
# RoCEv2 between them (no rate limit: the switch is one more process that
# touches every frame) and F's kernel forwards the TCP exchange; router =
# the same with F a plain Linux router (forwarding, no switch). Every veth
# has --queues RX and TX queues (default 1). The afxdp ports use queue 0:
# a frame an AF_XDP socket sends keeps its queue number across the veth,
# but a frame the kernel forwards (router) goes out on the TX queue of its
# flow's hash, so with 2 queues some of a QP's source ports arrive on
# queue 1, where no socket listens (the kernel takes them). The QP sweep
# runs on the first topology of --topos only.
#
# Paths part: per repetition, --paths N for each N in --paths (sr, policy
# --policy, 64 KiB messages, tx depth 128, messages above the 8 KiB spray
# threshold, so every message is sprayed), in that order; the ratio of
# each run to the repetition's --paths 1 run. QPs part: per repetition and
# QP count, rc then sr --paths --qp-paths, tx depth about 256 WRs in all
# (qp_scale_bw.sh's auto: 128 for 1 QP, max(2, 256 / QPs) beyond; cq_mod
# half of it). Tables: medians over the repetitions of Gbit/s (the
# client's BW average, payload) and of the per-repetition ratios, with
# the client's retransmissions and the RoCEv2 frames that reached B's
# kernel instead of its socket (UDP NoPorts) (medians). --wait-quiet S: before each run
# wait up to S s for the CPUs to be 90% idle over one second (quiet.sh).
# --plot FILE: goodput against paths and QPs (plot_path_scale.py, with
# /usr/bin/python3 and matplotlib). Root; namespaces and processes of its
# own, removed by PID at exit. Exit 1 when a run failed (its cell says
# so), 2 on a bad argument.
set -uo pipefail
. "$(dirname "$0")/bench_lib.sh"

BUILD=
DURATION=3
REPS=3
PATHS_LIST="1 4 16 64 256"
POLICY=p2c
QPS="1 10 100 1000 10000"
QP_PATHS=4
PARTS="paths qps"
TOPOS="veth fabric"
QUEUES=1
MTU=4200
SIZE=65536
QUIET=0
PLOT=
LOGS=
die2() { echo "path_scale.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--duration) DURATION=${2:?--duration needs seconds}; shift 2 ;;
	--reps) REPS=${2:?--reps needs a number}; shift 2 ;;
	--paths) PATHS_LIST=${2:?--paths needs a list}; shift 2 ;;
	--policy) POLICY=${2:?--policy needs a name}; shift 2 ;;
	--qps) QPS=${2:?--qps needs a list}; shift 2 ;;
	--qp-paths) QP_PATHS=${2:?--qp-paths needs a number}; shift 2 ;;
	--parts) PARTS=${2:?--parts needs a list}; shift 2 ;;
	--topos) TOPOS=${2:?--topos needs a list}; shift 2 ;;
	--queues) QUEUES=${2:?--queues needs a number}; shift 2 ;;
	--mtu) MTU=${2:?--mtu needs bytes}; shift 2 ;;
	--size) SIZE=${2:?--size needs bytes}; shift 2 ;;
	--wait-quiet) QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
	--plot) PLOT=${2:?--plot needs a file}; shift 2 ;;
	--logs) LOGS=${2:?--logs needs a directory}; shift 2 ;;
	-h|--help) sed -n '2,36p' "$0"; exit 0 ;;
	*) die2 "unknown option $1 (accepted: --build --duration --reps --paths --policy --qps --qp-paths --parts --topos --queues --mtu --size --wait-quiet --plot --logs)" ;;
	esac
done
[ -n "$BUILD" ] || die2 "--build DIR is required (a release build with apps/uroce-perf and apps/uroce-fabric)"
[ "$(id -u)" = 0 ] || die2 "run as root (namespaces, XDP)"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] && [ "$DURATION" -le 60 ] || die2 "--duration $DURATION: accepted 1..60 s"
[[ $REPS =~ ^[1-9]$ ]] || die2 "--reps $REPS: accepted 1..9"
for n in $PATHS_LIST; do [[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 256 ] || die2 "--paths: '$n' is not 1..256"; done
[[ " $PATHS_LIST " == *" 1 "* ]] || die2 "--paths must include 1 (the baseline)"
for n in $QPS; do [[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 16384 ] || die2 "--qps: '$n' is not 1..16384"; done
[[ " $QPS " == *" 1 "* ]] || die2 "--qps must include 1 (each mode's baseline)"
[[ $QP_PATHS =~ ^[1-9][0-9]*$ ]] && [ "$QP_PATHS" -le 256 ] || die2 "--qp-paths $QP_PATHS: accepted 1..256"
case "$POLICY" in p2c|rr|random|single) ;; *) die2 "--policy $POLICY: accepted p2c, rr, random, single" ;; esac
for p in $PARTS; do case "$p" in paths|qps) ;; *) die2 "--parts: '$p'; accepted paths, qps" ;; esac; done
for t in $TOPOS; do case "$t" in veth|fabric|router) ;; *) die2 "--topos: '$t'; accepted veth, fabric, router" ;; esac; done
[[ $QUEUES =~ ^[1-8]$ ]] || die2 "--queues $QUEUES: accepted 1..8"
[[ $MTU =~ ^[0-9]+$ ]] && [ "$MTU" -ge 1280 ] && [ "$MTU" -le 9000 ] || die2 "--mtu $MTU: accepted 1280..9000"
[[ $SIZE =~ ^[1-9][0-9]*$ ]] || die2 "--size $SIZE: bytes, 1 or more"
[[ $QUIET =~ ^[0-9]+$ ]] || die2 "--wait-quiet $QUIET: seconds"
PERF=$BUILD/apps/uroce-perf
FABRIC=$BUILD/apps/uroce-fabric
[ -x "$PERF" ] || die2 "$PERF is missing (ninja -C $BUILD)"
[[ " $TOPOS " != *" fabric "* ]] || [ -x "$FABRIC" ] || die2 "$FABRIC is missing (ninja -C $BUILD)"
[ -z "$PLOT" ] || { /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || die2 "--plot needs /usr/bin/python3 with matplotlib"; }
[ -z "$LOGS" ] || mkdir -p "$LOGS" || die2 "--logs $LOGS: cannot create it"

SETUP_MAX=120
PERF_TIMEOUT=30
RUN_MAX=$((DURATION + 2 * SETUP_MAX + PERF_TIMEOUT))

. "$(dirname "$0")/quiet.sh"
. "$(dirname "$0")/../lib/netns.sh"
netns_test uroce-pscale
FPID=

# topo_up NAME: the namespaces and links of one topology; sets NA NB IFA IFB IPB
topo_up() {
	case "$1" in
	veth)
		NA=$P-va NB=$P-vb IFA=va IFB=vb IPB=10.98.0.2
		netns_add "$NA" "$NB"
		netns_veth "$NA" va "$NB" vb --ip-a 10.98.0.1/24 --ip-b $IPB/24 --mtu "$MTU" --queues "$QUEUES"
		;;
	router)
		NA=$P-ra NB=$P-rb IFA=a0 IFB=b0 IPB=10.97.2.2
		local NM=$P-rm
		netns_add "$NA" "$NB" "$NM"
		netns_veth "$NA" a0 "$NM" m0 --ip-a 10.97.1.2/24 --ip-b 10.97.1.1/24 --mtu "$MTU" --queues "$QUEUES"
		netns_veth "$NB" b0 "$NM" m1 --ip-a $IPB/24 --ip-b 10.97.2.1/24 --mtu "$MTU" --queues "$QUEUES"
		ip netns exec "$NM" sysctl -qw net.ipv4.ip_forward=1
		ip -n "$NA" route add default via 10.97.1.1 && ip -n "$NB" route add default via 10.97.2.1 ||
			netns_die "cannot route A and B through M"
		;;
	fabric)
		NA=$P-fa NB=$P-fb IFA=a0 IFB=b0 IPB=10.99.2.2
		local NF=$P-ff ma mb f1 f2
		netns_add "$NA" "$NB" "$NF"
		netns_veth "$NA" a0 "$NF" f1 --ip-a 10.99.1.2/24 --ip-b 10.99.1.1/24 --mtu "$MTU" --queues "$QUEUES"
		netns_veth "$NB" b0 "$NF" f2 --ip-a $IPB/24 --ip-b 10.99.2.1/24 --mtu "$MTU" --queues "$QUEUES"
		ip netns exec "$NF" sysctl -qw net.ipv4.ip_forward=1
		ma=$(netns_mac "$NA" a0) mb=$(netns_mac "$NB" b0) f1=$(netns_mac "$NF" f1) f2=$(netns_mac "$NF" f2)
		ip -n "$NA" route add 10.99.0.0/16 via 10.99.1.1 dev a0 &&
			ip -n "$NA" neigh replace 10.99.1.1 lladdr "$f1" dev a0 nud permanent &&
			ip -n "$NB" route add 10.99.0.0/16 via 10.99.2.1 dev b0 &&
			ip -n "$NB" neigh replace 10.99.2.1 lladdr "$f2" dev b0 nud permanent &&
			ip -n "$NF" neigh replace 10.99.1.2 lladdr "$ma" dev f1 nud permanent &&
			ip -n "$NF" neigh replace 10.99.2.2 lladdr "$mb" dev f2 nud permanent ||
			netns_die "cannot route A and B through F"
		netns_start "$NF" "$TMP/fabric.log" timeout $((36 * 3600)) "$FABRIC" --port "f1,peer=$ma" \
			--port "f2,peer=$mb" --route 10.99.1.0/24=0 --route 10.99.2.0/24=1 --seed 1 \
			--stats "$TMP/fabric.json" --ready-file "$TMP/fabric.ready" --max-sec $((36 * 3600))
		FPID=$NETNS_PID
		netns_wait_file "$TMP/fabric.ready" "$FPID" 15 || netns_die "uroce-fabric did not open its ports"
		;;
	esac
	ip netns exec "$NA" ping -c 1 -W 2 $IPB >/dev/null || netns_die "$1: B is not reachable from A"
}

depth_for() { # QPS -> tx_depth (qp_scale_bw.sh's auto)
	if [ "$1" = 1 ]; then echo 128; else local d=$((256 / $1)); echo $((d < 2 ? 2 : d)); fi
}
field() { sed -n "s/.*[ :]$1=\([0-9]*\).*/\1/p" "$2" | tail -1; } # KEY FILE: the last KEY=number

# UDP datagrams B's kernel found no socket for (/proc/net/snmp's Udp
# NoPorts): RoCEv2 frames that reached B's kernel instead of the afxdp
# socket (an RX queue without one)
noports() { ip netns exec "$NB" awk '/^Udp:/ { if (h) print $3; h = 1 }' /proc/net/snmp; }

# run TAG ARGS...: one write_bw (server in NB, client in NA); sets GBPS, RETX, KERN, ST
run() {
	local tag=$1 srv cli spid cpid np0
	shift
	srv=$TMP/$tag.srv.log cli=$TMP/$tag.cli.log
	wait_quiet
	np0=$(noports)
	netns_start "$NB" "$srv" timeout -k 5 "$RUN_MAX" "$PERF" "$@" -d "afxdp:$IFB"
	spid=$NETNS_PID
	ST=ok
	if netns_wait_tcp "$NB" 18515 "$spid" "$SETUP_MAX"; then
		netns_start "$NA" "$cli" timeout -k 5 "$RUN_MAX" "$PERF" "$@" -d "afxdp:$IFA" "$IPB"
		cpid=$NETNS_PID
		netns_wait "$cpid" || ST="client-exit-$?"
	else
		ST=server-not-listening
	fi
	netns_wait "$spid" || { [ "$ST" != ok ] || ST="server-exit-$?"; }
	GBPS=$(awk -v s="$SIZE" '$1==s && NF>=5 {print $4}' "$cli" 2>/dev/null | tail -1)
	RETX=$(field retransmits "$cli" 2>/dev/null)
	[ -n "$GBPS" ] || { [ "$ST" != ok ] || ST=no-result; GBPS=-; }
	RETX=${RETX:--}
	KERN=$(($(noports) - np0))
	[ -z "$LOGS" ] || cp "$srv" "$cli" "$LOGS"/ 2>/dev/null
	if [ "$ST" != ok ]; then
		FAILED=1
		echo "path_scale.sh: $tag: $ST" >&2
		tail -n 5 "$cli" "$srv" 2>/dev/null | sed 's/^/   /' >&2
	fi
	printf '   %-28s %8s Gbit/s  retx %-8s to B'"'"'s kernel %-6s %s\n' "$tag" "$GBPS" "$RETX" "$KERN" "$ST"
	sleep 1 # the AF_XDP sockets go with the processes
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.3f", a / b }'; }
median() { # values (some "-") -> the median of the numbers, or -
	printf '%s\n' "$@" | grep -v '^-$' | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-";
		else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A G X K
FAILED=0
START=$SECONDS
echo "== path_scale: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r), $(nproc) CPUs, $(bench_commit)," \
	"build $BUILD; write_bw ${SIZE} B, ${DURATION} s a run, $REPS repetition(s), link MTU $MTU, $QUEUES queue(s) per veth"
echo "   before the run: load average $(cut -d' ' -f1-3 /proc/loadavg)"
first=1
for topo in $TOPOS; do
	topo_up "$topo"
	if [[ " $PARTS " == *" paths "* ]]; then
		for rep in $(seq 1 "$REPS"); do
			for n in $PATHS_LIST; do
				run "paths.$topo.$n.r$rep" write_bw -x 1 -s "$SIZE" -m 4096 -D "$DURATION" --report_gbits \
					--timeout "$PERF_TIMEOUT" --counters --reliability sr --paths "$n" --path-policy "$POLICY"
				G[paths.$topo.$n.$rep]=$GBPS X[paths.$topo.$n.$rep]=$RETX K[paths.$topo.$n.$rep]=$KERN
			done
		done
	fi
	if [ $first = 1 ] && [[ " $PARTS " == *" qps "* ]]; then
		QTOPO=$topo
		for rep in $(seq 1 "$REPS"); do
			for n in $QPS; do
				txd=$(depth_for "$n")
				cqm=$((txd <= 2 ? 1 : txd / 2))
				for mode in rc sr; do
					args=(write_bw -x 1 -s "$SIZE" -m 4096 -q "$n" -D "$DURATION" --report_gbits -t "$txd" -Q "$cqm"
						--timeout "$PERF_TIMEOUT" --counters)
					[ $mode = rc ] || args+=(--reliability sr --paths "$QP_PATHS" --path-policy "$POLICY")
					run "qps.$mode.$n.r$rep" "${args[@]}"
					G[qps.$mode.$n.$rep]=$GBPS X[qps.$mode.$n.$rep]=$RETX
				done
			done
		done
	fi
	first=0
	if [ -n "$FPID" ]; then
		cp "$TMP/fabric.json" "$TMP/fabric-final.json" 2>/dev/null
		netns_stop "$FPID" >/dev/null 2>&1
		FPID=
	fi
done

PLOTDATA=$TMP/plot.txt
: >"$PLOTDATA"
if [[ " $PARTS " == *" paths "* ]]; then
	echo
	echo "== goodput against paths: sr --paths N --path-policy $POLICY, write_bw $SIZE B, against --paths 1 of the same repetition (medians of $REPS)"
	echo "| topology | paths | Gbit/s | / 1 path | retx | frames to B's kernel | Gbit/s per repetition |"
	echo "|---|---|---|---|---|---|---|"
	for topo in $TOPOS; do
		for n in $PATHS_LIST; do
			gs=() rs=() xs=() ks=()
			for rep in $(seq 1 "$REPS"); do
				gs+=("${G[paths.$topo.$n.$rep]:--}")
				rs+=("$(ratio "${G[paths.$topo.$n.$rep]:--}" "${G[paths.$topo.1.$rep]:--}")")
				xs+=("${X[paths.$topo.$n.$rep]:--}")
				ks+=("${K[paths.$topo.$n.$rep]:--}")
			done
			gm=$(median "${gs[@]}") rm=$(median "${rs[@]}")
			echo "| $topo | $n | $gm | $rm | $(median "${xs[@]}") | $(median "${ks[@]}") | ${gs[*]} |"
			echo "paths $topo $n $gm $rm" >>"$PLOTDATA"
		done
	done
fi
if [[ " $PARTS " == *" qps "* ]]; then
	echo
	echo "== goodput against QPs ($QTOPO): rc (flat) and sr --paths $QP_PATHS, write_bw $SIZE B, ~256 WRs posted in all (medians of $REPS)"
	echo "| QPs | tx_depth | rc Gbit/s | rc / 1 QP | sr x$QP_PATHS Gbit/s | sr / 1 QP | sr / rc | rc retx | sr retx |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for n in $QPS; do
		gr=() gs=() r1=() s1=() sr=() xr=() xs=()
		for rep in $(seq 1 "$REPS"); do
			a=${G[qps.rc.$n.$rep]:--} b=${G[qps.sr.$n.$rep]:--}
			gr+=("$a") gs+=("$b")
			r1+=("$(ratio "$a" "${G[qps.rc.1.$rep]:--}")") s1+=("$(ratio "$b" "${G[qps.sr.1.$rep]:--}")")
			sr+=("$(ratio "$b" "$a")")
			xr+=("${X[qps.rc.$n.$rep]:--}") xs+=("${X[qps.sr.$n.$rep]:--}")
		done
		echo "| $n | $(depth_for "$n") | $(median "${gr[@]}") | $(median "${r1[@]}") | $(median "${gs[@]}") |" \
			"$(median "${s1[@]}") | $(median "${sr[@]}") | $(median "${xr[@]}") | $(median "${xs[@]}") |"
		echo "qps rc $n $(median "${gr[@]}") $(median "${r1[@]}")" >>"$PLOTDATA"
		echo "qps sr $n $(median "${gs[@]}") $(median "${s1[@]}")" >>"$PLOTDATA"
	done
fi
echo "   ($((SECONDS - START)) s; load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "$PLOT" ]; then
	/usr/bin/python3 "$(dirname "$0")/plot_path_scale.py" --data "$PLOTDATA" --qp-paths "$QP_PATHS" --out "$PLOT" ||
		echo "path_scale.sh: the plot failed" >&2
fi
exit $FAILED
