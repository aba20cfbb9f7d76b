/* SPDX-License-Identifier: MIT */
/* be: best effort with bounded completion (OptiNIC sections 3.1-3.3).
 *
 * Nothing is retransmitted and nothing is acknowledged. Every packet is a
 * self-describing UC "RDMA WRITE Only with Immediate" (sr's wire format,
 * sr_wire.h), placed on arrival. The receiver keeps one active message,
 * the oldest receive WR: a packet of it is placed, a packet of a newer one
 * ends it (preemption), a packet of an older one is late and dropped. A
 * message ends when its last packet arrives, at its WR's deadline, or when
 * a newer one preempts it; its completion reports the bytes placed. A
 * send WR completes once its packets are out, or at its deadline with the
 * bytes sent.
 *
 * Keyed by immediate (rel.imm_keyed: a NIC's UC QPs number their own
 * PSNs, so the BTH PSN windows nothing): every message has a descriptor
 * with the connection's token, a message becomes active (and preempts)
 * only by its descriptor, and its data is taken only once that is here;
 * what goes to the receive's buffer travels as a SEND with immediate. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rel/rel.h"
#include "transport/rel/be/rel_be.h"
#include "transport/rel/sr/sr_ops.h"
#include "transport/core/mw.h"
#include "transport/core/rx_check.h"
#include "transport/core/seg.h"
#include "gpu/hadamard.h"

static uint32_t now_us(const struct uroce_qp *qp)
{
	return (uint32_t)(ctx_clock(qp->ctx) / 1000);
}

/* --- configuration ------------------------------------------------------ */

static int be_init(struct uroce_qp *qp)
{
	const struct uroce_rel_attr *a = &qp->init.rel;
	struct be_state *st;

	if (a->timeout_us > BE_TIMEOUT_MAX_US)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.timeout_us %u; accepted 0 (= %u) to %u", a->timeout_us,
		                  BE_TIMEOUT_DEFAULT_US, BE_TIMEOUT_MAX_US);
	if (a->imm_counter)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.imm_counter needs reliability rc, sr or ec: a be "
		                           "message may end incomplete, and a count cannot say how much of it arrived");
	if (qp->init.path.npaths > 1 || qp->init.cc.algo != UROCE_CC_NONE)
		return uroce_fail(-EINVAL, "uroce_qp_create: path.npaths %u / cc.algo %d: be sends on one path without "
		                           "congestion control (no acknowledgments to steer by); accepted npaths 0 or 1 "
		                           "and cc none, or reliability sr or ec", qp->init.path.npaths,
		                  (int)qp->init.cc.algo);
	if (a->hd_block) {
		int rc = hd_check("uroce_qp_create: rel.hd_block / hd_stride", NULL, 0, a->hd_block,
		                  a->hd_stride ? a->hd_stride : 1);

		if (rc || (rc = cq_hd_attach(qp->rcq)))
			return rc;
	} else if (a->hd_stride) {
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.hd_stride %u without rel.hd_block; accepted 0",
		                  a->hd_stride);
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	st->timeout_us = a->timeout_us ? a->timeout_us : BE_TIMEOUT_DEFAULT_US;
	qp->rel_state = st;
	return 0;
}

static void be_fini(struct uroce_qp *qp)
{
	free(qp->rel_state);
	qp->rel_state = NULL;
}

static void rx_clear(struct be_state *st)
{
	st->placed = st->len = st->imm = st->rkey = st->next_idx = 0;
	st->op = UROCE_WR_SEND;
	st->flags &= BE_F_DESC1 | BE_F_DESC2 | BE_F_TAIL; /* the sender's */
}

static int be_ready(struct uroce_qp *qp)
{
	struct be_state *st = be_of(qp);

	if (qp->state == UROCE_QPS_INIT) {
		/* INIT -> RTR: the receive side starts at the peer's first PSN */
		st->psn_hi = psn_add(qp->attr.rq_psn, ROCE_PSN_MASK);
		st->psn_gap = st->psn_hi;
		st->seen = 0;
	}
	return 0;
}

static void be_reset(struct uroce_qp *qp)
{
	struct be_state *st = be_of(qp);
	uint32_t t = st->timeout_us;

	memset(st, 0, sizeof(*st));
	st->timeout_us = t;
}

static size_t be_state_bytes(const struct uroce_qp *qp)
{
	(void)qp;
	return sizeof(struct be_state);
}

