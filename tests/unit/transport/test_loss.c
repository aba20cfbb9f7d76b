/* SPDX-License-Identifier: MIT */
/* The loss tests of the issue: over the loop fabric with 0.1% and 1% loss
 * plus reordering and duplication (both directions), 10 000 RC messages
 * of mixed sizes, mixed SEND / WRITE / WRITE_WITH_IMM / READ, and
 * FETCH_ADDs (a duplicate must be answered from the saved result, never
 * added twice): each
 * delivered exactly once, in order, intact (checksummed). Then the peer
 * disappears: retries run out into RETRY_EXC_ERR, the QP moves to ERR,
 * the rest is flushed, and nothing is written after the QP is in ERR. */
#include "tr_test.h"

#define NMSG 10000u
#define MAXLEN 6000u
#define SLOT 8192u
#define NSLOTS 40u       /* per kind; > 2 * OUTSTANDING so a slot is never reused while in flight */
#define OUTSTANDING 16u
#define STEP_LIMIT 4000000u

/* layout of each side's 1 MiB buffer */
#define SRC_OFF 0u                        /* A: message sources, one slot each */
#define RECV_OFF 0u                       /* B: receive buffers */
#define WRITE_OFF (NSLOTS * SLOT)         /* B: WRITE targets */
#define READ_OFF (2u * NSLOTS * SLOT)     /* B: READ sources / A: READ destinations */
#define COUNTER_OFF (3u * NSLOTS * SLOT)  /* B: the FETCH_ADD counter */

enum kind { K_SEND, K_WRITE, K_WRITE_IMM, K_READ, K_ATOMIC };

struct msg {
	uint8_t kind;
	uint32_t len;
	uint64_t sum;
};

static uint64_t sum_of(const uint8_t *b, uint32_t n)
{
	return test_hash(0x1234567ull, b, n);
}

