/* SPDX-License-Identifier: MIT */
/* sr: selective repeat. Every packet is a self-contained RDMA WRITE Only
 * (sr_wire.h) placed on arrival; the receiver answers with SACKs (a
 * cumulative PSN plus a bitmap of the window) on the sender's control QP.
 * A packet is declared lost by time, not by duplicate counts (RACK, RFC
 * 8985): once a packet sent after it was acknowledged and a reordering
 * window has passed; a tail-loss probe covers the last packets of a burst,
 * and the RTO (srtt + 4 rttvar, floored) everything else. Only the holes
 * are sent again, with their original PSNs.
 *
 * This file holds the policy's table and its life: init, RTR, reset,
 * error, failover. The sender is sr_tx.c, the SACKs sr_ack.c, the timer
 * sr_timer.c, the receiver sr_rx.c; sr_internal.h is what they share. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rel/rel.h"
#include "transport/rel/sr/sr_internal.h"
#include "transport/rel/sr/sr_ops.h"

/* --- configuration ------------------------------------------------------ */

int sr_init_common(struct uroce_qp *qp, bool ec)
{
	const struct uroce_rel_attr *a = &qp->init.rel;
	struct sr_state *st;
	int rc;

	if ((unsigned)a->loss >= UROCE_LOSS__COUNT)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.loss %d; accepted UROCE_LOSS_RACK (0), UROCE_LOSS_RTO (1)",
		                  (int)a->loss);
	if (a->window_pkts && (a->window_pkts < SR_WIN_MIN || a->window_pkts > SR_WIN_MAX))
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.window_pkts %u; accepted 0 (= %u) or %u-%u",
		                  a->window_pkts, SR_WIN_DEFAULT, SR_WIN_MIN, SR_WIN_MAX);
	if (a->chunk_pkts > 4096)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.chunk_pkts %u; accepted 0 (= 1) to 4096", a->chunk_pkts);
	if (ec && (unsigned)a->ec_code >= UROCE_EC__COUNT)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.ec_code %d; accepted UROCE_EC_RS (0), UROCE_EC_XOR (1)",
		                  (int)a->ec_code);
	st = calloc(1, sizeof(*st));
	if (!st)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	st->cfg = *a;
	st->ec = ec;
	if (!st->cfg.window_pkts)
		st->cfg.window_pkts = SR_WIN_DEFAULT;
	if (!st->cfg.chunk_pkts)
		st->cfg.chunk_pkts = 1;
	st->rto_min_ns = (a->rto_min_us ? a->rto_min_us : SR_RTO_MIN_DEFAULT_NS / 1000) * 1000ull;
	if (ec) {
		unsigned k = a->ec_k ? a->ec_k : 32, m = a->ec_m ? a->ec_m : 8;

		rc = ec_code_init(&st->code, a->ec_code == UROCE_EC_XOR ? EC_KIND_XOR : EC_KIND_RS, k, m);
		if (rc) {
			free(st);
			return uroce_fail(rc, "uroce_qp_create: rel.ec_k %u, ec_m %u; accepted 1 <= k <= %u, 1 <= m <= %u, "
			                      "k + m <= %u (0 = 32 and 8)", k, m, EC_MAX_K, EC_MAX_M, EC_MAX_N);
		}
		st->cfg.ec_k = (uint8_t)k;
		st->cfg.ec_m = (uint8_t)m;
		st->ec_min_pkts = a->ec_min_pkts ? a->ec_min_pkts : k;
		if (st->cfg.window_pkts < 2 * (k + m) + 4)
			st->cfg.window_pkts = 2 * (k + m) + 4; /* a whole submessage and its parity fit */
	}
	qp->rel_state = st;
	rc = sr_pc_init(qp);
	if (rc) {
		if (ec)
			ec_code_fini(&st->code);
		free(st);
		qp->rel_state = NULL;
	}
	return rc;
}

static void sr_free_bufs(struct sr_state *st)
{
	free(st->tx.ring);
	free(st->tx.par);
	free(st->rx.bits);
	free(st->rx.pend);
	free(st->rx.par);
	free(st->rx.par_msg);
	free(st->rx.par_idx);
	free(st->rx.par_ok);
	free(st->rx.scratch);
	free(st->rx.slot_bits);
	for (unsigned i = 0; i < SR_MSG_WIN; i++)
		free(st->rx.slot[i].wqe.sge);
	memset(&st->tx, 0, sizeof(st->tx));
	memset(&st->rx, 0, sizeof(st->rx));
}

