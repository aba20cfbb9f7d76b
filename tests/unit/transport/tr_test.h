/* SPDX-License-Identifier: MIT */
/* Helpers for the transport tests: two contexts on a loop fabric, a
 * connected QP pair of any type, and a driver that progresses both ends
 * and moves simulated time, every wait bounded in iterations. */
#ifndef UROCE_TESTS_TR_TEST_H
#define UROCE_TESTS_TR_TEST_H

#include <endian.h>
#include <errno.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"
#include "../dataplane/dp_test.h"

#define TR_BUF (1u << 20)
#define TR_STEP_BUSY_NS 1000u
#define TR_STEP_IDLE_NS 20000u

/* GID index the helpers connect with: 1 = IPv4-mapped, 2 = IPv6 */
static int tr_gid_index = 1;

struct tr_side {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *scq, *rcq;
	struct uroce_qp *qp;
	uint8_t *buf;
	struct uroce_mr *mr;
};

struct tr_pair {
	struct loop_fabric *fab;
	struct tr_side s[2];
	uint32_t psn_seeded; /* side 1's initial PSN by default: from tr_open's seed */
};

/* sq_psn[i] = TR_PSN_SEEDED: the initial PSN comes from the test's seed
 * (random-looking, as a real peer's, and reproducible) */
#define TR_PSN_SEEDED 0xffffffffu

struct tr_opts {
	enum uroce_qp_type type;
	enum uroce_mtu mtu;
	int access;       /* the responder QP's qp_access_flags */
	int mr_access;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, rd_atomic;
	uint32_t sq_psn[2];
	uint32_t max_wr;
	struct uroce_rel_attr rel; /* reliability mode (all zero = rc) */
	struct uroce_path_attr path; /* sr/ec/be paths (all zero = one) */
	struct uroce_cc_attr cc;     /* congestion control (all zero = none) */
};

static inline void tr_opts_default(struct tr_opts *o, enum uroce_qp_type type)
{
	memset(o, 0, sizeof(*o));
	o->type = type;
	o->mtu = UROCE_MTU_1024;
	o->access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ |
	            UROCE_ACCESS_REMOTE_ATOMIC;
	o->mr_access = o->access;
	o->timeout = 8; /* ~1 ms */
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->min_rnr_timer = 1;
	o->rd_atomic = 4;
	o->sq_psn[0] = 0xfffff0; /* wraps inside the first messages */
	o->sq_psn[1] = TR_PSN_SEEDED;
	o->max_wr = 256;
}

static inline void tr_side_open(struct tr_pair *p, unsigned i, const struct tr_opts *o)
{
	struct tr_side *s = &p->s[i];
	struct uroce_context_attr ca = { 0 };
	char spec[32];
	struct uroce_qp_init_attr ia;
	int rc;

	snprintf(spec, sizeof(spec), "loop:%u", i);
	ca.port = spec;
	ca.loop_fabric = p->fab;
	rc = uroce_context_create(&s->ctx, &ca);
	REQUIRE(rc == 0, "context_create: %s", uroce_last_error());
	REQUIRE(uroce_pd_alloc(s->ctx, &s->pd) == 0, "pd");
	REQUIRE(uroce_cq_create(s->ctx, 4096, &s->scq) == 0, "cq");
	REQUIRE(uroce_cq_create(s->ctx, 4096, &s->rcq) == 0, "cq");
	s->buf = aligned_alloc(4096, TR_BUF);
	REQUIRE(s->buf, "buf");
	memset(s->buf, 0, TR_BUF);
	rc = uroce_mr_reg(s->pd, s->buf, TR_BUF, o->mr_access, &s->mr);
	REQUIRE(rc == 0, "mr_reg: %s", uroce_last_error());
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = o->type;
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.cap.max_send_wr = o->max_wr;
	ia.cap.max_recv_wr = o->max_wr;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 256;
	ia.rel = o->rel;
	ia.path = o->path;
	ia.cc = o->cc;
	rc = uroce_qp_create(s->pd, &ia, &s->qp);
	REQUIRE(rc == 0, "qp_create: %s", uroce_last_error());
}

static inline uint32_t tr_psn(const struct tr_pair *p, const struct tr_opts *o, unsigned i)
{
	return o->sq_psn[i] == TR_PSN_SEEDED ? p->psn_seeded : o->sq_psn[i];
}