static size_t be_default_state_bytes(void)
{
	return sizeof(struct be_state);
}

int uroce_qp_set_timeout(struct uroce_qp *qp, uint32_t timeout_us)
{
	if (!qp || qp->rel != &rel_be_ops)
		return uroce_fail(-EINVAL, "uroce_qp_set_timeout: needs a QP with reliability be");
	if (!timeout_us || timeout_us > BE_TIMEOUT_MAX_US)
		return uroce_fail(-EINVAL, "uroce_qp_set_timeout: %u us; accepted 1 to %u", timeout_us,
		                  BE_TIMEOUT_MAX_US);
	__atomic_store_n(&be_of(qp)->timeout_us, timeout_us, __ATOMIC_RELAXED);
	return 0;
}

static uint32_t wr_timeout_us(const struct uroce_qp *qp, uint32_t t)
{
	return t ? t : __atomic_load_n(&be_of(qp)->timeout_us, __ATOMIC_RELAXED);
}

/* --- posting -------------------------------------------------------------- */

static int be_post(struct uroce_qp *qp, const struct uroce_send_wr *wr, struct swqe *w)
{
	struct be_state *st = be_of(qp);
	int rc;

	if (wr_is_local(wr->opcode))
		return 0; /* BIND_MW / LOCAL_INV: no packet, no message number (mw.c) */
	rc = sr_post_check(wr, w->length, qp->mtu, "be");
	if (rc)
		return rc;
	if (wr->opcode == UROCE_WR_RDMA_WRITE && qp->init.rel.imm_keyed)
		return uroce_fail(-EINVAL, "uroce_post_send: QP 0x%x is keyed by immediate (rel.imm_keyed): it carries "
		                           "SEND, SEND_WITH_IMM and RDMA_WRITE_WITH_IMM (a NIC completes no plain "
		                           "RDMA_WRITE at the receiver)", qp->qpn);
	if (wr->timeout_us > BE_TIMEOUT_MAX_US)
		return uroce_fail(-EINVAL, "uroce_post_send: timeout_us %u; accepted 0 (the QP's) to %u", wr->timeout_us,
		                  BE_TIMEOUT_MAX_US);
	w->msg_off = 0;
	w->msg_len = w->length;
	w->tx_off = 0;
	w->post_ns = ctx_clock(qp->ctx);
	/* a plain WRITE takes no receive: it carries the number of the next
	 * message that does, so the receiver knows every one before it is over */
	if (wr->opcode == UROCE_WR_RDMA_WRITE)
		w->msg_seq = __atomic_load_n(&st->msg_post, __ATOMIC_RELAXED);
	else
		w->msg_seq = __atomic_fetch_add(&st->msg_post, 1, __ATOMIC_RELAXED);
	return 0;
}

/* --- sending -------------------------------------------------------------- */

/* One packet of w: kind, packet index idx, payload [off, off + len). */
static int send_pkt(struct uroce_qp *qp, struct swqe *w, enum srw_kind kind, uint32_t idx, uint32_t off,
                    uint32_t len)
{
	uint8_t desc[SRW_DESC_LEN];
	struct seg s = { .qp = qp, .d = &qp->d, .sport = qp->sport, .op = SEG_WRITE_IMM, .dqpn = qp->dqpn,
	                 .psn = qp->snd_nxt, .len = len, .imm = srw_imm(w->msg_seq, kind, idx) };
	int rc;

	if (!(qp->snd_nxt & (BE_SYNC_PKTS - 1)) && !qp->init.rel.imm_keyed) {
		/* no state: a packet the stage refused after its SYNC went
		 * draws one more, harmless */
		uint8_t b[SRW_CTRL_HDR_LEN + SRW_SYNC_LEN];

		srw_ctrl_hdr(b, SRW_CTRL_SYNC, sizeof(b), qp->tok_remote);
		roce_put_be32(b + SRW_CTRL_HDR_LEN, qp->snd_nxt);
		rc = be_send_ctrl(qp, b, sizeof(b));
		if (rc)
			return rc;
	}
	if (kind == SRW_DESC) {
		sr_desc_fill(w, 0, qp->tok_remote, desc);
		s.buf = desc;
		s.rkey = SRW_MSG_RKEY;
		s.va = 0;
	} else {
		if (w->opcode == UROCE_WR_SEND || w->opcode == UROCE_WR_SEND_WITH_IMM) {
			s.rkey = SRW_MSG_RKEY; /* the receive's buffer, at this offset */
			s.va = off;
		} else {
			s.rkey = w->rkey;
			s.va = w->raddr + off;
		}
		s.sge = w->sge;
		s.nsge = w->num_sge;
		s.off = off - w->msg_off;
	}
	if (qp->init.rel.imm_keyed && s.rkey == SRW_MSG_RKEY)
		s.op = SEG_SEND_IMM; /* a NIC places nothing by rkey 0: it takes a SEND into a receive */
	rc = ctx_send_seg(qp->ctx, &s);
	if (rc)
		return rc;
	qp->snd_nxt = psn_add(qp->snd_nxt, 1);
	qp->tx_packets++;
	return 0;
}

