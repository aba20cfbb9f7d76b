#!/usr/bin/python3
"""The attacker of the conformance suite: builds RoCEv2 packets with scapy in
its own network namespace, sends them at conf_peer's victim QPs and at the
legitimate connection, and checks each case from outside the process (IBTA
Vol. 1 ch. 9, the receive checks of the kernel's rdma_rxe).

For every case: exactly the expected drop counter moved, the expected
response (NAK syndrome and PSN, ACK, or nothing) came back, the QP is in the
expected state with its PSNs, no byte outside the registered regions (nor in
a region the case must not touch) changed, and the legitimate connection
went on with its data verified. One line per case, PASS or FAIL; exit 1 on
any failure.

  conformance.py --iface IF --my-mac MAC --ctl UNIX_SOCKET --my-ip A --spoof-ip B --other-ip C --srv-ip2 D [--only TEXT]
"""
import argparse
import json
import random
import socket
import struct
import sys
import time

from scapy.all import Ether, IP, UDP, Raw, Packet, bind_layers, conf, raw  # noqa: E402
from scapy.fields import XLongField, XIntField, IntField, XByteField, XBitField, LongField
from scapy.contrib.roce import BTH, AETH

ROCE_PORT = 4791
PSN_MASK = 0xFFFFFF
MTU = 1024                    # the victims' path MTU
SETTLE_S = 0.25               # time for the server to act on a case and answer
LEGIT_STEPS = 3               # legit iterations that must follow every case
LEGIT_WAIT_S = 3.0

# opcodes (transport | operation)
RC, UC, UD = 0x00, 0x20, 0x60
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = 0x00, 0x01, 0x02, 0x04
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
READ_REQUEST, READ_RESP_FIRST, READ_RESP_LAST, READ_RESP_ONLY = 0x0C, 0x0D, 0x0F, 0x10
ACK, ATOMIC_ACK, CMP_SWAP, FETCH_ADD = 0x11, 0x12, 0x13, 0x14

OP_NAMES = {READ_RESP_FIRST: "READ response FIRST", READ_RESP_LAST: "READ response LAST",
            READ_RESP_ONLY: "READ response ONLY", ACK: "ACK", ATOMIC_ACK: "ATOMIC ACK"}

NAK_INVALID_REQ = 0x61
NAK_REM_ACCESS = 0x62


class RETH(Packet):
    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dma_len", 0)]


class AtomicETH(Packet):
    name = "AtomicETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), LongField("swap_add", 0), LongField("compare", 0)]


class AtomicAckETH(Packet):
    name = "AtomicAckETH"
    fields_desc = [LongField("orig", 0)]


class DETH(Packet):
    name = "DETH"
    fields_desc = [XIntField("qkey", 0), XByteField("resv", 0), XBitField("src_qp", 0, 24)]


for _op in (WRITE_FIRST, WRITE_ONLY, READ_REQUEST):
    bind_layers(BTH, RETH, opcode=RC | _op)
bind_layers(BTH, RETH, opcode=UC | WRITE_ONLY)
bind_layers(BTH, AtomicETH, opcode=RC | CMP_SWAP)
bind_layers(BTH, AtomicETH, opcode=RC | FETCH_ADD)
bind_layers(BTH, DETH, opcode=UD | SEND_ONLY)


def psn_add(psn, n):
    return (psn + n) & PSN_MASK


class Failed(Exception):
    pass


