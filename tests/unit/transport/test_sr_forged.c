/* SPDX-License-Identifier: MIT */
/* sr and ec against packets a forger on the path can send (the peer's
 * addresses spoofed; a control packet also carries the receiver's token,
 * so these are what an on-path forger, or a confused peer, can still do):
 *   - a zero-length plain WRITE with rkey 0 at the PSN the sender uses
 *     next is refused (bad_rkey) and marks nothing, so the real packet is
 *     placed; an empty LAST at index 3 is refused the same way; 64 of them
 *     at a paged write's first page leave the IMMCOUNTER waiting for it;
 *   - ec NACKs naming every submessage of a message in flight, one after
 *     each resend: the packets go again once per RTT, the rest of the
 *     NACKs are counted as ctrl_rate;
 *   - TRIMs naming one PSN again and again: sent again once per RTT;
 *   - copies of a packet the receiver has: one SACK per RTT answers them;
 *   - a SACK whose credit limit is 2^30 messages ahead moves the limit to
 *     the slot window past what was posted, no further;
 *   - a packet naming a finished message (delivered, or finished and
 *     waiting for an earlier one) at a PSN of a current message is
 *     dropped unmarked (psn_out_of_window), so the current message's real
 *     packet is placed and it completes with every byte.
 * Sides: 0 sends, 1 receives. Frames from side 1 are dropped by a filter
 * (no SACK reaches the sender, so it has no RTT sample and nothing
 * completes behind the test's back) except the ones the test injects. */
#include "tr_raw.h"
#include "transport/rel/sr/sr_wire.h"

#define RTO_MIN_US 100000u /* 100 ms: no RTO fires while a test runs */
#define NFORGE 8u

struct cap {
	bool block;              /* drop what the port sends */
	bool pass;               /* ... except the frame being injected */
	uint8_t data[2048], ctrl[2048];
	uint32_t data_len, ctrl_len; /* the last data / control frame seen */
};

static struct cap cap0, cap1;

static bool filt(void *arg, const uint8_t *frame, uint32_t len)
{
	struct cap *c = arg;
	struct roce_pkt p;

	if (c->pass)
		return false;
	if (roce_parse(frame, len, &p, NULL) == UROCE_DROP_NONE && len <= sizeof(c->data)) {
		bool ctrl = (p.opcode & 0x1f) == ROCE_OP_SEND_ONLY;

		memcpy(ctrl ? c->ctrl : c->data, frame, len);
		*(ctrl ? &c->ctrl_len : &c->data_len) = len;
	}
	return c->block;
}

/* Build p and send it from port `from`, past its filter. */
static void inject(struct tr_pair *pr, unsigned from, const struct roce_pkt *p)
{
	struct cap *c = from ? &cap1 : &cap0;

	c->pass = true;
	tr_inject(pr->fab, from, p);
	c->pass = false;
}

/* The headers of the last frame captured (data or control) of port from. */
static void template(struct roce_pkt *p, unsigned from, bool ctrl)
{
	struct cap *c = from ? &cap1 : &cap0;

	REQUIRE(ctrl ? c->ctrl_len : c->data_len, "no %s frame captured from port %u", ctrl ? "control" : "data", from);
	REQUIRE(roce_parse(ctrl ? c->ctrl : c->data, ctrl ? c->ctrl_len : c->data_len, p, NULL) == UROCE_DROP_NONE,
	        "parse");
}

static struct uroce_qp_stats qstats(struct tr_side *s)
{
	struct uroce_qp_stats q;

	REQUIRE(uroce_qp_stats(s->qp, &q) == 0, "qp_stats");
	return q;
}

static void post(struct tr_side *s, struct tr_side *peer, enum uroce_wr_opcode op, uint64_t id, uint32_t off,
                 uint32_t len, uint32_t roff)
{
	struct uroce_sge sg;
	struct uroce_send_wr wr, *bad;

	tr_sge(&sg, s, off, len);
	tr_wr(&wr, id, &sg, op);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(peer->buf + roff);
	wr.wr.rdma.rkey = peer->mr->rkey;
	REQUIRE(uroce_post_send(s->qp, &wr, &bad) == 0, "post_send: %s", uroce_last_error());
}

static void post_recv(struct tr_side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	tr_sge(&sg, s, off, len);
	REQUIRE(uroce_post_recv(s->qp, &wr, &bad) == 0, "post_recv: %s", uroce_last_error());
}

