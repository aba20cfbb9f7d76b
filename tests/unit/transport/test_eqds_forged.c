/* SPDX-License-Identifier: MIT */
/* EQDS against an RTS with huge counts from the peer (it carries the
 * receiver's token: the connected peer, or a forger who learnt it). Over
 * the loop fabric (simulated time, 1 Gbit/s, 20 us base RTT so a WRITE
 * needs PULLs past its first speculative bytes), for an sr receiver under
 * eqds and one under swift:
 *   - an RTS whose speculative count is 2^61 is refused (bad_ctrl) and
 *     draws no PULL: kept, it left every real RTS behind it;
 *   - one RTS with want 2^62 makes the receiver owe at most EQDS_ASK_AHEAD
 *     past its grants: in 2 s of simulated time it sends at most
 *     EQDS_ASK_AHEAD / EQDS_QUANTUM (+ a few) PULLs, where at its pacer's
 *     rate it would send some 15 000;
 *   - the real sender's WRITEs then complete and land, each within a
 *     bounded simulated time. */
#include "tr_raw.h"
#include "transport/cc/cc_eqds.h"
#include "transport/rel/sr/sr_wire.h"

#define MSG TR_BUF
#define NMSG 24u /* 24 MiB: past the 16 MiB the forged RTS left owed */
#define RUN_NS 2000000000ull
#define SLACK_NS 4000000000ull

static uint8_t ctrl_frame[2048];
static uint32_t ctrl_len;

/* Keep the last frame side 0 sends: the forger's headers. */
static bool filt(void *arg, const uint8_t *frame, uint32_t len)
{
	struct roce_pkt p;

	(void)arg;
	if (roce_parse(frame, len, &p, NULL) == UROCE_DROP_NONE && len <= sizeof(ctrl_frame)) {
		memcpy(ctrl_frame, frame, len);
		ctrl_len = len;
	}
	return false;
}

static void post_write(struct tr_pair *p, uint64_t id, uint32_t off)
{
	struct uroce_sge sg;
	struct uroce_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE,
		                    .send_flags = UROCE_SEND_SIGNALED };

	tr_sge(&sg, &p->s[0], off, MSG);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p->s[1].buf + off;
	wr.wr.rdma.rkey = p->s[1].mr->rkey;
	REQUIRE(uroce_post_send(p->s[0].qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
}

static struct uroce_qp_stats qstats(struct tr_side *s)
{
	struct uroce_qp_stats q;

	REQUIRE(uroce_qp_stats(s->qp, &q) == 0, "qp_stats");
	return q;
}

static void forge_rts(struct tr_pair *p, const struct roce_pkt *tmpl, uint64_t want, uint64_t spec)
{
	struct roce_pkt rts = *tmpl;
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_RTS_LEN];

	srw_ctrl_hdr(b, SRW_CTRL_RTS, sizeof(b), uroce_qp_token(p->s[1].qp));
	roce_put_be64(b + SRW_CTRL_HDR_LEN, want);
	roce_put_be64(b + SRW_CTRL_HDR_LEN + 8, spec);
	rts.payload = b;
	rts.payload_len = sizeof(b);
	tr_inject(p->fab, 0, &rts);
}

static void run_for(struct tr_pair *p, uint64_t ns)
{
	uint64_t t0 = loop_fabric_now(p->fab);

	while (loop_fabric_now(p->fab) < t0 + ns)
		tr_step(p);
}

