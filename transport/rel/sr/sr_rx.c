/* SPDX-License-Identifier: MIT */
/* sr's receiver: data packets checked and placed on arrival, the PSN
 * bitmap the SACK reports, message slots bound to receive WQEs in order,
 * descriptors and fences, the PSN spans of finished messages that late
 * packets are checked against, and completions delivered in order (or as
 * they finish, unordered). */
#include <string.h>

#include "transport/rel/sr/sr_internal.h"
#include "transport/core/async.h"
#include "transport/core/immcounter.h"
#include "transport/core/rx_check.h"

/* --- receiving: data --------------------------------------------------------- */

bool sr_rx_wants_kick(const struct uroce_qp *qp)
{
	return __atomic_load_n(&sr_of(qp)->rx.rnr, __ATOMIC_ACQUIRE);
}

static void rx_set_arrived(struct sr_rx *r, uint32_t psn)
{
	bit_set(r->bits, psn & r->mask);
}

static void fence_check(struct uroce_qp *qp);

static void rx_advance_cum(struct uroce_qp *qp)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	uint32_t was = r->cum;

	while (bit_get(r->bits, r->cum & r->mask)) {
		bit_clear(r->bits, r->cum & r->mask);
		r->cum = psn_add(r->cum, 1);
	}
	if (r->ask)
		r->sack_pending = true;
	if (r->cum != was && r->nfence)
		fence_check(qp);
}

/* qp's receive map when psn falls inside its window, else NULL; inlined
 * at -O0 too, as the two copies it replaces were (tr_paths' real-time
 * fabric notices the receive path's cost) */
static inline __attribute__((always_inline)) struct sr_rx *rx_window(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	int32_t d = roce_psn_diff(psn, r->cum);

	return d < 0 || (uint32_t)d >= r->nbits ? NULL : r;
}

void sr_rx_mark_psn(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_rx *r = rx_window(qp, psn);

	if (!r)
		return;
	rx_set_arrived(r, psn);
	/* the sender has gone past every PSN up to this one: those counted
	 * in advance (parity of a whole submessage) count now */
	while (roce_psn_diff(psn, r->high) > 0) {
		r->high = psn_add(r->high, 1);
		if (bit_get(r->pend, r->high & r->mask)) {
			bit_clear(r->pend, r->high & r->mask);
			rx_set_arrived(r, r->high);
		}
	}
	rx_advance_cum(qp);
}

void sr_rx_count_psn(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_rx *r = rx_window(qp, psn);

	if (!r)
		return;
	if (roce_psn_diff(psn, r->high) <= 0) {
		rx_set_arrived(r, psn);
		rx_advance_cum(qp);
	} else {
		/* not sent yet: acknowledging it would acknowledge the future */
		bit_set(r->pend, psn & r->mask);
	}
}

uint32_t sr_pkt_len(const struct uroce_qp *qp, const struct sr_rmsg *m, uint32_t idx)
{
	uint32_t off = idx * qp->mtu;

	if (!m->have_npk || off >= m->len)
		return m->have_npk && m->len == 0 && idx == 0 ? 0 : qp->mtu;
	return m->len - off < qp->mtu ? m->len - off : qp->mtu;
}

bool sr_rx_place(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t off, const uint8_t *src, uint32_t len)
{
	if (!len)
		return true;
	if (m->write) {
		if (!src)
			return true; /* a NIC placed it */
		/* sge[0] holds the target; a rebuilt chunk never came with a RETH
		 * of its own, so the key is checked here for every write (on a
		 * NIC's context by its keys: what it did not place itself) */
		if (!(__builtin_expect(!qp->ctx->nic, 1) ? rx_check_write(qp, m->rkey, m->wqe.sge[0].addr + off, len)
		                                         : rx_check_write_nic(qp, m->rkey, m->wqe.sge[0].addr + off, len)))
			return false;
		memcpy((uint8_t *)(uintptr_t)(m->wqe.sge[0].addr + off), src, len);
	} else {
		sge_copy_in(m->wqe.sge, m->wqe.num_sge, off, src, len);
	}
	return true;
}

void sr_rx_read(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t off, uint8_t *dst, uint32_t len)
{
	if (!len)
		return;
	if (m->write)
		memcpy(dst, (const uint8_t *)(uintptr_t)(m->wqe.sge[0].addr + off), len);
	else
		sge_copy_out(m->wqe.sge, m->wqe.num_sge, off, dst, len);
	(void)qp;
}

