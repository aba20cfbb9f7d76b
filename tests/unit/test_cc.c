/* SPDX-License-Identifier: MIT */
/* The congestion controllers alone, on synthetic feedback in simulated
 * time (no clock, no sleeps: every run is the same):
 * - DCQCN: the first CNP cuts by the initial alpha, later CNPs at most
 *   once per monitor period by alpha/2; alpha decays without CNPs; the
 *   rate climbs back by fast recovery, additive and hyper increase as the
 *   timer and the byte counter step (values checked after known
 *   sequences, and against a tick-by-tick model of NVIDIA's machine on
 *   random ones); never above the line rate nor below the minimum rate;
 * - Swift: ~ai per RTT below target; above it a decrease of at most
 *   max_mdf, once per RTT; the target (found by bisection) is the paper's
 *   formula, growing with hops and shrinking as the window grows; below
 *   one packet the pacing rate, through cc_flow_gate; RTOs; the endpoint
 *   window;
 * - CUBIC: slow start; beta 0.7 once per RTT; K and W(t) on a long-RTT
 *   path; the Reno-friendly region on a datacenter one; fast convergence;
 *   RTO; CE;
 * - a packet-level bottleneck shared by 2 and 4 flows of each (ECN marks
 *   and CNPs for DCQCN, queueing delay for Swift, drop-tail for CUBIC)
 *   for a simulated second: the link stays busy and the shares converge
 *   (Jain's index). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/cc/cc.h"
#include "dataplane/dp_test.h"

#define US 1000ull
#define MS 1000000ull
#define SEC 1000000000ull
#define MTU 4096u

static const struct cc_env env100 = {
	.mtu = MTU, .line_bps = 100000000000ull, .base_rtt_ns = 10 * US, .max_window = 4u << 20,
};

/* rate_bps() truncates the controller's rate to whole bits/s */
static bool rate_is(uint64_t got, double want)
{
	return fabs((double)got - want) <= 1.0;
}

static struct cc_ack ack_at(uint64_t now, uint64_t rtt, uint64_t remote, uint32_t pkts, uint8_t hops)
{
	return (struct cc_ack){ .now = now, .rtt_ns = rtt, .remote_ns = remote, .bytes = pkts * MTU,
		                .pkts = pkts, .hops = hops };
}

/* --- DCQCN ----------------------------------------------------------------- */

/* NVIDIA's documented defaults, restated so a change to them shows here */
#define D_LINE 100e9
#define D_G (5.0 / 1024.0)
#define D_A0 (1023.0 / 1024.0)
#define D_AI 5e6
#define D_HAI 50e6
#define D_F 1u
#define D_BYTES 32767u
#define D_TIMER (300 * US)
#define D_REDUCE (4 * US)
#define D_ALPHA (1 * US)
#define D_MIN 1e6

/* The reaction point as documented, tick by tick: alpha every 1 us, the
 * reduce check every 4 us, the increase timer, the byte counter. At one
 * instant the cut comes first (it restarts the timer). */
struct ref_dcqcn {
	double rc, rt, alpha;
	uint64_t alpha_tick, reduce_tick, inc_tick;
	uint32_t bytes, t, bc;
	bool active, cnp_a, cnp_r;
};

static void ref_event(struct ref_dcqcn *r, uint32_t *ctr)
{
	uint32_t lo = r->t < r->bc ? r->t : r->bc, hi = r->t < r->bc ? r->bc : r->t;

	if (lo > D_F)
		r->rt += D_HAI;
	else if (hi >= D_F)
		r->rt += D_AI;
	if (r->rt > D_LINE)
		r->rt = D_LINE;
	r->rc = (r->rc + r->rt) / 2;
	(*ctr)++;
}

static void ref_cut(struct ref_dcqcn *r, uint64_t t)
{
	double cut = r->rc * r->alpha / 2, most = r->rc * 0.5;

	if (r->t || r->bc)
		r->rt = r->rc;
	r->rc -= cut < most ? cut : most;
	if (r->rc < D_MIN)
		r->rc = D_MIN;
	r->t = r->bc = r->bytes = 0;
	r->inc_tick = t + D_TIMER;
}

static void ref_advance(struct ref_dcqcn *r, uint64_t now)
{
	if (!r->active)
		return;
	for (;;) {
		uint64_t next = r->reduce_tick;

		if (r->alpha_tick < next)
			next = r->alpha_tick;
		if (r->inc_tick < next)
			next = r->inc_tick;
		if (next > now)
			return;
		if (r->reduce_tick == next) {
			if (r->cnp_r)
				ref_cut(r, next);
			r->cnp_r = false;
			r->reduce_tick += D_REDUCE;
		} else if (r->alpha_tick == next) {
			r->alpha = r->cnp_a ? (1 - D_G) * r->alpha + D_G : (1 - D_G) * r->alpha;
			r->cnp_a = false;
			r->alpha_tick += D_ALPHA;
		} else {
			ref_event(r, &r->t);
			r->inc_tick += D_TIMER;
		}
	}
}

static void ref_cnp(struct ref_dcqcn *r, uint64_t now)
{
	if (!r->active) {
		r->active = true;
		r->alpha = D_A0;
		r->alpha_tick = now + D_ALPHA;
		r->reduce_tick = now + D_REDUCE;
		ref_cut(r, now);
		return;
	}
	ref_advance(r, now);
	r->cnp_a = r->cnp_r = true;
}

static void ref_sent(struct ref_dcqcn *r, uint64_t now, uint32_t bytes)
{
	if (!r->active)
		return;
	ref_advance(r, now);
	r->bytes += bytes;
	while (r->bytes >= D_BYTES) {
		r->bytes -= D_BYTES;
		ref_event(r, &r->bc);
	}
}

static void test_dcqcn_defaults(void)
{
	struct cc_flow f;
	const struct cc_ops *o = &cc_dcqcn_ops;

	cc_flow_init(&f, o, &env100, 0);
	CHECK(o->id == UROCE_CC_DCQCN && !strcmp(o->name, "dcqcn"), "names");
	CHECK(o->flags == CC_ECN, "DCQCN wants ECT data and CNPs, one state per QP: flags %u", o->flags);
	CHECK(o->state_bytes > 0 && o->state_bytes <= CC_STATE_MAX, "state %u bytes", o->state_bytes);
	CHECK(o->on_cnp && o->on_sent && o->rate_bps, "hooks");
	CHECK(o->window(f.st) == UINT64_MAX, "rate-based: no window");
	CHECK(o->rate_bps(f.st, 0) == 100000000000ull, "starts at line rate");
	/* no CNP: bytes, time, losses and ACKs leave it at line rate */
	for (unsigned i = 0; i < 1000; i++) {
		struct cc_ack a = ack_at(i * US, 10 * US, 0, 1, 1);

		o->on_sent(f.st, i * US, 1u << 20);
		o->on_ack(f.st, &a);
		o->on_loss(f.st, i * US, i & 1);
	}
	CHECK(o->rate_bps(f.st, SEC) == 100000000000ull, "no CNP, no limit: %llu",
	      (unsigned long long)o->rate_bps(f.st, SEC));
}

