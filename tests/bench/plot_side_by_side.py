#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Draw vm_side_by_side.sh's CSV: goodput (MB/s) against message size, one
line per contender (rxe and uroce, write and send), the median over rounds.

    /usr/bin/python3 tests/bench/plot_side_by_side.py SIDE_BY_SIDE.CSV OUT.PNG [--title TEXT]

Runs that did not complete (a cell that is not a number) are left out of
their line. Needs matplotlib under Debian's /usr/bin/python3 (a
benchmark-only dependency: apt-get install -y python3-matplotlib).
"""
import csv
import statistics
import sys

STYLE = {
    "rxe write": dict(marker="o", linestyle="--", color="tab:gray"),
    "uroce rc write": dict(marker="s", linestyle="-", color="tab:blue"),
    "uroce sr write": dict(marker="D", linestyle="-", color="tab:green"),
    "rxe send": dict(marker="v", linestyle=":", color="tab:brown"),
    "uroce rc send": dict(marker="^", linestyle="-.", color="tab:orange"),
}


def human(size):
    for unit, mult in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= mult and size % mult == 0:
            return "%d %s" % (size // mult, unit)
    return "%d B" % size


def main(argv):
    args = argv[1:]
    title = "uroce (AF_XDP) and rxe on the same two QEMU guests"
    if "--title" in args:
        i = args.index("--title")
        if i + 1 >= len(args):
            sys.exit("plot_side_by_side: --title needs a value")
        title = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit("usage: plot_side_by_side.py SIDE_BY_SIDE.CSV OUT.PNG [--title TEXT]")
    src, png = args
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_side_by_side: no matplotlib for %s (apt-get install -y python3-matplotlib)" % sys.executable)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {}
    with open(src) as f:
        for row in csv.DictReader(f):
            try:
                mbs = float(row["mbs"])
            except ValueError:
                continue
            runs.setdefault(row["contender"], {}).setdefault(int(row["size"]), []).append(mbs)
    if not runs:
        sys.exit("plot_side_by_side: %s has no completed runs" % src)
    fig, ax = plt.subplots(figsize=(8, 5))
    sizes = set()
    for name in list(STYLE) + sorted(set(runs) - set(STYLE)):
        if name not in runs:
            continue
        pts = sorted((s, statistics.median(v)) for s, v in runs[name].items())
        sizes.update(s for s, _ in pts)
        ax.plot([s for s, _ in pts], [m for _, m in pts], label=name, **STYLE.get(name, {}))
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(sizes))
    ax.set_xticklabels([human(s) for s in sorted(sizes)], rotation=45)
    ax.set_xlabel("message size")
    ax.set_ylabel("goodput, MB/s (2^20 bytes/s)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main(sys.argv)
