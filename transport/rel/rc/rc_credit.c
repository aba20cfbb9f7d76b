/* SPDX-License-Identifier: MIT */
/* RC end-to-end flow control credits (IBTA 9.7.7.2). The responder puts
 * in every ACK's AETH how many receive WQEs it has beyond the message the
 * MSN names, as a 5-bit code into a fixed table (31 = "invalid": no flow
 * control, which a QP on an SRQ sends, as does rdma_rxe always). The
 * requester keeps a limit sequence number, LSN = MSN + credits, and starts
 * a message that consumes a receive WQE (SEND, WRITE with immediate) only
 * while its sequence number is at most LSN, or LSN + 1 when nothing else
 * is in flight: that one probes, so a requester whose peer has posted
 * receives since its last ACK never waits forever (IBTA lets it send one
 * beyond the limit at any time; holding it back until the older messages
 * are acknowledged spares an RNR NAK that their ACKs would have avoided). Each message that consumes none (WRITE, READ,
 * atomics) moves the LSN on by one when it starts. An invalid code lets the QP send
 * without limit until a valid code comes again; only AETHs inside the
 * outstanding window count (rx_check.c). */
#include "transport/core/qp_internal.h"
#include "transport/rel/rc/rc.h"

/* receive WQEs each code stands for (IBTA table 45) */
static const uint16_t credit_table[31] = {
	0,   1,   2,   3,   4,    6,    8,    12,   16,   24,   32,    48,    64,    96,    128,  192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
};

uint8_t rc_credit_code(uint32_t avail)
{
	uint8_t code = 0;

	/* the largest count not above what is there: never promise more */
	while (code < 30 && credit_table[code + 1] <= avail)
		code++;
	return code;
}

uint32_t rc_credit_count(uint8_t code)
{
	return code < 31 ? credit_table[code] : UINT32_MAX;
}

uint8_t rc_resp_credits(struct uroce_qp *qp)
{
	if (qp->init.srq)
		return AETH_ACK_UNLIMITED & 0x1f; /* WQEs shared with other QPs: no promise */
	return rc_credit_code(atomic_load_explicit(&qp->rq_head, memory_order_acquire) - qp->rq_tail);
}

void rc_credit_update(struct uroce_qp *qp, uint32_t msn, uint8_t code)
{
	uint32_t lsn;

	if (code == 31) {
		if (!qp->rc.credit_unlimited) {
			qp->rc.credit_unlimited = true;
			ctx_kick(qp);
		}
		return;
	}
	lsn = (msn + credit_table[code]) & ROCE_PSN_MASK;
	/* A valid code after the invalid one turns flow control back on: the
	 * latest in-window AETH says what the peer does now, so no one ACK
	 * switches credits off for good. */
	if (qp->rc.credit_unlimited) {
		qp->rc.credit_unlimited = false;
		qp->rc.lsn = lsn;
		ctx_kick(qp);
		return;
	}
	if (roce_psn_diff(lsn, qp->rc.lsn) > 0) {
		qp->rc.lsn = lsn;
		ctx_kick(qp);
	}
}

static bool consumes_rwqe(uint8_t opcode)
{
	return opcode == UROCE_WR_SEND || opcode == UROCE_WR_SEND_WITH_IMM || opcode == UROCE_WR_RDMA_WRITE_WITH_IMM;
}

bool rc_credit_may_start(struct uroce_qp *qp, uint32_t sq_index, uint8_t opcode)
{
	uint32_t ssn = (sq_index + 1) & ROCE_PSN_MASK; /* message number: the MSN its ACK will carry */

	int32_t over;

	if (qp->rc.credit_unlimited || !consumes_rwqe(opcode))
		return true;
	over = roce_psn_diff(ssn, qp->rc.lsn);
	/* one past the limit probes, but only with nothing else in flight:
	 * while older messages are unacknowledged their ACKs bring news of
	 * the peer's receive queue, and the probe would likely be RNR NAKed */
	if (over <= 0 || (over == 1 && qp->sq_tail == sq_index))
		return true;
	qp->stats.credit_waits++;
	return false;
}

void rc_credit_started(struct uroce_qp *qp, uint8_t opcode)
{
	/* a message number that takes no receive WQE moves the limit on */
	if (!qp->rc.credit_unlimited && !consumes_rwqe(opcode))
		qp->rc.lsn = psn_add(qp->rc.lsn, 1);
}
