/* SPDX-License-Identifier: MIT */
/* nccl_coll: NCCL's collectives (ring allreduce, tree allreduce, ring
 * allgather, ring reduce-scatter) over an NCCL net plugin, one process per
 * rank, using only the calls NCCL's proxy makes (nccl_load.h): listen,
 * connect and accept (non-blocking), regMr on each comm, isend and irecv
 * (a NULL request means "not now, call again"), test, the closes. Every
 * element of every result is checked after every iteration.
 *
 *   nccl_coll --rank R --nranks N --dir DIR --plugin NAME [--version V]
 *             --coll allreduce|allgather|reducescatter|all --algo ring|tree|all
 *             --sizes LIST [--iters K] [--warmup W] [--csv FILE] [--timeout S]
 *             [--slice BYTES] [--tree-chunk BYTES] [--dev D] [--no-linger]
 *
 * A ring collective goes in slices of --slice bytes (512 KiB, NCCL's
 * Simple protocol's step; less if the device's maxP2pBytes says so), the
 * tree in chunks of --tree-chunk (64 KiB); at most 8 requests in flight
 * per comm (NCCL_STEPS). Timing: before every iteration (warm-up ones
 * too) a barrier, two passes of a 4-byte token around the ring through
 * the plugin; a rank's time runs from the end of its barrier until its
 * output is final (every receive of it done and reduced: what a caller of
 * NCCL sees end); its last sends may complete after that and are waited
 * for, untimed, before its buffers are touched again. The iteration's
 * time is the largest over the ranks. Rank 0 prints, for each collective,
 * algorithm and size: iterations, mean, p50, p99, max (us), the lost bytes
 * and wrong elements summed over the ranks and timed iterations, and the
 * bus bandwidth of the mean (nccl-tests' factors); --csv FILE appends a
 * row per timed iteration (coll,algo,nranks,size,iter,time_us,lost_bytes;
 * a header when the file is new or empty).
 *
 * Sizes follow nccl-tests: SIZE is each rank's buffer of float32, the
 * output of allreduce and allgather, the input of reduce-scatter; the part
 * one rank contributes to allgather (and receives of reduce-scatter) is
 * SIZE/N rounded down to whole floats.
 *
 * Rendezvous, all through files in DIR (one shared filesystem; the ranks
 * may sit in different network namespaces): the rank that accepts a
 * connection FROM -> TO listens and writes the 128-byte handle to
 * DIR/handle.FROM.TO (the ring) or DIR/handle.FROM.TO.tree (the tree),
 * atomically (a temporary name, then rename); the connecting rank polls
 * for it. Every connect and accept of a rank progresses in one loop.
 * Results: each rank writes its per-iteration times, lost bytes and bad
 * element counts to DIR/times.R.csv (the lost bytes of every rank are
 * gathered this way, through files, not through an extra ring pass); rank
 * 0 merges them: a collective's time is the largest over the ranks. A
 * rank that fails writes DIR/abort, and the others give up as soon as
 * they see it instead of waiting out their timeout. Every wait gives up
 * after --timeout seconds (60), naming what it waited for. Before tearing
 * down (deregMr, the comms in this rank's own order, closeListen,
 * finalize, netp_close) a rank keeps calling into the plugin until every
 * rank has finished (linger(): an inline engine acknowledges only inside
 * calls), unless --no-linger.
 *
 * Data: rank r's input element i is (r + 1) * ((i % 251) + 1), so every
 * sum is an exact integer in float32. With UROCE_NCCL_RELIABILITY=be the
 * plugin may cut a message at its deadline and leave the missing bytes
 * zero: then wrong elements are counted, not fatal, and the run fails only
 * when a collective that lost no bytes on any rank (uroceNcclLostBytes,
 * summed over the ranks) is not exact. Otherwise the first wrong element
 * ends the run (exit 1) with its index, the expected and the received value.
 *
 * Exit: 0 success, 1 a failure (named on stderr), 2 bad arguments. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nccl_load.h"

#define MAXREQ 8 /* outstanding requests per comm: NCCL_STEPS */
#define MAXRANKS 64
#define TAGBASE 0

enum { COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCESCATTER, NCOLL };
enum { ALGO_RING, ALGO_TREE, NALGO };
static const char *const coll_names[NCOLL] = { "allreduce", "allgather", "reducescatter" };
static const char *const algo_names[NALGO] = { "ring", "tree" };

/* The buffers, each registered on every comm (regMr per comm, as NCCL
 * may do even where regIsGlobal says one would serve). */
enum { BUF_IN, BUF_OUT, BUF_SCR, BUF_TMP, BUF_TOK, NBUF };

struct conn {
	int peer;
	int is_send;       /* 1: we connect (a send comm); 0: we listen and accept (a recv comm) */
	int tree;          /* a tree comm (else the ring's) */
	char hpath[PATH_MAX];
	/* kept across connect calls: connect may keep its state in it. Aligned
	 * as NCCL's are (the start of an allocated struct): plugins, NCCL's own
	 * IB transport among them, read it as a struct of 64-bit fields. */
	unsigned char handle[NCCL_NET_HANDLE_MAXSIZE] __attribute__((aligned(16)));
	int have_handle;
	void *lcomm;
	void *comm;
	void *mh[NBUF];
};

struct opts {
	int rank, nranks, version, dev, iters, warmup, linger;
	const char *dir, *plugin, *csv;
	int coll_mask, algo_mask;
	size_t sizes[64];
	int nsizes;
	double timeout;
	size_t slice, tchunk;
};

/* One row of a rank's results: one iteration of one collective. */
struct row {
	int coll, algo, iter; /* iter < 0: a warm-up iteration */
	size_t size;
	int64_t time_ns;
	uint64_t lost, bad;
};

struct ctx {
	struct opts o;
	struct netp p;
	int be;
	struct conn conns[8];
	int nconns;
	struct conn *ring_send, *ring_recv;
	struct conn *tree_up_send, *tree_up_recv[2];  /* to the parent; from each child */
	struct conn *tree_down_recv, *tree_down_send[2]; /* from the parent; to each child */
	int nchildren;
	void *buf[NBUF];
	size_t buflen[NBUF];
	struct row *rows;
	size_t nrows, rows_cap;
	double last_abort_check;
	const char *phase; /* what the rank is doing, for messages */
};

static struct ctx C;

/* ---- messages, failure, time */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("nccl_coll: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nusage: nccl_coll --rank R --nranks N --dir DIR --plugin NAME [--version 8..12]\n"
	      "         --coll allreduce|allgather|reducescatter|all --algo ring|tree|all\n"
	      "         --sizes SIZE[,SIZE...] (bytes, a multiple of 4; K, M, G suffixes)\n"
	      "         [--iters K] [--warmup W] [--csv FILE] [--timeout S] [--slice BYTES]\n"
	      "         [--tree-chunk BYTES] [--dev D] [--no-linger]\n",
	      stderr);
	exit(2);
}

/* The first failure of any rank: DIR/abort says which and why. */
static void write_abort(const char *msg)
{
	char path[PATH_MAX];
	int fd;

	if (!C.o.dir)
		return;
	snprintf(path, sizeof(path), "%s/abort", C.o.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return;
	if (write(fd, msg, strlen(msg)) < 0) {
		/* the message is on stderr too */
	}
	close(fd);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	char msg[2048];
	int n;
	va_list ap;

	n = snprintf(msg, sizeof(msg), "rank %d: ", C.o.rank);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "nccl_coll: %s\n", msg);
	write_abort(msg);
	exit(1);
}

