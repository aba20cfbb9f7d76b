/* SPDX-License-Identifier: MIT */
/* The context: its ports (up to UROCE_MAX_PORTS, all polled by one
 * engine), the QP and MR tables, the list of QPs with transmit work,
 * uroce_progress, and building and staging a packet on a port. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/errbuf.h"
#include "dataplane/neigh.h"
#include "dataplane/nic_ethtool.h"
#include "dataplane/port_loop.h"
#if UROCE_HAVE_AFXDP
#include "dataplane/port_afxdp.h"
#endif
#if UROCE_HAVE_DPDK
#include "dataplane/port_dpdk.h"
#endif
#include "transport/core/qp_internal.h"
#include "transport/core/async.h"
#include "transport/core/ctx_call.h"
#include "transport/core/gid.h"
#include "transport/core/nic.h"
#include "transport/core/fifo.h"
#include "transport/core/immcounter.h"
#include "transport/core/mr.h"
#include "transport/core/qp_dispatch.h"
#include "transport/core/rx_check.h"
#include "transport/core/stat_endpoint.h"

/* --- context ------------------------------------------------------------ */

uint64_t ctx_now(const struct uroce_context *ctx)
{
	return engine_now(ctx->eng);
}

uint64_t ctx_clock(const struct uroce_context *ctx)
{
	return ctx->clock(ctx->clock_ctx);
}

uint64_t ctx_stall_ns(const struct uroce_context *ctx)
{
	uint64_t now = engine_now(ctx->eng);

	return ctx->fabric || now < ctx->last_pass_ns ? 0 : now - ctx->last_pass_ns;
}

void ctx_count_drop(struct uroce_context *ctx, enum uroce_drop_reason r)
{
	ctx->ports[ctx->rx_port].drops[r]++;
}

_Static_assert(UROCE_MAX_PORTS <= ENGINE_MAX_PORTS, "one engine polls every port of a context");

int ctx_port_index(const struct uroce_context *ctx, unsigned port_num, const char *fn)
{
	if (port_num < 1 || port_num > ctx->nports)
		return uroce_fail(-EINVAL, "%s: port_num %u; accepted: 1-%u (the context's ports)", fn, port_num,
		                  ctx->nports);
	return (int)port_num - 1;
}

int uroce_num_ports(const struct uroce_context *ctx)
{
	if (!ctx)
		return uroce_fail(-EINVAL, "uroce_num_ports: ctx is NULL");
	return (int)ctx->nports;
}

static void kick_cmd(struct engine *eng, void *arg, uint64_t data)
{
	(void)eng;
	(void)data;
	ctx_kick(arg);
}

/* App thread side of a command: one producer at a time on ring 0. */
static void ctx_post_cmd(struct uroce_context *ctx, engine_cmd_fn fn, void *arg)
{
	pthread_mutex_lock(&ctx->post_lock);
	while (engine_post(ctx->eng, 0, fn, arg, 0) == -EAGAIN)
		sched_yield();
	pthread_mutex_unlock(&ctx->post_lock);
}

struct ctx_call_args {
	int (*fn)(void *);
	void *arg;
	int rc;
	char err[512];
	_Atomic int done;
};

static void call_cmd(struct engine *eng, void *arg, uint64_t data)
{
	struct ctx_call_args *c = arg;

	(void)eng;
	(void)data;
	c->rc = c->fn(c->arg);
	if (c->rc < 0)
		snprintf(c->err, sizeof(c->err), "%s", uroce_last_error());
	atomic_store_explicit(&c->done, 1, memory_order_release);
}

int ctx_call(struct uroce_context *ctx, int (*fn)(void *), void *arg)
{
	struct ctx_call_args c = { .fn = fn, .arg = arg };

	if (!ctx_remote(ctx))
		return fn(arg);
	ctx_post_cmd(ctx, call_cmd, &c);
	while (!atomic_load_explicit(&c.done, memory_order_acquire))
		sched_yield();
	if (c.rc < 0)
		return uroce_fail(c.rc, "%s", c.err);
	return c.rc;
}

void ctx_kick(struct uroce_qp *qp)
{
	struct uroce_context *ctx = qp->ctx;

	if (ctx_remote(ctx)) {
		ctx_post_cmd(ctx, kick_cmd, qp);
		return;
	}
	if (qp->active)
		return;
	qp->active = true;
	qp->next_active = NULL;
	FIFO_APPEND(ctx->active_head, ctx->active_tail, qp, next_active);
}

