/* SPDX-License-Identifier: MIT */
/* Adaptive timeouts (OptiNIC 3.1.2) over the loop fabric: three members,
 * each a context of two ports with a be QP to each of the others.
 * - the rule: the median of the proposals, then T = 0.2 median + 0.8 T;
 * - the warm-up sets (1 + 0.25) x warm-up + 50 us on every QP, and a
 *   receive then ends at that deadline;
 * - after a run of be traffic each member's proposal is what its receives
 *   measured per byte times the message size (with the margin), the
 *   exchange ends with the same timeout on every member, equal to the
 *   rule applied to the three proposals, also when 30% of the votes are
 *   lost;
 * - votes: only for the rounds near ours and within 1/8x..8x of the
 *   group's timeout (else dropped, bad_vote); a forged far round never
 *   stalls the real one; huge values saturate instead of wrapping;
 * - bad arguments are refused with a message. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"
#include "transport/rel/be/rel_be.h"
#include "transport/rel/sr/sr_wire.h"
#include "../dataplane/dp_test.h"

#define N 3
#define BUF (1u << 20)
#define MSG (64u * 1024u)

struct member {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	uint8_t *buf;
	struct uroce_mr *mr;
	struct uroce_qp *qp[N]; /* qp[j]: to member j (NULL for itself) */
	struct uroce_tmo *g;
};

static struct loop_fabric *fab;
static struct member M[N];

/* member i's port towards j (1 or 2) and its loop index */
static unsigned port_to(unsigned i, unsigned j)
{
	unsigned k = 0;

	for (unsigned x = 0; x < j; x++)
		k += x != i;
	return k + 1;
}

static void step(void)
{
	int n = 0;

	for (unsigned i = 0; i < N; i++)
		n += uroce_progress(M[i].ctx);
	loop_fabric_advance(fab, n ? 1000u : 10000u);
}

static void connect_qp(unsigned i, unsigned j)
{
	struct uroce_qp_attr a = { 0 };
	struct uroce_qp *qp = M[i].qp[j];

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = (uint8_t)port_to(i, j);
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS) == 0,
	        "init: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_4096;
	a.dest_qp_num = uroce_qp_num(M[j].qp[i]);
	a.dest_token = uroce_qp_token(M[j].qp[i]);
	REQUIRE(uroce_query_gid(M[j].ctx, (uint8_t)port_to(j, i), 1, a.ah_attr.dgid) == 0, "gid: %s",
	        uroce_last_error());
	a.ah_attr.sgid_index = 1;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
	                                        UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER) == 0,
	        "rtr: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTS;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                        UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC) == 0,
	        "rts: %s", uroce_last_error());
}

static void open_all(void)
{
	/* member i's ports are loop 2i and 2i + 1; wire each pair once */
	fab = loop_fabric_create(2 * N, 99);
	REQUIRE(fab, "fabric");
	for (unsigned i = 0; i < N; i++)
		for (unsigned j = i + 1; j < N; j++) {
			struct loop_impairment imp = { .delay_ns = 5000u * (i + j) }; /* each link its own RTT */

			REQUIRE(loop_fabric_connect(fab, 2 * i + port_to(i, j) - 1, 2 * j + port_to(j, i) - 1, &imp, &imp) == 0,
			        "wire %u-%u", i, j);
		}
	for (unsigned i = 0; i < N; i++) {
		char p1[16], p2[16];
		const char *specs[2] = { p1, p2 };
		struct uroce_context_attr ca = { 0 };

		snprintf(p1, sizeof(p1), "loop:%u", 2 * i);
		snprintf(p2, sizeof(p2), "loop:%u", 2 * i + 1);
		ca.ports = specs;
		ca.nports = 2;
		ca.loop_fabric = fab;
		REQUIRE(uroce_context_create(&M[i].ctx, &ca) == 0, "ctx: %s", uroce_last_error());
		REQUIRE(uroce_pd_alloc(M[i].ctx, &M[i].pd) == 0, "pd");
		REQUIRE(uroce_cq_create(M[i].ctx, 1024, &M[i].cq) == 0, "cq");
		M[i].buf = aligned_alloc(4096, BUF);
		REQUIRE(M[i].buf, "buf");
		memset(M[i].buf, (int)i, BUF);
		REQUIRE(uroce_mr_reg(M[i].pd, M[i].buf, BUF, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE,
		                     &M[i].mr) == 0, "mr");
		for (unsigned j = 0; j < N; j++) {
			struct uroce_qp_init_attr ia = { 0 };

			if (j == i)
				continue;
			ia.qp_type = UROCE_QPT_RC;
			ia.send_cq = ia.recv_cq = M[i].cq;
			ia.cap.max_send_wr = ia.cap.max_recv_wr = 32;
			ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
			ia.rel.reliability = UROCE_REL_BE;
			ia.rel.timeout_us = 100000;
			REQUIRE(uroce_qp_create(M[i].pd, &ia, &M[i].qp[j]) == 0, "qp: %s", uroce_last_error());
		}
	}
	for (unsigned i = 0; i < N; i++)
		for (unsigned j = 0; j < N; j++)
			if (i != j)
				connect_qp(i, j);
}

