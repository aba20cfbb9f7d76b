/* SPDX-License-Identifier: MIT */
/* The loop backend: an in-process fabric of ports joined by impaired,
 * seeded point-to-point links in simulated (or real) time. See
 * port_loop.h for the link model. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "dataplane/errbuf.h"
#include "dataplane/port_loop.h"

/* Ethernet header plus one VLAN tag: what a frame carries beyond the MTU. */
#define LOOP_L2_OVERHEAD 18u
/* Upper bound on any configured delay, so arrival times cannot wrap:
 * an hour is far beyond any test. */
#define LOOP_DELAY_MAX_NS (3600ull * 1000000000ull)
#define LOOP_RX_RING_MAX (1u << 20)
#define LOOP_NFRAMES_MAX (1u << 22)
#define NS_PER_S 1000000000ull

enum slot_state {
	SLOT_FREE = 0,
	SLOT_APP,  /* handed out by alloc or rx_burst */
	SLOT_WIRE, /* on a link, in the arrival heap */
	SLOT_RXQ,  /* in a port's RX ring */
};

struct loop_slot {
	uint64_t arrive; /* ns */
	uint64_t seq;    /* orders frames that arrive at the same ns */
	uint32_t len;
	uint16_t from;
	uint16_t to;
	uint8_t state;
};