static void open_pair_opts(struct tr_pair *pr, enum uroce_reliability rel, uint64_t seed, bool imm_counter)
{
	struct tr_opts o;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = rel;
	o.rel.imm_counter = imm_counter;
	o.rel.rto_min_us = RTO_MIN_US;
	if (rel == UROCE_REL_EC) {
		o.rel.ec_k = 2;
		o.rel.ec_m = 1;
		o.rel.ec_fto_us = 50000000u; /* the receiver sends no NACK of its own */
	}
	tr_open(pr, &o, seed, NULL, NULL);
	memset(&cap0, 0, sizeof(cap0));
	memset(&cap1, 0, sizeof(cap1));
	REQUIRE(loop_fabric_set_filter(pr->fab, 0, filt, &cap0) == 0, "filter");
	REQUIRE(loop_fabric_set_filter(pr->fab, 1, filt, &cap1) == 0, "filter");
	tr_fill(pr->s[0].buf, TR_BUF, 3);
}

static void open_pair(struct tr_pair *pr, enum uroce_reliability rel, uint64_t seed)
{
	open_pair_opts(pr, rel, seed, false);
}

/* A one-packet WRITE: the frames the forger copies (data from side 0, a
 * SACK from side 1), and the PSN the next packet takes. done: it
 * completes; else side 1 is blocked from the start, so the sender never
 * gets an RTT sample (its rate guards fall back to the RTO floor). */
static uint32_t warm_up(struct tr_pair *pr, bool done)
{
	struct uroce_wc wc;
	struct roce_pkt p;

	cap1.block = !done;
	post(&pr->s[0], &pr->s[1], UROCE_WR_RDMA_WRITE, 1, 0, 512, 0);
	if (done)
		REQUIRE(tr_wait(pr, pr->s[0].scq, &wc, 10000) == 0 && wc.status == UROCE_WC_SUCCESS, "warm-up write");
	else
		tr_steps(pr, 100);
	template(&p, 0, false);
	return ((p.psn + 1) & ROCE_PSN_MASK);
}

static void zero_length_write(void)
{
	struct tr_pair pr;
	struct roce_pkt p;
	struct uroce_wc wc;
	uint64_t rkey0, len0;
	uint32_t next;

	open_pair(&pr, UROCE_REL_SR, 41);
	next = warm_up(&pr, true);
	post_recv(&pr.s[1], 7, 65536, 4096);
	rkey0 = tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_RKEY);
	len0 = tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_LENGTH_MSG);
	/* the PSN the next WRITE's first packet takes: empty, rkey 0 */
	template(&p, 0, false);
	p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY;
	p.psn = next;
	p.reth.rkey = 0;
	p.reth.va = 0;
	p.reth.dma_len = 0;
	p.payload_len = 0;
	inject(&pr, 0, &p);
	/* the one after it: an empty LAST at index 3 of the receiver's next
	 * message (its receive holds 4 packets) */
	p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
	p.psn = ((next + 1) & ROCE_PSN_MASK);
	p.imm = srw_imm(0, SRW_LAST, 3);
	p.reth.va = 3 * 1024;
	inject(&pr, 0, &p);
	tr_steps(&pr, 20);
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_RKEY) - rkey0 == 1, "empty WRITE with rkey 0: bad_rkey +%llu, want +1",
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_RKEY) - rkey0));
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_LENGTH_MSG) - len0 == 1,
	      "empty LAST at index 3: bad_msg_length +%llu, want +1",
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_LENGTH_MSG) - len0));
	/* the real 3-packet WRITE and a SEND after it: every byte lands */
	post(&pr.s[0], &pr.s[1], UROCE_WR_RDMA_WRITE, 2, 4096, 3000, 8192);
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 3, 16384, 2000, 0);
	REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 100000) == 0, "write's completion");
	CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == 2, "write: status %d wr_id %llu", wc.status,
	      (unsigned long long)wc.wr_id);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "the SEND's receive");
	CHECK(wc.status == UROCE_WC_SUCCESS && wc.byte_len == 2000, "receive: status %d, %u bytes", wc.status,
	      wc.byte_len);
	CHECK(!memcmp(pr.s[1].buf + 8192, pr.s[0].buf + 4096, 3000),
	      "the WRITE's bytes did not all land (a forged empty packet took its PSN)");
	CHECK(!memcmp(pr.s[1].buf + 65536, pr.s[0].buf + 16384, 2000), "the SEND's bytes did not all land");
	printf("  zero-length WRITE with rkey 0 at the next PSN: bad_rkey, WRITE whole\n");
	tr_close(&pr);
}