static inline int tr_connect(struct tr_pair *p, unsigned i, const struct tr_opts *o)
{
	struct tr_side *s = &p->s[i], *peer = &p->s[!i];
	struct uroce_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = o->access;
	a.qkey = 0x11111111;
	rc = uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                                        (o->type == UROCE_QPT_UD ? UROCE_QP_QKEY : UROCE_QP_ACCESS_FLAGS));
	if (rc)
		return rc;
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = o->mtu;
	a.dest_qp_num = uroce_qp_num(peer->qp);
	a.dest_token = uroce_qp_token(peer->qp);
	a.rq_psn = tr_psn(p, o, !i);
	a.max_dest_rd_atomic = o->rd_atomic;
	a.min_rnr_timer = o->min_rnr_timer;
	REQUIRE(uroce_query_gid(peer->ctx, 1, tr_gid_index, a.ah_attr.dgid) == 0, "query_gid: %s", uroce_last_error());
	a.ah_attr.sgid_index = (uint8_t)tr_gid_index; /* the source of the dgid's family */
	if (o->type == UROCE_QPT_UD)
		rc = uroce_qp_modify(s->qp, &a, UROCE_QP_STATE);
	else if (o->type == UROCE_QPT_UC)
		rc = uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
		                                        UROCE_QP_RQ_PSN);
	else
		rc = uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
		                                        UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC |
		                                        UROCE_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = tr_psn(p, o, i);
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.max_rd_atomic = o->rd_atomic;
	if (o->type == UROCE_QPT_RC)
		rc = uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
		                                        UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC);
	else
		rc = uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN);
	return rc;
}

/* loss plus 1% duplication and 1% reordering (up to 8 us), 2 us of delay
 * with 0.5 us of jitter: the mixed impairment of the loss tests. */
static inline struct loop_impairment tr_imp_mixed(double loss)
{
	struct loop_impairment imp = { .loss = loss, .duplicate = 0.01, .reorder = 0.01, .reorder_max_ns = 8000,
		                       .delay_ns = 2000, .jitter_ns = 500 };

	return imp;
}

static inline void tr_open(struct tr_pair *p, const struct tr_opts *o, uint64_t seed,
                           const struct loop_impairment *ab, const struct loop_impairment *ba)
{
	memset(p, 0, sizeof(*p));
	p->fab = loop_fabric_create(2, seed);
	REQUIRE(p->fab, "fabric");
	p->psn_seeded = (uint32_t)((seed + 1) * 0x9e3779b97f4a7c15ull >> 40); /* 24 bits */
	REQUIRE(loop_fabric_connect(p->fab, 0, 1, ab, ba) == 0, "connect");
	tr_side_open(p, 0, o);
	tr_side_open(p, 1, o);
	REQUIRE(tr_connect(p, 0, o) == 0, "connect 0: %s", uroce_last_error());
	REQUIRE(tr_connect(p, 1, o) == 0, "connect 1: %s", uroce_last_error());
}

static inline void tr_close(struct tr_pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct tr_side *s = &p->s[i];

		CHECK(uroce_qp_destroy(s->qp) == 0, "qp_destroy");
		CHECK(uroce_mr_dereg(s->mr) == 0, "mr_dereg");
		CHECK(uroce_cq_destroy(s->scq) == 0, "cq");
		CHECK(uroce_cq_destroy(s->rcq) == 0, "cq");
		CHECK(uroce_pd_free(s->pd) == 0, "pd");
		CHECK(uroce_context_destroy(s->ctx) == 0, "ctx: %s", uroce_last_error());
		free(s->buf);
	}
	loop_fabric_destroy(p->fab);
}

/* One step: both ends progress, time moves (more when nothing happened). */
static inline int tr_step(struct tr_pair *p)
{
	int n = uroce_progress(p->s[0].ctx) + uroce_progress(p->s[1].ctx);

	loop_fabric_advance(p->fab, n ? TR_STEP_BUSY_NS : TR_STEP_IDLE_NS);
	return n;
}

/* n steps of tr_step. */
static inline void tr_steps(struct tr_pair *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		tr_step(p);
}

/* ctx's drop counter of reason r on port 1. */
static inline uint64_t tr_drops(struct uroce_context *ctx, enum uroce_drop_reason r)
{
	struct uroce_port_stats st;

	REQUIRE(uroce_port_stats(ctx, 1, &st) == 0, "port_stats: %s", uroce_last_error());
	return st.drops[r];
}

