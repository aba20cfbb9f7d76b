/* SPDX-License-Identifier: MIT */
/* Paths and congestion control over the loop fabric, in simulated time:
 *  - spraying over N paths (every policy, sr and ec) under reordering and
 *    loss delivers every message exactly once, in order, byte for byte;
 *    messages below the threshold keep one path, larger ones spread;
 *  - a path that starts dropping everything is taken out within a bound,
 *    traffic goes on over the others, and it comes back once it heals;
 *  - paths over a second port, and that port's link going down;
 *  - every controller keeps a rate-limited link busy without collapse and
 *    shares it fairly between 2 and 4 flows (the loop link's queue marks
 *    ECN for DCQCN);
 *  - refused arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/wire.h"
#include "transport/path/path.h"
#include "tr_test.h"

#define NQ_MAX 4u
#define DCQCN_RUN_MS 200
#define ECN_KMIN 1000
#define ECN_KMAX 10000
#define ECN_PMAX 0.01
#define NET_BUF (16u << 20)
#define SLICE (NET_BUF / NQ_MAX)

struct net {
	struct loop_fabric *fab;
	unsigned nports;
	struct uroce_context *ctx[2];
	struct uroce_pd *pd[2];
	struct uroce_cq *scq[2], *rcq[2];
	uint8_t *buf[2];
	struct uroce_mr *mr[2];
	unsigned nq;
	struct uroce_qp *qp[2][NQ_MAX];
	uint64_t idle_ns;
};

static void net_open(struct net *n, unsigned nports, const struct loop_impairment *ab,
                     const struct loop_impairment *ba, uint64_t seed)
{
	memset(n, 0, sizeof(*n));
	n->nports = nports;
	n->idle_ns = TR_STEP_IDLE_NS;
	n->fab = loop_fabric_create(2 * nports, seed);
	REQUIRE(n->fab, "fabric");
	for (unsigned i = 0; i < nports; i++)
		REQUIRE(loop_fabric_connect(n->fab, i, nports + i, ab, ba) == 0, "connect");
	for (unsigned s = 0; s < 2; s++) {
		char p[2][16];
		const char *specs[2] = { p[0], p[1] };
		struct uroce_context_attr ca = { 0 };

		for (unsigned i = 0; i < nports; i++)
			snprintf(p[i], sizeof(p[i]), "loop:%u", s * nports + i);
		ca.ports = specs;
		ca.nports = nports;
		ca.loop_fabric = n->fab;
		REQUIRE(uroce_context_create(&n->ctx[s], &ca) == 0, "context: %s", uroce_last_error());
		REQUIRE(uroce_pd_alloc(n->ctx[s], &n->pd[s]) == 0, "pd");
		REQUIRE(uroce_cq_create(n->ctx[s], 8192, &n->scq[s]) == 0, "cq");
		REQUIRE(uroce_cq_create(n->ctx[s], 8192, &n->rcq[s]) == 0, "cq");
		n->buf[s] = aligned_alloc(4096, NET_BUF);
		REQUIRE(n->buf[s], "buf");
		memset(n->buf[s], 0, NET_BUF);
		REQUIRE(uroce_mr_reg(n->pd[s], n->buf[s], NET_BUF,
		                     UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &n->mr[s]) == 0,
		        "mr: %s", uroce_last_error());
	}
}

/* source ports each side's QPs are given at RTR (UROCE_QP_SPORTS), as the
 * peer's uroce_steer_sports would choose them; none when g_nsports[s] is 0 */
static const uint16_t *g_sports[2];
static unsigned g_nsports[2];

