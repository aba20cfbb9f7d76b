/* SPDX-License-Identifier: MIT */
/* Responder: requests arriving at a QP (RC, UC, UD). Every check happens
 * before a byte moves: QP state, transport, PSN, opcode sequence, rkey (of
 * a region, or of a window bound to the QP), bounds and access flags;
 * refusals are counted by reason and NAKed as the IBTA says (RC). A SEND
 * with Invalidate revokes its window on its last packet. READ responses and atomic results are kept as responder
 * resources so duplicates are answered again; ACKs are coalesced per pass. */
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/core/async.h"
#include "transport/core/immcounter.h"
#include "transport/core/mr.h"
#include "transport/core/mw.h"
#include "transport/rel/rc/rc.h"

/* The opcode's flags from the wire table (dataplane/wire_opcode.c), which
 * is indexed by the whole BTH opcode. rx_data sees only requests of the
 * QP's own transport that have a row there (rel_rc.c checks), so FIRST,
 * LAST, IMMDT and IETH are read from the row. READ and the atomics are
 * ONLY there; LAST is asked only of SEND and WRITE. */
static inline uint32_t op_flags(const struct roce_pkt *pkt)
{
	return roce_opcode_table[pkt->opcode].mask;
}

static inline bool op_send(uint8_t op)
{
	return op <= ROCE_OP_SEND_ONLY_IMM || op == ROCE_OP_SEND_LAST_INV || op == ROCE_OP_SEND_ONLY_INV;
}

static inline bool op_write(uint8_t op)
{
	return op >= ROCE_OP_WRITE_FIRST && op <= ROCE_OP_WRITE_ONLY_IMM;
}

/* Send an ACK/NAK now (errors that end the QP cannot wait for a pass). */
static int send_aeth(struct uroce_qp *qp, uint8_t syn, uint32_t psn)
{
	struct roce_pkt pkt;
	int rc;

	ctx_pkt_init(qp->ctx, &pkt, &qp->d, qp->sport);
	pkt.opcode = ROCE_TR_RC | ROCE_OP_ACK;
	pkt.dqpn = qp->dqpn;
	pkt.psn = psn;
	pkt.aeth.syndrome = syn;
	pkt.aeth.msn = qp->rc.msn & ROCE_PSN_MASK;
	rc = ctx_send_pkt(qp->ctx, qp->d.port, &pkt, NULL, NULL);
	if (rc == 0)
		qp->tx_packets++;
	return rc;
}

static void queue_ack(struct uroce_qp *qp, uint32_t psn)
{
	if (!qp->rc.ack_pending || roce_psn_diff(psn, qp->rc.ack_psn) > 0)
		qp->rc.ack_psn = psn;
	qp->rc.ack_pending = true;
	if (qp->rc.nak_pending && roce_psn_diff(psn, qp->rc.nak_psn) >= 0)
		qp->rc.nak_pending = false; /* the gap was filled */
	ctx_kick(qp);
}

static void queue_nak(struct uroce_qp *qp, uint8_t syn, uint32_t psn)
{
	qp->rc.nak_pending = true;
	qp->rc.nak_syn = syn;
	qp->rc.nak_psn = psn;
	ctx_kick(qp);
}

static bool res_tx_pending(const struct uroce_qp *qp)
{
	for (uint32_t k = qp->rc.res_tx; k != qp->rc.res_head; k++)
		if (qp->rc.res[k % qp->rc.nres].tx_pending)
			return true;
	return false;
}

/* A fatal RC responder error (class B/C): NAK, then the QP goes to ERR.
 * The requests before the bad one were valid, so READ responses and
 * atomic results still owed for them leave first, then the NAK (as rxe,
 * which answers each request before it looks at the next); meanwhile no
 * new request is taken. */
static void resp_nak_error(struct uroce_qp *qp, uint8_t syn)
{
	/* IBTA 11.6.3: the responder's QP reports its own error too (the
	 * requester learns it from the NAK's completion) */
	struct uroce_async_event ev = { .event_type = syn == AETH_NAK_INVALID_REQ ? UROCE_EVENT_QP_REQ_ERR :
	                                              syn == AETH_NAK_REM_ACC_ERR ? UROCE_EVENT_QP_ACCESS_ERR :
	                                                                            UROCE_EVENT_QP_FATAL };

	ev.element.qp = qp;
	ctx_async_event(qp->ctx, &ev);
	if (res_tx_pending(qp)) {
		qp->rc.fatal_nak = true;
		qp->rc.fatal_syn = syn;
		qp->rc.fatal_psn = qp->epsn;
		ctx_kick(qp);
		return;
	}
	send_aeth(qp, syn, qp->epsn);
	qp_to_error(qp);
}

