/* SPDX-License-Identifier: MIT */
/* rc: the IBTA go-back-N of RC (and the plain paths of UC and UD) behind
 * the reliability table. The requester, responder and completer files hold
 * the machinery; this file only names it, so rc is wire-compatible with
 * rdma-core and RoCE NICs exactly as before the table existed. */
#include <errno.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/rel/rel.h"
#include "transport/rel/rc/rc.h"

static const uint8_t tr_of[5] = {
	[UROCE_QPT_RC] = ROCE_TR_RC,
	[UROCE_QPT_UC] = ROCE_TR_UC,
	[UROCE_QPT_UD] = ROCE_TR_UD,
};

static int rc_init(struct uroce_qp *qp)
{
	/* go-back-N takes any reordering for loss: one path, and the IBTA
	 * modes keep no controller of uroce's */
	if (qp->init.path.npaths > 1)
		return uroce_fail(-EINVAL, "uroce_qp_create: path.npaths %u needs reliability sr or ec (rc's go-back-N "
		                           "takes reordering for loss); accepted 0 or 1 here", qp->init.path.npaths);
	if (qp->init.cc.algo != UROCE_CC_NONE)
		return uroce_fail(-EINVAL, "uroce_qp_create: cc.algo %s needs reliability sr or ec; accepted none here",
		                  uroce_cc_str(qp->init.cc.algo) ? uroce_cc_str(qp->init.cc.algo) : "(unknown)");
	return 0;
}

static void rc_nop(struct uroce_qp *qp)
{
	(void)qp;
}

/* To ERR: nothing more is placed or answered, and the send queue's flush
 * starts from nothing in flight. */
static void rc_error(struct uroce_qp *qp)
{
	struct rc_state *rc = &qp->rc;

	rc->in_send = rc->in_write = false;
	rc->ack_pending = rc->nak_pending = rc->fatal_nak = false;
	for (uint32_t i = 0; i < RC_MAX_RD_ATOMIC; i++)
		rc->res[i].tx_pending = false;
	rc->cur_off = rc->rd_outstanding = rc->rd_resp_pkts = 0;
}

/* Back to RESET: what ERR clears, and the rest of the sender's, responder's
 * and completer's progress; the PSNs and limits the next modify sets stay
 * until then. */
static void rc_reset(struct uroce_qp *qp)
{
	struct rc_state *rc = &qp->rc;

	rc_error(qp);
	rc->gb_blocked = rc->rnr_wait = false;
	rc->nak_sent = rc->uc_discard = false;
	rc->msn = 0;
	rc->lsn = 0;                   /* no credits known: one probing SEND at a time */
	rc->credit_unlimited = false;
	memset(rc->res, 0, RC_MAX_RD_ATOMIC * sizeof(*rc->res));
	rc->res_head = rc->res_tx = 0;
}

static int rc_ready(struct uroce_qp *qp)
{
	(void)qp;
	return 0;
}

static int rc_post(struct uroce_qp *qp, const struct uroce_send_wr *wr, struct swqe *w)
{
	(void)w;
	/* qp_post.c checks opcodes against the QP type */
	if (qp->init.rel.imm_counter && (wr->opcode == UROCE_WR_SEND || wr->opcode == UROCE_WR_SEND_WITH_IMM ||
	                                 wr->opcode == UROCE_WR_SEND_WITH_INV))
		return uroce_fail(-EINVAL, "uroce_post_send: QP 0x%x counts immediates (rel.imm_counter): it carries "
		                           "RDMA_WRITE, RDMA_WRITE_WITH_IMM, READ and atomics, no SEND; send on another QP",
		                  qp->qpn);
	return 0;
}

/* Responses (ACK, NAK, READ response, atomic ACK) are control. */
static bool rc_is_ctrl(const struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	const struct roce_opcode_info *oi = roce_opcode_info(pkt->opcode);

	(void)qp;
	return oi && !(oi->mask & ROCE_REQ);
}

static bool rc_opcode_ok(const struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	if ((pkt->opcode & 0xe0) != tr_of[qp->type] || !roce_opcode_info(pkt->opcode)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return false;
	}
	return true;
}

static void rc_rx_data_checked(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	if (rc_opcode_ok(qp, pkt))
		rc_rx_data(qp, f, pkt);
}

static void rc_rx_ctrl(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	if (!rc_opcode_ok(qp, pkt))
		return;
	if (qp->type != UROCE_QPT_RC) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	comp_rx(qp, pkt);
}

static size_t rc_state_bytes(const struct uroce_qp *qp)
{
	(void)qp;
	return 0; /* all of it lives in the QP's struct rc_state */
}

static unsigned rc_fo_switch(struct uroce_qp *qp, bool rewind)
{
	return rewind ? rc_fo_rewind(qp) : 0;
}

const struct rel_ops rel_rc_ops = {
	.name = "rc",
	.init = rc_init,
	.fini = rc_nop,
	.ready = rc_ready,
	.post = rc_post,
	.tx = rc_tx,
	.rx_data = rc_rx_data_checked,
	.rx_ctrl = rc_rx_ctrl,
	.is_ctrl = rc_is_ctrl,
	.timer = rc_retry_timer_fn,
	.complete = req_complete,
	.error = rc_error,
	.reset = rc_reset,
	.state_bytes = rc_state_bytes,
	.fo_switch = rc_fo_switch,
	.fo_idle = rc_fo_idle,
};
