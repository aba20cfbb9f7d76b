/* SPDX-License-Identifier: MIT */
/* No congestion controller can stall a QP. Over the loop fabric (simulated
 * time, 5 ms each way), an sr QP under swift, cubic, dcqcn and eqds meets a
 * link that drops everything: repeated RTOs cut each controller to its
 * least (swift's window to a thousandth of a packet: one packet every
 * thousand RTTs). Then
 *   - the link comes back after 1.5 s: the WRITE in flight and the next
 *     one must complete within 8 s of simulated time;
 *   - the link never comes back: the WRITE must fail with RETRY_EXC_ERR
 *     within its retry limit (retry_cnt + 1 local ACK timeouts) plus 8 s.
 * The pacing floor (cc.h, max_gap_ns: one packet per RTO) is what keeps
 * both bounded. eqds runs twice: with one BDP of speculative data (10 ms)
 * that covers the WRITE, and with 20 us, so most of the WRITE waits for
 * PULLs the dead link eats and only the credit gate holds it: its
 * unanswered RTS retries must run out like a packet's (sr_paths.c). */
#include "tr_test.h"

#define MSG 16384u
#define ONE_WAY_NS 5000000ull
#define BLACKOUT_NS 1500000000ull
#define SLACK_NS 8000000000ull

static void set_link(struct tr_pair *p, bool dead)
{
	struct loop_impairment imp = { .delay_ns = ONE_WAY_NS, .loss = dead ? 1.0 : 0.0 };

	REQUIRE(loop_fabric_set_impairment(p->fab, 0, &imp) == 0, "impairment");
	REQUIRE(loop_fabric_set_impairment(p->fab, 1, &imp) == 0, "impairment");
}

static void post_write(struct tr_pair *p, uint64_t id)
{
	struct uroce_sge sg;
	struct uroce_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE,
		                    .send_flags = UROCE_SEND_SIGNALED };

	tr_sge(&sg, &p->s[0], 0, MSG);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p->s[1].buf + MSG;
	wr.wr.rdma.rkey = p->s[1].mr->rkey;
	REQUIRE(uroce_post_send(p->s[0].qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
}

static void run(enum uroce_cc cc, uint32_t base_rtt_us, bool comes_back, uint64_t seed)
{
	const char *name = uroce_cc_str(cc), *what = comes_back ? "recovers" : "gives up";
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	uint64_t t0, limit;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.cc.algo = cc;
	o.cc.link_mbps = 1000;
	o.cc.base_rtt_us = base_rtt_us;
	/* local ACK timeout 4.096 us x 2^t: 1.07 s (t 18) outlives the
	 * blackout; 268 ms (t 16) gives up inside a few seconds */
	o.timeout = comes_back ? 18 : 16;
	o.retry_cnt = 7;
	limit = (uint64_t)(o.retry_cnt + 1u) * (4096ull << o.timeout);
	tr_open(&p, &o, seed, NULL, NULL);
	set_link(&p, false);

	/* a first WRITE over the good link: the RTT is known */
	post_write(&p, 1);
	REQUIRE(tr_wait_until(&p, loop_fabric_now(p.fab) + SLACK_NS, &wc) && wc.status == UROCE_WC_SUCCESS,
	        "%s: the first WRITE did not complete", name);

	set_link(&p, true);
	t0 = loop_fabric_now(p.fab);
	post_write(&p, 2);
	if (comes_back) {
		/* the blackout: nothing may complete, the RTOs pile up */
		CHECK(!tr_wait_until(&p, t0 + BLACKOUT_NS, &wc), "%s: a completion through a dead link", name);
		uroce_qp_stats(p.s[0].qp, &qs);
		CHECK(qs.timeouts >= 3, "%s: only %llu RTOs in the blackout", name, (unsigned long long)qs.timeouts);
		set_link(&p, false);
		post_write(&p, 3);
		for (uint64_t id = 2; id <= 3; id++) {
			int got = tr_wait_until(&p, t0 + BLACKOUT_NS + SLACK_NS, &wc);

			CHECK(got && wc.status == UROCE_WC_SUCCESS && wc.wr_id == id,
			      "%s %s: WRITE %llu %s %.1f s after the link came back", name, what, (unsigned long long)id,
			      got ? uroce_wc_status_str(wc.status) : "not done", SLACK_NS / 1e9);
			if (!got)
				break;
		}
	} else {
		int got = tr_wait_until(&p, t0 + limit + SLACK_NS, &wc);

		CHECK(got && wc.status == UROCE_WC_RETRY_EXC_ERR,
		      "%s %s: %s %.1f s into a dead link (retry limit %.1f s)", name, what,
		      got ? uroce_wc_status_str(wc.status) : "no completion", (limit + SLACK_NS) / 1e9, limit / 1e9);
	}
	uroce_qp_stats(p.s[0].qp, &qs);
	printf("%s (base RTT %u us) %s: %.2f s simulated after the link died, %llu RTOs, %llu retransmits, "
	       "%llu held back, %llu RTS\n",
	       name, base_rtt_us, what, (loop_fabric_now(p.fab) - t0) / 1e9, (unsigned long long)qs.timeouts,
	       (unsigned long long)qs.retransmits, (unsigned long long)qs.cc_blocked,
	       (unsigned long long)qs.cc_rts_sent);
	tr_close(&p);
}

int main(void)
{
	static const enum uroce_cc ccs[] = { UROCE_CC_SWIFT, UROCE_CC_CUBIC, UROCE_CC_DCQCN, UROCE_CC_EQDS };

	for (unsigned i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++) {
		run(ccs[i], 10000, true, 11 + i);
		run(ccs[i], 10000, false, 21 + i);
	}
	/* eqds short of credit: most of the WRITE waits for PULLs */
	run(UROCE_CC_EQDS, 20, true, 31);
	run(UROCE_CC_EQDS, 20, false, 32);
	return test_done("transport_cc_stall");
}
