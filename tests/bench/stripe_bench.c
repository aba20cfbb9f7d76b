/* SPDX-License-Identifier: MIT */
/* Striping (uroce_stripe_*, TransferEngine's DomainGroup) against one
 * port, in one run: two processes in two network namespaces, each with one
 * context over all its afxdp ports (--dev afxdp:IF1,afxdp:IF2,...), meeting
 * through a shared file. With na and nb ports on the two sides, each side
 * has n = max(na, nb) RC-type QPs, QP i on its port i % nports + 1, joined
 * to the peer's QP i. The sender keeps two stripes over the same QPs: "one
 * port" = QP 0 alone, "all ports" = all n QPs. Per size, --reps transfers
 * of each kind, alternating (one, all, all, one, ...) so both see the same
 * neighbours. The receiver's QPs count immediates (rel.imm_counter); it
 * arms uroce_expect_imm_count(imm, uroce_stripe_shards(size, qps,
 * min_shard)) before the sender posts, and the transfer is over when the
 * expectation fires: its time is from the sender's post to that moment
 * (CLOCK_MONOTONIC, one clock for both namespaces). Every 8-byte word of a
 * transfer is a function of (transfer, offset), all checked by the
 * receiver after the transfer. Both contexts are embedded: one thread per
 * process runs the engine over all its ports (uroce_progress).
 *
 *   stripe_bench --role send|recv --dev afxdp:IF[,afxdp:IF...] --shm FILE
 *                --mode rc|sr [--sizes 1m,4m,...] [--reps N]
 *                [--min-shard BYTES] [--seed S] [--max-sec S]
 *                [--window-pkts N] [--rto-min-us N]
 *
 * --window-pkts and --rto-min-us (sr only) set every QP's rel.window_pkts
 * and rel.rto_min_us (default 256 packets and 200 us).
 *
 * The receiver prints a line per transfer, "stripe_bench xfer size=S
 * kind=one|all qps=Q shards=N rep=R ns=N gbps=G bad=B rcv_wait_us=U" (B:
 * words not as written; U: how long it waited, runnable, for its CPU
 * during the transfer), one per size, "stripe_bench size=S one_gbps=..
 * all_gbps=.. ratio=.. qps=N" (medians), and at the end (both ends)
 * "stripe_bench ports role=send|recv bytes=B1,B2,..." (uroce_port_stats:
 * tx bytes of the sender's ports, rx bytes of the receiver's) and, at the
 * sender, "stripe_bench qps role=send retransmits=R/T,..." per QP
 * (uroce_qp_stats: packets sent again / rc ACK timeouts + sr packets
 * declared lost by the RTO). Exit 0, 1
 * on any failure (either end's), 2 on a bad argument. tests/netns/stripe.sh
 * runs it as a test, tests/bench/stripe_bench.sh as the benchmark. */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ns_pair.h"

#define SB_MAX_SIZES 16
#define SB_MAX_REPS 20u
#define SB_GID_INDEX 1 /* the port's IPv4-mapped GID */
#define SB_WAIT_NS (30ull * 1000000000ull)   /* the peer's setup steps */
#define SB_XFER_NS (120ull * 1000000000ull)  /* one transfer */

struct sb_qp_info {
	uint32_t qpn, psn;
	uint32_t token; /* the QP's uroce_qp_token() */
	uint8_t gid[16];
	uint32_t active_mtu; /* enum uroce_mtu of the QP's port */
};

struct sb_side {
	uint32_t nports;
	uint32_t rkey;
	uint64_t addr, len;
	struct sb_qp_info q[UROCE_MAX_PORTS];
};

struct sb_xfer {
	uint64_t t_post;
};

struct sb_shm {
	uint32_t failed;
	uint32_t hello[2] __attribute__((aligned(64)));     /* nports published */
	uint32_t ready[2] __attribute__((aligned(64)));     /* QP infos published */
	uint32_t connected[2] __attribute__((aligned(64))); /* QPs in RTS */
	uint32_t want __attribute__((aligned(64)));         /* sender: transfer it wants to start, + 1 */
	uint32_t armed __attribute__((aligned(64)));        /* receiver: expectations armed */
	uint32_t done __attribute__((aligned(64)));         /* receiver: transfers landed */
	uint32_t stop __attribute__((aligned(64)));         /* sender: transfers made + 1, once it stops */
	struct sb_side side[2] __attribute__((aligned(64)));
	struct sb_xfer x[] __attribute__((aligned(64)));
};

