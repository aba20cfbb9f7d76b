/* SPDX-License-Identifier: MIT */
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
 *   - failover (a QP with backups on a context of several verbs ports):
 *     the QP has all of the above on every port's device, each member
 *     connected to the peer's numbers behind it; the region keys the
 *     peer holds are its port 1 device's, so on a backup the policy sends
 *     WRITE-with-immediate data as SENDs the receiver places (sr_tx.c),
 *     and local keys are translated to the port's device; an error
 *     completion fails the member (and its QPs are connected again)
 *     instead of the QP;
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
#include "transport/failover/failover.h"
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
#define SEG_RECONNECT_NS 1000000ull /* a failed member's QPs are connected again at most this often */
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
	unsigned port;           /* the context's port (index) whose device has these */
	struct verbs_port *vp;
	struct dest d;           /* the member it serves, as the engine sees it (arrivals' addresses) */
	struct ibv_ah_attr ah;   /* and its connection: address, the peer's data and control QPNs */
	uint32_t dqpn, ctrl_dqpn;
	bool connected;
	bool cq_counted;         /* its completions are in vp->seg_cq_need */
	bool broken;             /* a send failed: connect its QPs again (a QP with backups) */
	uint64_t retry_ns;       /* not before then */
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
	struct segq *next;       /* the port's list */
};

/* qp->segq: the QP's NIC QPs by port, one port without backups (port 1),
 * every port with them. */
struct segset {
	struct segq *q[UROCE_MAX_PORTS];
};

static struct segq *segq_at(const struct uroce_qp *qp, unsigned port)
{
	return port < UROCE_MAX_PORTS ? ((const struct segset *)qp->segq)->q[port] : NULL;
}

/* The context's CQ (verbs_port.seg_cq): created with the first sr QP,
 * grown to what they all can have in it (vp->seg_cq_need). */
static int shared_cq(struct verbs_port *vp, unsigned need)
{
	int want = (int)need;

	if (!vp->seg_cq) {
		/* an extended CQ, stamped where the device stamps; a plain one
		 * where it has neither */
		struct ibv_cq_init_attr_ex ca = {
			.cqe = (uint32_t)want,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
			            (vp->ts.on ? IBV_WC_EX_WITH_COMPLETION_TIMESTAMP : 0),
		};
		struct ibv_cq_ex *x = ibv_create_cq_ex(vp->ibctx, &ca);

		if (!x && vp->ts.on) {
			vp->ts.on = false; /* the device has a clock but will not stamp this CQ */
			vp->port->completion_ts = 0;
			ca.wc_flags &= ~(uint64_t)IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
			x = ibv_create_cq_ex(vp->ibctx, &ca);
		}
		vp->seg_cqx = x;
		vp->seg_cq = x ? ibv_cq_ex_to_cq(x) : ibv_create_cq(vp->ibctx, want, NULL, NULL, 0);
		return vp->seg_cq ? 0 : (errno ? errno : ENOMEM);
	}
	if (((struct ibv_cq *)vp->seg_cq)->cqe >= want)
		return 0;
	return ibv_resize_cq(vp->seg_cq, want * 2);
}

static struct verbs_port *vp_at(struct uroce_context *ctx, unsigned port)
{
	return verbs_port_of(ctx->ports[port].port);
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
	struct ibv_cq *cq = q->vp->seg_cq;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = q->srq,
		.cap = { .max_send_wr = SEG_SQ_DEPTH, .max_send_sge = SEG_MAX_SGE, .max_inline_data = SEG_INLINE },
		.qp_type = q->rc ? IBV_QPT_RC : IBV_QPT_UC,
	};
	struct ibv_qp *iq = ibv_create_qp(verbs_pd(pd, q->port), &ia);

	if (!iq)
		*what = q->rc ? "an RC QP (send 512 x 8 SGEs, 256 bytes inline, on an SRQ)"
		              : "a UC QP (send 512 x 8 SGEs, 256 bytes inline, on an SRQ)";
	return iq;
}

static unsigned poll_cq(struct verbs_port *vp, struct uroce_context *ctx, const struct segq *dying);

