/* SPDX-License-Identifier: MIT */
/* RDMA WRITE with immediate over an RC queue pair, between two processes.
 *
 * The sender writes 64 KiB straight into the receiver's registered buffer
 * and puts a 32-bit immediate on the last packet. The receiver's CPU never
 * touches the data path: it only posts one receive, which the immediate
 * consumes, so it learns from a single completion (UROCE_WC_RECV_RDMA_WITH_IMM,
 * byte_len = the bytes written) that the whole block has landed.
 *
 *   rc_write_imm receiver IFACE DIR     # e.g. in one network namespace
 *   rc_write_imm sender   IFACE DIR     # in the other, over a veth pair
 *
 * IFACE is opened as an AF_XDP port (afxdp:IFACE; run as root). The two
 * ends trade their QPN, PSN, GID, rkey and buffer address through files
 * in DIR (example_common.h).
 */
#include <arpa/inet.h>
#include <sys/random.h>

#include "example_common.h"

#define BYTES 65536u
#define IMM 0x600dcafeu
#define GID_INDEX 1 /* the port's IPv4 address as a GID (0 is its fe80:: link-local) */

static uint8_t pattern(uint32_t i)
{
	return (uint8_t)(i * 7u + (i >> 8));
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_qp_attr a = { 0 };
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_mr *mr;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	struct ex_info me = { 0 }, peer;
	struct uroce_wc wc;
	char spec[80];
	uint8_t *buf;
	int receiver;

	if (argc != 4 || (strcmp(argv[1], "receiver") && strcmp(argv[1], "sender"))) {
		fprintf(stderr, "usage: rc_write_imm receiver|sender IFACE DIR\n");
		return 2;
	}
	receiver = !strcmp(argv[1], "receiver");

	/* A context on one port, driven from this thread (uroce_progress). */
	snprintf(spec, sizeof(spec), "afxdp:%s", argv[2]);
	ca.port = spec;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	if (uroce_context_create(&ctx, &ca))
		ex_die(spec);

	/* The buffer the sender writes from and the receiver is written into. */
	buf = calloc(1, BYTES);
	if (!buf)
		return 1;
	if (uroce_pd_alloc(ctx, &pd) ||
	    uroce_mr_reg(pd, buf, BYTES, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &mr) ||
	    uroce_cq_create(ctx, 8, &cq))
		ex_die("PD, MR, CQ");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (uroce_qp_create(pd, &ia, &qp))
		ex_die("uroce_qp_create");

	/* RESET -> INIT: the port, and what the peer may do to our memory. */
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS))
		ex_die("INIT");

	/* A WRITE with immediate consumes a receive WR at the receiver (its
	 * buffer stays unused: the data goes where the WRITE says). Post it
	 * before the peer can send, as verbs programs do. */
	if (receiver) {
		struct uroce_recv_wr rw = { .wr_id = 1 };

		if (uroce_post_recv(qp, &rw, NULL))
			ex_die("uroce_post_recv");
	}

	/* Trade addresses. The PSN is random, as the QPN is. */
	if (getrandom(&me.psn, sizeof(me.psn), 0) != (ssize_t)sizeof(me.psn))
		return 1;
	me.psn &= 0xffffff;
	me.qpn = uroce_qp_num(qp);
	me.rkey = mr->rkey;
	me.addr = (uint64_t)(uintptr_t)buf;
	if (uroce_query_gid(ctx, 1, GID_INDEX, me.gid))
		ex_die("uroce_query_gid");
	ex_put(argv[3], argv[1], &me);
	ex_get(argv[3], receiver ? "sender" : "receiver", &peer, NULL);

	/* INIT -> RTR (where the peer is, its first PSN) -> RTS (ours). */
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.dgid, peer.gid, 16);
	a.ah_attr.sgid_index = GID_INDEX;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
	                            UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER))
		ex_die("RTR");
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = me.psn;
	a.timeout = 17; /* 0.5 s before a resend: generous for a loaded machine */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                            UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC))
		ex_die("RTS");
	ex_put(argv[3], receiver ? "receiver-ready" : "sender-ready", &me);

	if (receiver) {
		ex_wait_wc(ctx, cq, &wc);
		if (wc.opcode != UROCE_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & UROCE_WC_WITH_IMM) ||
		    ntohl(wc.imm_data) != IMM || wc.byte_len != BYTES) {
			fprintf(stderr, "receiver: opcode %d, imm 0x%x, %u bytes; expected a WRITE with "
			        "immediate 0x%x of %u bytes\n", wc.opcode, ntohl(wc.imm_data), wc.byte_len, IMM, BYTES);
			return 1;
		}
		for (uint32_t i = 0; i < BYTES; i++)
			if (buf[i] != pattern(i)) {
				fprintf(stderr, "receiver: byte %u is %u, expected %u\n", i, buf[i], pattern(i));
				return 1;
			}
		printf("receiver: %u bytes written, immediate 0x%x: verified\n", wc.byte_len, ntohl(wc.imm_data));
		/* the sender's completion needs our ACK: keep the engine running
		 * until it says it has it */
		ex_get(argv[3], "sender-done", &peer, ctx);
	} else {
		struct uroce_sge sge = { (uint64_t)(uintptr_t)buf, BYTES, mr->lkey };
		struct uroce_send_wr wr = { 0 };

		for (uint32_t i = 0; i < BYTES; i++)
			buf[i] = pattern(i);
		ex_get(argv[3], "receiver-ready", &peer, NULL);
		wr.wr_id = 2;
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.imm_data = htonl(IMM); /* network byte order, as in verbs */
		wr.wr.rdma.remote_addr = peer.addr;
		wr.wr.rdma.rkey = peer.rkey;
		if (uroce_post_send(qp, &wr, NULL))
			ex_die("uroce_post_send");
		ex_wait_wc(ctx, cq, &wc);
		printf("sender: WRITE with immediate of %u bytes acknowledged\n", BYTES);
		ex_put(argv[3], "sender-done", &me);
	}

	/* Tear down in reverse order of creation. */
	if (uroce_qp_destroy(qp) || uroce_cq_destroy(cq) || uroce_mr_dereg(mr) || uroce_pd_free(pd) ||
	    uroce_context_destroy(ctx))
		ex_die("teardown");
	free(buf);
	return 0;
}
