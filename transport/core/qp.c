/* SPDX-License-Identifier: MIT */
/* QP objects and the IBTA state machine: create/destroy/modify/query, the
 * attribute masks each transition requires and allows, and the move to
 * ERR with its flush of outstanding work. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dataplane/neigh.h"
#include "transport/failover/failover.h"
#include "transport/core/qp_internal.h"
#include "transport/rel/rel.h"
#include "transport/core/async.h"
#include "transport/core/ctx_call.h"
#include "transport/core/nic.h"

_Static_assert(QP_HOT_END <= QP_HOT_BYTES,
               "the QP's hot fields outgrew QP_HOT_BYTES: move a rarely used one below init or into rc's rare part");

static const char *const qp_state_names[] = {
	[UROCE_QPS_RESET] = "RESET", [UROCE_QPS_INIT] = "INIT", [UROCE_QPS_RTR] = "RTR",
	[UROCE_QPS_RTS] = "RTS",     [UROCE_QPS_SQD] = "SQD",   [UROCE_QPS_SQE] = "SQE",
	[UROCE_QPS_ERR] = "ERR",
};

const char *uroce_qp_state_str(enum uroce_qp_state state)
{
	if ((unsigned)state > UROCE_QPS_ERR)
		return "unknown";
	return qp_state_names[state];
}

uint32_t uroce_qp_num(const struct uroce_qp *qp)
{
	return !qp ? 0 : qp->nic_qpn ? qp->nic_qpn : qp->qpn;
}

uint32_t uroce_qp_token(const struct uroce_qp *qp)
{
	return qp ? qp->tok_local : 0;
}

uint32_t uroce_qp_ctrl_num(const struct uroce_qp *qp)
{
	return !qp ? 0 : qp->nic_ctrl_qpn ? qp->nic_ctrl_qpn : qp->ctrl_qpn;
}

int uroce_qp_port_nums(const struct uroce_qp *qp, uint8_t port_num, uint32_t *qpn, uint32_t *ctrl_qpn)
{
	if (!qp || !qpn || !ctrl_qpn)
		return uroce_fail(-EINVAL, "uroce_qp_port_nums: qp, qpn and ctrl_qpn are required");
	if (port_num < 1 || port_num > qp->ctx->nports)
		return uroce_fail(-EINVAL, "uroce_qp_port_nums: port_num %u; the context has ports 1-%u", port_num,
		                  qp->ctx->nports);
	if (qp->segq && port_num > 1)
		return qp->ctx->nic->seg_port_nums(qp, port_num - 1u, qpn, ctrl_qpn);
	*qpn = uroce_qp_num(qp);
	*ctrl_qpn = uroce_qp_ctrl_num(qp);
	return 0;
}

/* A token an off-path host cannot predict: getrandom, never 0 (0 names a
 * peer without one). */
static int token_draw(uint32_t *out)
{
	uint32_t t = 0;

	while (!t)
		if (getrandom(&t, sizeof(t), 0) != (ssize_t)sizeof(t))
			return uroce_fail(-EIO, "uroce_qp_create: getrandom failed: %s", strerror(errno));
	*out = t;
	return 0;
}

/* The transport state of one QP: the QP itself and its responder
 * resources; the send/receive queues come on top and scale with the caps
 * (sizeof(struct swqe) + max_send_sge SGEs per send WR, one
 * struct rwqe + max_recv_sge SGEs per receive WR). */
size_t uroce_qp_state_bytes(enum uroce_qp_type type)
{
	(void)type;
	return sizeof(struct uroce_qp) + RC_MAX_RD_ATOMIC * sizeof(struct rd_res);
}

size_t uroce_rel_state_bytes(enum uroce_reliability rel)
{
	const struct rel_ops *o = rel_ops_of(rel);

	/* rc keeps its state in the QP object itself */
	return o->default_state_bytes ? o->default_state_bytes() : 0;
}

size_t uroce_qp_hot_bytes(enum uroce_qp_type type)
{
	(void)type;
	return QP_HOT_END;
}

/* DEDICATED mode: the calls that touch engine-owned QP state run on the
 * engine thread (ctx_call); these carry their arguments there. */
struct qp_args {
	struct uroce_pd *pd;
	struct uroce_qp *qp;
	struct uroce_qp_init_attr *init;
	const struct uroce_qp_attr *cattr;
	struct uroce_qp_attr *attr;
	struct uroce_qp **out;
	struct uroce_qp_stats *stats;
	int mask;
};

static int qp_stats_call(void *arg)
{
	struct qp_args *a = arg;

	return uroce_qp_stats(a->qp, a->stats);
}

static int qp_create_call(void *arg)
{
	struct qp_args *a = arg;

	return uroce_qp_create(a->pd, a->init, a->out);
}

static int qp_destroy_call(void *arg)
{
	return uroce_qp_destroy(((struct qp_args *)arg)->qp);
}

static int qp_modify_call(void *arg)
{
	struct qp_args *a = arg;

	return uroce_qp_modify(a->qp, a->cattr, a->mask);
}

static int qp_query_call(void *arg)
{
	struct qp_args *a = arg;

	return uroce_qp_query(a->qp, a->attr, a->init);
}

int uroce_qp_stats(struct uroce_qp *qp, struct uroce_qp_stats *stats)
{
	if (!qp || !stats)
		return uroce_fail(-EINVAL, "uroce_qp_stats: qp and stats are required");
	if (qp->nic)
		return uroce_fail(-EOPNOTSUPP, "uroce_qp_stats: the QP runs on the NIC of a verbs port; its counters "
		                               "are the device's (rdma statistic, /sys/class/infiniband/DEV/ports/N/hw_counters)");
	if (ctx_remote(qp->ctx)) {
		struct qp_args a = { .qp = qp, .stats = stats };

		return ctx_call(qp->ctx, qp_stats_call, &a);
	}
	*stats = qp->stats;
	stats->tx_packets = qp->tx_packets;
	stats->rx_packets = qp->rx_packets;
	if (qp->rel->stats && qp->rel_state)
		qp->rel->stats(qp, stats);
	return 0;
}

