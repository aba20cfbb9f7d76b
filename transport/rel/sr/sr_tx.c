/* SPDX-License-Identifier: MIT */
/* sr's sender: posting a WR (its message number and flags), cutting a
 * WQE into packets (descriptor, data, ec parity), building and sending
 * each, resending those marked lost, and the transmit pass that runs them
 * all (sr_tx). */
#include <errno.h>
#include <string.h>

#include "transport/failover/failover.h"
#include "transport/rel/sr/sr_internal.h"
#include "transport/rel/sr/sr_ops.h"
#include "transport/core/mw.h"
#include "transport/core/seg.h"

/* --- posting -------------------------------------------------------------- */

int sr_post(struct uroce_qp *qp, const struct uroce_send_wr *wr, struct swqe *w)
{
	struct sr_state *st = sr_of(qp);
	uint32_t mtu = qp->mtu;
	int rc;

	if (wr_is_local(wr->opcode)) {
		/* BIND_MW / LOCAL_INV: no packet, no message number (mw.c) */
		w->msg_off = w->msg_len = w->unacked = 0;
		w->sr_flags = 0;
		return 0;
	}
	rc = sr_post_check(wr, w->length, mtu, st->ec ? "ec" : "sr");
	if (rc)
		return rc;
	w->msg_off = 0;
	w->msg_len = w->length;
	w->unacked = 0;
	w->sr_flags = 0;
	if (st->tx.posting) {
		pstream_fill(st->tx.posting, wr, w); /* a piece of a stream (partial.c) */
		return 0;
	}
	if (qp->init.rel.imm_counter && (wr->opcode == UROCE_WR_SEND || wr->opcode == UROCE_WR_SEND_WITH_IMM))
		return uroce_fail(-EINVAL, "uroce_post_send: QP 0x%x counts immediates (rel.imm_counter): it carries "
		                           "RDMA_WRITE and RDMA_WRITE_WITH_IMM only; send on another QP", qp->qpn);
	if (wr->opcode == UROCE_WR_RDMA_WRITE) {
		if (qp->init.rel.imm_keyed)
			return uroce_fail(-EINVAL, "uroce_post_send: QP 0x%x is keyed by immediate (rel.imm_keyed): it "
			                           "carries SEND, SEND_WITH_IMM and RDMA_WRITE_WITH_IMM (a NIC completes no "
			                           "plain RDMA_WRITE at the receiver)", qp->qpn);
		return 0; /* placed by its own RETH: no slot, no metadata */
	}
	w->sr_flags = SRW_F_SLOT;
	if (wr->send_flags & UROCE_SEND_FENCE)
		w->sr_flags |= SRW_F_FENCE | SRW_F_DESC; /* the descriptor says so */
	w->msg_seq = __atomic_fetch_add(&st->tx.msg_post, 1, __ATOMIC_RELAXED);
	if (wr->opcode != UROCE_WR_SEND)
		w->sr_flags |= SRW_F_DESC; /* the immediate travels in the descriptor */
	if (st->ec && npkts(w->length, mtu) >= st->ec_min_pkts)
		w->sr_flags |= SRW_F_DESC | SRW_F_EC; /* shorter ones go as sr (uroce_rel_attr.ec_min_pkts) */
	if (qp->init.rel.imm_keyed)
		w->sr_flags |= SRW_F_DESC; /* its first PSN travels there, not in the BTH */
	return 0;
}

/* --- sending -------------------------------------------------------------- */

void sr_tx_gather(const struct swqe *w, uint32_t off, uint8_t *dst, uint32_t len)
{
	sge_copy_out(w->sge, w->num_sge, off - w->msg_off, dst, len);
}

/* The descriptor's 32 bytes (docs/wire.md, "sr and ec"). */
void sr_desc_fill(const struct swqe *w, uint32_t first_psn, uint32_t token, uint8_t *b)
{
	memset(b, 0, SRW_DESC_LEN);
	b[0] = SRW_VERSION;
	b[1] = w->opcode;
	b[2] = (uint8_t)((w->opcode == UROCE_WR_SEND ? 0 : SRW_DESC_IMM) | ((w->sr_flags & SRW_F_FENCE) ? SRW_DESC_FENCE : 0));
	b[3] = (w->sr_flags & SRW_F_EC) ? 1 : 0;
	roce_put_be32(b + 4, w->msg_len);
	memcpy(b + 8, &w->imm, 4); /* as posted: network order */
	roce_put_be32(b + 12, w->rkey);
	roce_put_be64(b + 16, w->raddr);
	roce_put_be32(b + 24, first_psn);
	roce_put_be32(b + 28, token);
}