/* Nothing progressed: give the CPU to the other ranks (8 busy ranks on two
 * CPUs, the engine inside their calls), give up past the deadline (the
 * caller says what it waited for), and leave when another rank failed. */
static int idle(double deadline)
{
	double t = now_s();

	sched_yield();
	if (t - C.last_abort_check > 0.05) {
		char path[PATH_MAX], msg[1024] = "";
		FILE *f;

		C.last_abort_check = t;
		snprintf(path, sizeof(path), "%s/abort", C.o.dir);
		f = fopen(path, "r");
		if (f) {
			size_t n = fread(msg, 1, sizeof(msg) - 1, f);

			msg[n] = 0;
			fclose(f);
			fprintf(stderr, "nccl_coll: rank %d: giving up (%s): another rank failed: %s\n", C.o.rank,
			        C.phase ? C.phase : "-", msg);
			exit(1);
		}
	}
	return t > deadline;
}

static void check(ncclResult_t r, const char *call, const char *what)
{
	if (r != ncclSuccess)
		die("%s failed (ncclResult %d) in %s", call, (int)r, what);
}

/* ---- arguments */

static long parse_long(const char *opt, const char *s, long lo, long hi, const char *accepted)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		usage_error("%s '%s': accepted %s", opt, s, accepted);
	return v;
}

static size_t parse_size(const char *opt, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (*s == '-' || !*s)
		usage_error("%s '%s': accepted a byte count, a multiple of 4, with an optional K, M or G", opt, s);
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		usage_error("%s '%s': accepted a byte count, a multiple of 4, with an optional K, M or G", opt, s);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end || v % 4 || v > (1ULL << 30))
		usage_error("%s '%s': accepted a byte count up to 1G, a multiple of 4 (float32), with an optional K, M "
		            "or G",
		            opt, s);
	return (size_t)v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rank = o->nranks = -1;
	o->iters = 10;
	o->warmup = 2;
	o->timeout = 60;
	o->slice = 512 << 10;
	o->tchunk = 64 << 10;
	o->linger = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			printf("nccl_coll: NCCL's collectives over an NCCL net plugin (see the top of nccl_coll.c)\n");
			exit(0);
		}
		if (!strcmp(a, "--no-linger")) {
			o->linger = 0;
			continue;
		}
		if (strncmp(a, "--", 2))
			usage_error("unexpected argument '%s'", a);
		if (!v)
			usage_error("%s needs a value", a);
		i++;
		if (!strcmp(a, "--rank"))
			o->rank = (int)parse_long(a, v, 0, MAXRANKS - 1, "0..63");
		else if (!strcmp(a, "--nranks"))
			o->nranks = (int)parse_long(a, v, 2, MAXRANKS, "2..64");
		else if (!strcmp(a, "--dir"))
			o->dir = v;
		else if (!strcmp(a, "--plugin"))
			o->plugin = v;
		else if (!strcmp(a, "--version")) {
			o->version = (int)parse_long(a, v, 0, 12, "8..12 (0: the newest the plugin exports)");
			if (o->version && o->version < 8)
				usage_error("--version '%s': accepted 8..12 (0: the newest the plugin exports)", v);
		} else if (!strcmp(a, "--dev"))
			o->dev = (int)parse_long(a, v, 0, 1023, "a device index 0..1023");
		else if (!strcmp(a, "--iters"))
			o->iters = (int)parse_long(a, v, 1, 1000000, "1..1000000");
		else if (!strcmp(a, "--warmup"))
			o->warmup = (int)parse_long(a, v, 0, 1000000, "0..1000000");
		else if (!strcmp(a, "--csv"))
			o->csv = v;
		else if (!strcmp(a, "--timeout"))
			o->timeout = (double)parse_long(a, v, 1, 86400, "seconds, 1..86400");
		else if (!strcmp(a, "--slice")) {
			o->slice = parse_size(a, v);
			if (!o->slice)
				usage_error("--slice '%s': accepted a positive multiple of 4", v);
		} else if (!strcmp(a, "--tree-chunk")) {
			o->tchunk = parse_size(a, v);
			if (!o->tchunk)
				usage_error("--tree-chunk '%s': accepted a positive multiple of 4", v);
		} else if (!strcmp(a, "--coll")) {
			if (!strcmp(v, "all"))
				o->coll_mask = (1 << NCOLL) - 1;
			else {
				int c;

				for (c = 0; c < NCOLL && strcmp(v, coll_names[c]); c++)
					;
				if (c == NCOLL)
					usage_error("--coll '%s': accepted allreduce, allgather, reducescatter or all", v);
				o->coll_mask = 1 << c;
			}
		} else if (!strcmp(a, "--algo")) {
			if (!strcmp(v, "all"))
				o->algo_mask = (1 << NALGO) - 1;
			else if (!strcmp(v, "ring"))
				o->algo_mask = 1 << ALGO_RING;
			else if (!strcmp(v, "tree"))
				o->algo_mask = 1 << ALGO_TREE;
			else
				usage_error("--algo '%s': accepted ring, tree or all", v);
		} else if (!strcmp(a, "--sizes")) {
			char *copy = strdup(v), *save = NULL, *tok;

			if (!copy)
				usage_error("out of memory");
			o->nsizes = 0;
			for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (o->nsizes == (int)(sizeof(o->sizes) / sizeof(o->sizes[0])))
					usage_error("--sizes: accepted at most 64 sizes");
				o->sizes[o->nsizes++] = parse_size("--sizes", tok);
			}
			free(copy);
			if (!o->nsizes)
				usage_error("--sizes '%s': accepted a comma-separated list of byte counts", v);
		} else
			usage_error("unknown option '%s' (accepted: --rank --nranks --dir --plugin --version --coll --algo "
			            "--sizes --iters --warmup --csv --timeout --slice --tree-chunk --dev --no-linger)",
			            a);
	}
	if (o->nranks < 0)
		usage_error("--nranks is missing");
	if (o->rank < 0)
		usage_error("--rank is missing");
	if (o->rank >= o->nranks)
		usage_error("--rank %d: accepted 0..%d (--nranks %d)", o->rank, o->nranks - 1, o->nranks);
	if (!o->dir)
		usage_error("--dir is missing");
	if (!o->plugin)
		usage_error("--plugin is missing");
	if (!o->coll_mask)
		usage_error("--coll is missing");
	if (!o->algo_mask)
		usage_error("--algo is missing");
	if (!o->nsizes)
		usage_error("--sizes is missing");
	if (!(o->coll_mask & (1 << COLL_ALLREDUCE)) && !(o->algo_mask & (1 << ALGO_RING)))
		usage_error("--algo tree: the tree is allreduce's only (allgather and reducescatter are rings)");
	struct stat st;
	if (stat(o->dir, &st) || !S_ISDIR(st.st_mode))
		usage_error("--dir '%s': not a directory", o->dir);
}

/* ---- setup: the plugin, the comms, the buffers */