/* The IMMCOUNTER form (TransferEngine's paged writes): empty WRITEs with
 * rkey 0 at the 64 PSNs the first 64 KiB page takes next; the counted
 * WRITE_WITH_IMM must fire only with both pages whole (on the code before,
 * it fired with the first page never written). */
#define PAGE (64u * 1024u)

static void zero_length_paged(void)
{
	struct tr_pair pr;
	struct roce_pkt p;
	struct uroce_wc wc;
	uint32_t src_pages[2] = { 0, 2 }, dst_pages[2] = { 1, 3 }, next, imm = htobe32(0x50414745u);
	struct uroce_paged_write pw;
	uint64_t rkey0;
	int fired = 0;

	open_pair_opts(&pr, UROCE_REL_SR, 51, true);
	next = warm_up(&pr, true);
	rkey0 = tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_RKEY);
	template(&p, 0, false);
	p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY;
	p.reth.rkey = 0;
	p.reth.va = 0;
	p.reth.dma_len = 0;
	p.payload_len = 0;
	for (uint32_t i = 0; i < PAGE / 1024; i++) {
		p.psn = (next + i) & ROCE_PSN_MASK;
		inject(&pr, 0, &p);
		tr_step(&pr);
	}
	tr_steps(&pr, 20);
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_RKEY) - rkey0 == PAGE / 1024, "empty WRITEs: bad_rkey +%llu, want +%u",
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_RKEY) - rkey0), PAGE / 1024);
	REQUIRE(uroce_expect_imm_count(pr.s[1].ctx, imm, 1, NULL, NULL, &fired) == 0, "expect: %s", uroce_last_error());
	memset(&pw, 0, sizeof(pw));
	pw.wr_id = 9;
	pw.page_len = PAGE;
	pw.npages = 2;
	pw.src_pages = src_pages;
	pw.src_base = (uint64_t)(uintptr_t)pr.s[0].buf;
	pw.lkey = pr.s[0].mr->lkey;
	pw.dst_pages = dst_pages;
	pw.dst_base = (uint64_t)(uintptr_t)pr.s[1].buf;
	pw.rkey = pr.s[1].mr->rkey;
	pw.imm_data = imm;
	pw.send_flags = UROCE_SEND_SIGNALED;
	REQUIRE(uroce_post_paged_write(pr.s[0].qp, &pw) == 0, "paged write: %s", uroce_last_error());
	REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 200000) == 0, "paged write's completion");
	CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == 9, "paged write: status %d", wc.status);
	for (unsigned i = 0; i < 1000 && !fired; i++)
		tr_step(&pr);
	CHECK(fired, "the immediate's expectation did not fire");
	for (unsigned i = 0; i < 2; i++)
		CHECK(!memcmp(pr.s[1].buf + (size_t)dst_pages[i] * PAGE, pr.s[0].buf + (size_t)src_pages[i] * PAGE, PAGE),
		      "page %u did not land whole, yet its immediate fired: %s", i, fired ? "yes" : "no");
	printf("  IMMCOUNTER: 64 empty WRITEs at the first page's PSNs refused; both pages whole when the immediate fired\n");
	tr_close(&pr);
}

/* The control header (version 2, side 0's token) and body into b. */
static uint32_t ctrl(struct tr_pair *pr, uint8_t *b, enum srw_ctrl_type type, const uint8_t *body, uint32_t blen)
{
	srw_ctrl_hdr(b, type, SRW_CTRL_HDR_LEN + blen, uroce_qp_token(pr->s[0].qp));
	memcpy(b + SRW_CTRL_HDR_LEN, body, blen);
	return SRW_CTRL_HDR_LEN + blen;
}

/* Send the control payload b n times from side 1, each after the sender's
 * transmit passes ran (so a packet declared lost has gone again). */
static void forge_ctrl(struct tr_pair *pr, const uint8_t *b, uint32_t len, unsigned n)
{
	struct roce_pkt p;

	template(&p, 1, true);
	p.payload = b;
	p.payload_len = len;
	for (unsigned i = 0; i < n; i++) {
		inject(pr, 1, &p);
		tr_steps(pr, 50);
	}
}