/* The QPN the peer sends q's data to (rc: pool QP 0, there is no data QP). */
static uint32_t data_qpn(const struct segq *q)
{
	return q->rc ? q->pool[0]->qp_num : q->data->qp_num;
}

/* The pool's QPs then the control QP: chain k's NIC QP. */
static struct ibv_qp *send_qp(const struct segq *q, unsigned k)
{
	return k < q->npool ? q->pool[k] : q->ctrl;
}

static void segq_free(struct segq *q)
{
	struct verbs_port *vp = q->vp;
	struct segq **pp;

	for (pp = (struct segq **)&vp->segqs; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			vp->nsegq--;
			if (q->cq_counted)
				vp->seg_cq_need -= SEG_CQ_NEED(q);
			if (q->broken)
				vp->nbroken--;
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
		while (poll_cq(vp, q->qp->ctx, q))
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
}

void verbs_seg_destroy(struct uroce_qp *qp)
{
	struct segset *set = qp->segq;

	if (!set)
		return;
	for (unsigned i = 0; i < UROCE_MAX_PORTS; i++)
		if (set->q[i])
			segq_free(set->q[i]);
	free(set);
	qp->segq = NULL;
}

/* The NIC QPs of qp on one port's device. */
static int segq_create(struct uroce_qp *qp, unsigned port, unsigned npaths)
{
	struct verbs_port *vp = vp_at(qp->ctx, port);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SEG_NBUFS, .max_sge = 1 } };
	struct ibv_pd *pd = verbs_pd(qp->pd, port);
	const char *what = NULL;
	struct segq *q = calloc(1, sizeof(*q));
	int e = 0;

	if (!q)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	((struct segset *)qp->segq)->q[port] = q;
	q->qp = qp;
	q->port = port;
	q->vp = vp;
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
	/* on the port's list from the start: segq_free takes it off */
	q->next = vp->segqs;
	vp->segqs = q;
	vp->nsegq++;
	if ((e = shared_cq(vp, vp->seg_cq_need + SEG_CQ_NEED(q))))
		what = "the engine's CQ (or growing it)";
	else
		vp->seg_cq_need += SEG_CQ_NEED(q);
	q->cq_counted = !e;
	if (!what && !(q->bmr = ibv_reg_mr(pd, q->bufs, (size_t)SEG_NBUFS * SEG_BUF_SIZE, IBV_ACCESS_LOCAL_WRITE)))
		what = "registering the bounce buffers";
	if (!what && q->nstage &&
	    !(q->smr = ibv_reg_mr(pd, q->stage, (size_t)q->nstage * SEG_BUF_SIZE, IBV_ACCESS_LOCAL_WRITE)))
		what = "registering the stage buffers";
	for (uint32_t i = 0; i < q->nstage; i++) {
		q->sd[i] = (struct seg_buf){ .q = q, .i = i };
		q->free[i] = i;
	}
	q->nfree = q->nstage;
	if (!what && !(q->srq = ibv_create_srq(pd, &sa)))
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
			return uroce_fail(-EOPNOTSUPP, "uroce_qp_create: the NIC of port %u refused %s for %s over verbs "
			                               "(%s); without UC, give rel.nic_rc = 1 at both ends (an RC pool)",
			                  port + 1, what, uroce_reliability_str(qp->init.rel.reliability), strerror(e));
		return uroce_fail(-e, "uroce_qp_create: the NIC of port %u refused %s for %s over verbs: %s", port + 1,
		                  what, uroce_reliability_str(qp->init.rel.reliability), strerror(e));
	}
	for (unsigned k = 0; k <= q->npool; k++)
		q->chain[k].iq = send_qp(q, k);
	return 0;
}

int verbs_seg_create(struct uroce_qp *qp, unsigned npaths)
{
	/* with backups, every port: the members are chosen at RTR, and the
	 * peer needs every port's numbers before that */
	unsigned nports = qp->init.failover.nbackups ? qp->ctx->nports : 1;
	struct segq *q;
	int rc;

	qp->segq = calloc(1, sizeof(struct segset));
	if (!qp->segq)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	for (unsigned i = 0; i < nports; i++) {
		rc = segq_create(qp, i, npaths);
		if (rc)
			return rc; /* (segq_create destroyed what there was) */
	}
	q = segq_at(qp, 0);
	qp->nic_qpn = data_qpn(q);
	qp->nic_ctrl_qpn = q->ctrl->qp_num;
	return 0;
}