static bool ctx_rx(struct engine *eng, unsigned port, struct uroce_frame *f, const struct roce_pkt *pkt, void *arg)
{
	struct uroce_context *ctx = arg;
	struct uroce_qp *qp = qpt_get(&ctx->qpt, pkt->dqpn);

	(void)eng;
	ctx->rx_port = port;
	if (!rx_check_dst(ctx, port, qp, pkt))
		return false;
	if (!qp) {
		ctx_count_drop(ctx, UROCE_DROP_NO_QP);
		return false;
	}
	qp_rx(qp, f, pkt);
	return false;
}

void ctx_nic_arrival(struct uroce_qp *qp, unsigned port, const struct roce_pkt *pkt, uint64_t rx_ns)
{
	struct uroce_context *ctx = qp->ctx;

	ctx->rx_port = port; /* a QP with backups learns the member by it */
	ctx->nic_rx_ns = rx_ns && rx_ns <= ctx_clock(ctx) ? rx_ns : 0; /* (a stamp ahead of the clock is not taken) */
	qp_rx(qp, NULL, pkt);
	ctx->nic_rx_ns = 0;
}

/* One receive pass: the ports' bursts, and a NIC's completions. */
static unsigned ctx_rx_pass(struct uroce_context *ctx)
{
	unsigned n = engine_poll_once(ctx->eng);

	ctx->last_pass_ns = engine_now(ctx->eng);
	if (ctx->nsegq) /* only a NIC's context has any */
		n += ctx->nic->poll(ctx);
	return n;
}

/* One pass over the QPs with transmit work, of at most CTX_TX_PASS_PKTS
 * packets: QPs that still have work go to the back of the list, those
 * not reached keep their place at the front. Without the bound one pass
 * over thousands of QPs built tens of thousands of packets while no
 * receive burst (and no ACK) was read. */
static unsigned ctx_tx_pass(struct uroce_context *ctx)
{
	struct uroce_qp *qp, *tail = ctx->active_tail;
	uint64_t start = engine_tx_staged(ctx->eng);
	unsigned n = 0;

	while ((qp = ctx->active_head) && engine_tx_staged(ctx->eng) - start < CTX_TX_PASS_PKTS) {
		ctx->active_head = qp->next_active;
		if (!ctx->active_head)
			ctx->active_tail = NULL;
		qp->active = false;
		n++;
		if (qp_tx(qp))
			ctx_kick(qp);
		if (qp == tail)
			break;
	}
	if (ctx->nsegq)
		ctx->nic->flush(ctx); /* the segments the pass chained, one doorbell per NIC QP */
	return n;
}

int ctx_hook_add(struct uroce_context *ctx, const struct ctx_hook *h)
{
	for (unsigned i = 0; i < ctx->nhooks; i++)
		if (ctx->hooks[i] == h)
			return 0;
	if (ctx->nhooks == CTX_MAX_HOOKS)
		return -ENOSPC;
	ctx->hooks[ctx->nhooks++] = h;
	return 0;
}

/* The slow path: GIDs and links, then the registered hooks. */
static unsigned ctx_slow_path(struct uroce_context *ctx)
{
	unsigned n = gid_slow_path(ctx);

	for (unsigned i = 0; i < ctx->nhooks; i++)
		if (ctx->hooks[i]->slow)
			n += ctx->hooks[i]->slow(ctx);
	stat_ep_tick(ctx); /* not counted as work: a reader must not change the idle share it reads */
	if (n) /* one writer (the engine's thread): a plain add another thread may read */
		atomic_store_explicit(&ctx->eng_timers, atomic_load_explicit(&ctx->eng_timers, memory_order_relaxed) + n,
		                      memory_order_relaxed);
	return n;
}