void sr_push_recv_wc(struct uroce_qp *qp, struct sr_rmsg *m)
{
	struct uroce_wc wc;
	bool whole = m->st == UROCE_WC_SUCCESS && m->have_npk && m->nrecv >= m->npk;

	if (qp->init.rel.imm_counter) {
		/* no receive, no completion: the IMMCOUNTER takes it, once */
		if (whole && m->op == UROCE_WR_RDMA_WRITE_WITH_IMM && m->have_desc) {
			imm_count(qp->ctx, m->imm);
			qp->stats.imm_counted++;
		}
		return;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = m->wqe.wr_id;
	wc.status = m->st;
	wc.qp_num = qp->qpn;
	wc.src_qp = qp->dqpn;
	wc.opcode = m->op == UROCE_WR_RDMA_WRITE_WITH_IMM ? UROCE_WC_RECV_RDMA_WITH_IMM : UROCE_WC_RECV;
	wc.byte_len = whole ? m->len : m->placed; /* a partial completion reports what was placed */
	if (m->op != UROCE_WR_SEND && m->have_desc) {
		wc.wc_flags |= UROCE_WC_WITH_IMM;
		wc.imm_data = m->imm;
	}
	if (m->wqe.precv) {
		wc.wc_flags |= precv_finish(m->wqe.precv, whole);
		m->wqe.precv = NULL;
	}
	cq_push(qp->rcq, &wc);
}

/* Deliver finished messages: in order, or (unordered) as they finish;
 * the window's base moves past delivered ones. */
static void deliver(struct uroce_qp *qp, struct sr_rmsg *m)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;

	if (m && st->cfg.ordering == UROCE_ORDER_UNORDERED && !m->delivered) {
		sr_push_recv_wc(qp, m);
		m->delivered = true;
	}
	for (;;) {
		struct sr_rmsg *b = &r->slot[r->msg_cum % SR_MSG_WIN];

		if (!b->bound || b->seq != r->msg_cum || !b->done)
			break;
		if (!b->delivered) {
			sr_push_recv_wc(qp, b);
			b->delivered = true;
		}
		b->bound = false;
		r->msg_cum++;
	}
}

/* The most packets a message may have while its length is unknown: a
 * SEND fits its receive, a WRITE with immediate the message limit. */
static uint32_t fin_max_pkts(const struct uroce_qp *qp, const struct sr_rmsg *m)
{
	uint32_t n = sr_of(qp)->rx.max_pkts;

	if (m->have_npk)
		return m->npk ? m->npk : 1;
	if (!m->write && npkts(m->wqe.length, qp->mtu) < n)
		n = npkts(m->wqe.length, qp->mtu);
	return n ? n : 1;
}

/* A finished message's PSN span (struct sr_fin), kept so that a late
 * packet naming it counts only at a PSN it can have used. */
static void fin_record(struct uroce_qp *qp, const struct sr_rmsg *m, bool early)
{
	struct sr_state *st = sr_of(qp);
	struct sr_fin *f = &st->rx.fin[m->seq % SR_FIN_RING];
	uint32_t n = fin_max_pkts(qp, m);

	f->seq = m->seq;
	/* completed by the application before its packets all came, and no
	 * descriptor fixes its layout: a stream's pieces still to be sent,
	 * or resent, take PSNs no packet seen so far bounds. The sender
	 * starts no piece once a SACK says the message is done, and starts
	 * message seq + SR_MSG_WIN only after that: its first packet closes
	 * the span (fin_close) */
	f->open = early && !(m->have_first && m->have_npk);
	if (m->have_first && m->have_npk) {
		/* the sender's layout: the descriptor at first_psn, then the
		 * packets (ec: parity after each submessage, a descriptor last) */
		f->lo = m->first_psn;
		f->hi = psn_add(m->first_psn, (m->is_ec ? ec_total_pkts(st, n) : n + 1) - 1);
		f->known = SR_FIN_SPAN;
	} else if (m->have_base) {
		/* packet idx went at base + idx (a stream's pieces: several
		 * bases); its descriptor just before index 0, if it may have
		 * one (a LAST without the descriptor flag says it has none) */
		bool desc = st->ec || m->desc_expected || !m->have_npk;

		f->lo = desc ? psn_add(m->base_lo, ROCE_PSN_MASK) : m->base_lo;
		f->hi = psn_add(m->base_hi, (st->ec ? ec_total_pkts(st, n) : n) - 1);
		f->known = SR_FIN_SPAN;
	} else {
		f->hi = n; /* nothing of it came: the first late packet sets the span */
		f->known = SR_FIN_LEARN;
	}
}

