/* SPDX-License-Identifier: MIT */
/* Paged writes (TransferEngine's submit_paged_writes) against one large
 * RDMA WRITE_WITH_IMM of the same bytes, on an afxdp port: for each page
 * size, --reps transfers of each kind, alternating (paged, single, single,
 * paged, ...), so that both see the same neighbours. A transfer moves
 * --total bytes: as uroce_post_paged_write with page i of the source going
 * to a random distinct destination page (a fresh permutation each
 * transfer), or as one WRITE_WITH_IMM of --total bytes. The receiver's QP
 * has rel.imm_counter; it arms uroce_expect_imm_count(imm, 1) before the
 * sender starts, and the transfer is over when the expectation fires.
 *
 * The two ends are two processes in two namespaces meeting through a shared
 * file (ns_pair.h); the time of a transfer is from the sender's post
 * (CLOCK_MONOTONIC, before uroce_post_paged_write / uroce_post_send, so the
 * posting of thousands of WRs counts) to the receiver's expectation firing.
 * The sender also waits for its own completion before the next transfer.
 * Every 4 KiB of the source carries a stamp (transfer, offset) that the
 * receiver checks where it must have landed.
 *
 *   paged_bench --role send|recv --dev afxdp:IFACE --shm FILE --mode rc|sr
 *               [--total BYTES] [--pages 4k,8k,...] [--reps N] [--seed S]
 *               [--max-sec S] [--rc-timeout T]
 *
 * The receiver prints a line per transfer, "paged_bench xfer page=P
 * kind=paged|single rep=R ns=N gbps=G wrs=W bad=B post_us=P rcv_wait_us=U"
 * (P: the post call alone; U: how long the receiver waited for its CPU
 * during the transfer: another task ran there), then one per page size,
 * "paged_bench page=P paged_gbps=.. single_gbps=.. ratio=.. paged_post_us=..
 * wrs=.." (medians of the reps; wrs: the WRs of the last paged transfer). Exit 0, 1 on any failure (either end's), 2 on a bad argument. */
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ns_pair.h"
#include "../lib/xorshift.h"

#define PB_MAX_PAGES_LIST 16
#define PB_MAX_REPS 20u
#define PB_STAMP 4096u /* a stamp every this many bytes */
#define PB_QP_MAX_WR 32768u

struct pb_xfer {
	uint64_t t_post, t_done;
	uint64_t post_ns; /* the post call itself (uroce_post_paged_write builds a WR a run) */
	uint32_t bad, wrs;
};

struct pb_shm {
	struct ns_hdr h;
	uint32_t want __attribute__((aligned(64)));  /* sender: transfer it wants to start, + 1 */
	uint32_t armed __attribute__((aligned(64))); /* receiver: expectations armed */
	uint32_t done __attribute__((aligned(64)));  /* receiver: transfers landed */
	uint32_t stop __attribute__((aligned(64)));  /* sender: transfers made + 1, once it stops */
	struct pb_xfer x[] __attribute__((aligned(64)));
};

struct pb_opts {
	struct ns_args a; /* --role, --dev, --shm, --max-sec, --rc-timeout */
	enum uroce_reliability mode;
	uint64_t total, reps, seed;
	uint64_t pages[PB_MAX_PAGES_LIST];
	unsigned npages_list;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: paged_bench --role send|recv --dev afxdp:IFACE --shm FILE --mode rc|sr [--total BYTES]\n"
	           "                   [--pages 4k,8k,...] [--reps N] [--seed S] [--max-sec S] [--rc-timeout T]\n");
}

static void parse_pages(struct pb_opts *o, const char *arg)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		ns_bad("--pages", arg, "a list shorter than 256 characters");
	strcpy(buf, arg);
	o->npages_list = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (o->npages_list == PB_MAX_PAGES_LIST)
			ns_bad("--pages", arg, "at most 16 page sizes");
		if (ns_parse_u64(tok, PB_STAMP, 16u << 20, &v) || v % PB_STAMP)
			ns_bad("--pages", tok, "page sizes that are multiples of 4096 from 4k to 16m");
		o->pages[o->npages_list++] = v;
	}
	if (!o->npages_list)
		ns_bad("--pages", arg, "a comma-separated list of page sizes");
}

