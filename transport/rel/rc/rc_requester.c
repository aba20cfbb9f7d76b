/* SPDX-License-Identifier: MIT */
/* Requester: turns send WQEs into packets (RC, UC and UD share the path):
 * segmentation at the path MTU, PSN assignment, AckReq, the RC send window
 * and READ/atomic credits; UC/UD WQEs complete once sent; RC's BIND_MW and
 * LOCAL_INV are carried out when the cursor reaches them (mw.c). Also
 * rc_tx, the policy's transmit step (rel_rc.c). */
#include <errno.h>
#include <string.h>

#include "transport/failover/failover.h"
#include "transport/core/qp_internal.h"
#include "transport/core/mw.h"
#include "transport/rel/rc/rc.h"

struct gather {
	const struct uroce_sge *sge;
	uint32_t nsge;
	uint32_t off;
};

static void gather_sges(void *arg, uint8_t *dst, uint32_t len)
{
	const struct gather *g = arg;

	sge_copy_out(g->sge, g->nsge, g->off, dst, len);
}


void req_complete(struct uroce_qp *qp, struct swqe *w, enum uroce_wc_status st)
{
	if (wr_is_rd(w->opcode) && w->state != SWQE_POSTED && qp->rc.rd_outstanding) {
		qp->rc.rd_outstanding--;
		if (w->opcode == UROCE_WR_RDMA_READ)
			qp->rc.rd_resp_pkts -= qp->rc.rd_resp_pkts < rd_req_pkts(w->length, qp->mtu) ?
			                            qp->rc.rd_resp_pkts : rd_req_pkts(w->length, qp->mtu);
	}
	qp_complete_swqe(qp, w, st);
}

static inline bool is_rd(const struct swqe *w)
{
	return wr_is_rd(w->opcode);
}

/* The opcode credits count: a SEND with Invalidate takes a receive WQE
 * as any SEND does. */
static inline uint8_t credit_op(const struct swqe *w)
{
	return w->opcode == UROCE_WR_SEND_WITH_INV ? (uint8_t)UROCE_WR_SEND : w->opcode;
}

void rc_arm_retry(struct uroce_qp *qp)
{
	if (!qp->attr.timeout)
		return; /* 0 = infinite: never time out */
	/* 4.096 us * 2^timeout from now (the clock, not the iteration's start) */
	engine_timer_arm(qp->ctx->eng, &qp->retry_timer, ctx_clock(qp->ctx) + (4096ull << qp->attr.timeout));
}

