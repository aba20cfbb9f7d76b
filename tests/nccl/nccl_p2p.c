/* SPDX-License-Identifier: MIT */
/* Drives an NCCL net plugin as NCCL's proxy does, between two processes
 * (two network namespaces): the plugin is resolved and dlopen()ed by
 * NCCL's rules and one exported version's table is used for everything
 * (nccl_load.c). Handles go through files in DIR (the side channel).
 *
 *   nccl_p2p --side a|b --dir DIR --plugin NAME [--version 8..12]
 *            [--max-size BYTES] [--comms N] [--msgs N] [--timeout S]
 *
 * Both sides listen on N comms and connect to the other's N, all retried
 * without blocking in one loop; then, with data checked byte for byte:
 *   sizes    a to b on comm 0, one at a time, every size of the list from 0
 *            to --max-size (1 GiB = NCCL's MAX_NET_SIZE by default), into
 *            a receive buffer 4 KiB larger whose tail must stay untouched
 *            (the largest into an exact fit); test() must give the size
 *   pipeline both directions on every comm at once, 8 requests in flight
 *            per comm, --msgs messages of 0..256 KiB, tags varying
 *   grouped  irecv of 8 buffers with 8 tags; the sender sends them in a
 *            shuffled order, each smaller than its buffer
 * then every comm is closed in a shuffled order, listens too, finalize.
 * Exit 0 when all checks held; 1 with the first failure; 2 on bad
 * arguments. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "nccl_load.h"

#define MAXC 64
#define DEPTH 8      /* NCCL_STEPS: requests in flight per comm */
#define GROUP 8
#define PIPE_MAX (256u << 10)

static struct netp P;
static double deadline;
static const char *side_name;
static int be_zeroes;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "nccl_p2p %s: FAIL: ", side_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define CHECK(call)                                                                                                    \
	do {                                                                                                           \
		ncclResult_t r_ = (call);                                                                              \
		if (r_ != ncclSuccess)                                                                                 \
			die("%s returned %d", #call, (int)r_);                                                         \
	} while (0)

static void check_time(const char *what)
{
	if (now() > deadline)
		die("timed out waiting for %s", what);
}

/* The byte pattern of message `seed`: 8 bytes at a time. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	size_t i = 0;
	uint64_t k = mix(seed);

	for (; i + 8 <= n; i += 8) {
		uint64_t w = k ^ (i * 0x100000001b3ull);

		memcpy(b + i, &w, 8);
	}
	for (; i < n; i++)
		b[i] = (uint8_t)(k >> (8 * (i % 8))) ^ (uint8_t)i;
}

static void verify(const uint8_t *b, size_t n, uint64_t seed, const char *what)
{
	size_t i = 0;
	uint64_t k = mix(seed);

	for (; i + 8 <= n; i += 8) {
		uint64_t w = k ^ (i * 0x100000001b3ull), g;

		memcpy(&g, b + i, 8);
		if (g != w)
			die("%s: bytes %zu..%zu of %zu differ (got %016" PRIx64 ", want %016" PRIx64 ")", what, i, i + 7,
			    n, g, w);
	}
	for (; i < n; i++)
		if (b[i] != (uint8_t)((uint8_t)(k >> (8 * (i % 8))) ^ (uint8_t)i))
			die("%s: byte %zu of %zu differs", what, i, n);
}

static void *big_alloc(size_t n)
{
	void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap of %zu bytes: %s", n, strerror(errno));
	return p;
}

static void write_handles(const char *dir, const char *side, uint8_t (*h)[NCCL_NET_HANDLE_MAXSIZE], int n)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/handles.%s.tmp", dir, side);
	snprintf(path, sizeof(path), "%s/handles.%s", dir, side);
	f = fopen(tmp, "w");
	if (!f || fwrite(h, NCCL_NET_HANDLE_MAXSIZE, (size_t)n, f) != (size_t)n || fclose(f) || rename(tmp, path))
		die("cannot write %s", path);
}

static void read_handles(const char *dir, const char *side, uint8_t (*h)[NCCL_NET_HANDLE_MAXSIZE], int n)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/handles.%s", dir, side);
	for (;;) {
		FILE *f = fopen(path, "r");

		if (f) {
			size_t got = fread(h, NCCL_NET_HANDLE_MAXSIZE, (size_t)n, f);

			fclose(f);
			if (got == (size_t)n)
				return;
			die("%s holds %zu handles, want %d", path, got, n);
		}
		check_time("the peer's handles");
		usleep(10000);
	}
}

struct comm_pair {
	void *send, *recv, *lc;
	uint8_t *sbuf, *rbuf; /* DEPTH slots each */
	void *smh, *rmh;
	void *sreq[DEPTH], *rreq[DEPTH];
	int smsg[DEPTH], rmsg[DEPTH];
	int sent_posted, sent_done, recv_posted, recv_done;
};