/* xoshiro256**: small, fast, and the same sequence on every platform. */
struct loop_rng {
	uint64_t s[4];
};

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(struct loop_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ull);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t rng_next(struct loop_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* Probabilities become 64-bit thresholds once, at configuration, so the
 * per-frame test is one integer compare. UINT64_MAX means "always". */
static uint64_t prob_threshold(double p)
{
	double x;

	if (!(p > 0.0))
		return 0;
	if (p >= 1.0)
		return UINT64_MAX;
	x = p * 0x1p64;
	return x >= 0x1p64 ? UINT64_MAX - 1 : (uint64_t)x;
}

static inline bool chance(struct loop_rng *r, uint64_t thr)
{
	if (!thr)
		return false; /* draw nothing for an impairment that is off */
	if (thr == UINT64_MAX)
		return true;
	return rng_next(r) < thr;
}

/* uniform in [0, max] */
static inline uint64_t rng_upto(struct loop_rng *r, uint64_t max)
{
	return max ? rng_next(r) % (max + 1) : 0;
}

/* One port and the direction of its link towards its peer. */
struct loop_node {
	struct port *port; /* while open */
	bool wired;
	bool up;
	unsigned peer;

	struct loop_impairment imp;
	uint64_t thr_loss, thr_gb, thr_bg, thr_loss_bad, thr_corrupt, thr_dup, thr_reorder;
	uint32_t queue_bytes;
	bool ge_bad;          /* Gilbert-Elliott chain in the bad state */
	uint64_t busy_until;  /* rate limiter: when the last queued frame leaves */
	uint64_t last_arrive; /* FIFO floor for the next frame's arrival */
	struct loop_rng rng;
	struct loop_link_stats st;

	uint32_t *rxq; /* slot indices */
	uint32_t rx_head, rx_tail;
	loop_filter_fn filter; /* tests: drop chosen frames */
	void *filter_arg;
};

struct loop_fabric {
	unsigned nports;
	uint32_t nframes;
	uint32_t slot_size; /* room of each frame */
	uint32_t mtu;
	uint32_t rx_ring;
	bool real_time;
	uint64_t seed;
	uint64_t sim_now;
	struct timespec t0;
	uint64_t seq;

	uint8_t *mem;              /* nframes * slot_size bytes */
	struct loop_slot *slots;
	uint32_t *free_stack;
	uint32_t nfree;
	uint32_t *heap;            /* frames on wires, min-heap by (arrive, seq) */
	uint32_t nheap;
	uint64_t free_invalid;

	struct loop_node *nodes;
	char err[256];
};

static void set_err(struct loop_fabric *fab, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_err(struct loop_fabric *fab, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fab->err, sizeof(fab->err), fmt, ap);
	va_end(ap);
}


const char *loop_fabric_last_error(const struct loop_fabric *fab)
{
	return fab->err;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t loop_fabric_now(const struct loop_fabric *fab)
{
	if (fab->real_time)
		return mono_ns() - ((uint64_t)fab->t0.tv_sec * NS_PER_S + (uint64_t)fab->t0.tv_nsec);
	return fab->sim_now;
}

uint64_t loop_fabric_clock(void *fab)
{
	return loop_fabric_now(fab);
}

void loop_port_mac(unsigned index, uint8_t mac[6])
{
	unsigned id = index + 1;

	mac[0] = 0x02; /* locally administered, unicast */
	mac[1] = 0;
	mac[2] = 0;
	mac[3] = 0;
	mac[4] = (uint8_t)(id >> 8);
	mac[5] = (uint8_t)id;
}

uint32_t loop_port_ipv4_be(unsigned index)
{
	return htonl(0x0a000000u | ((index + 1) & 0xffffu));
}

/* ---- frame pool ---- */

static inline uint8_t *slot_data(const struct loop_fabric *fab, uint32_t s)
{
	return fab->mem + (size_t)s * fab->slot_size;
}

static inline bool pool_get(struct loop_fabric *fab, uint32_t *s)
{
	if (!fab->nfree)
		return false;
	*s = fab->free_stack[--fab->nfree];
	fab->slots[*s].state = SLOT_APP;
	return true;
}

static inline void pool_put(struct loop_fabric *fab, uint32_t s)
{
	fab->slots[s].state = SLOT_FREE;
	fab->free_stack[fab->nfree++] = s;
}

/* A frame handed back by the caller is ours only if its cookie names a slot
 * the caller holds and its data pointer is that slot's. */
static inline bool frame_is_app(const struct loop_fabric *fab, const struct uroce_frame *f)
{
	return f->cookie < fab->nframes && fab->slots[f->cookie].state == SLOT_APP &&
	       f->data == slot_data(fab, (uint32_t)f->cookie);
}

/* ---- frames on wires: a binary min-heap by (arrive, seq) ---- */

static inline bool heap_less(const struct loop_fabric *fab, uint32_t a, uint32_t b)
{
	const struct loop_slot *x = &fab->slots[a], *y = &fab->slots[b];

	return x->arrive < y->arrive || (x->arrive == y->arrive && x->seq < y->seq);
}

static void heap_push(struct loop_fabric *fab, uint32_t s)
{
	uint32_t i = fab->nheap++;

	while (i) {
		uint32_t parent = (i - 1) / 2;

		if (!heap_less(fab, s, fab->heap[parent]))
			break;
		fab->heap[i] = fab->heap[parent];
		i = parent;
	}
	fab->heap[i] = s;
}

static uint32_t heap_pop(struct loop_fabric *fab)
{
	uint32_t top = fab->heap[0];
	uint32_t last = fab->heap[--fab->nheap];
	uint32_t n = fab->nheap, i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && heap_less(fab, fab->heap[c + 1], fab->heap[c]))
			c++;
		if (!heap_less(fab, fab->heap[c], last))
			break;
		fab->heap[i] = fab->heap[c];
		i = c;
	}
	if (n)
		fab->heap[i] = last;
	return top;
}

/* Move every frame whose arrival time has come into its port's RX ring. */
static unsigned deliver_due(struct loop_fabric *fab, uint64_t now)
{
	unsigned n = 0;

	while (fab->nheap && fab->slots[fab->heap[0]].arrive <= now) {
		uint32_t s = heap_pop(fab);
		struct loop_slot *sl = &fab->slots[s];
		struct loop_node *src = &fab->nodes[sl->from];
		struct loop_node *dst = &fab->nodes[sl->to];

		if (!dst->port) {
			src->st.rx_no_port++;
			pool_put(fab, s);
			continue;
		}
		if (dst->rx_tail - dst->rx_head == fab->rx_ring) {
			src->st.rx_ring_full++;
			port_count_drop(dst->port, UROCE_DROP_NO_BUFFER);
			pool_put(fab, s);
			continue;
		}
		dst->rxq[dst->rx_tail++ & (fab->rx_ring - 1)] = s;
		sl->state = SLOT_RXQ;
		src->st.delivered++;
		src->st.delivered_bytes += sl->len;
		n++;
	}
	return n;
}