static void ec_nack_rate(void)
{
	struct tr_pair pr;
	struct uroce_qp_stats q0, q1;
	uint8_t body[SRW_NACK_FIXED + 4], b[64];
	uint64_t rate0;
	uint32_t len;

	open_pair(&pr, UROCE_REL_EC, 43);
	warm_up(&pr, false);
	post_recv(&pr.s[1], 7, 65536, 8192);
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 2, 4096, 8192, 0);
	tr_steps(&pr, 100);
	q0 = qstats(&pr.s[0]);
	rate0 = tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE);
	/* message 0 (the sender's first SEND), every submessage and the descriptor */
	roce_put_be32(body, 0);
	roce_put_be16(body + 4, 0);
	roce_put_be16(body + 6, 32);
	roce_put_be32(body + 8, SRW_NACK_DESC);
	memset(body + SRW_NACK_FIXED, 0xff, 4);
	len = ctrl(&pr, b, SRW_CTRL_NACK, body, sizeof(body));
	forge_ctrl(&pr, b, len, NFORGE);
	q1 = qstats(&pr.s[0]);
	printf("  ec: %u NACKs naming every submessage: %llu packets sent again, %llu NACKs taken, ctrl_rate %llu\n",
	       NFORGE, (unsigned long long)(q1.retransmits - q0.retransmits),
	       (unsigned long long)(q1.ec_nacks_rcvd - q0.ec_nacks_rcvd),
	       (unsigned long long)(tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE) - rate0));
	/* 8 data packets and the 2 descriptors, once */
	CHECK(q1.retransmits - q0.retransmits == 10, "%llu packets sent again, want 10 (each once)",
	      (unsigned long long)(q1.retransmits - q0.retransmits));
	CHECK(q1.ec_nacks_rcvd - q0.ec_nacks_rcvd == 1 && tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE) - rate0 == NFORGE - 1,
	      "NACKs taken %llu, ctrl_rate %llu; want 1 and %u", (unsigned long long)(q1.ec_nacks_rcvd - q0.ec_nacks_rcvd),
	      (unsigned long long)(tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE) - rate0), NFORGE - 1);
	tr_close(&pr);
}

static void trim_rate(void)
{
	struct tr_pair pr;
	struct uroce_qp_stats q0, q1;
	uint8_t body[SRW_TRIM_FIXED + 4], b[64];
	uint64_t rate0;
	uint32_t len, next;

	open_pair(&pr, UROCE_REL_SR, 45);
	next = warm_up(&pr, false);
	post(&pr.s[0], &pr.s[1], UROCE_WR_RDMA_WRITE, 2, 4096, 4096, 8192);
	tr_steps(&pr, 100);
	q0 = qstats(&pr.s[0]);
	rate0 = tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE);
	roce_put_be16(body, 1);
	roce_put_be16(body + 2, 0);
	roce_put_be32(body + 4, ((next + 1) & ROCE_PSN_MASK));
	len = ctrl(&pr, b, SRW_CTRL_TRIM, body, sizeof(body));
	forge_ctrl(&pr, b, len, NFORGE);
	q1 = qstats(&pr.s[0]);
	printf("  sr: %u TRIMs naming one PSN: sent again %llu times, ctrl_rate %llu\n", NFORGE,
	       (unsigned long long)(q1.retransmits - q0.retransmits),
	       (unsigned long long)(tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE) - rate0));
	CHECK(q1.retransmits - q0.retransmits == 1 && q1.trim_nacks_rcvd - q0.trim_nacks_rcvd == 1,
	      "sent again %llu times (%llu TRIMs taken), want once",
	      (unsigned long long)(q1.retransmits - q0.retransmits),
	      (unsigned long long)(q1.trim_nacks_rcvd - q0.trim_nacks_rcvd));
	CHECK(tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE) - rate0 == NFORGE - 1, "ctrl_rate +%llu, want +%u",
	      (unsigned long long)(tr_drops(pr.s[0].ctx, UROCE_DROP_CTRL_RATE) - rate0), NFORGE - 1);
	tr_close(&pr);
}