static int nc;
static struct comm_pair cp[MAXC];

/* Message i of comm c in direction dir (0 = a to b): its size and tag. */
static size_t pipe_size(int c, int dir, int i)
{
	uint64_t r = mix(((uint64_t)c << 40) ^ ((uint64_t)dir << 32) ^ (uint64_t)i);

	switch (r % 5) {
	case 0: return 0;
	case 1: return r % 64;
	case 2: return (r >> 8) % 4096;
	default: return (r >> 8) % PIPE_MAX;
	}
}

static int pipe_tag(int i)
{
	return 1 + i % 7;
}

static uint64_t pipe_seed(int c, int dir, int i)
{
	return ((uint64_t)c << 48) ^ ((uint64_t)dir << 40) ^ (uint64_t)i ^ 0xabcdef;
}

static void connect_all(const char *dir, int is_a)
{
	uint8_t mine[MAXC][NCCL_NET_HANDLE_MAXSIZE], theirs[MAXC][NCCL_NET_HANDLE_MAXSIZE];
	int left;

	for (int c = 0; c < nc; c++)
		CHECK(netp_listen(&P, 0, mine[c], &cp[c].lc));
	write_handles(dir, is_a ? "a" : "b", mine, nc);
	read_handles(dir, is_a ? "b" : "a", theirs, nc);
	/* every connect and accept in one loop: neither side waits on one
	 * while the other waits on another */
	do {
		left = 0;
		for (int c = 0; c < nc; c++) {
			if (!cp[c].send) {
				CHECK(netp_connect(&P, 0, theirs[c], &cp[c].send));
				left += !cp[c].send;
			}
			if (!cp[c].recv) {
				CHECK(netp_accept(&P, cp[c].lc, &cp[c].recv));
				left += !cp[c].recv;
			}
		}
		if (left)
			check_time("connect and accept");
	} while (left);
}

static void pipeline(int is_a, int msgs)
{
	int dir_s = is_a ? 0 : 1, dir_r = is_a ? 1 : 0, busy;

	for (int c = 0; c < nc; c++) {
		struct comm_pair *p = &cp[c];

		p->sbuf = big_alloc((size_t)DEPTH * PIPE_MAX);
		p->rbuf = big_alloc((size_t)DEPTH * PIPE_MAX);
		CHECK(netp_regmr(&P, p->send, p->sbuf, (size_t)DEPTH * PIPE_MAX, NCCL_PTR_HOST, &p->smh));
		CHECK(netp_regmr(&P, p->recv, p->rbuf, (size_t)DEPTH * PIPE_MAX, NCCL_PTR_HOST, &p->rmh));
	}
	do {
		busy = 0;
		for (int c = 0; c < nc; c++) {
			struct comm_pair *p = &cp[c];

			/* post: message i uses slot i % DEPTH, at most DEPTH in flight */
			while (p->recv_posted < msgs && p->recv_posted - p->recv_done < DEPTH) {
				int i = p->recv_posted, s = i % DEPTH, tag = pipe_tag(i);
				void *d = p->rbuf + (size_t)s * PIPE_MAX, *req = NULL;
				size_t sz = PIPE_MAX;

				CHECK(netp_irecv(&P, p->recv, 1, &d, &sz, &tag, &p->rmh, &req));
				if (!req)
					break;
				p->rreq[s] = req;
				p->rmsg[s] = i;
				p->recv_posted++;
			}
			while (p->sent_posted < msgs && p->sent_posted - p->sent_done < DEPTH) {
				int i = p->sent_posted, s = i % DEPTH;
				uint8_t *d = p->sbuf + (size_t)s * PIPE_MAX;
				size_t sz = pipe_size(c, dir_s, i);
				void *req = NULL;

				fill(d, sz, pipe_seed(c, dir_s, i));
				CHECK(netp_isend(&P, p->send, d, sz, pipe_tag(i), p->smh, &req));
				if (!req)
					break;
				p->sreq[s] = req;
				p->smsg[s] = i;
				p->sent_posted++;
			}
			/* complete in order, as NCCL's proxy tests its oldest step */
			if (p->recv_done < p->recv_posted) {
				int s = p->recv_done % DEPTH, done = 0, size = -1, i = p->rmsg[s];

				CHECK(netp_test(&P, p->rreq[s], &done, &size));
				if (done) {
					char what[64];

					if ((size_t)size != pipe_size(c, dir_r, i))
						die("pipeline comm %d message %d: test() gave %d bytes, sent %zu", c, i, size,
						    pipe_size(c, dir_r, i));
					snprintf(what, sizeof(what), "pipeline comm %d message %d", c, i);
					verify(p->rbuf + (size_t)s * PIPE_MAX, (size_t)size, pipe_seed(c, dir_r, i), what);
					p->recv_done++;
				}
			}
			if (p->sent_done < p->sent_posted) {
				int s = p->sent_done % DEPTH, done = 0, size = -1;

				CHECK(netp_test(&P, p->sreq[s], &done, &size));
				if (done) {
					if ((size_t)size != pipe_size(c, dir_s, p->smsg[s]))
						die("pipeline comm %d send %d: test() gave %d bytes", c, p->smsg[s], size);
					p->sent_done++;
				}
			}
			busy |= p->recv_done < msgs || p->sent_done < msgs;
		}
		if (busy)
			check_time("pipelined messages");
	} while (busy);
	for (int c = 0; c < nc; c++) {
		CHECK(netp_deregmr(&P, cp[c].send, cp[c].smh));
		CHECK(netp_deregmr(&P, cp[c].recv, cp[c].rmh));
		munmap(cp[c].sbuf, (size_t)DEPTH * PIPE_MAX);
		munmap(cp[c].rbuf, (size_t)DEPTH * PIPE_MAX);
	}
	printf("%s: pipeline: %d messages each way on each of %d comms, %d in flight, checked\n", side_name, msgs, nc,
	       DEPTH);
}