static void post_recv(struct tr_side *b, uint64_t id)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };

	tr_sge(&sg, b, RECV_OFF + (uint32_t)(id % NSLOTS) * SLOT, SLOT);
	REQUIRE(uroce_post_recv(b->qp, &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

static void run(double loss, uint64_t seed)
{
	struct loop_impairment imp = { 0 };
	struct tr_pair p;
	struct tr_opts o;
	struct test_rng rng = { seed };
	static struct msg msgs[NMSG];
	uint32_t posted = 0, completed = 0, recv_seen = 0, recv_posted = 0, steps = 0;
	uint32_t next_recv_msg = 0; /* message index the next receive completion must carry */
	uint64_t atomics_done = 0, counter;
	struct uroce_qp_stats qs;
	struct loop_link_stats ls;
	uint64_t t0 = test_mono_ns();

	imp = tr_imp_mixed(loss);
	tr_opts_default(&o, UROCE_QPT_RC);
	o.max_wr = 64;
	o.timeout = 8;
	o.retry_cnt = 7;
	tr_open(&p, &o, seed, &imp, &imp);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	for (uint32_t k = 0; k < NSLOTS; k++)
		tr_fill(b->buf + READ_OFF + k * SLOT, SLOT, 0xbeef + k);
	for (uint32_t i = 0; i < NMSG; i++) {
		msgs[i].kind = (uint8_t)test_rng_below(&rng, 5);
		msgs[i].len = (uint32_t)(test_rng_below(&rng, 4) == 0 ? test_rng_below(&rng, 64)
		                                                       : test_rng_below(&rng, MAXLEN + 1));
	}
	for (; recv_posted < 32; recv_posted++)
		post_recv(b, recv_posted);

	while (completed < NMSG && steps < STEP_LIMIT) {
		struct uroce_wc wc[16];
		int n;

		/* post while the window allows */
		while (posted < NMSG && posted - completed < OUTSTANDING) {
			struct msg *m = &msgs[posted];
			uint32_t slot = posted % NSLOTS;
			struct uroce_sge sg;
			struct uroce_send_wr wr = { 0 };

			wr.wr_id = posted;
			wr.send_flags = UROCE_SEND_SIGNALED;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			if (m->kind == K_ATOMIC) {
				wr.opcode = UROCE_WR_ATOMIC_FETCH_AND_ADD;
				tr_sge(&sg, a, READ_OFF + slot * SLOT, 8);
				wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)(b->buf + COUNTER_OFF);
				wr.wr.atomic.rkey = b->mr->rkey;
				wr.wr.atomic.compare_add = 1;
				m->len = 8;
			} else if (m->kind == K_READ) {
				wr.opcode = UROCE_WR_RDMA_READ;
				tr_sge(&sg, a, READ_OFF + slot * SLOT, m->len);
				memset(a->buf + READ_OFF + slot * SLOT, 0, m->len);
				wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + READ_OFF + (posted % NSLOTS) * SLOT);
				wr.wr.rdma.rkey = b->mr->rkey;
				m->sum = sum_of(b->buf + READ_OFF + slot * SLOT, m->len);
			} else {
				tr_fill(a->buf + SRC_OFF + slot * SLOT, m->len, posted);
				m->sum = sum_of(a->buf + SRC_OFF + slot * SLOT, m->len);
				tr_sge(&sg, a, SRC_OFF + slot * SLOT, m->len);
				wr.opcode = m->kind == K_SEND ? UROCE_WR_SEND :
				            m->kind == K_WRITE ? UROCE_WR_RDMA_WRITE : UROCE_WR_RDMA_WRITE_WITH_IMM;
				wr.imm_data = htobe32(posted);
				wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + WRITE_OFF + slot * SLOT);
				wr.wr.rdma.rkey = b->mr->rkey;
			}
			REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post_send %u: %s", posted, uroce_last_error());
			posted++;
		}
		tr_step(&p);
		steps++;
		/* receiver: completions in order, each exactly once, intact */
		while ((n = uroce_poll_cq(b->rcq, 16, wc)) > 0) {
			for (int j = 0; j < n; j++) {
				uint32_t want;

				while (next_recv_msg < NMSG && msgs[next_recv_msg].kind != K_SEND &&
				       msgs[next_recv_msg].kind != K_WRITE_IMM)
					next_recv_msg++;
				want = next_recv_msg++;
				CHECK(wc[j].status == UROCE_WC_SUCCESS, "recv status %s", uroce_wc_status_str(wc[j].status));
				CHECK(wc[j].wr_id == recv_seen, "recv wr_id %llu, expected %u",
				      (unsigned long long)wc[j].wr_id, recv_seen);
				if (want >= NMSG) {
					CHECK(0, "more receive completions than messages");
					continue;
				}
				if (msgs[want].kind == K_SEND) {
					CHECK(wc[j].opcode == UROCE_WC_RECV && wc[j].byte_len == msgs[want].len,
					      "msg %u: recv opcode %d len %u want %u", want, wc[j].opcode, wc[j].byte_len,
					      msgs[want].len);
					CHECK(sum_of(b->buf + RECV_OFF + (uint32_t)(wc[j].wr_id % NSLOTS) * SLOT, msgs[want].len) ==
					              msgs[want].sum, "msg %u: SEND data corrupt", want);
				} else {
					CHECK(wc[j].opcode == UROCE_WC_RECV_RDMA_WITH_IMM && be32toh(wc[j].imm_data) == want,
					      "msg %u: imm %u opcode %d", want, be32toh(wc[j].imm_data), wc[j].opcode);
					CHECK(sum_of(b->buf + WRITE_OFF + (want % NSLOTS) * SLOT, msgs[want].len) == msgs[want].sum,
					      "msg %u: WRITE_WITH_IMM data corrupt", want);
				}
				recv_seen++;
				post_recv(b, recv_posted++);
			}
		}
		/* requester: completions in posting order */
		while ((n = uroce_poll_cq(a->scq, 16, wc)) > 0) {
			for (int j = 0; j < n; j++) {
				uint32_t i = (uint32_t)wc[j].wr_id;
				struct msg *m = &msgs[i < NMSG ? i : 0];

				CHECK(wc[j].status == UROCE_WC_SUCCESS, "msg %u: %s", i, uroce_wc_status_str(wc[j].status));
				CHECK(i == completed, "completion of %u, expected %u", i, completed);
				if (m->kind == K_ATOMIC) {
					uint64_t v;

					memcpy(&v, a->buf + READ_OFF + (i % NSLOTS) * SLOT, 8);
					CHECK(v == atomics_done, "msg %u: FETCH_ADD returned %llu, expected %llu", i,
					      (unsigned long long)v, (unsigned long long)atomics_done);
					atomics_done++;
				} else if (m->kind == K_READ)
					CHECK(sum_of(a->buf + READ_OFF + (i % NSLOTS) * SLOT, m->len) == m->sum,
					      "msg %u: READ data corrupt (len %u)", i, m->len);
				else if (m->kind == K_WRITE)
					CHECK(sum_of(b->buf + WRITE_OFF + (i % NSLOTS) * SLOT, m->len) == m->sum,
					      "msg %u: WRITE data corrupt (len %u)", i, m->len);
				completed++;
			}
		}
		if (test_failures > 20)
			break;
	}
	CHECK(completed == NMSG, "loss %.3f: %u of %u messages completed in %u steps", loss, completed, NMSG, steps);
	memcpy(&counter, b->buf + COUNTER_OFF, 8);
	CHECK(counter == atomics_done && atomics_done > 1000, "counter %llu after %llu FETCH_ADDs",
	      (unsigned long long)counter, (unsigned long long)atomics_done);
	uroce_qp_stats(a->qp, &qs);
	loop_fabric_stats(p.fab, &ls);
	printf("loss %.3f: %u msgs, %u steps, %.1f ms sim, %.2f s wall; lost %llu dup %llu reord %llu; "
	       "retransmits %llu timeouts %llu seq_naks %llu\n",
	       loss, completed, steps, loop_fabric_now(p.fab) / 1e6, (test_mono_ns() - t0) / 1e9,
	       (unsigned long long)ls.lost, (unsigned long long)ls.duplicated, (unsigned long long)ls.reordered,
	       (unsigned long long)qs.retransmits, (unsigned long long)qs.timeouts, (unsigned long long)qs.seq_naks_rcvd);
	if (loss > 0)
		CHECK(qs.retransmits > 0, "loss %.3f but nothing was retransmitted", loss);

	/* the peer disappears */
	{
		struct uroce_qp_attr qa;
		struct uroce_send_wr wr = { 0 };
		struct uroce_sge sg;
		struct uroce_wc wc;
		struct uroce_qp_stats bs0, bs1;
		uint64_t sum_before;
		unsigned flushed = 0;

		REQUIRE(loop_fabric_set_link(p.fab, 0, false) == 0, "link down");
		tr_fill(a->buf, 4000, 42);
		tr_sge(&sg, a, 0, 4000);
		tr_wr(&wr, 0, &sg, UROCE_WR_RDMA_WRITE);
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + WRITE_OFF);
		wr.wr.rdma.rkey = b->mr->rkey;
		sum_before = sum_of(b->buf + WRITE_OFF, 4000);
		for (int i = 0; i < 5; i++) {
			wr.wr_id = 100000 + i;
			REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
		}
		CHECK(tr_wait(&p, a->scq, &wc, 200000) == 0, "no completion after the peer vanished");
		CHECK(wc.wr_id == 100000 && wc.status == UROCE_WC_RETRY_EXC_ERR, "first: wr %llu %s",
		      (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status));
		for (int i = 0; i < 100 && flushed < 4; i++) {
			if (uroce_poll_cq(a->scq, 1, &wc) == 1) {
				CHECK(wc.status == UROCE_WC_WR_FLUSH_ERR && wc.wr_id == 100001u + flushed, "flush: wr %llu %s",
				      (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status));
				flushed++;
			} else {
				tr_step(&p);
			}
		}
		CHECK(flushed == 4, "%u flushed, want 4", flushed);
		uroce_qp_query(a->qp, &qa, NULL);
		CHECK(qa.qp_state == UROCE_QPS_ERR, "QP in %s, want ERR", uroce_qp_state_str(qa.qp_state));
		/* posting in ERR completes with a flush; nothing leaves the QP */
		wr.wr_id = 7;
		CHECK(uroce_post_send(a->qp, &wr, NULL) == 0, "post in ERR: %s", uroce_last_error());
		CHECK(tr_wait(&p, a->scq, &wc, 1000) == 0 && wc.status == UROCE_WC_WR_FLUSH_ERR, "post in ERR: no flush");
		uroce_qp_stats(b->qp, &bs0);
		REQUIRE(loop_fabric_set_link(p.fab, 0, true) == 0, "link up");
		for (int i = 0; i < 5000; i++)
			tr_step(&p);
		uroce_qp_stats(b->qp, &bs1);
		CHECK(bs1.rx_packets == bs0.rx_packets, "the peer got %llu packets after the QP was in ERR",
		      (unsigned long long)(bs1.rx_packets - bs0.rx_packets));
		CHECK(sum_of(b->buf + WRITE_OFF, 4000) == sum_before, "written after the QP was in ERR");
	}
	tr_close(&p);
}