struct sb_opts {
	struct ns_args a;
	enum uroce_reliability mode;
	uint64_t sizes[SB_MAX_SIZES];
	unsigned nsizes;
	uint64_t reps, seed, min_shard;
	uint64_t window_pkts, rto_min_us; /* sr: rel.window_pkts, rel.rto_min_us (0 = the defaults) */
};

struct sb_end {
	struct sb_shm *s;
	enum ns_role role;
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_mr *mr;
	unsigned nports, n;
	struct uroce_qp *qp[UROCE_MAX_PORTS];
	struct uroce_stripe *one, *all;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: stripe_bench --role send|recv --dev afxdp:IF[,afxdp:IF...] --shm FILE --mode rc|sr\n"
	           "                    [--sizes 1m,4m,...] [--reps N] [--min-shard BYTES] [--seed S] [--max-sec S]\n"
	           "                    [--window-pkts N] [--rto-min-us N] (sr only)\n");
}

static void parse_sizes(struct sb_opts *o, const char *arg)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		ns_bad("--sizes", arg, "a list shorter than 256 characters");
	strcpy(buf, arg);
	o->nsizes = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == SB_MAX_SIZES)
			ns_bad("--sizes", arg, "at most 16 sizes");
		if (ns_parse_u64(tok, 1, 1u << 30, &o->sizes[o->nsizes]))
			ns_bad("--sizes", tok, "sizes from 1 byte to 1g (k/m/g suffixes)");
		o->nsizes++;
	}
	if (!o->nsizes)
		ns_bad("--sizes", arg, "a comma-separated list of sizes");
}

static void parse(int argc, char **argv, struct sb_opts *o)
{
	static const struct option lo[] = {
		NS_ARGS_OPTIONS, { "mode", required_argument, NULL, 'm' },
		{ "sizes", required_argument, NULL, 'z' }, { "reps", required_argument, NULL, 'n' },
		{ "min-shard", required_argument, NULL, 'M' }, { "seed", required_argument, NULL, 's' },
		{ "window-pkts", required_argument, NULL, 'w' }, { "rto-min-us", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;

	ns_args_init("stripe_bench", usage);
	memset(o, 0, sizeof(*o));
	o->mode = UROCE_REL__COUNT;
	o->reps = 3;
	o->seed = 1;
	o->a.max_sec = 300;
	o->a.rc_timeout = 14;
	parse_sizes(o, "1m,4m,16m,64m");
	while ((c = ns_getopt(argc, argv, lo, &o->a)) != -1) {
		switch (c) {
		case 'm':
			if (uroce_reliability_parse(optarg, &o->mode) || (o->mode != UROCE_REL_RC && o->mode != UROCE_REL_SR))
				ns_bad("--mode", optarg, "rc or sr");
			break;
		case 'z':
			parse_sizes(o, optarg);
			break;
		case 'n':
			o->reps = ns_arg_u64("--reps", optarg, 1, SB_MAX_REPS, "1 to 20");
			break;
		case 'M':
			o->min_shard = ns_arg_u64("--min-shard", optarg, 0, UINT32_MAX, "0 (= 64 KiB) to 4294967295 bytes");
			break;
		case 's':
			o->seed = ns_arg_u64("--seed", optarg, 0, UINT32_MAX, "0 to 4294967295");
			break;
		case 'w':
			o->window_pkts = ns_arg_u64("--window-pkts", optarg, 16, 1024, "16 to 1024 packets");
			break;
		case 'o':
			o->rto_min_us = ns_arg_u64("--rto-min-us", optarg, 1, 1000000, "1 to 1000000 us");
			break;
		default:
			ns_help_or_bad(c);
		}
	}
	ns_args_end(argc, argv, ns_args_missing(&o->a) || o->mode == UROCE_REL__COUNT,
	            "--role, --dev, --shm and --mode");
	if ((o->window_pkts || o->rto_min_us) && o->mode != UROCE_REL_SR)
		ns_bad("--window-pkts/--rto-min-us with --mode", uroce_reliability_str(o->mode), "sr only");
}

static void progress(struct sb_end *e)
{
	int rc = uroce_progress(e->ctx);

	if (rc < 0)
		ns_die_rc(rc, "transport");
}

/* Until *w >= v, progressing; the peer's failure or the bound ends us. */
static void wait_ge(struct sb_end *e, const uint32_t *w, uint32_t v, uint64_t timeout_ns, const char *what)
{
	uint64_t end = ns_now_ns() + timeout_ns;

	for (unsigned spins = 0; ns_get(w) < v; spins++) {
		progress(e);
		if ((spins & 63) == 0) {
			if (ns_get(&e->s->failed))
				ns_die("the other end failed (its log says why)");
			if (ns_now_ns() > end)
				ns_die("%s: not within %.0f s", what, (double)timeout_ns / 1e9);
		}
	}
}

/* The context over every port of --dev, and the CQ and region. */
static void open_ctx(struct sb_end *e, const char *dev, void *buf, size_t len)
{
	char list[512], *save = NULL, *tok;
	const char *specs[UROCE_MAX_PORTS];
	struct uroce_context_attr ca = { 0 };
	unsigned n = 0;
	int rc;

	if (strlen(dev) >= sizeof(list))
		ns_bad("--dev", dev, "a list shorter than 512 characters");
	strcpy(list, dev);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == UROCE_MAX_PORTS)
			ns_bad("--dev", dev, "at most 8 ports");
		specs[n++] = tok;
	}
	if (!n)
		ns_bad("--dev", dev, "a comma-separated list of ports (afxdp:IF)");
	ca.ports = specs;
	ca.nports = n;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	if ((rc = uroce_context_create(&e->ctx, &ca)) != 0)
		ns_die_rc(rc, dev);
	e->nports = n;
	if ((rc = uroce_pd_alloc(e->ctx, &e->pd)) != 0)
		ns_die_rc(rc, "pd_alloc");
	if ((rc = uroce_mr_reg(e->pd, buf, len, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &e->mr)) != 0)
		ns_die_rc(rc, "mr_reg");
	if ((rc = uroce_cq_create(e->ctx, 256, &e->cq)) != 0)
		ns_die_rc(rc, "cq_create");
}