CTX_CALL3(path_stats, uroce_qp_path_stats, struct uroce_qp *, unsigned, struct uroce_path_stats *)

int uroce_qp_path_stats(struct uroce_qp *qp, unsigned i, struct uroce_path_stats *stats)
{
	if (!qp || !stats)
		return uroce_fail(-EINVAL, "uroce_qp_path_stats: qp and stats are required");
	if (qp->nic)
		return uroce_fail(-EOPNOTSUPP, "uroce_qp_path_stats: the QP runs on the NIC of a verbs port (one path, "
		                               "the device's)");
	if (ctx_remote(qp->ctx)) {
		struct path_stats_args a = { qp, i, stats };

		return ctx_call(qp->ctx, path_stats_call, &a);
	}
	if (!qp->rel->path_stats || !qp->rel_state)
		return uroce_fail(-EINVAL, "uroce_qp_path_stats: QP 0x%x is not an sr or ec QP", qp->qpn);
	return qp->rel->path_stats(qp, i, stats);
}

/* Required and optional attribute masks per transition and QP type, as
 * IBTA 11.2.5 / ibv_modify_qp(3) / rxe's qp_state_table give them. */
struct trans_masks {
	int req[3];  /* index: RC, UC, UD */
	int opt[3];
	bool valid;
};

#define M(x) UROCE_QP_##x
#define TI(t) ((t) == UROCE_QPT_RC ? 0 : (t) == UROCE_QPT_UC ? 1 : 2)

static struct trans_masks trans_table(enum uroce_qp_state cur, enum uroce_qp_state next)
{
	struct trans_masks t = { .valid = true };
	const int rts_opt_uc = M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) | M(PATH_MIG_STATE);

	if (next == UROCE_QPS_RESET || next == UROCE_QPS_ERR) {
		for (int i = 0; i < 3; i++)
			t.opt[i] = 0;
		return t;
	}
	switch (cur) {
	case UROCE_QPS_RESET:
		if (next != UROCE_QPS_INIT)
			break;
		t.req[0] = t.req[1] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS);
		t.req[2] = M(PKEY_INDEX) | M(PORT) | M(QKEY);
		return t;
	case UROCE_QPS_INIT:
		if (next == UROCE_QPS_INIT) {
			t.opt[0] = t.opt[1] = M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS);
			t.opt[2] = M(PKEY_INDEX) | M(PORT) | M(QKEY);
			return t;
		}
		if (next != UROCE_QPS_RTR)
			break;
		t.req[0] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER);
		t.req[1] = M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN);
		t.opt[0] = t.opt[1] = M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(DEST_TOKEN) | M(DEST_CTRL_QPN) |
		                      M(SPORTS);
		t.opt[2] = M(PKEY_INDEX) | M(QKEY);
		return t;
	case UROCE_QPS_RTR:
		if (next != UROCE_QPS_RTS)
			break;
		t.req[0] = M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC);
		t.req[1] = t.req[2] = M(SQ_PSN);
		t.opt[0] = rts_opt_uc | M(MIN_RNR_TIMER);
		t.opt[1] = rts_opt_uc;
		t.opt[2] = M(CUR_STATE) | M(QKEY);
		return t;
	case UROCE_QPS_RTS:
	case UROCE_QPS_SQD:
		if (next == UROCE_QPS_RTS) {
			t.opt[0] = rts_opt_uc | M(MIN_RNR_TIMER);
			t.opt[1] = rts_opt_uc;
			t.opt[2] = M(CUR_STATE) | M(QKEY);
			return t;
		}
		if (next != UROCE_QPS_SQD)
			break;
		if (cur == UROCE_QPS_RTS) {
			t.opt[0] = t.opt[1] = t.opt[2] = M(EN_SQD_ASYNC_NOTIFY);
			return t;
		}
		t.opt[0] = M(AV) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC) |
		           M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) |
		           M(MIN_RNR_TIMER) | M(PATH_MIG_STATE);
		t.opt[1] = M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PATH_MIG_STATE);
		t.opt[2] = M(PKEY_INDEX) | M(QKEY);
		return t;
	case UROCE_QPS_SQE:
		if (next != UROCE_QPS_RTS)
			break;
		t.opt[0] = 0;
		t.opt[1] = M(CUR_STATE) | M(ACCESS_FLAGS);
		t.opt[2] = M(CUR_STATE) | M(QKEY);
		return t;
	default:
		break;
	}
	t.valid = false;
	return t;
}

static void mask_names(int mask, char *buf, size_t len)
{
	static const char *const names[] = {
		"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY",
		"AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC",
		"ALT_PATH", "MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP",
		"DEST_QPN", "DEST_TOKEN", "DEST_CTRL_QPN", "SPORTS",
	};
	size_t o = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]) && o < len; i++)
		if (mask & (1 << i))
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "|" : "", names[i]);
	if (!buf[0])
		snprintf(buf, len, "none");
}

static void qp_free_mem(struct uroce_qp *qp)
{
	free(qp->sq);
	free(qp->rq);
	free(qp->sge_pool);
	free(qp->inl_pool);
	free(qp->rc.res);
	free(qp);
}

/* A zeroed QP, cache-line aligned (the hot part is exactly its first
 * lines), with what every QP has: context, PD, attributes, CQs, type. */
