#!/bin/bash
# SPDX-License-Identifier: MIT
# The transport's own cost per packet (tests/bench/path_cost.c: one RC QP
# pair on the loop fabric, both ends driven by one thread, a perfect wire),
# over a matrix of cases, as a markdown table of ns per data packet and per
# message (median of --reps runs).
#
#   tests/bench/path_cost.sh [--build DIR] [--reps N] [--rel LIST] [--cases LIST]
#                            [--pkts N] [--callgrind] [--cg-build DIR] [--cg-pkts N]
#                            [--out DIR] [-- path_cost options...]
#
#   --build DIR   meson build directory holding tests/bench/path_cost (default build)
#   --reps N      runs per case; the table shows the run of median wall time (default 3)
#   --rel LIST    reliabilities, of rc, sr, ec (default rc,sr)
#   --cases LIST  MODE:SIZE items, MODE of write, send, write_imm, SIZE in bytes or with
#                 K/M (default write:64,write:4K,write:64K,send:64K)
#   --pkts N      data packets per timed run, about; msgs = N / packets per message
#                 (default 500000)
#   --callgrind   also run each case once under valgrind --tool=callgrind (only the
#                 timed loop is collected) and print instructions per data packet for
#                 each step of the path, exclusive and inclusive, with the symbols no
#                 step claims
#   --cg-build DIR  build for the callgrind runs (default --build's). One with debug info
#                 attributes by source line, so inlined functions count where they are
#                 written: meson setup build-pcg --buildtype=release -Dc_args=-g (-g does
#                 not change the code)
#   --cg-pkts N   data packets of a callgrind run (default 20000)
#   --out DIR     keep the callgrind files there (default a temporary directory)
#   after --:     passed to every path_cost run (e.g. --depth 16 --mtu 1024 --signal 1)
#
# ns depend on the machine and on what else runs on it; the instruction
# counts of --callgrind are deterministic (same build, same arguments, same
# counts) but are instructions, not ns: a 4 KiB memcpy is ~400 vector
# instructions of 32 bytes, ISA-L's CRC of 4 KiB ~3200 (carry-less multiplies).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=build
REPS=3
RELS=rc,sr
CASES=write:64,write:4K,write:64K,send:64K
PKTS=500000
CG=0
CG_PKTS=20000
CG_BUILD=
OUT=
EXTRA=()

die() { echo "path_cost.sh: $*" >&2; exit 2; }
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: '$2' is not a positive integer"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--build) [ $# -ge 2 ] || die "--build needs a directory"; BUILD=$2; shift 2 ;;
	--reps) [ $# -ge 2 ] || die "--reps needs a number"; posint --reps "$2"; REPS=$2; shift 2 ;;
	--rel) [ $# -ge 2 ] || die "--rel needs a list"; RELS=$2; shift 2 ;;
	--cases) [ $# -ge 2 ] || die "--cases needs a list"; CASES=$2; shift 2 ;;
	--pkts) [ $# -ge 2 ] || die "--pkts needs a number"; posint --pkts "$2"; PKTS=$2; shift 2 ;;
	--callgrind) CG=1; shift ;;
	--cg-build) [ $# -ge 2 ] || die "--cg-build needs a directory"; CG_BUILD=$2; shift 2 ;;
	--cg-pkts) [ $# -ge 2 ] || die "--cg-pkts needs a number"; posint --cg-pkts "$2"; CG_PKTS=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a directory"; OUT=$2; shift 2 ;;
	--) shift; EXTRA=("$@"); break ;;
	-h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1'; accepted: --build DIR, --reps N, --rel LIST, --cases LIST, --pkts N, --callgrind, --cg-build DIR, --cg-pkts N, --out DIR, -- path_cost options" ;;
	esac
done

