/* SPDX-License-Identifier: MIT */
/* The requester's and the context's connection checks on the loop fabric,
 * one case per finding: a raw port plays the connected peer (raw_peer.h)
 * and sends responses outside the window; random key bytes with lkey !=
 * rkey; CQ overrun with its asynchronous events. Each case checks the drop
 * reason and that the QP was not disturbed. The responder's checks
 * (forged requests, responder resources) are in test_rc_responder.c. */
#include "transport/core/qp_internal.h"
#include "transport/core/mr.h"
#include "raw_peer.h" /* after them: its globals (ctx) would shadow their parameters */

/* Finding: one NAK (remote access error) a million PSNs behind moved an
 * idle QP to ERR; a forged RNR NAK stalled it; one ACK with credit code 31
 * turned credits off. Now: stale_response, and the QP goes on. */
static void case_stale_responses(void)
{
	struct uroce_qp *qp = make_qp(UROCE_QPT_RC, 4, 0, 2000000);
	struct uroce_qp *q = qp;
	struct roce_pkt p;
	struct uroce_sge sg = { (uint64_t)(uintptr_t)region, 64, mr->lkey };
	struct uroce_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE,
		                    .send_flags = UROCE_SEND_SIGNALED };
	struct uroce_wc wc;
	uint64_t st0 = tr_drops(ctx, UROCE_DROP_STALE_RESPONSE);
	const uint8_t syns[] = { AETH_NAK_REM_ACC_ERR, AETH_RNR_NAK | 0, AETH_ACK | 31, AETH_NAK_PSN_SEQ_ERR };

	/* idle: every response is a ghost */
	for (unsigned i = 0; i < sizeof(syns); i++) {
		pkt_init(&p, ROCE_TR_RC | ROCE_OP_ACK, uroce_qp_num(qp), 2000000 - 1000000);
		p.aeth.syndrome = syns[i];
		send_raw(&p);
		pkt_init(&p, ROCE_TR_RC | ROCE_OP_ACK, uroce_qp_num(qp), 1999999); /* the last PSN "sent" */
		p.aeth.syndrome = syns[i];
		send_raw(&p);
	}
	settle();
	CHECK(tr_drops(ctx, UROCE_DROP_STALE_RESPONSE) == st0 + 2 * sizeof(syns), "ghost responses: stale_response %llu, want %zu",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_STALE_RESPONSE) - st0), 2 * sizeof(syns));
	CHECK(tr_qp_state(qp) == UROCE_QPS_RTS, "idle QP moved to %s", uroce_qp_state_str(tr_qp_state(qp)));
	CHECK(!q->rc.credit_unlimited, "a ghost ACK turned credits off");

	/* one WRITE outstanding (PSN 2000000): out-of-window NAKs, RNR NAKs
	 * and credits around it change nothing; the real ACK completes it */
	REQUIRE(uroce_post_send(qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	step(5);
	drain();
	st0 = tr_drops(ctx, UROCE_DROP_STALE_RESPONSE);
	for (unsigned i = 0; i < sizeof(syns); i++) {
		pkt_init(&p, ROCE_TR_RC | ROCE_OP_ACK, uroce_qp_num(qp), 2000001); /* never sent */
		p.aeth.syndrome = syns[i];
		send_raw(&p);
		pkt_init(&p, ROCE_TR_RC | ROCE_OP_ACK, uroce_qp_num(qp), 1000000);
		p.aeth.syndrome = syns[i];
		send_raw(&p);
	}
	settle();
	CHECK(tr_drops(ctx, UROCE_DROP_STALE_RESPONSE) == st0 + 2 * sizeof(syns), "stale responses: %llu, want %zu",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_STALE_RESPONSE) - st0), 2 * sizeof(syns));
	CHECK(tr_qp_state(qp) == UROCE_QPS_RTS && !q->rc.rnr_wait && !q->rc.credit_unlimited,
	      "stale responses acted on: state %s rnr_wait %d unlimited %d", uroce_qp_state_str(tr_qp_state(qp)),
	      q->rc.rnr_wait, q->rc.credit_unlimited);
	CHECK(uroce_poll_cq(cq, 1, &wc) == 0, "the WRITE completed before its ACK");
	pkt_init(&p, ROCE_TR_RC | ROCE_OP_ACK, uroce_qp_num(qp), 2000000);
	p.aeth.syndrome = AETH_ACK | 31;
	send_raw(&p);
	settle();
	CHECK(uroce_poll_cq(cq, 1, &wc) == 1 && wc.status == UROCE_WC_SUCCESS && wc.wr_id == 7,
	      "the real ACK did not complete the WRITE");
	/* an in-window code 31 switches flow control off; a valid code
	 * afterwards switches it back on */
	CHECK(q->rc.credit_unlimited, "in-window code 31 ignored");
	REQUIRE(uroce_post_send(qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	step(5);
	pkt_init(&p, ROCE_TR_RC | ROCE_OP_ACK, uroce_qp_num(qp), 2000001);
	p.aeth.syndrome = AETH_ACK | 4;
	p.aeth.msn = 2;
	send_raw(&p);
	settle();
	CHECK(!q->rc.credit_unlimited && q->rc.lsn == 2 + 4, "a valid code did not restore credits (lsn %u)", q->rc.lsn);
	while (uroce_poll_cq(cq, 1, &wc) == 1)
		;
	CHECK(uroce_qp_destroy(qp) == 0, "destroy");
}

/* Finding: lkey == rkey, and keys were index << 8 | counter (the first
 * MR's key always 0x101). Now the key byte is random per context start,
 * lkey != rkey, and a re-registration never reuses the revoked keys. */
static void case_keys(void)
{
	uint8_t rkey_bytes[8];
	bool all_same = true;

	CHECK(mr->lkey != mr->rkey && (mr->lkey >> 8) == (mr->rkey >> 8), "lkey 0x%x rkey 0x%x", mr->lkey, mr->rkey);
	for (unsigned i = 0; i < 8; i++) {
		struct uroce_context_attr ca = { .port = "loop:0", .loop_fabric = fab };
		struct uroce_context *c;
		struct uroce_pd *p2;
		struct uroce_mr *m, *m2;
		uint32_t old_l, old_r;

		/* loop:0 is open: use a fresh fabric for key draws only */
		struct loop_fabric *f2 = loop_fabric_create(1, 5 + i);

		ca.loop_fabric = f2;
		REQUIRE(f2 && uroce_context_create(&c, &ca) == 0, "ctx: %s", uroce_last_error());
		REQUIRE(uroce_pd_alloc(c, &p2) == 0, "pd");
		REQUIRE(uroce_mr_reg(p2, region, 64, 15, &m) == 0, "mr");
		rkey_bytes[i] = (uint8_t)m->rkey;
		CHECK(m->lkey != m->rkey, "lkey == rkey");
		CHECK(!mr_lookup_rkey((struct uroce_context *)c, m->lkey), "the lkey works as an rkey");
		old_l = m->lkey;
		old_r = m->rkey;
		REQUIRE(uroce_mr_dereg(m) == 0, "dereg");
		REQUIRE(uroce_mr_reg(p2, region, 64, 15, &m2) == 0, "mr");
		CHECK((m2->rkey >> 8) != (old_r >> 8) || (m2->rkey != old_r && m2->rkey != old_l && m2->lkey != old_l &&
		                                          m2->lkey != old_r),
		      "re-registration reused a revoked key");
		REQUIRE(uroce_mr_dereg(m2) == 0 && uroce_pd_free(p2) == 0 && uroce_context_destroy(c) == 0, "teardown");
		loop_fabric_destroy(f2);
		if (i && rkey_bytes[i] != rkey_bytes[0])
			all_same = false;
	}
	CHECK(!all_same, "8 context starts gave the same key byte 0x%02x", rkey_bytes[0]);
}

/* Finding: a full CQ dropped completions silently. Now the CQ goes to
 * error, CQ_ERR and QP_FATAL are raised, the QP is in ERR, and polling
 * gives the queued completions and then -EIO. */
static void case_cq_overrun(void)
{
	struct uroce_cq *small;
	struct uroce_qp *qp;
	struct uroce_async_event ev;
	struct uroce_wc wc[16];
	struct roce_pkt p;
	int got = 0, n;
	bool saw_cq = false, saw_qp = false;

	saw_qp_event(UROCE_EVENT_QP_FATAL, NULL); /* forget the earlier cases' events */
	CHECK(uroce_get_async_event(ctx, &ev) == -EAGAIN, "an event left after draining");
	REQUIRE(uroce_cq_create(ctx, 4, &small) == 0, "cq");
	qp = make_qp_cq(UROCE_QPT_UC, 0, 0, 0, small);
	for (unsigned i = 0; i < 32; i++) {
		struct uroce_sge sg = { (uint64_t)(uintptr_t)(region + 64 * i), 64, mr->lkey };
		struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

		REQUIRE(uroce_post_recv(qp, &wr, NULL) == 0, "post_recv");
	}
	for (unsigned i = 0; i < 20; i++) {
		uint8_t b[16];

		memset(b, (int)i, sizeof(b));
		pkt_init(&p, ROCE_TR_UC | ROCE_OP_SEND_ONLY, uroce_qp_num(qp), i);
		p.payload = b;
		p.payload_len = sizeof(b);
		send_raw(&p);
	}
	settle();
	while (uroce_get_async_event(ctx, &ev) == 0) {
		if (ev.event_type == UROCE_EVENT_CQ_ERR && ev.element.cq == small)
			saw_cq = true;
		if (ev.event_type == UROCE_EVENT_QP_FATAL && ev.element.qp == qp)
			saw_qp = true;
		uroce_ack_async_event(&ev);
	}
	CHECK(saw_cq && saw_qp, "async events: CQ_ERR %d, QP_FATAL %d", saw_cq, saw_qp);
	CHECK(!strcmp(uroce_event_type_str(UROCE_EVENT_CQ_ERR), "CQ error"), "event name");
	CHECK(tr_qp_state(qp) == UROCE_QPS_ERR, "QP in %s after its CQ overran", uroce_qp_state_str(tr_qp_state(qp)));
	while ((n = uroce_poll_cq(small, 16, wc)) > 0)
		got += n;
	CHECK(got >= 4 && got < 20, "%d completions before the error", got);
	CHECK(n == -EIO, "poll after the overrun: %d, want -EIO (%s)", n, uroce_last_error());
	CHECK(uroce_async_events_lost(ctx) == 0, "events lost");
	CHECK(uroce_qp_destroy(qp) == 0 && uroce_cq_destroy(small) == 0, "teardown");
}

int main(void)
{
	raw_peer_open(41);
	case_stale_responses();
	case_keys();
	case_cq_overrun();
	raw_peer_close();
	return test_done("transport_checks");
}
