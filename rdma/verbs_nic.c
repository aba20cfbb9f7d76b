/* SPDX-License-Identifier: MIT */
/* The transport's objects on an RDMA NIC: a verbs context's PD, MRs, CQs
 * and RC/UC QPs are the device's own, and the calls are translated one to
 * one (uroce's enums carry ibv's values, checked below). The NIC's RC QP
 * runs go-back-N, ACKs and retries itself; the keys the application sees
 * are the NIC's, so a peer (rdma-core, perftest, uroce over AF_XDP) uses
 * them as it would any NIC's. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/verbs_port.h"
#include "rdma/verbs_seg.h"
#include "transport/core/nic.h"
#include "transport/core/qp_internal.h"

/* One work request batch handed to the device at once (one doorbell). */
#define NIC_POST_BATCH 32

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
SAME(UROCE_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
SAME(UROCE_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
SAME(UROCE_WR_SEND, IBV_WR_SEND);
SAME(UROCE_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
SAME(UROCE_WR_RDMA_READ, IBV_WR_RDMA_READ);
SAME(UROCE_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
SAME(UROCE_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
SAME(UROCE_WR_LOCAL_INV, IBV_WR_LOCAL_INV);
SAME(UROCE_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);
SAME(UROCE_SEND_FENCE, IBV_SEND_FENCE);
SAME(UROCE_SEND_SIGNALED, IBV_SEND_SIGNALED);
SAME(UROCE_SEND_SOLICITED, IBV_SEND_SOLICITED);
SAME(UROCE_SEND_INLINE, IBV_SEND_INLINE);
SAME(UROCE_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);
SAME(UROCE_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
SAME(UROCE_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
SAME(UROCE_WC_LOCAL_INV, IBV_WC_LOCAL_INV);
SAME(UROCE_WC_GRH, IBV_WC_GRH);
SAME(UROCE_WC_WITH_IMM, IBV_WC_WITH_IMM);
SAME(UROCE_WC_WITH_INV, IBV_WC_WITH_INV);
SAME(UROCE_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
SAME(UROCE_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
SAME(UROCE_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
SAME(UROCE_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
SAME(UROCE_ACCESS_MW_BIND, IBV_ACCESS_MW_BIND);
SAME(UROCE_QPT_RC, IBV_QPT_RC);
SAME(UROCE_QPT_UC, IBV_QPT_UC);
SAME(UROCE_QPT_UD, IBV_QPT_UD);
SAME(UROCE_QPS_ERR, IBV_QPS_ERR);
SAME(UROCE_MTU_4096, IBV_MTU_4096);
SAME(UROCE_QP_DEST_QPN, IBV_QP_DEST_QPN);
SAME(UROCE_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
SAME(UROCE_QP_AV, IBV_QP_AV);
/* a uroce SGE is an ibv SGE: the lists are handed over as they are */
_Static_assert(sizeof(struct uroce_sge) == sizeof(struct ibv_sge), "sge size");
_Static_assert(offsetof(struct uroce_sge, lkey) == offsetof(struct ibv_sge, lkey), "sge lkey");
_Static_assert(offsetof(struct uroce_sge, length) == offsetof(struct ibv_sge, length), "sge length");

/* The mask bits both sides know (uroce's DEST_TOKEN is its own). */
#define NIC_QP_MASK ((int)(UROCE_QP_DEST_QPN << 1) - 1)

/* A region on a verbs context: registered on every port's device (a QP
 * with backups sends from it by any of them); its public keys are port
 * 1's, the ones a peer is given. */
struct nic_mr {
	struct mr_int m; /* first: the public region is its first member */
	struct ibv_mr *mr[UROCE_MAX_PORTS];
	struct nic_mr *next; /* the context's regions, for post-time checks (mr_find) */
};

/* Port 1's: it keeps the context's objects (application CQs, the NIC's
 * own RC QPs, the region list); the others carry failover's backups. */
static struct verbs_port *vp_of(struct uroce_context *ctx)
{
	return verbs_port_of(ctx->ports[0].port);
}

static void nic_pd_free(struct uroce_pd *pd)
{
	struct verbs_pd *v = pd->nic;

	for (unsigned i = 0; v && i < pd->ctx->nports; i++)
		if (v->pd[i])
			ibv_dealloc_pd(v->pd[i]);
	free(v);
	pd->nic = NULL;
}

static int nic_pd_alloc(struct uroce_pd *pd)
{
	struct verbs_pd *v = calloc(1, sizeof(*v));

	if (!v)
		return uroce_fail(-ENOMEM, "uroce_pd_alloc: out of memory");
	pd->nic = v;
	for (unsigned i = 0; i < pd->ctx->nports; i++) {
		struct verbs_port *vp = verbs_port_of(pd->ctx->ports[i].port);

		v->pd[i] = ibv_alloc_pd(vp->ibctx);
		if (!v->pd[i]) {
			int e = errno ? errno : ENOMEM;

			nic_pd_free(pd);
			return uroce_fail(-e, "uroce_pd_alloc: the NIC of port %u refused a PD: %s", i + 1, strerror(e));
		}
		if (!vp->dmabuf_probed) {
			/* NCCL's probe: a dmabuf MR of fd -1 fails with EOPNOTSUPP
			 * where the device (or the kernel) has none, with EBADF or
			 * the like where it has */
			struct ibv_mr *x = ibv_reg_dmabuf_mr(v->pd[i], 0, 0, 0, -1, 0);

			vp->dmabuf_ok = !x && errno != EOPNOTSUPP && errno != EPROTONOSUPPORT;
			if (x)
				ibv_dereg_mr(x);
			vp->dmabuf_probed = true;
		}
	}
	return 0;
}

/* A registered region made visible: the NIC's keys, the context's count. */
static int mr_publish(struct nic_mr *m, struct uroce_pd *pd, void *addr, size_t length, int access,
                      struct uroce_mr **out)
{
	struct verbs_port *vp = vp_of(pd->ctx);

	m->m.pub.pd = pd;
	m->m.pub.addr = addr;
	m->m.pub.length = length;
	m->m.pub.access = access;
	m->m.pub.lkey = m->mr[0]->lkey;
	m->m.pub.rkey = m->mr[0]->rkey;
	m->next = vp->mrs;
	vp->mrs = m;
	__atomic_fetch_add(&pd->ctx->nmr, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&pd->refs, 1, __ATOMIC_RELAXED);
	*out = &m->m.pub;
	return 0;
}

static void mr_unreg(struct nic_mr *m, unsigned nports)
{
	for (unsigned i = 0; i < nports; i++)
		if (m->mr[i])
			ibv_dereg_mr(m->mr[i]);
	free(m);
}

static int nic_mr_reg(struct uroce_pd *pd, void *addr, size_t length, int access, struct uroce_mr **out)
{
	struct nic_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return uroce_fail(-ENOMEM, "uroce_mr_reg: out of memory");
	for (unsigned i = 0; i < pd->ctx->nports; i++) {
		m->mr[i] = ibv_reg_mr(verbs_pd(pd, i), addr, length, access);
		if (!m->mr[i]) {
			int e = errno ? errno : ENOMEM;

			mr_unreg(m, pd->ctx->nports);
			return uroce_fail(-e, "uroce_mr_reg: the NIC of port %u refused to register %zu bytes at %p: %s",
			                  i + 1, length, addr, strerror(e));
		}
	}
	return mr_publish(m, pd, addr, length, access, out);
}

static struct mr_int *nic_mr_find(struct uroce_context *ctx, uint32_t lkey)
{
	for (struct nic_mr *m = vp_of(ctx)->mrs; m; m = m->next)
		if (m->m.pub.lkey == lkey)
			return &m->m;
	return NULL;
}

static struct mr_int *nic_mr_find_rkey(struct uroce_context *ctx, uint32_t rkey)
{
	for (struct nic_mr *m = vp_of(ctx)->mrs; m; m = m->next)
		if (m->m.pub.rkey == rkey)
			return &m->m;
	return NULL;
}

uint32_t verbs_nic_lkey(struct uroce_context *ctx, uint32_t lkey, unsigned port)
{
	struct nic_mr *m = (struct nic_mr *)nic_mr_find(ctx, lkey);

	return m && port < ctx->nports ? m->mr[port]->lkey : 0;
}

static int nic_mr_dereg(struct uroce_mr *mr)
{
	struct nic_mr *m = (struct nic_mr *)mr;
	int rc = 0;

	for (unsigned i = 0; i < mr->pd->ctx->nports; i++) {
		int r = m->mr[i] ? ibv_dereg_mr(m->mr[i]) : 0;

		if (!r)
			m->mr[i] = NULL;
		rc = rc ? rc : r;
	}
	if (rc)
		return uroce_fail(-rc, "uroce_mr_dereg: the NIC refused: %s", strerror(rc));
	for (struct nic_mr **pp = (struct nic_mr **)&vp_of(mr->pd->ctx)->mrs; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	__atomic_fetch_sub(&mr->pd->ctx->nmr, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&mr->pd->refs, 1, __ATOMIC_RELAXED);
	free(m);
	return 0;
}

/* A dmabuf: the NIC's own dmabuf MR. A device without them (rxe) cannot
 * be given the buffer's mapping instead: a dmabuf's mmap is a PFN map,
 * which the kernel does not pin for an MR (EFAULT, seen on rxe with a
 * udmabuf), so the caller is told to register host memory itself. */
static int nic_mr_reg_dmabuf(struct uroce_pd *pd, int fd, uint64_t offset, size_t length, uint64_t iova,
                             int access, struct uroce_mr **out)
{
	struct verbs_port *vp = vp_of(pd->ctx);
	struct nic_mr *m;
	int e;

	for (unsigned i = 1; vp->dmabuf_ok && i < pd->ctx->nports; i++)
		if (!verbs_port_of(pd->ctx->ports[i].port)->dmabuf_ok)
			vp = verbs_port_of(pd->ctx->ports[i].port); /* the one that has none */
	if (!vp->dmabuf_ok)
		return uroce_fail(-EOPNOTSUPP, "uroce_mr_reg_dmabuf: RDMA device '%s' has no dmabuf memory regions "
		                               "(ibv_reg_dmabuf_mr: EOPNOTSUPP); accepted on this device: host memory "
		                               "with uroce_mr_reg (the buffer's own pages), or CUDA memory by its device "
		                               "pointer where nvidia-peermem is loaded",
		                  ibv_get_device_name(vp->ibctx->device));
	m = calloc(1, sizeof(*m));
	if (!m)
		return uroce_fail(-ENOMEM, "uroce_mr_reg_dmabuf: out of memory");
	for (unsigned i = 0; i < pd->ctx->nports; i++) {
		m->mr[i] = ibv_reg_dmabuf_mr(verbs_pd(pd, i), offset, length, iova, fd, access);
		if (!m->mr[i]) {
			e = errno ? errno : EIO;
			mr_unreg(m, pd->ctx->nports);
			return uroce_fail(-e, "uroce_mr_reg_dmabuf: the NIC of port %u refused %zu bytes of dmabuf fd %d "
			                  "at offset %llu: %s", i + 1, length, fd, (unsigned long long)offset, strerror(e));
		}
	}
	m->m.pub.flags = UROCE_MR_DMABUF_DIRECT;
	return mr_publish(m, pd, (void *)(uintptr_t)iova, length, access, out);
}

static int nic_cq_create(struct uroce_cq *cq, int cqe)
{
	cq->nic = ibv_create_cq(vp_of(cq->ctx)->ibctx, cqe, NULL, NULL, 0);
	if (!cq->nic)
		return uroce_fail(errno ? -errno : -ENOMEM, "uroce_cq_create: the NIC refused a CQ of %d entries: %s",
		                  cqe, strerror(errno));
	return 0;
}

static void nic_cq_destroy(struct uroce_cq *cq)
{
	ibv_destroy_cq(cq->nic);
}

static int nic_poll_cq(struct uroce_cq *cq, int n, struct uroce_wc *wc)
{
	struct ibv_wc w[NIC_POST_BATCH];
	int got = 0;

	while (got < n) {
		int want = n - got < NIC_POST_BATCH ? n - got : NIC_POST_BATCH;
		int k = ibv_poll_cq(cq->nic, want, w);

		if (k < 0)
			return got ? got : uroce_fail(-EIO, "uroce_poll_cq: the NIC's CQ is in error (%d)", k);
		for (int i = 0; i < k; i++) {
			struct uroce_wc *o = &wc[got + i];

			memset(o, 0, sizeof(*o));
			o->wr_id = w[i].wr_id;
			o->status = (enum uroce_wc_status)w[i].status;
			o->opcode = (enum uroce_wc_opcode)w[i].opcode;
			o->vendor_err = w[i].vendor_err;
			o->byte_len = w[i].byte_len;
			o->imm_data = w[i].imm_data; /* the union: invalidated_rkey with WITH_INV */
			o->qp_num = w[i].qp_num;
			o->src_qp = w[i].src_qp;
			o->wc_flags = w[i].wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
			o->pkey_index = w[i].pkey_index;
			o->slid = w[i].slid;
			o->sl = w[i].sl;
			o->dlid_path_bits = w[i].dlid_path_bits;
		}
		got += k;
		if (k < want)
			break;
	}
	return got;
}

static int nic_qp_create(struct uroce_qp *qp, struct uroce_qp_init_attr *attr)
{
	struct ibv_qp_init_attr ia = {
		.qp_context = qp,
		.send_cq = attr->send_cq->nic,
		.recv_cq = attr->recv_cq->nic,
		.cap = {
			.max_send_wr = attr->cap.max_send_wr,
			.max_recv_wr = attr->cap.max_recv_wr,
			.max_send_sge = attr->cap.max_send_sge ? attr->cap.max_send_sge : 1,
			.max_recv_sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1,
			.max_inline_data = attr->cap.max_inline_data,
		},
		.qp_type = (enum ibv_qp_type)attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.srq = attr->srq ? attr->srq->nic : NULL,
	};
	struct ibv_qp *q = ibv_create_qp(verbs_pd(qp->pd, 0), &ia);

	if (!q) {
		int e = errno ? errno : ENOMEM;

		if (attr->qp_type == UROCE_QPT_UC && (e == EOPNOTSUPP || e == EINVAL))
			return uroce_fail(-EOPNOTSUPP, "uroce_qp_create: the NIC has no UC QPs (%s); accepted there: RC",
			                  strerror(e));
		return uroce_fail(-e, "uroce_qp_create: the NIC refused a %s QP (send %u x %u SGEs, receive %u x %u, "
		                  "inline %u): %s", attr->qp_type == UROCE_QPT_RC ? "RC" :
		                  attr->qp_type == UROCE_QPT_UC ? "UC" : "UD", ia.cap.max_send_wr,
		                  ia.cap.max_send_sge, ia.cap.max_recv_wr, ia.cap.max_recv_sge, ia.cap.max_inline_data,
		                  strerror(e));
	}
	attr->cap.max_send_wr = ia.cap.max_send_wr;
	attr->cap.max_recv_wr = ia.cap.max_recv_wr;
	attr->cap.max_send_sge = ia.cap.max_send_sge;
	attr->cap.max_recv_sge = ia.cap.max_recv_sge;
	attr->cap.max_inline_data = ia.cap.max_inline_data;
	qp->nic = q;
	qp->qpn = q->qp_num;
	qp->state = qp->attr.qp_state = UROCE_QPS_RESET;
	qp->attr.port_num = 1;
	qp->attr.cap = attr->cap;
	return 0;
}

static int nic_qp_destroy(struct uroce_qp *qp)
{
	int rc = ibv_destroy_qp(qp->nic);

	if (rc)
		return uroce_fail(-rc, "uroce_qp_destroy: the NIC refused: %s", strerror(rc));
	return 0;
}

/* uroce's AV, on the device: its GID index is the device's index of the
 * same RoCEv2 GID; its port is the verbs port's (the caller checked that
 * a->port_num names vp). */
int verbs_nic_ah(const struct verbs_port *vp, const struct uroce_ah_attr *a, struct ibv_ah_attr *o, const char *fn)
{
	int dev = verbs_port_dev_gid(vp, a->sgid_index);

	if (dev < 0)
		return uroce_fail(-EINVAL, "%s: sgid_index %u; the port has %u RoCEv2 GIDs (accepted: 0-%u)", fn,
		                  a->sgid_index, vp->ngid, vp->ngid - 1);
	memset(o, 0, sizeof(*o));
	o->is_global = 1;
	memcpy(o->grh.dgid.raw, a->dgid, 16);
	o->grh.sgid_index = (uint8_t)dev;
	o->grh.hop_limit = a->hop_limit ? a->hop_limit : 64;
	o->grh.traffic_class = a->traffic_class;
	o->grh.flow_label = a->flow_label;
	o->sl = a->sl;
	o->port_num = vp->ib_port;
	return 0;
}

static int nic_qp_modify(struct uroce_qp *qp, const struct uroce_qp_attr *attr, int mask)
{
	struct verbs_port *vp = vp_of(qp->ctx);
	struct ibv_qp_attr a;
	int rc;

	if (mask & ~(NIC_QP_MASK | UROCE_QP_DEST_TOKEN))
		return uroce_fail(-EINVAL, "uroce_qp_modify: unknown mask bits 0x%x", mask & ~(NIC_QP_MASK | UROCE_QP_DEST_TOKEN));
	if (mask & UROCE_QP_ALT_PATH)
		return uroce_fail(-EOPNOTSUPP, "uroce_qp_modify: backups (ALT_PATH) are not carried on a verbs port yet");
	if ((mask & UROCE_QP_PORT) && attr->port_num != 1)
		return uroce_fail(-EINVAL, "uroce_qp_modify: port_num %u; the NIC's own QPs run on port 1 (accepted: 1)",
		                  attr->port_num);
	memset(&a, 0, sizeof(a));
	a.qp_state = (enum ibv_qp_state)attr->qp_state;
	a.cur_qp_state = (enum ibv_qp_state)attr->cur_qp_state;
	a.path_mtu = (enum ibv_mtu)attr->path_mtu;
	a.qkey = attr->qkey;
	a.rq_psn = attr->rq_psn;
	a.sq_psn = attr->sq_psn;
	a.dest_qp_num = attr->dest_qp_num;
	a.qp_access_flags = (unsigned)attr->qp_access_flags;
	a.pkey_index = attr->pkey_index;
	a.port_num = vp->ib_port;
	a.max_rd_atomic = attr->max_rd_atomic;
	a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	a.min_rnr_timer = attr->min_rnr_timer;
	a.timeout = attr->timeout;
	a.retry_cnt = attr->retry_cnt;
	a.rnr_retry = attr->rnr_retry;
	if ((mask & UROCE_QP_AV) && attr->ah_attr.port_num > 1)
		return uroce_fail(-EINVAL, "uroce_qp_modify: ah_attr.port_num %u; the NIC's own QPs run on port 1 "
		                           "(accepted: 0, 1)", attr->ah_attr.port_num);
	if (mask & UROCE_QP_AV) {
		rc = verbs_nic_ah(vp, &attr->ah_attr, &a.ah_attr, "uroce_qp_modify");
		if (rc)
			return rc;
	}
	rc = ibv_modify_qp(qp->nic, &a, mask & NIC_QP_MASK);
	if (rc)
		return uroce_fail(-rc, "uroce_qp_modify: the NIC refused the change (%s -> %s, mask 0x%x): %s",
		                  uroce_qp_state_str(qp->state),
		                  uroce_qp_state_str((mask & UROCE_QP_STATE) ? attr->qp_state : qp->state),
		                  mask & NIC_QP_MASK, strerror(rc));
	if (mask & UROCE_QP_STATE)
		qp->state = qp->attr.qp_state = attr->qp_state;
	if (mask & UROCE_QP_PATH_MTU)
		qp->attr.path_mtu = attr->path_mtu;
	if (mask & UROCE_QP_AV)
		qp->attr.ah_attr = attr->ah_attr;
	if (mask & UROCE_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num;
	return 0;
}

static int nic_qp_query(struct uroce_qp *qp, struct uroce_qp_attr *attr, struct uroce_qp_init_attr *init)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int rc = ibv_query_qp(qp->nic, &a, NIC_QP_MASK, &ia);

	if (rc)
		return uroce_fail(-rc, "uroce_qp_query: the NIC refused: %s", strerror(rc));
	*attr = qp->attr; /* the AV as given: the device's holds its own GID index */
	attr->qp_state = attr->cur_qp_state = (enum uroce_qp_state)a.qp_state;
	attr->path_mtu = (enum uroce_mtu)a.path_mtu;
	attr->qkey = a.qkey;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	attr->dest_qp_num = a.dest_qp_num;
	attr->qp_access_flags = (int)a.qp_access_flags;
	attr->cap.max_send_wr = a.cap.max_send_wr;
	attr->cap.max_recv_wr = a.cap.max_recv_wr;
	attr->cap.max_send_sge = a.cap.max_send_sge;
	attr->cap.max_recv_sge = a.cap.max_recv_sge;
	attr->cap.max_inline_data = a.cap.max_inline_data;
	attr->pkey_index = a.pkey_index;
	attr->port_num = 1;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;
	if (init)
		*init = qp->init;
	return 0;
}

/* Translate up to NIC_POST_BATCH WRs from *wr into w (chained); *wr
 * moves past them. -EINVAL/-EOPNOTSUPP at a WR the NIC path does not take
 * (*wr is then that WR). */
static int send_batch(struct uroce_send_wr **wr, struct ibv_send_wr *w, int *n, bool ud)
{
	struct uroce_send_wr *u = *wr;
	int k = 0;

	for (; u && k < NIC_POST_BATCH; u = u->next, k++) {
		struct ibv_send_wr *o = &w[k];

		if (u->opcode == UROCE_WR_BIND_MW || (unsigned)u->opcode > UROCE_WR_SEND_WITH_INV || u->num_sge < 0) {
			*wr = u;
			*n = k;
			return uroce_fail(-EINVAL, "uroce_post_send: wr %llu: opcode %d (num_sge %d); accepted on a verbs "
			                  "port: RDMA_WRITE[_WITH_IMM], SEND[_WITH_IMM/_WITH_INV], RDMA_READ, atomics, "
			                  "LOCAL_INV", (unsigned long long)u->wr_id, (int)u->opcode, u->num_sge);
		}
		memset(o, 0, sizeof(*o));
		o->wr_id = u->wr_id;
		o->sg_list = (struct ibv_sge *)u->sg_list;
		o->num_sge = u->num_sge;
		o->opcode = (enum ibv_wr_opcode)u->opcode;
		o->send_flags = u->send_flags;
		o->imm_data = u->imm_data; /* the union: invalidate_rkey */
		if (u->opcode == UROCE_WR_ATOMIC_CMP_AND_SWP || u->opcode == UROCE_WR_ATOMIC_FETCH_AND_ADD) {
			o->wr.atomic.remote_addr = u->wr.atomic.remote_addr;
			o->wr.atomic.compare_add = u->wr.atomic.compare_add;
			o->wr.atomic.swap = u->wr.atomic.swap;
			o->wr.atomic.rkey = u->wr.atomic.rkey;
		} else if (ud) {
			if (!u->wr.ud.ah || !u->wr.ud.ah->nic) {
				*wr = u;
				*n = k;
				return uroce_fail(-EINVAL, "uroce_post_send: wr %llu: a UD send needs an AH of this context",
				                  (unsigned long long)u->wr_id);
			}
			o->wr.ud.ah = u->wr.ud.ah->nic;
			o->wr.ud.remote_qpn = u->wr.ud.remote_qpn;
			o->wr.ud.remote_qkey = u->wr.ud.remote_qkey;
		} else {
			o->wr.rdma.remote_addr = u->wr.rdma.remote_addr;
			o->wr.rdma.rkey = u->wr.rdma.rkey;
		}
		if (k)
			w[k - 1].next = o;
	}
	*wr = u;
	*n = k;
	return 0;
}

/* Index of b in the chain starting at w, or 0 when not found. */
static int batch_index(const struct ibv_send_wr *w, const struct ibv_send_wr *b)
{
	int i = 0;

	for (; w && w != b; w = w->next)
		i++;
	return w ? i : 0;
}

static int nic_post_send(struct uroce_qp *qp, struct uroce_send_wr *wr, struct uroce_send_wr **bad_wr)
{
	struct ibv_send_wr w[NIC_POST_BATCH], *bad = NULL;

	while (wr) {
		struct uroce_send_wr *first = wr;
		int n, rc = send_batch(&wr, w, &n, qp->type == UROCE_QPT_UD), prc;

		if (n) {
			prc = ibv_post_send(qp->nic, w, &bad);
			if (prc) {
				int i = batch_index(w, bad);

				while (i--)
					first = first->next;
				if (bad_wr)
					*bad_wr = first;
				return uroce_fail(-prc, "uroce_post_send: the NIC refused wr %llu: %s",
				                  (unsigned long long)first->wr_id, strerror(prc));
			}
		}
		if (rc) {
			if (bad_wr)
				*bad_wr = wr;
			return rc;
		}
	}
	return 0;
}

/* Receives for a QP's own queue (qp) or an SRQ (srq), in batches. */
static int post_recvs(struct ibv_qp *qp, struct ibv_srq *srq, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr,
                      const char *fn)
{
	struct ibv_recv_wr w[NIC_POST_BATCH], *bad = NULL;

	if (bad_wr)
		*bad_wr = NULL;
	while (wr) {
		struct uroce_recv_wr *first = wr, *u = wr;
		int k = 0, rc;

		for (; u && k < NIC_POST_BATCH; u = u->next, k++) {
			w[k] = (struct ibv_recv_wr){ .wr_id = u->wr_id, .sg_list = (struct ibv_sge *)u->sg_list,
			                             .num_sge = u->num_sge };
			if (k)
				w[k - 1].next = &w[k];
		}
		rc = qp ? ibv_post_recv(qp, w, &bad) : ibv_post_srq_recv(srq, w, &bad);
		if (rc) {
			for (struct ibv_recv_wr *x = w; x && x != bad; x = x->next)
				first = first->next;
			if (bad_wr)
				*bad_wr = first;
			return uroce_fail(-rc, "%s: the NIC refused wr %llu: %s", fn,
			                  (unsigned long long)(first ? first->wr_id : 0), strerror(rc));
		}
		wr = u;
	}
	return 0;
}

static int nic_post_recv(struct uroce_qp *qp, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr)
{
	return post_recvs(qp->nic, NULL, wr, bad_wr, "uroce_post_recv");
}

static int nic_post_srq_recv(struct uroce_srq *srq, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr)
{
	return post_recvs(NULL, srq->nic, wr, bad_wr, "uroce_post_srq_recv");
}

static int nic_srq_create(struct uroce_srq *srq, const struct uroce_srq_init_attr *attr)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = attr->max_wr, .max_sge = attr->max_sge ? attr->max_sge : 1 } };

	srq->nic = ibv_create_srq(verbs_pd(srq->pd, 0), &ia);
	if (!srq->nic)
		return uroce_fail(errno ? -errno : -ENOMEM, "uroce_srq_create: the NIC refused an SRQ of %u x %u SGEs: %s",
		                  ia.attr.max_wr, ia.attr.max_sge, strerror(errno));
	srq->size = ia.attr.max_wr;
	srq->max_sge = ia.attr.max_sge;
	return 0;
}

static void nic_srq_destroy(struct uroce_srq *srq)
{
	ibv_destroy_srq(srq->nic);
}

static int nic_ah_create(struct uroce_ah *ah, const struct uroce_ah_attr *attr)
{
	struct ibv_ah_attr a;
	int rc = attr->port_num > 1 ? uroce_fail(-EINVAL, "uroce_ah_create: port_num %u; on a verbs context AHs "
	                                                  "serve the NIC's own UD QPs, on port 1 (accepted: 0, 1)",
	                                         attr->port_num)
	                            : verbs_nic_ah(vp_of(ah->pd->ctx), attr, &a, "uroce_ah_create");

	if (rc)
		return rc;
	ah->nic = ibv_create_ah(verbs_pd(ah->pd, 0), &a);
	if (!ah->nic)
		return uroce_fail(errno ? -errno : -EINVAL, "uroce_ah_create: the NIC refused the address: %s",
		                  strerror(errno));
	return 0;
}

static void nic_ah_destroy(struct uroce_ah *ah)
{
	ibv_destroy_ah(ah->nic);
}

const struct nic_ops verbs_nic_ops = {
	.pd_alloc = nic_pd_alloc,
	.pd_free = nic_pd_free,
	.mr_reg = nic_mr_reg,
	.mr_dereg = nic_mr_dereg,
	.mr_find = nic_mr_find,
	.mr_find_rkey = nic_mr_find_rkey,
	.mr_reg_dmabuf = nic_mr_reg_dmabuf,
	.cq_create = nic_cq_create,
	.cq_destroy = nic_cq_destroy,
	.poll_cq = nic_poll_cq,
	.qp_create = nic_qp_create,
	.qp_destroy = nic_qp_destroy,
	.qp_modify = nic_qp_modify,
	.qp_query = nic_qp_query,
	.post_send = nic_post_send,
	.post_recv = nic_post_recv,
	.srq_create = nic_srq_create,
	.srq_destroy = nic_srq_destroy,
	.post_srq_recv = nic_post_srq_recv,
	.ah_create = nic_ah_create,
	.ah_destroy = nic_ah_destroy,
	.seg_create = verbs_seg_create,
	.seg_destroy = verbs_seg_destroy,
	.seg_connect = verbs_seg_connect,
	.seg_port_nums = verbs_seg_port_nums,
	.seg_post = verbs_seg_post,
	.poll = verbs_seg_poll,
	.flush = verbs_seg_flush,
};
