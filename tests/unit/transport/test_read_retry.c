/* SPDX-License-Identifier: MIT */
/* Large READs under loss of their responses (loop fabric, rc): a lost
 * response is asked for again from the first missing PSN (a READ request
 * for the rest of its request's bytes, IBTA's resend from the middle),
 * never from the READ's start, and the responder serves such a request
 * from that offset. A filter drops chosen responses on their first passage and sees
 * every READ request. A READ larger than 2048 responses goes as requests
 * of at most 2048 (a receive ring's worth), aligned to its start; each
 * other request must carry the PSN of a response the filter dropped, with
 * the matching address and a length up to its border, and the responses
 * sent stay near the READ's size. */
#include "tr_test.h"
#include "dataplane/wire.h"

#define MTU 1024u
#define BIG (4u << 20) /* one READ of 4 MiB: 4096 responses */
#define NREQ 4096u
#define STEP_LIMIT 4000000u
#define BIG_RING 16384u /* receive ring that never overflows here */
#define REQ_PKTS 2048u  /* responses one request asks for at most (RC_READ_RESP_PKTS) */

/* The response after the last one the request holding response k asks for */
static uint32_t border(uint32_t k)
{
	uint32_t b = (k / REQ_PKTS + 1) * REQ_PKTS;

	return b < BIG / MTU ? b : BIG / MTU;
}

struct rd_seen {
	uint32_t first_psn;  /* PSN of the READ of interest (case one) */
	bool have_first;
	uint32_t ndrop_idx;  /* case one: indexes to drop once */
	uint32_t drop_idx[8];
	bool dropped_once[8];
	double p;            /* case two: seeded uniform loss of responses */
	uint64_t rng;
	uint8_t lost[1u << 21]; /* bitmap over 24-bit PSNs: responses dropped */
	uint64_t resp_sent, resp_dropped;
	struct {
		uint32_t psn, len;
		uint64_t va;
	} req[NREQ];
	uint32_t nreq;
};

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* B -> A: READ responses */
static bool resp_filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct rd_seen *s = arg;
	struct roce_pkt pkt;
	uint8_t op;
	bool drop = false;

	if (roce_parse(frame, len, &pkt, NULL) != UROCE_DROP_NONE)
		return false;
	op = pkt.opcode & 0x1f;
	if ((pkt.opcode & 0xe0) != ROCE_TR_RC || op < ROCE_OP_READ_RESP_FIRST || op > ROCE_OP_READ_RESP_ONLY)
		return false;
	s->resp_sent++;
	if (s->have_first) {
		uint32_t idx = (uint32_t)roce_psn_diff(pkt.psn, s->first_psn);

		for (uint32_t i = 0; i < s->ndrop_idx; i++)
			if (s->drop_idx[i] == idx && !s->dropped_once[i])
				drop = s->dropped_once[i] = true;
	}
	if (s->p > 0 && (double)(xs(&s->rng) >> 11) / 9007199254740992.0 < s->p)
		drop = true;
	if (drop) {
		s->lost[pkt.psn / 8] |= (uint8_t)(1u << (pkt.psn % 8));
		s->resp_dropped++;
	}
	return drop;
}

/* A -> B: READ requests, recorded */
static bool req_filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct rd_seen *s = arg;
	struct roce_pkt pkt;

	if (roce_parse(frame, len, &pkt, NULL) != UROCE_DROP_NONE || pkt.opcode != (ROCE_TR_RC | ROCE_OP_READ_REQUEST))
		return false;
	if (!s->have_first) {
		s->have_first = true;
		s->first_psn = pkt.psn;
	}
	if (s->nreq < NREQ) {
		s->req[s->nreq].psn = pkt.psn;
		s->req[s->nreq].len = pkt.reth.dma_len;
		s->req[s->nreq].va = pkt.reth.va;
	}
	s->nreq++;
	return false;
}

struct bufs {
	uint8_t *src, *dst; /* B's READ source, A's destination */
	struct uroce_mr *msrc, *mdst;
};

