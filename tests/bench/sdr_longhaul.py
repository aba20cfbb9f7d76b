#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hold uroce's measured long-haul completion times against SDR-RDMA's model.

Runs tests/bench/sdr_longhaul (the C bench: one RDMA WRITE with immediate
per sample over the loop fabric, simulated time, see its header) and, for
every row it prints, computes the completion-time model of the SDR-RDMA
paper, section 4.2, with sdr_model.py from this directory and the SAME
parameters:

    M      chunks = ceil(bytes / 4096)  (one bitmap chunk per 4096-byte MTU)
    t_inj  the wire time of one full data frame, as the bench measured it:
           4096 B of payload + 78 B of Ethernet/IPv4/UDP/BTH/RETH/ImmDt/ICRC
           headers = 4174 B at the link rate (3.340 us at 10 Gbit/s; the
           payload alone then moves at 9.81 Gbit/s)
    rtt    the configured round-trip propagation time (2 x the one-way delay)
    p      the drop probability of a data frame (control frames are not lost
           unless the bench ran with --ctrl-loss)
    sr_rto   rto = 3 x rtt                         (the paper's "SR RTO")
    sr_nack  rto = 1 x rtt                         (the paper's "SR NACK")
    ec_xor, ec_rs  k = 32, m = 8, fallback SR with rto = 3 x rtt, beta = the
           bench's --beta (default 1): uroce's receiver NACKs after
           ec_fto_us = beta x rtt of silence on the message, which for a
           back-to-back injection is the paper's FTO = inject + beta x RTT
           counted from the first arrival.  The EC mean is sdr_model's
           "exact" variant (binomial over the failed submessages).

It prints, per row, measured and model mean (and p99, p99.9 where the model
gives them: SR), measured/model, and a second ratio against "model*": the
same model with uroce's own values where uroce is known to differ (see
model_star()), so a gap that model* closes is explained by that difference.
Writes the tables as markdown with --md.

    sdr_longhaul.py BENCH [--md FILE] [--md-doc FILE] [--csv-out FILE]
                    [--csv-in FILE] [bench options: --sizes ... --quick ...]

With --csv-in, the bench is not run: the rows come from a CSV it wrote
(--csv-out saves one).  Plain python3, standard library only.
"""

import argparse
import csv
import io
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdr_model  # noqa: E402

K, MPAR = 32, 8          # the EC code of every ec row: (32, 8), RS or XOR
RACK_WND = 0.25          # uroce's RACK reordering window: min_rtt / 4

FLOAT_COLS = ("drop", "rtt_us", "gbps", "t_inj_us", "mean_us", "mean_se_us",
              "p50_us", "p99_us", "p999_us", "max_us", "min_us",
              "frames_per_msg", "lost_per_msg", "retx_per_msg",
              "rto_losses_per_msg", "rack_losses_per_msg", "tlp_per_msg",
              "nacks_per_msg", "ec_rebuilt_per_msg", "srtt_us", "rto_us",
              "wall_s")
INT_COLS = ("bytes", "chunks", "samples")


def parse_csv(text):
    """Rows of the bench's --csv output (comment lines give the header)."""
    head = [ln for ln in text.splitlines() if ln.startswith("#")]
    body = "\n".join(ln for ln in text.splitlines()
                     if ln and not ln.startswith("#"))
    rows = []
    for r in csv.DictReader(io.StringIO(body)):
        for c in FLOAT_COLS:
            r[c] = float(r[c])
        for c in INT_COLS:
            r[c] = int(r[c])
        # the row's byte window (older CSVs lack it)
        r["win_kib"] = int(r["win_kib"]) if r.get("win_kib") else 0
        rows.append(r)
    return head, rows


def model(r, beta):
    """The paper's model with the row's parameters: dict mean/p99/p999 (s)."""
    M, t, rtt, p = r["chunks"], r["t_inj_us"] * 1e-6, r["rtt_us"] * 1e-6, \
        r["drop"]
    v = r["variant"]
    if v in ("sr_rto", "sr_nack"):
        rto = (3.0 if v == "sr_rto" else 1.0) * rtt
        return sdr_model.sr_stats(M, t, rtt, p, rto)
    code = "xor" if v == "ec_xor" else "rs"
    st = sdr_model.ec_stats(M, t, rtt, p, code, K, MPAR, 3.0 * rtt, beta)
    return {"mean": st["mean"], "p_fallback": st["p_fallback"]}


def model_star(r, beta):
    """The model with uroce's own values where it is known to differ:

    sr_rto   rto = the RTO the sender ran with (the bench's rto_us: 3 x its
             srtt, and uroce's RTT samples run from when a packet was handed
             to the port, so they include the wait behind the rest of the
             message in the link's queue, not only the network RTT)
    sr_nack  rto = rtt + rtt/4: RACK declares a packet lost once a later one
             is acknowledged and a reordering window of min_rtt/4 has passed
             (its tail-loss probe for the very last packet is not modelled)
    ec_*     + rtt: the sender completes on the receiver's final ACK (SDR's
             T_SR counts that RTT, its EC base term does not; the paper
             defines T as ending at that ACK's reception).
             - m x t_inj x (1-p)^k_last: since 244fb7b the sender is done
             with a message's parity once the receiver reports the message
             finished, so when every data frame of the last submessage
             (k_last of them) arrives, the completion does not wait for
             that submessage's m parity frames (the mean still counts them
             when one of those data frames is lost: the decode needs them).
             The fallback SR's rto is the measured RTO.
    """
    M, t, rtt, p = r["chunks"], r["t_inj_us"] * 1e-6, r["rtt_us"] * 1e-6, \
        r["drop"]
    v = r["variant"]
    if v == "sr_rto":
        return sdr_model.sr_stats(M, t, rtt, p, r["rto_us"] * 1e-6)
    if v == "sr_nack":
        return sdr_model.sr_stats(M, t, rtt, p, (1.0 + RACK_WND) * rtt)
    code = "xor" if v == "ec_xor" else "rs"
    st = sdr_model.ec_stats(M, t, rtt, p, code, K, MPAR, r["rto_us"] * 1e-6,
                            beta)
    k_last = M - (-(-M // K) - 1) * K
    return {"mean": st["mean"] + rtt - MPAR * t * (1.0 - p) ** k_last}


def fmt_size(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return "%d %s" % (b // n, unit)
    return "%d B" % b


def ratio(a, b):
    return a / b if b else float("nan")


def build_table(rows, beta):
    out = []
    for r in rows:
        m = model(r, beta)
        ms = model_star(r, beta)
        us = 1e6
        e = {
            "variant": r["variant"], "size": fmt_size(r["bytes"]),
            "bytes": r["bytes"], "chunks": r["chunks"], "drop": r["drop"],
            "rtt_us": r["rtt_us"], "samples": r["samples"],
            "mean": r["mean_us"], "se": r["mean_se_us"],
            "p99": r["p99_us"], "p999": r["p999_us"],
            "model_mean": m["mean"] * us,
            "model_p99": m.get("p99", float("nan")) * us,
            "model_p999": m.get("p999", float("nan")) * us,
            "star_mean": ms["mean"] * us,
            "star_p99": ms.get("p99", float("nan")) * us,
            "srtt": r["srtt_us"], "rto": r["rto_us"], "win": r["win_kib"],
            "retx": r["retx_per_msg"], "nacks": r["nacks_per_msg"],
            "rebuilt": r["ec_rebuilt_per_msg"], "lost": r["lost_per_msg"],
        }
        e["r_mean"] = ratio(e["mean"], e["model_mean"])
        e["r_p99"] = ratio(e["p99"], e["model_p99"])
        e["r_p999"] = ratio(e["p999"], e["model_p999"])
        e["r_star"] = ratio(e["mean"], e["star_mean"])
        e["r_star_p99"] = ratio(e["p99"], e["star_p99"])
        out.append(e)
    return out


def f1(x):
    return "-" if x != x else "%.1f" % x


def f2(x):
    return "-" if x != x else "%.2f" % x


COLS = [("variant", "variant", str), ("size", "size", str),
        ("drop", "drop", lambda x: "%g" % x),
        ("rtt_us", "RTT us", lambda x: "%g" % x),
        ("samples", "n", str),
        ("mean", "mean us", f1), ("model_mean", "model us", f1),
        ("r_mean", "meas/model", f2),
        ("p99", "p99 us", f1), ("model_p99", "model p99", f1),
        ("r_p99", "p99 ratio", f2),
        ("p999", "p99.9 us", f1), ("model_p999", "model p99.9", f1),
        ("star_mean", "model* us", f1), ("r_star", "meas/model*", f2),
        ("retx", "retx/msg", lambda x: "%.3g" % x),
        ("nacks", "nacks/msg", lambda x: "%.3g" % x),
        ("srtt", "srtt us", f1), ("rto", "RTO us", f1),
        ("win", "win KiB", lambda x: str(x) if x else "-")]


def print_text(table, f=sys.stdout):
    widths = [max(len(h), 8) for _, h, _ in COLS]
    print(" ".join("%*s" % (w, h) for w, (_, h, _) in zip(widths, COLS)),
          file=f)
    for e in table:
        print(" ".join("%*s" % (w, fn(e[k]))
                       for w, (k, _, fn) in zip(widths, COLS)), file=f)


def markdown(table):
    lines = ["| " + " | ".join(h for _, h, _ in COLS) + " |",
             "|" + "---|" * len(COLS)]
    for e in table:
        lines.append("| " + " | ".join(fn(e[k]) for k, _, fn in COLS) + " |")
    return "\n".join(lines)


DOC_COLS = [("size", "size", str), ("drop", "drop", lambda x: "%g" % x),
            ("variant", "variant", str), ("samples", "n", str),
            ("mean", "mean us", f1), ("p99", "p99 us", f1),
            ("p999", "p99.9 us", f1), ("model_mean", "model us", f1),
            ("r_mean", "meas/model", f2), ("star_mean", "model\\* us", f1),
            ("r_star", "meas/model\\*", f2),
            ("retx", "retx/msg", lambda x: "%.3g" % x),
            ("nacks", "NACKs/msg", lambda x: "%.3g" % x),
            ("rto", "RTO us", lambda x: "%.0f" % x)]


def markdown_doc(table):
    """The tables of docs/benchmarks.md: one per RTT, fewer columns (the
    model's p99 and the sender's srtt are in the full --md table)."""
    out = []
    for rtt in sorted({e["rtt_us"] for e in table}):
        es = [e for e in table if e["rtt_us"] == rtt]
        out.append("RTT %g us, window %s KiB:\n" % (
            rtt, "/".join(sorted({str(e["win"]) for e in es}))))
        out.append("| " + " | ".join(h for _, h, _ in DOC_COLS) + " |")
        out.append("|" + "---|" * len(DOC_COLS))
        for e in es:
            out.append("| " + " | ".join(fn(e[k]) for k, _, fn in DOC_COLS)
                       + " |")
        out.append("")
    return "\n".join(out)


def summary(table):
    """Ratios of the means per variant: how many rows within 10%."""
    lines = []
    for v in ("sr_rto", "sr_nack", "ec_xor", "ec_rs"):
        es = [e for e in table if e["variant"] == v]
        if not es:
            continue
        rs = [e["r_mean"] for e in es]
        ss = [e["r_star"] for e in es]
        lines.append(
            "%-8s %3d rows: meas/model %.2f..%.2f, %d within 10%%; "
            "meas/model* %.2f..%.2f, %d within 10%%" % (
                v, len(es), min(rs), max(rs),
                sum(abs(x - 1) <= 0.1 for x in rs), min(ss), max(ss),
                sum(abs(x - 1) <= 0.1 for x in ss)))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Run sdr_longhaul and compare with SDR's model "
        "(sdr_model.py). Unknown options go to the bench.")
    ap.add_argument("bench", nargs="?", help="path of the sdr_longhaul "
                    "executable (not needed with --csv-in)")
    ap.add_argument("--md", metavar="FILE", help="write the markdown table")
    ap.add_argument("--md-doc", metavar="FILE", help="write the shorter "
                    "tables of docs/benchmarks.md (one per RTT)")
    ap.add_argument("--csv-out", metavar="FILE",
                    help="save the bench's CSV")
    ap.add_argument("--csv-in", metavar="FILE",
                    help="read rows from this CSV instead of running")
    a, rest = ap.parse_known_args(argv)
    beta = 1.0
    for i, x in enumerate(rest):
        if x == "--beta" and i + 1 < len(rest):
            beta = float(rest[i + 1])
        elif x.startswith("--beta="):
            beta = float(x.split("=", 1)[1])
    if a.csv_in:
        with open(a.csv_in) as f:
            text = f.read()
        cmd = None
    else:
        if not a.bench:
            ap.error("give the bench's path, or --csv-in FILE")
        if not os.access(a.bench, os.X_OK):
            ap.error("%s is not an executable (build it: ninja -C BUILD "
                     "tests/bench/sdr_longhaul)" % a.bench)
        cmd = [a.bench, "--csv"] + rest
        t0 = time.time()
        pr = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if pr.returncode:
            sys.exit("sdr_longhaul.py: %s failed (exit %d)"
                     % (" ".join(cmd), pr.returncode))
        text = pr.stdout
        print("# bench ran %.0f s: %s" % (time.time() - t0, " ".join(cmd)))
        if a.csv_out:
            with open(a.csv_out, "w") as f:
                f.write(text)
    for x in text.splitlines():
        if x.startswith("# sdr_longhaul") and "beta" in x:
            beta = float(x.split("beta ", 1)[1].split(";", 1)[0])
    head, rows = parse_csv(text)
    for h in head:
        print(h)
    table = build_table(rows, beta)
    print_text(table)
    for ln in summary(table):
        print(ln)
    if a.md:
        with open(a.md, "w") as f:
            f.write("\n".join(head) + "\n\n" + markdown(table) + "\n\n" +
                    "\n".join("- " + ln for ln in summary(table)) + "\n")
    if a.md_doc:
        with open(a.md_doc, "w") as f:
            f.write(markdown_doc(table) + "\n" +
                    "\n".join("- " + ln for ln in summary(table)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
