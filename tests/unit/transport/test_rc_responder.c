/* SPDX-License-Identifier: MIT */
/* The rc responder's checks and RNR over the loop fabric: a request it must
 * refuse (bad rkey, out of bounds, access flags of the MR or the QP) gets
 * the right NAK, the requester the right WC status, both QPs go to ERR, the
 * drop is counted by reason and no byte is written; a SEND with no receive
 * posted is RNR NAKed until one is, and rnr_retry running out ends the
 * requester in RNR_RETRY_EXC_ERR. Against a raw port playing the peer
 * (raw_peer.h): forged WRITEs (another source, P_Key or destination) are
 * refused by reason and the real peer's WRITE at that PSN lands; READs past
 * the responder resources (max_dest_rd_atomic) get an invalid-request
 * NAK. */
#include "raw_peer.h"

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

/* Finding: a WRITE from 10.0.0.9 with P_Key 0x1234 and the first MR's
 * rkey was placed, and the real peer's next WRITE was taken for a
 * duplicate. Now each forgery is refused by reason and the peer's WRITE
 * at the same PSN lands. */
static void case_forged_write(void)
{
	struct uroce_qp *qp = make_qp(UROCE_QPT_RC, 4, 500, 0);
	uint8_t evil[64], good[64];
	struct roce_pkt p;
	uint64_t src0 = tr_drops(ctx, UROCE_DROP_BAD_SRC_ADDR), pk0 = tr_drops(ctx, UROCE_DROP_BAD_PKEY);
	uint64_t dst0 = tr_drops(ctx, UROCE_DROP_BAD_DST_ADDR);

	memset(evil, 0xee, sizeof(evil));
	memset(good, 0x5a, sizeof(good));
	write_only(&p, uroce_qp_num(qp), 500, 0, evil, sizeof(evil));
	p.sip[15] = 9; /* another host on the link */
	send_raw(&p);
	write_only(&p, uroce_qp_num(qp), 500, 0, evil, sizeof(evil));
	p.sip[15] = 9;
	p.pkey = 0x1234; /* the finding's packet: both wrong */
	send_raw(&p);
	write_only(&p, uroce_qp_num(qp), 500, 0, evil, sizeof(evil));
	p.pkey = 0x1234; /* the peer's address, another partition */
	send_raw(&p);
	write_only(&p, uroce_qp_num(qp), 500, 0, evil, sizeof(evil));
	p.pkey = 0x7fff; /* limited member: a limited and a full member never talk to limited-limited */
	p.dip[15] ^= 1;  /* not our address */
	send_raw(&p);
	settle();
	CHECK(tr_drops(ctx, UROCE_DROP_BAD_SRC_ADDR) == src0 + 1, "wrong source: bad_src_addr %llu",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_BAD_SRC_ADDR) - src0));
	CHECK(tr_drops(ctx, UROCE_DROP_BAD_PKEY) == pk0 + 2, "wrong P_Key: bad_pkey %llu",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_BAD_PKEY) - pk0));
	CHECK(tr_drops(ctx, UROCE_DROP_BAD_DST_ADDR) == dst0 + 1, "wrong destination: bad_dst_addr %llu",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_BAD_DST_ADDR) - dst0));
	CHECK(region[0] == 0 && last_syn == 255, "a forged WRITE was placed or answered");
	CHECK(tr_qp_state(qp) == UROCE_QPS_RTS, "QP disturbed: %s", uroce_qp_state_str(tr_qp_state(qp)));
	/* the real peer, same PSN, limited-member P_Key 0x7fff (accepted: we are full) */
	write_only(&p, uroce_qp_num(qp), 500, 0, good, sizeof(good));
	p.pkey = 0x7fff;
	send_raw(&p);
	settle();
	CHECK(!memcmp(region, good, sizeof(good)), "the peer's WRITE was not placed");
	CHECK(last_syn != 255 && (last_syn >> 5) == 0, "the peer's WRITE was not ACKed (syndrome 0x%x)", last_syn);
	CHECK(uroce_qp_destroy(qp) == 0, "destroy");
	memset(region, 0, REGION);
}

/* Finding: max_dest_rd_atomic 0 still accepted READs, and past the limit
 * the oldest saved response was overwritten. Now: NAK invalid request. */