/* One loop of the engine counted, for uroce_engine_stats. */
static void ctx_count_pass(struct uroce_context *ctx, unsigned work)
{
	atomic_store_explicit(&ctx->eng_passes, atomic_load_explicit(&ctx->eng_passes, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
	if (!work)
		atomic_store_explicit(&ctx->eng_idle, atomic_load_explicit(&ctx->eng_idle, memory_order_relaxed) + 1,
		                      memory_order_relaxed);
}

/* --- idle backoff of an EMBEDDED context ---------------------------------- */

/* An application that calls uroce_progress in a loop spins on its core.
 * When a neighbour shares that core (the other end of the connection, the
 * veth or softirq work the kernel does for it, any other process), every
 * idle pass takes the CPU from work that would end the wait. So once the
 * engine has found no work for idle_yield_ns, each further idle call
 * yields the CPU: with nothing else runnable that is one sched_yield per
 * idle call; calls with work cost nothing. Not on the loop fabric, whose
 * clock is the fabric's. */
#define CTX_IDLE_YIELD_US_DEFAULT 20
#define CTX_IDLE_YIELD_US_MAX 1000000

static int ctx_idle_init(struct uroce_context *ctx)
{
	const char *env = getenv("UROCE_IDLE_YIELD_US");
	unsigned long v = CTX_IDLE_YIELD_US_DEFAULT;
	char *end;

	ctx->idle_yield_ns = UINT64_MAX;
	if (ctx->fabric)
		return 0;
	if (env && !strcmp(env, "off"))
		return 0;
	if (env) {
		errno = 0;
		v = strtoul(env, &end, 10);
		if (!*env || *end || errno || env[0] == '-' || v > CTX_IDLE_YIELD_US_MAX)
			return uroce_fail(-EINVAL, "uroce_context_create: UROCE_IDLE_YIELD_US '%s': accepted 0-%d "
			                           "(microseconds without work before uroce_progress yields the CPU) "
			                           "or off (never yield)", env, CTX_IDLE_YIELD_US_MAX);
	}
	ctx->idle_yield_ns = (uint64_t)v * 1000u;
	return 0;
}

static void ctx_idle_backoff(struct uroce_context *ctx, unsigned work)
{
	uint64_t now;

	if (work || ctx->idle_yield_ns == UINT64_MAX) {
		ctx->idle_run = false;
		return;
	}
	now = ctx_now(ctx);
	if (!ctx->idle_run) {
		ctx->idle_run = true;
		ctx->idle_since_ns = now;
	}
	if (now - ctx->idle_since_ns >= ctx->idle_yield_ns)
		sched_yield();
}

int uroce_progress(struct uroce_context *ctx)
{
	unsigned n;

	if (!ctx)
		return uroce_fail(-EINVAL, "uroce_progress: ctx is NULL");
	if (ctx->mode != UROCE_ENGINE_EMBEDDED)
		return uroce_fail(-EINVAL, "uroce_progress: the context runs a dedicated engine thread; "
		                           "only EMBEDDED contexts are progressed by the application");
	n = ctx_tx_pass(ctx);
	n += ctx_rx_pass(ctx);
	n += ctx_tx_pass(ctx);
	n += ctx_slow_path(ctx);
	ctx_count_pass(ctx, n);
	ctx_idle_backoff(ctx, n);
	return (int)n;
}

static void *engine_thread(void *arg)
{
	struct uroce_context *ctx = arg;

	while (!atomic_load_explicit(&ctx->stop, memory_order_acquire)) {
		unsigned n = ctx_tx_pass(ctx);

		n += ctx_rx_pass(ctx);
		n += ctx_tx_pass(ctx);
		n += ctx_slow_path(ctx);
		ctx_count_pass(ctx, n);
		if (!n && ctx->nic && !ctx->nsegq)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL); /* the NIC is the engine: only the slow path is left */
		else if (!n && ctx->cpu < 0)
			sched_yield(); /* unpinned: share the core while idle */
	}
	return NULL;
}

int uroce_engine_stats(struct uroce_context *ctx, struct uroce_engine_stats *st)
{
	clockid_t cid;
	struct timespec ts;
	int rc;

	if (!ctx || !st)
		return uroce_fail(-EINVAL, "uroce_engine_stats: ctx and st are required");
	memset(st, 0, sizeof(*st));
	st->passes = atomic_load_explicit(&ctx->eng_passes, memory_order_relaxed);
	st->idle_passes = atomic_load_explicit(&ctx->eng_idle, memory_order_relaxed);
	{
		struct engine_stats es;

		/* the engine's wheel (retransmission, deadlines, probes): a
		 * count its one writer bumps, read as it is now */
		engine_get_stats(ctx->eng, &es);
		st->timers = es.timers + atomic_load_explicit(&ctx->eng_timers, memory_order_relaxed);
	}
	st->cpu = -1;
	if (ctx->mode != UROCE_ENGINE_DEDICATED || !ctx->thread_running)
		return 0; /* EMBEDDED: the loops are uroce_progress calls, on the application's thread */
	rc = pthread_getcpuclockid(ctx->thread, &cid);
	if (rc || clock_gettime(cid, &ts))
		return uroce_fail(rc ? -rc : -errno, "uroce_engine_stats: cannot read the engine thread's CPU clock");
	st->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	st->cpu = ctx->cpu;
	return 0;
}

static int ctx_start_thread(struct uroce_context *ctx, int cpu)
{
	int rc;

	ctx->cpu = cpu;
	rc = pthread_create(&ctx->thread, NULL, engine_thread, ctx);
	if (rc)
		return uroce_fail(-rc, "uroce_context_create: cannot start the engine thread: %s", strerror(rc));
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		rc = pthread_setaffinity_np(ctx->thread, sizeof(set), &set);
		if (rc) {
			atomic_store(&ctx->stop, true);
			pthread_join(ctx->thread, NULL);
			return uroce_fail(-rc, "uroce_context_create: cannot pin the engine thread to CPU %d: %s", cpu,
			                  strerror(rc));
		}
	}
	ctx->thread_running = true;
	return 0;
}

