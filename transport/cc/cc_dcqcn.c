/* SPDX-License-Identifier: MIT */
/* DCQCN's reaction point (Zhu et al., SIGCOMM 2015) as NVIDIA ConnectX
 * runs it: a rate limiter that CNPs cut by alpha/2, at most once per
 * monitor period, and that climbs back through fast recovery, additive and
 * hyper increase, stepped by a timer and by a byte counter. The NIC's
 * timers run lazily: every hook first replays, in closed form, the
 * expiries up to its now, so each hook is O(1) however long the gap. */
#include "transport/cc/cc.h"

/* NVIDIA's firmware defaults (mlxconfig RPG_* / DCE_* / DOCA "DCQCN CC
 * Parameters"); the paper's values differ where noted. */
#define DCQCN_TIME_RESET_NS 300000u    /* rpg_time_reset 300 us: a timer increase event */
#define DCQCN_BYTE_RESET 32767u        /* rpg_byte_reset: bytes sent per byte increase event */
#define DCQCN_THRESHOLD 1u             /* rpg_threshold F (the paper uses 5) */
#define DCQCN_AI_BPS 5e6               /* rpg_ai_rate 5 Mb/s */
#define DCQCN_HAI_BPS 50e6             /* rpg_hai_rate 50 Mb/s */
#define DCQCN_MIN_RATE_BPS 1e6         /* rpg_min_rate 1 Mb/s */
#define DCQCN_MIN_DEC_FAC 0.50         /* rpg_min_dec_fac 50%: one cut keeps at least half */
#define DCQCN_REDUCE_PERIOD_NS 4000u   /* rate_reduce_monitor_period 4 us: at most one cut each */
#define DCQCN_ALPHA_PERIOD_NS 1000u    /* dce_tcp_rtt 1 us: alpha's update period */
#define DCQCN_G (5.0 / 1024.0)         /* dce_tcp_g 1019: alpha = 1019/1024 alpha (+ 5/1024 after a CNP) */
#define DCQCN_ALPHA_INIT (1023.0 / 1024.0) /* initial_alpha_value 1023 (10-bit fraction) */
/* rpg_gd 11: the cut is rate x alpha >> 11 with alpha in 1/1024, i.e. rate x alpha / 2 */
#define DCQCN_CUT_DIV 2.0
/* clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1: a cut sets the target
 * to the current rate only when the rate rose (by bytes or by the timer)
 * since the last cut; back-to-back cuts keep the older, higher target. */
#define DCQCN_CLAMP_TGT_RATE 0
#define DCQCN_CLAMP_AFTER_TIME_INC 1
/* a stage counter only ever compares with F: it stops here */
#define DCQCN_STAGE_CAP 0xffffu

struct dcqcn {
	double rc, rt;          /* current and target rate (bits/s) */
	double line;            /* the ceiling: env->line_bps */
	double alpha;           /* the congestion estimate, 0..1 */
	uint64_t alpha_next;    /* the next alpha update */
	uint64_t reduce_next;   /* the next monitor boundary: a pending cut happens there */
	uint64_t inc_next;      /* the next timer increase event */
	uint32_t bytes;         /* sent since the last byte increase event */
	uint32_t t_stage;       /* T: timer events since the last cut */
	uint32_t b_stage;       /* BC: byte events since the last cut */
	bool active;            /* a CNP came: the limiter and its timers run */
	bool cnp_alpha;         /* a CNP in the current alpha period */
	bool cnp_reduce;        /* a CNP since the last cut: cut at reduce_next */
};
_Static_assert(sizeof(struct dcqcn) <= CC_STATE_MAX, "dcqcn state");

/* b^k by squaring: at most 64 steps, so an idle hour costs what 1 us does */
static double pow_k(double b, uint64_t k)
{
	double r = 1.0;

	while (k) {
		if (k & 1)
			r *= b;
		b *= b;
		k >>= 1;
	}
	return r;
}

