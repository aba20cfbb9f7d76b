/* SPDX-License-Identifier: MIT */
/* be, adaptive timeouts and the IMMCOUNTER in DEDICATED engine mode: the
 * transport runs on its own thread over a real-time loop port that loses
 * 1% both ways. The main thread sends be messages one at a time while a
 * second thread posts and polls their receives: every receive completes
 * once, in order, by its deadline, PARTIAL exactly when bytes are missing.
 * Then two adaptive-timeout groups (one per QP, one group id) exchange
 * from the two threads until both end with the same timeout, and an
 * expectation made from an app thread fires by flag for WRITEs with
 * immediate counted on an sr pair. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tr_test.h"

#define NMSG 300u
#define SLOT 16384u
#define TMO_US 20000u

struct app {
	TR_APP_FIELDS(4); /* be pair, sr counting pair */
	struct uroce_tmo *g[2];
	uint32_t lens[NMSG];
	int failures;
	uint32_t received, partial;
	_Atomic uint32_t done_upto;   /* receives completed (and the next one posted): the sender may send the next */
	int tmo_rc;
};

static void connect_pair(struct app *a, unsigned x, unsigned y)
{
	const struct tr_link l = { .access = 15, .psn = test_psn(29), .timeout = 14 };

	tr_loop_link(a->ctx, a->qp[x], a->qp[y], &l);
	tr_loop_link(a->ctx, a->qp[y], a->qp[x], &l);
}

