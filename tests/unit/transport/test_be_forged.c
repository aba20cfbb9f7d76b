/* SPDX-License-Identifier: MIT */
/* be against packets a forger who knows the QPN and guesses a PSN inside
 * the window can send (be data packets carry no token):
 *   - a descriptor naming the key of a memory window the receiver bound
 *     for another message, for a receive that then times out: the window
 *     is not revoked (only a key that placed a packet of the message is),
 *     and the real WRITE with immediate through it lands whole;
 *   - one packet of the active message 1000 PSNs ahead of the sender's
 *     (refused for its length once its PSN counted): the sender's next
 *     packets, jumped over, are taken, not late;
 *   - a LAST whose message number is far ahead of the active one is
 *     dropped as stale_msg and preempts nothing; the waiting receives
 *     then complete with the real messages.
 * Side 0 sends, side 1 receives; the filter keeps side 0's last data frame
 * as the forger's template. */
#include "tr_raw.h"
#include "transport/rel/sr/sr_wire.h"

#define TMO_US 2000u

static uint8_t last_frame[2048];
static uint32_t last_len;

static bool filt(void *arg, const uint8_t *frame, uint32_t len)
{
	struct roce_pkt p;

	(void)arg;
	if (roce_parse(frame, len, &p, NULL) == UROCE_DROP_NONE && len <= sizeof(last_frame) &&
	    p.opcode == (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM)) {
		memcpy(last_frame, frame, len);
		last_len = len;
	}
	return false;
}

static void post_recv(struct tr_side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	tr_sge(&sg, s, off, len);
	REQUIRE(uroce_post_recv(s->qp, &wr, &bad) == 0, "post_recv: %s", uroce_last_error());
}

static void post(struct tr_side *s, enum uroce_wr_opcode op, uint64_t id, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct uroce_sge sg;
	struct uroce_send_wr wr, *bad;

	tr_sge(&sg, s, 0, len);
	tr_wr(&wr, id, &sg, op);
	wr.imm_data = 0x1234;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	REQUIRE(uroce_post_send(s->qp, &wr, &bad) == 0, "post_send: %s", uroce_last_error());
}

static void open_be(struct tr_pair *pr, uint64_t seed)
{
	struct tr_opts o;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_BE;
	o.rel.timeout_us = TMO_US;
	o.max_wr = 64;
	o.mr_access |= UROCE_ACCESS_MW_BIND;
	tr_open(pr, &o, seed, NULL, NULL);
	last_len = 0;
	REQUIRE(loop_fabric_set_filter(pr->fab, 0, filt, NULL) == 0, "filter");
	tr_fill(pr->s[0].buf, TR_BUF, 7);
}

/* One real one-packet SEND (message 0) so the forger has headers and the
 * PSN the sender takes next. */
static struct roce_pkt warm_up(struct tr_pair *pr)
{
	struct uroce_wc wc;
	struct roce_pkt p;

	post_recv(&pr->s[1], 1, 0, 4096);
	post(&pr->s[0], UROCE_WR_SEND, 1, 100, 0, 0);
	REQUIRE(tr_wait(pr, pr->s[1].rcq, &wc, 10000) == 0 && wc.byte_len == 100 && !wc.wc_flags, "warm-up send");
	REQUIRE(tr_wait(pr, pr->s[0].scq, &wc, 10000) == 0, "warm-up send completion");
	REQUIRE(last_len && roce_parse(last_frame, last_len, &p, NULL) == UROCE_DROP_NONE, "template");
	return p; /* the tail's copy of message 0 */
}

