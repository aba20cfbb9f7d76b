/* SPDX-License-Identifier: MIT */
/* Memory windows (type 2), LOCAL_INV, BIND_MW and SEND with Invalidate
 * over RC on the loop fabric: the checks of uroce_mw_alloc and of a bind
 * at post time (each with its message), access through a bound window and
 * the refusals outside it, revocation by LOCAL_INV, rebind, SEND with
 * Invalidate and dealloc (counted as rkey_revoked), a window of one QP
 * refused on another, mr_dereg while bound, completions in SQ order, and
 * credits with many local WRs. Side 1 (b) owns the windows; side 0 (a)
 * uses them. */
#include "tr_test.h"

#define STEPS 200000u
#define ALL (UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC)
#define RW (UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ)
#define WIN_OFF 65536u
#define WIN_LEN 16384u

static void open_pair(struct tr_pair *p, uint64_t seed, uint32_t max_wr)
{
	struct tr_opts o;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.mr_access = ALL | UROCE_ACCESS_MW_BIND;
	if (max_wr)
		o.max_wr = max_wr;
	tr_open(p, &o, seed, NULL, NULL);
}

static struct uroce_mw *mw_new(struct tr_side *s)
{
	struct uroce_mw *mw = NULL;

	REQUIRE(uroce_mw_alloc(s->pd, UROCE_MW_TYPE_2, &mw) == 0 && mw, "mw_alloc: %s", uroce_last_error());
	return mw;
}

static void post(struct uroce_qp *qp, struct uroce_send_wr *wr)
{
	REQUIRE(uroce_post_send(qp, wr, NULL) == 0, "post_send: %s", uroce_last_error());
}

static void post_recv(struct tr_side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };

	tr_sge(&sg, s, off, len);
	REQUIRE(uroce_post_recv(s->qp, &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

static bool expect_wc(struct tr_pair *p, struct uroce_cq *cq, uint64_t id, enum uroce_wc_status st,
                      enum uroce_wc_opcode op, const char *what, struct uroce_wc *out)
{
	struct uroce_wc wc;

	if (tr_wait(p, cq, &wc, STEPS)) {
		CHECK(0, "%s: no completion", what);
		return false;
	}
	if (out)
		*out = wc;
	CHECK(wc.wr_id == id, "%s: wr_id %llu want %llu", what, (unsigned long long)wc.wr_id, (unsigned long long)id);
	CHECK(wc.status == st, "%s: status %s want %s", what, uroce_wc_status_str(wc.status), uroce_wc_status_str(st));
	if (st == UROCE_WC_SUCCESS)
		CHECK(wc.opcode == op, "%s: opcode %d want %d", what, wc.opcode, op);
	return wc.wr_id == id && wc.status == st;
}

/* Bind on s's QP and wait for the completion: the window's new key. */
static uint32_t mw_bind_wait(struct tr_pair *p, struct tr_side *s, struct uroce_mw *mw, uint32_t off, uint32_t len,
                     unsigned access)
{
	struct uroce_send_wr wr;

	tr_bind_wr(&wr, s, mw, off, len, access, 900);
	post(s->qp, &wr);
	CHECK(mw->rkey == wr.bind_mw.rkey, "mw->rkey 0x%x after the post, want 0x%x", mw->rkey, wr.bind_mw.rkey);
	expect_wc(p, s->scq, 900, UROCE_WC_SUCCESS, UROCE_WC_BIND_MW, "bind", NULL);
	return wr.bind_mw.rkey;
}

static void inv_wr(struct uroce_send_wr *wr, uint32_t rkey, uint64_t id)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = UROCE_WR_LOCAL_INV;
	wr->send_flags = UROCE_SEND_SIGNALED;
	wr->invalidate_rkey = rkey;
}

/* A WRITE, READ or atomic from a (local offset loff) to b's buffer at roff
 * under rkey; sg must live until it completes (it does: it is copied). */
static void rdma_wr(struct uroce_send_wr *wr, struct uroce_sge *sg, struct tr_side *a, struct tr_side *b,
                    enum uroce_wr_opcode op, uint32_t loff, uint32_t roff, uint32_t rkey, uint32_t len, uint64_t id)
{
	memset(wr, 0, sizeof(*wr));
	tr_sge(sg, a, loff, len);
	wr->wr_id = id;
	wr->opcode = op;
	wr->send_flags = UROCE_SEND_SIGNALED;
	wr->sg_list = sg;
	wr->num_sge = 1;
	if (op == UROCE_WR_ATOMIC_CMP_AND_SWP || op == UROCE_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = (uint64_t)(uintptr_t)(b->buf + roff);
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.compare_add = 3;
	} else {
		wr->wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + roff);
		wr->wr.rdma.rkey = rkey;
	}
}

static enum uroce_qp_state state_of(struct uroce_qp *qp)
{
	struct uroce_qp_attr qa;

	uroce_qp_query(qp, &qa, NULL);
	return qa.qp_state;
}

static bool msg_has(const char *s)
{
	if (strstr(uroce_last_error(), s))
		return true;
	fprintf(stderr, "message \"%s\" lacks \"%s\"\n", uroce_last_error(), s);
	return false;
}

/* A second connected QP pair on the same contexts and PDs, with CQs of its own. */
struct extra {
	struct uroce_cq *cq[2];
	struct uroce_qp *qp[2];
};

static void extra_open(struct tr_pair *p, struct extra *x)
{
	struct uroce_qp *saved[2] = { p->s[0].qp, p->s[1].qp };
	struct uroce_qp_init_attr ia;
	struct tr_opts o;

	tr_opts_default(&o, UROCE_QPT_RC);
	for (int i = 0; i < 2; i++) {
		REQUIRE(uroce_cq_create(p->s[i].ctx, 256, &x->cq[i]) == 0, "cq");
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = UROCE_QPT_RC;
		ia.send_cq = ia.recv_cq = x->cq[i];
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 2;
		REQUIRE(uroce_qp_create(p->s[i].pd, &ia, &x->qp[i]) == 0, "qp: %s", uroce_last_error());
		p->s[i].qp = x->qp[i];
	}
	REQUIRE(tr_connect(p, 0, &o) == 0 && tr_connect(p, 1, &o) == 0, "connect: %s", uroce_last_error());
	p->s[0].qp = saved[0];
	p->s[1].qp = saved[1];
}

static void extra_close(struct extra *x)
{
	for (int i = 0; i < 2; i++) {
		CHECK(uroce_qp_destroy(x->qp[i]) == 0, "qp_destroy");
		CHECK(uroce_cq_destroy(x->cq[i]) == 0, "cq_destroy");
	}
}

