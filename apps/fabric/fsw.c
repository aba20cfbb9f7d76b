/* SPDX-License-Identifier: MIT */
/* The switch core (see fsw.h): receive, route, queue, serialise, delay,
 * transmit. Everything a frame goes through after it arrives is a copy in
 * the egress port's own rings, so how deep a queue can grow does not
 * depend on any port's frame pool; a port TX frame is taken only when the
 * frame leaves the delay line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apps/fabric/fsw.h"
#include "apps/fabric/fsw_pkt.h"
#include "apps/fabric/fsw_ring.h"
#include "apps/fabric/fsw_route.h"
#include "dataplane/errbuf.h"
#include "dataplane/wire.h"

#define NS_PER_S 1000000000ull
#define FSW_RX_BURST 32u
#define FSW_TX_BURST 32u
/* Ethernet header and one 802.1Q tag: what a frame carries beyond the MTU. */
#define FSW_L2_OVERHEAD (ETH_HDR_LEN + VLAN_HDR_LEN)
/* The shortest frame the switch queues (Ethernet, IPv4, UDP): sizes the
 * rings so that the byte bounds, not the rings, decide what fits. */
#define FSW_MIN_FRAME (ETH_HDR_LEN + IPV4_HDR_LEN + UDP_HDR_LEN)
/* Delay-line room beyond the link's bytes in flight, for a port whose TX
 * ring is momentarily full (an AF_XDP socket in copy mode sends 32 frames
 * per kernel call). */
#define FSW_TX_SLACK_BYTES (256u * 1024u)
/* The delay line of an unlimited-rate link with a delay has no rate to
 * size it by. */
#define FSW_UNLIMITED_DELAY_BYTES (4u * 1024u * 1024u)
/* When a port refused frames, try again this much later. */
#define FSW_TX_RETRY_NS 20000ull

struct fsw_queue {
	struct fsw_ring ring;
	uint32_t limit;
	struct fsw_queue_stats st;
};

/* One port: what arrives on it, and its egress link. */
struct fsw_egress {
	struct port *port;
	struct fsw_port_cfg cfg;
	uint8_t smac[6];
	uint32_t max_frame;
	struct fsw_queue data;
	struct fsw_queue prio;
	struct fsw_ring delay;
	uint32_t delay_limit;
	uint64_t busy_until; /* when the frame being serialised has left */
	uint64_t red_pmax;   /* ecn_pmax * 2^32 */
	uint64_t rng;        /* splitmix64 state for RED-like marking */
	bool tx_blocked;
	struct fsw_port_stats st; /* rx, tx, tx_full, delay depth; queues keep their own */
};

struct fsw {
	unsigned n;
	fsw_clock_fn clock;
	void *clock_ctx;
	uint64_t now;
	uint64_t seed;
	struct fsw_stats st;
	struct fsw_rtab rt;
	struct uroce_frame burst[FSW_RX_BURST];
	struct fsw_egress eg[];
};

static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void drop(struct fsw *s, enum fsw_drop why)
{
	s->st.drops[why]++;
	s->st.drops_total++;
}

static inline void depth_add(struct fsw_queue_stats *st, uint32_t len)
{
	st->depth_bytes += len;
	st->depth_frames++;
	if (st->depth_bytes > st->max_depth_bytes)
		st->max_depth_bytes = st->depth_bytes;
}

/* Rounded up, so the link never runs faster than its rate. */
static inline uint64_t ser_ns(const struct fsw_egress *e, uint32_t len)
{
	uint64_t rate = e->cfg.rate_bps;

	return rate ? ((uint64_t)len * 8u * NS_PER_S + rate - 1) / rate : 0;
}

/* ---- enqueue ---- */

/* CE at this depth? Step marking at kmin, or RED's ramp to pmax at kmax. */
static bool ecn_mark(struct fsw_egress *e, uint32_t depth)
{
	const struct fsw_port_cfg *c = &e->cfg;
	uint64_t thr;

	if (!c->ecn_kmin || depth < c->ecn_kmin)
		return false;
	if (!c->ecn_kmax || depth >= c->ecn_kmax)
		return true;
	thr = e->red_pmax * (depth - c->ecn_kmin) / (c->ecn_kmax - c->ecn_kmin);
	return (splitmix64(&e->rng) >> 32) < thr;
}