/* n = max(na, nb) QPs, QP i on port i % nports + 1, each to the peer's QP
 * i, in RTS on both ends when this returns. */
static void connect_all(struct sb_end *e, const struct sb_opts *o)
{
	struct sb_shm *s = e->s;
	struct sb_side *me = &s->side[e->role], *peer = &s->side[!e->role];
	int rc;

	me->nports = e->nports;
	ns_put(&s->hello[e->role], 1);
	wait_ge(e, &s->hello[!e->role], 1, SB_WAIT_NS, "the other end's port count");
	e->n = e->nports > peer->nports ? e->nports : peer->nports;
	for (unsigned i = 0; i < e->n; i++) {
		struct uroce_qp_init_attr ia = { 0 };
		struct uroce_qp_attr a = { 0 };
		struct uroce_port_attr pa;
		uint8_t port = (uint8_t)(i % e->nports + 1);

		ia.qp_type = UROCE_QPT_RC;
		ia.send_cq = e->cq;
		ia.recv_cq = e->cq;
		ia.cap.max_send_wr = 16;
		ia.cap.max_recv_wr = 4;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.rel.reliability = o->mode;
		ia.rel.imm_counter = e->role == NS_RECEIVER;
		ia.rel.window_pkts = (uint32_t)o->window_pkts;
		ia.rel.rto_min_us = (uint32_t)o->rto_min_us;
		if ((rc = uroce_qp_create(e->pd, &ia, &e->qp[i])) != 0)
			ns_die_rc(rc, "qp_create");
		a.qp_state = UROCE_QPS_INIT;
		a.port_num = port;
		a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
		rc = uroce_qp_modify(e->qp[i], &a,
		                     UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS);
		if (rc)
			ns_die_rc(rc, "QP to INIT");
		if ((rc = uroce_query_port(e->ctx, port, &pa)) != 0)
			ns_die_rc(rc, "query_port");
		if ((rc = uroce_query_gid(e->ctx, port, SB_GID_INDEX, me->q[i].gid)) != 0)
			ns_die_rc(rc, "the port has no IPv4 GID (index 1)");
		me->q[i].qpn = uroce_qp_num(e->qp[i]);
		me->q[i].token = uroce_qp_token(e->qp[i]);
		me->q[i].psn = ns_rand_psn();
		me->q[i].active_mtu = (uint32_t)pa.active_mtu;
	}
	me->rkey = e->mr->rkey;
	me->addr = (uint64_t)(uintptr_t)e->mr->addr;
	me->len = e->mr->length;
	ns_put(&s->ready[e->role], 1);
	wait_ge(e, &s->ready[!e->role], 1, SB_WAIT_NS, "the other end's QPs");
	for (unsigned i = 0; i < e->n; i++) {
		const struct sb_qp_info *mq = &me->q[i], *pq = &peer->q[i];
		struct uroce_qp_attr a = { 0 };

		a.qp_state = UROCE_QPS_RTR;
		a.path_mtu = (enum uroce_mtu)(mq->active_mtu < pq->active_mtu ? mq->active_mtu : pq->active_mtu);
		a.dest_qp_num = pq->qpn;
		a.dest_token = pq->token;
		a.rq_psn = pq->psn;
		memcpy(a.ah_attr.dgid, pq->gid, 16);
		a.ah_attr.sgid_index = SB_GID_INDEX;
		a.ah_attr.hop_limit = 64;
		a.min_rnr_timer = 12;
		a.max_dest_rd_atomic = 1;
		rc = uroce_qp_modify(e->qp[i], &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
		                                           UROCE_QP_DEST_TOKEN | UROCE_QP_RQ_PSN | UROCE_QP_MIN_RNR_TIMER |
		                                           UROCE_QP_MAX_DEST_RD_ATOMIC);
		if (rc)
			ns_die_rc(rc, "QP to RTR");
		memset(&a, 0, sizeof(a));
		a.qp_state = UROCE_QPS_RTS;
		a.sq_psn = mq->psn;
		a.timeout = (uint8_t)o->a.rc_timeout;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		rc = uroce_qp_modify(e->qp[i], &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
		                                           UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
		                                           UROCE_QP_MAX_QP_RD_ATOMIC);
		if (rc)
			ns_die_rc(rc, "QP to RTS");
	}
	ns_put(&s->connected[e->role], 1);
	wait_ge(e, &s->connected[!e->role], 1, SB_WAIT_NS, "the other end's RTS");
}

