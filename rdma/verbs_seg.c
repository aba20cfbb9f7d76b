/* The NIC's side of the segment boundary (transport/core/seg.h): an sr QP
 * on a verbs port keeps its decisions in the engine (sr_tx, SACKs, RACK,
 * timers) and hands each segment to the NIC as one work request:
 *   - a pool of UC QPs, one per path, sends the data; the NIC derives the
 *     UDP source port from each QP's number, so the paths are real ECMP
 *     entropy, and numbers each QP's PSNs itself (hence rel.imm_keyed);
 *   - a UC data QP takes the peer's segments: a WRITE with immediate lands
 *     in the application's region by the NIC, a SEND with immediate
 *     (descriptors, SEND messages' data) in a bounce buffer the engine
 *     copies from;
 *   - a UC control QP sends and takes SACKs (its number is exchanged,
 *     uroce_qp_ctrl_num);
 *   - an SRQ of bounce buffers serves the QP's NIC QPs; one CQ serves the
 *     NIC QPs of every sr QP of the context (its engine), which polls it in
 *     its loop as it reads an RX burst;
 *   - work requests wait in a chain per NIC QP, up to 32, and go with one
 *     ibv_post_send (one doorbell) when the chain is full or the engine's
 *     transmit pass ends;
 *   - rel.nic_rc (a NIC without UC): the pool and the control QP are RC
 *     QPs, paired one to one with the peer's (pool QP 0 is the data QPN
 *     the peer was given; the others' numbers go in-band, in a POOL
 *     control message on the control QP, which the RC QP delivers), each
 *     taking the peer's segments on its path too; until a path's pair is
 *     connected its segments take path 0;
 *   - a segment whose bytes are the policy's own and too long to go inline
 *     (ec's parity) is copied into a registered stage buffer, which its
 *     signaled completion frees: the policy may reuse its copy as soon as
 *     the receiver has counted that PSN, which ec does for parity it
 *     never needed, before the NIC has read it.
 * Arrivals become the packet the policy would have parsed (no frame: the
 * NIC placed what it could), handed to the core's ctx_nic_arrival. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/verbs_port.h"
#include "rdma/verbs_seg.h"
#include "transport/core/seg.h"
#include "transport/rel/sr/sr_wire.h"

#define SEG_BUF_SIZE 4096u    /* the largest path MTU */
#define SEG_NBUFS 256u        /* bounce buffers (receives posted) per QP */
#define SEG_SQ_DEPTH 512u     /* WRs a send QP holds */
#define SEG_SIGNAL_EVERY 64u  /* one signaled WR in so many frees the SQ */
#define SEG_INLINE 256u       /* descriptors and SACKs go inline */
#define SEG_POLL_BURST 32
#define SEG_POLL_BURSTS 8     /* bursts per engine pass at most: the receives of several QPs */
#define SEG_MAX_SGE 8u
#define SEG_CHAIN 32u         /* WRs per doorbell */
#define SEG_INLINE_KEEP 192u  /* a chained inline payload's copy: a SACK's largest (164) fits */
#define SEG_NSTAGE 128u       /* ec: stage buffers for parity in flight (each signaled) */
/* what one sr or ec QP can have in the shared CQ: every receive, the
 * signaled WRs its send queues can hold, and its staged ones */
#define SEG_CQ_NEED(q) (SEG_NBUFS + ((q)->npool + 1u) * (SEG_SQ_DEPTH / SEG_SIGNAL_EVERY + 1u) + (q)->nstage)

/* wr_id's low bits: what the completion is for */
enum { WRID_RECV = 0, WRID_SEND = 1, WRID_STAGE = 2, WRID_TAG = 3 };

/* WRs waiting for one doorbell on one NIC QP. */
struct seg_chain {
	struct ibv_qp *iq;
	unsigned n;
	uint32_t since; /* WRs since the last signaled one */
	struct ibv_send_wr wr[SEG_CHAIN];
	struct ibv_sge sge[SEG_CHAIN][SEG_MAX_SGE];
	uint8_t inl[SEG_CHAIN][SEG_INLINE_KEEP];
};

/* A receive's or a staged send's wr_id: its buffer and QP (other send
 * WRs carry the segq | WRID_SEND). */
struct seg_buf {
	struct segq *q;
	uint32_t i;
};