/* A request refused for why: RC answers with a NAK and ends the QP, UC
 * drops the rest of the message. */
static void resp_fatal(struct uroce_qp *qp, uint8_t syn, enum uroce_drop_reason why)
{
	ctx_count_drop(qp->ctx, why);
	if (qp->type != UROCE_QPT_RC) {
		qp->rc.in_send = qp->rc.in_write = false;
		qp->rc.uc_discard = true;
		return;
	}
	resp_nak_error(qp, syn);
}

/* The region or window (bound to this QP) the rkey opens, checked for
 * [va, va+len) and the access; NULL after the NAK. */
static struct mr_int *check_remote(struct uroce_qp *qp, uint32_t rkey, uint64_t va, uint64_t len, int need)
{
	enum uroce_drop_reason why;
	struct mr_int *m = rkey_lookup(qp, rkey, &why);

	if (!m) {
		qp->stats.access_errors++;
		resp_fatal(qp, AETH_NAK_REM_ACC_ERR, why);
		return NULL;
	}
	if ((m->pub.access & need) != need || (qp->attr.qp_access_flags & need) != need) {
		qp->stats.access_errors++;
		resp_fatal(qp, AETH_NAK_REM_ACC_ERR, UROCE_DROP_ACCESS_DENIED);
		return NULL;
	}
	if (!mr_check(m, qp->pd, va, len, need)) {
		qp->stats.access_errors++;
		resp_fatal(qp, AETH_NAK_REM_ACC_ERR, UROCE_DROP_OUT_OF_BOUNDS);
		return NULL;
	}
	return m;
}

static void post_recv_wc(struct uroce_qp *qp, enum uroce_wc_opcode op, uint32_t len, const struct roce_pkt *pkt,
                         bool imm, enum uroce_wc_status st)
{
	struct uroce_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qp->cur_rwqe.wr_id;
	wc.status = st;
	wc.opcode = op;
	wc.byte_len = len;
	wc.qp_num = qp->qpn;
	wc.src_qp = qp->dqpn;
	if (imm) {
		wc.wc_flags |= UROCE_WC_WITH_IMM;
		wc.imm_data = htobe32(pkt->imm);
	} else if (st == UROCE_WC_SUCCESS && (op_flags(pkt) & ROCE_HAS(ROCE_HDR_IETH))) {
		wc.wc_flags |= UROCE_WC_WITH_INV;
		wc.invalidated_rkey = pkt->ieth_rkey;
	}
	cq_push(qp->rcq, &wc);
	qp->have_rwqe = false;
}

/* SEND with Invalidate, its last packet placed: revoke the window the
 * IETH names, which must be bound to this QP under that key; otherwise the
 * receive completes in error and the QP NAKs invalid request (as rxe). A
 * retransmitted copy is a duplicate by its PSN and never gets here. */
static bool recv_invalidate(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	enum uroce_drop_reason why = mw_remote_invalidate(qp, pkt->ieth_rkey);

	if (why == UROCE_DROP_NONE)
		return true;
	ctx_count_drop(qp->ctx, why);
	qp->stats.access_errors++;
	post_recv_wc(qp, UROCE_WC_RECV, qp->rc.recv_off, pkt, false, UROCE_WC_REM_INV_REQ_ERR);
	resp_nak_error(qp, AETH_NAK_INVALID_REQ);
	return false;
}

/* No receive WQE: RC answers RNR NAK (the requester retries), UC drops the message. */
static bool need_rwqe(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	if (qp->have_rwqe || qp_take_rwqe(qp, &qp->cur_rwqe)) {
		qp->have_rwqe = true;
		return true;
	}
	ctx_count_drop(qp->ctx, UROCE_DROP_NO_RECV_BUFFER);
	if (qp->type == UROCE_QPT_RC) {
		qp->stats.rnr_naks_sent++;
		qp->rc.nak_sent = true; /* one NAK per gap: later packets of this message stay quiet */
		queue_nak(qp, (uint8_t)(AETH_RNR_NAK | qp->attr.min_rnr_timer), pkt->psn);
	} else {
		qp->rc.uc_discard = !(op_flags(pkt) & ROCE_LAST);
		qp->epsn = psn_add(pkt->psn, 1);
	}
	return false;
}