static void parse(int argc, char **argv, struct pb_opts *o)
{
	static const struct option lo[] = {
		NS_ARGS_OPTIONS, NS_ARGS_RC_TIMEOUT_OPTION,
		{ "mode", required_argument, NULL, 'm' }, { "total", required_argument, NULL, 't' },
		{ "pages", required_argument, NULL, 'p' }, { "reps", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	ns_args_init("paged_bench", usage);
	memset(o, 0, sizeof(*o));
	o->mode = UROCE_REL__COUNT;
	o->total = 64u << 20;
	o->reps = 3;
	o->seed = 1;
	o->a.max_sec = 300;
	o->a.rc_timeout = 14;
	parse_pages(o, "4k,8k,16k,32k,64k,128k,256k,512k,1m");
	while ((c = ns_getopt(argc, argv, lo, &o->a)) != -1) {
		switch (c) {
		case 'm':
			if (uroce_reliability_parse(optarg, &o->mode) || (o->mode != UROCE_REL_RC && o->mode != UROCE_REL_SR))
				ns_bad("--mode", optarg, "rc or sr (rel.imm_counter takes rc, sr or ec; be cannot count)");
			break;
		case 't':
			if (ns_parse_u64(optarg, PB_STAMP, 1u << 30, &o->total) || o->total % PB_STAMP)
				ns_bad("--total", optarg, "a multiple of 4096 from 4k to 1g");
			break;
		case 'p':
			parse_pages(o, optarg);
			break;
		case 'n':
			o->reps = ns_arg_u64("--reps", optarg, 1, PB_MAX_REPS, "1 to 20");
			break;
		case 's':
			o->seed = ns_arg_u64("--seed", optarg, 0, UINT32_MAX, "0 to 4294967295");
			break;
		default:
			ns_help_or_bad(c);
		}
	}
	ns_args_end(argc, argv, ns_args_missing(&o->a) || o->mode == UROCE_REL__COUNT,
	            "--role, --dev, --shm and --mode");
	for (unsigned i = 0; i < o->npages_list; i++) {
		char v[32];

		snprintf(v, sizeof(v), "%" PRIu64, o->pages[i]);
		if (o->total % o->pages[i])
			ns_bad("--pages", v, "page sizes that divide --total");
		if (o->total / o->pages[i] + 16 > PB_QP_MAX_WR)
			ns_bad("--pages", v, "page sizes of which --total holds at most 32752 (a WR a page)");
	}
}

/* Transfer k of the schedule: page size index, kind (1 = paged) and rep. */
static void schedule(const struct pb_opts *o, uint32_t k, unsigned *pi, bool *paged, unsigned *rep)
{
	uint32_t per = (uint32_t)o->reps * 2, j = k % per;

	*pi = k / per;
	*rep = j / 2;
	/* paged, single, single, paged, ...: neither kind is always first */
	*paged = ((j / 2) % 2 == 0) == (j % 2 == 0);
}

/* The destination page of source page i for transfer k: a permutation both
 * ends draw alike. */
static void perm(uint32_t *p, uint32_t n, uint64_t seed, uint32_t k)
{
	uint64_t s = (seed + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)k << 32 | k) ^ 0x2545f4914f6cdd1dull;

	if (!s)
		s = 1;
	for (uint32_t i = 0; i < n; i++)
		p[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(xs64(&s) % (i + 1)), t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
}

static uint64_t stamp_of(uint32_t k, uint64_t src_off)
{
	return (uint64_t)(k + 1) << 40 | src_off / PB_STAMP;
}

static void run_sender(struct ns_end *e, struct pb_shm *s, uint8_t *buf, const struct pb_opts *o, uint32_t nx,
                       uint32_t *dst, uint32_t *src)
{
	uint64_t start = ns_now_ns(), max_ns = (uint64_t)(o->a.max_sec * 1e9), xfer_ns = 120000000000ull;
	struct uroce_wc wc;
	uint32_t k;
	int rc;

	for (k = 0; k < nx && ns_now_ns() - start < max_ns; k++) {
		unsigned pi, rep;
		bool paged, sent = false;
		uint64_t page = o->pages[0], end;
		uint32_t n, wrs = 1;

		schedule(o, k, &pi, &paged, &rep);
		page = o->pages[pi];
		n = (uint32_t)(o->total / page);
		for (uint64_t off = 0; off < o->total; off += PB_STAMP) {
			uint64_t v = stamp_of(k, off);

			memcpy(buf + off, &v, 8);
		}
		if (paged) {
			perm(dst, n, o->seed, k);
			for (uint32_t i = 0; i + 1 < n; i++)
				wrs += dst[i + 1] != dst[i] + 1;
			for (uint32_t i = 0; i < n; i++)
				src[i] = i; /* the source in order, the destination shuffled */
		}
		s->x[k].wrs = wrs;
		ns_put(&s->want, k + 1);
		if (ns_wait_ge(e, &s->armed, k + 1, xfer_ns))
			ns_die("the receiver did not arm transfer %u", k);
		__atomic_store_n(&s->x[k].t_post, ns_now_ns(), __ATOMIC_RELEASE);
		if (paged) {
			struct uroce_paged_write pw = {
				.wr_id = k, .page_len = (uint32_t)page, .npages = n, .src_pages = src,
				.src_base = (uint64_t)(uintptr_t)buf, .lkey = e->mr->lkey, .dst_pages = dst,
				.dst_base = e->h->info[NS_RECEIVER].addr, .rkey = e->h->info[NS_RECEIVER].rkey,
				.imm_data = htobe32(k + 1), .send_flags = UROCE_SEND_SIGNALED,
			};

			if ((rc = uroce_post_paged_write(e->qp, &pw)) != 0)
				ns_die_rc(rc, "post_paged_write");
		} else {
			struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)buf, .length = (uint32_t)o->total,
			                         .lkey = e->mr->lkey };
			struct uroce_send_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1,
			                            .opcode = UROCE_WR_RDMA_WRITE_WITH_IMM,
			                            .send_flags = UROCE_SEND_SIGNALED, .imm_data = htobe32(k + 1) };

			wr.wr.rdma.remote_addr = e->h->info[NS_RECEIVER].addr;
			wr.wr.rdma.rkey = e->h->info[NS_RECEIVER].rkey;
			if ((rc = uroce_post_send(e->qp, &wr, NULL)) != 0)
				ns_die_rc(rc, "post_send");
		}
		/* before the first packet leaves (the engine runs in our
		 * progress calls), so the receiver reads it once done */
		__atomic_store_n(&s->x[k].post_ns, ns_now_ns() - s->x[k].t_post, __ATOMIC_RELEASE);
		end = ns_now_ns() + xfer_ns;
		for (unsigned spins = 0; !sent || ns_get(&s->done) < k + 1; spins++) {
			if (!sent && ns_poll(e, e->scq, &wc)) {
				if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != k)
					ns_die("transfer %u completed as wr %" PRIu64 ": %s", k, wc.wr_id,
					       uroce_wc_status_str(wc.status));
				sent = true;
			} else if (sent) {
				ns_progress(e);
			}
			if ((spins & 63) == 0) {
				if (ns_get(&e->h->failed))
					ns_die("the receiver failed (its log says why)");
				if (ns_now_ns() > end)
					ns_die("transfer %u (%s, page %" PRIu64 "): not over within 120 s (%s)", k,
					       paged ? "paged" : "single", page, sent ? "no imm count" : "no send completion");
			}
		}
	}
	ns_put(&s->stop, k + 1);
}