static int net_qps(struct net *n, unsigned nq, const struct tr_opts *o)
{
	for (unsigned q = 0; q < nq; q++)
		for (unsigned s = 0; s < 2; s++) {
			struct uroce_qp_init_attr ia;
			int rc;

			memset(&ia, 0, sizeof(ia));
			ia.qp_type = UROCE_QPT_RC;
			ia.send_cq = n->scq[s];
			ia.recv_cq = n->rcq[s];
			ia.cap.max_send_wr = 256;
			ia.cap.max_recv_wr = 256;
			ia.cap.max_send_sge = 1;
			ia.cap.max_recv_sge = 1;
			ia.qp_context = (void *)(uintptr_t)q;
			ia.rel = o->rel;
			ia.path = o->path;
			ia.cc = o->cc;
			rc = uroce_qp_create(n->pd[s], &ia, &n->qp[s][q]);
			if (rc)
				return rc;
		}
	n->nq = nq;
	for (unsigned q = 0; q < nq; q++)
		for (unsigned s = 0; s < 2; s++) {
			struct uroce_qp_attr a;
			int rc;

			memset(&a, 0, sizeof(a));
			a.qp_state = UROCE_QPS_INIT;
			a.port_num = 1;
			a.qp_access_flags = UROCE_ACCESS_REMOTE_WRITE;
			REQUIRE(uroce_qp_modify(n->qp[s][q], &a,
			                        UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS) == 0,
			        "init: %s", uroce_last_error());
			a.qp_state = UROCE_QPS_RTR;
			a.path_mtu = o->mtu;
			a.dest_qp_num = uroce_qp_num(n->qp[!s][q]);
			a.dest_token = uroce_qp_token(n->qp[!s][q]);
			a.rq_psn = 1000u * q;
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 1;
			REQUIRE(uroce_query_gid(n->ctx[!s], 1, tr_gid_index, a.ah_attr.dgid) == 0, "gid");
			a.ah_attr.sgid_index = (uint8_t)tr_gid_index;
			for (unsigned i = 0; i < g_nsports[s] && i < UROCE_MAX_SPORTS; i++)
				a.sports[i] = g_sports[s][i];
			a.num_sports = (uint8_t)g_nsports[s];
			rc = uroce_qp_modify(n->qp[s][q], &a,
			                     UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
			                             UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER |
			                             (g_nsports[s] ? UROCE_QP_SPORTS : 0));
			if (rc)
				return rc;
			a.qp_state = UROCE_QPS_RTS;
			a.sq_psn = 1000u * q;
			a.timeout = 14; /* 67 ms: losses are sr's to repair, not the QP's end */
			a.retry_cnt = 7;
			a.rnr_retry = 7;
			a.max_rd_atomic = 1;
			REQUIRE(uroce_qp_modify(n->qp[s][q], &a,
			                        UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
			                                UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC) == 0,
			        "rts: %s", uroce_last_error());
		}
	return 0;
}

static void net_close(struct net *n)
{
	for (unsigned s = 0; s < 2; s++) {
		for (unsigned q = 0; q < n->nq; q++)
			CHECK(uroce_qp_destroy(n->qp[s][q]) == 0, "qp_destroy: %s", uroce_last_error());
		CHECK(uroce_mr_dereg(n->mr[s]) == 0, "mr_dereg");
		CHECK(uroce_cq_destroy(n->scq[s]) == 0, "cq");
		CHECK(uroce_cq_destroy(n->rcq[s]) == 0, "cq");
		CHECK(uroce_pd_free(n->pd[s]) == 0, "pd");
		CHECK(uroce_context_destroy(n->ctx[s]) == 0, "ctx: %s", uroce_last_error());
		free(n->buf[s]);
	}
	CHECK(loop_fabric_free_frames(n->fab) > 0, "fabric");
	loop_fabric_destroy(n->fab);
}

static void net_step(struct net *n)
{
	int k = uroce_progress(n->ctx[0]) + uroce_progress(n->ctx[1]);

	loop_fabric_advance(n->fab, k ? TR_STEP_BUSY_NS : n->idle_ns);
}

/* --- a transfer: nmsg WRITE_WITH_IMM per QP, depth in flight, each slot
 * checked at the receiver before the sender reuses it ------------------ */

struct flow {
	uint32_t posted, verified, sent_done;
	uint64_t bytes;          /* verified bytes */
	uint64_t win_bytes;      /* of which inside the measurement window */
	unsigned bad;
};

struct xfer {
	uint32_t nmsg;           /* per QP; 0 = run until the time is up */
	uint32_t depth;
	uint32_t (*size)(uint32_t seq);
	uint64_t until_ns;       /* stop posting then (0 = never) */
	uint64_t win_from_ns;    /* goodput window start */
	struct flow f[NQ_MAX];
	uint64_t wrong_order, bad_bytes;
};

static uint8_t expect[SLICE];

static uint32_t slot_len(const struct xfer *x)
{
	return SLICE / x->depth;
}

static void post_one(struct net *n, struct xfer *x, unsigned q)
{
	struct flow *f = &x->f[q];
	uint32_t seq = f->posted, len = x->size(seq), off = q * SLICE + (seq % x->depth) * slot_len(x);
	struct uroce_sge sg;
	struct uroce_send_wr wr, *bad;
	struct uroce_recv_wr rr, *rbad;

	tr_fill(n->buf[0] + off, len, q * 100003u + seq);
	memset(&rr, 0, sizeof(rr));
	rr.wr_id = seq;
	REQUIRE(uroce_post_recv(n->qp[1][q], &rr, &rbad) == 0, "post_recv: %s", uroce_last_error());
	sg.addr = (uint64_t)(uintptr_t)(n->buf[0] + off);
	sg.length = len;
	sg.lkey = n->mr[0]->lkey;
	tr_wr(&wr, seq, &sg, UROCE_WR_RDMA_WRITE_WITH_IMM);
	wr.imm_data = htobe32(seq);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(n->buf[1] + off);
	wr.wr.rdma.rkey = n->mr[1]->rkey;
	REQUIRE(uroce_post_send(n->qp[0][q], &wr, &bad) == 0, "post_send: %s", uroce_last_error());
	f->posted++;
}