unsigned loop_fabric_advance(struct loop_fabric *fab, uint64_t ns)
{
	if (!fab->real_time)
		fab->sim_now += ns;
	return deliver_due(fab, loop_fabric_now(fab));
}

uint64_t loop_fabric_next_event(const struct loop_fabric *fab)
{
	return fab->nheap ? fab->slots[fab->heap[0]].arrive : UINT64_MAX;
}

unsigned loop_fabric_in_flight(const struct loop_fabric *fab)
{
	return fab->nheap;
}

unsigned loop_fabric_free_frames(const struct loop_fabric *fab)
{
	return fab->nfree;
}

/* ---- configuration ---- */

static int check_prob(struct loop_fabric *fab, unsigned from, const char *name, double p)
{
	if (isnan(p) || p < 0.0 || p > 1.0) {
		set_err(fab, "loop link %u: %s = %g is not a probability; accepted: 0 to 1", from, name, p);
		return -EINVAL;
	}
	return 0;
}

static int check_impairment(struct loop_fabric *fab, unsigned from, const struct loop_impairment *imp)
{
	uint32_t max_frame = fab->mtu + LOOP_L2_OVERHEAD;
	uint32_t q = imp->queue_bytes ? imp->queue_bytes : LOOP_QUEUE_BYTES_DEFAULT;

	if (check_prob(fab, from, "loss", imp->loss) || check_prob(fab, from, "burst.p_good_bad", imp->burst.p_good_bad) ||
	    check_prob(fab, from, "burst.p_bad_good", imp->burst.p_bad_good) ||
	    check_prob(fab, from, "burst.loss_bad", imp->burst.loss_bad) ||
	    check_prob(fab, from, "corrupt", imp->corrupt) || check_prob(fab, from, "duplicate", imp->duplicate) ||
	    check_prob(fab, from, "reorder", imp->reorder) || check_prob(fab, from, "ecn_pmax", imp->ecn_pmax))
		return -EINVAL;
	if (imp->reorder > 0.0 && !imp->reorder_max_ns) {
		set_err(fab, "loop link %u: reorder = %g needs reorder_max_ns > 0, the bound on the extra delay", from,
			imp->reorder);
		return -EINVAL;
	}
	if (imp->delay_ns > LOOP_DELAY_MAX_NS || imp->jitter_ns > LOOP_DELAY_MAX_NS ||
	    imp->reorder_max_ns > LOOP_DELAY_MAX_NS) {
		set_err(fab, "loop link %u: delay_ns, jitter_ns and reorder_max_ns accept 0 to %llu (one hour)", from,
			(unsigned long long)LOOP_DELAY_MAX_NS);
		return -EINVAL;
	}
	if (imp->rate_bps && q < max_frame) {
		set_err(fab, "loop link %u: queue_bytes %u is smaller than one frame (%u bytes); accepted: 0 (default %u) or >= %u",
			from, q, max_frame, LOOP_QUEUE_BYTES_DEFAULT, max_frame);
		return -EINVAL;
	}
	return 0;
}

static void apply_impairment(struct loop_node *n, const struct loop_impairment *imp)
{
	static const struct loop_impairment perfect;

	if (!imp)
		imp = &perfect;
	n->imp = *imp;
	n->thr_loss = prob_threshold(imp->loss);
	n->thr_gb = prob_threshold(imp->burst.p_good_bad);
	n->thr_bg = prob_threshold(imp->burst.p_bad_good);
	n->thr_loss_bad = prob_threshold(imp->burst.loss_bad);
	n->thr_corrupt = prob_threshold(imp->corrupt);
	n->thr_dup = prob_threshold(imp->duplicate);
	n->thr_reorder = prob_threshold(imp->reorder);
	n->queue_bytes = imp->queue_bytes ? imp->queue_bytes : LOOP_QUEUE_BYTES_DEFAULT;
	if (!n->thr_gb)
		n->ge_bad = false;
}

