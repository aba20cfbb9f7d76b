/* SPDX-License-Identifier: MIT */
/* A switch over loop ports for the fabric tests: switch port i is loop
 * port i, wired to host port n+i (host i, 10.<i+1>.0.2 and
 * fd00:<i+1>::2, its subnet routed to port i unless a test adds other
 * routes). Hosts inject RoCEv2 frames built with roce_build; a driver
 * steps simulated time from event to event and logs every frame a host
 * receives with its arrival time. */
#ifndef UROCE_TESTS_FSW_TEST_H
#define UROCE_TESTS_FSW_TEST_H

#include <arpa/inet.h>
#include <string.h>

#include "apps/fabric/fsw.h"
#include "dataplane/port_loop.h"
#include "dataplane/wire.h"
#include "tests/unit/dataplane/dp_test.h"

#define RIG_PORTS_MAX 8u
#define RIG_LOG_MAX 4096u
/* A driver that takes more steps than this is stuck, not slow. */
#define RIG_STEPS_MAX 2000000u

struct rx_entry {
	uint64_t t;
	uint32_t len;
	enum uroce_drop_reason parse; /* roce_parse's verdict */
	struct roce_pkt pkt;          /* valid when parse == UROCE_DROP_NONE (payload not kept) */
	uint8_t head[80];             /* the frame's first bytes */
};

struct rig {
	unsigned n;
	struct loop_fabric *fab;
	struct port *sw[RIG_PORTS_MAX];
	struct port *host[RIG_PORTS_MAX];
	struct fsw_cfg cfg;
	struct fsw *s;
	uint64_t hash; /* everything every host received, with its time */
	unsigned nlog[RIG_PORTS_MAX];
	struct rx_entry *log[RIG_PORTS_MAX];
};

static inline uint32_t rig_host_ip(unsigned i)
{
	return htonl(0x0a000002u | (uint32_t)(i + 1) << 16);
}

static inline void rig_host_ip6(unsigned i, uint8_t ip[16])
{
	memset(ip, 0, 16);
	ip[0] = 0xfd;
	ip[3] = (uint8_t)(i + 1);
	ip[15] = 2;
}

/* Fill r->cfg with n ports (defaults, peers the hosts) and the hosts'
 * routes; the test changes what it needs, then rig_open. */
static inline void rig_cfg(struct rig *r, unsigned n, uint64_t seed)
{
	char spec[64], err[256];

	memset(r, 0, sizeof(*r));
	REQUIRE(n <= RIG_PORTS_MAX, "too many ports");
	r->n = n;
	fsw_cfg_init(&r->cfg);
	r->cfg.seed = seed;
	for (unsigned i = 0; i < n; i++) {
		uint8_t mac[6];

		loop_port_mac(n + i, mac);
		snprintf(spec, sizeof(spec), "p%u,peer=%02x:%02x:%02x:%02x:%02x:%02x", i, mac[0], mac[1], mac[2], mac[3],
			 mac[4], mac[5]);
		REQUIRE(fsw_cfg_add_port(&r->cfg, spec, err, sizeof(err)) == 0, "%s", err);
		snprintf(spec, sizeof(spec), "10.%u.0.0/16=%u", i + 1, i);
		REQUIRE(fsw_cfg_add_route(&r->cfg, spec, err, sizeof(err)) == 0, "%s", err);
		snprintf(spec, sizeof(spec), "fd00:%u::/32=%u", i + 1, i);
		REQUIRE(fsw_cfg_add_route(&r->cfg, spec, err, sizeof(err)) == 0, "%s", err);
	}
}

static inline void rig_route(struct rig *r, const char *spec)
{
	char err[256];

	REQUIRE(fsw_cfg_add_route(&r->cfg, spec, err, sizeof(err)) == 0, "%s", err);
}