/* uroce_mw_alloc / dealloc and every post-time refusal of BIND_MW, each
 * with its message; nothing refused is queued. */
static void test_alloc_and_args(void)
{
	struct tr_pair p;
	struct uroce_mw *mw, *mw2, *bad = (struct uroce_mw *)1;
	struct uroce_pd *pd2;
	struct uroce_mr *plain, *other_pd, *no_atomic;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	uint32_t key0;

	open_pair(&p, 1, 0);
	struct tr_side *b = &p.s[1];

	CHECK(uroce_mw_alloc(NULL, UROCE_MW_TYPE_2, &mw) == -EINVAL && msg_has("pd and out are required"),
	      "alloc without a pd");
	CHECK(uroce_mw_alloc(b->pd, UROCE_MW_TYPE_2, NULL) == -EINVAL && msg_has("pd and out are required"),
	      "alloc without out");
	CHECK(uroce_mw_alloc(b->pd, UROCE_MW_TYPE_1, &bad) == -EINVAL && msg_has("window type 1") &&
	              msg_has("only UROCE_MW_TYPE_2 is accepted"),
	      "type 1 accepted");
	CHECK(uroce_mw_alloc(b->pd, (enum uroce_mw_type)3, &bad) == -EINVAL && msg_has("window type 3"),
	      "type 3 accepted");
	CHECK(bad == (struct uroce_mw *)1, "a refused alloc wrote *out");
	CHECK(uroce_mw_dealloc(NULL) == -EINVAL && msg_has("mw is NULL"), "dealloc(NULL)");
	mw = mw_new(b);
	CHECK(mw->pd == b->pd && mw->type == UROCE_MW_TYPE_2, "window fields");
	CHECK((mw->rkey >> 8) != 0 && (mw->rkey >> 8) != (b->mr->rkey >> 8), "window key 0x%x, region key 0x%x",
	      mw->rkey, b->mr->rkey);
	key0 = mw->rkey;
	CHECK(uroce_mr_reg(b->pd, b->buf, 10, 1 << 5, &plain) == -EINVAL && msg_has("MW_BIND"),
	      "unknown access bit: the message lists MW_BIND");

	REQUIRE(uroce_mr_reg(b->pd, b->buf, 4096, ALL, &plain) == 0, "mr: %s", uroce_last_error());
	REQUIRE(uroce_mr_reg(b->pd, b->buf, 4096, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
	                                                  UROCE_ACCESS_MW_BIND, &no_atomic) == 0, "mr");
	REQUIRE(uroce_pd_alloc(b->ctx, &pd2) == 0, "pd2");
	REQUIRE(uroce_mr_reg(pd2, b->buf, 4096, ALL | UROCE_ACCESS_MW_BIND, &other_pd) == 0, "mr");
	REQUIRE(uroce_mw_alloc(pd2, UROCE_MW_TYPE_2, &mw2) == 0, "mw2: %s", uroce_last_error());

	tr_bind_wr(&wr, b, NULL, 0, 64, RW, 1);
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("BIND_MW needs bind_mw.mw"), "no window");
	tr_bind_wr(&wr, b, mw2, 0, 64, RW, 1);
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("the window is in another PD"),
	      "window of another PD");
	tr_bind_wr(&wr, b, mw, 0, 64, RW, 1);
	wr.bind_mw.rkey ^= 0x100;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("only its low 8 bits changed"),
	      "key of another index");
	wr.bind_mw.rkey = mw->rkey;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("is the window's current key"),
	      "the same key again");
	tr_bind_wr(&wr, b, mw, 0, 64, RW, 1);
	wr.bind_mw.bind_info.mr = NULL;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("needs bind_info.mr"), "no region");
	wr.bind_mw.bind_info.mr = plain;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("without UROCE_ACCESS_MW_BIND"),
	      "region without MW_BIND");
	wr.bind_mw.bind_info.mr = other_pd;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("is in another PD than QP"),
	      "region of another PD");
	tr_bind_wr(&wr, b, mw, TR_BUF - 10, 11, RW, 1);
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("is not inside region"), "past the region");
	tr_bind_wr(&wr, b, mw, 0, 64, RW, 1);
	wr.bind_mw.bind_info.addr -= 1;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("is not inside region"), "before the region");
	tr_bind_wr(&wr, b, mw, 0, 0, RW, 1);
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("accepted: 1 byte or more"), "zero length");
	tr_bind_wr(&wr, b, mw, 0, 64, RW | UROCE_ACCESS_LOCAL_WRITE, 1);
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL &&
	              msg_has("accepted: REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC"),
	      "LOCAL_WRITE in mw_access_flags");
	tr_bind_wr(&wr, b, mw, 0, 64, UROCE_ACCESS_REMOTE_ATOMIC, 1);
	wr.bind_mw.bind_info.mr = no_atomic;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("a subset of the region's access"),
	      "access beyond the region's");
	CHECK(mw->rkey == key0, "a refused bind changed the window's key");

	/* a window's key is no lkey */
	tr_sge(&sg, b, 0, 64);
	sg.lkey = mw->rkey;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = UROCE_WR_SEND;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	CHECK(uroce_post_send(b->qp, &wr, NULL) == -EINVAL && msg_has("names no registered region"),
	      "a window's key taken as an lkey");

	/* nothing was queued: a valid bind is the first completion */
	mw_bind_wait(&p, b, mw, 0, 64, RW);
	CHECK(uroce_mr_dereg(no_atomic) == 0 && uroce_mr_dereg(plain) == 0, "dereg");
	CHECK(uroce_mw_dealloc(mw2) == 0 && uroce_mr_dereg(other_pd) == 0, "dealloc");
	CHECK(uroce_pd_free(pd2) == 0, "pd_free: %s", uroce_last_error());
	CHECK(uroce_pd_free(b->pd) == -EBUSY, "pd freed under its window");
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc: %s", uroce_last_error());
	tr_close(&p);
}