/* Stage w's packets from where it stopped: the descriptor first (for the
 * immediate), the data, the descriptor again before the last packet (two
 * chances to arrive), the last. 0 when all are out, else the stage is full. */
static int tx_wqe(struct uroce_qp *qp, struct swqe *w)
{
	struct be_state *st = be_of(qp);
	uint32_t mtu = qp->mtu, n = npkts(w->length, mtu);
	/* keyed, every message has one: it proves the connection */
	bool desc = w->opcode == UROCE_WR_SEND_WITH_IMM || w->opcode == UROCE_WR_RDMA_WRITE_WITH_IMM ||
	            qp->init.rel.imm_keyed;
	int rc;

	if (desc && !(st->flags & BE_F_DESC1)) {
		rc = send_pkt(qp, w, SRW_DESC, 0, 0, SRW_DESC_LEN);
		if (rc)
			return rc;
		st->flags |= BE_F_DESC1;
	}
	while (w->tx_off < w->length || (w->length == 0 && !(st->flags & BE_F_DESC2))) {
		uint32_t idx = w->tx_off / mtu, len = w->length - w->tx_off < mtu ? w->length - w->tx_off : mtu;
		bool last = idx + 1 == n;
		enum srw_kind kind = w->opcode == UROCE_WR_RDMA_WRITE ? SRW_BE_WRITE : last ? SRW_LAST : SRW_DATA;

		if (last && desc && n > 1 && !(st->flags & BE_F_DESC2)) {
			rc = send_pkt(qp, w, SRW_DESC, 0, 0, SRW_DESC_LEN);
			if (rc)
				return rc;
			st->flags |= BE_F_DESC2;
		}
		if (!(st->flags & BE_F_TAIL)) {
			rc = send_pkt(qp, w, kind, idx, w->tx_off, len);
			if (rc)
				return rc;
		}
		if (kind == SRW_LAST) {
			/* the tail again: one packet more per message, and a lost
			 * last packet no longer leaves the message to its deadline */
			st->flags |= BE_F_TAIL;
			rc = send_pkt(qp, w, SRW_BE_TAIL, idx, w->tx_off, len);
			if (rc)
				return rc;
			st->flags &= (uint8_t)~BE_F_TAIL;
		}
		if (w->length == 0) {
			st->flags |= BE_F_DESC2; /* the one empty packet went out */
			break;
		}
		w->tx_off += len;
	}
	return 0;
}

/* A send WR is over: its packets are out, or its deadline passed first. */
static void tx_done(struct uroce_qp *qp, struct swqe *w, bool timed_out)
{
	struct be_state *st = be_of(qp);

	if (timed_out) {
		struct uroce_wc wc;

		qp->stats.be_timeouts++;
		if (w->signaled) {
			memset(&wc, 0, sizeof(wc));
			wc.wr_id = w->wr_id;
			wc.status = UROCE_WC_SUCCESS;
			wc.opcode = w->opcode == UROCE_WR_SEND || w->opcode == UROCE_WR_SEND_WITH_IMM ? UROCE_WC_SEND :
			                                                                              UROCE_WC_RDMA_WRITE;
			wc.byte_len = w->tx_off;
			wc.wc_flags = UROCE_WC_TIMEOUT | UROCE_WC_PARTIAL;
			wc.qp_num = qp->qpn;
			cq_push(qp->scq, &wc);
		}
	} else {
		qp->rel->complete(qp, w, UROCE_WC_SUCCESS);
	}
	w->state = SWQE_SENT;
	st->flags &= (uint8_t)~(BE_F_DESC1 | BE_F_DESC2 | BE_F_TAIL);
	qp->sq_cur++;
	qp->sq_tail = qp->sq_cur;
}

/* --- receiving ------------------------------------------------------------ */

