/* SPDX-License-Identifier: MIT */
/* sr's one timer per QP: armed for the earliest of the oldest packet's
 * RTO, the tail-loss probe, RACK's reordering window, ec's fallback and a
 * pacer's release; when it fires, packets past their RTO are lost (or the
 * last one is probed) and the transmit pass resends them. */
#include "transport/failover/failover.h"
#include "transport/rel/sr/sr_internal.h"

/* --- timer ----------------------------------------------------------------- */

/* After a stall, the timer looks again this much later (one pass on). */
#define SR_STALL_RECHECK_NS 1000u

/* Arm the QP's one timer for the earliest of: RTO of the oldest packet,
 * the tail-loss probe, a RACK reordering window, an ec fallback timeout. */
void sr_arm(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint64_t when = UINT64_MAX, now = ctx_clock(qp->ctx), rto;
	bool any = false;

	if (!t->ring)
		return;
	rto = sr_rto_now(t);
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		const struct sr_txp *p = &t->ring[psn & t->mask];
		uint64_t d;

		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		/* ec packets wait for the receiver's fallback NACK first */
		d = p->sent_ns + rto + ((p->flags & SRP_EC) ? st->fto_ns + t->rto : 0);
		if (d < when)
			when = d;
		any = true;
		/* sent once, and first sends go in PSN order: no later packet
		 * is due before it */
		if (p->sent_ns == p->first_ns && !(p->flags & SRP_EC))
			break;
	}
	if (any && st->cfg.loss == UROCE_LOSS_RACK && !t->tlp_out && t->srtt) {
		uint64_t pto = t->last_tx_ns + 2 * t->srtt + t->min_rtt / 4;

		if (pto < when)
			when = pto;
	}
	if (t->rack_xmit) {
		uint64_t r = sr_rack_detect(qp, now);

		if (r < when)
			when = r;
	}
	if (st->ec) {
		uint64_t f = ec_rx_fto_next(qp);

		if (f < when)
			when = f;
	}
	if (t->pace_ns && t->pace_ns < when)
		when = t->pace_ns; /* a pacer or a quarantine holds packets until then */
	if (when == UINT64_MAX) {
		engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
		return;
	}
	if (when <= now)
		when = now + 1000;
	engine_timer_arm(qp->ctx->eng, &qp->retry_timer, when);
}

void sr_timer(struct wheel_timer *tm, void *arg)
{
	struct uroce_qp *qp = arg;
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint64_t now = ctx_clock(qp->ctx), rto;
	uint32_t last = 0;
	bool lost = false, any = false;
	struct sr_txp *probe = NULL;

	(void)tm;
	if (qp->state < UROCE_QPS_RTR || qp->state > UROCE_QPS_SQD || !t->ring)
		return;
	rto = sr_rto_now(t);
	/* The engine was away (descheduled, or its core busy with others)
	 * for over half an RTO: the SACKs that would have stopped this timer
	 * may still wait in the receive ring, behind the one burst this pass
	 * read. Decide in the next pass, which reads the ring first. */
	if (ctx_stall_ns(qp->ctx) > rto / 2) {
		engine_timer_arm(qp->ctx->eng, &qp->retry_timer, now + SR_STALL_RECHECK_NS);
		return;
	}
	sr_rack_detect(qp, now);
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];
		uint64_t extra = (p->flags & SRP_EC) ? st->fto_ns + t->rto : 0;

		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		any = true;
		last = psn;
		if (p->sent_ns + rto + extra <= now) {
			if (p->kind == SRW_PARITY) {
				/* parity is never sent again: the data it protects is */
				sr_txp_acked(qp, p);
				continue;
			}
			/* (RACK passes ec packets by: those go as before; and a
			 * QP keyed by immediate too: its receiver drops data
			 * whose descriptor is missing, so the newest packet
			 * alone draws no SACK that shows the hole, and sent
			 * again at every RTO it runs out of retries) */
			if (st->cfg.loss == UROCE_LOSS_RACK && !(p->flags & SRP_EC) && !qp->init.rel.imm_keyed) {
				probe = p;
				continue;
			}
			p->flags &= (uint8_t)~SRP_EC;
			sr_txp_lost(qp, p, SR_LOSS_RTO);
			qp->stats.rto_losses++;
			lost = true;
		}
	}
	/* With RACK an RTO resends one packet, the newest that is due: the
	 * SACK it draws shows which of the rest arrived, and RACK resends
	 * those that did not. A peer that was only slow (descheduled, its
	 * core busy) then costs one duplicate, not the window; and the
	 * newest, not the oldest, so that the first copies the peer still
	 * holds are acknowledged before the resent one, whose SACK would
	 * otherwise make RACK count them lost. */
	if (probe) {
		probe->flags &= (uint8_t)~SRP_EC;
		sr_txp_lost(qp, probe, SR_LOSS_RTO);
		qp->stats.rto_losses++;
		lost = true;
	}
	if (lost) {
		qp->stats.timeouts++;
		if (t->backoff < 16)
			t->backoff++;
		t->tlp_out = false;
		/* failover may take the member out and rewind onto another */
		fo_on_rto(qp);
	} else if (any && st->cfg.loss == UROCE_LOSS_RACK && !t->tlp_out && t->srtt && !t->nlost &&
	           now >= t->last_tx_ns + 2 * t->srtt + t->min_rtt / 4) {
		/* tail-loss probe: send the last packet again so a SACK shows the holes */
		struct sr_txp *p = &t->ring[last & t->mask];

		if (!(p->flags & SRP_EC)) {
			sr_txp_lost(qp, p, SR_LOSS_PROBE);
			t->tlp_out = true;
			qp->stats.tlp_probes++;
		}
	}
	while (t->una != t->nxt && (t->ring[t->una & t->mask].flags & SRP_SACKED))
		t->una = psn_add(t->una, 1);
	sr_retire(qp);
	sr_arm(qp);
	ctx_kick(qp);
}