# MTU for the packet count of a message: the one passed after --, else 4096
MTU=4096
for ((i = 0; i < ${#EXTRA[@]}; i++)); do
	case "${EXTRA[$i]}" in
	--mtu) MTU=${EXTRA[$((i + 1))]:-4096} ;;
	--mtu=*) MTU=${EXTRA[$i]#--mtu=} ;;
	esac
done

bytes() { # 64, 4K, 4KiB, 1M, 1MiB -> bytes
	local v=$1
	case "$v" in
	*KiB) echo $((${v%KiB} * 1024)) ;;
	*K|*k) echo $((${v%?} * 1024)) ;;
	*MiB) echo $((${v%MiB} * 1048576)) ;;
	*M) echo $((${v%M} * 1048576)) ;;
	*) [[ $v =~ ^[0-9]+$ ]] || die "case size '$v' is not a size; accepted: bytes or a number with K, KiB, M, MiB"
	   echo "$v" ;;
	esac
}

IFS=, read -r -a REL_LIST <<<"$RELS"
IFS=, read -r -a CASE_LIST <<<"$CASES"
for r in "${REL_LIST[@]}"; do
	case "$r" in rc|sr|ec) ;; *) die "--rel: '$r'; accepted: rc, sr, ec" ;; esac
done
for c in "${CASE_LIST[@]}"; do
	m=${c%%:*}
	case "$m" in write|send|write_imm) ;; *) die "--cases: '$c'; accepted: MODE:SIZE with MODE write, send or write_imm" ;; esac
	[ "$m" != "$c" ] || die "--cases: '$c' has no :SIZE"
	bytes "${c#*:}" >/dev/null
done

BIN=$BUILD/tests/bench/path_cost
[ -x "$BIN" ] || die "$BIN not built (meson setup $BUILD --buildtype=release && ninja -C $BUILD)"
BIN=$(readlink -f "$BIN")

msgs_for() { # size pkts -> messages that make about pkts data packets
	local per=$((($1 + MTU - 1) / MTU))
	local n=$(($2 / per))
	[ $n -ge 1 ] || n=1
	echo $n
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

json() { # file key -> value
	python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[sys.argv[2]])' "$1" "$2"
}

echo "path_cost: $BIN, $(nproc) CPUs, median of $REPS runs of about $PKTS data packets, extra args: ${EXTRA[*]:-none}"
echo
echo "| case | rel | msgs | data pkts/msg | ctrl pkts/msg | ns/data pkt | ns/msg | ns/data pkt min..max |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
for c in "${CASE_LIST[@]}"; do
	mode=${c%%:*}
	size=$(bytes "${c#*:}")
	msgs=$(msgs_for "$size" "$PKTS")
	for rel in "${REL_LIST[@]}"; do
		: >"$TMP/runs"
		for ((k = 0; k < REPS; k++)); do
			"$BIN" --mode "$mode" --size "$size" --msgs "$msgs" --reliability "$rel" ${EXTRA[@]+"${EXTRA[@]}"} \
				>"$TMP/one" || die "path_cost failed: --mode $mode --size $size --msgs $msgs --reliability $rel ${EXTRA[*]:-}"
			tail -n 1 "$TMP/one" >>"$TMP/runs"
		done
		python3 - "$TMP/runs" "$mode:${c#*:}" "$rel" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs.sort(key=lambda r: r["wall_ns"])