static struct fsw_rec *prio_push(struct fsw *s, struct fsw_egress *e, uint32_t len)
{
	struct fsw_queue *q = &e->prio;
	struct fsw_rec *r = NULL;

	if (q->st.depth_bytes + len <= q->limit)
		r = fsw_ring_push(&q->ring, len);
	if (!r) {
		q->st.tail_drops++;
		drop(s, FSW_DROP_PRIO_FULL);
		return NULL;
	}
	q->st.enqueued++;
	q->st.enqueued_bytes += len;
	depth_add(&q->st, len);
	return r;
}

static void enqueue_prio(struct fsw *s, struct fsw_egress *e, const struct uroce_frame *f,
			 const struct fsw_hdr *h, uint64_t now)
{
	struct fsw_rec *r = prio_push(s, e, f->len);

	if (!r)
		return;
	r->t = now;
	memcpy(r->data, f->data, f->len);
	fsw_hdr_forward(r->data, h, e->cfg.peer_mac, e->smac, false);
}

/* The data queue is full: trim into the priority queue, or drop. */
static void overflow(struct fsw *s, struct fsw_egress *e, const struct uroce_frame *f, const struct fsw_hdr *h,
		     uint64_t now)
{
	struct fsw_queue *q = &e->data;
	uint32_t tlen = e->cfg.trim ? fsw_trim_len(f->data, f->len, h) : 0;
	struct fsw_rec *r;

	if (!tlen) {
		q->st.tail_drops++;
		drop(s, FSW_DROP_QUEUE_FULL);
		return;
	}
	q->st.trimmed++;
	r = prio_push(s, e, tlen);
	if (!r) {
		q->st.trim_drops++;
		return;
	}
	r->t = now;
	fsw_trim_write(f->data, h, tlen, e->cfg.trim_dscp, r->data);
	fsw_hdr_forward(r->data, h, e->cfg.peer_mac, e->smac, false);
}

static void enqueue_data(struct fsw *s, struct fsw_egress *e, const struct uroce_frame *f,
			 const struct fsw_hdr *h, uint64_t now)
{
	struct fsw_queue *q = &e->data;
	uint32_t depth = q->st.depth_bytes;
	struct fsw_rec *r;
	bool ce;

	if (depth + f->len > q->limit || !(r = fsw_ring_push(&q->ring, f->len))) {
		overflow(s, e, f, h, now);
		return;
	}
	/* ECT(0) and ECT(1) only: a Not-ECT sender would not understand CE,
	 * and CE is already marked */
	ce = fsw_hdr_ecn(f->data, h) != FSW_ECN_NOT_ECT && fsw_hdr_ecn(f->data, h) != FSW_ECN_CE &&
	     ecn_mark(e, depth);
	r->t = now;
	memcpy(r->data, f->data, f->len);
	fsw_hdr_forward(r->data, h, e->cfg.peer_mac, e->smac, ce);
	q->st.enqueued++;
	q->st.enqueued_bytes += f->len;
	q->st.ecn_marked += ce;
	depth_add(&q->st, f->len);
}

/* ---- serialisation, delay line, transmit ---- */

static void to_delay_line(struct fsw *s, struct fsw_egress *e, const struct fsw_rec *src, uint64_t due)
{
	struct fsw_rec *r = NULL;

	if (e->st.delay_depth_bytes + src->len <= e->delay_limit)
		r = fsw_ring_push(&e->delay, src->len);
	if (!r) {
		e->st.tx_full++;
		drop(s, FSW_DROP_TX_FULL);
		return;
	}
	r->t = due;
	memcpy(r->data, src->data, src->len);
	e->st.delay_depth_bytes += src->len;
}