static void bufs_open(struct tr_pair *p, struct bufs *b, uint32_t len, uint32_t seed)
{
	b->src = aligned_alloc(4096, len);
	b->dst = aligned_alloc(4096, len);
	REQUIRE(b->src && b->dst, "buffers");
	tr_fill(b->src, len, seed);
	memset(b->dst, 0, len);
	REQUIRE(uroce_mr_reg(p->s[1].pd, b->src, len, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_READ, &b->msrc) == 0,
	        "mr_reg: %s", uroce_last_error());
	REQUIRE(uroce_mr_reg(p->s[0].pd, b->dst, len, UROCE_ACCESS_LOCAL_WRITE, &b->mdst) == 0, "mr_reg: %s",
	        uroce_last_error());
}

static void bufs_close(struct bufs *b)
{
	CHECK(uroce_mr_dereg(b->msrc) == 0, "mr_dereg");
	CHECK(uroce_mr_dereg(b->mdst) == 0, "mr_dereg");
	free(b->src);
	free(b->dst);
}

static void post_read(struct tr_side *a, const struct bufs *b, uint64_t id, uint32_t off, uint32_t len)
{
	struct uroce_sge sg = { .addr = (uint64_t)(uintptr_t)(b->dst + off), .length = len, .lkey = b->mdst->lkey };
	struct uroce_send_wr wr;

	tr_wr(&wr, id, &sg, UROCE_WR_RDMA_READ);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->src + off);
	wr.wr.rdma.rkey = b->msrc->rkey;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
}

/* tr_open with a receive ring of rx_ring frames (0: the default, 1024) */
static void open_pair(struct tr_pair *p, struct rd_seen *s, uint64_t seed, uint8_t rd, uint32_t rx_ring)
{
	struct loop_impairment imp = { .delay_ns = 2000, .jitter_ns = 200 };
	struct loop_fabric_opts fo = { .nports = 2, .seed = seed, .rx_ring = rx_ring, .nframes = rx_ring ? 4 * rx_ring : 0 };
	char err[128];
	struct tr_opts o;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rd_atomic = rd;
	o.max_wr = 64;
	memset(p, 0, sizeof(*p));
	p->fab = loop_fabric_create_opts(&fo, err, sizeof(err));
	REQUIRE(p->fab, "fabric: %s", err);
	p->psn_seeded = (uint32_t)((seed + 1) * 0x9e3779b97f4a7c15ull >> 40);
	REQUIRE(loop_fabric_connect(p->fab, 0, 1, &imp, &imp) == 0, "connect");
	tr_side_open(p, 0, &o);
	tr_side_open(p, 1, &o);
	REQUIRE(tr_connect(p, 0, &o) == 0, "connect 0: %s", uroce_last_error());
	REQUIRE(tr_connect(p, 1, &o) == 0, "connect 1: %s", uroce_last_error());
	REQUIRE(loop_fabric_set_filter(p->fab, 0, req_filter, s) == 0, "filter");
	REQUIRE(loop_fabric_set_filter(p->fab, 1, resp_filter, s) == 0, "filter");
}