/* Transfer k: size index and kind (true = all ports), rep. */
static void schedule(const struct sb_opts *o, uint32_t k, unsigned *si, bool *all, unsigned *rep)
{
	uint32_t per = (uint32_t)o->reps * 2, j = k % per;

	*si = k / per;
	*rep = j / 2;
	*all = ((j / 2) % 2 == 0) == (j % 2 == 1); /* one, all, all, one, ... */
}

static uint64_t word_of(uint32_t k, uint64_t seed, uint64_t idx)
{
	uint64_t z = idx + ((uint64_t)(k + 1) << 40) + seed * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(uint8_t *buf, uint64_t len, uint32_t k, uint64_t seed)
{
	for (uint64_t off = 0; off < len; off += 8) {
		uint64_t v = word_of(k, seed, off / 8);

		memcpy(buf + off, &v, len - off < 8 ? len - off : 8);
	}
}

static uint64_t check(const uint8_t *buf, uint64_t len, uint32_t k, uint64_t seed)
{
	uint64_t bad_words = 0;

	for (uint64_t off = 0; off < len; off += 8) {
		uint64_t v = word_of(k, seed, off / 8);

		bad_words += memcmp(buf + off, &v, len - off < 8 ? len - off : 8) != 0;
	}
	return bad_words;
}

static void run_sender(struct sb_end *e, const struct sb_opts *o, uint8_t *buf, uint32_t nx)
{
	struct sb_shm *s = e->s;
	const struct sb_side *peer = &s->side[NS_RECEIVER];
	uint64_t start = ns_now_ns(), max_ns = (uint64_t)(o->a.max_sec * 1e9);
	uint32_t k;
	int rc;

	for (k = 0; k < nx && ns_now_ns() - start < max_ns; k++) {
		unsigned si, rep, ns = 0, sent = 0;
		bool all;
		uint64_t end;
		struct uroce_stripe_write w = { 0 };

		schedule(o, k, &si, &all, &rep);
		fill(buf, o->sizes[si], k, o->seed);
		ns_put(&s->want, k + 1);
		wait_ge(e, &s->armed, k + 1, SB_XFER_NS, "the receiver arming the transfer");
		w.wr_id = k;
		w.addr = (uint64_t)(uintptr_t)buf;
		w.len = o->sizes[si];
		w.lkey = e->mr->lkey;
		w.remote_addr = peer->addr;
		w.rkey = peer->rkey;
		w.imm_data = htobe32(k + 1);
		w.send_flags = UROCE_SEND_SIGNALED;
		__atomic_store_n(&s->x[k].t_post, ns_now_ns(), __ATOMIC_RELEASE);
		if ((rc = uroce_stripe_post_write(all ? e->all : e->one, &w, &ns)) != 0)
			ns_die_rc(rc, "stripe_post_write");
		end = ns_now_ns() + SB_XFER_NS;
		for (unsigned spins = 0; sent < ns || ns_get(&s->done) < k + 1; spins++) {
			struct uroce_wc wc;
			int n;

			progress(e);
			n = uroce_poll_cq(e->cq, 1, &wc);
			if (n < 0)
				ns_die_rc(n, "poll_cq");
			if (n) {
				if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != k)
					ns_die("transfer %u: a shard completed as wr %" PRIu64 ": %s", k, wc.wr_id,
					    uroce_wc_status_str(wc.status));
				sent++;
			}
			if ((spins & 63) == 0) {
				if (ns_get(&s->failed))
					ns_die("the receiver failed (its log says why)");
				if (ns_now_ns() > end)
					ns_die("transfer %u (%" PRIu64 " bytes, %s): not over within 120 s (%u of %u shards "
					    "completed)", k, o->sizes[si], all ? "all ports" : "one port", sent, ns);
			}
		}
	}
	ns_put(&s->stop, k + 1);
}

