/* SPDX-License-Identifier: MIT */
/* Each port's GID table, laid out as rxe and ConnectX show it (fe80::
 * EUI-64 of the MAC, the IPv4 addresses mapped, the other IPv6 addresses),
 * kept current from the kernel's netlink notifications on the engine's
 * slow path, with GID_CHANGE, PORT_ACTIVE and PORT_ERR raised as it goes. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "dataplane/nl_watch.h"
#include "transport/core/qp_internal.h"
#include "transport/core/async.h"
#include "transport/core/gid.h"

/* How often the slow path looks at the kernel's notifications and the
 * ports' link state: fast enough that an address change is seen before a
 * person notices, rare enough that the idle cost is one syscall per 5 ms. */
#define GID_POLL_NS 5000000ull
/* A reader retries while the engine thread rewrites the table (a few
 * hundred ns); this bounds the wait should that thread be descheduled. */
#define GID_READ_TRIES 100000u

static void table_add(struct gid_table *t, const uint8_t gid[16])
{
	for (uint32_t i = 0; i < t->n; i++)
		if (!memcmp(t->gid[i], gid, 16))
			return; /* one entry per address, as ib_cache keeps it */
	if (t->n < GID_TABLE_MAX)
		memcpy(t->gid[t->n++], gid, 16);
}

static void table_add_v4(struct gid_table *t, uint32_t ipv4_be)
{
	uint8_t g[16];

	roce_ipv4_mapped(g, ipv4_be);
	table_add(t, g);
}

/* The table of a kernel interface: what the kernel holds now. */
static int table_build_kernel(const struct port *p, struct gid_table *t)
{
	struct nl_if_addrs a;
	uint8_t ll[16];
	int rc;

	t->n = 0;
	nl_link_local_from_mac(p->mac, ll);
	table_add(t, ll);
	rc = nl_if_addrs(p->ifindex, &a);
	if (rc)
		return rc;
	for (unsigned i = 0; i < a.n4; i++)
		table_add_v4(t, a.v4_be[i]);
	if (!a.n4 && p->ipv4_be)
		table_add_v4(t, p->ipv4_be); /* configured (attr->ipv4_be) for an interface without one */
	for (unsigned i = 0; i < a.n6; i++)
		table_add(t, a.v6[i]);
	return 0;
}

/* The synthetic table of a loop or dpdk port: its link-local, its IPv4,
 * and for a loop port fd00::HHLL (port HHLL - 1). */
static void table_build_synthetic(const struct port *p, struct gid_table *t)
{
	uint8_t g[16];

	t->n = 0;
	nl_link_local_from_mac(p->mac, g);
	table_add(t, g);
	if (p->ipv4_be)
		table_add_v4(t, p->ipv4_be);
	if (p->cfg.kind == PORT_KIND_LOOP) {
		memset(g, 0, 16);
		g[0] = 0xfd;
		roce_put_be16(g + 14, (uint16_t)(p->cfg.loop_index + 1));
		table_add(t, g);
	}
}

/* Publish next as port pi's table; engine thread only. True when it
 * differs from the table it replaces. */