/* Start the serialisation of every frame whose turn has come by now: the
 * link is free at t = max(busy_until, first arrival), and at t the
 * priority queue goes first if it holds a frame that had arrived by then.
 * Stepping through t rather than now keeps the departures of a burst
 * exactly len*8/rate apart however late the pass runs. */
static unsigned serialise(struct fsw *s, struct fsw_egress *e, uint64_t now)
{
	unsigned n = 0;

	for (;;) {
		struct fsw_rec *p = fsw_ring_first(&e->prio.ring), *d = fsw_ring_first(&e->data.ring), *r;
		struct fsw_queue *q;
		uint64_t t;

		if (!p && !d)
			break;
		t = p && (!d || p->t <= d->t) ? p->t : d->t;
		if (t < e->busy_until)
			t = e->busy_until;
		if (t > now)
			break;
		if (p && p->t <= t) {
			q = &e->prio;
			r = p;
		} else {
			q = &e->data;
			r = d;
		}
		e->busy_until = t + ser_ns(e, r->len);
		to_delay_line(s, e, r, e->busy_until + e->cfg.delay_ns);
		q->st.sent++;
		q->st.sent_bytes += r->len;
		q->st.depth_bytes -= r->len;
		q->st.depth_frames--;
		fsw_ring_pop(&q->ring);
		n++;
	}
	return n;
}

/* Hand the frames that are due to the port, a burst at a time; what the
 * port refuses stays in the delay line for the next pass. */
static unsigned transmit(struct fsw *s, struct fsw_egress *e, uint64_t now)
{
	struct uroce_frame f[FSW_TX_BURST];
	unsigned total = 0;

	e->tx_blocked = false;
	for (;;) {
		struct fsw_rec *r = fsw_ring_first(&e->delay);
		uint16_t n = 0, got, sent;

		for (struct fsw_rec *x = r; x && x->t <= now && n < FSW_TX_BURST; x = fsw_ring_next(&e->delay, x))
			n++;
		if (!n)
			break;
		got = port_alloc(e->port, f, n);
		for (uint16_t i = 0; i < got; i++, r = fsw_ring_next(&e->delay, r)) {
			/* fits: max_frame is at most a frame's room (fsw_create) */
			memcpy(f[i].data, r->data, r->len);
			f[i].len = r->len;
		}
		sent = got ? port_tx_burst(e->port, f, got) : 0;
		if (sent < got)
			port_free(e->port, f + sent, (uint16_t)(got - sent));
		for (uint16_t i = 0; i < sent; i++) {
			e->st.tx_frames++;
			e->st.tx_bytes += f[i].len;
			e->st.delay_depth_bytes -= f[i].len;
			s->st.tx_frames++;
			s->st.tx_bytes += f[i].len;
			fsw_ring_pop(&e->delay);
		}
		total += sent;
		if (sent < n) {
			e->tx_blocked = true;
			break;
		}
	}
	return total;
}

/* ---- receive ---- */

static void rx_frame(struct fsw *s, struct fsw_egress *in, const struct uroce_frame *f, uint64_t now)
{
	struct fsw_egress *e;
	struct fsw_hdr h;
	enum fsw_drop why;
	int out;

	in->st.rx_frames++;
	in->st.rx_bytes += f->len;
	s->st.rx_frames++;
	s->st.rx_bytes += f->len;
	why = fsw_hdr_parse(f->data, f->len, &h);
	if (why != FSW_DROP_NONE) {
		drop(s, why);
		return;
	}
	out = fsw_rtab_egress(&s->rt, f->data, &h);
	if (out < 0) {
		drop(s, FSW_DROP_NO_ROUTE);
		return;
	}
	/* a router sends ICMP time exceeded; this one only counts */
	if (fsw_hdr_ttl(f->data, &h) <= 1) {
		drop(s, FSW_DROP_TTL);
		return;
	}
	e = &s->eg[out];
	if (f->len > e->max_frame) {
		drop(s, FSW_DROP_TOO_BIG);
		return;
	}
	/* the queue as it stands at this arrival, whatever the RX burst */
	serialise(s, e, now);
	if (fsw_hdr_is_cnp(f->data, &h))
		enqueue_prio(s, e, f, &h, now);
	else
		enqueue_data(s, e, f, &h, now);
}