static void add_conn(int peer, int is_send, int tree)
{
	struct conn *c = &C.conns[C.nconns++];
	int from = is_send ? C.o.rank : peer, to = is_send ? peer : C.o.rank;

	c->peer = peer;
	c->is_send = is_send;
	c->tree = tree;
	snprintf(c->hpath, sizeof(c->hpath), "%s/handle.%d.%d%s", C.o.dir, from, to, tree ? ".tree" : "");
}

static void write_file_atomic(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX + 32];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		die("cannot create %s: %s", tmp, strerror(errno));
	if (fwrite(data, 1, len, f) != len || fclose(f))
		die("cannot write %s: %s", tmp, strerror(errno));
	if (rename(tmp, path))
		die("cannot rename %s to %s: %s", tmp, path, strerror(errno));
}

/* A handle file: exactly NCCL_NET_HANDLE_MAXSIZE bytes (renamed into place whole). */
static int read_handle(struct conn *c)
{
	FILE *f = fopen(c->hpath, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(c->handle, 1, sizeof(c->handle), f);
	fclose(f);
	if (n != sizeof(c->handle))
		die("%s holds %zu bytes, not a %d-byte handle", c->hpath, n, NCCL_NET_HANDLE_MAXSIZE);
	return 1;
}

static void setup_conns(int want_tree)
{
	int r = C.o.rank, n = C.o.nranks;
	double deadline;

	C.phase = "connecting";
	add_conn((r + 1) % n, 1, 0);
	C.ring_send = &C.conns[C.nconns - 1];
	add_conn((r - 1 + n) % n, 0, 0);
	C.ring_recv = &C.conns[C.nconns - 1];
	if (want_tree) {
		if (r > 0) {
			add_conn((r - 1) / 2, 1, 1);
			C.tree_up_send = &C.conns[C.nconns - 1];
			add_conn((r - 1) / 2, 0, 1);
			C.tree_down_recv = &C.conns[C.nconns - 1];
		}
		for (int ch = 2 * r + 1; ch <= 2 * r + 2 && ch < n; ch++) {
			add_conn(ch, 0, 1);
			C.tree_up_recv[C.nchildren] = &C.conns[C.nconns - 1];
			add_conn(ch, 1, 1);
			C.tree_down_send[C.nchildren] = &C.conns[C.nconns - 1];
			C.nchildren++;
		}
	}
	/* every listen first, its handle published at once */
	for (int i = 0; i < C.nconns; i++) {
		struct conn *c = &C.conns[i];
		unsigned char h[NCCL_NET_HANDLE_MAXSIZE] __attribute__((aligned(16)));

		if (c->is_send)
			continue;
		memset(h, 0, sizeof(h));
		check(netp_listen(&C.p, C.o.dev, h, &c->lcomm), "listen", c->hpath);
		if (!c->lcomm)
			die("listen returned no listen comm (%s)", c->hpath);
		write_file_atomic(c->hpath, h, sizeof(h));
	}
	/* then every connect and accept, interleaved, none blocking the others */
	deadline = now_s() + C.o.timeout;
	for (;;) {
		int pending = 0, progress = 0;

		for (int i = 0; i < C.nconns; i++) {
			struct conn *c = &C.conns[i];

			if (c->comm)
				continue;
			if (c->is_send) {
				if (!c->have_handle)
					c->have_handle = read_handle(c);
				if (c->have_handle) {
					check(netp_connect(&C.p, C.o.dev, c->handle, &c->comm), "connect", c->hpath);
					progress |= c->comm != NULL;
				}
			} else {
				check(netp_accept(&C.p, c->lcomm, &c->comm), "accept", c->hpath);
				progress |= c->comm != NULL;
			}
			pending += c->comm == NULL;
		}
		if (!pending)
			break;
		if (!progress) {
			if (idle(deadline)) {
				char what[1024];
				size_t w = 0;

				for (int i = 0; i < C.nconns; i++) {
					struct conn *c = &C.conns[i];

					if (c->comm)
						continue;
					w += (size_t)snprintf(what + w, sizeof(what) - w, "%s%s %s rank %d (%s)",
					                      w ? "; " : "",
					                      c->is_send ? (c->have_handle ? "connect to" : "the handle of")
					                                 : "accept from",
					                      c->tree ? "tree" : "ring", c->peer, c->hpath);
					if (w >= sizeof(what))
						break;
				}
				die("timed out after %.0f s waiting for: %s", C.o.timeout, what);
			}
			usleep(200);
		}
	}
}

static void *alloc_buf(size_t len)
{
	size_t al = (len + 4095) & ~(size_t)4095;
	void *b;

	if (!al)
		al = 4096;
	b = aligned_alloc(4096, al);
	if (!b)
		die("cannot allocate %zu bytes", al);
	memset(b, 0, al);
	return b;
}

static void setup_buffers(void)
{
	size_t max = 0, count;
	float *in;

	for (int i = 0; i < C.o.nsizes; i++)
		if (C.o.sizes[i] > max)
			max = C.o.sizes[i];
	C.buflen[BUF_IN] = C.buflen[BUF_OUT] = max;
	C.buflen[BUF_SCR] = (C.o.coll_mask & (1 << COLL_REDUCESCATTER)) ? max : 0;
	C.buflen[BUF_TMP] = MAXREQ * C.o.slice;
	if (C.tree_up_recv[0] && 2 * MAXREQ * C.o.tchunk > C.buflen[BUF_TMP])
		C.buflen[BUF_TMP] = 2 * MAXREQ * C.o.tchunk;
	C.buflen[BUF_TOK] = 4 * sizeof(uint32_t);
	for (int b = 0; b < NBUF; b++) {
		if (!C.buflen[b])
			continue;
		C.buf[b] = alloc_buf(C.buflen[b]);
	}
	in = C.buf[BUF_IN];
	count = max / 4;
	for (size_t i = 0; i < count; i++)
		in[i] = (float)((C.o.rank + 1) * (int)((i % 251) + 1));
	/* every buffer on every comm */
	for (int i = 0; i < C.nconns; i++)
		for (int b = 0; b < NBUF; b++) {
			if (!C.buf[b])
				continue;
			check(netp_regmr(&C.p, C.conns[i].comm, C.buf[b], C.buflen[b], NCCL_PTR_HOST, &C.conns[i].mh[b]),
			      "regMr", C.conns[i].hpath);
		}
}

static uint64_t lost_now(void)
{
	uint64_t s = 0;

	if (!C.p.lost_bytes)
		return 0;
	for (int i = 0; i < C.nconns; i++)
		if (!C.conns[i].is_send)
			s += C.p.lost_bytes(C.conns[i].comm);
	return s;
}

/* ---- one request */

static void *post_send(struct conn *c, void *data, size_t size, int b, const char *what)
{
	void *req = NULL;

	check(netp_isend(&C.p, c->comm, data, size, TAGBASE + C.o.rank, c->mh[b], &req), "isend", what);
	return req;
}

static void *post_recv(struct conn *c, void *data, size_t size, int b, const char *what)
{
	void *req = NULL, *mh = c->mh[b];
	int tag = TAGBASE + c->peer;

	check(netp_irecv(&C.p, c->comm, 1, &data, &size, &tag, &mh, &req), "irecv", what);
	return req;
}

/* done: 1 and the size received (recv) */
static int test_req(void *req, int *size, const char *what)
{
	int done = 0, sz = -1;

	check(netp_test(&C.p, req, &done, &sz), "test", what);
	if (size)
		*size = sz;
	return done;
}

/* ---- the barrier: two passes of a 4-byte token around the ring, rank 0
 * first. When a rank has the second pass, every rank has entered. */

static uint32_t barrier_seq;

static void barrier(const char *where)
{
	uint32_t *tok = C.buf[BUF_TOK];
	void *rreq[2], *sreq = NULL;
	int r = C.o.rank, got = 0, sz;
	double deadline = now_s() + C.o.timeout;
	char what[160];
	int npass = 0; /* tokens sent */

	snprintf(what, sizeof(what), "the barrier before %s", where);
	C.phase = what;
	barrier_seq++;
	for (int i = 0; i < 2; i++) {
		while (!(rreq[i] = post_recv(C.ring_recv, &tok[1 + i], 4, BUF_TOK, what)))
			if (idle(deadline))
				die("timed out after %.0f s posting a token receive in %s", C.o.timeout, what);
	}
	/* rank 0 sends pass 1 at once; the others forward each pass they get */
	for (;;) {
		int progress = 0;

		if (!sreq && npass < 2 && (r == 0 ? npass <= got : npass < got)) {
			tok[0] = barrier_seq * 2 + (uint32_t)npass;
			if ((sreq = post_send(C.ring_send, &tok[0], 4, BUF_TOK, what)))
				progress = 1;
		}
		if (sreq && test_req(sreq, NULL, what)) {
			sreq = NULL;
			npass++;
			progress = 1;
		}
		if (got < 2 && test_req(rreq[got], &sz, what)) {
			uint32_t want = barrier_seq * 2 + (uint32_t)got;

			if (!C.be && (sz != 4 || tok[1 + got] != want))
				die("%s: token %d from rank %d: %d bytes holding %u, expected 4 bytes holding %u", what, got,
				    C.ring_recv->peer, sz, tok[1 + got], want);
			got++;
			progress = 1;
		}
		if (got == 2 && npass == 2)
			break;
		if (!progress && idle(deadline))
			die("timed out after %.0f s in %s: %d of 2 tokens received from rank %d, %d of 2 sent to rank "
			    "%d%s",
			    C.o.timeout, what, got, C.ring_recv->peer, npass, C.ring_send->peer,
			    sreq ? " (a send is pending)" : "");
	}
}

/* ---- the ring engine: a ring collective is a list of steps; at each a
 * rank sends one chunk to the next rank and receives one chunk from the
 * previous. Each chunk goes in slices of at most --slice bytes; sends and
 * receives are two queues of (step, slice) with at most MAXREQ in flight
 * each. The send of step s+1 carries what the receive of step s brought
 * (the same chunk, the same slices): it waits for that slice only, so the
 * steps pipeline. A "reduce" receive lands in a temporary slot and is
 * added to this rank's input into its destination; a "direct" one lands
 * in its destination, which may first have to be sent from (gate). */

#define MAXSTEPS (2 * MAXRANKS)

struct ring_plan {
	int nsteps;
	float *sptr[MAXSTEPS];
	size_t slen[MAXSTEPS]; /* floats */
	int sbuf[MAXSTEPS];
	float *rptr[MAXSTEPS]; /* the destination (of the sum, for a reduce) */
	size_t rlen[MAXSTEPS];
	int rbuf[MAXSTEPS];
	int rreduce[MAXSTEPS];
	const float *rin[MAXSTEPS]; /* reduce: this rank's input of that chunk */
	int rgate[MAXSTEPS];        /* direct: the step whose send (same slice) must be done first, or -1 */
	int schunk[MAXSTEPS], rchunk[MAXSTEPS];
};

static size_t nslices(size_t len, size_t sf)
{
	return len ? (len + sf - 1) / sf : 1; /* an empty chunk still goes, as one empty message */
}

struct rop {
	int step;
	size_t k;
};

static uint64_t ring_run(const struct ring_plan *pl, double deadline, const char *what, int64_t *t_final)
{
	size_t sf = C.o.slice / 4, ns = 0, nr = 0;
	size_t sfirst[MAXSTEPS + 1], rfirst[MAXSTEPS + 1];
	struct rop *sops, *rops;
	void *sreq[MAXREQ], *rreq[MAXREQ];
	size_t sposted = 0, sdone = 0, rposted = 0, rdone = 0;
	float *tmp = C.buf[BUF_TMP];
	uint64_t bad_sizes = 0;

	for (int s = 0; s < pl->nsteps; s++) {
		sfirst[s] = ns;
		rfirst[s] = nr;
		ns += nslices(pl->slen[s], sf);
		nr += nslices(pl->rlen[s], sf);
	}
	sfirst[pl->nsteps] = ns;
	rfirst[pl->nsteps] = nr;
	sops = malloc(sizeof(*sops) * ns);
	rops = malloc(sizeof(*rops) * nr);
	if (!sops || !rops)
		die("out of memory");
	for (int s = 0; s < pl->nsteps; s++) {
		for (size_t k = 0; k < sfirst[s + 1] - sfirst[s]; k++)
			sops[sfirst[s] + k] = (struct rop){ s, k };
		for (size_t k = 0; k < rfirst[s + 1] - rfirst[s]; k++)
			rops[rfirst[s] + k] = (struct rop){ s, k };
	}
	while (sdone < ns || rdone < nr) {
		int progress = 0;

		while (rposted < nr && rposted - rdone < MAXREQ) {
			struct rop o = rops[rposted];
			size_t off = o.k * sf, len = pl->rlen[o.step] > off ? pl->rlen[o.step] - off : 0;
			void *dst;
			int b;

			if (len > sf)
				len = sf;
			if (pl->rgate[o.step] >= 0 && sfirst[pl->rgate[o.step]] + o.k >= sdone)
				break;
			if (pl->rreduce[o.step]) {
				dst = tmp + (rposted % MAXREQ) * sf;
				b = BUF_TMP;
			} else {
				dst = pl->rptr[o.step] + off;
				b = pl->rbuf[o.step];
			}
			if (!(rreq[rposted % MAXREQ] = post_recv(C.ring_recv, dst, len * 4, b, what)))
				break;
			rposted++;
			progress = 1;
		}
		while (sposted < ns && sposted - sdone < MAXREQ) {
			struct rop o = sops[sposted];
			size_t off = o.k * sf, len = pl->slen[o.step] > off ? pl->slen[o.step] - off : 0;

			if (len > sf)
				len = sf;
			if (o.step > 0 && rfirst[o.step - 1] + o.k >= rdone)
				break;
			if (!(sreq[sposted % MAXREQ] = post_send(C.ring_send, pl->sptr[o.step] + off, len * 4,
			                                          pl->sbuf[o.step], what)))
				break;
			sposted++;
			progress = 1;
		}
		while (rdone < rposted) {
			struct rop o = rops[rdone];
			size_t off = o.k * sf, len = pl->rlen[o.step] > off ? pl->rlen[o.step] - off : 0;
			int sz;

			if (len > sf)
				len = sf;
			if (!test_req(rreq[rdone % MAXREQ], &sz, what))
				break;
			if (sz != (int)(len * 4)) {
				if (!C.be)
					die("%s: step %d slice %zu (chunk %d) from rank %d: received %d bytes, expected %zu",
					    what, o.step, o.k, pl->rchunk[o.step], C.ring_recv->peer, sz, len * 4);
				bad_sizes++;
			}
			if (pl->rreduce[o.step]) {
				const float *t = tmp + (rdone % MAXREQ) * sf, *in = pl->rin[o.step] + off;
				float *d = pl->rptr[o.step] + off;

				for (size_t i = 0; i < len; i++)
					d[i] = t[i] + in[i];
			}
			rdone++;
			progress = 1;
			if (rdone == nr)
				*t_final = now_ns();
		}
		while (sdone < sposted) {
			if (!test_req(sreq[sdone % MAXREQ], NULL, what))
				break;
			sdone++;
			progress = 1;
		}
		if (!progress && idle(deadline)) {
			struct rop rs = rposted < nr ? rops[rposted] : (struct rop){ -1, 0 };
			struct rop ss = sposted < ns ? sops[sposted] : (struct rop){ -1, 0 };

			die("timed out after %.0f s in %s: receives from rank %d: %zu of %zu done, %zu posted (next: step "
			    "%d slice %zu); sends to rank %d: %zu of %zu done, %zu posted (next: step %d slice %zu)",
			    C.o.timeout, what, C.ring_recv->peer, rdone, nr, rposted, rs.step, rs.k, C.ring_send->peer,
			    sdone, ns, sposted, ss.step, ss.k);
		}
	}
	if (!nr)
		*t_final = now_ns();
	free(sops);
	free(rops);
	return bad_sizes;
}

/* Chunk c of a buffer of count floats cut in n: NCCL's way, ceil(count/n)
 * each and the rest last, so a small count leaves the last chunks short or
 * empty. */
static void chunk_of(size_t count, int n, int c, size_t *off, size_t *len)
{
	size_t each = (count + (size_t)n - 1) / (size_t)n, o = each * (size_t)c;

	*off = o < count ? o : count;
	*len = (o + each < count ? o + each : count) - *off;
}

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

static void plan_allreduce(struct ring_plan *pl, size_t count)
{
	int r = C.o.rank, n = C.o.nranks;
	float *in = C.buf[BUF_IN], *out = C.buf[BUF_OUT];
	size_t off, len;

	pl->nsteps = 2 * (n - 1);
	/* reduce-scatter: step s sends chunk r-s (partial sums, own input first),
	 * receives chunk r-s-1 and adds its own input: after step n-2, chunk
	 * r+1 is complete in out */
	for (int s = 0; s < n - 1; s++) {
		int sc = mod(r - s, n), rc = mod(r - s - 1, n);

		chunk_of(count, n, sc, &off, &len);
		pl->schunk[s] = sc;
		pl->sptr[s] = (s == 0 ? in : out) + off;
		pl->slen[s] = len;
		pl->sbuf[s] = s == 0 ? BUF_IN : BUF_OUT;
		chunk_of(count, n, rc, &off, &len);
		pl->rchunk[s] = rc;
		pl->rptr[s] = out + off;
		pl->rlen[s] = len;
		pl->rbuf[s] = BUF_OUT;
		pl->rreduce[s] = 1;
		pl->rin[s] = in + off;
		pl->rgate[s] = -1;
	}
	/* allgather: step t sends the complete chunk r+1-t, receives chunk r-t
	 * into out; that place was sent from at reduce-scatter step t (t >= 1) */
	for (int t = 0; t < n - 1; t++) {
		int s = n - 1 + t, sc = mod(r + 1 - t, n), rc = mod(r - t, n);

		chunk_of(count, n, sc, &off, &len);
		pl->schunk[s] = sc;
		pl->sptr[s] = out + off;
		pl->slen[s] = len;
		pl->sbuf[s] = BUF_OUT;
		chunk_of(count, n, rc, &off, &len);
		pl->rchunk[s] = rc;
		pl->rptr[s] = out + off;
		pl->rlen[s] = len;
		pl->rbuf[s] = BUF_OUT;
		pl->rreduce[s] = 0;
		pl->rin[s] = NULL;
		pl->rgate[s] = t >= 1 ? t : -1;
	}
}

/* allgather: each rank's per floats (its input's first) go to out at
 * per * rank; step s sends the block of rank r-s (its own from in), receives
 * that of rank r-s-1 into out */
static void plan_allgather(struct ring_plan *pl, size_t per)
{
	int r = C.o.rank, n = C.o.nranks;
	float *in = C.buf[BUF_IN], *out = C.buf[BUF_OUT];

	pl->nsteps = n - 1;
	for (int s = 0; s < n - 1; s++) {
		int sc = mod(r - s, n), rc = mod(r - s - 1, n);

		pl->schunk[s] = sc;
		pl->sptr[s] = s == 0 ? in : out + per * (size_t)sc;
		pl->slen[s] = per;
		pl->sbuf[s] = s == 0 ? BUF_IN : BUF_OUT;
		pl->rchunk[s] = rc;
		pl->rptr[s] = out + per * (size_t)rc;
		pl->rlen[s] = per;
		pl->rbuf[s] = BUF_OUT;
		pl->rreduce[s] = 0;
		pl->rin[s] = NULL;
		pl->rgate[s] = -1;
	}
}

/* reduce-scatter: the input is n blocks of per floats; step s sends block
 * r-s-1 (own input first, then partial sums in the scratch buffer),
 * receives block r-s-2 and adds its own: the last step's is block r,
 * complete, into out */
static void plan_reducescatter(struct ring_plan *pl, size_t per)
{
	int r = C.o.rank, n = C.o.nranks;
	float *in = C.buf[BUF_IN], *out = C.buf[BUF_OUT], *scr = C.buf[BUF_SCR];

	pl->nsteps = n - 1;
	for (int s = 0; s < n - 1; s++) {
		int sc = mod(r - s - 1, n), rc = mod(r - s - 2, n);

		pl->schunk[s] = sc;
		pl->sptr[s] = (s == 0 ? in : scr) + per * (size_t)sc;
		pl->slen[s] = per;
		pl->sbuf[s] = s == 0 ? BUF_IN : BUF_SCR;
		pl->rchunk[s] = rc;
		pl->rptr[s] = s == n - 2 ? out : scr + per * (size_t)rc;
		pl->rlen[s] = per;
		pl->rbuf[s] = s == n - 2 ? BUF_OUT : BUF_SCR;
		pl->rreduce[s] = 1;
		pl->rin[s] = in + per * (size_t)rc;
		pl->rgate[s] = -1;
	}
}

/* ---- the tree: a binary tree rooted at rank 0 (parent (r-1)/2, children
 * 2r+1 and 2r+2). The buffer goes in chunks of --tree-chunk bytes, up to
 * MAXREQ in flight on each comm: each chunk is reduced up (children's
 * chunks into slots, summed with this rank's input into out, sent to the
 * parent) and broadcast down (received from the parent into out once the
 * partial sum there has gone up, sent on to the children), chunk after
 * chunk, so both directions pipeline. */

static uint64_t tree_run(size_t count, double deadline, const char *what, int64_t *t_final)
{
	size_t tf = C.o.tchunk / 4, nch = count ? (count + tf - 1) / tf : 1;
	int nc = C.nchildren, root = C.o.rank == 0;
	float *in = C.buf[BUF_IN], *out = C.buf[BUF_OUT], *tmp = C.buf[BUF_TMP];
	size_t crpost[2] = { 0 }, crdone[2] = { 0 }, cspost[2] = { 0 }, csdone[2] = { 0 };
	size_t red = 0, upost = 0, udone = 0, dpost = 0, ddone = 0;
	void *crreq[2][MAXREQ], *csreq[2][MAXREQ], *ureq[MAXREQ], *dreq[MAXREQ];
	uint64_t bad_sizes = 0;
	int final_seen = 0;

#define CH_LEN(k) ((k) * tf < count ? ((count - (k) * tf) < tf ? count - (k) * tf : tf) : 0)
	for (;;) {
		int progress = 0, finished = 1;
		size_t final;

		for (int j = 0; j < nc; j++) {
			while (crpost[j] < nch && crpost[j] - crdone[j] < MAXREQ && crpost[j] - red < MAXREQ) {
				float *slot = tmp + ((size_t)j * MAXREQ + crpost[j] % MAXREQ) * tf;

				if (!(crreq[j][crpost[j] % MAXREQ] =
				              post_recv(C.tree_up_recv[j], slot, CH_LEN(crpost[j]) * 4, BUF_TMP, what)))
					break;
				crpost[j]++;
				progress = 1;
			}
			while (crdone[j] < crpost[j]) {
				int sz;

				if (!test_req(crreq[j][crdone[j] % MAXREQ], &sz, what))
					break;
				if (sz != (int)(CH_LEN(crdone[j]) * 4)) {
					if (!C.be)
						die("%s: chunk %zu from child rank %d: received %d bytes, expected %zu", what,
						    crdone[j], C.tree_up_recv[j]->peer, sz, CH_LEN(crdone[j]) * 4);
					bad_sizes++;
				}
				crdone[j]++;
				progress = 1;
			}
		}
		/* reduce every chunk all children have sent (a leaf sends its input as it is) */
		if (nc == 0)
			red = nch;
		while (red < nch && crdone[0] > red && (nc < 2 || crdone[1] > red)) {
			size_t off = red * tf, len = CH_LEN(red);
			const float *s0 = tmp + (red % MAXREQ) * tf, *s1 = tmp + (MAXREQ + red % MAXREQ) * tf;
			float *d = out + off;
			const float *x = in + off;

			if (nc == 2)
				for (size_t i = 0; i < len; i++)
					d[i] = x[i] + s0[i] + s1[i];
			else
				for (size_t i = 0; i < len; i++)
					d[i] = x[i] + s0[i];
			red++;
			progress = 1;
		}
		if (!root) {
			while (upost < red && upost - udone < MAXREQ) {
				int b = nc ? BUF_OUT : BUF_IN;
				float *src = (nc ? out : in) + upost * tf;

				if (!(ureq[upost % MAXREQ] = post_send(C.tree_up_send, src, CH_LEN(upost) * 4, b, what)))
					break;
				upost++;
				progress = 1;
			}
			while (udone < upost && test_req(ureq[udone % MAXREQ], NULL, what)) {
				udone++;
				progress = 1;
			}
			/* the final chunk lands where the partial sum went up from: after it went */
			while (dpost < nch && dpost - ddone < MAXREQ && (nc == 0 || dpost < udone)) {
				if (!(dreq[dpost % MAXREQ] =
				              post_recv(C.tree_down_recv, out + dpost * tf, CH_LEN(dpost) * 4, BUF_OUT, what)))
					break;
				dpost++;
				progress = 1;
			}
			while (ddone < dpost) {
				int sz;

				if (!test_req(dreq[ddone % MAXREQ], &sz, what))
					break;
				if (sz != (int)(CH_LEN(ddone) * 4)) {
					if (!C.be)
						die("%s: chunk %zu from parent rank %d: received %d bytes, expected %zu", what,
						    ddone, C.tree_down_recv->peer, sz, CH_LEN(ddone) * 4);
					bad_sizes++;
				}
				ddone++;
				progress = 1;
			}
		}
		final = root ? red : ddone;
		if (final == nch && !final_seen) {
			*t_final = now_ns();
			final_seen = 1;
		}
		for (int j = 0; j < nc; j++) {
			while (cspost[j] < final && cspost[j] - csdone[j] < MAXREQ) {
				if (!(csreq[j][cspost[j] % MAXREQ] = post_send(C.tree_down_send[j], out + cspost[j] * tf,
				                                                CH_LEN(cspost[j]) * 4, BUF_OUT, what)))
					break;
				cspost[j]++;
				progress = 1;
			}
			while (csdone[j] < cspost[j] && test_req(csreq[j][csdone[j] % MAXREQ], NULL, what)) {
				csdone[j]++;
				progress = 1;
			}
			finished &= csdone[j] == nch;
		}
		finished &= red == nch && (root || (udone == nch && ddone == nch));
		if (finished)
			break;
		if (!progress && idle(deadline))
			die("timed out after %.0f s in %s (%zu chunks): from children %d/%d: %zu/%zu received; reduced %zu; "
			    "up to parent %d: %zu posted, %zu done; down from parent: %zu posted, %zu done; down to "
			    "children: %zu/%zu done",
			    C.o.timeout, what, nch, nc > 0 ? C.tree_up_recv[0]->peer : -1,
			    nc > 1 ? C.tree_up_recv[1]->peer : -1, crdone[0], crdone[1], red,
			    root ? -1 : C.tree_up_send->peer, upost, udone, dpost, ddone, csdone[0], csdone[1]);
	}
#undef CH_LEN
	return bad_sizes;
}

/* ---- checking */

static uint64_t check_result(int coll, size_t size, const char *what)
{
	const float *out = C.buf[BUF_OUT];
	int n = C.o.nranks, r = C.o.rank;
	float sum = (float)(n * (n + 1) / 2);
	size_t count = size / 4, per = count / (size_t)n, m;
	uint64_t bad = 0;

	m = coll == COLL_ALLREDUCE ? count : coll == COLL_ALLGATHER ? per * (size_t)n : per;
	for (size_t i = 0; i < m; i++) {
		float want;

		if (coll == COLL_ALLREDUCE)
			want = (float)((i % 251) + 1) * sum;
		else if (coll == COLL_ALLGATHER)
			want = (float)((int)(i / per) + 1) * (float)(((i % per) % 251) + 1);
		else
			want = (float)(((per * (size_t)r + i) % 251) + 1) * sum;
		if (out[i] != want) { /* NaN (the poison) is never equal */
			if (!C.be)
				die("%s: element %zu: expected %.1f, got %.9g", what, i, (double)want, (double)out[i]);
			bad++;
		}
	}
	return bad;
}

/* ---- one collective, iterations */

static void add_row(const struct row *rw)
{
	if (C.nrows == C.rows_cap) {
		C.rows_cap = C.rows_cap ? 2 * C.rows_cap : 256;
		C.rows = realloc(C.rows, C.rows_cap * sizeof(*C.rows));
		if (!C.rows)
			die("out of memory");
	}
	C.rows[C.nrows++] = *rw;
}

static void run_coll(int coll, int algo, size_t size)
{
	size_t count = size / 4, per = count / (size_t)C.o.nranks;
	struct ring_plan pl;
	char what[160];

	memset(&pl, 0, sizeof(pl));
	if (algo == ALGO_RING) {
		if (coll == COLL_ALLREDUCE)
			plan_allreduce(&pl, count);
		else if (coll == COLL_ALLGATHER)
			plan_allgather(&pl, per);
		else
			plan_reducescatter(&pl, per);
	}
	for (int it = -C.o.warmup; it < C.o.iters; it++) {
		struct row rw = { .coll = coll, .algo = algo, .iter = it, .size = size };
		uint64_t lost0, bad;
		int64_t t0, t_final = 0;
		double deadline;

		snprintf(what, sizeof(what), "%s %s %zu bytes %s %d", coll_names[coll], algo_names[algo], size,
		         it < 0 ? "warm-up" : "iteration", it < 0 ? it + C.o.warmup : it);
		memset(C.buf[BUF_OUT], 0xff, size); /* NaN: whatever is not written fails the check */
		barrier(what);
		C.phase = what;
		lost0 = lost_now();
		t0 = now_ns();
		deadline = now_s() + C.o.timeout;
		if (algo == ALGO_TREE)
			bad = tree_run(count, deadline, what, &t_final);
		else {
			if (coll == COLL_ALLGATHER)
				memcpy((float *)C.buf[BUF_OUT] + per * (size_t)C.o.rank, C.buf[BUF_IN], per * 4);
			bad = ring_run(&pl, deadline, what, &t_final);
		}
		rw.time_ns = t_final - t0;
		rw.lost = lost_now() - lost0;
		rw.bad = bad + check_result(coll, size, what);
		add_row(&rw);
	}
}

/* ---- results: each rank's rows to DIR/times.R.csv; rank 0 merges */

static void write_rows(void)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/times.%d.csv", C.o.dir, C.o.rank);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die("cannot create %s: %s", tmp, strerror(errno));
	fprintf(f, "coll,algo,size,iter,time_ns,lost_bytes,bad_elems\n");
	for (size_t i = 0; i < C.nrows; i++) {
		const struct row *rw = &C.rows[i];

		fprintf(f, "%s,%s,%zu,%d,%" PRId64 ",%" PRIu64 ",%" PRIu64 "\n", coll_names[rw->coll],
		        algo_names[rw->algo], rw->size, rw->iter, rw->time_ns, rw->lost, rw->bad);
	}
	if (fclose(f))
		die("cannot write %s: %s", tmp, strerror(errno));
	if (rename(tmp, path))
		die("cannot rename %s: %s", tmp, strerror(errno));
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Until every rank has written its results (so has passed the final
 * barrier with all its sends complete), keep calling into the plugin: an
 * engine that runs only inside the plugin's calls (UROCE_NCCL_CORES=inline)
 * answers a peer's retransmission, or sends an ACK it held back, only
 * then, and a peer whose last send waits for that ACK would fail. The call
 * is the one NCCL's proxy repeats while a receiver is not ready: isend,
 * answered "not now" (no request) because the next rank posts no more
 * receives. Should a plugin take the message anyway, its request is
 * tested until done and not repeated. --no-linger leaves this out. */
static void linger(void)
{
	double deadline = now_s() + C.o.timeout;
	void *probe = NULL;
	int probed = 0;

	C.phase = "waiting for every rank to finish";
	for (int q = 0; q < C.o.nranks;) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/times.%d.csv", C.o.dir, q);
		if (!access(path, F_OK)) {
			q++;
			continue;
		}
		if (C.o.linger) {
			if (!probed && !probe && (probe = post_send(C.ring_send, C.buf[BUF_TOK], 4, BUF_TOK, C.phase)))
				probed = 1;
			if (probe && test_req(probe, NULL, C.phase))
				probe = NULL;
		}
		if (idle(deadline))
			die("timed out after %.0f s waiting for rank %d to finish (%s)", C.o.timeout, q, path);
		usleep(50);
	}
}

