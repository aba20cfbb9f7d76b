/* SPDX-License-Identifier: MIT */
/* What both examples need and is not RDMA: the two ends trade their
 * addresses (QPN, PSN, GID, rkey) through small files in a directory they
 * share, as rdma-core's examples trade them over TCP, and a completion is
 * waited for by driving the engine (EMBEDDED mode) until it arrives. */
#ifndef UROCE_EXAMPLE_COMMON_H
#define UROCE_EXAMPLE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#define EX_WAIT_S 20 /* the longest any step waits for the peer */

/* What one end tells the other. */
struct ex_info {
	uint32_t qpn, psn;        /* its QP and the first PSN it sends */
	uint32_t token, ctrl_qpn; /* sr: uroce_qp_token() and uroce_qp_ctrl_num() */
	uint32_t rkey;
	uint64_t addr;            /* where it lets the peer write */
	uint8_t gid[16];
};

static inline void ex_die(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, uroce_last_error());
	exit(1);
}

static inline double ex_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* DIR/NAME, written whole (a temporary file renamed) so the peer never
 * reads half of it. */
static inline void ex_put(const char *dir, const char *name, const struct ex_info *in)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(tmp, "w");
	if (!f || fwrite(in, sizeof(*in), 1, f) != 1 || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
}

/* Wait for DIR/NAME and read it; with ctx, keep the engine running (the
 * peer may still need our ACKs) while waiting. */
static inline void ex_get(const char *dir, const char *name, struct ex_info *in, struct uroce_context *ctx)
{
	char path[512];
	double t0 = ex_now();

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (;;) {
		FILE *f = fopen(path, "r");

		if (f) {
			size_t n = fread(in, sizeof(*in), 1, f);

			fclose(f);
			if (n == 1)
				return;
		}
		if (ex_now() - t0 > EX_WAIT_S) {
			fprintf(stderr, "no %s from the peer within %d s\n", path, EX_WAIT_S);
			exit(1);
		}
		if (ctx)
			uroce_progress(ctx);
		else
			usleep(10000);
	}
}

/* Run the engine until one completion arrives on cq; it must succeed. */
static inline void ex_wait_wc(struct uroce_context *ctx, struct uroce_cq *cq, struct uroce_wc *wc)
{
	double t0 = ex_now();
	int n;

	while ((n = uroce_poll_cq(cq, 1, wc)) == 0) {
		if (uroce_progress(ctx) < 0)
			ex_die("uroce_progress");
		if (ex_now() - t0 > EX_WAIT_S) {
			fprintf(stderr, "no completion within %d s\n", EX_WAIT_S);
			exit(1);
		}
	}
	if (n < 0)
		ex_die("uroce_poll_cq");
	if (wc->status != UROCE_WC_SUCCESS) {
		fprintf(stderr, "wr_id %llu completed with %s\n", (unsigned long long)wc->wr_id,
		        uroce_wc_status_str(wc->status));
		exit(1);
	}
}

#endif /* UROCE_EXAMPLE_COMMON_H */