/* k increase events that each add inc to the target (capped at line) and
 * move the current rate halfway to it. Uncapped, after n of them
 * RC = RT - inc + (RC0 - RT0 + inc) / 2^n; once RT sits at line, each
 * halves the distance to it. */
static void dcqcn_ramp(struct dcqcn *d, uint64_t k, double inc)
{
	if (!k)
		return;
	if (inc > 0 && d->rt < d->line) {
		double room = (d->line - d->rt) / inc;
		uint64_t m = room >= (double)k ? k : (uint64_t)room;

		if (m) {
			double c = d->rc - d->rt + inc;

			d->rt += (double)m * inc;
			if (d->rt > d->line)
				d->rt = d->line;
			d->rc = d->rt - inc + c * pow_k(0.5, m);
			k -= m;
		}
		if (k)
			d->rt = d->line; /* this event's step reaches the ceiling */
	}
	if (k)
		d->rc = d->rt - (d->rt - d->rc) * pow_k(0.5, k);
	if (d->rc > d->line)
		d->rc = d->line;
}

/* n events of one counter (*run; the other stays put). Each reads its
 * stage from both counters before it counts: fast recovery while both are
 * below F, hyper increase once both pass F, additive increase between. */
static void dcqcn_events(struct dcqcn *d, uint64_t n, uint32_t *run, uint32_t other)
{
	const uint32_t f = DCQCN_THRESHOLD;
	uint64_t first; /* events before the stage changes */
	double inc1, inc2;

	if (other < f) {
		first = *run < f ? f - *run : 0;
		inc1 = 0; /* fast recovery */
		inc2 = DCQCN_AI_BPS;
	} else if (other == f) {
		first = n;
		inc1 = inc2 = DCQCN_AI_BPS;
	} else {
		first = *run <= f ? f + 1 - *run : 0;
		inc1 = DCQCN_AI_BPS;
		inc2 = DCQCN_HAI_BPS;
	}
	if (first > n)
		first = n;
	dcqcn_ramp(d, first, inc1);
	dcqcn_ramp(d, n - first, inc2);
	*run = n >= DCQCN_STAGE_CAP - *run ? DCQCN_STAGE_CAP : *run + (uint32_t)n;
}

/* How many periods of a clock that next fires at *next have ended by t;
 * *next moves past them. */
static uint64_t periods_due(uint64_t *next, uint64_t t, uint64_t period)
{
	uint64_t n;

	if (t < *next)
		return 0;
	n = (t - *next) / period + 1;
	*next += n * period;
	return n;
}

/* timer increase events up to t */
static void dcqcn_timer(struct dcqcn *d, uint64_t t)
{
	uint64_t n = periods_due(&d->inc_next, t, DCQCN_TIME_RESET_NS);

	if (n)
		dcqcn_events(d, n, &d->t_stage, d->b_stage);
}

/* alpha updates up to t: the first period after a CNP raises it, every
 * other one decays it */
static void dcqcn_alpha(struct dcqcn *d, uint64_t t)
{
	uint64_t n = periods_due(&d->alpha_next, t, DCQCN_ALPHA_PERIOD_NS);

	if (!n)
		return;
	if (d->cnp_alpha) {
		d->alpha = (1.0 - DCQCN_G) * d->alpha + DCQCN_G;
		d->cnp_alpha = false;
		n--;
	}
	d->alpha *= pow_k(1.0 - DCQCN_G, n);
}

static void dcqcn_cut(struct dcqcn *d, uint64_t t)
{
	double cut = d->rc * d->alpha / DCQCN_CUT_DIV;
	double most = d->rc * (1.0 - DCQCN_MIN_DEC_FAC);
	double floor = DCQCN_MIN_RATE_BPS < d->line ? DCQCN_MIN_RATE_BPS : d->line;

	if (DCQCN_CLAMP_TGT_RATE || d->b_stage || (DCQCN_CLAMP_AFTER_TIME_INC && d->t_stage))
		d->rt = d->rc;
	d->rc -= cut < most ? cut : most;
	if (d->rc < floor)
		d->rc = floor;
	/* the climb starts over: both counters and the timer */
	d->t_stage = d->b_stage = 0;
	d->bytes = 0;
	d->inc_next = t + DCQCN_TIME_RESET_NS;
}

