/* SPDX-License-Identifier: MIT */
/* post_send / post_recv / post_srq_recv: validation at post time (state,
 * opcode for the QP type, SGEs against their lkeys, lengths, inline copy,
 * a BIND_MW's window, region, range and access), then the WQE is published
 * to the engine; plus the SGE copy helpers. */
#include <errno.h>
#include <sched.h>
#include <time.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/rel/rel.h"
#include "transport/core/mr.h"
#include "transport/core/mw.h"
#include "transport/core/nic.h"

/* len bytes from byte off of the SGE list, copied into the SGEs from buf
 * (in) or out of them into buf; inlined into both callers with in
 * constant, so each keeps its one memcpy direction. */
static inline __attribute__((always_inline)) void sge_copy(const struct uroce_sge *sge, uint32_t nsge, uint32_t off,
                                                           uint8_t *buf, uint32_t len, bool in)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		uint32_t l = sge[i].length;

		if (off >= l) {
			off -= l;
			continue;
		}
		uint32_t n = l - off < len ? l - off : len;
		uint8_t *mem = (uint8_t *)(uintptr_t)sge[i].addr + off;

		if (!buf)
			memset(mem, 0, n);
		else if (in)
			memcpy(mem, buf, n);
		else
			memcpy(buf, mem, n);
		if (buf)
			buf += n;
		len -= n;
		off = 0;
	}
}

void sge_zero(const struct uroce_sge *sge, uint32_t nsge, uint32_t off, uint32_t len)
{
	sge_copy(sge, nsge, off, NULL, len, true);
}

void sge_copy_out(const struct uroce_sge *sge, uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len)
{
	sge_copy(sge, nsge, off, dst, len, false);
}

void sge_copy_in(const struct uroce_sge *sge, uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len)
{
	sge_copy(sge, nsge, off, (uint8_t *)(uintptr_t)src, len, true);
}

static int check_sges(struct uroce_qp *qp, const struct uroce_sge *sg, int n, int need, uint64_t *total,
                      const char *who)
{
	uint64_t sum = 0;

	for (int i = 0; i < n; i++) {
		struct mr_int *m = mr_lookup_lkey(qp->ctx, sg[i].lkey);

		/* on a NIC the keys are the device's (an sr QP's engine copies
		 * into them); its context's own table is empty */
		if (!m && qp->ctx->nic)
			m = qp->ctx->nic->mr_find(qp->ctx, sg[i].lkey);
		if (!m)
			return uroce_fail(-EINVAL, "%s: sge[%d] lkey 0x%x names no registered region", who, i, sg[i].lkey);
		if (!mr_check(m, qp->pd, sg[i].addr, sg[i].length, need))
			return uroce_fail(-EINVAL, "%s: sge[%d] [0x%llx, +%u) is outside its region, in another PD, or "
			                           "the region lacks %s", who, i, (unsigned long long)sg[i].addr,
			                  sg[i].length, need ? "LOCAL_WRITE" : "nothing");
		sum += sg[i].length;
	}
	*total = sum;
	return 0;
}

static uint32_t ud_max_payload(const struct uroce_qp *qp)
{
	/* IPv6 + UDP + BTH + DETH + ImmDt + ICRC leave room for 4096 on a 4200 link */
	uint32_t mtu = qp->ctx->ports[qp->port].port->mtu;
	uint32_t l3 = mtu > 80u ? mtu - 80u : 0;
	uint32_t m = 4096;

	while (m > 256 && m > l3)
		m >>= 1;
	return m;
}

/* BIND_MW as IBTA's type 2 bind (rxe's rxe_check_bind_mw): what can be
 * checked at post time is; the engine checks again when it binds. */
