/* SPDX-License-Identifier: MIT */
/* CUBIC (RFC 9438), one state per path: slow start to ssthresh, then a
 * window that follows W(t) = C (t - K)^3 + W_max from the last decrease,
 * concave up to the window it last lost at and convex past it, never
 * below what Reno would reach (the Reno-friendly region, which is where a
 * datacenter's microsecond RTTs keep it). A loss or a CE mark cuts it to
 * beta x cwnd, once per RTT; an RTO to one packet, ssthresh cut once per
 * timeout (not again for each packet it finds lost, nor while the slow
 * start after it runs). */
#include "transport/cc/cc.h"

#define CUBIC_C 0.4             /* packets / s^3 (RFC 9438, UCCL's default) */
#define CUBIC_BETA 0.7          /* multiplicative decrease (RFC 9438, UCCL's default) */
/* the Reno-friendly increase per RTT that matches Reno's average rate
 * under CUBIC's beta: 3 (1 - beta) / (1 + beta) */
#define CUBIC_ALPHA (3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA))
#define CUBIC_IW 10.0           /* initial window in packets (RFC 6928) */
#define CUBIC_MIN_SSTHRESH 2.0  /* packets: RFC 9438's floor after a decrease */
#define CUBIC_LOSS_WINDOW 1.0   /* packets after an RTO (RFC 5681) */
#define CUBIC_SRTT_SHIFT 3u     /* srtt gain 1/8, RFC 6298's */

struct cubic {
	double cwnd, ssthresh;  /* packets */
	double w_max;           /* the window at the last decrease (fast convergence may lower it) */
	double k;               /* seconds from the epoch's start until W(t) reaches w_max */
	double w_est;           /* what Reno would have reached since the epoch started */
	double prior;           /* cwnd just before the last decrease */
	double max_cwnd;        /* env->max_window / mtu */
	uint64_t epoch;         /* start of the current congestion avoidance epoch */
	uint64_t t_dec;         /* the last decrease, for once per RTT */
	uint64_t srtt;          /* smoothed RTT (ns): base_rtt until a sample */
	uint32_t mtu;
	bool in_epoch;          /* epoch, k and w_est are set */
	bool after_rto;         /* the next epoch starts with K = 0 from its own window */
	bool have_dec;          /* t_dec is set */
};
_Static_assert(sizeof(struct cubic) <= CC_STATE_MAX, "cubic state");

/* cube root without libm: a bit-level first guess (exponent / 3), then
 * Newton steps, each about tripling the correct digits */
static double cube_root(double x)
{
	union {
		double d;
		uint64_t u;
	} v;
	bool neg = x < 0;
	double y;

	if (x == 0)
		return 0;
	if (neg)
		x = -x;
	v.d = x;
	v.u = v.u / 3 + 0x2a9f7893782da1ceull;
	y = v.d;
	for (int i = 0; i < 5; i++)
		y -= (y * y * y - x) / (3.0 * y * y);
	return neg ? -y : y;
}

/* W(t) with t in seconds from the epoch's start */
static double cubic_w(const struct cubic *c, double t)
{
	double d = t - c->k;

	return CUBIC_C * d * d * d + c->w_max;
}

static void start_epoch(struct cubic *c, uint64_t now)
{
	c->epoch = now;
	c->w_est = c->cwnd;
	if (c->after_rto || c->w_max < c->cwnd) {
		/* after an RTO (RFC 9438 4.8), or entering congestion avoidance
		 * above the last W_max: grow from here, convex */
		c->w_max = c->cwnd;
		c->k = 0;
	} else {
		c->k = cube_root((c->w_max - c->cwnd) / CUBIC_C);
	}
	c->after_rto = false;
	c->in_epoch = true;
}

static void cubic_init(void *s, const struct cc_env *env, uint64_t now)
{
	struct cubic *c = s;

	(void)now;
	*c = (struct cubic){ 0 };
	c->mtu = env->mtu ? env->mtu : 1;
	c->max_cwnd = (double)env->max_window / c->mtu;
	if (c->max_cwnd < 1.0)
		c->max_cwnd = 1.0;
	c->cwnd = CUBIC_IW < c->max_cwnd ? CUBIC_IW : c->max_cwnd;
	c->ssthresh = c->max_cwnd; /* no threshold until the first loss */
	c->srtt = env->base_rtt_ns;
}