static inline struct port *rig_open_port(struct loop_fabric *fab, unsigned index)
{
	struct port_config pc = { .kind = PORT_KIND_LOOP, .fabric = fab, .loop_index = index };
	struct port *p = NULL;
	char err[256] = "";

	REQUIRE(port_open(&p, &pc, err, sizeof(err)) == 0, "loop port %u: %s", index, err);
	return p;
}

/* nframes: the loop pool (0 = default); host_link: impairment of every
 * switch -> host direction (NULL = perfect). */
static inline void rig_open_opts(struct rig *r, uint32_t nframes, const struct loop_impairment *host_link)
{
	struct loop_fabric_opts o = { .nports = 2 * r->n, .seed = r->cfg.seed, .nframes = nframes };
	char err[256] = "";

	r->fab = loop_fabric_create_opts(&o, err, sizeof(err));
	REQUIRE(r->fab, "loop fabric: %s", err);
	for (unsigned i = 0; i < r->n; i++) {
		REQUIRE(loop_fabric_connect(r->fab, i, r->n + i, host_link, NULL) == 0, "connect: %s",
			loop_fabric_last_error(r->fab));
		r->sw[i] = rig_open_port(r->fab, i);
		r->host[i] = rig_open_port(r->fab, r->n + i);
		r->log[i] = calloc(RIG_LOG_MAX, sizeof(struct rx_entry));
		REQUIRE(r->log[i], "out of memory");
	}
	r->s = fsw_create(&r->cfg, r->sw, r->n, loop_fabric_clock, r->fab, err, sizeof(err));
	REQUIRE(r->s, "fsw_create: %s", err);
	r->hash = TEST_HASH_INIT;
}

static inline void rig_open(struct rig *r)
{
	rig_open_opts(r, 0, NULL);
}

static inline void rig_close(struct rig *r)
{
	fsw_destroy(r->s);
	for (unsigned i = 0; i < r->n; i++) {
		port_close(r->sw[i]);
		port_close(r->host[i]);
		free(r->log[i]);
	}
	loop_fabric_destroy(r->fab);
}

/* A RoCEv2 UC WRITE Only (payload_len bytes) from host `from` to an IPv4
 * destination, PSN psn; the test adjusts the rest. */
static inline void rig_pkt(const struct rig *r, struct roce_pkt *p, unsigned from, uint32_t dst_be, uint16_t sport,
			   uint32_t psn, uint32_t payload_len)
{
	memset(p, 0, sizeof(*p));
	/* the MACs loop ports get: usable before rig_open */
	loop_port_mac(r->n + from, p->smac);
	loop_port_mac(from, p->dmac);
	roce_ipv4_mapped(p->sip, rig_host_ip(from));
	roce_ipv4_mapped(p->dip, dst_be);
	p->ttl = 64;
	p->dont_fragment = true;
	p->sport = sport;
	p->dport = ROCE_UDP_PORT;
	p->opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY;
	p->pkey = ROCE_PKEY_DEFAULT;
	p->dqpn = 0x12;
	p->psn = psn & ROCE_PSN_MASK;
	p->reth.va = 0x10000;
	p->reth.rkey = 0x77;
	p->reth.dma_len = payload_len;
	p->payload_len = payload_len;
}

static inline void rig_pkt6(const struct rig *r, struct roce_pkt *p, unsigned from, unsigned to, uint16_t sport,
			    uint32_t psn, uint32_t payload_len)
{
	rig_pkt(r, p, from, rig_host_ip(to), sport, psn, payload_len);
	p->ipv6 = true;
	rig_host_ip6(from, p->sip);
	rig_host_ip6(to, p->dip);
	p->flow_label = 0x12345;
}

/* Build p (payload bytes derived from the PSN) and inject it from host
 * `from`. Returns the frame length. */