struct segq {
	struct uroce_qp *qp;
	struct ibv_srq *srq;
	struct ibv_mr *bmr;
	uint8_t *bufs;
	struct seg_buf *bd;
	struct ibv_qp *data, *ctrl; /* (rc: no data QP, pool[0] is) */
	unsigned npool;
	struct ibv_qp **pool;
	bool rc;                 /* rel.nic_rc */
	uint32_t *peer_qpn;      /* rc: the peer's QP paired with pool[i]; 0 = not yet */
	struct seg_chain *chain; /* per send QP: the pool's, then the control QP's */
	bool pending;            /* a chain holds WRs */
	/* ec: the stage (nstage buffers; free[0..nfree) the free ones) */
	unsigned nstage, nfree;
	uint8_t *stage;
	struct ibv_mr *smr;
	struct seg_buf *sd;
	uint32_t *free;
	uint8_t *busy;
	struct segq *next;
};

/* The context's CQ (verbs_port.seg_cq): created with the first sr QP,
 * grown to what they all can have in it (vp->seg_cq_need). */
static int shared_cq(struct verbs_port *vp, unsigned need)
{
	int want = (int)need;

	if (!vp->seg_cq) {
		vp->seg_cq = ibv_create_cq(vp->ibctx, want, NULL, NULL, 0);
		return vp->seg_cq ? 0 : (errno ? errno : ENOMEM);
	}
	if (((struct ibv_cq *)vp->seg_cq)->cqe >= want)
		return 0;
	return ibv_resize_cq(vp->seg_cq, want * 2);
}

static struct verbs_port *vp_of(struct uroce_context *ctx)
{
	return verbs_port_of(ctx->ports[0].port);
}

static int post_buf(struct segq *q, uint32_t i)
{
	struct ibv_sge sg = { .addr = (uintptr_t)(q->bufs + (size_t)i * SEG_BUF_SIZE), .length = SEG_BUF_SIZE,
		              .lkey = q->bmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)&q->bd[i], .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(q->srq, &wr, &bad);
}

static struct ibv_qp *nic_qp(struct segq *q, struct uroce_pd *pd, const char **what)
{
	struct ibv_cq *cq = vp_of(pd->ctx)->seg_cq;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = q->srq,
		.cap = { .max_send_wr = SEG_SQ_DEPTH, .max_send_sge = SEG_MAX_SGE, .max_inline_data = SEG_INLINE },
		.qp_type = q->rc ? IBV_QPT_RC : IBV_QPT_UC,
	};
	struct ibv_qp *iq = ibv_create_qp(pd->nic, &ia);

	if (!iq)
		*what = q->rc ? "an RC QP (send 512 x 8 SGEs, 256 bytes inline, on an SRQ)"
		              : "a UC QP (send 512 x 8 SGEs, 256 bytes inline, on an SRQ)";
	return iq;
}

static unsigned poll_cq(struct verbs_port *vp, struct uroce_context *ctx, const struct segq *dying);

/* The pool's QPs then the control QP: chain k's NIC QP. */
static struct ibv_qp *send_qp(const struct segq *q, unsigned k)
{
	return k < q->npool ? q->pool[k] : q->ctrl;
}

void verbs_seg_destroy(struct uroce_qp *qp)
{
	struct segq *q = qp->segq, **pp;
	struct verbs_port *vp;

	if (!q)
		return;
	vp = vp_of(qp->ctx);
	for (pp = (struct segq **)&vp->segqs; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			vp->nsegq--;
			vp->seg_cq_need -= SEG_CQ_NEED(q);
			break;
		}
	for (unsigned i = 0; q->pool && i < q->npool; i++)
		if (q->pool[i])
			ibv_destroy_qp(q->pool[i]);
	if (q->ctrl)
		ibv_destroy_qp(q->ctrl);
	if (q->data)
		ibv_destroy_qp(q->data);
	/* the shared CQ may still hold its completions: the others' are taken
	 * as usual, its own dropped, before its memory goes */
	if (vp->seg_cq)
		while (poll_cq(vp, qp->ctx, q))
			;
	if (q->srq)
		ibv_destroy_srq(q->srq);
	if (q->bmr)
		ibv_dereg_mr(q->bmr);
	if (q->smr)
		ibv_dereg_mr(q->smr);
	if (!vp->nsegq && vp->seg_cq) {
		ibv_destroy_cq(vp->seg_cq);
		vp->seg_cq = NULL;
	}
	free(q->bufs);
	free(q->bd);
	free(q->stage);
	free(q->sd);
	free(q->free);
	free(q->busy);
	free(q->pool);
	free(q->peer_qpn);
	free(q->chain);
	free(q);
	qp->segq = NULL;
}