class Control:
    """conf_peer's control socket: one command line, one JSON line back."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(path)
        self.buf = b""

    def cmd(self, line):
        self.s.sendall(line.encode() + b"\n")
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise Failed("the server closed the control socket")
            self.buf += chunk
        out, self.buf = self.buf.split(b"\n", 1)
        reply = json.loads(out)
        if not reply.get("ok"):
            raise Failed("control '%s': %s" % (line, reply.get("error")))
        return reply


class Wire:
    """Sends forged frames and collects what the server sends to this host."""

    def __init__(self, iface, my_mac, srv_mac):
        self.iface = iface
        self.my_mac = my_mac
        self.srv_mac = srv_mac
        self.tx = conf.L2socket(iface=iface)
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        self.rx.bind((iface, 0))
        self.rx.setblocking(False)
        # the kernel would answer the server's packets with ICMP port
        # unreachable; a bound socket keeps the link quiet
        self.sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sink.bind(("0.0.0.0", ROCE_PORT))

    def send(self, frames):
        for f in frames:
            self.tx.send(f)

    def drain(self):
        """RoCEv2 packets received since the last call: (opcode, dqpn, psn, syndrome, raw)."""
        got = []
        while True:
            try:
                data, addr = self.rx.recvfrom(65535)
            except BlockingIOError:
                return got
            if addr[2] == socket.PACKET_OUTGOING or len(data) < 14 + 20 + 8 + 12:
                continue
            ihl = (data[14] & 0xF) * 4
            if data[14 + 9] != 17:
                continue
            udp = 14 + ihl
            if struct.unpack("!H", data[udp + 2:udp + 4])[0] != ROCE_PORT:
                continue
            b = udp + 8
            op = data[b]
            dqpn = struct.unpack("!I", data[b + 4:b + 8])[0] & PSN_MASK
            psn = struct.unpack("!I", data[b + 8:b + 12])[0] & PSN_MASK
            syn = None
            if op & 0x1F in (READ_RESP_FIRST, READ_RESP_LAST, READ_RESP_ONLY, ACK, ATOMIC_ACK):
                syn = data[b + 12]
            got.append((op, dqpn, psn, syn, data))


class Suite:
    def __init__(self, args):
        self.a = args
        self.ctl = Control(args.ctl)
        self.info = self.ctl.cmd("info")
        self.wire = Wire(args.iface, args.my_mac, self.info["mac"])
        self.results = []
        self.sport = 49152 + random.randrange(4096)

    # ---- packets ---------------------------------------------------------
    def frame(self, opcode, dqpn, psn, ext=None, payload=b"", src=None, dst=None, pkey=0xFFFF, ackreq=1,
              bad_icrc=False):
        pad = (4 - len(payload) % 4) % 4
        bth = BTH(opcode=opcode, padcount=pad, pkey=pkey, dqpn=dqpn, ackreq=ackreq, psn=psn & PSN_MASK)
        roce = bth / ext if ext is not None else bth
        roce = roce / Raw(payload + b"\0" * pad) if payload or pad else roce
        f = (Ether(src=self.wire.my_mac, dst=self.wire.srv_mac) /
             IP(src=src or self.a.my_ip, dst=dst or self.info["ip"], flags="DF", ttl=64) /
             UDP(sport=self.sport, dport=ROCE_PORT, chksum=0) / roce)
        data = bytearray(raw(f))
        if bad_icrc:
            data[-1] ^= 0x5A
        return Ether(bytes(data))

    def victim(self, name):
        return self.ctl.cmd("info")["victims"][name]

    def legit(self):
        return self.ctl.cmd("info")["legit"]

    # ---- checks ----------------------------------------------------------
    @staticmethod
    def drop_delta(before, after):
        return {k: after["drops"][k] - before["drops"][k] for k in after["drops"]
                if after["drops"][k] != before["drops"][k]}

    def wait_legit(self, before, errs):
        """The legit connection went on: LEGIT_STEPS more verified iterations, no error."""
        deadline = time.monotonic() + LEGIT_WAIT_S
        want = before["legit"]["seq"] + LEGIT_STEPS
        while True:
            st = self.ctl.cmd("stats")
            if st["legit"]["seq"] >= want or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        lg = st["legit"]
        if lg["seq"] < want:
            errs.append("legit connection stalled: iteration %d, wanted %d within %.0f s (state %s)"
                        % (lg["seq"], want, LEGIT_WAIT_S, st["qps"]["legit"]["state"]))
        if lg["verify_errors"] or lg["client_errors"] or lg["reply_errors"] or lg["fatal"]:
            errs.append("legit connection errors: verify %d, client %d, reply %d, fatal %d (%s)"
                        % (lg["verify_errors"], lg["client_errors"], lg["reply_errors"], lg["fatal"],
                           lg["first_error"]))
        if st["qps"]["legit"]["state"] != "RTS":
            errs.append("legit QP is %s" % st["qps"]["legit"]["state"])
        return st

    def run(self, name, fn):
        """One case: fn sends its packets and returns its expectation."""
        errs = []
        try:
            self.wire.drain()
            before = self.ctl.cmd("stats")
            exp = fn(before)
            time.sleep(exp.get("settle", SETTLE_S))
            got = self.wire.drain()
            after = self.ctl.cmd("stats")
            self.check(exp, before, after, got, errs)
            self.wait_legit(before, errs)
            self.cleanup(exp)
        except Failed as e:
            errs.append(str(e))
        except (OSError, ValueError, KeyError) as e:
            errs.append("harness error: %r" % (e,))
        self.results.append((name, errs))
        print(("PASS %s" % name) if not errs else ("FAIL %s: %s" % (name, "; ".join(errs))), flush=True)

    def check(self, exp, before, after, got, errs):
        delta = self.drop_delta(before, after)
        if delta != exp["drops"]:
            errs.append("drops %s, expected %s" % (json.dumps(delta, sort_keys=True) if delta else "none",
                                                   json.dumps(exp["drops"], sort_keys=True) if exp["drops"]
                                                   else "none"))
        v = exp.get("qp")
        if v:
            q0, q1 = before["qps"][v], after["qps"][v]
            mine = [g for g in got if g[1] == q1["peer_qpn"]] if v != "legit" else []
            self.check_responses(exp, mine, errs)
            if "state" in exp and q1["state"] != exp["state"]:
                errs.append("%s QP is %s, expected %s" % (v, q1["state"], exp["state"]))
            if exp.get("psn_unchanged", False):
                for k in ("rq_psn", "sq_psn"):
                    if q0[k] != q1[k]:
                        errs.append("%s %s moved %d -> %d" % (v, k, q0[k], q1[k]))
            if exp.get("rq_psn") is not None and q1["rq_psn"] != exp["rq_psn"]:
                errs.append("%s rq_psn %d, expected %d" % (v, q1["rq_psn"], exp["rq_psn"]))
            if exp.get("credits_unchanged"):
                for k in ("lsn", "credit_unlimited"):
                    if q0[k] != q1[k]:
                        errs.append("%s credits changed: %s %s -> %s" % (v, k, q0[k], q1[k]))
            if exp.get("no_rnr_wait") and q1["rnr_wait"]:
                errs.append("%s is waiting out an RNR NAK" % v)
            for k in ("rnr_naks_rcvd", "seq_naks_rcvd"):
                if exp.get("no_naks_taken") and q1[k] != q0[k]:
                    errs.append("%s took %d forged NAKs (%s)" % (v, q1[k] - q0[k], k))
            if exp.get("recv_ok_unchanged") and q1["recv_ok"] != q0["recv_ok"]:
                errs.append("%s completed %d receives" % (v, q1["recv_ok"] - q0["recv_ok"]))
        # memory: victim regions, the legit region's unused gaps, the guards
        allowed = exp.get("changes", {})
        for rname, r in after["regions"].items():
            if r["diff_first"] < 0:
                if rname in allowed and allowed[rname][2]:
                    errs.append("%s: nothing placed, expected bytes %d..%d" % (rname, allowed[rname][0],
                                                                            allowed[rname][1] - 1))
                continue
            lo, hi = allowed.get(rname, (0, 0, False))[:2]
            if r["diff_first"] < lo or r["diff_last"] >= hi:
                errs.append("%s changed at bytes %d..%d%s" % (rname, r["diff_first"], r["diff_last"],
                                                              ", allowed %d..%d" % (lo, hi - 1) if hi else ""))
        if after["guard_first_bad"] >= 0:
            errs.append("%d guard bytes outside the registered regions changed, the first at arena offset %d"
                        % (after["guard_bad"], after["guard_first_bad"]))
        for rname, (off, data) in exp.get("content", {}).items():
            h = self.ctl.cmd("dump %s %d %d" % (rname, off, len(data)))["hex"]
            if bytes.fromhex(h) != data:
                errs.append("%s bytes %d..%d do not hold what was written" % (rname, off, off + len(data) - 1))

    @staticmethod
    def describe(got):
        return ", ".join("%s PSN %d%s" % (OP_NAMES.get(g[0], "opcode 0x%02x" % g[0]), g[2],
                                          " syndrome 0x%02x" % g[3] if g[3] is not None else "")
                         for g in got) or "nothing"

    def check_responses(self, exp, got, errs):
        want = exp.get("responses", "none")
        if want == "none":
            if got:
                errs.append("expected no response, got %s" % self.describe(got))
            return
        if want == "any":
            return
        # want: list of (opcode, psn, syndrome or None); each must arrive,
        # and no NAK other than those listed
        for op, psn, syn in want:
            if op == ACK and syn is not None and syn >= 0x60:
                ok = any(g[0] == ACK and g[2] == psn and g[3] == syn for g in got)
            elif op == ACK:
                # ACKs coalesce: an ACK of this PSN or a later one, or a NAK
                # of a later one (which acknowledges every PSN before it)
                ok = any(g[0] == ACK and ((g[3] < 0x20 and (g[2] - psn) & PSN_MASK < 0x800000) or
                                          (g[3] >= 0x60 and 0 < (g[2] - psn) & PSN_MASK < 0x800000))
                         for g in got)
            else:
                ok = any(g[0] == op and g[2] == psn for g in got)
            if not ok:
                what = ("NAK 0x%02x" % syn if syn is not None and syn >= 0x60
                        else OP_NAMES.get(op, "opcode 0x%02x" % op))
                errs.append("expected %s at PSN %d, got %s" % (what, psn, self.describe(got)))
        naks = {(psn, syn) for op, psn, syn in want if syn is not None and syn >= 0x20}
        for g in got:
            if g[0] == ACK and g[3] >= 0x20 and (g[2], g[3]) not in naks:
                errs.append("unexpected NAK 0x%02x at PSN %d" % (g[3], g[2]))

    def cleanup(self, exp):
        st = self.ctl.cmd("stats")
        broken = {q for q in ("rc", "rc0", "uc", "ud") if st["qps"][q]["state"] != "RTS"}
        for name in sorted(set(exp.get("reset", [])) | broken):
            self.ctl.cmd("reset %s" % name)
        for rname, r in st["regions"].items():
            if r["diff_first"] >= 0:
                self.ctl.cmd("refill %s" % rname)


# ==========================================================================
# The cases. Each sends its packets and returns what must be seen:
#   drops: {reason: count} (exactly; every other reason must stay)
#   qp: the QP the case is about; responses: "none" | "any" | [(op, psn, syndrome)]
#   state, psn_unchanged, rq_psn, credits_unchanged, no_rnr_wait, no_naks_taken
#   changes: {region: (first, end, must_change)} bytes allowed to change
#   content: {region: (offset, bytes)} what they must hold
# ==========================================================================

def payload(n, seed):
    r = random.Random(seed)
    return bytes(r.randrange(256) for _ in range(n))


def write_only(s, v, off, data, tr=RC, **kw):
    return s.frame(tr | WRITE_ONLY, v["qpn"], v["rq_psn"], RETH(va=v["va"] + off, rkey=v["rkey"], dma_len=len(data)),
                   data, **kw)


def dropped(qp, reason, n=1, **kw):
    e = {"drops": {reason: n}, "qp": qp, "responses": "none", "state": "RTS", "psn_unchanged": True}
    e.update(kw)
    return e


def naked(qp, reason, psn, syn, **kw):
    e = {"drops": {reason: 1}, "qp": qp, "responses": [(ACK, psn, syn)], "state": "ERR", "reset": [qp]}
    e.update(kw)
    return e


def cases(s):
    a = s.a
    out = []

    def case(fn):
        out.append((fn.__name__, fn))
        return fn

    # ---- positive controls: the packets the attacks are made from are good
    @case
    def control_write_accepted(st):
        v = s.victim("rc")
        data = payload(64, 1)
        s.wire.send([write_only(s, v, 256, data)])
        return {"drops": {}, "qp": "rc", "responses": [(ACK, v["rq_psn"], None)], "state": "RTS",
                "rq_psn": psn_add(v["rq_psn"], 1), "changes": {"rc_data": (256, 320, True)},
                "content": {"rc_data": (256, data)}}

    @case
    def pkey_7fff_accepted(st):
        # IBTA P_Key membership: the low 15 bits match, one side a full member
        v = s.victim("rc")
        data = payload(64, 2)
        s.wire.send([write_only(s, v, 512, data, pkey=0x7FFF)])
        return {"drops": {}, "qp": "rc", "responses": [(ACK, v["rq_psn"], None)], "state": "RTS",
                "rq_psn": psn_add(v["rq_psn"], 1), "changes": {"rc_data": (512, 576, True)},
                "content": {"rc_data": (512, data)}}

    @case
    def atomic_control_accepted(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | FETCH_ADD, v["qpn"], v["rq_psn"],
                             AtomicETH(va=v["va"] + 64, rkey=v["rkey"], swap_add=5))])
        return {"drops": {}, "qp": "rc", "responses": [(ATOMIC_ACK, v["rq_psn"], None)], "state": "RTS",
                "rq_psn": psn_add(v["rq_psn"], 1), "changes": {"rc_data": (64, 72, True)}}

    @case
    def ud_control_accepted(st):
        v = s.victim("ud")
        s.wire.send([s.frame(UD | SEND_ONLY, v["qpn"], 0, DETH(qkey=v["qkey"], src_qp=0xA7FFFF), payload(64, 3))])
        return {"drops": {}, "qp": "ud", "responses": "none", "changes": {"ud_recv": (0, v["recv_len"], True)},
                "reset": ["ud"]}

    # ---- addresses and keys of the connection (rxe check_addr / check_keys)
    @case
    def wrong_src_ip_rc(st):
        v = s.victim("rc")
        s.wire.send([write_only(s, v, 256, payload(64, 4), src=a.spoof_ip)])
        return dropped("rc", "bad_src_addr")

    @case
    def wrong_src_ip_read(st):
        # a READ in another host's name would disclose memory to the peer
        v = s.victim("rc")
        s.wire.send([s.frame(RC | READ_REQUEST, v["qpn"], v["rq_psn"], RETH(va=v["va"], rkey=v["rkey"], dma_len=256),
                             src=a.spoof_ip)])
        return dropped("rc", "bad_src_addr")

    @case
    def wrong_src_ip_uc(st):
        v = s.victim("uc")
        s.wire.send([write_only(s, v, 256, payload(64, 5), tr=UC, src=a.spoof_ip)])
        return dropped("uc", "bad_src_addr")

    @case
    def wrong_dst_ip(st):
        v = s.victim("rc")
        s.wire.send([write_only(s, v, 256, payload(64, 6), dst=a.other_ip)])
        return dropped("rc", "bad_dst_addr")

    @case
    def dst_other_gid_of_port(st):
        # rxe's check_addr: a connected QP takes packets at its own GID
        # only, not at any address of the port
        v = s.victim("rc")
        s.wire.send([write_only(s, v, 256, payload(64, 61), dst=a.srv_ip2)])
        return dropped("rc", "bad_dst_addr")

    @case
    def wrong_pkey(st):
        v = s.victim("rc")
        s.wire.send([write_only(s, v, 256, payload(64, 7), pkey=0x1234)])
        return dropped("rc", "bad_pkey")

    @case
    def wrong_qkey_ud(st):
        v = s.victim("ud")
        s.wire.send([s.frame(UD | SEND_ONLY, v["qpn"], 0, DETH(qkey=v["qkey"] ^ 0x33, src_qp=0xA7FFFF),
                             payload(64, 8))])
        return dropped("ud", "bad_qkey", recv_ok_unchanged=True)

    # ---- memory keys and bounds (class C: NAK remote access error, QP to ERR)
    @case
    def bad_rkey(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | WRITE_ONLY, v["qpn"], v["rq_psn"],
                             RETH(va=v["va"] + 256, rkey=v["rkey"] ^ 0x5A, dma_len=64), payload(64, 9))])
        return naked("rc", "bad_rkey", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def uc_bad_rkey(st):
        # UC has no NAK: the message is dropped and the QP stays in RTS
        v = s.victim("uc")
        s.wire.send([s.frame(UC | WRITE_ONLY, v["qpn"], v["rq_psn"],
                             RETH(va=v["va"] + 256, rkey=v["rkey"] ^ 0x5A, dma_len=64), payload(64, 33))])
        return dropped("uc", "bad_rkey", psn_unchanged=False)

    @case
    def lkey_as_rkey(st):
        v = s.victim("rc")
        if v["lkey"] == v["rkey"]:
            raise Failed("the region's lkey is its rkey (0x%x): a local key opens it to the peer" % v["rkey"])
        s.wire.send([s.frame(RC | WRITE_ONLY, v["qpn"], v["rq_psn"],
                             RETH(va=v["va"] + 256, rkey=v["lkey"], dma_len=64), payload(64, 31))])
        return naked("rc", "bad_rkey", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def revoked_rkey(st):
        # the rkey of a registration of the same memory, deregistered
        v = s.victim("rc")
        s.wire.send([s.frame(RC | WRITE_ONLY, v["qpn"], v["rq_psn"],
                             RETH(va=v["va"] + 256, rkey=s.info["revoked_rkey"], dma_len=64), payload(64, 32))])
        return naked("rc", "bad_rkey", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def rkey_of_other_pd(st):
        v, lg = s.victim("rc"), s.legit()
        # a valid key of the legit connection's PD, aimed at a gap the legit traffic never writes
        s.wire.send([s.frame(RC | WRITE_ONLY, v["qpn"], v["rq_psn"],
                             RETH(va=lg["va"] + 3500, rkey=lg["rkey"], dma_len=64), payload(64, 10))])
        return naked("rc", "bad_rkey", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def va_past_mr_end(st):
        v = s.victim("rc")
        s.wire.send([write_only(s, v, v["len"], payload(64, 11))])
        return naked("rc", "out_of_bounds", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def va_before_mr(st):
        v = s.victim("rc")
        s.wire.send([write_only(s, v, -64, payload(64, 12))])
        return naked("rc", "out_of_bounds", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def va_len_wraps_2_64(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | WRITE_ONLY, v["qpn"], v["rq_psn"],
                             RETH(va=(1 << 64) - 32, rkey=v["rkey"], dma_len=64), payload(64, 13))])
        return naked("rc", "out_of_bounds", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def read_len_wraps_2_64(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | READ_REQUEST, v["qpn"], v["rq_psn"],
                             RETH(va=(1 << 64) - 64, rkey=v["rkey"], dma_len=128))])
        return naked("rc", "out_of_bounds", v["rq_psn"], NAK_REM_ACCESS)

    @case
    def misaligned_atomic(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | FETCH_ADD, v["qpn"], v["rq_psn"],
                             AtomicETH(va=v["va"] + 68, rkey=v["rkey"], swap_add=1))])
        return naked("rc", "misaligned", v["rq_psn"], NAK_INVALID_REQ)

    # ---- message structure (class C: NAK invalid request)
    @case
    def send_longer_than_recv_buffer(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | SEND_ONLY, v["qpn"], v["rq_psn"], None, payload(v["recv_len"] + 64, 14))])
        return naked("rc", "bad_msg_length", v["rq_psn"], NAK_INVALID_REQ)

    @case
    def middle_without_first(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | SEND_MIDDLE, v["qpn"], v["rq_psn"], None, payload(MTU, 15))])
        return naked("rc", "bad_opcode", v["rq_psn"], NAK_INVALID_REQ)

    @case
    def middle_after_last(st):
        v = s.victim("rc")
        p = v["rq_psn"]
        s.wire.send([
            s.frame(RC | WRITE_FIRST, v["qpn"], p, RETH(va=v["va"] + 1024, rkey=v["rkey"], dma_len=2 * MTU),
                    payload(MTU, 16), ackreq=0),
            s.frame(RC | WRITE_LAST, v["qpn"], psn_add(p, 1), None, payload(MTU, 17)),
            s.frame(RC | WRITE_MIDDLE, v["qpn"], psn_add(p, 2), None, payload(MTU, 18)),
        ])
        return naked("rc", "bad_opcode", psn_add(p, 2), NAK_INVALID_REQ,
                     responses=[(ACK, psn_add(p, 1), None), (ACK, psn_add(p, 2), NAK_INVALID_REQ)],
                     changes={"rc_data": (1024, 1024 + 2 * MTU, True)})

    @case
    def write_past_reth_length(st):
        v = s.victim("rc")
        p = v["rq_psn"]
        first = payload(MTU, 19)
        s.wire.send([
            s.frame(RC | WRITE_FIRST, v["qpn"], p, RETH(va=v["va"] + 4096, rkey=v["rkey"], dma_len=1500),
                    first, ackreq=0),
            s.frame(RC | WRITE_LAST, v["qpn"], psn_add(p, 1), None, payload(MTU, 20)),
        ])
        return naked("rc", "bad_msg_length", psn_add(p, 1), NAK_INVALID_REQ,
                     changes={"rc_data": (4096, 4096 + 1500, False)})

    @case
    def write_middle_past_reth_length(st):
        v = s.victim("rc")
        p = v["rq_psn"]
        s.wire.send([
            s.frame(RC | WRITE_FIRST, v["qpn"], p, RETH(va=v["va"] + 4096, rkey=v["rkey"], dma_len=2000),
                    payload(MTU, 21), ackreq=0),
            s.frame(RC | WRITE_MIDDLE, v["qpn"], psn_add(p, 1), None, payload(MTU, 22), ackreq=0),
        ])
        return naked("rc", "bad_msg_length", psn_add(p, 1), NAK_INVALID_REQ,
                     changes={"rc_data": (4096, 4096 + 2000, False)})

    # ---- responder resources (max_dest_rd_atomic)
    @case
    def read_past_responder_resources(st):
        v = s.victim("rc")
        n = v["max_dest_rd_atomic"]
        p = v["rq_psn"]
        frames = [s.frame(RC | READ_REQUEST, v["qpn"], psn_add(p, i),
                          RETH(va=v["va"] + 64 * i, rkey=v["rkey"], dma_len=64)) for i in range(n + 1)]
        # all N + 1 outstanding at once: the server takes them in one
        # receive burst, before any response has left
        s.ctl.cmd("hold 30")
        s.wire.send(frames)
        return naked("rc", "rd_atomic_limit", psn_add(p, n), NAK_INVALID_REQ,
                     responses=[(RC | READ_RESP_ONLY, psn_add(p, i), None) for i in range(n)] +
                               [(ACK, psn_add(p, n), NAK_INVALID_REQ)])

    @case
    def duplicate_read_holds_no_resource(st):
        # Anyone on the link can send a duplicate READ (it needs no
        # in-window PSN). Its answer, sent again, must not hold a responder
        # resource: with both resources' READs answered, duplicates of them
        # and a new READ in one burst: the new READ is answered, no NAK.
        v = s.victim("rc")
        n = v["max_dest_rd_atomic"]
        p = v["rq_psn"]

        def read(i):
            return s.frame(RC | READ_REQUEST, v["qpn"], psn_add(p, i), RETH(va=v["va"] + 64 * i, rkey=v["rkey"],
                                                                            dma_len=64))
        s.wire.send([read(i) for i in range(n)])
        time.sleep(0.2)  # their answers have left: no resource is busy
        s.ctl.cmd("hold 30")
        s.wire.send([read(i) for i in range(n)] + [read(n)])
        return {"drops": {"duplicate": n}, "qp": "rc", "state": "RTS", "rq_psn": psn_add(p, n + 1),
                "responses": [(RC | READ_RESP_ONLY, psn_add(p, i), None) for i in range(n + 1)]}

    @case
    def read_with_zero_responder_resources(st):
        v = s.victim("rc0")
        s.wire.send([s.frame(RC | READ_REQUEST, v["qpn"], v["rq_psn"],
                             RETH(va=v["va"], rkey=v["rkey"], dma_len=64))])
        return naked("rc0", "rd_atomic_limit", v["rq_psn"], NAK_INVALID_REQ)

    @case
    def atomic_with_zero_responder_resources(st):
        v = s.victim("rc0")
        s.wire.send([s.frame(RC | CMP_SWAP, v["qpn"], v["rq_psn"],
                             AtomicETH(va=v["va"] + 8, rkey=v["rkey"], swap_add=7, compare=0))])
        return naked("rc0", "rd_atomic_limit", v["rq_psn"], NAK_INVALID_REQ)

    # ---- responses outside the outstanding window (IBTA 9.9; idle victim)
    @case
    def ghost_ack_idle(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | ACK, v["qpn"], psn_add(v["sq_psn"], 100), AETH(syndrome=0x05, msn=0))])
        return dropped("rc", "stale_response", credits_unchanged=True)

    @case
    def ghost_nak_idle(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | ACK, v["qpn"], psn_add(v["sq_psn"], -1), AETH(syndrome=NAK_REM_ACCESS, msn=0))])
        return dropped("rc", "stale_response", no_naks_taken=True)

    @case
    def stale_nak_million_behind_idle(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | ACK, v["qpn"], psn_add(v["sq_psn"], -1000000),
                             AETH(syndrome=NAK_REM_ACCESS, msn=0))])
        return dropped("rc", "stale_response", no_naks_taken=True)

    @case
    def ghost_atomic_ack_idle(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | ATOMIC_ACK, v["qpn"], v["sq_psn"], AETH(syndrome=0, msn=0) / AtomicAckETH(orig=7))])
        return dropped("rc", "stale_response")

    @case
    def ghost_read_response_idle(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | READ_RESP_ONLY, v["qpn"], v["sq_psn"], AETH(syndrome=0, msn=0), payload(64, 24))])
        return dropped("rc", "stale_response")

    @case
    def credit_poisoning_idle(st):
        v = s.victim("rc")
        q = psn_add(v["sq_psn"], -1000000)
        s.wire.send([s.frame(RC | ACK, v["qpn"], q, AETH(syndrome=0x1F, msn=0)),        # invalid credit: "unlimited"
                     s.frame(RC | ACK, v["qpn"], q, AETH(syndrome=0x00, msn=0xFFFFFF)),  # zero credits
                     s.frame(RC | ACK, v["qpn"], q, AETH(syndrome=0x1E, msn=0x7FFFFF))])  # huge MSN
        return dropped("rc", "stale_response", 3, credits_unchanged=True)

    # ---- responses forged in the legit peer's name at the legit QP
    def legit_forged(syndrome, psn_of, n=1, op=RC | ACK):
        def fn(st):
            lg = s.legit()
            s.wire.send([s.frame(op, lg["qpn"], psn_of(lg, i), AETH(syndrome=syndrome, msn=0), src=lg["peer_ip"])
                         for i in range(n)])
            return {"drops": {"stale_response": n}, "qp": "legit", "state": "RTS", "no_naks_taken": True,
                    "no_rnr_wait": True}
        return fn

    out.append(("stale_nak_legit", legit_forged(NAK_REM_ACCESS, lambda lg, i: psn_add(lg["sq_psn"], -1000000))))
    out.append(("stale_ack_legit", legit_forged(0x05, lambda lg, i: psn_add(lg["sq_psn"], -1000000))))
    out.append(("ghost_ack_legit", legit_forged(0x05, lambda lg, i: psn_add(lg["sq_psn"], 5000))))
    out.append(("credit_poisoning_legit", legit_forged(0x1F, lambda lg, i: psn_add(lg["sq_psn"], -1000000))))

    @case
    def rnr_nak_flood_legit(st):
        lg = s.legit()
        n = 200
        # RNR NAKs with timer 31 (491 ms each) at PSNs outside the window
        s.wire.send([s.frame(RC | ACK, lg["qpn"], psn_add(lg["sq_psn"], -1000000 - i),
                             AETH(syndrome=0x3F, msn=0), src=lg["peer_ip"]) for i in range(n // 2)] +
                    [s.frame(RC | ACK, lg["qpn"], psn_add(lg["sq_psn"], 100000 + i),
                             AETH(syndrome=0x3F, msn=0), src=lg["peer_ip"]) for i in range(n // 2)])
        return {"drops": {"stale_response": n}, "qp": "legit", "state": "RTS", "no_naks_taken": True,
                "no_rnr_wait": True}

    # ---- frames the parser must refuse
    @case
    def no_such_qp(st):
        v = s.victim("rc")
        s.wire.send([s.frame(RC | WRITE_ONLY, 0xFFFFF0, v["rq_psn"], RETH(va=v["va"], rkey=v["rkey"], dma_len=64),
                             payload(64, 30))])
        return dropped("rc", "no_qp")

    @case
    def truncated_in_bth(st):
        v = s.victim("rc")
        full = raw(write_only(s, v, 256, payload(64, 25)))
        bth = full[14 + 20 + 8:14 + 20 + 8 + 8]
        f = (Ether(src=s.wire.my_mac, dst=s.wire.srv_mac) / IP(src=a.my_ip, dst=s.info["ip"]) /
             UDP(sport=s.sport, dport=ROCE_PORT, chksum=0) / Raw(bth))
        s.wire.send([f])
        return dropped("rc", "short_frame")

    @case
    def truncated_in_reth(st):
        v = s.victim("rc")
        full = raw(write_only(s, v, 256, payload(64, 26)))
        cut = full[14 + 20 + 8:14 + 20 + 8 + 12 + 8] + full[-4:]  # BTH, 8 of RETH's 16 bytes, an ICRC
        f = (Ether(src=s.wire.my_mac, dst=s.wire.srv_mac) / IP(src=a.my_ip, dst=s.info["ip"]) /
             UDP(sport=s.sport, dport=ROCE_PORT, chksum=0) / Raw(cut))
        s.wire.send([f])
        return dropped("rc", "short_frame")

    @case
    def frame_shorter_than_ip_length(st):
        v = s.victim("rc")
        full = raw(write_only(s, v, 256, payload(64, 27)))
        s.wire.send([Ether(full[:-40])])  # IP and UDP lengths still claim the whole packet
        return dropped("rc", "bad_length")

    @case
    def bad_icrc(st):
        v = s.victim("rc")
        s.wire.send([write_only(s, v, 256, payload(64, 28), bad_icrc=True)])
        return dropped("rc", "bad_icrc")

    # ---- last: a forged WRITE at the legit QP in another host's name
    @case
    def wrong_src_ip_legit(st):
        lg = s.legit()
        n = 16  # PSNs from the expected one on: one of them is the legit peer's next
        s.wire.send([s.frame(RC | WRITE_ONLY, lg["qpn"], psn_add(lg["rq_psn"], i),
                             RETH(va=lg["va"] + 3072 + 16 * i, rkey=lg["rkey"], dma_len=16), payload(16, 29 + i))
                     for i in range(n)])
        return {"drops": {"bad_src_addr": n}, "qp": "legit", "state": "RTS"}

    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--my-mac", required=True)
    ap.add_argument("--ctl", required=True, help="conf_peer's control socket")
    ap.add_argument("--my-ip", required=True, help="this host: the victims' connected peer")
    ap.add_argument("--spoof-ip", required=True, help="a source address no QP is connected to")
    ap.add_argument("--other-ip", required=True, help="a destination address that is not the server's")
    ap.add_argument("--srv-ip2", required=True,
                    help="a second address of the server's port (in its GID table), not the one its QPs use")
    ap.add_argument("--only", help="run only the cases whose names contain this")
    args = ap.parse_args()
    random.seed(7)
    s = Suite(args)
    table = cases(s)
    todo = [c for c in table if not args.only or args.only in c[0]]
    if not todo:
        print("conformance: FAIL: --only %r matches none of the %d cases (e.g. %s)"
              % (args.only, len(table), ", ".join(n for n, _ in table[:5])), flush=True)
        return 1
    t0 = time.monotonic()
    for name, fn in todo:
        s.run(name, fn)
    fails = [n for n, e in s.results if e]
    st = s.ctl.cmd("stats")
    print("conformance: asynchronous events raised (element:ibv_event_type): %s"
          % (" ".join(st["events"]) or "none"))
    print("conformance: %d cases, %d passed, %d failed in %.1f s; legit connection: %d iterations verified"
          % (len(s.results), len(s.results) - len(fails), len(fails), time.monotonic() - t0, st["legit"]["seq"]))
    if not args.only and len(s.results) < len(table):
        print("conformance: FAIL: %d of the table's %d cases ran" % (len(s.results), len(table)), flush=True)
        return 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
