/* SPDX-License-Identifier: MIT */
/* RC end-to-end credits on the loop fabric. The AETH credit code table
 * (IBTA), then a requester posting 200 SENDs at a responder that keeps
 * only 8 receives posted and reposts one per completion: the requester
 * must wait for credits instead of running into RNR NAKs, and every
 * message must arrive once, in order, intact. The same run against a
 * responder whose QP uses an SRQ (which advertises no credits, as rxe
 * always does) shows the RNR NAKs credits avoid. WRITEs, which take no
 * receive WQE, are never held back. */
#include <stdlib.h>
#include <string.h>

#include "tr_test.h"
#include "transport/core/qp_internal.h"
#include "transport/rel/rc/rc.h"

#define NMSG 200u
#define RQ_KEEP 8u
#define MSG 300u

static void test_codes(void)
{
	static const struct {
		uint32_t avail;
		uint8_t code;
	} v[] = {
		{ 0, 0 },     { 1, 1 },      { 4, 4 },      { 5, 4 },      { 6, 5 },       { 7, 5 },
		{ 8, 6 },     { 47, 10 },    { 48, 11 },    { 1000, 19 },  { 32767, 29 },  { 32768, 30 },
		{ 100000, 30 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CHECK(rc_credit_code(v[i].avail) == v[i].code, "%u WQEs: code %u, want %u", v[i].avail,
		      rc_credit_code(v[i].avail), v[i].code);
		CHECK(rc_credit_count(rc_credit_code(v[i].avail)) <= v[i].avail, "code promises more than there is");
	}
	CHECK(rc_credit_count(31) == UINT32_MAX, "code 31 is not 'no limit'");
}

static void post_recv(struct tr_side *s, struct uroce_qp *qp, struct uroce_srq *srq, uint32_t slot)
{
	struct uroce_recv_wr wr = { 0 }, *bad;
	struct uroce_sge g;

	tr_sge(&g, s, 512u * 1024u + (slot % 64u) * 1024u, 1024);
	wr.wr_id = slot;
	wr.sg_list = &g;
	wr.num_sge = 1;
	if (srq)
		REQUIRE(uroce_post_srq_recv(srq, &wr, &bad) == 0, "post_srq_recv: %s", uroce_last_error());
	else
		REQUIRE(uroce_post_recv(qp, &wr, &bad) == 0, "post_recv: %s", uroce_last_error());
}

/* 200 SENDs against RQ_KEEP posted receives; returns A's QP counters. */
static struct uroce_qp_stats run(bool use_srq)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_srq *srq = NULL;
	struct uroce_qp_stats st;
	uint32_t posted = 0, sent_done = 0, got = 0;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.sq_psn[0] = 0xffff80; /* the message numbers and PSNs wrap on the way */
	memset(&p, 0, sizeof(p));
	p.fab = loop_fabric_create(2, 7);
	REQUIRE(p.fab, "fabric");
	REQUIRE(loop_fabric_connect(p.fab, 0, 1, NULL, NULL) == 0, "connect");
	tr_side_open(&p, 0, &o);
	tr_side_open(&p, 1, &o);
	if (use_srq) {
		struct uroce_srq_init_attr sa = { .max_wr = 64, .max_sge = 1 };
		struct uroce_qp_init_attr ia = { 0 };

		/* B's QP again, on an SRQ */
		REQUIRE(uroce_srq_create(p.s[1].pd, &sa, &srq) == 0, "srq: %s", uroce_last_error());
		REQUIRE(uroce_qp_destroy(p.s[1].qp) == 0, "destroy");
		ia.qp_type = UROCE_QPT_RC;
		ia.send_cq = p.s[1].scq;
		ia.recv_cq = p.s[1].rcq;
		ia.srq = srq;
		ia.cap.max_send_wr = 16;
		ia.cap.max_send_sge = 1;
		REQUIRE(uroce_qp_create(p.s[1].pd, &ia, &p.s[1].qp) == 0, "qp on srq: %s", uroce_last_error());
	}
	REQUIRE(tr_connect(&p, 0, &o) == 0 && tr_connect(&p, 1, &o) == 0, "connect: %s", uroce_last_error());
	for (; posted < RQ_KEEP; posted++)
		post_recv(&p.s[1], p.s[1].qp, srq, posted);
	for (uint32_t i = 0; i < NMSG; i++) {
		struct uroce_send_wr wr = { 0 }, *bad;
		struct uroce_sge g;

		tr_fill(p.s[0].buf + i * MSG, MSG, i);
		tr_sge(&g, &p.s[0], i * MSG, MSG);
		wr.wr_id = i;
		wr.opcode = (i % 5 == 4) ? UROCE_WR_RDMA_WRITE : UROCE_WR_SEND;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.sg_list = &g;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(p.s[1].buf + 256u * 1024u + i * MSG);
		wr.wr.rdma.rkey = p.s[1].mr->rkey;
		REQUIRE(uroce_post_send(p.s[0].qp, &wr, &bad) == 0, "post_send %u: %s", i, uroce_last_error());
	}
	for (unsigned step = 0; step < 2000000 && (sent_done < NMSG || got < NMSG - NMSG / 5); step++) {
		struct uroce_wc wc;

		while (uroce_poll_cq(p.s[0].scq, 1, &wc) == 1) {
			CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == sent_done, "send wc %llu: %s",
			      (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status));
			sent_done++;
		}
		while (uroce_poll_cq(p.s[1].rcq, 1, &wc) == 1) {
			/* the got-th SEND is message got + got / 4 (every fifth is a WRITE) */
			uint32_t msg = got + got / 4;
			uint8_t want[MSG];

			CHECK(wc.status == UROCE_WC_SUCCESS && wc.byte_len == MSG, "recv %u: %s, %u bytes", got,
			      uroce_wc_status_str(wc.status), wc.byte_len);
			tr_fill(want, MSG, msg);
			CHECK(!memcmp(p.s[1].buf + 512u * 1024u + (wc.wr_id % 64u) * 1024u, want, MSG),
			      "receive %u does not hold message %u", got, msg);
			got++;
			post_recv(&p.s[1], p.s[1].qp, srq, posted++);
		}
		tr_step(&p);
	}
	CHECK(sent_done == NMSG && got == NMSG - NMSG / 5, "%s: %u of %u sends completed, %u received", use_srq ? "srq" : "rq",
	      sent_done, NMSG, got);
	for (uint32_t i = 4; i < NMSG; i += 5)
		CHECK(!memcmp(p.s[0].buf + i * MSG, p.s[1].buf + 256u * 1024u + i * MSG, MSG), "write %u", i);
	REQUIRE(uroce_qp_stats(p.s[0].qp, &st) == 0, "stats");
	printf("%s: credit_waits %llu rnr_naks %llu retransmits %llu\n", use_srq ? "srq (no credits)" : "rq (credits)",
	       (unsigned long long)st.credit_waits, (unsigned long long)st.rnr_naks_rcvd,
	       (unsigned long long)st.retransmits);
	if (srq) {
		/* the SRQ holds its PD: it goes between the QP and the PD */
		CHECK(uroce_qp_destroy(p.s[1].qp) == 0, "qp destroy");
		CHECK(uroce_srq_destroy(srq) == 0, "srq destroy: %s", uroce_last_error());
		REQUIRE(uroce_qp_create(p.s[1].pd, &(struct uroce_qp_init_attr){ .qp_type = UROCE_QPT_RC,
		                        .send_cq = p.s[1].scq, .recv_cq = p.s[1].rcq,
		                        .cap = { .max_send_wr = 1, .max_recv_wr = 1 } }, &p.s[1].qp) == 0,
		        "placeholder QP for tr_close");
	}
	tr_close(&p);
	return st;
}

int main(void)
{
	struct uroce_qp_stats rq, srq;

	test_codes();
	rq = run(false);
	srq = run(true);
	CHECK(rq.credit_waits > 0, "the requester never waited for credits");
	CHECK(rq.rnr_naks_rcvd == 0, "%llu RNR NAKs with credits", (unsigned long long)rq.rnr_naks_rcvd);
	/* before the first ACK nothing is known: one SEND at a time, once */
	CHECK(srq.credit_waits <= 1, "an SRQ responder's invalid credit code still held the requester back (%llu)",
	      (unsigned long long)srq.credit_waits);
	CHECK(srq.rnr_naks_rcvd > 0, "without credits the 8 receives never ran out: the test shows nothing");
	return test_done("tr_credits");
}