int verbs_seg_create(struct uroce_qp *qp, unsigned npaths)
{
	struct verbs_port *vp = vp_of(qp->ctx);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SEG_NBUFS, .max_sge = 1 } };
	const char *what = NULL;
	struct segq *q = calloc(1, sizeof(*q));
	int e = 0;

	if (!q)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	qp->segq = q;
	q->qp = qp;
	q->npool = npaths ? npaths : 1;
	q->rc = qp->init.rel.nic_rc;
	q->pool = calloc(q->npool, sizeof(*q->pool));
	q->peer_qpn = calloc(q->npool, sizeof(*q->peer_qpn));
	q->chain = calloc(q->npool + 1, sizeof(*q->chain));
	q->bd = calloc(SEG_NBUFS, sizeof(*q->bd));
	q->bufs = aligned_alloc(4096, (size_t)SEG_NBUFS * SEG_BUF_SIZE);
	if (qp->init.rel.reliability == UROCE_REL_EC) {
		q->nstage = SEG_NSTAGE;
		q->stage = aligned_alloc(4096, (size_t)SEG_NSTAGE * SEG_BUF_SIZE);
		q->sd = calloc(SEG_NSTAGE, sizeof(*q->sd));
		q->free = calloc(SEG_NSTAGE, sizeof(*q->free));
		q->busy = calloc(SEG_NSTAGE, 1);
	}
	if (!q->pool || !q->peer_qpn || !q->chain || !q->bd || !q->bufs || (q->nstage && (!q->stage || !q->sd || !q->free || !q->busy))) {
		verbs_seg_destroy(qp);
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	}
	if ((e = shared_cq(vp, vp->seg_cq_need + SEG_CQ_NEED(q))))
		what = "the engine's CQ (or growing it)";
	if (!what && !(q->bmr = ibv_reg_mr(qp->pd->nic, q->bufs, (size_t)SEG_NBUFS * SEG_BUF_SIZE,
	                                   IBV_ACCESS_LOCAL_WRITE)))
		what = "registering the bounce buffers";
	if (!what && q->nstage &&
	    !(q->smr = ibv_reg_mr(qp->pd->nic, q->stage, (size_t)q->nstage * SEG_BUF_SIZE, IBV_ACCESS_LOCAL_WRITE)))
		what = "registering the stage buffers";
	for (uint32_t i = 0; i < q->nstage; i++) {
		q->sd[i] = (struct seg_buf){ .q = q, .i = i };
		q->free[i] = i;
	}
	q->nfree = q->nstage;
	if (!what && !(q->srq = ibv_create_srq(qp->pd->nic, &sa)))
		what = "an SRQ";
	for (uint32_t i = 0; !what && i < SEG_NBUFS; i++) {
		q->bd[i] = (struct seg_buf){ .q = q, .i = i };
		if ((e = post_buf(q, i)))
			what = "posting the bounce buffers";
	}
	if (!what && !q->rc)
		q->data = nic_qp(q, qp->pd, &what);
	if (!what)
		q->ctrl = nic_qp(q, qp->pd, &what);
	for (unsigned i = 0; !what && i < q->npool; i++)
		q->pool[i] = nic_qp(q, qp->pd, &what);
	if (what) {
		e = e ? e : errno ? errno : ENOMEM;
		verbs_seg_destroy(qp);
		if ((e == EOPNOTSUPP || e == EINVAL) && !qp->init.rel.nic_rc)
			return uroce_fail(-EOPNOTSUPP, "uroce_qp_create: the NIC refused %s for %s over verbs (%s); "
			                               "without UC, give rel.nic_rc = 1 at both ends (an RC pool)",
			                  what, uroce_reliability_str(qp->init.rel.reliability), strerror(e));
		return uroce_fail(-e, "uroce_qp_create: the NIC refused %s for %s over verbs: %s", what,
		                  uroce_reliability_str(qp->init.rel.reliability), strerror(e));
	}
	for (unsigned k = 0; k <= q->npool; k++)
		q->chain[k].iq = send_qp(q, k);
	qp->nic_qpn = q->rc ? q->pool[0]->qp_num : q->data->qp_num;
	qp->nic_ctrl_qpn = q->ctrl->qp_num;
	vp->seg_cq_need += SEG_CQ_NEED(q);
	q->next = vp->segqs;
	vp->segqs = q;
	vp->nsegq++;
	return 0;
}