static int check_bind(const struct uroce_qp *qp, const struct uroce_send_wr *wr)
{
	const unsigned remote = UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC;
	const struct uroce_mw *mw = wr->bind_mw.mw;
	const struct uroce_mw_bind_info *b = &wr->bind_mw.bind_info;
	const struct uroce_mr *mr = b->mr;
	uint64_t start;

	if (!mw)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW needs bind_mw.mw, a window from uroce_mw_alloc");
	if (mw->type != UROCE_MW_TYPE_2)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW of a type %d window; accepted: type 2", (int)mw->type);
	if (mw->pd != qp->pd)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: the window is in another PD than QP 0x%x; a "
		                           "window binds on QPs of its own PD", qp->qpn);
	if ((wr->bind_mw.rkey >> 8) != (mw->rkey >> 8))
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: new rkey 0x%x has index 0x%x, the window 0x%x; "
		                           "accepted: the window's rkey with only its low 8 bits changed "
		                           "(uroce_inc_rkey(mw->rkey))", wr->bind_mw.rkey, wr->bind_mw.rkey >> 8,
		                  mw->rkey >> 8);
	if (wr->bind_mw.rkey == mw->rkey)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: new rkey 0x%x is the window's current key; a bind "
		                           "takes a new one (uroce_inc_rkey(mw->rkey)) so the old one stays revoked",
		                  wr->bind_mw.rkey);
	if (!mr)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW needs bind_info.mr, the region under the window");
	if (mr->pd != qp->pd)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: region 0x%x is in another PD than QP 0x%x; "
		                           "accepted: a region of the QP's PD", mr->lkey, qp->qpn);
	if (!(mr->access & UROCE_ACCESS_MW_BIND))
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: region 0x%x was registered without "
		                           "UROCE_ACCESS_MW_BIND; windows bind only to regions with it", mr->lkey);
	start = (uint64_t)(uintptr_t)mr->addr;
	if (!b->length || b->addr < start || b->length > mr->length || b->addr - start > mr->length - b->length)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: [0x%llx, +%llu) is not inside region 0x%x "
		                           "[0x%llx, +%zu); accepted: 1 byte or more within the region",
		                  (unsigned long long)b->addr, (unsigned long long)b->length, mr->lkey,
		                  (unsigned long long)start, mr->length);
	if (b->mw_access_flags & ~remote)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: mw_access_flags 0x%x; accepted: REMOTE_WRITE, "
		                           "REMOTE_READ, REMOTE_ATOMIC", b->mw_access_flags);
	if (b->mw_access_flags & ~(unsigned)mr->access)
		return uroce_fail(-EINVAL, "uroce_post_send: BIND_MW: mw_access_flags 0x%x, but region 0x%x allows "
		                           "0x%x; accepted: a subset of the region's access", b->mw_access_flags,
		                  mr->lkey, (unsigned)mr->access & remote);
	return 0;
}

/* BIND_MW and LOCAL_INV: no SGEs, no packet; the engine carries them out
 * in send-queue order (mw.c). */
static void fill_local(const struct uroce_send_wr *wr, struct swqe *w)
{
	w->num_sge = 0;
	if (wr->opcode != UROCE_WR_BIND_MW)
		return;
	/* the bind in fields no local WR uses otherwise (qp_internal.h) */
	w->rkey = wr->bind_mw.rkey;
	w->raddr = wr->bind_mw.bind_info.addr;
	w->compare_add = wr->bind_mw.bind_info.length;
	w->swap = (uint64_t)(uintptr_t)((char *)wr->bind_mw.mw - offsetof(struct mw_int, pub));
	w->imm = wr->bind_mw.bind_info.mw_access_flags;
	w->ud_qkey = wr->bind_mw.bind_info.mr->lkey;
}

/* The SGEs (or inline bytes) of a SEND, WRITE, READ or atomic: lkeys,
 * lengths, the UD and atomic limits. */