static int send_pkt(struct uroce_qp *qp, struct swqe *w)
{
	static const uint8_t send_op[3][4] = {
		/* FIRST, MIDDLE, LAST, ONLY */
		{ ROCE_OP_SEND_FIRST, ROCE_OP_SEND_MIDDLE, ROCE_OP_SEND_LAST, ROCE_OP_SEND_ONLY },
		{ ROCE_OP_SEND_FIRST, ROCE_OP_SEND_MIDDLE, ROCE_OP_SEND_LAST_IMM, ROCE_OP_SEND_ONLY_IMM },
		{ ROCE_OP_SEND_FIRST, ROCE_OP_SEND_MIDDLE, ROCE_OP_SEND_LAST_INV, ROCE_OP_SEND_ONLY_INV },
	};
	static const uint8_t write_op[2][4] = {
		{ ROCE_OP_WRITE_FIRST, ROCE_OP_WRITE_MIDDLE, ROCE_OP_WRITE_LAST, ROCE_OP_WRITE_ONLY },
		{ ROCE_OP_WRITE_FIRST, ROCE_OP_WRITE_MIDDLE, ROCE_OP_WRITE_LAST_IMM, ROCE_OP_WRITE_ONLY_IMM },
	};
	struct roce_pkt pkt;
	struct gather g = { w->sge, w->num_sge, qp->rc.cur_off };
	uint8_t tr = qp->type == UROCE_QPT_RC ? ROCE_TR_RC : qp->type == UROCE_QPT_UC ? ROCE_TR_UC : ROCE_TR_UD;
	uint32_t off = qp->rc.cur_off, len = 0, consumed = 1, next_off = 0;
	bool first = off == 0, last;
	int pos, rc;

	ctx_pkt_init(qp->ctx, &pkt, qp->type == UROCE_QPT_UD ? &w->ud : &qp->d, qp->sport);
	pkt.dqpn = qp->type == UROCE_QPT_UD ? w->ud_qpn : qp->dqpn;
	pkt.psn = qp->snd_nxt;
	switch (w->opcode) {
	case UROCE_WR_SEND:
	case UROCE_WR_SEND_WITH_IMM:
	case UROCE_WR_RDMA_WRITE:
	case UROCE_WR_RDMA_WRITE_WITH_IMM:
	case UROCE_WR_SEND_WITH_INV:
		len = w->length - off;
		if (len > qp->mtu && qp->type != UROCE_QPT_UD)
			len = qp->mtu;
		last = off + len == w->length;
		pos = first && last ? 3 : first ? 0 : last ? 2 : 1;
		if (w->opcode <= UROCE_WR_RDMA_WRITE_WITH_IMM) {
			pkt.opcode = tr | write_op[w->opcode == UROCE_WR_RDMA_WRITE_WITH_IMM][pos];
			pkt.reth.va = w->raddr;
			pkt.reth.rkey = w->rkey;
			pkt.reth.dma_len = w->length;
		} else {
			pkt.opcode = tr | send_op[w->opcode == UROCE_WR_SEND_WITH_IMM ? 1 :
			                          w->opcode == UROCE_WR_SEND_WITH_INV ? 2 : 0][pos];
			pkt.ieth_rkey = w->imm; /* SEND_WITH_INV: invalidate_rkey, host order */
		}
		pkt.imm = be32toh(w->imm);
		pkt.payload_len = len;
		pkt.ackreq = qp->type == UROCE_QPT_RC && (last || (pkt.psn % RC_ACKREQ_EVERY) == 0);
		if (qp->type == UROCE_QPT_UD) {
			pkt.deth.qkey = w->ud_qkey;
			pkt.deth.src_qp = qp->qpn;
		}
		break;
	case UROCE_WR_RDMA_READ: {
		/* up to the next multiple of RC_READ_RESP_PKTS responses from
		 * the READ's start (a resend from the middle keeps the borders) */
		uint32_t span = RC_READ_RESP_PKTS * qp->mtu, n = span - off % span;

		if (n > w->length - off)
			n = w->length - off;
		pkt.opcode = ROCE_TR_RC | ROCE_OP_READ_REQUEST;
		pkt.reth.va = w->raddr + off;
		pkt.reth.rkey = w->rkey;
		pkt.reth.dma_len = n;
		pkt.ackreq = true;
		consumed = npkts(n, qp->mtu);
		last = off + n == w->length;
		next_off = off + n;
		break;
	}
	default:
		pkt.opcode = ROCE_TR_RC | (w->opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ? ROCE_OP_CMP_SWAP : ROCE_OP_FETCH_ADD);
		pkt.atomic.va = w->raddr;
		pkt.atomic.rkey = w->rkey;
		pkt.atomic.swap_add = w->opcode == UROCE_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add;
		pkt.atomic.compare = w->compare_add;
		pkt.ackreq = true;
		last = true;
		break;
	}
	rc = ctx_send_pkt(qp->ctx, qp->port, &pkt, len ? gather_sges : NULL, &g);
	if (rc)
		return rc;
	qp->tx_packets++;
	qp->snd_nxt = psn_add(qp->snd_nxt, consumed);
	if (roce_psn_diff(qp->snd_nxt, qp->rc.snd_max) > 0)
		qp->rc.snd_max = qp->snd_nxt;
	if (last) {
		qp->rc.cur_off = 0;
		w->state = SWQE_SENT;
		qp->sq_cur++;
	} else {
		qp->rc.cur_off = w->opcode == UROCE_WR_RDMA_READ ? next_off : off + len;
	}
	return 0;
}

/* A BIND_MW or LOCAL_INV the send cursor reached: carried out the first
 * time (a go-back passes it again), retired at once when nothing before
 * it is outstanding, else with the ACK of what is (rc_completer.c).
 * false: stop here (it failed, or the QP went to ERR). */
static bool req_local(struct uroce_qp *qp, struct swqe *w)
{
	if (w->state == SWQE_POSTED) {
		qp->local_wrs++;                  /* it takes no message number (comp_rx) */
		rc_credit_started(qp, w->opcode); /* but an SQ slot: the limit moves on, as for a WRITE */
		qp_local_wr(qp, w);
	}
	if (w->done) { /* failed: nothing after it starts; it ends the QP once it retires */
		qp_retire_locals(qp);
		return false;
	}
	qp->sq_cur++;
	qp_retire_locals(qp);
	return qp->state != UROCE_QPS_ERR;
}