/* Where transfer k's stamps landed: 0 or the number of wrong ones. */
static uint32_t verify(const uint8_t *buf, const struct pb_opts *o, uint32_t k, bool paged, uint64_t page,
                       uint32_t *dst)
{
	uint32_t n = (uint32_t)(o->total / page), badn = 0;

	if (paged)
		perm(dst, n, o->seed, k);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t doff = (paged ? dst[i] : i) * page;

		for (uint64_t j = 0; j < page; j += PB_STAMP) {
			uint64_t v, want = stamp_of(k, (uint64_t)i * page + j);

			memcpy(&v, buf + doff + j, 8);
			badn += v != want;
		}
	}
	return badn;
}

static void run_receiver(struct ns_end *e, struct pb_shm *s, uint8_t *buf, const struct pb_opts *o, uint32_t nx,
                         uint32_t *dst)
{
	uint64_t idle_ns = (uint64_t)((o->a.max_sec + 150) * 1e9), xfer_ns = 120000000000ull;
	uint64_t rd, rcv_wait;
	uint32_t paged_wrs = 0;
	double *g[2], *post;
	uint32_t k;
	int rc;

	g[0] = calloc(o->reps, sizeof(double));
	g[1] = calloc(o->reps, sizeof(double));
	post = calloc(o->reps, sizeof(double));
	if (!g[0] || !g[1] || !post)
		ns_die("out of memory");
	for (k = 0;; k++) {
		unsigned pi, rep;
		bool paged;
		int flag = 0;
		uint64_t end = ns_now_ns() + idle_ns, t, page;
		double gbps;

		for (unsigned spins = 0; ns_get(&s->want) <= k; spins++) {
			if (ns_get(&s->stop))
				break;
			ns_progress(e);
			if ((spins & 63) == 0 && (ns_get(&e->h->failed) || ns_now_ns() > end))
				ns_die("the sender neither started transfer %u nor stopped", k);
		}
		if (ns_get(&s->want) <= k)
			break;
		if (k >= nx)
			ns_die("the sender made more transfers than %u: are its options the same?", nx);
		schedule(o, k, &pi, &paged, &rep);
		page = o->pages[pi];
		rd = ns_run_delay_ns();
		if ((rc = uroce_expect_imm_count(e->ctx, htobe32(k + 1), 1, NULL, NULL, &flag)) != 0)
			ns_die_rc(rc, "expect_imm_count");
		ns_put(&s->armed, k + 1);
		end = ns_now_ns() + xfer_ns;
		for (unsigned spins = 0; !__atomic_load_n(&flag, __ATOMIC_ACQUIRE); spins++) {
			ns_progress(e);
			if ((spins & 63) == 0 && (ns_get(&e->h->failed) || ns_now_ns() > end))
				ns_die("transfer %u (%s, page %" PRIu64 ") was not counted within 120 s", k,
				       paged ? "paged" : "single", page);
		}
		t = ns_now_ns();
		rcv_wait = ns_run_delay_ns() - rd;
		s->x[k].t_done = t;
		s->x[k].bad = verify(buf, o, k, paged, page, dst);
		gbps = (double)o->total * 8 / (double)(t - s->x[k].t_post);
		g[paged][rep] = gbps;
		if (paged) {
			post[rep] = (double)__atomic_load_n(&s->x[k].post_ns, __ATOMIC_ACQUIRE) / 1000.0;
			paged_wrs = s->x[k].wrs;
		}
		printf("paged_bench xfer page=%" PRIu64 " kind=%s rep=%u ns=%" PRIu64 " gbps=%.3f wrs=%u bad=%u"
		       " post_us=%.0f rcv_wait_us=%.0f\n", page, paged ? "paged" : "single", rep, t - s->x[k].t_post, gbps,
		       s->x[k].wrs, s->x[k].bad, (double)__atomic_load_n(&s->x[k].post_ns, __ATOMIC_ACQUIRE) / 1000.0,
		       (double)rcv_wait / 1000.0);
		ns_put(&s->done, k + 1);
		if ((k + 1) % (o->reps * 2) == 0) {
			double p = ns_median(g[1], (unsigned)o->reps), q = ns_median(g[0], (unsigned)o->reps);

			printf("paged_bench page=%" PRIu64 " paged_gbps=%.3f single_gbps=%.3f ratio=%.3f paged_post_us=%.0f"
			       " wrs=%u\n", page, p, q, q > 0 ? p / q : 0, ns_median(post, (unsigned)o->reps), paged_wrs);
		}
		fflush(stdout);
	}
	free(g[0]);
	free(g[1]);
	free(post);
}

