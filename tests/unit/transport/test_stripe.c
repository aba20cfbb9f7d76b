/* SPDX-License-Identifier: MIT */
/* Striping (uroce_stripe_*, TransferEngine's DomainGroup) on the loop
 * fabric in simulated time. Side A (the sender) has na ports, side B (the
 * receiver) nb; n = max(na, nb) QPs a side, A's QP i on its port
 * i % na + 1 joined to B's QP i on B's port i % nb + 1. Equal port counts
 * are wired port to port; unequal ones meet through the fabric switch
 * (apps/fabric, its core over loop ports), as hosts with different NIC
 * counts meet through a network. For rc and sr, 2 vs 2 (also with loss,
 * reordering and duplication), 2 vs 1 and 2 vs 3:
 * - transfers of edge and random lengths (0, 1, one byte either side of a
 *   shard, whole slots), several in flight, each to its own slot of B;
 *   B expects uroce_stripe_shards() counts of the transfer's immediate;
 *   when the expectation fires, every byte is already in place and the
 *   byte after the transfer untouched; each expectation fires exactly
 *   once; A gets one completion per shard;
 * - every port of both sides carried at least the payload its QPs' shards
 *   hold (uroce_port_stats), so every port really took part;
 * - uroce_stripe_shards' edge cases; bad arguments refused with a
 *   message; a full send queue on one QP refuses the whole transfer with
 *   nothing posted on the others;
 * - one context of two ports wired to each other in DEDICATED mode (the
 *   engine on its own thread, real time) stripes to itself. */
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "apps/fabric/fsw.h"
#include "dataplane/port.h"
#include "tr_test.h"

#define MAXP 3u
#define MAXQ 3u
#define SLOT (1u << 20)
#define NSLOTS 4u
#define BUF (SLOT * NSLOTS)
#define MIN_SHARD (16u << 10)
#define SQ_WR 64u
#define NXFER 40u
#define MAX_STEPS 2000000u
#define GUARD 0xa5

struct xfer {
	uint32_t slot, len;
	unsigned shards, fired, sent;
	uint64_t bad;
};

struct rig {
	struct loop_fabric *fab;
	struct fsw *sw;
	struct port *swp[MAXP * 2];
	unsigned nh; /* host ports: A's 0..na-1, B's na..na+nb-1; switch port j is loop nh + j */
	unsigned na, nb, n;
	struct tr_host a, b;
	struct uroce_stripe *st;
	struct xfer x[NXFER];
};

static struct rig R;

static struct uroce_qp *qp_new(struct tr_host *s, enum uroce_reliability rel, bool counts)
{
	const struct uroce_rel_attr ra = { .reliability = rel, .imm_counter = counts };

	return tr_host_qp(s, &ra, SQ_WR, 4);
}

static void connect_qp(struct uroce_qp *qp, uint8_t port, struct uroce_context *peer, uint8_t pport,
                       struct uroce_qp *pqp)
{
	const struct tr_link l = { .port = port, .peer_port = pport,
		                   .access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE,
		                   .psn = test_psn(77), .timeout = 12 /* ~17 ms */, .rd_atomic = 1, .min_rnr_timer = 1 };

	tr_link(qp, &l, peer, pqp);
}

