/* SPDX-License-Identifier: MIT */
/* An SRQ on a verbs port: three RC receivers share one SRQ of the NIC and
 * three senders send them 10 SENDs with immediate each, over the device's
 * own loopback (every QP on verbs:DEV, connected to its own GID). Passes
 * when all 30 arrive once, each on the QP its immediate names, with its
 * bytes. Run in a vmlab guest by verbs_rc.sh:  verbs_srq SPEC GID_INDEX */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#define NQP 3
#define NMSG 10
#define SLOT 4096u
#define NRECV (NQP * NMSG + 8)

static int fails;
#define CHECK(c, ...) do { if (!(c)) { fails++; fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define REQUIRE(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, ": %s\n", uroce_last_error()); exit(1); } } while (0)

static void to_rts(struct uroce_qp *qp, uint32_t dest, const uint8_t gid[16], int gidx)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS) == 0,
	        "INIT");
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.dgid, gid, 16);
	a.ah_attr.sgid_index = (uint8_t)gidx;
	a.ah_attr.port_num = 1;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
	                                UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER) == 0, "RTR");
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
	                                UROCE_QP_SQ_PSN | UROCE_QP_MAX_QP_RD_ATOMIC) == 0, "RTS");
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca = { .port = argc > 1 ? argv[1] : "verbs:rxe0" };
	int gidx = argc > 2 ? atoi(argv[2]) : 1;
	struct uroce_srq_init_attr sa = { .max_wr = NRECV, .max_sge = 1 };
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_srq *srq;
	struct uroce_mr *mr;
	struct uroce_qp *rq[NQP], *sq[NQP];
	uint8_t gid[16];
	int got[NQP][NMSG] = { { 0 } }, done = 0, sends = 0;
	size_t len = (size_t)(NRECV + NQP * NMSG) * SLOT;
	uint8_t *buf = calloc(1, len), *tx = buf + (size_t)NRECV * SLOT;

	REQUIRE(buf && uroce_context_create(&ctx, &ca) == 0, "context %s", ca.port);
	REQUIRE(uroce_query_gid(ctx, 1, gidx, gid) == 0, "gid %d", gidx);
	REQUIRE(uroce_pd_alloc(ctx, &pd) == 0 && uroce_cq_create(ctx, 256, &cq) == 0, "pd/cq");
	REQUIRE(uroce_mr_reg(pd, buf, len, UROCE_ACCESS_LOCAL_WRITE, &mr) == 0, "mr");
	REQUIRE(uroce_srq_create(pd, &sa, &srq) == 0, "srq");
	for (int i = 0; i < NQP; i++) {
		struct uroce_qp_init_attr ia = { .qp_type = UROCE_QPT_RC, .send_cq = cq, .recv_cq = cq, .srq = srq,
		                                 .cap = { .max_send_wr = 16, .max_send_sge = 1 } };
		struct uroce_qp_init_attr ib = { .qp_type = UROCE_QPT_RC, .send_cq = cq, .recv_cq = cq,
		                                 .cap = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1,
		                                          .max_recv_sge = 1 } };

		REQUIRE(uroce_qp_create(pd, &ia, &rq[i]) == 0 && uroce_qp_create(pd, &ib, &sq[i]) == 0, "qp %d", i);
	}
	for (int i = 0; i < NQP; i++) {
		to_rts(rq[i], uroce_qp_num(sq[i]), gid, gidx);
		to_rts(sq[i], uroce_qp_num(rq[i]), gid, gidx);
	}
	for (int k = 0; k < NRECV; k++) {
		struct uroce_sge sg = { (uintptr_t)buf + (size_t)k * SLOT, SLOT, mr->lkey };
		struct uroce_recv_wr rw = { .wr_id = (uint64_t)k, .sg_list = &sg, .num_sge = 1 };

		REQUIRE(uroce_post_srq_recv(srq, &rw, NULL) == 0, "srq recv %d", k);
	}
	for (int i = 0; i < NQP; i++)
		for (int j = 0; j < NMSG; j++) {
			uint8_t *m = tx + (size_t)(i * NMSG + j) * SLOT;
			uint32_t n = 100 + 37u * (uint32_t)(i * NMSG + j);
			struct uroce_sge sg = { (uintptr_t)m, n, mr->lkey };
			struct uroce_send_wr wr = { .wr_id = 1000, .sg_list = &sg, .num_sge = 1,
			                            .opcode = UROCE_WR_SEND_WITH_IMM, .send_flags = UROCE_SEND_SIGNALED,
			                            .imm_data = htonl((uint32_t)(i << 8 | j)) };

			memset(m, 0x30 + i * NMSG + j, n);
			REQUIRE(uroce_post_send(sq[i], &wr, NULL) == 0, "send %d.%d", i, j);
		}
	for (long spins = 0; (done < NQP * NMSG || sends < NQP * NMSG) && spins < 200000000L; spins++) {
		struct uroce_wc wc[16];
		int n = uroce_poll_cq(cq, 16, wc);

		REQUIRE(n >= 0, "poll");
		for (int k = 0; k < n; k++) {
			CHECK(wc[k].status == UROCE_WC_SUCCESS, "wc %llu: %s", (unsigned long long)wc[k].wr_id,
			      uroce_wc_status_str(wc[k].status));
			if (wc[k].opcode == UROCE_WC_SEND) {
				sends++;
				continue;
			}
			uint32_t imm = ntohl(wc[k].imm_data), i = imm >> 8, j = imm & 0xff, idx = i * NMSG + j;
			const uint8_t *m = buf + wc[k].wr_id * SLOT;

			done++;
			if (i >= NQP || j >= NMSG) {
				CHECK(0, "immediate 0x%x names no message", imm);
				continue;
			}
			got[i][j]++;
			CHECK(wc[k].qp_num == uroce_qp_num(rq[i]), "message %u.%u arrived on QP 0x%x, not 0x%x", i, j,
			      wc[k].qp_num, uroce_qp_num(rq[i]));
			CHECK(wc[k].byte_len == 100 + 37 * idx, "message %u.%u: %u bytes", i, j, wc[k].byte_len);
			for (uint32_t b = 0; b < wc[k].byte_len; b++)
				if (m[b] != 0x30 + idx) {
					CHECK(0, "message %u.%u: byte %u differs", i, j, b);
					break;
				}
		}
	}
	for (int i = 0; i < NQP; i++)
		for (int j = 0; j < NMSG; j++)
			CHECK(got[i][j] == 1, "message %d.%d arrived %d times", i, j, got[i][j]);
	CHECK(sends == NQP * NMSG, "%d of %d sends completed", sends, NQP * NMSG);
	for (int i = 0; i < NQP; i++)
		CHECK(uroce_qp_destroy(rq[i]) == 0 && uroce_qp_destroy(sq[i]) == 0, "destroy qp %d", i);
	CHECK(uroce_srq_destroy(srq) == 0 && uroce_mr_dereg(mr) == 0 && uroce_cq_destroy(cq) == 0 &&
	      uroce_pd_free(pd) == 0 && uroce_context_destroy(ctx) == 0, "teardown: %s", uroce_last_error());
	free(buf);
	if (fails)
		return 1;
	printf("verbs_srq: PASS %d SENDs over %d QPs through one SRQ\n", done, NQP);
	return 0;
}
