/* SPDX-License-Identifier: MIT */
/* The run-to-completion engine: one poll loop per core over its ports,
 * its timing wheel and the command rings of the app threads. Nothing on
 * the per-packet path locks, allocates or enters the kernel. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dataplane/errbuf.h"
#include "dataplane/engine.h"

#define CACHE_LINE 64

struct engine_port {
	struct port *port;
	uint16_t ntx;
	/* staged since the last flush: a port that refused part of a burst
	 * is tried again after a new full burst or at the end of the
	 * iteration, not on every engine_tx */
	uint16_t fresh;
	struct uroce_frame tx[ENGINE_TX_STAGE];
};

/* All per-core state in one cache-aligned block; the fields every
 * iteration reads come first. */
struct engine {
	uint64_t now;
	unsigned nports;
	unsigned ncmd;
	uint16_t burst;
	engine_clock_fn clock;
	void *clock_ctx;
	engine_rx_fn rx_fn;
	void *rx_ctx;
	struct roce_parse_opts parse;
	struct engine_stats stats;
	struct spsc_ring *cmd[ENGINE_MAX_CMD_RINGS];

	_Alignas(CACHE_LINE) _Atomic bool stop;

	_Alignas(CACHE_LINE) struct timer_wheel wheel;
	struct engine_port ports[ENGINE_MAX_PORTS];

	/* control, off the hot path */
	pthread_t thread;
	bool started;
	bool pin;
	unsigned cpu;
	bool idle_yield;
};