int main(int argc, char **argv)
{
	struct pb_opts o;
	struct ns_qp_opts q = { 0 };
	struct pb_shm *s;
	struct ns_end e;
	uint32_t nx, *dst, *src, maxn;
	uint8_t *buf;

	ns_name = "paged_bench";
	parse(argc, argv, &o);
	nx = o.npages_list * (uint32_t)o.reps * 2;
	s = ns_map(o.a.shm, sizeof(*s) + nx * sizeof(struct pb_xfer));
	maxn = 0;
	for (unsigned i = 0; i < o.npages_list; i++)
		if (o.total / o.pages[i] > maxn)
			maxn = (uint32_t)(o.total / o.pages[i]);
	dst = calloc(maxn, sizeof(*dst));
	src = calloc(maxn, sizeof(*src));
	if (!dst || !src || posix_memalign((void **)&buf, 4096, o.total))
		ns_die("cannot allocate %" PRIu64 " bytes", o.total);
	memset(buf, 0, o.total);
	q.rel.reliability = o.mode;
	q.rel.imm_counter = o.a.role == NS_RECEIVER;
	q.sq = o.a.role == NS_SENDER ? maxn + 16 : 4;
	q.rq = 4;
	q.cqe = 64;
	q.rc_timeout = (uint8_t)o.a.rc_timeout;
	ns_open(&e, &s->h, o.a.role, o.a.dev, buf, o.total, &q);
	ns_connect(&e, &q, 30);
	if (o.a.role == NS_SENDER)
		run_sender(&e, s, buf, &o, nx, dst, src);
	else
		run_receiver(&e, s, buf, &o, nx, dst);
	fflush(stdout);
	ns_close(&e);
	free(buf);
	free(dst);
	free(src);
	return 0;
}