static void ctx_close_ports(struct uroce_context *ctx)
{
	for (unsigned i = 0; i < ctx->nports; i++)
		port_close(ctx->ports[i].port);
	ctx->nports = 0;
}

/* Frees what uroce_context_create allocates before it opens a port. */
static void ctx_free(struct uroce_context *ctx)
{
	imm_table_fini(ctx);
	mr_keys_fini(ctx);
	ctx_async_fini(ctx);
	qpt_fini(&ctx->qpt);
	free(ctx->mrs);
	free(ctx);
}

/* Parse every spec before opening any, so a bad one costs no port open
 * (a DPDK EAL cannot be brought up twice in a process). */
static int ctx_parse_ports(const struct uroce_context_attr *attr, const char *const *specs, unsigned n,
                           struct port_config *cfg)
{
	char err[ERRBUF_LEN] = "";
	unsigned nloop = 0;
	uint32_t ip;
	int rc;

	for (unsigned i = 0; i < n; i++) {
		if (!specs[i])
			return uroce_fail(-EINVAL, "uroce_context_create: ports[%u] is NULL", i);
		rc = port_config_parse(specs[i], &cfg[i], err, sizeof(err));
		if (rc)
			return uroce_fail(rc, "uroce_context_create: port %u: %s", i + 1, err);
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(specs[i], specs[j]))
				return uroce_fail(-EINVAL, "uroce_context_create: ports %u and %u are both \"%s\"; "
				                           "a port can be opened once", j + 1, i + 1, specs[i]);
		if (cfg[i].kind == PORT_KIND_LOOP) {
			nloop++;
			if (!attr->loop_fabric)
				return uroce_fail(-EINVAL, "uroce_context_create: port \"%s\" is a loop port; "
				                           "attr->loop_fabric must point at the loop_fabric", specs[i]);
			cfg[i].fabric = attr->loop_fabric;
		}
		cfg[i].eal_argc = attr->eal_argc;
		cfg[i].eal_argv = attr->eal_argv;
		ip = attr->ports ? (attr->ports_ipv4_be ? attr->ports_ipv4_be[i] : 0) : attr->ipv4_be;
		if (ip)
			cfg[i].ipv4_be = ip;
	}
	if (nloop && nloop != n)
		return uroce_fail(-EINVAL, "uroce_context_create: loop ports run on the fabric's simulated clock and "
		                           "cannot share a context with afxdp or dpdk ports");
	for (unsigned i = 1; i < n; i++)
		if ((cfg[i].kind == PORT_KIND_VERBS) != (cfg[0].kind == PORT_KIND_VERBS))
			return uroce_fail(-EINVAL, "uroce_context_create: ports %u and %u: a verbs port (the NIC moves "
			                           "the bytes) cannot share a context with frame ports (afxdp, dpdk); "
			                           "open one context for each", 1u, i + 1);
	return 0;
}