m = runs[(len(runs) - 1) // 2]
p = [r["ns_per_data_pkt"] for r in runs]
print("| %s | %s | %d | %.2f | %.3f | %.1f | %.1f | %.1f..%.1f |" % (
    sys.argv[2], sys.argv[3], m["msgs"], m["data_pkts"] / m["msgs"], m["ctrl_pkts"] / m["msgs"],
    m["ns_per_data_pkt"], m["ns_per_msg"], min(p), max(p)))
EOF
	done
done
echo
echo "ns/data pkt: the wall time of the whole loop (both ends, the loop fabric, the bench's posting and"
echo "polling) over the sender QP's tx_packets; ctrl pkts: the receiver QP's (ACKs, SACKs)."

[ $CG = 1 ] || exit 0

command -v valgrind >/dev/null || die "--callgrind: valgrind missing (apt-get install valgrind)"
command -v callgrind_annotate >/dev/null || die "--callgrind: callgrind_annotate missing"
[ -n "$OUT" ] || OUT=$TMP/cg
mkdir -p "$OUT"
CG_BIN=$BIN
if [ -n "$CG_BUILD" ]; then
	CG_BIN=$CG_BUILD/tests/bench/path_cost
	[ -x "$CG_BIN" ] || die "$CG_BIN not built (ninja -C $CG_BUILD)"
	CG_BIN=$(readlink -f "$CG_BIN")
fi
echo
echo "callgrind: $CG_BIN, about $CG_PKTS data packets a case"

NAMES=()
for c in "${CASE_LIST[@]}"; do
	mode=${c%%:*}
	size=$(bytes "${c#*:}")
	msgs=$(msgs_for "$size" "$CG_PKTS")
	for rel in "${REL_LIST[@]}"; do
		name="$rel-$mode-${c#*:}"
		valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$OUT/$name.cg" \
			"$CG_BIN" --mode "$mode" --size "$size" --msgs "$msgs" --reliability "$rel" ${EXTRA[@]+"${EXTRA[@]}"} \
			>"$OUT/$name.json" 2>"$OUT/$name.vg" || { cat "$OUT/$name.vg" >&2; die "callgrind run $name failed"; }
		callgrind_annotate --auto=no --threshold=100 "$OUT/$name.cg" >"$OUT/$name.excl"
		callgrind_annotate --auto=no --threshold=100 --inclusive=yes "$OUT/$name.cg" >"$OUT/$name.incl"
		NAMES+=("$name")
	done
done

python3 - "$SRC" "$OUT" "${NAMES[@]}" <<'EOF'
import json, os, re, subprocess, sys
from collections import defaultdict

src, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]

# --- steps ------------------------------------------------------------------
STEPS = [
    ("post", "posting and completion (uroce_post_send, uroce_post_recv, uroce_poll_cq, cq_push, req_complete)"),
    ("txlogic", "sender logic (rc_tx/req_tx/send_pkt, sr_tx/tx_new/send_txp: what to send next)"),
    ("build", "build (roce_build, ipv4_csum, ctx_pkt_init, ctx_send_seg, ctx_send_pkt less the copy)"),
    ("icrc", "ICRC (roce_icrc and ISA-L's crc32)"),
    ("ec", "erasure coding, ec only (rel_ec.c, ec_code.c, ISA-L's erasure code, their memset/memcpy)"),
    ("gather", "gather copy at the sender (sge_copy_out, gather_*, sr_tx_gather and their memcpy)"),
    ("place", "placement copy at the receiver (memcpy from rc_rx_data/rcuc_rx, sge_copy_in, sr_rx_place, ...)"),
    ("parse", "parse (roce_parse, its ipv4_csum)"),
    ("rxlogic", "receiver logic (ctx_rx, qp_rx, rx_check_*, rc_rx_data/rcuc_rx, check_remote, sr_rx_data, marks)"),
    ("ackgen", "ACK generation (resp_tx, send_aeth, queue_ack; sr_send_sack, sr_send_ctrl)"),
    ("ackproc", "ACK processing (comp_rx, on_aeth, ack_upto; sr_rx_ctrl, on_sack, sack_one, rack)"),
    ("timers", "timers (timer_wheel_*, engine_timer_*, rc_arm_retry, sr_arm)"),
    ("clock", "clock reads (ctx_clock, loop_fabric_clock, clock_gettime)"),
    ("engine", "engine loop and scheduling (uroce_progress, ctx_tx_pass, engine_poll_once, ctx_kick, gid_slow_path)"),
    ("ports", "ports/rings (engine_tx, engine_alloc, flush_port, rx_port, port_*)"),
    ("fabric", "loop fabric (port_loop.c: stands in for the NIC and the kernel)"),
    ("bench", "the bench's own loop (path_cost.c: main, post_send, poll_*)"),
    ("other", "other (unmapped: see below)"),
]