static void wait_req(void *req, int *sizes, const char *what)
{
	int done = 0;

	while (!done) {
		CHECK(netp_test(&P, req, &done, sizes));
		if (!done)
			check_time(what);
	}
}

/* a sends to b on comm 0: every size of the list. */
static void sizes_test(int is_a, size_t max)
{
	size_t list[64];
	int n = 0;
	const size_t base[] = { 0, 1, 2, 3, 7, 8, 63, 64, 1023, 1024, 1025, 4095, 4096, 4097, 65535, 65536, 65537 };

	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		if (base[i] <= max)
			list[n++] = base[i];
	for (size_t s = 1u << 18; s < max && n < 60; s <<= 2) {
		list[n++] = s + 13; /* not a multiple of the MTU */
	}
	if (max > 65537)
		list[n++] = max;
	size_t cap = max + 4096;
	uint8_t *buf = big_alloc(cap);
	void *mh = NULL, *comm = is_a ? cp[0].send : cp[0].recv;

	CHECK(netp_regmr(&P, comm, buf, cap, NCCL_PTR_HOST, &mh));
	for (int k = 0; k < n; k++) {
		size_t sz = list[k], rsz = sz == max ? sz : sz + 4096;
		void *req = NULL, *d = buf;
		int got = -1, tag = 99;
		double t0 = now();
		char what[64];

		snprintf(what, sizeof(what), "the message of %zu bytes", sz);
		if (is_a) {
			fill(buf, sz, 0x5eed0000u + (uint64_t)sz);
			do {
				CHECK(netp_isend(&P, comm, buf, sz, tag, mh, &req));
				if (!req)
					check_time("the receiver's CTS");
			} while (!req);
			wait_req(req, &got, what);
			if ((size_t)got != sz)
				die("sizes: the send of %zu bytes reported %d", sz, got);
		} else {
			memset(buf + sz, 0xa5, rsz - sz);
			do {
				CHECK(netp_irecv(&P, comm, 1, &d, &rsz, &tag, &mh, &req));
				if (!req)
					check_time("posting a receive");
			} while (!req);
			wait_req(req, &got, what);
			if ((size_t)got != sz)
				die("sizes: test() gave %d bytes for a message of %zu", got, sz);
			verify(buf, sz, 0x5eed0000u + (uint64_t)sz, what);
			/* uroce's be zeroes a receive buffer before naming it (what a
			 * deadline cuts reads as zero): its tail is then 0 */
			for (size_t j = sz; j < rsz; j++)
				if (buf[j] != (be_zeroes ? 0 : 0xa5))
					die("sizes: the message of %zu bytes wrote byte %zu of its %zu-byte buffer", sz, j, rsz);
		}
		if (sz >= (64u << 20))
			printf("%s: %zu bytes in %.2f s\n", side_name, sz, now() - t0);
	}
	CHECK(netp_deregmr(&P, comm, mh));
	munmap(buf, cap);
	printf("%s: sizes: %d sizes from 0 to %zu bytes, checked\n", side_name, n, max);
}