/* Case one: one 4 MiB READ, four chosen responses lost once. */
static void run_one(uint64_t seed, uint32_t rx_ring)
{
	static struct rd_seen s;
	static const uint32_t idx[] = { 1500, 2600, 3500, BIG / MTU - 1 };
	struct tr_pair p;
	struct bufs b;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	struct loop_link_stats ls;
	uint64_t bound = BIG / MTU;

	memset(&s, 0, sizeof(s));
	s.ndrop_idx = 4;
	memcpy(s.drop_idx, idx, sizeof(idx));
	for (uint32_t i = 0; i < 4; i++)
		bound += border(idx[i]) - idx[i]; /* each loss resends at most the rest of its request */
	open_pair(&p, &s, seed, 4, rx_ring);
	bufs_open(&p, &b, BIG, (uint32_t)seed);
	post_read(&p.s[0], &b, 1, 0, BIG);
	REQUIRE(tr_wait(&p, p.s[0].scq, &wc, STEP_LIMIT) == 0, "one READ: no completion");
	CHECK(wc.status == UROCE_WC_SUCCESS, "one READ: status %s", uroce_wc_status_str(wc.status));
	CHECK(!memcmp(b.src, b.dst, BIG), "one READ: bytes differ");
	for (uint32_t i = 0; i < 4; i++)
		CHECK(s.dropped_once[i], "one READ: response %u never went", idx[i]);
	REQUIRE(uroce_qp_stats(p.s[0].qp, &qs) == 0, "stats");
	REQUIRE(loop_fabric_link_stats(p.fab, 1, &ls) == 0, "link stats");
	/* a ring that overflowed lost responses the filter cannot see */
	CHECK(rx_ring != BIG_RING || ls.rx_ring_full == 0, "one READ: %llu responses overflowed a ring of %u",
	      (unsigned long long)ls.rx_ring_full, rx_ring);
	CHECK(s.nreq >= 2 && s.nreq <= NREQ, "one READ: %u requests", s.nreq);
	CHECK(s.req[0].len == REQ_PKTS * MTU, "one READ: first request asks %u bytes, want %u", s.req[0].len,
	      REQ_PKTS * MTU);
	/* every later request starts where the one before it ended, or names
	 * a lost response; it asks up to its border and no further */
	for (uint32_t r = 1; r < s.nreq && r < NREQ; r++) {
		uint32_t k = (uint32_t)roce_psn_diff(s.req[r].psn, s.first_psn);

		CHECK(ls.rx_ring_full || k % REQ_PKTS == 0 || ((s.lost[s.req[r].psn / 8] >> (s.req[r].psn % 8)) & 1),
		      "one READ: request %u at response %u, which was not lost", r, k);
		CHECK(k > 0 && k < BIG / MTU && s.req[r].len == (border(k) - k) * MTU &&
		          s.req[r].va == (uint64_t)(uintptr_t)b.src + (uint64_t)k * MTU,
		      "one READ: request %u at response %u asks va +%llu len %u", r, k,
		      (unsigned long long)(s.req[r].va - (uint64_t)(uintptr_t)b.src), s.req[r].len);
	}
	CHECK(ls.rx_ring_full || s.resp_sent <= bound, "one READ: %llu responses sent, more than %llu", (unsigned long long)s.resp_sent,
	      (unsigned long long)bound);
	printf("ring %u: one 4 MiB READ (%u responses), 4 lost: %u requests, %llu responses sent (bound %llu, from the start "
	       "would be %u), %llu timeouts, %llu retransmits, %llu rx_ring_full\n",
	       rx_ring ? rx_ring : 1024u, BIG / MTU, s.nreq, (unsigned long long)s.resp_sent, (unsigned long long)bound, 5 * BIG / MTU,
	       (unsigned long long)qs.timeouts, (unsigned long long)qs.retransmits,
	       (unsigned long long)ls.rx_ring_full);
	bufs_close(&b);
	tr_close(&p);
}

/* Case three: one 4 MiB READ, nothing lost, into AF_XDP's largest ring
 * (2048 frames): asked in two requests of a ring's worth, not one of 4096
 * responses that overflows it */
static void run_clean(uint64_t seed, uint32_t rx_ring)
{
	static struct rd_seen s;
	struct tr_pair p;
	struct bufs b;
	struct uroce_wc wc;
	struct loop_link_stats ls;

	memset(&s, 0, sizeof(s));
	open_pair(&p, &s, seed, 4, rx_ring);
	bufs_open(&p, &b, BIG, (uint32_t)seed);
	post_read(&p.s[0], &b, 1, 0, BIG);
	REQUIRE(tr_wait(&p, p.s[0].scq, &wc, STEP_LIMIT) == 0, "clean READ: no completion");
	CHECK(wc.status == UROCE_WC_SUCCESS && !memcmp(b.src, b.dst, BIG), "clean READ: status %s, bytes %s",
	      uroce_wc_status_str(wc.status), memcmp(b.src, b.dst, BIG) ? "differ" : "same");
	REQUIRE(loop_fabric_link_stats(p.fab, 1, &ls) == 0, "link stats");
	CHECK(s.nreq == BIG / MTU / REQ_PKTS && s.resp_sent == BIG / MTU && ls.rx_ring_full == 0,
	      "clean READ into a ring of %u: %u requests, %llu responses sent, %llu overflowed the ring", rx_ring, s.nreq,
	      (unsigned long long)s.resp_sent, (unsigned long long)ls.rx_ring_full);
	for (uint32_t r = 0; r < s.nreq && r < NREQ; r++)
		CHECK(s.req[r].len == REQ_PKTS * MTU && s.req[r].va == (uint64_t)(uintptr_t)b.src + (uint64_t)r * REQ_PKTS * MTU,
		      "clean READ: request %u asks va +%llu len %u", r,
		      (unsigned long long)(s.req[r].va - (uint64_t)(uintptr_t)b.src), s.req[r].len);
	printf("ring %u: one 4 MiB READ, nothing lost: %u requests, %llu responses, %llu overflowed the ring\n", rx_ring,
	       s.nreq, (unsigned long long)s.resp_sent, (unsigned long long)ls.rx_ring_full);
	bufs_close(&b);
	tr_close(&p);
}