/* UC rejects every new opcode; sr rejects SEND_WITH_INV. */
static void test_other_transports(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_send_wr wr;
	static const enum uroce_wr_opcode ops[] = { UROCE_WR_LOCAL_INV, UROCE_WR_BIND_MW, UROCE_WR_SEND_WITH_INV };

	tr_opts_default(&o, UROCE_QPT_UC);
	tr_open(&p, &o, 2, NULL, NULL);
	for (unsigned i = 0; i < 3; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.opcode = ops[i];
		CHECK(uroce_post_send(p.s[0].qp, &wr, NULL) == -EINVAL && msg_has("is not valid on a UC QP") &&
		              msg_has("accepted: SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM"),
		      "UC took opcode %d", (int)ops[i]);
	}
	tr_close(&p);

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	tr_open(&p, &o, 3, NULL, NULL);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = UROCE_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0x1234;
	CHECK(uroce_post_send(p.s[0].qp, &wr, NULL) == -EINVAL && msg_has("SEND_WITH_INV on a QP with reliability sr"),
	      "sr took SEND_WITH_INV");
	tr_close(&p);
}

/* WRITE, READ and atomics through a bound window land inside it. */
static void test_access_through_window(void)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_mw *mw;
	uint32_t key;
	uint64_t *target;

	open_pair(&p, 4, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	mw = mw_new(b);
	key = mw_bind_wait(&p, b, mw, WIN_OFF, WIN_LEN, RW | UROCE_ACCESS_REMOTE_ATOMIC);
	tr_fill(a->buf, 5000, 1);
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_WRITE, 0, WIN_OFF + 100, key, 5000, 1);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 1, UROCE_WC_SUCCESS, UROCE_WC_RDMA_WRITE, "write through the window", NULL);
	CHECK(memcmp(a->buf, b->buf + WIN_OFF + 100, 5000) == 0, "written data differs");
	/* the whole window, to its last byte */
	tr_fill(b->buf + WIN_OFF, WIN_LEN, 2);
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_READ, 100000, WIN_OFF, key, WIN_LEN, 2);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 2, UROCE_WC_SUCCESS, UROCE_WC_RDMA_READ, "read through the window", NULL);
	CHECK(memcmp(a->buf + 100000, b->buf + WIN_OFF, WIN_LEN) == 0, "read data differs");
	target = (uint64_t *)(void *)(b->buf + WIN_OFF + WIN_LEN - 8);
	*target = 10;
	rdma_wr(&wr, &sg, a, b, UROCE_WR_ATOMIC_FETCH_AND_ADD, 200000, WIN_OFF + WIN_LEN - 8, key, 8, 3);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 3, UROCE_WC_SUCCESS, UROCE_WC_FETCH_ADD, "atomic through the window", NULL);
	CHECK(*target == 13 && *(uint64_t *)(void *)(a->buf + 200000) == 10, "fetch_add: target %llu",
	      (unsigned long long)*target);
	/* the region's own key still works beside the window's */
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_WRITE, 0, 0, b->mr->rkey, 100, 4);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 4, UROCE_WC_SUCCESS, UROCE_WC_RDMA_WRITE, "write with the region's key", NULL);
	CHECK(tr_drops(b->ctx, UROCE_DROP_BAD_RKEY) == 0 && tr_drops(b->ctx, UROCE_DROP_RKEY_REVOKED) == 0, "drops counted");
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);
}

/* A request outside what the window opens: REM_ACCESS_ERR at the
 * requester, both QPs in ERR, one drop of the reason, nothing written. If
 * revoke is set, the window is revoked first by how (LOCAL_INV, rebind,
 * dealloc). */
enum revoke { KEEP, BY_LOCAL_INV, BY_REBIND, BY_DEALLOC };

static void refused(const char *what, unsigned access, enum uroce_wr_opcode op, int64_t off, uint32_t len,
                    enum revoke how, enum uroce_drop_reason reason)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_mw *mw;
	uint32_t key;
	uint8_t *copy = malloc(TR_BUF);

	open_pair(&p, 5, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	mw = mw_new(b);
	key = mw_bind_wait(&p, b, mw, WIN_OFF, WIN_LEN, access);
	if (how != KEEP) {
		/* the key worked before */
		rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_READ, 0, WIN_OFF, key, 64, 50);
		post(a->qp, &wr);
		expect_wc(&p, a->scq, 50, UROCE_WC_SUCCESS, UROCE_WC_RDMA_READ, what, NULL);
	}
	if (how == BY_LOCAL_INV) {
		inv_wr(&wr, key, 51);
		post(b->qp, &wr);
		expect_wc(&p, b->scq, 51, UROCE_WC_SUCCESS, UROCE_WC_LOCAL_INV, what, NULL);
	} else if (how == BY_REBIND) {
		uint32_t key2 = mw_bind_wait(&p, b, mw, WIN_OFF, WIN_LEN, access);

		CHECK(key2 == uroce_inc_rkey(key) && key2 != key, "%s: rebind key 0x%x after 0x%x", what, key2, key);
		/* the new key works */
		rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_READ, 0, WIN_OFF, key2, 64, 52);
		post(a->qp, &wr);
		expect_wc(&p, a->scq, 52, UROCE_WC_SUCCESS, UROCE_WC_RDMA_READ, what, NULL);
	} else if (how == BY_DEALLOC) {
		CHECK(uroce_mw_dealloc(mw) == 0, "%s: dealloc", what);
		mw = NULL;
	}
	tr_fill(a->buf, TR_BUF, 7);
	memcpy(copy, b->buf, TR_BUF);
	rdma_wr(&wr, &sg, a, b, op, 0, (uint32_t)(WIN_OFF + off), key, len, 1);
	post(a->qp, &wr);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 1, UROCE_WC_REM_ACCESS_ERR, 0, what, NULL);
	expect_wc(&p, a->scq, 2, UROCE_WC_WR_FLUSH_ERR, 0, what, NULL);
	CHECK(state_of(a->qp) == UROCE_QPS_ERR && state_of(b->qp) == UROCE_QPS_ERR, "%s: QPs in %s / %s", what,
	      uroce_qp_state_str(state_of(a->qp)), uroce_qp_state_str(state_of(b->qp)));
	CHECK(tr_drops(b->ctx, reason) == 1, "%s: drops[%s] = %llu", what, uroce_drop_reason_name(reason),
	      (unsigned long long)tr_drops(b->ctx, reason));
	if (reason == UROCE_DROP_RKEY_REVOKED)
		CHECK(tr_drops(b->ctx, UROCE_DROP_BAD_RKEY) == 0, "%s: counted as bad_rkey too", what);
	CHECK(memcmp(copy, b->buf, TR_BUF) == 0, "%s: the responder's memory changed", what);
	if (mw)
		CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	free(copy);
	tr_close(&p);
}

