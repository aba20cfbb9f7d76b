/* The rc responder's checks and RNR over the loop fabric: a request it must
 * refuse (bad rkey, out of bounds, access flags of the MR or the QP) gets
 * the right NAK, the requester the right WC status, both QPs go to ERR, the
 * drop is counted by reason and no byte is written; a SEND with no receive
 * posted is RNR NAKed until one is, and rnr_retry running out ends the
 * requester in RNR_RETRY_EXC_ERR. */
#include "tr_test.h"

#define STEPS 200000u

/* A request the responder must refuse: the requester's WC, the QPs'
 * states, the counters, and no byte written. */
static void refused(const char *what, int mr_access, int qp_access, int op, uint64_t off, uint32_t len, bool bad_key,
                    enum uroce_wc_status want, enum uroce_drop_reason reason)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_sge sg;
	struct uroce_send_wr wr = { 0 };
	struct uroce_wc wc;
	struct uroce_qp_attr qa;
	struct uroce_port_stats st;
	uint8_t *copy = malloc(TR_BUF);

	tr_opts_default(&o, UROCE_QPT_RC);
	o.mr_access = mr_access;
	o.access = qp_access;
	tr_open(&p, &o, 4, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	tr_fill(a->buf, TR_BUF, 5);
	tr_fill(b->buf, TR_BUF, 6);
	memcpy(copy, b->buf, TR_BUF);
	tr_sge(&sg, a, 0, len);
	wr.wr_id = 1;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)b->buf + off;
	wr.wr.rdma.rkey = bad_key ? b->mr->rkey ^ 0x100 : b->mr->rkey;
	if (op >= UROCE_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)b->buf + off;
		wr.wr.atomic.rkey = wr.wr.rdma.rkey;
		wr.wr.atomic.compare_add = 1;
	}
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "%s: post: %s", what, uroce_last_error());
	wr.wr_id = 2;
	wr.opcode = UROCE_WR_SEND;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "%s: post: %s", what, uroce_last_error());
	if (tr_wait(&p, a->scq, &wc, STEPS) == 0) {
		CHECK(wc.wr_id == 1 && wc.status == want, "%s: wr %llu status %s want %s", what,
		      (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status), uroce_wc_status_str(want));
	} else {
		CHECK(0, "%s: no completion", what);
	}
	CHECK(tr_wait(&p, a->scq, &wc, 1000) == 0 && wc.wr_id == 2 && wc.status == UROCE_WC_WR_FLUSH_ERR,
	      "%s: the next WR is not flushed", what);
	uroce_qp_query(a->qp, &qa, NULL);
	CHECK(qa.qp_state == UROCE_QPS_ERR, "%s: requester in %s", what, uroce_qp_state_str(qa.qp_state));
	uroce_qp_query(b->qp, &qa, NULL);
	CHECK(qa.qp_state == UROCE_QPS_ERR, "%s: responder in %s", what, uroce_qp_state_str(qa.qp_state));
	uroce_port_stats(b->ctx, 1, &st);
	CHECK(st.drops[reason] == 1, "%s: drops[%s] = %llu", what, uroce_drop_reason_name(reason),
	      (unsigned long long)st.drops[reason]);
	CHECK(memcmp(copy, b->buf, TR_BUF) == 0, "%s: the responder's memory changed", what);
	free(copy);
	tr_close(&p);
}