static void poll_xfer(struct net *n, struct xfer *x, uint64_t now)
{
	struct uroce_wc wc[64];
	int k;

	while ((k = uroce_poll_cq(n->rcq[1], 64, wc)) > 0)
		for (int i = 0; i < k; i++) {
			unsigned q = 0;
			struct flow *f;
			uint32_t seq, len, off;

			while (q < n->nq && uroce_qp_num(n->qp[1][q]) != wc[i].qp_num)
				q++;
			REQUIRE(q < n->nq && wc[i].status == UROCE_WC_SUCCESS, "recv wc status %d", wc[i].status);
			f = &x->f[q];
			seq = be32toh(wc[i].imm_data);
			if (seq != f->verified) {
				x->wrong_order++;
				continue;
			}
			len = x->size(seq);
			off = q * SLICE + (seq % x->depth) * slot_len(x);
			tr_fill(expect, len, q * 100003u + seq);
			if (wc[i].byte_len != len || memcmp(n->buf[1] + off, expect, len))
				x->bad_bytes++;
			memset(n->buf[1] + off, 0, len); /* a second copy would show */
			f->verified++;
			f->bytes += len;
			if (now >= x->win_from_ns)
				f->win_bytes += len;
		}
	while ((k = uroce_poll_cq(n->scq[0], 64, wc)) > 0)
		for (int i = 0; i < k; i++) {
			REQUIRE(wc[i].status == UROCE_WC_SUCCESS, "send wc status %s", uroce_wc_status_str(wc[i].status));
			for (unsigned q = 0; q < n->nq; q++)
				if (uroce_qp_num(n->qp[0][q]) == wc[i].qp_num)
					x->f[q].sent_done++;
		}
}

/* Run until every message is verified (nmsg) or time is up; false if
 * the step bound ran out first. */
static bool run_xfer(struct net *n, struct xfer *x, unsigned max_steps)
{
	for (unsigned step = 0; step < max_steps; step++) {
		uint64_t now = loop_fabric_now(n->fab);
		bool all = true;

		for (unsigned q = 0; q < n->nq; q++) {
			struct flow *f = &x->f[q];

			while ((!x->nmsg || f->posted < x->nmsg) && f->posted < f->verified + x->depth &&
			       (!x->until_ns || now < x->until_ns))
				post_one(n, x, q);
			if (x->nmsg ? f->verified < x->nmsg || f->sent_done < x->nmsg : now < x->until_ns)
				all = false;
		}
		if (all)
			return true;
		net_step(n);
		poll_xfer(n, x, loop_fabric_now(n->fab));
	}
	return false;
}

static uint32_t size_mixed(uint32_t seq)
{
	static const uint32_t sz[] = { 1, 700, 4096, 8191, 8192, 20000, 65536, 3000, 100000, 33 };

	return sz[seq % 10];
}

static uint32_t size_64k(uint32_t seq)
{
	(void)seq;
	return 65536;
}

/* --- a filter that sees the data packets: which source port each took,
 * and (when armed) drops every packet of one source port ---------------- */

#define SPORTS_MAX 64u
struct spy {
	uint16_t blackhole;       /* drop this source port (0 = none) */
	uint64_t dropped;
	/* per message number: the source ports its data packets took */
	uint16_t first_sport[4096];
	uint8_t multi[4096];
	uint16_t seen_sport[SPORTS_MAX];
	uint64_t seen_pkts[SPORTS_MAX];
};

static bool spy_filter(void *arg, const uint8_t *f, uint32_t len)
{
	struct spy *s = arg;
	struct roce_pkt pkt;
	uint16_t sport;

	if (roce_parse(f, len, &pkt, NULL) != UROCE_DROP_NONE)
		return false;
	sport = pkt.sport;
	if (s->blackhole && sport == s->blackhole) {
		s->dropped++;
		return true;
	}
	if (pkt.opcode == (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM) && pkt.reth.rkey != 0) {
		uint32_t msg = pkt.imm >> 20; /* sr's immediate: message number */

		if (!s->first_sport[msg])
			s->first_sport[msg] = sport;
		else if (s->first_sport[msg] != sport)
			s->multi[msg] = 1;
	}
	for (unsigned i = 0; i < SPORTS_MAX; i++) {
		if (s->seen_sport[i] == sport || !s->seen_sport[i]) {
			s->seen_sport[i] = sport;
			s->seen_pkts[i]++;
			break;
		}
	}
	return false;
}