/* the rows of rank q, in the order every rank ran them */
static void read_rows(int q, struct row *rows)
{
	char path[PATH_MAX], line[256], cn[32], an[32];
	FILE *f = NULL;
	double deadline = now_s() + C.o.timeout;
	size_t i = 0;

	snprintf(path, sizeof(path), "%s/times.%d.csv", C.o.dir, q);
	C.phase = "gathering the results";
	while (!(f = fopen(path, "r"))) {
		if (idle(deadline))
			die("timed out after %.0f s waiting for rank %d's results (%s)", C.o.timeout, q, path);
		usleep(1000);
	}
	if (!fgets(line, sizeof(line), f))
		die("%s is empty", path);
	while (fgets(line, sizeof(line), f)) {
		struct row *rw = &rows[i];
		int64_t t;
		uint64_t lost, bad;
		size_t size;
		int iter;

		if (i >= C.nrows)
			die("%s has more rows than rank 0 ran (%zu)", path, C.nrows);
		if (sscanf(line, "%31[^,],%31[^,],%zu,%d,%" SCNd64 ",%" SCNu64 ",%" SCNu64, cn, an, &size, &iter, &t, &lost,
		           &bad) != 7 ||
		    strcmp(cn, coll_names[C.rows[i].coll]) || strcmp(an, algo_names[C.rows[i].algo]) ||
		    size != C.rows[i].size || iter != C.rows[i].iter)
			die("%s row %zu is not what rank 0 ran: %s", path, i + 1, line);
		*rw = C.rows[i];
		rw->time_ns = t;
		rw->lost = lost;
		rw->bad = bad;
		i++;
	}
	fclose(f);
	if (i != C.nrows)
		die("%s has %zu rows, rank 0 ran %zu", path, i, C.nrows);
}