/* drain: SQD, finish the message in progress and start no new one */
static bool req_tx(struct uroce_qp *qp, bool drain)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	bool rc_qp = qp->type == UROCE_QPT_RC;
	unsigned budget = 64; /* packets per QP per pass: fairness between QPs */

	while (qp->sq_cur != head && !qp->rc.rnr_wait && budget--) {
		struct swqe *w = &qp->sq[qp->sq_cur & qp->sq_mask];

		if (drain && w->state == SWQE_POSTED)
			return false; /* never started: held (resends of started ones go on) */
		if (qp->fo && w->state == SWQE_POSTED && qp->rc.cur_off == 0 && !fo_may_start(qp))
			return false; /* failing back: the backup drains first (an ACK kicks us) */

		if (rc_qp) {
			uint32_t maxrd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

			if (roce_psn_diff(qp->snd_nxt, psn_add(qp->rc.acked_psn, 1)) >= (int32_t)RC_WINDOW_PSNS)
				return false; /* ACKs reopen the window and kick us */
			if (w->state == SWQE_POSTED && qp->rc.cur_off == 0) {
				if (is_rd(w) && qp->rc.rd_outstanding >= maxrd)
					return false;
				if (w->opcode == UROCE_WR_RDMA_READ && qp->rc.rd_outstanding &&
				    qp->rc.rd_resp_pkts + rd_req_pkts(w->length, qp->mtu) > RC_READ_RESP_PKTS)
					return false; /* its responses wait for the earlier ones'; a completion kicks us */
				if (w->fence && qp->rc.rd_outstanding)
					return false;
				if (!rc_credit_may_start(qp, qp->sq_cur, credit_op(w)))
					return false; /* an ACK with credits kicks us */
			}
			if (wr_is_local(w->opcode)) {
				if (!req_local(qp, w))
					return false;
				continue;
			}
			if (w->opcode == UROCE_WR_RDMA_READ && qp->rc.cur_off && roce_psn_diff(qp->snd_nxt, w->resp_psn) > 0)
				return false; /* its next request waits for this one's last response, which kicks us */
		}
		if (qp->rc.cur_off == 0 && w->state != SWQE_SENDING) {
			if (w->state == SWQE_POSTED && is_rd(w)) {
				qp->rc.rd_outstanding++;
				if (w->opcode == UROCE_WR_RDMA_READ)
					qp->rc.rd_resp_pkts += rd_req_pkts(w->length, qp->mtu);
			}
			if (w->state == SWQE_POSTED && rc_qp)
				rc_credit_started(qp, credit_op(w));
			w->first_psn = qp->snd_nxt;
			w->last_psn = psn_add(qp->snd_nxt,
			                      (wr_is_data(w->opcode) || w->opcode == UROCE_WR_RDMA_READ) &&
			                              qp->type != UROCE_QPT_UD ? npkts(w->length, qp->mtu) - 1 : 0);
			w->resp_psn = w->first_psn;
			w->state = SWQE_SENDING;
		}
		if (send_pkt(qp, w))
			return true; /* TX stage full: try again next pass */
		if (rc_qp) {
			if (!wheel_timer_pending(&qp->retry_timer))
				rc_arm_retry(qp);
		} else if (w->state == SWQE_SENT) {
			req_complete(qp, w, UROCE_WC_SUCCESS);
			qp->sq_tail++;
		}
	}
	return qp->sq_cur != head && !qp->rc.rnr_wait;
}

bool rc_tx(struct uroce_qp *qp)
{
	bool more = false;

	switch (qp->state) {
	case UROCE_QPS_ERR:
		qp_flush(qp);
		return false;
	case UROCE_QPS_RTS:
	case UROCE_QPS_SQD:
		if (qp->type == UROCE_QPT_RC)
			more = resp_tx(qp);
		if (qp->state == UROCE_QPS_ERR)
			return false; /* the responder's fatal NAK just left */
		return req_tx(qp, qp->state == UROCE_QPS_SQD) || more;
	case UROCE_QPS_RTR:
		if (qp->type == UROCE_QPT_RC)
			more = resp_tx(qp);
		return more;
	default:
		return false;
	}
}