/* RESET or destroy: messages bound to receive handles end without a
 * completion; a handle the application already gave back is freed, the
 * others are marked done so giving them back frees them. */
static void release_handles(struct sr_state *st)
{
	for (unsigned i = 0; i < SR_MSG_WIN; i++) {
		struct sr_rmsg *m = &st->rx.slot[i];

		if (m->bound && !m->delivered && m->wqe.precv)
			precv_finish(m->wqe.precv, false);
		m->wqe.precv = NULL;
	}
}

void sr_fini(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);

	if (!st)
		return;
	release_handles(st);
	/* before the buffers: wiping rx forgets that the QP waits in its
	 * port's EQDS pacer, which would grant it after the free */
	sr_pc_fini(qp);
	sr_free_bufs(st);
	if (st->ec)
		ec_code_fini(&st->code);
	free(st);
	qp->rel_state = NULL;
}

/* RTR: the MTU is known, size the rings and bitmaps. */
int sr_ready(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	uint32_t ring = 1, rbits = 1, sge;
	bool ok = true;
	int rc;

	if (qp->state == UROCE_QPS_RTR) {
		/* RTR -> RTS: the send PSN is known now */
		st->tx.una = st->tx.nxt = qp->snd_nxt;
		return 0;
	}
	sr_free_bufs(st);
	while (ring < st->cfg.window_pkts)
		ring <<= 1;
	/* the receiver's window has slack over the sender's: ec parity the
	 * sender gave up on leaves holes until its message is done */
	while (rbits < 2 * ring)
		rbits <<= 1;
	st->tx.ring = calloc(ring, sizeof(*st->tx.ring));
	st->tx.mask = ring - 1;
	st->tx.win_pkts = st->cfg.window_pkts;
	st->tx.win_bytes = st->cfg.window_bytes ? st->cfg.window_bytes : st->cfg.window_pkts * qp->mtu;
	st->rx.bits = calloc(rbits / 64 ? rbits / 64 : 1, sizeof(uint64_t));
	st->rx.pend = calloc(rbits / 64 ? rbits / 64 : 1, sizeof(uint64_t));
	st->rx.nbits = rbits;
	st->rx.mask = rbits - 1;
	st->rx.max_pkts = SR_MAX_MSG_PKTS;
	st->chunk_bytes = st->cfg.chunk_pkts * qp->mtu;
	sge = qp->init.srq ? qp->init.srq->max_sge : qp->attr.cap.max_recv_sge;
	if (!sge)
		sge = 1;
	/* One bit per packet a message may have, 16 KiB a slot, in one
	 * calloc per QP: large enough to be its own zero mapping, so only the
	 * pages messages touch become resident (10 000 QPs would otherwise
	 * hold 10 GiB). */
	st->rx.slot_bits = calloc((size_t)SR_MSG_WIN * (st->ec ? 2 : 1), SR_MAX_MSG_PKTS / 8);
	ok = st->tx.ring && st->rx.bits && st->rx.pend && st->rx.slot_bits;
	for (unsigned i = 0; ok && i < SR_MSG_WIN; i++) {
		struct sr_rmsg *m = &st->rx.slot[i];

		m->bits = st->rx.slot_bits + (size_t)i * (SR_MAX_MSG_PKTS / 64);
		if (st->ec)
			m->subdone = st->rx.slot_bits + (size_t)(SR_MSG_WIN + i) * (SR_MAX_MSG_PKTS / 64);
		m->wqe.sge = calloc(sge, sizeof(struct uroce_sge));
		ok = m->wqe.sge != NULL;
	}
	if (ok && st->ec) {
		uint32_t km = st->cfg.ec_k + st->cfg.ec_m;

		st->tx.par = malloc((size_t)ring * qp->mtu);
		st->rx.par = malloc((size_t)rbits * qp->mtu);
		st->rx.par_msg = calloc(rbits, sizeof(uint32_t));
		st->rx.par_idx = calloc(rbits, sizeof(uint32_t));
		st->rx.par_ok = calloc(rbits, 1);
		st->rx.scratch = malloc((size_t)km * qp->mtu);
		ok = st->tx.par && st->rx.par && st->rx.par_msg && st->rx.par_idx && st->rx.par_ok && st->rx.scratch;
	}
	if (!ok) {
		sr_free_bufs(st);
		return uroce_fail(-ENOMEM, "uroce_qp_modify: QP 0x%x: out of memory for the %s window", qp->qpn,
		                  st->ec ? "ec" : "sr");
	}
	st->tx.una = st->tx.nxt = qp->snd_nxt;
	st->tx.rto = SR_RTO_INIT_NS > st->rto_min_ns ? SR_RTO_INIT_NS : st->rto_min_ns;
	st->rx.cum = qp->epsn;
	st->rx.high = psn_add(qp->epsn, ROCE_PSN_MASK);
	st->fto_ns = st->cfg.ec_fto_us ? st->cfg.ec_fto_us * 1000ull : 1000000ull;
	rc = sr_pc_ready(qp);
	if (rc)
		sr_free_bufs(st);
	return rc;
}