int uroce_context_create(struct uroce_context **out, const struct uroce_context_attr *attr)
{
	struct port_config cfg[UROCE_MAX_PORTS];
	struct port *eports[UROCE_MAX_PORTS];
	const char *const *specs;
	struct engine_config ec;
	struct uroce_context *ctx;
	char err[ERRBUF_LEN] = "";
	unsigned n;
	int rc;

	if (!out || !attr || (!attr->port && !attr->ports))
		return uroce_fail(-EINVAL, "uroce_context_create: out and attr are required, and attr->port (one "
		                           "port) or attr->ports (several)");
	if (attr->port && attr->ports)
		return uroce_fail(-EINVAL, "uroce_context_create: set attr->port or attr->ports, not both");
	if (attr->ports && (attr->nports < 1 || attr->nports > UROCE_MAX_PORTS))
		return uroce_fail(-EINVAL, "uroce_context_create: nports %u; accepted: 1-%u", attr->nports,
		                  UROCE_MAX_PORTS);
	if (attr->mode != UROCE_ENGINE_EMBEDDED && attr->mode != UROCE_ENGINE_DEDICATED)
		return uroce_fail(-EINVAL, "uroce_context_create: engine mode %d; accepted: UROCE_ENGINE_EMBEDDED (0), "
		                           "UROCE_ENGINE_DEDICATED (1)", (int)attr->mode);
	if (attr->mode == UROCE_ENGINE_DEDICATED && (attr->engine_cpu < -1 || attr->engine_cpu >= CPU_SETSIZE))
		return uroce_fail(-EINVAL, "uroce_context_create: engine_cpu %d; accepted: -1 (do not pin) or 0-%d",
		                  attr->engine_cpu, CPU_SETSIZE - 1);
	specs = attr->ports ? attr->ports : &attr->port;
	n = attr->ports ? attr->nports : 1;
	rc = ctx_parse_ports(attr, specs, n, cfg);
	if (rc)
		return rc;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return uroce_fail(-ENOMEM, "uroce_context_create: out of memory");
	ctx->mrs = calloc(MR_TABLE_SIZE, sizeof(*ctx->mrs));
	if (qpt_init(&ctx->qpt) || !ctx->mrs || ctx_async_init(ctx) || mr_keys_init(ctx) || imm_table_init(ctx)) {
		rc = uroce_fail(-ENOMEM, "uroce_context_create: out of memory");
		goto free_ctx;
	}
	ctx->next_mr = 1;
	ctx->mode = attr->mode;
	for (unsigned i = 0; i < n; i++) {
		struct ctx_port *cp = &ctx->ports[i];

		rc = port_open(&cp->port, &cfg[i], err, sizeof(err));
		if (rc) {
			rc = uroce_fail(rc, "uroce_context_create: port %u \"%s\": %s", i + 1, specs[i], err);
			goto close_ports;
		}
		ctx->nports = i + 1;
		if (!cp->port->ipv4_be && cfg[i].ipv4_be)
			cp->port->ipv4_be = cfg[i].ipv4_be;
		rc = gid_port_init(ctx, i);
		if (rc)
			goto close_ports;
		cp->ip_id = (uint16_t)(cp->port->ipv4_be ^ (uintptr_t)cp);
		eports[i] = cp->port;
	}
	ctx->nic = eports[0]->ops->nic;
	memset(&ec, 0, sizeof(ec));
	ec.ports = eports;
	ec.nports = n;
	ec.ncmd_rings = 1;
	if (cfg[0].kind == PORT_KIND_LOOP) {
		ctx->fabric = cfg[0].fabric;
		ec.clock = loop_fabric_clock;
		ec.clock_ctx = cfg[0].fabric;
	}
	ctx->clock = ec.clock ? ec.clock : engine_clock_monotonic;
	ctx->clock_ctx = ec.clock_ctx;
	rc = ctx_idle_init(ctx);
	if (rc)
		goto close_ports;
	ctx->eng = engine_create(&ec, err, sizeof(err));
	if (!ctx->eng) {
		rc = uroce_fail(-EINVAL, "uroce_context_create: engine: %s", err);
		goto close_ports;
	}
	engine_set_rx_handler(ctx->eng, ctx_rx, ctx);
	pthread_mutex_init(&ctx->post_lock, NULL);
	/* before the engine thread: until it starts, this thread owns the counters */
	rc = stat_ep_open(ctx, attr, specs, n);
	if (rc) {
		engine_destroy(ctx->eng);
		goto close_ports;
	}
	if (ctx->mode == UROCE_ENGINE_DEDICATED) {
		rc = ctx_start_thread(ctx, attr->engine_cpu);
		if (rc) {
			stat_ep_close(ctx);
			engine_destroy(ctx->eng);
			goto close_ports;
		}
	}
	*out = ctx;
	return 0;

close_ports:
	gid_fini(ctx);
	ctx_close_ports(ctx);
free_ctx:
	ctx_free(ctx);
	return rc;
}

