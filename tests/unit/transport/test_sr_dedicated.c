/* SPDX-License-Identifier: MIT */
/* sr and ec in DEDICATED engine mode: the transport runs on its own
 * thread over a real-time loop port with loss, reordering and duplication;
 * one app thread sends (one-shot SENDs and streams sent in reverse-order
 * pieces), another receives through partial-completion handles, watching
 * each handle's bitmap from its own thread until the message is whole, then
 * giving the handle back. Every message arrives once, intact, in order. */
#include <pthread.h>
#include <sched.h>

#include "tr_test.h"

#define NMSG 400u
#define SLOT 16384u
#define NSLOTS 16u
#define OUTSTANDING 6u

struct app {
	TR_APP_FIELDS(2);
	uint32_t lens[NMSG];
	int failures;
	uint32_t received;
	uint64_t bitmap_reads;
};

/* region 0: sources, region 1: receive buffers */
static uint8_t *slot(struct app *a, unsigned region, uint32_t i)
{
	return a->buf + (size_t)(region * NSLOTS + i % NSLOTS) * SLOT;
}

static void *receiver(void *arg)
{
	struct app *a = arg;
	struct uroce_precv *h[NSLOTS];
	uint32_t posted = 0;
	uint64_t t0 = test_mono_ns();

	while (a->received < NMSG && test_mono_ns() - t0 < TR_LIMIT_NS) {
		uint32_t i = a->received, n = a->lens[i], chunks = n ? (n + 1023) / 1024 : 1;
		struct uroce_wc wc;
		uint64_t bits[SLOT / 1024 / 64 + 1];
		uint8_t want[SLOT];
		int nc;
		bool whole = false;

		while (posted < NMSG && posted < a->received + NSLOTS / 2) {
			struct uroce_sge sg = { (uint64_t)(uintptr_t)slot(a, 1, posted), SLOT, a->mr->lkey };

			if (uroce_precv_post(a->qp[1], &sg, posted, &h[posted % NSLOTS])) {
				a->failures++;
				return NULL;
			}
			posted++;
		}
		/* watch the bitmap from this thread until every chunk is there */
		while (!whole && test_mono_ns() - t0 < TR_LIMIT_NS) {
			nc = uroce_precv_bitmap(h[i % NSLOTS], bits, 1);
			a->bitmap_reads++;
			whole = nc == (int)chunks && bits[0] == (chunks == 64 ? ~0ull : (1ull << chunks) - 1);
			if (!whole)
				sched_yield();
		}
		while (uroce_poll_cq(a->rcq[1], 1, &wc) != 1 && test_mono_ns() - t0 < TR_LIMIT_NS)
			sched_yield();
		tr_fill(want, n, i);
		if (!whole || wc.status != UROCE_WC_SUCCESS || wc.wr_id != i || wc.byte_len != n ||
		    (wc.wc_flags & UROCE_WC_PARTIAL) || memcmp(want, slot(a, 1, i), n)) {
			fprintf(stderr, "receive %u: whole %d %s id %llu %u bytes (want %u) flags 0x%x\n", i, whole,
			        uroce_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.byte_len, n, wc.wc_flags);
			a->failures++;
		}
		if (uroce_precv_complete(h[i % NSLOTS]))
			a->failures++;
		a->received++;
	}
	return NULL;
}

static void connect_qps(struct app *a)
{
	const struct tr_link l = { .access = 15, .psn = test_psn(23), .timeout = 8, .min_rnr_timer = 1 };

	for (int i = 0; i < 2; i++)
		tr_loop_link(a->ctx, a->qp[i], a->qp[!i], &l);
}