static void run_receiver(struct sb_end *e, const struct sb_opts *o, const uint8_t *buf, uint32_t nx)
{
	struct sb_shm *s = e->s;
	uint64_t idle_ns = (uint64_t)((o->a.max_sec + 150) * 1e9), bad_total = 0;
	double *g[2];
	uint32_t k;
	int rc;

	g[0] = calloc(o->reps, sizeof(double));
	g[1] = calloc(o->reps, sizeof(double));
	if (!g[0] || !g[1])
		ns_die("out of memory");
	for (k = 0;; k++) {
		unsigned si, rep, qps, shards;
		bool all;
		int flag = 0;
		uint64_t end = ns_now_ns() + idle_ns, t, rd, b;
		double gbps;

		for (unsigned spins = 0; ns_get(&s->want) <= k && !ns_get(&s->stop); spins++) {
			progress(e);
			if ((spins & 63) == 0 && (ns_get(&s->failed) || ns_now_ns() > end))
				ns_die("the sender neither started transfer %u nor stopped", k);
		}
		if (ns_get(&s->want) <= k)
			break;
		if (k >= nx)
			ns_die("the sender made more transfers than %u: are its options the same?", nx);
		schedule(o, k, &si, &all, &rep);
		qps = all ? e->n : 1;
		shards = uroce_stripe_shards(o->sizes[si], qps, (uint32_t)o->min_shard);
		rd = ns_run_delay_ns();
		if ((rc = uroce_expect_imm_count(e->ctx, htobe32(k + 1), shards, NULL, NULL, &flag)) != 0)
			ns_die_rc(rc, "expect_imm_count");
		ns_put(&s->armed, k + 1);
		end = ns_now_ns() + SB_XFER_NS;
		for (unsigned spins = 0; !__atomic_load_n(&flag, __ATOMIC_ACQUIRE); spins++) {
			progress(e);
			if ((spins & 63) == 0 && (ns_get(&s->failed) || ns_now_ns() > end))
				ns_die("transfer %u (%" PRIu64 " bytes over %u QPs) was not counted within 120 s", k,
				    o->sizes[si], qps);
		}
		t = ns_now_ns();
		rd = ns_run_delay_ns() - rd;
		b = check(buf, o->sizes[si], k, o->seed);
		bad_total += b;
		gbps = (double)o->sizes[si] * 8 / (double)(t - __atomic_load_n(&s->x[k].t_post, __ATOMIC_ACQUIRE));
		g[all][rep] = gbps;
		printf("stripe_bench xfer size=%" PRIu64 " kind=%s qps=%u shards=%u rep=%u ns=%" PRIu64 " gbps=%.3f"
		       " bad=%" PRIu64 " rcv_wait_us=%.0f\n", o->sizes[si], all ? "all" : "one", qps, shards, rep,
		       t - s->x[k].t_post, gbps, b, (double)rd / 1000.0);
		ns_put(&s->done, k + 1);
		if ((k + 1) % (o->reps * 2) == 0) {
			double one = ns_median(g[0], (unsigned)o->reps), al = ns_median(g[1], (unsigned)o->reps);

			printf("stripe_bench size=%" PRIu64 " one_gbps=%.3f all_gbps=%.3f ratio=%.3f qps=%u\n", o->sizes[si],
			       one, al, one > 0 ? al / one : 0, e->n);
		}
		fflush(stdout);
	}
	free(g[0]);
	free(g[1]);
	if (bad_total)
		ns_die("%" PRIu64 " words of the transfers were not as written", bad_total);
}