int uroce_context_destroy(struct uroce_context *ctx)
{
	if (!ctx)
		return uroce_fail(-EINVAL, "uroce_context_destroy: ctx is NULL");
	if (ctx->nqp || ctx->ncq || ctx->nmr || ctx->npd)
		return uroce_fail(-EBUSY, "uroce_context_destroy: still in use (%u QPs, %u CQs, %u MRs, %u PDs); "
		                          "destroy them first", ctx->nqp, ctx->ncq, ctx->nmr, ctx->npd);
	if (ctx->thread_running) {
		if (pthread_equal(pthread_self(), ctx->thread))
			return uroce_fail(-EINVAL, "uroce_context_destroy: called from the engine thread");
		atomic_store_explicit(&ctx->stop, true, memory_order_release);
		pthread_join(ctx->thread, NULL);
		ctx->thread_running = false;
	}
	pthread_mutex_destroy(&ctx->post_lock);
	stat_ep_close(ctx);
	for (unsigned i = 0; i < ctx->nhooks; i++)
		if (ctx->hooks[i]->fini)
			ctx->hooks[i]->fini(ctx); /* their timers live in the engine */
	engine_destroy(ctx->eng);
	gid_fini(ctx);
	ctx_close_ports(ctx);
	ctx_free(ctx);
	return 0;
}

/* A per-port query's first checks: ctx and the output given, port_num
 * one of the context's. Returns the port's index or -errno. */
static int port_query_index(const struct uroce_context *ctx, uint8_t port_num, const void *out, const char *fn,
                            const char *out_name)
{
	if (!ctx || !out)
		return uroce_fail(-EINVAL, "%s: ctx and %s are required", fn, out_name);
	return ctx_port_index(ctx, port_num, fn);
}

/* What the port is and where it lives (uroce_query_port): its kind, the
 * kernel interface and queues behind it, the device's own names. */
static void port_attr_identity(const struct port *p, struct uroce_port_attr *attr)
{
	_Static_assert(UROCE_PORT_LOOP == (int)PORT_KIND_LOOP && UROCE_PORT_AFXDP == (int)PORT_KIND_AFXDP &&
	               UROCE_PORT_DPDK == (int)PORT_KIND_DPDK && UROCE_PORT_VERBS == (int)PORT_KIND_VERBS,
	               "the public port kinds are the port layer's");
	_Static_assert(sizeof(attr->ifname) >= IF_NAMESIZE, "an interface name fits");
	attr->kind = (int)p->cfg.kind;
	attr->max_mtu = p->max_mtu ? p->max_mtu : UROCE_MTU_4096;
	/* by index: the name may have changed since the port opened */
	if (p->ifindex > 0 && if_indextoname((unsigned)p->ifindex, attr->ifname))
		attr->ifindex = p->ifindex;
	switch (p->cfg.kind) {
	case PORT_KIND_AFXDP:
		attr->queue = p->cfg.queue;
		/* sysfs, not the port's own count: the interface's queues may
		 * change under a running port (ethtool -L) */
		attr->nqueues = nic_rx_queues(p->cfg.ifname);
		break;
	case PORT_KIND_VERBS:
		snprintf(attr->ibdev, sizeof(attr->ibdev), "%s", p->cfg.ibdev);
		attr->dev_port = p->cfg.ib_port ? p->cfg.ib_port : 1;
		break;
	case PORT_KIND_DPDK:
		attr->dev_port = p->cfg.dpdk_port_id;
		break;
	case PORT_KIND_LOOP:
		attr->dev_port = p->cfg.loop_index;
		break;
	}
}