/* May a late packet (kind, idx) of finished message seq mark psn? Its
 * drop reason if not: a number no longer (or never) known here, or a
 * PSN outside that message's span. */
static enum uroce_drop_reason fin_check(struct uroce_qp *qp, uint32_t seq, uint32_t psn, uint32_t kind, uint32_t idx)
{
	struct sr_state *st = sr_of(qp);
	struct sr_fin *f = &st->rx.fin[seq % SR_FIN_RING];

	if (f->known == SR_FIN_NONE || f->seq != seq)
		return UROCE_DROP_STALE_MSG;
	if (f->known == SR_FIN_LEARN) {
		uint32_t n = f->hi, base = psn_add(psn, (uint32_t)-(kind == SRW_DESC ? 0 : idx));

		f->lo = psn_add(base, ROCE_PSN_MASK);
		f->hi = psn_add(base, st->ec ? ec_total_pkts(st, n) : n);
		f->known = SR_FIN_SPAN;
	}
	if (f->open)
		return UROCE_DROP_NONE; /* a piece lost before those seen may lie below lo too */
	if (roce_psn_diff(psn, f->lo) < 0 || roce_psn_diff(psn, f->hi) > 0)
		return UROCE_DROP_PSN_OUT_OF_WINDOW;
	return UROCE_DROP_NONE;
}

/* A packet of message seq at psn: the sender knew message seq -
 * SR_MSG_WIN done when it started it (its slot window), so that message,
 * if open, sent nothing at or after psn: its span ends before it (and
 * starts at the receive window's base, where a lost piece may lie). */
static void fin_close(struct uroce_qp *qp, uint32_t seq, uint32_t psn)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	struct sr_fin *f = &r->fin[(seq - SR_MSG_WIN) % SR_FIN_RING];

	if (!f->open || f->seq != seq - SR_MSG_WIN)
		return;
	f->open = false;
	f->lo = r->cum;
	f->hi = psn_add(psn, ROCE_PSN_MASK);
	f->known = SR_FIN_SPAN;
}

static void finish_msg(struct uroce_qp *qp, struct sr_rmsg *m, enum uroce_wc_status st, bool early)
{
	struct sr_state *s = sr_of(qp);

	if (m->done)
		return;
	m->done = true;
	fin_record(qp, m, early);
	if (m->fence)
		s->rx.nfence--;
	m->st = st;
	if (m->is_ec && m->have_first && m->have_npk) {
		/* every PSN of the message counts as arrived: lost parity, rebuilt data */
		uint32_t total = ec_total_pkts(s, m->npk);

		for (uint32_t i = 0; i < total; i++)
			sr_rx_count_psn(qp, psn_add(m->first_psn, i));
	}
	deliver(qp, m);
}

void sr_rx_finish(struct uroce_qp *qp, struct sr_rmsg *m)
{
	finish_msg(qp, m, UROCE_WC_SUCCESS, true);
	sr_of(qp)->rx.sack_pending = true; /* its msg_cum tells the sender to start no more pieces of it */
}

void sr_rx_check_done(struct uroce_qp *qp, struct sr_rmsg *m)
{
	if (m->done || !m->have_npk || m->nrecv < m->npk || (m->desc_expected && !m->have_desc))
		return;
	/* fenced: every packet sent before it must be here first */
	if (m->fence && (!m->have_first || roce_psn_diff(sr_of(qp)->rx.cum, m->first_psn) < 0))
		return;
	finish_msg(qp, m, UROCE_WC_SUCCESS, false);
}

/* cum moved: fenced messages waiting for it may finish now (re-entered
 * from their own finishing, which can move cum again: the outer call
 * scans once more instead) */
static void fence_check(struct uroce_qp *qp)
{
	struct sr_rx *r = &sr_of(qp)->rx;

	if (r->in_fence) {
		r->fence_again = true;
		return;
	}
	r->in_fence = true;
	do {
		r->fence_again = false;
		for (uint32_t seq = r->msg_cum; seq != r->bind_next && r->nfence; seq++) {
			struct sr_rmsg *m = &r->slot[seq % SR_MSG_WIN];

			if (m->bound && m->seq == seq && m->fence && !m->done)
				sr_rx_check_done(qp, m);
		}
	} while (r->fence_again);
	r->in_fence = false;
}

void sr_rx_note_pkt(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t idx)
{
	(void)qp;
	if (m->wqe.precv)
		precv_note(m->wqe.precv, m, idx);
}

/* Bind receive WQEs to messages up to seq (order-based matching). */
static struct sr_rmsg *bind_upto(struct uroce_qp *qp, uint32_t seq)
{
	struct sr_rx *r = &sr_of(qp)->rx;