static void ud_rx(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	uint8_t op = pkt->opcode & 0x1f;
	uint8_t grh[40];
	struct uroce_wc wc;

	if (op != ROCE_OP_SEND_ONLY && op != ROCE_OP_SEND_ONLY_IMM) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	if (pkt->deth.qkey != qp->attr.qkey) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_QKEY);
		return;
	}
	if (!qp_take_rwqe(qp, &qp->cur_rwqe)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_NO_RECV_BUFFER);
		return;
	}
	qp->have_rwqe = true;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qp->cur_rwqe.wr_id;
	wc.opcode = UROCE_WC_RECV;
	wc.qp_num = qp->qpn;
	wc.src_qp = pkt->deth.src_qp;
	wc.wc_flags = UROCE_WC_GRH;
	wc.byte_len = 40u + pkt->payload_len;
	if (op == ROCE_OP_SEND_ONLY_IMM) {
		wc.wc_flags |= UROCE_WC_WITH_IMM;
		wc.imm_data = htobe32(pkt->imm);
	}
	if (wc.byte_len > qp->cur_rwqe.length) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		wc.status = UROCE_WC_LOC_LEN_ERR;
	} else if (!sges_live(qp->ctx, qp->cur_rwqe.sge, qp->cur_rwqe.num_sge)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_ACCESS_DENIED);
		wc.status = UROCE_WC_LOC_PROT_ERR;
	} else {
		/* the GRH area: for IPv4, rxe puts the IPv4 header in its last
		 * 20 bytes and zeroes the first 20; for IPv6 the whole header */
		memset(grh, 0, sizeof(grh));
		if (pkt->ipv6)
			memcpy(grh, f->data + pkt->l3_off, 40);
		else
			memcpy(grh + 20, f->data + pkt->l3_off, 20);
		sge_copy_in(qp->cur_rwqe.sge, qp->cur_rwqe.num_sge, 0, grh, 40);
		sge_copy_in(qp->cur_rwqe.sge, qp->cur_rwqe.num_sge, 40, pkt->payload, pkt->payload_len);
	}
	cq_push(qp->rcq, &wc);
	qp->have_rwqe = false;
}

static struct rd_res *find_res(struct uroce_qp *qp, uint32_t psn, uint8_t type, uint32_t *index)
{
	uint32_t n = qp->rc.res_head < qp->rc.nres ? qp->rc.res_head : qp->rc.nres;

	for (uint32_t k = qp->rc.res_head - n; k != qp->rc.res_head; k++) {
		struct rd_res *r = &qp->rc.res[k % qp->rc.nres];

		if (r->type == type && roce_psn_diff(psn, r->first_psn) >= 0 && roce_psn_diff(psn, r->last_psn) <= 0) {
			*index = k;
			return r;
		}
	}
	return NULL;
}

static void replay(struct uroce_qp *qp, const struct roce_pkt *pkt, uint8_t op)
{
	struct rd_res *r;
	uint32_t k;

	if (op == ROCE_OP_READ_REQUEST) {
		r = find_res(qp, pkt->psn, RES_READ, &k);
		if (!r)
			return;
		r->tx_off = (uint32_t)roce_psn_diff(pkt->psn, r->first_psn) * qp->mtu;
	} else if (op == ROCE_OP_CMP_SWAP || op == ROCE_OP_FETCH_ADD) {
		r = find_res(qp, pkt->psn, RES_ATOMIC, &k);
		if (!r)
			return;
	} else {
		if (pkt->ackreq)
			queue_ack(qp, psn_add(qp->epsn, ROCE_PSN_MASK));
		return;
	}
	r->tx_pending = true;
	r->replay = true;
	if ((int32_t)(k - qp->rc.res_tx) < 0)
		qp->rc.res_tx = k;
	ctx_kick(qp);
}

/* Responder resources (IBTA 9.5.x, max_dest_rd_atomic): a READ or atomic
 * holds one until its first response has left. A requester that keeps to
 * its max_rd_atomic never finds them all busy, since it starts a new one
 * only after a whole response arrived; a request beyond them gets the NAK
 * rxe sends for max_dest_rd_atomic 0, instead of overwriting a saved
 * result. A response sent again for a duplicate holds none: a duplicate
 * needs no in-window PSN, so counting it would let anyone on the link
 * make the next valid READ fail. Responses leave in ring order, so with
 * fewer than all busy the slot reused next is done with its first send. */