static int check_payload(struct uroce_qp *qp, const struct uroce_send_wr *wr, bool inl, uint64_t *total_out)
{
	uint64_t total = 0;
	int rc;

	if (wr->num_sge < 0 || (wr->num_sge && !wr->sg_list))
		return uroce_fail(-EINVAL, "uroce_post_send: num_sge %d with sg_list %p", wr->num_sge,
		                  (void *)wr->sg_list);
	if (inl) {
		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > qp->attr.cap.max_inline_data)
			return uroce_fail(-EINVAL, "uroce_post_send: %llu inline bytes; the QP was created with "
			                           "max_inline_data %u", (unsigned long long)total,
			                  qp->attr.cap.max_inline_data);
	} else {
		if ((uint32_t)wr->num_sge > qp->attr.cap.max_send_sge)
			return uroce_fail(-EINVAL, "uroce_post_send: num_sge %d; the QP takes at most %u",
			                  wr->num_sge, qp->attr.cap.max_send_sge);
		rc = check_sges(qp, wr->sg_list, wr->num_sge, wr_is_rd(wr->opcode) ? UROCE_ACCESS_LOCAL_WRITE : 0,
		                &total, "uroce_post_send");
		if (rc)
			return rc;
	}
	if (total > UROCE_MAX_MSG)
		return uroce_fail(-EINVAL, "uroce_post_send: message of %llu bytes; accepted up to %u",
		                  (unsigned long long)total, UROCE_MAX_MSG);
	if (qp->type == UROCE_QPT_UD) {
		if (!wr->wr.ud.ah || wr->wr.ud.ah->pd != qp->pd)
			return uroce_fail(-EINVAL, "uroce_post_send: UD needs wr.ud.ah from the QP's PD");
		if (wr->wr.ud.ah->d.port != qp->port)
			return uroce_fail(-EINVAL, "uroce_post_send: the AH is on port %u, the QP on port %u; a UD QP "
			                           "sends only through AHs of its own port", wr->wr.ud.ah->d.port + 1u,
			                  qp->port + 1u);
		if (total > ud_max_payload(qp))
			return uroce_fail(-EINVAL, "uroce_post_send: UD message of %llu bytes is over one MTU (%u)",
			                  (unsigned long long)total, ud_max_payload(qp));
	}
	if (wr_is_atomic(wr->opcode)) {
		if (total != 8 || (wr->wr.atomic.remote_addr & 7))
			return uroce_fail(-EINVAL, "uroce_post_send: an atomic takes 8 bytes of local buffer (got %llu) "
			                           "and an 8-byte aligned remote_addr (got 0x%llx)",
			                  (unsigned long long)total, (unsigned long long)wr->wr.atomic.remote_addr);
	}
	*total_out = total;
	return 0;
}

static bool opcode_ok(const struct uroce_qp *qp, enum uroce_wr_opcode op)
{
	switch (qp->type) {
	case UROCE_QPT_UD:
		return op == UROCE_WR_SEND || op == UROCE_WR_SEND_WITH_IMM;
	case UROCE_QPT_UC:
		return op <= UROCE_WR_SEND_WITH_IMM;
	default:
		return op <= UROCE_WR_SEND_WITH_INV;
	}
}

/* A DEDICATED engine pushes a WQE's completion just before it retires
 * the WQE (sq_tail++): an application that polled the completion and
 * posts at once can find the queue still full for a moment. Wait for
 * that moment, bounded (the engine thread may be preempted between the
 * two); a queue that is really full stays full and is refused. */
#define SQ_RETIRE_WAIT_NS 20000000ull

static bool sq_room_soon(struct uroce_qp *qp, uint32_t head)
{
	struct timespec t0, t;

	if (!ctx_remote(qp->ctx))
		return false;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0;; i++) {
		if (head - __atomic_load_n(&qp->sq_tail, __ATOMIC_ACQUIRE) < qp->sq_size)
			return true;
		if (i < 64)
			continue;
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t.tv_nsec - (uint64_t)t0.tv_nsec >=
		    SQ_RETIRE_WAIT_NS)
			return false;
	}
}