/* b receives 8 buffers in one irecv; a sends them in a shuffled order. */
static void grouped_test(int is_a, int rounds)
{
	const size_t slot = 96u << 10;
	uint8_t *buf = big_alloc(GROUP * slot);
	void *mh = NULL, *comm = is_a ? cp[0].send : cp[0].recv;

	CHECK(netp_regmr(&P, comm, buf, GROUP * slot, NCCL_PTR_HOST, &mh));
	for (int r = 0; r < rounds; r++) {
		int tags[GROUP], order[GROUP];
		size_t sizes[GROUP];
		void *data[GROUP], *mhs[GROUP];

		for (int j = 0; j < GROUP; j++) {
			tags[j] = 1000 + r * GROUP + j;
			sizes[j] = (size_t)(mix((uint64_t)r * 31 + (uint64_t)j) % slot); /* the message */
			data[j] = buf + (size_t)j * slot;
			mhs[j] = mh;
			order[j] = j;
		}
		for (int j = GROUP - 1; j > 0; j--) {
			int k = (int)(mix((uint64_t)r * 77 + (uint64_t)j) % (uint64_t)(j + 1)), t = order[j];

			order[j] = order[k];
			order[k] = t;
		}
		if (is_a) {
			void *reqs[GROUP];

			for (int q = 0; q < GROUP; q++) {
				int j = order[q];

				fill(data[j], sizes[j], (uint64_t)tags[j]);
				reqs[q] = NULL;
				do {
					CHECK(netp_isend(&P, comm, data[j], sizes[j], tags[j], mh, &reqs[q]));
					if (!reqs[q])
						check_time("the grouped receive's CTS");
				} while (!reqs[q]);
			}
			for (int q = 0; q < GROUP; q++) {
				int got = -1;

				wait_req(reqs[q], &got, "a grouped send");
				if ((size_t)got != sizes[order[q]])
					die("grouped: a send reported %d bytes", got);
			}
		} else {
			size_t cap[GROUP];
			int got[GROUP];
			void *req = NULL;

			for (int j = 0; j < GROUP; j++)
				cap[j] = slot;
			do {
				CHECK(netp_irecv(&P, comm, GROUP, data, cap, tags, mhs, &req));
				if (!req)
					check_time("posting a grouped receive");
			} while (!req);
			wait_req(req, got, "a grouped receive");
			for (int j = 0; j < GROUP; j++) {
				char what[64];

				if ((size_t)got[j] != sizes[j])
					die("grouped round %d: buffer %d (tag %d) got %d bytes, sent %zu", r, j, tags[j], got[j],
					    sizes[j]);
				snprintf(what, sizeof(what), "grouped round %d buffer %d", r, j);
				verify(data[j], sizes[j], (uint64_t)tags[j], what);
			}
		}
	}
	CHECK(netp_deregmr(&P, comm, mh));
	munmap(buf, GROUP * slot);
	printf("%s: grouped: %d rounds of %d tagged receives in one irecv, sent in shuffled order, checked\n",
	       side_name, rounds, GROUP);
}

/* Both sides meet: a tiny message each way on comm 0. */
static void meet(void)
{
	static uint8_t b[2][8];
	void *ms = NULL, *mr = NULL, *rs = NULL, *rr = NULL, *d = b[1];
	size_t sz = 8;
	int tag = 7, got;

	CHECK(netp_regmr(&P, cp[0].send, b[0], 8, NCCL_PTR_HOST, &ms));
	CHECK(netp_regmr(&P, cp[0].recv, b[1], 8, NCCL_PTR_HOST, &mr));
	while (!rr) {
		CHECK(netp_irecv(&P, cp[0].recv, 1, &d, &sz, &tag, &mr, &rr));
		check_time("posting the meeting receive");
	}
	while (!rs) {
		CHECK(netp_isend(&P, cp[0].send, b[0], 8, tag, ms, &rs));
		if (!rs)
			check_time("the peer's meeting receive");
	}
	wait_req(rs, &got, "the meeting send");
	wait_req(rr, &got, "the meeting receive");
	CHECK(netp_deregmr(&P, cp[0].send, ms));
	CHECK(netp_deregmr(&P, cp[0].recv, mr));
}