int verbs_seg_port_nums(const struct uroce_qp *qp, unsigned port, uint32_t *qpn, uint32_t *ctrl_qpn)
{
	const struct segq *q = segq_at(qp, port);

	if (!q)
		return uroce_fail(-EINVAL, "uroce_qp_port_nums: QP 0x%x has no NIC QPs on port %u (a QP has them on "
		                           "every port only when created with failover.nbackups > 0)", qp->nic_qpn,
		                  port + 1);
	*qpn = data_qpn(q);
	*ctrl_qpn = q->ctrl->qp_num;
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
	struct segq *q = segq_at(qp, 0);
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_POOL_FIXED + 4 * SRW_POOL_MAX];

	for (unsigned first = 1; first < q->npool; first += SRW_POOL_MAX) {
		unsigned n = q->npool - first < SRW_POOL_MAX ? q->npool - first : SRW_POOL_MAX;
		uint32_t len = SRW_CTRL_HDR_LEN + SRW_POOL_FIXED + 4 * n;
		struct seg s = { .qp = qp, .d = &qp->d, .op = SEG_SEND, .len = len, .buf = b };
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

/* The UC QPs of q to its member: the pool sends to the peer's data QPN,
 * the control QP to its control QPN; the data QP only receives (a UC QP
 * takes ONLY packets of any PSN). */
static int uc_connect(struct segq *q)
{
	enum ibv_mtu mtu = (enum ibv_mtu)q->qp->attr.path_mtu;
	uint8_t ib_port = q->vp->ib_port;
	int rc = to_rts(q->data, ib_port, &q->ah, mtu, q->dqpn);

	if (!rc)
		rc = to_rts(q->ctrl, ib_port, &q->ah, mtu, q->ctrl_dqpn);
	for (unsigned i = 0; !rc && i < q->npool; i++)
		rc = to_rts(q->pool[i], ib_port, &q->ah, mtu, q->dqpn);
	return rc;
}

/* q serves the member behind ua (the peer's numbers there dqpn, ctrl):
 * everything of an earlier connection goes. */
static int segq_connect(struct segq *q, const struct uroce_ah_attr *ua, uint32_t dqpn, uint32_t ctrl)
{
	struct uroce_qp *qp = q->qp;
	enum ibv_mtu mtu = (enum ibv_mtu)qp->attr.path_mtu;
	int rc = verbs_nic_ah(q->vp, ua, &q->ah, "uroce_qp_modify");

	if (!rc)
		rc = ctx_resolve_dest(qp->ctx, q->port, ua, &q->d);
	if (rc)
		return rc;
	q->dqpn = dqpn;
	q->ctrl_dqpn = ctrl;
	if (q->broken) {
		q->broken = false;
		q->vp->nbroken--;
	}
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
			rc = to_rts(q->pool[0], q->vp->ib_port, &q->ah, mtu, dqpn);
		if (!rc)
			rc = to_rts(q->ctrl, q->vp->ib_port, &q->ah, mtu, ctrl);
		if (!rc) {
			q->peer_qpn[0] = dqpn;
			q->connected = true; /* for the POOL message's post */
			rc = -send_pool(qp);
		}
		if (rc) {
			q->connected = false;
			return uroce_fail(-rc, "uroce_qp_modify: the NIC refused to connect the RC pool to QPN 0x%x: %s",
			                  dqpn, strerror(rc));
		}
		return 0;
	}
	rc = uc_connect(q);
	if (rc)
		return uroce_fail(-rc, "uroce_qp_modify: the NIC of port %u refused to connect the UC QPs to QPN 0x%x: %s",
		                  q->port + 1, dqpn, strerror(rc));
	q->connected = true;
	return 0;
}