static bool res_available(struct uroce_qp *qp)
{
	uint32_t n = qp->rc.res_head < qp->rc.nres ? qp->rc.res_head : qp->rc.nres, busy = 0;

	for (uint32_t k = qp->rc.res_head - n; k != qp->rc.res_head; k++) {
		const struct rd_res *r = &qp->rc.res[k % qp->rc.nres];

		busy += r->tx_pending && !r->replay;
	}
	if (qp->attr.max_dest_rd_atomic && busy < qp->attr.max_dest_rd_atomic)
		return true;
	resp_fatal(qp, AETH_NAK_INVALID_REQ, UROCE_DROP_RD_ATOMIC_LIMIT);
	return false;
}

/* The responder's checks as stages, after rxe's receive path (rxe_resp.c:
 * enum resp_states, each check a function returning the next): PSN, opcode
 * sequence, length, then the operation's own checks and its execution, then
 * the PSN advances. A stage that refuses the packet counts it, answers it
 * (NAK, RNR NAK or UC discard) and returns RS_DONE. Every stage returns a
 * later one, so the walk ends after at most RS_DONE steps. Stages return
 * constants (no switch that the compiler could make a table), so it jumps
 * from stage to stage without going through the loop's switch. */
enum resp_stage {
	RS_PSN,        /* RC: ahead of the expected PSN is a NAK, behind a duplicate;
	                * UC: a gap loses the message in progress */
	RS_OP_SEQ,     /* opcode sequence inside messages */
	RS_LENGTH,     /* every packet but the last of a message carries one MTU */
	RS_RECV,       /* SEND: a receive WQE with room, its buffer still registered */
	RS_SEND,       /* SEND: place, invalidate, complete */
	RS_WRITE_RETH, /* WRITE's first packet: rkey, bounds, length */
	RS_WRITE,      /* WRITE: place, count or complete an immediate */
	RS_READ,       /* READ request: a responder resource sends the data */
	RS_ATOMIC,     /* atomic: execute, keep the result as a resource */
	RS_BAD_OPCODE,
	RS_ADVANCE,    /* the PSN advances; RC queues an ACK when asked */
	RS_DONE,
};

/* What the stages read of one packet. */
struct resp_in {
	const struct roce_pkt *pkt;
	uint32_t flags; /* the opcode's row: ROCE_FIRST, ROCE_LAST, headers */
	uint32_t len;   /* payload bytes */
	uint8_t op;     /* the operation, without the transport bits */
	bool rc;
};

static inline enum resp_stage rs_psn_rc(struct uroce_qp *qp, const struct resp_in *in)
{
	int32_t d = roce_psn_diff(in->pkt->psn, qp->epsn);

	if (d > 0) {
		qp->stats.out_of_sequence++;
		ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
		if (!qp->rc.nak_sent) {
			qp->rc.nak_sent = true;
			qp->stats.seq_naks_sent++;
			queue_nak(qp, AETH_NAK_PSN_SEQ_ERR, qp->epsn);
		}
		return RS_DONE;
	}
	if (d < 0) {
		qp->stats.duplicates++;
		ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
		replay(qp, in->pkt, in->op);
		return RS_DONE;
	}
	qp->rc.nak_sent = false;
	return RS_OP_SEQ;
}

static inline enum resp_stage rs_psn_uc(struct uroce_qp *qp, const struct resp_in *in)
{
	int32_t d = roce_psn_diff(in->pkt->psn, qp->epsn);
	bool first = in->flags & ROCE_FIRST;

	if (d < 0) {
		/* a PSN behind the expected one is a duplicate or a straggler
		 * of a message already given up on; placing it would deliver
		 * old data again (rxe would start a message on an old
		 * FIRST/ONLY; PSNs never go backwards, so it is dropped here) */
		qp->stats.duplicates++;
		ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
		return RS_DONE;
	}
	if (d != 0) {
		/* a gap loses the message in progress */
		ctx_count_drop(qp->ctx, UROCE_DROP_UC_GAP);
		qp->stats.out_of_sequence++;
		qp->rc.in_send = qp->rc.in_write = false;
		qp->epsn = in->pkt->psn;
		qp->rc.uc_discard = !first;
	}
	if (qp->rc.uc_discard) {
		if (!first) {
			ctx_count_drop(qp->ctx, UROCE_DROP_UC_GAP);
			qp->epsn = psn_add(in->pkt->psn, 1);
			return RS_DONE;
		}
		qp->rc.uc_discard = false;
		qp->rc.in_send = qp->rc.in_write = false;
	}
	return RS_OP_SEQ;
}

