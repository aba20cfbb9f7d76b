/* SPDX-License-Identifier: MIT */
/* Scale benchmark: N RC QPs on one context, each taken to RTS, and the
 * memory they cost, for each reliability mode. Reports the transport
 * state per QP (sizeof the QP object, what uroce_qp_state_bytes says, the
 * reliability policy's own state: uroce_rel_state_bytes, OptiNIC's Table 4
 * figure for be) and the resident memory per QP measured from
 * /proc/self/statm, for the smallest queues a QP can have and for
 * perftest-like queue depths. Runs on a loop port, so it needs no
 * privileges and no network.
 *
 *   qp_scale [--qps N] [--rel rc|sr|ec|be]...   (default: rc, be and sr)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"

static long rss_bytes(void)
{
	long pages_total, pages_rss;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return pages_rss * sysconf(_SC_PAGESIZE);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct caps_case {
	const char *name;
	struct uroce_qp_cap cap;
};

static int run(struct uroce_context *ctx, struct uroce_pd *pd, struct uroce_cq *cq, const struct caps_case *c,
	       int nqps, const uint8_t gid[16], enum uroce_reliability rel)
{
	struct uroce_qp **qps = calloc((size_t)nqps, sizeof(*qps));
	long before, after;
	double t0, t1;
	int i, rc = 0;

	if (!qps)
		return -ENOMEM;
	before = rss_bytes();
	t0 = now_s();
	for (i = 0; i < nqps; i++) {
		struct uroce_qp_init_attr init = {
			.qp_type = UROCE_QPT_RC, .send_cq = cq, .recv_cq = cq, .cap = c->cap,
			.rel = { .reliability = rel },
		};
		struct uroce_qp_attr a = {0};

		rc = uroce_qp_create(pd, &init, &qps[i]);
		if (rc)
			break;
		a.qp_state = UROCE_QPS_INIT;
		a.qp_access_flags = UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ;
		a.port_num = 1;
		rc = uroce_qp_modify(qps[i], &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
						       UROCE_QP_ACCESS_FLAGS);
		if (rc)
			break;
		a.qp_state = UROCE_QPS_RTR;
		a.path_mtu = UROCE_MTU_1024;
		a.dest_qp_num = uroce_qp_num(qps[i]); /* each QP talks to itself over the loopback */
		a.dest_token = uroce_qp_token(qps[i]);
		a.rq_psn = 0;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		memcpy(a.ah_attr.dgid, gid, 16);
		a.ah_attr.sgid_index = 1; /* IPv4-mapped, as the dgid */
		a.ah_attr.hop_limit = 64;
		rc = uroce_qp_modify(qps[i], &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
						       UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN | UROCE_QP_RQ_PSN |
						       UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER);
		if (rc)
			break;
		a.qp_state = UROCE_QPS_RTS;
		a.sq_psn = 0;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		rc = uroce_qp_modify(qps[i], &a, UROCE_QP_STATE | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
						       UROCE_QP_RNR_RETRY | UROCE_QP_SQ_PSN | UROCE_QP_MAX_QP_RD_ATOMIC);
		if (rc)
			break;
	}
	t1 = now_s();
	after = rss_bytes();
	if (rc) {
		fprintf(stderr, "qp_scale: QP %d: %s (%s)\n", i, uroce_strerror(rc), uroce_last_error());
	} else {
		uroce_progress(ctx);
		printf("| %s | %s | %d | %u/%u/%u/%u/%u | %zu | %zu | %zu | %.0f | %.2f |\n", uroce_reliability_str(rel),
		       c->name, nqps, c->cap.max_send_wr, c->cap.max_recv_wr, c->cap.max_send_sge, c->cap.max_recv_sge,
		       c->cap.max_inline_data, uroce_qp_state_bytes(UROCE_QPT_RC), uroce_qp_hot_bytes(UROCE_QPT_RC),
		       uroce_rel_state_bytes(rel), (double)(after - before) / nqps, (t1 - t0) * 1e6 / nqps);
	}
	for (int j = 0; j < nqps; j++)
		if (qps[j])
			uroce_qp_destroy(qps[j]);
	free(qps);
	return rc;
}

int main(int argc, char **argv)
{
	int nqps = 10000;
	enum uroce_reliability rels[8] = { UROCE_REL_RC, UROCE_REL_BE, UROCE_REL_SR };
	unsigned nrel = 0;
	struct loop_fabric *fab;
	struct uroce_context_attr ca = { .port = "loop:0", .mode = UROCE_ENGINE_EMBEDDED };
	struct uroce_context *ctx;
	struct uroce_port_attr pa;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--qps") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 1000000) {
				fprintf(stderr, "qp_scale: --qps takes 1-1000000\n");
				return 2;
			}
			nqps = (int)v;
		} else if (!strcmp(argv[i], "--rel") && i + 1 < argc) {
			if (nrel == 8 || uroce_reliability_parse(argv[++i], &rels[nrel])) {
				fprintf(stderr, "qp_scale: --rel '%s': accepted rc, sr, ec, be (at most 8 times)\n", argv[i]);
				return 2;
			}
			nrel++;
		} else {
			fprintf(stderr, "usage: qp_scale [--qps N] [--rel rc|sr|ec|be]...\n");
			return 2;
		}
	}
	fab = loop_fabric_create(1, 1);
	if (!fab || loop_fabric_connect(fab, 0, 0, NULL, NULL)) {
		fprintf(stderr, "qp_scale: loop fabric setup failed\n");
		return 1;
	}
	ca.loop_fabric = fab;
	if (uroce_context_create(&ctx, &ca) || uroce_query_port(ctx, 1, &pa) || uroce_pd_alloc(ctx, &pd) ||
	    uroce_cq_create(ctx, 4096, &cq)) {
		fprintf(stderr, "qp_scale: setup: %s\n", uroce_last_error());
		return 1;
	}

	static const struct caps_case cases[] = {
		{"smallest queues", {1, 1, 1, 1, 0}},
		{"perftest-like queues", {128, 512, 1, 1, 0}},
	};
	if (!nrel)
		nrel = 3;
	printf("| reliability | queues | QPs | send/recv WR, send/recv SGE, inline | QP object bytes | of them hot (per-packet) bytes | policy state bytes | RSS bytes per QP | create+RTS us per QP |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	int rc = 0;
	for (unsigned r = 0; r < nrel && !rc; r++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && !rc; i++)
			rc = run(ctx, pd, cq, &cases[i], nqps, pa.gid, rels[r]);

	uroce_cq_destroy(cq);
	uroce_pd_free(pd);
	uroce_context_destroy(ctx);
	loop_fabric_destroy(fab);
	return rc ? 1 : 0;
}