int uroce_query_port(struct uroce_context *ctx, uint8_t port_num, struct uroce_port_attr *attr)
{
	const struct ctx_port *cp;
	uint32_t l3;
	int pi;

	pi = port_query_index(ctx, port_num, attr, "uroce_query_port", "attr");
	if (pi < 0)
		return pi;
	cp = &ctx->ports[pi];
	memset(attr, 0, sizeof(*attr));
	memcpy(attr->mac, cp->port->mac, 6);
	attr->ipv4_be = cp->port->ipv4_be;
	attr->gid_tbl_len = (int)gid_count(ctx, (unsigned)pi);
	/* the first IPv4-mapped GID: the table may have changed since the
	 * port opened */
	for (int i = 0; i < attr->gid_tbl_len; i++)
		if (!gid_get(ctx, (unsigned)pi, (unsigned)i, attr->gid) && neigh_addr_is_v4(attr->gid)) {
			memcpy(&attr->ipv4_be, attr->gid + 12, 4);
			break;
		}
	if (!neigh_addr_is_v4(attr->gid))
		roce_ipv4_mapped(attr->gid, attr->ipv4_be);
	attr->l3_mtu = cp->port->mtu;
	attr->completion_ts = cp->port->completion_ts;
	_Static_assert(sizeof(attr->note) == sizeof(cp->port->note), "a port's note fits the attribute");
	memcpy(attr->note, cp->port->note, sizeof(attr->note));
#if UROCE_HAVE_AFXDP
	{
		struct port_afxdp_info ai;

		if (!port_afxdp_info(cp->port, &ai)) {
			attr->xdp_mode = ai.skb_mode ? UROCE_XDP_GENERIC : UROCE_XDP_NATIVE;
			attr->zero_copy = ai.zero_copy;
		}
	}
#endif
	/* RoCE MTU: the largest that leaves room for the headers; like rxe,
	 * which keeps RXE_MAX_HDR_LENGTH (80) bytes, so both ends of a
	 * uroce-rxe pair pick the same active MTU */
	l3 = cp->port->mtu > ROCE_ACTIVE_MTU_HDR ? cp->port->mtu - ROCE_ACTIVE_MTU_HDR : 0;
	attr->active_mtu = UROCE_MTU_256;
	for (int m = UROCE_MTU_4096; m >= UROCE_MTU_256; m--)
		if (uroce_mtu_bytes(m) <= l3) {
			attr->active_mtu = m;
			break;
		}
	attr->link_up = port_link_up(cp->port);
	port_attr_identity(cp->port, attr);
	return 0;
}

CTX_CALL3(port_stats, uroce_port_stats, struct uroce_context *, uint8_t, struct uroce_port_stats *)

int uroce_port_stats(struct uroce_context *ctx, uint8_t port_num, struct uroce_port_stats *stats)
{
	const struct ctx_port *cp;
	int pi;

	pi = port_query_index(ctx, port_num, stats, "uroce_port_stats", "stats");
	if (pi < 0)
		return pi;
	if (ctx_remote(ctx)) {
		struct port_stats_args a = { ctx, port_num, stats };

		return ctx_call(ctx, port_stats_call, &a);
	}
	cp = &ctx->ports[pi];
	*stats = cp->port->stats;
	for (unsigned r = 0; r < UROCE_DROP__COUNT; r++)
		stats->drops[r] += cp->drops[r];
	return 0;
}

/* Destination of a QP or AH: addresses from the GID, MAC from ah->dmac or
 * resolved once here (never per packet). */