/* UC gives up on the message in progress and passes this packet; discard:
 * the packets after it, up to the next FIRST, go too. */
static void uc_skip(struct uroce_qp *qp, const struct resp_in *in, bool discard)
{
	qp->rc.in_send = qp->rc.in_write = false;
	qp->rc.uc_discard = discard;
	qp->epsn = psn_add(in->pkt->psn, 1);
}

static inline enum resp_stage rs_op_seq(struct uroce_qp *qp, const struct resp_in *in)
{
	bool ok;

	if (in->flags & ROCE_FIRST)
		ok = !qp->rc.in_send && !qp->rc.in_write;
	else
		ok = op_send(in->op) ? qp->rc.in_send : op_write(in->op) ? qp->rc.in_write : false;
	if (ok && (in->rc || in->op < ROCE_OP_READ_REQUEST))
		return RS_LENGTH;
	if (in->rc) {
		resp_fatal(qp, AETH_NAK_INVALID_REQ, UROCE_DROP_BAD_OPCODE);
	} else {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		uc_skip(qp, in, true);
	}
	return RS_DONE;
}

static inline enum resp_stage rs_length(struct uroce_qp *qp, const struct resp_in *in)
{
	bool is_send = op_send(in->op);

	if ((is_send || op_write(in->op)) && ((!(in->flags & ROCE_LAST) && in->len != qp->mtu) || in->len > qp->mtu)) {
		resp_fatal(qp, AETH_NAK_INVALID_REQ, UROCE_DROP_BAD_LENGTH_MSG);
		if (!in->rc)
			qp->epsn = psn_add(in->pkt->psn, 1);
		return RS_DONE;
	}
	if (is_send)
		return RS_RECV;
	if (op_write(in->op))
		return in->flags & ROCE_HAS(ROCE_HDR_RETH) ? RS_WRITE_RETH : RS_WRITE;
	if (in->op == ROCE_OP_READ_REQUEST)
		return RS_READ;
	if (in->op == ROCE_OP_CMP_SWAP || in->op == ROCE_OP_FETCH_ADD)
		return RS_ATOMIC;
	return RS_BAD_OPCODE;
}

static inline enum resp_stage rs_recv(struct uroce_qp *qp, const struct resp_in *in)
{
	const struct roce_pkt *pkt = in->pkt;

	if (in->flags & ROCE_FIRST) {
		if (!need_rwqe(qp, pkt))
			return RS_DONE;
		qp->rc.recv_off = 0;
	}
	if (qp->rc.recv_off + in->len > qp->cur_rwqe.length) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		if (in->rc) {
			post_recv_wc(qp, UROCE_WC_RECV, qp->rc.recv_off + in->len, pkt, false, UROCE_WC_LOC_LEN_ERR);
			resp_nak_error(qp, AETH_NAK_INVALID_REQ);
		} else {
			uc_skip(qp, in, !(in->flags & ROCE_LAST));
		}
		return RS_DONE;
	}
	if (!sges_live(qp->ctx, qp->cur_rwqe.sge, qp->cur_rwqe.num_sge)) {
		/* the receive buffer's region was deregistered after posting */
		ctx_count_drop(qp->ctx, UROCE_DROP_ACCESS_DENIED);
		post_recv_wc(qp, UROCE_WC_RECV, qp->rc.recv_off, pkt, false, UROCE_WC_LOC_PROT_ERR);
		if (in->rc) {
			resp_nak_error(qp, AETH_NAK_REM_OP_ERR);
		} else {
			uc_skip(qp, in, !(in->flags & ROCE_LAST));
		}
		return RS_DONE;
	}
	return RS_SEND;
}

