/* SPDX-License-Identifier: MIT */
/* RC completer: ACKs, NAKs, READ responses and atomic ACKs coming back to
 * the requester; completions in order (a BIND_MW or LOCAL_INV, which gets
 * no ACK, with the WQE before it); go-back-N on a sequence NAK, on a gap in
 * READ responses and on the local ACK timeout; RNR waits; retry counters
 * running out into an error completion and the QP in ERR. */
#include <string.h>

#include "transport/failover/failover.h"
#include "transport/core/qp_internal.h"
#include "transport/core/mr.h"
#include "transport/core/mw.h"
#include "transport/core/rx_check.h"
#include "transport/rel/rc/rc.h"

/* IBTA 9.7.5.2.8 (table 45): RNR NAK timer field -> minimum delay. */
static const uint64_t rnr_timer_ns[32] = {
	655360000, 10000,    20000,    30000,    40000,    60000,     80000,     120000,
	160000,    240000,   320000,   480000,   640000,   960000,    1280000,   1920000,
	2560000,   3840000,  5120000,  7680000,  10240000, 15360000,  20480000,  30720000,
	40960000,  61440000, 81920000, 122880000, 163840000, 245760000, 327680000, 491520000,
};

static inline struct swqe *tail_wqe(struct uroce_qp *qp)
{
	if (qp->sq_tail == atomic_load_explicit(&qp->sq_head, memory_order_acquire))
		return NULL;
	return &qp->sq[qp->sq_tail & qp->sq_mask];
}

static bool outstanding(struct uroce_qp *qp)
{
	struct swqe *w = tail_wqe(qp);

	return w && w->state != SWQE_POSTED;
}

/* Resend from psn: point the send cursor at the WQE holding it. */
static void go_back(struct uroce_qp *qp, uint32_t psn)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);

	for (uint32_t i = qp->sq_tail; i != head; i++) {
		struct swqe *w = &qp->sq[i & qp->sq_mask];

		if (w->state == SWQE_POSTED)
			break;
		if (wr_is_local(w->opcode))
			continue; /* holds no PSN; carried out once */
		if (roce_psn_diff(psn, w->first_psn) >= 0 && roce_psn_diff(psn, w->last_psn) <= 0) {
			uint32_t k = (uint32_t)roce_psn_diff(psn, w->first_psn);
			int32_t resent = roce_psn_diff(qp->snd_nxt, psn);

			qp->sq_cur = i;
			qp->rc.cur_off = (wr_is_data(w->opcode) || w->opcode == UROCE_WR_RDMA_READ) ? k * qp->mtu : 0;
			if (qp->rc.cur_off == 0 && w->state == SWQE_SENT)
				w->state = SWQE_SENDING; /* keep its PSNs */
			qp->snd_nxt = psn;
			qp->stats.retransmits += resent > 0 ? (uint64_t)resent : 1;
			qp->rc.gb_blocked = true;
			ctx_kick(qp);
			return;
		}
	}
}

/* After WQEs completed: a send cursor that a go-back left behind the
 * tail moves up to it, with the PSN that follows the last completed WQE. */
static void cur_catch_up(struct uroce_qp *qp, uint32_t next_psn)
{
	struct swqe *w;

	if ((int32_t)(qp->sq_cur - qp->sq_tail) >= 0)
		return;
	qp->sq_cur = qp->sq_tail;
	qp->rc.cur_off = 0;
	w = tail_wqe(qp);
	qp->snd_nxt = (w && w->state != SWQE_POSTED) ? w->first_psn : next_psn;
}

/* The tail WQE (a READ or an atomic) has its last response: complete it
 * and bring the send cursor up. False when completing it put the QP in
 * error. */
static bool complete_tail(struct uroce_qp *qp, struct swqe *w)
{
	uint32_t next = psn_add(w->last_psn, 1);

	req_complete(qp, w, UROCE_WC_SUCCESS);
	qp->sq_tail++;
	qp_retire_locals(qp);
	if (qp->state == UROCE_QPS_ERR)
		return false;
	cur_catch_up(qp, next);
	return true;
}