uint64_t engine_clock_monotonic(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no kernel entry */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct engine *engine_create(const struct engine_config *cfg, char *err, size_t errlen)
{
	struct engine *eng;
	uint16_t burst = cfg->burst ? cfg->burst : ENGINE_BURST_DEFAULT;
	uint64_t tick = cfg->tick_ns ? cfg->tick_ns : ENGINE_TICK_NS_DEFAULT;
	uint32_t ring_size = cfg->cmd_ring_size ? cfg->cmd_ring_size : ENGINE_CMD_RING_DEFAULT;

	if (cfg->nports > ENGINE_MAX_PORTS) {
		errbuf_fail(err, errlen, 0, "engine: %u ports; accepted: 0-%u per engine (use another engine for more)",
		     cfg->nports, ENGINE_MAX_PORTS);
		return NULL;
	}
	for (unsigned i = 0; i < cfg->nports; i++) {
		if (!cfg->ports || !cfg->ports[i]) {
			errbuf_fail(err, errlen, 0, "engine: port %u is NULL; open every port before engine_create", i);
			return NULL;
		}
	}
	if (burst > PORT_BURST_MAX) {
		errbuf_fail(err, errlen, 0, "engine: burst %u; accepted: 1-%u (0 = %u)", burst, PORT_BURST_MAX,
		     ENGINE_BURST_DEFAULT);
		return NULL;
	}
	if (cfg->ncmd_rings > ENGINE_MAX_CMD_RINGS) {
		errbuf_fail(err, errlen, 0, "engine: %u command rings; accepted: 0-%u", cfg->ncmd_rings,
		     ENGINE_MAX_CMD_RINGS);
		return NULL;
	}
	if (cfg->ncmd_rings && !spsc_ring_memsize(ring_size, sizeof(struct engine_cmd))) {
		errbuf_fail(err, errlen, 0, "engine: command ring size %u; accepted: a power of two up to %u (0 = %u)",
		     ring_size, SPSC_RING_MAX_COUNT, ENGINE_CMD_RING_DEFAULT);
		return NULL;
	}

	eng = aligned_alloc(CACHE_LINE, (sizeof(*eng) + CACHE_LINE - 1) & ~(size_t)(CACHE_LINE - 1));
	if (!eng) {
		errbuf_fail(err, errlen, 0, "engine: out of memory");
		return NULL;
	}
	memset(eng, 0, sizeof(*eng));
	eng->nports = cfg->nports;
	eng->burst = burst;
	eng->clock = cfg->clock ? cfg->clock : engine_clock_monotonic;
	eng->clock_ctx = cfg->clock_ctx;
	eng->parse = cfg->parse;
	eng->pin = cfg->pin;
	eng->cpu = cfg->cpu;
	eng->idle_yield = cfg->idle_yield;
	atomic_init(&eng->stop, false);
	for (unsigned i = 0; i < cfg->nports; i++)
		eng->ports[i].port = cfg->ports[i];
	for (unsigned i = 0; i < cfg->ncmd_rings; i++) {
		eng->cmd[i] = spsc_ring_create(ring_size, sizeof(struct engine_cmd));
		if (!eng->cmd[i]) {
			errbuf_fail(err, errlen, 0, "engine: out of memory for command ring %u", i);
			goto free_rings;
		}
		eng->ncmd = i + 1;
	}
	eng->now = eng->clock(eng->clock_ctx);
	timer_wheel_init(&eng->wheel, tick, eng->now);
	return eng;

free_rings:
	for (unsigned i = 0; i < eng->ncmd; i++)
		spsc_ring_destroy(eng->cmd[i]);
	free(eng);
	return NULL;
}

void engine_destroy(struct engine *eng)
{
	if (!eng)
		return;
	engine_stop(eng);
	for (unsigned i = 0; i < eng->nports; i++) {
		struct engine_port *ep = &eng->ports[i];

		if (ep->ntx)
			port_free(ep->port, ep->tx, ep->ntx);
		ep->ntx = 0;
	}
	timer_wheel_clear(&eng->wheel);
	for (unsigned i = 0; i < eng->ncmd; i++)
		spsc_ring_destroy(eng->cmd[i]);
	free(eng);
}

void engine_set_rx_handler(struct engine *eng, engine_rx_fn fn, void *ctx)
{
	eng->rx_fn = fn;
	eng->rx_ctx = ctx;
}

/* Hand staged frames to the port, PORT_BURST_MAX at a time; what it does
 * not take moves to the front of the stage for the next flush. */
static unsigned flush_port(struct engine *eng, struct engine_port *ep)
{
	uint16_t done = 0;

	while (done < ep->ntx) {
		uint16_t chunk = ep->ntx - done;
		uint16_t sent;

		if (chunk > PORT_BURST_MAX)
			chunk = PORT_BURST_MAX;
		sent = port_tx_burst(ep->port, ep->tx + done, chunk);
		done += sent;
		if (sent < chunk) {
			eng->stats.tx_partial++;
			break;
		}
	}
	if (done && done < ep->ntx)
		memmove(ep->tx, ep->tx + done, (size_t)(ep->ntx - done) * sizeof(ep->tx[0]));
	ep->ntx -= done;
	ep->fresh = 0;
	eng->stats.tx_sent += done;
	return done;
}

int engine_tx(struct engine *eng, unsigned port, const struct uroce_frame *f)
{
	struct engine_port *ep;

	if (port >= eng->nports)
		return -EINVAL;
	ep = &eng->ports[port];
	if (ep->ntx == ENGINE_TX_STAGE) {
		flush_port(eng, ep);
		if (ep->ntx == ENGINE_TX_STAGE) {
			eng->stats.tx_full++;
			return -ENOBUFS;
		}
	}
	ep->tx[ep->ntx++] = *f;
	eng->stats.tx_staged++;
	if (++ep->fresh >= eng->burst)
		flush_port(eng, ep);
	return 0;
}

bool engine_tx_room(struct engine *eng, unsigned port)
{
	struct engine_port *ep;

	if (port >= eng->nports)
		return false;
	ep = &eng->ports[port];
	if (ep->ntx == ENGINE_TX_STAGE)
		flush_port(eng, ep);
	return ep->ntx < ENGINE_TX_STAGE;
}

uint64_t engine_tx_staged(const struct engine *eng)
{
	return eng->stats.tx_staged;
}

uint16_t engine_alloc(struct engine *eng, unsigned port, struct uroce_frame *f, uint16_t n)
{
	if (port >= eng->nports)
		return 0;
	return port_alloc(eng->ports[port].port, f, n);
}

static unsigned rx_port(struct engine *eng, unsigned pi)
{
	struct port *p = eng->ports[pi].port;
	struct uroce_frame rx[PORT_BURST_MAX];
	struct uroce_frame done[PORT_BURST_MAX];
	struct roce_pkt pkt;
	uint16_t n, ndone = 0;

	n = port_rx_burst(p, rx, eng->burst);
	for (uint16_t i = 0; i < n; i++) {
		enum uroce_drop_reason r;

		if (i + 1 < n)
			__builtin_prefetch(rx[i + 1].data);
		r = roce_parse(rx[i].data, rx[i].len, &pkt, &eng->parse);
		if (r != UROCE_DROP_NONE) {
			port_count_drop(p, r);
			eng->stats.rx_dropped++;
			done[ndone++] = rx[i];
			continue;
		}
		if (!eng->rx_fn) {
			eng->stats.rx_unhandled++;
			done[ndone++] = rx[i];
			continue;
		}
		if (!eng->rx_fn(eng, pi, &rx[i], &pkt, eng->rx_ctx))
			done[ndone++] = rx[i];
	}
	if (ndone)
		port_free(p, done, ndone);
	eng->stats.rx_frames += n;
	return n;
}

static unsigned run_cmds(struct engine *eng, struct spsc_ring *r)
{
	struct engine_cmd cmds[PORT_BURST_MAX];
	uint32_t n = spsc_ring_dequeue_burst(r, cmds, eng->burst);

	for (uint32_t i = 0; i < n; i++)
		cmds[i].fn(eng, cmds[i].arg, cmds[i].data);
	eng->stats.cmds += n;
	return n;
}

unsigned engine_poll_once(struct engine *eng)
{
	unsigned work = 0, fired;

	eng->now = eng->clock(eng->clock_ctx);
	eng->stats.iterations++;
	for (unsigned i = 0; i < eng->nports; i++)
		work += rx_port(eng, i);
	fired = timer_wheel_advance(&eng->wheel, eng->now);
	eng->stats.timers += fired;
	work += fired;
	for (unsigned i = 0; i < eng->ncmd; i++)
		work += run_cmds(eng, eng->cmd[i]);
	for (unsigned i = 0; i < eng->nports; i++) {
		struct engine_port *ep = &eng->ports[i];

		if (ep->ntx)
			work += flush_port(eng, ep);
		port_poll(ep->port);
	}
	return work;
}

void engine_run(struct engine *eng)
{
	while (!atomic_load_explicit(&eng->stop, memory_order_acquire)) {
		if (!engine_poll_once(eng) && eng->idle_yield)
			sched_yield();
	}
}

void engine_request_stop(struct engine *eng)
{
	atomic_store_explicit(&eng->stop, true, memory_order_release);
}

static void *engine_thread(void *arg)
{
	engine_run(arg);
	return NULL;
}

int engine_start(struct engine *eng, char *err, size_t errlen)
{
	pthread_attr_t attr;
	int rc;

	if (eng->started)
		return errbuf_fail(err, errlen, -EBUSY, "engine: already started");
	rc = pthread_attr_init(&attr);
	if (rc)
		return errbuf_fail(err, errlen, -rc, "engine: pthread_attr_init: %s", strerror(rc));
	if (eng->pin) {
		cpu_set_t set;

		if (eng->cpu >= CPU_SETSIZE) {
			pthread_attr_destroy(&attr);
			return errbuf_fail(err, errlen, -EINVAL, "engine: cpu %u; accepted: 0-%d", eng->cpu, CPU_SETSIZE - 1);
		}
		CPU_ZERO(&set);
		CPU_SET(eng->cpu, &set);
		rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		if (rc) {
			pthread_attr_destroy(&attr);
			return errbuf_fail(err, errlen, -rc, "engine: cannot pin to cpu %u: %s", eng->cpu, strerror(rc));
		}
	}
	atomic_store_explicit(&eng->stop, false, memory_order_release);
	rc = pthread_create(&eng->thread, &attr, engine_thread, eng);
	pthread_attr_destroy(&attr);
	if (rc) {
		/* an affinity to a CPU that is offline or outside our cpuset
		 * shows up here as EINVAL */
		return errbuf_fail(err, errlen, -rc, "engine: cannot start thread%s: %s",
			    eng->pin ? " (is the pinned cpu online and allowed?)" : "", strerror(rc));
	}
	eng->started = true;
	return 0;
}

void engine_stop(struct engine *eng)
{
	if (!eng->started)
		return;
	engine_request_stop(eng);
	pthread_join(eng->thread, NULL);
	eng->started = false;
}

uint64_t engine_now(const struct engine *eng)
{
	return eng->now;
}

void engine_timer_arm(struct engine *eng, struct wheel_timer *t, uint64_t deadline_ns)
{
	timer_wheel_add(&eng->wheel, t, deadline_ns);
}

void engine_timer_arm_in(struct engine *eng, struct wheel_timer *t, uint64_t delay_ns)
{
	timer_wheel_add(&eng->wheel, t, eng->now + delay_ns);
}

bool engine_timer_cancel(struct engine *eng, struct wheel_timer *t)
{
	return timer_wheel_cancel(&eng->wheel, t);
}

int engine_post(struct engine *eng, unsigned ring, engine_cmd_fn fn, void *arg, uint64_t data)
{
	struct engine_cmd c = { .fn = fn, .arg = arg, .data = data };

	if (ring >= eng->ncmd || !fn)
		return -EINVAL;
	return spsc_ring_enqueue(eng->cmd[ring], &c) ? 0 : -EAGAIN;
}

struct spsc_ring *engine_cmd_ring(struct engine *eng, unsigned ring)
{
	return ring < eng->ncmd ? eng->cmd[ring] : NULL;
}

struct port *engine_port(const struct engine *eng, unsigned port)
{
	return port < eng->nports ? eng->ports[port].port : NULL;
}

unsigned engine_nports(const struct engine *eng)
{
	return eng->nports;
}

void engine_get_stats(const struct engine *eng, struct engine_stats *st)
{
	*st = eng->stats;
}