/* Build and stage the packet at ring entry psn. */
/* AckReq, as rc sets it: the receiver SACKs a burst when a packet in it
 * asks (or when it sees a gap or a duplicate). Asking on every packet
 * made one SACK per data packet once a burst spread over many QPs. Ask
 * on the last packet of each WQE (its completion waits for it), every
 * SR_ACKREQ_EVERY PSNs, on every retransmission, on descriptors and ec
 * packets, and on the packet that fills the window (nothing more could
 * leave to carry the ask). */
static bool wants_sack(const struct uroce_qp *qp, const struct sr_txp *p, const struct swqe *w, uint32_t psn)
{
	const struct sr_state *st = sr_of(qp);
	const struct sr_tx *t = &st->tx;

	/* ec keeps a SACK per packet: its sender resolves parity and
	 * descriptors from the receiver's message state, and its fallback
	 * (the NACK) is timed from the last packet seen */
	if (p->ntx || (p->flags & SRP_EC) || psn % st->ack_every == 0)
		return true;
	/* the packet that fills the window (a bulk sender sits at its edge,
	 * so asking on every packet near it would ask on nearly all) */
	if (((psn - t->una) & ROCE_PSN_MASK) + 1 >= t->win_pkts ||
	    (uint64_t)t->inflight_bytes + p->len + qp->mtu > t->win_bytes)
		return true;
	/* the last packet a controller lets out before it holds the rest:
	 * without a SACK for it the sender would sit out an RTO */
	if (sr_pc_last_before_hold(qp, p))
		return true;
	switch (p->kind) {
	case SRW_DESC:
		return true;
	default:
		return p->off + p->len >= w->msg_off + w->length;
	}
}

static int send_txp(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_state *st = sr_of(qp);
	struct sr_txp *p = &st->tx.ring[psn & st->tx.mask];
	struct swqe *w = sr_wqe_at(qp, p->sq_idx);
	uint8_t desc[SRW_DESC_LEN];
	struct seg s;
	unsigned path;
	int rc;

	rc = sr_pc_gate(qp, p, p->ntx != 0, &path, &s.d);
	if (rc)
		return rc;
	s.qp = qp;
	s.sport = st->ps.p[path].sport;
	s.path = (uint16_t)path;
	s.op = SEG_WRITE_IMM;
	s.flags = (st->cc.ops->flags & CC_ECN || (st->ps.cc && st->ps.cc[0].ops->flags & CC_ECN)) ? SEG_ECT : 0;
	s.dqpn = qp->dqpn;
	s.psn = psn;
	s.len = p->len;
	s.imm = p->imm;
	s.rkey = SRW_MSG_RKEY;
	s.buf = NULL;
	s.sge = NULL;
	switch (p->kind) {
	case SRP_PLAIN:
		s.op = SEG_WRITE;
		s.va = w->raddr + p->off;
		s.rkey = w->rkey;
		s.sge = w->sge;
		break;
	case SRW_DESC:
		/* a retransmitted descriptor needs its message's first PSN: it
		 * is kept in the entry's offset field */
		sr_desc_fill(w, p->off, qp->tok_remote, desc);
		s.buf = desc;
		s.va = 0;
		break;
	case SRW_PARITY:
		s.buf = st->tx.par + (size_t)(psn & st->tx.mask) * qp->mtu;
		s.va = (uint64_t)p->off * qp->mtu;
		break;
	default: /* data */
		if (w->opcode == UROCE_WR_RDMA_WRITE_WITH_IMM) {
			s.va = w->raddr + p->off;
			s.rkey = w->rkey;
		} else {
			s.va = p->off;
		}
		s.sge = w->sge;
		break;
	}
	if (s.sge) {
		s.nsge = w->num_sge;
		s.off = p->off - w->msg_off;
	}
	if (qp->init.rel.imm_keyed && s.op == SEG_WRITE_IMM) {
		if (s.rkey != SRW_MSG_RKEY && fo_on_backup(qp)) {
			/* the keys the peer gave are its primary's (a verbs
			 * peer's other devices have keys of their own): on a
			 * backup a WRITE's data goes to the message space, and
			 * the receiver places it by the message's descriptor,
			 * checking the key itself */
			s.rkey = SRW_MSG_RKEY;
			s.va = p->off;
		}
		if (s.rkey == SRW_MSG_RKEY)
			s.op = SEG_SEND_IMM; /* a NIC places nothing by rkey 0: it takes a SEND into a receive */
	}
	if (wants_sack(qp, p, w, psn))
		s.flags |= SEG_ACKREQ;
	rc = ctx_send_seg(qp->ctx, &s);
	if (rc)
		return rc == -EAGAIN ? -ENOBUFS : rc; /* -EAGAIN tells the callers a controller holds it */
	sr_pc_sent(qp, p, path);
	qp->tx_packets++;
	p->sent_ns = st->tx.now;
	if (!p->ntx)
		p->first_ns = p->sent_ns;
	p->ntx++;
	st->tx.last_tx_ns = p->sent_ns;
	return 0;
}