static void arm(struct uroce_qp *qp)
{
	struct be_state *st = be_of(qp);
	uint64_t now = ctx_clock(qp->ctx);
	int64_t left;

	if (!qp->have_rwqe) {
		engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
		return;
	}
	/* start_us is the clock's low 32 bits of microseconds: compare by difference */
	left = (int64_t)wr_timeout_us(qp, qp->cur_rwqe.timeout_us) - (int32_t)((uint32_t)(now / 1000) - st->start_us);
	engine_timer_arm(qp->ctx->eng, &qp->retry_timer, now + (left > 0 ? (uint64_t)left * 1000 : 0));
}

/* The oldest receive WR becomes the active message's: its deadline starts. */
static bool activate(struct uroce_qp *qp)
{
	struct be_state *st = be_of(qp);

	if (qp->have_rwqe)
		return true;
	if (!qp_take_rwqe(qp, &qp->cur_rwqe))
		return false;
	qp->have_rwqe = true;
	st->start_us = now_us(qp);
	arm(qp);
	return true;
}

/* rel.hd_block: the receive's buffer is decoded by the poller. What never
 * arrived is zeroed first: packets come in index order (one behind the
 * highest taken is dropped), so everything from next_idx on is missing.
 * Decoded are the message's whole groups; where no packet said its length,
 * the buffer's (past the message it is zero and decodes to zero). The
 * record goes before the completion, which the poller reads first. */
static void hd_finish(struct uroce_qp *qp, struct uroce_wc *wc)
{
	const struct be_state *st = be_of(qp);
	const struct rwqe *r = &qp->cur_rwqe;
	uint32_t block = qp->init.rel.hd_block, stride = qp->init.rel.hd_stride ? qp->init.rel.hd_stride : 1;
	uint64_t group = (uint64_t)block * stride * sizeof(float), off = (uint64_t)st->next_idx * qp->mtu, len;
	struct cq_hd h;

	if (wc->status != UROCE_WC_SUCCESS || st->op == UROCE_WR_RDMA_WRITE_WITH_IMM || r->num_sge != 1)
		return;
	len = (st->flags & BE_F_LEN) && st->len < r->length ? st->len : r->length;
	len -= len % group;
	if (off < len)
		sge_zero(r->sge, r->num_sge, (uint32_t)off, (uint32_t)(len - off));
	h = (struct cq_hd){ (float *)(uintptr_t)r->sge[0].addr, (size_t)(len / sizeof(float)), block, stride };
	if (spsc_ring_enqueue_burst(qp->rcq->hd, &h, 1) == 1)
		wc->wc_flags |= UROCE_WC_HADAMARD;
}

/* End the active message (its number is st->cur): its completion, then
 * the next number and the next receive WR. */
static void finish(struct uroce_qp *qp, unsigned why)
{
	struct be_state *st = be_of(qp);
	bool whole = (st->flags & BE_F_LEN) && st->placed == st->len && !why;
	struct uroce_wc wc;

	if (qp->have_rwqe) {
		uint32_t active = now_us(qp) - st->start_us;

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qp->cur_rwqe.wr_id;
		wc.status = (st->flags & BE_F_ERR) ? UROCE_WC_LOC_LEN_ERR : UROCE_WC_SUCCESS;
		wc.opcode = st->op == UROCE_WR_RDMA_WRITE_WITH_IMM ? UROCE_WC_RECV_RDMA_WITH_IMM : UROCE_WC_RECV;
		wc.byte_len = st->placed;
		wc.qp_num = qp->qpn;
		wc.src_qp = qp->dqpn;
		wc.wc_flags = why | (whole ? 0 : UROCE_WC_PARTIAL);
		if ((st->flags & BE_F_DESC) && st->op != UROCE_WR_SEND) {
			wc.wc_flags |= UROCE_WC_WITH_IMM;
			wc.imm_data = st->imm;
		}
		if (why & UROCE_WC_TIMEOUT)
			qp->stats.be_timeouts++;
		if (why & UROCE_WC_PREEMPTED)
			qp->stats.be_preempted++;
		qp->stats.op_ns += (uint64_t)active * 1000;
		qp->stats.op_bytes += st->placed;
		if (qp->init.rel.hd_block)
			hd_finish(qp, &wc);
		cq_push(qp->rcq, &wc);
		qp->have_rwqe = false;
	}
	/* a WRITE with immediate that did not end whole: its key, if a
	 * window's, is revoked so that no straggler writes after the
	 * completion (OptiNIC's per-operation windows). Only a key that
	 * placed a packet of it: a descriptor alone (forged) names any key */
	if ((st->flags & (BE_F_WRITE | BE_F_KEYED)) == (BE_F_WRITE | BE_F_KEYED) && why)
		mw_remote_invalidate(qp, st->rkey); /* a region's key stays: only windows are revoked */
	st->cur++;
	rx_clear(st);
	activate(qp);
	if (!qp->have_rwqe)
		engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
}