static void test_refusals(void)
{
	refused("write past the window", RW, UROCE_WR_RDMA_WRITE, WIN_LEN - 100, 101, KEEP, UROCE_DROP_OUT_OF_BOUNDS);
	refused("write before the window", RW, UROCE_WR_RDMA_WRITE, -1, 100, KEEP, UROCE_DROP_OUT_OF_BOUNDS);
	refused("read past the window", RW, UROCE_WR_RDMA_READ, 0, WIN_LEN + 1, KEEP, UROCE_DROP_OUT_OF_BOUNDS);
	refused("write to a read-only window", UROCE_ACCESS_REMOTE_READ, UROCE_WR_RDMA_WRITE, 0, 100, KEEP,
	        UROCE_DROP_ACCESS_DENIED);
	refused("read of a write-only window", UROCE_ACCESS_REMOTE_WRITE, UROCE_WR_RDMA_READ, 0, 100, KEEP,
	        UROCE_DROP_ACCESS_DENIED);
	refused("atomic without REMOTE_ATOMIC on the window", RW, UROCE_WR_ATOMIC_FETCH_AND_ADD, 64, 8, KEEP,
	        UROCE_DROP_ACCESS_DENIED);
	refused("write after LOCAL_INV", RW, UROCE_WR_RDMA_WRITE, 0, 3000, BY_LOCAL_INV, UROCE_DROP_RKEY_REVOKED);
	refused("read after LOCAL_INV", RW, UROCE_WR_RDMA_READ, 0, 3000, BY_LOCAL_INV, UROCE_DROP_RKEY_REVOKED);
	refused("atomic after LOCAL_INV", RW | UROCE_ACCESS_REMOTE_ATOMIC, UROCE_WR_ATOMIC_CMP_AND_SWP, 64, 8,
	        BY_LOCAL_INV, UROCE_DROP_RKEY_REVOKED);
	refused("write with the key before a rebind", RW, UROCE_WR_RDMA_WRITE, 0, 100, BY_REBIND,
	        UROCE_DROP_RKEY_REVOKED);
	refused("write after dealloc", RW, UROCE_WR_RDMA_WRITE, 0, 100, BY_DEALLOC, UROCE_DROP_RKEY_REVOKED);
}

/* A window bound through QP b1 opens nothing to the peer of b2 (same
 * PD), and b2 cannot rebind it; b1's peer goes on using it. */
static void test_other_qp(void)
{
	struct tr_pair p;
	struct extra x;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_mw *mw;
	uint32_t key;

	open_pair(&p, 6, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	extra_open(&p, &x);
	mw = mw_new(b);
	key = mw_bind_wait(&p, b, mw, WIN_OFF, WIN_LEN, RW);
	/* a2 -> b2 with the key of b1's window */
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_WRITE, 0, WIN_OFF, key, 100, 1);
	post(x.qp[0], &wr);
	expect_wc(&p, x.cq[0], 1, UROCE_WC_REM_ACCESS_ERR, 0, "write through another QP", NULL);
	CHECK(tr_drops(b->ctx, UROCE_DROP_BAD_RKEY) == 1 && tr_drops(b->ctx, UROCE_DROP_RKEY_REVOKED) == 0,
	      "bad_rkey %llu rkey_revoked %llu", (unsigned long long)tr_drops(b->ctx, UROCE_DROP_BAD_RKEY),
	      (unsigned long long)tr_drops(b->ctx, UROCE_DROP_RKEY_REVOKED));
	CHECK(state_of(x.qp[1]) == UROCE_QPS_ERR, "b2 in %s", uroce_qp_state_str(state_of(x.qp[1])));
	/* b1's peer: still open */
	tr_fill(a->buf, 100, 3);
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_WRITE, 0, WIN_OFF, key, 100, 2);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 2, UROCE_WC_SUCCESS, UROCE_WC_RDMA_WRITE, "write through the window's QP", NULL);
	CHECK(memcmp(a->buf, b->buf + WIN_OFF, 100) == 0, "data");
	extra_close(&x);

	/* a bind of b1's window posted on b2: MW_BIND_ERR, b2 in ERR, the window untouched */
	extra_open(&p, &x);
	tr_bind_wr(&wr, b, mw, 0, 64, RW, 3);
	post(x.qp[1], &wr);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	post(x.qp[1], &wr);
	expect_wc(&p, x.cq[1], 3, UROCE_WC_MW_BIND_ERR, 0, "bind of another QP's window", &wc);
	expect_wc(&p, x.cq[1], 4, UROCE_WC_WR_FLUSH_ERR, 0, "after a failed bind", NULL);
	CHECK(state_of(x.qp[1]) == UROCE_QPS_ERR, "b2 in %s", uroce_qp_state_str(state_of(x.qp[1])));
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_WRITE, 0, WIN_OFF, key, 100, 5);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 5, UROCE_WC_SUCCESS, UROCE_WC_RDMA_WRITE, "the old key after the refused bind", NULL);
	extra_close(&x);
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);
}

/* SEND with Invalidate: one packet and three; the receive says WITH_INV
 * and the key, which is revoked from then on. */
static void test_send_with_inv(void)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_mw *mw[2];
	uint32_t key[2];
	const uint32_t len[2] = { 100, 3000 };

	open_pair(&p, 7, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	for (int i = 0; i < 2; i++) {
		mw[i] = mw_new(b);
		key[i] = mw_bind_wait(&p, b, mw[i], WIN_OFF + (uint32_t)i * WIN_LEN, WIN_LEN, RW);
	}
	for (int i = 0; i < 2; i++) {
		post_recv(b, 10 + (uint64_t)i, 300000, 8192);
		tr_fill(a->buf, len[i], (uint32_t)i);
		memset(&wr, 0, sizeof(wr));
		tr_sge(&sg, a, 0, len[i]);
		wr.wr_id = 20 + (uint64_t)i;
		wr.opcode = UROCE_WR_SEND_WITH_INV;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.invalidate_rkey = key[i];
		wr.sg_list = &sg;
		wr.num_sge = 1;
		post(a->qp, &wr);
		expect_wc(&p, a->scq, 20 + (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_SEND, "send_with_inv", NULL);
		if (expect_wc(&p, b->rcq, 10 + (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_RECV, "recv with inv", &wc)) {
			CHECK(wc.wc_flags & UROCE_WC_WITH_INV, "no WITH_INV flag (0x%x)", wc.wc_flags);
			CHECK(!(wc.wc_flags & UROCE_WC_WITH_IMM), "WITH_IMM on a SEND with Invalidate");
			CHECK(wc.invalidated_rkey == key[i], "invalidated_rkey 0x%x want 0x%x", wc.invalidated_rkey, key[i]);
			CHECK(wc.byte_len == len[i], "byte_len %u want %u", wc.byte_len, len[i]);
			CHECK(memcmp(a->buf, b->buf + 300000, len[i]) == 0, "data");
		}
	}
	/* window 1 is revoked: a READ with its key is refused as rkey_revoked */
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_READ, 0, WIN_OFF + WIN_LEN, key[1], 64, 30);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 30, UROCE_WC_REM_ACCESS_ERR, 0, "read after remote invalidation", NULL);
	CHECK(tr_drops(b->ctx, UROCE_DROP_RKEY_REVOKED) == 1, "rkey_revoked %llu",
	      (unsigned long long)tr_drops(b->ctx, UROCE_DROP_RKEY_REVOKED));
	CHECK(state_of(b->qp) == UROCE_QPS_ERR, "b in %s", uroce_qp_state_str(state_of(b->qp)));
	/* the region under both windows is free again */
	CHECK(uroce_mr_dereg(b->mr) == 0, "dereg after remote invalidation: %s", uroce_last_error());
	REQUIRE(uroce_mr_reg(b->pd, b->buf, TR_BUF, ALL, &b->mr) == 0, "mr");
	for (int i = 0; i < 2; i++)
		CHECK(uroce_mw_dealloc(mw[i]) == 0, "dealloc");
	tr_close(&p);
}