/* Switch port j faces host port j: peer MAC, a /32 route to it. */
static void switch_open(struct rig *r, const struct loop_impairment *imp)
{
	struct fsw_cfg cfg;
	char spec[160], err[256] = "";

	fsw_cfg_init(&cfg);
	cfg.seed = 3;
	for (unsigned j = 0; j < r->nh; j++) {
		uint8_t mac[6];
		uint32_t ip = ntohl(loop_port_ipv4_be(j));
		struct port_config pc = { .kind = PORT_KIND_LOOP, .fabric = r->fab, .loop_index = r->nh + j };

		REQUIRE(loop_fabric_connect(r->fab, j, r->nh + j, imp, imp) == 0, "wire host %u to the switch", j);
		loop_port_mac(j, mac);
		snprintf(spec, sizeof(spec), "p%u,peer=%02x:%02x:%02x:%02x:%02x:%02x,delay=2us", j, mac[0], mac[1], mac[2],
		         mac[3], mac[4], mac[5]);
		REQUIRE(fsw_cfg_add_port(&cfg, spec, err, sizeof(err)) == 0, "port %s: %s", spec, err);
		snprintf(spec, sizeof(spec), "%u.%u.%u.%u/32=%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, j);
		REQUIRE(fsw_cfg_add_route(&cfg, spec, err, sizeof(err)) == 0, "route %s: %s", spec, err);
		REQUIRE(port_open(&r->swp[j], &pc, err, sizeof(err)) == 0, "switch port: %s", err);
	}
	r->sw = fsw_create(&cfg, r->swp, r->nh, loop_fabric_clock, r->fab, err, sizeof(err));
	REQUIRE(r->sw, "fsw_create: %s", err);
}

/* A with na ports, B with nb; QP i joins A's port i % na + 1 to B's
 * port i % nb + 1. */
static void rig_open(unsigned na, unsigned nb, enum uroce_reliability rel, double loss, uint64_t seed)
{
	struct loop_impairment imp = { .loss = loss, .reorder = loss ? 0.02 : 0, .reorder_max_ns = 20000,
	                               .duplicate = loss ? 0.01 : 0, .delay_ns = 2000 };
	struct rig *r = &R;

	memset(r, 0, sizeof(*r));
	r->na = na;
	r->nb = nb;
	r->n = na > nb ? na : nb;
	r->nh = na + nb;
	r->fab = loop_fabric_create(2 * r->nh, seed);
	REQUIRE(r->fab, "fabric");
	if (na == nb) {
		for (unsigned p = 0; p < na; p++)
			REQUIRE(loop_fabric_connect(r->fab, p, na + p, &imp, &imp) == 0, "wire %u", p);
	} else {
		switch_open(r, &imp);
	}
	tr_host_open(&r->a, r->fab, 0, na, BUF, 4096, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE);
	tr_host_open(&r->b, r->fab, na, nb, BUF, 4096, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE);
	for (unsigned i = 0; i < r->n; i++) {
		uint8_t pa = (uint8_t)(i % na + 1), pb = (uint8_t)(i % nb + 1);

		r->a.qp[i] = qp_new(&r->a, rel, false);
		r->b.qp[i] = qp_new(&r->b, rel, true);
		connect_qp(r->a.qp[i], pa, r->b.ctx, pb, r->b.qp[i]);
		connect_qp(r->b.qp[i], pb, r->a.ctx, pa, r->a.qp[i]);
	}
	REQUIRE(uroce_stripe_create(r->a.qp, r->n, MIN_SHARD, &r->st) == 0, "stripe_create: %s", uroce_last_error());
}

static void rig_close(void)
{
	struct rig *r = &R;

	CHECK(uroce_stripe_destroy(r->st) == 0, "stripe_destroy");
	tr_host_close(&r->a);
	tr_host_close(&r->b);
	if (r->sw) {
		fsw_destroy(r->sw);
		for (unsigned j = 0; j < r->nh; j++)
			port_close(r->swp[j]);
	}
	loop_fabric_destroy(r->fab);
}

static void step(void)
{
	int n = uroce_progress(R.a.ctx) + uroce_progress(R.b.ctx);

	if (R.sw)
		n += (int)fsw_poll(R.sw);
	loop_fabric_advance(R.fab, n ? 1000u : 20000u);
}

static uint32_t imm_of(unsigned t)
{
	return htonl(0x5000u + t);
}

/* The expectation of transfer t fired: its bytes must all be in place. */
static void fired(void *arg, uint32_t imm)
{
	struct xfer *x = arg;
	const uint8_t *src = R.a.buf + (size_t)x->slot * SLOT, *dst = R.b.buf + (size_t)x->slot * SLOT;

	x->fired++;
	CHECK(imm == imm_of((unsigned)(x - R.x)), "expectation of transfer %u fired for imm 0x%x",
	      (unsigned)(x - R.x), ntohl(imm));
	for (uint32_t i = 0; i < x->len; i++)
		x->bad += src[i] != dst[i];
	if (x->len < SLOT)
		x->bad += dst[x->len] != GUARD;
}

static const uint32_t fixed_lens[] = {
	0, 1, 4095, MIN_SHARD - 1, MIN_SHARD, MIN_SHARD + 1, 2 * MIN_SHARD, 2 * MIN_SHARD + 1, 3 * MIN_SHARD - 1,
	40000, 100003, 262161, SLOT - 1, SLOT,
};

/* One rig's transfers: up to NSLOTS in flight. qp_bytes[i]: about the
 * payload QP i carried (the shards as near-equal cuts; the stripe may
 * move a boundary by less than 4 KiB to align it). */
static void transfers(const char *name, uint64_t seed, uint64_t qp_bytes[MAXQ])
{
	struct rig *r = &R;
	struct test_rng rng = { seed | 1 };
	unsigned next = 0, done = 0, steps;
	struct uroce_wc wc[32];

	for (unsigned t = 0; t < NXFER; t++) {
		struct xfer *x = &r->x[t];
		unsigned nfixed = sizeof(fixed_lens) / sizeof(fixed_lens[0]);

		memset(x, 0, sizeof(*x));
		x->slot = t % NSLOTS;
		x->len = t < nfixed ? fixed_lens[t] : (uint32_t)test_rng_below(&rng, SLOT + 1);
		x->shards = uroce_stripe_shards(x->len, r->n, MIN_SHARD);
	}
	for (steps = 0; done < NXFER && steps < MAX_STEPS; steps++) {
		/* a slot is reused once its transfer fired and all its shards completed */
		while (next < NXFER && (next < NSLOTS || (r->x[next - NSLOTS].fired && r->x[next - NSLOTS].sent ==
		                                                                         r->x[next - NSLOTS].shards))) {
			struct xfer *x = &r->x[next];
			uint8_t *src = r->a.buf + (size_t)x->slot * SLOT, *dst = r->b.buf + (size_t)x->slot * SLOT;
			struct uroce_stripe_write w = {
				.wr_id = next, .addr = (uint64_t)(uintptr_t)src, .len = x->len, .lkey = r->a.mr->lkey,
				.remote_addr = (uint64_t)(uintptr_t)dst, .rkey = r->b.mr->rkey, .imm_data = imm_of(next),
				.send_flags = UROCE_SEND_SIGNALED,
			};
			unsigned ns = 0;

			for (uint32_t i = 0; i < x->len; i++)
				src[i] = (uint8_t)(test_rng_next(&rng) >> 24);
			memset(dst, GUARD, SLOT);
			REQUIRE(uroce_expect_imm_count(r->b.ctx, imm_of(next), x->shards, fired, x, NULL) == 0, "expect: %s",
			        uroce_last_error());
			REQUIRE(uroce_stripe_post_write(r->st, &w, &ns) == 0, "%s: post %u (%u bytes): %s", name, next,
			        x->len, uroce_last_error());
			CHECK(ns == x->shards, "%s: transfer %u posted %u shards, uroce_stripe_shards says %u", name, next, ns,
			      x->shards);
			/* the shard sizes as the stripe cuts them: near-equal, each on QP i */
			for (unsigned i = 0; i < ns; i++) {
				uint64_t a = (uint64_t)x->len * i / ns, b = (uint64_t)x->len * (i + 1) / ns;

				qp_bytes[i] += b - a;
			}
			next++;
		}
		step();
		while (done < NXFER && r->x[done].fired && r->x[done].sent == r->x[done].shards)
			done++;
		for (int k = uroce_poll_cq(r->a.cq, 32, wc), i = 0; i < k; i++) {
			CHECK(wc[i].status == UROCE_WC_SUCCESS, "%s: shard of transfer %llu: %s", name,
			      (unsigned long long)wc[i].wr_id, uroce_wc_status_str(wc[i].status));
			CHECK(wc[i].opcode == UROCE_WC_RDMA_WRITE, "%s: completion opcode %d", name, (int)wc[i].opcode);
			if (wc[i].wr_id < NXFER)
				r->x[wc[i].wr_id].sent++;
		}
	}
	for (unsigned i = 0; i < 300; i++)
		step(); /* late duplicates settle: nothing may fire twice */
	CHECK(done == NXFER, "%s: %u of %u transfers over after %u steps", name, done, NXFER, steps);
	for (unsigned t = 0; t < NXFER; t++) {
		struct xfer *x = &r->x[t];

		CHECK(x->fired == 1, "%s: transfer %u (%u bytes) fired %u times", name, t, x->len, x->fired);
		CHECK(x->sent == x->shards, "%s: transfer %u: %u send completions for %u shards", name, t, x->sent,
		      x->shards);
		CHECK(x->bad == 0, "%s: transfer %u (%u bytes, %u shards): %llu bytes wrong when it fired", name, t,
		      x->len, x->shards, (unsigned long long)x->bad);
		CHECK(uroce_imm_count(r->b.ctx, imm_of(t)) == 0, "%s: transfer %u: counts left over", name, t);
	}
	CHECK(uroce_poll_cq(r->b.cq, 32, wc) == 0, "%s: a counted immediate made a receive completion", name);
}

static uint64_t port_stat(struct tr_host *s, uint8_t port, bool tx)
{
	struct uroce_port_stats ps;

	REQUIRE(uroce_port_stats(s->ctx, port, &ps) == 0, "port_stats: %s", uroce_last_error());
	return tx ? ps.tx_bytes : ps.rx_bytes;
}

static void run(unsigned na, unsigned nb, enum uroce_reliability rel, double loss, uint64_t seed)
{
	uint64_t qb[MAXQ] = { 0 }, tx0[MAXP], rx0[MAXP], txd[MAXP], rxd[MAXP], imm = 0, total = 0, shards = 0;
	char name[64];

	snprintf(name, sizeof(name), "%s %u vs %u ports, loss %g", uroce_reliability_str(rel), na, nb, loss);
	rig_open(na, nb, rel, loss, seed);
	for (unsigned p = 0; p < MAXP; p++) {
		tx0[p] = p < na ? port_stat(&R.a, (uint8_t)(p + 1), true) : 0;
		rx0[p] = p < nb ? port_stat(&R.b, (uint8_t)(p + 1), false) : 0;
	}
	transfers(name, seed, qb);
	/* every port carried at least (nearly) the payload of its QPs' shards:
	 * A's port p those of QPs i with i % na == p, B's port q those with
	 * i % nb == q (headers only add) */
	for (unsigned p = 0; p < na; p++) {
		uint64_t w = 0;

		for (unsigned i = p; i < R.n; i += na)
			w += qb[i];
		txd[p] = port_stat(&R.a, (uint8_t)(p + 1), true) - tx0[p];
		CHECK(w > 0 && txd[p] >= w - w / 20, "%s: A's port %u sent %llu bytes for about %llu bytes of shards",
		      name, p + 1, (unsigned long long)txd[p], (unsigned long long)w);
	}
	for (unsigned q = 0; q < nb; q++) {
		uint64_t w = 0;

		for (unsigned i = q; i < R.n; i += nb)
			w += qb[i];
		rxd[q] = port_stat(&R.b, (uint8_t)(q + 1), false) - rx0[q];
		CHECK(w > 0 && rxd[q] >= w - w / 20, "%s: B's port %u received %llu bytes for about %llu bytes of "
		      "shards", name, q + 1, (unsigned long long)rxd[q], (unsigned long long)w);
	}
	for (unsigned i = 0; i < R.n; i++) {
		struct uroce_qp_stats qs;

		uroce_qp_stats(R.b.qp[i], &qs);
		imm += qs.imm_counted;
		total += qb[i];
	}
	for (unsigned t = 0; t < NXFER; t++)
		shards += R.x[t].shards;
	CHECK(imm == shards, "%s: %llu immediates counted for %llu shards", name, (unsigned long long)imm,
	      (unsigned long long)shards);
	printf("  %s: %u transfers, %llu shards, %llu payload bytes; A sent", name, NXFER, (unsigned long long)shards,
	       (unsigned long long)total);
	for (unsigned p = 0; p < na; p++)
		printf(" %llu", (unsigned long long)txd[p]);
	printf(", B received");
	for (unsigned q = 0; q < nb; q++)
		printf(" %llu", (unsigned long long)rxd[q]);
	printf(" bytes a port\n");
	rig_close();
}

static void test_shards(void)
{
	static const struct {
		uint64_t len;
		unsigned nqps;
		uint32_t min;
		unsigned want;
	} c[] = {
		{ 0, 2, 0, 1 },
		{ 1, 2, 0, 1 },
		{ 65536, 2, 0, 1 },
		{ 65537, 2, 0, 2 },
		{ 65537, 1, 0, 1 },
		{ 1u << 30, 3, 0, 3 },
		{ 1u << 30, 8, 0, 8 },
		{ 3 * 65536, 8, 0, 3 },
		{ 3 * 65536 + 1, 8, 0, 4 },
		{ 10, 8, 1, 8 },
		{ 10, 8, 4, 3 },
		{ UINT64_MAX, 8, 1, 8 },
		{ UINT64_MAX, 8, UINT32_MAX, 8 },
		{ UINT32_MAX, 8, UINT32_MAX, 1 },
		{ (uint64_t)UINT32_MAX + 1, 8, UINT32_MAX, 2 },
		{ 100, 0, 1, 1 },
	};

	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		unsigned got = uroce_stripe_shards(c[i].len, c[i].nqps, c[i].min);

		CHECK(got == c[i].want, "uroce_stripe_shards(%llu, %u, %u) = %u, want %u", (unsigned long long)c[i].len,
		      c[i].nqps, c[i].min, got, c[i].want);
	}
}

