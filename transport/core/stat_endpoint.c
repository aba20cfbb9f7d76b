/* SPDX-License-Identifier: MIT */
/* The statistics endpoint: each context publishes its counters (ports,
 * drops by reason, QPs, paths, controllers, the engine's loops) in
 * /dev/shm/uroce-stat.PID.INDEX, mode 0600, for uroce-stat.
 *
 * Why shared memory written by the engine: the counters belong to the
 * engine's thread (DEDICATED) or to whoever calls uroce_progress
 * (EMBEDDED), so only that thread can read them without a race. It takes
 * the snapshot itself, from its slow path, at most every 100 ms, and
 * stores it under a sequence lock: no lock, no syscall, no waiting for
 * anyone, and a reader (which maps the file read-only) can neither change
 * nor hold up the engine. A file in /dev/shm is also seen from every
 * network namespace, where a Unix socket in the abstract namespace would
 * not be (tools run in their own namespaces). The layout is in
 * stat_format.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport/core/qp_internal.h"
#include "transport/core/stat_endpoint.h"
#include "transport/core/stat_format.h"
#include "transport/rel/rel.h"

struct stat_ep {
	struct ustat_header *map;  /* the shared file, mapped read-write by this process only */
	size_t map_bytes;
	struct ustat_snap *buf;    /* the next snapshot, built in private memory first */
	size_t body_bytes;
	uint32_t max_qps;
	uint64_t last_ns;          /* CLOCK_MONOTONIC_COARSE of the last refresh */
	uint64_t refresh_ns;
	char path[96];
};

static _Atomic unsigned next_ctx_index; /* contexts of this process, numbered as created */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Remove endpoints whose process is gone (killed before it could remove
 * its own), or that a former holder of this PID left: ours only. */
static void clean_stale(void)
{
	int self = getpid();
	uint64_t self_ticks = 0;
	struct dirent *de;
	DIR *d = opendir(USTAT_DIR);

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct ustat_header h;
		struct stat sb;
		int pid, fd;
		unsigned idx;
		char tail;

		if (sscanf(de->d_name, USTAT_PREFIX "%d.%u%c", &pid, &idx, &tail) != 2 || pid <= 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) || sb.st_uid != geteuid())
			continue;
		if (pid != self) {
			if (kill(pid, 0) && errno == ESRCH)
				unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (!self_ticks)
			self_ticks = ustat_proc_start_ticks(self);
		if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == USTAT_MAGIC && self_ticks &&
		    h.start_ticks != self_ticks)
			unlinkat(dirfd(d), de->d_name, 0);
		close(fd);
	}
	closedir(d);
}

/* Whether this context publishes one: attr->stat_endpoint, then the
 * environment (UROCE_STAT=0 turns the default off). */
static bool wanted(const struct uroce_context_attr *attr)
{
	const char *env;

	if (attr->stat_endpoint)
		return attr->stat_endpoint > 0;
	env = getenv("UROCE_STAT");
	return !(env && !strcmp(env, "0"));
}

/* Build the snapshot into ep->buf: the same numbers uroce_port_stats,
 * uroce_qp_stats, uroce_qp_path_stats and uroce_engine_stats give, read
 * here on the engine's own thread. */