static int check_index(struct loop_fabric *fab, unsigned i)
{
	if (i >= fab->nports) {
		set_err(fab, "loop port %u does not exist: this fabric has ports 0-%u", i, fab->nports - 1);
		return -EINVAL;
	}
	return 0;
}

static void unwire(struct loop_fabric *fab, unsigned a)
{
	struct loop_node *n = &fab->nodes[a];

	if (!n->wired)
		return;
	fab->nodes[n->peer].wired = false;
	n->wired = false;
}

int loop_fabric_connect(struct loop_fabric *fab, unsigned a, unsigned b,
                        const struct loop_impairment *ab, const struct loop_impairment *ba)
{
	struct loop_node *na, *nb;

	if (check_index(fab, a) || check_index(fab, b))
		return -EINVAL;
	if ((ab && check_impairment(fab, a, ab)) || (ba && a != b && check_impairment(fab, b, ba)))
		return -EINVAL;
	unwire(fab, a);
	unwire(fab, b);
	na = &fab->nodes[a];
	nb = &fab->nodes[b];
	na->wired = nb->wired = true;
	na->up = nb->up = true;
	na->peer = b;
	nb->peer = a;
	apply_impairment(na, ab);
	if (a != b)
		apply_impairment(nb, ba);
	return 0;
}

int loop_fabric_set_impairment(struct loop_fabric *fab, unsigned from, const struct loop_impairment *imp)
{
	if (check_index(fab, from))
		return -EINVAL;
	if (!fab->nodes[from].wired) {
		set_err(fab, "loop port %u is not wired; call loop_fabric_connect() first", from);
		return -EINVAL;
	}
	if (imp && check_impairment(fab, from, imp))
		return -EINVAL;
	apply_impairment(&fab->nodes[from], imp);
	return 0;
}

int loop_fabric_set_filter(struct loop_fabric *fab, unsigned from, loop_filter_fn fn, void *arg)
{
	if (from >= fab->nports) {
		set_err(fab, "set_filter: port %u of %u", from, fab->nports);
		return -EINVAL;
	}
	fab->nodes[from].filter = fn;
	fab->nodes[from].filter_arg = arg;
	return 0;
}

int loop_fabric_set_link(struct loop_fabric *fab, unsigned a, bool up)
{
	struct loop_node *n;

	if (check_index(fab, a))
		return -EINVAL;
	n = &fab->nodes[a];
	if (!n->wired) {
		set_err(fab, "loop port %u is not wired; call loop_fabric_connect() first", a);
		return -EINVAL;
	}
	n->up = up;
	fab->nodes[n->peer].up = up;
	return 0;
}

int loop_fabric_link_stats(const struct loop_fabric *fab, unsigned from, struct loop_link_stats *st)
{
	if (from >= fab->nports)
		return -EINVAL;
	*st = fab->nodes[from].st;
	return 0;
}

void loop_fabric_stats(const struct loop_fabric *fab, struct loop_link_stats *st)
{
	const size_t nf = sizeof(*st) / sizeof(uint64_t);
	uint64_t *sum = (uint64_t *)st;

	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < fab->nports; i++) {
		const uint64_t *v = (const uint64_t *)&fab->nodes[i].st;

		for (size_t k = 0; k < nf; k++)
			sum[k] += v[k];
	}
	st->free_invalid = fab->free_invalid;
}

/* ---- creation ---- */

struct loop_fabric *loop_fabric_create(unsigned nports, uint64_t seed)
{
	struct loop_fabric_opts o = { .nports = nports, .seed = seed };
	struct loop_fabric *fab = loop_fabric_create_opts(&o, NULL, 0);

	return fab;
}

struct loop_fabric *loop_fabric_create_opts(const struct loop_fabric_opts *opts, char *err, size_t errlen)
{
	struct loop_fabric *fab;
	uint32_t nframes = opts->nframes ? opts->nframes : LOOP_NFRAMES_DEFAULT;
	uint32_t mtu = opts->mtu ? opts->mtu : LOOP_MTU_DEFAULT;
	uint32_t rx_ring = opts->rx_ring ? opts->rx_ring : LOOP_RX_RING_DEFAULT;