static int merge_and_report(void)
{
	int n = C.o.nranks, failed = 0;
	struct row *all = calloc((size_t)n * (C.nrows ? C.nrows : 1), sizeof(*all));
	struct row *m = calloc(C.nrows ? C.nrows : 1, sizeof(*m));
	int64_t *ts = calloc(C.nrows ? C.nrows : 1, sizeof(*ts));
	FILE *csv = NULL;

	if (!all || !m || !ts)
		die("out of memory");
	for (int q = 0; q < n; q++)
		read_rows(q, all + (size_t)q * C.nrows);
	/* an iteration's time: the slowest rank's; lost bytes and bad elements: summed */
	for (size_t i = 0; i < C.nrows; i++) {
		m[i] = C.rows[i];
		m[i].time_ns = 0;
		m[i].lost = m[i].bad = 0;
		for (int q = 0; q < n; q++) {
			const struct row *x = &all[(size_t)q * C.nrows + i];

			if (x->time_ns > m[i].time_ns)
				m[i].time_ns = x->time_ns;
			m[i].lost += x->lost;
			m[i].bad += x->bad;
		}
		if (m[i].bad && !m[i].lost) {
			fprintf(stderr,
			        "nccl_coll: FAIL: %s %s %zu bytes %s %d: %" PRIu64 " wrong elements though no rank lost a "
			        "byte\n",
			        coll_names[m[i].coll], algo_names[m[i].algo], m[i].size, m[i].iter < 0 ? "warm-up" : "iteration",
			        m[i].iter < 0 ? m[i].iter + C.o.warmup : m[i].iter, m[i].bad);
			failed = 1;
		}
	}
	if (C.o.csv) {
		struct stat st;
		int fresh = stat(C.o.csv, &st) || st.st_size == 0;

		csv = fopen(C.o.csv, "a");
		if (!csv)
			die("cannot open --csv %s: %s", C.o.csv, strerror(errno));
		if (fresh)
			fprintf(csv, "coll,algo,nranks,size,iter,time_us,lost_bytes\n");
	}
	printf("%-13s %-4s %6s %10s %6s %10s %10s %10s %10s %12s %10s %9s\n", "coll", "algo", "nranks", "size", "iters",
	       "mean_us", "p50_us", "p99_us", "max_us", "lost_bytes", "bad_elems", "busbw_GBps");
	for (size_t i = 0; i < C.nrows;) {
		size_t j = i, k = 0;
		uint64_t lost = 0, bad = 0;
		double mean = 0, busbw, fac;

		while (j < C.nrows && m[j].coll == m[i].coll && m[j].algo == m[i].algo && m[j].size == m[i].size)
			j++;
		for (size_t x = i; x < j; x++) {
			if (m[x].iter < 0)
				continue;
			ts[k++] = m[x].time_ns;
			mean += (double)m[x].time_ns;
			lost += m[x].lost;
			bad += m[x].bad;
			if (csv)
				fprintf(csv, "%s,%s,%d,%zu,%d,%.3f,%" PRIu64 "\n", coll_names[m[x].coll], algo_names[m[x].algo],
				        n, m[x].size, m[x].iter, (double)m[x].time_ns / 1e3, m[x].lost);
		}
		mean /= (double)k;
		qsort(ts, k, sizeof(*ts), cmp_i64);
		fac = m[i].coll == COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
		busbw = mean > 0 ? (double)m[i].size / mean * fac : 0; /* bytes per ns = GB/s */
		printf("%-13s %-4s %6d %10zu %6zu %10.1f %10.1f %10.1f %10.1f %12" PRIu64 " %10" PRIu64 " %9.3f\n",
		       coll_names[m[i].coll], algo_names[m[i].algo], n, m[i].size, k, mean / 1e3,
		       (double)ts[(k + 1) / 2 - 1] / 1e3, (double)ts[(size_t)ceil(0.99 * (double)k) - 1] / 1e3,
		       (double)ts[k - 1] / 1e3, lost, bad, busbw);
		i = j;
	}
	fflush(stdout);
	if (csv && fclose(csv))
		die("cannot write --csv %s: %s", C.o.csv, strerror(errno));
	free(all);
	free(m);
	free(ts);
	return failed;
}