unsigned fsw_poll(struct fsw *s)
{
	uint64_t now = s->clock(s->clock_ctx);
	unsigned work = 0;

	if (now < s->now)
		now = s->now; /* time never runs backwards for the queues */
	s->now = now;
	for (unsigned i = 0; i < s->n; i++)
		port_poll(s->eg[i].port);
	for (unsigned i = 0; i < s->n; i++) {
		struct fsw_egress *in = &s->eg[i];
		uint16_t n = port_rx_burst(in->port, s->burst, FSW_RX_BURST);

		for (uint16_t k = 0; k < n; k++)
			rx_frame(s, in, &s->burst[k], now);
		if (n)
			port_free(in->port, s->burst, n);
		work += n;
	}
	for (unsigned i = 0; i < s->n; i++) {
		work += serialise(s, &s->eg[i], now);
		work += transmit(s, &s->eg[i], now);
	}
	return work;
}

uint64_t fsw_next_event(const struct fsw *s)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < s->n; i++) {
		const struct fsw_egress *e = &s->eg[i];
		const struct fsw_rec *p = fsw_ring_first(&e->prio.ring), *d = fsw_ring_first(&e->data.ring);
		const struct fsw_rec *r = fsw_ring_first(&e->delay);
		uint64_t t;

		if (e->tx_blocked) {
			/* the head is due already: only a retry can move it */
			if (s->now + FSW_TX_RETRY_NS < next)
				next = s->now + FSW_TX_RETRY_NS;
		} else if (r && r->t < next) {
			next = r->t;
		}
		if (p || d) {
			t = p && (!d || p->t <= d->t) ? p->t : d->t;
			if (t < e->busy_until)
				t = e->busy_until;
			if (t < next)
				next = t;
		}
	}
	return next;
}

unsigned fsw_frames_held(const struct fsw *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->n; i++)
		n += s->eg[i].data.ring.count + s->eg[i].prio.ring.count + s->eg[i].delay.count;
	return n;
}

void fsw_stats(const struct fsw *s, struct fsw_stats *st)
{
	*st = s->st;
}

int fsw_port_stats(const struct fsw *s, unsigned port, struct fsw_port_stats *st)
{
	if (port >= s->n)
		return -EINVAL;
	*st = s->eg[port].st;
	st->data = s->eg[port].data.st;
	st->prio = s->eg[port].prio.st;
	return 0;
}

const char *fsw_port_name(const struct fsw *s, unsigned port)
{
	return port < s->n ? s->eg[port].cfg.name : "";
}

unsigned fsw_nports(const struct fsw *s)
{
	return s->n;
}

uint64_t fsw_now(const struct fsw *s)
{
	return s->now;
}

/* ---- setup ---- */

static int queue_init(struct fsw_queue *q, uint32_t limit, uint32_t max_frame)
{
	memset(q, 0, sizeof(*q));
	q->limit = limit;
	return fsw_ring_init(&q->ring, fsw_ring_size_for(limit, FSW_MIN_FRAME, max_frame));
}

/* Bytes the delay line must hold: what is in flight on the link during
 * delay_ns at rate_bps, one frame, and the TX slack. */
static uint32_t delay_limit(const struct fsw_port_cfg *c, uint32_t max_frame)
{
	uint64_t bdp;

	if (c->rate_bps)
		bdp = (uint64_t)(((unsigned __int128)c->rate_bps * c->delay_ns + 8 * NS_PER_S - 1) / (8 * NS_PER_S));
	else
		bdp = c->delay_ns ? FSW_UNLIMITED_DELAY_BYTES : 0;
	/* fsw_cfg_check bounds rate x delay well below this */
	if (bdp > FSW_QUEUE_BYTES_MAX)
		bdp = FSW_QUEUE_BYTES_MAX;
	return (uint32_t)bdp + max_frame + FSW_TX_SLACK_BYTES;
}