void sr_reset(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);

	release_handles(st);
	sr_pc_fini(qp); /* first, as in sr_fini */
	sr_free_bufs(st);
	st->tx.msg_post = 0;
}

size_t sr_state_bytes(const struct uroce_qp *qp)
{
	const struct sr_state *st = sr_of(qp);
	size_t n = sizeof(*st);

	if (!st || !st->tx.ring)
		return n;
	n += (size_t)(st->tx.mask + 1) * sizeof(struct sr_txp) + st->rx.nbits / 8;
	n += (size_t)SR_MSG_WIN * (SR_MAX_MSG_PKTS / 8);
	if (st->ec)
		n += (size_t)(st->tx.mask + 1 + st->rx.nbits) * qp->mtu;
	return n;
}

/* What sr_state_bytes says of a QP with the default window after RTR. */
size_t sr_default_state_bytes(bool ec, uint32_t mtu)
{
	uint32_t ring = SR_WIN_DEFAULT, rbits = 2 * SR_WIN_DEFAULT;
	size_t n = sizeof(struct sr_state) + (size_t)ring * sizeof(struct sr_txp) + rbits / 8;

	n += (size_t)SR_MSG_WIN * (SR_MAX_MSG_PKTS / 8);
	if (ec)
		n += (size_t)(ring + rbits) * mtu;
	return n;
}

/* --- errors ----------------------------------------------------------------- */

void sr_error(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;

	/* receive WQEs bound to unfinished messages flush, in message order */
	for (uint32_t seq = r->msg_cum; seq != r->bind_next; seq++) {
		struct sr_rmsg *m = &r->slot[seq % SR_MSG_WIN];

		if (m->bound && m->seq == seq && !m->delivered) {
			m->st = UROCE_WC_WR_FLUSH_ERR;
			sr_push_recv_wc(qp, m);
		}
		m->bound = false;
	}
	r->msg_cum = r->bind_next;
	r->nfence = 0;
	st->tx.phase = PH_START;
	st->tx.nlost = 0;
	st->tx.una = st->tx.nxt;
	st->tx.inflight_bytes = 0;
	st->tx.pace_ns = 0;
}

/* --- failover ----------------------------------------------------------------- */

/* The QP moved to another member (qp->d): the paths follow it, and
 * rewind makes every packet not yet acknowledged due again. */
unsigned sr_fo_switch(struct uroce_qp *qp, bool rewind)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	unsigned n = 0;

	sr_pc_fo_ports(qp);
	if (!rewind || !t->ring)
		return 0;
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];

		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		if (p->kind == SRW_PARITY) {
			sr_txp_acked(qp, p); /* parity is never sent again: the data it protects is */
			continue;
		}
		p->flags &= (uint8_t)~SRP_EC;
		sr_txp_lost(qp, p, SR_LOSS_FAILOVER);
		n++;
	}
	t->backoff = 0;
	t->tlp_out = false;
	sr_retire(qp);
	sr_arm(qp);
	ctx_kick(qp);
	return n;
}

bool sr_fo_idle(const struct uroce_qp *qp)
{
	const struct sr_state *st = sr_of(qp);

	return st->tx.phase == PH_START && st->tx.una == st->tx.nxt && qp->sq_tail == qp->sq_cur;
}

SR_REL_OPS_DEFINE(sr, false); /* rel_sr_ops */
