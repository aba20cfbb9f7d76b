#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Message-completion-time model of SDR-RDMA reliability layers.

The model is the one in section 4.2 of the SDR-RDMA paper ("SDR-RDMA:
Software-Defined Reliability Architecture for Planetary Scale RDMA
Communication"), with the parameters used in its evaluation (sec. 5.1-5.2).
It uses only the Python standard library, so it runs on any machine.

Units: a *chunk* is one bit of the receive bitmap; every time is in seconds.

Selective Repeat (SR), sec. 4.2.2.  Chunk i (1..M) completes at

    X_i = i*t_inj + O*(Y_i - 1),   O = rto + t_inj,
    Y_i ~ Geometric(1 - p)  (transmissions needed, support 1, 2, ...)

and T_SR(M) = max_i X_i + rtt.  The paper calls this a lower bound once
M*t_inj > rto (a retransmission then overlaps first transmissions, which
the model does not serialise); the simulator below samples the same model,
so it validates the arithmetic, not that approximation.
"SR RTO" is rto = 3*rtt, "SR NACK" (best-case NACK) is rto = 1*rtt.

Erasure coding (EC), sec. 4.2.3: L = ceil(M/k) submessages of k data and
m parity chunks, decodable with probability P_EC (Reed-Solomon/MDS or the
XOR code of sec. 5.1.1); failed submessages fall back to SR.

Public functions (times in seconds):
    inject_time(chunk_bytes, gbps)
    sr_expected(M, t_inj, rtt, p, rto)            -> E[T_SR]
    sr_quantile(q, M, t_inj, rtt, p, rto)         -> q-quantile of T_SR
    sr_stats(M, t_inj, rtt, p, rto, quantiles)    -> dict mean/p99/p999
    ec_fail_prob(code, k, m, p)                   -> 1 - P_EC
    ec_success_prob(code, k, m, p)                -> P_EC
    ec_expected(M, t_inj, rtt, p, code, k, m, rto, beta, variant)
    ec_stats(...)                                 -> dict with both variants
    sr_simulate(M, t_inj, rtt, p, rto, n, seed)   -> list of T_SR samples
    ec_simulate(M, t_inj, rtt, p, code, k, m, rto, beta, n, seed)
    summarize(samples)                            -> dict mean/stderr/p99/p999
"""

import argparse
import json
import math
import random
import sys
import time

# Truncate the geometric retry count at Y_max, chosen so M * p**Y_max is
# below this: the neglected tail adds at most ~O * M * p**Y_max / (1-p).
TAIL_EPS = 1e-16


def inject_time(chunk_bytes, gbps):
    """Seconds to put one chunk of chunk_bytes on a gbps Gbit/s link."""
    return chunk_bytes * 8.0 / (gbps * 1e9)


def _check(M, t_inj, rtt, p, rto):
    if int(M) != M or M < 0:
        raise ValueError("M must be a non-negative integer, got %r" % (M,))
    if not t_inj > 0:
        raise ValueError("t_inj must be > 0, got %r" % (t_inj,))
    if not rtt >= 0:
        raise ValueError("rtt must be >= 0, got %r" % (rtt,))
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1), got %r" % (p,))
    if not rto >= 0:
        raise ValueError("rto must be >= 0, got %r" % (rto,))


def _ymax(M, p):
    if p <= 0:
        return 1
    return max(1, math.ceil(math.log(TAIL_EPS / M) / math.log(p)))


# ---------------------------------------------------------------------------
# SR: exact step-function CDF of max_i X_i
#
# Write s = M*t + a*t + b with integer a >= 0 and 0 <= b < t (below M*t the
# last chunk has not even been sent, so F = 0).  With
#     n_y(s) = #{i : y_i(s) >= y}
#            = clamp(M + a + floor((b - (y-1)*O)/t), 0, M)
# (y_i(s) = 1 + floor((s - i*t)/O) is the most transmissions chunk i can
# have made by s) we have log F(s) = sum_y (n_y - n_{y+1}) * log(1 - p**y).
# Writing the deficits m_y = M - n_y and v_y = w_y - w_{y-1}
# (w_y = log(1 - p**y), w_{Y+1} = 0, so every v_y > 0):
#     log F = -sum_{y>=2} v_y * m_y,
# a sum of same-sign terms (no cancellation).
#
# The jumps of floor((b - (y-1)O)/t) in b sit at fmod((y-1)O, t), the same
# for every a, so [0, t) splits into at most Y+1 sub-intervals; inside one,
# m_y(a) = clamp(D_y - a, 0, M) for integers D_y, and log F is piecewise
# linear in a with breakpoints D_y - M and D_y.  Summing 1 - F over a is then
# a geometric series per linear piece: O(Y^2 log Y) in all, independent of
# M and of O/t (a plain sort of the M*Y jump points would be ~1e6 points for
# M = 1e5).
# ---------------------------------------------------------------------------

def _sr_layout(M, t, O, p):
    """(Y, v, cells): v_y for y = 2..Y+1, and the sub-intervals of [0, t)
    as (lo, width, D) with D_y (y = 2..Y+1) valid throughout each."""
    Y = _ymax(M, p)
    w = [math.log1p(-p ** y) for y in range(1, Y + 1)] + [0.0]
    v = [w[j] - w[j - 1] for j in range(1, Y + 1)]      # v_y for y = 2..Y+1
    cuts = sorted({math.fmod((y - 1) * O, t) for y in range(1, Y + 2)} | {0.0})
    bounds = [c for c in cuts if c < t] + [t]
    cells = []
    for lo, hi in zip(bounds, bounds[1:]):
        if hi <= lo:
            continue
        # Evaluate the floor in the middle: robust to rounding at the cuts.
        mid = 0.5 * (lo + hi)
        D = [-math.floor((mid - (y - 1) * O) / t) for y in range(2, Y + 2)]
        cells.append((lo, hi - lo, D))
    return Y, v, cells


def _segments(D, v, M):
    """Yield (a0, a1, L0, B): on integers a0 <= a < a1, log F = L0 + B*(a-a0).

    Ends at a1 = max(D); from there on every chunk has had Y+1 tries and
    F = 1 (up to the truncated tail).
    """
    amax = max(D) if D else 0
    if amax <= 0:
        return
    L = 0.0
    B = 0.0
    events = {}
    for d, vy in zip(D, v):
        if d <= 0:
            continue
        L -= vy * min(d, M)
        if d - M <= 0:
            B += vy                     # already shrinking at a = 0
        else:
            events[d - M] = events.get(d - M, 0.0) + vy
        events[d] = events.get(d, 0.0) - vy
    a = 0
    for nxt in sorted(events):
        if nxt > a:
            yield a, nxt, L, B
            L += B * (nxt - a)
            a = nxt
        B += events[nxt]
    # a == amax here


def _seg_sum(L0, B, n):
    """sum_{j=0}^{n-1} (1 - exp(L0 + B*j)) for B >= 0, L0 + B*n <= ~0."""
    if B <= 0.0:
        return -n * math.expm1(L0)
    if B * n < 700.0:
        g = math.exp(L0) * math.expm1(B * n) / math.expm1(B)
    else:  # exp(L0) is tiny then; avoid overflowing expm1(B*n)
        g = (math.exp(L0 + B * n) - math.exp(L0)) / math.expm1(B)
    return n - g


def _sr_max_mean(M, t, O, p):
    if M == 0:
        return 0.0
    Y, v, cells = _sr_layout(M, t, O, p)
    extra = 0.0
    for lo, width, D in cells:
        s = 0.0
        for a0, a1, L0, B in _segments(D, v, M):
            s += _seg_sum(L0, B, a1 - a0)
        extra += width * s
    return M * t + extra


def _sr_max_quantile(q, M, t, O, p):
    if M == 0:
        return 0.0
    lq = math.log(q)
    Y, v, cells = _sr_layout(M, t, O, p)
    best = math.inf
    for lo, width, D in cells:
        a_hit = max(D) if D else 0      # F = 1 from here on
        for a0, a1, L0, B in _segments(D, v, M):
            if L0 >= lq:
                a_hit = a0
                break
            if B > 0 and L0 + B * (a1 - a0) >= lq:
                j = math.ceil((lq - L0) / B - 1e-9)
                a_hit = a0 + max(0, min(j, a1 - a0))
                break
        a_hit = max(a_hit, 0)
        best = min(best, M * t + a_hit * t + lo)
    return best


def sr_expected(M, t_inj, rtt, p, rto):
    """E[T_SR(M)] in seconds (0 for M == 0: nothing to send)."""
    _check(M, t_inj, rtt, p, rto)
    if M == 0:
        return 0.0
    return _sr_max_mean(int(M), t_inj, rto + t_inj, p) + rtt


def sr_quantile(q, M, t_inj, rtt, p, rto):
    """Smallest T with P(T_SR(M) <= T) >= q, for 0 < q < 1."""
    _check(M, t_inj, rtt, p, rto)
    if not 0 < q < 1:
        raise ValueError("q must be in (0, 1), got %r" % (q,))
    if M == 0:
        return 0.0
    return _sr_max_quantile(q, int(M), t_inj, rto + t_inj, p) + rtt


def sr_stats(M, t_inj, rtt, p, rto, quantiles=(0.99, 0.999)):
    """{'mean': E[T_SR], 'p99': ..., 'p999': ...} (keys 'p' + digits of q)."""
    out = {"mean": sr_expected(M, t_inj, rtt, p, rto)}
    for q in quantiles:
        out[_qkey(q)] = sr_quantile(q, M, t_inj, rtt, p, rto)
    return out


def _qkey(q):
    return "p" + ("%g" % (q * 100)).replace(".", "")


def _sr_max_mean_brute(M, t, O, p):
    """Reference: sort every jump point, evaluate the product directly.
    O(M^2 * Y); only for cross-checking the fast path on small M."""
    Y = _ymax(M, p)
    start = M * t
    pts = {start}
    for i in range(1, M + 1):
        for y in range(1, Y + 2):
            s = i * t + (y - 1) * O
            if s > start:
                pts.add(s)
    pts = sorted(pts)
    mean = start
    cdf = []
    for s0, s1 in zip(pts, pts[1:]):
        mid = 0.5 * (s0 + s1)
        F = 1.0
        for i in range(1, M + 1):
            F *= 1.0 - p ** (1 + math.floor((mid - i * t) / O))
        mean += (1.0 - F) * (s1 - s0)
        cdf.append((s0, F))
    return mean, cdf


# ---------------------------------------------------------------------------
# EC
# ---------------------------------------------------------------------------

def _binom_tail(n, p, lo):
    """P(Binomial(n, p) >= lo), summed directly (no 1 - x cancellation)."""
    if lo <= 0:
        return 1.0
    if p <= 0 or lo > n:
        return 0.0
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i)
               for i in range(lo, n + 1))


def _check_code(code, k, m):
    if code not in ("rs", "xor"):
        raise ValueError("code must be 'rs' or 'xor', got %r" % (code,))
    if int(k) != k or k < 1:
        raise ValueError("k must be an integer >= 1, got %r" % (k,))
    if int(m) != m or m < (1 if code == "xor" else 0):
        raise ValueError("m must be an integer >= %d for %s, got %r"
                         % (1 if code == "xor" else 0, code, m))


def _xor_groups(k, m):
    """Data chunks per XOR group: group g covers data j with j % m == g."""
    return [k // m + (1 if g < k % m else 0) for g in range(m)]


def ec_fail_prob(code, k, m, p):
    """1 - P_EC: probability a (k data + m parity) submessage is undecodable.

    rs : MDS, decodable iff at most m of the k+m chunks are lost.
    xor: parity g covers data j with j % m == g; a group (n_g data + 1
         parity) is recoverable iff at most one of its chunks is lost (two
         lost always include a data chunk, and one parity recovers one).
    """
    _check_code(code, k, m)
    if code == "rs":
        return _binom_tail(k + m, p, m + 1)
    log_ok = 0.0
    for n_g in _xor_groups(k, m):
        log_ok += math.log1p(-_binom_tail(n_g + 1, p, 2))
    return -math.expm1(log_ok)


def ec_success_prob(code, k, m, p):
    """P_EC: probability a submessage is decodable."""
    return 1.0 - ec_fail_prob(code, k, m, p)


def _ec_base(M, k, m, t_inj):
    # (M + ceil(M/R)) * t_inj with R = k/m: data plus parity injection.
    return (M + -(-M * m // k)) * t_inj


def ec_expected(M, t_inj, rtt, p, code="rs", k=32, m=8, rto=None, beta=1.0,
                variant="exact"):
    """E[T_EC(M)] in seconds (paper sec. 4.2.3).

        base        = (M + ceil(M*m/k)) * t_inj
        P_fallback  = 1 - P_EC**L,   L = ceil(M/k)
        E[failures] = L * (1 - P_EC)

    variant="paper": base + P_fallback*(rtt + beta*rtt)
                     + E[T_SR(round(E[failures]) * k)]
        as written in the paper.  T_SR of 0 chunks is 0, so the last term
        vanishes whenever E[failures] rounds to 0 (e.g. L*(1-P_EC) = 0.3 adds
        no retransmission time at all, though a fallback happens 26% of the
        time) - hence the default is the other variant.
    variant="exact" (default): base + P_fallback*(rtt + beta*rtt)
                     + sum_{f>=1} P(F=f) * E[T_SR(f*k)],
        F ~ Binomial(L, 1-P_EC)
        i.e. the mean over the actual number of failed submessages.

    rto is the fallback SR's timeout (default 3*rtt, "SR RTO").  Like the
    paper, the base term has no RTT for the final ACK (it is the paper's
    lower bound), while T_SR includes one.  Every submessage, the last
    partial one included, is treated as k + m chunks that can be lost.
    """
    if rto is None:
        rto = 3.0 * rtt
    _check(M, t_inj, rtt, p, rto)
    _check_code(code, k, m)
    if variant not in ("exact", "paper"):
        raise ValueError("variant must be 'exact' or 'paper', got %r"
                         % (variant,))
    if M == 0:
        return 0.0
    L = -(-M // k)
    qf = ec_fail_prob(code, k, m, p)
    t = _ec_base(M, k, m, t_inj)
    if qf <= 0.0:
        return t
    p_fb = -math.expm1(L * math.log1p(-qf))
    t += p_fb * (rtt + beta * rtt)
    if variant == "paper":
        nf = math.floor(L * qf + 0.5)
        return t + (sr_expected(nf * k, t_inj, rtt, p, rto) if nf else 0.0)
    for f, pf in _binom_support(L, qf):
        t += pf * sr_expected(f * k, t_inj, rtt, p, rto)
    return t


def _binom_support(n, q, eps=1e-17):
    """(f, P(F=f)) for f >= 1 with non-negligible mass, F ~ Binomial(n, q)."""
    lq, l1q = math.log(q), math.log1p(-q)
    lgn = math.lgamma(n + 1)

    def logpmf(f):
        return lgn - math.lgamma(f + 1) - math.lgamma(n - f + 1) \
            + f * lq + (n - f) * l1q

    mode = min(n, max(1, int((n + 1) * q)))
    out = []
    f = mode
    while f >= 1:
        pf = math.exp(logpmf(f))
        if pf < eps and f < mode:
            break
        out.append((f, pf))
        f -= 1
    f = mode + 1
    while f <= n:
        pf = math.exp(logpmf(f))
        if pf < eps:
            break
        out.append((f, pf))
        f += 1
    return out


def ec_stats(M, t_inj, rtt, p, code="rs", k=32, m=8, rto=None, beta=1.0,
             variant="exact"):
    """Dict: mean (chosen variant), mean_exact, mean_paper, p_ec,
    p_fallback, e_failures, base."""
    L = -(-M // k) if M else 0
    qf = ec_fail_prob(code, k, m, p)
    ex = ec_expected(M, t_inj, rtt, p, code, k, m, rto, beta, "exact")
    pa = ec_expected(M, t_inj, rtt, p, code, k, m, rto, beta, "paper")
    return {
        "mean": ex if variant == "exact" else pa,
        "mean_exact": ex,
        "mean_paper": pa,
        "p_ec": 1.0 - qf,
        "p_fallback": -math.expm1(L * math.log1p(-qf)) if qf < 1 else 1.0,
        "e_failures": L * qf,
        "base": _ec_base(M, k, m, t_inj) if M else 0.0,
    }


# ---------------------------------------------------------------------------
# Monte Carlo of the same processes.  Drops are sampled by geometric skips
# (exactly the i.i.d. Bernoulli(p) process, but O(#drops) per sample instead
# of O(M)), so M = 1e5 with thousands of samples stays cheap.
# ---------------------------------------------------------------------------

def _drop_positions(rng, n, p):
    """Indices 0..n-1 of lost chunks, each lost i.i.d. with probability p."""
    if p <= 0:
        return []
    l1p = math.log1p(-p)
    out = []
    i = -1
    while True:
        # successes before the next loss: P(gap >= g) = (1-p)**g
        i += 1 + int(math.log(1.0 - rng.random()) / l1p)
        if i >= n:
            return out
        out.append(i)


def _sr_sample(rng, M, t, O, p, rtt):
    if M == 0:
        return 0.0
    worst = M * t
    lp = math.log(p) if p > 0 else 0.0
    for i0 in _drop_positions(rng, M, p):
        # lost once already; further losses: P(extra >= e) = p**e
        extra = int(math.log(1.0 - rng.random()) / lp)
        x = (i0 + 1) * t + O * (1 + extra)
        if x > worst:
            worst = x
    return worst + rtt


def sr_simulate(M, t_inj, rtt, p, rto, n=1000, seed=1, rng=None):
    """n samples of T_SR(M) (seconds), from random.Random(seed) or rng."""
    _check(M, t_inj, rtt, p, rto)
    rng = rng or random.Random(seed)
    O = rto + t_inj
    return [_sr_sample(rng, int(M), t_inj, O, p, rtt) for _ in range(n)]


def ec_simulate(M, t_inj, rtt, p, code="rs", k=32, m=8, rto=None, beta=1.0,
                n=1000, seed=1, rng=None):
    """n samples of T_EC(M): losses over L*(k+m) chunks decide the failed
    submessages f; T = base + [f>0]*((1+beta)*rtt + T_SR(f*k))."""
    if rto is None:
        rto = 3.0 * rtt
    _check(M, t_inj, rtt, p, rto)
    _check_code(code, k, m)
    rng = rng or random.Random(seed)
    if M == 0:
        return [0.0] * n
    L = -(-M // k)
    width = k + m
    base = _ec_base(M, k, m, t_inj)
    O = rto + t_inj
    out = []
    for _ in range(n):
        lost = {}
        for c in _drop_positions(rng, L * width, p):
            lost.setdefault(c // width, []).append(c % width)
        f = 0
        for pos in lost.values():
            if code == "rs":
                f += len(pos) > m
            else:
                seen = set()
                for j in pos:
                    g = j % m if j < k else j - k
                    if g in seen:
                        f += 1
                        break
                    seen.add(g)
        t = base
        if f:
            t += (1.0 + beta) * rtt + _sr_sample(rng, f * k, t_inj, O, p, rtt)
        out.append(t)
    return out


def summarize(samples, quantiles=(0.99, 0.999)):
    """Dict: n, mean, stderr, and empirical quantiles (nearest rank)."""
    n = len(samples)
    mean = sum(samples) / n
    var = sum((x - mean) ** 2 for x in samples) / (n - 1) if n > 1 else 0.0
    out = {"n": n, "mean": mean, "stderr": math.sqrt(var / n)}
    srt = sorted(samples)
    for q in quantiles:
        out[_qkey(q)] = srt[min(n - 1, max(0, math.ceil(q * n) - 1))]
    return out


# ---------------------------------------------------------------------------
# Self-test
# ---------------------------------------------------------------------------

def _sim_until(draw, rel_se=0.01, n0=2000, nmax=16000):
    """Sample in batches until the stderr of the mean is below rel_se of it
    (so a 5% tolerance is >= 5 standard errors) or nmax samples.
    Returns (summary, samples)."""
    xs = draw(n0)
    while True:
        s = summarize(xs)
        if s["mean"] == 0 or s["stderr"] <= rel_se * s["mean"] \
                or len(xs) >= nmax:
            return s, xs
        xs += draw(len(xs))


def _quantile_ok(xs, Q, q, tol):
    """Q is the smallest T with F(T) >= q: so the empirical F(Q) must not be
    clearly below q, nor the empirical F(Q-) clearly above (4 sigma)."""
    n = len(xs)
    slack = 4 * math.sqrt(q * (1 - q) / n) + 1.0 / n
    le = sum(1 for x in xs if x <= Q + tol) / n
    lt = sum(1 for x in xs if x < Q - tol) / n
    return le >= q - slack and lt <= q + slack


def selftest(out=sys.stdout):
    """Analytic vs brute force vs Monte Carlo; returns the failure count."""
    fails = 0
    t0 = time.time()

    def line(ok, msg):
        nonlocal fails
        fails += 0 if ok else 1
        print("%s %s" % ("ok  " if ok else "FAIL", msg), file=out)

    # 1. The fast CDF sum against plain enumeration of jump points.
    for (M, t, O, p) in [(7, 1.0, 2.5, 0.3), (40, 1e-6, 37.3e-6, 0.05),
                         (25, 3e-6, 3e-6, 0.2), (60, 2e-6, 301e-6, 1e-2),
                         (1, 1.0, 10.0, 0.5)]:
        fast = _sr_max_mean(M, t, O, p)
        ref, cdf = _sr_max_mean_brute(M, t, O, p)
        ok = abs(fast - ref) <= 1e-9 * ref
        for q in (0.5, 0.99, 0.999):
            want = next((s for s, F in cdf if F >= q), cdf[-1][0])
            got = _sr_max_quantile(q, M, t, O, p)
            ok = ok and abs(got - want) <= 1e-9 * want
        line(ok, "exact vs brute force  M=%d t=%g O=%g p=%g: E[max] %.9g vs "
             "%.9g" % (M, t, O, p, fast, ref))

    # 2. Speed at M = 1e5 (paper regimes: 400 Gbit/s, 4 KiB, 1 ms RTT).
    ti = inject_time(4096, 400)
    t1 = time.time()
    e = sr_stats(100000, ti, 1e-3, 1e-2, 3e-3)
    dt = time.time() - t1
    line(dt < 0.5, "M=1e5 p=1e-2 SR mean+p99+p99.9 in %.3f s (mean %.6f s)"
         % (dt, e["mean"]))

    # 3. Analytic means against simulation, paper regimes at 10 Gbit/s, 4 KiB
    #    chunks; SR quantiles against the empirical CDF of the same samples.
    ti = inject_time(4096, 10)
    seed = 1
    print("%-4s %-13s %5s %7s %6s %12s %12s %7s %s" % (
        "", "scheme", "M", "p", "rtt_us", "model_us", "sim_us", "ratio",
        "quantiles"), file=out)

    def compare(name, M, p, rtt, model, sim, quant=None):
        nonlocal seed
        seed += 1
        rng = random.Random(seed)
        ev = model()
        s, xs = _sim_until(lambda n: sim(n, rng))
        ratio = s["mean"] / ev
        ok = abs(ratio - 1) <= 0.05
        qtxt = ""
        if quant:
            qs = {q: quant(q) for q in (0.99, 0.999)}
            qok = all(_quantile_ok(xs, Q, q, 1e-3 * ti)
                      for q, Q in qs.items())
            ok = ok and qok
            qtxt = "p99 %.1f p99.9 %.1f %s" % (
                qs[0.99] * 1e6, qs[0.999] * 1e6, "ok" if qok else "BAD")
        line(ok, "%-13s %5d %7.0e %6.0f %12.3f %12.3f %7.4f %s" % (
            name, M, p, rtt * 1e6, ev * 1e6, s["mean"] * 1e6, ratio, qtxt))

    for M in (32, 256, 2048):                 # 128 KiB, 1 MiB, 8 MiB
        for rtt in (100e-6, 1e-3):
            for p in (1e-5, 1e-4, 1e-3, 1e-2):
                for name, rto in (("sr_rto", 3 * rtt), ("sr_nack", rtt)):
                    compare(name, M, p, rtt,
                            lambda: sr_expected(M, ti, rtt, p, rto),
                            lambda n, r: sr_simulate(M, ti, rtt, p, rto, n,
                                                     rng=r),
                            lambda q: sr_quantile(q, M, ti, rtt, p, rto))
                for code in ("rs", "xor"):
                    compare("ec_%s" % code, M, p, rtt,
                            lambda: ec_expected(M, ti, rtt, p, code, 32, 8),
                            lambda n, r: ec_simulate(M, ti, rtt, p, code, 32,
                                                     8, n=n, rng=r))

    # 4. (32, 8) rarely falls back at p <= 1e-2, which tests little of the
    #    fallback terms: thin codes and higher p make fallback common.
    for M in (256, 2048):
        for code, k, m, p in (("rs", 32, 2, 1e-2), ("rs", 32, 8, 0.1),
                              ("xor", 32, 8, 3e-2), ("xor", 16, 1, 1e-2)):
            st = ec_stats(M, ti, 1e-3, p, code, k, m)
            compare("ec_%s(%d,%d)" % (code, k, m), M, p, 1e-3,
                    lambda: st["mean_exact"],
                    lambda n, r: ec_simulate(M, ti, 1e-3, p, code, k, m,
                                             n=n, rng=r))
            print("     P_fallback %.3f E[failures] %.2f; paper-formula mean "
                  "%.3f us (%.4f of exact, not checked)" % (
                      st["p_fallback"], st["e_failures"],
                      st["mean_paper"] * 1e6,
                      st["mean_paper"] / st["mean_exact"]), file=out)

    print("%d failure(s), %.1f s" % (fails, time.time() - t0), file=out)
    return fails


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def _num(kind, lo=None, lo_open=False, hi=None, hi_open=False):
    def parse(text):
        try:
            x = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                "%r is not %s" % (text, "an integer" if kind is int
                                  else "a number"))
        if (lo is not None and (x <= lo if lo_open else x < lo)) or \
                (hi is not None and (x >= hi if hi_open else x > hi)) or \
                x != x:
            rng = "%s%s, %s%s" % ("(" if lo_open else "[",
                                  "-inf" if lo is None else lo,
                                  "inf" if hi is None else hi,
                                  ")" if hi_open or hi is None else "]")
            raise argparse.ArgumentTypeError(
                "%s is out of range; accepted: %s" % (text, rng))
        return x
    return parse


def _parser():
    ap = argparse.ArgumentParser(
        description="SDR-RDMA message completion time model (paper sec. "
        "4.2): SR and EC means/percentiles, optional Monte Carlo check.")
    ap.add_argument("--chunks", type=_num(int, 1), metavar="M",
                    help="message size in chunks (integer >= 1)")
    ap.add_argument("--chunk-bytes", type=_num(int, 1), metavar="B",
                    help="chunk size in bytes (integer >= 1)")
    ap.add_argument("--gbps", type=_num(float, 0, True), metavar="G",
                    help="link bandwidth in Gbit/s (> 0)")
    ap.add_argument("--rtt-us", type=_num(float, 0), metavar="R",
                    help="round-trip time in microseconds (>= 0)")
    ap.add_argument("--drop", type=_num(float, 0, False, 1, True),
                    metavar="P", help="i.i.d. chunk drop probability [0, 1)")
    ap.add_argument("--rto-rtts", type=_num(float, 0), default=3.0,
                    metavar="X", help="SR timeout in RTTs (default 3; the "
                    "'sr_nack' row always uses 1)")
    ap.add_argument("--ec", choices=("rs", "xor"),
                    help="also model EC with this code")
    ap.add_argument("--k", type=_num(int, 1), default=32, metavar="k",
                    help="EC data chunks per submessage (default 32)")
    ap.add_argument("--m", type=_num(int, 0), default=8, metavar="m",
                    help="EC parity chunks per submessage (default 8; "
                    ">= 1 for xor)")
    ap.add_argument("--beta", type=_num(float, 0), default=1.0,
                    help="EC fallback timeout FTO = inject + beta*RTT "
                    "(default 1.0)")
    ap.add_argument("--ec-variant", choices=("exact", "paper"),
                    default="exact", help="EC mean: binomial over failures "
                    "(exact, default) or the paper's E[failures] formula")
    ap.add_argument("--simulate", type=_num(int, 1), metavar="N",
                    help="also run N Monte Carlo samples per scheme")
    ap.add_argument("--seed", type=int, default=1,
                    help="random seed for --simulate (default 1)")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON object instead of a table")
    ap.add_argument("--selftest", action="store_true",
                    help="check the model against brute force and "
                    "simulation; exit 1 on any mismatch")
    return ap


def main(argv=None):
    ap = _parser()
    a = ap.parse_args(argv)
    if a.selftest:
        return 1 if selftest() else 0
    missing = [f for f, v in (("--chunks", a.chunks),
                              ("--chunk-bytes", a.chunk_bytes),
                              ("--gbps", a.gbps), ("--rtt-us", a.rtt_us),
                              ("--drop", a.drop)) if v is None]
    if missing:
        ap.error("the following arguments are required: %s (or --selftest)"
                 % ", ".join(missing))
    if a.ec == "xor" and a.m < 1:
        ap.error("argument --m: xor needs m >= 1")

    M, rtt, p = a.chunks, a.rtt_us * 1e-6, a.drop
    ti = inject_time(a.chunk_bytes, a.gbps)
    rng = random.Random(a.seed)
    rows = []
    for name, rto in (("sr_rto", a.rto_rtts * rtt), ("sr_nack", rtt)):
        r = {"scheme": name, "rto_s": rto}
        r.update(sr_stats(M, ti, rtt, p, rto))
        if a.simulate:
            r["sim"] = summarize(sr_simulate(M, ti, rtt, p, rto, a.simulate,
                                             rng=rng))
        rows.append(r)
    if a.ec:
        r = {"scheme": "ec_%s" % a.ec, "k": a.k, "m": a.m,
             "variant": a.ec_variant}
        r.update(ec_stats(M, ti, rtt, p, a.ec, a.k, a.m, a.rto_rtts * rtt,
                          a.beta, a.ec_variant))
        if a.simulate:
            r["sim"] = summarize(ec_simulate(M, ti, rtt, p, a.ec, a.k, a.m,
                                             a.rto_rtts * rtt, a.beta,
                                             a.simulate, rng=rng))
        rows.append(r)
    for r in rows:
        if "sim" in r:
            r["sim"]["ratio"] = r["sim"]["mean"] / r["mean"]

    params = {"chunks": M, "chunk_bytes": a.chunk_bytes, "gbps": a.gbps,
              "t_inj_s": ti, "rtt_s": rtt, "drop": p, "rto_rtts": a.rto_rtts,
              "beta": a.beta, "seed": a.seed}
    if a.json:
        print(json.dumps({"params": params, "results": rows}, indent=1))
        return 0
    print("M=%d chunks x %d B (%.6g MiB), %g Gbit/s, t_inj=%.4g us, "
          "rtt=%g us, p=%g" % (M, a.chunk_bytes, M * a.chunk_bytes / 2**20,
                               a.gbps, ti * 1e6, a.rtt_us, p))
    us = 1e6
    head = "%-12s %14s %14s %14s" % ("scheme", "mean_us", "p99_us", "p99.9_us")
    if a.simulate:
        head += " %14s %14s %14s %8s" % ("sim_mean_us", "sim_p99_us",
                                         "sim_p99.9_us", "ratio")
    print(head)
    for r in rows:
        label = r["scheme"]
        if label.startswith("sr"):
            label += "(%g)" % (r["rto_s"] / rtt if rtt else 0)
            line = "%-12s %14.3f %14.3f %14.3f" % (
                label, r["mean"] * us, r["p99"] * us, r["p999"] * us)
        else:
            label += "(%d,%d)" % (r["k"], r["m"])
            line = "%-12s %14.3f %14s %14s" % (label, r["mean"] * us, "-", "-")
        if "sim" in r:
            s = r["sim"]
            line += " %14.3f %14.3f %14.3f %8.4f" % (
                s["mean"] * us, s["p99"] * us, s["p999"] * us, s["ratio"])
        print(line)
    for r in rows:
        if not r["scheme"].startswith("sr"):
            print("%s: P_EC=%.6g P_fallback=%.6g E[failures]=%.6g "
                  "mean exact=%.3f us paper=%.3f us (%s used above)" % (
                      r["scheme"], r["p_ec"], r["p_fallback"],
                      r["e_failures"], r["mean_exact"] * us,
                      r["mean_paper"] * us, r["variant"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
