/* One failover QP pair across two processes in two namespaces (fo_pair.h). */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fo_pair.h"

#define FO_GID_INDEX 1    /* a port's first IPv4-mapped GID (index 0 is fe80::) */
#define FO_MAX_DEVS_LEN 256

const char *fo_prog = "fo_pair";
static struct fo_hdr *cur_hdr; /* marked failed by fo_die */
static const char *cur_role = "?";
static uint64_t t_base;

uint64_t fo_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fo_put(uint32_t *w, uint32_t v)
{
	__atomic_store_n(w, v, __ATOMIC_RELEASE);
}

uint32_t fo_get(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

/* An initial PSN nobody off-path can predict, as a real peer's. */
static uint32_t rand_psn(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)random();
	return v & 0xffffffu;
}

static double since_start_s(void)
{
	return t_base ? (double)(fo_now_ns() - t_base) / 1e9 : 0.0;
}

void fo_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s[%s]: t=%.3f FAIL: ", fo_prog, cur_role, since_start_s());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cur_hdr)
		fo_put(&cur_hdr->failed, 1);
	exit(1);
}

void fo_die_rc(int rc, const char *what)
{
	fo_die("%s: %s%s%s", what, uroce_strerror(rc), *uroce_last_error() ? ": " : "", uroce_last_error());
}

void fo_say(const char *fmt, ...)
{
	va_list ap;

	printf("%s[%s]: t=%.3f ", fo_prog, cur_role, since_start_s());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void *fo_map(const char *path, size_t size)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDWR | O_CREAT, 0600);

	if (fd < 0)
		fo_die("cannot open the shared file %s: %s", path, strerror(errno));
	/* both ends may get here first: the file only grows, so the other's
	 * mapping stays inside it */
	if (fstat(fd, &st) || ((size_t)st.st_size < size && ftruncate(fd, (off_t)size)))
		fo_die("cannot size the shared file %s to %zu bytes: %s", path, size, strerror(errno));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		fo_die("cannot map the shared file %s: %s", path, strerror(errno));
	return p;
}

void fo_progress(struct fo_end *e)
{
	int rc = uroce_progress(e->ctx);

	if (rc < 0)
		fo_die_rc(rc, "transport");
}

void fo_check_peer(const struct fo_end *e)
{
	if (fo_get(&e->h->failed))
		fo_die("the other end failed (its log says why)");
}

int fo_wait_ge(struct fo_end *e, const uint32_t *w, uint32_t v, uint64_t timeout_ns)
{
	uint64_t end = fo_now_ns() + timeout_ns;

	for (unsigned spins = 0;; spins++) {
		if (fo_get(w) >= v)
			return 0;
		fo_progress(e);
		if ((spins & 63) == 0) {
			fo_check_peer(e);
			if (fo_now_ns() > end)
				return -ETIMEDOUT;
		}
	}
}

/* Split "afxdp:va1,afxdp:va2" in place into exactly FO_NPORTS specs. */
static void split_devs(char *buf, const char *specs[FO_NPORTS])
{
	char *save = NULL, *tok;
	unsigned n = 0;

	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == FO_NPORTS)
			fo_die("--dev names more than %d ports", FO_NPORTS);
		specs[n++] = tok;
	}
	if (n != FO_NPORTS)
		fo_die("--dev names %u port(s); it needs %d (rail 1, rail 2)", n, FO_NPORTS);
}