static inline uint32_t rig_send(struct rig *r, unsigned from, const struct roce_pkt *p)
{
	uint8_t buf[9216], payload[8192];
	struct roce_pkt q = *p;
	int len;

	REQUIRE(q.payload_len <= sizeof(payload), "payload too long");
	for (uint32_t i = 0; i < q.payload_len; i++)
		payload[i] = (uint8_t)(q.psn * 7u + i);
	q.payload = payload;
	len = roce_build(buf, sizeof(buf), &q);
	REQUIRE(len > 0, "roce_build: %d", len);
	REQUIRE(loop_fabric_inject(r->fab, r->n + from, buf, (uint32_t)len) == 0, "inject from host %u", from);
	return (uint32_t)len;
}

static inline void rig_send_raw(struct rig *r, unsigned from, const uint8_t *buf, uint32_t len)
{
	REQUIRE(loop_fabric_inject(r->fab, r->n + from, buf, len) == 0, "inject from host %u", from);
}

static inline void rig_drain(struct rig *r)
{
	struct uroce_frame f[PORT_BURST_MAX];
	uint64_t now = loop_fabric_now(r->fab);

	for (unsigned i = 0; i < r->n; i++) {
		uint16_t n;

		while ((n = port_rx_burst(r->host[i], f, PORT_BURST_MAX))) {
			for (uint16_t k = 0; k < n; k++) {
				struct rx_entry e;

				memset(&e, 0, sizeof(e));
				e.t = now;
				e.len = f[k].len;
				e.parse = roce_parse(f[k].data, f[k].len, &e.pkt, NULL);
				e.pkt.payload = NULL;
				memcpy(e.head, f[k].data, f[k].len < sizeof(e.head) ? f[k].len : sizeof(e.head));
				r->hash = test_hash(r->hash, &now, sizeof(now));
				r->hash = test_hash(r->hash, &i, sizeof(i));
				r->hash = test_hash(r->hash, f[k].data, f[k].len);
				if (r->nlog[i] < RIG_LOG_MAX)
					r->log[i][r->nlog[i]++] = e;
			}
			port_free(r->host[i], f, n);
		}
	}
}

/* Poll the switch, take what the hosts received, step to the next event;
 * until nothing is left anywhere or time passes `until` (ns). */
static inline void rig_run_until(struct rig *r, uint64_t until)
{
	for (unsigned steps = 0;; steps++) {
		uint64_t next, fab_next, now;

		REQUIRE(steps < RIG_STEPS_MAX, "the switch does not go idle");
		if (fsw_poll(r->s)) {
			/* more may wait in the RX rings at this same time */
			rig_drain(r);
			continue;
		}
		rig_drain(r);
		next = fsw_next_event(r->s);
		fab_next = loop_fabric_next_event(r->fab);
		if (fab_next < next)
			next = fab_next;
		now = loop_fabric_now(r->fab);
		if (next == UINT64_MAX || next > until)
			break;
		loop_fabric_advance(r->fab, next > now ? next - now : 0);
	}
}

static inline void rig_run(struct rig *r)
{
	rig_run_until(r, UINT64_MAX);
}

static inline struct fsw_port_stats rig_port_stats(const struct rig *r, unsigned i)
{
	struct fsw_port_stats st;

	REQUIRE(fsw_port_stats(r->s, i, &st) == 0, "port stats %u", i);
	return st;
}

/* Every received frame is enqueued somewhere or dropped for one reason;
 * once idle nothing is held and no loop frame is lost. */
static inline void rig_check_accounting(const struct rig *r)
{
	struct fsw_stats st;
	uint64_t enq = 0;

	fsw_stats(r->s, &st);
	for (unsigned i = 0; i < r->n; i++) {
		struct fsw_port_stats ps = rig_port_stats(r, i);

		enq += ps.data.enqueued + ps.prio.enqueued;
	}
	CHECK(st.rx_frames == enq + st.drops_total, "rx %llu != enqueued %llu + dropped %llu",
	      (unsigned long long)st.rx_frames, (unsigned long long)enq, (unsigned long long)st.drops_total);
	CHECK(fsw_frames_held(r->s) == 0, "%u frames still held", fsw_frames_held(r->s));
}

#endif /* UROCE_TESTS_FSW_TEST_H */
