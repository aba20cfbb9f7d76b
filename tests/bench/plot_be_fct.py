#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CDF of per-message completion times from be_fct's files (be_fct.sh --plot).

    plot_be_fct.py --size BYTES --out FILE.png [--deadline-us T] "LABEL=FILE[,FILE...]" ...

Each file has one line per message: "i time_ns byte_len wc_flags handshake_ns";
the files of one label are pooled. Needs matplotlib (/usr/bin/python3)."""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    t = []
    for p in paths.split(","):
        with open(p) as f:
            for line in f:
                w = line.split()
                if len(w) >= 2:
                    t.append(int(w[1]) / 1000.0)
    return sorted(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, required=True, help="message size in bytes (for the title)")
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--deadline-us", type=float, help="be's deadline T, drawn as a vertical line")
    ap.add_argument("series", nargs="+", help="LABEL=FILE[,FILE...]")
    a = ap.parse_args()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s in a.series:
        if "=" not in s:
            sys.exit("plot_be_fct.py: '%s' is not LABEL=FILE[,FILE...]" % s)
        label, paths = s.split("=", 1)
        t = load(paths)
        if not t:
            sys.exit("plot_be_fct.py: no messages in %s" % paths)
        n = len(t)
        y = [(i + 1) / n for i in range(n)]
        p50, p99 = t[(n + 1) // 2 - 1], t[max(0, -(-99 * n // 100) - 1)]
        ax.step(t, y, where="post", label="%s (p50 %.0f us, p99 %.0f us, n %d)" % (label, p50, p99, n))
    if a.deadline_us:
        ax.axvline(a.deadline_us, color="black", lw=0.8, ls="--", label="be deadline T = %.0f us" % a.deadline_us)
    ax.set_xscale("log")
    ax.set_xlabel("completion time (us, log scale): sender's start of the message to the receiver's completion")
    ax.set_ylabel("fraction of messages")
    ax.set_ylim(0, 1.01)
    ax.axhline(0.99, color="grey", lw=0.5, ls=":")
    ax.grid(True, which="both", lw=0.3)
    sz = a.size
    name = "%d MiB" % (sz >> 20) if sz % (1 << 20) == 0 else "%d KiB" % (sz >> 10) if sz % 1024 == 0 else "%d B" % sz
    ax.set_title("%s messages, veth through a router, 1%% loss both ways" % name)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