/* ---- teardown: deregMr, the comms (this rank's own order: odd ranks
 * close their send comms first, even ranks their receive comms), the
 * listen comms, finalize, dlclose */

static void teardown(void)
{
	C.phase = "tearing down";
	for (int i = 0; i < C.nconns; i++)
		for (int b = 0; b < NBUF; b++)
			if (C.conns[i].mh[b])
				check(netp_deregmr(&C.p, C.conns[i].comm, C.conns[i].mh[b]), "deregMr", C.conns[i].hpath);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < C.nconns; i++) {
			struct conn *c = &C.conns[i];

			if (c->is_send != ((C.o.rank + pass) & 1))
				continue;
			check(c->is_send ? netp_close_send(&C.p, c->comm) : netp_close_recv(&C.p, c->comm),
			      c->is_send ? "closeSend" : "closeRecv", c->hpath);
			c->comm = NULL;
		}
	for (int i = 0; i < C.nconns; i++)
		if (C.conns[i].lcomm)
			check(netp_close_listen(&C.p, C.conns[i].lcomm), "closeListen", C.conns[i].hpath);
	check(netp_finalize(&C.p), "finalize", "teardown");
	netp_close(&C.p);
	for (int b = 0; b < NBUF; b++)
		free(C.buf[b]);
	free(C.rows);
}

