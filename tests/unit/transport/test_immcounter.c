/* SPDX-License-Identifier: MIT */
/* IMMCOUNTER and paged writes over the loop fabric (simulated time), two
 * contexts of two ports each (port 1 to port 1, port 2 to port 2):
 * - for sr and ec at 0, 1e-3, 1e-2 and 5e-2 loss, and rc at 0 and 1e-2,
 *   with reordering and duplication both ways, transfers of random pages split over a QP on
 *   each port (and some on one) end with one immediate each; every
 *   expectation fires exactly once, and when it fires every page of its
 *   transfer is already in place (the fence), with no completion on the
 *   receive CQ and no count left over;
 * - several transfers under one immediate fire one expectation of that
 *   count; arrivals counted before their expectation fire it at once
 *   (flag form);
 * - the table is bounded: a flood of distinct immediates nobody expects
 *   keeps 16384 of them and drops the rest as table_full, an expectation
 *   for a new immediate still works, and entries go once their counts
 *   are taken;
 * - bad arguments are refused with a message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"
#include "transport/core/qp_internal.h"
#include "tr_test.h"
#include "transport/core/immcounter.h"

#define BUF (1u << 20)
#define PAGE 2048u
#define SLOTS 8u                    /* transfers in flight */
#define SLOT_PAGES (BUF / PAGE / SLOTS)
#define MAX_PAGES 24u
#define NXFER 60u
#define MAX_STEPS 400000u

struct xfer {
	uint32_t n, src[MAX_PAGES], dst[MAX_PAGES];
	unsigned fired, nqps;
	bool live;
};

static struct loop_fabric *fab;
static struct tr_host A, B;
static struct xfer xf[NXFER];
static unsigned data_bad;

static void step(void)
{
	tr_host_step(fab, &A, &B, TR_STEP_IDLE_NS);
}

static void open_all(enum uroce_reliability rel, double loss, uint64_t seed)
{
	struct loop_impairment imp = { .loss = loss, .reorder = loss ? 0.02 : 0, .reorder_max_ns = 20000,
	                               .duplicate = loss ? 0.01 : 0, .delay_ns = 2000 };
	const int access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	const struct uroce_rel_attr ra = { .reliability = rel, .imm_counter = 1, .ec_k = 4, .ec_m = 2 };

	fab = loop_fabric_create(4, seed);
	REQUIRE(fab, "fabric");
	REQUIRE(loop_fabric_connect(fab, 0, 2, &imp, &imp) == 0, "wire 0-2");
	REQUIRE(loop_fabric_connect(fab, 1, 3, &imp, &imp) == 0, "wire 1-3");

	tr_host_open(&A, fab, 0, 2, BUF, 4096, access);
	tr_host_open(&B, fab, 2, 2, BUF, 4096, access);
	for (int i = 0; i < 2; i++) {
		struct tr_link l = { .port = (uint8_t)(i + 1), .peer_port = (uint8_t)(i + 1), .access = access,
		                     .psn = test_psn(77), .timeout = 14 };

		A.qp[i] = tr_host_qp(&A, &ra, 256, 4);
		B.qp[i] = tr_host_qp(&B, &ra, 256, 4);
		tr_link(A.qp[i], &l, B.ctx, B.qp[i]);
		tr_link(B.qp[i], &l, A.ctx, A.qp[i]);
	}
}

static void close_all(void)
{
	tr_host_close(&A);
	tr_host_close(&B);
	loop_fabric_destroy(fab);
}