NAME_MAP = {
    "post": "uroce_post_send post_one_send check_sges rc_post sr_post ec_post uroce_post_recv post_one_recv "
            "uroce_post_srq_recv qp_take_rwqe uroce_poll_cq cq_push req_complete qp_complete_swqe post_recv_wc sr_push_recv_wc "
            "cq_overrun",
    "txlogic": "qp_tx rc_tx req_tx send_pkt is_rd sr_tx tx_new send_txp txp_new window_open desc_fill sr_wqe_at "
               "tx_lost gave_up rc_credit_may_start rc_credit_started ec_tx ec_encode",
    "build": "roce_build roce_hdr_len roce_frame_len ctx_pkt_init ctx_send_seg ctx_send_pkt put_l2 put_ipv4 put_ipv6 put_bth "
             "put_ext fields_fit l2_len l3_hdr_len pad_for roce_ipv4_mapped",
    "icrc": "roce_icrc",
    "gather": "sge_copy_out gather_sges gather_wqe sr_tx_gather seg_gather gather_mem pstream_fill",
    "place": "sge_copy_in sr_rx_place",
    "parse": "roce_parse ipv4_mapped roce_opcode_info",
    "rxlogic": "ctx_rx qp_rx rx_check_dst rx_check_conn pkey_match rc_rx_data rc_rx_data_checked rcuc_rx "
               "check_remote need_rwqe rc_is_ctrl rc_opcode_ok op_first op_last sr_is_ctrl sr_rx_data "
               "sr_rx_mark_psn rx_set_arrived rx_advance_cum sr_rx_count_psn sr_pkt_len sr_rx_note_pkt check_rkey "
               "rx_desc rx_plain_write bind_upto sr_rx_bind_next deliver finish_msg sr_rx_finish sr_rx_check_done "
               "precv_note precv_bind precv_finish sr_rx_wants_kick sr_rx_msg_limit ud_rx sr_rx_read",
    "ackgen": "resp_tx send_aeth queue_ack queue_nak res_tx_pending send_res rc_resp_credits rc_credit_code "
              "sr_send_sack sr_send_ctrl",
    "ackproc": "comp_rx on_aeth ack_upto progress_made outstanding tail_wqe cur_catch_up go_back "
               "rx_response_in_window rc_rx_ctrl rc_credit_update sr_rx_ctrl on_sack sack_one sack_next_bit "
               "sr_txp_acked rtt_sample rtt_stats reo_wnd sr_rack_detect credit_arrived ec_msgs_done sr_retire",
    "timers": "rc_arm_retry sr_arm sr_timer rc_retry_timer_fn engine_timer_arm engine_timer_arm_in "
              "engine_timer_cancel wheel_timer_init",
    "clock": "ctx_clock ctx_now engine_now loop_fabric_clock engine_clock_monotonic clock_gettime "
             "__clock_gettime",
    "engine": "uroce_progress ctx_tx_pass engine_poll_once run_cmds ctx_kick gid_slow_path",
    "ports": "engine_tx engine_alloc flush_port rx_port port_tx_burst port_rx_burst port_alloc port_free "
             "port_poll port_count_drop",
    "bench": "main post_send poll_send poll_recv post_recv signalled slot_off mono_ns",
}
name_step = {f: step for step, fns in NAME_MAP.items() for f in fns.split()}

# Run on behalf of their caller: their instructions go to the caller's step.
SPLIT = {"ipv4_csum", "loop_fabric_now", "spsc_ring_enqueue", "spsc_ring_dequeue_burst"}
MEM = re.compile(r"^(__)?(memcpy|memmove|memset|mempcpy|bzero)|^__(memcpy|memmove|memset)_")
# a mem* called from one of these is the gather or the placement copy
COPY_CALLER = {
    "gather": {"sge_copy_out", "gather_sges", "gather_wqe", "sr_tx_gather", "seg_gather", "gather_mem"},
    "place": {"sge_copy_in", "sr_rx_place", "rc_rx_data", "rcuc_rx", "sr_rx_data", "rx_plain_write", "ud_rx"},
}
# Fallback: the source file that defines a function (the transport changes:
# a new static function lands in its file's step).
FILE_STEP = {
    "dataplane/port_loop.c": "fabric", "dataplane/timer_wheel.c": "timers", "dataplane/wire_parse.c": "parse",
    "dataplane/wire_build.c": "build", "transport/core/seg.c": "build", "dataplane/icrc.c": "icrc", "dataplane/engine.c": "ports",
    "dataplane/port.c": "ports", "transport/core/cq.c": "post", "transport/core/qp_post.c": "post",
    "transport/rel/rc/rc_requester.c": "txlogic", "transport/rel/rc/rc_completer.c": "ackproc",
    "transport/rel/rc/rc_responder.c": "rxlogic", "transport/core/rx_check.c": "rxlogic", "transport/core/context.c": "engine",
    "transport/core/gid.c": "engine", "tests/bench/path_cost.c": "bench", "transport/rel/rc/rc_credit.c": "txlogic",
    "transport/rel/rc/rel_rc.c": "rxlogic", "transport/rel/sr/partial.c": "rxlogic", "transport/rel/sr/rel_ec.c": "ec",
    "transport/rel/sr/ec_code.c": "ec",
}