/* Take a new PSN for a packet of w. */
static struct sr_txp *txp_new(struct uroce_qp *qp, uint32_t sq_idx, uint8_t kind, uint32_t off, uint32_t len,
                              uint32_t imm)
{
	struct sr_state *st = sr_of(qp);
	struct sr_txp *p = &st->tx.ring[st->tx.nxt & st->tx.mask];

	memset(p, 0, sizeof(*p));
	p->sq_idx = sq_idx;
	p->kind = kind;
	p->off = off;
	p->len = (uint16_t)len;
	p->imm = imm;
	return p;
}

/* SRP_NOCREDIT for a packet of a probe, remembering the last such PSN so
 * that a credit update walks only up to it (and not at all without one). */
static uint8_t probe_flag(struct sr_tx *t, uint32_t psn)
{
	if (!t->probing)
		return 0;
	t->probe_any = true;
	t->probe_last = psn;
	return SRP_NOCREDIT;
}

static bool window_open(const struct sr_state *st, uint32_t n, uint32_t bytes)
{
	uint32_t used = (st->tx.nxt - st->tx.una) & ROCE_PSN_MASK;

	if (used + n > st->tx.win_pkts)
		return false;
	return used == 0 || st->tx.inflight_bytes + bytes <= st->tx.win_bytes;
}