/* the first cut, one per monitor period, and alpha's decay */
static void test_dcqcn_cuts(void)
{
	struct cc_flow f;
	void *s = f.st;
	const struct cc_ops *o = &cc_dcqcn_ops;
	const uint64_t t0 = 2 * SEC;
	double rc0, rc1, rc, rc2, a, a3;

	cc_flow_init(&f, o, &env100, 0);
	o->on_cnp(s, t0);
	/* the first CNP: rate x (1 - 1023/2048), at once */
	rc0 = D_LINE * 1025.0 / 2048.0;
	CHECK(o->rate_bps(s, t0) == 50048828125ull, "first cut: %llu", (unsigned long long)o->rate_bps(s, t0));

	/* a CNP 1.5 us later: the cut waits for the monitor boundary at t0 +
	 * 4 us and uses alpha as the updates at +1 (decay), +2 (the CNP's
	 * raise) and +3 us (decay) left it */
	o->on_cnp(s, t0 + 1500);
	a3 = ((D_A0 * (1 - D_G)) * (1 - D_G) + D_G) * (1 - D_G);
	rc1 = rc0 * (1 - a3 / 2);
	CHECK(o->rate_bps(s, t0 + 4 * US - 1) == (uint64_t)rc0, "no cut before the boundary");
	CHECK(rate_is(o->rate_bps(s, t0 + 4 * US), rc1), "second cut: %llu, want %.0f",
	      (unsigned long long)o->rate_bps(s, t0 + 4 * US), rc1);
	CHECK(rc1 < 0.26 * D_LINE && rc1 > 0.25 * D_LINE, "two cuts near alpha 1 halve twice: %.0f", rc1);

	/* 1 ms without CNPs: the timer steps three times (fast recovery, then
	 * additive increase, capped by a target still at line rate), alpha
	 * decays 1001 times; a CNP then cuts by the decayed alpha */
	o->on_cnp(s, t0 + 1004 * US + 500);
	rc = D_LINE - (D_LINE - rc1) / 8;
	CHECK(rate_is(o->rate_bps(s, t0 + 1007 * US), rc), "recovered to %llu, want %.0f",
	      (unsigned long long)o->rate_bps(s, t0 + 1007 * US), rc);
	a = a3 * pow(1 - D_G, 1001);
	a = ((1 - D_G) * a + D_G) * (1 - D_G) * (1 - D_G);
	rc2 = rc * (1 - a / 2);
	CHECK(rate_is(o->rate_bps(s, t0 + 1008 * US - 1), rc), "cut only at the boundary");
	CHECK(rate_is(o->rate_bps(s, t0 + 1008 * US), rc2), "decayed cut: %llu, want %.0f",
	      (unsigned long long)o->rate_bps(s, t0 + 1008 * US), rc2);
	CHECK(rc2 > 0.99 * rc, "alpha decayed to %.4f: a cut of %.2f%%", a, 100 * (1 - rc2 / rc));

	/* any number of CNPs within one period: one cut, at its end */
	{
		uint64_t base = t0 + 1008 * US, before = o->rate_bps(s, base);
		unsigned changes = 0;
		uint64_t last = before;

		for (uint64_t t = base + 100; t < base + 4 * US; t += 500)
			o->on_cnp(s, t);
		for (uint64_t t = base + 1; t <= base + 8 * US; t += 50) {
			uint64_t r = o->rate_bps(s, t);

			changes += r != last;
			if (r != last)
				CHECK(t >= base + 4 * US && t < base + 4 * US + 50, "cut at %llu ns into the period",
				      (unsigned long long)(t - base));
			last = r;
		}
		CHECK(changes == 1 && last < before, "%u rate changes for 8 CNPs in one period", changes);
	}
}

/* fast recovery, additive and hyper increase by the timer and the bytes */
static void test_dcqcn_increase(void)
{
	struct cc_flow f;
	void *s = f.st;
	const struct cc_ops *o = &cc_dcqcn_ops;
	const uint64_t t0 = SEC, c = t0 + 4 * US;
	double rc, rt, a;

	cc_flow_init(&f, o, &env100, 0);
	o->on_cnp(s, t0);
	rc = D_LINE * 1025.0 / 2048.0;
	rt = D_LINE;
	/* a byte event (fast recovery), then a cut: the rate rose since the
	 * last cut, so the target comes down to the current rate */
	o->on_sent(s, t0 + 1 * US, D_BYTES);
	rc = (rc + rt) / 2;
	CHECK(rate_is(o->rate_bps(s, t0 + 1 * US), rc), "byte fast recovery");
	o->on_cnp(s, t0 + 2 * US);
	a = (1 - D_G) * (D_A0 * (1 - D_G) * (1 - D_G)) + D_G;
	rt = rc;
	rc = rc * (1 - a / 2);
	CHECK(rate_is(o->rate_bps(s, c), rc), "clamped cut: %llu want %.0f",
	      (unsigned long long)o->rate_bps(s, c), rc);

	/* BC 0 -> 1: fast recovery (T = BC = 0 < F) */
	o->on_sent(s, c + 1 * US, D_BYTES - 100);
	CHECK(rate_is(o->rate_bps(s, c + 1 * US), rc), "no event below byte_reset");
	o->on_sent(s, c + 1 * US, 100);
	rc = (rc + rt) / 2;
	CHECK(rate_is(o->rate_bps(s, c + 1 * US), rc), "fast recovery: %llu want %.0f",
	      (unsigned long long)o->rate_bps(s, c + 1 * US), rc);
	/* BC 1 -> 2: additive (max(T, BC) = F) */
	o->on_sent(s, c + 2 * US, D_BYTES);
	rt += D_AI;
	rc = (rc + rt) / 2;
	CHECK(rate_is(o->rate_bps(s, c + 2 * US), rc), "additive by bytes");
	/* the timer at +300 us (T 0 -> 1) and +600 us (T 1 -> 2): additive,
	 * since min(T, BC) has not passed F */
	CHECK(rate_is(o->rate_bps(s, c + 300 * US - 1), rc), "nothing before the timer");
	rt += D_AI;
	rc = (rc + rt) / 2;
	CHECK(rate_is(o->rate_bps(s, c + 300 * US), rc), "additive by the timer");
	rt += D_AI;
	rc = (rc + rt) / 2;
	CHECK(rate_is(o->rate_bps(s, c + 600 * US), rc), "additive by the timer again");
	/* now T = BC = 2 > F: hyper increase, by bytes and by the timer */
	o->on_sent(s, c + 601 * US, D_BYTES);
	rt += D_HAI;
	rc = (rc + rt) / 2;
	CHECK(rate_is(o->rate_bps(s, c + 601 * US), rc), "hyper by bytes: %llu want %.0f",
	      (unsigned long long)o->rate_bps(s, c + 601 * US), rc);
	rt += D_HAI;
	rc = (rc + rt) / 2;
	CHECK(rate_is(o->rate_bps(s, c + 900 * US), rc), "hyper by the timer");
	/* idle for seconds: hyper steps take the target to the line rate and
	 * the rate converges on it, never above */
	for (uint64_t t = c + MS; t < c + 10 * SEC; t += 37 * MS)
		CHECK(o->rate_bps(s, t) <= 100000000000ull, "above line rate at %llu", (unsigned long long)t);
	CHECK(o->rate_bps(s, c + 10 * SEC) == 100000000000ull, "back at line rate: %llu",
	      (unsigned long long)o->rate_bps(s, c + 10 * SEC));
}