	if (opts->nports < 1 || opts->nports > LOOP_FABRIC_MAX_PORTS) {
		errbuf_fail(err, errlen, 0, "loop fabric: nports %u out of range; accepted: 1-%u", opts->nports,
		     LOOP_FABRIC_MAX_PORTS);
		errno = EINVAL;
		return NULL;
	}
	if (nframes > LOOP_NFRAMES_MAX) {
		errbuf_fail(err, errlen, 0, "loop fabric: nframes %u out of range; accepted: 1-%u (0 = %u)", nframes,
		     LOOP_NFRAMES_MAX, LOOP_NFRAMES_DEFAULT);
		errno = EINVAL;
		return NULL;
	}
	if (mtu < 68 || mtu > 65535) {
		errbuf_fail(err, errlen, 0, "loop fabric: mtu %u out of range; accepted: 68-65535 (0 = %u)", mtu,
		     LOOP_MTU_DEFAULT);
		errno = EINVAL;
		return NULL;
	}
	if (rx_ring > LOOP_RX_RING_MAX || (rx_ring & (rx_ring - 1))) {
		errbuf_fail(err, errlen, 0, "loop fabric: rx_ring %u must be a power of two up to %u (0 = %u)", rx_ring,
		     LOOP_RX_RING_MAX, LOOP_RX_RING_DEFAULT);
		errno = EINVAL;
		return NULL;
	}

	fab = calloc(1, sizeof(*fab));
	if (!fab)
		goto nomem;
	fab->nports = opts->nports;
	fab->nframes = nframes;
	fab->mtu = mtu;
	fab->slot_size = (mtu + LOOP_L2_OVERHEAD + 63u) & ~63u;
	fab->rx_ring = rx_ring;
	fab->real_time = opts->real_time;
	fab->seed = opts->seed;
	clock_gettime(CLOCK_MONOTONIC, &fab->t0);

	fab->mem = aligned_alloc(64, (size_t)nframes * fab->slot_size);
	fab->slots = calloc(nframes, sizeof(*fab->slots));
	fab->free_stack = calloc(nframes, sizeof(uint32_t));
	fab->heap = calloc(nframes, sizeof(uint32_t));
	fab->nodes = calloc(fab->nports, sizeof(*fab->nodes));
	if (!fab->mem || !fab->slots || !fab->free_stack || !fab->heap || !fab->nodes)
		goto free_fab;
	/* hand out low slots first: easier to read in a debugger */
	for (uint32_t i = 0; i < nframes; i++)
		fab->free_stack[i] = nframes - 1 - i;
	fab->nfree = nframes;

	for (unsigned i = 0; i < fab->nports; i++) {
		struct loop_node *n = &fab->nodes[i];

		/* one stream per sending port, so traffic on one link does not
		 * shift the random decisions of another */
		rng_seed(&n->rng, opts->seed, i + 1);
		apply_impairment(n, NULL);
	}
	return fab;

free_fab:
	loop_fabric_destroy(fab);
nomem:
	errbuf_fail(err, errlen, 0, "loop fabric: out of memory for %u frames of %u bytes", nframes,
	     (mtu + LOOP_L2_OVERHEAD + 63u) & ~63u);
	errno = ENOMEM;
	return NULL;
}

void loop_fabric_destroy(struct loop_fabric *fab)
{
	if (!fab)
		return;
	if (fab->nodes) {
		for (unsigned i = 0; i < fab->nports; i++)
			free(fab->nodes[i].rxq);
	}
	free(fab->nodes);
	free(fab->heap);
	free(fab->free_stack);
	free(fab->slots);
	free(fab->mem);
	free(fab);
}

/* ---- the port backend ---- */

static inline struct loop_fabric *port_fab(struct port *p)
{
	return p->cfg.fabric;
}

