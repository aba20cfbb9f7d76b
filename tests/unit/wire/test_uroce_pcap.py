#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroce-pcap end to end: lines and JSON for every packet, non-RoCE frames
skipped and counted, bad ICRC and malformed packets reported with exit 1,
usage and file errors with exit 2 and a message.

usage: test_uroce_pcap.py UROCE_PCAP GEN_ROCE_PCAP WORKDIR
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def read_manifest(path):
    rows = {}
    with open(path) as f:
        for line in f:
            frame, op, qpn, psn, plen, tag = line.split()
            rows[int(frame)] = (op, qpn, psn, plen, tag)
    return rows


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tool, gen, workdir = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        good, good_m = os.path.join(tmp, "good.pcap"), os.path.join(tmp, "good.txt")
        bad, bad_m = os.path.join(tmp, "bad.pcap"), os.path.join(tmp, "bad.txt")
        usec = os.path.join(tmp, "usec.pcap")
        subprocess.run([gen, "--other", "--manifest", good_m, good], check=True)
        subprocess.run([gen, "--other", "--bad", "--manifest", bad_m, bad], check=True)
        subprocess.run([gen, "--usec", usec], check=True)
        want = read_manifest(good_m)

        # Every RoCEv2 packet well-formed: exit 0, one line each.
        rc, out, err = run(tool, good)
        check(rc == 0, f"good file: exit {rc}, stderr {err!r}")
        lines = out.splitlines()
        check(len(lines) == len(want), f"good file: {len(lines)} lines for {len(want)} packets")
        for line in lines:
            f = line.split()
            frame = int(f[0])
            if frame not in want:
                check(False, f"line for a frame that is not RoCE: {line}")
                continue
            op, qpn, psn, plen, _ = want[frame]
            check(f[2] == f"dqpn=0x{int(qpn):06x}" and f[3] == f"psn=0x{int(psn):06x}"
                  and f[5] == f"len={plen}" and f[6] == "icrc=ok", f"line {line!r} vs {want[frame]}")
            check(f[4] in ("ackreq=0", "ackreq=1"), f"ackreq field in {line!r}")
        check("6 skipped (not RoCEv2)" in err, f"summary does not count 6 skipped: {err!r}")
        check(f"{len(want)} good" in err, f"summary good count: {err!r}")

        # JSON: one object per packet, same facts.
        rc, out, err = run(tool, "--json", good)
        check(rc == 0, f"--json: exit {rc}")
        objs = []
        for line in out.splitlines():
            try:
                objs.append(json.loads(line))
            except ValueError as e:
                check(False, f"--json line is not JSON ({e}): {line!r}")
        check(len(objs) == len(want), f"--json: {len(objs)} objects for {len(want)} packets")
        for o in objs:
            op, qpn, psn, plen, _ = want[o["frame"]]
            check((o["opcode_num"], o["dqpn"], o["psn"], o["payload_len"], o["icrc"])
                  == (int(op), int(qpn), int(psn), int(plen), "ok"), f"json {o} vs {want[o['frame']]}")
            check(isinstance(o["ackreq"], bool) and o["opcode"], f"json fields {o}")

        # A bad ICRC and a malformed packet: both reported, exit 1.
        rc, out, err = run(tool, bad)
        check(rc == 1, f"bad file: exit {rc}")
        badrows = {k: v for k, v in read_manifest(bad_m).items() if v[4] != "ok"}
        check(len(badrows) == 2, f"generator wrote {len(badrows)} bad packets")
        for frame, (_, _, _, _, tag) in badrows.items():
            mine = [l for l in out.splitlines() if l.split()[0] == str(frame)]
            check(len(mine) == 1, f"frame {frame}: {len(mine)} lines")
            if mine and tag == "bad_icrc":
                check(mine[0].endswith("icrc=bad"), f"frame {frame}: {mine[0]!r}")
            if mine and tag == "bad_length":
                check(mine[0] == f"{frame} malformed reason=bad_length", f"frame {frame}: {mine[0]!r}")
        check("1 bad ICRC, 1 malformed" in err, f"bad summary: {err!r}")
        rc, out, err = run(tool, "--json", bad)
        check(rc == 1 and '"error":"bad_length"' in out and '"icrc":"bad"' in out,
              f"--json bad: exit {rc}")
        rc, out, err = run(tool, "--quiet", bad)
        check(rc == 1 and out == "" and "malformed" in err, f"--quiet: exit {rc}, out {out!r}")

        # Microsecond timestamps read the same.
        rc, out, _ = run(tool, usec)
        check(rc == 0 and len(out.splitlines()) == len(want) - 0, f"usec file: exit {rc}")

        # --port: a second UDP port decodes as RoCE; without it, skipped.
        rc, out, err = run(tool, "--port", "53", good)
        check(rc == 0 and len(out.splitlines()) == len(want) + 2,
              f"--port 53: exit {rc}, {len(out.splitlines())} lines")

        # Usage and file errors: exit 2 with a message.
        for args, needle in [((), "no input file"),
                             ((good, good), "too many arguments"),
                             (("--bogus", good), "unrecognized option"),
                             (("--port", "x", good), "not a UDP port"),
                             (("--port", "70000", good), "not a UDP port"),
                             ((os.path.join(tmp, "nope.pcap"),), "cannot open"),
                             ((__file__,), "not a pcap file")]:
            rc, out, err = run(tool, *args)
            check(rc == 2 and needle in err, f"{args}: exit {rc}, stderr {err!r}, wanted {needle!r}")
        rc, out, _ = run(tool, "--help")
        check(rc == 0 and "usage: uroce-pcap" in out and "Exit status" in out, f"--help: exit {rc}")

        # A file cut in the middle of a record: what was read is printed,
        # then exit 2 with where it broke.
        cut = os.path.join(tmp, "cut.pcap")
        with open(good, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) - 7])
        rc, out, err = run(tool, cut)
        check(rc == 2 and "cut short" in err and len(out.splitlines()) > 0,
              f"cut file: exit {rc}, stderr {err!r}")

        # Real kernel captures, where present, are all good.
        data_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data")
        for name in sorted(os.listdir(data_dir)) if os.path.isdir(data_dir) else []:
            if name.startswith("rxe_") and name.endswith(".pcap"):
                rc, out, err = run(tool, os.path.join(data_dir, name))
                check(rc == 0 and "icrc=bad" not in out and "malformed" not in out,
                      f"{name}: exit {rc}")

    for f in failures[:50]:
        print(f, file=sys.stderr)
    if failures:
        print(f"test_uroce_pcap: {len(failures)} problem(s)", file=sys.stderr)
        return 1
    print("test_uroce_pcap: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