static void run(enum uroce_reliability rel)
{
	struct loop_impairment imp = { .loss = 0.005, .duplicate = 0.005, .reorder = 0.005,
		                       .reorder_max_ns = 20000 };
	struct uroce_context_attr ca;
	struct loop_fabric *fab;
	struct app a;
	struct test_rng rng = { 6 };
	struct uroce_qp_stats st;
	pthread_t th;
	uint32_t posted = 0, completed = 0;
	uint64_t t0;

	memset(&a, 0, sizeof(a));
	fab = tr_rt_context(23, &imp, &ca, &a.ctx);
	REQUIRE(uroce_pd_alloc(a.ctx, &a.pd) == 0, "pd");
	a.buf = tr_buf_reg(a.pd, 2 * NSLOTS * SLOT, &a.mr);
	for (int i = 0; i < 2; i++) {
		const struct uroce_rel_attr ra = { .reliability = rel, .ec_k = 8, .ec_m = 2 };

		tr_ctx_qp(a.ctx, a.pd, &ra, &a.scq[i], &a.rcq[i], &a.qp[i]);
	}
	connect_qps(&a);
	for (uint32_t i = 0; i < NMSG; i++)
		a.lens[i] = (uint32_t)test_rng_below(&rng, SLOT + 1);
	REQUIRE(pthread_create(&th, NULL, receiver, &a) == 0, "thread");

	t0 = test_mono_ns();
	while (completed < NMSG && test_mono_ns() - t0 < TR_LIMIT_NS) {
		struct uroce_wc wc;

		while (posted < NMSG && posted - completed < OUTSTANDING) {
			uint32_t n = a.lens[posted];

			tr_fill(slot(&a, 0, posted), n, posted);
			if (posted % 2 == 0) {
				/* one-shot */
				struct uroce_sge sg = { (uint64_t)(uintptr_t)slot(&a, 0, posted), n, a.mr->lkey };
				struct uroce_send_wr wr = { .wr_id = posted, .sg_list = &sg, .num_sge = 1,
				                            .opcode = UROCE_WR_SEND, .send_flags = UROCE_SEND_SIGNALED };

				REQUIRE(uroce_post_send(a.qp[0], &wr, NULL) == 0, "post: %s", uroce_last_error());
			} else {
				/* a stream: 4 KiB pieces, last first */
				struct uroce_pstream *s;
				uint32_t pieces = n ? (n + 4095) / 4096 : 1;

				REQUIRE(uroce_pstream_start(a.qp[0], n, posted, &s) == 0, "start: %s", uroce_last_error());
				for (uint32_t p = pieces; p-- > 0;) {
					uint32_t off = p * 4096, len = n - off < 4096 ? n - off : 4096;
					struct uroce_sge sg = { (uint64_t)(uintptr_t)slot(&a, 0, posted) + off, len, a.mr->lkey };

					REQUIRE(uroce_pstream_continue(s, off, &sg) == 0, "continue: %s", uroce_last_error());
				}
				REQUIRE(uroce_pstream_end(s) == 0, "end: %s", uroce_last_error());
			}
			posted++;
		}
		if (uroce_poll_cq(a.scq[0], 1, &wc) != 1) {
			sched_yield();
			continue;
		}
		CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == completed, "send %u: %s id %llu", completed,
		      uroce_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
		completed++;
	}
	REQUIRE(pthread_join(th, NULL) == 0, "join");
	uroce_qp_stats(a.qp[0], &st);
	printf("  %s, DEDICATED: %u sends (half streams), %u receives through handles (%llu bitmap reads), "
	       "%llu packets, %llu retransmits (rack %llu tlp %llu rto %llu spurious %llu), srtt %llu us\n",
	       uroce_reliability_str(rel), completed, a.received, (unsigned long long)a.bitmap_reads,
	       (unsigned long long)st.tx_packets, (unsigned long long)st.retransmits,
	       (unsigned long long)st.rack_losses, (unsigned long long)st.tlp_probes, (unsigned long long)st.rto_losses,
	       (unsigned long long)st.spurious_retx, (unsigned long long)(st.srtt_ns / 1000));
	{
		struct uroce_port_stats ps;

		REQUIRE(uroce_port_stats(a.ctx, 1, &ps) == 0, "port stats");
		printf("    drops:");
		for (int r = 1; r < UROCE_DROP__COUNT; r++)
			if (ps.drops[r])
				printf(" %s %llu", uroce_drop_reason_name((enum uroce_drop_reason)r),
				       (unsigned long long)ps.drops[r]);
		printf("\n");
	}
	CHECK(completed == NMSG && a.received == NMSG && a.failures == 0, "%s: %u/%u sent, %u received, %d failures",
	      uroce_reliability_str(rel), completed, NMSG, a.received, a.failures);
	tr_ctx_teardown(2, a.qp, a.scq, a.rcq, a.mr, a.pd, a.ctx, fab, a.buf);
}

int main(void)
{
	run(UROCE_REL_SR);
	run(UROCE_REL_EC);
	return test_done("tr_sr_dedicated");
}