static bool says(const char *what)
{
	return strstr(uroce_last_error(), what) != NULL;
}

/* On a 2 vs 2 rig: bad arguments, and a full send queue on QP 1. */
static void test_refusals(void)
{
	struct rig *r = &R;
	struct uroce_stripe *s = NULL;
	struct uroce_qp *two[2], *nine[9], *ud, *fresh;
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_stripe_write w = { 0 };
	struct uroce_wc wc[32];
	unsigned got = 0, ns = 77;
	int flag = 0;

	rig_open(2, 2, UROCE_REL_SR, 0, 9);
	CHECK(uroce_stripe_create(NULL, 2, 0, &s) == -EINVAL && says("required"), "qps NULL: %s", uroce_last_error());
	CHECK(uroce_stripe_create(r->a.qp, 0, 0, &s) == -EINVAL && says("accepted 1-8"), "nqps 0: %s",
	      uroce_last_error());
	for (unsigned i = 0; i < 9; i++)
		nine[i] = r->a.qp[i % 2];
	CHECK(uroce_stripe_create(nine, 9, 0, &s) == -EINVAL && says("nqps 9"), "nqps 9: %s", uroce_last_error());
	two[0] = r->a.qp[0];
	two[1] = NULL;
	CHECK(uroce_stripe_create(two, 2, 0, &s) == -EINVAL && says("qps[1] is NULL"), "NULL QP: %s",
	      uroce_last_error());
	two[1] = r->a.qp[0];
	CHECK(uroce_stripe_create(two, 2, 0, &s) == -EINVAL && says("listed twice"), "same QP twice: %s",
	      uroce_last_error());
	two[1] = r->b.qp[1];
	CHECK(uroce_stripe_create(two, 2, 0, &s) == -EINVAL && says("another context"), "two contexts: %s",
	      uroce_last_error());
	ia.qp_type = UROCE_QPT_UD;
	ia.send_cq = ia.recv_cq = r->a.cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	REQUIRE(uroce_qp_create(r->a.pd, &ia, &ud) == 0, "ud qp: %s", uroce_last_error());
	two[1] = ud;
	CHECK(uroce_stripe_create(two, 2, 0, &s) == -EINVAL && says("UD") && says("accepted RC-type"), "UD QP: %s",
	      uroce_last_error());
	fresh = qp_new(&r->a, UROCE_REL_SR, false);
	two[1] = fresh;
	CHECK(uroce_stripe_create(two, 2, 0, &s) == -EINVAL && says("RESET") && says("RTS"), "QP in RESET: %s",
	      uroce_last_error());
	CHECK(s == NULL, "a refused stripe was handed out");
	CHECK(uroce_qp_destroy(fresh) == 0 && uroce_qp_destroy(ud) == 0, "destroy");
	CHECK(uroce_stripe_destroy(NULL) == -EINVAL, "destroy(NULL)");

	/* bad writes */
	w.addr = (uint64_t)(uintptr_t)r->a.buf;
	w.len = 100000;
	w.lkey = r->a.mr->lkey;
	w.remote_addr = (uint64_t)(uintptr_t)r->b.buf;
	w.rkey = r->b.mr->rkey;
	w.imm_data = htonl(0x77);
	CHECK(uroce_stripe_post_write(NULL, &w, &ns) == -EINVAL && says("required"), "no stripe");
	w.send_flags = UROCE_SEND_INLINE;
	CHECK(uroce_stripe_post_write(r->st, &w, &ns) == -EINVAL && says("send_flags"), "inline: %s",
	      uroce_last_error());
	w.send_flags = 0;
	w.lkey = r->b.mr->lkey; /* B's key means nothing in A */
	CHECK(uroce_stripe_post_write(r->st, &w, &ns) == -EINVAL && says("lkey"), "foreign lkey: %s",
	      uroce_last_error());
	w.lkey = r->a.mr->lkey;
	w.len = BUF + 1;
	CHECK(uroce_stripe_post_write(r->st, &w, &ns) == -EINVAL && says("outside"), "past the region: %s",
	      uroce_last_error());
	w.len = 100000;
	w.remote_addr = UINT64_MAX - 10;
	CHECK(uroce_stripe_post_write(r->st, &w, &ns) == -EINVAL && says("wraps"), "wrapping remote: %s",
	      uroce_last_error());
	w.remote_addr = (uint64_t)(uintptr_t)r->b.buf;
	CHECK(ns == 77, "a refused write set *nshards");

	/* QP 1's send queue full: the 2-shard write is refused, QP 0 gets nothing */
	for (unsigned i = 0; i < SQ_WR; i++) {
		struct uroce_sge g = { (uint64_t)(uintptr_t)r->a.buf, 8, r->a.mr->lkey };
		struct uroce_send_wr wr = { .wr_id = 1000 + i, .sg_list = &g, .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE,
		                            .send_flags = UROCE_SEND_SIGNALED };

		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)r->b.buf + SLOT;
		wr.wr.rdma.rkey = r->b.mr->rkey;
		REQUIRE(uroce_post_send(r->a.qp[1], &wr, NULL) == 0, "filler %u: %s", i, uroce_last_error());
	}
	REQUIRE(uroce_expect_imm_count(r->b.ctx, htonl(0x77), 2, NULL, NULL, &flag) == 0, "expect");
	w.wr_id = 5;
	w.send_flags = UROCE_SEND_SIGNALED;
	CHECK(uroce_stripe_post_write(r->st, &w, &ns) == -ENOMEM && says("QP 1") && says("nothing was posted"),
	      "full SQ: %s", uroce_last_error());
	for (unsigned i = 0; i < 20000 && got < SQ_WR; i++) {
		int k = uroce_poll_cq(r->a.cq, 32, wc);

		for (int j = 0; j < k; j++) {
			CHECK(wc[j].wr_id >= 1000 && wc[j].status == UROCE_WC_SUCCESS, "completion of wr %llu (%s)",
			      (unsigned long long)wc[j].wr_id, uroce_wc_status_str(wc[j].status));
			got++;
		}
		step();
	}
	for (unsigned i = 0; i < 200; i++)
		step();
	CHECK(got == SQ_WR && uroce_poll_cq(r->a.cq, 32, wc) == 0, "%u filler completions and no shard's", got);
	CHECK(uroce_imm_count(r->b.ctx, htonl(0x77)) == 0 && !flag, "a shard of the refused write arrived");
	/* now there is room: the same write goes, and fires the expectation */
	REQUIRE(uroce_stripe_post_write(r->st, &w, &ns) == 0, "after draining: %s", uroce_last_error());
	CHECK(ns == 2, "100000 bytes over 2 QPs at 16 KiB: %u shards", ns);
	for (unsigned i = 0; i < 20000 && (!flag || got < SQ_WR + 2); i++) {
		got += (unsigned)uroce_poll_cq(r->a.cq, 32, wc);
		step();
	}
	CHECK(flag == 1 && got == SQ_WR + 2, "the write after draining: flag %d, %u completions", flag, got);
	CHECK(!memcmp(r->a.buf, r->b.buf, 100000), "its bytes");
	rig_close();
}

