#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Independent decoder check: Wireshark's dissector must read every
uroce-built packet (every opcode, IPv4 and IPv6, with and without 802.1Q) as
RoCE without a malformed-packet or expert error on the InfiniBand layer, and
report the same opcode, destination QP, PSN and pad count that were built.

usage: test_tshark.py GEN_ROCE_PCAP WORKDIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

TSHARK = shutil.which("tshark") or "/usr/bin/tshark"
# The IPv6 UDP checksum is 0 as RoCEv2 (Annex A17.4) and rdma_rxe send it;
# Wireshark flags that on the UDP layer, not on the RoCE one.
ALLOWED_OUTSIDE_IB = {"[Expert Info (Error/Checksum): Illegal checksum value (0)]"}


def tshark(*args):
    # RPC-over-RDMA's heuristic would try to read our test payloads as RPC;
    # that is a layer above RoCE and not what is checked here.
    cmd = [TSHARK, "--disable-protocol", "rpcordma"] + list(args)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"tshark failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return r.stdout


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    if not os.access(TSHARK, os.X_OK):
        print("tshark not installed: skipping")
        return 77
    gen, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        pcap = os.path.join(tmp, "all_opcodes.pcap")
        manifest = os.path.join(tmp, "manifest.txt")
        subprocess.run([gen, "--manifest", manifest, pcap], check=True, timeout=60)
        want = {}
        with open(manifest) as f:
            for line in f:
                frame, op, qpn, psn, plen, _tag = line.split()
                want[int(frame)] = (int(op), int(qpn), int(psn), (-int(plen)) & 3)
        if len(want) < 38 * 4:
            sys.exit(f"manifest lists only {len(want)} packets")

        failures = []

        # 1. Verbose decode: split per frame, look for trouble.
        text = tshark("-r", pcap, "-V")
        frames = text.split("\nFrame ")
        decoded = 0
        for chunk in frames:
            head = chunk.split(":", 1)[0].replace("Frame ", "").strip()
            if not head.isdigit():
                continue
            num = int(head)
            if "Malformed" in chunk:
                failures.append(f"frame {num}: malformed packet")
            if "\nInfiniBand\n" not in chunk:
                failures.append(f"frame {num}: not decoded as InfiniBand/RoCE")
                continue
            decoded += 1
            outer, ib = chunk.split("\nInfiniBand\n", 1)
            for line in ib.splitlines():
                if "Expert Info" in line and ("Error" in line or "Warning" in line):
                    failures.append(f"frame {num}: RoCE layer: {line.strip()}")
            for line in outer.splitlines():
                line = line.strip()
                if "Expert Info" in line and ("Error" in line or "Warning" in line) \
                        and line not in ALLOWED_OUTSIDE_IB:
                    failures.append(f"frame {num}: {line}")
        if decoded != len(want):
            failures.append(f"{decoded} frames decoded as RoCE, {len(want)} built")

        # 2. Fields, frame by frame, against what was built.
        out = tshark("-r", pcap, "-T", "fields", "-E", "separator=,",
                     "-e", "frame.number", "-e", "infiniband.bth.opcode",
                     "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn",
                     "-e", "infiniband.bth.padcnt")
        seen = 0
        for line in out.splitlines():
            num, op, qpn, psn, pad = line.split(",")
            num = int(num)
            if num not in want:
                continue
            got = (int(op, 0), int(qpn, 0), int(psn, 0), int(pad, 0))
            if got != want[num]:
                failures.append(f"frame {num}: tshark reads (opcode, dqpn, psn, pad) "
                                f"{got}, built {want[num]}")
            seen += 1
        if seen != len(want):
            failures.append(f"tshark listed {seen} of {len(want)} frames")

    for f in failures[:50]:
        print(f, file=sys.stderr)
    if failures:
        print(f"test_tshark: {len(failures)} problem(s)", file=sys.stderr)
        return 1
    print(f"test_tshark: {len(want)} packets decoded by tshark as built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