static inline enum uroce_qp_state tr_qp_state(struct uroce_qp *qp)
{
	struct uroce_qp_attr qa;

	REQUIRE(uroce_qp_query(qp, &qa, NULL) == 0, "query: %s", uroce_last_error());
	return qa.qp_state;
}

/* Wait for one completion on cq; 0 when found, -1 after max steps. */
static inline int tr_wait(struct tr_pair *p, struct uroce_cq *cq, struct uroce_wc *wc, unsigned max_steps)
{
	for (unsigned i = 0; i < max_steps; i++) {
		if (uroce_poll_cq(cq, 1, wc) == 1)
			return 0;
		tr_step(p);
	}
	return -1;
}

/* Step until side 0's send CQ has a completion or simulated time reaches
 * deadline_ns: 1 with it in *wc, else 0. */
static inline int tr_wait_until(struct tr_pair *p, uint64_t deadline_ns, struct uroce_wc *wc)
{
	while (loop_fabric_now(p->fab) < deadline_ns) {
		if (uroce_poll_cq(p->s[0].scq, 1, wc) == 1)
			return 1;
		tr_step(p);
	}
	return uroce_poll_cq(p->s[0].scq, 1, wc) == 1;
}

static inline void tr_sge(struct uroce_sge *sg, const struct tr_side *s, uint32_t off, uint32_t len)
{
	sg->addr = (uint64_t)(uintptr_t)(s->buf + off);
	sg->length = len;
	sg->lkey = s->mr->lkey;
}

/* One receive of [off, off + len) of s's buffer on its QP. */
static inline void tr_post_recv(struct tr_side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };

	tr_sge(&sg, s, off, len);
	REQUIRE(uroce_post_recv(s->qp, &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

/* A signaled work request of one SGE: zeroed, then id, sg and op. */
static inline void tr_wr(struct uroce_send_wr *wr, uint64_t id, struct uroce_sge *sg, enum uroce_wr_opcode op)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->sg_list = sg;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = UROCE_SEND_SIGNALED;
}

/* A signaled BIND_MW of mw (NULL: none) over [off, off + len) of s's
 * buffer with access, its rkey mw's next (uroce_inc_rkey). */
static inline void tr_bind_wr(struct uroce_send_wr *wr, struct tr_side *s, struct uroce_mw *mw, uint32_t off, uint32_t len,
                              unsigned access, uint64_t id)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = UROCE_WR_BIND_MW;
	wr->send_flags = UROCE_SEND_SIGNALED;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = mw ? uroce_inc_rkey(mw->rkey) : 0;
	wr->bind_mw.bind_info.mr = s->mr;
	wr->bind_mw.bind_info.addr = (uint64_t)(uintptr_t)(s->buf + off);
	wr->bind_mw.bind_info.length = len;
	wr->bind_mw.bind_info.mw_access_flags = access;
}

static inline void tr_fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1);
}

/* A host of the multi-port tests: one context on loop ports first_loop ..
 * first_loop + nports - 1, a PD, a CQ (and a receive CQ where the test makes
 * one), one registered zeroed buffer, and the QPs the test creates. */
#define TR_HOST_QPS 4u

struct tr_host {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq, *rcq;
	uint8_t *buf;
	struct uroce_mr *mr;
	unsigned nports;
	struct uroce_qp *qp[TR_HOST_QPS];
};

static inline void tr_host_open(struct tr_host *h, struct loop_fabric *fab, unsigned first_loop, unsigned nports,
                                size_t len, int cq_depth, int access)
{
	char names[8][16];
	const char *specs[8];
	struct uroce_context_attr ca = { 0 };

	REQUIRE(nports >= 1 && nports <= 8, "tr_host_open: %u ports", nports);
	for (unsigned i = 0; i < nports; i++) {
		snprintf(names[i], sizeof(names[i]), "loop:%u", first_loop + i);
		specs[i] = names[i];
	}
	ca.ports = specs;
	ca.nports = nports;
	ca.loop_fabric = fab;
	h->nports = nports;
	REQUIRE(uroce_context_create(&h->ctx, &ca) == 0, "context_create: %s", uroce_last_error());
	REQUIRE(uroce_pd_alloc(h->ctx, &h->pd) == 0, "pd");
	REQUIRE(uroce_cq_create(h->ctx, cq_depth, &h->cq) == 0, "cq");
	h->buf = aligned_alloc(4096, len);
	REQUIRE(h->buf, "buf");
	memset(h->buf, 0, len);
	REQUIRE(uroce_mr_reg(h->pd, h->buf, len, access, &h->mr) == 0, "mr: %s", uroce_last_error());
}

