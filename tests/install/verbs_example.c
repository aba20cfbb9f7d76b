/* SPDX-License-Identifier: MIT */
/* A verbs-style program built against the installed liburoce with nothing
 * but `pkg-config --cflags --libs uroce`: one end of an RC connection over
 * an AF_XDP port. The client RDMA WRITEs a block into the server's buffer,
 * then SENDs a message; the server verifies both; everything is torn down.
 * The two ends swap QPN, rkey, address and GID through files in DIR.
 *   verbs_example server|client IFACE DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#define BUF_BYTES 65536u
#define WRITE_OFF 0u      /* the client's WRITE lands here in the server */
#define WRITE_BYTES 20000u /* several packets at path MTU 1024 */
#define RECV_OFF 32768u   /* the server's receive buffer */
#define SEND_BYTES 3000u
#define GID_INDEX 1       /* the port's IPv4 address as a GID (0 is fe80:: link-local) */
#define STEP_LIMIT_S 20   /* each wait: the peer starting, a completion */

struct peer_info {
	uint32_t qpn, psn, rkey; /* psn: the initial PSN the end sends with */
	uint64_t addr;
	uint8_t gid[16];
};

static void die(const char *what)
{
	fprintf(stderr, "verbs_example: %s: %s\n", what, uroce_last_error());
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t pattern(uint32_t i, uint32_t seed)
{
	return (uint8_t)(i * 13u + seed + (i >> 8));
}

static void put_info(const char *dir, const char *name, const struct peer_info *in)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(tmp, "w");
	if (!f || fwrite(in, sizeof(*in), 1, f) != 1 || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "verbs_example: cannot write %s\n", path);
		exit(1);
	}
}

static void get_info(const char *dir, const char *name, struct peer_info *in)
{
	char path[512];
	double t0 = now_s();

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (now_s() - t0 < STEP_LIMIT_S) {
		FILE *f = fopen(path, "r");

		if (f) {
			size_t n = fread(in, sizeof(*in), 1, f);

			fclose(f);
			if (n == 1)
				return;
		}
		usleep(10000);
	}
	fprintf(stderr, "verbs_example: no %s from the peer within %d s\n", path, STEP_LIMIT_S);
	exit(1);
}

static void wait_peer_done(struct uroce_context *ctx, const char *dir)
{
	char path[512];
	double t0 = now_s();

	snprintf(path, sizeof(path), "%s/client-done", dir);
	while (access(path, F_OK) != 0) {
		if (uroce_progress(ctx) < 0)
			die("progress");
		if (now_s() - t0 > STEP_LIMIT_S) {
			fprintf(stderr, "verbs_example: the client did not finish within %d s\n", STEP_LIMIT_S);
			exit(1);
		}
	}
}

static void wait_completion(struct uroce_context *ctx, struct uroce_cq *cq, uint64_t wr_id)
{
	struct uroce_wc wc;
	double t0 = now_s();
	int n;

	while ((n = uroce_poll_cq(cq, 1, &wc)) == 0) {
		if (uroce_progress(ctx) < 0)
			die("progress");
		if (now_s() - t0 > STEP_LIMIT_S) {
			fprintf(stderr, "verbs_example: no completion for wr_id %llu within %d s\n",
			        (unsigned long long)wr_id, STEP_LIMIT_S);
			exit(1);
		}
	}
	if (n < 0)
		die("poll_cq");
	if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != wr_id) {
		fprintf(stderr, "verbs_example: wr_id %llu completed %s, expected wr_id %llu success\n",
		        (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status),
		        (unsigned long long)wr_id);
		exit(1);
	}
}

static void qp_to_init(struct uroce_qp *qp)
{
	struct uroce_qp_attr a = { 0 };

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                            UROCE_QP_ACCESS_FLAGS))
		die("modify to INIT");
}

static uint32_t my_psn; /* random, as QPNs are: an off-path host cannot guess it */