static struct uroce_qp *qp_alloc(struct uroce_context *ctx, struct uroce_pd *pd,
                                 const struct uroce_qp_init_attr *attr)
{
	struct uroce_qp *qp = aligned_alloc(64, (sizeof(*qp) + 63) & ~(size_t)63);

	if (!qp)
		return NULL;
	memset(qp, 0, sizeof(*qp));
	qp->ctx = ctx;
	qp->pd = pd;
	qp->init = *attr;
	qp->scq = attr->send_cq;
	qp->rcq = attr->recv_cq;
	qp->type = attr->qp_type;
	return qp;
}

/* A QP holds (dir +1) or lets go of (-1) its PD, CQs and SRQ. */
static void qp_hold(struct uroce_pd *pd, const struct uroce_qp_init_attr *attr, int dir)
{
	__atomic_fetch_add(&pd->refs, (unsigned)dir, __ATOMIC_RELAXED);
	__atomic_fetch_add(&attr->send_cq->refs, (unsigned)dir, __ATOMIC_RELAXED);
	__atomic_fetch_add(&attr->recv_cq->refs, (unsigned)dir, __ATOMIC_RELAXED);
	if (attr->srq)
		__atomic_fetch_add(&attr->srq->refs, (unsigned)dir, __ATOMIC_RELAXED);
}

/* A QP on an RDMA NIC: the device's own RC, UC or UD QP runs the transport;
 * this struct holds what the API reads of it (ctx, pd, CQs, number). */
static int qp_create_nic(struct uroce_context *ctx, struct uroce_pd *pd, struct uroce_qp_init_attr *attr,
                         struct uroce_qp **out)
{
	struct uroce_qp *qp;
	int rc;

	if (attr->rel.imm_counter || attr->path.npaths > 1 || attr->path.nports > 1 ||
	    attr->cc.algo != UROCE_CC_NONE || attr->failover.nbackups)
		return uroce_fail(-EOPNOTSUPP, "uroce_qp_create: on a verbs port an rc QP is the NIC's own: accepted "
		                               "without imm_counter, path, cc or failover attributes (sr takes paths "
		                               "and backups)");
	qp = qp_alloc(ctx, pd, attr);
	if (!qp)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	qp->rel = rel_ops_of(UROCE_REL_RC);
	rc = ctx->nic->qp_create(qp, attr);
	if (rc) {
		free(qp);
		return rc;
	}
	qp->init.cap = attr->cap;
	__atomic_fetch_add(&ctx->nqp, 1, __ATOMIC_RELAXED);
	qp_hold(pd, attr, +1);
	*out = qp;
	return 0;
}

