/* SPDX-License-Identifier: MIT */
/* EQDS (receiver-driven, as UCCL and Ultra Ethernet's NSCC/RCCC use it):
 * a sender may send what the receiver granted plus one BDP of speculative
 * bytes when a burst starts; beyond that it asks (RTS: the bytes it wants
 * in all) and waits for PULLs. Every receiving port runs one pacer that
 * grants EQDS_QUANTUM bytes at a time, round robin over the QPs still
 * owed credit, at the port's link rate: under incast the senders share
 * the receiver's downlink by construction instead of filling its queue.
 * Trimmed packets come back as TRIM NACKs and are sent again on credit.
 * An RTS lost, or a PULL lost, costs one retry: the counts are cumulative,
 * and a sender blocked without credit for max(2 srtt, 100 us) asks again.
 * This file is the sender's controller; the receiver's pacer and the
 * RTS/PULL exchange are sr's (rel/sr/sr_pull.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/cc/cc.h"
#include "transport/cc/cc_eqds.h"

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
	/* credit counts only up to what was asked (a quantum rounds it): a
	 * grant past that (a receiver whose count a forged RTS raised, or
	 * another life of the QP) would let the sender burst unasked, and
	 * refusing it whole stalled the sender, whose receiver then only
	 * repeats its cumulative grant */
	if (credit_cum > e->asked + EQDS_QUANTUM)
		credit_cum = e->asked + EQDS_QUANTUM;
	if (credit_cum > e->credit)
		e->credit = credit_cum;
}


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

static bool eqds_tx_speculate(void *s)
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

static bool eqds_tx_rts_due(void *s, uint64_t *want_io, uint64_t now, uint64_t retry_ns)
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

static void eqds_rts_counts(const void *s, uint64_t *sent, uint64_t *spec, uint64_t *asked)
{
	const struct eqds_state *e = s;

	*sent = e->sent;
	*spec = e->spec;
	*asked = e->asked;
}

const struct cc_ops cc_eqds_ops = {
	.name = "eqds",
	.id = UROCE_CC_EQDS,
	.state_bytes = sizeof(struct eqds_state),
	.flags = CC_CREDIT,
	.init = eqds_init,
	.on_ack = cc_ignore_ack,
	/* the retransmission needs credit like any byte: nothing to cut */
	.on_loss = cc_ignore_loss,
	.on_sent = eqds_on_sent,
	.window = eqds_window,
	.rate_bps = eqds_rate,
	.credit = eqds_credit,
	.on_credit = eqds_on_credit,
	.speculate = eqds_tx_speculate,
	.rts_due = eqds_tx_rts_due,
	.rts_counts = eqds_rts_counts,
};
