/* SPDX-License-Identifier: MIT */
/* EQDS's receiver and the RTS/PULL exchange of sr and ec (the sender's
 * controller is cc/cc_eqds.c, reached through its cc_ops): every
 * receiving port runs one pacer that grants EQDS_QUANTUM bytes at a time,
 * round robin over the QPs still owed credit, at the port's link rate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/rel/sr/rel_sr.h"

/* --- the sender: a PULL arrived ------------------------------------------------ */

void eqds_tx_pull(struct uroce_qp *qp, uint64_t credit_cum)
{
	struct sr_state *st = sr_of(qp);

	qp->stats.cc_pulls_rcvd++;
	/* the receiver answers: the RTSs spent no retry (sr_paths.c) */
	st->tx.rts_unanswered = 0;
	st->tx.cc_gave_up = false;
	st->cc.ops->on_credit(st->cc.st, st->tx.now, credit_cum); /* it counts up to what it asked */
	if (st->tx.credit_blocked)
		ctx_kick(qp);
}

/* --- the receiver: one pacer per port ------------------------------------------ */

struct eqds_pacer {
	struct wheel_timer timer;
	struct uroce_context *ctx;
	uint64_t rate_bps;
	uint64_t next_ns;       /* the pacer's clock: the next grant is due then */
	uint32_t mtu;           /* the smallest payload per packet of its QPs */
	struct uroce_qp *head, *tail;
	bool armed;
};

struct eqds_ctx {
	struct eqds_pacer port[UROCE_MAX_PORTS];
};

static struct eqds_rx *rx_of(struct uroce_qp *qp)
{
	return &sr_of(qp)->rx.eqds;
}

static uint64_t owed(const struct eqds_rx *e)
{
	uint64_t asked = e->want > e->spec ? e->want - e->spec : 0;

	return asked > e->granted ? asked - e->granted : 0;
}

static void pacer_fire(struct wheel_timer *t, void *arg);
static void eqds_ctx_fini(struct uroce_context *ctx);

/* the context frees the pacers at its teardown, their timers first */
static const struct ctx_hook eqds_ctx_hook = { .fini = eqds_ctx_fini };

static void pacer_arm(struct eqds_pacer *pc, uint64_t now)
{
	if (pc->armed || !pc->head)
		return;
	pc->armed = true;
	engine_timer_arm(pc->ctx->eng, &pc->timer, pc->next_ns > now ? pc->next_ns : now);
}

/* qp to the back of the pacer's queue of QPs owed credit. */
static void pacer_enqueue(struct eqds_pacer *pc, struct uroce_qp *qp)
{
	struct eqds_rx *e = rx_of(qp);

	e->queued = true;
	e->next = NULL;
	if (pc->tail)
		rx_of(pc->tail)->next = qp;
	else
		pc->head = qp;
	pc->tail = qp;
}

/* Grant the QP at the head one quantum, and move it to the back. */
static void pacer_fire(struct wheel_timer *t, void *arg)
{
	struct eqds_pacer *pc = arg;
	uint64_t now = ctx_clock(pc->ctx), g = 0;

	(void)t;
	pc->armed = false;
	while (pc->head && !g) {
		struct uroce_qp *qp = pc->head;
		struct eqds_rx *e = rx_of(qp);

		pc->head = e->next;
		if (!pc->head)
			pc->tail = NULL;
		e->next = NULL;
		e->queued = false;
		g = owed(e);
		if (!g)
			continue;
		if (g > EQDS_QUANTUM)
			g = EQDS_QUANTUM;
		e->granted += g;
		e->pull_due = true;
		ctx_kick(qp);
		if (owed(e))
			pacer_enqueue(pc, qp);
	}
	/* the link's time for what was granted, headers included (they
	 * share the downlink): the next grant waits it out */
	if (pc->next_ns < now)
		pc->next_ns = now;
	if (g) {
		uint64_t wire = g + (g / pc->mtu + 1) * CC_PKT_OVERHEAD;

		pc->next_ns += wire * 8u * 1000000000u / (pc->rate_bps ? pc->rate_bps : 1);
	}
	pacer_arm(pc, now);
}