/* The next new packet of the WQE at sq_cur; false when it cannot go now. */
static int tx_new(struct uroce_qp *qp, struct swqe *w)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint32_t mtu = qp->mtu, sq_idx = qp->sq_cur, npk, k = st->cfg.ec_k, m = st->cfg.ec_m;
	uint32_t msg12 = w->msg_seq & SRW_MSG_MASK, psn = t->nxt;
	struct sr_txp *p;
	int rc;

	npk = npkts(w->length, mtu);
	for (;;) {
		switch (t->phase) {
		case PH_START:
			if ((w->sr_flags & SRW_F_STREAM_END) ||
			    ((w->sr_flags & SRW_F_SLOT) && (int32_t)(w->msg_seq - t->peer_msg_cum) < 0)) {
				/* the end has no packet; a piece of a message a SACK
				 * says is delivered (completed early) would only be
				 * dropped there: it takes no PSN */
				t->phase = PH_DONE;
				continue;
			}
			if ((w->sr_flags & SRW_F_SLOT) &&
			    (int32_t)(w->msg_seq - (t->peer_msg_cum + SR_MSG_WIN)) >= 0)
				return -EAGAIN; /* the receiver's slots are all taken: a SACK reopens them */
			if ((w->sr_flags & SRW_F_SLOT) && t->have_limit &&
			    (int32_t)(w->msg_seq - t->peer_msg_limit) >= 0) {
				/* no receive posted for it: one probe when nothing is in
				 * flight (its SACK brings the credits), else wait */
				if (t->una != t->nxt) {
					qp->stats.credit_waits++;
					return -EAGAIN;
				}
				t->probing = true;
			}
			t->pidx = 0;
			t->sub = 0;
			t->par_j = 0;
			t->first_psn = t->nxt;
			sr_pc_msg_start(qp, w->msg_len);
			t->phase = (w->sr_flags & SRW_F_DESC) && w->msg_off == 0 ? PH_DESC1 : PH_DATA;
			continue;
		case PH_DESC1:
		case PH_DESC2:
			if (!window_open(st, 1, SRW_DESC_LEN))
				return -EAGAIN;
			/* keyed, ec's second copy says so (index 1): its PSN is the
			 * message's last, and the receiver has only the immediate */
			p = txp_new(qp, sq_idx, SRW_DESC, t->first_psn, SRW_DESC_LEN,
			            srw_imm(msg12, SRW_DESC, t->phase == PH_DESC2 && qp->init.rel.imm_keyed));
			p->flags = (uint8_t)(((w->sr_flags & SRW_F_EC) ? SRP_EC : 0) | probe_flag(t, psn));
			rc = send_txp(qp, psn);
			if (rc)
				return rc;
			t->phase = t->phase == PH_DESC1 ? PH_DATA : PH_DONE;
			break;
		case PH_DATA: {
			uint32_t off = t->pidx * mtu, len = w->length - off < mtu ? w->length - off : mtu;
			uint32_t moff = w->msg_off + off, idx = moff >> __builtin_ctz(mtu); /* path MTUs are powers of two */
			bool last = moff + len >= w->msg_len;
			uint8_t kind;

			if (w->length == 0)
				len = 0;
			if ((w->sr_flags & SRW_F_EC) && t->pidx && t->pidx % k == 0 &&
			    t->par_j < ec_sub_parity(st, npk, t->pidx / k - 1)) {
				/* parity of the submessage just sent goes out right after it */
				t->sub = t->pidx / k - 1;
				t->phase = PH_PARITY;
				continue;
			}
			if (t->pidx >= npk) {
				if (w->sr_flags & SRW_F_EC) {
					t->sub = (npk - 1) / k;
					t->phase = t->par_j < ec_sub_parity(st, npk, t->sub) ? PH_PARITY : PH_DESC2;
				} else {
					t->phase = PH_DONE;
				}
				continue;
			}
			if (!window_open(st, 1, len))
				return -EAGAIN;
			if (!(w->sr_flags & SRW_F_SLOT))
				kind = SRP_PLAIN;
			else if (!last)
				kind = SRW_DATA;
			else
				kind = (w->sr_flags & SRW_F_DESC) ? SRW_LAST_DESC : SRW_LAST;
			p = txp_new(qp, sq_idx, kind, moff, len, srw_imm(msg12, kind == SRP_PLAIN ? 0 : kind, idx));
			p->flags = (uint8_t)(((w->sr_flags & SRW_F_EC) ? SRP_EC : 0) | probe_flag(t, psn));
			rc = send_txp(qp, psn);
			if (rc)
				return rc;
			t->pidx++;
			t->par_j = 0;
			break;
		}
		case PH_PARITY: {
			uint32_t np = ec_sub_parity(st, npk, t->sub);

			if (t->par_j == 0) {
				/* all np parity packets take consecutive PSNs: encode into them at once */
				if (!window_open(st, np, np * mtu))
					return -EAGAIN;
				ec_tx_encode(qp, w, t->sub, psn);
			}
			p = txp_new(qp, sq_idx, SRW_PARITY, t->sub * m + t->par_j, mtu,
			            srw_imm(msg12, SRW_PARITY, t->sub * m + t->par_j));
			p->flags = (uint8_t)(SRP_EC | probe_flag(t, psn));
			rc = send_txp(qp, psn);
			if (rc)
				return rc;
			qp->stats.parity_sent++;
			if (++t->par_j == np)
				t->phase = t->pidx >= npk ? PH_DESC2 : PH_DATA;
			break;
		}
		case PH_DONE:
		default:
			t->phase = PH_START;
			t->probing = false;
			w->state = SWQE_SENT;
			qp->sq_cur++;
			return 0;
		}
		/* a packet left: account it */
		w->unacked++;
		t->inflight_bytes += t->ring[psn & t->mask].len;
		t->nxt = psn_add(t->nxt, 1);
		return 0;
	}
}

/* A packet sent 1 + retry_cnt times fails the QP only once it has gone
 * unacknowledged for as long as rc would wait: 1 + retry_cnt local ACK
 * timeouts (4.096 us x 2^timeout; 0 = never). sr resends much sooner than
 * that (its RTO follows the RTT), but a peer that is only slow for a few
 * milliseconds (descheduled) must not end the connection. */
static bool gave_up(const struct uroce_qp *qp, const struct sr_txp *p)
{
	uint64_t limit, base = p->first_ns;

	if (!qp->attr.timeout)
		return false;
	if (qp->fo) {
		/* retries count on the member the packet is on now */
		base = fo_retry_base(qp, base);
		if (base == UINT64_MAX)
			return false;
	}
	limit = (uint64_t)(qp->attr.retry_cnt + 1u) * (4096ull << qp->attr.timeout);
	return sr_of(qp)->tx.now - base >= limit;
}