static void *receiver(void *arg)
{
	struct app *a = arg;
	uint64_t t0 = test_mono_ns();

	struct uroce_sge sg = { (uint64_t)(uintptr_t)a->buf + SLOT, SLOT, a->mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = 0, .sg_list = &sg, .num_sge = 1 };

	if (uroce_post_recv(a->qp[1], &wr, NULL))
		a->failures++;
	for (uint32_t i = 0; i < NMSG && test_mono_ns() - t0 < TR_LIMIT_NS; i++) {
		struct uroce_wc wc;

		while (uroce_poll_cq(a->rcq[1], 1, &wc) != 1 && test_mono_ns() - t0 < TR_LIMIT_NS)
			sched_yield();
		/* the next receive is posted before the sender may send its message */
		wr.wr_id = i + 1;
		if (i + 1 < NMSG && uroce_post_recv(a->qp[1], &wr, NULL))
			a->failures++;
		if (wc.wr_id != i || wc.status != UROCE_WC_SUCCESS || wc.byte_len > a->lens[i] ||
		    !!(wc.wc_flags & UROCE_WC_PARTIAL) != (wc.byte_len < a->lens[i] || (wc.wc_flags & UROCE_WC_TIMEOUT))) {
			if (a->failures++ < 5)
				fprintf(stderr, "receive %u: wr %llu %s, %u of %u bytes, flags 0x%x\n", i,
				        (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status), wc.byte_len, a->lens[i],
				        wc.wc_flags);
		}
		a->partial += !!(wc.wc_flags & UROCE_WC_PARTIAL);
		a->received++;
		atomic_store(&a->done_upto, i + 1);
	}
	/* this thread is member 1 of the timeout group */
	for (uint64_t t1 = test_mono_ns(); test_mono_ns() - t1 < 10000000000ull;) {
		int rc = uroce_tmo_exchange(a->g[1], 1);

		if (rc != -EAGAIN) {
			a->tmo_rc = rc;
			break;
		}
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	struct loop_impairment imp = { .loss = 0.01 };
	struct uroce_context_attr ca;
	struct uroce_tmo_attr ta = { .group_id = 3, .msg_bytes = SLOT };
	struct loop_fabric *fab;
	struct app a;
	struct test_rng rng = { 8 };
	pthread_t th;
	uint32_t sent = 0;
	uint64_t t0;
	int rc0 = -EAGAIN, flag = 0;

	memset(&a, 0, sizeof(a));
	a.tmo_rc = -EAGAIN;
	fab = tr_rt_context(29, &imp, &ca, &a.ctx);
	REQUIRE(uroce_pd_alloc(a.ctx, &a.pd) == 0, "pd");
	a.buf = tr_buf_reg(a.pd, 4 * SLOT, &a.mr);
	for (int i = 0; i < 4; i++) {
		const struct uroce_rel_attr ra = { .reliability = i < 2 ? UROCE_REL_BE : UROCE_REL_SR,
			                           .timeout_us = TMO_US, .imm_counter = i >= 2 };

		tr_ctx_qp(a.ctx, a.pd, &ra, &a.scq[i], &a.rcq[i], &a.qp[i]);
	}
	connect_pair(&a, 0, 1);
	connect_pair(&a, 2, 3);
	for (int i = 0; i < 2; i++) {
		REQUIRE(uroce_tmo_create(&ta, &a.qp[i], 1, &a.g[i]) == 0, "tmo_create: %s", uroce_last_error());
		REQUIRE(uroce_tmo_warmup(a.g[i], 10000000ull) == 0, "warmup: %s", uroce_last_error());
	}
	for (uint32_t i = 0; i < NMSG; i++)
		a.lens[i] = 1 + (uint32_t)test_rng_below(&rng, SLOT);
	tr_fill(a.buf, SLOT, 1);
	REQUIRE(pthread_create(&th, NULL, receiver, &a) == 0, "thread");
	t0 = test_mono_ns();
	/* one message at a time: the next once the previous receive ended */
	while (sent < NMSG && test_mono_ns() - t0 < TR_LIMIT_NS) {
		struct uroce_sge sg = { (uint64_t)(uintptr_t)a.buf, a.lens[sent], a.mr->lkey };
		struct uroce_send_wr wr = { .wr_id = sent, .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_SEND };
		struct uroce_wc wc;

		if (atomic_load(&a.done_upto) < sent) {
			uroce_poll_cq(a.scq[0], 1, &wc);
			sched_yield();
			continue;
		}
		REQUIRE(uroce_post_send(a.qp[0], &wr, NULL) == 0, "post: %s", uroce_last_error());
		sent++;
	}
	/* member 0 of the timeout group */
	for (uint64_t t1 = test_mono_ns(); rc0 == -EAGAIN && test_mono_ns() - t1 < 10000000000ull;) {
		rc0 = uroce_tmo_exchange(a.g[0], 1);
		sched_yield();
	}
	REQUIRE(pthread_join(th, NULL) == 0, "join");
	printf("  be, DEDICATED, 1%% loss: %u messages, %u received (%u partial), %d failures; timeouts after the "
	       "exchange %llu / %llu ns\n", sent, a.received, a.partial, a.failures,
	       (unsigned long long)uroce_tmo_timeout_ns(a.g[0]), (unsigned long long)uroce_tmo_timeout_ns(a.g[1]));
	CHECK(sent == NMSG && a.received == NMSG && a.failures == 0, "%u sent, %u received, %d failures", sent,
	      a.received, a.failures);
	CHECK(rc0 == 0 && a.tmo_rc == 0, "exchange: member 0 %d, member 1 %d", rc0, a.tmo_rc);
	CHECK(uroce_tmo_timeout_ns(a.g[0]) == uroce_tmo_timeout_ns(a.g[1]) && uroce_tmo_timeout_ns(a.g[0]) > 0,
	      "members disagree: %llu / %llu ns", (unsigned long long)uroce_tmo_timeout_ns(a.g[0]),
	      (unsigned long long)uroce_tmo_timeout_ns(a.g[1]));

	/* IMMCOUNTER from an app thread: 20 WRITEs with immediate on the sr pair */
	REQUIRE(uroce_expect_imm_count(a.ctx, 0x55, 20, NULL, NULL, &flag) == 0, "expect: %s", uroce_last_error());
	for (int i = 0; i < 20; i++) {
		struct uroce_sge sg = { (uint64_t)(uintptr_t)a.buf, 3000, a.mr->lkey };
		struct uroce_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE_WITH_IMM,
		                            .imm_data = 0x55 };

		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)a.buf + 2 * SLOT;
		wr.wr.rdma.rkey = a.mr->rkey;
		REQUIRE(uroce_post_send(a.qp[2], &wr, NULL) == 0, "write: %s", uroce_last_error());
	}
	for (t0 = test_mono_ns(); !__atomic_load_n(&flag, __ATOMIC_ACQUIRE) && test_mono_ns() - t0 < TR_LIMIT_NS;)
		sched_yield();
	CHECK(flag == 1 && uroce_imm_count(a.ctx, 0x55) == 0, "the expectation of 20: flag %d, %llu left", flag,
	      (unsigned long long)uroce_imm_count(a.ctx, 0x55));
	CHECK(!memcmp(a.buf, a.buf + 2 * SLOT, 3000), "the counted WRITEs' data");

	for (int i = 0; i < 2; i++)
		CHECK(uroce_tmo_destroy(a.g[i]) == 0, "tmo destroy");
	tr_ctx_teardown(4, a.qp, a.scq, a.rcq, a.mr, a.pd, a.ctx, fab, a.buf);
	return test_done("tr_be_dedicated");
}