static void desc_key(void)
{
	struct tr_pair pr;
	struct roce_pkt p;
	struct uroce_wc wc;
	struct uroce_mw *mw;
	struct uroce_send_wr bw, *bad;
	uint8_t desc[SRW_DESC_LEN];
	uint64_t waddr, revoked0;
	uint32_t key, next;

	open_be(&pr, 31);
	p = warm_up(&pr);
	next = (p.psn + 1) & ROCE_PSN_MASK;
	/* the receiver binds a window for the WRITE it expects later */
	REQUIRE(uroce_mw_alloc(pr.s[1].pd, UROCE_MW_TYPE_2, &mw) == 0, "mw_alloc: %s", uroce_last_error());
	waddr = (uint64_t)(uintptr_t)(pr.s[1].buf + 65536);
	tr_bind_wr(&bw, &pr.s[1], mw, 65536, 8192, UROCE_ACCESS_REMOTE_WRITE, 9);
	key = bw.bind_mw.rkey;
	REQUIRE(uroce_post_send(pr.s[1].qp, &bw, &bad) == 0, "bind: %s", uroce_last_error());
	REQUIRE(tr_wait(&pr, pr.s[1].scq, &wc, 1000) == 0 && wc.status == UROCE_WC_SUCCESS, "bind");

	/* message 1's receive; a forged descriptor for it names the window's
	 * key (a PSN ahead of the sender's, inside the duplicate window so
	 * the real packets still count) */
	post_recv(&pr.s[1], 2, 0, 4096);
	memset(desc, 0, sizeof(desc));
	desc[0] = SRW_VERSION;
	desc[1] = UROCE_WR_RDMA_WRITE_WITH_IMM;
	desc[2] = SRW_DESC_IMM;
	roce_put_be32(desc + 4, 4096);
	roce_put_be32(desc + 12, key);
	p.psn = (next + 16) & ROCE_PSN_MASK;
	p.imm = srw_imm(1, SRW_DESC, 0);
	p.reth.rkey = SRW_MSG_RKEY;
	p.reth.va = 0;
	p.reth.dma_len = SRW_DESC_LEN;
	p.payload = desc;
	p.payload_len = SRW_DESC_LEN;
	tr_inject(pr.fab, 0, &p);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "message 1's receive");
	CHECK(wc.wr_id == 2 && (wc.wc_flags & UROCE_WC_TIMEOUT) && wc.byte_len == 0,
	      "the forged message: wr %llu, %u bytes, flags 0x%x; want its deadline, nothing placed",
	      (unsigned long long)wc.wr_id, wc.byte_len, wc.wc_flags);

	/* the sender's message 1 is late now (its receive is over); message 2
	 * is the real WRITE with immediate through the window */
	post(&pr.s[0], UROCE_WR_SEND, 2, 100, 0, 0);
	REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 10000) == 0, "filler send");
	revoked0 = tr_drops(pr.s[1].ctx, UROCE_DROP_RKEY_REVOKED);
	memset(pr.s[1].buf + 65536, 0, 8192);
	post_recv(&pr.s[1], 3, 0, 4096);
	post(&pr.s[0], UROCE_WR_RDMA_WRITE_WITH_IMM, 3, 4096, waddr, key);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "the real write's receive");
	CHECK(wc.wr_id == 3 && wc.byte_len == 4096 && !(wc.wc_flags & (UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT)) &&
	      !memcmp(pr.s[1].buf + 65536, pr.s[0].buf, 4096),
	      "the real write through the window: wr %llu, %u bytes, flags 0x%x, rkey_revoked +%llu; want 4096 "
	      "bytes whole (a forged descriptor revoked the window)", (unsigned long long)wc.wr_id, wc.byte_len,
	      wc.wc_flags, (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_RKEY_REVOKED) - revoked0));
	tr_steps(&pr, 20);
	CHECK(uroce_mw_dealloc(mw) == 0, "mw_dealloc: %s", uroce_last_error());
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	tr_close(&pr);
}