static bool table_publish(struct ctx_port *cp, const struct gid_table *next)
{
	struct gid_table *t = &cp->gids;
	uint32_t seq;

	if (t->n == next->n && !memcmp(t->gid, next->gid, 16u * next->n))
		return false;
	seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
	atomic_store_explicit(&t->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	t->n = next->n;
	memcpy(t->gid, next->gid, 16u * next->n);
	atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
	return true;
}

static bool port_is_kernel(const struct port *p)
{
	return p->cfg.kind == PORT_KIND_AFXDP && p->ifindex > 0;
}

static bool port_running_now(const struct port *p)
{
	bool running = false;

	if (port_is_kernel(p))
		return nl_link_running(p->ifindex, &running) == 0 && running;
	return port_link_up((struct port *)p);
}

int gid_port_init(struct uroce_context *ctx, unsigned pi)
{
	struct ctx_port *cp = &ctx->ports[pi];
	struct gid_table next = { 0 };
	char err[256];
	int rc;

	if (port_is_kernel(cp->port)) {
		/* watch first, then read: a change between the two is then a
		 * notification, not lost */
		if (!ctx->nlw) {
			ctx->nlw = nl_watch_open(err, sizeof(err));
			if (!ctx->nlw)
				return uroce_fail(-EIO, "port %u: %s", pi + 1, err);
		}
		rc = table_build_kernel(cp->port, &next);
		if (rc)
			return uroce_fail(rc, "port %u: cannot read the addresses of interface %d over netlink: %s", pi + 1,
			                  cp->port->ifindex, strerror(-rc));
	} else if (cp->port->ops->gids) {
		next.n = cp->port->ops->gids(cp->port, next.gid, GID_TABLE_MAX);
	} else {
		table_build_synthetic(cp->port, &next);
	}
	table_publish(cp, &next);
	cp->link_up = port_running_now(cp->port);
	return 0;
}

void gid_fini(struct uroce_context *ctx)
{
	nl_watch_close(ctx->nlw);
	ctx->nlw = NULL;
}

/* What one round of notifications said, per port. */
struct nl_round {
	struct uroce_context *ctx;
	bool addr_dirty[UROCE_MAX_PORTS];
	bool link_seen[UROCE_MAX_PORTS];
	bool running[UROCE_MAX_PORTS];
};

static void on_nl(void *arg, int ifindex, enum nl_watch_what what, bool running)
{
	struct nl_round *r = arg;

	for (unsigned i = 0; i < r->ctx->nports; i++) {
		const struct port *p = r->ctx->ports[i].port;

		if (!port_is_kernel(p))
			continue;
		if (what == NL_WATCH_RESYNC) {
			r->addr_dirty[i] = true;
			r->link_seen[i] = true;
			r->running[i] = port_running_now(p);
		} else if (p->ifindex == ifindex && what == NL_WATCH_ADDR) {
			r->addr_dirty[i] = true;
		} else if (p->ifindex == ifindex) {
			r->link_seen[i] = true;
			r->running[i] = running; /* the last message of the round is the state now */
		}
	}
}

unsigned gid_slow_path(struct uroce_context *ctx)
{
	struct nl_round r = { .ctx = ctx };
	struct timespec ts;
	unsigned raised = 0;
	uint64_t now;

	if (ctx->link_poll_ns) {
		/* a QP with backups fails over on a link going down: look
		 * this often, on the engine's clock */
		now = ctx_now(ctx);
		if (now - ctx->gid_poll_ns < ctx->link_poll_ns)
			return 0;
	} else {
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		if (now - ctx->gid_poll_ns < GID_POLL_NS)
			return 0;
	}
	ctx->gid_poll_ns = now;
	if (ctx->nlw)
		nl_watch_poll(ctx->nlw, on_nl, &r);
	for (unsigned i = 0; i < ctx->nports; i++) {
		struct ctx_port *cp = &ctx->ports[i];
		bool up;

		if (cp->port->ops->gids) {
			/* the backend keeps its device's table current */
			struct gid_table next = { 0 };

			next.n = cp->port->ops->gids(cp->port, next.gid, GID_TABLE_MAX);
			if (table_publish(cp, &next)) {
				ctx_async_port_event(ctx, i, UROCE_EVENT_GID_CHANGE);
				raised++;
			}
		} else if (r.addr_dirty[i] || cp->gid_dirty) {
			struct gid_table next = { 0 };

			/* a failed read keeps the table it has and tries again
			 * at the next poll, notified or not */
			cp->gid_dirty = table_build_kernel(cp->port, &next) != 0;
			if (!cp->gid_dirty && table_publish(cp, &next)) {
				ctx_async_port_event(ctx, i, UROCE_EVENT_GID_CHANGE);
				raised++;
			}
		}
		if (ctx->link_poll_ns) {
			/* the carrier itself, at once: netlink's RUNNING waits for
			 * the kernel's linkwatch, batched up to a second for a
			 * physical NIC */
			port_link_refresh(cp->port);
			up = port_link_up(cp->port);
		} else if (port_is_kernel(cp->port)) {
			if (!r.link_seen[i])
				continue;
			up = r.running[i];
		} else {
			up = port_link_up(cp->port);
		}
		if (up != cp->link_up) {
			cp->link_up = up;
			for (unsigned k = 0; k < ctx->nhooks; k++)
				if (ctx->hooks[k]->link)
					ctx->hooks[k]->link(ctx, i, up);
			ctx_async_port_event(ctx, i, up ? UROCE_EVENT_PORT_ACTIVE : UROCE_EVENT_PORT_ERR);
			raised++;
		}
	}
	return raised;
}

int gid_get(struct uroce_context *ctx, unsigned pi, unsigned index, uint8_t gid[16])
{
	const struct gid_table *t = &ctx->ports[pi].gids;

	for (unsigned tries = 0; tries < GID_READ_TRIES; tries++) {
		uint32_t s1 = atomic_load_explicit(&t->seq, memory_order_acquire), s2;
		bool found;

		if (s1 & 1) {
			sched_yield();
			continue;
		}
		found = index < t->n && index < GID_TABLE_MAX;
		if (found)
			memcpy(gid, t->gid[index], 16);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&t->seq, memory_order_relaxed);
		if (s1 == s2)
			return found ? 0 : -ENOENT;
	}
	return -EAGAIN;
}

unsigned gid_count(struct uroce_context *ctx, unsigned pi)
{
	const struct gid_table *t = &ctx->ports[pi].gids;

	for (unsigned tries = 0; tries < GID_READ_TRIES; tries++) {
		uint32_t s1 = atomic_load_explicit(&t->seq, memory_order_acquire);
		uint32_t n = t->n;

		atomic_thread_fence(memory_order_acquire);
		if (!(s1 & 1) && s1 == atomic_load_explicit(&t->seq, memory_order_relaxed))
			return n;
		sched_yield();
	}
	return 0;
}

bool ctx_port_has_gid(const struct uroce_context *ctx, unsigned port, const uint8_t gid[16])
{
	const struct gid_table *t = &ctx->ports[port].gids;

	for (uint32_t i = 0; i < t->n; i++)
		if (!memcmp(gid, t->gid[i], 16))
			return true;
	return false;
}

int uroce_query_gid(struct uroce_context *ctx, uint8_t port_num, int index, uint8_t gid[16])
{
	int pi, rc;

	if (!ctx || !gid || index < 0)
		return uroce_fail(-EINVAL, "uroce_query_gid: ctx and gid are required and index >= 0 (got %d)", index);
	pi = ctx_port_index(ctx, port_num, "uroce_query_gid");
	if (pi < 0)
		return pi;
	rc = gid_get(ctx, (unsigned)pi, (unsigned)index, gid);
	if (rc == -ENOENT)
		return uroce_fail(rc, "uroce_query_gid: port %u has %u GIDs; index %d is past the end (accepted: 0-%u)",
		                  port_num, gid_count(ctx, (unsigned)pi), index, gid_count(ctx, (unsigned)pi) - 1);
	if (rc)
		return uroce_fail(rc, "uroce_query_gid: the GID table of port %u kept changing; try again", port_num);
	return 0;
}
