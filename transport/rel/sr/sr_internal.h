/* SPDX-License-Identifier: MIT */
/* What sr's own files (rel_sr.c, sr_tx.c, sr_ack.c, sr_timer.c, sr_rx.c)
 * share, included by them only: the sender's phase in a WQE, the small
 * hot helpers (inline, as they were inside one file) and the calls from
 * one of these files into another. */
#ifndef UROCE_TRANSPORT_REL_SR_INTERNAL_H
#define UROCE_TRANSPORT_REL_SR_INTERNAL_H

#include "transport/rel/sr/rel_sr.h"

/* Where the sender is in the WQE at sq_cur (sr_tx.c). */
enum { PH_START = 0, PH_DESC1, PH_DATA, PH_PARITY, PH_DESC2, PH_DONE };

static inline struct swqe *sr_wqe_at(struct uroce_qp *qp, uint32_t sq_idx)
{
	return &qp->sq[sq_idx & qp->sq_mask];
}

/* Messages before this have a receive: those bound plus those posted. An
 * SRQ's receives are shared, so its QP does not limit (as rc's code 31). */
static inline uint32_t sr_rx_msg_limit(const struct uroce_qp *qp)
{
	const struct sr_rx *r = &sr_of(qp)->rx;

	if (qp->init.srq || qp->init.rel.imm_counter)
		return r->bind_next + (1u << 30); /* counted messages take no receive */
	return r->bind_next + (atomic_load_explicit(&qp->rq_head, memory_order_acquire) - qp->rq_tail);
}

/* A packet acknowledged, or done with (ec parity): out of flight. */
static inline void sr_txp_acked(struct uroce_qp *qp, struct sr_txp *p)
{
	struct sr_state *st = sr_of(qp);
	struct swqe *w = sr_wqe_at(qp, p->sq_idx);

	if (p->flags & SRP_LOST)
		st->tx.nlost--;
	sr_pc_gone(qp, p);
	p->flags = (uint8_t)((p->flags | SRP_SACKED) & ~SRP_LOST);
	st->tx.inflight_bytes -= p->len;
	if (w->unacked)
		w->unacked--;
}

/* sr_ack.c */
int sr_send_sack(struct uroce_qp *qp);
void sr_retire(struct uroce_qp *qp);
uint64_t sr_rack_detect(struct uroce_qp *qp, uint64_t now);

/* sr_timer.c */
void sr_arm(struct uroce_qp *qp);

/* sr_rx.c */
void sr_push_recv_wc(struct uroce_qp *qp, struct sr_rmsg *m);

#endif
