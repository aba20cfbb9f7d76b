/* One QP pair across two processes in two network namespaces (ns_pair.h). */
#include <errno.h>
#include <fcntl.h>
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
static struct ns_hdr *cur_hdr; /* marked failed by ns_die */
static int schedstat_fd = -1;

#define NS_GID_INDEX 1 /* the port's first IPv4-mapped GID (index 0 is fe80::) */

void ns_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", ns_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cur_hdr)
		ns_put(&cur_hdr->failed, 1);
	exit(1);
}

void ns_die_rc(int rc, const char *what)
{
	ns_die("%s: %s%s%s", what, uroce_strerror(rc), *uroce_last_error() ? ": " : "", uroce_last_error());
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

/* An initial PSN nobody off-path can predict, as a real peer's. */
static uint32_t rand_psn(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)random();
	return v & 0xffffffu;
}

static void check_peer(const struct ns_end *e)
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
			check_peer(e);
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

double ns_parse_sec(const char *opt, const char *s, ns_bad_fn bad)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0 && v <= 3600))
		bad(opt, s, "seconds in (0, 3600]");
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

void ns_open(struct ns_end *e, struct ns_hdr *h, enum ns_role role, const char *dev, void *buf, size_t len,
             uint32_t sq, uint32_t rq, int cqe, const struct uroce_rel_attr *rel)
{
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_qp_attr a = { 0 };
	struct uroce_port_attr pa;
	struct ns_info *me = &h->info[role];
	int rc;

	memset(e, 0, sizeof(*e));
	e->h = h;
	e->role = role;
	cur_hdr = h;
	ca.port = dev;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	rc = uroce_context_create(&e->ctx, &ca);
	if (rc)
		ns_die_rc(rc, dev);
	rc = uroce_query_port(e->ctx, 1, &pa);
	if (rc)
		ns_die_rc(rc, "query_port");
	if ((rc = uroce_query_gid(e->ctx, 1, NS_GID_INDEX, me->gid)) != 0)
		ns_die_rc(rc, "the port has no IPv4 GID (index 1)");
	if ((rc = uroce_pd_alloc(e->ctx, &e->pd)) != 0)
		ns_die_rc(rc, "pd_alloc");
	rc = uroce_mr_reg(e->pd, buf, len, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &e->mr);
	if (rc)
		ns_die_rc(rc, "mr_reg");
	if ((rc = uroce_cq_create(e->ctx, cqe, &e->scq)) != 0 || (rc = uroce_cq_create(e->ctx, cqe, &e->rcq)) != 0)
		ns_die_rc(rc, "cq_create");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = rq;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.rel = *rel;
	if ((rc = uroce_qp_create(e->pd, &ia, &e->qp)) != 0)
		ns_die_rc(rc, "qp_create");
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	rc = uroce_qp_modify(e->qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS);
	if (rc)
		ns_die_rc(rc, "QP to INIT");
	me->qpn = uroce_qp_num(e->qp);
	me->token = uroce_qp_token(e->qp);
	me->psn = rand_psn();
	me->rkey = e->mr->rkey;
	me->active_mtu = (uint32_t)pa.active_mtu;
	me->addr = (uint64_t)(uintptr_t)buf;
	me->len = len;
}

int ns_qp_to_rts(struct uroce_qp *qp, const struct ns_info *me, const struct ns_info *peer, uint8_t rc_timeout,
                 const char **stage)
{
	struct uroce_qp_attr a = { 0 };
	int rc;

	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = (enum uroce_mtu)(me->active_mtu < peer->active_mtu ? me->active_mtu : peer->active_mtu);
	a.dest_qp_num = peer->qpn;
	a.dest_token = peer->token;
	a.rq_psn = peer->psn;
	memcpy(a.ah_attr.dgid, peer->gid, 16);
	a.ah_attr.sgid_index = NS_GID_INDEX;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.min_rnr_timer = 12;
	a.max_dest_rd_atomic = 1;
	*stage = "QP to RTR";
	rc = uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
	                                 UROCE_QP_DEST_TOKEN | UROCE_QP_RQ_PSN | UROCE_QP_MIN_RNR_TIMER | UROCE_QP_MAX_DEST_RD_ATOMIC);
	if (rc)
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

void ns_connect(struct ns_end *e, double wait_s, uint8_t rc_timeout)
{
	struct ns_hdr *h = e->h;
	const struct ns_info *me = &h->info[e->role], *peer = &h->info[!e->role];
	uint64_t wait_ns = (uint64_t)(wait_s * 1e9);
	const char *stage;
	int rc;

	ns_put(&h->ready[e->role], 1);
	if (ns_wait_ge(e, &h->ready[!e->role], 1, wait_ns))
		ns_die("the other end did not come within %.0f s", wait_s);
	e->mtu = (enum uroce_mtu)(me->active_mtu < peer->active_mtu ? me->active_mtu : peer->active_mtu);
	rc = ns_qp_to_rts(e->qp, me, peer, rc_timeout, &stage);
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