/* Retransmit the packets marked lost: 0, -EAGAIN when a controller holds
 * them, -ENOBUFS when the TX stage is full. */
static int tx_lost(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	int rc;

	for (uint32_t psn = t->una; t->nlost && psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];

		if (!(p->flags & SRP_LOST))
			continue;
		if (p->flags & SRP_NOCREDIT) {
			/* a probe waiting for receives: not a loss, no retry spent */
			p->ntx = 1;
		} else if (p->ntx > qp->attr.retry_cnt && gave_up(qp, p)) {
			/* out of retries: as rc, the oldest WQE fails and the QP
			 * goes to ERR, which flushes the others */
			qp_fail_oldest(qp, UROCE_WC_RETRY_EXC_ERR);
			return 0;
		}
		rc = send_txp(qp, psn);
		if (rc)
			return rc;
		p->flags &= (uint8_t)~SRP_LOST;
		t->nlost--;
		qp->stats.retransmits++;
	}
	return 0;
}

/* --- transmit pass ---------------------------------------------------------- */

bool sr_tx(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	enum uroce_qp_state s = qp->state;
	unsigned budget = 64;
	int rc;

	if (s == UROCE_QPS_ERR) {
		qp_flush(qp);
		return false;
	}
	if (s != UROCE_QPS_RTR && s != UROCE_QPS_RTS && s != UROCE_QPS_SQD)
		return false;
	/* the clock, not the engine's iteration start: an application that
	 * posts after a pause would date its packets in the past */
	st->tx.now = ctx_clock(qp->ctx);
	if (__atomic_load_n(&st->rx.rnr, __ATOMIC_ACQUIRE) && sr_rx_msg_limit(qp) != st->rx.bind_next) {
		__atomic_store_n(&st->rx.rnr, false, __ATOMIC_RELEASE);
		st->rx.sack_pending = true; /* receives arrived: tell the waiting sender */
	}
	/* the trims first: the sender resends them before RACK, reading the
	 * SACK's holes, would wait out its reordering window */
	if (st->rx.ntrim && sr_send_trims(qp))
		return true;
	if (st->rx.sack_pending && sr_send_sack(qp))
		return true;
	if (st->ec && ec_rx_nacks(qp, st->tx.now))
		return true; /* a NACK did not fit in the TX stage */
	if (st->rx.eqds.pull_due && eqds_send_pull(qp))
		return true;
	if (s == UROCE_QPS_RTR)
		return false;
	if (st->tx.cc_gave_up && qp->sq_tail != head) {
		/* EQDS's RTSs went unanswered past every retry (sr_paths.c):
		 * as out of retries in tx_lost */
		qp_fail_oldest(qp, UROCE_WC_RETRY_EXC_ERR);
		return false;
	}
	rc = tx_lost(qp);
	if (rc == -EAGAIN) {
		/* a controller holds even the retransmissions: its pacer's
		 * time, or an acknowledgment, sends them */
		sr_retire(qp);
		sr_arm(qp);
		return false;
	}
	if (rc)
		return true;
	if (qp->state != s)
		return false; /* out of retries */
	while (qp->sq_cur != head && budget--) {
		struct swqe *w = sr_wqe_at(qp, qp->sq_cur);

		if (s == UROCE_QPS_SQD && w->state == SWQE_POSTED && st->tx.phase == PH_START)
			break;
		if (wr_is_local(w->opcode)) {
			/* carried out in queue order; it retires at the tail (sr_retire) */
			if (!qp_local_wr(qp, w))
				break; /* failed: nothing after it starts, the QP ends when it retires */
			qp->sq_cur++;
			continue;
		}
		if (qp->fo && w->state == SWQE_POSTED && st->tx.phase == PH_START && !fo_may_start(qp))
			break; /* failing back: the backup drains first */
		w->state = SWQE_SENDING;
		rc = tx_new(qp, w);
		if (rc == -EAGAIN)
			break; /* window or slots full: a SACK kicks us */
		if (rc)
			return true; /* TX stage full */
	}
	sr_retire(qp);
	sr_arm(qp);
	return budget == (unsigned)-1 && qp->sq_cur != head;
}
