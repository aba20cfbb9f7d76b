#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Per-message completion times of fab_flows runs, one CDF per
configuration (spray_bench.sh and incast_bench.sh --plot).

    plot_spray.py --out FILE.png [--title TEXT] [--class bulk|victim] [--logx] "NAME=FILE,FILE..." ...

Each FILE has fab_flows --out lines "flow class size t_post_ns fct_ns
run_delay_ns"; the messages of all a configuration's files are pooled
(only --class's, when given). Needs matplotlib (/usr/bin/python3)."""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    ap.add_argument("--class", dest="cls", default=None)
    ap.add_argument("--logx", action="store_true")
    ap.add_argument("series", nargs="+")
    a = ap.parse_args()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drawn = 0
    for s in a.series:
        name, _, files = s.partition("=")
        v = []
        for fn in filter(None, files.split(",")):
            with open(fn) as f:
                for line in f:
                    w = line.split()
                    if len(w) >= 5 and (a.cls is None or w[1] == a.cls):
                        v.append(int(w[4]) / 1000.0)
        if not v:
            continue
        v.sort()
        n = len(v)
        ax.plot(v, [(i + 1) / n for i in range(n)], label="%s (n=%d, p99 %.0f us)" % (name, n, v[min(n - 1, int(0.99 * n))]))
        drawn += 1
    if not drawn:
        sys.exit("plot_spray.py: no messages in the files given")
    if a.logx:
        ax.set_xscale("log")
    ax.set_xlabel("message completion time (us)")
    ax.set_ylabel("fraction of messages")
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(a.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