/* The expectation of transfer t fired: every page must be in place. */
static void fired(void *arg, uint32_t imm)
{
	struct xfer *x = arg;

	x->fired++;
	(void)imm;
	for (uint32_t i = 0; i < x->n; i++)
		if (memcmp(A.buf + (size_t)x->src[i] * PAGE, B.buf + (size_t)x->dst[i] * PAGE, PAGE)) {
			if (data_bad++ < 5)
				fprintf(stderr, "transfer %u: page %u (dst %u) not in place when its immediate fired\n",
				        (unsigned)(x - xf), i, x->dst[i]);
		}
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void post_pages(struct uroce_qp *qp, const struct xfer *x, uint32_t from, uint32_t to, uint32_t imm,
                       uint64_t wr_id)
{
	struct uroce_paged_write pw = { 0 };

	pw.wr_id = wr_id;
	pw.page_len = PAGE;
	pw.npages = to - from;
	pw.src_pages = x->src + from;
	pw.src_base = (uint64_t)(uintptr_t)A.buf;
	pw.lkey = A.mr->lkey;
	pw.dst_pages = x->dst + from;
	pw.dst_base = (uint64_t)(uintptr_t)B.buf;
	pw.rkey = B.mr->rkey;
	pw.imm_data = htobe32(imm);
	pw.send_flags = UROCE_SEND_SIGNALED;
	REQUIRE(uroce_post_paged_write(qp, &pw) == 0, "paged write: %s", uroce_last_error());
}

static void run(enum uroce_reliability rel, double loss, uint64_t seed)
{
	uint64_t rng = seed | 1;
	unsigned next = 0, done = 0, sends = 0, posted = 0;
	struct uroce_wc wc[16];

	open_all(rel, loss, seed);
	memset(xf, 0, sizeof(xf));
	data_bad = 0;
	for (uint32_t i = 0; i < BUF; i++)
		A.buf[i] = (uint8_t)(rng_next(&rng) >> 24);
	for (unsigned steps = 0; done < NXFER && steps < MAX_STEPS; steps++) {
		/* keep SLOTS transfers in flight, each in its own part of B */
		while (next < NXFER && next - done < SLOTS) {
			struct xfer *x = &xf[next];
			uint32_t slot = next % SLOTS, base = slot * SLOT_PAGES, split;

			/* a slot is reused only when its previous transfer fired */
			if (next >= SLOTS && !xf[next - SLOTS].fired)
				break;
			memset(B.buf + (size_t)base * PAGE, 0, (size_t)SLOT_PAGES * PAGE);
			x->n = 1 + (uint32_t)(rng_next(&rng) % MAX_PAGES);
			for (uint32_t i = 0; i < x->n; i++) {
				bool dup;

				x->src[i] = (uint32_t)(rng_next(&rng) % (BUF / PAGE));
				do { /* distinct destination pages */
					x->dst[i] = base + (uint32_t)(rng_next(&rng) % SLOT_PAGES);
					dup = false;
					for (uint32_t k = 0; k < i; k++)
						dup |= x->dst[k] == x->dst[i];
				} while (dup);
				if (i && rng_next(&rng) % 3 == 0 && x->dst[i - 1] + 1 < base + SLOT_PAGES) {
					/* some runs of adjacent pages, to be coalesced */
					bool taken = false;

					for (uint32_t k = 0; k < i; k++)
						taken |= x->dst[k] == x->dst[i - 1] + 1;
					if (!taken && x->src[i - 1] + 1 < BUF / PAGE) {
						x->dst[i] = x->dst[i - 1] + 1;
						x->src[i] = x->src[i - 1] + 1;
					}
				}
			}
			x->live = true;
			/* two thirds split over both ports (count 2), one third on one */
			x->nqps = next % 3 ? 2 : 1;
			REQUIRE(uroce_expect_imm_count(B.ctx, htobe32(1000 + next), x->nqps, fired, x, NULL) == 0,
			        "expect: %s", uroce_last_error());
			split = x->nqps == 2 ? x->n / 2 : x->n;
			post_pages(A.qp[0], x, 0, split, 1000 + next, next);
			sends++;
			if (x->nqps == 2) {
				post_pages(A.qp[1], x, split, x->n, 1000 + next, next);
				sends++;
			}
			next++;
			posted++;
		}
		step();
		while (done < NXFER && xf[done].fired)
			done++;
		int n = uroce_poll_cq(A.cq, 16, wc);

		for (int i = 0; i < n; i++) {
			CHECK(wc[i].status == UROCE_WC_SUCCESS, "send %llu: %s", (unsigned long long)wc[i].wr_id,
			      uroce_wc_status_str(wc[i].status));
			sends--;
		}
	}
	for (unsigned i = 0; i < 2000 && sends; i++) {
		int n = uroce_poll_cq(A.cq, 16, wc);

		sends -= n > 0 ? (unsigned)n : 0;
		step();
	}
	for (unsigned i = 0; i < 200; i++)
		step(); /* late duplicates settle: nothing may fire twice */
	CHECK(done == NXFER, "%s loss %g: %u of %u transfers fired", uroce_reliability_str(rel), loss, done, NXFER);
	CHECK(sends == 0, "%u paged writes never completed", sends);
	for (unsigned t = 0; t < NXFER; t++) {
		CHECK(xf[t].fired == 1, "transfer %u fired %u times", t, xf[t].fired);
		CHECK(uroce_imm_count(B.ctx, htobe32(1000 + t)) == 0, "transfer %u: %llu counts left", t,
		      (unsigned long long)uroce_imm_count(B.ctx, htobe32(1000 + t)));
	}
	CHECK(data_bad == 0, "%u pages were not in place when their immediate fired", data_bad);
	CHECK(uroce_poll_cq(B.cq, 16, wc) == 0, "a counted immediate made a completion");
	{
		struct uroce_qp_stats qs[2], as[2];
		uint64_t want = 0;

		for (unsigned t = 0; t < NXFER; t++)
			want += xf[t].nqps;
		uroce_qp_stats(B.qp[0], &qs[0]);
		uroce_qp_stats(B.qp[1], &qs[1]);
		uroce_qp_stats(A.qp[0], &as[0]);
		uroce_qp_stats(A.qp[1], &as[1]);
		printf("  %s loss %g: %u transfers, %llu + %llu immediates counted, %llu retransmits\n",
		       uroce_reliability_str(rel), loss, posted, (unsigned long long)qs[0].imm_counted,
		       (unsigned long long)qs[1].imm_counted, (unsigned long long)(as[0].retransmits + as[1].retransmits));
		CHECK(qs[0].imm_counted + qs[1].imm_counted == want, "counted %llu immediates of %llu sent",
		      (unsigned long long)(qs[0].imm_counted + qs[1].imm_counted), (unsigned long long)want);
	}
	close_all();
}

static int flag_a, flag_b;

/* One immediate for several transfers, and counts that come first. */
static void run_shared(void)
{
	struct xfer x = { .n = 1 };
	struct uroce_send_wr wr;
	struct uroce_sge sg = { 0 };
	struct uroce_wc wc;
	unsigned steps;

	open_all(UROCE_REL_SR, 0, 5);
	x.src[0] = 1;
	x.dst[0] = 2;
	REQUIRE(uroce_expect_imm_count(B.ctx, htobe32(7), 5, NULL, NULL, &flag_a) == 0, "expect 5");
	REQUIRE(uroce_expect_imm_count(B.ctx, htobe32(7), 2, NULL, NULL, &flag_b) == 0, "expect 2 more");
	for (int i = 0; i < 6; i++)
		post_pages(A.qp[i & 1], &x, 0, 1, 7, 0);
	for (steps = 0; steps < 20000 && uroce_imm_count(B.ctx, htobe32(7)) + (flag_a ? 5 : 0) < 6; steps++)
		step();
	CHECK(flag_a == 1 && flag_b == 0 && uroce_imm_count(B.ctx, htobe32(7)) == 1,
	      "after 6 arrivals: flags %d %d, %llu waiting", flag_a, flag_b,
	      (unsigned long long)uroce_imm_count(B.ctx, htobe32(7)));
	post_pages(A.qp[0], &x, 0, 1, 7, 0);
	for (steps = 0; steps < 20000 && !flag_b; steps++)
		step();
	CHECK(flag_b == 1 && uroce_imm_count(B.ctx, htobe32(7)) == 0, "the second expectation: flag %d", flag_b);
	/* three arrive with no expectation; one for three fires at once */
	flag_a = 0;
	for (int i = 0; i < 3; i++)
		post_pages(A.qp[1], &x, 0, 1, 9, 0);
	for (steps = 0; steps < 20000 && uroce_imm_count(B.ctx, htobe32(9)) < 3; steps++)
		step();
	CHECK(uroce_imm_count(B.ctx, htobe32(9)) == 3, "3 waiting, %llu", (unsigned long long)uroce_imm_count(B.ctx, htobe32(9)));
	REQUIRE(uroce_expect_imm_count(B.ctx, htobe32(9), 3, NULL, NULL, &flag_a) == 0, "expect 3");
	CHECK(flag_a == 1 && uroce_imm_count(B.ctx, htobe32(9)) == 0, "waiting counts fire at the expectation");

	/* bad arguments */
	CHECK(uroce_expect_imm_count(B.ctx, 1, 0, NULL, NULL, NULL) == -EINVAL && strstr(uroce_last_error(), "count"),
	      "count 0: %s", uroce_last_error());
	memset(&wr, 0, sizeof(wr));
	sg.addr = (uint64_t)(uintptr_t)A.buf;
	sg.length = 8;
	sg.lkey = A.mr->lkey;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_SEND;
	CHECK(uroce_post_send(A.qp[0], &wr, NULL) == -EINVAL && strstr(uroce_last_error(), "imm_counter"),
	      "SEND on a counting QP: %s", uroce_last_error());
	{
		struct uroce_paged_write pw = { .page_len = 4096, .npages = 1, .src_pages = x.src, .dst_pages = x.dst,
		                                .src_stride = 100, .lkey = A.mr->lkey };
		uint32_t many[300];

		CHECK(uroce_post_paged_write(A.qp[0], &pw) == -EINVAL && strstr(uroce_last_error(), "stride"),
		      "stride below page_len: %s", uroce_last_error());
		pw.src_stride = 0;
		pw.npages = 300;
		for (uint32_t i = 0; i < 300; i++)
			many[i] = 2 * i; /* no two adjacent: 300 WRs */
		pw.src_pages = many;
		pw.dst_pages = many;
		pw.page_len = 8;
		pw.src_base = (uint64_t)(uintptr_t)A.buf;
		CHECK(uroce_post_paged_write(A.qp[0], &pw) == -ENOMEM && strstr(uroce_last_error(), "send queue"),
		      "300 runs on a 256-WR queue: %s", uroce_last_error());
		pw.npages = 1;
		pw.send_flags = UROCE_SEND_INLINE;
		CHECK(uroce_post_paged_write(A.qp[0], &pw) == -EINVAL && strstr(uroce_last_error(), "send_flags"),
		      "inline paged write: %s", uroce_last_error());
	}
	while (uroce_poll_cq(A.cq, 1, &wc) == 1)
		;
	close_all();
}

static uint64_t table_full(struct uroce_context *ctx)
{
	struct uroce_port_stats ps;
	uint64_t n = 0;

	for (uint8_t p = 1; p <= 2; p++)
		if (uroce_port_stats(ctx, p, &ps) == 0)
			n += ps.drops[UROCE_DROP_TABLE_FULL];
	return n;
}

/* Counts fed as the receive path does (imm_count on the engine thread,
 * here the caller's: the context is embedded). */
static void run_table_bound(void)
{
	const uint32_t unexp_max = 16384, flood = 100000;
	struct uroce_context *ctx;
	int flag = 0, flag2 = 0;
	uint64_t full0;

	open_all(UROCE_REL_RC, 0, 400);
	ctx = B.ctx;
	full0 = table_full(ctx);
	for (uint32_t i = 0; i < flood; i++)
		imm_count(ctx, 0x10000000u + i);
	CHECK(table_full(ctx) - full0 == flood - unexp_max, "flood of %u distinct immediates: %llu table_full, want %u",
	      flood, (unsigned long long)(table_full(ctx) - full0), flood - unexp_max);
	CHECK(uroce_imm_count(ctx, 0x10000000u + unexp_max - 1) == 1 && uroce_imm_count(ctx, 0x10000000u + unexp_max) == 0,
	      "the first %u kept, the rest not counted", unexp_max);
	/* an immediate already in the table still counts */
	imm_count(ctx, 0x10000000u);
	CHECK(uroce_imm_count(ctx, 0x10000000u) == 2, "a second arrival of a kept immediate counts");
	/* an expectation for a new immediate wins over the flood */
	CHECK(uroce_expect_imm_count(ctx, 0x42u, 2, NULL, NULL, &flag) == 0, "expect a new immediate with the table "
	      "full of unexpected counts: %s", uroce_last_error());
	imm_count(ctx, 0x42u);
	imm_count(ctx, 0x42u);
	CHECK(flag == 1 && uroce_imm_count(ctx, 0x42u) == 0, "the expectation fired (flag %d)", flag);
	/* taking a flooded count frees its entry: one new unexpected fits */
	CHECK(uroce_expect_imm_count(ctx, 0x10000001u, 1, NULL, NULL, &flag2) == 0 && flag2 == 1,
	      "expect a count already there fires at once");
	full0 = table_full(ctx);
	imm_count(ctx, 0x20000000u);
	imm_count(ctx, 0x20000001u);
	CHECK(uroce_imm_count(ctx, 0x20000000u) == 1 && table_full(ctx) - full0 == 1,
	      "after one entry went, one new immediate kept, the next dropped");
	/* entries whose counts are taken go: many more expect/arrive cycles
	 * than the table holds, each on a new immediate, all work */
	for (uint32_t i = 0; i < 200000; i++) {
		int f = 0;

		if (uroce_expect_imm_count(ctx, 0x30000000u + i, 1, NULL, NULL, &f)) {
			CHECK(0, "cycle %u: expect refused: %s", i, uroce_last_error());
			break;
		}
		imm_count(ctx, 0x30000000u + i);
		if (!f) {
			CHECK(0, "cycle %u: not fired", i);
			break;
		}
	}
	/* the removals moved entries along their probe runs: all still found */
	for (uint32_t k = 0, bad = 0; k < unexp_max && bad < 5; k++) {
		uint64_t want = k == 0 ? 2 : k == 1 ? 0 : 1, got = uroce_imm_count(ctx, 0x10000000u + k);

		if (got != want) {
			CHECK(0, "flooded immediate %u: count %llu, want %llu", k, (unsigned long long)got,
			      (unsigned long long)want);
			bad++;
		}
	}
	close_all();
}

int main(void)
{
	run_table_bound();
	static const double losses[] = { 0, 1e-3, 1e-2, 5e-2 };

	for (unsigned l = 0; l < 4; l++) {
		run(UROCE_REL_SR, losses[l], 100 + l);
		run(UROCE_REL_EC, losses[l], 200 + l);
	}
	run(UROCE_REL_RC, 0, 300);
	run(UROCE_REL_RC, 1e-2, 301);
	run_shared();
	return test_done("tr_immcounter");
}