/* --- tests ------------------------------------------------------------ */

static void test_spray(enum uroce_reliability rel, enum uroce_path_policy pol, unsigned npaths)
{
	struct loop_impairment imp = { .loss = 0.005, .reorder = 0.2, .reorder_max_ns = 60000, .delay_ns = 5000,
	                               .jitter_ns = 2000 };
	struct tr_opts o;
	struct net n;
	struct spy *spy = calloc(1, sizeof(*spy));
	struct xfer x = { .nmsg = 300, .depth = 8, .size = size_mixed };
	unsigned used = 0, spread = 0, stuck_small = 0;
	uint64_t most = 0, total = 0;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = rel;
	o.path.npaths = (uint16_t)npaths;
	o.path.policy = pol;
	net_open(&n, 1, &imp, &imp, 11 + pol);
	REQUIRE(net_qps(&n, 1, &o) == 0, "qps: %s", uroce_last_error());
	REQUIRE(loop_fabric_set_filter(n.fab, 0, spy_filter, spy) == 0, "filter");
	CHECK(run_xfer(&n, &x, 2000000), "%s %s x%u: transfer did not finish (%u of %u)", uroce_reliability_str(rel),
	      uroce_path_policy_str(pol), npaths, x.f[0].verified, x.nmsg);
	CHECK(x.wrong_order == 0 && x.bad_bytes == 0, "%s %s: %lu out of order, %lu with wrong bytes",
	      uroce_reliability_str(rel), uroce_path_policy_str(pol), (unsigned long)x.wrong_order,
	      (unsigned long)x.bad_bytes);
	for (unsigned i = 0; i < npaths; i++) {
		struct uroce_path_stats ps;

		REQUIRE(uroce_qp_path_stats(n.qp[0][0], i, &ps) == 0, "path_stats: %s", uroce_last_error());
		used += ps.tx_pkts > 0;
		total += ps.tx_pkts;
		if (ps.tx_pkts > most)
			most = ps.tx_pkts;
	}
	for (unsigned m = 0; m < x.nmsg; m++) {
		bool small = size_mixed(m) < UROCE_SPRAY_MIN_DEFAULT;

		if (small && spy->multi[m])
			stuck_small++;
		if (!small && spy->multi[m])
			spread++;
	}
	if (pol == UROCE_PATH_SINGLE) {
		/* one path, but another while it is quarantined (losses in a row) */
		CHECK(most * 3 >= total * 2, "single: %lu of %lu packets on its path", (unsigned long)most,
		      (unsigned long)total);
	} else {
		CHECK(used == npaths, "%s: %u of %u paths used", uroce_path_policy_str(pol), used, npaths);
		CHECK(spread > 0, "%s: no large message spread over paths", uroce_path_policy_str(pol));
	}
	/* a small message keeps one path, but a retransmission may take another */
	CHECK(stuck_small <= x.nmsg / 20, "%s: %u small messages on several paths", uroce_path_policy_str(pol),
	      stuck_small);
	{
		struct uroce_wc wc;

		for (unsigned i = 0; i < 200; i++)
			net_step(&n);
		CHECK(uroce_poll_cq(n.rcq[1], 1, &wc) == 0, "a completion after the transfer");
	}
	printf("  spray %s %-6s x%-3u ok: %u paths used, %u large messages spread\n", uroce_reliability_str(rel),
	       uroce_path_policy_str(pol), npaths, used, spread);
	net_close(&n);
	free(spy);
}

/* p2c straight on a path set: path 2's RTT was the highest of four when
 * it went idle. Two random choices never pick the worst of four, so its
 * RTT was never measured again; now it is, one packet at a time, once its
 * RTT is stale (4 of its RTTs idle). */