static struct eqds_pacer *pacer_of(struct uroce_context *ctx, unsigned port)
{
	struct eqds_ctx *c = ctx->eqds;

	if (!c) {
		if (ctx_hook_add(ctx, &eqds_ctx_hook))
			return NULL;
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		for (unsigned i = 0; i < UROCE_MAX_PORTS; i++) {
			c->port[i].ctx = ctx;
			wheel_timer_init(&c->port[i].timer, pacer_fire, &c->port[i]);
		}
		ctx->eqds = c;
	}
	return &c->port[port];
}

void eqds_rx_rts(struct uroce_qp *qp, struct eqds_rx *e, uint64_t want, uint64_t spec)
{
	struct eqds_pacer *pc;
	uint64_t now = ctx_clock(qp->ctx);

	/* a speculative count past one step is refused whole, not clamped:
	 * kept, it would leave every real RTS behind it (the counts only
	 * grow) and the sender without credit */
	if (spec > want || (spec > e->spec && spec - e->spec > EQDS_SPEC_STEP)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	/* cumulative counts only grow; a stale RTS (reordered behind a newer
	 * one) changes nothing */
	if (want < e->want || spec < e->spec) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	/* counts move by bounded steps: credit is owed at most
	 * EQDS_ASK_AHEAD past what was granted (a sender that wants more asks
	 * again while blocked), so one RTS draws a bounded number of PULLs */
	if (want - spec > e->granted + EQDS_ASK_AHEAD)
		want = spec + e->granted + EQDS_ASK_AHEAD;
	qp->stats.cc_rts_rcvd++;
	e->want = want;
	e->spec = spec;
	if (!owed(e) && e->granted) {
		/* everything asked is granted, yet it asks: it is waiting, so a
		 * PULL was lost; the cumulative grant goes again, on every path */
		e->pull_due = true;
		e->pull_fan = true;
		ctx_kick(qp);
		return;
	}
	if (!owed(e) || e->queued)
		return;
	pc = pacer_of(qp->ctx, e->port);
	if (!pc) {
		ctx_count_drop(qp->ctx, UROCE_DROP_NO_BUFFER);
		return;
	}
	/* the fastest link among the QPs that pull through this port */
	if (e->rate_bps > pc->rate_bps)
		pc->rate_bps = e->rate_bps;
	if (!pc->mtu || e->mtu < pc->mtu)
		pc->mtu = e->mtu;
	pacer_enqueue(pc, qp);
	pacer_arm(pc, now);
}

int eqds_send_pull(struct uroce_qp *qp)
{
	struct eqds_rx *e = rx_of(qp);
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_PULL_LEN];
	unsigned n;

	srw_ctrl_hdr(b, SRW_CTRL_PULL, sizeof(b), qp->tok_remote);
	roce_put_be64(b + SRW_CTRL_HDR_LEN, e->granted);
	n = sr_pc_send_credit_ctrl(qp, b, sizeof(b), e->pull_fan);
	if (!n)
		return -ENOBUFS; /* the TX stage is full: the next pass sends it */
	e->pull_due = false;
	e->pull_fan = false;
	qp->stats.cc_pulls_sent += n;
	return 0;
}

void eqds_rx_detach(struct uroce_qp *qp, struct eqds_rx *e)
{
	struct eqds_ctx *c = qp->ctx->eqds;
	struct eqds_pacer *pc;
	struct uroce_qp **pp, *prev = NULL;

	if (!e->queued || !c) {
		memset(e, 0, sizeof(*e));
		return;
	}
	pc = &c->port[e->port];
	for (pp = &pc->head; *pp; prev = *pp, pp = &rx_of(*pp)->next) {
		if (*pp != qp)
			continue;
		*pp = e->next;
		if (pc->tail == qp)
			pc->tail = prev;
		break;
	}
	memset(e, 0, sizeof(*e));
}

static void eqds_ctx_fini(struct uroce_context *ctx)
{
	struct eqds_ctx *c = ctx->eqds;

	if (!c)
		return;
	for (unsigned i = 0; i < UROCE_MAX_PORTS; i++)
		if (c->port[i].armed)
			engine_timer_cancel(ctx->eng, &c->port[i].timer);
	free(c);
	ctx->eqds = NULL;
}