static void close_all(void)
{
	for (unsigned i = 0; i < N; i++) {
		struct member *m = &M[i];

		if (m->g)
			CHECK(uroce_tmo_destroy(m->g) == 0, "tmo_destroy");
		for (unsigned j = 0; j < N; j++)
			if (m->qp[j])
				CHECK(uroce_qp_destroy(m->qp[j]) == 0, "qp_destroy");
		CHECK(uroce_mr_dereg(m->mr) == 0, "mr");
		CHECK(uroce_cq_destroy(m->cq) == 0, "cq");
		CHECK(uroce_pd_free(m->pd) == 0, "pd");
		CHECK(uroce_context_destroy(m->ctx) == 0, "ctx: %s", uroce_last_error());
		free(m->buf);
	}
	memset(M, 0, sizeof(M));
	loop_fabric_destroy(fab);
}

/* One run of the "collective": every member sends MSG to every other; each
 * receive completes whole. */
static void one_run(void)
{
	unsigned want = 0, got = 0;
	struct uroce_wc wc[16];

	for (unsigned i = 0; i < N; i++)
		for (unsigned j = 0; j < N; j++) {
			struct uroce_sge sg = { (uint64_t)(uintptr_t)M[i].buf + j * MSG, MSG, M[i].mr->lkey };
			struct uroce_recv_wr wr = { .sg_list = &sg, .num_sge = 1 };

			if (i != j) {
				REQUIRE(uroce_post_recv(M[i].qp[j], &wr, NULL) == 0, "recv: %s", uroce_last_error());
				want += 2;
			}
		}
	for (unsigned i = 0; i < N; i++)
		for (unsigned j = 0; j < N; j++) {
			struct uroce_sge sg = { (uint64_t)(uintptr_t)M[i].buf + 512 * 1024, MSG, M[i].mr->lkey };
			struct uroce_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_SEND,
			                            .send_flags = UROCE_SEND_SIGNALED };

			if (i != j)
				REQUIRE(uroce_post_send(M[i].qp[j], &wr, NULL) == 0, "send: %s", uroce_last_error());
		}
	for (unsigned s = 0; s < 200000 && got < want; s++) {
		step();
		for (unsigned i = 0; i < N; i++) {
			int n = uroce_poll_cq(M[i].cq, 16, wc);

			for (int k = 0; k < n; k++) {
				CHECK(wc[k].status == UROCE_WC_SUCCESS && !(wc[k].wc_flags & UROCE_WC_PARTIAL),
				      "member %u: %s flags 0x%x", i, uroce_wc_status_str(wc[k].status), wc[k].wc_flags);
				got++;
			}
		}
	}
	CHECK(got == want, "run: %u of %u completions", got, want);
}

/* Each member sends its proposal clamped to [t / 4, 4 t] (tmo.c), so
 * peers whose timeouts differ a little still take it. */
static uint64_t rule(uint64_t t, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t v[3] = { a, b, c }, med;

	for (int i = 0; i < 3; i++)
		v[i] = v[i] < t / 4 ? t / 4 : v[i] > 4 * t ? 4 * t : v[i];
	for (int i = 0; i < 3; i++)
		for (int k = i + 1; k < 3; k++)
			if (v[k] < v[i]) {
				uint64_t x = v[i];

				v[i] = v[k];
				v[k] = x;
			}
	med = v[1];
	return (uint64_t)(0.2 * (double)med + 0.8 * (double)t);
}