int uroce_qp_create(struct uroce_pd *pd, struct uroce_qp_init_attr *attr, struct uroce_qp **out)
{
	struct uroce_context *ctx;
	struct uroce_qp *qp;
	struct uroce_qp_cap *cap;
	uint32_t sq = 1, rq = 1, ssge, rsge, qpn, cur_sges, span;
	const char *why = NULL;
	int rc;

	if (!pd || !attr || !out)
		return uroce_fail(-EINVAL, "uroce_qp_create: pd, attr and out are required");
	ctx = pd->ctx;
	if (ctx_remote(ctx) && !(ctx->nic && attr->rel.reliability == UROCE_REL_RC)) {
		struct qp_args a = { .pd = pd, .init = attr, .out = out };

		return ctx_call(ctx, qp_create_call, &a);
	}
	cap = &attr->cap;
	if (attr->qp_type != UROCE_QPT_RC && attr->qp_type != UROCE_QPT_UC && attr->qp_type != UROCE_QPT_UD)
		why = "qp_type: accepted UROCE_QPT_RC (2), UROCE_QPT_UC (3), UROCE_QPT_UD (4)";
	else if (!attr->send_cq || !attr->recv_cq)
		why = "send_cq and recv_cq are required";
	else if (attr->send_cq->ctx != ctx || attr->recv_cq->ctx != ctx || (attr->srq && attr->srq->pd->ctx != ctx))
		why = "CQs and SRQ must belong to the PD's context";
	else if (cap->max_send_wr < 1 || cap->max_send_wr > QP_MAX_WR)
		why = "cap.max_send_wr: accepted 1-32768";
	else if (!attr->srq && (cap->max_recv_wr < 1 || cap->max_recv_wr > QP_MAX_WR))
		why = "cap.max_recv_wr: accepted 1-32768 (without an SRQ)";
	else if (cap->max_send_sge > QP_MAX_SGE || cap->max_recv_sge > QP_MAX_SGE)
		why = "cap.max_send_sge / max_recv_sge: accepted 0-32";
	else if (cap->max_inline_data > QP_MAX_INLINE)
		why = "cap.max_inline_data: accepted 0-1024";
	else if ((unsigned)attr->rel.reliability >= UROCE_REL__COUNT)
		why = "rel.reliability: accepted UROCE_REL_RC (0), UROCE_REL_SR (1), UROCE_REL_EC (2), UROCE_REL_BE (3)";
	else if ((unsigned)attr->rel.ordering >= UROCE_ORDER__COUNT)
		why = "rel.ordering: accepted UROCE_ORDER_ORDERED (0), UROCE_ORDER_UNORDERED (1)";
	else if (attr->rel.imm_counter && attr->qp_type != UROCE_QPT_RC)
		why = "rel.imm_counter needs qp_type UROCE_QPT_RC (reliability rc, sr or ec)";
	else if (attr->rel.imm_keyed && (attr->rel.reliability == UROCE_REL_RC || attr->qp_type != UROCE_QPT_RC))
		why = "rel.imm_keyed: accepted with rel.reliability sr, ec and be (rc reads the BTH PSN)";
	else if ((attr->rel.hd_block || attr->rel.hd_stride) && (attr->rel.reliability != UROCE_REL_BE || attr->srq))
		why = "rel.hd_block / hd_stride: accepted with rel.reliability be and no SRQ (the receive's own "
		      "buffer is decoded)";
	else if (attr->rel.reliability != UROCE_REL_RC && attr->qp_type != UROCE_QPT_RC)
		why = "rel.reliability sr, ec and be are modes of a connected QP: qp_type must be UROCE_QPT_RC";
	else if (attr->rel.nic_rc && (!ctx->nic || attr->rel.reliability == UROCE_REL_RC))
		why = "rel.nic_rc: an RC pool under sr, ec or be on a verbs port; accepted there only (rc on a verbs "
		      "port is the NIC's own RC QP)";
	else if (ctx->nic && attr->rel.reliability != UROCE_REL_RC &&
	         (!attr->rel.imm_keyed || attr->srq || attr->rel.imm_counter || attr->path.nports > 1 ||
	          attr->cc.algo == UROCE_CC_DCQCN || attr->cc.algo == UROCE_CC_EQDS ||
	          (attr->failover.nbackups && attr->rel.nic_rc)))
		why = "sr, ec and be on a verbs port: accepted with rel.imm_keyed = 1 (the NIC numbers its own PSNs; "
		      "the peer sets it too), path.npaths (one UC QP each), cc none, swift or cubic (a NIC keeps the "
		      "CE marks and CNPs dcqcn needs, and eqds's pull pacer is a frame port's), failover over UC "
		      "pools only (not with rel.nic_rc), and no SRQ, imm_counter or path.nports";
	if (why)
		return uroce_fail(-EINVAL, "uroce_qp_create: %s", why);
	if (ctx->nic && attr->rel.reliability == UROCE_REL_RC)
		return qp_create_nic(ctx, pd, attr, out);
	/* sr/ec/be, and a QP with backups, take two numbers: qpn for data,
	 * qpn + 1 for control; drawn at random so that an off-path host has
	 * to guess them */
	span = attr->rel.reliability == UROCE_REL_RC && !attr->failover.nbackups ? 1 : 2;
	qpn = qpt_draw(&ctx->qpt, span, &rc);
	if (!qpn && rc == -EIO)
		return uroce_fail(-EIO, "uroce_qp_create: getrandom failed: %s", strerror(errno));
	if (!qpn)
		return uroce_fail(-ENOMEM, "uroce_qp_create: %u of the %u QP numbers in use (a QP with a control "
		                           "QPN takes two)", ctx->qpt.nkeys, QPT_MAX_NUMS);
	while (sq < cap->max_send_wr)
		sq <<= 1;
	while (!attr->srq && rq < cap->max_recv_wr)
		rq <<= 1;
	if (attr->srq)
		rq = 0;
	ssge = cap->max_send_sge ? cap->max_send_sge : 1;
	rsge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	qp = qp_alloc(ctx, pd, attr);
	if (!qp)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	qp->sq = calloc(sq, sizeof(*qp->sq));
	qp->rq = rq ? calloc(rq, sizeof(*qp->rq)) : NULL;
	/* send SGEs, receive SGEs, then the current receive WQE's copy */
	cur_sges = attr->srq ? attr->srq->max_sge : rsge;
	qp->sge_pool = calloc((size_t)sq * ssge + (size_t)rq * rsge + cur_sges, sizeof(struct uroce_sge));
	qp->inl_pool = cap->max_inline_data ? malloc((size_t)sq * cap->max_inline_data) : NULL;
	qp->rc.res = calloc(RC_MAX_RD_ATOMIC, sizeof(*qp->rc.res));
	if (!qp->sq || (rq && !qp->rq) || !qp->sge_pool || (cap->max_inline_data && !qp->inl_pool) || !qp->rc.res) {
		qp_free_mem(qp);
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	}
	for (uint32_t i = 0; i < sq; i++) {
		qp->sq[i].sge = qp->sge_pool + (size_t)i * ssge;
		qp->sq[i].inl = qp->inl_pool ? qp->inl_pool + (size_t)i * cap->max_inline_data : NULL;
	}
	for (uint32_t i = 0; i < rq; i++)
		qp->rq[i].sge = qp->sge_pool + (size_t)sq * ssge + (size_t)i * rsge;
	cap->max_send_wr = sq;
	cap->max_recv_wr = attr->srq ? 0 : rq;
	cap->max_send_sge = ssge;
	cap->max_recv_sge = attr->srq ? 0 : rsge;
	qp->init.cap = *cap;
	qp->qpn = qpn;
	qp->sq_size = sq;
	qp->sq_mask = sq - 1;
	qp->rq_size = rq;
	qp->rq_mask = rq ? rq - 1 : 0;
	qp->state = qp->attr.qp_state = UROCE_QPS_RESET;
	qp->attr.path_mtu = UROCE_MTU_1024;
	qp->mtu = 1024;
	qp->attr.port_num = 1;
	qp->attr.cap = *cap;
	qp->rc.nres = 1;
	qp->cur_rwqe.sge = qp->sge_pool + (size_t)sq * ssge + (size_t)rq * rsge;
	qp->rel = rel_ops_of(attr->rel.reliability);
	qp->ctrl_qpn = span == 2 ? qpn + 1 : 0;
	rc = token_draw(&qp->tok_local);
	if (!rc)
		rc = qp->rel->init(qp);
	if (rc) {
		qp_free_mem(qp);
		return rc;
	}
	rc = qp_failover.init(qp);
	if (rc) {
		qp->rel->fini(qp);
		qp_free_mem(qp);
		return rc;
	}
	wheel_timer_init(&qp->retry_timer, qp->rel->timer, qp);
	rc = ctx->nic ? ctx->nic->seg_create(qp, attr->path.npaths) : 0;
	if (!rc && qpt_add(&ctx->qpt, qp, qpn, span))
		rc = uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	if (rc) {
		if (qp->segq)
			ctx->nic->seg_destroy(qp);
		qp->rel->fini(qp);
		qp_failover.fini(qp);
		qp_free_mem(qp);
		return rc;
	}
	if (qp->segq)
		ctx->nsegq++;
	ctx->nqp++;
	qp_hold(pd, attr, +1);
	*out = qp;
	return 0;
}