static void test_p2c_stale(void)
{
	struct uroce_path_attr a = { .npaths = 4, .policy = UROCE_PATH_P2C };
	uint8_t port = 0;
	struct path_set ps;
	uint64_t now = 1000000, due = 0, first = 0;
	uint32_t picks = 0, most_inflight = 0;
	int failed = test_failures;

	REQUIRE(path_set_init(&ps, &a, 0xc000, &port, 1, 7) == 0, "path_set_init");
	for (unsigned i = 0; i < 4; i++) {
		ps.p[i].srtt_ns = ps.p[i].min_rtt_ns = i == 2 ? 200000 : 20000;
		ps.p[i].last_ack_ns = now;
	}
	/* 10 ms, a packet every microsecond; the others answer at once, path
	 * 2 after its 200 us */
	for (unsigned k = 0; k < 10000; k++, now += 1000) {
		unsigned i;

		if (due && now >= due) {
			path_gone(&ps, 2, 1024);
			path_acked(&ps, 2, now, 200000, true);
			due = 0;
		}
		i = ps.ops->select(&ps, now, 1024, PATH_NONE);
		REQUIRE(i < 4, "no path for packet %u", k);
		path_sent(&ps, i, now, 1024);
		if (i == 2) {
			if (!picks++)
				first = now;
			due = now + 200000;
		} else {
			path_gone(&ps, i, 1024);
			path_acked(&ps, i, now, 20000, true);
		}
		if (ps.p[2].inflight > most_inflight)
			most_inflight = ps.p[2].inflight;
	}
	/* stale after 800 us idle, answered 200 us later: about one in 1 ms */
	CHECK(picks >= 5 && picks <= 20, "p2c stale: the slow path picked %u times in 10 ms", picks);
	CHECK(first && first - 1000000 <= 1000000, "p2c stale: first picked %lu us in",
	      (unsigned long)((first - 1000000) / 1000));
	CHECK(most_inflight <= 1024, "p2c stale: %u bytes in flight on the slow path", most_inflight);
	printf("  p2c stale RTT %s: the slow path measured %u times in 10 ms, first after %lu us\n",
	       test_failures == failed ? "ok" : "FAILED", picks, first ? (unsigned long)((first - 1000000) / 1000) : 0ul);
	path_set_fini(&ps);
}

/* One path of four starts dropping everything: it is taken out within a
 * bound, every message still arrives, and once healed it comes back. */
static void test_blackhole(enum uroce_path_policy pol)
{
	struct loop_impairment imp = { .delay_ns = 5000 };
	struct tr_opts o;
	struct net n;
	struct spy *spy = calloc(1, sizeof(*spy));
	struct uroce_path_stats ps;
	struct xfer x = { .nmsg = 0, .depth = 8, .size = size_64k };
	uint64_t t0, t_down = 0, t_up = 0;
	struct uroce_qp_stats qs;
	int failed = test_failures;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.path.npaths = 4;
	o.path.policy = pol;
	net_open(&n, 1, &imp, &imp, 5);
	REQUIRE(net_qps(&n, 1, &o) == 0, "qps: %s", uroce_last_error());
	REQUIRE(loop_fabric_set_filter(n.fab, 0, spy_filter, spy) == 0, "filter");
	/* warm up, then black-hole path 2 */
	x.until_ns = loop_fabric_now(n.fab) + 5000000;
	run_xfer(&n, &x, 1000000);
	REQUIRE(uroce_qp_path_stats(n.qp[0][0], 2, &ps) == 0 && ps.up && ps.tx_pkts, "path 2 before");
	spy->blackhole = ps.sport;
	t0 = loop_fabric_now(n.fab);
	for (unsigned step = 0; step < 400000 && !t_down; step++) {
		x.until_ns = loop_fabric_now(n.fab) + 1000000;
		run_xfer(&n, &x, 1);
		REQUIRE(uroce_qp_path_stats(n.qp[0][0], 2, &ps) == 0, "stats");
		if (!ps.up)
			t_down = loop_fabric_now(n.fab);
	}
	CHECK(t_down, "%s: the black-holed path was never taken out", uroce_path_policy_str(pol));
	/* bound: RACK needs a reordering window after an RTT, three in a row */
	CHECK(t_down - t0 < 2000000, "%s: taken out after %lu us", uroce_path_policy_str(pol),
	      (unsigned long)((t_down - t0) / 1000));
	/* traffic goes on over the others for 20 ms */
	{
		uint32_t before = x.f[0].verified;

		x.until_ns = loop_fabric_now(n.fab) + 20000000;
		run_xfer(&n, &x, 2000000);
		CHECK(x.f[0].verified - before > 100, "%s: only %u messages in 20 ms after the path went",
		      uroce_path_policy_str(pol), x.f[0].verified - before);
	}
	/* heal it: its probe brings it back */
	spy->blackhole = 0;
	for (unsigned step = 0; step < 400000 && !t_up; step++) {
		x.until_ns = loop_fabric_now(n.fab) + 1000000;
		run_xfer(&n, &x, 1);
		REQUIRE(uroce_qp_path_stats(n.qp[0][0], 2, &ps) == 0, "stats");
		if (ps.up)
			t_up = loop_fabric_now(n.fab);
	}
	CHECK(t_up, "%s: the healed path never came back", uroce_path_policy_str(pol));
	/* drain: every message posted arrives once */
	x.nmsg = x.f[0].posted;
	CHECK(run_xfer(&n, &x, 2000000), "drain");
	CHECK(x.wrong_order == 0 && x.bad_bytes == 0, "blackhole: %lu out of order, %lu wrong",
	      (unsigned long)x.wrong_order, (unsigned long)x.bad_bytes);
	REQUIRE(uroce_qp_stats(n.qp[0][0], &qs) == 0, "qp stats");
	CHECK(qs.paths_down >= 1, "paths_down %lu", (unsigned long)qs.paths_down);
	printf("  blackhole %-6s %s: out after %lu us, back %lu us after healing, %u messages, %lu dropped\n",
	       uroce_path_policy_str(pol), test_failures == failed ? "ok" : "FAILED",
	       t_down ? (unsigned long)((t_down - t0) / 1000) : 0ul,
	       (unsigned long)((t_up - t_down) / 1000), x.f[0].verified, (unsigned long)spy->dropped);
	net_close(&n);
	free(spy);
}

