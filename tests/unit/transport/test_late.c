/* SPDX-License-Identifier: MIT */
/* Late-packet protection for every reliability mode, over the loop
 * fabric: half of all packets reach the receiver a second time, 3 ms
 * late (a stale path), on top of 1% loss. The receiving application reuses
 * every buffer the moment its message completes (it writes a pattern over
 * it); when everything has settled, not a byte of any reused buffer may
 * have changed, and the late copies are counted as drops by reason. */
#include "tr_test.h"

#define NMSG 120u
#define SLOT 8192u
#define DUP_DELAY_NS 3000000ull
#define REUSED 0xc3u

static const char *const mode[] = { "rc", "sr", "ec", "be" };

static void run(enum uroce_reliability rel)
{
	struct loop_impairment imp = { .loss = 0.01, .duplicate = 0.5, .dup_delay_ns = DUP_DELAY_NS, .delay_ns = 2000 };
	struct loop_impairment back = { .delay_ns = 2000 };
	struct tr_pair pr;
	struct tr_opts o;
	struct uroce_port_stats ps;
	uint64_t late = 0;
	unsigned done_recv = 0, done_send = 0, changed = 0, partial = 0;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = rel;
	o.rel.ec_k = 4;
	o.rel.ec_m = 2;
	o.rel.timeout_us = 5000;
	o.max_wr = 256;
	tr_open(&pr, &o, 1234 + rel, &imp, &back);
	tr_fill(pr.s[0].buf, TR_BUF, 3);
	for (unsigned i = 0; i < NMSG; i++) {
		struct uroce_sge sg;
		struct uroce_recv_wr rw = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

		tr_sge(&sg, &pr.s[1], i * SLOT, SLOT);
		REQUIRE(uroce_post_recv(pr.s[1].qp, &rw, NULL) == 0, "recv: %s", uroce_last_error());
	}
	for (unsigned i = 0; i < NMSG; i++) {
		struct uroce_sge sg;
		struct uroce_send_wr wr;

		memset(&wr, 0, sizeof(wr));
		tr_sge(&sg, &pr.s[0], i * SLOT, 1000 + (i * 997) % (SLOT - 1000));
		wr.wr_id = i;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		/* SEND into the receive's buffer, or WRITE with immediate into
		 * the same slot of the region (both consume the receive) */
		wr.opcode = i % 2 ? UROCE_WR_RDMA_WRITE_WITH_IMM : UROCE_WR_SEND;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(pr.s[1].buf + i * SLOT);
		wr.wr.rdma.rkey = pr.s[1].mr->rkey;
		REQUIRE(uroce_post_send(pr.s[0].qp, &wr, NULL) == 0, "send: %s", uroce_last_error());
	}
	for (unsigned s = 0; s < 2000000 && (done_recv < NMSG || done_send < NMSG); s++) {
		struct uroce_wc wc[16];
		int n;

		tr_step(&pr);
		n = uroce_poll_cq(pr.s[1].rcq, 16, wc);
		for (int k = 0; k < n; k++) {
			CHECK(wc[k].status == UROCE_WC_SUCCESS, "%s receive %llu: %s", mode[rel],
			      (unsigned long long)wc[k].wr_id, uroce_wc_status_str(wc[k].status));
			partial += !!(wc[k].wc_flags & UROCE_WC_PARTIAL);
			/* the application reuses the buffer at once */
			memset(pr.s[1].buf + wc[k].wr_id * SLOT, REUSED, SLOT);
			done_recv++;
		}
		n = uroce_poll_cq(pr.s[0].scq, 16, wc);
		for (int k = 0; k < n; k++) {
			CHECK(wc[k].status == UROCE_WC_SUCCESS, "%s send %llu: %s", mode[rel], (unsigned long long)wc[k].wr_id,
			      uroce_wc_status_str(wc[k].status));
			done_send++;
		}
	}
	CHECK(done_recv == NMSG && done_send == NMSG, "%s: %u receives and %u sends of %u completed", mode[rel],
	      done_recv, done_send, NMSG);
	/* every late copy arrives now */
	for (uint64_t t0 = loop_fabric_now(pr.fab); loop_fabric_now(pr.fab) - t0 < 3 * DUP_DELAY_NS;)
		tr_step(&pr);
	for (unsigned i = 0; i < NMSG * SLOT; i++)
		changed += pr.s[1].buf[i] != REUSED;
	CHECK(changed == 0, "%s: %u bytes of reused buffers changed after their messages completed", mode[rel], changed);
	REQUIRE(uroce_port_stats(pr.s[1].ctx, 1, &ps) == 0, "stats");
	late = ps.drops[UROCE_DROP_DUPLICATE] + ps.drops[UROCE_DROP_STALE_MSG] + ps.drops[UROCE_DROP_LATE];
	printf("  %s: %u messages, %u partial; late copies dropped: duplicate %llu, stale_msg %llu, late %llu\n", mode[rel],
	       NMSG, partial, (unsigned long long)ps.drops[UROCE_DROP_DUPLICATE],
	       (unsigned long long)ps.drops[UROCE_DROP_STALE_MSG], (unsigned long long)ps.drops[UROCE_DROP_LATE]);
	CHECK(late > NMSG / 4, "%s: only %llu late copies counted", mode[rel], (unsigned long long)late);
	if (rel == UROCE_REL_BE)
		CHECK(ps.drops[UROCE_DROP_LATE] > 0, "be counts its late packets as late");
	tr_close(&pr);
}

int main(void)
{
	run(UROCE_REL_RC);
	run(UROCE_REL_SR);
	run(UROCE_REL_EC);
	run(UROCE_REL_BE);
	return test_done("tr_late");
}