static inline enum resp_stage rs_send(struct uroce_qp *qp, const struct resp_in *in)
{
	const struct roce_pkt *pkt = in->pkt;
	bool last = in->flags & ROCE_LAST;

	sge_copy_in(qp->cur_rwqe.sge, qp->cur_rwqe.num_sge, qp->rc.recv_off, pkt->payload, in->len);
	qp->rc.recv_off += in->len;
	qp->rc.in_send = !last;
	if ((in->flags & ROCE_HAS(ROCE_HDR_IETH)) && !recv_invalidate(qp, pkt))
		return RS_DONE;
	if (last) {
		post_recv_wc(qp, UROCE_WC_RECV, qp->rc.recv_off, pkt, in->flags & ROCE_HAS(ROCE_HDR_IMMDT),
		             UROCE_WC_SUCCESS);
		qp->rc.msn++;
	}
	return RS_ADVANCE;
}

static inline enum resp_stage rs_write_reth(struct uroce_qp *qp, const struct resp_in *in)
{
	const struct roce_pkt *pkt = in->pkt;
	bool only = in->flags & ROCE_LAST; /* ONLY, or else FIRST */

	if (pkt->reth.dma_len) {
		qp->write_mr =
			check_remote(qp, pkt->reth.rkey, pkt->reth.va, pkt->reth.dma_len, UROCE_ACCESS_REMOTE_WRITE);
		if (!qp->write_mr)
			return RS_DONE;
	} else {
		qp->write_mr = NULL;
	}
	if ((only && in->len != pkt->reth.dma_len) || (!only && pkt->reth.dma_len <= qp->mtu)) {
		resp_fatal(qp, AETH_NAK_INVALID_REQ, UROCE_DROP_BAD_LENGTH_MSG);
		return RS_DONE;
	}
	qp->write_va = pkt->reth.va;
	qp->rc.write_left = pkt->reth.dma_len;
	qp->rc.recv_off = pkt->reth.dma_len; /* byte_len of a WRITE_WITH_IMM completion */
	return RS_WRITE;
}

static inline enum resp_stage rs_write(struct uroce_qp *qp, const struct resp_in *in)
{
	const struct roce_pkt *pkt = in->pkt;
	bool last = in->flags & ROCE_LAST, imm = in->flags & ROCE_HAS(ROCE_HDR_IMMDT);
	uint32_t len = in->len;

	if (len > qp->rc.write_left || (last && len != qp->rc.write_left)) {
		resp_fatal(qp, AETH_NAK_INVALID_REQ, UROCE_DROP_BAD_LENGTH_MSG);
		return RS_DONE;
	}
	if (imm && !qp->init.rel.imm_counter && !need_rwqe(qp, pkt))
		return RS_DONE; /* nothing written: the retry places it */
	if (len) {
		if (!qp->write_mr || qp->write_mr == &mw_revoked) {
			/* deregistered or its window revoked mid-message */
			qp->stats.access_errors++;
			resp_fatal(qp, AETH_NAK_REM_ACC_ERR, qp->write_mr ? UROCE_DROP_RKEY_REVOKED : UROCE_DROP_BAD_RKEY);
			return RS_DONE;
		}
		memcpy((void *)(uintptr_t)qp->write_va, pkt->payload, len);
	}
	qp->write_va += len;
	qp->rc.write_left -= len;
	qp->rc.in_write = !last;
	if (imm && qp->init.rel.imm_counter) {
		/* counted, not completed: no receive was taken (rel.imm_counter) */
		imm_count(qp->ctx, htobe32(pkt->imm));
		qp->stats.imm_counted++;
	} else if (imm) {
		post_recv_wc(qp, UROCE_WC_RECV_RDMA_WITH_IMM, qp->rc.recv_off, pkt, true, UROCE_WC_SUCCESS);
	}
	if (last) {
		qp->rc.msn++;
		qp->write_mr = NULL;
	}
	return RS_ADVANCE;
}

/* The next responder resource, cleared, of type for the request at psn. */
static struct rd_res *res_new(struct uroce_qp *qp, uint8_t type, uint32_t psn)
{
	struct rd_res *r = &qp->rc.res[qp->rc.res_head % qp->rc.nres];

	memset(r, 0, sizeof(*r));
	r->type = type;
	r->first_psn = psn;
	r->tx_pending = true;
	return r;
}

/* The resource res_new gave is taken; the request spans npsn PSNs. */
static void res_push(struct uroce_qp *qp, uint32_t npsn)
{
	qp->rc.res_head++;
	if (qp->rc.res_head - qp->rc.res_tx > qp->rc.nres)
		qp->rc.res_tx = qp->rc.res_head - qp->rc.nres;
	qp->rc.msn++;
	qp->epsn = psn_add(qp->epsn, npsn);
	qp->rx_packets++;
	ctx_kick(qp);
}