int verbs_seg_connect(struct uroce_qp *qp)
{
	int rc;

	for (unsigned i = 0; i < UROCE_MAX_PORTS; i++)
		if (segq_at(qp, i))
			segq_at(qp, i)->connected = false;
	rc = segq_connect(segq_at(qp, 0), &qp->attr.ah_attr, qp->dqpn, qp_ctrl_dqpn(qp));
	/* the backups (failover checked each is on a port of its own) */
	for (unsigned i = 0; !rc && i < qp->init.failover.nbackups; i++) {
		const struct uroce_ah_attr *ua = &qp->attr.backup_ah[i];
		struct segq *q = segq_at(qp, ua->port_num - 1u);

		if (!q)
			return uroce_fail(-EINVAL, "uroce_qp_modify: backup_ah[%u].port_num %u: the QP has no NIC QPs "
			                           "there", i, ua->port_num);
		rc = segq_connect(q, ua, qp->attr.backup_dest_qpn[i], qp->attr.backup_dest_ctrl_qpn[i]);
	}
	return rc;
}

static const enum ibv_wr_opcode seg_wr_op[] = {
	[SEG_WRITE] = IBV_WR_RDMA_WRITE,
	[SEG_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[SEG_SEND] = IBV_WR_SEND,
	[SEG_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
};

/* The SGEs covering len bytes at offset off of the list: the application's
 * own registrations, which are the NIC's (no copy); on another port than
 * 1, the same regions' keys on that port's device. */
static int seg_sges(const struct seg *s, unsigned port, struct ibv_sge *out)
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
		out[n].lkey = port ? verbs_nic_lkey(s->qp->ctx, s->sge[i].lkey, port) : s->sge[i].lkey;
		if (!out[n].lkey)
			return -1; /* deregistered since the post */
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

/* The NIC refused q's WRs (a post, or an error completion). Without
 * backups the QP fails; with them only the member does: failover moves
 * the QP on (and sends again what was outstanding), and q's QPs, in
 * error now, are connected again (verbs_seg_poll) for a probe to bring
 * the member back. */
static void seg_fail(struct segq *q)
{
	struct uroce_qp *qp = q->qp;

	if (!qp->init.failover.nbackups) {
		qp->fatal_pending = true;
		ctx_kick(qp);
		return;
	}
	for (unsigned k = 0; k <= q->npool; k++)
		q->chain[k].n = 0;
	if (q->broken)
		return;
	q->broken = true;
	q->vp->nbroken++;
	qp_failover.port_err(qp, q->port);
}

/* A post the NIC refused: the error for the policy, or 0 once the member failed. */
static int post_err(struct segq *q, int rc)
{
	if (!q->qp->init.failover.nbackups)
		return -rc;
	seg_fail(q);
	return 0;
}

int verbs_seg_post(struct uroce_qp *qp, const struct seg *s)
{
	struct segq *q = segq_at(qp, s->d->port);
	unsigned k;
	struct seg_chain *c;
	struct ibv_send_wr *wr;
	struct ibv_sge *sg;
	int rc;

	if (!q || !q->connected)
		return -ENOTCONN; /* (failover sends on members only, each connected at RTR) */
	if (q->broken)
		return 0; /* its member failed: sr sends it again where it goes now */
	/* rc: a path whose pair is not connected yet goes on path 0 */
	k = s->op == SEG_SEND ? q->npool : q->rc && !q->peer_qpn[s->path % q->npool] ? 0 : s->path % q->npool;
	c = &q->chain[k];
	if (c->n == SEG_CHAIN && (rc = chain_post(c)))
		return post_err(q, rc);
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
		int n = seg_sges(s, q->port, sg);

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
		return post_err(q, rc);
	return 0;
}

void verbs_seg_flush(struct uroce_context *ctx)
{
	for (unsigned p = 0; p < ctx->nports; p++)
		for (struct segq *q = vp_at(ctx, p)->segqs; q; q = q->next) {
			bool left = false;

			if (!q->pending)
				continue;
			for (unsigned k = 0; k <= q->npool; k++) {
				if (q->chain[k].n && chain_post(&q->chain[k])) {
					q->chain[k].n = 0;
					seg_fail(q); /* the NIC refused the chain: the QP (or its member) fails */
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
	struct verbs_port *vp = q->vp;
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
static void arrival(struct segq *q, const struct ibv_wc *wc, uint32_t buf, uint64_t rx_ns)
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
	memcpy(pkt.sip, q->d.dip, 16); /* the NIC took it on this member's connection */
	memcpy(pkt.dip, q->d.sip, 16);
	pkt.ipv6 = q->d.ipv6;
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
	ctx_nic_arrival(qp, q->port, &pkt, rx_ns);
}

/* Up to n completions of the shared CQ into wc, with the device's stamps
 * in ts (0 where it does not stamp). An extended CQ is read one
 * completion per start/end: rdma-core's rxe before v54 moves its consumer
 * index twice when ibv_next_poll finds nothing (it read completions that
 * were not there, seen as thousands of duplicates), and a single entry
 * never calls it. */
static int cq_read(struct verbs_port *vp, struct ibv_wc *wc, uint64_t *ts, int n)
{
	struct ibv_cq_ex *x = vp->seg_cqx;
	int k = 0;

	if (!x) {
		k = ibv_poll_cq(vp->seg_cq, n, wc);
		for (int i = 0; i < k; i++)
			ts[i] = 0;
		return k;
	}
	for (; k < n; k++) {
		struct ibv_poll_cq_attr pa = { 0 };
		struct ibv_wc *w = &wc[k];
		int rc = ibv_start_poll(x, &pa);

		if (rc)
			return rc == ENOENT || k ? k : -1;
		memset(w, 0, sizeof(*w));
		w->wr_id = x->wr_id;
		w->status = x->status;
		if (w->status == IBV_WC_SUCCESS) { /* the rest is defined on success only */
			w->opcode = ibv_wc_read_opcode(x);
			w->byte_len = ibv_wc_read_byte_len(x);
			w->wc_flags = ibv_wc_read_wc_flags(x);
			if (w->wc_flags & IBV_WC_WITH_IMM)
				w->imm_data = ibv_wc_read_imm_data(x);
			w->qp_num = ibv_wc_read_qp_num(x);
		}
		ts[k] = vp->ts.on ? verbs_ts_ns(&vp->ts, ibv_wc_read_completion_ts(x)) : 0;
		ibv_end_poll(x);
	}
	return k;
}

/* One burst of the shared CQ; completions of DYING (a QP being destroyed)
 * are dropped. */
static unsigned poll_cq(struct verbs_port *vp, struct uroce_context *ctx, const struct segq *dying)
{
	struct ibv_wc wc[SEG_POLL_BURST];
	uint64_t ts[SEG_POLL_BURST];
	int n = cq_read(vp, wc, ts, SEG_POLL_BURST);

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
			if (!recv)
				seg_fail(q);
		} else if (recv) {
			arrival(q, &wc[i], b->i, ts[i]);
		}
		if (recv && post_buf(q, b->i))
			ctx_count_drop(ctx, UROCE_DROP_NO_RECV_BUFFER);
	}
	return n > 0 ? (unsigned)n : 0;
}

/* Members whose QPs failed are connected again (RESET to RTS), at most
 * once a millisecond each while the NIC refuses. */
static void reconnect(struct verbs_port *vp, struct uroce_context *ctx)
{
	uint64_t now = ctx_now(ctx);

	for (struct segq *q = vp->segqs; q; q = q->next) {
		if (!q->broken || now < q->retry_ns)
			continue;
		q->retry_ns = now + SEG_RECONNECT_NS;
		if (!uc_connect(q)) {
			q->broken = false;
			vp->nbroken--;
		}
	}
}

unsigned verbs_seg_poll(struct uroce_context *ctx)
{
	unsigned got = 0, n;

	for (unsigned p = 0; p < ctx->nports; p++) {
		struct verbs_port *vp = vp_at(ctx, p);

		if (!vp->seg_cq)
			continue;
		verbs_ts_calibrate(&vp->ts, vp->ibctx, ctx_now(ctx));
		/* until the CQ is empty, within a bound: one burst a pass left the
		 * bounce buffers of 4 busy QPs unposted long enough to run out */
		for (unsigned b = 0; b < SEG_POLL_BURSTS && (n = poll_cq(vp, ctx, NULL)) > 0; b++) {
			got += n;
			if (n < SEG_POLL_BURST)
				break;
		}
		if (vp->nbroken)
			reconnect(vp, ctx);
	}
	return got;
}