/* Paths over both ports of two-port contexts; then port 2's link dies. */
static void test_two_ports(void)
{
	struct loop_impairment imp = { .delay_ns = 3000 };
	struct loop_link_stats l0, l1, l1b;
	struct tr_opts o;
	struct net n;
	struct xfer x = { .nmsg = 0, .depth = 8, .size = size_64k };
	uint32_t before;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.path.npaths = 4;
	o.path.policy = UROCE_PATH_RR;
	o.path.nports = 2;
	o.path.ports[0] = 1;
	o.path.ports[1] = 2;
	net_open(&n, 2, &imp, &imp, 9);
	REQUIRE(net_qps(&n, 1, &o) == 0, "qps: %s", uroce_last_error());
	x.until_ns = loop_fabric_now(n.fab) + 5000000;
	run_xfer(&n, &x, 1000000);
	loop_fabric_link_stats(n.fab, 0, &l0);
	loop_fabric_link_stats(n.fab, 1, &l1);
	CHECK(l0.tx_frames > 100 && l1.tx_frames > 100, "two ports: %lu and %lu frames", (unsigned long)l0.tx_frames,
	      (unsigned long)l1.tx_frames);
	REQUIRE(loop_fabric_set_link(n.fab, 1, false) == 0, "link down");
	before = x.f[0].verified;
	x.until_ns = loop_fabric_now(n.fab) + 30000000;
	run_xfer(&n, &x, 3000000);
	loop_fabric_link_stats(n.fab, 1, &l1b);
	CHECK(x.f[0].verified - before > 100, "two ports: %u messages after port 2 died", x.f[0].verified - before);
	x.nmsg = x.f[0].posted;
	CHECK(run_xfer(&n, &x, 3000000), "two ports: drain");
	CHECK(x.wrong_order == 0 && x.bad_bytes == 0, "two ports: wrong order or bytes");
	printf("  two ports ok: %lu / %lu frames, %lu sent into the dead link, %u messages\n",
	       (unsigned long)l0.tx_frames, (unsigned long)l1.tx_frames, (unsigned long)l1b.link_down, x.f[0].verified);
	net_close(&n);
}

/* nq flows of one controller over one rate-limited link (its queue marks
 * ECN above 32 KiB): the link stays busy and the flows share it fairly. */