static int post_one_send(struct uroce_qp *qp, const struct uroce_send_wr *wr)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	struct swqe *w;
	uint64_t total = 0;
	int rc;
	bool local = wr_is_local(wr->opcode);
	bool inl = (wr->send_flags & UROCE_SEND_INLINE) && !local && !wr_is_rd(wr->opcode);

	if (!opcode_ok(qp, wr->opcode))
		return uroce_fail(-EINVAL, "uroce_post_send: opcode %d is not valid on a %s QP; accepted: %s",
		                  (int)wr->opcode, qp->type == UROCE_QPT_RC ? "RC" : qp->type == UROCE_QPT_UC ? "UC" : "UD",
		                  qp->type == UROCE_QPT_UD ? "SEND, SEND_WITH_IMM" :
		                  qp->type == UROCE_QPT_UC ? "SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM" :
		                  "SEND, SEND_WITH_IMM, SEND_WITH_INV, RDMA_WRITE(_WITH_IMM), RDMA_READ, "
		                  "ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, LOCAL_INV, BIND_MW");
	if (wr->opcode == UROCE_WR_SEND_WITH_INV && qp->init.rel.reliability != UROCE_REL_RC)
		return uroce_fail(-EINVAL, "uroce_post_send: SEND_WITH_INV on a QP with reliability %s; accepted on rc "
		                           "only for now", uroce_reliability_str(qp->init.rel.reliability));
	if (head - __atomic_load_n(&qp->sq_tail, __ATOMIC_ACQUIRE) >= qp->sq_size && !sq_room_soon(qp, head))
		return uroce_fail(-ENOMEM, "uroce_post_send: send queue full (%u WRs outstanding)", qp->sq_size);
	/* BIND_MW and LOCAL_INV take no SGEs: sg_list and num_sge are not looked at */
	rc = wr->opcode == UROCE_WR_BIND_MW ? check_bind(qp, wr) : local ? 0 : check_payload(qp, wr, inl, &total);
	if (rc)
		return rc;
	w = &qp->sq[head & qp->sq_mask];
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->state = SWQE_POSTED;
	w->done = 0;
	w->signaled = qp->init.sq_sig_all || (wr->send_flags & UROCE_SEND_SIGNALED);
	w->fence = (wr->send_flags & UROCE_SEND_FENCE) != 0;
	w->length = (uint32_t)total;
	w->imm = wr->imm_data; /* or invalidate_rkey (host order), its union twin */
	w->timeout_us = wr->timeout_us;
	w->is_inline = inl;
	if (local) {
		fill_local(wr, w);
	} else if (inl) {
		uint32_t o = 0;

		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(w->inl + o, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			o += wr->sg_list[i].length;
		}
		w->num_sge = 1;
		w->sge[0].addr = (uint64_t)(uintptr_t)w->inl;
		w->sge[0].length = o;
		w->sge[0].lkey = 0;
	} else {
		w->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge) /* a zero-length send may come with no sg_list */
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sge));
	}
	if (wr_is_atomic(wr->opcode)) {
		w->raddr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if (qp->type == UROCE_QPT_UD) {
		w->ud = wr->wr.ud.ah->d;
		w->ud_qpn = wr->wr.ud.remote_qpn & ROCE_QPN_MASK;
		w->ud_qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey : wr->wr.ud.remote_qkey;
	} else if (!local) {
		w->raddr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	rc = qp->rel->post(qp, wr, w);
	if (rc)
		return rc;
	if (head != qp->local_post_mark)
		qp->local_wrs = 0; /* only a RESET moves sq_head: SQ slots and message numbers start equal again */
	qp->local_post_mark = head + 1;
	if (wr->opcode == UROCE_WR_BIND_MW)
		wr->bind_mw.mw->rkey = wr->bind_mw.rkey; /* "the key of its last bind" */
	atomic_store_explicit(&qp->sq_head, head + 1, memory_order_release);
	return 0;
}

int uroce_post_send(struct uroce_qp *qp, struct uroce_send_wr *wr, struct uroce_send_wr **bad_wr)
{
	enum uroce_qp_state st;
	int rc = 0;

	if (bad_wr)
		*bad_wr = NULL;
	if (!qp || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return uroce_fail(-EINVAL, "uroce_post_send: qp and wr are required");
	}
	if (qp->nic)
		return qp->ctx->nic->post_send(qp, wr, bad_wr);
	st = qp->state;
	if (st != UROCE_QPS_RTS && st != UROCE_QPS_SQD && st != UROCE_QPS_ERR) {
		if (bad_wr)
			*bad_wr = wr;
		return uroce_fail(-EINVAL, "uroce_post_send: QP 0x%x is in %s; sends are posted in RTS (or SQD/ERR)",
		                  qp->qpn, uroce_qp_state_str(st));
	}
	for (; wr; wr = wr->next) {
		rc = post_one_send(qp, wr);
		if (rc) {
			if (bad_wr)
				*bad_wr = wr;
			break;
		}
	}
	ctx_kick(qp);
	return rc;
}

static int post_one_recv(struct uroce_qp *qp, struct uroce_pd *pd, struct rwqe *q, uint32_t mask, uint32_t size,
                         uint32_t max_sge, _Atomic uint32_t *headp, uint32_t tail, const struct uroce_recv_wr *wr,
                         const char *who, struct uroce_precv *precv)
{
	uint32_t head = atomic_load_explicit(headp, memory_order_relaxed);
	struct rwqe *r;
	uint64_t total = 0;
	int rc;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return uroce_fail(-EINVAL, "%s: num_sge %d; accepted 0-%u with an sg_list", who, wr->num_sge, max_sge);
	if (head - tail >= size)
		return uroce_fail(-ENOMEM, "%s: receive queue full (%u WRs posted)", who, size);
	if (qp) {
		rc = check_sges(qp, wr->sg_list, wr->num_sge, UROCE_ACCESS_LOCAL_WRITE, &total, who);
	} else {
		/* SRQ: same checks against the SRQ's PD */
		for (int i = 0; i < wr->num_sge; i++) {
			struct mr_int *m = mr_lookup_lkey(pd->ctx, wr->sg_list[i].lkey);

			if (!m || !mr_check(m, pd, wr->sg_list[i].addr, wr->sg_list[i].length, UROCE_ACCESS_LOCAL_WRITE))
				return uroce_fail(-EINVAL, "%s: sge[%d] lkey 0x%x: no such region in the PD, out of its "
				                           "bounds, or without LOCAL_WRITE", who, i, wr->sg_list[i].lkey);
			total += wr->sg_list[i].length;
		}
		rc = 0;
	}
	if (rc)
		return rc;
	if (total > UROCE_MAX_MSG)
		return uroce_fail(-EINVAL, "%s: %llu bytes of buffers; accepted up to %u", who,
		                  (unsigned long long)total, UROCE_MAX_MSG);
	r = &q[head & mask];
	r->wr_id = wr->wr_id;
	r->precv = precv;
	r->num_sge = (uint32_t)wr->num_sge;
	r->length = (uint32_t)total;
	r->timeout_us = wr->timeout_us;
	if (wr->num_sge)
		memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*r->sge));
	atomic_store_explicit(headp, head + 1, memory_order_release);
	return 0;
}

