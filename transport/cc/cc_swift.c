/* SPDX-License-Identifier: MIT */
/* Swift (Kumar et al., SIGCOMM 2020, Algorithm 1): AIMD on measured delay
 * with two windows. The fabric window compares the RTT less the
 * receiver's hold time with a target that grows with the hops and shrinks
 * as the window grows (flow scaling: many small flows share a queue that
 * a few large ones would keep short); the endpoint window compares the
 * hold time with its own target. The smaller window gates; below one
 * packet the flow is paced, one packet every rtt / cwnd.
 *
 * Ours: the endpoint target is the allowance on top of the hold the
 * receiver shows at its quietest (a windowed minimum). A receiver whose
 * every answer waits on a slow poll loop or a virtual CPU (milliseconds
 * in a TCG guest) is slow, not congested; against a fixed 50 us its
 * window sat at the minimum, one packet per RTO, for the whole run. */
#include "transport/cc/cc.h"

#define SWIFT_AI 1.0             /* additive increment: packets per RTT below target */
#define SWIFT_BETA 0.8           /* decrease gain on the delay's overshoot of the target */
#define SWIFT_MAX_MDF 0.5        /* the most one decrease takes (and a loss takes) */
#define SWIFT_MIN_CWND 0.001     /* packets: one packet every 1000 RTTs under heavy incast */
#define SWIFT_FS_MIN_CWND 0.1    /* flow scaling adds all of fs_range at this window ... */
#define SWIFT_FS_MAX_CWND 100.0  /* ... and nothing from this one */
#define SWIFT_FS_RANGE_X 5u      /* fs_range = 5 x base RTT (ours: the paper leaves it to the fabric) */
#define SWIFT_HOP_NS 1000u       /* h: target added per switch (ours: ~one MTU's queue at 40G) */
/* how far the receiver's hold time (ACK coalescing, its poll loop) may
 * rise above its floor before the endpoint window shrinks (ours) */
#define SWIFT_ENDPOINT_TARGET_NS 50000u
/* the floor: the least hold seen over the last one to two of these */
#define SWIFT_HOLD_WINDOW_NS 1000000000ull
#define SWIFT_RETX_RESET_THRESHOLD 5u /* RTOs in a row that drop the windows to the minimum */
#define SWIFT_SRTT_SHIFT 3u      /* srtt gain 1/8, RFC 6298's */

struct swift {
	double fcwnd, ecwnd;      /* fabric and endpoint windows (packets) */
	double max_cwnd;          /* env->max_window / mtu */
	double fs_alpha, fs_beta; /* flow-scaling curve (ns): alpha / sqrt(cwnd) + beta */
	double fs_range;          /* its ceiling (ns) */
	uint64_t base_ns;         /* the base target: env->base_rtt_ns */
	uint64_t srtt;            /* smoothed RTT (ns): base_ns until a sample */
	uint64_t f_dec, e_dec;    /* last decrease of each window (UINT64_MAX: none yet) */
	uint64_t hold_min[2];     /* least hold of the last window and of this one (ns) */
	uint64_t hold_since;      /* when this window began */
	uint64_t rto_at;          /* the last RTO counted in retx */
	uint32_t mtu;
	uint32_t retx;            /* RTOs in a row */
};
_Static_assert(sizeof(struct swift) <= CC_STATE_MAX, "swift state");

/* 1/sqrt(x) for x > 0 without libm: a bit-level first guess, then Newton
 * steps (each doubles the correct digits; four reach double precision) */
static double inv_sqrt(double x)
{
	union {
		double d;
		uint64_t u;
	} v = { .d = x };
	double y;

	v.u = 0x5fe6eb50c7b537a9ull - (v.u >> 1);
	y = v.d;
	for (int i = 0; i < 4; i++)
		y *= 1.5 - 0.5 * x * y * y;
	return y;
}

/* the fabric target: base + hops x h + flow scaling clamped to [0, fs_range] */
static double swift_target(const struct swift *w, uint8_t hops)
{
	double fs = w->fs_alpha * inv_sqrt(w->fcwnd) + w->fs_beta;

	if (fs < 0)
		fs = 0;
	if (fs > w->fs_range)
		fs = w->fs_range;
	return (double)w->base_ns + (double)hops * SWIFT_HOP_NS + fs;
}