static void msg_far_ahead(void)
{
	struct tr_pair pr;
	struct roce_pkt p;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	uint8_t forged[64];
	uint64_t stale0;
	uint32_t next;
	unsigned n = 0;

	open_be(&pr, 41);
	p = warm_up(&pr);
	next = (p.psn + 1) & ROCE_PSN_MASK;
	for (unsigned i = 0; i < 8; i++)
		post_recv(&pr.s[1], 10 + i, 4096 * i, 4096);
	tr_steps(&pr, 5);
	/* LASTs of 64 forged bytes with message numbers 65 to 2047 ahead of
	 * the active one (1), at PSNs inside the duplicate window */
	memset(forged, 0xf0, sizeof(forged));
	stale0 = tr_drops(pr.s[1].ctx, UROCE_DROP_STALE_MSG);
	for (uint32_t d = 65; d < 2048; d += 331, n++) {
		p.psn = (next + 20 + n) & ROCE_PSN_MASK;
		p.imm = srw_imm(1 + d, SRW_LAST, 0);
		p.reth.rkey = SRW_MSG_RKEY;
		p.reth.va = 0;
		p.reth.dma_len = sizeof(forged);
		p.payload = forged;
		p.payload_len = sizeof(forged);
		tr_inject(pr.fab, 0, &p);
	}
	tr_steps(&pr, 20);
	REQUIRE(uroce_qp_stats(pr.s[1].qp, &qs) == 0, "stats");
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_STALE_MSG) - stale0 == n && qs.be_preempted == 0 &&
	      uroce_poll_cq(pr.s[1].rcq, 1, &wc) == 0,
	      "%u forged far LASTs: stale_msg +%llu, be_preempted %llu; want all stale and no receive ended", n,
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_STALE_MSG) - stale0), (unsigned long long)qs.be_preempted);
	/* the real messages 1..8 complete whole into the waiting receives */
	for (unsigned i = 0; i < 8; i++)
		post(&pr.s[0], UROCE_WR_SEND, 20 + i, 3000, 0, 0);
	for (unsigned i = 0; i < 8; i++) {
		REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "real message %u", i + 1);
		CHECK(wc.wr_id == 10 + i && wc.byte_len == 3000 && !wc.wc_flags &&
		      !memcmp(pr.s[1].buf + 4096 * i, pr.s[0].buf, 3000),
		      "real message %u: wr %llu, %u bytes, flags 0x%x", i + 1, (unsigned long long)wc.wr_id, wc.byte_len,
		      wc.wc_flags);
	}
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	tr_close(&pr);
}

static void psn_jump(void)
{
	struct tr_pair pr;
	struct roce_pkt p;
	struct uroce_wc wc;
	uint8_t forged[64];
	uint64_t len0, late0;
	uint32_t next;

	open_be(&pr, 51);
	p = warm_up(&pr);
	next = (p.psn + 1) & ROCE_PSN_MASK;
	for (unsigned i = 0; i < 8; i++)
		post_recv(&pr.s[1], 10 + i, 4096 * i, 4096);
	tr_steps(&pr, 5);
	memset(forged, 0xf0, sizeof(forged));
	len0 = tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_LENGTH_MSG);
	late0 = tr_drops(pr.s[1].ctx, UROCE_DROP_LATE);
	p.psn = (next + 1000) & ROCE_PSN_MASK;
	p.imm = srw_imm(1, SRW_DATA, 0); /* a short non-last packet: refused after its PSN counts */
	p.reth.rkey = SRW_MSG_RKEY;
	p.reth.va = 0;
	p.reth.dma_len = sizeof(forged);
	p.payload = forged;
	p.payload_len = sizeof(forged);
	tr_inject(pr.fab, 0, &p);
	tr_steps(&pr, 20);
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_LENGTH_MSG) - len0 == 1, "the forged packet: bad_length_msg +%llu",
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_BAD_LENGTH_MSG) - len0));
	for (unsigned i = 0; i < 8; i++)
		post(&pr.s[0], UROCE_WR_SEND, 20 + i, 3000, 0, 0);
	for (unsigned i = 0; i < 8; i++) {
		REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "real message %u", i + 1);
		CHECK(wc.wr_id == 10 + i && wc.byte_len == 3000 && !wc.wc_flags &&
		      !memcmp(pr.s[1].buf + 4096 * i, pr.s[0].buf, 3000),
		      "after the PSN jump, real message %u: wr %llu, %u bytes, flags 0x%x, late +%llu", i + 1,
		      (unsigned long long)wc.wr_id, wc.byte_len, wc.wc_flags,
		      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_LATE) - late0));
	}
	/* a copy of a jumped-over packet already taken is late */
	REQUIRE(last_len, "template");
	late0 = tr_drops(pr.s[1].ctx, UROCE_DROP_LATE);
	REQUIRE(loop_fabric_inject(pr.fab, 0, last_frame, last_len) == 0, "inject");
	tr_steps(&pr, 20);
	CHECK(tr_drops(pr.s[1].ctx, UROCE_DROP_LATE) - late0 == 1 && uroce_poll_cq(pr.s[1].rcq, 1, &wc) == 0,
	      "a copy of the last real packet: late +%llu; want +1 and no completion",
	      (unsigned long long)(tr_drops(pr.s[1].ctx, UROCE_DROP_LATE) - late0));
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	tr_close(&pr);
}

int main(void)
{
	psn_jump();
	desc_key();
	msg_far_ahead();
	return test_done("tr_be_forged");
}