static bool exchange_all(uint32_t round, unsigned max_steps)
{
	bool done[N] = { false };
	unsigned left = N;

	for (unsigned s = 0; s < max_steps && left; s++) {
		for (unsigned i = 0; i < N; i++)
			if (!done[i]) {
				int rc = uroce_tmo_exchange(M[i].g, round);

				CHECK(rc == 0 || rc == -EAGAIN, "exchange: %d %s", rc, uroce_last_error());
				if (rc == 0) {
					done[i] = true;
					left--;
				}
			}
		step();
	}
	return left == 0;
}

static void run_exchange(void)
{
	struct uroce_tmo_attr ta = { .group_id = 42, .msg_bytes = MSG };
	uint64_t t0, prop[N], want;
	struct uroce_wc wc;

	open_all();
	for (unsigned i = 0; i < N; i++) {
		struct uroce_qp *qps[N - 1];
		unsigned k = 0;

		for (unsigned j = 0; j < N; j++)
			if (j != i)
				qps[k++] = M[i].qp[j];
		REQUIRE(uroce_tmo_create(&ta, qps, N - 1, &M[i].g) == 0, "tmo_create: %s", uroce_last_error());
		REQUIRE(uroce_tmo_warmup(M[i].g, 1000000) == 0, "warmup: %s", uroce_last_error());
		CHECK(uroce_tmo_timeout_ns(M[i].g) == 1300000, "initial timeout %llu ns; want 1.25 x 1 ms + 50 us",
		      (unsigned long long)uroce_tmo_timeout_ns(M[i].g));
	}
	/* the warm-up's value is every QP's deadline now */
	{
		struct uroce_sge sg = { (uint64_t)(uintptr_t)M[0].buf, 64, M[0].mr->lkey };
		struct uroce_recv_wr wr = { .sg_list = &sg, .num_sge = 1 };
		uint64_t start = loop_fabric_now(fab), took;
		unsigned s;

		REQUIRE(uroce_post_recv(M[0].qp[1], &wr, NULL) == 0, "recv");
		for (s = 0; s < 100000 && uroce_poll_cq(M[0].cq, 1, &wc) != 1; s++)
			step();
		took = loop_fabric_now(fab) - start;
		CHECK(s < 100000 && (wc.wc_flags & UROCE_WC_TIMEOUT) && took >= 1300000 && took <= 1400000,
		      "a receive with the group's deadline ended after %llu us (flags 0x%x)",
		      (unsigned long long)took / 1000, wc.wc_flags);
	}
	/* that receive consumed message number 0 of 1 -> 0: send one to match */
	{
		struct uroce_sge sg = { (uint64_t)(uintptr_t)M[1].buf, 64, M[1].mr->lkey };
		struct uroce_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_SEND };

		REQUIRE(uroce_post_send(M[1].qp[0], &wr, NULL) == 0, "send");
		for (int s = 0; s < 100; s++)
			step();
		for (unsigned i = 0; i < N; i++)
			REQUIRE(uroce_tmo_warmup(M[i].g, 1000000) == 0, "warmup again"); /* measure from here */
	}
	one_run();
	for (unsigned i = 0; i < N; i++) {
		prop[i] = uroce_tmo_proposal_ns(M[i].g);
		CHECK(prop[i] > 50000 && prop[i] < 1300000, "member %u proposes %llu ns", i, (unsigned long long)prop[i]);
	}
	t0 = uroce_tmo_timeout_ns(M[0].g);
	want = rule(t0, prop[0], prop[1], prop[2]);
	CHECK(exchange_all(1, 20000), "round 1 did not finish");
	for (unsigned i = 0; i < N; i++)
		CHECK(llabs((long long)uroce_tmo_timeout_ns(M[i].g) - (long long)want) <= 1,
		      "member %u: timeout %llu ns, the rule gives %llu (proposals %llu %llu %llu)", i,
		      (unsigned long long)uroce_tmo_timeout_ns(M[i].g), (unsigned long long)want,
		      (unsigned long long)prop[0], (unsigned long long)prop[1], (unsigned long long)prop[2]);
	printf("  proposals %llu %llu %llu ns -> timeout %llu ns\n", (unsigned long long)prop[0],
	       (unsigned long long)prop[1], (unsigned long long)prop[2], (unsigned long long)want);

	/* round 2 over links that lose 30% of everything */
	{
		struct loop_impairment lossy = { .loss = 0.3, .delay_ns = 5000 };
		struct loop_impairment clean = { .delay_ns = 5000 };

		for (unsigned p = 0; p < 2 * N; p++)
			loop_fabric_set_impairment(fab, p, &lossy);
		CHECK(exchange_all(2, 200000), "round 2 with 30%% loss did not finish");
		for (unsigned i = 1; i < N; i++)
			CHECK(uroce_tmo_timeout_ns(M[i].g) == uroce_tmo_timeout_ns(M[0].g),
			      "after round 2 member %u has %llu ns, member 0 %llu", i,
			      (unsigned long long)uroce_tmo_timeout_ns(M[i].g),
			      (unsigned long long)uroce_tmo_timeout_ns(M[0].g));
		for (unsigned p = 0; p < 2 * N; p++)
			loop_fabric_set_impairment(fab, p, &clean);
	}
	close_all();
}