static void dup_sacks(void)
{
	struct tr_pair pr;
	struct uroce_qp_stats q0, q1;
	struct roce_pkt p;

	open_pair(&pr, UROCE_REL_SR, 47);
	warm_up(&pr, true);
	q0 = qstats(&pr.s[1]);
	template(&p, 0, false); /* the warm-up's packet: the receiver has it */
	for (unsigned i = 0; i < 4 * NFORGE; i++) {
		inject(&pr, 0, &p);
		tr_steps(&pr, 20);
	}
	q1 = qstats(&pr.s[1]);
	printf("  sr: %u copies of a packet the receiver has: %llu SACKs, %llu held\n", 4 * NFORGE,
	       (unsigned long long)(q1.sacks_sent - q0.sacks_sent),
	       (unsigned long long)(q1.dup_sacks_held - q0.dup_sacks_held));
	CHECK(q1.duplicates - q0.duplicates == 4 * NFORGE, "duplicates +%llu", (unsigned long long)(q1.duplicates - q0.duplicates));
	CHECK(q1.sacks_sent - q0.sacks_sent == 1 && q1.dup_sacks_held - q0.dup_sacks_held == 4 * NFORGE - 1,
	      "SACKs %llu, held %llu; want 1 and %u", (unsigned long long)(q1.sacks_sent - q0.sacks_sent),
	      (unsigned long long)(q1.dup_sacks_held - q0.dup_sacks_held), 4 * NFORGE - 1);
	tr_close(&pr);
}

/* The receiver posts no receive; a SACK says receives are posted for 2^30
 * messages. The sender starts message 64 and on (past the slot window
 * over message 0, the one posted when the SACK came) only as one probe at
 * a time: it waits for credit. */
static void sack_limit(void)
{
	struct tr_pair pr;
	struct uroce_qp_stats q0, q1;
	uint8_t body[SRW_SACK_FIXED + 4], b[64];
	uint32_t len, next;

	open_pair(&pr, UROCE_REL_SR, 49);
	next = warm_up(&pr, true);
	cap1.block = true;
	memset(body, 0, sizeof(body));
	roce_put_be32(body, next);            /* cum: everything sent */
	roce_put_be32(body + 20, 1u << 30);   /* msg_limit */
	roce_put_be16(body + 24, 32);
	len = ctrl(&pr, b, SRW_CTRL_SACK, body, sizeof(body));
	forge_ctrl(&pr, b, len, 1);
	/* 66 SENDs of one packet; the receiver's slots take 64 once they are done */
	cap1.block = false;
	for (uint32_t i = 0; i < 64; i++)
		post_recv(&pr.s[1], 100 + i, 65536 + 64 * i, 64);
	for (uint32_t i = 0; i < 64; i++) {
		struct uroce_wc wc;

		post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 200 + i, 0, 64, 0);
		REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 10000) == 0 && wc.status == UROCE_WC_SUCCESS, "message %u", i);
	}
	tr_steps(&pr, 50);
	q0 = qstats(&pr.s[0]);
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 300, 0, 64, 0);
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 301, 0, 64, 0);
	tr_steps(&pr, 200);
	q1 = qstats(&pr.s[0]);
	printf("  sr: SACK with msg_limit 2^30: messages past the posted receives waited for credit %llu times\n",
	       (unsigned long long)(q1.credit_waits - q0.credit_waits));
	CHECK(q1.credit_waits > q0.credit_waits,
	      "messages 64 and 65 went without waiting for credit: the forged limit held");
	tr_close(&pr);
}

/* A finished message's number at the PSN the next message takes first:
 * only its own PSN span may count (a late copy stops the sender's resends),
 * so the forged packet is dropped and the real 3-packet SEND lands whole.
 * Before, the PSN was marked and the real packet dropped as a duplicate:
 * the SEND never completed. */
static void finished_msg_behind(void)
{
	struct tr_pair pr;
	struct roce_pkt p;
	struct uroce_wc wc;
	uint64_t oow0, dup0;
	uint32_t next;
	bool got;

	open_pair(&pr, UROCE_REL_SR, 53);
	warm_up(&pr, true);
	/* message 0: one packet, received and delivered */
	post_recv(&pr.s[1], 7, 65536, 4096);
	post_recv(&pr.s[1], 8, 131072, 4096);
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 2, 8192, 600, 0);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 10000) == 0 && wc.wr_id == 7 && wc.status == UROCE_WC_SUCCESS,
	        "message 0's receive");
	REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 10000) == 0 && wc.status == UROCE_WC_SUCCESS, "message 0's send");
	template(&p, 0, false); /* message 0's packet: LAST, index 0 */
	next = (p.psn + 1) & ROCE_PSN_MASK;
	oow0 = tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
	dup0 = tr_drops(pr.s[1].ctx, UROCE_DROP_DUPLICATE);
	/* message 0 again, at the PSNs message 1's first two packets take */
	for (uint32_t i = 0; i < 2; i++) {
		p.psn = (next + i) & ROCE_PSN_MASK;
		inject(&pr, 0, &p);
		tr_steps(&pr, 5);
	}
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 3, 16384, 3000, 0);
	got = tr_wait(&pr, pr.s[1].rcq, &wc, 400000) == 0;
	printf("  sr: message 0 (delivered) named at message 1's PSNs: psn_out_of_window +%llu, duplicate +%llu, "
	       "message 1 %s\n", (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) - oow0),
	       (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_DUPLICATE) - dup0), got ? "received" : "never received");
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) - oow0 == 2, "forged packets: psn_out_of_window +%llu, want +2",
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) - oow0));
	CHECK(got, "message 1's receive never completed (a forged packet took its PSN)");
	if (got) {
		CHECK(wc.wr_id == 8 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == 3000,
		      "message 1's receive: id %llu status %d, %u bytes", (unsigned long long)wc.wr_id, wc.status,
		      wc.byte_len);
		CHECK(!memcmp(pr.s[1].buf + 131072, pr.s[0].buf + 16384, 3000), "message 1's bytes did not all land");
	}
	tr_close(&pr);
}