/* Posts a chain to the QP's own receive queue, or to srq when given (the
 * tail is read again for each WR: the engine may consume meanwhile);
 * *bad_wr names the first WR refused. Inlined into both callers, as the
 * loop was before it was shared. */
static inline __attribute__((always_inline)) int post_recv_chain(struct uroce_qp *qp, struct uroce_srq *srq,
                                                                 struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr,
                                                                 const char *who)
{
	int rc = 0;

	for (; wr && !rc; wr = wr->next) {
		if (srq)
			rc = post_one_recv(NULL, srq->pd, srq->q, srq->mask, srq->size, srq->max_sge, &srq->head,
			                   atomic_load_explicit(&srq->tail, memory_order_acquire), wr, who, NULL);
		else
			rc = post_one_recv(qp, qp->pd, qp->rq, qp->rq_mask, qp->rq_size, qp->attr.cap.max_recv_sge,
			                   &qp->rq_head, __atomic_load_n(&qp->rq_tail, __ATOMIC_ACQUIRE), wr, who, NULL);
		if (rc && bad_wr)
			*bad_wr = wr;
	}
	return rc;
}

static int post_recv_check(const struct uroce_qp *qp, const struct uroce_recv_wr *wr)
{
	if (!qp || !wr)
		return uroce_fail(-EINVAL, "uroce_post_recv: qp and wr are required");
	if (qp->init.srq)
		return uroce_fail(-EINVAL, "uroce_post_recv: QP 0x%x uses an SRQ; post with uroce_post_srq_recv",
		                  qp->qpn);
	if (qp->state == UROCE_QPS_RESET)
		return uroce_fail(-EINVAL, "uroce_post_recv: QP 0x%x is in RESET; receives are posted from INIT on",
		                  qp->qpn);
	/* rel.hd_block: the poller decodes the buffer as floats, in one piece */
	for (const struct uroce_recv_wr *w = wr; qp->init.rel.hd_block && w; w = w->next)
		if (w->num_sge != 1 || !w->sg_list || (w->sg_list[0].addr & 3))
			return uroce_fail(-EINVAL, "uroce_post_recv: QP 0x%x decodes Hadamard coding (rel.hd_block): a "
			                           "receive WR takes one SGE whose address is 4-byte aligned (wr_id %llu: "
			                           "%d SGEs)", qp->qpn, (unsigned long long)w->wr_id, w->num_sge);
	return 0;
}