/* a CNP every microsecond: alpha goes to 1, the rate to the minimum and no lower */
static void test_dcqcn_floor(void)
{
	struct cc_flow f;
	const struct cc_ops *o = &cc_dcqcn_ops;
	uint64_t r = 0;

	cc_flow_init(&f, o, &env100, 0);
	for (uint64_t t = 0; t < 2 * MS; t += US) {
		o->on_cnp(f.st, t);
		r = o->rate_bps(f.st, t);
		CHECK(r >= 1000000, "below the minimum rate: %llu", (unsigned long long)r);
	}
	CHECK(r == 1000000, "pinned at rpg_min_rate: %llu", (unsigned long long)r);
}

/* random CNP storms, calm spells, sends and long idles: the lazy, closed
 * form controller against the tick-by-tick model */
static void test_dcqcn_vs_model(void)
{
	struct test_rng rng = { 11 };
	struct cc_flow f;
	struct ref_dcqcn r = { .rc = D_LINE, .rt = D_LINE, .alpha = D_A0 };
	const struct cc_ops *o = &cc_dcqcn_ops;
	uint64_t t = 0, worst_at = 0;
	double worst = 0;
	unsigned queries = 0, cuts = 0;

	cc_flow_init(&f, o, &env100, 0);
	for (unsigned phase = 0; phase < 60; phase++) {
		unsigned cnp_pct = (unsigned[]){ 0, 2, 30, 90 }[test_rng_below(&rng, 4)];
		uint64_t end = t + (test_rng_below(&rng, 8) + 1) * MS;

		while (t < end) {
			unsigned what = (unsigned)test_rng_below(&rng, 100);

			t += test_rng_below(&rng, 100) == 0 ? test_rng_below(&rng, 2 * MS) : test_rng_below(&rng, 3000);
			if (what < cnp_pct) {
				o->on_cnp(f.st, t);
				ref_cnp(&r, t);
				cuts++;
			} else if (what < 80) {
				uint32_t b = (uint32_t)test_rng_below(&rng, 3 * MTU);

				o->on_sent(f.st, t, b);
				ref_sent(&r, t, b);
			} else {
				double got = (double)o->rate_bps(f.st, t), err;

				ref_advance(&r, t);
				err = fabs(got - floor(r.rc)) / r.rc;
				if (err > worst) {
					worst = err;
					worst_at = t;
				}
				CHECK(got <= D_LINE && got >= D_MIN, "rate %.0f out of [min, line]", got);
				queries++;
			}
		}
	}
	CHECK(worst < 1e-9, "lazy rate off the model by %.3g (at %llu ns)", worst, (unsigned long long)worst_at);
	CHECK(queries > 1000 && cuts > 1000, "%u queries, %u CNPs", queries, cuts);
	printf("dcqcn: %u queries over %.1f simulated ms against the tick model: worst relative error %.2g\n",
	       queries, (double)t / MS, worst);
}

/* --- Swift ----------------------------------------------------------------- */

#define S_BASE 10000.0
#define S_H 1000.0
#define S_RANGE (5 * S_BASE)
#define S_BDP 30.517578125 /* 100 Gb/s x 10 us / 4096 B */

/* the paper's target for a fabric window of c packets */
static double swift_target_of(double c, unsigned hops)
{
	double alpha = S_RANGE / (1 / sqrt(0.1) - 1 / sqrt(100.0)), beta = -alpha / sqrt(100.0);
	double fs = alpha / sqrt(c) + beta;

	fs = fs < 0 ? 0 : fs > S_RANGE ? S_RANGE : fs;
	return S_BASE + hops * S_H + fs;
}

static double cwnd_of(const struct cc_flow *f)
{
	return (double)f->ops->window(f->st) / MTU;
}

/* the smallest integer fabric delay a copy of f does not grow on: the
 * target (below it one ACK adds ai / cwnd >= 1/1024 packet, 4 bytes) */