/* a loss or a CE mark: cut to beta x cwnd and start a new epoch, at most
 * once per RTT (the rest of that window's losses are the same event) */
static void cubic_congestion(struct cubic *c, uint64_t now)
{
	if (c->have_dec && now - c->t_dec < c->srtt)
		return;
	c->prior = c->cwnd;
	/* fast convergence: a window lower than last time yields bandwidth */
	c->w_max = c->cwnd < c->w_max ? c->cwnd * (1.0 + CUBIC_BETA) / 2.0 : c->cwnd;
	c->ssthresh = c->cwnd * CUBIC_BETA;
	if (c->ssthresh < CUBIC_MIN_SSTHRESH)
		c->ssthresh = CUBIC_MIN_SSTHRESH;
	c->cwnd = c->ssthresh;
	c->t_dec = now;
	c->have_dec = true;
	start_epoch(c, now);
}

static void cubic_on_ack(void *s, const struct cc_ack *a)
{
	struct cubic *c = s;
	double t, target, acked = a->pkts;

	if (a->rtt_ns) {
		if (a->rtt_ns >= c->srtt)
			c->srtt += (a->rtt_ns - c->srtt) >> CUBIC_SRTT_SHIFT;
		else
			c->srtt -= (c->srtt - a->rtt_ns) >> CUBIC_SRTT_SHIFT;
	}
	if (a->ce) {
		cubic_congestion(c, a->now);
		return;
	}
	if (!a->pkts)
		return;
	if (c->cwnd < c->ssthresh) {
		c->cwnd += acked;
		if (c->cwnd > c->ssthresh)
			c->cwnd = c->ssthresh;
	} else {
		if (!c->in_epoch)
			start_epoch(c, a->now);
		t = (double)(a->now - c->epoch) / 1e9;
		/* Reno's window, at the rate that makes CUBIC as fair to it as
		 * Reno is to itself until it passes the window of the last loss */
		c->w_est += (c->w_est >= c->prior ? 1.0 : CUBIC_ALPHA) * acked / c->cwnd;
		if (cubic_w(c, t) < c->w_est) {
			c->cwnd = c->w_est;
		} else {
			/* aim at where W will be one RTT from now, no more than 1.5 x */
			target = cubic_w(c, t + (double)c->srtt / 1e9);
			if (target < c->cwnd)
				target = c->cwnd;
			if (target > 1.5 * c->cwnd)
				target = 1.5 * c->cwnd;
			c->cwnd += (target - c->cwnd) * acked / c->cwnd;
		}
	}
	if (c->cwnd > c->max_cwnd)
		c->cwnd = c->max_cwnd;
}

static void cubic_on_loss(void *s, uint64_t now, bool rto)
{
	struct cubic *c = s;

	if (!rto) {
		cubic_congestion(c, now);
		return;
	}
	/* RFC 9438 4.8: ssthresh by beta, the window to one packet, and the
	 * next epoch grows from wherever slow start leaves it. The transport
	 * reports every packet a timeout finds lost, and a timeout again
	 * (backed off) while the slow start after the last one runs: as in
	 * RFC 5681 (and Linux's loss state), ssthresh is cut once, from the
	 * window before the first. Cut again from the one-packet window it
	 * would fall to its floor of 2 packets, and from there the window
	 * climbs back at one packet per RTT (hundreds of RTTs to a BDP). */
	if (c->after_rto) {
		c->cwnd = CUBIC_LOSS_WINDOW;
		return;
	}
	c->prior = c->cwnd;
	c->ssthresh = c->cwnd * CUBIC_BETA;
	if (c->ssthresh < CUBIC_MIN_SSTHRESH)
		c->ssthresh = CUBIC_MIN_SSTHRESH;
	c->cwnd = CUBIC_LOSS_WINDOW;
	c->in_epoch = false;
	c->after_rto = true;
	c->t_dec = now;
	c->have_dec = true;
}

static uint64_t cubic_window(const void *s)
{
	const struct cubic *c = s;

	return (uint64_t)(c->cwnd * c->mtu);
}

const struct cc_ops cc_cubic_ops = {
	.name = "cubic",
	.id = UROCE_CC_CUBIC,
	.state_bytes = sizeof(struct cubic),
	.flags = CC_PER_PATH,
	.init = cubic_init,
	.on_ack = cubic_on_ack,
	.on_loss = cubic_on_loss,
	.window = cubic_window,
};
