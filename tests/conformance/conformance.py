#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The attacker of the conformance suite: builds RoCEv2 packets with scapy in
its own network namespace, sends them at conf_peer's victim QPs and at the
legitimate connections (rc, sr and be), and checks each case from outside
the process (IBTA Vol. 1 ch. 9, the receive checks of the kernel's rdma_rxe;
for sr, ec and be, docs/wire.md "sr and ec" and "be").

For every case: exactly the expected drop counter moved, the expected
response (NAK syndrome and PSN, ACK, or nothing) came back, the QP is in the
expected state with its PSNs, no byte outside the registered regions (nor in
a region the case must not touch) changed, and the legitimate connection
went on with its data verified. One line per case, PASS or FAIL; exit 1 on
any failure.

  conformance.py --iface IF --my-mac MAC --ctl UNIX_SOCKET --my-ip A --my-ip2 A2 --spoof-ip B --other-ip C
                 --srv-ip2 D [--only TEXT]
"""
import argparse
import json
import random
import socket
import struct
import sys
import time
import zlib

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
WRITE_ONLY_IMM = 0x0B
SEND_ONLY_IMM = 0x05

# sr / ec wire format version 2 (docs/wire.md "sr and ec", transport/rel/sr/sr_wire.h):
# the control header is version | type | be16 length | be32 token, where
# token is the receiving QP's (info "token"). --wire-v1 speaks version 1
# (a 4-byte header, no token) to a build from before the token.
SRW_VERSION = 2
CTRL_HDR = 8
# the token of a victim's peer (conf_peer's VICTIM_PEER_TOKEN): the
# attacker is a victim's peer, and the victim's control packets carry it
PEER_TOKEN = 0xA77AC4E5
SRW_DATA, SRW_LAST, SRW_LAST_DESC, SRW_DESC, SRW_PARITY = 0, 1, 2, 3, 4
SRW_MSG_MASK = 0xFFF
SRW_MSG_WIN = 64              # the receiver's message window (SR_MSG_WIN)
SRW_CTRL_SACK, SRW_CTRL_NACK = 1, 2
SRW_SACK_FIXED = 28
WR_SEND = 2                   # enum uroce_wr_opcode in a descriptor
WR_WRITE_IMM = 1
SR_VICTIMS = ("sr", "srx", "ec", "sre", "sre2", "srk", "eck")
# be (docs/wire.md "be: best effort, version 1"): sr's packets, two more kinds
SRW_BE_WRITE, SRW_BE_TAIL = 5, 6
BE_PSN_AHEAD = 1 << 14        # the receiver's PSN window ahead of the highest PSN seen
BE_MSG_AHEAD = 64             # a message number further ahead of the active one is dropped (stale_msg)
BE_MSG_HALF = 2048            # a number this far behind the active message (mod 4096) is late
WC_PARTIAL, WC_TIMEOUT, WC_PREEMPTED = 1 << 8, 1 << 9, 1 << 10  # enum uroce_wc_flags
# congestion notification and control (docs/wire.md "sr and ec")
CNP = 0x81                    # RoCEv2 CNP: BTH, 16 reserved bytes, ICRC
ECN_CE = 3                    # the IP TOS's ECN bits: congestion experienced
TRIM_TOS = 63 << 2            # DSCP 63 (SRW_TRIM_DSCP): a switch trimmed the packet to its headers
CNP_MIN_GAP_NS = 4000         # at most one CNP per 4 us per QP
SRW_CTRL_TRIM, SRW_CTRL_RTS, SRW_CTRL_PULL = 4, 5, 6
SRW_TRIM_MAX = 32
EQDS_QUANTUM = 16384          # bytes one pacer grant (PULL) adds
EQDS_ASK_AHEAD = 1024 * EQDS_QUANTUM  # credit owed at most this far past the grants (cc_eqds.h)
EQDS_LINK_BPS = 1000000       # the sre/sre2 victims' link (conf_peer's EQDS_LINK_MBPS)
# failover (transport/failover/failover.h): a control packet of type 7 to the QP's
# control QPN, body u8 kind, u8 member (the one it travels on), u8 active,
# u8 fail_mask, be32 seq
SRW_CTRL_FO = 7
SRW_CTRL_VOTE = 3  # be: an adaptive-timeout proposal (transport/rel/be/tmo.c)
SRW_CTRL_SYNC = 8  # be: the sender's next PSN (transport/rel/be/rel_be.c)
FO_NOTICE, FO_NOTICE_ACK, FO_PROBE, FO_PROBE_ACK = 1, 2, 3, 4
FO_KINDS = {1: "notice", 2: "notice ack", 3: "probe", 4: "probe ack"}

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


class ImmDt(Packet):
    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


for _op in (WRITE_FIRST, WRITE_ONLY, READ_REQUEST):
    bind_layers(BTH, RETH, opcode=RC | _op)
bind_layers(BTH, RETH, opcode=UC | WRITE_ONLY)
bind_layers(BTH, RETH, opcode=UC | WRITE_ONLY_IMM)
bind_layers(RETH, ImmDt)
bind_layers(BTH, AtomicETH, opcode=RC | CMP_SWAP)
bind_layers(BTH, AtomicETH, opcode=RC | FETCH_ADD)
bind_layers(BTH, DETH, opcode=UD | SEND_ONLY)


def psn_add(psn, n):
    return (psn + n) & PSN_MASK


def srw_imm(msg, kind, idx):
    """sr immediate: message 12 (slot 8 + generation 4) | kind 3 | index 17"""
    return (msg & SRW_MSG_MASK) << 20 | (kind & 7) << 17 | (idx & 0x1FFFF)


def sack_body(cum, msg_cum=0, msg_bits=0, dups=0, dup_psn=0, msg_limit=0, nbits=256, bitmap=None):
    """A SACK's body (after the 4-byte control header): fixed 28 bytes, then the bitmap."""
    if bitmap is None:
        bitmap = b"\0" * (nbits // 8)
    return struct.pack("!IIIIIIHH", cum & PSN_MASK, msg_cum & 0xFFFFFFFF, msg_bits, dups, dup_psn,
                       msg_limit & 0xFFFFFFFF, nbits, 0) + bitmap


class Ctrl(bytes):
    """A control payload; auto: its token is the target QP's (Suite.sr_ctrl puts it in)."""
    auto = False


def ctrl_payload(ctype, body, version=None, length=None, token=None):
    """Control header: version | type | be16 length (of header + body) |
    be32 token, then the body. token None: the QP's own, filled in by
    Suite.sr_ctrl / fo_ctrl (the connected peer knows it); an int: that."""
    if version is None:
        version = SRW_VERSION
    if length is None:
        length = CTRL_HDR + len(body)
    if CTRL_HDR == 4:  # --wire-v1
        out = Ctrl(struct.pack("!BBH", version, ctype, length & 0xFFFF) + body)
    else:
        out = Ctrl(struct.pack("!BBHI", version, ctype, length & 0xFFFF, (token or 0) & 0xFFFFFFFF) + body)
    out.auto = token is None
    return out


def with_token(payload, token):
    """payload with its control header's token set (a Ctrl whose token was left to the QP)."""
    if CTRL_HDR == 4 or not getattr(payload, "auto", False) or len(payload) < CTRL_HDR:
        return payload
    return payload[:4] + struct.pack("!I", token & 0xFFFFFFFF) + payload[8:]


def desc_payload(version=None, op=WR_SEND, flags=0, ec=0, length=64, imm=0, rkey=0, raddr=0, first_psn=0, token=0):
    """A descriptor (kind 3), 32 bytes; the last 4 the receiver's token
    (checked by a QP keyed by immediate)."""
    if version is None:
        version = SRW_VERSION
    return struct.pack("!BBBBIIIQII", version, op, flags, ec, length, imm, rkey, raddr, first_psn & PSN_MASK,
                       token & 0xFFFFFFFF)


def ip_csum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def fast_frame(src_mac, dst_mac, src_ip, dst_ip, sport, tos, bth_on):
    """An IPv4 RoCEv2 frame built without scapy (tens of us, not tens of
    ms): bth_on is the BTH and everything after it but the ICRC. The ICRC
    as scapy.contrib.roce computes it (IBTA Annex A17: CRC32 over 8 bytes
    of ones, the IP and UDP headers with TOS, TTL and checksums masked to
    ones, the BTH with its reserved byte masked)."""
    mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
    ip4 = lambda a: socket.inet_aton(a)
    total = 20 + 8 + len(bth_on) + 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, total, 1, 0x4000, 64, 17, 0, ip4(src_ip), ip4(dst_ip))
    ip = ip[:10] + struct.pack("!H", ip_csum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, ROCE_PORT, total - 20, 0)
    masked = (b"\xff" * 8 + ip[:1] + b"\xff" + ip[2:8] + b"\xff" + ip[9:10] + b"\xff\xff" + ip[12:] +
              udp[:6] + b"\xff\xff" + bth_on[:4] + b"\xff" + bth_on[5:])
    icrc = struct.pack("<I", zlib.crc32(masked) & 0xFFFFFFFF)
    return mac(dst_mac) + mac(src_mac) + b"\x08\x00" + ip + udp + bth_on + icrc


def bth_bytes(opcode, dqpn, psn, pad=0, ackreq=0, pkey=0xFFFF):
    return struct.pack("!BBHII", opcode, pad << 4, pkey, dqpn & PSN_MASK, (ackreq << 31) | (psn & PSN_MASK))


def parse_sack(data):
    """The control header and SACK fields of a captured frame, or None."""
    ihl = (data[14] & 0xF) * 4
    p = 14 + ihl + 8 + 12
    h = CTRL_HDR
    if len(data) < p + h + SRW_SACK_FIXED + 4 or data[p] != SRW_VERSION or data[p + 1] != SRW_CTRL_SACK:
        return None
    cum, msg_cum, msg_bits, dups, dup_psn, msg_limit, nbits = struct.unpack("!IIIIIIH", data[p + h:p + h + 26])
    return {"cum": cum, "msg_cum": msg_cum, "msg_bits": msg_bits, "dups": dups, "dup_psn": dup_psn,
            "msg_limit": msg_limit, "nbits": nbits}


def parse_ctrl(data):
    """(type, body) of a captured sr/ec control packet (UC SEND Only), or None."""
    ihl = (data[14] & 0xF) * 4
    b = 14 + ihl + 8
    p = b + 12
    if len(data) < p + CTRL_HDR + 4 or data[b] != UC | SEND_ONLY or data[p] != SRW_VERSION:
        return None
    n = struct.unpack("!H", data[p + 2:p + 4])[0]
    return data[p + 1], data[p + CTRL_HDR:p + n]


def ctrl_token(data):
    """The token in a captured control packet's header (None with --wire-v1)."""
    ihl = (data[14] & 0xF) * 4
    p = 14 + ihl + 8 + 12
    if CTRL_HDR == 4 or len(data) < p + 8:
        return None
    return struct.unpack("!I", data[p + 4:p + 8])[0]


def fo_body(kind, member=0, active=0, mask=0, seq=1):
    """A failover control packet's body (after the control header)."""
    return struct.pack("!BBBBI", kind, member, active, mask, seq & 0xFFFFFFFF)


def parse_fo(g):
    """A captured failover control packet: its fields, addresses and source
    MAC (which port sent it), or None."""
    c = parse_ctrl(g[4]) if g[0] == UC | SEND_ONLY else None
    if c is None or c[0] != SRW_CTRL_FO or len(c[1]) < 8:
        return None
    kind, member, active, mask, seq = struct.unpack("!BBBBI", c[1][:8])
    d = g[4]
    return {"kind": kind, "member": member, "active": active, "mask": mask, "seq": seq, "dqpn": g[1],
            "src": socket.inet_ntoa(d[26:30]), "dst": socket.inet_ntoa(d[30:34]),
            "smac": ":".join("%02x" % x for x in d[6:12])}


def trim_body(psns, n=None):
    """TRIM: be16 n, be16 reserved, be32 PSN[n]"""
    return struct.pack("!HH", len(psns) if n is None else n, 0) + b"".join(struct.pack("!I", q & PSN_MASK)
                                                                         for q in psns)


def rts_body(want, spec):
    return struct.pack("!QQ", want, spec)


def pull_body(credit):
    return struct.pack("!Q", credit)


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
        try:  # a busy case (CNPs, PULLs, RTSs) must not overflow the capture
            self.rx.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
        except OSError:
            pass
        # the kernel would answer the server's packets with ICMP port
        # unreachable; a bound socket keeps the link quiet
        self.sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sink.bind(("0.0.0.0", ROCE_PORT))

    def send(self, frames):
        for f in frames:
            self.tx.send(f)

    def send_raw(self, frames):
        """Frames already built (bytes): back to back, a few us apart."""
        if not hasattr(self, "tx_raw"):
            self.tx_raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            self.tx_raw.bind((self.iface, 0))
        for f in frames:
            self.tx_raw.send(f)

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
              bad_icrc=False, tos=0, dmac=None):
        pad = (4 - len(payload) % 4) % 4
        bth = BTH(opcode=opcode, padcount=pad, pkey=pkey, dqpn=dqpn, ackreq=ackreq, psn=psn & PSN_MASK)
        roce = bth / ext if ext is not None else bth
        roce = roce / Raw(payload + b"\0" * pad) if payload or pad else roce
        f = (Ether(src=self.wire.my_mac, dst=dmac or self.wire.srv_mac) /
             IP(src=src or self.a.my_ip, dst=dst or self.info["ip"], flags="DF", ttl=64, tos=tos) /
             UDP(sport=self.sport, dport=ROCE_PORT, chksum=0) / roce)
        data = bytearray(raw(f))
        if bad_icrc:
            data[-1] ^= 0x5A
        return Ether(bytes(data))

    def victim(self, name):
        return self.ctl.cmd("info")["victims"][name]

    def legit(self):
        return self.ctl.cmd("info")["legit"]

    def legit_sr(self):
        return self.ctl.cmd("info")["legit_sr"]

    def legit_be(self):
        return self.ctl.cmd("info")["legit_be"]

    # ---- sr / ec packets (docs/wire.md "sr and ec") ------------------------
    def sr_write(self, v, psn, va, data, rkey=None, dma_len=None, **kw):
        """A plain sr WRITE: UC RDMA WRITE Only to the data QPN."""
        return self.frame(UC | WRITE_ONLY, v["qpn"], psn,
                          RETH(va=va, rkey=v["rkey"] if rkey is None else rkey,
                               dma_len=len(data) if dma_len is None else dma_len), data, **kw)

    def sr_msg(self, v, psn, msg, kind, idx, data, rkey=0, va=None, dma_len=None, mtu=MTU, **kw):
        """A packet of a matched message: UC RDMA WRITE Only with Immediate,
        rkey 0 (the message space) at va = index x MTU unless told."""
        return self.frame(UC | WRITE_ONLY_IMM, v["qpn"], psn,
                          RETH(va=idx * mtu if va is None else va, rkey=rkey,
                               dma_len=len(data) if dma_len is None else dma_len) / ImmDt(imm=srw_imm(msg, kind, idx)),
                          data, **kw)

    def srk_send(self, v, msg, kind, idx, data, psn=None, **kw):
        """Keyed by immediate (docs/wire.md): what goes to rkey 0 comes as a
        UC SEND Only with Immediate to the data QPN; its BTH PSN is any (a
        NIC's own numbering), random unless told."""
        return self.frame(UC | SEND_ONLY_IMM, v["qpn"], random.randrange(1 << 24) if psn is None else psn,
                          ImmDt(imm=srw_imm(msg, kind, idx)), data, **kw)

    def fast(self, bth_on, tos=0, src=None):
        """fast_frame from this host (or src) to the server."""
        return fast_frame(self.wire.my_mac, self.wire.srv_mac, src or self.a.my_ip, self.info["ip"], self.sport, tos,
                          bth_on)

    def fast_sr_write(self, v, psn, va, data, rkey=None, ackreq=1, tos=0, src=None):
        """sr_write's packet through fast_frame"""
        pad = (4 - len(data) % 4) % 4
        return self.fast(bth_bytes(UC | WRITE_ONLY, v["qpn"], psn, pad, ackreq) +
                         struct.pack("!QII", va, v["rkey"] if rkey is None else rkey, len(data)) + data + b"\0" * pad,
                         tos, src)

    def junk(self):
        """A RoCEv2 frame whose UDP payload (8 bytes) ends inside the BTH:
        the cheapest packet the server takes off its ring (short_frame)."""
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 36, 1, 0x4000, 64, 17, 0, socket.inet_aton(self.a.my_ip),
                         socket.inet_aton(self.info["ip"]))
        ip = ip[:10] + struct.pack("!H", ip_csum(ip)) + ip[12:]
        mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
        return (mac(self.wire.srv_mac) + mac(self.wire.my_mac) + b"\x08\x00" + ip +
                struct.pack("!HHHH", self.sport, ROCE_PORT, 16, 0) + b"\0" * 8)

    # ---- failover (transport/failover/failover.h) ---------------------------------
    def fo_member(self, m):
        """(source, destination, destination MAC) of the fo victim's member m
        seen from here: 0 = this host's first address to the server's port
        1, 1 = its second address to the server's port 2."""
        if m == 0:
            return self.a.my_ip, self.info["ip"], self.wire.srv_mac
        return self.a.my_ip2, self.info["port2"]["ip"], self.info["port2"]["mac"]

    def fo_ctrl(self, v, body, via=0, op=UC | SEND_ONLY, dqpn=None, ctype=SRW_CTRL_FO, version=None,
                length=None, raw_payload=None, token=None, **kw):
        """A failover control packet to v's control QPN on member `via`
        (addresses and port; src, dst, dmac override them)."""
        src, dst, dmac = self.fo_member(via)
        kw.setdefault("src", src)
        kw.setdefault("dst", dst)
        kw.setdefault("dmac", dmac)
        pl = ctrl_payload(ctype, body, version, length, token) if raw_payload is None else raw_payload
        return self.frame(op, v["ctrl_qpn"] if dqpn is None else dqpn, 0, None, with_token(pl, v.get("token", 0)),
                          **kw)

    def sr_ctrl(self, v, payload, op=UC | SEND_ONLY, psn=0, **kw):
        """A control packet: UC SEND Only to the control QPN (data QPN + 1),
        with v's token unless the payload names one (ctrl_payload's token)."""
        return self.frame(op, v["ctrl_qpn"], psn, None, with_token(payload, v.get("token", 0)), **kw)

    # ---- checks ----------------------------------------------------------
    @staticmethod
    def drop_delta(before, after):
        d = {k: after["drops"][k] - before["drops"][k] for k in after["drops"]}
        # legit_be's last packet of each message goes twice by design
        # (docs/wire.md "be"): the copy is dropped as a duplicate all along,
        # and those drops are legit_be's own duplicate count, not a case's
        d["duplicate"] -= after["qps"]["legit_be"]["duplicates"] - before["qps"]["legit_be"]["duplicates"]
        return {k: n for k, n in d.items() if n}

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
        # the sr and be connections, on their own deadlines from the same start
        for name in ("legit_sr", "legit_be"):
            want_c = before[name]["seq"] + LEGIT_STEPS
            while st[name]["seq"] < want_c and time.monotonic() <= deadline:
                time.sleep(0.02)
                st = self.ctl.cmd("stats")
            if st[name]["seq"] < want_c:
                errs.append("%s connection stalled: iteration %d, wanted %d within %.0f s (state %s)"
                            % (name, st[name]["seq"], want_c, LEGIT_WAIT_S, st["qps"][name]["state"]))
            if st["qps"][name]["state"] != "RTS":
                errs.append("%s QP is %s" % (name, st["qps"][name]["state"]))
        # be ends a receive early only by its deadline or a newer message:
        # neither happens to the legit traffic (a minute's deadline, one
        # message at a time), so either is a forged packet's doing
        q0, q1 = before["qps"]["legit_be"], st["qps"]["legit_be"]
        for k in ("be_timeouts", "be_preempted"):
            if q1[k] != q0[k]:
                errs.append("legit_be %s moved by %d" % (k, q1[k] - q0[k]))
        return st

    def run(self, name, fn):
        """One case: fn sends its packets and returns its expectation."""
        errs = []
        try:
            if getattr(fn, "prep", None):
                fn.prep()  # before the counters are read: e.g. a victim reset
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
            # an sr/ec/be QP's peer takes two QPNs: data, data + 1 for its
            # SACKs and NACKs (be: votes)
            peer = ({q1["peer_qpn"], (q1["peer_qpn"] + 1) & PSN_MASK} if "sr" in q1 or "be" in q1 or "fo" in q1
                    else {q1["peer_qpn"]})
            mine = [g for g in got if g[1] in peer] if not v.startswith("legit") else []
            if exp.get("check_got"):
                # the case reads what came back itself: every packet to
                # this host, the stats before and after
                exp["check_got"](got, before, after, errs)
            else:
                # CNPs (at most one per 4 us per QP for CE-marked arrivals)
                # only where the case expects them
                cnps = [g for g in mine if g[0] == CNP]
                mine = [g for g in mine if g[0] != CNP]
                if exp.get("cnps"):
                    exp["cnps"](cnps, errs)
                elif cnps:
                    errs.append("unexpected CNP(s) at PSN %s" % ", ".join(str(g[2]) for g in cnps))
                if "sack_cum" in exp:
                    self.check_sacks(exp["sack_cum"], q1, mine, errs)
                else:
                    self.check_responses(exp, mine, errs)
            for k in exp.get("sr_same", ()):
                if q0["sr"][k] != q1["sr"][k]:
                    errs.append("%s: sr state %s moved %s -> %s" % (v, k, q0["sr"][k], q1["sr"][k]))
            for k, want in exp.get("sr_expect", {}).items():
                if q1["sr"][k] != want:
                    errs.append("%s: sr state %s is %s, expected %s" % (v, k, q1["sr"][k], want))
            for k in exp.get("eqds_same", ()):
                if q0["eqds"][k] != q1["eqds"][k]:
                    errs.append("%s: eqds state %s moved %s -> %s" % (v, k, q0["eqds"][k], q1["eqds"][k]))
            for k, want in exp.get("eqds_expect", {}).items():
                if q1["eqds"][k] != want:
                    errs.append("%s: eqds state %s is %s, expected %s" % (v, k, q1["eqds"][k], want))
            for k in exp.get("fo_same", ()):
                if q0["fo"][k] != q1["fo"][k]:
                    errs.append("%s: failover %s moved %s -> %s" % (v, k, q0["fo"][k], q1["fo"][k]))
            for k, want in exp.get("fo_expect", {}).items():
                got_k = q1["fo"][k] - q0["fo"][k] if k in FO_COUNTERS else q1["fo"][k]
                if got_k != want:
                    errs.append("%s: failover %s %s %s, expected %s" % (v, k, "moved by" if k in FO_COUNTERS
                                                                        else "is", got_k, want))
            for k in exp.get("be_same", ()):
                if q0["be"][k] != q1["be"][k]:
                    errs.append("%s: be state %s moved %s -> %s" % (v, k, q0["be"][k], q1["be"][k]))
            for k, want in exp.get("be_expect", {}).items():
                if q1["be"][k] != want:
                    errs.append("%s: be state %s is %s, expected %s" % (v, k, q1["be"][k], want))
            for k, want in exp.get("last_recv", {}).items():
                if q1["last_recv"][k] != want:
                    errs.append("%s: the last receive completion's %s is %s, expected %s"
                                % (v, k, q1["last_recv"][k], want))
            for k, n in exp.get("counter_delta", {}).items():
                if q1[k] - q0[k] != n:
                    errs.append("%s %s moved by %d, expected %d" % (v, k, q1[k] - q0[k], n))
            if exp.get("check_fn"):
                exp["check_fn"](q0, q1, errs)
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
        if "port2_rx" in exp and after["port2_rx_packets"] - before["port2_rx_packets"] != exp["port2_rx"]:
            errs.append("port 2 took %d packets, expected %d" % (after["port2_rx_packets"] - before["port2_rx_packets"],
                                                                exp["port2_rx"]))
        if after["guard_first_bad"] >= 0:
            errs.append("%d guard bytes outside the registered regions changed, the first at arena offset %d"
                        % (after["guard_bad"], after["guard_first_bad"]))
        for rname, want in exp.get("content", {}).items():
            for off, data in want if isinstance(want, list) else [want]:
                h = self.ctl.cmd("dump %s %d %d" % (rname, off, len(data)))["hex"]
                if bytes.fromhex(h) != data:
                    errs.append("%s bytes %d..%d do not hold what was written" % (rname, off, off + len(data) - 1))

    @staticmethod
    def describe(got, most=8):
        text = ", ".join("%s PSN %d%s" % (OP_NAMES.get(g[0], "opcode 0x%02x" % g[0]), g[2],
                                          " syndrome 0x%02x" % g[3] if g[3] is not None else "")
                         for g in got[:most]) or "nothing"
        return text + (" and %d more" % (len(got) - most) if len(got) > most else "")

    @staticmethod
    def check_sacks(cum, q, got, errs):
        """sr: SACKs only (UC SEND Only to the peer's control QPN), the last
        one with cumulative PSN cum."""
        sacks = []
        for g in got:
            sk = parse_sack(g[4]) if g[0] == UC | SEND_ONLY and g[1] == (q["peer_qpn"] + 1) & PSN_MASK else None
            if sk is None:
                errs.append("unexpected packet to the peer: opcode 0x%02x to QPN 0x%x PSN %d" % (g[0], g[1], g[2]))
            else:
                sacks.append(sk)
        if not sacks:
            errs.append("expected a SACK with cumulative PSN %d, got none" % cum)
        elif sacks[-1]["cum"] != cum:
            errs.append("the last SACK's cumulative PSN is %d, expected %d" % (sacks[-1]["cum"], cum))

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
        broken = {q for q in ("rc", "rc0", "uc", "ud") + SR_VICTIMS + ("be", "bek", "fo") if st["qps"][q]["state"] != "RTS"}
        for name in sorted(set(exp.get("reset", [])) | broken):
            self.ctl.cmd("reset %s" % name)
        for rname, r in st["regions"].items():
            if r["diff_first"] >= 0:
                self.ctl.cmd("refill %s" % rname)
        if st["guard_first_bad"] >= 0:
            self.ctl.cmd("refill guards")  # reported by this case; the next starts intact