/* DEDICATED mode: one context, ports 1 and 2 wired to each other (real
 * time); sender QP 0 on port 1 to receiver QP 0 on port 2, sender QP 1
 * on port 2 to receiver QP 1 on port 1. Posting and expecting from this
 * thread while the engine runs on its own. */
static void test_dedicated(void)
{
	struct loop_fabric_opts fo = { .nports = 2, .seed = 31, .real_time = true };
	const char *specs[2] = { "loop:0", "loop:1" };
	struct uroce_context_attr ca = { .ports = specs, .nports = 2, .mode = UROCE_ENGINE_DEDICATED, .engine_cpu = -1 };
	struct tr_host s = { 0 };
	struct uroce_qp *snd[2], *rcv[2];
	struct uroce_stripe *st;
	struct loop_fabric *fab;
	struct test_rng rng = { 77 };
	uint64_t t0, p0[2], p1[2];
	unsigned fired_ok = 0;
	char err[256];

	fab = loop_fabric_create_opts(&fo, err, sizeof(err));
	REQUIRE(fab, "fabric: %s", err);
	REQUIRE(loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "wire");
	ca.loop_fabric = fab;
	REQUIRE(uroce_context_create(&s.ctx, &ca) == 0, "context: %s", uroce_last_error());
	REQUIRE(uroce_pd_alloc(s.ctx, &s.pd) == 0, "pd");
	REQUIRE(uroce_cq_create(s.ctx, 1024, &s.cq) == 0, "cq");
	s.buf = aligned_alloc(4096, BUF);
	REQUIRE(s.buf, "buf");
	memset(s.buf, 0, BUF);
	REQUIRE(uroce_mr_reg(s.pd, s.buf, BUF, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &s.mr) == 0, "mr");
	for (unsigned i = 0; i < 2; i++) {
		snd[i] = qp_new(&s, UROCE_REL_SR, false);
		rcv[i] = qp_new(&s, UROCE_REL_SR, true);
	}
	for (unsigned i = 0; i < 2; i++) {
		connect_qp(snd[i], (uint8_t)(i + 1), s.ctx, (uint8_t)(2 - i), rcv[i]);
		connect_qp(rcv[i], (uint8_t)(2 - i), s.ctx, (uint8_t)(i + 1), snd[i]);
	}
	REQUIRE(uroce_stripe_create(snd, 2, 0, &st) == 0, "stripe: %s", uroce_last_error());
	for (unsigned p = 0; p < 2; p++)
		p0[p] = port_stat(&s, (uint8_t)(p + 1), true);
	t0 = test_mono_ns();
	for (unsigned t = 0; t < 8; t++) {
		uint32_t len = t == 0 ? 2 * SLOT : (uint32_t)test_rng_below(&rng, 2 * SLOT) + 1;
		uint8_t *src = s.buf, *dst = s.buf + 2 * SLOT;
		struct uroce_stripe_write w = { .wr_id = t, .addr = (uint64_t)(uintptr_t)src, .len = len,
			                        .lkey = s.mr->lkey, .remote_addr = (uint64_t)(uintptr_t)dst,
			                        .rkey = s.mr->rkey, .imm_data = htonl(0x900 + t),
			                        .send_flags = UROCE_SEND_SIGNALED };
		unsigned ns = 0, sent = 0;
		int flag = 0;

		for (uint32_t i = 0; i < len; i++)
			src[i] = (uint8_t)(test_rng_next(&rng) >> 24);
		memset(dst, GUARD, 2 * SLOT);
		REQUIRE(uroce_expect_imm_count(s.ctx, w.imm_data, uroce_stripe_shards(len, 2, 0), NULL, NULL, &flag) == 0,
		        "expect: %s", uroce_last_error());
		REQUIRE(uroce_stripe_post_write(st, &w, &ns) == 0, "post: %s", uroce_last_error());
		while ((!__atomic_load_n(&flag, __ATOMIC_ACQUIRE) || sent < ns) && test_mono_ns() - t0 < TEST_HANG_NS) {
			struct uroce_wc wc;

			if (uroce_poll_cq(s.cq, 1, &wc) == 1) {
				CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == t, "dedicated shard of %u: %s, wr %llu", t,
				      uroce_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
				sent++;
			} else {
				sched_yield();
			}
		}
		CHECK(__atomic_load_n(&flag, __ATOMIC_ACQUIRE) == 1 && sent == ns, "dedicated transfer %u: flag %d, %u of %u "
		      "shards completed", t, flag, sent, ns);
		CHECK(!memcmp(src, dst, len) && (len == 2 * SLOT || dst[len] == GUARD), "dedicated transfer %u: bytes", t);
		fired_ok += flag == 1;
	}
	for (unsigned p = 0; p < 2; p++)
		p1[p] = port_stat(&s, (uint8_t)(p + 1), true) - p0[p];
	CHECK(p1[0] >= SLOT && p1[1] >= SLOT, "dedicated: ports sent %llu and %llu bytes",
	      (unsigned long long)p1[0], (unsigned long long)p1[1]);
	printf("  dedicated, 1 context of 2 ports wired to each other: %u transfers; ports sent %llu and %llu bytes\n",
	       fired_ok, (unsigned long long)p1[0], (unsigned long long)p1[1]);
	CHECK(uroce_stripe_destroy(st) == 0, "stripe_destroy");
	for (unsigned i = 0; i < 2; i++)
		CHECK(uroce_qp_destroy(snd[i]) == 0 && uroce_qp_destroy(rcv[i]) == 0, "qp_destroy");
	CHECK(uroce_mr_dereg(s.mr) == 0 && uroce_cq_destroy(s.cq) == 0 && uroce_pd_free(s.pd) == 0, "free");
	CHECK(uroce_context_destroy(s.ctx) == 0, "ctx_destroy: %s", uroce_last_error());
	free(s.buf);
	loop_fabric_destroy(fab);
}

int main(void)
{
	test_shards();
	test_refusals();
	run(2, 2, UROCE_REL_RC, 0, 11);
	run(2, 2, UROCE_REL_SR, 0, 12);
	run(2, 2, UROCE_REL_RC, 1e-2, 13);
	run(2, 2, UROCE_REL_SR, 1e-2, 14);
	run(2, 1, UROCE_REL_RC, 0, 15);
	run(2, 1, UROCE_REL_SR, 0, 16);
	run(2, 3, UROCE_REL_RC, 0, 17);
	run(2, 3, UROCE_REL_SR, 0, 18);
	run(1, 2, UROCE_REL_SR, 0, 19);
	test_dedicated();
	return test_done("tr_stripe");
}