static bool can_decrease(const struct swift *w, uint64_t last, uint64_t now)
{
	return last == UINT64_MAX || now - last >= w->srtt;
}

static double clamp_cwnd(const struct swift *w, double c)
{
	if (c < SWIFT_MIN_CWND)
		c = SWIFT_MIN_CWND;
	if (c > w->max_cwnd)
		c = w->max_cwnd;
	return c;
}

/* ai per RTT: ai/cwnd per packet, or ai per packet below one packet,
 * where an RTT carries fewer than one ACK */
static void swift_grow(struct swift *w, double *cwnd, uint32_t pkts)
{
	double c = *cwnd;

	*cwnd = clamp_cwnd(w, c + (c >= 1.0 ? SWIFT_AI * pkts / c : SWIFT_AI * pkts));
}

/* Algorithm 1 for one window: ai per RTT below target (ai/cwnd per packet,
 * or ai per packet below one packet, where an RTT carries fewer than one
 * ACK), else a decrease in proportion to the overshoot, once per RTT. */
static void swift_aimd(struct swift *w, double *cwnd, uint64_t *last, double delay, double target,
                       uint32_t pkts, uint64_t now)
{
	double prev = *cwnd, c = prev;

	if (delay < target) {
		c += c >= 1.0 ? SWIFT_AI * pkts / c : SWIFT_AI * pkts;
	} else if (can_decrease(w, *last, now)) {
		double f = 1.0 - SWIFT_BETA * (delay - target) / delay;

		c *= f > 1.0 - SWIFT_MAX_MDF ? f : 1.0 - SWIFT_MAX_MDF;
	}
	c = clamp_cwnd(w, c);
	/* strictly below: the paper's "<=" would also restart the wait on an
	 * ACK that changed nothing (a window at its cap), and a queue seen only
	 * then could never be answered */
	if (c < prev)
		*last = now;
	*cwnd = c;
}

static void swift_init(void *s, const struct cc_env *env, uint64_t now)
{
	struct swift *w = s;
	double bdp, smin = inv_sqrt(SWIFT_FS_MIN_CWND), smax = inv_sqrt(SWIFT_FS_MAX_CWND);

	*w = (struct swift){ 0 };
	w->mtu = env->mtu ? env->mtu : 1;
	w->max_cwnd = (double)env->max_window / w->mtu;
	if (w->max_cwnd < 1.0)
		w->max_cwnd = 1.0;
	w->base_ns = env->base_rtt_ns;
	w->srtt = env->base_rtt_ns;
	/* the paper's curve: fs_range at fs_min_cwnd, 0 at fs_max_cwnd */
	w->fs_range = (double)SWIFT_FS_RANGE_X * (double)env->base_rtt_ns;
	w->fs_alpha = w->fs_range / (smin - smax);
	w->fs_beta = -w->fs_alpha * smax;
	/* start at one BDP: a lone flow fills its link in the first RTT */
	bdp = (double)env->line_bps * (double)env->base_rtt_ns / 8e9 / w->mtu;
	w->fcwnd = w->ecwnd = clamp_cwnd(w, bdp > 1.0 ? bdp : 1.0);
	w->f_dec = w->e_dec = UINT64_MAX;
	w->hold_min[0] = w->hold_min[1] = UINT64_MAX;
	w->hold_since = now;
}

/* the endpoint target: the allowance over the receiver's floor. Zero
 * holds are not samples: a SACK that answers no packet carries none. */
static double swift_endpoint_target(struct swift *w, uint64_t remote, uint64_t now)
{
	uint64_t floor;

	if (now - w->hold_since >= SWIFT_HOLD_WINDOW_NS) {
		w->hold_min[0] = w->hold_min[1];
		w->hold_min[1] = UINT64_MAX;
		w->hold_since = now;
	}
	if (remote && remote < w->hold_min[1])
		w->hold_min[1] = remote;
	floor = w->hold_min[0] < w->hold_min[1] ? w->hold_min[0] : w->hold_min[1];
	return (double)SWIFT_ENDPOINT_TARGET_NS + (floor == UINT64_MAX ? 0.0 : (double)floor);
}