static inline void tr_host_close(struct tr_host *h)
{
	for (unsigned i = 0; i < TR_HOST_QPS; i++)
		if (h->qp[i])
			CHECK(uroce_qp_destroy(h->qp[i]) == 0, "qp_destroy: %s", uroce_last_error());
	CHECK(uroce_mr_dereg(h->mr) == 0, "mr_dereg");
	CHECK(uroce_cq_destroy(h->cq) == 0, "cq_destroy: %s", uroce_last_error());
	if (h->rcq)
		CHECK(uroce_cq_destroy(h->rcq) == 0, "cq_destroy: %s", uroce_last_error());
	CHECK(uroce_pd_free(h->pd) == 0, "pd_free: %s", uroce_last_error());
	CHECK(uroce_context_destroy(h->ctx) == 0, "ctx_destroy: %s", uroce_last_error());
	free(h->buf);
	memset(h, 0, sizeof(*h));
}

/* ia zeroed for a QP of type on scq and rcq, sq and rq WRs of one SGE. */
static inline void tr_qp_attr(struct uroce_qp_init_attr *ia, enum uroce_qp_type type, struct uroce_cq *scq,
                              struct uroce_cq *rcq, uint32_t sq, uint32_t rq)
{
	memset(ia, 0, sizeof(*ia));
	ia->qp_type = type;
	ia->send_cq = scq;
	ia->recv_cq = rcq;
	ia->cap.max_send_wr = sq;
	ia->cap.max_recv_wr = rq;
	ia->cap.max_send_sge = 1;
	ia->cap.max_recv_sge = 1;
}

/* Both hosts progress, time moves (idle_ns when nothing happened). */
static inline int tr_host_step(struct loop_fabric *fab, struct tr_host *a, struct tr_host *b, uint64_t idle_ns)
{
	int n = uroce_progress(a->ctx) + uroce_progress(b->ctx);

	loop_fabric_advance(fab, n ? TR_STEP_BUSY_NS : idle_ns);
	return n;
}

/* An RC-type QP on h sharing its CQ for sends and receives. */
static inline struct uroce_qp *tr_host_qp(struct tr_host *h, const struct uroce_rel_attr *rel, uint32_t max_send_wr,
                                          uint32_t max_recv_wr)
{
	struct uroce_qp_init_attr ia;
	struct uroce_qp *qp;

	tr_qp_attr(&ia, UROCE_QPT_RC, h->cq, h->cq, max_send_wr, max_recv_wr);
	if (rel)
		ia.rel = *rel;
	REQUIRE(uroce_qp_create(h->pd, &ia, &qp) == 0, "qp_create: %s", uroce_last_error());
	return qp;
}

/* How tr_link connects one RC-type QP: its port, the peer's port, the PSN
 * both directions start at, the RTS timeout, READ depth and RNR timer. */
struct tr_link {
	uint8_t port, peer_port;
	int access;
	uint32_t psn;
	uint8_t timeout, rd_atomic, min_rnr_timer;
};

/* qp through INIT, RTR and RTS to pqp on peer's port l->peer_port. */
static inline void tr_link(struct uroce_qp *qp, const struct tr_link *l, struct uroce_context *peer,
                           struct uroce_qp *pqp)
{
	struct uroce_qp_attr a = { 0 };

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = l->port;
	a.qp_access_flags = l->access;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS) == 0,
	        "init: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = uroce_qp_num(pqp);
	a.dest_token = uroce_qp_token(pqp);
	a.rq_psn = l->psn;
	a.max_dest_rd_atomic = l->rd_atomic;
	a.min_rnr_timer = l->min_rnr_timer;
	REQUIRE(uroce_query_gid(peer, l->peer_port, tr_gid_index, a.ah_attr.dgid) == 0, "gid: %s", uroce_last_error());
	a.ah_attr.sgid_index = (uint8_t)tr_gid_index; /* the dgid's family */
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
	                                        UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER) == 0,
	        "rtr: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = l->psn;
	a.timeout = l->timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = l->rd_atomic;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                        UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC) == 0,
	        "rts: %s", uroce_last_error());
}

