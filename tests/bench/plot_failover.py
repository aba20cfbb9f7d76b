#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Goodput across a link failure (failover_bench.sh --plot): one panel per
QP mode, the goodput time series with the failure's events marked.

    plot_failover.py --out FILE.png [--title TEXT] MODE=CSV...

Each CSV (failover_bench --mode tput) starts with "# event,NAME,T_MS" lines
(down, detect, switch, up, failback), then "t_ms,gbps" rows, t_ms being the
end of each bin. Needs matplotlib (/usr/bin/python3)."""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EVENT_STYLE = {  # name: (colour, line style, legend text)
    "down": ("tab:red", "-", "rail 1 down (ioctl)"),
    "switch": ("tab:orange", "--", "first packet on the backup"),
    "up": ("tab:green", "-", "rail 1 up (ioctl)"),
    "failback": ("tab:blue", "--", "first packet on the primary again"),
}


def read(path):
    events, rows = {}, []
    with open(path) as f:
        lines = f.read().splitlines()
    body = []
    for ln in lines:
        if ln.startswith("# event,"):
            _, name, t = ln.split(",")
            events[name] = float(t)
        elif ln and not ln.startswith("#"):
            body.append(ln)
    for r in csv.DictReader(body):
        rows.append((float(r["t_ms"]), float(r["gbps"])))
    return events, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="goodput across a link failure")
    ap.add_argument("series", nargs="+", metavar="MODE=CSV")
    a = ap.parse_args()
    series = []
    for s in a.series:
        if "=" not in s:
            sys.exit("plot_failover.py: '%s' is not MODE=CSV" % s)
        mode, path = s.split("=", 1)
        events, rows = read(path)
        if not rows:
            sys.exit("plot_failover.py: no rows in %s" % path)
        series.append((mode, events, rows))
    fig, axes = plt.subplots(len(series), 1, figsize=(10, 2.8 * len(series) + 0.6), sharex=True, squeeze=False)
    for ax, (mode, events, rows) in zip(axes[:, 0], series):
        ax.step([t / 1000 for t, _ in rows], [g for _, g in rows], where="pre", lw=1, color="black",
                label="goodput (completed WRITEs)")
        for name, (col, ls, text) in EVENT_STYLE.items():
            if name in events:
                ax.axvline(events[name] / 1000, color=col, ls=ls, lw=1, label="%s (%.1f ms)" % (text, events[name]))
        ax.set_ylabel("%s Gbit/s" % mode)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.35)  # room for the legend above the series
        top = ax.get_ylim()[1]
        if "down" in events and "switch" in events:
            ax.annotate("failover %.0f us" % ((events["switch"] - events["down"]) * 1000),
                        (events["switch"] / 1000, top * 0.79), xytext=(6, 0), textcoords="offset points",
                        color="tab:orange", fontsize=8)
        if "up" in events and "failback" in events:
            ax.annotate("fail-back %.1f ms" % (events["failback"] - events["up"]),
                        (events["failback"] / 1000, top * 0.79), xytext=(6, 0), textcoords="offset points",
                        color="tab:blue", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", ncol=3)
    axes[-1, 0].set_xlabel("seconds")
    fig.suptitle(a.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