int main(int argc, char **argv)
{
	char err[512];
	int ndev, failed = 0, want_tree;
	struct netp_props pr;
	const char *rel = getenv("UROCE_NCCL_RELIABILITY");
	double t0 = now_s();

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv, &C.o);
	C.be = rel && !strcmp(rel, "be");
	want_tree = (C.o.coll_mask & (1 << COLL_ALLREDUCE)) && (C.o.algo_mask & (1 << ALGO_TREE));
	C.phase = "opening the plugin";
	if (netp_open(&C.p, C.o.plugin, C.o.version, err, sizeof(err)))
		die("cannot open the net plugin '%s': %s", C.o.plugin, err);
	check(netp_init(&C.p, 0x636f6c6c00000000ULL), "init", "opening the plugin");
	check(netp_devices(&C.p, &ndev), "devices", "opening the plugin");
	if (C.o.dev >= ndev)
		die("--dev %d: the plugin has %d device(s)", C.o.dev, ndev);
	check(netp_props(&C.p, C.o.dev, &pr), "getProperties", "opening the plugin");
	if (!(pr.ptr_support & NCCL_PTR_HOST))
		die("device %d (%s) does not take host memory (ptrSupport %#x)", C.o.dev, pr.name, pr.ptr_support);
	/* no message above what the device takes */
	if (pr.max_p2p_bytes && C.o.slice > pr.max_p2p_bytes)
		C.o.slice = pr.max_p2p_bytes & ~(size_t)3;
	if (pr.max_coll_bytes && C.o.slice > pr.max_coll_bytes)
		C.o.slice = pr.max_coll_bytes & ~(size_t)3;
	if (pr.max_p2p_bytes && C.o.tchunk > pr.max_p2p_bytes)
		C.o.tchunk = pr.max_p2p_bytes & ~(size_t)3;
	if (C.o.rank == 0)
		printf("nccl_coll: %s ncclNetPlugin_v%d, device %d '%s' (%d Mb/s, maxComms %d, maxRecvs %d), %d ranks, "
		       "reliability %s%s, slice %zu B, tree chunk %zu B\n",
		       C.p.path, C.p.version, C.o.dev, pr.name, pr.speed, pr.max_comms, pr.max_recvs, C.o.nranks,
		       rel ? rel : "(plugin default)", C.p.lost_bytes ? "" : " (no uroceNcclLostBytes)", C.o.slice,
		       C.o.tchunk);
	setup_conns(want_tree);
	setup_buffers();
	if (C.o.rank == 0)
		printf("nccl_coll: %d comms connected and registered in %.2f s\n", C.nconns, now_s() - t0);
	for (int coll = 0; coll < NCOLL; coll++)
		for (int algo = 0; algo < NALGO; algo++) {
			if (!(C.o.coll_mask & (1 << coll)) || !(C.o.algo_mask & (1 << algo)))
				continue;
			if (algo == ALGO_TREE && coll != COLL_ALLREDUCE)
				continue;
			for (int s = 0; s < C.o.nsizes; s++)
				run_coll(coll, algo, C.o.sizes[s]);
		}
	/* nobody closes a comm before every rank is done with all of them */
	barrier("teardown");
	write_rows();
	linger();
	if (C.o.rank == 0)
		failed = merge_and_report();
	teardown();
	if (C.o.rank == 0)
		printf("nccl_coll: %s in %.2f s\n", failed ? "FAIL" : "done", now_s() - t0);
	return failed;
}
