/* SPDX-License-Identifier: MIT */
/* One QP pair across two processes in two network namespaces (ns_pair.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ns_pair.h"

const char *ns_name = "ns_pair";
static uint32_t *cur_failed; /* marked by ns_die */
static const char *cur_role;   /* set by ns_tag_role */
static uint64_t t_base;
static int schedstat_fd = -1;

#define NS_GID_INDEX 1 /* a port's first IPv4-mapped GID (index 0 is fe80::) */
#define NS_MAX_DEVS_LEN 256

static double since_start_s(void)
{
	return t_base ? (double)(ns_now_ns() - t_base) / 1e9 : 0.0;
}

void ns_fail_word(uint32_t *failed)
{
	cur_failed = failed;
}

void ns_tag_role(const struct ns_end *e)
{
	cur_role = e->name;
}

void ns_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	if (cur_role)
		fprintf(stderr, "%s[%s]: t=%.3f FAIL: ", ns_name, cur_role, since_start_s());
	else
		fprintf(stderr, "%s: ", ns_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cur_failed)
		ns_put(cur_failed, 1);
	exit(1);
}

void ns_die_rc(int rc, const char *what)
{
	ns_die("%s: %s%s%s", what, uroce_strerror(rc), *uroce_last_error() ? ": " : "", uroce_last_error());
}

void ns_say(const char *fmt, ...)
{
	va_list ap;

	printf("%s[%s]: t=%.3f ", ns_name, cur_role ? cur_role : "?", since_start_s());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

uint64_t ns_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ns_put(uint32_t *w, uint32_t v)
{
	__atomic_store_n(w, v, __ATOMIC_RELEASE);
}

uint32_t ns_get(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

void *ns_map(const char *path, size_t size)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDWR | O_CREAT, 0600);

	if (fd < 0)
		ns_die("cannot open the shared file %s: %s", path, strerror(errno));
	/* both ends may get here first: the file only ever grows, so the
	 * other's mapping stays inside it */
	if (fstat(fd, &st) || ((size_t)st.st_size < size && ftruncate(fd, (off_t)size)))
		ns_die("cannot size the shared file %s to %zu bytes: %s", path, size, strerror(errno));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		ns_die("cannot map the shared file %s: %s", path, strerror(errno));
	return p;
}

void ns_progress(struct ns_end *e)
{
	int rc = uroce_progress(e->ctx);

	if (rc < 0)
		ns_die_rc(rc, "transport");
}

uint64_t ns_run_delay_ns(void)
{
	char b[128];
	unsigned long long cpu, delay;
	ssize_t n;

	if (schedstat_fd < 0)
		schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY);
	if (schedstat_fd < 0 || (n = pread(schedstat_fd, b, sizeof(b) - 1, 0)) <= 0)
		return 0;
	b[n] = 0;
	/* "on-CPU ns, runqueue wait ns, timeslices" */
	return sscanf(b, "%llu %llu", &cpu, &delay) == 2 ? delay : 0;
}

uint32_t ns_rand_psn(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)random();
	return v & 0xffffffu;
}

void ns_check_peer(const struct ns_end *e)
{
	if (ns_get(&e->h->failed))
		ns_die("the other end failed (its log says why)");
}

int ns_wait_ge(struct ns_end *e, const uint32_t *w, uint32_t v, uint64_t timeout_ns)
{
	uint64_t end = ns_now_ns() + timeout_ns;

	for (unsigned spins = 0;; spins++) {
		if (ns_get(w) >= v)
			return 0;
		ns_progress(e);
		/* the clock and the peer's flag only now and then: the loop stays short */
		if ((spins & 63) == 0) {
			ns_check_peer(e);
			if (ns_now_ns() > end)
				return -ETIMEDOUT;
		}
	}
}

int ns_poll(struct ns_end *e, struct uroce_cq *cq, struct uroce_wc *wc)
{
	int n;

	ns_progress(e);
	n = uroce_poll_cq(cq, 1, wc);
	if (n < 0)
		ns_die_rc(n, "poll_cq");
	return n;
}

int ns_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		mul = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mul = 1024 * 1024, end++;
	else if (*end == 'g' || *end == 'G')
		mul = 1024 * 1024 * 1024, end++;
	if (*end || v > hi / mul || v * mul < lo || v * mul > hi)
		return -1;
	*out = v * mul;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void ns_sort_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ns_median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ns_parse_sec(const char *opt, const char *s, ns_bad_fn bad)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0 && v <= 3600))
		bad(opt, s, "seconds in (0, 3600]");
	return v;
}

static void (*args_usage)(FILE *f);

void ns_args_init(const char *prog, void (*usage)(FILE *f))
{
	ns_name = prog;
	args_usage = usage;
}