/* A SEND with Invalidate naming what is not a window bound to the QP:
 * the receive completes in error, NAK invalid request, both QPs in ERR. */
static void inv_refused(const char *what, bool region_key, enum uroce_drop_reason reason)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_mw *mw;
	uint32_t key;

	open_pair(&p, 8, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	mw = mw_new(b);
	key = region_key ? b->mr->rkey : uroce_inc_rkey(mw->rkey); /* a window never bound */
	post_recv(b, 10, 0, 4096);
	memset(&wr, 0, sizeof(wr));
	tr_sge(&sg, a, 0, 200);
	wr.wr_id = 1;
	wr.opcode = UROCE_WR_SEND_WITH_INV;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 1, UROCE_WC_REM_INV_REQ_ERR, 0, what, NULL);
	expect_wc(&p, b->rcq, 10, UROCE_WC_REM_INV_REQ_ERR, 0, what, NULL);
	CHECK(tr_drops(b->ctx, reason) == 1, "%s: drops[%s] = %llu", what, uroce_drop_reason_name(reason),
	      (unsigned long long)tr_drops(b->ctx, reason));
	CHECK(state_of(a->qp) == UROCE_QPS_ERR && state_of(b->qp) == UROCE_QPS_ERR, "%s: QPs not in ERR", what);
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);
}

static bool drop_all(void *arg, const uint8_t *frame, uint32_t len)
{
	(void)frame;
	(void)len;
	return *(const bool *)arg;
}

/* The ACK of a SEND with Invalidate is lost: the requester sends it again
 * and the responder, which invalidated on the first copy, answers the
 * duplicate without a second invalidation or an error. */
static void test_inv_duplicate(void)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	struct uroce_mw *mw;
	uint32_t key;
	bool drop = true;
	unsigned i;

	open_pair(&p, 9, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	mw = mw_new(b);
	key = mw_bind_wait(&p, b, mw, WIN_OFF, WIN_LEN, RW);
	post_recv(b, 10, 0, 8192);
	post_recv(b, 11, 0, 8192);
	REQUIRE(loop_fabric_set_filter(p.fab, 1, drop_all, &drop) == 0, "filter");
	memset(&wr, 0, sizeof(wr));
	tr_sge(&sg, a, 0, 2500);
	wr.wr_id = 1;
	wr.opcode = UROCE_WR_SEND_WITH_INV;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	post(a->qp, &wr);
	for (i = 0; i < STEPS; i++) {
		uroce_qp_stats(b->qp, &qs);
		if (qs.duplicates >= 3) /* the whole message came again */
			break;
		tr_step(&p);
	}
	CHECK(i < STEPS, "no retransmission reached the responder");
	drop = false;
	expect_wc(&p, a->scq, 1, UROCE_WC_SUCCESS, UROCE_WC_SEND, "send_with_inv, ACK lost once", NULL);
	if (expect_wc(&p, b->rcq, 10, UROCE_WC_SUCCESS, UROCE_WC_RECV, "recv", &wc))
		CHECK((wc.wc_flags & UROCE_WC_WITH_INV) && wc.invalidated_rkey == key, "recv flags 0x%x key 0x%x",
		      wc.wc_flags, wc.invalidated_rkey);
	for (i = 0; i < 100; i++)
		tr_step(&p);
	CHECK(uroce_poll_cq(b->rcq, 1, &wc) == 0, "a second receive completed (wr %llu)", (unsigned long long)wc.wr_id);
	CHECK(state_of(b->qp) == UROCE_QPS_RTS && state_of(a->qp) == UROCE_QPS_RTS, "QPs left RTS");
	CHECK(tr_drops(b->ctx, UROCE_DROP_RKEY_REVOKED) == 0 && tr_drops(b->ctx, UROCE_DROP_DUPLICATE) >= 3,
	      "rkey_revoked %llu duplicate %llu", (unsigned long long)tr_drops(b->ctx, UROCE_DROP_RKEY_REVOKED),
	      (unsigned long long)tr_drops(b->ctx, UROCE_DROP_DUPLICATE));
	/* revoked once and for all */
	key = mw_bind_wait(&p, b, mw, WIN_OFF, WIN_LEN, RW);
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_WRITE, 0, WIN_OFF, key, 100, 2);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 2, UROCE_WC_SUCCESS, UROCE_WC_RDMA_WRITE, "write after a rebind", NULL);
	inv_wr(&wr, key, 3);
	post(b->qp, &wr);
	expect_wc(&p, b->scq, 3, UROCE_WC_SUCCESS, UROCE_WC_LOCAL_INV, "local_inv", NULL);
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);
}

/* uroce_mr_dereg is -EBUSY while a window is bound to the region; after
 * LOCAL_INV, a rebind to another region or dealloc it goes through. */