# --- which source function holds each line ----------------------------------
defn = re.compile(r"^[^()=;{}#/ \t][^()=;{}]*?\b(\w+)\s*\(")
fn_file, line_fn = {}, {}
# every .c below these folders (transport/ has subfolders), and the header
# of inline helpers that sr's files share, so they count where written
INLINE_HDRS = {"transport/rel/sr/sr_internal.h"}
for rel in sorted(os.path.relpath(os.path.join(dp, f), src)
                  for d in ("transport", "dataplane", "tests/bench")
                  for dp, _, fs in os.walk(os.path.join(src, d)) for f in fs):
    if not rel.endswith(".c") and rel not in INLINE_HDRS:
        continue
    lines = open(os.path.join(src, rel), errors="replace").read().split("\n")
    tab, cur, start = {}, None, 0
    for i, l in enumerate(lines, 1):
        if cur is None:
            m = defn.match(l)
            if m and not l.rstrip().endswith(";") and m.group(1) not in ("if", "while", "for", "switch", "sizeof"):
                cur, start = m.group(1), i
        elif l.startswith("}"):
            for k in range(start, i + 1):
                tab[k] = cur
            fn_file.setdefault(cur, rel)
            cur = None
        elif l.rstrip().endswith(";") and not l.startswith((" ", "\t", "{")) and i == start + 1:
            cur = None  # a prototype over two lines
    line_fn[os.path.normpath(os.path.join(src, rel))] = tab

# --- the raw callgrind file -------------------------------------------------
_nm = {}
def sym_at(obj, addr):
    """Name an address of a library whose assembly functions carry no size
    (ISA-L's), which valgrind leaves unnamed: the nearest dynamic symbol below."""
    if obj not in _nm:
        syms = []
        try:
            o = subprocess.run(["nm", "-D", "--defined-only", obj], capture_output=True, text=True).stdout
            for l in o.splitlines():
                p = l.split()
                if len(p) == 3 and p[1] in "Tt" and "_slver" not in p[2]:
                    syms.append((int(p[0], 16), p[2]))
        except OSError:
            pass
        _nm[obj] = sorted(syms)
    best = None
    for a, n in _nm[obj]:
        if a <= addr:
            best = (a, n)
    if not best:
        return "0x%x" % addr
    return best[1] if best[0] == addr else "%s+0x%x" % (best[1], addr - best[0])

def clean(fn, obj):
    fn = re.sub(r"@.*$", "", fn)  # clock_gettime@@GLIBC_2.17
    fn = re.sub(r"\.(constprop|isra|part|cold|lto_priv)(\.\d+)*$", "", fn)  # GCC's clones
    fn = re.sub(r"\.(constprop|isra|part|cold|lto_priv)(\.\d+)*$", "", fn)
    if re.match(r"^0x[0-9a-f]+$", fn) and obj:
        fn = sym_at(obj, int(fn, 16))
    return fn