	while ((int32_t)(seq - r->bind_next) >= 0) {
		struct sr_rmsg *m = &r->slot[r->bind_next % SR_MSG_WIN];
		struct uroce_sge *sge = m->wqe.sge;
		uint64_t *bits = m->bits, *sub = m->subdone;

		if (m->bound)
			return NULL; /* its previous message is not delivered yet */
		memset(m, 0, offsetof(struct sr_rmsg, bits));
		m->bits = bits;
		m->subdone = sub;
		m->wqe.sge = sge;
		if (qp->init.rel.imm_counter) {
			/* a counted WRITE with immediate needs no receive */
			m->wqe.wr_id = 0;
			m->wqe.precv = NULL;
			m->wqe.num_sge = 0;
			m->wqe.length = 0;
		} else if (!qp_take_rwqe(qp, &m->wqe)) {
			ctx_count_drop(qp->ctx, UROCE_DROP_NO_RECV_BUFFER);
			return NULL;
		}
		memset(bits, 0, (size_t)m->bits_words * 8);
		if (sub)
			memset(sub, 0, (size_t)m->bits_words * 8);
		m->bits_words = 0;
		m->seq = r->bind_next;
		m->bound = true;
		m->op = UROCE_WR_SEND;
		m->st = UROCE_WC_SUCCESS;
		if (m->wqe.precv)
			precv_bind(m->wqe.precv, qp, m);
		r->bind_next++;
	}
	return &r->slot[seq % SR_MSG_WIN];
}

bool sr_rx_bind_next(struct uroce_qp *qp)
{
	struct sr_rx *r = &sr_of(qp)->rx;

	if (r->bind_next - r->msg_cum >= SR_MSG_WIN)
		return false;
	return bind_upto(qp, r->bind_next) != NULL;
}

/* The receiver cannot go on (a message longer than its buffer): like
 * rc's responder it goes to ERR; the sender runs out of retries. */
static void rx_fatal(struct uroce_qp *qp, struct sr_rmsg *m, enum uroce_wc_status st, enum uroce_drop_reason why)
{
	/* as rc's responder for an invalid request (IBTA class C) */
	struct uroce_async_event ev = { .event_type = UROCE_EVENT_QP_REQ_ERR };

	ctx_count_drop(qp->ctx, why);
	m->st = st;
	sr_push_recv_wc(qp, m);
	m->delivered = true;
	m->bound = false;
	qp_to_error(qp);
	ev.element.qp = qp;
	ctx_async_event(qp->ctx, &ev);
}