static void progress_made(struct uroce_qp *qp)
{
	fo_progress(qp);
	qp->rc.retry_left = qp->attr.retry_cnt;
	qp->rc.rnr_left = qp->attr.rnr_retry;
	qp->rc.gb_blocked = false;
	if (outstanding(qp))
		rc_arm_retry(qp);
	else
		engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
	ctx_kick(qp); /* the window may have opened */
}

/* Everything up to and including psn a was received by the responder. */
static void ack_upto(struct uroce_qp *qp, uint32_t a)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	bool progress = false;

	while (qp->sq_tail != head) {
		struct swqe *w = &qp->sq[qp->sq_tail & qp->sq_mask];

		if (w->state == SWQE_POSTED)
			break;
		if (wr_is_local(w->opcode)) {
			/* carried out, nothing before it outstanding now */
			if (!qp_local_retire(qp, w))
				return; /* it failed: the QP is in ERR */
			progress = true;
			continue;
		}
		if (wr_is_rd(w->opcode)) {
			/* a later PSN acknowledged while responses are missing:
			 * they were lost, ask again */
			if (roce_psn_diff(a, w->resp_psn) >= 0 && !qp->rc.gb_blocked)
				go_back(qp, w->resp_psn);
			break;
		}
		if (roce_psn_diff(a, w->last_psn) < 0)
			break;
		req_complete(qp, w, UROCE_WC_SUCCESS);
		qp->sq_tail++;
		progress = true;
	}
	cur_catch_up(qp, psn_add(a, 1));
	if (roce_psn_diff(a, qp->rc.acked_psn) > 0) {
		qp->rc.acked_psn = a;
		progress = true;
	}
	if (progress)
		progress_made(qp);
}

static enum uroce_wc_status nak_status(uint8_t syn)
{
	switch (syn) {
	case AETH_NAK_INVALID_REQ:
		return UROCE_WC_REM_INV_REQ_ERR;
	case AETH_NAK_REM_ACC_ERR:
		return UROCE_WC_REM_ACCESS_ERR;
	case AETH_NAK_REM_OP_ERR:
		return UROCE_WC_REM_OP_ERR;
	case AETH_NAK_INV_RD_REQ:
		return UROCE_WC_REM_INV_RD_REQ_ERR;
	default:
		return UROCE_WC_BAD_RESP_ERR;
	}
}