static void test_dereg_busy(void)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_mr *mr2, *mr3;
	struct uroce_mw *mw;
	uint32_t key;

	open_pair(&p, 10, 0);
	struct tr_side *b = &p.s[1];

	REQUIRE(uroce_mr_reg(b->pd, b->buf, 8192, ALL | UROCE_ACCESS_MW_BIND, &mr2) == 0, "mr2");
	REQUIRE(uroce_mr_reg(b->pd, b->buf + 8192, 8192, ALL | UROCE_ACCESS_MW_BIND, &mr3) == 0, "mr3");
	mw = mw_new(b);
	tr_bind_wr(&wr, b, mw, 0, 4096, RW, 1);
	wr.bind_mw.bind_info.mr = mr2;
	post(b->qp, &wr);
	expect_wc(&p, b->scq, 1, UROCE_WC_SUCCESS, UROCE_WC_BIND_MW, "bind to mr2", NULL);
	key = wr.bind_mw.rkey;
	CHECK(uroce_mr_dereg(mr2) == -EBUSY && msg_has("1 memory window(s) are bound to the region"),
	      "dereg of a region under a window");
	inv_wr(&wr, key, 2);
	post(b->qp, &wr);
	expect_wc(&p, b->scq, 2, UROCE_WC_SUCCESS, UROCE_WC_LOCAL_INV, "local_inv", NULL);
	CHECK(uroce_mr_dereg(mr2) == 0, "dereg after LOCAL_INV: %s", uroce_last_error());

	tr_bind_wr(&wr, b, mw, 8192, 4096, RW, 3);
	wr.bind_mw.bind_info.mr = mr3;
	post(b->qp, &wr);
	expect_wc(&p, b->scq, 3, UROCE_WC_SUCCESS, UROCE_WC_BIND_MW, "bind to mr3", NULL);
	mw_bind_wait(&p, b, mw, 0, 4096, RW); /* rebound to b->mr: mr3 is free */
	CHECK(uroce_mr_dereg(mr3) == 0, "dereg after a rebind elsewhere: %s", uroce_last_error());
	CHECK(uroce_mr_dereg(b->mr) == -EBUSY, "dereg of the region now under the window");
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p); /* deregisters b->mr: dealloc freed it */
}

/* Failures when a local WR is carried out: LOCAL_INV of a window that is
 * not valid (LOC_PROT_ERR) and BIND_MW of a window deallocated after the
 * post (MW_BIND_ERR); the WRs after them flush, the QP is in ERR. */
static void test_local_errors(void)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_mw *mw;
	struct tr_side *b;

	open_pair(&p, 11, 0);
	b = &p.s[1];
	mw = mw_new(b);
	inv_wr(&wr, uroce_inc_rkey(mw->rkey), 1);
	post(b->qp, &wr);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	post(b->qp, &wr);
	expect_wc(&p, b->scq, 1, UROCE_WC_LOC_PROT_ERR, 0, "LOCAL_INV of an invalid window", NULL);
	expect_wc(&p, b->scq, 2, UROCE_WC_WR_FLUSH_ERR, 0, "after a failed LOCAL_INV", NULL);
	CHECK(state_of(b->qp) == UROCE_QPS_ERR, "b in %s", uroce_qp_state_str(state_of(b->qp)));
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);

	open_pair(&p, 12, 0);
	b = &p.s[1];
	mw = mw_new(b);
	tr_bind_wr(&wr, b, mw, 0, 64, RW, 1);
	post(b->qp, &wr); /* carried out at the next progress: after the dealloc */
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	post(b->qp, &wr);
	expect_wc(&p, b->scq, 1, UROCE_WC_MW_BIND_ERR, 0, "BIND_MW of a deallocated window", NULL);
	expect_wc(&p, b->scq, 2, UROCE_WC_WR_FLUSH_ERR, 0, "after a failed BIND_MW", NULL);
	CHECK(state_of(b->qp) == UROCE_QPS_ERR, "b in %s", uroce_qp_state_str(state_of(b->qp)));
	tr_close(&p);
}

/* Binds and invalidations complete in send-queue order among SENDs,
 * WRITEs, READs and atomics that wait for their ACKs and responses (an
 * unsignaled one completes silently). */
static void test_order(void)
{
	static const enum uroce_wc_opcode want_op[] = {
		UROCE_WC_SEND, UROCE_WC_BIND_MW, UROCE_WC_RDMA_WRITE, UROCE_WC_RDMA_READ, UROCE_WC_LOCAL_INV,
		UROCE_WC_FETCH_ADD, UROCE_WC_BIND_MW, UROCE_WC_SEND,
	};
	static const uint64_t want_id[] = { 1, 2, 3, 4, 5, 7, 8, 9 };
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_mw *mw;
	uint32_t key2, key8;
	char what[64];

	open_pair(&p, 13, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	mw = mw_new(b);
	post_recv(a, 50, 0, 8192);
	post_recv(a, 51, 0, 8192);
	rdma_wr(&wr, &sg, b, a, UROCE_WR_SEND, 0, 0, 0, 3000, 1);
	post(b->qp, &wr);
	tr_bind_wr(&wr, b, mw, WIN_OFF, WIN_LEN, RW, 2);
	key2 = wr.bind_mw.rkey;
	post(b->qp, &wr);
	rdma_wr(&wr, &sg, b, a, UROCE_WR_RDMA_WRITE, 0, 100000, a->mr->rkey, 5000, 3);
	post(b->qp, &wr);
	rdma_wr(&wr, &sg, b, a, UROCE_WR_RDMA_READ, 200000, 100000, a->mr->rkey, 20000, 4);
	post(b->qp, &wr);
	inv_wr(&wr, key2, 5);
	post(b->qp, &wr);
	tr_bind_wr(&wr, b, mw, WIN_OFF, WIN_LEN, RW, 6);
	wr.send_flags = 0;
	post(b->qp, &wr);
	rdma_wr(&wr, &sg, b, a, UROCE_WR_ATOMIC_FETCH_AND_ADD, 300000, 400000, a->mr->rkey, 8, 7);
	post(b->qp, &wr);
	tr_bind_wr(&wr, b, mw, WIN_OFF, WIN_LEN, RW, 8);
	key8 = wr.bind_mw.rkey;
	post(b->qp, &wr);
	rdma_wr(&wr, &sg, b, a, UROCE_WR_SEND, 0, 0, 0, 100, 9);
	post(b->qp, &wr);
	for (unsigned i = 0; i < sizeof(want_id) / sizeof(want_id[0]); i++) {
		snprintf(what, sizeof(what), "completion %u", i);
		expect_wc(&p, b->scq, want_id[i], UROCE_WC_SUCCESS, want_op[i], what, NULL);
	}
	CHECK(key8 == uroce_inc_rkey(uroce_inc_rkey(key2)) && mw->rkey == key8, "keys 0x%x 0x%x 0x%x", key2, key8,
	      mw->rkey);
	/* the window ends bound under the last key */
	tr_fill(a->buf, 100, 9);
	rdma_wr(&wr, &sg, a, b, UROCE_WR_RDMA_WRITE, 0, WIN_OFF, key8, 100, 10);
	post(a->qp, &wr);
	expect_wc(&p, a->scq, 10, UROCE_WC_SUCCESS, UROCE_WC_RDMA_WRITE, "write with the last key", NULL);
	CHECK(memcmp(a->buf, b->buf + WIN_OFF, 100) == 0, "data");
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);
}