static void usage(const char *msg)
{
	fprintf(stderr,
	        "nccl_p2p: %s\nusage: nccl_p2p --side a|b --dir DIR --plugin NAME [--version 8..12] [--max-size BYTES] "
	        "[--comms 1..%d] [--msgs N] [--timeout S]\n",
	        msg, MAXC);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "side", required_argument, NULL, 's' },     { "dir", required_argument, NULL, 'd' },
		{ "plugin", required_argument, NULL, 'p' },   { "version", required_argument, NULL, 'v' },
		{ "max-size", required_argument, NULL, 'm' }, { "comms", required_argument, NULL, 'c' },
		{ "msgs", required_argument, NULL, 'n' },     { "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *plugin = NULL, *side = NULL;
	int version = 0, msgs = 300, opt, ndev = 0, is_a;
	size_t max = MAX_NET_SIZE;
	double timeout = 120;
	char err[512];
	struct netp_props pr;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end = NULL;

		switch (opt) {
		case 's': side = optarg; break;
		case 'd': dir = optarg; break;
		case 'p': plugin = optarg; break;
		case 'v':
			version = (int)strtol(optarg, &end, 10);
			if (*end || version < 8 || version > 12)
				usage("--version takes 8, 9, 10, 11 or 12");
			break;
		case 'm':
			max = strtoull(optarg, &end, 0);
			if (*end || max > MAX_NET_SIZE)
				usage("--max-size takes bytes up to 1073741824 (NCCL's MAX_NET_SIZE)");
			break;
		case 'c':
			nc = (int)strtol(optarg, &end, 10);
			if (*end || nc < 1 || nc > MAXC)
				usage("--comms takes 1..64");
			break;
		case 'n':
			msgs = (int)strtol(optarg, &end, 10);
			if (*end || msgs < 1 || msgs > 1000000)
				usage("--msgs takes 1..1000000");
			break;
		case 't':
			timeout = strtod(optarg, &end);
			if (*end || timeout <= 0)
				usage("--timeout takes seconds > 0");
			break;
		default: usage("unknown option");
		}
	}
	if (!side || (strcmp(side, "a") && strcmp(side, "b")) || !dir || !plugin)
		usage("--side a|b, --dir and --plugin are required");
	if (!nc)
		nc = 4;
	setvbuf(stdout, NULL, _IOLBF, 0);
	be_zeroes = getenv("UROCE_NCCL_RELIABILITY") && !strcmp(getenv("UROCE_NCCL_RELIABILITY"), "be");
	is_a = !strcmp(side, "a");
	side_name = is_a ? "a" : "b";
	deadline = now() + timeout;
	if (netp_open(&P, plugin, version, err, sizeof(err)))
		die("opening the plugin %s: %s", plugin, err);
	printf("%s: %s, ncclNetPlugin_v%d\n", side_name, P.path, P.version);
	CHECK(netp_init(&P, 0x1234));
	CHECK(netp_devices(&P, &ndev));
	if (ndev < 1)
		die("the plugin has %d devices", ndev);
	CHECK(netp_props(&P, 0, &pr));
	printf("%s: device 0 %s: speed %d Mb/s, ptrSupport %#x, regIsGlobal %d, maxComms %d, maxRecvs %d, "
	       "maxP2pBytes %zu\n",
	       side_name, pr.name, pr.speed, pr.ptr_support, pr.reg_is_global, pr.max_comms, pr.max_recvs,
	       pr.max_p2p_bytes);
	if (!pr.name[0] || !(pr.ptr_support & NCCL_PTR_HOST) || pr.max_recvs < GROUP || pr.max_comms < nc ||
	    pr.speed <= 0 || (P.version >= 9 && pr.max_p2p_bytes < max))
		die("device 0's properties do not allow this test");
	if (netp_props(&P, ndev, &pr) == ncclSuccess)
		die("getProperties of device %d (past the last) succeeded", ndev);
	connect_all(dir, is_a);
	printf("%s: %d comms each way connected\n", side_name, nc);
	meet();
	sizes_test(is_a, max);
	pipeline(is_a, msgs);
	grouped_test(is_a, 20);
	meet(); /* neither side closes while the other still needs it */
	/* close in a shuffled order: sends, receives and listens mixed */
	{
		int order[3 * MAXC], n = 3 * nc;

		for (int i = 0; i < n; i++)
			order[i] = i;
		for (int i = n - 1; i > 0; i--) {
			int k = (int)(mix((uint64_t)i + (is_a ? 100 : 200)) % (uint64_t)(i + 1)), t = order[i];

			order[i] = order[k];
			order[k] = t;
		}
		for (int i = 0; i < n; i++) {
			int c = order[i] / 3, what = order[i] % 3;

			if (what == 0)
				CHECK(netp_close_send(&P, cp[c].send));
			else if (what == 1)
				CHECK(netp_close_recv(&P, cp[c].recv));
			else
				CHECK(netp_close_listen(&P, cp[c].lc));
		}
	}
	CHECK(netp_finalize(&P));
	netp_close(&P);
	printf("%s: PASS (v%d)\n", side_name, version ? version : 12);
	return 0;
}
