/* SPDX-License-Identifier: MIT */
/* The loop-fabric QP pair of the in-process benchmarks (loop_pair.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_pair.h"

const char *bench_name = "bench";

void bench_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", bench_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void loop_side_open(struct loop_fabric *fab, struct loop_side *s, unsigned port, void *buf, size_t len,
                    uint32_t depth, int cqe, const struct uroce_rel_attr *rel)
{
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia;
	char spec[16];

	snprintf(spec, sizeof(spec), "loop:%u", port);
	ca.port = spec;
	ca.loop_fabric = fab;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	if (uroce_context_create(&s->ctx, &ca))
		bench_die("context_create(%s): %s", spec, uroce_last_error());
	if (uroce_pd_alloc(s->ctx, &s->pd) || uroce_cq_create(s->ctx, cqe, &s->scq) ||
	    uroce_cq_create(s->ctx, cqe, &s->rcq))
		bench_die("pd/cq: %s", uroce_last_error());
	if (uroce_mr_reg(s->pd, buf, len,
	                 UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ, &s->mr))
		bench_die("mr_reg of %zu bytes: %s", len, uroce_last_error());
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.rel = *rel;
	if (uroce_qp_create(s->pd, &ia, &s->qp))
		bench_die("qp_create: %s", uroce_last_error());
	if (ia.cap.max_send_wr < depth || ia.cap.max_recv_wr < depth)
		bench_die("qp_create granted %u send / %u recv WRs for a depth of %u", ia.cap.max_send_wr,
		          ia.cap.max_recv_wr, depth);
}

/* Each side's initial PSN, a hash of its (random) QPN: random per run and
 * known to both sides without an exchange. */
static uint32_t loop_psn(struct uroce_qp *qp)
{
	return (uroce_qp_num(qp) * 0x9e3779b1u) >> 8;
}

void loop_side_connect(struct loop_side *s, const struct loop_side *peer, enum uroce_mtu mtu)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	if (uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS))
		bench_die("INIT: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = uroce_qp_num(peer->qp);
	a.dest_token = uroce_qp_token(peer->qp);
	a.rq_psn = loop_psn(peer->qp);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	if (uroce_query_gid(peer->ctx, 1, 1, a.ah_attr.dgid))
		bench_die("query_gid: %s", uroce_last_error());
	a.ah_attr.sgid_index = 1;
	if (uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
	                                       UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER))
		bench_die("RTR: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = loop_psn(s->qp);
	a.timeout = 14;  /* rc's ACK timeout: not used by sr/ec */
	a.retry_cnt = 7; /* sr/ec: transmissions of one packet before RETRY_EXC_ERR */
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (uroce_qp_modify(s->qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                       UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC))
		bench_die("RTS: %s", uroce_last_error());
}

void loop_side_close(struct loop_side *s)
{
	if (uroce_qp_destroy(s->qp) || uroce_mr_dereg(s->mr) || uroce_cq_destroy(s->scq) || uroce_cq_destroy(s->rcq) ||
	    uroce_pd_free(s->pd) || uroce_context_destroy(s->ctx))
		bench_die("teardown: %s", uroce_last_error());
}