void fo_open(struct fo_end *e, struct fo_hdr *h, enum fo_role role, const char *devs, void *buf, size_t len,
             const struct fo_qp_opts *o)
{
	static char devbuf[FO_MAX_DEVS_LEN];
	const char *specs[FO_NPORTS];
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_qp_attr a = { 0 };
	struct fo_info *me = &h->info[role];
	int rc;

	memset(e, 0, sizeof(*e));
	e->h = h;
	e->role = role;
	e->name = role == FO_SENDER ? "send" : "recv";
	cur_hdr = h;
	cur_role = e->name;
	e->t_start = t_base = fo_now_ns();
	if (strlen(devs) >= sizeof(devbuf))
		fo_die("--dev is too long");
	strcpy(devbuf, devs);
	split_devs(devbuf, specs);
	ca.ports = specs;
	ca.nports = FO_NPORTS;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	if ((rc = uroce_context_create(&e->ctx, &ca)) != 0)
		fo_die_rc(rc, devs);
	for (uint8_t p = 1; p <= FO_NPORTS; p++) {
		struct uroce_port_attr pa;

		if ((rc = uroce_query_port(e->ctx, p, &pa)) != 0)
			fo_die_rc(rc, "query_port");
		if ((rc = uroce_query_gid(e->ctx, p, FO_GID_INDEX, me->gid[p - 1])) != 0)
			fo_die_rc(rc, "a port has no IPv4 GID (index 1)");
		me->active_mtu[p - 1] = (uint32_t)pa.active_mtu;
	}
	if ((rc = uroce_pd_alloc(e->ctx, &e->pd)) != 0)
		fo_die_rc(rc, "pd_alloc");
	rc = uroce_mr_reg(e->pd, buf, len, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &e->mr);
	if (rc)
		fo_die_rc(rc, "mr_reg");
	if ((rc = uroce_cq_create(e->ctx, o->cqe, &e->scq)) != 0 || (rc = uroce_cq_create(e->ctx, o->cqe, &e->rcq)) != 0)
		fo_die_rc(rc, "cq_create");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.cap.max_send_wr = o->sq;
	ia.cap.max_recv_wr = o->rq;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.rel = o->rel;
	ia.failover = o->fo;
	if ((rc = uroce_qp_create(e->pd, &ia, &e->qp)) != 0)
		fo_die_rc(rc, "qp_create");
	e->has_fo = o->fo.nbackups > 0;
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	rc = uroce_qp_modify(e->qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS);
	if (rc)
		fo_die_rc(rc, "QP to INIT");
	me->qpn = uroce_qp_num(e->qp);
	me->token = uroce_qp_token(e->qp);
	me->psn = rand_psn();
	me->rkey = e->mr->rkey;
	me->addr = (uint64_t)(uintptr_t)buf;
	me->len = len;
}

static enum uroce_mtu min_mtu(const struct fo_info *x, const struct fo_info *y)
{
	uint32_t m = x->active_mtu[0];

	for (unsigned p = 0; p < FO_NPORTS; p++) {
		if (x->active_mtu[p] < m)
			m = x->active_mtu[p];
		if (y->active_mtu[p] < m)
			m = y->active_mtu[p];
	}
	return (enum uroce_mtu)m;
}

static void ah_to(struct uroce_ah_attr *ah, const uint8_t gid[16], uint8_t port)
{
	memcpy(ah->dgid, gid, 16);
	ah->sgid_index = FO_GID_INDEX;
	ah->hop_limit = 64;
	ah->port_num = port;
}

void fo_connect(struct fo_end *e, const struct fo_qp_opts *o, double wait_s)
{
	struct fo_hdr *h = e->h;
	const struct fo_info *me = &h->info[e->role], *peer = &h->info[!e->role];
	uint64_t wait_ns = (uint64_t)(wait_s * 1e9);
	struct uroce_qp_attr a = { 0 };
	int mask, rc;

	fo_put(&h->ready[e->role], 1);
	if (fo_wait_ge(e, &h->ready[!e->role], 1, wait_ns))
		fo_die("the other end did not come within %.0f s", wait_s);
	/* one MTU for both members: a rewound message is cut the same way */
	e->mtu = min_mtu(me, peer);
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = e->mtu;
	a.dest_qp_num = peer->qpn;
	a.dest_token = peer->token;
	a.rq_psn = peer->psn;
	ah_to(&a.ah_attr, peer->gid[0], 1);
	a.min_rnr_timer = 12;
	a.max_dest_rd_atomic = 1;
	mask = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
	       UROCE_QP_MIN_RNR_TIMER | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_DEST_TOKEN;
	for (unsigned i = 0; i < o->fo.nbackups; i++) /* member i + 1 on port i + 2, the peer's port behind it */
		ah_to(&a.backup_ah[i], peer->gid[i + 1], (uint8_t)(i + 2));
	if (o->fo.nbackups)
		mask |= UROCE_QP_ALT_PATH;
	if ((rc = uroce_qp_modify(e->qp, &a, mask)) != 0)
		fo_die_rc(rc, "QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = me->psn;
	a.timeout = o->rc_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc = uroce_qp_modify(e->qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                     UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		fo_die_rc(rc, "QP to RTS");
	fo_put(&h->connected[e->role], 1);
	if (fo_wait_ge(e, &h->connected[!e->role], 1, wait_ns))
		fo_die("the other end did not reach RTS within %.0f s", wait_s);
}

void fo_close(struct fo_end *e)
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
	e->qp = NULL;
	e->scq = e->rcq = NULL;
	e->mr = NULL;
	e->pd = NULL;
	e->ctx = NULL;
}

bool fo_info(struct fo_end *e, struct uroce_failover_info *fi)
{
	int rc;

	memset(fi, 0, sizeof(*fi));
	if (!e->has_fo)
		return false;
	if ((rc = uroce_qp_failover_info(e->qp, fi)) != 0)
		fo_die_rc(rc, "qp_failover_info");
	return true;
}

const char *fo_info_str(const struct uroce_failover_info *fi, bool has, char *buf, size_t len)
{
	const char *st = uroce_fo_state_str(fi->state), *ca = uroce_fo_cause_str(fi->last_cause);

	if (!has) {
		snprintf(buf, len, "failover=none");
		return buf;
	}
	snprintf(buf, len,
	         "state=%s active=%u up=0x%x failovers=%llu failbacks=%llu cause=%s rewound=%llu notices=%llu/%llu "
	         "probes=%llu/%llu",
	         st ? st : "?", fi->active, fi->up_mask, (unsigned long long)fi->failovers,
	         (unsigned long long)fi->failbacks, ca ? ca : "?", (unsigned long long)fi->rewound_pkts,
	         (unsigned long long)fi->notices_sent, (unsigned long long)fi->notices_rcvd,
	         (unsigned long long)fi->probes_sent, (unsigned long long)fi->probes_answered);
	return buf;
}

void fo_ifctl_open(struct fo_ifctl *c, const char *spec)
{
	char path[256];
	const char *colon = strrchr(spec, ':');
	int self, other;

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(path) || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= sizeof(c->ifname))
		fo_die("'%s': wanted NSPATH:IFNAME", spec);
	memcpy(path, spec, (size_t)(colon - spec));
	path[colon - spec] = 0;
	strcpy(c->ifname, colon + 1);
	/* a socket belongs to the namespace it was made in: make it there,
	 * then come back */
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	other = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || other < 0)
		fo_die("cannot open the namespaces (/proc/self/ns/net, %s): %s", path, strerror(errno));
	if (setns(other, CLONE_NEWNET))
		fo_die("cannot enter %s: %s", path, strerror(errno));
	c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (setns(self, CLONE_NEWNET))
		fo_die("cannot come back from %s: %s", path, strerror(errno));
	if (c->fd < 0)
		fo_die("cannot make a socket in %s: %s", path, strerror(errno));
	close(self);
	close(other);
	fo_ifctl_up(c); /* there, and readable */
}