def parse_raw(path):
    """self[(obj, sym, loc)] = Ir and calls[(obj, sym, loc, callee_obj, callee)] = [count, inclusive Ir],
    where loc is the source function of the line (when the build has line info) or the symbol"""
    comp = {"fl": {}, "fn": {}, "ob": {}}
    def unc(kind, v):
        m = re.match(r"^\((\d+)\)(?:\s+(.*))?$", v)
        if not m:
            return v
        if m.group(2) is not None:
            comp[kind][m.group(1)] = m.group(2)
        return comp[kind].get(m.group(1), "?")
    selfc, calls = defaultdict(int), defaultdict(lambda: [0, 0])
    ob = fl = fi = fn = ""
    cob = cfn = None
    ncalls = 0
    npos, lpos, prev = 1, 0, [0]
    total = own = 0
    lines_known = 0
    for l in open(path):
        if not l.strip() or l[0] == "#":
            continue
        c = l[0]
        if c.isdigit() or c in "+-*":
            parts = l.split()
            for i in range(npos):  # each sub-position is relative to its own previous value
                t = parts[i]
                prev[i] = (prev[i] + int(t[1:], 0) if t[0] == "+" else prev[i] - int(t[1:], 0) if t[0] == "-"
                           else prev[i] if t == "*" else int(t, 0))
            pos = prev[lpos]
            cost = int(parts[npos]) if len(parts) > npos else 0
            f = os.path.normpath(fi) if fi else ""
            loc = line_fn.get(f, {}).get(pos)
            sym = clean(fn, ob)
            if ncalls:
                calls[(ob, sym, loc or sym, cob if cob is not None else ob, clean(cfn, cob or ob))][0] += ncalls
                calls[(ob, sym, loc or sym, cob if cob is not None else ob, clean(cfn, cob or ob))][1] += cost
                ncalls = 0
                cob = None
            else:
                selfc[(ob, sym, loc or sym)] += cost
                total += cost
                if ob.endswith("/path_cost"):
                    own += cost
                    if loc:
                        lines_known += cost
            continue
        if l.startswith("positions:"):
            kinds = l.split()[1:]
            npos, lpos = len(kinds), kinds.index("line") if "line" in kinds else 0
            prev = [0] * npos
            continue
        k, _, v = l.rstrip("\n").partition("=")
        if k == "fn":
            fn = unc("fn", v)
            fi = fl
        elif k == "fl":
            fl = fi = unc("fl", v)
        elif k in ("fi", "fe"):
            fi = unc("fl", v)
        elif k == "ob":
            ob = unc("ob", v)
        elif k == "cob":
            cob = unc("ob", v)
        elif k in ("cfi", "cfl"):
            unc("fl", v)
        elif k == "cfn":
            cfn = unc("fn", v)
        elif k == "calls":
            ncalls = int(v.split()[0])
        elif k in ("jfi", "jfn"):
            unc("fl" if k == "jfi" else "fn", v)
    return selfc, calls, total, lines_known / own if own else 0.0

def own_step(fn, obj):
    if fn in name_step:
        return name_step[fn]
    if "libisal" in obj:
        return "icrc" if fn.startswith("crc") else "ec"
    f = fn_file.get(fn)
    if f in FILE_STEP:
        return FILE_STEP[f]
    if fn.startswith("timer_wheel_"):
        return "timers"
    if fn.startswith("loop_"):
        return "fabric"
    return None

def is_split(fn):
    return bool(MEM.match(fn)) or fn in SPLIT

