/* SPDX-License-Identifier: MIT */
/* QP numbers are drawn at random from the 24-bit space, so an off-path
 * host has to guess them: many QPs (rc, and sr/ec/be and rc with backups,
 * which take QPN + 1 for control) are created and destroyed in rounds and
 * after each round every number is checked: never 0, 1 or 0xffffff,
 * unique with its control QPN, spread over the space, found by the
 * context's lookup and nothing else found; a destroyed QP's numbers find
 * nothing. The table's probing past removed keys is checked on its own
 * with keys made to collide, and traffic flows on a pair whose context
 * holds thousands of other QPs. */
#include "tr_test.h"
#include "transport/core/qp_internal.h"

#define NQP 3000u
#define ROUNDS 6u

struct live {
	struct uroce_qp *qp;
	uint32_t qpn, span;
};

static struct live L[NQP];
static uint32_t nlive;
static uint32_t gone[NQP * ROUNDS * 2]; /* numbers of destroyed QPs */
static uint32_t ngone;

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void create_one(struct uroce_context *ctx, struct uroce_pd *pd, struct uroce_cq *cq, struct test_rng *rng)
{
	struct uroce_qp_init_attr ia;
	unsigned kind = (unsigned)test_rng_below(rng, 5);
	struct live *l = &L[nlive];

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (kind == 1)
		ia.rel.reliability = UROCE_REL_SR;
	else if (kind == 2)
		ia.rel.reliability = UROCE_REL_EC;
	else if (kind == 3)
		ia.rel.reliability = UROCE_REL_BE;
	else if (kind == 4)
		ia.failover.nbackups = 1; /* rc with a backup: a control QPN too */
	REQUIRE(uroce_qp_create(pd, &ia, &l->qp) == 0, "qp_create kind %u: %s", kind, uroce_last_error());
	l->qpn = uroce_qp_num(l->qp);
	l->span = kind ? 2 : 1;
	nlive++;
}

static void destroy_at(struct uroce_context *ctx, uint32_t k)
{
	struct live *l = &L[k];

	(void)ctx;
	gone[ngone++] = l->qpn;
	if (l->span == 2)
		gone[ngone++] = l->qpn + 1;
	REQUIRE(uroce_qp_destroy(l->qp) == 0, "qp_destroy: %s", uroce_last_error());
	*l = L[--nlive];
}

/* Every live number valid, unique, spread, found; nothing else found. */
static void check_numbers(struct uroce_context *ctx, struct test_rng *rng, unsigned round)
{
	static uint32_t nums[NQP * 2];
	uint32_t n = 0, buckets[16] = { 0 }, empty = 0, high = 0;

	for (uint32_t k = 0; k < nlive; k++) {
		const struct live *l = &L[k];

		CHECK(l->qpn >= 2 && l->qpn + l->span - 1 <= 0xfffffe, "round %u: QPN 0x%x span %u outside 2..0xfffffe",
		      round, l->qpn, l->span);
		CHECK(l->qp->ctrl_qpn == (l->span == 2 ? l->qpn + 1 : 0), "round %u: QP 0x%x control QPN 0x%x", round,
		      l->qpn, l->qp->ctrl_qpn);
		for (uint32_t i = 0; i < l->span; i++) {
			CHECK(qpt_get(&ctx->qpt, l->qpn + i) == l->qp, "round %u: 0x%x does not find its QP", round,
			      l->qpn + i);
			nums[n++] = l->qpn + i;
		}
		buckets[l->qpn >> 20]++;
		high += l->qpn > 0xffff;
	}
	qsort(nums, n, sizeof(nums[0]), cmp_u32);
	for (uint32_t i = 1; i < n; i++)
		CHECK(nums[i] != nums[i - 1], "round %u: number 0x%x taken twice", round, nums[i]);
	/* sequential numbering from 0x11 stays below 0x10000 and in bucket 0;
	 * uniform draws leave no 1/16 of the space empty with 3000 QPs (odds
	 * 16 * (15/16)^1500 for the smallest round) */
	for (unsigned b = 0; b < 16; b++)
		empty += !buckets[b];
	CHECK(!empty, "round %u: %u of 16 ranges of the QPN space hold no QP (%u QPs)", round, empty, nlive);
	CHECK(high > nlive * 9 / 10, "round %u: only %u of %u QPNs above 0xffff", round, high, nlive);
	CHECK(ctx->qpt.nlive == nlive, "round %u: the table walks %u QPs, %u live", round, ctx->qpt.nlive, nlive);
	for (uint32_t i = 0; i < ctx->qpt.nlive; i++)
		CHECK(ctx->qpt.live[i]->qpt_idx == i, "round %u: live[%u] says it is at %u", round, i,
		      ctx->qpt.live[i]->qpt_idx);
	/* nothing else: the special numbers, destroyed ones not drawn again,
	 * and random numbers nobody holds */
	CHECK(!qpt_get(&ctx->qpt, 0) && !qpt_get(&ctx->qpt, 1) && !qpt_get(&ctx->qpt, 0xffffff) &&
	      !qpt_get(&ctx->qpt, 0x1000000) && !qpt_get(&ctx->qpt, 0xffffffff), "round %u: a special QPN finds a QP",
	      round);
	for (uint32_t i = 0; i < ngone; i++)
		if (!bsearch(&gone[i], nums, n, sizeof(nums[0]), cmp_u32))
			CHECK(!qpt_get(&ctx->qpt, gone[i]), "round %u: destroyed 0x%x still finds a QP", round, gone[i]);
	for (unsigned i = 0; i < 20000; i++) {
		uint32_t q = (uint32_t)test_rng_below(rng, 1u << 24);

		if (!bsearch(&q, nums, n, sizeof(nums[0]), cmp_u32))
			CHECK(!qpt_get(&ctx->qpt, q), "round %u: free 0x%x finds a QP", round, q);
	}
}