static void qp_unlink_active(struct uroce_qp *qp)
{
	struct uroce_context *ctx = qp->ctx;
	struct uroce_qp **pp = &ctx->active_head, *prev = NULL;

	if (!qp->active)
		return;
	while (*pp && *pp != qp) {
		prev = *pp;
		pp = &(*pp)->next_active;
	}
	if (*pp) {
		*pp = qp->next_active;
		if (ctx->active_tail == qp)
			ctx->active_tail = prev;
	}
	qp->active = false;
}

/* Receives about to go without completions (RESET, destroy): their
 * partial-completion handles are marked done, or freed if the application
 * already gave them back. */
static void qp_release_rq_handles(struct uroce_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->rq_head, memory_order_acquire);

	for (uint32_t t = qp->rq_tail; !qp->init.srq && t != head; t++) {
		struct rwqe *r = &qp->rq[t & qp->rq_mask];

		if (r->precv)
			qp->rel->precv_end(r->precv, false);
		r->precv = NULL;
	}
}

int uroce_qp_destroy(struct uroce_qp *qp)
{
	struct uroce_context *ctx;

	if (!qp)
		return uroce_fail(-EINVAL, "uroce_qp_destroy: qp is NULL");
	ctx = qp->ctx;
	if (qp->nic) {
		int rc = ctx->nic->qp_destroy(qp);

		if (rc)
			return rc;
		__atomic_fetch_sub(&ctx->nqp, 1, __ATOMIC_RELAXED);
		qp_hold(qp->pd, &qp->init, -1);
		free(qp);
		return 0;
	}
	if (ctx_remote(ctx)) {
		struct qp_args a = { .qp = qp };

		return ctx_call(ctx, qp_destroy_call, &a);
	}
	engine_timer_cancel(ctx->eng, &qp->retry_timer);
	qp_unlink_active(qp);
	qp_release_rq_handles(qp);
	qp->rel->fini(qp);
	qp_failover.fini(qp);
	if (qp->segq) {
		ctx->nic->seg_destroy(qp);
		ctx->nsegq--;
	}
	qpt_del(&ctx->qpt, qp, qp->qpn, qp->ctrl_qpn ? 2 : 1);
	ctx->nqp--;
	qp_hold(qp->pd, &qp->init, -1);
	qp_free_mem(qp);
	return 0;
}

/* Back to RESET: queues emptied without completions, state zeroed. */
static void qp_reset(struct uroce_qp *qp)
{
	engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
	qp_unlink_active(qp);
	qp_release_rq_handles(qp);
	atomic_store(&qp->sq_head, 0);
	qp->sq_cur = qp->sq_tail = 0;
	atomic_store(&qp->rq_head, 0);
	qp->rq_tail = 0;
	qp->have_rwqe = false;
	qp->fatal_pending = false;
	qp->write_mr = NULL;
	qp->rel->reset(qp);
	qp_failover.reset(qp);
}

/* Complete every outstanding send and receive WQE with WR_FLUSH_ERR. */
void qp_flush(struct uroce_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	struct uroce_wc wc;

	while (qp->sq_tail != head) {
		struct swqe *w = &qp->sq[qp->sq_tail & qp->sq_mask];

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.status = UROCE_WC_WR_FLUSH_ERR;
		wc.qp_num = qp->qpn;
		cq_push(qp->scq, &wc);
		qp->sq_tail++;
	}
	qp->sq_cur = qp->sq_tail;
	if (qp->have_rwqe && !qp->init.srq) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qp->cur_rwqe.wr_id;
		wc.status = UROCE_WC_WR_FLUSH_ERR;
		wc.opcode = UROCE_WC_RECV;
		wc.qp_num = qp->qpn;
		cq_push(qp->rcq, &wc);
	}
	qp->have_rwqe = false;
	if (!qp->init.srq) {
		head = atomic_load_explicit(&qp->rq_head, memory_order_acquire);
		while (qp->rq_tail != head) {
			struct rwqe *r = &qp->rq[qp->rq_tail & qp->rq_mask];

			memset(&wc, 0, sizeof(wc));
			wc.wr_id = r->wr_id;
			if (r->precv)
				wc.wc_flags = qp->rel->precv_end(r->precv, false);
			r->precv = NULL;
			wc.status = UROCE_WC_WR_FLUSH_ERR;
			wc.opcode = UROCE_WC_RECV;
			wc.qp_num = qp->qpn;
			cq_push(qp->rcq, &wc);
			qp->rq_tail++;
		}
	}
}

void qp_to_error(struct uroce_qp *qp)
{
	qp->state = qp->attr.qp_state = UROCE_QPS_ERR;
	engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
	qp->write_mr = NULL;
	qp->rel->error(qp);
	qp_flush(qp);
}