static void run_rule_and_args(void)
{
	struct uroce_tmo_attr ta = { .group_id = 1, .msg_bytes = 4096 };
	uint64_t v3[3] = { 5000, 1000, 3000 }, v4[4] = { 4000, 1000, 3000, 2000 };
	struct uroce_tmo *g;
	struct uroce_qp *qps[2];

	open_all();
	qps[0] = M[0].qp[1];
	qps[1] = M[0].qp[2];
	REQUIRE(uroce_tmo_create(&ta, qps, 2, &g) == 0, "create: %s", uroce_last_error());
	CHECK(uroce_tmo_update(g, v3, 3) == 3000, "first value = median 3000: %llu",
	      (unsigned long long)uroce_tmo_timeout_ns(g));
	CHECK(uroce_tmo_update(g, v4, 4) == (uint64_t)(0.2 * 2500 + 0.8 * 3000), "median of four 2500, EWMA: %llu",
	      (unsigned long long)uroce_tmo_timeout_ns(g));
	CHECK(uroce_tmo_create(&ta, qps, 2, &M[0].g) == -EEXIST, "a second group with the same id and QPs");
	CHECK(uroce_tmo_destroy(g) == 0, "destroy");
	ta.msg_bytes = 0;
	CHECK(uroce_tmo_create(&ta, qps, 2, &g) == -EINVAL && strstr(uroce_last_error(), "msg_bytes"), "msg_bytes 0: %s",
	      uroce_last_error());
	ta.msg_bytes = 1;
	ta.alpha = 1.5;
	CHECK(uroce_tmo_create(&ta, qps, 2, &g) == -EINVAL && strstr(uroce_last_error(), "alpha"), "alpha 1.5: %s",
	      uroce_last_error());
	ta.alpha = 0;
	CHECK(uroce_tmo_create(&ta, qps, 0, &g) == -EINVAL, "no QPs");
	{
		struct uroce_qp_init_attr ia = { 0 };
		struct uroce_qp *rcqp;

		ia.qp_type = UROCE_QPT_RC;
		ia.send_cq = ia.recv_cq = M[0].cq;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
		REQUIRE(uroce_qp_create(M[0].pd, &ia, &rcqp) == 0, "rc qp");
		qps[1] = rcqp;
		CHECK(uroce_tmo_create(&ta, qps, 2, &g) == -EINVAL && strstr(uroce_last_error(), "be QP"),
		      "an rc QP in the group: %s", uroce_last_error());
		CHECK(uroce_qp_destroy(rcqp) == 0, "destroy rc qp");
	}
	CHECK(uroce_tmo_warmup(NULL, 5) == -EINVAL, "warmup of no group");
	close_all();
}

static uint64_t drops(enum uroce_drop_reason r)
{
	struct uroce_port_stats ps;
	uint64_t n = 0;

	for (uint8_t p = 1; p <= 2; p++)
		if (uroce_port_stats(M[0].ctx, p, &ps) == 0)
			n += ps.drops[r];
	return n;
}

/* A VOTE body as the peer on qp would send it (what tmo_rx_vote reads
 * after the control header, whose token was checked before). */
static void vote(struct uroce_qp *qp, uint32_t group, uint32_t round, uint64_t prop)
{
	uint8_t b[SRW_VOTE_LEN] = { 0 };

	roce_put_be32(b, group);
	roce_put_be32(b + 4, round);
	roce_put_be64(b + 8, prop);
	tmo_rx_vote(qp, b, sizeof(b));
}