static void rx_desc(struct uroce_qp *qp, struct sr_rmsg *m, const struct roce_pkt *pkt)
{
	const uint8_t *b = pkt->payload;
	uint32_t len, rkey;
	uint64_t raddr;

	if (pkt->payload_len < SRW_DESC_LEN || b[0] != SRW_VERSION ||
	    (b[1] != UROCE_WR_SEND && b[1] != UROCE_WR_SEND_WITH_IMM && b[1] != UROCE_WR_RDMA_WRITE_WITH_IMM) ||
	    (b[3] && !sr_of(qp)->ec) || (b[2] & ~(SRW_DESC_IMM | SRW_DESC_FENCE))) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	if (qp->init.rel.imm_counter && b[1] != UROCE_WR_RDMA_WRITE_WITH_IMM) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE); /* a counting QP takes no SENDs */
		return;
	}
	len = roce_get_be32(b + 4);
	rkey = roce_get_be32(b + 12);
	raddr = roce_get_be64(b + 16);
	if (m->have_npk && len != m->len) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (npkts(len, qp->mtu) > sr_of(qp)->rx.max_pkts) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (b[1] == UROCE_WR_RDMA_WRITE_WITH_IMM) {
		/* on a NIC the device checks the key of every WRITE it places */
		if (!qp->ctx->nic && !rx_check_write(qp, rkey, raddr, len))
			return;
		if (!m->write) {
			m->write = true;
			m->rkey = rkey;
			m->wqe.sge[0].addr = raddr; /* the target, for rebuilt chunks */
		} else if (m->wqe.sge[0].addr != raddr || m->rkey != rkey) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
			return;
		}
	} else if (m->write) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	} else if (len > m->wqe.length) {
		rx_fatal(qp, m, UROCE_WC_LOC_LEN_ERR, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	m->op = b[1];
	memcpy(&m->imm, b + 8, 4);
	if ((b[2] & SRW_DESC_FENCE) && !m->fence) {
		m->fence = true;
		sr_of(qp)->rx.nfence++;
	}
	m->len = len;
	m->npk = npkts(len, qp->mtu);
	m->have_npk = true;
	m->have_desc = true;
	m->desc_expected = true;
	m->is_ec = b[3] != 0;
	if (!m->have_first) {
		m->first_psn = roce_get_be32(b + 24) & ROCE_PSN_MASK;
		m->have_first = true;
	}
	sr_rx_mark_psn(qp, pkt->psn);
	sr_rx_note_pkt(qp, m, m->npk - 1); /* the last chunk may be whole now that its end is known */
	if (m->is_ec)
		for (uint32_t s = 0; s * sr_of(qp)->cfg.ec_k < m->npk; s++)
			ec_rx_sub(qp, m, s, true);
	sr_rx_check_done(qp, m);
}

static void rx_plain_write(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	struct mr_int *mr;

	if (pkt->payload_len != pkt->reth.dma_len || pkt->payload_len > qp->mtu) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	/* a zero-length one too: it marks its PSN arrived, so an unchecked
	 * one would make the real packet at that PSN a duplicate */
	mr = rx_check_write(qp, pkt->reth.rkey, pkt->reth.va, pkt->payload_len);
	if (!mr)
		return;
	if (pkt->payload_len)
		memcpy((uint8_t *)(uintptr_t)pkt->reth.va, pkt->payload, pkt->payload_len);
	sr_rx_mark_psn(qp, pkt->psn);
}

/* rel.imm_keyed: a packet's PSN from its message, not from its BTH (a
 * NIC's UC QPs number their own). The descriptor names its message's
 * first PSN and proves the connection with the token; a data or parity
 * packet sits where the sender's layout puts it (sr: first + 1 + index;
 * ec: ec_psn_*) once that descriptor is here (*slot: its message). */
static enum uroce_drop_reason keyed_psn(struct uroce_qp *qp, const struct roce_pkt *pkt, bool nic, uint32_t *psn,
                                        const struct sr_rmsg **slot)
{
	const struct sr_state *st = sr_of(qp);
	const struct sr_rx *r = &st->rx;
	uint32_t imm = pkt->imm, kind = srw_imm_kind(imm), idx = srw_imm_idx(imm);
	uint32_t seq = r->msg_cum + ((srw_imm_msg(imm) - r->msg_cum) & SRW_MSG_MASK);
	const struct sr_rmsg *m = &r->slot[seq % SR_MSG_WIN];
	bool in_win = seq - r->msg_cum < SR_MSG_WIN;

	/* what goes to rkey 0 comes as a SEND with immediate, WRITE with
	 * immediate carries only data to a region (a plain WRITE has no
	 * immediate to key by); what a NIC placed has no RETH here (the
	 * device checked its key) */
	if (pkt->opcode == (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM) ? kind > SRW_LAST_DESC || (pkt->reth.rkey == SRW_MSG_RKEY && !nic)
	                                                         : pkt->opcode != (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM))
		return UROCE_DROP_BAD_OPCODE;
	if (kind == SRW_DESC) {
		const uint8_t *b = pkt->payload;

		/* index 0: the copy before the data; 1: ec's copy after the
		 * parity, at the message's last PSN */
		if (pkt->payload_len < SRW_DESC_LEN || idx > 1 || (idx && !(st->ec && b[3])))
			return UROCE_DROP_BAD_CTRL;
		if (roce_get_be32(b + 28) != qp->tok_local)
			return UROCE_DROP_BAD_TOKEN;
		*psn = roce_get_be32(b + 24) & ROCE_PSN_MASK;
		if (idx)
			*psn = psn_add(*psn, ec_total_pkts(st, npkts(roce_get_be32(b + 4), qp->mtu)) - 1);
		return UROCE_DROP_NONE;
	}
	if (kind == SRW_PARITY ? !st->ec : kind > SRW_LAST_DESC)
		return UROCE_DROP_BAD_OPCODE;
	if (!in_win)
		return UROCE_DROP_STALE_MSG;
	if (!(m->bound && m->seq == seq && m->have_first && m->have_npk))
		return UROCE_DROP_NO_DESC; /* counted once the sender resends it */
	if (kind == SRW_PARITY && !m->is_ec)
		return UROCE_DROP_BAD_OPCODE; /* its descriptor said it has none */
	if (kind == SRW_PARITY)
		*psn = ec_psn_parity(st, m->first_psn, m->npk, idx);
	else
		*psn = m->is_ec ? ec_psn_data(st, m->first_psn, idx) : psn_add(m->first_psn, 1 + idx);
	*slot = m;
	return UROCE_DROP_NONE;
}

/* Keyed by immediate, the sender may be a NIC, which sets no AckReq: the
 * receiver asks for it where the sender would (sr_tx.c's wants_sack):
 * descriptors, a message's last packet, every ack_every PSNs. */
static bool keyed_asks(const struct sr_state *st, const struct roce_pkt *pkt)
{
	return srw_imm_kind(pkt->imm) != SRW_DATA || pkt->psn % st->ack_every == 0;
}

/* Keyed by immediate: a packet of a message finished and gone from the
 * window is a copy the sender sent again, its SACK lost; it gets one (at
 * most once per RTT, as a duplicate) so the sender stops. */
static void keyed_late(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	uint64_t now = ctx_now(qp->ctx);

	if (r->dup_sack_ns && now - r->dup_sack_ns < (st->tx.srtt ? st->tx.srtt : st->rto_min_ns))
		return;
	r->dup_sack_ns = now;
	r->sack_pending = true;
	ctx_kick(qp);
}

void sr_rx_data(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	uint32_t imm, seq, kind, idx, mtu = qp->mtu;
	struct sr_rmsg *m;
	struct roce_pkt keyed;
	bool late;
	int32_t d;

	if (pkt->opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY) && pkt->opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM) &&
	    !(qp->init.rel.imm_keyed && pkt->opcode == (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM))) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	if (qp->state < UROCE_QPS_RTR || qp->state > UROCE_QPS_SQD || !r->bits) {
		ctx_count_drop(qp->ctx, UROCE_DROP_QP_STATE);
		return;
	}
	if (qp->init.rel.imm_keyed) {
		const struct sr_rmsg *km = NULL;
		uint32_t psn = 0;
		enum uroce_drop_reason why = keyed_psn(qp, pkt, !f, &psn, &km);

		if (why != UROCE_DROP_NONE) {
			uint32_t msg = srw_imm_msg(pkt->imm);

			if (why == UROCE_DROP_STALE_MSG &&
			    ((r->msg_cum - msg) & SRW_MSG_MASK) - 1u < SR_MSG_WIN * 2u) /* recently finished */
				keyed_late(qp);
			ctx_count_drop(qp->ctx, why);
			return;
		}
		/* everything below reads the PSN the sender gave it, and a SEND as
		 * the WRITE to rkey 0 it stands for */
		keyed = *pkt;
		keyed.psn = psn;
		if (keyed.opcode == (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM) && km && km->write &&
		    srw_imm_kind(keyed.imm) <= SRW_LAST_DESC) {
			/* a WRITE's data sent by a failover backup (sr_tx.c):
			 * placed where its descriptor says, the key checked here
			 * (sr_rx_place), as the WRITE it stands for */
			keyed.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
			keyed.reth.rkey = km->rkey;
			keyed.reth.va = km->wqe.sge[0].addr + (uint64_t)srw_imm_idx(keyed.imm) * qp->mtu;
			keyed.reth.dma_len = keyed.payload_len;
		} else if (keyed.opcode == (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM)) {
			keyed.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
			keyed.reth.rkey = SRW_MSG_RKEY;
			keyed.reth.va = srw_imm_kind(keyed.imm) == SRW_DESC ? 0 : (uint64_t)srw_imm_idx(keyed.imm) * qp->mtu;
			keyed.reth.dma_len = keyed.payload_len;
		} else if (!f) {
			/* a NIC placed it where its message's descriptor said: the
			 * RETH it had, for the checks below (a WRITE with immediate
			 * is data, so keyed_psn found the message) */
			if (!km->write) {
				ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
				return;
			}
			keyed.reth.rkey = km->rkey;
			keyed.reth.va = km->wqe.sge[0].addr + (uint64_t)srw_imm_idx(keyed.imm) * qp->mtu;
			keyed.reth.dma_len = keyed.payload_len;
		}
		pkt = &keyed;
	}
	d = roce_psn_diff(pkt->psn, r->cum);
	if (d >= (int32_t)r->nbits) {
		qp->stats.out_of_sequence++;
		ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
		return;
	}
	if (d < 0 || bit_get(r->bits, pkt->psn & r->mask)) {
		/* a copy of what arrived: answer so the sender stops, count it so
		 * it learns its retransmission was not needed */
		uint64_t now = ctx_now(qp->ctx);

		qp->stats.duplicates++;
		r->dups++;
		r->dup_psn = pkt->psn;
		ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
		/* a SACK (and its copies on every path) for duplicates at most
		 * once per RTT: a sender resends no faster, so more duplicates
		 * than that are a forger's (anyone can send one behind cum) */
		if (r->dup_sack_ns && now - r->dup_sack_ns < (st->tx.srtt ? st->tx.srtt : st->rto_min_ns)) {
			qp->stats.dup_sacks_held++;
			return;
		}
		r->dup_sack_ns = now;
		r->sack_pending = true;
		r->fan_due = true;
		ctx_kick(qp);
		return;
	}
	if ((pkt->tos >> 2) == SRW_TRIM_DSCP && pkt->payload_len < pkt->reth.dma_len) {
		/* a switch cut its payload (trimming): nothing to place, but the
		 * sender learns at once which packet to send again */
		sr_rx_trimmed(qp, pkt->psn);
		return;
	}
	qp->rx_packets++;
	/* a SACK for the burst when a packet asks, and whenever one came out
	 * of order: ahead of a hole, or late into one (the sender's loss
	 * detection and its reordering window need both at once); only once
	 * the packet is taken (rx_advance_cum): a forged one gets no answer */
	r->ask = pkt->ackreq || d != 0 || roce_psn_diff(pkt->psn, r->high) < 0 ||
	         (qp->init.rel.imm_keyed && keyed_asks(st, pkt));
	if (r->ask && !r->ask_rx_ns) /* (a NIC's stamp when it has one) */
		r->ask_rx_ns = qp->ctx->nic_rx_ns ? qp->ctx->nic_rx_ns : ctx_now(qp->ctx);
	ctx_kick(qp); /* the SACK leaves in the next transmit pass: one per burst */
	if (pkt->opcode == (ROCE_TR_UC | ROCE_OP_WRITE_ONLY)) {
		rx_plain_write(qp, pkt);
		return;
	}
	imm = pkt->imm;
	kind = srw_imm_kind(imm);
	idx = srw_imm_idx(imm);
	seq = r->msg_cum + ((srw_imm_msg(imm) - r->msg_cum) & SRW_MSG_MASK);
	if (kind > SRW_PARITY || (kind == SRW_PARITY && !st->ec)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	if (seq - r->msg_cum >= SR_MSG_WIN) {
		/* a late packet of a message already finished (completed early,
		 * or whole by decoding): it lands nowhere, but its PSN counts so
		 * the sender stops. One from too far ahead is dropped unmarked. */
		bool behind = ((r->msg_cum - srw_imm_msg(imm)) & SRW_MSG_MASK) <= SRW_MSG_MASK + 1 - 2 * SR_MSG_WIN;
		/* only inside the span that message used: another PSN would
		 * make a current message's real packet a duplicate */
		enum uroce_drop_reason why = behind ? fin_check(qp, seq - (SRW_MSG_MASK + 1), pkt->psn, kind, idx)
		                                    : UROCE_DROP_STALE_MSG;

		if (why == UROCE_DROP_NONE)
			sr_rx_mark_psn(qp, pkt->psn);
		if (why != UROCE_DROP_NONE || (kind != SRW_PARITY && kind != SRW_DESC))
			ctx_count_drop(qp->ctx, why != UROCE_DROP_NONE ? why : UROCE_DROP_STALE_MSG);
		return;
	}
	fin_close(qp, seq, pkt->psn);
	m = &r->slot[seq % SR_MSG_WIN];
	if (!(m->bound && m->seq == seq)) {
		m = bind_upto(qp, seq);
		if (!m) {
			/* no receive WQE: dropped unmarked; the SACK tells the sender
			 * how many receives there are, and a post_recv brings the next */
			__atomic_store_n(&r->rnr, true, __ATOMIC_RELEASE);
			r->sack_pending = true;
			return;
		}
	}
	if (m->done) {
		/* its message finished (partial completion, or decoded): a late
		 * copy; an ec message's trailing parity and descriptor are
		 * expected, not counted. Its PSN counts only inside the span
		 * the message used. */
		enum uroce_drop_reason why = fin_check(qp, seq, pkt->psn, kind, idx);

		if (why != UROCE_DROP_NONE) {
			ctx_count_drop(qp->ctx, why);
			return;
		}
		sr_rx_mark_psn(qp, pkt->psn);
		if (kind != SRW_PARITY && kind != SRW_DESC)
			ctx_count_drop(qp->ctx, UROCE_DROP_STALE_MSG);
		return;
	}
	m->last_rx_ns = ctx_now(qp->ctx);
	m->nacks = 0; /* packets flow again: a later stall gets its NACK after one timeout */
	switch (kind) {
	case SRW_DESC:
		if (pkt->reth.rkey != SRW_MSG_RKEY) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_RKEY);
			return;
		}
		if (m->have_desc) {
			/* ec's second copy goes at the message's last PSN; one at
			 * any other PSN is not this message's */
			if (pkt->psn != m->first_psn &&
			    !(m->is_ec && m->have_npk && pkt->psn == psn_add(m->first_psn, ec_total_pkts(st, m->npk) - 1))) {
				ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
				return;
			}
			ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
			sr_rx_mark_psn(qp, pkt->psn);
			return;
		}
		rx_desc(qp, m, pkt);
		return;
	case SRW_PARITY:
		if (pkt->reth.rkey != SRW_MSG_RKEY || pkt->payload_len != mtu || pkt->reth.va != (uint64_t)idx * mtu) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
			return;
		}
		ec_rx_parity(qp, m, pkt, idx);
		return;
	default:
		break;
	}
	/* a data packet */
	/* only a zero-length message's one packet (index 0) is empty */
	if (idx >= r->max_pkts || pkt->payload_len != pkt->reth.dma_len || pkt->payload_len > mtu ||
	    (kind == SRW_DATA && pkt->payload_len != mtu) || (pkt->payload_len == 0 && idx != 0) ||
	    (m->have_npk && idx >= m->npk) ||
	    (m->have_npk && kind != SRW_DATA && idx + 1 != m->npk)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (pkt->reth.rkey == SRW_MSG_RKEY) {
		if (qp->init.rel.imm_counter) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE); /* a SEND's packet: a counting QP takes none */
			return;
		}
		if (m->write || pkt->reth.va != (uint64_t)idx * mtu) {
			ctx_count_drop(qp->ctx, UROCE_DROP_OUT_OF_BOUNDS);
			return;
		}
		if ((uint64_t)idx * mtu + pkt->payload_len > m->wqe.length) {
			rx_fatal(qp, m, UROCE_WC_LOC_LEN_ERR, UROCE_DROP_BAD_LENGTH_MSG);
			return;
		}
	} else {
		/* WRITE with immediate: into the rkey's region, at a consistent offset */
		uint64_t base = pkt->reth.va - (uint64_t)idx * mtu;

		if (pkt->reth.va < (uint64_t)idx * mtu || (m->write && (m->wqe.sge[0].addr != base || m->rkey != pkt->reth.rkey)) ||
		    (!m->write && m->nrecv)) {
			ctx_count_drop(qp->ctx, UROCE_DROP_OUT_OF_BOUNDS);
			return;
		}
		if (f && !rx_check_write(qp, pkt->reth.rkey, pkt->reth.va, pkt->payload_len))
			return; /* (a NIC checked the key of what it placed) */
		m->write = true;
		m->rkey = pkt->reth.rkey;
		m->op = UROCE_WR_RDMA_WRITE_WITH_IMM;
		m->wqe.sge[0].addr = base;
	}
	if (m->is_ec && !m->have_first) {
		/* ec messages take consecutive PSNs: this packet tells where it starts */
		m->first_psn = psn_add(pkt->psn, (uint32_t)-(int32_t)ec_psn_data(st, 0, idx)) & ROCE_PSN_MASK;
		m->have_first = true;
	}
	if (kind != SRW_DATA && !m->have_npk) {
		m->npk = idx + 1;
		m->len = idx * mtu + pkt->payload_len;
		m->have_npk = true;
	}
	if (!sr_rx_place(qp, m, idx * mtu, pkt->payload, pkt->payload_len))
		return;
	{
		/* where its packets went, for the span it keeps once finished */
		uint32_t base = psn_add(pkt->psn, (uint32_t)-idx);

		if (!m->have_base) {
			m->base_lo = m->base_hi = base;
			m->have_base = true;
		} else if (roce_psn_diff(base, m->base_lo) < 0) {
			m->base_lo = base;
		} else if (roce_psn_diff(base, m->base_hi) > 0) {
			m->base_hi = base;
		}
	}
	if (!bit_get(m->bits, idx)) {
		sr_msg_mark(m, idx);
		m->nrecv++;
		m->placed += pkt->payload_len;
		sr_rx_note_pkt(qp, m, idx);
	}
	if (kind == SRW_LAST_DESC)
		m->desc_expected = true;
	late = roce_psn_diff(pkt->psn, r->high) < 0; /* something sent after it came first */
	sr_rx_mark_psn(qp, pkt->psn);
	if (m->is_ec)
		ec_rx_sub(qp, m, idx / st->cfg.ec_k, late);
	sr_rx_check_done(qp, m);
}
