/* SPDX-License-Identifier: MIT */
/* DEDICATED engine mode: the transport runs on its own thread; two app
 * threads use one context at once (one posts SEND/WRITE/READ and polls
 * the send CQ, the other posts receives and polls the receive CQ). The
 * loop port runs in real time with loss, reordering and duplication, so
 * the engine thread's timers and retransmissions are exercised too. Every
 * message arrives once, in order, intact. */
#include <pthread.h>
#include <sched.h>

#include "tr_test.h"

#define NMSG 3000u
#define SLOT 8192u
#define NSLOTS 32u
#define OUTSTANDING 8u

struct app {
	TR_APP_FIELDS(2);
	uint32_t lens[NMSG];
	uint8_t kinds[NMSG];
	int recv_failures;
	uint32_t received;
};

/* buffer layout in slots: region 0 the sources, 1 the receive buffers,
 * 2 the READ sources, 3 READ targets and (half a ring on) WRITE targets */
static uint8_t *slot(struct app *a, unsigned region, uint32_t i)
{
	return a->buf + (size_t)(region * NSLOTS + i % NSLOTS) * SLOT;
}

static void post_recv(struct app *a, uint32_t i)
{
	struct uroce_sge sg = { (uint64_t)(uintptr_t)slot(a, 1, i), SLOT, a->mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

	REQUIRE(uroce_post_recv(a->qp[1], &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

static void *receiver(void *arg)
{
	struct app *a = arg;
	uint32_t nsend = 0, next_msg = 0, posted = NSLOTS / 2;
	uint64_t t0 = test_mono_ns();

	for (uint32_t i = 0; i < NMSG; i++)
		nsend += a->kinds[i] == 0;
	while (a->received < nsend && test_mono_ns() - t0 < TR_LIMIT_NS) {
		struct uroce_wc wc;

		if (uroce_poll_cq(a->rcq[1], 1, &wc) != 1) {
			sched_yield();
			continue;
		}
		while (next_msg < NMSG && a->kinds[next_msg] != 0)
			next_msg++;
		if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != a->received || next_msg >= NMSG ||
		    wc.byte_len != a->lens[next_msg]) {
			a->recv_failures++;
		} else {
			uint8_t want[SLOT];

			tr_fill(want, wc.byte_len, next_msg);
			if (memcmp(want, slot(a, 1, (uint32_t)wc.wr_id), wc.byte_len))
				a->recv_failures++;
		}
		next_msg++;
		a->received++;
		post_recv(a, posted++);
	}
	return NULL;
}

int main(void)
{
	struct loop_impairment imp = { .loss = 0.005, .duplicate = 0.005, .reorder = 0.005,
		                       .reorder_max_ns = 20000 };
	struct uroce_context_attr ca;
	struct loop_fabric *fab;
	struct app a;
	struct test_rng rng = { 5 };
	pthread_t th;
	uint32_t posted = 0, completed = 0;
	uint64_t t0;

	memset(&a, 0, sizeof(a));
	fab = tr_rt_context(21, &imp, &ca, &a.ctx);
	CHECK(uroce_progress(a.ctx) == -EINVAL, "progress accepted on a DEDICATED context");
	{
		struct uroce_context *bad;

		ca.engine_cpu = -5;
		CHECK(uroce_context_create(&bad, &ca) == -EINVAL, "engine_cpu -5 accepted");
		ca.mode = 7;
		CHECK(uroce_context_create(&bad, &ca) == -EINVAL, "mode 7 accepted");
	}
	REQUIRE(uroce_pd_alloc(a.ctx, &a.pd) == 0, "pd");
	{
		/* an AH from an app thread resolves on the engine thread; its
		 * errors come back with their text */
		struct uroce_ah_attr aa = { .sgid_index = 1 };
		struct uroce_ah *ah;

		REQUIRE(uroce_query_gid(a.ctx, 1, 1, aa.dgid) == 0, "gid: %s", uroce_last_error());
		CHECK(uroce_ah_create(a.pd, &aa, &ah) == 0 && uroce_ah_destroy(ah) == 0, "ah: %s", uroce_last_error());
		aa.port_num = 9;
		CHECK(uroce_ah_create(a.pd, &aa, &ah) == -EINVAL && strstr(uroce_last_error(), "uroce_ah_create"),
		      "a bad AH from an app thread: '%s'", uroce_last_error());
	}
	a.buf = tr_buf_reg(a.pd, 4 * NSLOTS * SLOT, &a.mr);
	for (int i = 0; i < 2; i++)
		tr_ctx_qp(a.ctx, a.pd, NULL, &a.scq[i], &a.rcq[i], &a.qp[i]);
	for (int i = 0; i < 2; i++) {
		struct uroce_qp_attr qa = { 0 };
		struct uroce_port_attr pa;

		uroce_query_port(a.ctx, 1, &pa);
		qa.qp_state = UROCE_QPS_INIT;
		qa.port_num = 1;
		qa.qp_access_flags = 15;
		REQUIRE(uroce_qp_modify(a.qp[i], &qa, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
		                                             UROCE_QP_ACCESS_FLAGS) == 0, "init: %s", uroce_last_error());
		qa.qp_state = UROCE_QPS_RTR;
		qa.path_mtu = UROCE_MTU_1024;
		qa.dest_qp_num = uroce_qp_num(a.qp[!i]);
		qa.dest_token = uroce_qp_token(a.qp[!i]);
		qa.rq_psn = test_psn(21);
		qa.max_dest_rd_atomic = 4;
		qa.min_rnr_timer = 1;
		memcpy(qa.ah_attr.dgid, pa.gid, 16);
		qa.ah_attr.sgid_index = 1; /* IPv4-mapped, as the dgid */
		REQUIRE(uroce_qp_modify(a.qp[i], &qa, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
		                                             UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC |
		                                             UROCE_QP_MIN_RNR_TIMER) == 0, "rtr: %s", uroce_last_error());
		/* an error from the engine thread reaches this thread's last_error */
		qa.qp_state = UROCE_QPS_RTS;
		qa.retry_cnt = 9;
		CHECK(uroce_qp_modify(a.qp[i], &qa, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
		                                            UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
		                                            UROCE_QP_MAX_QP_RD_ATOMIC) == -EINVAL, "retry_cnt 9 accepted");
		CHECK(strstr(uroce_last_error(), "retry_cnt 9") != NULL, "last_error: %s", uroce_last_error());
		qa.sq_psn = test_psn(21);
		qa.timeout = 8;
		qa.retry_cnt = 7;
		qa.rnr_retry = 7;
		qa.max_rd_atomic = 4;
		REQUIRE(uroce_qp_modify(a.qp[i], &qa, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
		                                             UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
		                                             UROCE_QP_MAX_QP_RD_ATOMIC) == 0, "rts: %s", uroce_last_error());
	}
	for (uint32_t i = 0; i < NMSG; i++) {
		a.kinds[i] = (uint8_t)test_rng_below(&rng, 3); /* 0 SEND, 1 WRITE, 2 READ */
		a.lens[i] = (uint32_t)test_rng_below(&rng, SLOT + 1);
	}
	for (uint32_t i = 0; i < NSLOTS; i++)
		tr_fill(slot(&a, 2, i), SLOT, 777 + i);
	for (uint32_t i = 0; i < NSLOTS / 2; i++)
		post_recv(&a, i);
	REQUIRE(pthread_create(&th, NULL, receiver, &a) == 0, "thread");

	t0 = test_mono_ns();
	while (completed < NMSG && test_mono_ns() - t0 < TR_LIMIT_NS) {
		struct uroce_wc wc;

		while (posted < NMSG && posted - completed < OUTSTANDING) {
			uint32_t n = a.lens[posted];
			struct uroce_sge sg = { 0, n, a.mr->lkey };
			struct uroce_send_wr wr = { .wr_id = posted, .sg_list = &sg, .num_sge = 1,
			                            .send_flags = UROCE_SEND_SIGNALED };

			wr.wr.rdma.rkey = a.mr->rkey;
			if (a.kinds[posted] == 2) {
				sg.addr = (uint64_t)(uintptr_t)slot(&a, 3, posted);
				memset(slot(&a, 3, posted), 0, n);
				wr.opcode = UROCE_WR_RDMA_READ;
				wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)slot(&a, 2, posted);
			} else {
				sg.addr = (uint64_t)(uintptr_t)slot(&a, 0, posted);
				tr_fill(slot(&a, 0, posted), n, posted);
				wr.opcode = a.kinds[posted] == 0 ? UROCE_WR_SEND : UROCE_WR_RDMA_WRITE;
				/* WRITE targets: region 3 half a ring away from the READ
				 * targets of messages in flight (OUTSTANDING < NSLOTS / 2) */
				wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)slot(&a, 3, posted + NSLOTS / 2);
			}
			REQUIRE(uroce_post_send(a.qp[0], &wr, NULL) == 0, "post %u: %s", posted, uroce_last_error());
			posted++;
		}
		if (uroce_poll_cq(a.scq[0], 1, &wc) != 1) {
			sched_yield();
			continue;
		}
		CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == completed, "wc %llu (want %u): %s",
		      (unsigned long long)wc.wr_id, completed, uroce_wc_status_str(wc.status));
		if (a.kinds[completed] == 2) {
			CHECK(memcmp(slot(&a, 3, completed), slot(&a, 2, completed), a.lens[completed]) == 0,
			      "READ %u corrupt", completed);
		} else if (a.kinds[completed] == 1) {
			CHECK(memcmp(slot(&a, 3, completed + NSLOTS / 2), slot(&a, 0, completed), a.lens[completed]) == 0,
			      "WRITE %u corrupt", completed);
		}
		completed++;
		if (test_failures > 10)
			break;
	}
	pthread_join(th, NULL);
	CHECK(completed == NMSG, "%u of %u completed", completed, NMSG);
	CHECK(a.recv_failures == 0, "%d receive completions wrong", a.recv_failures);
	{
		struct uroce_qp_stats qs;
		struct loop_link_stats ls;

		CHECK(uroce_qp_stats(a.qp[0], &qs) == 0, "stats");
		loop_fabric_stats(fab, &ls);
		printf("dedicated: %u messages, %u received; lost %llu dup %llu reordered %llu; retransmits %llu "
		       "timeouts %llu\n", completed, a.received, (unsigned long long)ls.lost,
		       (unsigned long long)ls.duplicated, (unsigned long long)ls.reordered,
		       (unsigned long long)qs.retransmits, (unsigned long long)qs.timeouts);
	}
	tr_ctx_teardown(2, a.qp, a.scq, a.rcq, a.mr, a.pd, a.ctx, fab, a.buf);
	return test_done("transport_dedicated");
}