static void print_ports(struct sb_end *e)
{
	printf("stripe_bench ports role=%s bytes=", e->role == NS_SENDER ? "send" : "recv");
	for (unsigned p = 1; p <= e->nports; p++) {
		struct uroce_port_stats ps;
		int rc = uroce_port_stats(e->ctx, (uint8_t)p, &ps);

		if (rc)
			ns_die_rc(rc, "port_stats");
		printf("%s%" PRIu64, p > 1 ? "," : "", e->role == NS_SENDER ? ps.tx_bytes : ps.rx_bytes);
	}
	printf("\n");
	if (e->role != NS_SENDER)
		return;
	printf("stripe_bench qps role=send retransmits=");
	for (unsigned i = 0; i < e->n; i++) {
		struct uroce_qp_stats qs;
		int rc = uroce_qp_stats(e->qp[i], &qs);

		if (rc)
			ns_die_rc(rc, "qp_stats");
		printf("%s%" PRIu64 "/%" PRIu64, i ? "," : "", qs.retransmits, qs.timeouts + qs.rto_losses);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	struct sb_opts o;
	struct sb_end e;
	uint64_t maxlen = 0;
	uint32_t nx;
	uint8_t *buf;
	int rc;

	ns_name = "stripe_bench";
	parse(argc, argv, &o);
	nx = o.nsizes * (uint32_t)o.reps * 2;
	memset(&e, 0, sizeof(e));
	e.role = o.a.role;
	e.s = ns_map(o.a.shm, sizeof(*e.s) + nx * sizeof(struct sb_xfer));
	ns_fail_word(&e.s->failed);
	for (unsigned i = 0; i < o.nsizes; i++)
		if (o.sizes[i] > maxlen)
			maxlen = o.sizes[i];
	maxlen = (maxlen + 4095) & ~4095ull;
	if (posix_memalign((void **)&buf, 4096, maxlen))
		ns_die("cannot allocate %" PRIu64 " bytes", maxlen);
	memset(buf, 0, maxlen);
	open_ctx(&e, o.a.dev, buf, maxlen);
	connect_all(&e, &o);
	if (e.role == NS_SENDER) {
		if ((rc = uroce_stripe_create(e.qp, 1, (uint32_t)o.min_shard, &e.one)) != 0 ||
		    (rc = uroce_stripe_create(e.qp, e.n, (uint32_t)o.min_shard, &e.all)) != 0)
			ns_die_rc(rc, "stripe_create");
		printf("stripe_bench: %u ports here, %u QPs a side, %s\n", e.nports, e.n, uroce_reliability_str(o.mode));
		run_sender(&e, &o, buf, nx);
		uroce_stripe_destroy(e.one);
		uroce_stripe_destroy(e.all);
	} else {
		run_receiver(&e, &o, buf, nx);
	}
	print_ports(&e);
	fflush(stdout);
	for (unsigned i = 0; i < e.n; i++)
		uroce_qp_destroy(e.qp[i]);
	uroce_cq_destroy(e.cq);
	uroce_mr_dereg(e.mr);
	uroce_pd_free(e.pd);
	uroce_context_destroy(e.ctx);
	free(buf);
	return 0;
}