static inline enum resp_stage rs_read(struct uroce_qp *qp, const struct resp_in *in)
{
	const struct roce_pkt *pkt = in->pkt;
	uint32_t n = npkts(pkt->reth.dma_len, qp->mtu);
	struct rd_res *r;

	if (!res_available(qp))
		return RS_DONE;
	if (pkt->reth.dma_len &&
	    !check_remote(qp, pkt->reth.rkey, pkt->reth.va, pkt->reth.dma_len, UROCE_ACCESS_REMOTE_READ))
		return RS_DONE;
	if (pkt->reth.dma_len > UROCE_MAX_MSG) {
		resp_fatal(qp, AETH_NAK_INVALID_REQ, UROCE_DROP_BAD_LENGTH_MSG);
		return RS_DONE;
	}
	r = res_new(qp, RES_READ, pkt->psn);
	r->last_psn = psn_add(pkt->psn, n - 1);
	r->va = pkt->reth.va;
	r->len = pkt->reth.dma_len;
	r->rkey = pkt->reth.rkey;
	res_push(qp, n);
	return RS_DONE;
}

static inline enum resp_stage rs_atomic(struct uroce_qp *qp, const struct resp_in *in)
{
	const struct roce_pkt *pkt = in->pkt;
	uint64_t *p, orig;
	struct rd_res *r;

	if (!res_available(qp))
		return RS_DONE;
	if (pkt->atomic.va & 7) {
		resp_fatal(qp, AETH_NAK_INVALID_REQ, UROCE_DROP_MISALIGNED);
		return RS_DONE;
	}
	if (!check_remote(qp, pkt->atomic.rkey, pkt->atomic.va, 8, UROCE_ACCESS_REMOTE_ATOMIC))
		return RS_DONE;
	p = (uint64_t *)(uintptr_t)pkt->atomic.va;
	if (in->op == ROCE_OP_CMP_SWAP) {
		orig = pkt->atomic.compare;
		__atomic_compare_exchange_n(p, &orig, pkt->atomic.swap_add, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, pkt->atomic.swap_add, __ATOMIC_SEQ_CST);
	}
	r = res_new(qp, RES_ATOMIC, pkt->psn);
	r->last_psn = pkt->psn;
	r->orig = orig;
	res_push(qp, 1);
	return RS_DONE;
}

static inline enum resp_stage rs_advance(struct uroce_qp *qp, const struct resp_in *in)
{
	qp->epsn = psn_add(qp->epsn, 1);
	qp->rx_packets++;
	if (in->rc && in->pkt->ackreq)
		queue_ack(qp, in->pkt->psn);
	return RS_DONE;
}

static void rcuc_rx(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	const struct resp_in in = {
		.pkt = pkt,
		.flags = op_flags(pkt),
		.len = pkt->payload_len,
		.op = pkt->opcode & 0x1f,
		.rc = qp->type == UROCE_QPT_RC,
	};
	enum resp_stage s = RS_PSN;

	/* run a stage, go on with the one it returns */
#define RS_STAGE(stage, fn)		\
	case stage:			\
		s = fn(qp, &in);	\
		continue
	for (;;) {
		switch (s) {
		case RS_PSN:
			s = in.rc ? rs_psn_rc(qp, &in) : rs_psn_uc(qp, &in);
			continue;
		RS_STAGE(RS_OP_SEQ, rs_op_seq);
		RS_STAGE(RS_LENGTH, rs_length);
		RS_STAGE(RS_RECV, rs_recv);
		RS_STAGE(RS_SEND, rs_send);
		RS_STAGE(RS_WRITE_RETH, rs_write_reth);
		RS_STAGE(RS_WRITE, rs_write);
		RS_STAGE(RS_READ, rs_read);
		RS_STAGE(RS_ATOMIC, rs_atomic);
		case RS_BAD_OPCODE:
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
			s = RS_DONE;
			continue;
		RS_STAGE(RS_ADVANCE, rs_advance);
		case RS_DONE:
			return;
		}
	}
#undef RS_STAGE
}