def analyse(path):
    selfc, calls, total, known = parse_raw(path)
    into = defaultdict(list)  # callee symbol -> [(caller loc, caller sym, caller obj, inclusive Ir)]
    ncall = defaultdict(int)
    for (ob, sym, loc, cob, callee), (n, incl) in calls.items():
        into[callee].append((loc, sym, ob, incl))
        ncall[callee] += n
    memo = {}

    def steps_of_loc(loc, sym, obj, depth=0):
        """fractions per step of instructions that ran in loc (inlined into sym)"""
        if not is_split(loc):
            return {own_step(loc, obj) or "other": 1.0}
        if loc != sym and not is_split(sym):
            return steps_of_loc(sym, sym, obj, depth)
        return steps_of_sym(sym, depth)

    def steps_of_sym(sym, depth):
        """fractions per step of a split function, from its callers"""
        if sym in memo:
            return memo[sym]
        arcs = into.get(sym, [])
        tot = sum(a[3] for a in arcs)
        if depth > 8 or not tot:
            return {"other": 1.0}
        res = defaultdict(float)
        for loc, csym, cob, incl in arcs:
            w = incl / tot
            hit = [k for k, v in COPY_CALLER.items() if loc in v] if MEM.match(sym) else []
            if hit:
                res[hit[0]] += w
                continue
            for s, x in steps_of_loc(loc, csym, cob, depth + 1).items():
                res[s] += w * x
        memo[sym] = dict(res)
        return memo[sym]

    per, unmapped, by_loc = defaultdict(float), defaultdict(float), defaultdict(float)
    for (ob, sym, loc), c in selfc.items():
        by_loc[loc] += c
        for s, x in steps_of_loc(loc, sym, ob).items():
            per[s] += c * x
            if s == "other":
                unmapped[loc] += c * x
    mem_arcs = defaultdict(lambda: [0, 0])
    for (ob, sym, loc, cob, callee), (n, incl) in calls.items():
        if MEM.match(callee):
            mem_arcs["%s <- %s" % (callee, loc)][0] += n
            mem_arcs["%s <- %s" % (callee, loc)][1] += incl
    return dict(total=total, known=known, per=per, unmapped=unmapped, by_loc=by_loc, ncall=ncall,
                mem_arcs=mem_arcs)

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)\s*$")
def load_annotate(path):
    """function -> Ir from a callgrind_annotate listing (exclusive or --inclusive=yes)"""
    res = {}
    for l in open(path):
        if l.startswith("-- ") or "=>" in l:
            break  # source annotation follows the function list
        m = LINE.match(l)
        if not m or "PROGRAM TOTALS" in l:
            continue
        rest = m.group(2)
        obj = ""
        mo = re.search(r"\s\[([^\]]*)\]$", rest)
        if mo:
            obj, rest = mo.group(1), rest[:mo.start()]
        fn = clean(rest.split(":", 1)[1] if ":" in rest else rest, obj)
        res.setdefault(fn, int(m.group(1).replace(",", "")))
    return res

results = []
for name in names:
    j = json.loads(open(os.path.join(out, name + ".json")).read().strip().splitlines()[-1])
    r = analyse(os.path.join(out, name + ".cg"))
    r.update(name=name, j=j, incl=load_annotate(os.path.join(out, name + ".incl")),
             excl=load_annotate(os.path.join(out, name + ".excl")))
    results.append(r)

def cell(x):
    return "%.0f" % x if x >= 9.5 or x == 0 else "%.1f" % x

def pkts(r):
    return r["j"]["data_pkts"]

line_mode = all(r["known"] > 0.5 for r in results)  # most of the binary's own code has line info
print()
print("## Instructions per data packet (callgrind, timed loop only)")
print()
print("Deterministic: the same build and arguments give the same counts. They are instructions (Ir), not ns:")
print("a vector memcpy or CRC moves 16-64 bytes per instruction, one division costs tens of cycles.")
if line_mode:
    print("Attribution by source line (the build has debug info): each instruction goes to the source")
    print("function its line is in, so code inlined into another function still counts where it was written.")
else:
    print("Attribution by symbol (no line info: build with -Dc_args=-g for line-level attribution, same")
    print("code): a static function the compiler inlined counts in the function it was inlined into.")
print("memcpy/memmove/memset go to the step of the function that called them (the gather or placement")
print("copy when called from a copy function), ipv4_csum and loop_fabric_now likewise. Per data packet =")
print("over the sender QP's tx_packets, so the receiver's ACKs and per-message work are spread over them.")
print()
hdr = "| step | " + " | ".join(r["name"] for r in results) + " |"
sep = "|---|" + "---:|" * len(results)
print(hdr)
print(sep)
print("| data pkts (ctrl pkts) | " + " | ".join("%d (%d)" % (pkts(r), r["j"]["ctrl_pkts"]) for r in results) + " |")
for k, desc in STEPS:
    if k in ("ec",) and not any(r["per"].get(k, 0) for r in results):
        continue  # a row for ec QPs only
    print("| %s | " % desc + " | ".join(cell(r["per"].get(k, 0) / pkts(r)) for r in results) + " |")