static void on_aeth(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	uint8_t syn = pkt->aeth.syndrome;
	uint32_t prev = psn_add(pkt->psn, ROCE_PSN_MASK);

	switch (syn >> 5) {
	case 0: /* ACK */
		ack_upto(qp, pkt->psn);
		return;
	case 1: /* RNR NAK */
		qp->stats.rnr_naks_rcvd++;
		ack_upto(qp, prev);
		if (qp->state == UROCE_QPS_ERR)
			return;
		if (qp->rc.rnr_left == 0) {
			qp_fail_oldest(qp, UROCE_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->rc.rnr_left != 7)
			qp->rc.rnr_left--;
		qp->rc.gb_blocked = false;
		go_back(qp, pkt->psn);
		qp->rc.rnr_wait = true;
		engine_timer_arm(qp->ctx->eng, &qp->retry_timer, ctx_clock(qp->ctx) + rnr_timer_ns[syn & 0x1f]);
		return;
	case 3: /* NAK */
		ack_upto(qp, prev);
		if (qp->state == UROCE_QPS_ERR)
			return;
		if (syn == AETH_NAK_PSN_SEQ_ERR) {
			qp->stats.seq_naks_rcvd++;
			qp->rc.gb_blocked = false;
			if (roce_psn_diff(pkt->psn, qp->rc.snd_max) < 0)
				go_back(qp, pkt->psn);
			return;
		}
		qp_fail_oldest(qp, nak_status(syn));
		return;
	default:
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
	}
}

static void on_read_resp(struct uroce_qp *qp, const struct roce_pkt *pkt, uint8_t op)
{
	struct swqe *w = tail_wqe(qp);
	uint32_t off, end, a = psn_add(pkt->psn, ROCE_PSN_MASK);

	/* a response acknowledges nothing of its own READ beyond what arrived:
	 * one past a gap counted as progress, cleared the go-back guard, and
	 * every such response asked again, each request restarting the
	 * responder's stream from the gap */
	if (w && w->opcode == UROCE_WR_RDMA_READ && w->state != SWQE_POSTED && roce_psn_diff(a, w->resp_psn) >= 0)
		a = psn_add(w->resp_psn, ROCE_PSN_MASK);
	ack_upto(qp, a);
	if (qp->state == UROCE_QPS_ERR)
		return;
	w = tail_wqe(qp);
	if (!w || w->state == SWQE_POSTED || w->opcode != UROCE_WR_RDMA_READ || pkt->psn != w->resp_psn) {
		if (w && w->opcode == UROCE_WR_RDMA_READ && w->state != SWQE_POSTED &&
		    roce_psn_diff(pkt->psn, w->resp_psn) > 0 && !qp->rc.gb_blocked) {
			qp->stats.out_of_sequence++;
			go_back(qp, w->resp_psn);
		}
		ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
		return;
	}
	off = (uint32_t)roce_psn_diff(pkt->psn, w->first_psn) * qp->mtu;
	end = off + pkt->payload_len;
	/* a LAST ends the READ, or one of its requests (rc_requester.c): a
	 * full packet at a multiple of RC_READ_RESP_PKTS responses */
	if (end > w->length || (!(op == ROCE_OP_READ_RESP_LAST || op == ROCE_OP_READ_RESP_ONLY) && pkt->payload_len != qp->mtu) ||
	    ((op == ROCE_OP_READ_RESP_LAST || op == ROCE_OP_READ_RESP_ONLY) && end != w->length &&
	     (pkt->payload_len != qp->mtu || end % (RC_READ_RESP_PKTS * qp->mtu) != 0))) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		qp_fail_oldest(qp, UROCE_WC_BAD_RESP_ERR);
		return;
	}
	if (!sges_live(qp->ctx, w->sge, w->num_sge)) {
		qp_fail_oldest(qp, UROCE_WC_LOC_PROT_ERR);
		return;
	}
	sge_copy_in(w->sge, w->num_sge, off, pkt->payload, pkt->payload_len);
	w->resp_psn = psn_add(w->resp_psn, 1);
	if (roce_psn_diff(pkt->psn, qp->rc.acked_psn) > 0)
		qp->rc.acked_psn = pkt->psn;
	if ((op == ROCE_OP_READ_RESP_LAST || op == ROCE_OP_READ_RESP_ONLY) && end == w->length &&
	    !complete_tail(qp, w))
		return;
	progress_made(qp);
}

static void on_atomic_ack(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	struct swqe *w;
	uint64_t v = pkt->atomic_ack;

	ack_upto(qp, psn_add(pkt->psn, ROCE_PSN_MASK));
	if (qp->state == UROCE_QPS_ERR)
		return;
	w = tail_wqe(qp);
	if (!w || w->state == SWQE_POSTED || !wr_is_atomic(w->opcode) || pkt->psn != w->first_psn) {
		ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
		return;
	}
	if (!sges_live(qp->ctx, w->sge, w->num_sge)) {
		qp_fail_oldest(qp, UROCE_WC_LOC_PROT_ERR);
		return;
	}
	sge_copy_in(w->sge, w->num_sge, 0, (const uint8_t *)&v, 8);
	if (roce_psn_diff(pkt->psn, qp->rc.acked_psn) > 0)
		qp->rc.acked_psn = pkt->psn;
	if (!complete_tail(qp, w))
		return;
	progress_made(qp);
}