/* The same with a message finished but not yet delivered (ordered: the
 * one before it is missing): message 1 arrives whole, then a packet
 * naming it at message 0's PSN. Message 0's real packet must still be
 * taken, and both receives complete with their bytes. */
static void finished_msg_waiting(void)
{
	struct tr_pair pr;
	struct roce_pkt p;
	struct uroce_wc wc;
	uint64_t oow0;
	uint32_t psn1;
	bool got[2];

	open_pair(&pr, UROCE_REL_SR, 55);
	post_recv(&pr.s[1], 7, 65536, 4096);
	post_recv(&pr.s[1], 8, 131072, 4096);
	warm_up(&pr, true); /* its SACK brings the credit for both messages */
	cap0.block = true; /* the sender's packets go nowhere; the test passes them on */
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 2, 8192, 700, 0);
	tr_steps(&pr, 20);
	post(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 3, 16384, 800, 0);
	tr_steps(&pr, 20);
	template(&p, 0, false); /* message 1's packet */
	psn1 = p.psn;
	REQUIRE(srw_imm_msg(p.imm) == 1, "captured message %u, want 1", srw_imm_msg(p.imm));
	inject(&pr, 0, &p); /* message 1 whole: finished, waits for message 0 */
	tr_steps(&pr, 20);
	oow0 = tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
	p.psn = (psn1 + ROCE_PSN_MASK) & ROCE_PSN_MASK; /* message 0's PSN */
	inject(&pr, 0, &p);
	tr_steps(&pr, 20);
	cap0.block = false; /* message 0 goes again after its RTO */
	got[0] = tr_wait(&pr, pr.s[1].rcq, &wc, 400000) == 0;
	CHECK(!got[0] || (wc.wr_id == 7 && wc.byte_len == 700 && wc.status == UROCE_WC_SUCCESS),
	      "first receive: id %llu status %d, %u bytes", (unsigned long long)wc.wr_id, wc.status, wc.byte_len);
	got[1] = got[0] && tr_wait(&pr, pr.s[1].rcq, &wc, 10000) == 0;
	CHECK(!got[1] || (wc.wr_id == 8 && wc.byte_len == 800 && wc.status == UROCE_WC_SUCCESS),
	      "second receive: id %llu status %d, %u bytes", (unsigned long long)wc.wr_id, wc.status, wc.byte_len);
	printf("  sr: message 1 (finished, waiting) named at message 0's PSN: psn_out_of_window +%llu, receives %s\n",
	       (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) - oow0),
	       got[1] ? "both completed" : "not completed");
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) - oow0 == 1, "forged packet: psn_out_of_window +%llu, want +1",
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) - oow0));
	CHECK(got[0] && got[1], "the receives did not complete (a forged packet took message 0's PSN)");
	CHECK(!memcmp(pr.s[1].buf + 65536, pr.s[0].buf + 8192, 700) && !memcmp(pr.s[1].buf + 131072, pr.s[0].buf + 16384, 800),
	      "the messages' bytes did not all land");
	tr_close(&pr);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} t[] = { { "zero_length_write", zero_length_write }, { "zero_length_paged", zero_length_paged },
	          { "ec_nack_rate", ec_nack_rate },
	          { "trim_rate", trim_rate }, { "dup_sacks", dup_sacks }, { "sack_limit", sack_limit },
	          { "finished_msg_behind", finished_msg_behind }, { "finished_msg_waiting", finished_msg_waiting } };

	/* an argument runs only the test of that name */
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (argc < 2 || !strcmp(argv[1], t[i].name))
			t[i].fn();
	return test_done("tr_sr_forged");
}