static void be_timer(struct wheel_timer *t, void *arg)
{
	struct uroce_qp *qp = arg;
	struct be_state *st = be_of(qp);

	(void)t;
	if (!qp->have_rwqe || qp->state < UROCE_QPS_RTR || qp->state > UROCE_QPS_SQD)
		return;
	if ((int32_t)(now_us(qp) - st->start_us) < (int32_t)wr_timeout_us(qp, qp->cur_rwqe.timeout_us)) {
		arm(qp); /* the QP's timeout grew since it was armed */
		return;
	}
	finish(qp, UROCE_WC_TIMEOUT);
}

/* Dedup and window by PSN: true when psn is new (and now marked). Behind
 * the duplicate window only a jumped-over PSN is new (psn_gap). */
static bool psn_take(struct uroce_qp *qp, uint32_t psn)
{
	struct be_state *st = be_of(qp);
	int32_t d = roce_psn_diff(psn, st->psn_hi);

	if (d > (int32_t)BE_PSN_AHEAD) {
		qp->stats.out_of_sequence++;
		ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
		return false;
	}
	if (d > 0) {
		/* no jumped-over PSNs left: what lies past the old highest was never seen */
		if (roce_psn_diff(st->psn_hi, st->psn_gap) <= (int32_t)BE_DUP_WIN)
			st->psn_gap = st->psn_hi;
		st->seen = d >= (int32_t)BE_DUP_WIN ? 1 : st->seen << d | 1;
		st->psn_hi = psn;
		return true;
	}
	if (-d >= (int32_t)BE_DUP_WIN && roce_psn_diff(psn, st->psn_gap) > 0) {
		st->psn_gap = psn; /* jumped over, new: taken; anything at or behind it is late from now on */
		return true;
	}
	if (-d >= (int32_t)BE_DUP_WIN) {
		qp->stats.late_drops++;
		ctx_count_drop(qp->ctx, UROCE_DROP_LATE);
		return false;
	}
	if ((st->seen >> -d) & 1) {
		qp->stats.duplicates++;
		ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
		return false;
	}
	st->seen |= 1u << -d;
	return true;
}

static void rx_desc(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	struct be_state *st = be_of(qp);
	const uint8_t *b = pkt->payload;
	uint32_t len;

	if (pkt->payload_len != SRW_DESC_LEN || pkt->reth.rkey != SRW_MSG_RKEY || b[0] != SRW_VERSION ||
	    (b[1] != UROCE_WR_SEND_WITH_IMM && b[1] != UROCE_WR_RDMA_WRITE_WITH_IMM &&
	     !(b[1] == UROCE_WR_SEND && qp->init.rel.imm_keyed)) || b[3]) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	len = roce_get_be32(b + 4);
	if (npkts(len, qp->mtu) > SR_MAX_MSG_PKTS || ((st->flags & BE_F_LEN) && len != st->len) ||
	    ((st->flags & BE_F_DESC) && st->op != b[1])) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (b[1] == UROCE_WR_SEND_WITH_IMM && len > qp->cur_rwqe.length)
		st->flags |= BE_F_ERR; /* it cannot fit: completes with LOC_LEN_ERR */
	if (b[1] == UROCE_WR_RDMA_WRITE_WITH_IMM && !(st->flags & BE_F_WRITE)) {
		st->flags |= BE_F_WRITE;
		st->rkey = roce_get_be32(b + 12);
	}
	st->op = b[1];
	memcpy(&st->imm, b + 8, 4);
	st->len = len;
	st->flags |= BE_F_DESC | BE_F_LEN;
}

/* A plain WRITE's packet: placed by its RETH alone. */
static void rx_write(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	if (pkt->payload_len > qp->mtu) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (pkt->payload_len && rx_check_write(qp, pkt->reth.rkey, pkt->reth.va, pkt->payload_len))
		memcpy((uint8_t *)(uintptr_t)pkt->reth.va, pkt->payload, pkt->payload_len);
}

