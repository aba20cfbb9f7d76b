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

static inline void tr_sge(struct uroce_sge *sg, const struct tr_side *s, uint32_t off, uint32_t len)
{
	sg->addr = (uint64_t)(uintptr_t)(s->buf + off);
	sg->length = len;
	sg->lkey = s->mr->lkey;
}

static inline void tr_fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1);
}

#endif /* UROCE_TESTS_TR_TEST_H */
