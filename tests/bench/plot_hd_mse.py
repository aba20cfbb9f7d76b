#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""OptiNIC's Figure 7 from hd_mse.sh's table: (a) NMSE against the drop
rate, (b) the largest error, (c) the largest error against the block size
at 1% (or the drop rate nearest it).
   plot_hd_mse.py TABLE OUT.png [BLOCK]   (BLOCK for (a) and (b), default 4096)"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    rows = []
    for line in open(sys.argv[1]):
        f = line.split()
        if len(f) < 10 or f[0] not in ("raw", "msg", "blk", "str"):
            continue
        rows.append(dict(cfg=f[0], block=int(f[1]), stride=int(f[2]), drop=float(f[3]), lost=float(f[4]),
                         nmse=float(f[5]), max=float(f[6]), gt=float(f[7])))
    if not rows:
        sys.exit("plot_hd_mse: no rows in " + sys.argv[1])
    blocks = sorted({r["block"] for r in rows if r["cfg"] in ("blk", "str")})
    want = int(sys.argv[3]) if len(sys.argv) == 4 else (4096 if 4096 in blocks else blocks[len(blocks) // 2])
    drops = sorted({r["drop"] for r in rows})
    at = min(drops, key=lambda d: abs(d - 0.01))
    label = {"raw": "Raw", "msg": "HD:Msg", "blk": f"HD:Blk (B={want})", "str": f"HD:Blk+Str (B={want})"}
    style = {"raw": "k-o", "msg": "C0-s", "blk": "C3-^", "str": "C2-D"}

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.3))
    for cfg in ("raw", "msg", "blk", "str"):
        pts = sorted((r["drop"], r) for r in rows if r["cfg"] == cfg and (cfg in ("raw", "msg") or r["block"] == want))
        if not pts:
            continue
        x = [d for d, _ in pts]
        ax[0].loglog(x, [r["nmse"] for _, r in pts], style[cfg], label=label[cfg])
        ax[1].loglog(x, [r["max"] for _, r in pts], style[cfg], label=label[cfg])
    lost = sorted((r["drop"], r["lost"]) for r in rows if r["cfg"] == "raw")
    ax[0].loglog([d for d, _ in lost], [v for _, v in lost], "k:", label="share of bytes lost")
    ax[0].set(xlabel="drop rate (uroce-impair on the data's hop)", ylabel="NMSE (error energy / data energy)",
              title="(a) mean squared error")
    ax[1].set(xlabel="drop rate (uroce-impair on the data's hop)", ylabel="largest error (rms of the data)",
              title="(b) largest error")
    for cfg in ("blk", "str"):
        pts = sorted((r["block"], r["max"]) for r in rows if r["cfg"] == cfg and r["drop"] == at)
        ax[2].semilogx([b for b, _ in pts], [m for _, m in pts], style[cfg], base=2,
                       label=label[cfg].split(" (")[0])
    for cfg in ("raw", "msg"):
        v = [r["max"] for r in rows if r["cfg"] == cfg and r["drop"] == at]
        if v:
            ax[2].axhline(v[0], color="k" if cfg == "raw" else "C0", ls="--", label=label[cfg])
    ax[2].set_yscale("log")
    ax[2].set(xlabel="block size B (floats)", ylabel="largest error (rms of the data)",
              title=f"(c) by block size at drop {at:g}")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle("be transfers through uroce-impair: float32 data raw and Hadamard-coded (OptiNIC Fig. 7)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


main()
