#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost per packet of each step of the datapath, from profile.sh's two
`perf record -g` files (client and server) and the two uroce-perf logs
(run with --counters).

    profile_steps.py --dir OUT      (profile.sh --out OUT: {client,server}.{data,log})
    profile_steps.py --client client.data --server server.data \
        --client-log client.log --server-log server.log

Method, for each side:

    ns per packet of a step = (samples in the step / samples of the process)
                              x time of the measured run / packets

- The measured run is the span from the first to the last sample in which
  either process does packet work in user space (build, parse, ICRC,
  copies, requester, responder, ACKs): the handshakes before and the
  closing exchange and linger after are left out (--window all keeps them). Both processes
  take the same span (their perf timestamps share one clock), so the two
  columns cover the same time.
- Packets are the side's QP counters from --counters: tx_packets +
  rx_packets (the client sends data and receives ACKs, the server the
  reverse; --per data divides by the larger of the two instead).
- The time is the process's time on its CPU in the span: samples x the
  sampling period, which is the span's wall time when the process
  busy-polls a full core. The on-CPU share (that time / the wall time) is
  printed to check it: on a shared machine a process can wait for a CPU,
  and the wall time would then count that wait into every step
  (--basis wall does so).

Each sample is given to one step by its call chain: a kernel sample by the
innermost kernel frame in KERNEL_STEPS; a user sample by the innermost
frame in USER_STEPS, except that anything under an ACK/SACK send
(ACK_GEN_CONTEXT) is ACK generation, that on a side sending no data all
send-side work is (SEND_SIDE), and that a copy (memcpy/memmove), a CRC or
a clock read is given by who called it (COPY_CALLERS, CRC_CALLERS,
CLOCK_LEAVES).
Those leaves are glibc/ISA-L assembly without a frame pointer, so the chain
skips their direct caller and shows the caller's caller: crc32 <- roce_build
(roce_icrc skipped), memcpy <- ctx_send_pkt (gather_sges -> sge_copy_out
skipped), memcpy <- ctx_rx (qp_rx -> rc_rx_data / sr_rx_place skipped),
memcpy <- rx_port (afxdp_rx_burst's multi-buffer reassembly skipped).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

# Rows of the table: key, label, kernel?, packet work? (user-space packet
# work decides the measured span; the groups at the bottom use both flags).
STEPS = [
    ("build", "build headers of data packets (roce_build, ipv4_csum, ctx_pkt_init, ctx_send_pkt)", False, True),
    ("icrc_tx", "ICRC on send of data packets (crc32 under roce_build)", False, True),
    ("copy_tx", "gather copy MR -> frame (memcpy under ctx_send_pkt)", False, True),
    ("req", "requester: WQE -> packets (rc_tx, req_tx, sr_tx, send_txp)", False, True),
    ("parse", "parse + checks + dispatch (roce_parse, rx_check_*, ctx_rx, qp_rx)", False, True),
    ("icrc_rx", "ICRC check (crc32 under roce_parse)", False, True),
    ("copy_frag", "RX multi-buffer reassembly copy (memcpy in afxdp_rx_burst)", False, True),
    ("copy_rx", "placement copy frame -> MR (memcpy under ctx_rx: rc_rx_data, sr_rx_place)", False, True),
    ("resp", "responder: PSN/rkey checks, WQE, CQE (rc_rx_data, sr_rx_data, ...)", False, True),
    ("ack_gen", "ACK/SACK generation, their build + ICRC too (send_aeth, resp_tx, sr_tx's send_sack, sr_send_ctrl)",
     False, True),
    ("ack_proc", "ACK/SACK processing (comp_rx, ack_upto, req_complete, sr_rx_ctrl, rack)", False, True),
    ("timers", "timers (timer_wheel_*, rc_arm_retry, sr_arm, sr_timer)", False, False),
    ("rings", "rings: RX/TX descriptors, frame alloc/free, TX stage (afxdp_*_burst, engine_tx, rx_port)", False, False),
    ("fill", "completion reap + fill-ring refill + kick check (afxdp_poll)", False, False),
    ("kick_user", "TX kick / wakeup syscall, libc side (sendto, recvfrom)", False, False),
    ("verbs", "verbs API: post WR, poll CQ (uroce_post_send, uroce_poll_cq, cq_push)", False, False),
    ("poll", "poll loop: uroce_progress, engine_poll_once, gid_slow_path, run_cmds", False, False),
    ("clock", "clock reads of the poll loop (clock_gettime)", False, False),
    ("app", "app: uroce-perf's own loop (perf_poll, perf_run_*)", False, False),
    ("app_xchg", "app: TCP exchange socket, user side (wait_fd, tcp_exchange_*, poll())", False, False),
    ("user_other", "other user (setup, libc, ld.so, unresolved)", False, False),
    ("k_tx_xsk", "kernel TX: AF_XDP copy-mode xmit (skb alloc, copy out of UMEM, skb destructor)", True, True),
    ("k_tx_veth", "kernel TX: __dev_direct_xmit + veth_xmit", True, True),
    ("k_rx_veth", "kernel, peer's RX on this CPU: veth NAPI, skb -> page_pool copy (skb_pp_cow_data)", True, True),
    ("k_rx_xsk", "kernel, peer's RX on this CPU: XDP prog, redirect, copy into peer UMEM (__xsk_rcv)", True, True),
    ("k_softirq", "kernel: softirq/NAPI framework (net_rx_action, deferred skb frees)", True, False),
    ("k_kick", "kernel: kick/wakeup syscalls, entry/exit (sendto/recvfrom, no xmit work)", True, False),
    ("k_xchg", "kernel: exchange socket, IP stack (poll(), TCP, ARP)", True, False),
    ("k_other", "kernel: interrupts, scheduler, page faults, setup, other", True, False),
]
STEP_KEYS = [s[0] for s in STEPS]
LABEL = {s[0]: s[1] for s in STEPS}
IS_KERNEL = {s[0]: s[2] for s in STEPS}
PACKET_WORK = {s[0] for s in STEPS if s[3]}
# The measured span is found from user-space packet work only: the kernel's
# TCP exchange also passes through veth before and after the run.
SPAN_WORK = {k for k in PACKET_WORK if not IS_KERNEL[k]}

# User-space functions (uroce-perf links the library statically; static
# functions that are inlined never show up). The innermost listed frame wins.
USER_STEPS = {
    "build": "roce_build ctx_pkt_init ipv4_csum roce_hdr_len roce_frame_len roce_ipv4_mapped ctx_send_seg ctx_send_pkt "
             "put_l2 put_ipv4 put_ipv6 put_bth put_ext",
    "req": "rc_tx req_tx send_pkt qp_tx ctx_tx_pass sr_tx send_txp sr_tx_gather seg_gather gather_wqe gather_sges "
           "desc_fill txp_new tx_new window_open ctx_kick rc_credit_may_start rc_credit_started "
           "ec_tx_encode ec_encode pstream_fill stream_post",
    "parse": "roce_parse rx_check_dst rx_check_conn rx_response_in_window ctx_rx qp_rx rc_is_ctrl rc_opcode_ok "
             "sr_is_ctrl roce_opcode_info",
    "resp": "rc_rx_data rc_rx_data_checked rcuc_rx check_remote check_rkey need_rwqe post_recv_wc qp_take_rwqe "
            "ud_rx replay find_res res_available sr_rx_data sr_rx_place sr_rx_mark_psn sr_rx_count_psn "
            "sr_rx_note_pkt sr_rx_finish sr_rx_check_done sr_rx_bind_next sr_rx_read rx_plain_write rx_desc "
            "rx_set_arrived rx_advance_cum deliver finish_msg push_recv_wc bind_upto rc_resp_credits "
            "rc_credit_count rc_credit_code consumes_rwqe sge_copy_in ec_rx_parity ec_rx_sub ec_decode "
            "mark_sub find_parity precv_note precv_bind precv_finish",
    "ack_gen": "send_aeth queue_ack queue_nak res_tx_pending resp_tx send_res gather_mem sr_send_ctrl send_sack "
               "sr_rx_wants_kick ec_tx_nack nack_due",
    "ack_proc": "rc_rx_ctrl comp_rx on_aeth ack_upto progress_made go_back cur_catch_up tail_wqe outstanding "
                "on_read_resp on_atomic_ack req_complete qp_complete_swqe fail_tail rc_credit_update sr_rx_ctrl on_sack sack_one "
                "sack_next_bit txp_acked rtt_sample rtt_stats reo_wnd rack_detect tx_lost gave_up sr_retire "
                "credit_arrived ec_msgs_done ec_rx_nacks",
    "timers": "timer_wheel_advance timer_wheel_add timer_wheel_cancel cascade cascade_slot run_list enqueue "
              "unlink_timer engine_timer_arm engine_timer_arm_in engine_timer_cancel rc_arm_retry "
              "rc_retry_timer_fn sr_arm sr_timer ec_rx_fto_next sub_overdue",
    "rings": "afxdp_rx_burst afxdp_tx_burst afxdp_alloc afxdp_free rx_burst_sg tx_burst_sg engine_tx engine_alloc "
             "flush_port rx_port port_rx_burst port_tx_burst port_alloc port_free spsc_ring_dequeue_burst "
             "spsc_ring_enqueue",
    "fill": "afxdp_poll reap_completions refill_fill_ring read_kernel_drops read_link",
    "kick_user": "__libc_sendto __sendto sendto __libc_recvfrom __recvfrom recvfrom __libc_recv kick_tx",
    "verbs": "uroce_post_send post_one_send uroce_post_recv post_one_recv uroce_poll_cq cq_push cq_overrun "
             "check_sges sge_copy_out uroce_post_srq_recv qp_post_recv_precv",
    "poll": "uroce_progress engine_poll_once run_cmds gid_slow_path engine_run nl_watch_poll",
    "app": "perf_poll perf_run_bw perf_run_lat perf_run_bw_server_send perf_post_recvs perf_progress "
           "perf_activity perf_bw_compute",
    "app_xchg": "wait_fd tcp_exchange_recv tcp_exchange_send tcp_exchange_accept tcp_exchange_connect __poll "
                "poll __libc_recv_exchange perf_handshake perf_xchg_versions perf_xchg_sys perf_xchg_mtu "
                "perf_xchg_rel perf_xchg_bw_report perf_close_connection rel_exchange_recv rel_exchange_send",
}

# Sending an ACK, SACK or NAK: everything in user space under these frames
# (its build, ICRC, TX stage) is ACK generation.
ACK_GEN_CONTEXT = set("send_aeth queue_ack queue_nak sr_send_ctrl send_sack ec_tx_nack".split())
# On a side that sends no data (no ctx_send_pkt outside an ACK send) all
# send-side work is ACK generation: sr_tx inlines send_sack (the SACK
# bitmap), and the ACK's ctx_pkt_init runs in resp_tx / sr_tx.
SEND_SIDE = {"req", "build", "icrc_tx", "copy_tx"}

# A copy's caller (the first listed frame after the memcpy/memmove leaf).
COPY_CALLERS = {
    "copy_tx": "ctx_send_seg ctx_send_pkt send_pkt req_tx rc_tx send_txp sr_tx sr_tx_gather seg_gather gather_wqe gather_sges sge_copy_out "
               "send_res resp_tx gather_mem roce_build ec_tx_encode",
    "copy_rx": "ctx_rx qp_rx rc_rx_data rc_rx_data_checked rcuc_rx ud_rx sr_rx_data sr_rx_place rx_plain_write "
               "sge_copy_in qp_take_rwqe comp_rx on_read_resp ec_rx_parity ec_rx_sub ec_decode",
    "copy_frag": "rx_port afxdp_rx_burst rx_burst_sg",
    "rings": "engine_tx flush_port engine_poll_once run_cmds engine_post",
    "verbs": "uroce_post_send uroce_poll_cq uroce_post_recv uroce_post_srq_recv",
}
COPY_LEAVES = re.compile(r"^(__)?(memcpy|memmove|memset|__memmove|__memcpy|__memset)|^__mem(move|cpy|set)_")
# A CRC's caller: roce_icrc is skipped (ISA-L's crc32 keeps no frame), so
# the frame after the leaf is roce_icrc's caller.
CRC_LEAVES = re.compile(r"^crc32_|^roce_icrc$")
CRC_CALLERS = {
    "icrc_tx": "roce_build ctx_send_pkt",
    "icrc_rx": "roce_parse rx_port",
}
# Clock reads: their caller's step, except the poll loop's own reads
# (every iteration reads the clock) which get a row of their own.
CLOCK_LEAVES = re.compile(r"clock_gettime|^engine_clock_monotonic$|^ctx_now$|^ctx_clock$|^perf_now_ns$|^mono_ns$")
CLOCK_OWN_ROW = {"poll", "app", "app_xchg"}

# Kernel functions: the innermost listed frame wins (so a page allocation
# under __xsk_generic_xmit is transmit, one under skb_pp_cow_data receive).
KERNEL_STEPS = {
    "k_tx_xsk": "__xsk_generic_xmit xsk_generic_xmit xsk_build_skb xsk_destruct_skb xsk_skb_destructor sock_wfree "
                "sock_alloc_send_pskb skb_store_bits xsk_tx_peek_desc xsk_cq_submit_locked xsk_cq_submit_addr_locked "
                "xsk_consume_skb xsk_drop_skb",
    "k_tx_veth": "__dev_direct_xmit veth_xmit __dev_forward_skb2 __dev_forward_skb validate_xmit_skb.isra.0 "
                 "validate_xmit_skb netif_skb_features veth_forward_skb dev_hard_start_xmit",
    "k_rx_xsk": "__xsk_rcv __xsk_rcv_zc xsk_rcv __xsk_map_redirect xsk_map_redirect xdp_do_redirect __xsk_map_flush "
                "xdp_do_flush xsk_flush xp_alloc bpf_dispatcher_xdp_func",
    "k_rx_veth": "veth_poll veth_xdp_rcv veth_xdp_rcv_skb veth_xdp_rcv_one skb_pp_cow_data veth_xdp_get "
                 "napi_complete_done veth_xdp_flush",
    "k_softirq": "net_rx_action __napi_poll handle_softirqs skb_defer_free_flush do_softirq.part.0 "
                 "__do_softirq napi_consume_skb",
    "k_kick": "xsk_sendmsg __sys_sendto __x64_sys_sendto xsk_recvmsg __sys_recvfrom __x64_sys_recvfrom sock_recvmsg "
              "xsk_poll",
    "k_xchg": "do_sys_poll __x64_sys_poll sock_poll tcp_poll poll_freewait tcp_sendmsg tcp_recvmsg "
              "tcp_sendmsg_locked tcp_v4_rcv tcp_rcv_established __sys_connect inet_stream_connect",
}
KERNEL_PREFIXES = {"k_rx_xsk": ("bpf_prog_",)}
# The kernel's own IP stack (the TCP exchange, ARP) also goes through
# veth_xmit and veth_poll: any of these in a kernel chain makes it k_xchg.
IP_STACK = set("tcp_sendmsg tcp_sendmsg_locked tcp_recvmsg __tcp_transmit_skb tcp_write_xmit ip_output "
               "ip_finish_output2 __ip_queue_xmit __dev_queue_xmit ip_rcv ip_list_rcv ip_sublist_rcv "
               "ip_local_deliver_finish tcp_v4_rcv tcp_v4_do_rcv tcp_rcv_established __netif_receive_skb_list_core "
               "netif_receive_skb_list_internal napi_gro_receive arp_rcv arp_xmit arp_send neigh_resolve_output "
               "ip6_output ip6_finish_output2 ipv6_rcv ndisc_send_skb tcp_connect tcp_v4_connect".split())


def invert(table):
    out = {}
    for step, names in table.items():
        for n in names.split():
            out[n] = step
    return out


USER_MAP = invert(USER_STEPS)
COPY_MAP = invert(COPY_CALLERS)
CRC_MAP = invert(CRC_CALLERS)
KERNEL_MAP = invert(KERNEL_STEPS)


def kernel_step(sym):
    s = KERNEL_MAP.get(sym)
    if s:
        return s
    for step, prefixes in KERNEL_PREFIXES.items():
        if sym.startswith(prefixes):
            return step
    return None


def user_first(frames, table):
    for f in frames:
        s = table.get(f)
        if s:
            return s
    return None


def classify(kframes, uframes, receiver=False):
    """The step of one sample: kframes and uframes leaf first; receiver: the
    side sends no data (only ACKs)."""
    step = classify1(kframes, uframes)
    return "ack_gen" if receiver and step in SEND_SIDE else step


def classify1(kframes, uframes):
    if kframes:
        if IP_STACK.intersection(kframes):
            return "k_xchg"
        for f in kframes:
            s = kernel_step(f)
            if s:
                return s
        # Only entry/exit, interrupt or generic frames: look at the
        # user-space caller of the syscall.
        interrupted = any(f.startswith(("asm_sysvec", "asm_common_interrupt", "asm_exc_", "sysvec_"))
                          for f in kframes)
        if not interrupted:
            s = user_first(uframes, USER_MAP)
            if s == "kick_user":
                return "k_kick"
            if s == "app_xchg":
                return "k_xchg"
        return "k_other"
    if not uframes:
        return "user_other"
    if ACK_GEN_CONTEXT.intersection(uframes):
        return "ack_gen"
    leaf, rest = uframes[0], uframes[1:]
    if COPY_LEAVES.search(leaf):
        s = user_first(rest, COPY_MAP)
        if s:
            return s
        s = user_first(rest, USER_MAP)
        return s or "user_other"
    if CRC_LEAVES.search(leaf):
        s = user_first([f for f in rest if not CRC_LEAVES.search(f) and not f.endswith("@plt")], CRC_MAP)
        if s:
            return s
        return user_first(rest, USER_MAP) or "user_other"
    if CLOCK_LEAVES.search(leaf):
        s = user_first([f for f in rest if not CLOCK_LEAVES.search(f)], USER_MAP)
        if s is None or s in CLOCK_OWN_ROW:
            return "clock"
        return s
    return user_first(uframes, USER_MAP) or "user_other"


def perf_samples(path):
    """(time s, period ns, pid/tid, kernel frames, user frames) per sample,
    from `perf script`."""
    perf = shutil.which("perf") or "perf"
    cmd = [perf, "script", "-i", path, "-F", "comm,tid,time,period,ip,sym,dso"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
    cur = None
    for line in p.stdout:
        if not line.strip():
            if cur:
                yield cur
            cur = None
            continue
        if line[0] not in "\t ":
            # "comm tid time: period"; comm may hold spaces.
            m = re.match(r"^(.*?)\s+(\d+)\s+([\d.]+):\s+(\d+)", line)
            if not m:
                cur = None
                continue
            cur = (float(m.group(3)), int(m.group(4)), int(m.group(2)), [], [])
            continue
        if cur is None:
            continue
        parts = line.strip().split(None, 1)
        if len(parts) < 2:
            continue
        addr, rest = parts
        sym, _, dso = rest.rpartition(" (")
        if not sym:
            sym, dso = rest, ""
        kernel = "kernel.kallsyms" in dso or (len(addr) >= 16 and addr.startswith("ffff"))
        (cur[3] if kernel else cur[4]).append(sym)
    if cur:
        yield cur
    if p.wait() != 0:
        sys.exit(f"profile_steps: perf script -i {path} failed")


def read_counters(path):
    """The side's packet counters from uroce-perf --counters."""
    qp = port = None
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return None, None
    m = re.search(r"uroce counters: qp tx_packets=(\d+) rx_packets=(\d+)", text)
    if m:
        qp = (int(m.group(1)), int(m.group(2)))
    m = re.search(r"uroce counters: port \d+ rx_packets=(\d+) tx_packets=(\d+)", text)
    if m:
        port = (int(m.group(2)), int(m.group(1)))
    return qp, port


class Side:
    def __init__(self, name, data, log):
        self.name = name
        self.samples = []   # (time, period, step)
        self.tids = collections.Counter()
        self.unclassified = collections.Counter()
        qp, port = read_counters(log) if log else (None, None)
        self.counters = qp or port
        self.counter_src = "qp" if qp else ("port" if port else None)
        raw = list(perf_samples(data))
        # A side that sends no data packets (only ACKs/SACKs): (almost) all
        # of its samples under ctx_send_pkt are under an ACK send. Not all:
        # a sample at a function's first instructions, before it saved the
        # frame pointer, loses its caller (ctx_send_pkt <- sr_tx without
        # sr_send_ctrl). A data sender has most of them outside one.
        sends = [bool(ACK_GEN_CONTEXT.intersection(uf)) for _, _, _, kf, uf in raw if "ctx_send_pkt" in uf]
        self.receiver = len(sends) >= 10 and len(sends) - sum(sends) <= 0.1 * len(sends)
        for t, period, tid, kf, uf in raw:
            step = classify(kf, uf, self.receiver)
            self.samples.append((t, period, step))
            self.tids[tid] += 1
            if step in ("user_other", "k_other"):
                self.unclassified[" <- ".join((kf + uf)[:6])] += 1
        self.samples.sort()
        work = [t for t, _, s in self.samples if s in SPAN_WORK]
        self.work_span = (work[0], work[-1]) if work else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", help="profile.sh's --out folder: {client,server}.{data,log} in it")
    ap.add_argument("--client", help="client perf.data")
    ap.add_argument("--server", help="server perf.data")
    ap.add_argument("--client-log", help="client uroce-perf output (with --counters)")
    ap.add_argument("--server-log", help="server uroce-perf output (with --counters)")
    ap.add_argument("--window", choices=("union", "own", "all"), default="union",
                    help="measured span: packet work of both processes (default), of each one, or every sample")
    ap.add_argument("--basis", choices=("cpu", "wall"), default="cpu",
                    help="time of the span: the process's sampled on-CPU time (default), or the wall time")
    ap.add_argument("--per", choices=("handled", "data"), default="handled",
                    help="packets: tx + rx of the side's QPs (default), or the larger of the two (data)")
    ap.add_argument("--title", default="", help="a line printed above the table")
    ap.add_argument("--unclassified", type=int, default=0, metavar="N",
                    help="also list the N most frequent call chains left in 'other'")
    a = ap.parse_args()
    if a.dir:
        for side in ("client", "server"):
            if not getattr(a, side):
                setattr(a, side, os.path.join(a.dir, side + ".data"))
            if not getattr(a, side + "_log"):
                setattr(a, side + "_log", os.path.join(a.dir, side + ".log"))
    if not a.client or not a.server:
        ap.error("--dir or both --client and --server are needed")

    sides = [Side("client", a.client, a.client_log), Side("server", a.server, a.server_log)]
    spans = [s.work_span for s in sides if s.work_span]
    if not spans:
        sys.exit("profile_steps: no sample in packet work on either side")
    union = (min(x[0] for x in spans), max(x[1] for x in spans))

    cols = {}
    for s in sides:
        if a.window == "all":
            lo, hi = s.samples[0][0], s.samples[-1][0]
        elif a.window == "own" and s.work_span:
            lo, hi = s.work_span
        else:
            lo, hi = union
        inside = [(p, st) for t, p, st in s.samples if lo <= t <= hi]
        per_step = collections.Counter()
        nsamp = collections.Counter()
        for p, st in inside:
            per_step[st] += p
            nsamp[st] += 1
        cpu_ns = sum(per_step.values())
        wall_ns = (hi - lo) * 1e9
        # One period more than the span: the span runs from the first sample to the last.
        if inside:
            wall_ns += cpu_ns / len(inside)
        if s.counters:
            tx, rx = s.counters
            pkts = tx + rx if a.per == "handled" else max(tx, rx)
        else:
            tx = rx = None
            pkts = 0
        basis_ns = wall_ns if a.basis == "wall" else cpu_ns
        ns = {}
        for k in STEP_KEYS:
            share = per_step[k] / cpu_ns if cpu_ns else 0.0
            ns[k] = share * basis_ns / pkts if pkts else float("nan")
        cols[s.name] = dict(ns=ns, share={k: (per_step[k] / cpu_ns if cpu_ns else 0) for k in STEP_KEYS},
                            nsamp=nsamp, n=len(inside), cpu_ns=cpu_ns, wall_ns=wall_ns, tx=tx, rx=rx, pkts=pkts,
                            total=len(s.samples), span=(lo, hi), side=s)

    def fmt(v):
        if v != v:  # nan
            return "n/a"
        return f"{v:.0f}" if v >= 100 else f"{v:.1f}"

    def pct(v):
        return f"{100 * v:.1f}"

    c, sv = cols["client"], cols["server"]
    if a.title:
        print(f"### {a.title}\n")
    unit = "packet handled (tx+rx)" if a.per == "handled" else "data packet"
    basis = "on-CPU time (samples x period)" if a.basis == "cpu" else "wall time"
    print(f"ns per {unit}; time of the measured span: {basis}\n")
    print("| step | client ns/pkt | server ns/pkt | client % | server % |")
    print("|---|---:|---:|---:|---:|")
    for k in STEP_KEYS:
        if not c["nsamp"][k] and not sv["nsamp"][k]:
            continue
        print(f"| {LABEL[k]} | {fmt(c['ns'][k])} | {fmt(sv['ns'][k])} | {pct(c['share'][k])} | {pct(sv['share'][k])} |")

    def group(col, keys):
        return sum(col["ns"][k] for k in keys), sum(col["share"][k] for k in keys)

    groups = [
        ("**user: packet work** (build, ICRC, copies, parse, requester, responder, ACKs)",
         [k for k in STEP_KEYS if not IS_KERNEL[k] and k in PACKET_WORK]),
        ("**user: loop overhead** (timers, rings, kicks, verbs, poll loop, clock, app, other)",
         [k for k in STEP_KEYS if not IS_KERNEL[k] and k not in PACKET_WORK]),
        ("**kernel: TX + peer's RX path**", [k for k in STEP_KEYS if IS_KERNEL[k] and k in PACKET_WORK]),
        ("**kernel: softirq, syscalls, poll, other**", [k for k in STEP_KEYS if IS_KERNEL[k] and k not in PACKET_WORK]),
        ("**polling rows, where idle spinning lands** (timers, afxdp_poll, poll loop, clock, app loop)",
         ["timers", "fill", "poll", "clock", "app"]),
        ("**user total**", [k for k in STEP_KEYS if not IS_KERNEL[k]]),
        ("**kernel total**", [k for k in STEP_KEYS if IS_KERNEL[k]]),
        ("**total**", STEP_KEYS),
    ]
    for name, keys in groups:
        cn, cs = group(c, keys)
        sn, ss = group(sv, keys)
        print(f"| {name} | **{fmt(cn)}** | **{fmt(sn)}** | {pct(cs)} | {pct(ss)} |")
    print()
    for name, col in (("client", c), ("server", sv)):
        s = col["side"]
        cnt = (f"QP tx {col['tx']} + rx {col['rx']}" if s.counter_src == "qp" else
               f"port tx {col['tx']} + rx {col['rx']}" if s.counter_src else "no counters (run with --counters)")
        print(f"- {name}: {cnt} -> {col['pkts']} packets; span {col['wall_ns'] / 1e6:.1f} ms wall, "
              f"{col['n']} of {col['total']} samples in it, on-CPU {100 * col['cpu_ns'] / col['wall_ns']:.0f}% "
              f"of the span"
              + (f"; {len(s.tids)} threads" if len(s.tids) > 1 else "")
              + (f"; per data packet: x{col['pkts'] / max(col['tx'], col['rx']):.2f}"
                 if a.per == "handled" and col["pkts"] and max(col["tx"], col["rx"]) else "")
              + ("; sends no data: its send-side work is ACK generation" if s.receiver else ""))
        if col["wall_ns"] and col["cpu_ns"] / col["wall_ns"] < 0.9:
            print(f"  - {name} was on a CPU only {100 * col['cpu_ns'] / col['wall_ns']:.0f}% of the span (the "
                  "machine was shared): " + ("the rows are its CPU time; the wall time per packet is "
                  f"{col['wall_ns'] / col['pkts']:.0f} ns" if a.basis == "cpu" and col["pkts"] else
                  "its wall ns/pkt include time off CPU; see --basis cpu"))
    off = abs(c["span"][0] - sv["span"][0]) if a.window == "own" else 0
    if a.window == "union":
        spans_txt = ", ".join(f"{s.name} {s.work_span[1] - s.work_span[0]:.3f} s" for s in sides if s.work_span)
        print(f"- measured span: first to last packet-work sample of either process "
              f"({union[1] - union[0]:.3f} s; each alone: {spans_txt})")
    elif off:
        print(f"- spans start {off * 1e3:.1f} ms apart")
    print("""
Method and its limits:
- ns/pkt = (samples of the step / samples of the process in the span) x time of the span / packets,
  the time being the process's on-CPU time (= wall time for a process busy-polling a full core);
  sampling at ~5 kHz (cpu-clock, a software timer: no cycles in this VM), so a row below ~1% of
  the samples is noisy; a step's ns/pkt is its CPU time spread over every packet of the side.
- Busy polling: the process never sleeps, so idle spinning is counted as time of the polling
  functions (poll loop, clock reads, rings, fill/afxdp_poll, timers, app loop). Those rows are
  mostly idle time when the side waits for the peer, not a per-packet cost.
- Kernel rows are what ran on this process's CPU while it ran: its sendto() kicks carry the
  whole copy-mode transmit path and, through the softirq raised by veth_xmit, the peer's receive
  path (veth NAPI, XDP redirect, copy into the peer's UMEM). So the kernel cost of the packets a
  side receives shows up in the other side's column. Softirq work deferred to ksoftirqd or run
  while another task had the CPU is in neither column.
- Parse and ICRC check cover every packet received, ACKs too: on the data sender they are the
  ACKs' (the packet type is known only after parsing). Build + ICRC of ACKs is in ACK generation.
- Copies and CRCs are given to a step by their caller; glibc's memmove and ISA-L's crc32 keep
  no frame pointer, so the chain shows the caller's caller (see the tables in profile_steps.py).""")
    if a.unclassified:
        for name, col in (("client", c), ("server", sv)):
            print(f"\n{name}: most frequent chains in 'other' (whole run)")
            for chain, n in col["side"].unclassified.most_common(a.unclassified):
                print(f"  {n:6d} {chain}")


if __name__ == "__main__":
    main()
