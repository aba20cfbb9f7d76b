/* The connection checks on the loop fabric, one case per finding of issue
 * 7: a raw port plays the connected peer (packets from the QP's remote
 * GID) and, in the same run, a forger (another source, another P_Key, a
 * response outside the window). Each case checks the drop reason, that the
 * QP was not disturbed, and that the real peer's next packet is placed.
 * Also: random key bytes with lkey != rkey, responder resources, CQ
 * overrun with its asynchronous events. */
#include "tr_raw.h"
#include "../dataplane/loop_test.h"
#include "transport/core/qp_internal.h"
#include "transport/core/mr.h"

#define REGION 65536u
#define GUARD 4096u
#define PEER_QPN 0x99u

static struct loop_fabric *fab;
static struct uroce_context *ctx;
static struct port *raw;
static struct uroce_pd *pd;
static struct uroce_cq *cq;
static struct uroce_mr *mr;
static uint8_t *mem, *region;

static void step(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uroce_progress(ctx);
		loop_fabric_advance(fab, 2000);
	}
}

/* A packet from the connected peer (the raw port) to the context's port. */
static void pkt_init(struct roce_pkt *p, uint8_t opcode, uint32_t dqpn, uint32_t psn)
{
	tr_raw_pkt(p, raw, 0xc001);
	p->opcode = opcode;
	p->dqpn = dqpn;
	p->psn = psn & ROCE_PSN_MASK;
}

static void send_raw(const struct roce_pkt *p)
{
	REQUIRE(tr_raw_tx(raw, p) == 0, "raw tx of opcode 0x%02x", p->opcode);
}

/* Drain what the context sent back; remember the last AETH syndrome of
 * an ACK-opcode packet (255 = none). */
static uint8_t last_syn;
static unsigned got_pkts;
static void drain(void)
{
	struct uroce_frame in[64];
	uint16_t n = port_rx_burst(raw, in, 64);

	for (uint16_t i = 0; i < n; i++) {
		struct roce_pkt p;

		if (roce_parse(in[i].data, in[i].len, &p, NULL) == UROCE_DROP_NONE) {
			got_pkts++;
			if ((p.opcode & 0x1f) == ROCE_OP_ACK)
				last_syn = p.aeth.syndrome;
		}
	}
	port_free(raw, in, n);
}

static void settle(void)
{
	last_syn = 255;
	for (int i = 0; i < 50; i++) {
		step(1);
		drain();
	}
}

/* Drain the context's events; true when one of type for qp was among them. */
static bool saw_qp_event(enum uroce_event_type type, struct uroce_qp *qp)
{
	struct uroce_async_event ev;
	bool seen = false;

	while (uroce_get_async_event(ctx, &ev) == 0) {
		if (ev.event_type == type && ev.element.qp == qp)
			seen = true;
		uroce_ack_async_event(&ev);
	}
	return seen;
}

/* A QP of type connected to the raw port's PEER_QPN, taken to RTS, with
 * both its CQs on qcq and queues of 64 WRs. */
static struct uroce_qp *make_qp_cq(enum uroce_qp_type type, uint8_t max_dest_rd_atomic, uint32_t rq_psn,
                                   uint32_t sq_psn, struct uroce_cq *qcq)
{
	struct uroce_qp_init_attr ia = { .qp_type = type, .send_cq = qcq, .recv_cq = qcq };
	struct uroce_qp_attr a;
	struct uroce_qp *qp;

	ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	REQUIRE(uroce_qp_create(pd, &ia, &qp) == 0, "qp: %s", uroce_last_error());
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x42;
	a.qp_access_flags = 15;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                                        (type == UROCE_QPT_UD ? UROCE_QP_QKEY : UROCE_QP_ACCESS_FLAGS)) == 0,
	        "init: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd_atomic;
	a.min_rnr_timer = 1;
	roce_ipv4_mapped(a.ah_attr.dgid, raw->ipv4_be);
	a.ah_attr.sgid_index = 1; /* IPv4-mapped, as the dgid */
	if (type == UROCE_QPT_UD)
		REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE) == 0, "rtr: %s", uroce_last_error());
	else
		REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
		                                        UROCE_QP_RQ_PSN |
		                                        (type == UROCE_QPT_RC ? UROCE_QP_MAX_DEST_RD_ATOMIC |
		                                                                        UROCE_QP_MIN_RNR_TIMER : 0)) == 0,
		        "rtr: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;  /* ~67 ms: longer than any case here */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN |
	                                        (type == UROCE_QPT_RC ? UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                                                        UROCE_QP_RNR_RETRY |
	                                                                        UROCE_QP_MAX_QP_RD_ATOMIC : 0)) == 0,
	        "rts: %s", uroce_last_error());
	return qp;
}

static struct uroce_qp *make_qp(enum uroce_qp_type type, uint8_t max_dest_rd_atomic, uint32_t rq_psn,
                                uint32_t sq_psn)
{
	return make_qp_cq(type, max_dest_rd_atomic, rq_psn, sq_psn, cq);
}

/* The peer READs len bytes from the start of the region at psn. */
static void send_read(struct uroce_qp *qp, uint32_t psn, uint32_t len)
{
	struct roce_pkt p;

	pkt_init(&p, ROCE_TR_RC | ROCE_OP_READ_REQUEST, uroce_qp_num(qp), psn);
	p.reth.va = (uint64_t)(uintptr_t)region;
	p.reth.rkey = mr->rkey;
	p.reth.dma_len = len;
	send_raw(&p);
}

static void write_only(struct roce_pkt *p, uint32_t dqpn, uint32_t psn, uint32_t off, const uint8_t *data, uint32_t len)
{
	pkt_init(p, ROCE_TR_RC | ROCE_OP_WRITE_ONLY, dqpn, psn);
	p->ackreq = true;
	p->reth.va = (uint64_t)(uintptr_t)(region + off);
	p->reth.rkey = mr->rkey;
	p->reth.dma_len = len;
	p->payload = data;
	p->payload_len = len;
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
	struct uroce_context_attr ca = { .port = "loop:0" };

	fab = loop_fabric_create(2, 41);
	REQUIRE(fab && loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "fabric");
	ca.loop_fabric = fab;
	REQUIRE(uroce_context_create(&ctx, &ca) == 0, "ctx: %s", uroce_last_error());
	raw = open_loop_port(fab, 1);
	REQUIRE(uroce_pd_alloc(ctx, &pd) == 0 && uroce_cq_create(ctx, 1024, &cq) == 0, "pd/cq");
	mem = calloc(1, GUARD + REGION + GUARD);
	REQUIRE(mem, "memory");
	region = mem + GUARD;
	REQUIRE(uroce_mr_reg(pd, region, REGION, 15, &mr) == 0, "mr: %s", uroce_last_error());

	case_forged_write();
	case_stale_responses();
	case_responder_resources();
	case_keys();
	case_cq_overrun();

	for (unsigned i = 0; i < GUARD; i++)
		CHECK(mem[i] == 0 && mem[GUARD + REGION + i] == 0, "guard byte %u changed", i);
	CHECK(uroce_mr_dereg(mr) == 0 && uroce_cq_destroy(cq) == 0 && uroce_pd_free(pd) == 0, "teardown");
	CHECK(uroce_context_destroy(ctx) == 0, "ctx: %s", uroce_last_error());
	port_close(raw);
	loop_fabric_destroy(fab);
	free(mem);
	return test_done("transport_checks");
}
