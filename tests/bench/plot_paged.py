#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""paged / single throughput ratio against the page size (paged_bench.sh --plot).

    plot_paged.py --csv FILE --out FILE.png [--title TEXT]

The CSV has "mode,page,paged_gbps,single_gbps,ratio" rows. Needs matplotlib
(/usr/bin/python3)."""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="paged writes / one large WRITE")
    a = ap.parse_args()
    rows = {}
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["mode"], []).append((int(r["page"]), float(r["ratio"]), float(r["paged_gbps"]),
                                                   float(r["single_gbps"])))
    if not rows:
        sys.exit("plot_paged.py: no rows in %s" % a.csv)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    for mode, v in sorted(rows.items()):
        v.sort()
        x = [p / 1024 for p, _, _, _ in v]
        ax.plot(x, [r for _, r, _, _ in v], marker="o", label=mode)
        bx.plot(x, [g for _, _, g, _ in v], marker="o", label="%s paged" % mode)
        bx.plot(x, [s for _, _, _, s in v], ls="--", label="%s single WRITE" % mode)
    ticks = sorted({p / 1024 for v in rows.values() for p, _, _, _ in v})
    for x in (ax, bx):
        x.set_xscale("log", base=2)
        x.set_xticks(ticks)
        x.set_xticklabels(["%g" % t for t in ticks])
        x.set_xlabel("page size (KiB)")
        x.grid(True, which="both", lw=0.3)
        x.legend(fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_ylabel("paged / single (median Gbit/s)")
    ax.set_ylim(bottom=0)
    bx.set_ylabel("Gbit/s")
    bx.set_ylim(bottom=0)
    fig.suptitle(a.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
