#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Goodput against paths and against QPs (path_scale.sh --plot).

    plot_path_scale.py --data FILE --out FILE.png [--qp-paths N]

The data file has lines "paths TOPO N GBPS RATIO" and "qps MODE N GBPS
RATIO" (medians; "-" for a failed point). Needs matplotlib
(/usr/bin/python3)."""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def num(s):
    return None if s == "-" else float(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--qp-paths", default="4")
    a = ap.parse_args()
    paths, qps = {}, {}
    with open(a.data) as f:
        for line in f:
            w = line.split()
            if len(w) != 5:
                continue
            d = paths if w[0] == "paths" else qps
            d.setdefault(w[1], []).append((int(w[2]), num(w[3]), num(w[4])))
    if not paths and not qps:
        sys.exit("plot_path_scale.py: nothing in %s" % a.data)
    parts = [p for p in (paths, qps) if p]
    fig, axes = plt.subplots(1, len(parts), figsize=(5.2 * len(parts), 4), squeeze=False)
    for ax, d in zip(axes[0], parts):
        for name, v in sorted(d.items()):
            v = [(n, g) for n, g, _ in sorted(v) if g is not None]
            label = name if d is paths else ("rc (flat)" if name == "rc" else "sr, %s paths" % a.qp_paths)
            ax.plot([n for n, _ in v], [g for _, g in v], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("Gbit/s (median)")
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=8)
        if d is paths:
            ax.set_xlabel("paths per QP (sr, p2c)")
            ax.set_title("one QP, sprayed over N paths", fontsize=10)
        else:
            ax.set_xlabel("QPs")
            ax.set_title("N QPs, ~256 WRs posted in all", fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