static void swift_on_ack(void *s, const struct cc_ack *a)
{
	struct swift *w = s;
	uint64_t remote = a->remote_ns < a->rtt_ns ? a->remote_ns : a->rtt_ns;
	double target;

	if (!a->pkts)
		return;
	w->retx = 0;
	if (!a->rtt_ns) {
		/* only resent packets acknowledged (Karn: no sample): the path
		 * delivers again but its delay is unknown, so grow, never cut.
		 * Waiting for a sample would keep a flow whose every packet was
		 * resent (after a blackout) at the minimum, one packet per RTO. */
		swift_grow(w, &w->fcwnd, a->pkts);
		swift_grow(w, &w->ecwnd, a->pkts);
		return;
	}
	if (a->rtt_ns >= w->srtt)
		w->srtt += (a->rtt_ns - w->srtt) >> SWIFT_SRTT_SHIFT;
	else
		w->srtt -= (w->srtt - a->rtt_ns) >> SWIFT_SRTT_SHIFT;
	target = swift_target(w, a->hops);
	swift_aimd(w, &w->fcwnd, &w->f_dec, (double)(a->rtt_ns - remote), target, a->pkts, a->now);
	swift_aimd(w, &w->ecwnd, &w->e_dec, (double)remote, swift_endpoint_target(w, remote, a->now), a->pkts,
	           a->now);
}

static void cut(struct swift *w, double *cwnd, uint64_t *last, uint64_t now)
{
	if (!can_decrease(w, *last, now))
		return;
	*cwnd = clamp_cwnd(w, *cwnd * (1.0 - SWIFT_MAX_MDF));
	*last = now;
}

/* A loss found by RACK, a NACK or a trim is the fabric's (a queue
 * overflowed): the fabric window. An RTO may be either end's, so both, and
 * after RETX_RESET_THRESHOLD of them in a row both go to the minimum. */
static void swift_on_loss(void *s, uint64_t now, bool rto)
{
	struct swift *w = s;

	if (!rto) {
		w->retx = 0;
		cut(w, &w->fcwnd, &w->f_dec, now);
		return;
	}
	/* one timeout marks every packet in flight lost, each a call here:
	 * the timeouts in a row are those at least an RTT apart (an RTO is
	 * never shorter), not the packets one of them found */
	if (w->retx && now - w->rto_at < w->srtt)
		return;
	w->rto_at = now;
	if (++w->retx >= SWIFT_RETX_RESET_THRESHOLD) {
		w->fcwnd = w->ecwnd = SWIFT_MIN_CWND;
		w->f_dec = w->e_dec = now;
		return;
	}
	cut(w, &w->fcwnd, &w->f_dec, now);
	cut(w, &w->ecwnd, &w->e_dec, now);
}

static double swift_cwnd(const struct swift *w)
{
	return w->fcwnd < w->ecwnd ? w->fcwnd : w->ecwnd;
}

/* below one packet the window is under one MTU: cc_flow_gate still lets a
 * packet out when none is in flight, and the pacer spaces them */
static uint64_t swift_window(const void *s)
{
	const struct swift *w = s;

	return (uint64_t)(swift_cwnd(w) * w->mtu);
}

static uint64_t swift_rate_bps(void *s, uint64_t now)
{
	const struct swift *w = s;
	double c = swift_cwnd(w);
	uint64_t rate;

	(void)now;
	if (c >= 1.0 || !w->srtt)
		return 0;
	/* one packet every srtt / cwnd; the pacer spaces packets by their
	 * bytes on the link, headers included */
	rate = (uint64_t)((double)(w->mtu + CC_PKT_OVERHEAD) * 8.0 * c * 1e9 / (double)w->srtt);
	return rate ? rate : 1;
}

const struct cc_ops cc_swift_ops = {
	.name = "swift",
	.id = UROCE_CC_SWIFT,
	.state_bytes = sizeof(struct swift),
	.flags = 0,
	.init = swift_init,
	.on_ack = swift_on_ack,
	.on_loss = swift_on_loss,
	.window = swift_window,
	.rate_bps = swift_rate_bps,
};