void comp_rx(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->opcode & 0x1f;

	if (qp->state != UROCE_QPS_RTS && qp->state != UROCE_QPS_SQD) {
		ctx_count_drop(qp->ctx, UROCE_DROP_QP_STATE);
		return;
	}
	/* a response outside the outstanding window is forged, a ghost or
	 * stale: neither its AETH nor its credits may act (IBTA 9.9) */
	if (!rx_response_in_window(qp, pkt->psn))
		return;
	qp->rx_packets++;
	/* every ACK-type AETH (ACK, atomic ACK, READ response but its middles)
	 * carries the peer's credits; its MSN counts messages, the limit SQ
	 * slots, of which local WRs (BIND_MW, LOCAL_INV) took local_wrs */
	if (op != ROCE_OP_READ_RESP_MIDDLE && (pkt->aeth.syndrome >> 5) == 0)
		rc_credit_update(qp, (pkt->aeth.msn + qp->local_wrs) & ROCE_PSN_MASK, pkt->aeth.syndrome & 0x1f);
	switch (op) {
	case ROCE_OP_ACK:
		on_aeth(qp, pkt);
		break;
	case ROCE_OP_ATOMIC_ACK:
		if ((pkt->aeth.syndrome >> 5) != 0) {
			on_aeth(qp, pkt);
			break;
		}
		on_atomic_ack(qp, pkt);
		break;
	case ROCE_OP_READ_RESP_FIRST:
	case ROCE_OP_READ_RESP_MIDDLE:
	case ROCE_OP_READ_RESP_LAST:
	case ROCE_OP_READ_RESP_ONLY:
		if ((op != ROCE_OP_READ_RESP_MIDDLE) && (pkt->aeth.syndrome >> 5) != 0) {
			on_aeth(qp, pkt);
			break;
		}
		on_read_resp(qp, pkt, op);
		break;
	default:
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
	}
}

/* Send again from the oldest PSN not acknowledged: the READ's next
 * response, an atomic's request, else the PSN after the last ACK. */
static void rewind_tail(struct uroce_qp *qp)
{
	struct swqe *w = tail_wqe(qp);
	uint32_t target;

	if (w->opcode == UROCE_WR_RDMA_READ)
		target = w->resp_psn;
	else if (wr_is_atomic(w->opcode))
		target = w->first_psn;
	else if (roce_psn_diff(psn_add(qp->rc.acked_psn, 1), w->first_psn) > 0)
		target = psn_add(qp->rc.acked_psn, 1);
	else
		target = w->first_psn;
	qp->rc.gb_blocked = false;
	go_back(qp, target);
	rc_arm_retry(qp);
}

unsigned rc_fo_rewind(struct uroce_qp *qp)
{
	uint64_t before = qp->stats.retransmits;

	if (qp->state != UROCE_QPS_RTS && qp->state != UROCE_QPS_SQD)
		return 0;
	qp->rc.retry_left = qp->attr.retry_cnt; /* a new member starts its retries afresh */
	qp->rc.rnr_wait = false;
	if (outstanding(qp))
		rewind_tail(qp);
	return (unsigned)(qp->stats.retransmits - before);
}

bool rc_fo_idle(const struct uroce_qp *qp)
{
	return qp->sq_tail == qp->sq_cur && qp->rc.cur_off == 0;
}

void rc_retry_timer_fn(struct wheel_timer *t, void *arg)
{
	struct uroce_qp *qp = arg;

	(void)t;
	if (qp->state != UROCE_QPS_RTS && qp->state != UROCE_QPS_SQD)
		return;
	if (qp->rc.rnr_wait) {
		qp->rc.rnr_wait = false;
		rc_arm_retry(qp);
		ctx_kick(qp);
		return;
	}
	if (!outstanding(qp))
		return;
	qp->stats.timeouts++;
	if (fo_on_rto(qp))
		return; /* failover took it: a switch rewound the work (and armed the timer), or
		         * every member is down and the first to return will */
	if (qp->rc.retry_left == 0) {
		qp_fail_oldest(qp, UROCE_WC_RETRY_EXC_ERR);
		return;
	}
	qp->rc.retry_left--;
	rewind_tail(qp);
}