/* A local WR takes an SQ slot but no message number: 320 of them among 20
 * SENDs to a peer with exactly 20 receives must neither stall the SENDs on
 * credits nor send beyond them (no RNR NAK). */
static void test_credits(void)
{
	struct tr_pair p;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	struct uroce_mw *mw;
	char what[64];

	open_pair(&p, 14, 1024);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	mw = mw_new(b);
	for (unsigned i = 0; i < 20; i++)
		post_recv(a, 1000 + i, 4096 * i, 4096);
	for (unsigned i = 0; i < 20; i++) {
		for (unsigned k = 0; k < 8; k++) {
			uint32_t key;

			tr_bind_wr(&wr, b, mw, WIN_OFF, WIN_LEN, RW, 0);
			wr.send_flags = 0;
			key = wr.bind_mw.rkey;
			post(b->qp, &wr);
			inv_wr(&wr, key, 0);
			wr.send_flags = 0;
			post(b->qp, &wr);
		}
		rdma_wr(&wr, &sg, b, a, UROCE_WR_SEND, 0, 0, 0, 1000, 100 + i);
		post(b->qp, &wr);
	}
	for (unsigned i = 0; i < 20; i++) {
		snprintf(what, sizeof(what), "send %u after 16 local WRs", i);
		expect_wc(&p, b->scq, 100 + i, UROCE_WC_SUCCESS, UROCE_WC_SEND, what, NULL);
		snprintf(what, sizeof(what), "recv %u", i);
		expect_wc(&p, a->rcq, 1000 + i, UROCE_WC_SUCCESS, UROCE_WC_RECV, what, &wc);
	}
	uroce_qp_stats(b->qp, &qs);
	CHECK(qs.rnr_naks_rcvd == 0, "%llu RNR NAKs: sent beyond the credits", (unsigned long long)qs.rnr_naks_rcvd);
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);
}

/* After a RESET the SQ and the message numbers start equal again: the
 * local WRs of the QP's earlier life must not let it send beyond the
 * credits of its new one (SENDs past them would reach the peer as
 * psn_out_of_window behind an RNR NAK). */