static int egress_init(struct fsw *s, unsigned i, const struct fsw_cfg *cfg, struct port *p, char *err, size_t errlen)
{
	static const uint8_t zero_mac[6];
	struct fsw_egress *e = &s->eg[i];
	struct uroce_frame f;
	uint64_t x;

	e->port = p;
	e->cfg = cfg->port[i];
	if (!e->cfg.queue_bytes)
		e->cfg.queue_bytes = FSW_QUEUE_BYTES_DEFAULT;
	if (!e->cfg.prio_bytes)
		e->cfg.prio_bytes = FSW_PRIO_BYTES_DEFAULT;
	memcpy(e->smac, memcmp(e->cfg.mac, zero_mac, 6) ? e->cfg.mac : p->mac, 6);

	/* A queued frame must fit the TX frame it leaves in: probe one. */
	if (port_alloc(p, &f, 1) != 1)
		return errbuf_fail(err, errlen, -ENOMEM, "port %u (%s): no TX frame to probe its size", i,
				   e->cfg.name);
	port_free(p, &f, 1);
	e->max_frame = p->mtu ? p->mtu + FSW_L2_OVERHEAD : f.room;
	if (e->max_frame > f.room)
		e->max_frame = f.room;
	if (e->max_frame < FSW_MIN_FRAME + BTH_LEN + ICRC_LEN)
		return errbuf_fail(err, errlen, -EINVAL, "port %u (%s): frames of %u bytes are too small", i,
				   e->cfg.name, e->max_frame);

	x = s->seed ^ (0x9e3779b97f4a7c15ull * (i + 1));
	e->rng = splitmix64(&x);
	e->red_pmax = (uint64_t)(e->cfg.ecn_pmax * 4294967296.0);
	e->delay_limit = delay_limit(&e->cfg, e->max_frame);
	if (queue_init(&e->data, e->cfg.queue_bytes, e->max_frame) ||
	    queue_init(&e->prio, e->cfg.prio_bytes, e->max_frame) ||
	    fsw_ring_init(&e->delay, fsw_ring_size_for(e->delay_limit, FSW_MIN_FRAME, e->max_frame)))
		return errbuf_fail(err, errlen, -ENOMEM, "port %u (%s): out of memory for its queues", i, e->cfg.name);
	return 0;
}

struct fsw *fsw_create(const struct fsw_cfg *cfg, struct port *const *ports, unsigned n, fsw_clock_fn clock,
                       void *clock_ctx, char *err, size_t errlen)
{
	struct fsw *s;

	if (fsw_cfg_check(cfg, err, errlen))
		return NULL;
	if (n != cfg->nports || !ports || !clock) {
		errbuf_fail(err, errlen, -EINVAL, "fsw_create: %u ports given for a configuration of %u%s", n,
			    cfg->nports, clock ? "" : ", and no clock");
		return NULL;
	}
	s = calloc(1, sizeof(*s) + n * sizeof(s->eg[0]));
	if (!s) {
		errbuf_fail(err, errlen, -ENOMEM, "out of memory for the switch");
		return NULL;
	}
	s->n = n;
	s->seed = cfg->seed;
	s->clock = clock;
	s->clock_ctx = clock_ctx;
	fsw_rtab_build(&s->rt, cfg);
	for (unsigned i = 0; i < n; i++) {
		if (!ports[i]) {
			errbuf_fail(err, errlen, -EINVAL, "port %u is not open", i);
			goto fail;
		}
		if (egress_init(s, i, cfg, ports[i], err, errlen))
			goto fail;
	}
	s->now = clock(clock_ctx);
	return s;
fail:
	fsw_destroy(s);
	return NULL;
}

void fsw_destroy(struct fsw *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n; i++) {
		fsw_ring_free(&s->eg[i].data.ring);
		fsw_ring_free(&s->eg[i].prio.ring);
		fsw_ring_free(&s->eg[i].delay);
	}
	free(s);
}
