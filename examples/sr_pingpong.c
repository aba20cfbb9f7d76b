/* SPDX-License-Identifier: MIT */
/* A SEND/RECV ping-pong over an RC queue pair whose reliability is sr,
 * selective repeat, chosen in software for this QP alone.
 *
 * The client sends ITERS messages of 4 KiB, each with its number in every
 * byte; the server checks each one and sends it back; the client checks
 * the echo. With sr a lost packet is detected by time (RACK and a tail
 * probe) and only the holes are sent again, where rc (IBTA go-back-N)
 * resends everything after the loss. The API is the same as for rc: what
 * sr adds is one field at create time (init_attr.rel) and one more
 * number to trade, the QP's token, which every control packet (SACK,
 * NACK) to it must carry. At the end each side prints its QP's counters.
 *
 *   sr_pingpong server IFACE DIR
 *   sr_pingpong client IFACE DIR
 *
 * IFACE is opened as an AF_XDP port (run as root); both ends must use sr.
 */
#include <sys/random.h>

#include "example_common.h"

#define MSG 4096u
#define ITERS 200u
#define GID_INDEX 1 /* the port's IPv4 address as a GID */

static void post_recv(struct uroce_qp *qp, struct uroce_mr *mr, uint8_t *buf)
{
	struct uroce_sge sge = { (uint64_t)(uintptr_t)buf, MSG, mr->lkey };
	struct uroce_recv_wr rw = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };

	if (uroce_post_recv(qp, &rw, NULL))
		ex_die("uroce_post_recv");
}

static void send_msg(struct uroce_qp *qp, struct uroce_mr *mr, uint8_t *buf)
{
	struct uroce_sge sge = { (uint64_t)(uintptr_t)buf, MSG, mr->lkey };
	struct uroce_send_wr wr = { 0 };

	wr.wr_id = 2;
	wr.opcode = UROCE_WR_SEND;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (uroce_post_send(qp, &wr, NULL))
		ex_die("uroce_post_send");
}

/* Wait until both the receive (wr_id 1) and the send (2) completed; a
 * send's completion may come after the peer's answer. */
static void wait_both(struct uroce_context *ctx, struct uroce_cq *cq, int want_recv, int want_send)
{
	struct uroce_wc wc;

	while (want_recv || want_send) {
		ex_wait_wc(ctx, cq, &wc);
		if (wc.wr_id == 1) {
			if (wc.opcode != UROCE_WC_RECV || wc.byte_len != MSG) {
				fprintf(stderr, "a receive of %u bytes, opcode %d; expected a SEND of %u\n", wc.byte_len,
				        wc.opcode, MSG);
				exit(1);
			}
			want_recv--;
		} else {
			want_send--;
		}
	}
}

static void check(const uint8_t *buf, uint32_t iter, const char *who)
{
	for (uint32_t i = 0; i < MSG; i++)
		if (buf[i] != (uint8_t)iter) {
			fprintf(stderr, "%s: message %u, byte %u is %u\n", who, iter, i, buf[i]);
			exit(1);
		}
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_qp_attr a = { 0 };
	struct uroce_qp_stats st;
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_mr *mr;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	struct ex_info me = { 0 }, peer;
	uint8_t *tx, *rx;
	char spec[80];
	int server;

	if (argc != 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: sr_pingpong server|client IFACE DIR\n");
		return 2;
	}
	server = !strcmp(argv[1], "server");
	snprintf(spec, sizeof(spec), "afxdp:%s", argv[2]);
	ca.port = spec;
	if (uroce_context_create(&ctx, &ca))
		ex_die(spec);
	tx = calloc(2, MSG);
	if (!tx)
		return 1;
	rx = tx + MSG;
	if (uroce_pd_alloc(ctx, &pd) || uroce_mr_reg(pd, tx, 2 * MSG, UROCE_ACCESS_LOCAL_WRITE, &mr) ||
	    uroce_cq_create(ctx, 16, &cq))
		ex_die("PD, MR, CQ");

	/* The one difference from an rc QP at create time. */
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.rel.reliability = UROCE_REL_SR;
	if (uroce_qp_create(pd, &ia, &qp))
		ex_die("uroce_qp_create");

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS))
		ex_die("INIT");
	post_recv(qp, mr, rx); /* before the peer can send */

	if (getrandom(&me.psn, sizeof(me.psn), 0) != (ssize_t)sizeof(me.psn))
		return 1;
	me.psn &= 0xffffff;
	me.qpn = uroce_qp_num(qp);
	me.token = uroce_qp_token(qp);       /* the peer's control packets must carry it */
	me.ctrl_qpn = uroce_qp_ctrl_num(qp); /* where the peer's SACKs go */
	if (uroce_query_gid(ctx, 1, GID_INDEX, me.gid))
		ex_die("uroce_query_gid");
	ex_put(argv[3], argv[1], &me);
	ex_get(argv[3], server ? "client" : "server", &peer, NULL);

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.dest_token = peer.token;
	a.dest_ctrl_qpn = peer.ctrl_qpn;
	a.max_dest_rd_atomic = 1; /* what every RC QP gives at RTR */
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.dgid, peer.gid, 16);
	a.ah_attr.sgid_index = GID_INDEX;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
	                            UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER |
	                            UROCE_QP_DEST_TOKEN | UROCE_QP_DEST_CTRL_QPN))
		ex_die("RTR");
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = me.psn;
	a.timeout = 17;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                            UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC))
		ex_die("RTS");
	ex_put(argv[3], server ? "server-ready" : "client-ready", &me);
	ex_get(argv[3], server ? "client-ready" : "server-ready", &peer, ctx);

	for (uint32_t it = 0; it < ITERS; it++) {
		if (server) {
			wait_both(ctx, cq, 1, 0);
			check(rx, it, "server");
			memcpy(tx, rx, MSG);
			post_recv(qp, mr, rx);
			send_msg(qp, mr, tx);
			wait_both(ctx, cq, 0, 1);
		} else {
			memset(tx, (int)(uint8_t)it, MSG);
			send_msg(qp, mr, tx);
			wait_both(ctx, cq, 1, 1);
			check(rx, it, "client");
			post_recv(qp, mr, rx);
		}
	}
	if (uroce_qp_stats(qp, &st))
		ex_die("uroce_qp_stats");
	printf("%s: %u messages of %u bytes echoed and checked; tx_packets=%llu retransmits=%llu sacks_rcvd=%llu\n",
	       argv[1], ITERS, MSG, (unsigned long long)st.tx_packets, (unsigned long long)st.retransmits,
	       (unsigned long long)st.sacks_rcvd);

	/* the server's last SEND completes once the client acknowledged it:
	 * both wait for each other before tearing down */
	ex_put(argv[3], server ? "server-done" : "client-done", &me);
	ex_get(argv[3], server ? "client-done" : "server-done", &peer, ctx);
	for (double t0 = ex_now(); ex_now() - t0 < 0.2;)
		uroce_progress(ctx); /* the last ACKs leave */
	if (uroce_qp_destroy(qp) || uroce_cq_destroy(cq) || uroce_mr_dereg(mr) || uroce_pd_free(pd) ||
	    uroce_context_destroy(ctx))
		ex_die("teardown");
	free(tx);
	return 0;
}