static void test_responder_checks(void)
{
	const int all = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ |
	                UROCE_ACCESS_REMOTE_ATOMIC;

	refused("write bad rkey", all, all, UROCE_WR_RDMA_WRITE, 0, 3000, true, UROCE_WC_REM_ACCESS_ERR,
	        UROCE_DROP_BAD_RKEY);
	refused("write past the end", all, all, UROCE_WR_RDMA_WRITE, TR_BUF - 2999, 3000, false,
	        UROCE_WC_REM_ACCESS_ERR, UROCE_DROP_OUT_OF_BOUNDS);
	refused("write before the start", all, all, UROCE_WR_RDMA_WRITE, (uint64_t)-8, 100, false,
	        UROCE_WC_REM_ACCESS_ERR, UROCE_DROP_OUT_OF_BOUNDS);
	refused("write without REMOTE_WRITE on the MR", all & ~UROCE_ACCESS_REMOTE_WRITE, all, UROCE_WR_RDMA_WRITE, 0,
	        100, false, UROCE_WC_REM_ACCESS_ERR, UROCE_DROP_ACCESS_DENIED);
	refused("write without REMOTE_WRITE on the QP", all, all & ~UROCE_ACCESS_REMOTE_WRITE, UROCE_WR_RDMA_WRITE,
	        0, 100, false, UROCE_WC_REM_ACCESS_ERR, UROCE_DROP_ACCESS_DENIED);
	refused("read without REMOTE_READ", all & ~UROCE_ACCESS_REMOTE_READ, all, UROCE_WR_RDMA_READ, 0, 5000, false,
	        UROCE_WC_REM_ACCESS_ERR, UROCE_DROP_ACCESS_DENIED);
	refused("read past the end", all, all, UROCE_WR_RDMA_READ, TR_BUF - 10, 11, false, UROCE_WC_REM_ACCESS_ERR,
	        UROCE_DROP_OUT_OF_BOUNDS);
	refused("atomic without REMOTE_ATOMIC", all & ~UROCE_ACCESS_REMOTE_ATOMIC, all, UROCE_WR_ATOMIC_FETCH_AND_ADD,
	        64, 8, false, UROCE_WC_REM_ACCESS_ERR, UROCE_DROP_ACCESS_DENIED);
	refused("atomic bad rkey", all, all, UROCE_WR_ATOMIC_CMP_AND_SWP, 64, 8, true, UROCE_WC_REM_ACCESS_ERR,
	        UROCE_DROP_BAD_RKEY);
}

static void test_rnr(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_sge sg;
	struct uroce_send_wr wr = { 0 };
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	struct uroce_qp_attr qa;

	/* no receive posted: RNR NAKs until one is, then success */
	tr_opts_default(&o, UROCE_QPT_RC);
	o.rnr_retry = 7; /* infinite */
	o.min_rnr_timer = 12; /* 0.64 ms */
	tr_open(&p, &o, 5, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	tr_fill(a->buf, 3000, 9);
	tr_sge(&sg, a, 0, 3000);
	wr.wr_id = 1;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_SEND;
	wr.send_flags = UROCE_SEND_SIGNALED;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	for (int i = 0; i < 2000; i++)
		tr_step(&p);
	CHECK(uroce_poll_cq(a->scq, 1, &wc) == 0, "completed without a receive buffer");
	uroce_qp_stats(a->qp, &qs);
	CHECK(qs.rnr_naks_rcvd >= 2, "rnr naks received %llu", (unsigned long long)qs.rnr_naks_rcvd);
	tr_post_recv(b, 5, 0, 4096);
	CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_SUCCESS, "send after RNR: %s",
	      uroce_wc_status_str(wc.status));
	CHECK(tr_wait(&p, b->rcq, &wc, STEPS) == 0 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == 3000,
	      "recv after RNR");
	CHECK(memcmp(a->buf, b->buf, 3000) == 0, "data after RNR");
	tr_close(&p);

	/* rnr_retry 2: the third RNR NAK ends it */
	o.rnr_retry = 2;
	o.min_rnr_timer = 1;
	tr_open(&p, &o, 6, NULL, NULL);
	a = &p.s[0];
	tr_sge(&sg, a, 0, 100);
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_RNR_RETRY_EXC_ERR, "rnr exhausted: %s",
	      uroce_wc_status_str(wc.status));
	uroce_qp_stats(a->qp, &qs);
	CHECK(qs.rnr_naks_rcvd == 3, "rnr naks %llu, want 3", (unsigned long long)qs.rnr_naks_rcvd);
	uroce_qp_query(a->qp, &qa, NULL);
	CHECK(qa.qp_state == UROCE_QPS_ERR, "after RNR_RETRY_EXC_ERR the QP is in %s", uroce_qp_state_str(qa.qp_state));
	tr_close(&p);
}

int main(void)
{
	test_responder_checks();
	test_rnr();
	return test_done("tr_rc_responder");
}
