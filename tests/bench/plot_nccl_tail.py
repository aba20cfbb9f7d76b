#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The tail of an allreduce under loss, per reliability mode, from
nccl_coll_bench.sh's CSV: for each (ranks, algorithm) at one size, the
p99 at each loss rate over the same mode's lossless mean (log scale), one
bar per mode.

    plot_nccl_tail.py CSV --size BYTES --out FILE.png

Needs matplotlib (/usr/bin/python3)."""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def p99(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.99 * len(v)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    t = defaultdict(list)
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            if r["coll"] == "allreduce" and int(r["size"]) == a.size:
                t[(r["mode"], r["loss"], r["nranks"], r["algo"])].append(float(r["time_us"]))
    modes = [m for m in ("rc", "sr", "ec", "be") if any(k[0] == m for k in t)]
    losses = sorted({k[1] for k in t if k[1] != "0"}, key=float)
    groups = sorted({(k[2], k[3]) for k in t}, key=lambda g: (int(g[0]), g[1]))
    fig, axes = plt.subplots(1, len(losses), figsize=(6 * len(losses), 4), sharey=True, squeeze=False)
    w = 0.8 / len(modes)
    for ax, loss in zip(axes[0], losses):
        for i, m in enumerate(modes):
            ys = []
            for n, algo in groups:
                base = t.get((m, "0", n, algo))
                lossy = t.get((m, loss, n, algo))
                ys.append(p99(lossy) / (sum(base) / len(base)) if base and lossy else 0)
            ax.bar([g + i * w for g in range(len(groups))], ys, w, label=m)
        ax.axhline(1.2, color="grey", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks([g + 0.4 - w / 2 for g in range(len(groups))])
        ax.set_xticklabels([f"{n} ranks, {algo}" for n, algo in groups])
        ax.set_title(f"allreduce {a.size // 1024} KiB per rank, {float(loss) * 100:g}% loss")
        ax.set_ylabel("p99 / lossless mean")
    axes[0][0].legend(title="mode")
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)


if __name__ == "__main__":
    main()
