/* SPDX-License-Identifier: MIT */
/* The statistics endpoint (stat_endpoint.c), read back from this process
 * as uroce-stat reads it: an EMBEDDED sr pair on the loop fabric publishes
 * its port, QP, path and engine counters, which grow with traffic and
 * refresh only from uroce_progress, without touching the application's
 * uroce_last_error; the file is 0600, listing is bounded (truncated says
 * so), the attribute and UROCE_STAT=0 turn it off, a dead process's file
 * is removed, destroy removes ours; a DEDICATED engine refreshes its own
 * while another thread reads. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tr_test.h"
#include "transport/core/stat_format.h"

static unsigned next_index; /* the process's contexts, numbered as created */

struct reader {
	char path[128];
	const struct ustat_header *h;
	size_t bytes;
	struct ustat_snap *s;
};

static void endpoint_path(char *out, size_t n, unsigned idx)
{
	snprintf(out, n, USTAT_DIR "/" USTAT_PREFIX "%d.%u", (int)getpid(), idx);
}

static void reader_open(struct reader *r, unsigned idx)
{
	struct stat sb;
	int fd;

	endpoint_path(r->path, sizeof(r->path), idx);
	fd = open(r->path, O_RDONLY | O_NOFOLLOW);
	REQUIRE(fd >= 0, "%s: %s", r->path, strerror(errno));
	REQUIRE(fstat(fd, &sb) == 0, "fstat");
	CHECK((sb.st_mode & 0777) == 0600, "%s: mode %o, not 0600", r->path, sb.st_mode & 0777);
	CHECK(sb.st_uid == geteuid(), "owner %u", sb.st_uid);
	r->bytes = (size_t)sb.st_size;
	r->h = mmap(NULL, r->bytes, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	REQUIRE(r->h != MAP_FAILED, "mmap");
	REQUIRE(r->h->magic == USTAT_MAGIC && r->h->version == USTAT_VERSION, "magic/version");
	CHECK(r->h->pid == getpid() && r->h->ctx_index == idx, "pid %d index %u", r->h->pid, r->h->ctx_index);
	CHECK(r->h->start_ticks && r->h->start_ticks == ustat_proc_start_ticks(getpid()), "start ticks");
	CHECK(r->h->file_bytes == r->bytes && r->h->qp_bytes == sizeof(struct ustat_qp), "sizes");
	r->s = calloc(1, ustat_body_bytes(r->h->max_qps));
	REQUIRE(r->s, "buf");
}

static void reader_read(struct reader *r)
{
	REQUIRE(ustat_read(r->h, r->s, ustat_body_bytes(r->h->max_qps), 1000), "a consistent snapshot");
}

static void reader_close(struct reader *r)
{
	munmap((void *)r->h, r->bytes);
	free(r->s);
}

static bool exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Traffic until both endpoints published a newer snapshot (real time:
 * the refresh is every 100 ms); bounded at 5 s. */
static void run_until_refreshed(struct tr_pair *p, struct reader *r0, struct reader *r1, unsigned writes)
{
	uint64_t n0, n1, t0 = mono_ms();
	struct uroce_wc wc;
	struct uroce_sge sg;
	struct uroce_send_wr wr;

	reader_read(r0);
	reader_read(r1);
	n0 = r0->s->snapshots;
	n1 = r1->s->snapshots;
	for (unsigned i = 0; i < writes; i++) {
		tr_sge(&sg, &p->s[0], 0, 8192);
		tr_wr(&wr, i, &sg, UROCE_WR_RDMA_WRITE);
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)p->s[1].buf + 65536;
		wr.wr.rdma.rkey = p->s[1].mr->rkey;
		REQUIRE(uroce_post_send(p->s[0].qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
		REQUIRE(tr_wait(p, p->s[0].scq, &wc, 200000) == 0 && wc.status == UROCE_WC_SUCCESS, "write %u", i);
	}
	do {
		tr_step(p);
		reader_read(r0);
		reader_read(r1);
	} while ((r0->s->snapshots == n0 || r1->s->snapshots == n1) && mono_ms() - t0 < 5000);
	CHECK(r0->s->snapshots > n0 && r1->s->snapshots > n1, "refreshed within 5 s");
}

static void test_embedded_pair(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct reader r0, r1;
	struct uroce_path_stats ps;
	uint64_t tx0, qtx0;
	const struct ustat_qp *q;
	char before[512];
	unsigned i0 = next_index, i1 = next_index + 1;

	tr_opts_default(&o, UROCE_QPT_RC);
	o.rel.reliability = UROCE_REL_SR;
	o.path.npaths = 4;
	o.cc.algo = UROCE_CC_SWIFT;
	tr_open(&p, &o, 7, NULL, NULL);
	next_index += 2;
	reader_open(&r0, i0);
	reader_open(&r1, i1);
	CHECK(r0.h->mode == UROCE_ENGINE_EMBEDDED && r0.h->max_qps == USTAT_MAX_QPS_DEFAULT, "mode, max_qps");

	/* published at creation: the port is there before any progress */
	reader_read(&r0);
	CHECK(r0.s->nports == 1 && !strcmp(r0.s->ports[0].spec, "loop:0") && r0.s->ports[0].port_num == 1,
	      "port 1 loop:0, got %u '%s'", r0.s->nports, r0.s->ports[0].spec);

	run_until_refreshed(&p, &r0, &r1, 20);
	CHECK(r0.s->ports[0].st.tx_packets > 0 && r0.s->ports[0].st.tx_bytes > 0, "port tx counted");
	CHECK(r1.s->ports[0].st.rx_packets > 0, "peer's port rx counted");
	CHECK(r0.s->nqps == 1 && r0.s->nqps_listed == 1 && !(r0.s->flags & USTAT_F_QPS_TRUNCATED), "one QP");
	q = ustat_qp_at(r0.s, 0);
	CHECK(q->qpn == uroce_qp_num(p.s[0].qp) && q->dqpn == uroce_qp_num(p.s[1].qp), "QP numbers");
	CHECK(q->type == UROCE_QPT_RC && q->rel == UROCE_REL_SR && q->cc == UROCE_CC_SWIFT, "type, mode, controller");
	CHECK(q->state == UROCE_QPS_RTS && q->port_num == 1, "state %u", q->state);
	CHECK(q->st.tx_packets > 0 && q->st.sacks_rcvd > 0 && q->st.srtt_ns > 0, "QP counters: tx %" PRIu64 " sacks %" PRIu64,
	      q->st.tx_packets, q->st.sacks_rcvd);
	CHECK(q->st.cc_window_bytes > 0, "swift's window");
	CHECK(q->npaths == 4 && q->npaths_listed == 4 && !(q->flags & USTAT_QP_PATHS_TRUNCATED), "paths %u/%u",
	      q->npaths_listed, q->npaths);
	CHECK(q->paths[0].tx_pkts + q->paths[1].tx_pkts + q->paths[2].tx_pkts + q->paths[3].tx_pkts > 0, "path tx");
	CHECK(r0.s->eng.passes > 0 && r0.s->eng.idle_passes <= r0.s->eng.passes, "engine loops");
	tx0 = r0.s->ports[0].st.tx_packets;
	qtx0 = q->st.tx_packets;

	/* the counters grow; the application's error text stays its own */
	CHECK(uroce_qp_path_stats(p.s[0].qp, 99, &ps) < 0, "path 99 refused");
	snprintf(before, sizeof(before), "%s", uroce_last_error());
	run_until_refreshed(&p, &r0, &r1, 20);
	CHECK(!strcmp(before, uroce_last_error()), "uroce_last_error changed under the application: '%s' -> '%s'",
	      before, uroce_last_error());
	q = ustat_qp_at(r0.s, 0);
	CHECK(r0.s->ports[0].st.tx_packets > tx0 && q->st.tx_packets > qtx0, "counters grew");

	/* no progress, no refresh: the snapshot is the engine's alone */
	{
		uint64_t n = r0.s->snapshots;

		usleep(250000);
		reader_read(&r0);
		CHECK(r0.s->snapshots == n, "refreshed without uroce_progress");
	}
	tr_close(&p);
	CHECK(!exists(r0.path) && !exists(r1.path), "destroy removes the endpoints");
	reader_close(&r0);
	reader_close(&r1);
}

/* A one-port fabric and a context on it with attr's stat fields. */
static int ctx_on(struct loop_fabric *fab, int stat_endpoint, unsigned max_qps, struct uroce_context **ctx)
{
	struct uroce_context_attr ca = { 0 };
	int rc;

	ca.port = "loop:0";
	ca.loop_fabric = fab;
	ca.stat_endpoint = stat_endpoint;
	ca.stat_max_qps = max_qps;
	rc = uroce_context_create(ctx, &ca);
	if (!rc)
		next_index++;
	return rc;
}

static void test_switches_and_bounds(void)
{
	struct loop_fabric *fab = loop_fabric_create(1, 1);
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_qp *qp[3];
	struct uroce_qp_init_attr ia = { 0 };
	struct reader r;
	char path[128];

	REQUIRE(fab, "fabric");
	/* off by the attribute */
	REQUIRE(ctx_on(fab, -1, 0, &ctx) == 0, "ctx: %s", uroce_last_error());
	endpoint_path(path, sizeof(path), next_index - 1);
	CHECK(!exists(path), "stat_endpoint = -1 made %s", path);
	uroce_context_destroy(ctx);
	/* off by the environment, unless the attribute insists */
	setenv("UROCE_STAT", "0", 1);
	REQUIRE(ctx_on(fab, 0, 0, &ctx) == 0, "ctx");
	endpoint_path(path, sizeof(path), next_index - 1);
	CHECK(!exists(path), "UROCE_STAT=0 made %s", path);
	uroce_context_destroy(ctx);
	REQUIRE(ctx_on(fab, 1, 0, &ctx) == 0, "ctx");
	endpoint_path(path, sizeof(path), next_index - 1);
	CHECK(exists(path), "stat_endpoint = 1 under UROCE_STAT=0 made none");
	uroce_context_destroy(ctx);
	unsetenv("UROCE_STAT");
	CHECK(ctx_on(fab, 0, USTAT_MAX_QPS_LIMIT + 1, &ctx) == -EINVAL, "stat_max_qps past the limit refused");

	/* bounded: three QPs, two listed, truncated said */
	REQUIRE(ctx_on(fab, 0, 2, &ctx) == 0, "ctx");
	reader_open(&r, next_index - 1);
	CHECK(r.h->max_qps == 2, "max_qps %u", r.h->max_qps);
	REQUIRE(uroce_pd_alloc(ctx, &pd) == 0 && uroce_cq_create(ctx, 64, &cq) == 0, "pd, cq");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	for (int i = 0; i < 3; i++)
		REQUIRE(uroce_qp_create(pd, &ia, &qp[i]) == 0, "qp: %s", uroce_last_error());
	{
		uint64_t t0 = mono_ms();

		do {
			uroce_progress(ctx);
			reader_read(&r);
		} while (r.s->nqps != 3 && mono_ms() - t0 < 5000);
	}
	CHECK(r.s->nqps == 3 && r.s->nqps_listed == 2 && (r.s->flags & USTAT_F_QPS_TRUNCATED), "3 QPs, %u listed, flags %u",
	      r.s->nqps_listed, r.s->flags);
	CHECK(ustat_qp_at(r.s, 0)->state == UROCE_QPS_RESET && ustat_qp_at(r.s, 0)->npaths == 0, "RESET rc QP, no paths");
	for (int i = 0; i < 3; i++)
		uroce_qp_destroy(qp[i]);
	uroce_cq_destroy(cq);
	uroce_pd_free(pd);
	uroce_context_destroy(ctx);
	CHECK(!exists(r.path), "removed");
	reader_close(&r);
	loop_fabric_destroy(fab);
}

/* A file a killed process left behind goes when a context is made. */
static void test_stale(void)
{
	struct loop_fabric *fab = loop_fabric_create(1, 2);
	struct uroce_context *ctx;
	char path[128];
	pid_t child = fork();
	int fd, st;

	REQUIRE(child >= 0, "fork");
	if (child == 0)
		_exit(0);
	REQUIRE(waitpid(child, &st, 0) == child, "wait");
	snprintf(path, sizeof(path), USTAT_DIR "/" USTAT_PREFIX "%d.0", (int)child);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	REQUIRE(fd >= 0, "%s: %s", path, strerror(errno));
	close(fd);
	REQUIRE(fab && ctx_on(fab, 0, 0, &ctx) == 0, "ctx");
	CHECK(!exists(path) || kill(child, 0) == 0, "the dead process's %s is still there", path);
	unlink(path);
	uroce_context_destroy(ctx);
	loop_fabric_destroy(fab);
}

/* DEDICATED: the engine thread refreshes its snapshot; this thread reads
 * it meanwhile (relaxed atomics on both sides: no race). */
static void test_dedicated(void)
{
	struct uroce_context_attr ca;
	struct uroce_context *ctx;
	struct loop_fabric *fab = tr_rt_context(3, NULL, &ca, &ctx);
	struct reader r;
	uint64_t n, loops, t0 = mono_ms();

	next_index++;
	reader_open(&r, next_index - 1);
	CHECK(r.h->mode == UROCE_ENGINE_DEDICATED, "mode %d", r.h->mode);
	reader_read(&r);
	n = r.s->snapshots;
	loops = r.s->eng.passes;
	do {
		usleep(20000);
		reader_read(&r);
	} while (r.s->snapshots < n + 2 && mono_ms() - t0 < 5000);
	CHECK(r.s->snapshots >= n + 2 && r.s->eng.passes > loops, "the engine thread refreshed it: %" PRIu64 " -> %" PRIu64,
	      n, r.s->snapshots);
	CHECK(r.s->eng.idle_passes > 0, "an idle engine counts idle loops");
	CHECK(uroce_context_destroy(ctx) == 0, "destroy");
	CHECK(!exists(r.path), "removed");
	reader_close(&r);
	loop_fabric_destroy(fab);
}

int main(void)
{
	unsetenv("UROCE_STAT");
	test_embedded_pair();
	test_switches_and_bounds();
	test_stale();
	test_dedicated();
	return test_done("test_stat");
}