static void run_votes(void)
{
	struct uroce_tmo_attr ta = { .group_id = 9, .msg_bytes = 4096 };
	const uint64_t t = 225000; /* 1.25 x 140 us + 50 us */
	struct uroce_qp *qps[2];
	struct uroce_tmo *g;
	uint64_t bad0, big = UINT64_MAX;

	open_all();
	qps[0] = M[0].qp[1];
	qps[1] = M[0].qp[2];
	REQUIRE(uroce_tmo_create(&ta, qps, 2, &g) == 0, "create: %s", uroce_last_error());
	/* before the first exchange: a vote for a far round, in the slot round 5 uses */
	vote(qps[0], 9, 1001, t);
	/* and both peers' for round 1002: gone once round 5 starts */
	vote(qps[0], 9, 1002, t);
	vote(qps[1], 9, 1002, t);
	REQUIRE(uroce_tmo_warmup(g, 140000) == 0, "warmup");
	CHECK(uroce_tmo_timeout_ns(g) == t, "warm-up timeout %llu", (unsigned long long)uroce_tmo_timeout_ns(g));
	CHECK(uroce_tmo_exchange(g, 5) == -EAGAIN, "round 5 starts without votes");
	bad0 = drops(UROCE_DROP_BAD_VOTE);
	vote(qps[0], 9, 5, 60000000000ull); /* 60 s: the finding's value */
	vote(qps[0], 9, 5, UINT64_MAX);
	vote(qps[0], 9, 5, 0);
	vote(qps[0], 9, 5, t / 9);
	vote(qps[0], 9, 5, 8 * t + 1);
	vote(qps[0], 9, 8, t);       /* 3 rounds ahead */
	vote(qps[0], 9, 1005, t);    /* far ahead: the slot of round 5 */
	vote(qps[0], 9, 3, t);       /* 2 behind */
	CHECK(drops(UROCE_DROP_BAD_VOTE) - bad0 == 8, "%llu of 8 out-of-range votes counted bad_vote",
	      (unsigned long long)(drops(UROCE_DROP_BAD_VOTE) - bad0));
	vote(qps[0], 9, 7, t);       /* 2 ahead: taken, for round 7 */
	vote(qps[1], 9, 4, t);       /* the round before: taken, for round 4 */
	CHECK(drops(UROCE_DROP_BAD_VOTE) - bad0 == 8, "votes for rounds 4 and 7 taken");
	CHECK(uroce_tmo_exchange(g, 5) == -EAGAIN, "no vote for round 5 yet, none of the others counts");
	CHECK(uroce_tmo_timeout_ns(g) == t, "timeout unchanged: %llu", (unsigned long long)uroce_tmo_timeout_ns(g));
	/* the real votes, at the edges of the range */
	vote(qps[0], 9, 5, 8 * t);
	vote(qps[1], 9, 5, 2 * t);
	CHECK(uroce_tmo_exchange(g, 5) == 0, "round 5 with both votes in: %s", uroce_last_error());
	/* median of our t (nothing measured), 8t, 2t is 2t: 0.2 x 2t + 0.8 t */
	CHECK(uroce_tmo_timeout_ns(g) == (uint64_t)(0.2 * 2 * t + 0.8 * t), "timeout after round 5: %llu",
	      (unsigned long long)uroce_tmo_timeout_ns(g));
	CHECK(uroce_tmo_exchange(g, 1002) == -EAGAIN, "a jump to round 1002 found the votes kept before round 5");
	/* saturation: no wrap in the rule, the warm-up or the deadline */
	CHECK(uroce_tmo_update(g, &big, 1) == (uint64_t)(0.2 * 60e9 + 0.8 * 1.2 * t), "update with 2^64-1: as 60 s: %llu",
	      (unsigned long long)uroce_tmo_timeout_ns(g));
	REQUIRE(uroce_tmo_warmup(g, UINT64_MAX) == 0, "warmup 2^64-1");
	CHECK(uroce_tmo_timeout_ns(g) == 60000000000ull, "a warm-up of 2^64-1 ns gives 60 s: %llu",
	      (unsigned long long)uroce_tmo_timeout_ns(g));
	CHECK(uroce_tmo_destroy(g) == 0, "destroy");
	REQUIRE(uroce_tmo_create(&ta, qps, 2, &g) == 0, "create again");
	CHECK(uroce_tmo_update(g, &big, 1) == 60000000000ull, "a first value of 2^64-1 ns is 60 s: %llu",
	      (unsigned long long)uroce_tmo_timeout_ns(g));
	CHECK(uroce_tmo_destroy(g) == 0, "destroy");
	close_all();
}

int main(void)
{
	run_rule_and_args();
	run_votes();
	run_exchange();
	return test_done("tr_tmo");
}