static int loop_open(struct port *p, char *err, size_t errlen)
{
	struct loop_fabric *fab = p->cfg.fabric;
	unsigned i = p->cfg.loop_index;
	struct loop_node *n;

	if (!fab)
		return errbuf_fail(err, errlen, -EINVAL,
			    "loop port %u: no fabric; create one with loop_fabric_create() and set cfg.fabric", i);
	if (i >= fab->nports)
		return errbuf_fail(err, errlen, -EINVAL, "loop port %u does not exist: the fabric has ports 0-%u", i,
			    fab->nports - 1);
	n = &fab->nodes[i];
	if (n->port)
		return errbuf_fail(err, errlen, -EBUSY, "loop port %u is already open", i);
	if (!n->rxq) {
		n->rxq = calloc(fab->rx_ring, sizeof(uint32_t));
		if (!n->rxq)
			return errbuf_fail(err, errlen, -ENOMEM, "loop port %u: out of memory for its RX ring", i);
	}
	n->rx_head = n->rx_tail = 0;
	n->port = p;
	loop_port_mac(i, p->mac);
	p->ipv4_be = loop_port_ipv4_be(i);
	p->mtu = fab->mtu;
	p->ifindex = 0;
	p->priv = n;
	return 0;
}

static void loop_close(struct port *p)
{
	struct loop_fabric *fab = port_fab(p);
	struct loop_node *n = p->priv;

	/* frames waiting in the RX ring go back to the pool; frames still on
	 * the wire towards this port are counted as rx_no_port on arrival */
	while (n->rx_head != n->rx_tail)
		pool_put(fab, n->rxq[n->rx_head++ & (fab->rx_ring - 1)]);
	n->port = NULL;
	p->priv = NULL;
}

static uint16_t loop_rx_burst(struct port *p, struct uroce_frame *f, uint16_t nf)
{
	struct loop_fabric *fab = port_fab(p);
	struct loop_node *n = p->priv;
	uint16_t got = 0;

	if (fab->nheap)
		deliver_due(fab, loop_fabric_now(fab));
	while (got < nf && n->rx_head != n->rx_tail) {
		uint32_t s = n->rxq[n->rx_head++ & (fab->rx_ring - 1)];

		fab->slots[s].state = SLOT_APP;
		f[got].data = slot_data(fab, s);
		f[got].len = fab->slots[s].len;
		f[got].room = fab->slot_size;
		f[got].cookie = s;
		got++;
	}
	return got;
}

static void corrupt_frame(struct loop_node *n, uint8_t *data, uint32_t len)
{
	uint32_t skip = n->imp.corrupt_skip < len ? n->imp.corrupt_skip : len - 1;
	uint64_t r = rng_next(&n->rng);
	uint32_t off = skip + (uint32_t)((r >> 3) % (len - skip));

	data[off] ^= (uint8_t)(1u << (r & 7));
}

/* A switch's ECN marking: an ECT(0)/ECT(1) IP packet (802.1Q tag or not)
 * becomes CE; the IPv4 checksum is patched (RFC 1624). The ICRC masks the
 * ECN bits, so RoCE stays valid. False when it is not ECT IP. */
static bool mark_ce(uint8_t *f, uint32_t len)
{
	uint32_t l3 = 14;
	uint16_t et;

	if (len < 18)
		return false;
	et = (uint16_t)(f[12] << 8 | f[13]);
	if (et == 0x8100) {
		et = (uint16_t)(f[16] << 8 | f[17]);
		l3 = 18;
	}
	if (et == 0x0800 && len >= l3 + 20) {
		uint8_t *ip = f + l3;
		uint32_t sum;
		uint16_t old = (uint16_t)(ip[0] << 8 | ip[1]), nw;

		if ((ip[1] & 3) == 0 || (ip[1] & 3) == 3)
			return false;
		ip[1] |= 3;
		nw = (uint16_t)(ip[0] << 8 | ip[1]);
		sum = (uint16_t)~(ip[10] << 8 | ip[11]);
		sum += (uint16_t)~old + nw;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		ip[10] = (uint8_t)(~sum >> 8);
		ip[11] = (uint8_t)~sum;
		return true;
	}
	if (et == 0x86dd && len >= l3 + 40) {
		uint8_t *ip = f + l3;
		uint8_t ecn = (uint8_t)((ip[1] >> 4) & 3);

		if (ecn == 0 || ecn == 3)
			return false;
		ip[1] |= 0x30;
		return true;
	}
	return false;
}

