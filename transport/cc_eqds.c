/* EQDS (receiver-driven, as UCCL and Ultra Ethernet's NSCC/RCCC use it):
 * a sender may send what the receiver granted plus one BDP of speculative
 * bytes when a burst starts; beyond that it asks (RTS: the bytes it wants
 * in all) and waits for PULLs. Every receiving port runs one pacer that
 * grants EQDS_QUANTUM bytes at a time, round robin over the QPs still
 * owed credit, at the port's link rate: under incast the senders share
 * the receiver's downlink by construction instead of filling its queue.
 * Trimmed packets come back as TRIM NACKs and are sent again on credit.
 * An RTS lost, or a PULL lost, costs one retry: the counts are cumulative,
 * and a sender blocked without credit for max(2 srtt, 100 us) asks again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/cc.h"
#include "transport/cc_eqds.h"
#include "transport/qp_internal.h"
#include "transport/rel_sr.h"

/* --- the sender: a cc_ops whose gate is the credit ---------------------------- */

struct eqds_state {
	uint64_t sent;        /* bytes sent, retransmissions included */
	uint64_t credit;      /* the receiver's grant (cumulative) */
	uint64_t spec;        /* speculative allowance taken (cumulative) */
	uint64_t bdp;         /* one BDP: line rate x base RTT */
	uint64_t asked;       /* want of the last RTS */
	uint64_t rts_ns;      /* when it went */
	uint64_t line_bps;
};
_Static_assert(sizeof(struct eqds_state) <= CC_STATE_MAX, "eqds state");

static void eqds_init(void *s, const struct cc_env *env, uint64_t now)
{
	struct eqds_state *e = s;

	(void)now;
	memset(e, 0, sizeof(*e));
	e->line_bps = env->line_bps;
	e->bdp = env->line_bps / 8 * env->base_rtt_ns / 1000000000u;
	if (e->bdp < env->mtu)
		e->bdp = env->mtu;
	if (e->bdp > EQDS_SPEC_STEP)
		e->bdp = EQDS_SPEC_STEP; /* a receiver refuses a larger speculative step */
}

static void eqds_on_ack(void *s, const struct cc_ack *a)
{
	(void)s;
	(void)a;
}

static void eqds_on_loss(void *s, uint64_t now, bool rto)
{
	/* the retransmission needs credit like any byte: nothing to cut */
	(void)s;
	(void)now;
	(void)rto;
}

static void eqds_on_sent(void *s, uint64_t now, uint32_t bytes)
{
	(void)now;
	((struct eqds_state *)s)->sent += bytes;
}

static uint64_t eqds_window(const void *s)
{
	(void)s;
	return UINT64_MAX;
}

static uint64_t eqds_rate(void *s, uint64_t now)
{
	(void)now;
	return ((struct eqds_state *)s)->line_bps; /* never faster than the link */
}

static int64_t eqds_credit(const void *s)
{
	const struct eqds_state *e = s;

	return (int64_t)(e->credit + e->spec - e->sent);
}

static void eqds_on_credit(void *s, uint64_t now, uint64_t credit_cum)
{
	struct eqds_state *e = s;

	(void)now;
	if (credit_cum > e->credit)
		e->credit = credit_cum;
}

const struct cc_ops cc_eqds_ops = {
	.name = "eqds",
	.id = UROCE_CC_EQDS,
	.state_bytes = sizeof(struct eqds_state),
	.flags = CC_CREDIT,
	.init = eqds_init,
	.on_ack = eqds_on_ack,
	.on_loss = eqds_on_loss,
	.on_sent = eqds_on_sent,
	.window = eqds_window,
	.rate_bps = eqds_rate,
	.credit = eqds_credit,
	.on_credit = eqds_on_credit,
};

uint64_t eqds_tx_sent(const void *s)
{
	return ((const struct eqds_state *)s)->sent;
}

uint64_t eqds_tx_spec(const void *s)
{
	return ((const struct eqds_state *)s)->spec;
}

uint64_t eqds_tx_credit_cum(const void *s)
{
	return ((const struct eqds_state *)s)->credit;
}

uint64_t eqds_tx_asked(const void *s)
{
	return ((const struct eqds_state *)s)->asked;
}

bool eqds_tx_speculate(void *s)
{
	struct eqds_state *e = s;
	int64_t left = eqds_credit(e);

	/* only a new burst: a sender still waiting for what it asked for
	 * is not idle, however empty its pipe */
	if (left >= (int64_t)e->bdp || e->asked > e->credit + e->spec)
		return false;
	e->spec += e->bdp - (uint64_t)(left > 0 ? left : 0);
	return true;
}

bool eqds_tx_rts_due(void *s, uint64_t *want_io, uint64_t now, uint64_t retry_ns)
{
	struct eqds_state *e = s;
	uint64_t want = *want_io > e->asked ? *want_io : e->asked; /* it only grows: the receiver keeps the largest */

	*want_io = want;
	if (want <= e->credit + e->spec)
		return false; /* what it wants is granted: it waits for nothing */
	if (want > e->asked || now - e->rts_ns >= retry_ns) {
		e->asked = want;
		e->rts_ns = now;
		return true;
	}
	return false;
}

void eqds_tx_pull(struct uroce_qp *qp, uint64_t credit_cum)
{
	struct sr_state *st = sr_of(qp);
	struct eqds_state *e = (struct eqds_state *)st->cc.st;

	/* credit counts only up to what was asked (a quantum rounds it): a
	 * grant past that (a receiver whose count a forged RTS raised, or
	 * another life of the QP) would let the sender burst unasked, and
	 * refusing it whole stalled the sender, whose receiver then only
	 * repeats its cumulative grant */
	if (credit_cum > e->asked + EQDS_QUANTUM)
		credit_cum = e->asked + EQDS_QUANTUM;
	qp->stats.cc_pulls_rcvd++;
	/* the receiver answers: the RTSs spent no retry (sr_paths.c) */
	st->tx.rts_unanswered = 0;
	st->tx.cc_gave_up = false;
	eqds_on_credit(e, st->tx.now, credit_cum);
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
		if (owed(e)) {
			e->queued = true;
			if (pc->tail)
				rx_of(pc->tail)->next = qp;
			else
				pc->head = qp;
			pc->tail = qp;
		}
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
	e->queued = true;
	e->next = NULL;
	if (pc->tail)
		rx_of(pc->tail)->next = qp;
	else
		pc->head = qp;
	pc->tail = qp;
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