/* A data packet of the active message: place it and count its bytes. */
static void rx_data_pkt(struct uroce_qp *qp, const struct roce_pkt *pkt, uint32_t kind, uint32_t idx, bool nic)
{
	struct be_state *st = be_of(qp);
	uint32_t mtu = qp->mtu, len = pkt->payload_len;
	uint64_t off = (uint64_t)idx * mtu;

	/* the sender sends a message's packets in index order: one at or
	 * behind an index taken already is a copy under another PSN (or was
	 * overtaken), and would count its bytes twice */
	if (idx < st->next_idx) {
		qp->stats.duplicates++;
		ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
		return;
	}
	if (len > mtu || (kind == SRW_DATA && len != mtu) || ((st->flags & BE_F_LEN) && off + len > st->len) ||
	    ((st->flags & BE_F_LEN) && kind == SRW_LAST && off + len != st->len)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (pkt->reth.rkey == SRW_MSG_RKEY) {
		if ((st->flags & BE_F_WRITE) || pkt->reth.va != off) {
			ctx_count_drop(qp->ctx, UROCE_DROP_OUT_OF_BOUNDS);
			return;
		}
		if (off + len > qp->cur_rwqe.length) {
			st->flags |= BE_F_ERR;
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
			return;
		}
		/* rel.hd_block: the packets jumped over never come (see hd_finish) */
		if (qp->init.rel.hd_block && idx > st->next_idx)
			sge_zero(qp->cur_rwqe.sge, qp->cur_rwqe.num_sge, st->next_idx * mtu, (uint32_t)off - st->next_idx * mtu);
		if (len)
			sge_copy_in(qp->cur_rwqe.sge, qp->cur_rwqe.num_sge, (uint32_t)off, pkt->payload, len);
	} else {
		/* WRITE with immediate: into the key's region; one key a message */
		if (((st->flags & BE_F_WRITE) && pkt->reth.rkey != st->rkey) ||
		    ((st->flags & BE_F_DESC) && st->op != UROCE_WR_RDMA_WRITE_WITH_IMM) || (!(st->flags & BE_F_WRITE) && st->placed)) {
			ctx_count_drop(qp->ctx, UROCE_DROP_OUT_OF_BOUNDS);
			return;
		}
		/* (a NIC checked the key of what it placed) */
		if (len && !nic && !rx_check_write(qp, pkt->reth.rkey, pkt->reth.va, len))
			return;
		st->flags |= BE_F_WRITE | (len ? BE_F_KEYED : 0);
		st->rkey = pkt->reth.rkey;
		st->op = UROCE_WR_RDMA_WRITE_WITH_IMM;
		if (len && !nic)
			memcpy((uint8_t *)(uintptr_t)pkt->reth.va, pkt->payload, len);
	}
	st->placed += len;
	st->next_idx = idx + 1;
	if (kind == SRW_LAST) {
		st->len = (uint32_t)off + len;
		st->flags |= BE_F_LEN;
		finish(qp, 0); /* the last packet ends the message, whole or not */
	}
}

/* rel.imm_keyed: the packet as be reads it, or NULL (dropped, counted).
 * A descriptor proves the connection by the token; a SEND with immediate
 * is the WRITE to rkey 0 it stands for; a WRITE with immediate a NIC
 * placed gets back its key from its message's descriptor (where it went
 * the NIC checked, and nothing here reads). Data of a
 * message is taken only once its descriptor is here (the active one's). */
static const struct roce_pkt *keyed_pkt(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt,
                                        struct roce_pkt *out)
{
	struct be_state *st = be_of(qp);
	uint32_t kind = srw_imm_kind(pkt->imm), idx = srw_imm_idx(pkt->imm);
	enum uroce_drop_reason why = UROCE_DROP_NONE;

	if (pkt->opcode == (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM) ? kind == SRW_DESC || pkt->reth.rkey == SRW_MSG_RKEY
	                                                         : pkt->opcode != (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM))
		why = UROCE_DROP_BAD_OPCODE;
	else if (kind != SRW_DATA && kind != SRW_LAST && kind != SRW_DESC && kind != SRW_BE_TAIL)
		why = UROCE_DROP_BAD_OPCODE;
	else if (kind == SRW_DESC && pkt->payload_len != SRW_DESC_LEN)
		why = UROCE_DROP_BAD_CTRL;
	else if (kind == SRW_DESC && roce_get_be32(pkt->payload + 28) != qp->tok_local)
		why = UROCE_DROP_BAD_TOKEN;
	else if (kind != SRW_DESC && srw_imm_msg(pkt->imm) == (st->cur & SRW_MSG_MASK) && !(st->flags & BE_F_DESC))
		why = UROCE_DROP_NO_DESC;
	else if (kind != SRW_DESC && ((srw_imm_msg(pkt->imm) - st->cur) & SRW_MSG_MASK) - 1u < BE_MSG_HALF - 1u)
		why = UROCE_DROP_NO_DESC; /* a newer message's: only its descriptor may end the active one */
	if (why != UROCE_DROP_NONE) {
		ctx_count_drop(qp->ctx, why);
		return NULL;
	}
	*out = *pkt;
	if (pkt->opcode == (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM)) {
		out->opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
		out->reth.rkey = SRW_MSG_RKEY;
		out->reth.va = kind == SRW_DESC ? 0 : (uint64_t)idx * qp->mtu;
	} else if (!f && srw_imm_msg(pkt->imm) == (st->cur & SRW_MSG_MASK)) {
		if (!(st->flags & BE_F_WRITE)) {
			/* placed under a key the active message's descriptor does
			 * not name (it is not a WRITE's): nothing to count */
			ctx_count_drop(qp->ctx, UROCE_DROP_OUT_OF_BOUNDS);
			return NULL;
		}
		out->reth.rkey = st->rkey;
		out->reth.va = 0;
	} /* (an older message's is late: only counted) */
	out->reth.dma_len = pkt->payload_len;
	return out;
}

static void be_rx_data(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	struct be_state *st = be_of(qp);
	struct roce_pkt keyed;
	bool key = qp->init.rel.imm_keyed;
	uint32_t kind, d;

	if (key && !(pkt = keyed_pkt(qp, f, pkt, &keyed)))
		return;
	if (pkt->opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	kind = srw_imm_kind(pkt->imm);
	if (kind != SRW_DATA && kind != SRW_LAST && kind != SRW_DESC && kind != SRW_BE_WRITE && kind != SRW_BE_TAIL) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	if (pkt->payload_len != pkt->reth.dma_len) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	/* its message: the active one, a newer one (the sender moved on:
	 * the active one and any skipped end now) or an older one (late) */
	d = (srw_imm_msg(pkt->imm) - st->cur) & SRW_MSG_MASK;
	if (d >= BE_MSG_HALF) {
		if (kind == SRW_BE_TAIL && d == SRW_MSG_MASK) {
			/* the tail's copy after the tail: expected, a duplicate by
			 * design (one psn_take refuses is counted there, once) */
			if (key || psn_take(qp, pkt->psn)) {
				qp->stats.duplicates++;
				ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
			}
			return;
		}
		qp->stats.late_drops++;
		ctx_count_drop(qp->ctx, UROCE_DROP_LATE);
		return;
	}
	if (d > BE_MSG_AHEAD) {
		ctx_count_drop(qp->ctx, UROCE_DROP_STALE_MSG);
		return;
	}
	if (!key && !psn_take(qp, pkt->psn))
		return; /* keyed, the PSN is the NIC's: a copy is one at or behind next_idx */
	qp->rx_packets++;
	while (d--) {
		activate(qp); /* a skipped message ends its receive WR too, empty */
		finish(qp, UROCE_WC_PREEMPTED);
	}
	if (kind == SRW_BE_WRITE) {
		rx_write(qp, pkt);
		return;
	}
	if (!activate(qp)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_NO_RECV_BUFFER);
		return;
	}
	if (kind == SRW_DESC)
		rx_desc(qp, pkt);
	else
		rx_data_pkt(qp, pkt, kind == SRW_BE_TAIL ? SRW_LAST : kind, srw_imm_idx(pkt->imm), !f);
}

/* --- control: adaptive-timeout votes ------------------------------------- */

static bool be_is_ctrl(const struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	return pkt->dqpn == qp->ctrl_qpn;
}

int be_send_ctrl(struct uroce_qp *qp, const uint8_t *body, uint32_t len)
{
	struct be_state *st = be_of(qp);
	int rc;

	rc = ctx_send_seg(qp->ctx, &(struct seg){ .qp = qp, .d = &qp->d, .sport = qp->sport, .op = SEG_SEND, .dqpn = qp_ctrl_dqpn(qp),
	                                          .psn = st->ctrl_psn, .len = len, .buf = body });
	if (rc)
		return rc;
	st->ctrl_psn++;
	qp->tx_packets++;
	return 0;
}

/* The sender's next PSN. Inside the window (or behind it: a late copy)
 * it says nothing new. Further ahead, more than BE_PSN_AHEAD packets in a
 * row were lost: the window moves there, as it would have had they
 * arrived. Only the peer knows the token that got this far. */
static void rx_sync(struct uroce_qp *qp, const uint8_t *body)
{
	struct be_state *st = be_of(qp);
	uint32_t psn = roce_get_be32(body) & ROCE_PSN_MASK, hi = psn_add(psn, ROCE_PSN_MASK);
	int32_t d = roce_psn_diff(hi, st->psn_hi);

	if (d <= (int32_t)BE_PSN_AHEAD)
		return;
	st->psn_hi = st->psn_gap = hi;
	st->seen = 1; /* hi was lost with the rest: a copy of it is no news */
}

static void be_rx_ctrl(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	const uint8_t *b = pkt->payload;
	uint32_t blen;

	if (pkt->opcode != (ROCE_TR_UC | ROCE_OP_SEND_ONLY) || pkt->payload_len < SRW_CTRL_HDR_LEN ||
	    b[0] != SRW_VERSION || roce_get_be16(b + 2) != pkt->payload_len) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	blen = pkt->payload_len - SRW_CTRL_HDR_LEN;
	if (b[1] == SRW_CTRL_VOTE && blen == SRW_VOTE_LEN) {
		qp->rx_packets++;
		tmo_rx_vote(qp, b + SRW_CTRL_HDR_LEN, SRW_VOTE_LEN);
	} else if (b[1] == SRW_CTRL_SYNC && blen == SRW_SYNC_LEN) {
		qp->rx_packets++;
		rx_sync(qp, b + SRW_CTRL_HDR_LEN);
	} else {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
	}
}

/* --- transmit pass -------------------------------------------------------- */

static bool be_tx(struct uroce_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	enum uroce_qp_state s = qp->state;
	unsigned budget = 64;

	if (s == UROCE_QPS_ERR) {
		engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
		qp_flush(qp);
		return false;
	}
	if (s != UROCE_QPS_RTR && s != UROCE_QPS_RTS && s != UROCE_QPS_SQD)
		return false;
	activate(qp); /* a receive posted: its deadline starts now */
	if (s == UROCE_QPS_RTR)
		return false;
	while (qp->sq_cur != head && budget--) {
		struct swqe *w = &qp->sq[qp->sq_cur & qp->sq_mask];
		uint64_t now = ctx_clock(qp->ctx);

		if (s == UROCE_QPS_SQD && w->state == SWQE_POSTED)
			break;
		if (wr_is_local(w->opcode)) {
			/* nothing is outstanding in be: it completes at once, in order */
			qp_local_wr(qp, w);
			qp->sq_cur++;
			if (!qp_local_retire(qp, w))
				return false; /* its failure ended the QP */
			continue;
		}
		w->state = SWQE_SENDING;
		if (now > w->post_ns && now - w->post_ns >= (uint64_t)wr_timeout_us(qp, w->timeout_us) * 1000) {
			tx_done(qp, w, true); /* its deadline came before its last packet left */
			continue;
		}
		if (tx_wqe(qp, w))
			return true; /* the stage is full: the next pass goes on */
		tx_done(qp, w, false);
	}
	return qp->sq_cur != head;
}

static void be_error(struct uroce_qp *qp)
{
	engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
	rx_clear(be_of(qp));
}

static bool be_rx_wants_kick(const struct uroce_qp *qp)
{
	return !__atomic_load_n(&qp->have_rwqe, __ATOMIC_RELAXED);
}

const struct rel_ops rel_be_ops = {
	.name = "be",
	.init = be_init,
	.fini = be_fini,
	.ready = be_ready,
	.post = be_post,
	.tx = be_tx,
	.rx_data = be_rx_data,
	.rx_ctrl = be_rx_ctrl,
	.is_ctrl = be_is_ctrl,
	.timer = be_timer,
	.complete = qp_complete_swqe,
	.error = be_error,
	.reset = be_reset,
	.state_bytes = be_state_bytes,
	.rx_wants_kick = be_rx_wants_kick,
	.default_state_bytes = be_default_state_bytes,
};