int ctx_resolve_dest(struct uroce_context *ctx, unsigned port, const struct uroce_ah_attr *ah, struct dest *d)
{
	static const uint8_t zero[6];
	const struct ctx_port *cp = &ctx->ports[port];
	int rc;

	memset(d, 0, sizeof(*d));
	d->port = (uint8_t)port;
	memcpy(d->dip, ah->dgid, 16);
	d->ipv6 = !neigh_addr_is_v4(ah->dgid);
	d->tos = ah->traffic_class;
	d->ttl = ah->hop_limit ? ah->hop_limit : 64;
	d->flow_label = ah->flow_label & 0xfffff;
	rc = gid_get(ctx, port, ah->sgid_index, d->sip);
	if (rc)
		return uroce_fail(-EINVAL, "sgid_index %u: port %u has %u GIDs; accepted: 0-%u (see uroce_query_gid)",
		                  ah->sgid_index, port + 1, gid_count(ctx, port), gid_count(ctx, port) - 1);
	if (neigh_addr_is_v4(d->sip) != !d->ipv6) {
		char sgid[INET6_ADDRSTRLEN], dgid[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, d->sip, sgid, sizeof(sgid));
		inet_ntop(AF_INET6, ah->dgid, dgid, sizeof(dgid));
		return uroce_fail(-EINVAL, "sgid_index %u is %s, an %s GID, but the dgid %s is %s: RoCEv2 sends "
		                           "both in one IP header; accepted: an sgid_index of the dgid's family "
		                           "(IPv4-mapped ::ffff:a.b.c.d or IPv6, see uroce_query_gid)",
		                  ah->sgid_index, sgid, d->ipv6 ? "IPv4-mapped" : "IPv6", dgid,
		                  d->ipv6 ? "IPv6" : "IPv4-mapped");
	}
	if (memcmp(ah->dmac, zero, 6)) {
		memcpy(d->dmac, ah->dmac, 6);
		return 0;
	}
	switch (cp->port->cfg.kind) {
	case PORT_KIND_LOOP: {
		uint32_t ip = roce_get_be32(ah->dgid + 12);
		uint32_t idx = (ip & 0xffffu) - 1u;
		static const uint8_t fd00[14] = { 0xfd };

		if (d->ipv6 && nl_mac_from_link_local(ah->dgid, d->dmac))
			return 0; /* GID 0: fe80:: EUI-64 carries the port's MAC */
		if (d->ipv6 && memcmp(ah->dgid, fd00, 14) == 0)
			ip = 0x0a000000u | roce_get_be16(ah->dgid + 14); /* fd00::HHLL names the same port */
		idx = (ip & 0xffffu) - 1u;
		if ((ip >> 16) != 0x0a00u || idx >= LOOP_FABRIC_MAX_PORTS)
			return uroce_fail(-EHOSTUNREACH, "dgid is not a loop port address; accepted: 10.0.H.L "
			                                 "(loop_port_ipv4_be), fd00::HHLL, fe80:: EUI-64 of a loop "
			                                 "MAC or an explicit dmac");
		loop_port_mac(idx, d->dmac);
		return 0;
	}
	case PORT_KIND_VERBS:
		return 0; /* the NIC finds its next hop itself */
	case PORT_KIND_AFXDP:
		rc = neigh_resolve(cp->port->ifindex, ah->dgid, d->dmac, NEIGH_TIMEOUT_MS);
		if (rc)
			return uroce_fail(rc, "cannot resolve the MAC of the dgid: %s (set ah_attr.dmac to skip it)",
			                  strerror(-rc));
		return 0;
	default:
#if UROCE_HAVE_DPDK
	{
		uint32_t ip_be;

		/* the port does ARP and ND itself: it owns the link */
		memcpy(&ip_be, ah->dgid + 12, 4);
		rc = d->ipv6 ? port_dpdk_resolve6(cp->port, ah->dgid, d->dmac, NEIGH_TIMEOUT_MS)
		             : port_dpdk_resolve(cp->port, ip_be, d->dmac, NEIGH_TIMEOUT_MS);
	}
		if (rc)
			return uroce_fail(rc, "cannot resolve the MAC of the dgid over the dpdk port: %s", strerror(-rc));
		return 0;
#else
		return uroce_fail(-EINVAL, "no MAC for the dgid: set ah_attr.dmac");
#endif
	}
}

void ctx_pkt_init(struct uroce_context *ctx, struct roce_pkt *pkt, const struct dest *d, uint16_t sport)
{
	const struct ctx_port *cp = &ctx->ports[d->port];

	memset(pkt, 0, sizeof(*pkt));
	memcpy(pkt->dmac, d->dmac, 6);
	memcpy(pkt->smac, cp->port->mac, 6);
	pkt->ipv6 = d->ipv6;
	memcpy(pkt->sip, d->sip, 16);
	memcpy(pkt->dip, d->dip, 16);
	pkt->tos = d->tos;
	pkt->ttl = d->ttl;
	pkt->dont_fragment = true;
	pkt->flow_label = d->flow_label;
	pkt->sport = sport;
	pkt->dport = ROCE_UDP_PORT;
	pkt->pkey = ROCE_PKEY_DEFAULT;
}

int ctx_send_pkt(struct uroce_context *ctx, unsigned port, struct roce_pkt *pkt, gather_fn g, void *garg)
{
	struct ctx_port *cp = &ctx->ports[port];
	struct uroce_frame f;
	uint32_t hdr;
	int len;

	if (!engine_tx_room(ctx->eng, port) || engine_alloc(ctx->eng, port, &f, 1) != 1)
		return -ENOBUFS;
	pkt->ip_id = cp->ip_id;
	if (g) {
		hdr = roce_hdr_len(pkt);
		if (hdr + pkt->payload_len + 8u > f.room) {
			port_free(cp->port, &f, 1);
			return -EMSGSIZE;
		}
		g(garg, f.data + hdr, pkt->payload_len);
		pkt->payload = NULL;
	}
	len = roce_build(f.data, f.room, pkt);
	if (len < 0) {
		port_free(cp->port, &f, 1);
		return len;
	}
	f.len = (uint32_t)len;
	if (engine_tx(ctx->eng, port, &f)) {
		port_free(cp->port, &f, 1);
		return -ENOBUFS;
	}
	cp->ip_id++;
	return 0;
}