int uroce_post_recv(struct uroce_qp *qp, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr)
{
	int rc;

	if (qp && wr && qp->nic)
		return qp->ctx->nic->post_recv(qp, wr, bad_wr);
	rc = post_recv_check(qp, wr);

	if (bad_wr)
		*bad_wr = rc ? wr : NULL;
	if (rc)
		return rc;
	rc = post_recv_chain(qp, NULL, wr, bad_wr, "uroce_post_recv");
	if (qp->state == UROCE_QPS_ERR || rel_rx_wants_kick(qp))
		ctx_kick(qp);
	return rc;
}

int uroce_post_srq_recv(struct uroce_srq *srq, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr)
{
	if (bad_wr)
		*bad_wr = srq && wr ? NULL : wr;
	if (!srq || !wr)
		return uroce_fail(-EINVAL, "uroce_post_srq_recv: srq and wr are required");
	if (srq->nic)
		return srq->pd->ctx->nic->post_srq_recv(srq, wr, bad_wr);
	return post_recv_chain(NULL, srq, wr, bad_wr, "uroce_post_srq_recv");
}

int qp_post_recv_precv(struct uroce_qp *qp, const struct uroce_recv_wr *wr, struct uroce_precv *h)
{
	int rc = post_one_recv(qp, qp->pd, qp->rq, qp->rq_mask, qp->rq_size, qp->attr.cap.max_recv_sge, &qp->rq_head,
	                       __atomic_load_n(&qp->rq_tail, __ATOMIC_ACQUIRE), wr, "uroce_precv_post", h);

	if (!rc && rel_rx_wants_kick(qp))
		ctx_kick(qp);
	return rc;
}

/* out keeps its own SGE array: the entries are copied into it. */
static inline void rwqe_copy(struct rwqe *out, const struct rwqe *r)
{
	out->wr_id = r->wr_id;
	out->precv = r->precv;
	out->num_sge = r->num_sge;
	out->length = r->length;
	out->timeout_us = r->timeout_us;
	memcpy(out->sge, r->sge, r->num_sge * sizeof(*r->sge));
}

/* Engine side: take the next receive WQE (own RQ or SRQ) into out. */
bool qp_take_rwqe(struct uroce_qp *qp, struct rwqe *out)
{
	struct uroce_srq *srq = qp->init.srq;
	const struct rwqe *r;

	if (srq) {
		uint32_t t = atomic_load_explicit(&srq->tail, memory_order_relaxed);

		if (t == atomic_load_explicit(&srq->head, memory_order_acquire))
			return false;
		r = &srq->q[t & srq->mask];
		rwqe_copy(out, r);
		atomic_store_explicit(&srq->tail, t + 1, memory_order_release);
		return true;
	}
	if (qp->rq_tail == atomic_load_explicit(&qp->rq_head, memory_order_acquire))
		return false;
	r = &qp->rq[qp->rq_tail & qp->rq_mask];
	rwqe_copy(out, r);
	qp->rq_tail++;
	return true;
}
