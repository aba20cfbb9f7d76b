#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Draw size_sweep.sh's CSV: Gbit/s of RDMA payload against message size.

    /usr/bin/python3 tests/bench/plot_sweep.py SIZE_SWEEP.CSV OUT.PNG [--title TEXT]

One line per contender (rc, sr, the frame ceiling, xsk-bare, xsk-place,
kernel-udp), message size on a log2 axis labelled 64 B ... 4 MiB. The title
names the CPU (/proc/cpuinfo "model name") and the date the CSV was written
(its first line, else today). Columns left empty in the CSV (a contender
not run, or a run that gave no result) are skipped.

Needs matplotlib under Debian's /usr/bin/python3, a benchmark-only
dependency that scripts/install-deps.sh does not install:
    apt-get install -y python3-matplotlib
"""
import csv
import datetime
import re
import sys

# column -> (legend label, style); ceilings dashed, the transports solid
SERIES = [
    ("rc", "rc (write_bw, go-back-N)", dict(marker="o", linestyle="-")),
    ("sr", "sr (write_bw, selective repeat)", dict(marker="s", linestyle="-")),
    ("frame_ceiling", "frame ceiling (uroce-perf raw)", dict(marker="^", linestyle="--")),
    ("xsk_bare", "xsk-bare (bare AF_XDP loop)", dict(marker="v", linestyle=":")),
    ("xsk_place", "xsk-place (bare loop + payload copy)", dict(marker="D", linestyle="--")),
    ("kernel_udp", "kernel UDP (sendmmsg/recvmmsg)", dict(marker="x", linestyle=":")),
]


def human(size):
    for unit, mult in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= mult and size % mult == 0:
            return "%d %s" % (size // mult, unit)
    return "%d B" % size


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def read_csv(path):
    date = None
    lines = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                m = re.search(r"(\d{4}-\d{2}-\d{2})", line)
                if m and not date:
                    date = m.group(1)
                continue
            lines.append(line)
    rows = list(csv.DictReader(lines))
    return rows, date


def main(argv):
    args = argv[1:]
    title = None
    if "--title" in args:
        i = args.index("--title")
        if i + 1 >= len(args):
            sys.exit("plot_sweep: --title needs a value")
        title = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit("usage: plot_sweep.py SIZE_SWEEP.CSV OUT.PNG [--title TEXT]")
    src, png = args
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_sweep: no matplotlib for %s (apt-get install -y python3-matplotlib)" % sys.executable)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, date = read_csv(src)
    if not rows:
        sys.exit("plot_sweep: %s has no rows" % src)
    sizes = [int(r["size"]) for r in rows]
    date = date or datetime.date.today().isoformat()

    fig, ax = plt.subplots(figsize=(11, 5.5))
    top = 0.0
    for col, label, style in SERIES:
        pts = [(s, float(r[col])) for s, r in zip(sizes, rows) if r.get(col) not in (None, "")]
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, linewidth=1.6, markersize=5, **style)
        top = max(top, max(p[1] for p in pts))
    if not ax.lines:
        sys.exit("plot_sweep: no contender has a value in %s" % src)
    # The axis always spans 64 B ... 4 MiB (wider if the sweep was), ticks at
    # every power of 4 there and at every measured size.
    lo, hi = min(sizes + [64]), max(sizes + [4 << 20])
    ticks = sorted(set(sizes) | {1 << e for e in range(6, 23, 2)})
    ticks = [t for t in ticks if lo <= t <= hi]
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo / 1.4, hi * 1.4)
    ax.set_xticks(ticks)
    ax.set_xticklabels([human(t) for t in ticks], rotation=30, ha="right")
    ax.minorticks_off()
    ax.axvline(4096, color="grey", linewidth=0.8, alpha=0.6)
    ax.text(4096 * 1.08, 0.02, "4 KiB: one MTU-sized packet;\nthe ceilings are flat beyond",
            transform=ax.get_xaxis_transform(), va="bottom", fontsize=8, color="grey")
    ax.set_xlabel("message size (ceilings: frame payload min(size, 4 KiB))")
    ax.set_ylabel("Gbit/s of RDMA payload")
    ax.set_ylim(0, top * 1.1 if top else 1)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(title or "uroce throughput vs message size, veth + AF_XDP, MTU 4096\n%s, %s" % (cpu_model(), date))
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main(sys.argv)