static void test_cc(enum uroce_cc cc, unsigned nq, bool strict)
{
	const uint64_t rate = 2000000000ull;
	/* DCQCN climbs back by 5-50 Mb/s steps every 300 us or 32 KiB:
	 * it needs longer to converge at 2 Gb/s than the others */
	const uint64_t run_ns = cc == UROCE_CC_DCQCN ? DCQCN_RUN_MS * 1000000ull : 60000000,
		       warm_ns = run_ns / 2;
	/* DCQCN's switches mark RED-like: its paper's Kmin 5 KB, Kmax 200 KB,
	 * Pmax 1% are for 40 Gb/s; at 2 Gb/s 200 KB is 800 us of queue, so
	 * CNPs would come after it overflowed: scaled down to 1 KB / 10 KB */
	struct loop_impairment imp = { .rate_bps = rate, .queue_bytes = 256 * 1024, .ecn_bytes = ECN_KMIN,
	                               .ecn_max_bytes = ECN_KMAX, .ecn_pmax = ECN_PMAX, .delay_ns = 5000 };
	struct loop_impairment back = { .delay_ns = 5000 };
	struct loop_link_stats ls;
	struct tr_opts o;
	struct net n;
	struct xfer x = { .nmsg = 0, .depth = 4, .size = size_64k };
	double sum = 0, sum2 = 0, util, jain;
	uint64_t t0;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.cc.algo = cc;
	o.cc.link_mbps = (uint32_t)(rate / 1000000);
	o.cc.base_rtt_us = 15;
	net_open(&n, 1, &imp, &back, 3);
	n.idle_ns = 1000;
	REQUIRE(net_qps(&n, nq, &o) == 0, "qps: %s", uroce_last_error());
	t0 = loop_fabric_now(n.fab);
	x.until_ns = t0 + run_ns;
	x.win_from_ns = t0 + warm_ns;
	run_xfer(&n, &x, 20000000);
	loop_fabric_link_stats(n.fab, 0, &ls);
	for (unsigned q = 0; q < nq; q++) {
		double g = (double)x.f[q].win_bytes;

		sum += g;
		sum2 += g * g;
	}
	util = sum * 8 / ((double)(run_ns - warm_ns) / 1e9) / (double)rate;
	jain = sum2 > 0 ? sum * sum / (nq * sum2) : 0;
	printf("  cc %-5s x%u: utilisation %.3f, Jain %.3f, queue max %lu B, %lu drops, %lu ECN marks\n",
	       uroce_cc_str(cc), nq, util, jain, (unsigned long)ls.max_backlog, (unsigned long)ls.queue_drops,
	       (unsigned long)ls.ecn_marked);
	CHECK(x.wrong_order == 0 && x.bad_bytes == 0, "cc %s: wrong order or bytes", uroce_cc_str(cc));
	if (strict) {
		/* payload goodput: headers take about 7% of a 1 KiB packet (0.93
		 * is the most). DCQCN cuts by up to half for every CNP period
		 * while its queue drains, and climbs back in 5-50 Mb/s steps:
		 * at 2 Gb/s it keeps about three quarters of the link (docs/
		 * benchmarks.md), the others more than 0.9 */
		CHECK(util > (cc == UROCE_CC_DCQCN ? 0.7 : 0.8), "cc %s x%u: utilisation %.3f", uroce_cc_str(cc), nq,
		      util);
		if (nq > 1)
			CHECK(jain > 0.9, "cc %s x%u: Jain %.3f", uroce_cc_str(cc), nq, jain);
	}
	/* no more posts: what is in flight drains */
	{
		bool done = false;

		for (unsigned step = 0; step < 3000000 && !done; step++) {
			done = true;
			for (unsigned q = 0; q < nq; q++)
				if (x.f[q].verified < x.f[q].posted || x.f[q].sent_done < x.f[q].posted)
					done = false;
			net_step(&n);
			poll_xfer(&n, &x, loop_fabric_now(n.fab));
		}
		CHECK(done, "cc %s: drain", uroce_cc_str(cc));
	}
	net_close(&n);
}

/* Source ports given at RTR (UROCE_QP_SPORTS, what a receiver's
 * uroce_steer_sports picks for its engine's queue): every packet a side
 * sends, data on each of sr's paths and the receiver's ACKs, leaves from
 * one of the ports its QP was given, and every given port carries some;
 * the transfer is whole. Bad port lists are refused, and steering asks
 * for an afxdp port. */
static void test_steered(void)
{
	static const uint16_t a_ports[4] = { 0xd001, 0xd002, 0xd003, 0xd004 }, b_ports[1] = { 0xe00a };
	static const uint16_t zero[2] = { 0xd001, 0 };
	static uint16_t many[UROCE_MAX_SPORTS];
	static const uint8_t peer[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
	struct spy *spy[2] = { calloc(1, sizeof(struct spy)), calloc(1, sizeof(struct spy)) };
	struct xfer x = { .nmsg = 100, .depth = 8, .size = size_64k };
	struct tr_opts o;
	struct net n;
	uint16_t sp[4];

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.path.npaths = 4;
	o.path.policy = UROCE_PATH_RR;
	g_sports[0] = a_ports;
	g_nsports[0] = 4;
	g_sports[1] = b_ports;
	g_nsports[1] = 1;
	net_open(&n, 1, NULL, NULL, 5);
	REQUIRE(net_qps(&n, 1, &o) == 0, "qps: %s", uroce_last_error());
	REQUIRE(loop_fabric_set_filter(n.fab, 0, spy_filter, spy[0]) == 0, "filter");
	REQUIRE(loop_fabric_set_filter(n.fab, 1, spy_filter, spy[1]) == 0, "filter");
	CHECK(run_xfer(&n, &x, 2000000), "steered: transfer did not finish (%u of %u)", x.f[0].verified, x.nmsg);
	CHECK(x.wrong_order == 0 && x.bad_bytes == 0, "steered: %lu out of order, %lu with wrong bytes",
	      (unsigned long)x.wrong_order, (unsigned long)x.bad_bytes);
	for (unsigned side = 0; side < 2; side++) {
		const uint16_t *want = side ? b_ports : a_ports;
		unsigned nwant = side ? 1 : 4, seen = 0;

		for (unsigned i = 0; i < SPORTS_MAX && spy[side]->seen_sport[i]; i++) {
			bool given = false;

			for (unsigned k = 0; k < nwant; k++)
				given |= spy[side]->seen_sport[i] == want[k];
			CHECK(given, "side %u sent from port 0x%04x, not one it was given", side, spy[side]->seen_sport[i]);
			seen += given;
		}
		CHECK(seen == nwant, "side %u used %u of its %u given ports", side, seen, nwant);
	}
	/* refused: no ports, too many, a zero port; steering on a loop port */
	net_close(&n);
	g_nsports[1] = 0;
	net_open(&n, 1, NULL, NULL, 6);
	o.path.npaths = 2;
	for (unsigned i = 0; i < UROCE_MAX_SPORTS; i++)
		many[i] = (uint16_t)(0xd100 + i);
	g_sports[0] = many;
	g_nsports[0] = UROCE_MAX_SPORTS + 1;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "num_sports 17; accepted 1-16"),
	      "17 ports: %s", uroce_last_error());
	net_close(&n);
	net_open(&n, 1, NULL, NULL, 7);
	g_sports[0] = zero;
	g_nsports[0] = 2;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "sports[1] is 0"), "a zero port: %s",
	      uroce_last_error());
	g_nsports[0] = 0;
	CHECK(uroce_steer_sports(n.ctx[0], 1, NULL, peer, sp, 4) == -EOPNOTSUPP &&
	              strstr(uroce_last_error(), "not an afxdp port"),
	      "steer on loop: %s", uroce_last_error());
	CHECK(uroce_steer_sports(n.ctx[0], 1, NULL, peer, sp, 0) == -EINVAL && strstr(uroce_last_error(), "accepted 1-16"),
	      "steer 0 ports: %s", uroce_last_error());
	net_close(&n);
	free(spy[0]);
	free(spy[1]);
	printf("  steered source ports ok: side a from its 4, side b from its 1\n");
}