/* RESET (a QP connected again starts over), INIT, RTR to dqpn, RTS. An RC
 * QP retries 7 times with a 67 ms timeout, and without end on RNR (the
 * SRQ of the peer is its flow control). */
static int to_rts(struct ibv_qp *iq, uint8_t port, const struct ibv_ah_attr *ah, enum ibv_mtu mtu, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	bool rc = iq->qp_type == IBV_QPT_RC;

	if (ibv_modify_qp(iq, &a, IBV_QP_STATE))
		return errno ? errno : EINVAL;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = port,
		                  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE };
	if (ibv_modify_qp(iq, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return errno ? errno : EINVAL;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = dqpn, .ah_attr = *ah,
		                  .max_dest_rd_atomic = 1, .min_rnr_timer = 1 };
	if (ibv_modify_qp(iq, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	                          (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)))
		return errno ? errno : EINVAL;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(iq, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
	                             (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0))
	               ? (errno ? errno : EINVAL) : 0;
}

/* rc: our pool's numbers to the peer, on the control QP, from index 1 (0
 * is the data QPN it was given) */
static int send_pool(struct uroce_qp *qp)
{
	struct segq *q = qp->segq;
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_POOL_FIXED + 4 * SRW_POOL_MAX];

	for (unsigned first = 1; first < q->npool; first += SRW_POOL_MAX) {
		unsigned n = q->npool - first < SRW_POOL_MAX ? q->npool - first : SRW_POOL_MAX;
		uint32_t len = SRW_CTRL_HDR_LEN + SRW_POOL_FIXED + 4 * n;
		struct seg s = { .qp = qp, .op = SEG_SEND, .len = len, .buf = b };
		int rc;

		srw_ctrl_hdr(b, SRW_CTRL_POOL, (uint16_t)len, qp->tok_remote);
		roce_put_be16(b + SRW_CTRL_HDR_LEN, (uint16_t)first);
		roce_put_be16(b + SRW_CTRL_HDR_LEN + 2, (uint16_t)n);
		for (unsigned i = 0; i < n; i++)
			roce_put_be32(b + SRW_CTRL_HDR_LEN + SRW_POOL_FIXED + 4 * i, q->pool[first + i]->qp_num);
		rc = verbs_seg_post(qp, &s);
		if (rc)
			return rc;
	}
	return 0;
}

int verbs_seg_connect(struct uroce_qp *qp)
{
	struct segq *q = qp->segq;
	struct verbs_port *vp = vp_of(qp->ctx);
	struct ibv_ah_attr ah;
	enum ibv_mtu mtu = (enum ibv_mtu)qp->attr.path_mtu;
	int rc = verbs_nic_ah(vp, &qp->attr.ah_attr, &ah, "uroce_qp_modify");

	if (rc)
		return rc;
	for (unsigned k = 0; k <= q->npool; k++)
		q->chain[k].n = 0; /* nothing left over from an earlier connection */
	memset(q->peer_qpn, 0, q->npool * sizeof(*q->peer_qpn));
	/* the QPs go through RESET below, which drops their WRs without a
	 * completion: every stage buffer is free again (a completion of the
	 * old connection still in the CQ finds its buffer not busy) */
	for (uint32_t i = 0; i < q->nstage; i++) {
		q->free[i] = i;
		q->busy[i] = 0;
	}
	q->nfree = q->nstage;
	if (q->rc) {
		/* pairs: control with control, pool[0] with the data QPN the
		 * peer gave; the rest once its POOL message names them (which
		 * can come once the control QP is up: the rest is reset first) */
		for (unsigned i = 1; !rc && i < q->npool; i++) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

			rc = ibv_modify_qp(q->pool[i], &a, IBV_QP_STATE) ? (errno ? errno : EINVAL) : 0;
		}
		if (!rc)
			rc = to_rts(q->pool[0], vp->ib_port, &ah, mtu, qp->dqpn);
		if (!rc)
			rc = to_rts(q->ctrl, vp->ib_port, &ah, mtu, qp_ctrl_dqpn(qp));
		if (!rc) {
			q->peer_qpn[0] = qp->dqpn;
			rc = -send_pool(qp);
		}
		if (rc)
			return uroce_fail(-rc, "uroce_qp_modify: the NIC refused to connect the RC pool to QPN 0x%x: %s",
			                  qp->dqpn, strerror(rc));
		return 0;
	}
	/* the pool sends to the peer's data QPN, the control QP to its control
	 * QPN; the data QP only receives (a UC QP takes ONLY packets of any PSN) */
	rc = to_rts(q->data, vp->ib_port, &ah, mtu, qp->dqpn);
	if (!rc)
		rc = to_rts(q->ctrl, vp->ib_port, &ah, mtu, qp_ctrl_dqpn(qp));
	for (unsigned i = 0; !rc && i < q->npool; i++)
		rc = to_rts(q->pool[i], vp->ib_port, &ah, mtu, qp->dqpn);
	if (rc)
		return uroce_fail(-rc, "uroce_qp_modify: the NIC refused to connect the UC QPs to QPN 0x%x: %s",
		                  qp->dqpn, strerror(rc));
	return 0;
}