static const uint8_t wr_to_wc[] = {
	[UROCE_WR_RDMA_WRITE] = UROCE_WC_RDMA_WRITE,
	[UROCE_WR_RDMA_WRITE_WITH_IMM] = UROCE_WC_RDMA_WRITE,
	[UROCE_WR_SEND] = UROCE_WC_SEND,
	[UROCE_WR_SEND_WITH_IMM] = UROCE_WC_SEND,
	[UROCE_WR_RDMA_READ] = UROCE_WC_RDMA_READ,
	[UROCE_WR_ATOMIC_CMP_AND_SWP] = UROCE_WC_COMP_SWAP,
	[UROCE_WR_ATOMIC_FETCH_AND_ADD] = UROCE_WC_FETCH_ADD,
	[UROCE_WR_LOCAL_INV] = UROCE_WC_LOCAL_INV,
	[UROCE_WR_BIND_MW] = UROCE_WC_BIND_MW,
	[UROCE_WR_SEND_WITH_INV] = UROCE_WC_SEND,
};

void qp_complete_swqe(struct uroce_qp *qp, struct swqe *w, enum uroce_wc_status st)
{
	struct uroce_wc wc;

	if (st == UROCE_WC_SUCCESS && !w->signaled)
		return;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = st;
	wc.opcode = wr_to_wc[w->opcode];
	wc.byte_len = w->length;
	wc.qp_num = qp->qpn;
	cq_push(qp->scq, &wc);
}

void qp_fail_oldest(struct uroce_qp *qp, enum uroce_wc_status st)
{
	if (qp->sq_tail != atomic_load_explicit(&qp->sq_head, memory_order_acquire)) {
		qp->rel->complete(qp, &qp->sq[qp->sq_tail & qp->sq_mask], st);
		qp->sq_tail++;
	}
	qp_to_error(qp);
}

void qp_fatal(struct uroce_qp *qp)
{
	struct uroce_async_event ev = { .event_type = UROCE_EVENT_QP_FATAL };

	qp->fatal_pending = false;
	ev.element.qp = qp;
	qp_to_error(qp);
	ctx_async_event(qp->ctx, &ev);
}

static uint16_t qp_sport(uint32_t src, uint32_t dst)
{
	uint32_t h = (src * 0x9e3779b1u) ^ (dst * 0x85ebca6bu);

	h ^= h >> 15;
	return (uint16_t)(0xc000u | (h & 0x3fffu));
}