static uint64_t swift_find_target(const struct cc_flow *f, uint8_t hops, uint64_t now)
{
	uint64_t lo = 1, hi = 10 * MS;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		struct cc_flow g = *f;
		struct cc_ack a = ack_at(now, mid, 0, 1, hops);
		uint64_t w = g.ops->window(g.st);

		g.ops->on_ack(g.st, &a);
		if (g.ops->window(g.st) <= w)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void test_swift(void)
{
	const struct cc_ops *o = &cc_swift_ops;
	struct cc_flow f, g;
	uint64_t t = SEC, w;
	double c, want, fct;

	cc_flow_init(&f, o, &env100, 0);
	CHECK(o->id == UROCE_CC_SWIFT && o->flags == 0 && !o->on_cnp, "one window per QP, no CNPs");
	CHECK(o->state_bytes > 0 && o->state_bytes <= CC_STATE_MAX, "state %u bytes", o->state_bytes);
	CHECK(o->window(f.st) == 125000, "starts at one BDP: %llu", (unsigned long long)o->window(f.st));
	CHECK(o->rate_bps(f.st, 0) == 0, "a window of a packet or more is not paced");

	/* below target: ten RTTs of ACKs add about ten packets */
	g = f;
	c = cwnd_of(&g);
	for (unsigned rtt = 0; rtt < 10; rtt++) {
		unsigned n = (unsigned)ceil(cwnd_of(&g));

		for (unsigned i = 0; i < n; i++, t += 10 * US / n) {
			struct cc_ack a = ack_at(t, 10 * US, 0, 1, 1);

			o->on_ack(g.st, &a);
		}
	}
	CHECK(cwnd_of(&g) - c > 9.5 && cwnd_of(&g) - c < 10.5, "10 RTTs below target: +%.3f packets",
	      cwnd_of(&g) - c);

	/* above target: cut by beta x overshoot / delay, once per RTT */
	g = f;
	{
		struct cc_ack a = ack_at(t, 14 * US, 0, 1, 0);

		o->on_ack(g.st, &a);
	}
	fct = 1 - 0.8 * (14000 - swift_target_of(S_BDP, 0)) / 14000;
	want = S_BDP * fct;
	CHECK(fabs(cwnd_of(&g) - want) * MTU <= 1, "delay 14 us: %.4f packets, want %.4f (x%.4f)", cwnd_of(&g),
	      want, fct);
	for (uint64_t dt = 1 * US; dt < 10 * US; dt += 2 * US) {
		struct cc_ack a = ack_at(t + dt, 14 * US, 0, 1, 0);

		o->on_ack(g.st, &a);
	}
	CHECK(fabs(cwnd_of(&g) - want) * MTU <= 1, "no second cut within the RTT: %.4f", cwnd_of(&g));
	{
		/* srtt moved 1/8 of the way to 14 us per sample: 12.4 us by now */
		struct cc_ack a = ack_at(t + 20 * US, 14 * US, 0, 1, 0);

		o->on_ack(g.st, &a);
	}
	CHECK(cwnd_of(&g) < want * 0.95, "a cut in the next RTT: %.4f", cwnd_of(&g));
	g = f;
	{
		struct cc_ack a = ack_at(t, 1 * MS, 0, 1, 0);

		o->on_ack(g.st, &a);
	}
	CHECK(o->window(g.st) == 62500, "a huge delay cuts by max_mdf only: %llu", (unsigned long long)o->window(g.st));

	/* the target: + h per hop, and flow scaling that shrinks as the
	 * window grows (windows made exact by halving: losses a RTT apart) */
	{
		double cw[5];
		struct cc_flow st[5];
		uint64_t tg[5];

		for (unsigned k = 0; k < 4; k++) {
			st[k] = f;
			for (unsigned i = 0; i < 3 * k; i++)
				o->on_loss(st[k].st, t + i * 20 * US, false);
			cw[k] = S_BDP * pow(0.5, 3 * k);
		}
		st[4] = f;
		for (unsigned i = 0; i < 20000; i++) {
			struct cc_ack a = ack_at(t + i * 100, 9 * US, 0, 1, 0);

			o->on_ack(st[4].st, &a);
		}
		cw[4] = cwnd_of(&st[4]);
		CHECK(cw[4] > 100, "grown past fs_max_cwnd: %.1f", cw[4]);
		for (unsigned k = 0; k < 5; k++) {
			tg[k] = swift_find_target(&st[k], 0, t + 100 * MS);
			want = swift_target_of(cw[k], 0);
			CHECK(fabs((double)tg[k] - want) <= 1, "cwnd %.4f: target %llu ns, the paper's %.1f", cw[k],
			      (unsigned long long)tg[k], want);
			for (uint8_t hops = 1; hops <= 4; hops += 3) {
				uint64_t th = swift_find_target(&st[k], hops, t + 100 * MS);

				CHECK(th - tg[k] >= hops * 1000u - 1 && th - tg[k] <= hops * 1000u + 1,
				      "%u hops add %llu ns", hops, (unsigned long long)(th - tg[k]));
			}
		}
		CHECK(tg[3] > tg[2] && tg[2] > tg[1] && tg[1] > tg[0] && tg[0] > tg[4], "a larger window, a lower target");
		CHECK(tg[3] == 60000 && tg[4] == 10000, "fs_range at the smallest window, 0 past fs_max: %llu %llu",
		      (unsigned long long)tg[3], (unsigned long long)tg[4]);
		printf("swift: targets %llu %llu %llu %llu %llu ns at windows %.3f %.3f %.3f %.4f %.1f\n",
		       (unsigned long long)tg[0], (unsigned long long)tg[1], (unsigned long long)tg[2],
		       (unsigned long long)tg[3], (unsigned long long)tg[4], cw[0], cw[1], cw[2], cw[3], cw[4]);

		/* below one packet: one packet every srtt / cwnd through the gate */
		g = f;
		for (unsigned i = 0; i < 6; i++)
			o->on_loss(g.st, t + i * 20 * US, false);
		want = (MTU + CC_PKT_OVERHEAD) * 8.0 * S_BDP / 64 * 1e9 / S_BASE;
		CHECK(rate_is(o->rate_bps(g.st, t), want), "cwnd 0.4768: %llu b/s, want %.0f",
		      (unsigned long long)o->rate_bps(g.st, t), want);
		t += MS;
		CHECK(cc_flow_gate(&g, t, MTU) == 0, "nothing in flight: a packet may go");
		cc_flow_sent(&g, t, MTU);
		CHECK(cc_flow_gate(&g, t + 1, MTU) == UINT64_MAX, "one packet in flight fills a window below one");
		cc_flow_gone(&g, MTU);
		w = cc_flow_gate(&g, t + 1, MTU);
		CHECK(w == t + 20972, "paced: next at +%lld ns, want +20972 (10 us / 0.4768)", (long long)(w - t));
		CHECK(cc_flow_gate(&g, t + 20972, MTU) == 0, "and then it may");
	}

	/* RTOs: max_mdf once per RTT, the minimum after five in a row, an
	 * ACK between them starts the count again. One timeout finds every
	 * packet in flight lost, a call each: they count once. */
	g = f;
	o->on_loss(g.st, t, true);
	CHECK(o->window(g.st) == 62500, "first RTO halves: %llu", (unsigned long long)o->window(g.st));
	for (unsigned i = 0; i < 32; i++)
		o->on_loss(g.st, t + US, true);
	CHECK(o->window(g.st) == 62500, "not twice in an RTT, and the 32 packets of one RTO are one RTO");
	for (unsigned i = 1; i < 4; i++)
		o->on_loss(g.st, t + i * 20 * US, true);
	CHECK(o->window(g.st) == 7812, "four in a row: 1/16: %llu", (unsigned long long)o->window(g.st));
	o->on_loss(g.st, t + 80 * US, true);
	CHECK(o->window(g.st) == 4, "five in a row: min_cwnd 0.001: %llu bytes", (unsigned long long)o->window(g.st));
	want = (MTU + CC_PKT_OVERHEAD) * 8.0 * 0.001 * 1e9 / S_BASE;
	CHECK(rate_is(o->rate_bps(g.st, t), want), "paced at 0.001 packets per RTT: %llu b/s, want %.0f",
	      (unsigned long long)o->rate_bps(g.st, t), want);
	{
		/* after a blackout every packet in flight was resent: their ACKs
		 * carry no RTT sample (Karn), yet the window must grow */
		struct cc_flow h = g;
		struct cc_ack a = ack_at(t + 200 * US, 0, 0, 1, 0);

		o->on_ack(h.st, &a);
		CHECK(cwnd_of(&h) > 1.0, "an ACK of a resent packet grows the minimum window: %.4f", cwnd_of(&h));
		CHECK(o->rate_bps(h.st, t) == 0, "a window of a packet or more is not paced");
	}
	g = f;
	for (unsigned i = 0; i < 4; i++)
		o->on_loss(g.st, t + i * 20 * US, true);
	{
		struct cc_ack a = ack_at(t + 80 * US, 10 * US, 0, 1, 0);

		o->on_ack(g.st, &a);
	}
	c = cwnd_of(&g);
	o->on_loss(g.st, t + 100 * US, true);
	CHECK(fabs(cwnd_of(&g) - c / 2) * MTU <= 1, "an ACK resets the RTO count: %.4f, want %.4f", cwnd_of(&g), c / 2);

	/* the endpoint window: the receiver, whose hold was 5 us, held the
	 * packet 95 us, past its 5 + 50 us target, while the fabric was fast */
	g = f;
	{
		struct cc_ack a = ack_at(t, 10 * US, 5 * US, 1, 1);

		o->on_ack(g.st, &a);
	}
	c = cwnd_of(&g);
	{
		struct cc_ack a = ack_at(t + US, 100 * US, 95 * US, 1, 1);

		o->on_ack(g.st, &a);
	}
	want = c * (1 - 0.8 * 40.0 / 95.0);
	CHECK(fabs(cwnd_of(&g) - want) * MTU <= 1, "the endpoint window gates: %.4f, want %.4f", cwnd_of(&g), want);

	/* a receiver that always holds 2 ms (a slow host, a VM) is slow, not
	 * congested: its floor moves the target, a rise above it still cuts */
	g = f;
	c = cwnd_of(&g);
	for (unsigned i = 0; i < 100; i++) {
		struct cc_ack a = ack_at(t + i * 20 * US, (2009 + i % 7) * US, (2000 + i % 7) * US, 1, 0);

		o->on_ack(g.st, &a);
	}
	CHECK(cwnd_of(&g) >= c, "a steady 2 ms hold: no cut (%.3f from %.3f)", cwnd_of(&g), c);
	c = cwnd_of(&g);
	{
		struct cc_ack a = ack_at(t + 3 * MS, 4009 * US, 4000 * US, 1, 0);

		o->on_ack(g.st, &a);
	}
	CHECK(cwnd_of(&g) < c * 0.7, "the hold doubles: a cut (%.3f from %.3f)", cwnd_of(&g), c);
	/* the floor is a windowed minimum: a receiver that slowed for good is
	 * judged by its new floor a window or two later */
	for (unsigned i = 0; i < 300; i++) {
		struct cc_ack a = ack_at(t + 4 * MS + i * 10 * MS, 4009 * US, 4000 * US, 1, 0);

		o->on_ack(g.st, &a);
	}
	c = cwnd_of(&g);
	{
		struct cc_ack a = ack_at(t + 3100 * MS, 4029 * US, 4020 * US, 1, 0);

		o->on_ack(g.st, &a);
	}
	CHECK(cwnd_of(&g) >= c, "3 s at 4 ms: the floor followed (%.3f from %.3f)", cwnd_of(&g), c);
}

/* --- CUBIC ----------------------------------------------------------------- */

#define C_C 0.4
#define C_BETA 0.7

/* ACKs of one packet each, paced as a window's worth per RTT, until end */
static void cubic_run(struct cc_flow *f, uint64_t *t, uint64_t end, uint64_t rtt)
{
	while (*t < end) {
		struct cc_ack a = ack_at(*t, rtt, 0, 1, 1);
		double c = cwnd_of(f);

		f->ops->on_ack(f->st, &a);
		*t += (uint64_t)((double)rtt / (c > 1 ? c : 1));
	}
}

static bool win_is(const struct cc_flow *f, double pkts)
{
	double w = (double)f->ops->window(f->st);

	return fabs(w - pkts * MTU) <= 1;
}

static void test_cubic(void)
{
	const struct cc_ops *o = &cc_cubic_ops;
	const struct cc_env dc = { .mtu = MTU, .line_bps = 100000000000ull, .base_rtt_ns = 10 * US, .max_window = 64u << 20 };
	const struct cc_env wan = { .mtu = MTU, .line_bps = 100000000000ull, .base_rtt_ns = 100 * MS, .max_window = 1u << 30 };
	struct cc_flow f, g;
	uint64_t t = SEC, t0;
	double k, c, wmax;

	cc_flow_init(&f, o, &dc, 0);
	CHECK(o->id == UROCE_CC_CUBIC && o->flags == CC_PER_PATH, "one state per path");
	CHECK(!o->rate_bps && !o->on_cnp, "window only");
	CHECK(o->state_bytes > 0 && o->state_bytes <= CC_STATE_MAX, "state %u bytes", o->state_bytes);
	CHECK(o->window(f.st) == 10 * MTU, "initial window 10 packets: %llu", (unsigned long long)o->window(f.st));
	{
		struct cc_ack a = ack_at(t, 10 * US, 0, 10, 1);

		o->on_ack(f.st, &a);
	}
	CHECK(o->window(f.st) == 20 * MTU, "slow start doubles per RTT: %llu", (unsigned long long)o->window(f.st));
	{
		struct cc_ack a = ack_at(t, 10 * US, 0, 80, 1);

		o->on_ack(f.st, &a);
	}
	CHECK(o->window(f.st) == 100 * MTU, "100 packets");

	/* a loss: beta 0.7, once per RTT */
	g = f;
	o->on_loss(g.st, t, false);
	CHECK(win_is(&g, 70), "loss: x0.7: %llu", (unsigned long long)o->window(g.st));
	o->on_loss(g.st, t + 5 * US, false);
	CHECK(win_is(&g, 70), "a second loss in the same RTT is the same event");
	o->on_loss(g.st, t + 11 * US, false);
	CHECK(win_is(&g, 49), "the next RTT's loss: %llu", (unsigned long long)o->window(g.st));
	/* CE counts as a loss (RFC 9438), also once per RTT */
	g = f;
	{
		struct cc_ack a = ack_at(t, 10 * US, 0, 1, 1);

		a.ce = true;
		o->on_ack(g.st, &a);
		CHECK(win_is(&g, 70), "CE: x0.7: %llu", (unsigned long long)o->window(g.st));
		a.now += 2 * US;
		o->on_ack(g.st, &a);
		CHECK(win_is(&g, 70), "one CE cut per RTT");
	}

	/* datacenter RTTs: the cubic term barely moves in microseconds, the
	 * Reno-friendly estimate leads: 3 (1 - 0.7) / (1 + 0.7) = 0.529
	 * packets per RTT up to the window of the loss, then 1 */
	g = f;
	o->on_loss(g.st, t, false);
	t0 = t;
	cubic_run(&g, &t, t0 + 50 * 10 * US, 10 * US);
	c = cwnd_of(&g);
	CHECK(c > 70 + 0.529 * 50 - 1.5 && c < 70 + 0.529 * 50 + 1.5, "50 RTTs after a loss: %.2f packets", c);
	cubic_run(&g, &t, t0 + 90 * 10 * US, 10 * US);
	c = cwnd_of(&g);
	CHECK(c > 100 + 33 * 1.0 - 3 && c < 100 + 33 * 1.0 + 2, "90 RTTs: past the old window at 1 per RTT: %.2f", c);

	/* RTO: one packet, slow start to 0.7 x, then a new epoch from there */
	g = f;
	o->on_loss(g.st, t, true);
	CHECK(o->window(g.st) == MTU, "RTO: one packet: %llu", (unsigned long long)o->window(g.st));
	for (unsigned i = 0; i < 7; i++) {
		struct cc_ack a = ack_at(t + (i + 1) * 10 * US, 10 * US, 0, 1u << i, 1);

		o->on_ack(g.st, &a);
	}
	CHECK(win_is(&g, 70), "slow start stops at ssthresh 70: %.3f", cwnd_of(&g));
	/* one timeout that finds many packets lost, then a backed-off second
	 * one during the slow start: ssthresh is cut once, from the window
	 * before the first (70), not from the one-packet window down to 2 */
	g = f;
	for (unsigned i = 0; i < 50; i++)
		o->on_loss(g.st, t, true);
	CHECK(o->window(g.st) == MTU, "RTO of 50 packets: one packet: %llu", (unsigned long long)o->window(g.st));
	{
		struct cc_ack a = ack_at(t + 10 * US, 10 * US, 0, 7, 1);

		o->on_ack(g.st, &a);
	}
	CHECK(win_is(&g, 8), "slow start after it: %.3f", cwnd_of(&g));
	o->on_loss(g.st, t + 2 * MS, true);
	o->on_loss(g.st, t + 2 * MS, true);
	CHECK(o->window(g.st) == MTU, "the second timeout: one packet: %llu", (unsigned long long)o->window(g.st));
	for (unsigned i = 0; i < 7; i++) {
		struct cc_ack a = ack_at(t + 2 * MS + (i + 1) * 10 * US, 10 * US, 0, 1u << i, 1);

		o->on_ack(g.st, &a);
	}
	CHECK(win_is(&g, 70), "ssthresh still 70 after two timeouts of many packets: %.3f", cwnd_of(&g));
	/* once in congestion avoidance again, the next timeout cuts from there */
	{
		struct cc_ack a = ack_at(t + 3 * MS, 10 * US, 0, 1, 1);

		o->on_ack(g.st, &a);
	}
	c = cwnd_of(&g);
	o->on_loss(g.st, t + 4 * MS, true);
	for (unsigned i = 0; i < 6; i++) {
		struct cc_ack a = ack_at(t + 4 * MS + (i + 1) * 10 * US, 10 * US, 0, 1u << i, 1);

		o->on_ack(g.st, &a);
	}
	CHECK(fabs(cwnd_of(&g) - c * C_BETA) * MTU <= 1, "a later timeout: ssthresh %.3f, want %.3f", cwnd_of(&g),
	      c * C_BETA);

	/* a long-RTT path, where the cubic term leads: from W_max 1000 the
	 * loss leaves 700, K = cbrt(1000 x 0.3 / 0.4) = 9.09 s, and the
	 * window tracks W(t) = 0.4 (t - K)^3 + 1000, aiming one RTT ahead and
	 * lagging less than one RTT's growth behind */
	cc_flow_init(&f, o, &wan, 0);
	t = SEC;
	{
		struct cc_ack a = ack_at(t, 100 * MS, 0, 990, 1);

		o->on_ack(f.st, &a);
	}
	CHECK(o->window(f.st) == 1000ull * MTU, "1000 packets");
	o->on_loss(f.st, t, false);
	t0 = t;
	wmax = 1000;
	k = cbrt(wmax * (1 - C_BETA) / C_C);
	for (double frac = 0.25; frac <= 2.01; frac += 0.25) {
		double w, ahead, x = frac * k, y;

		cubic_run(&f, &t, t0 + (uint64_t)(x * 1e9), 100 * MS);
		x = (double)(t - t0) / 1e9;
		y = x + 0.1;
		w = C_C * (x - k) * (x - k) * (x - k) + wmax;
		ahead = C_C * (y - k) * (y - k) * (y - k) + wmax;
		c = cwnd_of(&f);
		CHECK(c >= w - (ahead - w) - 1 && c <= ahead + 1, "t = %.2f K: cwnd %.2f, W(t) %.2f, W(t + RTT) %.2f",
		      frac, c, w, ahead);
		if (frac == 1.0)
			CHECK(fabs(c - wmax) < 2, "the plateau at K = %.3f s: %.2f", k, c);
	}
	printf("cubic: K = %.4f s; W(2K) %.1f packets, window %.1f\n", k, C_C * k * k * k + wmax, cwnd_of(&f));

	/* fast convergence: a loss below the last W_max lowers W_max to
	 * cwnd x (1 + 0.7) / 2, and the new plateau is there */
	cc_flow_init(&f, o, &wan, 0);
	t = SEC;
	{
		struct cc_ack a = ack_at(t, 100 * MS, 0, 990, 1);

		o->on_ack(f.st, &a);
	}
	o->on_loss(f.st, t, false);
	cubic_run(&f, &t, t + 300 * MS, 100 * MS);
	c = cwnd_of(&f);
	o->on_loss(f.st, t, false);
	CHECK(fabs(cwnd_of(&f) - c * C_BETA) * MTU <= 1, "second loss: %.3f, want %.3f", cwnd_of(&f), c * C_BETA);
	wmax = c * (1 + C_BETA) / 2;
	k = cbrt((wmax - c * C_BETA) / C_C);
	t0 = t;
	cubic_run(&f, &t, t0 + (uint64_t)(k * 1e9), 100 * MS);
	CHECK(fabs(cwnd_of(&f) - wmax) < 2, "plateau at the lowered W_max %.2f: %.2f", wmax, cwnd_of(&f));
}

/* --- many flows on one bottleneck --------------------------------------------- */

#define SIM_BPS 100000000000ull
/* ns a full packet, headers included, takes at 100 Gb/s (333.92, rounded up) */
#define SIM_SER (((MTU + CC_PKT_OVERHEAD) * 8ull * SEC + SIM_BPS - 1) / SIM_BPS)
#define SIM_PROP (2 * US)            /* each way, host to switch and switch to host */
#define SIM_BASE (2 * SIM_SER + 4 * SIM_PROP)
#define SIM_DUR SEC
#define SIM_WARM (200 * MS)
#define SIM_SLOT (10 * MS)
#define SIM_START_GAP (5 * MS)       /* flow i starts at i x this: the later ones must win a share */
#define SIM_NP_GAP (4 * US)          /* the receiver's (NP's) CNPs per flow at most this often */
/* each ACK's way back takes up to this much longer (the receiver's poll
 * loop): without it identical packets on identical paths lock drop-tail
 * into a fixed phase where one flow takes every loss (Floyd and
 * Jacobson's phase effects), an artefact of a jitter-free simulation */
#define SIM_JITTER (1 * US)
#define SIM_MAX_FLOWS 4

enum ev_type { EV_TRY, EV_ARRIVE, EV_DEPART, EV_ACK, EV_CNP, EV_LOSS };

struct ev {
	uint64_t t, seq, sent;
	uint32_t flow;
	uint16_t type;
	uint16_t ce;
};

struct pkt {
	uint64_t sent;
	uint32_t flow;
	uint32_t ce;
};

struct sim_cfg {
	const struct cc_ops *ops;
	unsigned n;
	uint64_t buffer;        /* drop-tail limit (bytes) */
	uint64_t kmin, kmax;    /* RED marking between these queue lengths (bytes); kmax 0: none */
	double pmax;
};

struct sim_flow {
	struct cc_flow f;
	uint64_t nic_free, try_at, last_cnp;
	uint64_t bytes;         /* delivered after the warm-up */
	bool cnp_sent;
};

struct sim {
	const struct sim_cfg *cfg;
	struct sim_flow fl[SIM_MAX_FLOWS];
	struct ev *heap;
	size_t nh, caph;
	uint64_t seq;
	struct pkt *q;
	size_t qcap, qhead, qn;
	bool busy;
	struct test_rng rng;
	uint64_t slot[(SIM_DUR - SIM_WARM) / SIM_SLOT];
	uint64_t drops, marks, cnps, qmax;
};

static bool ev_before(const struct ev *a, const struct ev *b)
{
	return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static void push(struct sim *S, uint64_t t, uint16_t type, uint32_t flow, uint64_t sent, bool ce)
{
	size_t i;

	if (S->nh == S->caph) {
		S->caph = S->caph ? 2 * S->caph : 1024;
		S->heap = realloc(S->heap, S->caph * sizeof(*S->heap));
		REQUIRE(S->heap, "out of memory");
	}
	i = S->nh++;
	S->heap[i] = (struct ev){ .t = t, .seq = S->seq++, .sent = sent, .flow = flow, .type = type, .ce = ce };
	while (i && ev_before(&S->heap[i], &S->heap[(i - 1) / 2])) {
		struct ev x = S->heap[i];

		S->heap[i] = S->heap[(i - 1) / 2];
		S->heap[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static struct ev pop(struct sim *S)
{
	struct ev top = S->heap[0];
	size_t i = 0;

	S->heap[0] = S->heap[--S->nh];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < S->nh && ev_before(&S->heap[l], &S->heap[m]))
			m = l;
		if (l + 1 < S->nh && ev_before(&S->heap[l + 1], &S->heap[m]))
			m = l + 1;
		if (m == i)
			return top;
		struct ev x = S->heap[i];

		S->heap[i] = S->heap[m];
		S->heap[m] = x;
		i = m;
	}
}

static void sched_try(struct sim *S, unsigned i, uint64_t t)
{
	if (t < S->fl[i].try_at) {
		S->fl[i].try_at = t;
		push(S, t, EV_TRY, i, 0, false);
	}
}

static void sim_try(struct sim *S, unsigned i, uint64_t now)
{
	struct sim_flow *fl = &S->fl[i];
	uint64_t g;

	if (fl->nic_free > now) {
		sched_try(S, i, fl->nic_free);
		return;
	}
	g = cc_flow_gate(&fl->f, now, MTU);
	if (g == UINT64_MAX)
		return; /* an ACK or a loss will call again */
	if (g) {
		sched_try(S, i, g);
		return;
	}
	cc_flow_sent(&fl->f, now, MTU);
	fl->nic_free = now + SIM_SER;
	push(S, now + SIM_SER + SIM_PROP, EV_ARRIVE, i, now, false);
	sched_try(S, i, fl->nic_free);
}

static void sim_arrive(struct sim *S, const struct ev *e)
{
	uint64_t qbytes = (uint64_t)S->qn * MTU;
	bool ce = false;

	if (qbytes + MTU > S->cfg->buffer) {
		S->drops++;
		/* the gap is seen at the receiver and NACKed: about a path later */
		push(S, e->t + 3 * SIM_PROP + SIM_SER, EV_LOSS, e->flow, e->sent, false);
		return;
	}
	if (S->cfg->kmax && qbytes > S->cfg->kmin) {
		double p = qbytes >= S->cfg->kmax ? 1.0
		                                  : S->cfg->pmax * (double)(qbytes - S->cfg->kmin) /
		                                            (double)(S->cfg->kmax - S->cfg->kmin);

		ce = (double)(test_rng_next(&S->rng) >> 11) / 9007199254740992.0 < p;
		S->marks += ce;
	}
	REQUIRE(S->qn < S->qcap, "queue ring too small");
	S->q[(S->qhead + S->qn++) % S->qcap] = (struct pkt){ .sent = e->sent, .flow = e->flow, .ce = ce };
	if (S->qn * MTU > S->qmax)
		S->qmax = S->qn * MTU;
	if (!S->busy) {
		S->busy = true;
		push(S, e->t + SIM_SER, EV_DEPART, 0, 0, false);
	}
}

static void sim_depart(struct sim *S, uint64_t now)
{
	struct pkt p = S->q[S->qhead];
	struct sim_flow *fl = &S->fl[p.flow];
	uint64_t at_rx = now + SIM_PROP;

	S->qhead = (S->qhead + 1) % S->qcap;
	S->qn--;
	if (now >= SIM_WARM && now < SIM_DUR) {
		fl->bytes += MTU;
		S->slot[(now - SIM_WARM) / SIM_SLOT] += MTU;
	}
	/* the receiver ACKs at once; a CE mark makes a CNP unless one went
	 * to that flow within SIM_NP_GAP */
	push(S, at_rx + 2 * SIM_PROP + test_rng_below(&S->rng, SIM_JITTER), EV_ACK, p.flow, p.sent, false);
	if (p.ce && (!fl->cnp_sent || at_rx - fl->last_cnp >= SIM_NP_GAP)) {
		fl->cnp_sent = true;
		fl->last_cnp = at_rx;
		S->cnps++;
		push(S, at_rx + 2 * SIM_PROP, EV_CNP, p.flow, 0, false);
	}
	if (S->qn)
		push(S, now + SIM_SER, EV_DEPART, 0, 0, false);
	else
		S->busy = false;
}

static double jain(const uint64_t *x, unsigned n)
{
	double s = 0, s2 = 0;

	for (unsigned i = 0; i < n; i++) {
		s += (double)x[i];
		s2 += (double)x[i] * (double)x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 0;
}

static void sim_run(const struct sim_cfg *cfg)
{
	struct sim *S = calloc(1, sizeof(*S));
	const struct cc_env env = { .mtu = MTU, .line_bps = SIM_BPS, .base_rtt_ns = SIM_BASE, .max_window = 4u << 20 };
	const uint64_t slot_cap = SIM_SLOT / SIM_SER * MTU; /* bytes the link can carry in a slot */
	uint64_t shares[SIM_MAX_FLOWS], total = 0, min_slot = UINT64_MAX;
	double util, fair;

	REQUIRE(S && cfg->n <= SIM_MAX_FLOWS, "sim setup");
	S->cfg = cfg;
	S->rng.s = 7 + cfg->n;
	S->qcap = cfg->buffer / MTU + 2;
	S->q = calloc(S->qcap, sizeof(*S->q));
	REQUIRE(S->q, "out of memory");
	for (unsigned i = 0; i < cfg->n; i++) {
		uint64_t start = i * SIM_START_GAP;

		cc_flow_init(&S->fl[i].f, cfg->ops, &env, start);
		S->fl[i].try_at = UINT64_MAX;
		sched_try(S, i, start);
	}
	while (S->nh) {
		struct ev e = pop(S);
		struct sim_flow *fl = &S->fl[e.flow];

		if (e.t >= SIM_DUR)
			break;
		switch (e.type) {
		case EV_TRY:
			if (e.t == fl->try_at)
				fl->try_at = UINT64_MAX;
			sim_try(S, e.flow, e.t);
			break;
		case EV_ARRIVE:
			sim_arrive(S, &e);
			break;
		case EV_DEPART:
			sim_depart(S, e.t);
			break;
		case EV_ACK: {
			struct cc_ack a = ack_at(e.t, e.t - e.sent, 0, 1, 1);

			cc_flow_gone(&fl->f, MTU);
			a.inflight = fl->f.inflight;
			cfg->ops->on_ack(fl->f.st, &a);
			sim_try(S, e.flow, e.t);
			break;
		}
		case EV_CNP:
			if (cfg->ops->on_cnp)
				cfg->ops->on_cnp(fl->f.st, e.t);
			break;
		case EV_LOSS:
			cc_flow_gone(&fl->f, MTU);
			cfg->ops->on_loss(fl->f.st, e.t, false);
			sim_try(S, e.flow, e.t);
			break;
		}
	}
	for (unsigned i = 0; i < cfg->n; i++) {
		shares[i] = S->fl[i].bytes;
		total += shares[i];
	}
	for (size_t k = 0; k < sizeof(S->slot) / sizeof(S->slot[0]); k++)
		if (S->slot[k] < min_slot)
			min_slot = S->slot[k];
	util = (double)total / (double)(slot_cap * (sizeof(S->slot) / sizeof(S->slot[0])));
	fair = jain(shares, cfg->n);
	printf("sim %-5s N=%u: utilization %.3f (worst 10 ms %.3f), Jain %.4f, shares", cfg->ops->name, cfg->n, util,
	       (double)min_slot / (double)slot_cap, fair);
	for (unsigned i = 0; i < cfg->n; i++)
		printf(" %.3f", total ? (double)shares[i] / (double)total : 0.0);
	printf("; max queue %llu KB, drops %llu, marks %llu, CNPs %llu\n", (unsigned long long)S->qmax / 1024,
	       (unsigned long long)S->drops, (unsigned long long)S->marks, (unsigned long long)S->cnps);
	CHECK(util > 0.8, "%s N=%u: link utilization %.3f after warm-up", cfg->ops->name, cfg->n, util);
	CHECK((double)min_slot > 0.5 * (double)slot_cap, "%s N=%u: a 10 ms slot at %.3f: collapse", cfg->ops->name,
	      cfg->n, (double)min_slot / (double)slot_cap);
	CHECK(fair > 0.9, "%s N=%u: Jain's index %.4f", cfg->ops->name, cfg->n, fair);
	free(S->q);
	free(S->heap);
	free(S);
}

static void test_sim(void)
{
	for (unsigned n = 2; n <= 4; n += 2) {
		/* DCQCN: a deep lossless buffer and RED marking (the DCQCN
		 * paper's Kmin 5 KB, Kmax 200 KB, Pmax 1%) */
		const struct sim_cfg dcqcn = { &cc_dcqcn_ops, n, 16u << 20, 5 * 1024, 200 * 1024, 0.01 };
		/* Swift: the same deep buffer, no marks: delay alone */
		const struct sim_cfg swift = { &cc_swift_ops, n, 16u << 20, 0, 0, 0 };
		/* CUBIC: drop-tail at about one BDP */
		const struct sim_cfg cubic = { &cc_cubic_ops, n, 128 * 1024, 0, 0, 0 };

		sim_run(&dcqcn);
		sim_run(&swift);
		sim_run(&cubic);
	}
}

int main(void)
{
	test_dcqcn_defaults();
	test_dcqcn_cuts();
	test_dcqcn_increase();
	test_dcqcn_floor();
	test_dcqcn_vs_model();
	test_swift();
	test_cubic();
	test_sim();
	return test_done("test_cc");
}