/* Is a frame that finds backlog bytes queued marked (past ecn_bytes)? */
static bool ecn_draw(struct loop_node *n, uint64_t backlog)
{
	const struct loop_impairment *imp = &n->imp;
	double p;

	if (imp->ecn_max_bytes <= imp->ecn_bytes || backlog >= imp->ecn_max_bytes)
		return true;
	p = imp->ecn_pmax * (double)(backlog - imp->ecn_bytes) / (double)(imp->ecn_max_bytes - imp->ecn_bytes);
	return (double)(rng_next(&n->rng) >> 11) * 0x1.0p-53 < p;
}

/* Put a frame on the wire towards n's peer. Returns false when the
 * rate limiter refuses it under back-pressure (the caller keeps it). */
static bool link_send(struct loop_fabric *fab, unsigned from, uint32_t s, uint64_t now)
{
	struct loop_node *n = &fab->nodes[from];
	struct loop_slot *sl = &fab->slots[s];
	uint64_t depart = now, arrive;
	uint32_t len = sl->len;

	if (n->imp.rate_bps) {
		uint64_t start = n->busy_until > now ? n->busy_until : now;
		/* bytes still queued = time the queue needs to drain x rate */
		uint64_t backlog = (uint64_t)((unsigned __int128)(start - now) * n->imp.rate_bps / (8 * NS_PER_S));
		uint64_t ser;

		if (backlog + len > n->queue_bytes) {
			if (n->imp.backpressure) {
				n->st.refused++;
				return false;
			}
			n->st.queue_drops++;
			pool_put(fab, s);
			return true;
		}
		if (backlog + len > n->st.max_backlog)
			n->st.max_backlog = backlog + len;
		if (n->imp.ecn_bytes && backlog >= n->imp.ecn_bytes && ecn_draw(n, backlog) &&
		    mark_ce(slot_data(fab, s), len))
			n->st.ecn_marked++;
		/* rounded up, so the link never runs faster than its rate */
		ser = ((uint64_t)len * 8 * NS_PER_S + n->imp.rate_bps - 1) / n->imp.rate_bps;
		depart = start + ser;
		n->busy_until = depart;
	}
	n->st.tx_frames++;
	n->st.tx_bytes += len;

	if (n->filter && n->filter(n->filter_arg, slot_data(fab, s), len)) {
		n->st.filtered++;
		pool_put(fab, s);
		return true;
	}
	if (chance(&n->rng, n->thr_loss)) {
		n->st.lost++;
		pool_put(fab, s);
		return true;
	}
	if (n->thr_gb) {
		n->ge_bad = n->ge_bad ? !chance(&n->rng, n->thr_bg) : chance(&n->rng, n->thr_gb);
		if (n->ge_bad && chance(&n->rng, n->thr_loss_bad)) {
			n->st.lost_burst++;
			pool_put(fab, s);
			return true;
		}
	}
	if (chance(&n->rng, n->thr_corrupt)) {
		corrupt_frame(n, slot_data(fab, s), len);
		n->st.corrupted++;
	}

	arrive = depart + n->imp.delay_ns + rng_upto(&n->rng, n->imp.jitter_ns);
	if (arrive < n->last_arrive)
		arrive = n->last_arrive; /* jitter alone never reorders */
	n->last_arrive = arrive;
	if (chance(&n->rng, n->thr_reorder)) {
		/* not folded into last_arrive: later frames may overtake it */
		arrive += 1 + rng_upto(&n->rng, n->imp.reorder_max_ns - 1);
		n->st.reordered++;
	}
	sl->arrive = arrive;
	sl->seq = fab->seq++;
	sl->from = (uint16_t)from;
	sl->to = (uint16_t)n->peer;
	sl->state = SLOT_WIRE;
	heap_push(fab, s);

	if (chance(&n->rng, n->thr_dup)) {
		uint32_t c;

		if (!pool_get(fab, &c)) {
			n->st.dup_no_frame++;
		} else {
			memcpy(slot_data(fab, c), slot_data(fab, s), len);
			fab->slots[c] = *sl;
			fab->slots[c].seq = fab->seq++;
			fab->slots[c].arrive += n->imp.dup_delay_ns;
			heap_push(fab, c);
			n->st.duplicated++;
		}
	}
	return true;
}