static void test_args(void)
{
	struct tr_opts o;
	struct net n;

	net_open(&n, 1, NULL, NULL, 1);
	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.path.npaths = UROCE_MAX_PATHS + 1;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "npaths"), "npaths 257: %s",
	      uroce_last_error());
	o.path.npaths = 2;
	o.path.policy = UROCE_PATH__COUNT;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "policy"), "policy: %s", uroce_last_error());
	o.path.policy = UROCE_PATH_P2C;
	o.path.nports = 1;
	o.path.ports[0] = 2;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "ports"), "port 2 of 1: %s",
	      uroce_last_error());
	o.path.nports = 0;
	o.cc.algo = UROCE_CC__COUNT;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "cc.algo"), "cc: %s", uroce_last_error());
	o.cc.algo = UROCE_CC_SWIFT;
	o.rel.reliability = UROCE_REL_RC;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "sr"), "swift on rc: %s",
	      uroce_last_error());
	o.cc.algo = UROCE_CC_NONE;
	o.path.npaths = 4;
	CHECK(net_qps(&n, 1, &o) == -EINVAL && strstr(uroce_last_error(), "npaths"), "4 paths on rc: %s",
	      uroce_last_error());
	{
		enum uroce_cc c;
		enum uroce_path_policy p;

		CHECK(uroce_cc_parse("eqds", &c) == 0 && c == UROCE_CC_EQDS, "parse eqds");
		CHECK(uroce_cc_parse("reno", &c) == -EINVAL, "parse reno");
		CHECK(uroce_path_policy_parse("p2c", &p) == 0 && p == UROCE_PATH_P2C, "parse p2c");
		CHECK(!strcmp(uroce_path_policy_str(UROCE_PATH_RANDOM), "random"), "random");
	}
	n.nq = 0;
	net_close(&n);
}

int main(int argc, char **argv)
{
	/* "cc NAME": that controller's runs alone (for tuning by hand) */
	if (argc == 3 && !strcmp(argv[1], "cc")) {
		enum uroce_cc c;

		REQUIRE(uroce_cc_parse(argv[2], &c) == 0, "cc %s", argv[2]);
		for (unsigned nq = 1; nq <= 4; nq *= 2)
			test_cc(c, nq, true);
		return test_done("tr_paths cc");
	}
	test_args();
	test_steered();
	for (enum uroce_path_policy p = UROCE_PATH_SINGLE; p < UROCE_PATH__COUNT; p++)
		test_spray(UROCE_REL_SR, p, 8);
	test_spray(UROCE_REL_EC, UROCE_PATH_P2C, 4);
	test_spray(UROCE_REL_SR, UROCE_PATH_RANDOM, 64);
	test_p2c_stale();
	test_blackhole(UROCE_PATH_P2C);
	test_blackhole(UROCE_PATH_RR);
	test_two_ports();
	for (enum uroce_cc c = UROCE_CC_NONE; c < UROCE_CC__COUNT; c++) {
		test_cc(c, 1, c != UROCE_CC_NONE);
		test_cc(c, 2, c != UROCE_CC_NONE);
		test_cc(c, 4, c != UROCE_CC_NONE);
	}
	return test_done("tr_paths");
}