static const enum ibv_wr_opcode seg_wr_op[] = {
	[SEG_WRITE] = IBV_WR_RDMA_WRITE,
	[SEG_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[SEG_SEND] = IBV_WR_SEND,
	[SEG_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
};

/* The SGEs covering len bytes at offset off of the list: the application's
 * own registrations, which are the NIC's (no copy). */
static int seg_sges(const struct seg *s, struct ibv_sge *out)
{
	uint32_t off = s->off, left = s->len;
	int n = 0;

	for (uint32_t i = 0; i < s->nsge && left; i++) {
		uint32_t l = s->sge[i].length;

		if (off >= l) {
			off -= l;
			continue;
		}
		if (n == (int)SEG_MAX_SGE)
			return -1;
		out[n].addr = s->sge[i].addr + off;
		out[n].length = l - off < left ? l - off : left;
		out[n].lkey = s->sge[i].lkey;
		left -= out[n].length;
		off = 0;
		n++;
	}
	return left ? -1 : n;
}

/* One doorbell for the chain. What the send queue cannot take yet stays
 * chained for the next (0), an error is the NIC's. */
static int chain_post(struct seg_chain *c)
{
	struct ibv_send_wr *bad = NULL;
	unsigned done;
	int rc;

	if (!c->n)
		return 0;
	for (unsigned i = 0; i < c->n; i++)
		c->wr[i].next = i + 1 < c->n ? &c->wr[i + 1] : NULL;
	rc = ibv_post_send(c->iq, c->wr, &bad);
	if (!rc) {
		c->n = 0;
		return 0;
	}
	done = bad ? (unsigned)(bad - c->wr) : 0;
	if (done) {
		/* the rest moves to the front; their SGE and inline pointers
		 * follow their slots */
		for (unsigned i = done; i < c->n; i++) {
			unsigned j = i - done;

			c->wr[j] = c->wr[i];
			memcpy(c->sge[j], c->sge[i], sizeof(c->sge[j]));
			memcpy(c->inl[j], c->inl[i], sizeof(c->inl[j]));
			c->wr[j].sg_list = c->sge[j];
			if (c->wr[j].send_flags & IBV_SEND_INLINE)
				c->sge[j][0].addr = (uintptr_t)c->inl[j];
		}
		c->n -= done;
	}
	return rc == ENOMEM ? 0 : rc;
}

int verbs_seg_post(struct uroce_qp *qp, const struct seg *s)
{
	struct segq *q = qp->segq;
	/* rc: a path whose pair is not connected yet goes on path 0 */
	unsigned k = s->op == SEG_SEND ? q->npool
	           : q->rc && !q->peer_qpn[s->path % q->npool] ? 0 : s->path % q->npool;
	struct seg_chain *c = &q->chain[k];
	struct ibv_send_wr *wr;
	struct ibv_sge *sg;
	int rc;

	if (c->n == SEG_CHAIN && (rc = chain_post(c)))
		return -rc;
	if (c->n == SEG_CHAIN)
		return -ENOBUFS; /* the send queue is full: the next pass */
	wr = &c->wr[c->n];
	sg = c->sge[c->n];
	memset(wr, 0, sizeof(*wr));
	wr->opcode = seg_wr_op[s->op];
	wr->sg_list = sg;
	wr->wr_id = (uintptr_t)q | WRID_SEND;
	if (s->buf && s->len > SEG_INLINE_KEEP) {
		uint32_t i;

		if (s->len > SEG_BUF_SIZE || !q->nstage)
			return -EMSGSIZE;
		if (!q->nfree)
			return -ENOBUFS; /* every stage buffer in flight: the next pass */
		i = q->free[--q->nfree];
		q->busy[i] = 1;
		memcpy(q->stage + (size_t)i * SEG_BUF_SIZE, s->buf, s->len);
		sg[0].addr = (uintptr_t)(q->stage + (size_t)i * SEG_BUF_SIZE);
		sg[0].length = s->len;
		sg[0].lkey = q->smr->lkey;
		wr->num_sge = 1;
		wr->wr_id = (uintptr_t)&q->sd[i] | WRID_STAGE;
		wr->send_flags = IBV_SEND_SIGNALED; /* its completion frees the buffer */
	} else if (s->buf) {
		/* a caller's buffer: kept with the chain until the doorbell,
		 * which copies it into the WR (inline) */
		memcpy(c->inl[c->n], s->buf, s->len);
		sg[0].addr = (uintptr_t)c->inl[c->n];
		sg[0].length = s->len;
		sg[0].lkey = 0;
		wr->num_sge = s->len ? 1 : 0;
		wr->send_flags = IBV_SEND_INLINE;
	} else if (s->len) {
		int n = seg_sges(s, sg);

		if (n < 0)
			return -EMSGSIZE;
		wr->num_sge = n;
	}
	if (s->op == SEG_WRITE || s->op == SEG_WRITE_IMM) {
		wr->wr.rdma.remote_addr = s->va;
		wr->wr.rdma.rkey = s->rkey;
	}
	wr->imm_data = htobe32(s->imm);
	if ((wr->send_flags & IBV_SEND_SIGNALED) || ++c->since >= SEG_SIGNAL_EVERY) {
		wr->send_flags |= IBV_SEND_SIGNALED; /* frees the send queue up to it */
		c->since = 0;
	}
	c->n++;
	q->pending = true;
	if (c->n == SEG_CHAIN && (rc = chain_post(c)))
		return -rc;
	return 0;
}

void verbs_seg_flush(struct uroce_context *ctx)
{
	for (struct segq *q = vp_of(ctx)->segqs; q; q = q->next) {
		bool left = false;

		if (!q->pending)
			continue;
		for (unsigned k = 0; k <= q->npool; k++) {
			if (q->chain[k].n && chain_post(&q->chain[k])) {
				q->qp->fatal_pending = true; /* the NIC refused the chain: the QP fails */
				ctx_kick(q->qp);
				q->chain[k].n = 0;
			}
			left |= q->chain[k].n != 0;
		}
		q->pending = left;
	}
}

/* rc: the peer's POOL message connects our pool QP of each index it
 * names to the peer's (again only with another number); an index past
 * our pool is ignored (the peer has more paths than we do). */
static void rx_pool(struct segq *q, const uint8_t *b, uint32_t len)
{
	struct uroce_qp *qp = q->qp;
	struct verbs_port *vp = vp_of(qp->ctx);
	struct ibv_ah_attr ah;
	uint32_t first, n;

	if (len < SRW_CTRL_HDR_LEN + SRW_POOL_FIXED || b[0] != SRW_VERSION || roce_get_be16(b + 2) != len) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	if (!srw_ctrl_token_ok(b, qp->tok_local)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_TOKEN);
		return;
	}
	first = roce_get_be16(b + SRW_CTRL_HDR_LEN);
	n = roce_get_be16(b + SRW_CTRL_HDR_LEN + 2);
	if (!first || !n || n > SRW_POOL_MAX || len != SRW_CTRL_HDR_LEN + SRW_POOL_FIXED + 4 * n) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	if (verbs_nic_ah(vp, &qp->attr.ah_attr, &ah, "the RC pool")) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	for (uint32_t i = 0; i < n && first + i < q->npool; i++) {
		uint32_t qpn = roce_get_be32(b + SRW_CTRL_HDR_LEN + SRW_POOL_FIXED + 4 * i) & ROCE_QPN_MASK;
		struct ibv_qp *iq = q->pool[first + i];

		if (q->peer_qpn[first + i] == qpn)
			continue;
		q->peer_qpn[first + i] = 0; /* its path goes on path 0 until connected */
		if (!to_rts(iq, vp->ib_port, &ah, (enum ibv_mtu)qp->attr.path_mtu, qpn))
			q->peer_qpn[first + i] = qpn;
	}
}

/* A completion of the data or control QP as the packet it stands for. */
static void arrival(struct segq *q, const struct ibv_wc *wc, uint32_t buf)
{
	struct uroce_qp *qp = q->qp;
	struct roce_pkt pkt;
	bool ctrl = wc->qp_num == q->ctrl->qp_num;

	if (ctrl && q->rc && wc->opcode == IBV_WC_RECV && !(wc->wc_flags & IBV_WC_WITH_IMM) && wc->byte_len >= 2 &&
	    q->bufs[(size_t)buf * SEG_BUF_SIZE + 1] == SRW_CTRL_POOL) {
		rx_pool(q, q->bufs + (size_t)buf * SEG_BUF_SIZE, wc->byte_len);
		return;
	}

	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.sip, qp->d.dip, 16); /* the NIC took it on this connection */
	memcpy(pkt.dip, qp->d.sip, 16);
	pkt.ipv6 = qp->d.ipv6;
	pkt.pkey = ROCE_PKEY_DEFAULT;
	pkt.ttl = 64;
	pkt.dqpn = ctrl ? qp->ctrl_qpn : qp->qpn;
	pkt.payload_len = wc->byte_len;
	pkt.imm = be32toh(wc->imm_data);
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		pkt.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM; /* placed by the NIC: no payload here */
	} else {
		pkt.opcode = ROCE_TR_UC | ((wc->wc_flags & IBV_WC_WITH_IMM) ? ROCE_OP_SEND_ONLY_IMM : ROCE_OP_SEND_ONLY);
		pkt.payload = q->bufs + (size_t)buf * SEG_BUF_SIZE;
	}
	ctx_nic_arrival(qp, &pkt);
}