int loop_fabric_inject(struct loop_fabric *fab, unsigned from, const uint8_t *frame, uint32_t len)
{
	uint32_t s;

	if (from >= fab->nports || !fab->nodes[from].wired || !len || len > fab->slot_size ||
	    len > fab->mtu + LOOP_L2_OVERHEAD) {
		set_err(fab, "inject: port %u of %u (wired?), %u bytes", from, fab->nports, len);
		return -EINVAL;
	}
	if (!pool_get(fab, &s)) {
		set_err(fab, "inject: the frame pool is empty");
		return -ENOMEM;
	}
	memcpy(slot_data(fab, s), frame, len);
	fab->slots[s].len = len;
	if (!link_send(fab, from, s, loop_fabric_now(fab))) {
		pool_put(fab, s); /* back-pressure refused it */
		set_err(fab, "inject: the link's queue is full");
		return -EAGAIN;
	}
	return 0;
}

static uint16_t loop_tx_burst(struct port *p, struct uroce_frame *f, uint16_t nf)
{
	struct loop_fabric *fab = port_fab(p);
	struct loop_node *n = p->priv;
	unsigned from = p->cfg.loop_index;
	uint64_t now = loop_fabric_now(fab);
	uint16_t i;

	for (i = 0; i < nf; i++) {
		uint32_t s;

		if (!frame_is_app(fab, &f[i])) {
			/* not ours to free: count it and leave the memory alone */
			n->st.tx_invalid++;
			continue;
		}
		s = (uint32_t)f[i].cookie;
		if (f[i].len == 0 || f[i].len > fab->slot_size || f[i].len > fab->mtu + LOOP_L2_OVERHEAD) {
			n->st.tx_invalid++;
			pool_put(fab, s);
			continue;
		}
		if (!n->wired || !n->up) {
			n->st.link_down++;
			pool_put(fab, s);
			continue;
		}
		fab->slots[s].len = f[i].len;
		if (!link_send(fab, from, s, now))
			break;
	}
	return i;
}

static uint16_t loop_alloc(struct port *p, struct uroce_frame *f, uint16_t nf)
{
	struct loop_fabric *fab = port_fab(p);
	uint16_t i;

	for (i = 0; i < nf; i++) {
		uint32_t s;

		if (!pool_get(fab, &s))
			break;
		f[i].data = slot_data(fab, s);
		f[i].len = 0;
		f[i].room = fab->slot_size;
		f[i].cookie = s;
	}
	return i;
}

static void loop_free(struct port *p, struct uroce_frame *f, uint16_t nf)
{
	struct loop_fabric *fab = port_fab(p);

	for (uint16_t i = 0; i < nf; i++) {
		if (!frame_is_app(fab, &f[i])) {
			fab->free_invalid++; /* double free or a foreign frame */
			continue;
		}
		pool_put(fab, (uint32_t)f[i].cookie);
	}
}

static bool loop_link_up(struct port *p)
{
	struct loop_node *n = p->priv;

	return n->wired && n->up;
}

static void loop_poll(struct port *p)
{
	struct loop_fabric *fab = port_fab(p);

	if (fab->nheap)
		deliver_due(fab, loop_fabric_now(fab));
}

const struct port_ops port_loop_ops = {
	.name = "loop",
	.open = loop_open,
	.close = loop_close,
	.rx_burst = loop_rx_burst,
	.tx_burst = loop_tx_burst,
	.alloc = loop_alloc,
	.free = loop_free,
	.link_up = loop_link_up,
	.poll = loop_poll,
};