# ==========================================================================
# The cases. Each sends its packets and returns what must be seen:
#   drops: {reason: count} (exactly; every other reason must stay)
#   qp: the QP the case is about; responses: "none" | "any" | [(op, psn, syndrome)]
#   state, psn_unchanged, rq_psn, credits_unchanged, no_rnr_wait, no_naks_taken
#   changes: {region: (first, end, must_change)} bytes allowed to change
#   content: {region: (offset, bytes) or a list of them} what they must hold
#   sr/ec: sack_cum (SACKs only, the last with this cumulative PSN; else
#   "responses" covers the peer's data and control QPNs), sr_same (sr state
#   fields that must not move), sr_expect {field: value}, counter_delta
#   {QP counter: change}, check_fn(before, after, errs)
#   be: be_same (be receiver fields that must not move), be_expect {field:
#   value}; last_recv {opcode, flags, byte_len, imm}: the victim's last
#   successful receive completion
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


SR_SAME = ("rx_cum", "rx_marked", "rx_msg_cum", "rx_bind_next", "rx_dups", "tx_una", "tx_nxt", "tx_msg_post",
           "peer_msg_cum", "peer_msg_limit", "have_limit", "peer_dups")
SR_COUNTERS = ("sacks_sent", "sacks_rcvd", "recv_ok", "recv_err", "retransmits", "ec_nacks_rcvd")


# the fo victim's failover state (conf_peer's "fo"): what a dropped packet
# must leave as it was; the counters among them are compared as changes
FO_SAME = ("state", "active", "up_mask", "failovers", "failbacks", "notices_rcvd", "notices_sent", "peer_seq",
           "probes_answered", "notice_seq")
FO_COUNTERS = ("failovers", "failbacks", "rewound_pkts", "notices_sent", "notices_rcvd", "probes_sent",
               "probes_answered")


def fo_dropped(reason, n=1, **kw):
    """fo: dropped, nothing answered (on either of the peer's QPNs), PSNs
    and the failover state unchanged."""
    e = {"drops": {reason: n}, "qp": "fo", "responses": "none", "state": "RTS", "psn_unchanged": True,
         "fo_same": FO_SAME}
    e.update(kw)
    return e


def sr_fresh_recv(v, name):
    """the sr/ec victim v's next receive buffer, which no message has bound yet"""
    buf = v["sr"]["rx_bind_next"]
    if buf >= v["nrecv"]:
        raise Failed("the %s victim has no fresh receive (%d bound)" % (name, buf))
    return buf