/* Requests of an RC, UC or UD QP (rel_rc's rx_data). */
void rc_rx_data(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	enum uroce_qp_state st = qp->state;

	if (st != UROCE_QPS_RTR && st != UROCE_QPS_RTS && st != UROCE_QPS_SQD) {
		ctx_count_drop(qp->ctx, UROCE_DROP_QP_STATE);
		return;
	}
	if (qp->type == UROCE_QPT_UD) {
		qp->rx_packets++;
		ud_rx(qp, f, pkt);
		return;
	}
	if (qp->rc.fatal_nak) {
		ctx_count_drop(qp->ctx, UROCE_DROP_QP_STATE); /* on its way to ERR */
		return;
	}
	rcuc_rx(qp, pkt);
}

struct mem_gather {
	const uint8_t *src;
};

static void gather_mem(void *arg, uint8_t *dst, uint32_t len)
{
	memcpy(dst, ((struct mem_gather *)arg)->src, len);
}

static int send_res(struct uroce_qp *qp, struct rd_res *r)
{
	struct roce_pkt pkt;

	if (r->type == RES_ATOMIC) {
		ctx_pkt_init(qp->ctx, &pkt, &qp->d, qp->sport);
		pkt.opcode = ROCE_TR_RC | ROCE_OP_ATOMIC_ACK;
		pkt.dqpn = qp->dqpn;
		pkt.psn = r->first_psn;
		pkt.aeth.syndrome = AETH_ACK | rc_resp_credits(qp);
		pkt.aeth.msn = qp->rc.msn & ROCE_PSN_MASK;
		pkt.atomic_ack = r->orig;
		if (ctx_send_pkt(qp->ctx, qp->d.port, &pkt, NULL, NULL))
			return -1;
		qp->tx_packets++;
		r->tx_pending = false;
		return 0;
	}
	while (r->tx_pending) {
		uint32_t off = r->tx_off, len = r->len - off;
		struct mem_gather g;
		uint8_t op;

		if (len > qp->mtu)
			len = qp->mtu;
		if (r->len) {
			enum uroce_drop_reason why;
			const struct mr_int *m = rkey_lookup(qp, r->rkey, &why);

			/* revoked since the request (region or window), or the key
			 * names a newer region now (key bytes can recur): never
			 * send it, the requester times out */
			if (!m || !mr_check(m, qp->pd, r->va, r->len, UROCE_ACCESS_REMOTE_READ)) {
				r->tx_pending = false;
				return 0;
			}
		}
		op = r->len <= qp->mtu ? ROCE_OP_READ_RESP_ONLY :
		     off == 0 ? ROCE_OP_READ_RESP_FIRST :
		     off + len == r->len ? ROCE_OP_READ_RESP_LAST : ROCE_OP_READ_RESP_MIDDLE;
		ctx_pkt_init(qp->ctx, &pkt, &qp->d, qp->sport);
		pkt.opcode = ROCE_TR_RC | op;
		pkt.dqpn = qp->dqpn;
		pkt.psn = psn_add(r->first_psn, off / qp->mtu);
		pkt.aeth.syndrome = AETH_ACK | rc_resp_credits(qp);
		pkt.aeth.msn = qp->rc.msn & ROCE_PSN_MASK;
		pkt.payload_len = len;
		g.src = (const uint8_t *)(uintptr_t)(r->va + off);
		if (ctx_send_pkt(qp->ctx, qp->d.port, &pkt, len ? gather_mem : NULL, &g))
			return -1;
		qp->tx_packets++;
		r->tx_off = off + len;
		if (r->tx_off >= r->len)
			r->tx_pending = false;
	}
	return 0;
}

bool resp_tx(struct uroce_qp *qp)
{
	while (qp->rc.res_tx != qp->rc.res_head) {
		struct rd_res *r = &qp->rc.res[qp->rc.res_tx % qp->rc.nres];

		if (r->tx_pending && send_res(qp, r))
			return true;
		qp->rc.res_tx++;
	}
	/* a full TX stage keeps them pending for the next pass: a lost ACK
	 * would cost the requester a timeout and a go-back */
	if (qp->rc.ack_pending) {
		if (send_aeth(qp, AETH_ACK | rc_resp_credits(qp), qp->rc.ack_psn))
			return true;
		qp->rc.ack_pending = false;
	}
	if (qp->rc.nak_pending) {
		if (send_aeth(qp, qp->rc.nak_syn, qp->rc.nak_psn))
			return true;
		qp->rc.nak_pending = false;
	}
	if (qp->rc.fatal_nak) {
		send_aeth(qp, qp->rc.fatal_syn, qp->rc.fatal_psn);
		qp_to_error(qp);
	}
	return false;
}