static void case_responder_resources(void)
{
	struct uroce_qp *qp = make_qp(UROCE_QPT_RC, 0, 10, 0);
	struct roce_pkt p;
	uint64_t lim0 = tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT), mis0 = tr_drops(ctx, UROCE_DROP_MISALIGNED);

	send_read(qp, 10, 256);
	settle();
	CHECK(tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT) == lim0 + 1 && last_syn == AETH_NAK_INVALID_REQ,
	      "READ with max_dest_rd_atomic 0: rd_atomic_limit +%llu, NAK 0x%x",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT) - lim0), last_syn);
	CHECK(tr_qp_state(qp) == UROCE_QPS_ERR, "QP not in ERR after the class C error");
	CHECK(saw_qp_event(UROCE_EVENT_QP_REQ_ERR, qp), "no QP_REQ_ERR event for the responder's error");
	CHECK(uroce_qp_destroy(qp) == 0, "destroy");

	/* two resources, three READs of 32 KiB in one burst: the third finds
	 * both still answering */
	qp = make_qp(UROCE_QPT_RC, 2, 10, 0);
	lim0 = tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT);
	for (unsigned i = 0; i < 3; i++) {
		send_read(qp, 10 + 32 * i, 32768);
	}
	got_pkts = 0;
	settle();
	CHECK(tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT) == lim0 + 1 && last_syn == AETH_NAK_INVALID_REQ,
	      "third READ past 2 resources: rd_atomic_limit +%llu, NAK 0x%x",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT) - lim0), last_syn);
	/* the two valid READs are answered in full before the NAK */
	CHECK(got_pkts == 2 * 32 + 1, "%u packets back, want 64 READ responses and the NAK", got_pkts);
	CHECK(uroce_qp_destroy(qp) == 0, "destroy");

	/* one resource used and answered, then the next: both served */
	qp = make_qp(UROCE_QPT_RC, 1, 10, 0);
	lim0 = tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT);
	for (unsigned i = 0; i < 2; i++) {
		got_pkts = 0;
		send_read(qp, 10 + 4 * i, 4096);
		settle();
		CHECK(got_pkts == 4, "READ %u: %u response packets, want 4", i, got_pkts);
	}
	CHECK(tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT) == lim0 && tr_qp_state(qp) == UROCE_QPS_RTS,
	      "a READ within the limit was refused");

	/* a duplicate of the answered READ (anyone can send one: no in-window
	 * PSN needed) and a new READ in one burst: the replay holds no
	 * resource, so the new READ is answered in full (it takes the one
	 * slot, ending the replay: a requester with max_rd_atomic 1 that
	 * still waits for READ 14 would not have sent READ 18) */
	got_pkts = 0;
	for (unsigned i = 0; i < 2; i++) {
		send_read(qp, 14 + 4 * i, 4096);
	}
	settle();
	CHECK(got_pkts == 4 && tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT) == lim0 && tr_qp_state(qp) == UROCE_QPS_RTS,
	      "duplicate + new READ: %u response packets (want the new READ's 4), rd_atomic_limit +%llu", got_pkts,
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_RD_ATOMIC_LIMIT) - lim0));

	/* misaligned atomic */
	pkt_init(&p, ROCE_TR_RC | ROCE_OP_FETCH_ADD, uroce_qp_num(qp), 22);
	p.atomic.va = (uint64_t)(uintptr_t)region + 4;
	p.atomic.rkey = mr->rkey;
	p.atomic.swap_add = 1;
	send_raw(&p);
	settle();
	CHECK(tr_drops(ctx, UROCE_DROP_MISALIGNED) == mis0 + 1 && last_syn == AETH_NAK_INVALID_REQ,
	      "misaligned atomic: misaligned +%llu, NAK 0x%x",
	      (unsigned long long)(tr_drops(ctx, UROCE_DROP_MISALIGNED) - mis0), last_syn);
	CHECK(uroce_qp_destroy(qp) == 0, "destroy");
}

int main(void)
{
	test_responder_checks();
	test_rnr();
	raw_peer_open(41);
	case_forged_write();
	case_responder_resources();
	raw_peer_close();
	return test_done("tr_rc_responder");
}