/* UC under loss: a message with a lost packet is dropped whole; what
 * arrives is intact, in order, never partial. */
static void run_uc(double loss, uint64_t seed)
{
	struct loop_impairment imp = { .loss = loss, .duplicate = 0.01, .reorder = 0.01, .reorder_max_ns = 8000,
		                       .delay_ns = 2000 };
	struct tr_pair p;
	struct tr_opts o;
	struct test_rng rng = { seed };
	static uint32_t lens[2000];
	uint32_t got = 0, last = 0, sent = 0;
	struct uroce_port_stats st;

	tr_opts_default(&o, UROCE_QPT_UC);
	o.max_wr = 64;
	tr_open(&p, &o, seed, &imp, &imp);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	for (uint32_t i = 0; i < 2000; i++)
		lens[i] = 1 + (uint32_t)test_rng_below(&rng, 5000);
	for (uint32_t i = 0; i < 32; i++) {
		struct uroce_sge sg;
		struct uroce_recv_wr rw = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

		tr_sge(&sg, b, RECV_OFF + i * SLOT, SLOT);
		REQUIRE(uroce_post_recv(b->qp, &rw, NULL) == 0, "post_recv: %s", uroce_last_error());
	}
	for (unsigned steps = 0; steps < 200000 && (sent < 2000 || steps < 2000 + sent * 10); steps++) {
		struct uroce_wc wc;

		if (sent < 2000) {
			struct uroce_sge sg;
			struct uroce_send_wr wr = { .wr_id = sent, .sg_list = &sg, .num_sge = 1,
			                            .opcode = UROCE_WR_SEND_WITH_IMM, .imm_data = htobe32(sent) };

			/* the source is regenerated per message: UC sends complete when sent */
			tr_fill(a->buf, lens[sent], sent);
			tr_sge(&sg, a, 0, lens[sent]);
			if (uroce_post_send(a->qp, &wr, NULL) == 0)
				sent++;
		}
		tr_step(&p);
		while (uroce_poll_cq(a->scq, 1, &wc) == 1)
			CHECK(0, "unsignaled UC send completed (%s)", uroce_wc_status_str(wc.status));
		while (uroce_poll_cq(b->rcq, 1, &wc) == 1) {
			uint32_t m = be32toh(wc.imm_data), slot = (uint32_t)wc.wr_id % 32;
			uint8_t want[SLOT];

			CHECK(wc.status == UROCE_WC_SUCCESS, "uc recv %s", uroce_wc_status_str(wc.status));
			CHECK(m < 2000 && (got == 0 || m > last), "uc message %u after %u", m, last);
			if (m < 2000) {
				CHECK(wc.byte_len == lens[m], "uc message %u: %u bytes, sent %u", m, wc.byte_len, lens[m]);
				tr_fill(want, lens[m], m);
				CHECK(memcmp(want, b->buf + RECV_OFF + slot * SLOT, lens[m]) == 0, "uc message %u corrupt", m);
			}
			last = m;
			got++;
			{
				struct uroce_sge sg;
				struct uroce_recv_wr rw = { .wr_id = wc.wr_id, .sg_list = &sg, .num_sge = 1 };

				tr_sge(&sg, b, RECV_OFF + slot * SLOT, SLOT);
				REQUIRE(uroce_post_recv(b->qp, &rw, NULL) == 0, "post_recv: %s", uroce_last_error());
			}
		}
	}
	uroce_port_stats(b->ctx, 1, &st);
	printf("uc loss %.3f: %u of %u messages delivered whole, uc_gap drops %llu, no_recv_buffer %llu\n", loss, got,
	       sent, (unsigned long long)st.drops[UROCE_DROP_UC_GAP],
	       (unsigned long long)st.drops[UROCE_DROP_NO_RECV_BUFFER]);
	CHECK(got > 1000 && got <= sent, "uc: %u of %u delivered", got, sent);
	if (loss > 0)
		CHECK(got < sent && st.drops[UROCE_DROP_UC_GAP] > 0, "uc: loss but nothing dropped");
	tr_close(&p);
}

int main(void)
{
	run_uc(0.01, 31);
	run(0.0, 11);
	run(0.001, 12);
	run(0.01, 13);
	return test_done("transport_loss");
}