static void snapshot(struct uroce_context *ctx, struct stat_ep *ep)
{
	struct ustat_snap *s = ep->buf;
	const struct qp_table *t = &ctx->qpt;
	uint32_t n = 0;

	s->mono_ns = clock_ns(CLOCK_MONOTONIC);
	s->real_ns = clock_ns(CLOCK_REALTIME);
	s->snapshots++;
	s->nports = ctx->nports;
	s->nqps = t->nlive;
	s->flags = t->nlive > ep->max_qps ? USTAT_F_QPS_TRUNCATED : 0;
	uroce_engine_stats(ctx, &s->eng);
	s->async_lost = uroce_async_events_lost(ctx);
	for (unsigned i = 0; i < ctx->nports; i++) {
		s->ports[i].link_up = ctx->ports[i].link_up;
		uroce_port_stats(ctx, (uint8_t)(i + 1), &s->ports[i].st);
	}
	for (uint32_t i = 0; i < t->nlive && n < ep->max_qps; i++) {
		struct uroce_qp *qp = t->live[i];
		struct ustat_qp *q = ustat_qp_at(s, n++);
		unsigned np = 0;

		memset(q, 0, sizeof(*q));
		q->qpn = uroce_qp_num(qp); /* the number peers and tools know it by (a NIC's, on a verbs port) */
		q->dqpn = qp->dqpn;
		q->type = qp->type;
		q->state = qp->state;
		q->rel = (uint8_t)qp->init.rel.reliability;
		q->cc = (uint8_t)qp->init.cc.algo;
		q->port_num = (uint8_t)(qp->port + 1);
		if (qp->nic) {
			q->flags |= USTAT_QP_ON_NIC; /* the device keeps its counters */
			continue;
		}
		uroce_qp_stats(qp, &q->st);
		if (qp->rel->path_stats && qp->rel_state) {
			q->npaths = qp->init.path.npaths ? qp->init.path.npaths : 1;
			/* before RTR a QP has no paths yet: the first call says so */
			while (np < q->npaths && np < USTAT_MAX_PATHS && !qp->rel->path_stats(qp, np, &q->paths[np]))
				np++;
			if (np == USTAT_MAX_PATHS && q->npaths > USTAT_MAX_PATHS)
				q->flags |= USTAT_QP_PATHS_TRUNCATED;
		}
		q->npaths_listed = (uint8_t)np;
	}
	s->nqps_listed = n;
}

/* Store the snapshot under the sequence lock: seq odd, the words, seq
 * even. Relaxed atomic stores: readers race them by design. */