/* The dedicated-engine tests: one context with n QP pairs' objects, each
 * wait bounded by TR_LIMIT_NS of wall-clock time. */
#define TR_LIMIT_NS (60ull * 1000000000ull)
#define TR_APP_FIELDS(n)                   \
	struct uroce_context *ctx;         \
	struct uroce_pd *pd;               \
	struct uroce_mr *mr;               \
	uint8_t *buf;                      \
	struct uroce_cq *scq[n], *rcq[n];  \
	struct uroce_qp *qp[n]

/* The dedicated-engine tests' fabric, one real-time loop port wired to
 * itself through imp both ways, and a DEDICATED context on it (*ca as it
 * was made, for tests that try variants of it). */
static inline struct loop_fabric *tr_rt_context(uint64_t seed, const struct loop_impairment *imp,
                                                struct uroce_context_attr *ca, struct uroce_context **ctx)
{
	struct loop_fabric_opts fo = { .nports = 1, .seed = seed, .real_time = true };
	struct loop_fabric *fab;
	char err[256];

	fab = loop_fabric_create_opts(&fo, err, sizeof(err));
	REQUIRE(fab, "fabric: %s", err);
	REQUIRE(loop_fabric_connect(fab, 0, 0, imp, imp) == 0, "loopback");
	memset(ca, 0, sizeof(*ca));
	ca->port = "loop:0";
	ca->mode = UROCE_ENGINE_DEDICATED;
	ca->engine_cpu = -1;
	ca->loop_fabric = fab;
	REQUIRE(uroce_context_create(ctx, ca) == 0, "context: %s", uroce_last_error());
	return fab;
}

/* A zeroed buffer of len bytes on pd, registered for every access. */
static inline uint8_t *tr_buf_reg(struct uroce_pd *pd, size_t len, struct uroce_mr **mr)
{
	uint8_t *buf = aligned_alloc(4096, len);

	REQUIRE(buf, "buf");
	memset(buf, 0, len);
	REQUIRE(uroce_mr_reg(pd, buf, len, 15, mr) == 0, "mr: %s", uroce_last_error());
	return buf;
}

/* The dedicated-engine tests' teardown: n QPs with their CQs, then the MR,
 * PD, context, fabric and buffer. */
static inline void tr_ctx_teardown(unsigned n, struct uroce_qp **qp, struct uroce_cq **scq, struct uroce_cq **rcq,
                                   struct uroce_mr *mr, struct uroce_pd *pd, struct uroce_context *ctx,
                                   struct loop_fabric *fab, uint8_t *buf)
{
	for (unsigned i = 0; i < n; i++) {
		CHECK(uroce_qp_destroy(qp[i]) == 0, "qp destroy: %s", uroce_last_error());
		CHECK(uroce_cq_destroy(scq[i]) == 0 && uroce_cq_destroy(rcq[i]) == 0, "cq destroy");
	}
	CHECK(uroce_mr_dereg(mr) == 0, "mr dereg");
	CHECK(uroce_pd_free(pd) == 0, "pd");
	CHECK(uroce_context_destroy(ctx) == 0, "context: %s", uroce_last_error());
	loop_fabric_destroy(fab);
	free(buf);
}

/* The dedicated-engine tests' QP on one context: its own send and receive
 * CQs of 256 and 64 WRs each way. */
static inline void tr_ctx_qp(struct uroce_context *ctx, struct uroce_pd *pd, const struct uroce_rel_attr *rel,
                             struct uroce_cq **scq, struct uroce_cq **rcq, struct uroce_qp **qp)
{
	struct uroce_qp_init_attr ia = { 0 };

	REQUIRE(uroce_cq_create(ctx, 256, scq) == 0 && uroce_cq_create(ctx, 256, rcq) == 0, "cq");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = *scq;
	ia.recv_cq = *rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (rel)
		ia.rel = *rel;
	REQUIRE(uroce_qp_create(pd, &ia, qp) == 0, "qp: %s", uroce_last_error());
}

/* qp through INIT, RTR and RTS to peer on the same context, through its
 * port 1 wired to itself (l->port and l->peer_port taken as 1). */
static inline void tr_loop_link(struct uroce_context *ctx, struct uroce_qp *qp, struct uroce_qp *peer,
                                const struct tr_link *l)
{
	struct tr_link one = *l;

	one.port = one.peer_port = 1;
	tr_link(qp, &one, ctx, peer);
}

#endif /* UROCE_TESTS_TR_TEST_H */