def sr_dropped(qp, reason, n=1, **kw):
    """sr/ec: dropped, nothing answered, no window, message or credit state moved."""
    e = {"drops": {reason: n}, "qp": qp, "responses": "none", "state": "RTS", "sr_same": SR_SAME,
         "counter_delta": {k: 0 for k in SR_COUNTERS}}
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
    def qpn_guess_sequential(st):
        # QPNs are drawn at random from the 24-bit space: an off-path host
        # sending in the legit peer's name to the numbers a counter would
        # hand out (0x11 up) reaches no QP, and the QPNs in use are spread
        info = s.ctl.cmd("info")
        qps = list(info["victims"].values()) + [q for q in info.values() if isinstance(q, dict) and "qpn" in q]
        nums = sorted({q["qpn"] for q in qps} | {q["ctrl_qpn"] for q in qps if q.get("ctrl_qpn")})
        data = sorted({q["qpn"] for q in qps})
        lg = s.legit()
        guesses = range(0x11, 0x21)
        s.wire.send([s.frame(RC | WRITE_ONLY, n, psn_add(lg["rq_psn"], i),
                             RETH(va=lg["va"] + lg["len"] - 64, rkey=lg["rkey"], dma_len=64), payload(64, 31),
                             src=lg["peer_ip"]) for i, n in enumerate(guesses)])

        def spread(q0, q1, errs):
            # a counter keeps them within a few hundred of each other;
            # random draws put 20 QPNs within 2^16 with odds ~2^-150
            if nums[-1] - nums[0] < 0x10000:
                errs.append("QPNs in use span 0x%x..0x%x: sequential, not random" % (nums[0], nums[-1]))
            hit = [n for n in guesses if n in nums]
            if hit:  # odds ~2^-15 with random numbers
                errs.append("guessed QPNs name QPs: %s" % ", ".join("0x%x" % n for n in hit))
            close = [(x, y) for x, y in zip(data, data[1:]) if y - x <= 2]
            if close:
                errs.append("data QPNs next to each other: %s" % ", ".join("0x%x/0x%x" % c for c in close))

        return dropped("rc", "no_qp", n=len([n for n in guesses if n not in nums]), check_fn=spread)

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

    # ======================================================================
    # sr (docs/wire.md "sr and ec"): the `sr` victim is connected to this
    # host (its peer's data QPN ATK+4, control ATK+5), so the cases there
    # are exact: PSN = its receiver's cumulative PSN, message = its message
    # window base. The cases at `legit_sr` forge the legit client's
    # address and run while the verified sr traffic goes on; their packets
    # must be caught by checks that hold even in the peer's name.
    # ======================================================================
    def srv(name="sr"):
        v = s.victim(name)
        return v, v["sr"]["rx_cum"], v["sr"]["rx_msg_cum"]

    # ---- positive controls: the packets the sr attacks are made from are good
    @case
    def sr_control_write_accepted(st):
        v, psn, _ = srv()
        data = payload(64, 101)
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, data)])
        return {"drops": {}, "qp": "sr", "sack_cum": psn_add(psn, 1), "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 1)}, "counter_delta": {"sacks_sent": 1, "recv_ok": 0},
                "changes": {"sr_data": (256, 320, True)}, "content": {"sr_data": (256, data)}}

    # ---- AckReq: the sender asks for a SACK every 16 PSNs, at the end of a
    # WQE and when its window fills; the receiver answers a packet that asks,
    # or one out of order, and no other
    @case
    def sr_write_no_ackreq_in_order(st):
        v, psn, _ = srv()
        data = payload(64, 160)
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, data, ackreq=0)])
        return {"drops": {}, "qp": "sr", "responses": "none", "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 1)}, "counter_delta": {"sacks_sent": 0, "recv_ok": 0},
                "changes": {"sr_data": (256, 320, True)}, "content": {"sr_data": (256, data)}}

    @case
    def sr_write_no_ackreq_ahead_of_hole(st):
        # one PSN ahead: the hole it leaves is SACKed at once (the sender's
        # loss detection needs it); the reset closes the hole for the cases after
        v, psn, _ = srv()
        data = payload(64, 161)
        s.wire.send([s.sr_write(v, psn_add(psn, 1), v["va"] + 512, data, ackreq=0)])
        return {"drops": {}, "qp": "sr", "sack_cum": psn, "state": "RTS",
                "sr_expect": {"rx_cum": psn}, "counter_delta": {"sacks_sent": 1, "recv_ok": 0},
                "changes": {"sr_data": (512, 576, True)}, "content": {"sr_data": (512, data)}, "reset": ["sr"]}

    @case
    def sr_control_send_accepted(st):
        # a single-packet SEND: kind 1 (last), index 0, rkey 0, va 0
        v, psn, msg = srv()
        buf = sr_fresh_recv(v, "sr")
        data = payload(64, 102)
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 0, data)])
        off = buf * v["recv_len"]
        return {"drops": {}, "qp": "sr", "sack_cum": psn_add(psn, 1), "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 1), "rx_msg_cum": msg + 1},
                "counter_delta": {"recv_ok": 1, "recv_err": 0},
                "changes": {"sr_recv": (off, off + 64, True)}, "content": {"sr_recv": (off, data)},
                "reset": ["sr"]}

    @case
    def sr_spoofed_send_accepted(st):
        # In-window forgery: `srx` is peered with the legit client's address
        # (an unused QPN there). A well-formed SEND in the client's name at
        # the expected PSN and message is indistinguishable from the
        # client's own and is accepted and SACKed (to the client, which
        # drops the SACK: no such QPN). Expected; not a failure.
        v, psn, msg = srv("srx")
        data = payload(64, 103)
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 0, data, src=s.legit_sr()["peer_ip"])])
        return {"drops": {}, "qp": "srx", "responses": "none", "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 1), "rx_msg_cum": msg + 1},
                "counter_delta": {"recv_ok": 1, "sacks_sent": 1},
                "changes": {"srx_recv": (0, 64, True)}, "content": {"srx_recv": (0, data)}, "reset": ["srx"]}

    # ---- addresses
    @case
    def sr_wrong_src_ip(st):
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, payload(64, 104), src=a.spoof_ip)])
        return sr_dropped("sr", "bad_src_addr")

    @case
    def sr_wrong_src_ip_ctrl(st):
        v, _, _ = srv()
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SACK, sack_body(v["sr"]["tx_nxt"], msg_limit=1 << 30)),
                               src=a.spoof_ip)])
        return sr_dropped("sr", "bad_src_addr")

    @case
    def sr_wrong_src_ip_legit(st):
        # 16 WRITEs at the legit sr QP from this host's own address with
        # the legit rkey, at the receiver's next 16 PSNs
        lg = s.legit_sr()
        n = 16
        s.wire.send([s.sr_write(lg, psn_add(lg["sr"]["rx_cum"], i), lg["va"] + 3072 + 16 * i, payload(16, 105 + i))
                     for i in range(n)])
        return {"drops": {"bad_src_addr": n}, "qp": "legit_sr", "state": "RTS"}

    @case
    def sr_wrong_src_ip_legit_ctrl(st):
        # a SACK acknowledging everything in flight, unlimited credits
        lg = s.legit_sr()
        s.wire.send([s.sr_ctrl(lg, ctrl_payload(SRW_CTRL_SACK, sack_body(lg["sr"]["tx_nxt"], msg_limit=1 << 30,
                                                                        bitmap=b"\xff" * 32)))])
        return {"drops": {"bad_src_addr": 1}, "qp": "legit_sr", "state": "RTS"}

    # ---- control packets (the sender's side)
    @case
    def sr_ghost_sack_idle(st):
        v, _, _ = srv()
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SACK, sack_body(psn_add(v["sr"]["tx_nxt"], 100))))])
        return sr_dropped("sr", "stale_response")

    @case
    def sr_sack_msg_cum_ahead_idle(st):
        # PSNs fine (nothing outstanding), but messages finished that were never sent
        v, _, _ = srv()
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SACK, sack_body(v["sr"]["tx_nxt"],
                                                                        msg_cum=v["sr"]["tx_msg_post"] + 10)))])
        return sr_dropped("sr", "stale_response")

    def legit_sr_ctrl(body_of, reason, src=None, n=1):
        def fn(st):
            lg = s.legit_sr()
            s.wire.send([s.sr_ctrl(lg, body_of(lg), src=src or lg["peer_ip"]) for _ in range(n)])
            return {"drops": {reason: n}, "qp": "legit_sr", "state": "RTS"}
        return fn

    def old_sack(lg, **kw):
        # acknowledges nothing new: cumulative PSN before the sender's una, no bitmap bits
        return sack_body(psn_add(lg["sr"]["tx_una"], -1), **kw)

    out.append(("sr_ghost_sack_legit", legit_sr_ctrl(
        lambda lg: ctrl_payload(SRW_CTRL_SACK, sack_body(psn_add(lg["sr"]["tx_nxt"], 5000), bitmap=b"\xff" * 32)),
        "stale_response")))
    out.append(("sr_ctrl_other_version", legit_sr_ctrl(
        lambda lg: ctrl_payload(SRW_CTRL_SACK, old_sack(lg), version=SRW_VERSION ^ 3), "bad_ctrl")))
    out.append(("sr_sack_length_past_payload", legit_sr_ctrl(
        lambda lg: ctrl_payload(SRW_CTRL_SACK, old_sack(lg), length=CTRL_HDR + SRW_SACK_FIXED + 32 + 64), "bad_ctrl")))
    out.append(("sr_sack_bitmap_short", legit_sr_ctrl(  # nbits 256, 4 bytes of bitmap
        lambda lg: ctrl_payload(SRW_CTRL_SACK, old_sack(lg, nbits=256, bitmap=b"\0" * 4)), "bad_ctrl")))
    out.append(("sr_sack_shorter_than_fixed", legit_sr_ctrl(
        lambda lg: ctrl_payload(SRW_CTRL_SACK, old_sack(lg)[:20]), "bad_ctrl")))
    # The token (docs/conformance.md "Control packets prove their
    # connection"): an off-path host that spoofs the client's addresses and
    # knows the QPN still lacks the legit QP's token. Each of these acted
    # before the token (with --wire-v1 against such a build: the SACK
    # completed WRs never placed, the TRIMs drew resends, the RTS streamed
    # PULLs); now each is dropped before anything reads its body.
    def wrong_token(lg):
        return (lg.get("token", 0) ^ 0x5A5A5A5A) or 1

    out.append(("sr_sack_wrong_token_legit", legit_sr_ctrl(  # acknowledges everything sent, 16 times
        lambda lg: ctrl_payload(SRW_CTRL_SACK, sack_body(psn_add(lg["sr"]["tx_nxt"], -1), msg_limit=1 << 30,
                                                         bitmap=b"\xff" * 32), token=wrong_token(lg)),
        "bad_token", n=16)))
    out.append(("sr_trim_wrong_token_legit", legit_sr_ctrl(
        lambda lg: ctrl_payload(SRW_CTRL_TRIM, trim_body([lg["sr"]["tx_una"]]), token=wrong_token(lg)),
        "bad_token", n=16)))
    out.append(("sr_rts_wrong_token_legit", legit_sr_ctrl(  # huge counts: PULLs without end, before
        lambda lg: ctrl_payload(SRW_CTRL_RTS, rts_body(1 << 60, 1 << 59), token=wrong_token(lg)),
        "bad_token", n=4)))
    out.append(("sr_ctrl_v1_header_legit", legit_sr_ctrl(  # the old 4-byte header: its body is no token
        lambda lg: struct.pack("!BBH", 1, SRW_CTRL_SACK, 4 + SRW_SACK_FIXED + 32) + old_sack(lg, nbits=256),
        "bad_token")))
    out.append(("sr_sack_nbits_not_32", legit_sr_ctrl(
        lambda lg: ctrl_payload(SRW_CTRL_SACK, old_sack(lg, nbits=40, bitmap=b"\0" * 8)), "bad_ctrl")))
    out.append(("sr_nack_to_sr", legit_sr_ctrl(  # msg, first_sub, nbits, flags, bitmap
        lambda lg: ctrl_payload(SRW_CTRL_NACK, struct.pack("!IHHI", lg["sr"]["tx_msg_post"] - 1, 0, 32, 1) +
                                b"\xff" * 4), "bad_ctrl")))
    out.append(("sr_ctrl_unknown_type", legit_sr_ctrl(
        lambda lg: ctrl_payload(3, old_sack(lg)), "bad_ctrl")))

    @case
    def sr_ctrl_uc_send_first(st):
        lg = s.legit_sr()
        s.wire.send([s.sr_ctrl(lg, ctrl_payload(SRW_CTRL_SACK, old_sack(lg)), op=UC | SEND_FIRST,
                               src=lg["peer_ip"])])
        return {"drops": {"bad_opcode": 1}, "qp": "legit_sr", "state": "RTS"}

    @case
    def sr_ctrl_rc_send_only(st):
        lg = s.legit_sr()
        s.wire.send([s.sr_ctrl(lg, ctrl_payload(SRW_CTRL_SACK, old_sack(lg)), op=RC | SEND_ONLY,
                               src=lg["peer_ip"])])
        return {"drops": {"bad_opcode": 1}, "qp": "legit_sr", "state": "RTS"}

    @case
    def sr_sack_to_data_qpn(st):
        lg = s.legit_sr()
        s.wire.send([s.frame(UC | SEND_ONLY, lg["qpn"], lg["sr"]["rx_cum"], None,
                             ctrl_payload(SRW_CTRL_SACK, old_sack(lg)), src=lg["peer_ip"])])
        return {"drops": {"bad_opcode": 1}, "qp": "legit_sr", "state": "RTS"}

    # ---- sr data: keys and bounds (dropped, not acknowledged; sr has no NAK)
    @case
    def sr_bad_rkey(st):
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, payload(64, 110), rkey=v["rkey"] ^ 0x5A)])
        return sr_dropped("sr", "bad_rkey")

    @case
    def sr_rkey_of_other_pd(st):
        v, psn, _ = srv()
        lg = s.legit_sr()
        s.wire.send([s.sr_write(v, psn, lg["va"] + 3500, payload(64, 111), rkey=lg["rkey"])])
        return sr_dropped("sr", "bad_rkey")

    @case
    def sr_plain_write_rkey_zero(st):
        # rkey 0 is the message space, reached only by packets with an immediate
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, 0, payload(64, 112), rkey=0)])
        return sr_dropped("sr", "bad_rkey")

    @case
    def sr_zero_length_write_rkey_zero(st):
        # an empty plain WRITE is checked like any other: with rkey 0 it
        # is refused and its PSN stays a hole (on fe1c937 it was marked
        # arrived, so the real packet at that PSN became a duplicate)
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, 0, b"", rkey=0)])
        return sr_dropped("sr", "bad_rkey")

    @case
    def sr_zero_length_last_past_index_0(st):
        # an empty LAST at index 1: only a zero-length message's one packet
        # (index 0) is empty; refused, its PSN not marked (fe1c937 took it
        # as a 1024-byte message whose last packet had come)
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 1, b"")])
        e = sr_dropped("sr", "bad_msg_length", reset=["sr"])
        e["sr_same"] = tuple(k for k in SR_SAME if k != "rx_bind_next")  # a receive is bound to the message
        return e

    @case
    def sr_finished_msg_psn_of_next(st):
        # A WRITE with immediate finishes message m (one packet); then a
        # packet naming m at the PSN message m + 1 takes, before m + 1's
        # real packet. m used only its own PSN, so the forged one is
        # dropped unmarked (psn_out_of_window) and m + 1 is placed and
        # completes (fe1c937 marked that PSN: m + 1 a duplicate, never received)
        v, psn, msg = srv()
        d0, d1 = payload(64, 240), payload(64, 241)
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 0, d0, rkey=v["rkey"], va=v["va"] + 256)])
        time.sleep(0.05)
        s.wire.send([s.sr_msg(v, psn_add(psn, 1), msg, SRW_LAST, 0, payload(64, 242), rkey=v["rkey"],
                              va=v["va"] + 512)])
        time.sleep(0.05)
        s.wire.send([s.sr_msg(v, psn_add(psn, 1), msg + 1, SRW_LAST, 0, d1, rkey=v["rkey"], va=v["va"] + 768)])
        return {"drops": {"psn_out_of_window": 1}, "qp": "sr", "state": "RTS", "responses": "any",
                "sr_expect": {"rx_cum": psn_add(psn, 2), "rx_msg_cum": msg + 2},
                "counter_delta": {"recv_ok": 2, "recv_err": 0},
                "last_recv": {"opcode": "RECV_RDMA_WITH_IMM", "byte_len": 64},
                "changes": {"sr_data": (256, 832, True)},
                "content": {"sr_data": [(256, d0), (768, d1)]}, "reset": ["sr"]}

    @case
    def sr_va_past_mr_end(st):
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, v["va"] + v["len"], payload(64, 113))])
        return sr_dropped("sr", "out_of_bounds")

    @case
    def sr_va_len_wraps_2_64(st):
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, (1 << 64) - 32, payload(64, 114))])
        return sr_dropped("sr", "out_of_bounds")

    @case
    def sr_write_longer_than_mtu(st):
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, v["va"], payload(MTU + 64, 115))])
        return sr_dropped("sr", "bad_msg_length")

    @case
    def sr_dma_len_not_payload(st):
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, payload(64, 116), dma_len=128)])
        return sr_dropped("sr", "bad_msg_length")

    # ---- sr data: message numbers, kinds, indexes, descriptors
    @case
    def sr_msg_ahead_of_window(st):
        # the first and the last number past the 64-message window that
        # the receiver takes as "ahead" (dropped unmarked: not acknowledged)
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg + SRW_MSG_WIN, SRW_LAST, 0, payload(64, 117)),
                     s.sr_msg(v, psn_add(psn, 1), msg + 2 * SRW_MSG_WIN - 1, SRW_LAST, 0, payload(64, 118))])
        return sr_dropped("sr", "stale_msg", 2)

    @case
    def sr_late_msg_behind_window(st):
        # the number before the window, naming no message the victim
        # finished at this PSN: dropped unmarked, nothing answered. A late
        # packet counts only inside its finished message's PSN span
        # (sr_finished_msg_psn_of_next); fe1c937 marked and SACKed any PSN
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg - 1, SRW_LAST, 0, payload(64, 119))])
        return sr_dropped("sr", "stale_msg")

    @case
    def sr_kind_reserved(st):
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn_add(psn, i), msg, kind, 0, payload(64, 120 + i))
                     for i, kind in enumerate((5, 6, 7))])
        return sr_dropped("sr", "bad_opcode", 3)

    @case
    def sr_parity_to_sr(st):
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_PARITY, 0, payload(MTU, 123))])
        return sr_dropped("sr", "bad_opcode")

    @case
    def sr_index_past_last_packet(st):
        # kind 1 at index 1 makes a 2-packet message (64 bytes at 1024,
        # placed); a data packet at index 2 lies past its end
        v, psn, msg = srv()
        off = v["sr"]["rx_bind_next"] * v["recv_len"]
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 1, payload(64, 124)),
                     s.sr_msg(v, psn_add(psn, 1), msg, SRW_DATA, 2, payload(MTU, 125))])
        return {"drops": {"bad_msg_length": 1}, "qp": "sr", "state": "RTS", "sack_cum": psn_add(psn, 1),
                "sr_expect": {"rx_cum": psn_add(psn, 1), "rx_msg_cum": msg},
                "counter_delta": {"recv_ok": 0, "recv_err": 0},
                "changes": {"sr_recv": (off + MTU, off + MTU + 64, True)}, "reset": ["sr"]}

    @case
    def sr_va_not_index_times_mtu(st):
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_DATA, 0, payload(MTU, 126), va=512)])
        e = sr_dropped("sr", "out_of_bounds", reset=["sr"])
        e["sr_same"] = tuple(k for k in SR_SAME if k != "rx_bind_next")  # a receive is bound to the message
        return e

    @case
    def sr_send_longer_than_recv_buffer(st):
        # kind 1 at index 2: 2 x 1024 + 64 bytes into a 2048-byte receive:
        # the receiver goes to ERR, the receive completes with LOC_LEN_ERR
        # and the other posted receives are flushed
        v, psn, msg = srv()
        posted = v["nrecv"] - v["sr"]["rx_bind_next"]
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 2, payload(64, 127))])
        return {"drops": {"bad_msg_length": 1}, "qp": "sr", "responses": "none", "state": "ERR",
                "counter_delta": {"recv_ok": 0, "recv_len_err": 1, "recv_err": posted},
                "sr_same": ("rx_cum", "rx_marked"), "reset": ["sr"]}

    @case
    def sr_precv_top_chunk_bitmap_end(st):
        # the finding: srp's receive handle (chunk_pkts 1000, not a divisor
        # of a message's 2^17 packets) has message 63, sr's last slot, its
        # length not yet known. DATA packets at indexes 131 000..131 071
        # fill its top chunk; checking that chunk read past the slots'
        # bitmap allocation (fe1c937: ASan heap-buffer-overflow READ,
        # conf_peer gone). Now: all placed, the chunk counts complete once
        # its last packet came and not before, srp and the legit ones go on
        v = s.victim("srp")
        pr, psn, msg = v["precv"], v["sr"]["rx_cum"], v["sr"]["rx_msg_cum"]
        top = (1 << 17) // pr["chunk_pkts"]  # the top chunk, its packets from top x chunk_pkts
        idxs = list(range(top * pr["chunk_pkts"], 1 << 17))
        frames = [s.sr_msg(v, psn_add(psn, i), msg + pr["msg"], SRW_DATA, idx, payload(MTU, 140 + i % 64),
                           ackreq=int(i >= len(idxs) - 2)) for i, idx in enumerate(idxs)]  # a SACK per burst
        n = len(idxs)
        s.wire.send(frames[:-1])
        for _ in range(100):  # until the n - 1 are taken (at most 2 s): the chunk is looked at with one missing
            pv = s.victim("srp")
            if pv["sr"]["rx_cum"] == psn_add(psn, n - 1):
                break
            time.sleep(0.02)
        part = pv["precv"]
        s.wire.send(frames[-1:])

        def check_fn(q0, q1, errs):
            whole = s.victim("srp")["precv"]
            if pv["sr"]["rx_cum"] != psn_add(psn, n - 1):
                errs.append("srp took %d of the first %d packets" % ((pv["sr"]["rx_cum"] - psn) & PSN_MASK, n - 1))
            if part["done"] or whole["done"] != [top] or whole["chunks"] != top + 1:
                errs.append("srp's handle: chunks done %s with one packet missing (want none), then %s of %d "
                            "(want [%d] of %d)" % (part["done"], whole["done"], whole["chunks"], top, top + 1))
        return {"drops": {}, "qp": "srp", "state": "RTS", "sack_cum": psn_add(psn, n), "check_fn": check_fn,
                "sr_expect": {"rx_cum": psn_add(psn, n), "rx_msg_cum": msg, "rx_bind_next": msg + pr["msg"] + 1},
                "counter_delta": {"recv_ok": 0, "recv_err": 0}, "reset": ["srp"]}
    sr_precv_top_chunk_bitmap_end.prep = lambda: s.ctl.cmd("reset srp")  # a fresh QP: next message 0

    @case
    def sr_psn_out_of_window(st):
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn_add(psn, v["sr"]["rx_nbits"]), v["va"] + 256, payload(64, 128)),
                     s.sr_write(v, psn_add(psn, 100000), v["va"] + 320, payload(64, 129))])
        return sr_dropped("sr", "psn_out_of_window", 2)

    @case
    def sr_desc_other_version(st):
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_DESC, 0, desc_payload(version=SRW_VERSION ^ 3, first_psn=psn), va=0)])
        e = sr_dropped("sr", "bad_ctrl", reset=["sr"])
        e["sr_same"] = tuple(k for k in SR_SAME if k != "rx_bind_next")
        return e

    @case
    def sr_desc_parity_flag_on_sr(st):
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_DESC, 0, desc_payload(ec=1, first_psn=psn), va=0)])
        e = sr_dropped("sr", "bad_ctrl", reset=["sr"])
        e["sr_same"] = tuple(k for k in SR_SAME if k != "rx_bind_next")
        return e

    @case
    def sr_desc_with_rkey(st):
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_DESC, 0, desc_payload(first_psn=psn), rkey=v["rkey"], va=v["va"])])
        e = sr_dropped("sr", "bad_rkey", reset=["sr"])
        e["sr_same"] = tuple(k for k in SR_SAME if k != "rx_bind_next")
        return e

    @case
    def sr_write_imm_bad_rkey(st):
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 0, payload(64, 130), rkey=v["rkey"] ^ 0x5A,
                              va=v["va"] + 256)])
        e = sr_dropped("sr", "bad_rkey", reset=["sr"])
        e["sr_same"] = tuple(k for k in SR_SAME if k != "rx_bind_next")
        return e

    # ---- sr data at the legit QP in the client's name, at a PSN ahead in
    # the receiver's window that the client has not reached: caught by
    # checks that hold whoever sends. The legit traffic goes on meanwhile
    # (some 5 000 PSNs a second), so the PSN is as far ahead as the window
    # (512 PSNs for the legit QP's 256-packet send window) allows, less the
    # 8 packets of the widest case: 300 was overtaken once (the forged
    # packets arrived as duplicates), and 480 once under CI load. So the
    # server is held (no progress, its control channel still served)
    # before its cumulative PSN is read and until the forged packets are
    # queued behind what the client had sent: the client's window keeps it
    # below cum + 256, short of cum + 480, whatever the load.
    AHEAD = 480

    def legit_sr_held():
        s.ctl.cmd("hold 50 ctl")
        return s.legit_sr()

    @case
    def sr_bad_rkey_legit(st):
        lg = legit_sr_held()
        n = 8
        s.wire.send([s.sr_write(lg, psn_add(lg["sr"]["rx_cum"], AHEAD + i), lg["va"] + 3072 + 16 * i,
                                payload(16, 131 + i), rkey=lg["rkey"] ^ 0x5A, src=lg["peer_ip"]) for i in range(n)])
        return {"drops": {"bad_rkey": n}, "qp": "legit_sr", "state": "RTS"}

    @case
    def sr_zero_length_write_legit(st):
        # empty plain WRITEs with rkey 0 at the next 4 PSNs ahead of the
        # live sr connection (every kind of packet it sends: the 3 of a
        # WRITE and a SEND): refused, so the client's packets at those PSNs
        # are placed and its verified traffic goes on
        lg = legit_sr_held()
        n = 4
        s.wire.send([s.sr_write(lg, psn_add(lg["sr"]["rx_cum"], AHEAD + i), 0, b"", rkey=0, src=lg["peer_ip"])
                     for i in range(n)])
        return {"drops": {"bad_rkey": n}, "qp": "legit_sr", "state": "RTS"}

    @case
    def sr_kind_reserved_legit(st):
        lg = legit_sr_held()
        s.wire.send([s.sr_msg(lg, psn_add(lg["sr"]["rx_cum"], AHEAD), lg["sr"]["rx_msg_cum"], 5, 0,
                              payload(64, 140), src=lg["peer_ip"])])
        return {"drops": {"bad_opcode": 1}, "qp": "legit_sr", "state": "RTS"}

    @case
    def sr_msg_ahead_of_window_legit(st):
        lg = legit_sr_held()
        s.wire.send([s.sr_msg(lg, psn_add(lg["sr"]["rx_cum"], AHEAD), lg["sr"]["rx_msg_cum"] + 96, SRW_LAST, 0,
                              payload(64, 141), src=lg["peer_ip"])])
        return {"drops": {"stale_msg": 1}, "qp": "legit_sr", "state": "RTS"}

    @case
    def sr_psn_out_of_window_legit(st):
        lg = s.legit_sr()
        s.wire.send([s.sr_write(lg, psn_add(lg["sr"]["rx_cum"], 100000), lg["va"] + 3072, payload(16, 142),
                                src=lg["peer_ip"])])
        return {"drops": {"psn_out_of_window": 1}, "qp": "legit_sr", "state": "RTS"}

    # ---- ec: a NACK is an ec sender's; one naming no message in flight is stale
    @case
    def ec_nack_no_message(st):
        v = s.victim("ec")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_NACK, struct.pack("!IHHI", 5, 0, 32, 1) + b"\xff" * 4))])
        return sr_dropped("ec", "stale_response")

    @case
    def ec_nack_wrong_token(st):
        # NACKs naming every submessage of the sender's message numbers
        # 0..7 (the low 12 bits travel in every immediate) under a token
        # that is not the QP's: dropped before the body is read
        v = s.victim("ec")
        bad = (v.get("token", 0) ^ 0x3C3C3C3C) or 1
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_NACK, struct.pack("!IHHI", m, 0, 1024, 1) + b"\xff" * 128,
                                               token=bad)) for m in range(8)])
        return sr_dropped("ec", "bad_token", 8)

    # ---- ec NACKs at the sender: `send ec 4096 imm` puts a WRITE with
    # immediate in flight (a descriptor, 4 data packets in 2 submessages,
    # 2 parity, the second descriptor); nothing acknowledges it
    ecn = {}

    def ec_nack_prep():
        s.ctl.cmd("reset ec")
        s.wire.drain()
        v = s.victim("ec")
        s.ctl.cmd("send ec 4096 imm")
        deadline = time.monotonic() + 1
        psns = []
        while len(psns) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
            psns += data_psns(s.wire.drain(), v["peer_qpn"])
        v = s.victim("ec")
        if len(psns) != 8:
            raise Failed("`send ec 4096 imm` put PSNs %s in flight, expected 8" % psns)
        ecn["msg"] = (v["sr"]["tx_msg_post"] - 1) & 0xFFFFFFFF

    def ec_nack_repeated(st):
        # 4 NACKs naming every submessage and the descriptor, 30 ms apart
        # (each after the sender's resends): the 6 packets named (4 data,
        # 2 descriptors) go again once; the 3 NACKs after the first name
        # only packets sent again less than an RTT ago (the RTO floor: the
        # victim has no RTT sample): ctrl_rate. fe1c937 sent them all
        # again for every NACK (24).
        v = s.victim("ec")
        for i in range(4):
            s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_NACK, struct.pack("!IHHI", ecn["msg"], 0, 32, 1) +
                                                   b"\xff" * 4))])
            time.sleep(0.03)

        def check_got(got, before, after, errs):
            again = data_psns(got, v["peer_qpn"])
            if len(again) != 6 or len(set(again)) != 6:
                errs.append("sent again: PSNs %s, expected 6 packets each once" % again)
        return {"drops": {"ctrl_rate": 3}, "qp": "ec", "state": "RTS", "settle": 0.15, "check_got": check_got,
                "sr_same": ("tx_una", "tx_nxt", "rx_cum", "peer_msg_limit"),
                "counter_delta": {"retransmits": 6, "ec_nacks_rcvd": 1}, "reset": ["ec"]}
    ec_nack_repeated.prep = ec_nack_prep
    out.append(("ec_nack_repeated", ec_nack_repeated))

    @case
    def ec_nack_nbits_not_32(st):
        v = s.victim("ec")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_NACK, struct.pack("!IHHI", 0, 0, 40, 0) + b"\xff" * 8))])
        return sr_dropped("ec", "bad_ctrl")

    @case
    def ec_decode_outside_write_region(st):
        # A WRITE with immediate on the ec victim (k = 2, m = 1): its last
        # packet (index 1) lies inside the region, so its base (va - 1 x
        # MTU) lies 1024 bytes before it; with the parity packet the
        # receiver can rebuild index 0, which would land before the region
        # (the guard gap and the region before it). That write must be
        # refused like any other out of bounds (c7bed88).
        v = s.victim("ec")
        psn, msg = v["sr"]["rx_cum"], v["sr"]["rx_msg_cum"]
        s.wire.send([s.sr_msg(v, psn_add(psn, 1), msg, SRW_LAST, 1, payload(64, 150), rkey=v["rkey"], va=v["va"]),
                     s.sr_msg(v, psn_add(psn, 2), msg, SRW_PARITY, 0, payload(MTU, 151))])
        return {"drops": {"out_of_bounds": 1}, "qp": "ec", "responses": "any", "state": "RTS",
                "counter_delta": {"recv_ok": 0, "recv_err": 0}, "changes": {"ec_data": (0, 64, True)},
                "reset": ["ec"]}

    @case
    def sr_msg_half_space_away(st):
        # A number 2048 from the window: mod 4096 as far ahead as behind.
        # Only 64..127 ahead count as ahead (sr_msg_ahead_of_window); the
        # rest of the space outside the window counts as late, and 2048
        # back is past the 128 finished messages whose PSN spans the
        # receiver keeps: dropped unmarked (fe1c937 counted its PSN)
        v, psn, msg = srv()
        s.wire.send([s.sr_msg(v, psn, msg + 2048, SRW_LAST, 0, payload(64, 152))])
        return sr_dropped("sr", "stale_msg")

    # ---- stale SACKs: a cumulative PSN a million behind anything sent
    # (rc's credit_poisoning_*: a stale ACK must not change the credits)
    @case
    def sr_stale_sack_credits_idle(st):
        v, _, _ = srv()
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SACK, sack_body(psn_add(v["sr"]["tx_nxt"], -1000000),
                                                                        msg_limit=0x7FFFFFFF)))])
        return sr_dropped("sr", "stale_response")

    @case
    def sr_stale_sack_credits_legit(st):
        lg = s.legit_sr()
        s.wire.send([s.sr_ctrl(lg, ctrl_payload(SRW_CTRL_SACK, sack_body(psn_add(lg["sr"]["tx_nxt"], -1000000),
                                                                         msg_limit=lg["sr"]["tx_msg_post"] + (1 << 30))),
                               src=lg["peer_ip"])])

        def limit_sane(q0, q1, errs):
            # the client has 8 receives posted: its limit is never far past the messages sent
            over = (q1["sr"]["peer_msg_limit"] - q1["sr"]["tx_msg_post"]) & 0xFFFFFFFF
            if 64 < over < 1 << 31:
                errs.append("legit_sr credits poisoned: peer_msg_limit %d, %d messages past the last posted"
                            % (q1["sr"]["peer_msg_limit"], over))
        return {"drops": {"stale_response": 1}, "qp": "legit_sr", "state": "RTS", "check_fn": limit_sane}

    @case
    def sr_sack_msg_limit_far_ahead(st):
        # a SACK (the victim's peer's, token and all) whose credit limit is
        # 2^30 messages past the last posted: taken, but the limit moves
        # only to the slot window (64) past the messages posted (fe1c937
        # took 2^30, and a limit only grows, so credits were off for good)
        v, _, _ = srv()
        post = v["sr"]["tx_msg_post"]
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SACK, sack_body(v["sr"]["tx_nxt"],
                                                                        msg_cum=v["sr"]["peer_msg_cum"],
                                                                        msg_limit=(post + (1 << 30)) & 0xFFFFFFFF)))])
        return {"drops": {}, "qp": "sr", "state": "RTS", "responses": "none",
                "sr_expect": {"peer_msg_limit": (post + 64) & 0xFFFFFFFF, "have_limit": True},
                "counter_delta": {"sacks_rcvd": 1, "retransmits": 0}, "reset": ["sr"]}

    @case
    def sr_duplicates_one_sack_per_rtt(st):
        # a WRITE, then 16 copies of it 5 ms apart (anyone can send a
        # packet behind the cumulative PSN): one SACK for the WRITE, one
        # for the first copy, none for the other 15 within the RTT (the
        # victim's RTO floor, 1 s: it has no RTT sample). fe1c937 answered
        # each copy (17 SACKs).
        v, psn, _ = srv()
        data = payload(64, 160)
        w = s.sr_write(v, psn, v["va"] + 256, data)
        s.wire.send([w])
        for i in range(16):
            time.sleep(0.005)
            s.wire.send([w])
        return {"drops": {"duplicate": 16}, "qp": "sr", "state": "RTS", "responses": "any",
                "sr_expect": {"rx_cum": psn_add(psn, 1)}, "counter_delta": {"sacks_sent": 2, "recv_ok": 0},
                "changes": {"sr_data": (256, 320, True)}, "content": {"sr_data": (256, data)}, "reset": ["sr"]}

    # ---- keyed by immediate (rel.imm_keyed, the srk victim): the BTH PSN
    # means nothing; a descriptor names the message's first PSN and
    # carries the victim's token; data counts only behind its descriptor
    def srkv():
        v = s.victim("srk")
        return v, v["sr"]["rx_cum"], v["sr"]["rx_msg_cum"]

    def srk_deliver(v, psn, msg, data):
        """desc + the one data packet of a SEND of len(data), BTH PSNs random"""
        desc = desc_payload(length=len(data), first_psn=psn, token=v["token"])
        return [s.srk_send(v, msg, SRW_DESC, 0, desc), s.srk_send(v, msg, SRW_LAST_DESC, 0, data)]

    @case
    def srk_control_send_accepted(st):
        # the positive control: PSNs from the descriptor (first = the
        # cumulative PSN), none from the BTH
        v, psn, msg = srkv()
        buf = sr_fresh_recv(v, "srk")
        data = payload(64, 301)
        s.wire.send(srk_deliver(v, psn, msg, data))
        off = buf * v["recv_len"]
        return {"drops": {}, "qp": "srk", "responses": "any", "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 2), "rx_msg_cum": msg + 1},
                "counter_delta": {"recv_ok": 1, "recv_err": 0},
                "changes": {"srk_recv": (off, off + 64, True)}, "content": {"srk_recv": (off, data)},
                "reset": ["srk"]}

    @case
    def srk_desc_without_token(st):
        # a descriptor with another token: it could name any first PSN, so
        # it binds nothing and marks nothing
        v, psn, msg = srkv()
        desc = desc_payload(length=64, first_psn=psn, token=v["token"] ^ 0x5A5A5A5A)
        s.wire.send([s.srk_send(v, msg, SRW_DESC, 0, desc)])
        return sr_dropped("srk", "bad_token")

    @case
    def srk_data_before_desc(st):
        # data of a message whose descriptor has not come: no PSN to count
        # it at (the sender resends it), nothing placed or bound
        v, _, msg = srkv()
        s.wire.send([s.srk_send(v, msg, SRW_LAST_DESC, 0, payload(64, 302))])
        return sr_dropped("srk", "no_desc")

    @case
    def srk_write_to_message_space(st):
        # a WRITE with immediate to rkey 0: keyed, that space is reached
        # by SEND with immediate only (a NIC could not place it)
        v, psn, msg = srkv()
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 0, payload(64, 303))])
        return sr_dropped("srk", "bad_opcode")

    @case
    def srk_plain_write(st):
        # a plain WRITE has no immediate to key by
        v, psn, _ = srkv()
        s.wire.send([s.sr_write(v, psn, v["va"], payload(64, 304))])
        return sr_dropped("srk", "bad_opcode")

    @case
    def srk_write_imm_data_as_send(st):
        # a WRITE with immediate whose data comes as SEND with immediate
        # (what a failover backup sends: a verbs peer's other devices have
        # keys of their own, docs/wire.md): placed where the descriptor
        # says, the key checked by the receiver; it takes a receive, as
        # its WRITE would
        v, psn, msg = srkv()
        sr_fresh_recv(v, "srk")
        data = payload(64, 306)
        desc = desc_payload(op=WR_WRITE_IMM, length=64, rkey=v["rkey"], raddr=v["va"] + 512, first_psn=psn,
                            token=v["token"])
        s.wire.send([s.srk_send(v, msg, SRW_DESC, 0, desc), s.srk_send(v, msg, SRW_LAST_DESC, 0, data)])
        return {"drops": {}, "qp": "srk", "responses": "any", "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 2), "rx_msg_cum": msg + 1},
                "counter_delta": {"recv_ok": 1, "recv_err": 0},
                "changes": {"srk_data": (512, 576, True)}, "content": {"srk_data": (512, data)},
                "reset": ["srk"]}

    def srk_late_prep():
        v, psn, msg = srkv()
        if v["sr"]["rx_bind_next"] != 0:
            raise Failed("the srk victim is not fresh (%d receives bound)" % v["sr"]["rx_bind_next"])
        s.wire.send(srk_deliver(v, psn, msg, payload(64, 305)))
        time.sleep(SETTLE_S)

    @case
    def srk_late_copies_one_sack(st):
        # 20 copies of a delivered message's last packet, 5 ms apart: stale
        # (gone from the window), nothing placed; the sender, whose SACK may
        # have been lost, hears one SACK, not 20, within the RTT (the
        # victim's RTO floor: it has no RTT sample)
        v, psn, msg = srkv()
        late = s.srk_send(v, (msg - 1) & SRW_MSG_MASK, SRW_LAST_DESC, 0, payload(64, 305))
        for _ in range(20):
            s.wire.send([late])
            time.sleep(0.005)
        # (the prep's message is in the first receive buffer)
        return {"drops": {"stale_msg": 20}, "qp": "srk", "state": "RTS", "responses": "any",
                "sr_same": SR_SAME, "counter_delta": {"sacks_sent": 1, "recv_ok": 0},
                "changes": {"srk_recv": (0, 64, True)}, "content": {"srk_recv": (0, payload(64, 305))},
                "reset": ["srk"]}
    srk_late_copies_one_sack.prep = srk_late_prep

    # ---- ec keyed by immediate (the eck victim, RS(2,1)): a parity packet
    # and ec's second descriptor (immediate index 1) are placed by the
    # first descriptor's PSN, like data
    def eckv():
        v = s.victim("eck")
        return v, v["sr"]["rx_cum"], v["sr"]["rx_msg_cum"]

    @case
    def eck_control_send_accepted(st):
        # the positive control: descriptor then the one data packet (the
        # submessage is whole: every PSN of the message counts, parity too)
        v, psn, msg = eckv()
        buf = sr_fresh_recv(v, "eck")
        data = payload(64, 311)
        desc = desc_payload(ec=1, length=len(data), first_psn=psn, token=v["token"])
        s.wire.send([s.srk_send(v, msg, SRW_DESC, 0, desc), s.srk_send(v, msg, SRW_LAST_DESC, 0, data)])
        off = buf * v["recv_len"]
        return {"drops": {}, "qp": "eck", "responses": "any", "state": "RTS",
                "sr_expect": {"rx_msg_cum": msg + 1}, "counter_delta": {"recv_ok": 1, "recv_err": 0},
                "changes": {"eck_recv": (off, off + 64, True)}, "content": {"eck_recv": (off, data)},
                "reset": ["eck"]}

    @case
    def eck_parity_before_desc(st):
        # parity of a message whose descriptor has not come: no PSN to
        # keep it at, nothing stored or marked
        v, _, msg = eckv()
        s.wire.send([s.srk_send(v, msg, SRW_PARITY, 0, payload(MTU, 312))])
        return sr_dropped("eck", "no_desc")

    @case
    def eck_desc_other_index(st):
        # a descriptor's immediate index is 0 (the first copy) or 1 (ec's
        # second): any other names no PSN
        v, psn, msg = eckv()
        desc = desc_payload(ec=1, length=64, first_psn=psn, token=v["token"])
        s.wire.send([s.srk_send(v, msg, SRW_DESC, 2, desc)])
        return sr_dropped("eck", "bad_ctrl")

    @case
    def srk_second_desc_on_sr(st):
        # sr sends no second descriptor: index 1 there is a forger's
        v, psn, msg = srkv()
        desc = desc_payload(length=64, first_psn=psn, token=v["token"])
        s.wire.send([s.srk_send(v, msg, SRW_DESC, 1, desc)])
        return sr_dropped("srk", "bad_ctrl")

    # ---- be keyed by immediate (the bek victim, reset before each case:
    # message 0 active, its first receive buffer 0): the BTH PSN means
    # nothing; a descriptor with the token opens a message (and only that
    # preempts the active one), data counts behind its descriptor
    # (be_reset, BE_QUIET: the be section below; both are looked up when
    # the cases run)
    def bek_case(fn):
        fn.prep = lambda: be_reset(name="bek")
        out.append((fn.__name__, fn))
        return fn

    def bekv():
        v = s.victim("bek")
        return v, v["be"]["cur"]

    def bek_dropped(reason, n=1):
        """be keyed: dropped, nothing answered, no receive completed, the active message untouched."""
        return {"drops": {reason: n}, "qp": "bek", "responses": "none", "state": "RTS",
                "be_same": ("cur", "active", "placed", "flags"), "counter_delta": BE_QUIET}

    def bek_desc(v, length, token=None):
        return desc_payload(length=length, token=v["token"] if token is None else token)

    @bek_case
    def bek_control_send_accepted(st):
        # a one-packet SEND: its descriptor, the last packet, the tail's
        # copy (a duplicate once the message is over)
        v, cur = bekv()
        data = payload(64, 321)
        s.wire.send([s.srk_send(v, cur, SRW_DESC, 0, bek_desc(v, 64)), s.srk_send(v, cur, SRW_LAST, 0, data),
                     s.srk_send(v, cur, SRW_BE_TAIL, 0, data)])
        return {"drops": {"duplicate": 1}, "qp": "bek", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1}, "counter_delta": dict(BE_QUIET, recv_ok=1),
                "last_recv": {"opcode": "RECV", "flags": 0, "byte_len": 64},
                "changes": {"bek_recv": (0, 64, True)}, "content": {"bek_recv": (0, data)}}

    @bek_case
    def bek_desc_without_token(st):
        v, cur = bekv()
        s.wire.send([s.srk_send(v, cur, SRW_DESC, 0, bek_desc(v, 64, token=v["token"] ^ 0x5A5A5A5A))])
        return bek_dropped("bad_token")

    @bek_case
    def bek_data_before_desc(st):
        # the active message's data, its descriptor not here: not counted
        v, cur = bekv()
        s.wire.send([s.srk_send(v, cur, SRW_LAST, 0, payload(64, 322))])
        return bek_dropped("no_desc")

    @bek_case
    def bek_newer_data_preempts_nothing(st):
        # unkeyed, a packet of a newer message ends the active one; keyed,
        # only that message's descriptor (with the token) may
        v, cur = bekv()
        s.wire.send([s.srk_send(v, cur + 1, SRW_LAST, 0, payload(64, 323)),
                     s.srk_send(v, cur + 5, SRW_DATA, 0, payload(MTU, 324))])
        return bek_dropped("no_desc", 2)

    @bek_case
    def bek_newer_desc_preempts(st):
        # the positive control: the next message's descriptor ends the
        # active one (PREEMPTED, nothing placed) and opens its own
        v, cur = bekv()
        s.wire.send([s.srk_send(v, cur + 1, SRW_DESC, 0, bek_desc(v, 64))])
        return {"drops": {}, "qp": "bek", "responses": "none", "state": "RTS", "be_expect": {"cur": cur + 1},
                "counter_delta": dict(BE_QUIET, recv_ok=1, be_preempted=1)}

    @bek_case
    def bek_write_to_message_space(st):
        # a WRITE with immediate to rkey 0: keyed, the receive's buffer is
        # reached by SEND with immediate only
        v, cur = bekv()
        s.wire.send([s.sr_msg(v, random.randrange(1 << 24), cur, SRW_LAST, 0, payload(64, 325))])
        return bek_dropped("bad_opcode")

    # ---- generations (docs/wire.md "sr and ec": message = 8-bit slot |
    # 4-bit generation): a number with a finished message's slot and an
    # older generation is outside the 64-message window, not that slot's
    @case
    def sr_stale_generation(st):
        # A WRITE with immediate (message m, one packet, into sr_data)
        # completes a receive; then WRITE-with-immediate data packets with
        # m - 256 (m's slot, one generation back) and m + 1 - 256 (the slot
        # of the next message, inside the window, one generation back):
        # both late, neither placed nor counted (256 back is past the
        # finished messages' PSN spans the receiver keeps). A
        # receiver that compared only the low 8 bits would take the second
        # as message m + 1 and write it.
        v, psn, msg = srv()
        d0 = payload(64, 195)
        s.wire.send([s.sr_msg(v, psn, msg, SRW_LAST, 0, d0, rkey=v["rkey"], va=v["va"] + 256),
                     s.sr_msg(v, psn_add(psn, 1), msg - 256, SRW_LAST, 0, payload(64, 196), rkey=v["rkey"],
                              va=v["va"] + 512),
                     s.sr_msg(v, psn_add(psn, 2), msg + 1 - 256, SRW_LAST, 0, payload(64, 197), rkey=v["rkey"],
                              va=v["va"] + 768)])
        return {"drops": {"stale_msg": 2}, "qp": "sr", "state": "RTS", "sack_cum": psn_add(psn, 1),
                "sr_expect": {"rx_cum": psn_add(psn, 1), "rx_msg_cum": msg + 1},
                "counter_delta": {"recv_ok": 1, "recv_err": 0},
                "last_recv": {"opcode": "RECV_RDMA_WITH_IMM", "byte_len": 64},
                "changes": {"sr_data": (256, 320, True)}, "content": {"sr_data": (256, d0)}, "reset": ["sr"]}

    @case
    def ec_stale_generation(st):
        # the same numbers at the ec victim (no message of its own first):
        # its window base and the number after it, one generation back;
        # dropped unmarked, nothing answered (no finished span holds them)
        v, psn, msg = srv("ec")
        s.wire.send([s.sr_msg(v, psn_add(psn, i), m - 256, SRW_LAST, 0, payload(64, 198 + i), rkey=v["rkey"],
                              va=v["va"] + 256 + 64 * i) for i, m in enumerate((msg, msg + 1))])
        return sr_dropped("ec", "stale_msg", 2, reset=["ec"])

    # ======================================================================
    # be (docs/wire.md "be: best effort, version 1"; docs/reliability.md
    # "be"): the `be` victim is peered with this host (its peer's data QPN
    # ATK+10, control ATK+11) and reset before each of its cases, so its
    # active message is 0, its first receive (of four, 2048 bytes) is
    # buffer 0, and its highest PSN is the one before the PSN it expects.
    # be answers nothing: every case also checks that nothing came back.
    # The legit_be cases forge the client's address while its verified be
    # traffic runs; that the traffic goes on, with no receive of its ended
    # by a deadline or a newer message, is checked after each case.
    # ======================================================================
    def be_reset(first_timeout_ms=None, name="be"):
        # a fresh victim: message 0, the first receive active (its
        # deadline starts when the engine takes it up, just after the reset)
        s.ctl.cmd("reset " + name + (" %d" % first_timeout_ms if first_timeout_ms else ""))
        deadline = time.monotonic() + 2
        while not s.victim(name)["be"]["active"]:
            if time.monotonic() > deadline:
                raise Failed("the %s victim's first receive did not become active within 2 s of its reset" % name)
            time.sleep(0.005)

    def be_case(fn):
        fn.prep = be_reset
        out.append((fn.__name__, fn))
        return fn

    def bev():
        v = s.victim("be")
        return v, psn_add(v["be"]["psn_hi"], 1), v["be"]["cur"]

    BE_QUIET = {"recv_ok": 0, "recv_err": 0, "be_preempted": 0, "be_timeouts": 0, "late_drops": 0}

    def be_dropped(reason, n=1, same=("cur", "active", "placed", "flags"), **kw):
        """be: dropped, nothing answered, no receive completed, the active message untouched."""
        cd = dict(BE_QUIET, late_drops=n if reason == "late" else 0)
        e = {"drops": {reason: n}, "qp": "be", "responses": "none", "state": "RTS", "be_same": same,
             "counter_delta": cd}
        e.update(kw)
        return e

    @be_case
    def be_control_send_accepted(st):
        # a one-packet SEND: kind 1 (last) at index 0, rkey 0, va 0, then
        # its copy (kind 6), which finds the message finished: a duplicate
        v, psn, cur = bev()
        data = payload(64, 170)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_LAST, 0, data), s.sr_msg(v, psn_add(psn, 1), cur, SRW_BE_TAIL, 0, data)])
        return {"drops": {"duplicate": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1, "psn_hi": psn_add(psn, 1)},
                "counter_delta": dict(BE_QUIET, recv_ok=1), "last_recv": {"opcode": "RECV", "flags": 0, "byte_len": 64},
                "changes": {"be_recv": (0, 64, True)}, "content": {"be_recv": (0, data)}}

    # ---- adaptive-timeout votes at the be victim (docs/reliability.md):
    # conf_peer's "tmo" makes a group (id 77) over the be victim alone,
    # this host its one peer, who may vote
    TMO_GROUP = 77

    def vote(v, rnd, prop):
        return s.sr_ctrl(v, ctrl_payload(SRW_CTRL_VOTE, struct.pack("!IIQI", TMO_GROUP, rnd, prop & (2**64 - 1), 0)))

    def tmo_poll(rnd, wait_s):
        deadline = time.monotonic() + wait_s
        while True:
            r = s.ctl.cmd("tmo exch %d" % rnd)
            if r["rc"] == 0 or time.monotonic() > deadline:
                return r
            time.sleep(0.02)

    @be_case
    def be_vote_out_of_range(st):
        # round 5 starts at T = 1.25 x 1 s + 50 us. The peer's votes of 60 s
        # (it set a group's timeout from 175 us to 60 s), 2^64 - 1 (it
        # wrapped to a 1 us deadline), T / 9, and one for round 1005 (the
        # slot of round 5; the highest round seen stalled the exchange) are
        # dropped as bad_vote and change nothing; then the real vote, 2T,
        # completes round 5: T' = 0.2 x median(T, 2T) + 0.8 T = 1.1 T
        v = s.victim("be")
        t0 = s.ctl.cmd("tmo be 1000000")["timeout_ns"]
        first = s.ctl.cmd("tmo exch 5")
        s.wire.send([vote(v, 5, 60 * 10**9), vote(v, 5, 2**64 - 1), vote(v, 5, t0 // 9), vote(v, 1005, t0)])
        time.sleep(0.2)
        mid = s.ctl.cmd("tmo exch 5")
        s.wire.send([vote(v, 5, 2 * t0)])
        last = tmo_poll(5, 2)
        s.ctl.cmd("tmo off")
        want = int(0.2 * (1.5 * t0) + 0.8 * t0)

        def check_got(got, before, after, errs):
            if t0 != 1250050000 or first["rc"] != -11:
                errs.append("setup: T %d ns, first exchange rc %d" % (t0, first["rc"]))
            if mid["rc"] != -11 or mid["timeout_ns"] != t0:
                errs.append("after the out-of-range votes: exchange rc %d, T %d ns (was %d)"
                            % (mid["rc"], mid["timeout_ns"], t0))
            if last["rc"] != 0 or abs(last["timeout_ns"] - want) > 1:
                errs.append("after the real vote: exchange rc %d, T %d ns, want 0 and %d"
                            % (last["rc"], last["timeout_ns"], want))
        return {"drops": {"bad_vote": 4}, "qp": "be", "state": "RTS", "check_got": check_got}

    @be_case
    def be_vote_60s(st):
        # the finding's vote alone: 60 s for round 5 from the one peer.
        # Taken, the round would end with T = 0.2 x median(T, 60 s) + 0.8 T,
        # about 7.1 s; dropped (bad_vote), the round waits with T as it was
        # and the real vote (T) then ends it with T unchanged
        v = s.victim("be")
        t0 = s.ctl.cmd("tmo be 1000000")["timeout_ns"]
        s.ctl.cmd("tmo exch 5")
        s.wire.send([vote(v, 5, 60 * 10**9)])
        time.sleep(0.2)
        mid = s.ctl.cmd("tmo exch 5")
        s.wire.send([vote(v, 5, t0)])
        last = tmo_poll(5, 2)
        s.ctl.cmd("tmo off")

        def check_got(got, before, after, errs):
            if mid["rc"] != -11 or mid["timeout_ns"] != t0:
                errs.append("after the 60 s vote: exchange rc %d, T %d ns (was %d)" % (mid["rc"], mid["timeout_ns"], t0))
            if last["rc"] != 0 or last["timeout_ns"] != t0:
                errs.append("after the real vote: exchange rc %d, T %d ns, want 0 and %d"
                            % (last["rc"], last["timeout_ns"], t0))
        return {"drops": {"bad_vote": 1}, "qp": "be", "state": "RTS", "check_got": check_got}

    @be_case
    def be_late_after_completion(st):
        # message cur completes (receive 0); then two packets with its
        # number at new PSNs inside the window: a copy of its last packet
        # and a full-MTU packet at index 1 (which would land at 1024 of the
        # next receive): late, nothing placed; then message cur + 1 goes
        # on in receive 1
        v, psn, cur = bev()
        rl = v["recv_len"]
        d0, d1 = payload(64, 171), payload(64, 172)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_LAST, 0, d0),
                     s.sr_msg(v, psn_add(psn, 1), cur, SRW_LAST, 0, payload(64, 173)),
                     s.sr_msg(v, psn_add(psn, 2), cur, SRW_DATA, 1, payload(MTU, 174)),
                     s.sr_msg(v, psn_add(psn, 3), cur + 1, SRW_LAST, 0, d1)])
        return {"drops": {"late": 2}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 2},
                "counter_delta": dict(BE_QUIET, recv_ok=2, late_drops=2),
                "last_recv": {"opcode": "RECV", "flags": 0, "byte_len": 64},
                "changes": {"be_recv": (0, rl + 64, True)}, "content": {"be_recv": [(0, d0), (rl, d1)]}}

    @be_case
    def be_late_write_imm(st):
        # a WRITE with immediate (one packet into be_data at 256)
        # completes; a packet with its number to the same key at 512: late
        v, psn, cur = bev()
        d0 = payload(64, 175)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_LAST, 0, d0, rkey=v["rkey"], va=v["va"] + 256),
                     s.sr_msg(v, psn_add(psn, 1), cur, SRW_LAST, 0, payload(64, 176), rkey=v["rkey"],
                              va=v["va"] + 512)])
        return {"drops": {"late": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1}, "counter_delta": dict(BE_QUIET, recv_ok=1, late_drops=1),
                "last_recv": {"opcode": "RECV_RDMA_WITH_IMM", "byte_len": 64},
                "changes": {"be_data": (256, 320, True)}, "content": {"be_data": (256, d0)}}

    @be_case
    def be_late_after_preemption(st):
        # a packet of message cur + 1 ends message cur (receive 0
        # completes empty, PREEMPTED) and is placed in receive 1; then a
        # packet of message cur: late
        v, psn, cur = bev()
        rl = v["recv_len"]
        d1 = payload(64, 177)
        s.wire.send([s.sr_msg(v, psn, cur + 1, SRW_LAST, 0, d1),
                     s.sr_msg(v, psn_add(psn, 1), cur, SRW_LAST, 0, payload(64, 178))])
        return {"drops": {"late": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 2},
                "counter_delta": dict(BE_QUIET, recv_ok=2, be_preempted=1, late_drops=1),
                "last_recv": {"opcode": "RECV", "flags": 0, "byte_len": 64},
                "changes": {"be_recv": (rl, rl + 64, True)}, "content": {"be_recv": (rl, d1)}}

    @be_case
    def be_stale_generation(st):
        # numbers far behind the active one, at the next PSNs: cur - 1000,
        # cur - 256 (the active number's low 8 bits, an older generation)
        # and cur - 2048 (half the space: the first number taken as behind)
        v, psn, cur = bev()
        s.wire.send([s.sr_msg(v, psn_add(psn, i), m, SRW_LAST, 0, payload(64, 179 + i))
                     for i, m in enumerate((cur - 1000, cur - 256, cur - BE_MSG_HALF))])
        return be_dropped("late", 3)

    @be_case
    def be_psn_out_of_window(st):
        # the active message's number, PSNs BE_PSN_AHEAD + 1 and 2^22 past
        # the highest seen
        v, psn, cur = bev()
        hi = v["be"]["psn_hi"]
        s.wire.send([s.sr_msg(v, psn_add(hi, BE_PSN_AHEAD + 1), cur, SRW_LAST, 0, payload(64, 182)),
                     s.sr_msg(v, psn_add(hi, 1 << 22), cur, SRW_LAST, 0, payload(64, 183))])
        return be_dropped("psn_out_of_window", 2, same=("cur", "active", "placed", "flags", "psn_hi"))

    @be_case
    def be_msg_far_ahead(st):
        # one-packet messages BE_MSG_AHEAD + 1 and 2047 numbers past the
        # active one at the next PSN: dropped (stale_msg) before anything
        # moves. fe1c937 took them: each ended every receive up to it as
        # preempted (2047 in the finding), and moved the highest PSN.
        v, psn, cur = bev()
        s.wire.send([s.sr_msg(v, psn, cur + BE_MSG_AHEAD + 1, SRW_LAST, 0, payload(64, 185)),
                     s.sr_msg(v, psn_add(psn, 1), cur + BE_MSG_HALF - 1, SRW_LAST, 0, payload(64, 186))])
        return be_dropped("stale_msg", 2, same=("cur", "active", "placed", "flags", "psn_hi"))

    @be_case
    def be_psn_jump_next_taken(st):
        # one packet of the active message 1000 PSNs ahead (a short non-last
        # packet: bad_length_msg once its PSN counted) moves the highest PSN;
        # the PSNs it jumped over were never seen, so the sender's next
        # packets (a one-packet SEND and its copy) are taken, not late
        v, psn, cur = bev()
        data = payload(64, 187)
        s.wire.send([s.sr_msg(v, psn_add(psn, 1000), cur, SRW_DATA, 0, payload(64, 188))])
        time.sleep(SETTLE_S)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_LAST, 0, data), s.sr_msg(v, psn_add(psn, 1), cur, SRW_BE_TAIL, 0, data)])
        return {"drops": {"bad_msg_length": 1, "duplicate": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1, "psn_hi": psn_add(psn, 1000)},
                "counter_delta": dict(BE_QUIET, recv_ok=1), "last_recv": {"opcode": "RECV", "flags": 0, "byte_len": 64},
                "changes": {"be_recv": (0, 64, True)}, "content": {"be_recv": (0, data)}}

    @be_case
    def be_psn_window_edge_accepted(st):
        # the last PSN of the window (BE_PSN_AHEAD past the highest seen) is taken
        v, psn, cur = bev()
        hi = v["be"]["psn_hi"]
        data = payload(64, 184)
        s.wire.send([s.sr_msg(v, psn_add(hi, BE_PSN_AHEAD), cur, SRW_LAST, 0, data)])
        return {"drops": {}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1, "psn_hi": psn_add(hi, BE_PSN_AHEAD)},
                "counter_delta": dict(BE_QUIET, recv_ok=1),
                "changes": {"be_recv": (0, 64, True)}, "content": {"be_recv": (0, data)}, "reset": ["be"]}

    # ---- SYNC (docs/wire.md "be"): the sender's next PSN, every 1024
    # PSNs, so that a receiver that lost more than its window in a row
    # (a link down a while) finds the sender again. Only the token moves it.
    def be_sync(v, nxt, token=None):
        return s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SYNC, struct.pack("!I", nxt & PSN_MASK), token=token))

    @be_case
    def be_sync_far_ahead_resyncs(st):
        # 70 000 PSNs lost in a row: the next packet lies past the window
        # (fe1c937: refused as psn_out_of_window, the SYNC as bad_ctrl);
        # the SYNC moves the window there and the packet completes a receive
        v, psn, cur = bev()
        nxt = psn_add(psn, 70000)
        data = payload(64, 189)
        s.wire.send([be_sync(v, nxt)])
        time.sleep(SETTLE_S)
        s.wire.send([s.sr_msg(v, nxt, cur, SRW_LAST, 0, data), s.sr_msg(v, psn_add(nxt, 1), cur, SRW_BE_TAIL, 0, data)])
        return {"drops": {"duplicate": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1, "psn_hi": psn_add(nxt, 1)},
                "counter_delta": dict(BE_QUIET, recv_ok=1), "last_recv": {"opcode": "RECV", "flags": 0, "byte_len": 64},
                "changes": {"be_recv": (0, 64, True)}, "content": {"be_recv": (0, data)}}

    @be_case
    def be_sync_in_window_ignored(st):
        # a SYNC inside the window (or behind it) says nothing new: the
        # highest PSN stays, and the PSNs before the SYNC's are still taken
        v, psn, cur = bev()
        data = payload(64, 190)
        s.wire.send([be_sync(v, psn_add(psn, 100)), be_sync(v, psn_add(psn, -5000))])
        time.sleep(SETTLE_S)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_LAST, 0, data), s.sr_msg(v, psn_add(psn, 1), cur, SRW_BE_TAIL, 0, data)])
        return {"drops": {"duplicate": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1, "psn_hi": psn_add(psn, 1)},
                "counter_delta": dict(BE_QUIET, recv_ok=1), "changes": {"be_recv": (0, 64, True)},
                "content": {"be_recv": (0, data)}}

    @be_case
    def be_sync_wrong_token(st):
        # a SYNC far ahead without the token: had it moved the window, the
        # peer's packets would all be late
        v, psn, cur = bev()
        s.wire.send([be_sync(v, psn_add(psn, 20000), token=wrong_token(v))])
        return be_dropped("bad_token", same=("cur", "active", "placed", "flags", "psn_hi"))

    # ======================================================================
    # Memory windows (type 2; docs/api.md "Memory windows"). conf_peer
    # binds a window over part of a victim's data region on that victim QP
    # ("mw bind NAME OFF LEN", BIND_MW) and invalidates it ("mw inv NAME",
    # LOCAL_INV); the victims' peer is this host, so its WRITEs through the
    # window come from the QP's own peer at the expected PSN (the legit
    # QPs' peer is the live client, whose PSNs a forged request would take).
    # A key after its invalidation is refused as a bad rkey is (rc: NAK
    # remote access error, QP to ERR) but counted as rkey_revoked.
    # ======================================================================
    def mw_case(victim, off, length, be_first_timeout_ms=None):
        def deco(fn):
            def prep():
                if victim == "be":
                    be_reset(be_first_timeout_ms)
                s.ctl.cmd("mw bind %s %d %d" % (victim, off, length))
            fn.prep = prep
            out.append((fn.__name__, fn))
            return fn
        return deco

    @mw_case("rc", 1024, 512)
    def rc_mw_write_then_local_inv(st):
        # a WRITE through the window is placed and ACKed; conf_peer then
        # invalidates the window (LOCAL_INV, completed before the next
        # packet leaves) and the same WRITE, other bytes, at the next PSN:
        # refused, NAK remote access error, nothing placed
        v = s.victim("rc")
        w, psn = v["mw"], v["rq_psn"]
        d0, d1 = payload(64, 200), payload(64, 201)

        def write(p, data):
            return s.frame(RC | WRITE_ONLY, v["qpn"], p, RETH(va=w["va"] + 64, rkey=w["rkey"], dma_len=64), data)
        s.wire.send([write(psn, d0)])
        time.sleep(SETTLE_S)
        s.ctl.cmd("mw inv rc")
        s.wire.send([write(psn_add(psn, 1), d1)])
        base = w["va"] - v["va"]
        return {"drops": {"rkey_revoked": 1}, "qp": "rc", "state": "ERR", "reset": ["rc"],
                "responses": [(ACK, psn, None), (ACK, psn_add(psn, 1), NAK_REM_ACCESS)],
                "changes": {"rc_data": (base + 64, base + 128, True)}, "content": {"rc_data": (base + 64, d0)}}

    @mw_case("rc", 1024, 512)
    def rc_mw_key_on_other_qp(st):
        # a window opens to the QP it is bound to, not to another QP of its
        # PD with the same peer: its valid key on the uc victim is unknown
        v, w = s.victim("uc"), s.victim("rc")["mw"]
        s.wire.send([s.frame(UC | WRITE_ONLY, v["qpn"], v["rq_psn"], RETH(va=w["va"], rkey=w["rkey"], dma_len=64),
                             payload(64, 202))])
        return dropped("uc", "bad_rkey", psn_unchanged=False)

    @mw_case("be", 1024, 1024)
    def be_mw_local_inv(st):
        # be: a WRITE with immediate through the window completes; after
        # LOCAL_INV the next message's WRITE with immediate through the same
        # key is refused and places nothing (its message stays active)
        v, psn, cur = bev()
        w = v["mw"]
        base = w["va"] - v["va"]
        d0 = payload(64, 203)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_LAST, 0, d0, rkey=w["rkey"], va=w["va"])])
        time.sleep(SETTLE_S)
        s.ctl.cmd("mw inv be")
        s.wire.send([s.sr_msg(v, psn_add(psn, 1), cur + 1, SRW_LAST, 0, payload(64, 204), rkey=w["rkey"],
                              va=w["va"] + 64)])
        return {"drops": {"rkey_revoked": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1}, "counter_delta": dict(BE_QUIET, recv_ok=1),
                "last_recv": {"opcode": "RECV_RDMA_WITH_IMM", "flags": 0, "byte_len": 64},
                "changes": {"be_data": (base, base + 64, True)}, "content": {"be_data": (base, d0)}}

    BE_SHORT_MS = 300  # the be victim's first receive's deadline in the timeout case

    def be_wait_cur(want, limit_s):
        deadline = time.monotonic() + limit_s
        while s.victim("be")["be"]["cur"] < want:
            if time.monotonic() > deadline:
                raise Failed("the be victim's message %d did not end within %.1f s" % (want - 1, limit_s))
            time.sleep(0.01)

    @mw_case("be", 1024, 1024, be_first_timeout_ms=BE_SHORT_MS)
    def be_mw_revoked_by_timeout(st):
        # docs/reliability.md "be": a WRITE with immediate that ends by
        # timeout revokes its key if that key is a window's. The first
        # packet (of two) of a WRITE with immediate through the window is
        # placed; the message's receive reaches its 300 ms deadline
        # (TIMEOUT | PARTIAL, 1024 bytes); then the next message's WRITE
        # with immediate and a plain WRITE through the key: rkey_revoked
        v, psn, cur = bev()
        w = v["mw"]
        base = w["va"] - v["va"]
        d0 = payload(MTU, 205)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_DATA, 0, d0, rkey=w["rkey"], va=w["va"])])
        be_wait_cur(cur + 1, BE_SHORT_MS / 1000.0 + 2)
        s.wire.send([s.sr_msg(v, psn_add(psn, 1), cur + 1, SRW_LAST, 0, payload(64, 206), rkey=w["rkey"], va=w["va"]),
                     s.sr_msg(v, psn_add(psn, 2), cur + 1, SRW_BE_WRITE, 0, payload(64, 207), rkey=w["rkey"],
                              va=w["va"] + 64)])
        return {"drops": {"rkey_revoked": 2}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 1}, "counter_delta": dict(BE_QUIET, recv_ok=1, be_timeouts=1),
                "last_recv": {"opcode": "RECV_RDMA_WITH_IMM", "flags": WC_TIMEOUT | WC_PARTIAL, "byte_len": MTU},
                "changes": {"be_data": (base, base + MTU, True)}, "content": {"be_data": (base, d0)}}

    @mw_case("be", 1024, 1024)
    def be_mw_revoked_by_preemption(st):
        # the same when a newer message ends the WRITE with immediate: a
        # one-packet SEND of message cur + 1 preempts it (and completes);
        # then message cur + 2's WRITE with immediate through the key
        v, psn, cur = bev()
        w = v["mw"]
        base, rl = w["va"] - v["va"], v["recv_len"]
        d0, d1 = payload(MTU, 208), payload(64, 209)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_DATA, 0, d0, rkey=w["rkey"], va=w["va"]),
                     s.sr_msg(v, psn_add(psn, 1), cur + 1, SRW_LAST, 0, d1),
                     s.sr_msg(v, psn_add(psn, 2), cur + 2, SRW_LAST, 0, payload(64, 210), rkey=w["rkey"],
                              va=w["va"])])
        return {"drops": {"rkey_revoked": 1}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 2}, "counter_delta": dict(BE_QUIET, recv_ok=2, be_preempted=1),
                "last_recv": {"opcode": "RECV", "flags": 0, "byte_len": 64},
                "changes": {"be_data": (base, base + MTU, True), "be_recv": (rl, rl + 64, True)},
                "content": {"be_data": (base, d0), "be_recv": (rl, d1)}}

    @mw_case("be", 1024, 1024)
    def be_mw_desc_key_not_revoked(st):
        # a descriptor alone names any key: message cur's says WRITE with
        # immediate through the window, nothing of it is placed, and cur + 1
        # preempts it. Only a key that placed a packet of the message is
        # revoked, so message cur + 2's WRITE with immediate through the
        # window is placed (before: rkey_revoked, nothing placed)
        v, psn, cur = bev()
        w = v["mw"]
        base, rl = w["va"] - v["va"], v["recv_len"]
        d1, d2 = payload(64, 211), payload(64, 212)
        s.wire.send([s.sr_msg(v, psn, cur, SRW_DESC, 0, desc_payload(op=1, flags=1, length=2 * MTU, rkey=w["rkey"]),
                              va=0),
                     s.sr_msg(v, psn_add(psn, 1), cur + 1, SRW_LAST, 0, d1),
                     s.sr_msg(v, psn_add(psn, 2), cur + 2, SRW_LAST, 0, d2, rkey=w["rkey"], va=w["va"])])
        return {"drops": {}, "qp": "be", "responses": "none", "state": "RTS",
                "be_expect": {"cur": cur + 3}, "counter_delta": dict(BE_QUIET, recv_ok=3, be_preempted=1),
                "last_recv": {"opcode": "RECV_RDMA_WITH_IMM", "flags": 0, "byte_len": 64},
                "changes": {"be_data": (base, base + 64, True), "be_recv": (rl, rl + 64, True)},
                "content": {"be_data": (base, d2), "be_recv": (rl, d1)}}

    # ---- at legit_be, in the client's name. The forged PSNs are 1000
    # ahead of the highest seen: new and inside the 2^14 window whatever
    # the live traffic did meanwhile (a packet taken there jumps the
    # highest PSN; the client's PSNs it jumped over are still taken,
    # be_psn_jump_next_taken); the message numbers are behind the
    # active one by 1 (the message just completed) or more.
    BE_AHEAD = 1000

    def legit_be_expect(reason, n):
        return {"drops": {reason: n}, "qp": "legit_be", "state": "RTS",
                "counter_delta": {"late_drops": n if reason == "late" else 0, "be_preempted": 0, "be_timeouts": 0}}

    @case
    def be_blind_sweep_legit(st):
        # The finding's blind attack on the legit be connection, off-path
        # (the client's addresses, no knowledge of its PSN or message
        # number): one-packet messages ("last", 64 forged bytes) at PSNs
        # 2^15 + k x 2^16 past the highest seen, all 256 k, for two message
        # numbers 1900 and 2040 ahead of the one active when read: 512
        # frames. (The connection moves hundreds of messages a second and
        # building the frames takes a while on a loaded host: a number only
        # 1000 ahead had become one behind, late, by the time it arrived.)
        # fe1c937 took the first of each number (inside its 2^16 window,
        # both under 2048 ahead, so newer messages): every receive up
        # to it ended preempted, one completed with the forged bytes, and
        # the highest PSN jumped so the client's packets were dropped as
        # late. Now a number more than BE_MSG_AHEAD ahead is no message of
        # the peer's (stale_msg), before its PSN moves anything (the
        # narrower PSN window is be_psn_out_of_window's); the connection
        # goes on.
        lg = s.legit_be()
        hi, cur = lg["be"]["psn_hi"], lg["be"]["cur"]
        frames = []
        for m in (cur + 1900, cur + 2040):
            frames += [s.sr_msg(lg, psn_add(hi, (1 << 15) + k * (1 << 16)), m, SRW_LAST, 0, payload(64, 192),
                                src=lg["peer_ip"]) for k in range(256)]
        s.wire.send(frames)
        return legit_be_expect("stale_msg", 512)

    @case
    def be_late_legit(st):
        # packets of the message the client completed last: a SEND's
        # (rkey 0: it would land in the active receive, the next header)
        # and a WRITE with immediate's into a gap of legit_be_data
        lg = s.legit_be()
        hi, cur = lg["be"]["psn_hi"], lg["be"]["cur"]
        s.wire.send([s.sr_msg(lg, psn_add(hi, BE_AHEAD), cur - 1, SRW_LAST, 0, payload(32, 190), src=lg["peer_ip"]),
                     s.sr_msg(lg, psn_add(hi, BE_AHEAD + 1), cur - 1, SRW_LAST, 0, payload(64, 191), rkey=lg["rkey"],
                              va=lg["va"] + 3072, src=lg["peer_ip"])])
        return legit_be_expect("late", 2)

    @case
    def be_stale_generation_legit(st):
        lg = s.legit_be()
        hi, cur = lg["be"]["psn_hi"], lg["be"]["cur"]
        s.wire.send([s.sr_msg(lg, psn_add(hi, BE_AHEAD + i), m, SRW_LAST, 0, payload(32, 192 + i), src=lg["peer_ip"])
                     for i, m in enumerate((cur - 1000, cur - 256))])
        return legit_be_expect("late", 2)

    @case
    def be_psn_out_of_window_legit(st):
        # a number 1024 ahead (a newer message: it would end the active
        # one and 1023 more) at a PSN 100000 past the highest seen: no
        # message of the peer's (more than BE_MSG_AHEAD ahead), dropped
        # before its PSN is looked at
        lg = s.legit_be()
        hi, cur = lg["be"]["psn_hi"], lg["be"]["cur"]
        s.wire.send([s.sr_msg(lg, psn_add(hi, 100000), cur + 1024, SRW_LAST, 0, payload(32, 194), src=lg["peer_ip"])])
        return legit_be_expect("stale_msg", 1)

    # ======================================================================
    # Congestion notification and control (docs/wire.md "sr and
    # ec"): CNPs (opcode 0x81) for CE-marked arrivals and their reception,
    # trimmed data (DSCP 63, payload shorter than its RETH length) and the
    # TRIM NACK, EQDS's RTS and PULL. The `sre` and `sre2` victims are sr
    # QPs with EQDS at 1 Mb/s (their port's pull pacer grants 16 KiB about
    # every 140 ms); every other sr/ec QP runs no controller.
    # ======================================================================
    def cnp(v, psn=0, qpn=None, **kw):
        return s.frame(CNP, v["qpn"] if qpn is None else qpn, psn, None, b"\0" * 16, **kw)

    def ctrl_pkts(got, qpn, ctype):
        """bodies of the control packets of one type captured to qpn"""
        out = []
        for g in got:
            c = parse_ctrl(g[4]) if g[1] == qpn else None
            if c and c[0] == ctype:
                out.append(c[1])
        return out

    def data_psns(got, qpn):
        return [g[2] for g in got if g[1] == qpn and g[0] in (UC | WRITE_ONLY, UC | WRITE_ONLY_IMM)]

    def cnp_dropped(qp, reason, n=1):
        if qp.startswith("legit"):
            return {"drops": {reason: n}, "qp": qp, "state": "RTS", "counter_delta": {"cnps_rcvd": 0}}
        if qp in SR_VICTIMS:
            return sr_dropped(qp, reason, n, counter_delta=dict({k: 0 for k in SR_COUNTERS}, cnps_rcvd=0))
        return dropped(qp, reason, n, counter_delta={"cnps_rcvd": 0})

    # ---- CNPs: the reaction point takes them from the connection's peer only
    @case
    def cnp_wrong_src_ip(st):
        v = s.victim("sr")
        s.wire.send([cnp(v, v["sr"]["tx_una"], src=a.spoof_ip)])
        return cnp_dropped("sr", "bad_src_addr")

    @case
    def cnp_wrong_src_ip_legit(st):
        lg = s.legit_sr()
        s.wire.send([cnp(lg, lg["sr"]["tx_una"])])  # this host's own address
        return cnp_dropped("legit_sr", "bad_src_addr")

    def state_case(how):
        def fn(st):
            v = s.victim("sr")
            s.wire.send([cnp(v, v["sr"]["tx_una"])])
            return {"drops": {"qp_state": 1}, "qp": "sr", "responses": "none", "state": how.upper(),
                    "counter_delta": {"cnps_rcvd": 0}, "reset": ["sr"]}
        fn.prep = lambda: s.ctl.cmd("state sr %s" % how)
        return fn


    @case
    def cnp_to_ud(st):
        v = s.victim("ud")
        s.wire.send([cnp(v)])
        return cnp_dropped("ud", "bad_opcode")

    @case
    def cnp_rc_without_cc(st):
        # an RC QP has no controller: the CNP is counted and moves nothing
        v = s.victim("rc")
        s.wire.send([cnp(v, v["sq_psn"])])
        return {"drops": {}, "qp": "rc", "responses": "none", "state": "RTS", "psn_unchanged": True,
                "credits_unchanged": True, "counter_delta": {"cnps_rcvd": 1, "retransmits": 0}}

    @case
    def cnp_sr_without_cc(st):
        # sr with no controller: counted; one names a PSN far outside
        # [una, nxt) (its path is looked up only inside), one goes to the
        # control QPN; neither sends or moves anything
        v = s.victim("sr")
        s.wire.send([cnp(v, psn_add(v["sr"]["tx_nxt"], 1000000)), cnp(v, v["sr"]["tx_una"], qpn=v["ctrl_qpn"])])
        e = sr_dropped("sr", None)
        e["drops"] = {}
        e["counter_delta"] = dict(e["counter_delta"], cnps_rcvd=2, cc_losses=0)
        return e

    @case
    def cnp_legit_sr_without_cc(st):
        # in the client's name at the live sr connection: counted, harmless
        lg = s.legit_sr()
        s.wire.send([cnp(lg, psn_add(lg["sr"]["tx_una"], i), src=lg["peer_ip"]) for i in range(4)])
        return {"drops": {}, "qp": "legit_sr", "state": "RTS", "counter_delta": {"cnps_rcvd": 4, "cc_losses": 0}}

    # ---- CE marks: the notification point answers the connection's peer
    @case
    def ce_write_rc_cnp(st):
        # a CE-marked WRITE to an RC QP: placed, ACKed, and a CNP with its PSN
        v = s.victim("rc")
        data = payload(64, 300)
        s.wire.send([write_only(s, v, 256, data, tos=ECN_CE)])

        def cnps(got, errs):
            if [g[2] for g in got] != [v["rq_psn"]]:
                errs.append("CNPs at PSN %s, expected one at %d" % ([g[2] for g in got], v["rq_psn"]))
        return {"drops": {}, "qp": "rc", "responses": [(ACK, v["rq_psn"], None)], "state": "RTS", "cnps": cnps,
                "rq_psn": psn_add(v["rq_psn"], 1), "counter_delta": {"ecn_ce_rcvd": 1, "cnps_sent": 1},
                "changes": {"rc_data": (256, 320, True)}, "content": {"rc_data": (256, data)}}

    @case
    def ce_wrong_src_ip_no_cnp(st):
        # the connection check comes first: a CE-marked packet from another
        # host does not make the server notify its peer
        v, psn, _ = srv()
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, payload(64, 301), src=a.spoof_ip, tos=ECN_CE)])
        return sr_dropped("sr", "bad_src_addr", counter_delta=dict({k: 0 for k in SR_COUNTERS}, ecn_ce_rcvd=0,
                                                                   cnps_sent=0))

    @case
    def ce_ud_no_cnp(st):
        # datagrams have no peer to notify
        v = s.victim("ud")
        s.wire.send([s.frame(UD | SEND_ONLY, v["qpn"], 0, DETH(qkey=v["qkey"], src_qp=0xA7FFFF), payload(64, 302),
                             tos=ECN_CE)])
        return {"drops": {}, "qp": "ud", "responses": "none", "changes": {"ud_recv": (0, v["recv_len"], True)},
                "counter_delta": {"ecn_ce_rcvd": 0, "cnps_sent": 0}, "reset": ["ud"]}

    CE_BURST = 128

    @case
    def ce_burst_cnps_paced(st):
        # 128 CE-marked 64-byte WRITEs to `sr` (all of sr_data), queued
        # while the server's engine is held and then taken 32 per receive
        # burst: the notification point answers at most one CNP per 4 us
        # (and per burst), each with the PSN of a packet it answers. conf_peer
        # dates each CNP by the engine's clock ("cnplog": the receive burst
        # its mark came in); the data must all be placed.
        v, psn, _ = srv()
        n = CE_BURST
        datas = [payload(64, 400 + i) for i in range(n)]
        frames = [s.fast_sr_write(v, psn_add(psn, i), v["va"] + 64 * i, datas[i], ackreq=int(i == n - 1), tos=ECN_CE)
                  for i in range(n)]
        s.ctl.cmd("cnplog sr")
        s.ctl.cmd("hold 40")
        s.wire.send_raw(frames)
        time.sleep(0.05)

        def cnps(got, errs):
            log = s.ctl.cmd("cnplog sr")
            psns = [g[2] for g in got]
            if not psns:
                errs.append("no CNP for %d CE-marked packets" % n)
            if any((q - psn) & PSN_MASK >= n for q in psns) or psns != sorted(psns, key=lambda q: (q - psn) & PSN_MASK):
                errs.append("CNP PSNs %s: not the marked packets' (%d..%d), in order" % (psns, psn, psn_add(psn, n - 1)))
            if log["count"] != len(psns):
                errs.append("%d CNPs came, the engine dated %d" % (len(psns), log["count"]))
            if log["multi"]:
                errs.append("%d CNPs left in the same engine pass as another" % log["multi"])
            if log["count"] > 1 and log["min_gap_ns"] < CNP_MIN_GAP_NS:
                errs.append("two CNPs %d ns apart (at most one per %d ns)" % (log["min_gap_ns"], CNP_MIN_GAP_NS))
            span = log["last_ns"] - log["first_ns"]
            if log["count"] > 1 + span // CNP_MIN_GAP_NS:
                errs.append("%d CNPs in %d ns" % (log["count"], span))
        e = {"drops": {}, "qp": "sr", "sack_cum": psn_add(psn, n), "state": "RTS", "cnps": cnps,
             "sr_expect": {"rx_cum": psn_add(psn, n)},
             "counter_delta": {"ecn_ce_rcvd": n, "recv_ok": 0, "retransmits": 0},
             "changes": {"sr_data": (0, 64 * n, True)},
             "content": {"sr_data": [(64 * i, datas[i]) for i in range(n)]}}

        def sent_all(q0, q1, errs):
            if q1["cnps_sent"] - q0["cnps_sent"] < 1:
                errs.append("sr sent no CNP")
        e["check_fn"] = sent_all
        return e

    # ---- TRIM at the sender (`sr`, peered with this host): `send sr 4096`
    # puts 4 packets in flight (nothing acknowledges them); only a PSN in
    # flight, neither acknowledged nor already lost, is sent again
    tx = {}

    def trim_prep(nbytes=4096, sack_upto=0, sack_bits=0):
        s.ctl.cmd("reset sr")
        s.wire.drain()
        v = s.victim("sr")
        s.ctl.cmd("send sr %d" % nbytes)
        want = nbytes // MTU
        deadline = time.monotonic() + 1
        psns = []
        while len(psns) < want and time.monotonic() < deadline:
            time.sleep(0.01)
            psns += data_psns(s.wire.drain(), v["peer_qpn"])
        v = s.victim("sr")
        if len(psns) != want or v["sr"]["tx_nxt"] != psn_add(v["sr"]["tx_una"], want):
            raise Failed("`send sr %d` put PSNs %s in flight, expected %d (una %d nxt %d)"
                         % (nbytes, psns, want, v["sr"]["tx_una"], v["sr"]["tx_nxt"]))
        tx["psns"], tx["una"], tx["nxt"] = psns, v["sr"]["tx_una"], v["sr"]["tx_nxt"]
        if sack_upto or sack_bits:
            # the receiver's SACK: every PSN before una + sack_upto, and bitmap bits
            s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SACK, sack_body(
                psn_add(tx["una"], sack_upto), nbits=32, bitmap=struct.pack("<I", sack_bits))))])
            time.sleep(0.05)
            s.wire.drain()

    def trim_case(fn):
        fn.prep = trim_prep
        out.append((fn.__name__, fn))
        return fn

    TRIM_SETTLE = 0.15  # the packets' RTO is 500 ms after prep: the case ends well before

    def trim_expect(drops, resent=(), **kw):
        """what the sender did after a TRIM: only the PSNs in resent went again"""
        v = s.victim("sr")

        def check_got(got, before, after, errs):
            again = data_psns(got, v["peer_qpn"])
            if sorted(again) != sorted(resent):
                errs.append("sent again: PSNs %s, expected %s" % (again, list(resent)))
            other = [g for g in got if g[1] in (v["peer_qpn"], v["peer_qpn"] + 1) and
                     g[0] not in (UC | WRITE_ONLY, UC | WRITE_ONLY_IMM)]
            if other:
                errs.append("unexpected packets to the peer: %s" % s.describe(other))
        e = {"drops": drops, "qp": "sr", "state": "RTS", "settle": TRIM_SETTLE, "check_got": check_got,
             "sr_same": ("tx_una", "tx_nxt", "rx_cum", "peer_msg_limit"),
             "counter_delta": {"retransmits": len(resent), "trim_nacks_rcvd": len(resent)}, "reset": ["sr"]}
        e.update(kw)
        return e

    def trim_pkt(v, body, length=None):
        return s.sr_ctrl(v, ctrl_payload(SRW_CTRL_TRIM, body, length=length))

    @trim_case
    def trim_control_resent(st):
        # the second packet in flight arrived trimmed: it is sent again at once
        v = s.victim("sr")
        s.wire.send([trim_pkt(v, trim_body([tx["psns"][1]]))])
        return trim_expect({}, resent=[tx["psns"][1]])

    @trim_case
    def trim_repeated_once_per_rtt(st):
        # the same TRIM 4 times, 30 ms apart (each after the resend): the
        # packet goes again once; the other 3 find it sent again less than
        # an RTT ago (the RTO floor before a sample): ctrl_rate. fe1c937
        # sent it again for every TRIM (4 times).
        v = s.victim("sr")
        for i in range(4):
            s.wire.send([trim_pkt(v, trim_body([tx["psns"][1]]))])
            time.sleep(0.03)
        return trim_expect({"ctrl_rate": 3}, resent=[tx["psns"][1]])

    @trim_case
    def trim_psn_outside_window(st):
        # PSNs before una (stale), at nxt (never sent) and 2^22 past it
        v = s.victim("sr")
        s.wire.send([trim_pkt(v, trim_body([psn_add(tx["una"], -1), tx["nxt"], psn_add(tx["nxt"], 1 << 22)]))])
        return trim_expect({"stale_response": 3})

    @trim_case
    def trim_n_zero(st):
        v = s.victim("sr")
        s.wire.send([trim_pkt(v, trim_body([], n=0))])
        return trim_expect({"bad_ctrl": 1})

    @trim_case
    def trim_n_over_32(st):
        # 33 PSNs, every one in flight, the length right for 33
        v = s.victim("sr")
        s.wire.send([trim_pkt(v, trim_body([tx["psns"][i % 4] for i in range(SRW_TRIM_MAX + 1)]))])
        return trim_expect({"bad_ctrl": 1})

    @trim_case
    def trim_shorter_than_n(st):
        # n = 4, two PSNs
        v = s.victim("sr")
        s.wire.send([trim_pkt(v, trim_body(tx["psns"][:2], n=4))])
        return trim_expect({"bad_ctrl": 1})

    @trim_case
    def trim_shorter_than_fixed(st):
        # a TRIM body of 2 bytes (its fixed part is 4)
        v = s.victim("sr")
        s.wire.send([trim_pkt(v, trim_body([tx["psns"][0]])[:2])])
        return trim_expect({"bad_ctrl": 1})

    def trim_acked_prep():
        # PSNs 0 and 1 acknowledged cumulatively, 3 by the bitmap
        trim_prep(sack_upto=2, sack_bits=1 << 0)

    def trim_acked_psns(st):
        # a TRIM naming an acknowledged PSN below una (stale) and one the
        # SACK's bitmap acknowledged: nothing is sent again
        v = s.victim("sr")
        s.wire.send([trim_pkt(v, trim_body([tx["psns"][1], tx["psns"][3]]))])
        return trim_expect({"stale_response": 1})
    trim_acked_psns.prep = trim_acked_prep
    out.append(("trim_acked_psns", trim_acked_psns))

    @case
    def trim_stale_legit(st):
        # at the live sr connection in the client's name: a PSN before its
        # una and one 100000 past its nxt
        lg = s.legit_sr()
        s.wire.send([s.sr_ctrl(lg, ctrl_payload(SRW_CTRL_TRIM, trim_body([psn_add(lg["sr"]["tx_una"], -1),
                                                                         psn_add(lg["sr"]["tx_nxt"], 100000)])),
                               src=lg["peer_ip"])])
        return {"drops": {"stale_response": 2}, "qp": "legit_sr", "state": "RTS",
                "counter_delta": {"trim_nacks_rcvd": 0}}

    @case
    def ec_trim_stale(st):
        # the ec victim has nothing in flight
        v = s.victim("ec")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_TRIM, trim_body([v["sr"]["tx_nxt"]])))])
        return sr_dropped("ec", "stale_response", counter_delta=dict({k: 0 for k in SR_COUNTERS}, trim_nacks_rcvd=0))

    # ---- trimmed data at the receiver: DSCP 63 and a payload shorter than
    # its RETH length, inside the window and new, is NACKed with a TRIM
    def trims_sent(v, want_psns):
        def check_got(got, before, after, errs):
            trims = ctrl_pkts(got, v["peer_qpn"] + 1, SRW_CTRL_TRIM)
            named = []
            for b in trims:
                n = struct.unpack("!H", b[:2])[0]
                named += [struct.unpack("!I", b[4 + 4 * i:8 + 4 * i])[0] for i in range(n)]
            if named != want_psns:
                errs.append("TRIMs named PSNs %s, expected %s" % (named, want_psns))
            other = [g for g in got if g[1] in (v["peer_qpn"], v["peer_qpn"] + 1) and
                     (parse_ctrl(g[4]) or (0,))[0] != SRW_CTRL_TRIM]
            if other:
                errs.append("unexpected packets to the peer: %s" % s.describe(other))
        return check_got

    def trimmed(v, psn, va, dma_len=64, **kw):
        return s.sr_write(v, psn, va, b"", dma_len=dma_len, tos=TRIM_TOS | 2, **kw)

    @case
    def sr_trimmed_nacked(st):
        # control: a trimmed WRITE at the cumulative PSN: nothing placed,
        # the PSN stays a hole, a TRIM names it
        v, psn, _ = srv()
        s.wire.send([trimmed(v, psn, v["va"] + 256)])
        e = sr_dropped("sr", None, check_got=trims_sent(v, [psn]),
                       counter_delta=dict({k: 0 for k in SR_COUNTERS}, trims_rcvd=1))
        e["drops"] = {}
        return e

    @case
    def sr_dscp63_whole_placed(st):
        # DSCP 63 with the whole payload (as long as its RETH length) is
        # not trimmed: placed and SACKed as any packet
        v, psn, _ = srv()
        data = payload(64, 310)
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, data, tos=TRIM_TOS | 2)])
        return {"drops": {}, "qp": "sr", "sack_cum": psn_add(psn, 1), "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 1)}, "counter_delta": {"sacks_sent": 1, "trims_rcvd": 0},
                "changes": {"sr_data": (256, 320, True)}, "content": {"sr_data": (256, data)}}

    @case
    def ec_dscp63_whole_placed(st):
        v, psn, _ = srv("ec")
        data = payload(64, 311)
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, data, tos=TRIM_TOS | 2)])
        return {"drops": {}, "qp": "ec", "sack_cum": psn_add(psn, 1), "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 1)}, "counter_delta": {"sacks_sent": 1, "trims_rcvd": 0},
                "changes": {"ec_data": (256, 320, True)}, "content": {"ec_data": (256, data)}}

    @case
    def sr_trimmed_out_of_window(st):
        # trimmed at the window's end and 100000 past it: dropped, no TRIM
        v, psn, _ = srv()
        s.wire.send([trimmed(v, psn_add(psn, v["sr"]["rx_nbits"]), v["va"] + 256),
                     trimmed(v, psn_add(psn, 100000), v["va"] + 256)])
        return sr_dropped("sr", "psn_out_of_window", 2,
                          counter_delta=dict({k: 0 for k in SR_COUNTERS}, trims_rcvd=0))

    @case
    def sr_trimmed_duplicate(st):
        # a WRITE arrives whole; a trimmed copy of it (its PSN already
        # arrived) is a duplicate: SACKed, never NACKed
        v, psn, _ = srv()
        data = payload(64, 312)
        s.wire.send([s.sr_write(v, psn, v["va"] + 256, data)])
        time.sleep(0.05)
        s.wire.send([trimmed(v, psn, v["va"] + 256)])
        return {"drops": {"duplicate": 1}, "qp": "sr", "sack_cum": psn_add(psn, 1), "state": "RTS",
                "sr_expect": {"rx_cum": psn_add(psn, 1), "rx_dups": v["sr"]["rx_dups"] + 1},
                "counter_delta": {"trims_rcvd": 0, "recv_ok": 0},
                "changes": {"sr_data": (256, 320, True)}, "content": {"sr_data": (256, data)}}

    @case
    def sr_trimmed_out_of_window_legit(st):
        lg = s.legit_sr()
        s.wire.send([trimmed(lg, psn_add(lg["sr"]["rx_cum"], 100000), lg["va"] + 3072, src=lg["peer_ip"])])
        return {"drops": {"psn_out_of_window": 1}, "qp": "legit_sr", "state": "RTS",
                "counter_delta": {"trims_rcvd": 0}}

    # ---- EQDS at the sender (`sre`): `send sre 8192` asks for credit (RTS)
    # and sends at most its speculative BDP; the rest waits for PULLs. The
    # one packet the speculation may send is acknowledged in prep.
    eq = {}

    def eqds_sender_prep():
        s.ctl.cmd("reset sre")
        s.wire.drain()
        v = s.victim("sre")
        s.ctl.cmd("send sre 8192")
        time.sleep(0.1)
        got = s.wire.drain()
        wants = [struct.unpack("!Q", b[:8])[0] for b in ctrl_pkts(got, v["peer_qpn"] + 1, SRW_CTRL_RTS)]
        if not wants:
            raise Failed("`send sre 8192` sent no RTS")
        v = s.victim("sre")
        eq["asked"], eq["una"] = max(wants), v["sr"]["tx_una"]
        if v["sr"]["tx_nxt"] != v["sr"]["tx_una"]:
            s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_SACK, sack_body(v["sr"]["tx_nxt"])))])
            time.sleep(0.05)
        eq["sent"] = (s.victim("sre")["sr"]["tx_nxt"] - eq["una"]) & PSN_MASK

    def eqds_sender_case(fn):
        fn.prep = eqds_sender_prep
        out.append((fn.__name__, fn))
        return fn

    def eqds_sender_expect(drops, pulls, burst):
        """burst: the sender went on to send all 8 packets; else not one more"""
        def check(q0, q1, errs):
            sent = (q1["sr"]["tx_nxt"] - eq["una"]) & PSN_MASK
            if burst and sent != 8:
                errs.append("sre sent %d of its 8 packets after the PULL" % sent)
            if not burst and sent != eq["sent"]:
                errs.append("sre sent %d more packets without credit" % (sent - eq["sent"]))
            if not burst and q1["eqds"]["tx_credit"] != q0["eqds"]["tx_credit"]:
                errs.append("sre's credit moved %d -> %d" % (q0["eqds"]["tx_credit"], q1["eqds"]["tx_credit"]))
        return {"drops": drops, "qp": "sre", "state": "RTS", "responses": "any", "check_fn": check, "settle": 0.3,
                "counter_delta": {"cc_pulls_rcvd": pulls, "retransmits": 0}, "reset": ["sre"]}

    @eqds_sender_case
    def eqds_pull_control_accepted(st):
        # control: the peer grants what was asked: the rest goes, paced
        v = s.victim("sre")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_PULL, pull_body(eq["asked"])))])
        return eqds_sender_expect({}, 1, True)

    @eqds_sender_case
    def eqds_pull_past_asked(st):
        # a grant a quantum and a byte past anything asked, and one of 2^63
        # (a receiver whose count a forged RTS raised sends such grants):
        # credit counts only up to what was asked and a quantum, so the
        # sender sends what it asked for and no more. Before, both were
        # refused as bad_ctrl and the sender waited for ever, its receiver
        # only repeating the cumulative grant.
        v = s.victim("sre")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_PULL, pull_body(eq["asked"] + EQDS_QUANTUM + 1))),
                     s.sr_ctrl(v, ctrl_payload(SRW_CTRL_PULL, pull_body(1 << 63)))])
        e = eqds_sender_expect({}, 2, True)
        check = e["check_fn"]

        def check_credit(q0, q1, errs):
            check(q0, q1, errs)
            if q1["eqds"]["tx_credit"] != eq["asked"] + EQDS_QUANTUM:
                errs.append("sre's credit %d, expected what it asked and a quantum (%d)" %
                            (q1["eqds"]["tx_credit"], eq["asked"] + EQDS_QUANTUM))
        e["check_fn"] = check_credit
        return e

    @eqds_sender_case
    def eqds_pull_short(st):
        # a PULL whose header says a body of 4 (it takes 8), the credit
        # asked for in the 8 bytes that follow the header anyway
        v = s.victim("sre")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_PULL, pull_body(eq["asked"]), length=CTRL_HDR + 4))])
        return eqds_sender_expect({"bad_ctrl": 1}, 0, False)

    @case
    def eqds_pull_to_sr_without_eqds(st):
        v = s.victim("sr")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_PULL, pull_body(4096)))])
        return sr_dropped("sr", "bad_ctrl", counter_delta=dict({k: 0 for k in SR_COUNTERS}, cc_pulls_rcvd=0))

    @case
    def eqds_pull_legit_sr(st):
        lg = s.legit_sr()
        s.wire.send([s.sr_ctrl(lg, ctrl_payload(SRW_CTRL_PULL, pull_body(4096)), src=lg["peer_ip"])])
        return {"drops": {"bad_ctrl": 1}, "qp": "legit_sr", "state": "RTS", "counter_delta": {"cc_pulls_rcvd": 0}}

    # ---- EQDS at the receiver: an RTS puts the QP in its port's pacer,
    # which grants 16 KiB at a time at the port's rate (1 Mb/s here: about
    # every 140 ms), round robin, until the peer has what it asked for
    def pulls_to(got, v):
        return [struct.unpack("!Q", b[:8])[0] for b in ctrl_pkts(got, v["peer_qpn"] + 1, SRW_CTRL_PULL)]

    def rts_pkt(v, want, spec, **kw):
        return s.sr_ctrl(v, ctrl_payload(SRW_CTRL_RTS, rts_body(want, spec)), **kw)

    def reset_sre(*names):
        def prep():
            for n in names:
                s.ctl.cmd("reset %s" % n)
        return prep

    def eqds_rts_huge_want_paced(st):
        # want 2^62: the pacer grants at its rate only. Granted bytes are
        # bounded by one quantum plus rate x time since the RTS, and every
        # grant goes out as a PULL (cumulative, increasing). First of the
        # pacer cases: an idle pacer does not catch up on the time it idled.
        v = s.victim("sre")
        t0 = time.monotonic()
        s.wire.send([rts_pkt(v, 1 << 62, 0)])

        def check_got(got, before, after, errs):
            el = time.monotonic() - t0
            q1 = after["qps"]["sre"]
            pulls = pulls_to(got, v)
            granted = q1["eqds"]["granted"]
            bound = EQDS_QUANTUM + EQDS_LINK_BPS * el / 8
            if granted > bound:
                errs.append("granted %d bytes in %.3f s: past one quantum + %d b/s (%d)" % (granted, el,
                                                                                          EQDS_LINK_BPS, bound))
            if granted < 2 * EQDS_QUANTUM:
                errs.append("granted only %d bytes in %.3f s" % (granted, el))
            # (a grant may fall between the capture and the stats)
            n = q1["cc_pulls_sent"] - before["qps"]["sre"]["cc_pulls_sent"]
            if pulls != sorted(pulls) or not pulls or granted - pulls[-1] not in (0, EQDS_QUANTUM):
                errs.append("PULLs %s, the last not the %d granted" % (pulls[:8], granted))
            if n - len(pulls) not in (0, 1):
                errs.append("%d PULLs came, %d sent" % (len(pulls), n))
            if not q1["eqds"]["queued"]:
                errs.append("sre owed credit and is not in the pacer")
            # one RTS makes it owe at most EQDS_ASK_AHEAD past its grants
            # (it took 2^62 before: PULLs without end)
            if q1["eqds"]["want"] > granted + EQDS_ASK_AHEAD:
                errs.append("sre owes up to %d bytes, past its grants (%d) + %d" % (q1["eqds"]["want"], granted,
                                                                                   EQDS_ASK_AHEAD))
        return {"drops": {}, "qp": "sre", "state": "RTS", "check_got": check_got, "settle": 0.6,
                "counter_delta": {"cc_rts_rcvd": 1}, "reset": ["sre"]}
    eqds_rts_huge_want_paced.prep = reset_sre("sre")
    out.append(("eqds_rts_huge_want_paced", eqds_rts_huge_want_paced))

    def eqds_rts_control_granted(st):
        # control: want 32 KiB, nothing speculative: two grants, then none
        v = s.victim("sre")
        s.wire.send([rts_pkt(v, 2 * EQDS_QUANTUM, 0)])

        def check_got(got, before, after, errs):
            pulls = pulls_to(got, v)
            if pulls != [EQDS_QUANTUM, 2 * EQDS_QUANTUM]:
                errs.append("PULLs granted %s, expected %s" % (pulls, [EQDS_QUANTUM, 2 * EQDS_QUANTUM]))
        return {"drops": {}, "qp": "sre", "state": "RTS", "check_got": check_got, "settle": 0.5,
                "counter_delta": {"cc_rts_rcvd": 1, "cc_pulls_sent": 2},
                "eqds_expect": {"want": 2 * EQDS_QUANTUM, "granted": 2 * EQDS_QUANTUM, "queued": False},
                "reset": ["sre"]}
    eqds_rts_control_granted.prep = reset_sre("sre")
    out.append(("eqds_rts_control_granted", eqds_rts_control_granted))

    def eqds_rts_huge_spec_refused(st):
        # want 2^62 with 2^61 speculative: a speculative step past
        # EQDS_SPEC_STEP is refused whole (kept, the counts only grow and
        # every real RTS after it was refused: the sender stalled); the
        # real-sized RTS after it is granted as in the control case
        v = s.victim("sre")
        s.wire.send([rts_pkt(v, 1 << 62, 1 << 61)])
        time.sleep(SETTLE_S)
        s.wire.send([rts_pkt(v, 2 * EQDS_QUANTUM, 0)])

        def check_got(got, before, after, errs):
            pulls = pulls_to(got, v)
            if pulls != [EQDS_QUANTUM, 2 * EQDS_QUANTUM]:
                errs.append("PULLs granted %s, expected %s" % (pulls[:8], [EQDS_QUANTUM, 2 * EQDS_QUANTUM]))
        return {"drops": {"bad_ctrl": 1}, "qp": "sre", "state": "RTS", "check_got": check_got, "settle": 0.5,
                "counter_delta": {"cc_rts_rcvd": 1, "cc_pulls_sent": 2},
                "eqds_expect": {"want": 2 * EQDS_QUANTUM, "granted": 2 * EQDS_QUANTUM, "queued": False},
                "reset": ["sre"]}
    eqds_rts_huge_spec_refused.prep = reset_sre("sre")
    out.append(("eqds_rts_huge_spec_refused", eqds_rts_huge_spec_refused))

    def eqds_rts_backwards_prep():
        # an RTS for 24 KiB past 8 KiB of speculation, granted in full
        s.ctl.cmd("reset sre")
        v = s.victim("sre")
        s.wire.send([rts_pkt(v, 3 * 8192, 8192)])
        deadline = time.monotonic() + 1
        # the grant is counted when the pacer fires and its PULL leaves in
        # a later pass: wait for both, or the PULL lands in the case's capture
        while True:
            q = s.victim("sre")
            e = q["eqds"]
            if e["granted"] >= 2 * 8192 and not e["pull_due"] and not e["queued"]:
                break
            if time.monotonic() > deadline:
                raise Failed("sre granted %d of 16384 bytes within 1 s (PULL due: %s)" %
                             (e["granted"], e["pull_due"]))
            time.sleep(0.01)
        time.sleep(0.05)

    def eqds_rts_backwards(st):
        # counts that go backwards (want, then spec) and spec past want
        v = s.victim("sre")
        s.wire.send([rts_pkt(v, 8192, 8192), rts_pkt(v, 5 * 8192, 0), rts_pkt(v, 5 * 8192, 6 * 8192)])
        return {"drops": {"bad_ctrl": 3}, "qp": "sre", "state": "RTS", "responses": "none", "settle": 0.4,
                "counter_delta": {"cc_rts_rcvd": 0, "cc_pulls_sent": 0},
                "eqds_same": ("want", "spec", "granted", "queued"), "reset": ["sre"]}
    eqds_rts_backwards.prep = eqds_rts_backwards_prep
    out.append(("eqds_rts_backwards", eqds_rts_backwards))

    def eqds_rts_short(st):
        # an RTS whose header says a body of 8 (it takes 16), a good want
        # and spec in the 16 bytes that follow anyway
        v = s.victim("sre")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_RTS, rts_body(2 * EQDS_QUANTUM, 0), length=CTRL_HDR + 8))])
        return {"drops": {"bad_ctrl": 1}, "qp": "sre", "state": "RTS", "responses": "none",
                "counter_delta": {"cc_rts_rcvd": 0, "cc_pulls_sent": 0},
                "eqds_same": ("want", "spec", "granted", "queued")}
    eqds_rts_short.prep = reset_sre("sre")
    out.append(("eqds_rts_short", eqds_rts_short))

    @case
    def eqds_rts_spec_past_want_legit(st):
        lg = s.legit_sr()
        s.wire.send([rts_pkt(lg, 4096, 8192, src=lg["peer_ip"])])
        return {"drops": {"bad_ctrl": 1}, "qp": "legit_sr", "state": "RTS",
                "counter_delta": {"cc_rts_rcvd": 0, "cc_pulls_sent": 0}, "eqds_same": ("want", "spec", "granted")}

    def pacer_two(then):
        """sre waits in the pacer (granted once), sre2 behind it; then
        `then` (a command on sre); sre2 must go on being granted, each
        grant a PULL, for the time of three and more grants"""
        def fn(st):
            v, v2 = s.victim("sre"), s.victim("sre2")
            s.wire.send([rts_pkt(v, 1 << 62, 0)])
            deadline = time.monotonic() + 1
            while s.victim("sre")["eqds"]["granted"] == 0:
                if time.monotonic() > deadline:
                    raise Failed("sre got no grant within 1 s of its RTS")
                time.sleep(0.005)
            # the next grant is about 140 ms away: sre2 queues behind sre
            s.wire.send([rts_pkt(v2, 1 << 62, 0)])
            time.sleep(0.01)
            s.ctl.cmd(then)
            t0 = time.monotonic()

            def check_got(got, before, after, errs):
                q0, q1 = before["qps"]["sre2"], after["qps"]["sre2"]
                el = time.monotonic() - t0
                pulls = pulls_to(got, v2)
                n = q1["cc_pulls_sent"] - q0["cc_pulls_sent"]
                if n < 2 or n - len(pulls) not in (0, 1):
                    errs.append("sre2 was granted %d times (%d PULLs came) in %.2f s after `%s`; the pacer grants "
                                "every ~140 ms" % (n, len(pulls), el, then))
                if q1["eqds"]["granted"] > 2 * EQDS_QUANTUM + EQDS_LINK_BPS * el / 8:
                    errs.append("sre2 granted %d bytes in %.2f s" % (q1["eqds"]["granted"], el))
                if not q1["eqds"]["queued"]:
                    errs.append("sre2 owed credit and is not in the pacer")
            return {"drops": {}, "qp": "sre2", "state": "RTS", "check_got": check_got, "settle": 0.6,
                    "counter_delta": {"cc_rts_rcvd": 1}, "reset": ["sre", "sre2"]}
        fn.prep = reset_sre("sre", "sre2")
        return fn

    # a QP leaves its port's pacer when it is reset (or destroyed: the
    # last case): the QP behind it keeps its place
    out.append(("eqds_reset_while_queued", pacer_two("reset sre")))

    # ---- failover control packets (transport/failover/failover.c): the `fo` victim
    # is an rc QP with one backup, member 0 = port 1 to this host's first
    # address, member 1 = the server's port 2 to its second address; each
    # case starts from a fresh connection (active member 0, every member up)
    def fo_case(fn):
        fn.prep = lambda: s.ctl.cmd("reset fo")
        out.append((fn.__name__, fn))
        return fn

    def notice(v, seq=1, mask=1, via=0, member=None, active=0, **kw):
        return s.fo_ctrl(v, fo_body(FO_NOTICE, via if member is None else member, active, mask, seq), via=via, **kw)

    def fo_got(got, v):
        """the failover packets among what came back, and everything else"""
        fos = [parse_fo(g) for g in got]
        return [f for f in fos if f], [g for g, f in zip(got, fos) if not f]

    def want_fo(fos, errs, kind, member, seq=None, active=None, mask=None, n=None, what=""):
        """packets of this kind to the peer's control QPN, on member `member`
        (from the server's address and port of that member, to this host's
        address of it), with the seq (active, mask) given"""
        src, dst, _ = s.fo_member(member)
        mac = s.info["mac"] if member == 0 else s.info["port2"]["mac"]
        v = s.victim("fo")
        mine = [f for f in fos if f["kind"] == kind and (seq is None or f["seq"] == seq)]
        if not mine:
            errs.append("no %s%s came back%s (got: %s)" % (FO_KINDS[kind], "" if seq is None else " seq %d" % seq,
                                                            what, ", ".join("%s seq %d member %d" % (
                                                                FO_KINDS.get(f["kind"], f["kind"]), f["seq"],
                                                                f["member"]) for f in fos) or "nothing"))
            return
        if n is not None and len(mine) != n:
            errs.append("%d %ss came back, expected %d" % (len(mine), FO_KINDS[kind], n))
        for f in mine:
            bad = []
            if f["member"] != member or f["src"] != dst or f["dst"] != src or f["smac"] != mac:
                bad.append("member %d from %s (MAC %s) to %s, expected member %d from %s (MAC %s) to %s"
                           % (f["member"], f["src"], f["smac"], f["dst"], member, dst, mac, src))
            if f["dqpn"] != (v["peer_qpn"] + 1) & PSN_MASK:
                bad.append("to QPN 0x%x, not the peer's control QPN" % f["dqpn"])
            if active is not None and f["active"] != active:
                bad.append("active %d, expected %d" % (f["active"], active))
            if mask is not None and f["mask"] != mask:
                bad.append("fail_mask 0x%x, expected 0x%x" % (f["mask"], mask))
            if bad:
                errs.append("%s seq %d: %s" % (FO_KINDS[kind], f["seq"], "; ".join(bad)))
                return

    # addresses and ports: only a member's own (source, destination, port)
    @fo_case
    def fo_notice_from_non_member(st):
        # a notice failing member 0, perfect but for its source address
        s.wire.send([notice(s.victim("fo"), src=a.spoof_ip)])
        return fo_dropped("bad_src_addr")

    @fo_case
    def fo_notice_backup_src_at_primary(st):
        # member 1's peer address, sent to member 0's address and port
        s.wire.send([notice(s.victim("fo"), src=a.my_ip2)])
        return fo_dropped("bad_src_addr")

    @fo_case
    def fo_notice_primary_at_port2(st):
        # member 0's addresses (and member byte), arriving at port 2: a
        # QP with backups takes a member's addresses at that member's port
        # only, the active member's too
        s.wire.send([notice(s.victim("fo"), dmac=s.info["port2"]["mac"])])
        return fo_dropped("bad_dst_addr", port2_rx=1)

    @fo_case
    def fo_notice_backup_at_port1(st):
        # member 1's addresses (and member byte), arriving at port 1: the
        # destination is port 2's address, which no member has at port 1
        s.wire.send([notice(s.victim("fo"), via=1, dmac=s.wire.srv_mac)])
        return fo_dropped("bad_dst_addr")

    @fo_case
    def fo_notice_member_byte_mismatch(st):
        # member 0's addresses and port, member byte 1
        s.wire.send([notice(s.victim("fo"), member=1)])
        return fo_dropped("bad_ctrl")

    @fo_case
    def fo_notice_member_past_members(st):
        # member bytes 2 (the QP has 2 members) and 255, on member 1
        v = s.victim("fo")
        s.wire.send([notice(v, via=1, member=2), notice(v, via=1, member=255)])
        return fo_dropped("bad_ctrl", 2)

    @fo_case
    def fo_notice_active_past_members(st):
        s.wire.send([notice(s.victim("fo"), active=2)])
        return fo_dropped("bad_ctrl")

    @fo_case
    def fo_notice_wrong_token(st):
        # every member failed, seq 0x7fffff, from the right member with
        # its addresses: but not the QP's token (before the token, one such
        # notice took every member down); 8 of them, then the right token
        # with a sane sequence still works (fo_notice_* below)
        v = s.victim("fo")
        bad = (v.get("token", 0) ^ 0x0F0F0F0F) or 1
        s.wire.send([notice(v, seq=0x7FFFFF, mask=3, token=bad) for _ in range(8)])
        return fo_dropped("bad_token", 8)

    # the control header and body
    @fo_case
    def fo_ctrl_other_version(st):
        s.wire.send([notice(s.victim("fo"), version=SRW_VERSION ^ 3)])
        return fo_dropped("bad_ctrl")

    @fo_case
    def fo_ctrl_length_not_header_plus_8(st):
        # header lengths 4 past the payload and 4 short of the body
        v = s.victim("fo")
        s.wire.send([notice(v, length=CTRL_HDR + 12), notice(v, length=CTRL_HDR + 4)])
        return fo_dropped("bad_ctrl", 2)

    @fo_case
    def fo_ctrl_short_payload(st):
        # a header whose length has a 4-byte body with that body (the
        # notice's 8 cut to 4), a 2-byte payload (shorter than the header)
        # and none at all
        v = s.victim("fo")
        s.wire.send([s.fo_ctrl(v, fo_body(FO_NOTICE, mask=1)[:4], length=CTRL_HDR + 4),
                     s.fo_ctrl(v, b"", raw_payload=b"\x01\x07"), s.fo_ctrl(v, b"", raw_payload=b"")])
        return fo_dropped("bad_ctrl", 3)

    @fo_case
    def fo_kind_unknown(st):
        v = s.victim("fo")
        s.wire.send([s.fo_ctrl(v, fo_body(k, mask=1)) for k in (0, 5, 255)])
        return fo_dropped("bad_ctrl", 3)

    @fo_case
    def fo_ctrl_wrong_opcode(st):
        # the notice as RC SEND Only (0x04) and UC SEND First (0x20)
        v = s.victim("fo")
        s.wire.send([notice(v, op=RC | SEND_ONLY), notice(v, op=UC | SEND_FIRST)])
        return fo_dropped("bad_ctrl", 2)

    @fo_case
    def fo_ctrl_other_type(st):
        # a SACK (type 1) to an rc QP's control QPN: rc has nothing but
        # failover there
        v = s.victim("fo")
        s.wire.send([s.fo_ctrl(v, sack_body(0), ctype=SRW_CTRL_SACK)])
        return fo_dropped("bad_ctrl")

    @fo_case
    def fo_notice_to_data_qpn(st):
        v = s.victim("fo")
        s.wire.send([notice(v, dqpn=v["qpn"])])
        return fo_dropped("bad_opcode")

    @fo_case
    def fo_notice_qp_in_reset(st):
        s.ctl.cmd("state fo reset")
        s.wire.send([notice(s.victim("fo"))])
        return fo_dropped("qp_state", state="RESET", psn_unchanged=False, reset=["fo"])

    # QPs without backups
    @case
    def fo_notice_to_sr_without_backups(st):
        # to the sr victim's control QPN (it has no backups): an unknown
        # control type there
        v = s.victim("sr")
        s.wire.send([s.sr_ctrl(v, ctrl_payload(SRW_CTRL_FO, fo_body(FO_NOTICE, mask=1)))])
        return sr_dropped("sr", "bad_ctrl")

    @case
    def fo_notice_to_rc_qpn_plus_1(st):
        # an rc QP without backups has one QPN: its QPN + 1 is nobody's
        # (QPNs are drawn at random; another QP there has odds ~2^-19)
        v = s.victim("rc")
        s.wire.send([s.fo_ctrl(v, fo_body(FO_NOTICE, mask=1), dqpn=(v["qpn"] + 1) & PSN_MASK)])
        return dropped("rc", "no_qp")

    # seq: a notice is taken once, and only inside the window the QP keeps
    @fo_case
    def fo_notice_seq_far_ahead(st):
        # the first notice of the connection, with the token, failing
        # every member, at seq 0x7fffff and 65 (the peer numbers its
        # notices 1, 2, ...; the window is 64): not answered, not taken (it
        # took every member down before, and made the peer's real notices
        # look old); then notice 1 failing nothing is taken
        v = s.victim("fo")
        s.wire.send([notice(v, seq=0x7FFFFF, mask=3), notice(v, seq=65, mask=3, via=1)])
        time.sleep(0.05)
        return fo_dropped("ctrl_seq", 2)

    @fo_case
    def fo_notice_stale_seq(st):
        # notice 40 fails member 0 (the QP moves to member 1; its own
        # notice, seq 1, is answered); then notice 40 again and 39, both
        # saying no member failed: acknowledged, not taken
        v = s.victim("fo")
        s.wire.send([notice(v, seq=40, mask=1), s.fo_ctrl(v, fo_body(FO_NOTICE_ACK, seq=1))])
        time.sleep(0.05)
        s.wire.send([notice(v, seq=40, mask=0), notice(v, seq=39, mask=0, via=1)])

        def check_got(got, before, after, errs):
            fos, other = fo_got(got, v)
            if other:
                errs.append("unexpected packets: %s" % s.describe(other))
            want_fo(fos, errs, FO_NOTICE_ACK, 0, seq=40, n=2)
            want_fo(fos, errs, FO_NOTICE_ACK, 1, seq=39, n=1)
            want_fo(fos, errs, FO_NOTICE, 1, seq=1, active=1, mask=0)
        return {"drops": {}, "qp": "fo", "state": "RTS", "psn_unchanged": True, "check_got": check_got,
                "fo_expect": {"active": 1, "state": "Fallback", "up_mask": 2, "failovers": 1, "notices_rcvd": 1,
                              "peer_seq": 40, "notice_acked": True}, "reset": ["fo"]}

    # the well-formed packets do what they should
    @fo_case
    def fo_notice_fails_primary(st):
        # the peer says it failed member 0: the QP moves to member 1 (cause
        # peer), tells the peer (a notice on member 1, answered here), and
        # its traffic goes by member 1: a WRITE from member 1's addresses
        # at port 2 is placed and ACKed from port 2
        v = s.victim("fo")
        s.wire.send([notice(v, seq=7, mask=1), s.fo_ctrl(v, fo_body(FO_NOTICE_ACK, seq=1))])
        time.sleep(0.05)
        data = payload(64, 700)
        src, dst, dmac = s.fo_member(1)
        s.wire.send([write_only(s, v, 128, data, src=src, dst=dst, dmac=dmac)])

        def check_got(got, before, after, errs):
            fos, other = fo_got(got, v)
            want_fo(fos, errs, FO_NOTICE_ACK, 0, seq=7, n=1)
            want_fo(fos, errs, FO_NOTICE, 1, seq=1, active=1, mask=0)
            acks = [g for g in other if g[0] == ACK and g[2] == v["rq_psn"]]
            if not acks:
                errs.append("the WRITE by member 1 was not ACKed (got %s)" % s.describe(other))
            for g in acks:
                if socket.inet_ntoa(g[4][26:30]) != dst or socket.inet_ntoa(g[4][30:34]) != src:
                    errs.append("the ACK went from %s to %s, not by member 1"
                                % (socket.inet_ntoa(g[4][26:30]), socket.inet_ntoa(g[4][30:34])))
            if len(acks) != len(other):
                errs.append("unexpected packets: %s" % s.describe([g for g in other if g not in acks]))
        return {"drops": {}, "qp": "fo", "state": "RTS", "check_got": check_got, "rq_psn": psn_add(v["rq_psn"], 1),
                "changes": {"fo_data": (128, 192, True)}, "content": {"fo_data": (128, data)},
                "fo_expect": {"active": 1, "state": "Fallback", "up_mask": 2, "failovers": 1, "failbacks": 0,
                              "last_cause": "peer", "notices_rcvd": 1, "peer_seq": 7, "notice_acked": True},
                "reset": ["fo"]}

    @fo_case
    def fo_notice_clears_fails_back(st):
        # notice 7 fails member 0 (the QP moves to member 1), notice 8
        # fails none: member 0 is usable again and, nothing being in
        # flight, the QP goes back to it at once (WaitSignaled, WaitSinked,
        # Default) and says so on member 0
        v = s.victim("fo")
        s.wire.send([notice(v, seq=7, mask=1), s.fo_ctrl(v, fo_body(FO_NOTICE_ACK, seq=1))])
        time.sleep(0.05)
        # the answer to the server's notice 2 goes the way of notice 8 (by
        # member 1, so it comes in after it: the engine reads port 1's
        # ring before port 2's, so by member 0 it could come first and
        # answer nothing)
        s.wire.send([notice(v, seq=8, mask=0, via=1), s.fo_ctrl(v, fo_body(FO_NOTICE_ACK, 1, seq=2), via=1)])

        def check_got(got, before, after, errs):
            fos, other = fo_got(got, v)
            if other:
                errs.append("unexpected packets: %s" % s.describe(other))
            want_fo(fos, errs, FO_NOTICE_ACK, 0, seq=7, n=1)
            want_fo(fos, errs, FO_NOTICE_ACK, 1, seq=8, n=1)
            want_fo(fos, errs, FO_NOTICE, 1, seq=1, active=1)
            want_fo(fos, errs, FO_NOTICE, 0, seq=2, active=0)
        return {"drops": {}, "qp": "fo", "state": "RTS", "psn_unchanged": True, "check_got": check_got,
                "fo_expect": {"active": 0, "state": "Default", "up_mask": 3, "failovers": 1, "failbacks": 1,
                              "notices_rcvd": 2, "peer_seq": 8, "notice_acked": True}, "reset": ["fo"]}

    @fo_case
    def fo_notice_all_members_failed(st):
        # the peer says both members failed: no member is usable, the QP
        # stays where it is (nothing to rewind: nothing in flight, so the
        # down timeout ends nothing) and in RTS
        s.wire.send([notice(s.victim("fo"), seq=3, mask=3)])
        v = s.victim("fo")

        def check_got(got, before, after, errs):
            fos, other = fo_got(got, v)
            if other:
                errs.append("unexpected packets: %s" % s.describe(other))
            want_fo(fos, errs, FO_NOTICE_ACK, 0, seq=3, n=1)
            if [f for f in fos if f["kind"] != FO_NOTICE_ACK]:
                errs.append("unexpected failover packets: %s" % fos)
        return {"drops": {}, "qp": "fo", "state": "RTS", "psn_unchanged": True, "check_got": check_got,
                "fo_expect": {"active": 0, "state": "Fallback", "up_mask": 0, "failovers": 0, "notices_rcvd": 1},
                "reset": ["fo"]}

    @fo_case
    def fo_probe_answered(st):
        # a probe on each member: a probe ack with its seq on the same
        # member (the server's address and port of it); nothing changes
        v = s.victim("fo")
        s.wire.send([s.fo_ctrl(v, fo_body(FO_PROBE, 1, 0, 0, 0x4242), via=1),
                     s.fo_ctrl(v, fo_body(FO_PROBE, 0, 0, 0, 0x4343), via=0)])

        def check_got(got, before, after, errs):
            fos, other = fo_got(got, v)
            if other:
                errs.append("unexpected packets: %s" % s.describe(other))
            want_fo(fos, errs, FO_PROBE_ACK, 1, seq=0x4242, active=0, mask=0, n=1)
            want_fo(fos, errs, FO_PROBE_ACK, 0, seq=0x4343, active=0, mask=0, n=1)
            if len(fos) != 2:
                errs.append("%d failover packets came back, expected the 2 probe acks" % len(fos))
        return {"drops": {}, "qp": "fo", "state": "RTS", "psn_unchanged": True, "check_got": check_got,
                "fo_same": FO_SAME}

    @fo_case
    def fo_answers_unasked(st):
        # a probe ack (no probe is out) and a notice ack (no notice was
        # sent): taken, and nothing moves
        v = s.victim("fo")
        s.wire.send([s.fo_ctrl(v, fo_body(FO_PROBE_ACK, seq=1)), s.fo_ctrl(v, fo_body(FO_PROBE_ACK, 1, seq=0), via=1),
                     s.fo_ctrl(v, fo_body(FO_NOTICE_ACK, seq=5))])
        return {"drops": {}, "qp": "fo", "responses": "none", "state": "RTS", "psn_unchanged": True,
                "fo_same": FO_SAME}

    @fo_case
    def fo_write_backup_at_port1(st):
        # data, not control: a perfect WRITE from member 1's addresses
        # delivered to port 1
        v = s.victim("fo")
        src, dst, _ = s.fo_member(1)
        s.wire.send([write_only(s, v, 256, payload(64, 701), src=src, dst=dst)])
        return fo_dropped("bad_dst_addr")

    @fo_case
    def fo_write_primary_at_port2_dropped(st):
        # a perfect WRITE from the active member's addresses delivered to
        # port 2: a QP with backups takes a member's addresses at that
        # member's port only (a QP without backups checks the addresses
        # alone), so nothing is placed or answered
        v = s.victim("fo")
        data = payload(64, 702)
        s.wire.send([write_only(s, v, 256, data, dmac=s.info["port2"]["mac"])])
        return fo_dropped("bad_dst_addr", port2_rx=1)

    @fo_case
    def fo_notice_flood_legit(st):
        # while the legit connections run: 500 notices from a non-member
        # address and 500 copies of one well-formed notice failing no
        # member from member 0, back to back (1000 frames: half a receive
        # ring, so a server descheduled for a moment loses none); each copy
        # is answered, one is taken
        v = s.victim("fo")
        n = 500
        body = lambda src, seq: s.fast(bth_bytes(UC | SEND_ONLY, v["ctrl_qpn"], 0) +
                                       ctrl_payload(SRW_CTRL_FO, fo_body(FO_NOTICE, 0, 0, 0, seq), token=v.get("token")),
                                       src=src)
        bad, good = body(a.spoof_ip, 9), body(a.my_ip, 9)
        frames = []
        for i in range(n):
            frames += [bad, good]
        s.wire.send_raw(frames)

        def check_got(got, before, after, errs):
            fos, other = fo_got(got, v)
            if other:
                errs.append("unexpected packets: %s" % s.describe(other))
            want_fo(fos, errs, FO_NOTICE_ACK, 0, seq=9, n=n)
            if len(fos) != n:
                errs.append("%d failover packets came back, expected %d notice acks" % (len(fos), n))
        return {"drops": {"bad_src_addr": n}, "qp": "fo", "state": "RTS", "psn_unchanged": True,
                "check_got": check_got, "settle": 0.5,
                "fo_expect": {"active": 0, "state": "Default", "up_mask": 3, "failovers": 0, "notices_rcvd": 1,
                              "peer_seq": 9}}

    # ---- IMMCOUNTER (docs/api.md): the imc victim (rc, rel.imm_counter)
    # counts its WRITEs with immediate in the server context's table
    IMM_KEPT = 16384  # immediates with counts nobody expects that a context keeps

    def imc_write_imm(v, i, imm, ackreq=0):
        # zero-length RC WRITE Only with Immediate at rq_psn + i, a valid rkey
        return s.fast(bth_bytes(RC | WRITE_ONLY_IMM, v["qpn"], psn_add(v["rq_psn"], i), ackreq=ackreq) +
                      struct.pack("!QIII", v["va"], v["rkey"], 0, imm))

    @case
    def imm_counter_flood_bounded(st):
        # the finding: 2^21 distinct immediates grew the server by 135 MB,
        # then every new expectation was refused (-ENOMEM). Here 16384 +
        # 1000 distinct ones, in order, in bursts of 128: the first 16384
        # are kept, 1000 are dropped as table_full (placed and acknowledged,
        # not counted); an expectation for a new immediate is then made and
        # fired by one more WRITE
        v = s.victim("imc")
        n, base, mine = IMM_KEPT + 1000, 0x51000000, 0x5EED
        frames = [imc_write_imm(v, i, base + i, int(i % 128 == 127)) for i in range(n)]
        for k in range(0, n, 128):
            s.wire.send_raw(frames[k:k + 128])
            time.sleep(0.002)
        time.sleep(0.3)
        counts = [s.ctl.cmd("imm count %d" % (base + i))["count"] for i in (0, IMM_KEPT - 1, IMM_KEPT, n - 1)]
        exp_rc = s.ctl.cmd("imm expect %d" % mine)["rc"]
        s.wire.send_raw([imc_write_imm(v, n, mine, 1)])
        time.sleep(0.2)
        fired = s.ctl.cmd("imm count %d" % mine)

        def check_got(got, before, after, errs):
            if counts != [1, 1, 0, 0]:
                errs.append("counts of immediates 0, %d, %d, %d of the flood: %s, want [1, 1, 0, 0]"
                            % (IMM_KEPT - 1, IMM_KEPT, n - 1, counts))
            if exp_rc != 0 or fired["fired"] != 1 or fired["count"] != 0:
                errs.append("expectation for a new immediate: rc %d, fired %d, count left %d"
                            % (exp_rc, fired["fired"], fired["count"]))
            if after["qps"]["imc"]["rq_psn"] != psn_add(v["rq_psn"], n + 1):
                errs.append("imc took %d of the %d WRITEs" % ((after["qps"]["imc"]["rq_psn"] - v["rq_psn"]) & PSN_MASK,
                                                              n + 1))
        return {"drops": {"table_full": 1000}, "qp": "imc", "state": "RTS", "check_got": check_got, "settle": 0.1}

    # ---- last: a forged WRITE at the legit QP in another host's name
    @case
    def wrong_src_ip_legit(st):
        lg = s.legit()
        n = 16  # PSNs from the expected one on: one of them is the legit peer's next
        s.wire.send([s.frame(RC | WRITE_ONLY, lg["qpn"], psn_add(lg["rq_psn"], i),
                             RETH(va=lg["va"] + 3072 + 16 * i, rkey=lg["rkey"], dma_len=16), payload(16, 29 + i))
                     for i in range(n)])
        return {"drops": {"bad_src_addr": n}, "qp": "legit", "state": "RTS"}

    # ---- after the last: CNPs to a QP in RESET and in INIT (the stats
    # read of an sr QP in RESET must not crash the server), and a QP
    # destroyed while it waits in its port's pull
    # pacer (a use after free, if the pacer kept it, once the pacer fires):
    # the engine goes on, the QP behind it keeps being granted
    out.append(("cnp_qp_in_reset", state_case("reset")))
    out.append(("cnp_qp_in_init", state_case("init")))
    out.append(("eqds_destroy_while_queued", pacer_two("recreate sre")))

    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--my-mac", required=True)
    ap.add_argument("--ctl", required=True, help="conf_peer's control socket")
    ap.add_argument("--my-ip", required=True, help="this host: the victims' connected peer")
    ap.add_argument("--my-ip2", required=True,
                    help="this host's second address: the peer of the fo victim's backup member (its port 2)")
    ap.add_argument("--spoof-ip", required=True, help="a source address no QP is connected to")
    ap.add_argument("--other-ip", required=True, help="a destination address that is not the server's")
    ap.add_argument("--srv-ip2", required=True,
                    help="a second address of the server's port (in its GID table), not the one its QPs use")
    ap.add_argument("--only", help="run only the cases whose names contain this (or one of these, comma-separated)")
    ap.add_argument("--wire-v1", action="store_true",
                    help="speak the sr/ec control header of version 1 (4 bytes, no token): to run the cases "
                         "against a build from before the token")
    args = ap.parse_args()
    if args.wire_v1:
        global SRW_VERSION, CTRL_HDR
        SRW_VERSION, CTRL_HDR = 1, 4
    random.seed(7)
    s = Suite(args)
    table = cases(s)
    only = args.only.split(",") if args.only else []
    todo = [c for c in table if not only or any(o in c[0] for o in only)]
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
    print("conformance: %d cases, %d passed, %d failed in %.1f s; legit connections: %d rc, %d sr, %d be "
          "iterations verified" % (len(s.results), len(s.results) - len(fails), len(fails), time.monotonic() - t0,
                                   st["legit"]["seq"], st["legit_sr"]["seq"], st["legit_be"]["seq"]))
    if not args.only and len(s.results) < len(table):
        print("conformance: FAIL: %d of the table's %d cases ran" % (len(s.results), len(table)), flush=True)
        return 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