static void test_reset_credits(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_qp_attr qa = { .qp_state = UROCE_QPS_RESET };
	struct uroce_mw *mw;
	uint64_t ooo;
	char what[64];

	open_pair(&p, 15, 0);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	mw = mw_new(b);
	for (unsigned k = 0; k < 20; k++) {
		uint32_t key;

		tr_bind_wr(&wr, b, mw, WIN_OFF, WIN_LEN, RW, 0);
		wr.send_flags = 0;
		key = wr.bind_mw.rkey;
		post(b->qp, &wr);
		inv_wr(&wr, key, 1);
		wr.send_flags = k == 19 ? UROCE_SEND_SIGNALED : 0;
		post(b->qp, &wr);
	}
	expect_wc(&p, b->scq, 1, UROCE_WC_SUCCESS, UROCE_WC_LOCAL_INV, "40 local WRs", NULL);
	for (int i = 0; i < 2; i++)
		REQUIRE(uroce_qp_modify(p.s[i].qp, &qa, UROCE_QP_STATE) == 0, "reset: %s", uroce_last_error());
	tr_opts_default(&o, UROCE_QPT_RC);
	REQUIRE(tr_connect(&p, 0, &o) == 0 && tr_connect(&p, 1, &o) == 0, "reconnect: %s", uroce_last_error());
	ooo = tr_drops(a->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
	post_recv(a, 1000, 0, 4096);
	post_recv(a, 1001, 4096, 4096);
	for (unsigned i = 0; i < 4; i++) {
		rdma_wr(&wr, &sg, b, a, UROCE_WR_SEND, 0, 0, 0, 500, 100 + i);
		post(b->qp, &wr);
	}
	for (unsigned i = 0; i < 2; i++) {
		snprintf(what, sizeof(what), "send %u within the credits", i);
		expect_wc(&p, b->scq, 100 + i, UROCE_WC_SUCCESS, UROCE_WC_SEND, what, NULL);
		expect_wc(&p, a->rcq, 1000 + i, UROCE_WC_SUCCESS, UROCE_WC_RECV, what, &wc);
	}
	for (unsigned i = 0; i < 2000; i++)
		tr_step(&p); /* the third probes (RNR NAKs), the fourth waits */
	CHECK(tr_drops(a->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) == ooo, "%llu SENDs beyond the credits after the RESET",
	      (unsigned long long)(tr_drops(a->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) - ooo));
	post_recv(a, 1002, 0, 4096);
	post_recv(a, 1003, 4096, 4096);
	for (unsigned i = 2; i < 4; i++) {
		snprintf(what, sizeof(what), "send %u once receives are posted", i);
		expect_wc(&p, b->scq, 100 + i, UROCE_WC_SUCCESS, UROCE_WC_SEND, what, NULL);
		expect_wc(&p, a->rcq, 1000 + i, UROCE_WC_SUCCESS, UROCE_WC_RECV, what, &wc);
	}
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc");
	tr_close(&p);
}

/* DEDICATED mode: alloc, dealloc, mr_dereg and the posts run on an app
 * thread, the binds on the engine's: a WRITE through the window works, and
 * after LOCAL_INV the same WRITE is refused as rkey_revoked. */
static bool ded_wait(struct uroce_cq *cq, struct uroce_wc *wc)
{
	uint64_t t0 = test_mono_ns();

	while (test_mono_ns() - t0 < TEST_HANG_NS)
		if (uroce_poll_cq(cq, 1, wc) == 1)
			return true;
	return false;
}

static void test_dedicated(void)
{
	struct loop_fabric_opts fo = { .nports = 1, .seed = 22, .real_time = true };
	struct uroce_context_attr ca = { .port = "loop:0", .mode = UROCE_ENGINE_DEDICATED, .engine_cpu = -1 };
	struct uroce_port_attr pa;
	struct loop_fabric *fab;
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_mr *mr;
	struct uroce_mw *mw;
	struct uroce_cq *cq[2];
	struct uroce_qp *qp[2];
	struct uroce_send_wr wr;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_port_stats st;
	uint8_t *buf = aligned_alloc(4096, 65536);
	char err[256];
	uint32_t key;

	REQUIRE(buf, "buf");
	memset(buf, 0, 65536);
	fab = loop_fabric_create_opts(&fo, err, sizeof(err));
	REQUIRE(fab && loop_fabric_connect(fab, 0, 0, NULL, NULL) == 0, "fabric: %s", err);
	ca.loop_fabric = fab;
	REQUIRE(uroce_context_create(&ctx, &ca) == 0, "context: %s", uroce_last_error());
	REQUIRE(uroce_pd_alloc(ctx, &pd) == 0, "pd");
	REQUIRE(uroce_mr_reg(pd, buf, 65536, ALL | UROCE_ACCESS_MW_BIND, &mr) == 0, "mr: %s", uroce_last_error());
	uroce_query_port(ctx, 1, &pa);
	for (int i = 0; i < 2; i++) {
		struct uroce_qp_init_attr ia = { .qp_type = UROCE_QPT_RC };

		REQUIRE(uroce_cq_create(ctx, 64, &cq[i]) == 0, "cq");
		ia.send_cq = ia.recv_cq = cq[i];
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		REQUIRE(uroce_qp_create(pd, &ia, &qp[i]) == 0, "qp: %s", uroce_last_error());
	}
	for (int i = 0; i < 2; i++) {
		struct uroce_qp_attr qa = { .qp_state = UROCE_QPS_INIT, .port_num = 1, .qp_access_flags = ALL };

		REQUIRE(uroce_qp_modify(qp[i], &qa, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
		                                            UROCE_QP_ACCESS_FLAGS) == 0, "init: %s", uroce_last_error());
		qa.qp_state = UROCE_QPS_RTR;
		qa.path_mtu = UROCE_MTU_1024;
		qa.dest_qp_num = uroce_qp_num(qp[!i]);
		qa.dest_token = uroce_qp_token(qp[!i]);
		qa.max_dest_rd_atomic = 4;
		memcpy(qa.ah_attr.dgid, pa.gid, 16);
		qa.ah_attr.sgid_index = 1;
		REQUIRE(uroce_qp_modify(qp[i], &qa, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
		                                            UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC |
		                                            UROCE_QP_MIN_RNR_TIMER) == 0, "rtr: %s", uroce_last_error());
		qa.qp_state = UROCE_QPS_RTS;
		qa.timeout = 8;
		qa.retry_cnt = 7;
		qa.rnr_retry = 7;
		qa.max_rd_atomic = 4;
		REQUIRE(uroce_qp_modify(qp[i], &qa, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
		                                            UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
		                                            UROCE_QP_MAX_QP_RD_ATOMIC) == 0, "rts: %s", uroce_last_error());
	}
	CHECK(uroce_mw_alloc(pd, UROCE_MW_TYPE_1, &mw) == -EINVAL && msg_has("only UROCE_MW_TYPE_2"), "type 1");
	REQUIRE(uroce_mw_alloc(pd, UROCE_MW_TYPE_2, &mw) == 0, "mw_alloc: %s", uroce_last_error());
	/* qp[1] binds [32768, +4096); qp[0] writes through it */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = UROCE_WR_BIND_MW;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = key = uroce_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)(buf + 32768);
	wr.bind_mw.bind_info.length = 4096;
	wr.bind_mw.bind_info.mw_access_flags = UROCE_ACCESS_REMOTE_WRITE;
	post(qp[1], &wr);
	CHECK(ded_wait(cq[1], &wc) && wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS && wc.opcode == UROCE_WC_BIND_MW,
	      "bind: status %s", uroce_wc_status_str(wc.status));
	CHECK(uroce_mr_dereg(mr) == -EBUSY && msg_has("bound to the region"), "dereg under a window");
	tr_fill(buf, 1000, 4);
	memset(&wr, 0, sizeof(wr));
	sg = (struct uroce_sge){ (uint64_t)(uintptr_t)buf, 1000, mr->lkey };
	wr.wr_id = 2;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(buf + 32768);
	wr.wr.rdma.rkey = key;
	post(qp[0], &wr);
	CHECK(ded_wait(cq[0], &wc) && wc.wr_id == 2 && wc.status == UROCE_WC_SUCCESS, "write: status %s",
	      uroce_wc_status_str(wc.status));
	CHECK(memcmp(buf, buf + 32768, 1000) == 0, "data");
	inv_wr(&wr, key, 3);
	post(qp[1], &wr);
	CHECK(ded_wait(cq[1], &wc) && wc.wr_id == 3 && wc.status == UROCE_WC_SUCCESS && wc.opcode == UROCE_WC_LOCAL_INV,
	      "local_inv: status %s", uroce_wc_status_str(wc.status));
	tr_wr(&wr, 4, &sg, UROCE_WR_RDMA_WRITE);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(buf + 32768);
	wr.wr.rdma.rkey = key;
	post(qp[0], &wr);
	CHECK(ded_wait(cq[0], &wc) && wc.wr_id == 4 && wc.status == UROCE_WC_REM_ACCESS_ERR, "revoked write: status %s",
	      uroce_wc_status_str(wc.status));
	uroce_port_stats(ctx, 1, &st);
	CHECK(st.drops[UROCE_DROP_RKEY_REVOKED] == 1, "rkey_revoked %llu",
	      (unsigned long long)st.drops[UROCE_DROP_RKEY_REVOKED]);
	CHECK(uroce_mw_dealloc(mw) == 0, "dealloc: %s", uroce_last_error());
	for (int i = 0; i < 2; i++)
		CHECK(uroce_qp_destroy(qp[i]) == 0 && uroce_cq_destroy(cq[i]) == 0, "destroy");
	CHECK(uroce_mr_dereg(mr) == 0 && uroce_pd_free(pd) == 0, "dereg: %s", uroce_last_error());
	CHECK(uroce_context_destroy(ctx) == 0, "ctx: %s", uroce_last_error());
	loop_fabric_destroy(fab);
	free(buf);
}

int main(void)
{
	test_alloc_and_args();
	test_other_transports();
	test_access_through_window();
	test_refusals();
	test_other_qp();
	test_send_with_inv();
	inv_refused("SEND_WITH_INV of a region's key", true, UROCE_DROP_ACCESS_DENIED);
	inv_refused("SEND_WITH_INV of a window never bound", false, UROCE_DROP_RKEY_REVOKED);
	test_inv_duplicate();
	test_dereg_busy();
	test_local_errors();
	test_order();
	test_credits();
	test_reset_credits();
	test_dedicated();
	return test_done("transport_mw");
}