void ns_bad(const char *opt, const char *val, const char *accepted)
{
	fprintf(stderr, "%s: %s '%s': accepted %s\n", ns_name, opt, val, accepted);
	if (args_usage)
		args_usage(stderr);
	exit(2);
}

void ns_help_or_bad(int c)
{
	if (args_usage)
		args_usage(c == 'h' ? stdout : stderr);
	exit(c == 'h' ? 0 : 2);
}

void ns_args_end(int argc, char **argv, bool missing, const char *required)
{
	if (optind < argc)
		ns_bad("argument", argv[optind], "options only");
	if (missing) {
		fprintf(stderr, "%s: %s are required\n", ns_name, required);
		ns_help_or_bad('?');
	}
}

uint64_t ns_arg_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, const char *accepted)
{
	uint64_t v;

	if (ns_parse_u64(s, lo, hi, &v))
		ns_bad(opt, s, accepted);
	return v;
}

int ns_common_option(struct ns_args *a, int c, const char *arg, ns_bad_fn bad)
{
	switch (c) {
	case 'r':
		if (!strcmp(arg, "send"))
			a->role = NS_SENDER;
		else if (!strcmp(arg, "recv"))
			a->role = NS_RECEIVER;
		else
			bad("--role", arg, "send or recv");
		a->role_set = true;
		return 1;
	case 'd':
		a->dev = arg;
		return 1;
	case 'f':
		a->shm = arg;
		return 1;
	case 'D':
		a->max_sec = ns_parse_sec("--max-sec", arg, bad);
		return 1;
	case 'T':
		if (ns_parse_u64(arg, 1, 31, &a->rc_timeout))
			bad("--rc-timeout", arg, "1 to 31 (4.096 us x 2^T)");
		return 1;
	default:
		return 0;
	}
}

int ns_getopt(int argc, char **argv, const struct option *lo, struct ns_args *a)
{
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1)
		if (!ns_common_option(a, c, optarg, ns_bad))
			return c;
	return -1;
}

void ns_qp_init(struct uroce_qp *qp)
{
	struct uroce_qp_attr a = { 0 };
	int rc;

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	rc = uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS);
	if (rc)
		ns_die_rc(rc, "QP to INIT");
}

/* Split devs in place into specs; the count. */
static unsigned split_devs(char *buf, const char *specs[NS_MAX_PORTS])
{
	char *save = NULL, *tok;
	unsigned n = 0;

	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == NS_MAX_PORTS)
			ns_die("--dev names more than %d ports", NS_MAX_PORTS);
		specs[n++] = tok;
	}
	if (!n)
		ns_die("--dev names no port");
	return n;
}

void ns_open(struct ns_end *e, struct ns_hdr *h, enum ns_role role, const char *devs, void *buf, size_t len,
             const struct ns_qp_opts *o)
{
	static char devbuf[NS_MAX_DEVS_LEN];
	const char *specs[NS_MAX_PORTS];
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	struct ns_info *me = &h->info[role];
	int rc;

	memset(e, 0, sizeof(*e));
	e->h = h;
	e->role = role;
	e->name = role == NS_SENDER ? "send" : "recv";
	cur_failed = &h->failed;
	e->t_start = t_base = ns_now_ns();
	if (strlen(devs) >= sizeof(devbuf))
		ns_die("--dev is too long");
	strcpy(devbuf, devs);
	me->nports = split_devs(devbuf, specs);
	ca.ports = specs;
	ca.nports = me->nports;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	if ((rc = uroce_context_create(&e->ctx, &ca)) != 0)
		ns_die_rc(rc, devs);
	for (uint8_t p = 1; p <= me->nports; p++) {
		struct uroce_port_attr pa;

		if ((rc = uroce_query_port(e->ctx, p, &pa)) != 0)
			ns_die_rc(rc, "query_port");
		if ((rc = uroce_query_gid(e->ctx, p, NS_GID_INDEX, me->gid[p - 1])) != 0)
			ns_die_rc(rc, "a port has no IPv4 GID (index 1)");
		me->active_mtu[p - 1] = (uint32_t)pa.active_mtu;
	}
	if ((rc = uroce_pd_alloc(e->ctx, &e->pd)) != 0)
		ns_die_rc(rc, "pd_alloc");
	rc = uroce_mr_reg(e->pd, buf, len, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &e->mr);
	if (rc)
		ns_die_rc(rc, "mr_reg");
	if ((rc = uroce_cq_create(e->ctx, o->cqe, &e->scq)) != 0 || (rc = uroce_cq_create(e->ctx, o->cqe, &e->rcq)) != 0)
		ns_die_rc(rc, "cq_create");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.cap = (struct uroce_qp_cap){ .max_send_wr = o->sq, .max_recv_wr = o->rq, .max_send_sge = 1, .max_recv_sge = 1 };
	ia.rel = o->rel;
	ia.failover = o->fo;
	if ((rc = uroce_qp_create(e->pd, &ia, &e->qp)) != 0)
		ns_die_rc(rc, "qp_create");
	e->has_fo = o->fo.nbackups > 0;
	ns_qp_init(e->qp);
	me->qpn = uroce_qp_num(e->qp);
	me->token = uroce_qp_token(e->qp);
	me->psn = ns_rand_psn();
	me->rkey = e->mr->rkey;
	me->addr = (uint64_t)(uintptr_t)buf;
	me->len = len;
}