static void test_churn(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 5);
	const char *specs[2] = { "loop:0", "loop:1" };
	struct uroce_context_attr ca = { 0 };
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct test_rng rng = { 0x5eed };
	uint32_t max_slots = 0;

	REQUIRE(fab, "fabric");
	ca.ports = specs;
	ca.nports = 2; /* backups need two ports */
	ca.loop_fabric = fab;
	REQUIRE(uroce_context_create(&ctx, &ca) == 0, "context_create: %s", uroce_last_error());
	REQUIRE(uroce_pd_alloc(ctx, &pd) == 0, "pd");
	REQUIRE(uroce_cq_create(ctx, 64, &cq) == 0, "cq");
	for (unsigned r = 0; r < ROUNDS; r++) {
		while (nlive < NQP)
			create_one(ctx, pd, cq, &rng);
		check_numbers(ctx, &rng, r);
		if (ctx->qpt.mask + 1 > max_slots)
			max_slots = ctx->qpt.mask + 1;
		/* half of them go, at random places */
		for (uint32_t d = NQP / 2; d; d--)
			destroy_at(ctx, (uint32_t)test_rng_below(&rng, nlive));
		check_numbers(ctx, &rng, r);
	}
	/* churn reuses the removed slots: the table does not grow without end */
	CHECK(max_slots <= 16384, "table grew to %u slots for %u QPs", max_slots, NQP);
	while (nlive)
		destroy_at(ctx, nlive - 1);
	CHECK(ctx->qpt.nkeys == 0 && ctx->qpt.nlive == 0, "table keeps %u keys, %u live after all went",
	      ctx->qpt.nkeys, ctx->qpt.nlive);
	for (uint32_t i = 0; i < ngone; i++)
		CHECK(!qpt_get(&ctx->qpt, gone[i]), "destroyed 0x%x still finds a QP", gone[i]);
	CHECK(uroce_cq_destroy(cq) == 0, "cq");
	CHECK(uroce_pd_free(pd) == 0, "pd");
	CHECK(uroce_context_destroy(ctx) == 0, "ctx: %s", uroce_last_error());
	loop_fabric_destroy(fab);
}

/* The table alone, with keys that share a probe run: removing one in the
 * middle leaves the later ones found, a removed key can come back, and
 * the table stays correct across its rebuilds. */