print("| **total Ir / data packet** | " + " | ".join("**%s**" % cell(r["total"] / pkts(r)) for r in results) + " |")
print("| total Ir / message | " + " | ".join(cell(r["total"] / r["j"]["msgs"]) for r in results) + " |")
print("| transport only (less fabric and bench) / data pkt | " + " | ".join(
    cell((r["total"] - r["per"].get("fabric", 0) - r["per"].get("bench", 0)) / pkts(r)) for r in results) + " |")

INCL = ["uroce_post_send", "uroce_poll_cq", "uroce_progress", "ctx_tx_pass", "engine_poll_once", "rx_port",
        "qp_tx", "rc_tx", "sr_tx", "send_txp", "ctx_send_seg", "ctx_send_pkt", "roce_build", "roce_icrc", "roce_parse", "ctx_rx",
        "qp_rx", "rc_rx_data", "sr_rx_data", "resp_tx", "sr_send_sack", "comp_rx", "sr_rx_ctrl", "on_sack",
        "flush_port", "loop_tx_burst", "loop_rx_burst", "timer_wheel_advance", "gid_slow_path"]
print()
print("## Inclusive instructions per data packet of entry points (callgrind_annotate --inclusive=yes)")
print()
print("Symbols as compiled: a function inlined into its caller has no row (or a smaller one).")
print()
print(hdr.replace("| step |", "| function |", 1))
print(sep)
for fn in INCL:
    if any(fn in r["incl"] for r in results):
        print("| %s | " % fn + " | ".join(cell(r["incl"].get(fn, 0) / pkts(r)) for r in results) + " |")

WATCH = ["clock_gettime", "ctx_clock", "loop_fabric_clock", "timer_wheel_add", "timer_wheel_cancel",
         "engine_timer_arm", "engine_timer_cancel", "ctx_kick", "ipv4_csum", "roce_icrc", "uroce_poll_cq",
         "gid_slow_path"]
print()
print("## Calls per data packet (callgrind call counts; calls of functions inlined away are not counted)")
print()
print(hdr.replace("| step |", "| function (<- calling source function) |", 1))
print(sep)
for fn in WATCH:
    if any(r["ncall"].get(fn) for r in results):
        print("| %s | " % fn + " | ".join("%.3f" % (r["ncall"].get(fn, 0) / pkts(r)) for r in results) + " |")
for k in sorted({k for r in results for k in r["mem_arcs"]}):
    if all(k not in r["mem_arcs"] or r["mem_arcs"][k][0] < 0.001 * pkts(r) for r in results):
        continue
    label = re.sub(r"__(mem\w+?)_\w+", r"\1", k)
    print("| %s | " % label + " | ".join(
        "%.3f (%s Ir)" % (r["mem_arcs"][k][0] / pkts(r), cell(r["mem_arcs"][k][1] / pkts(r))) if k in r["mem_arcs"] else ""
        for r in results) + " |")

print()
print("## Unmapped (step 'other'), Ir per data packet")
for r in results:
    top = [(fn, c) for fn, c in sorted(r["unmapped"].items(), key=lambda x: -x[1])[:12] if c >= 0.05 * pkts(r)]
    print()
    print("- %s: " % r["name"] + (", ".join("%s %s" % (fn, cell(c / pkts(r))) for fn, c in top) or
                                  "none above 0.05 (%s in all)" %
                                  cell(r["per"].get("other", 0) / pkts(r))))
print()
print("## Top 20 %s by own instructions, Ir per data packet" % ("source functions" if line_mode else "symbols"))
for r in results:
    top = sorted(r["by_loc"].items(), key=lambda x: -x[1])[:20]
    print()
    print("- %s: " % r["name"] + ", ".join("%s %s" % (fn, cell(c / pkts(r))) for fn, c in top))
if line_mode:
    print()
    print("## Top 15 symbols as compiled (callgrind_annotate, exclusive), Ir per data packet")
    for r in results:
        top = sorted(r["excl"].items(), key=lambda x: -x[1])[:15]
        print()
        print("- %s: " % r["name"] + ", ".join("%s %s" % (fn, cell(c / pkts(r))) for fn, c in top))
print()
print("callgrind files: %s (callgrind_annotate --auto=yes FILE shows the cost of each source line)" % out)
EOF