int uroce_qp_modify(struct uroce_qp *qp, const struct uroce_qp_attr *attr, int mask)
{
	const int known = (1 << 24) - 1;
	enum uroce_qp_state cur, next;
	struct trans_masks t;
	char have[256], need[256];
	struct dest d;
	unsigned port;
	int ti, req, opt, rc;

	if (!qp || !attr)
		return uroce_fail(-EINVAL, "uroce_qp_modify: qp and attr are required");
	if (qp->nic)
		return qp->ctx->nic->qp_modify(qp, attr, mask);
	if (ctx_remote(qp->ctx)) {
		struct qp_args a = { .qp = qp, .cattr = attr, .mask = mask };

		return ctx_call(qp->ctx, qp_modify_call, &a);
	}
	if (mask & ~known)
		return uroce_fail(-EINVAL, "uroce_qp_modify: unknown mask bits 0x%x", mask & ~known);
	cur = qp->state;
	if ((mask & UROCE_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return uroce_fail(-EINVAL, "uroce_qp_modify: cur_qp_state %s, but the QP is in %s",
		                  uroce_qp_state_str(attr->cur_qp_state), uroce_qp_state_str(cur));
	next = (mask & UROCE_QP_STATE) ? attr->qp_state : cur;
	if ((unsigned)next > UROCE_QPS_ERR)
		return uroce_fail(-EINVAL, "uroce_qp_modify: qp_state %d; accepted RESET..ERR (0-6)", (int)next);
	port = qp->port;
	t = trans_table(cur, next);
	if (!t.valid)
		return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x: transition %s -> %s is not allowed", qp->qpn,
		                  uroce_qp_state_str(cur), uroce_qp_state_str(next));
	ti = TI(qp->type);
	req = t.req[ti];
	opt = t.opt[ti];
	if ((mask & req) != req) {
		mask_names(req & ~mask, need, sizeof(need));
		return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x %s -> %s is missing required attributes: %s",
		                  qp->qpn, uroce_qp_state_str(cur), uroce_qp_state_str(next), need);
	}
	if (mask & ~(req | opt | UROCE_QP_STATE | UROCE_QP_CUR_STATE)) {
		mask_names(mask & ~(req | opt | UROCE_QP_STATE | UROCE_QP_CUR_STATE), have, sizeof(have));
		mask_names(req | opt, need, sizeof(need));
		return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x %s -> %s does not take %s; accepted: %s", qp->qpn,
		                  uroce_qp_state_str(cur), uroce_qp_state_str(next), have, need);
	}
	if (qp->ctrl_qpn && cur == UROCE_QPS_INIT && next == UROCE_QPS_RTR && !(mask & UROCE_QP_DEST_TOKEN))
		return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x (%s%s) has control packets: INIT -> RTR needs the "
		                           "peer's token, attr.dest_token = the peer's uroce_qp_token(), with "
		                           "UROCE_QP_DEST_TOKEN", qp->qpn, qp->rel->name, qp->fo ? ", failover" : "");
	/* validate values before changing anything */
	if (mask & UROCE_QP_SPORTS) {
		if (attr->num_sports < 1 || attr->num_sports > UROCE_MAX_SPORTS)
			return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x: num_sports %u; accepted 1-%u", qp->qpn,
			                  attr->num_sports, UROCE_MAX_SPORTS);
		for (unsigned i = 0; i < attr->num_sports; i++)
			if (!attr->sports[i])
				return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x: sports[%u] is 0; a source port is "
				                           "1-65535", qp->qpn, i);
	}
	if (mask & UROCE_QP_PORT) {
		rc = ctx_port_index(qp->ctx, attr->port_num, "uroce_qp_modify");
		if (rc < 0)
			return rc;
		if (rc && qp->segq)
			return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x: port_num %u; on a verbs context a QP runs on "
			                           "port 1, whose device's keys its peer holds (the other ports carry its "
			                           "failover backups); accepted: 1", qp->qpn, attr->port_num);
		port = (unsigned)rc;
	}
	if ((mask & UROCE_QP_AV) && attr->ah_attr.port_num && attr->ah_attr.port_num != port + 1u)
		return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x is on port %u but ah_attr.port_num is %u; "
		                           "accepted: 0 or %u", qp->qpn, port + 1u, attr->ah_attr.port_num, port + 1u);
	if ((mask & UROCE_QP_PATH_MTU) && !uroce_mtu_bytes(attr->path_mtu))
		return uroce_fail(-EINVAL, "uroce_qp_modify: path_mtu %d; accepted UROCE_MTU_256 (1) .. UROCE_MTU_4096 (5)",
		                  (int)attr->path_mtu);
	if ((mask & UROCE_QP_PATH_MTU) && qp->type != UROCE_QPT_UD) {
		bool v6 = (mask & UROCE_QP_AV) ? !neigh_addr_is_v4(attr->ah_attr.dgid) : qp->d.ipv6;
		uint32_t hdr = ROCE_PKT_HDR_MAX_V4 + (v6 ? IPV6_HDR_LEN - IPV4_HDR_LEN : 0u);

		uint32_t link = qp->ctx->ports[port].port->mtu;

		if (uroce_mtu_bytes(attr->path_mtu) + hdr > link)
			return uroce_fail(-EINVAL, "uroce_qp_modify: path_mtu %u does not fit port %u's IP MTU %u "
			                           "(needs %u more for IP/UDP/BTH/RETH/ImmDt/ICRC)",
			                  uroce_mtu_bytes(attr->path_mtu), port + 1u, link, hdr);
	}
	if ((mask & UROCE_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return uroce_fail(-EINVAL, "uroce_qp_modify: pkey_index %u; accepted: 0 (P_Key 0xffff)", attr->pkey_index);
	if ((mask & UROCE_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~0xf))
		return uroce_fail(-EINVAL, "uroce_qp_modify: qp_access_flags 0x%x; accepted: LOCAL_WRITE, "
		                           "REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC", attr->qp_access_flags);
	if ((mask & UROCE_QP_RQ_PSN) && attr->rq_psn > ROCE_PSN_MASK)
		return uroce_fail(-EINVAL, "uroce_qp_modify: rq_psn 0x%x; accepted 0-0xffffff", attr->rq_psn);
	if ((mask & UROCE_QP_SQ_PSN) && attr->sq_psn > ROCE_PSN_MASK)
		return uroce_fail(-EINVAL, "uroce_qp_modify: sq_psn 0x%x; accepted 0-0xffffff", attr->sq_psn);
	if ((mask & UROCE_QP_DEST_QPN) && attr->dest_qp_num > ROCE_QPN_MASK)
		return uroce_fail(-EINVAL, "uroce_qp_modify: dest_qp_num 0x%x; accepted 0-0xffffff", attr->dest_qp_num);
	if ((mask & UROCE_QP_TIMEOUT) && attr->timeout > 31)
		return uroce_fail(-EINVAL, "uroce_qp_modify: timeout %u; accepted 0-31 (4.096 us * 2^timeout, 0 = "
		                           "infinite)", attr->timeout);
	if ((mask & UROCE_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return uroce_fail(-EINVAL, "uroce_qp_modify: retry_cnt %u; accepted 0-7", attr->retry_cnt);
	if ((mask & UROCE_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return uroce_fail(-EINVAL, "uroce_qp_modify: rnr_retry %u; accepted 0-7 (7 = infinite)", attr->rnr_retry);
	if ((mask & UROCE_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return uroce_fail(-EINVAL, "uroce_qp_modify: min_rnr_timer %u; accepted 0-31 (IBTA encoding)",
		                  attr->min_rnr_timer);
	if ((mask & UROCE_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > RC_MAX_RD_ATOMIC)
		return uroce_fail(-EINVAL, "uroce_qp_modify: max_rd_atomic %u; accepted 0-%u", attr->max_rd_atomic,
		                  RC_MAX_RD_ATOMIC);
	if ((mask & UROCE_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > RC_MAX_RD_ATOMIC)
		return uroce_fail(-EINVAL, "uroce_qp_modify: max_dest_rd_atomic %u; accepted 0-%u",
		                  attr->max_dest_rd_atomic, RC_MAX_RD_ATOMIC);
	if (next == UROCE_QPS_RTR && cur == UROCE_QPS_INIT) {
		rc = qp_failover.check_backups(qp, attr, mask,
		                                (mask & UROCE_QP_PATH_MTU) ? uroce_mtu_bytes(attr->path_mtu) : qp->mtu);
		if (rc)
			return rc;
	} else if (mask & UROCE_QP_ALT_PATH) {
		return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x: backup_ah (UROCE_QP_ALT_PATH) is taken at INIT -> "
		                           "RTR only, by a QP created with failover.nbackups > 0", qp->qpn);
	}
	if (mask & UROCE_QP_AV) {
		rc = ctx_resolve_dest(qp->ctx, port, &attr->ah_attr, &d);
		if (rc) {
			char why[512];

			snprintf(why, sizeof(why), "%s", uroce_last_error());
			return uroce_fail(rc, "uroce_qp_modify: QP 0x%x ah_attr: %s", qp->qpn, why);
		}
		qp->d = d;
		qp->attr.ah_attr = attr->ah_attr;
		qp->attr.ah_attr.port_num = (uint8_t)(port + 1u);
	}
	/* apply what the mask selects; QP_ATTR_COPY for an attribute that sets nothing else */
#define QP_ATTR_COPY(bit, field)			\
	do {						\
		if (mask & (bit))			\
			qp->attr.field = attr->field;	\
	} while (0)
	if (mask & UROCE_QP_PORT) {
		qp->port = (uint8_t)port;
		qp->attr.port_num = attr->port_num;
	}
	QP_ATTR_COPY(UROCE_QP_ACCESS_FLAGS, qp_access_flags);
	QP_ATTR_COPY(UROCE_QP_QKEY, qkey);
	if (mask & UROCE_QP_PATH_MTU) {
		qp->attr.path_mtu = attr->path_mtu;
		qp->mtu = uroce_mtu_bytes(attr->path_mtu);
	}
	QP_ATTR_COPY(UROCE_QP_TIMEOUT, timeout);
	QP_ATTR_COPY(UROCE_QP_RETRY_CNT, retry_cnt);
	QP_ATTR_COPY(UROCE_QP_RNR_RETRY, rnr_retry);
	QP_ATTR_COPY(UROCE_QP_MIN_RNR_TIMER, min_rnr_timer);
	QP_ATTR_COPY(UROCE_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
	if (mask & UROCE_QP_MAX_DEST_RD_ATOMIC) {
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
		qp->rc.nres = attr->max_dest_rd_atomic ? attr->max_dest_rd_atomic : 1;
	}
	if (mask & UROCE_QP_RQ_PSN) {
		qp->attr.rq_psn = attr->rq_psn;
		qp->epsn = attr->rq_psn;
	}
	if (mask & UROCE_QP_SQ_PSN) {
		qp->attr.sq_psn = attr->sq_psn;
		qp->snd_nxt = attr->sq_psn;
		qp->rc.snd_max = attr->sq_psn;
		qp->rc.acked_psn = psn_add(attr->sq_psn, ROCE_PSN_MASK); /* sq_psn - 1 */
	}
	if (mask & UROCE_QP_DEST_QPN) {
		qp->attr.dest_qp_num = attr->dest_qp_num;
		qp->dqpn = attr->dest_qp_num;
		qp->sport = qp_sport(qp->qpn, attr->dest_qp_num);
	}
	QP_ATTR_COPY(UROCE_QP_PKEY_INDEX, pkey_index);
#undef QP_ATTR_COPY
	if (mask & UROCE_QP_DEST_TOKEN) {
		qp->attr.dest_token = attr->dest_token;
		qp->tok_remote = attr->dest_token;
	}
	if (mask & UROCE_QP_DEST_CTRL_QPN) {
		qp->attr.dest_ctrl_qpn = attr->dest_ctrl_qpn & ROCE_QPN_MASK;
		qp->ctrl_dqpn = qp->attr.dest_ctrl_qpn;
	}
	if (mask & UROCE_QP_SPORTS) {
		memcpy(qp->attr.sports, attr->sports, sizeof(qp->attr.sports));
		qp->attr.num_sports = attr->num_sports;
		qp->sport = attr->sports[0];
	}
	if (qp->type == UROCE_QPT_UD && !qp->sport)
		qp->sport = qp_sport(qp->qpn, 0);
	qp->rc.retry_left = qp->attr.retry_cnt;
	qp->rc.rnr_left = qp->attr.rnr_retry;
	if ((next == UROCE_QPS_RTR && cur == UROCE_QPS_INIT) || (next == UROCE_QPS_RTS && cur == UROCE_QPS_RTR)) {
		rc = qp->rel->ready(qp); /* sizes by the MTU at RTR, takes the send PSN at RTS */
		if (rc)
			return rc;
	}
	if (next == UROCE_QPS_RTR && cur == UROCE_QPS_INIT && qp->fo) {
		qp_failover.ready(qp);
		memcpy(qp->attr.backup_ah, attr->backup_ah, sizeof(qp->attr.backup_ah));
		memcpy(qp->attr.backup_dest_qpn, attr->backup_dest_qpn, sizeof(qp->attr.backup_dest_qpn));
		memcpy(qp->attr.backup_dest_ctrl_qpn, attr->backup_dest_ctrl_qpn, sizeof(qp->attr.backup_dest_ctrl_qpn));
	}
	if (next == UROCE_QPS_RTR && cur == UROCE_QPS_INIT && qp->segq) {
		rc = qp->ctx->nic->seg_connect(qp); /* the NIC's QPs to the peer's numbers (every member's) */
		if (rc)
			return rc;
	}
	qp->state = qp->attr.qp_state = next;
	if (next == UROCE_QPS_RESET)
		qp_reset(qp);
	else if (next == UROCE_QPS_ERR && cur != UROCE_QPS_ERR)
		qp_to_error(qp);
	else if (next == UROCE_QPS_RTS)
		ctx_kick(qp);
	return 0;
}

int uroce_qp_query(struct uroce_qp *qp, struct uroce_qp_attr *attr, struct uroce_qp_init_attr *init)
{
	if (!qp || !attr)
		return uroce_fail(-EINVAL, "uroce_qp_query: qp and attr are required");
	if (qp->nic)
		return qp->ctx->nic->qp_query(qp, attr, init);
	if (ctx_remote(qp->ctx)) {
		struct qp_args a = { .qp = qp, .attr = attr, .init = init };

		return ctx_call(qp->ctx, qp_query_call, &a);
	}
	*attr = qp->attr;
	attr->cur_qp_state = qp->state;
	attr->sq_psn = qp->snd_nxt;
	attr->rq_psn = qp->epsn;
	if (init)
		*init = qp->init;
	return 0;
}