static void test_table_probes(void)
{
	struct qp_table t;
	static struct uroce_qp q[600];
	uint32_t keys[600], n = 0, h0;

	REQUIRE(qpt_init(&t) == 0, "qpt_init");
	/* keys of one home slot at the initial size: one long run */
	h0 = qpt_hash(&t, 2);
	for (uint32_t k = 2; n < 40 && k < 0xfffffe; k++)
		if (qpt_hash(&t, k) == h0)
			keys[n++] = k;
	REQUIRE(n == 40, "found %u colliding keys", n);
	for (uint32_t i = 0; i < 40; i++) {
		q[i].qpn = keys[i];
		REQUIRE(qpt_add(&t, &q[i], keys[i], 1) == 0, "add");
	}
	for (uint32_t i = 0; i < 40; i += 2)
		qpt_del(&t, &q[i], keys[i], 1);
	for (uint32_t i = 0; i < 40; i++)
		CHECK(qpt_get(&t, keys[i]) == (i % 2 ? &q[i] : NULL), "key %u (0x%x) after removing the even ones", i,
		      keys[i]);
	CHECK(t.nlive == 20, "%u live", t.nlive);
	for (uint32_t i = 0; i < 40; i += 2) /* back again */
		REQUIRE(qpt_add(&t, &q[i], keys[i], 1) == 0, "re-add");
	for (uint32_t i = 0; i < 40; i++)
		CHECK(qpt_get(&t, keys[i]) == &q[i], "key %u (0x%x) after re-adding", i, keys[i]);
	/* spans of two, many rebuilds */
	for (uint32_t i = 40; i < 600; i++) {
		int err = 0;
		uint32_t k = qpt_draw(&t, 2, &err);

		REQUIRE(k, "draw: %d", err);
		keys[i] = k;
		REQUIRE(qpt_add(&t, &q[i], k, 2) == 0, "add 2");
		if (i % 3 == 0) {
			qpt_del(&t, &q[i], k, 2);
			keys[i] = 0;
		}
	}
	for (uint32_t i = 0; i < 600; i++) {
		if (i >= 40 && !keys[i])
			continue;
		CHECK(qpt_get(&t, keys[i]) == &q[i], "key %u (0x%x) lost", i, keys[i]);
		if (i >= 40)
			CHECK(qpt_get(&t, keys[i] + 1) == &q[i], "key %u + 1 (0x%x) lost", i, keys[i] + 1);
	}
	CHECK(t.nkeys + t.ntomb <= (t.mask + 1) / 4 * 3, "%u keys + %u tombstones in %u slots", t.nkeys, t.ntomb,
	      t.mask + 1);
	qpt_fini(&t);
}

/* Traffic between a pair whose context holds thousands of other QPs. */
static void test_traffic(enum uroce_reliability rel)
{
	struct tr_pair p;
	struct tr_opts o;
	struct test_rng rng = { 77 };
	struct uroce_sge sg;
	struct uroce_send_wr wr = { 0 };
	struct uroce_wc wc;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = rel;
	tr_open(&p, &o, 11, NULL, NULL);
	nlive = 0;
	ngone = 0;
	while (nlive < 2000) { /* rc, sr, ec, be around the pair's QPs (no backups: one port) */
		struct uroce_qp_init_attr ia;
		uint32_t kind = (uint32_t)test_rng_below(&rng, 4);

		memset(&ia, 0, sizeof(ia));
		ia.qp_type = UROCE_QPT_RC;
		ia.send_cq = ia.recv_cq = p.s[nlive % 2].scq;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
		ia.rel.reliability = (enum uroce_reliability)kind;
		REQUIRE(uroce_qp_create(p.s[nlive % 2].pd, &ia, &L[nlive].qp) == 0, "qp_create: %s", uroce_last_error());
		nlive++;
	}
	tr_fill(p.s[0].buf, 65536, 3);
	tr_sge(&sg, &p.s[0], 0, 65536);
	wr.wr_id = 1;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.s[1].buf + 65536;
	wr.wr.rdma.rkey = p.s[1].mr->rkey;
	REQUIRE(uroce_post_send(p.s[0].qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
	REQUIRE(tr_wait(&p, p.s[0].scq, &wc, 200000) == 0, "%s: no completion", uroce_reliability_str(rel));
	CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == 1, "%s: status %d", uroce_reliability_str(rel),
	      (int)wc.status);
	CHECK(memcmp(p.s[0].buf, p.s[1].buf + 65536, 65536) == 0, "%s: the WRITE's bytes differ",
	      uroce_reliability_str(rel));
	while (nlive)
		REQUIRE(uroce_qp_destroy(L[--nlive].qp) == 0, "qp_destroy: %s", uroce_last_error());
	tr_close(&p);
}

int main(void)
{
	test_table_probes();
	test_churn();
	test_traffic(UROCE_REL_RC);
	test_traffic(UROCE_REL_SR);
	return test_done("tr_qpn");
}