bool fo_ifctl_up(const struct fo_ifctl *c)
{
	struct ifreq r;

	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, c->ifname);
	if (ioctl(c->fd, SIOCGIFFLAGS, &r))
		fo_die("SIOCGIFFLAGS %s: %s", c->ifname, strerror(errno));
	return r.ifr_flags & IFF_UP;
}

void fo_ifctl_set(const struct fo_ifctl *c, bool up)
{
	struct ifreq r;

	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, c->ifname);
	if (ioctl(c->fd, SIOCGIFFLAGS, &r))
		fo_die("SIOCGIFFLAGS %s: %s", c->ifname, strerror(errno));
	if (up)
		r.ifr_flags |= IFF_UP;
	else
		r.ifr_flags &= ~IFF_UP;
	if (ioctl(c->fd, SIOCSIFFLAGS, &r))
		fo_die("SIOCSIFFLAGS %s %s: %s", c->ifname, up ? "up" : "down", strerror(errno));
}

int fo_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
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

static const char *args_prog = "fo";
static void (*args_usage)(FILE *f);

void fo_args_init(const char *prog, void (*usage)(FILE *f))
{
	args_prog = prog;
	args_usage = usage;
}

void fo_arg_bad(const char *opt, const char *val, const char *accepted)
{
	fprintf(stderr, "%s: %s '%s': accepted %s\n", args_prog, opt, val, accepted);
	if (args_usage)
		args_usage(stderr);
	exit(2);
}

uint64_t fo_arg_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, const char *accepted)
{
	uint64_t v;

	if (fo_parse_u64(s, lo, hi, &v))
		fo_arg_bad(opt, s, accepted);
	return v;
}

double fo_arg_secs(const char *opt, const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v > 0 && v <= 3600))
		fo_arg_bad(opt, s, "seconds in (0, 3600]");
	return v;
}

enum fo_role fo_arg_role(const char *s)
{
	if (!strcmp(s, "send"))
		return FO_SENDER;
	if (!strcmp(s, "recv"))
		return FO_RECEIVER;
	fo_arg_bad("--role", s, "send or recv");
}

enum uroce_reliability fo_arg_rel(const char *s)
{
	if (!strcmp(s, "rc"))
		return UROCE_REL_RC;
	if (!strcmp(s, "sr"))
		return UROCE_REL_SR;
	fo_arg_bad("--rel", s, "rc or sr");
}