static void run(enum uroce_cc cc, uint64_t seed)
{
	const char *name = uroce_cc_str(cc);
	struct loop_impairment imp = { .delay_ns = 10000 };
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_wc wc;
	struct roce_pkt tmpl;
	struct uroce_qp_stats q0;
	uint64_t bad0, t0, pulls, max_pulls = EQDS_ASK_AHEAD / EQDS_QUANTUM + 4;
	struct uroce_sge sg;
	struct uroce_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE,
		                    .send_flags = UROCE_SEND_SIGNALED };

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.cc.algo = cc;
	o.cc.link_mbps = 1000;
	o.cc.base_rtt_us = 20;
	o.timeout = 14;
	tr_open(&p, &o, seed, &imp, NULL);
	ctrl_len = 0;
	REQUIRE(loop_fabric_set_filter(p.fab, 0, filt, NULL) == 0, "filter");
	tr_fill(p.s[0].buf, TR_BUF, 9);

	/* side 1 writes to side 0 first: side 0's SACKs give the forger its
	 * headers, and side 1 has heard no RTS (its counts are 0) */
	tr_sge(&sg, &p.s[1], 0, 4096);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p.s[0].buf + TR_BUF - 4096;
	wr.wr.rdma.rkey = p.s[0].mr->rkey;
	REQUIRE(uroce_post_send(p.s[1].qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
	{
		uint64_t dl = loop_fabric_now(p.fab) + SLACK_NS;

		while (uroce_poll_cq(p.s[1].scq, 1, &wc) != 1 && loop_fabric_now(p.fab) < dl)
			tr_step(&p);
		REQUIRE(wc.status == UROCE_WC_SUCCESS && wc.wr_id == 1, "%s: side 1's WRITE", name);
	}
	REQUIRE(ctrl_len && roce_parse(ctrl_frame, ctrl_len, &tmpl, NULL) == UROCE_DROP_NONE, "%s: no frame", name);
	/* an RTS goes to the receiver's control QPN (its QPN + 1) as a UC SEND */
	tmpl.opcode = ROCE_TR_UC | ROCE_OP_SEND_ONLY;
	tmpl.dqpn = (uroce_qp_num(p.s[1].qp) + 1) & ROCE_QPN_MASK;

	/* a speculative count 2^61 past the last: refused, nothing granted */
	q0 = qstats(&p.s[1]);
	bad0 = tr_drops(p.s[1].ctx, UROCE_DROP_BAD_CTRL);
	forge_rts(&p, &tmpl, 1ull << 62, 1ull << 61);
	run_for(&p, 100000000ull);
	CHECK(tr_drops(p.s[1].ctx, UROCE_DROP_BAD_CTRL) - bad0 == 1 && qstats(&p.s[1]).cc_rts_rcvd == q0.cc_rts_rcvd &&
	      qstats(&p.s[1]).cc_pulls_sent == q0.cc_pulls_sent,
	      "%s: an RTS with spec 2^61: bad_ctrl +%llu, PULLs +%llu; want +1 and none", name,
	      (unsigned long long)(tr_drops(p.s[1].ctx, UROCE_DROP_BAD_CTRL) - bad0),
	      (unsigned long long)(qstats(&p.s[1]).cc_pulls_sent - q0.cc_pulls_sent));

	/* want 2^62, nothing speculative: taken, owed at most EQDS_ASK_AHEAD */
	forge_rts(&p, &tmpl, 1ull << 62, 0);
	run_for(&p, RUN_NS);
	pulls = qstats(&p.s[1]).cc_pulls_sent - q0.cc_pulls_sent;
	CHECK(qstats(&p.s[1]).cc_rts_rcvd == q0.cc_rts_rcvd + 1, "%s: the RTS of 2^62 was not taken", name);
	CHECK(pulls <= max_pulls && pulls >= 2, "%s: one RTS of 2^62 bytes drew %llu PULLs in %.1f s; want 2 to %llu",
	      name, (unsigned long long)pulls, RUN_NS / 1e9, (unsigned long long)max_pulls);

	/* the real sender goes on, past the counts the forged RTS left: its
	 * WRITEs complete and land */
	memset(p.s[1].buf, 0, TR_BUF);
	for (unsigned i = 0; i < NMSG; i++)
		post_write(&p, 10 + i, 0);
	t0 = loop_fabric_now(p.fab);
	for (unsigned i = 0; i < NMSG; i++) {
		int got = tr_wait_until(&p, t0 + SLACK_NS, &wc);

		CHECK(got && wc.status == UROCE_WC_SUCCESS && wc.wr_id == 10 + i, "%s: real WRITE %u after the RTS: %s",
		      name, i, got ? uroce_wc_status_str(wc.status) : "not done");
		if (!got)
			break;
	}
	CHECK(!memcmp(p.s[1].buf, p.s[0].buf, MSG), "%s: the real WRITEs' bytes", name);
	printf("%s: %llu PULLs in %.1f s after an RTS of 2^62 bytes; %u real WRITEs of %u KiB done in %.3f s\n", name,
	       (unsigned long long)pulls, RUN_NS / 1e9, NMSG, MSG / 1024, (loop_fabric_now(p.fab) - t0) / 1e9);
	loop_fabric_set_filter(p.fab, 0, NULL, NULL);
	tr_close(&p);
}

int main(void)
{
	run(UROCE_CC_EQDS, 61);
	run(UROCE_CC_SWIFT, 62);
	return test_done("tr_eqds_forged");
}