static void ah_to(struct uroce_ah_attr *ah, const uint8_t gid[16], uint8_t port)
{
	memcpy(ah->dgid, gid, 16);
	ah->sgid_index = NS_GID_INDEX;
	ah->hop_limit = 64;
	ah->port_num = port;
}

/* RTR towards peer with path MTU mtu and backups members; then RTS. */
static int to_rts(struct uroce_qp *qp, const struct ns_info *me, const struct ns_info *peer, enum uroce_mtu mtu,
                  unsigned backups, uint8_t rc_timeout, const char **stage)
{
	struct uroce_qp_attr a = { 0 };
	int mask, rc;

	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qpn;
	a.dest_token = peer->token;
	a.rq_psn = peer->psn;
	ah_to(&a.ah_attr, peer->gid[0], 1);
	a.min_rnr_timer = 12;
	a.max_dest_rd_atomic = 1;
	mask = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
	       UROCE_QP_RQ_PSN | UROCE_QP_MIN_RNR_TIMER | UROCE_QP_MAX_DEST_RD_ATOMIC;
	for (unsigned i = 0; i < backups; i++) /* member i + 1 on port i + 2, the peer's port behind it */
		ah_to(&a.backup_ah[i], peer->gid[i + 1], (uint8_t)(i + 2));
	if (backups)
		mask |= UROCE_QP_ALT_PATH;
	*stage = "QP to RTR";
	if ((rc = uroce_qp_modify(qp, &a, mask)) != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = me->psn;
	a.timeout = rc_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	*stage = "QP to RTS";
	return uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                   UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC);
}

int ns_qp_to_rts(struct uroce_qp *qp, const struct ns_info *me, const struct ns_info *peer, uint8_t rc_timeout,
                 const char **stage)
{
	uint32_t m = me->active_mtu[0] < peer->active_mtu[0] ? me->active_mtu[0] : peer->active_mtu[0];

	return to_rts(qp, me, peer, (enum uroce_mtu)m, 0, rc_timeout, stage);
}

/* The smallest MTU of both ends' ports: a rewound message is cut the same
 * way on every member. */
static enum uroce_mtu min_mtu(const struct ns_info *x, const struct ns_info *y)
{
	uint32_t m = x->active_mtu[0];

	for (unsigned p = 0; p < x->nports && p < NS_MAX_PORTS; p++)
		if (x->active_mtu[p] < m)
			m = x->active_mtu[p];
	for (unsigned p = 0; p < y->nports && p < NS_MAX_PORTS; p++)
		if (y->active_mtu[p] < m)
			m = y->active_mtu[p];
	return (enum uroce_mtu)m;
}

void ns_connect(struct ns_end *e, const struct ns_qp_opts *o, double wait_s)
{
	struct ns_hdr *h = e->h;
	const struct ns_info *me = &h->info[e->role], *peer = &h->info[!e->role];
	uint64_t wait_ns = (uint64_t)(wait_s * 1e9);
	const char *stage;
	int rc;

	ns_put(&h->ready[e->role], 1);
	if (ns_wait_ge(e, &h->ready[!e->role], 1, wait_ns))
		ns_die("the other end did not come within %.0f s", wait_s);
	if (o->fo.nbackups >= me->nports || o->fo.nbackups >= peer->nports)
		ns_die("%u backups need %u ports at both ends (here %u, there %u)", (unsigned)o->fo.nbackups,
		       (unsigned)o->fo.nbackups + 1,
		       me->nports, peer->nports);
	e->mtu = min_mtu(me, peer);
	rc = to_rts(e->qp, me, peer, e->mtu, o->fo.nbackups, o->rc_timeout, &stage);
	if (rc)
		ns_die_rc(rc, stage);
	ns_put(&h->connected[e->role], 1);
	if (ns_wait_ge(e, &h->connected[!e->role], 1, wait_ns))
		ns_die("the other end did not reach RTS within %.0f s", wait_s);
}

void ns_close(struct ns_end *e)
{
	if (e->qp)
		uroce_qp_destroy(e->qp);
	if (e->scq)
		uroce_cq_destroy(e->scq);
	if (e->rcq)
		uroce_cq_destroy(e->rcq);
	if (e->mr)
		uroce_mr_dereg(e->mr);
	if (e->pd)
		uroce_pd_free(e->pd);
	if (e->ctx)
		uroce_context_destroy(e->ctx);
	memset(e, 0, sizeof(*e));
}