static void publish(struct stat_ep *ep)
{
	_Atomic uint64_t *dst = (_Atomic uint64_t *)(void *)(ep->map + 1);
	const uint64_t *src = (const uint64_t *)(const void *)ep->buf;
	size_t words = (sizeof(struct ustat_snap) + (size_t)ep->buf->nqps_listed * sizeof(struct ustat_qp)) / 8;
	uint64_t seq = atomic_load_explicit(&ep->map->seq, memory_order_relaxed);

	atomic_store_explicit(&ep->map->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (size_t i = 0; i < words; i++)
		atomic_store_explicit(&dst[i], src[i], memory_order_relaxed);
	atomic_store_explicit(&ep->map->seq, seq + 2, memory_order_release);
}

static void refresh(struct uroce_context *ctx, struct stat_ep *ep)
{
	char saved[512];

	/* the calls below may set this thread's error text (a QP before RTR
	 * has no paths): in EMBEDDED mode that is the application's thread,
	 * whose uroce_last_error must not change under it */
	snprintf(saved, sizeof(saved), "%s", uroce_last_error());
	snapshot(ctx, ep);
	publish(ep);
	uroce_fail(0, "%s", saved);
}

void stat_ep_tick(struct uroce_context *ctx)
{
	struct stat_ep *ep = ctx->stat;
	uint64_t now;

	if (!ep)
		return;
	now = clock_ns(CLOCK_MONOTONIC_COARSE); /* vDSO: no syscall */
	if (now - ep->last_ns < ep->refresh_ns)
		return;
	ep->last_ns = now;
	refresh(ctx, ep);
}

static void ep_free(struct stat_ep *ep)
{
	if (ep->map)
		munmap(ep->map, ep->map_bytes);
	free(ep->buf);
	free(ep);
}

/* The file under a temporary name, sized, mapped and filled, then renamed
 * to its own: a reader never sees a half-written header, and a stale file
 * of ours with the same name is replaced. */
static int ep_create(struct uroce_context *ctx, struct stat_ep *ep, const struct uroce_context_attr *attr,
                     const char *const *specs, unsigned nspecs, unsigned idx)
{
	struct ustat_header *h;
	char tmp[112];
	int fd, rc;

	snprintf(ep->path, sizeof(ep->path), USTAT_DIR "/" USTAT_PREFIX "%d.%u", (int)getpid(), idx);
	snprintf(tmp, sizeof(tmp), "%s.tmp", ep->path);
	unlink(tmp); /* ours from a crash between open and rename; another user's cannot be removed */
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ep->map_bytes = sizeof(struct ustat_header) + ep->body_bytes;
	if (fchmod(fd, 0600) || ftruncate(fd, (off_t)ep->map_bytes)) {
		rc = -errno;
		goto fail;
	}
	h = mmap(NULL, ep->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	ep->map = h;
	h->magic = USTAT_MAGIC;
	h->version = USTAT_VERSION;
	h->header_bytes = sizeof(struct ustat_header);
	h->snap_bytes = sizeof(struct ustat_snap);
	h->port_bytes = sizeof(struct ustat_port);
	h->qp_bytes = sizeof(struct ustat_qp);
	h->path_bytes = sizeof(struct uroce_path_stats);
	h->qp_stats_bytes = sizeof(struct uroce_qp_stats);
	h->port_stats_bytes = sizeof(struct uroce_port_stats);
	h->max_qps = ep->max_qps;
	h->ndrop_reasons = UROCE_DROP__COUNT;
	h->file_bytes = ep->map_bytes;
	h->pid = (int32_t)getpid();
	h->ctx_index = idx;
	h->start_ticks = ustat_proc_start_ticks(h->pid);
	h->refresh_ns = ep->refresh_ns;
	h->mode = (int32_t)attr->mode;
	h->engine_cpu = attr->mode == UROCE_ENGINE_DEDICATED ? attr->engine_cpu : -1;
	prctl(PR_GET_NAME, h->comm, 0, 0, 0);
	h->comm[sizeof(h->comm) - 1] = 0;
	for (unsigned i = 0; i < nspecs && i < UROCE_MAX_PORTS; i++) {
		ep->buf->ports[i].port_num = i + 1;
		snprintf(ep->buf->ports[i].spec, sizeof(ep->buf->ports[i].spec), "%s", specs[i]);
	}
	refresh(ctx, ep); /* readers find counters from the start */
	if (rename(tmp, ep->path)) {
		rc = -errno;
		goto fail;
	}
	close(fd);
	return 0;
fail:
	unlink(tmp);
	close(fd);
	return rc;
}

int stat_ep_open(struct uroce_context *ctx, const struct uroce_context_attr *attr, const char *const *specs,
                 unsigned nspecs)
{
	struct stat_ep *ep;
	unsigned idx;
	int rc;

	if (attr->stat_max_qps > USTAT_MAX_QPS_LIMIT)
		return uroce_fail(-EINVAL, "uroce_context_create: stat_max_qps %u; accepted: 0 (= %u) to %u",
		                  attr->stat_max_qps, USTAT_MAX_QPS_DEFAULT, USTAT_MAX_QPS_LIMIT);
	/* every context takes a number, with an endpoint or not: INDEX is
	 * its place among the process's contexts */
	idx = atomic_fetch_add(&next_ctx_index, 1);
	if (!wanted(attr))
		return 0;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return attr->stat_endpoint > 0 ? uroce_fail(-ENOMEM, "uroce_context_create: out of memory") : 0;
	ep->max_qps = attr->stat_max_qps ? attr->stat_max_qps : USTAT_MAX_QPS_DEFAULT;
	ep->refresh_ns = USTAT_REFRESH_NS;
	ep->body_bytes = ustat_body_bytes(ep->max_qps);
	ep->buf = calloc(1, ep->body_bytes);
	clean_stale();
	rc = ep->buf ? ep_create(ctx, ep, attr, specs, nspecs, idx) : -ENOMEM;
	if (rc) {
		ep_free(ep);
		/* asked for explicitly: the caller hears why; by default a
		 * context without an endpoint works all the same */
		if (attr->stat_endpoint > 0)
			return uroce_fail(rc, "uroce_context_create: statistics endpoint in " USTAT_DIR ": %s",
			                  strerror(-rc));
		return 0;
	}
	ep->last_ns = clock_ns(CLOCK_MONOTONIC_COARSE);
	ctx->stat = ep;
	return 0;
}

void stat_ep_close(struct uroce_context *ctx)
{
	struct stat_ep *ep = ctx->stat;

	if (!ep)
		return;
	unlink(ep->path);
	ep_free(ep);
	ctx->stat = NULL;
}