/* One burst of the shared CQ; completions of DYING (a QP being destroyed)
 * are dropped. */
static unsigned poll_cq(struct verbs_port *vp, struct uroce_context *ctx, const struct segq *dying)
{
	struct ibv_wc wc[SEG_POLL_BURST];
	int n = ibv_poll_cq(vp->seg_cq, SEG_POLL_BURST, wc);

	for (int i = 0; i < n; i++) {
		unsigned tag = (unsigned)(wc[i].wr_id & WRID_TAG);
		bool recv = tag == WRID_RECV;
		struct seg_buf *b = tag != WRID_SEND ? (struct seg_buf *)(uintptr_t)(wc[i].wr_id & ~(uint64_t)WRID_TAG) : NULL;
		struct segq *q = b ? b->q : (struct segq *)(uintptr_t)(wc[i].wr_id & ~(uint64_t)WRID_TAG);

		if (q == dying)
			continue;
		if (tag == WRID_STAGE && q->busy[b->i]) {
			q->busy[b->i] = 0;
			q->free[q->nfree++] = b->i;
		}
		if (wc[i].status != IBV_WC_SUCCESS) {
			/* a receive the NIC refused (a bad key: it placed nothing),
			 * or a send QP in error, which fails the QP */
			ctx_count_drop(ctx, wc[i].status == IBV_WC_REM_ACCESS_ERR || wc[i].status == IBV_WC_LOC_PROT_ERR
			                    ? UROCE_DROP_BAD_RKEY : UROCE_DROP_BAD_LENGTH_MSG);
			if (!recv) {
				q->qp->fatal_pending = true;
				ctx_kick(q->qp);
			}
		} else if (recv) {
			arrival(q, &wc[i], b->i);
		}
		if (recv && post_buf(q, b->i))
			ctx_count_drop(ctx, UROCE_DROP_NO_RECV_BUFFER);
	}
	return n > 0 ? (unsigned)n : 0;
}

unsigned verbs_seg_poll(struct uroce_context *ctx)
{
	struct verbs_port *vp = vp_of(ctx);
	unsigned got = 0, n;

	if (!vp->seg_cq)
		return 0;
	/* until the CQ is empty, within a bound: one burst a pass left the
	 * bounce buffers of 4 busy QPs unposted long enough to run out */
	for (unsigned b = 0; b < SEG_POLL_BURSTS && (n = poll_cq(vp, ctx, NULL)) > 0; b++) {
		got += n;
		if (n < SEG_POLL_BURST)
			break;
	}
	return got;
}