static void qp_to_rts(struct uroce_qp *qp, const struct peer_info *peer)
{
	struct uroce_qp_attr a = { 0 };

	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.dgid, peer->gid, 16);
	a.ah_attr.sgid_index = GID_INDEX;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
	                            UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
	                            UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 17; /* ~0.5 s: a busy 2-core machine can stall a process */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
	                            UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
	                            UROCE_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_mr *mr;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	struct peer_info me, peer;
	char spec[64];
	uint8_t *buf;
	int server;

	if (argc != 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: verbs_example server|client IFACE DIR\n");
		return 2;
	}
	server = !strcmp(argv[1], "server");
	printf("uroce %s\n", uroce_version());

	snprintf(spec, sizeof(spec), "afxdp:%s", argv[2]);
	ca.port = spec;
	if (uroce_context_create(&ctx, &ca))
		die(spec);
	buf = calloc(1, BUF_BYTES);
	if (!buf)
		die("memory");
	if (uroce_pd_alloc(ctx, &pd) ||
	    uroce_mr_reg(pd, buf, BUF_BYTES, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &mr) ||
	    uroce_cq_create(ctx, 16, &cq))
		die("PD, MR, CQ");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (uroce_qp_create(pd, &ia, &qp))
		die("create QP");

	me.qpn = uroce_qp_num(qp);
	if (getrandom(&my_psn, sizeof(my_psn), 0) != (ssize_t)sizeof(my_psn))
		die("getrandom");
	me.psn = my_psn &= 0xffffff;
	me.rkey = mr->rkey;
	me.addr = (uint64_t)(uintptr_t)buf;
	if (uroce_query_gid(ctx, 1, GID_INDEX, me.gid))
		die("query GID");
	put_info(argv[3], server ? "server" : "client", &me);
	get_info(argv[3], server ? "client" : "server", &peer);

	qp_to_init(qp);
	if (server) {
		/* the receive is posted before RTR, as verbs programs do */
		struct uroce_sge sg = { (uint64_t)(uintptr_t)(buf + RECV_OFF), SEND_BYTES, mr->lkey };
		struct uroce_recv_wr rw = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 };

		if (uroce_post_recv(qp, &rw, NULL))
			die("post_recv");
	}
	qp_to_rts(qp, &peer);
	put_info(argv[3], server ? "server-ready" : "client-ready", &me);

	if (server) {
		/* RC delivers in order: the SEND completes after the WRITE landed */
		wait_completion(ctx, cq, 1);
		for (uint32_t i = 0; i < WRITE_BYTES; i++)
			if (buf[WRITE_OFF + i] != pattern(i, 1)) {
				fprintf(stderr, "verbs_example: WRITE byte %u is %u, expected %u\n",
				        i, buf[WRITE_OFF + i], pattern(i, 1));
				return 1;
			}
		for (uint32_t i = 0; i < SEND_BYTES; i++)
			if (buf[RECV_OFF + i] != pattern(i, 2)) {
				fprintf(stderr, "verbs_example: SEND byte %u is %u, expected %u\n",
				        i, buf[RECV_OFF + i], pattern(i, 2));
				return 1;
			}
		printf("server: WRITE of %u bytes and SEND of %u bytes verified\n", WRITE_BYTES, SEND_BYTES);
		/* keep the engine turning until the client has its completions:
		 * the ACK of the SEND may still be on its way out */
		wait_peer_done(ctx, argv[3]);
	} else {
		struct uroce_sge wsg = { (uint64_t)(uintptr_t)buf, WRITE_BYTES, mr->lkey };
		struct uroce_sge ssg = { (uint64_t)(uintptr_t)(buf + RECV_OFF), SEND_BYTES, mr->lkey };
		struct uroce_send_wr wr = { 0 };

		get_info(argv[3], "server-ready", &peer);
		for (uint32_t i = 0; i < WRITE_BYTES; i++)
			buf[i] = pattern(i, 1);
		for (uint32_t i = 0; i < SEND_BYTES; i++)
			buf[RECV_OFF + i] = pattern(i, 2);

		wr.wr_id = 10;
		wr.opcode = UROCE_WR_RDMA_WRITE;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.sg_list = &wsg;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = peer.addr + WRITE_OFF;
		wr.wr.rdma.rkey = peer.rkey;
		if (uroce_post_send(qp, &wr, NULL))
			die("post RDMA WRITE");
		wait_completion(ctx, cq, 10);

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 11;
		wr.opcode = UROCE_WR_SEND;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.sg_list = &ssg;
		wr.num_sge = 1;
		if (uroce_post_send(qp, &wr, NULL))
			die("post SEND");
		wait_completion(ctx, cq, 11);
		printf("client: WRITE of %u bytes and SEND of %u bytes completed\n", WRITE_BYTES, SEND_BYTES);
		put_info(argv[3], "client-done", &me);
	}

	if (uroce_qp_destroy(qp) || uroce_cq_destroy(cq) || uroce_mr_dereg(mr) ||
	    uroce_pd_free(pd) || uroce_context_destroy(ctx))
		die("teardown");
	free(buf);
	printf("%s: torn down cleanly\n", argv[1]);
	return 0;
}