/* Replay the timers to now. A pending cut happens at its boundary, after
 * what expired before it and before what expired at or after it (the
 * paper's order: cut with alpha, then update alpha). */
static void dcqcn_advance(struct dcqcn *d, uint64_t now)
{
	if (!d->active)
		return;
	if (d->cnp_reduce && d->reduce_next <= now) {
		uint64_t t = d->reduce_next;

		dcqcn_timer(d, t - 1);
		dcqcn_alpha(d, t - 1);
		dcqcn_cut(d, t);
		d->cnp_reduce = false;
	}
	dcqcn_timer(d, now);
	dcqcn_alpha(d, now);
}

static void dcqcn_init(void *s, const struct cc_env *env, uint64_t now)
{
	struct dcqcn *d = s;

	(void)now;
	*d = (struct dcqcn){ 0 };
	d->line = (double)env->line_bps;
	d->rc = d->rt = d->line;
	d->alpha = DCQCN_ALPHA_INIT;
}

static void dcqcn_on_cnp(void *s, uint64_t now)
{
	struct dcqcn *d = s;

	if (!d->active) {
		/* the first CNP starts the limiter and its timers, alpha at its
		 * initial value; rate_to_set_on_first_cnp 0 = the ordinary cut */
		d->active = true;
		d->alpha = DCQCN_ALPHA_INIT;
		d->alpha_next = now + DCQCN_ALPHA_PERIOD_NS;
		d->reduce_next = now + DCQCN_REDUCE_PERIOD_NS;
		dcqcn_cut(d, now);
		return;
	}
	dcqcn_advance(d, now);
	d->cnp_alpha = true;
	if (!d->cnp_reduce) {
		d->cnp_reduce = true;
		/* the monitor's boundaries stay on the first CNP's grid */
		if (d->reduce_next <= now)
			d->reduce_next += ((now - d->reduce_next) / DCQCN_REDUCE_PERIOD_NS + 1) * DCQCN_REDUCE_PERIOD_NS;
	}
}

static void dcqcn_on_sent(void *s, uint64_t now, uint32_t bytes)
{
	struct dcqcn *d = s;
	uint64_t total;

	if (!d->active)
		return;
	dcqcn_advance(d, now);
	total = (uint64_t)d->bytes + bytes;
	d->bytes = (uint32_t)(total % DCQCN_BYTE_RESET);
	if (total >= DCQCN_BYTE_RESET)
		dcqcn_events(d, total / DCQCN_BYTE_RESET, &d->b_stage, d->t_stage);
}

static uint64_t dcqcn_window(const void *s)
{
	(void)s;
	return UINT64_MAX;
}

/* rc never exceeds line, so the floor never exceeds env->line_bps */
static uint64_t dcqcn_rate_bps(void *s, uint64_t now)
{
	struct dcqcn *d = s;

	dcqcn_advance(d, now);
	return (uint64_t)d->rc;
}

const struct cc_ops cc_dcqcn_ops = {
	.name = "dcqcn",
	.id = UROCE_CC_DCQCN,
	.state_bytes = sizeof(struct dcqcn),
	.flags = CC_ECN,
	.init = dcqcn_init,
	/* DCQCN reacts to CNPs only; a loss is the reliability layer's business */
	.on_ack = cc_ignore_ack,
	.on_loss = cc_ignore_loss,
	.on_cnp = dcqcn_on_cnp,
	.on_sent = dcqcn_on_sent,
	.window = dcqcn_window,
	.rate_bps = dcqcn_rate_bps,
};