/* Case two: 16 READs of 512 KiB outstanding at once (perftest's -o 16),
 * responses lost at random: all complete intact, and no request asks
 * again from a response that was not lost. */
#define NRD 16u
#define RDLEN (512u << 10)
static void run_many(double loss, uint64_t seed, uint32_t rx_ring)
{
	static struct rd_seen s;
	struct tr_pair p;
	struct bufs b;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	struct loop_link_stats ls;
	uint32_t done = 0, steps = 0, bad = 0;

	memset(&s, 0, sizeof(s));
	s.p = loss;
	s.rng = seed | 1;
	open_pair(&p, &s, seed, 16, rx_ring);
	bufs_open(&p, &b, NRD * RDLEN, (uint32_t)seed);
	for (uint32_t i = 0; i < NRD; i++)
		post_read(&p.s[0], &b, i, i * RDLEN, RDLEN);
	while (done < NRD && steps++ < STEP_LIMIT) {
		if (uroce_poll_cq(p.s[0].scq, 1, &wc) == 1) {
			CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == done, "READ %u: status %s, wr_id %llu", done,
			      uroce_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
			done++;
			continue;
		}
		tr_step(&p);
	}
	CHECK(done == NRD, "loss %.3f: %u of %u READs completed", loss, done, NRD);
	CHECK(!memcmp(b.src, b.dst, NRD * RDLEN), "loss %.3f: bytes differ", loss);
	REQUIRE(uroce_qp_stats(p.s[0].qp, &qs) == 0, "stats");
	REQUIRE(loop_fabric_link_stats(p.fab, 1, &ls) == 0, "link stats");
	CHECK(rx_ring != BIG_RING || ls.rx_ring_full == 0, "loss %.3f: %llu responses overflowed a ring of %u", loss,
	      (unsigned long long)ls.rx_ring_full, rx_ring);
	for (uint32_t r = 0; r < s.nreq && r < NREQ; r++) {
		uint64_t off = s.req[r].va - (uint64_t)(uintptr_t)b.src;
		bool lost = (s.lost[s.req[r].psn / 8] >> (s.req[r].psn % 8)) & 1;

		/* a READ's first request asks from its start; any other from a lost response */
		if (off % RDLEN != 0 && !lost && !ls.rx_ring_full)
			bad++;
		if (off % RDLEN + s.req[r].len != RDLEN)
			bad++;
	}
	CHECK(bad == 0, "loss %.3f: %u requests not from a lost response or not to the READ's end", loss, bad);
	CHECK(s.nreq <= NREQ, "loss %.3f: %u requests, more than %u", loss, s.nreq, NREQ);
	printf("ring %u: 16 x 512 KiB READs, loss %.3f: %llu responses lost, %u requests, %llu responses sent for %u, %llu "
	       "timeouts, %llu retransmits, %llu rx_ring_full\n",
	       rx_ring ? rx_ring : 1024u, loss, (unsigned long long)s.resp_dropped, s.nreq, (unsigned long long)s.resp_sent, NRD * RDLEN / MTU,
	       (unsigned long long)qs.timeouts, (unsigned long long)qs.retransmits,
	       (unsigned long long)ls.rx_ring_full);
	bufs_close(&b);
	tr_close(&p);
}

int main(void)
{
	/* a ring that takes every response: the retries are checked exactly */
	run_one(3, BIG_RING);
	run_clean(4, REQ_PKTS);
	run_many(0.0005, 5, BIG_RING);
	run_many(0.002, 7, BIG_RING);
	/* the default ring of 1024 frames overflows under a 4096-response
	 * burst: the READs still complete intact, retrying from the middle */
	run_one(3, 0);
	run_many(0.002, 7, 0);
	return test_done("transport_read_retry");
}
