/* SPDX-License-Identifier: MIT */
/* rxe_imm: RC SEND with immediate or RDMA WRITE with immediate between two
 * verbs devices, for the reference captures (neither ibv_rc_pingpong nor the
 * Debian 12 perftest sends an immediate). Runs inside the vmlab guests,
 * against the kernel's rdma_rxe; built on the host with libibverbs.
 *
 *   server: rxe_imm [-d DEV] [-g GIDX] [-n N] [-s SIZE] [-w]
 *   client: rxe_imm [-d DEV] [-g GIDX] [-n N] [-s SIZE] [-w] SERVER_IPV4
 *
 * The client sends N messages of SIZE bytes, one at a time, each with the
 * immediate 0x1000 + i; the server checks each completion's opcode, length
 * and immediate. TCP port 18516 carries "QPN PSN GID RKEY VADDR" each way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "interop_io.h"
#include "verbs_io.h"

#define TCP_PORT 18516
#define INFO_LEN 96          /* one fixed-size record, NUL padded */
#define IMM_BASE 0x1000u
#define WAIT_MS 30000        /* bound of every wait: TCP, completions */
#define MAX_ITERS 1000
#define MAX_SIZE (1u << 20)

struct dest {
	uint32_t qpn, psn, rkey;
	uint64_t va;
	union ibv_gid gid;
};

static int die(const char *what)
{
	fprintf(stderr, "rxe_imm: %s\n", what);
	return 1;
}

static void dest_fmt(const struct dest *d, char out[INFO_LEN])
{
	char g[33];

	io_gid_to_hex(d->gid.raw, g);
	memset(out, 0, INFO_LEN);
	snprintf(out, INFO_LEN, "%06x %06x %s %08x %016" PRIx64, d->qpn, d->psn, g, d->rkey, d->va);
}

static int dest_parse(const char *s, struct dest *d)
{
	char g[33];
	unsigned qpn, psn, rkey;
	uint64_t va;

	if (sscanf(s, "%x %x %32s %x %" SCNx64, &qpn, &psn, g, &rkey, &va) != 5 || strlen(g) != 32 ||
	    io_hex_to_gid(g, d->gid.raw))
		return -EINVAL;
	d->qpn = qpn;
	d->psn = psn;
	d->rkey = rkey;
	d->va = va;
	return 0;
}

static int tcp_server(void)
{
	return tcp_accept_one(TCP_PORT, WAIT_MS);
}

static int tcp_client(const char *host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(TCP_PORT) };

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	return tcp_connect_retry(&sa, WAIT_MS);
}

static int to_rts(struct ibv_qp *qp, int gidx, const struct dest *my, const struct dest *rem)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = rem->qpn,
		.rq_psn = rem->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = rem->gid, .sgid_index = (uint8_t)gidx, .hop_limit = 1 },
			.port_num = 1,
		},
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -errno;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
				  .sq_psn = my->psn, .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return -errno;
	return 0;
}

/* One completion, bounded in time. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = io_now_ms() + WAIT_MS;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -EIO;
		if (n == 1)
			return wc->status == IBV_WC_SUCCESS ? 0 : -EIO;
		if (io_now_ms() > end)
			return -ETIMEDOUT;
	}
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *server = NULL;
	int gidx = 1, iters = 3, c, fd, rc = 1;
	long size = 64;
	bool write_imm = false;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct dest my = { 0 }, rem = { 0 };
	char msg[INFO_LEN];
	void *buf = NULL;

	while ((c = getopt(argc, argv, "d:g:n:s:w")) != -1) {
		switch (c) {
		case 'd': devname = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 's': size = atol(optarg); break;
		case 'w': write_imm = true; break;
		default:
			fprintf(stderr, "usage: rxe_imm [-d DEV] [-g GIDX] [-n N] [-s SIZE] [-w] [SERVER_IPV4]\n");
			return 2;
		}
	}
	if (optind < argc)
		server = argv[optind];
	if (iters < 1 || iters > MAX_ITERS || size < 1 || size > (long)MAX_SIZE || gidx < 0 || gidx > 255) {
		fprintf(stderr, "rxe_imm: -n must be 1..%d, -s 1..%u, -g 0..255\n", MAX_ITERS, MAX_SIZE);
		return 2;
	}

	ctx = vio_open_device(devname);
	if (!ctx)
		return die("no such verbs device");
	buf = calloc(1, (size_t)size);
	pd = ibv_alloc_pd(ctx);
	mr = pd && buf ? ibv_reg_mr(pd, buf, (size_t)size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	cq = ibv_create_cq(ctx, 2 * iters + 2, NULL, NULL, 0);
	if (!mr || !cq) {
		rc = die("cannot register memory or create the CQ");
		goto out;
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = (uint32_t)iters, .max_recv_wr = (uint32_t)iters,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qp = ibv_create_qp(pd, &qa);
	struct ibv_qp_attr ia = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	if (!qp || ibv_modify_qp(qp, &ia, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
	    ibv_query_gid(ctx, 1, gidx, &my.gid)) {
		rc = die("cannot create the QP or read the GID");
		goto out;
	}
	my.qpn = qp->qp_num;
	srand48((long)io_now_ms() ^ getpid());
	my.psn = (uint32_t)lrand48() & 0xffffff;
	my.rkey = mr->rkey;
	my.va = (uint64_t)(uintptr_t)buf;

	if (!server) {
		/* Receives first: the client may send as soon as it has our info. */
		for (int i = 0; i < iters; i++) {
			struct ibv_sge sge = { .addr = my.va, .length = (uint32_t)size, .lkey = mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (ibv_post_recv(qp, &wr, &bad)) {
				rc = die("ibv_post_recv failed");
				goto out;
			}
		}
		fd = tcp_server();
		if (fd < 0 || io_read_full(fd, msg, INFO_LEN, WAIT_MS) || dest_parse(msg, &rem) || to_rts(qp, gidx, &my, &rem)) {
			rc = die("connection setup failed (server)");
			goto out;
		}
		dest_fmt(&my, msg);
		if (write(fd, msg, INFO_LEN) != INFO_LEN) {
			rc = die("cannot send our address");
			goto out;
		}
		for (int i = 0; i < iters; i++) {
			struct ibv_wc wc;
			enum ibv_wc_opcode want = write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;

			if (wait_wc(cq, &wc) || wc.opcode != want || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
			    ntohl(wc.imm_data) != IMM_BASE + (uint32_t)i || wc.byte_len != (uint32_t)size) {
				fprintf(stderr, "rxe_imm: completion %d: status %d opcode %d flags 0x%x imm 0x%x len %u\n", i,
					wc.status, wc.opcode, wc.wc_flags, ntohl(wc.imm_data), wc.byte_len);
				goto out;
			}
		}
		printf("server: %d %s of %ld bytes received, immediates 0x%x..0x%x\n", iters,
		       write_imm ? "RDMA WRITEs with immediate" : "SENDs with immediate", size, IMM_BASE,
		       IMM_BASE + (uint32_t)iters - 1);
		rc = write(fd, "done", 5) == 5 ? 0 : 1;
		close(fd);
		goto out;
	}

	fd = tcp_client(server);
	dest_fmt(&my, msg);
	if (fd < 0 || write(fd, msg, INFO_LEN) != INFO_LEN || io_read_full(fd, msg, INFO_LEN, WAIT_MS) ||
	    dest_parse(msg, &rem) || to_rts(qp, gidx, &my, &rem)) {
		rc = die("connection setup failed (client)");
		goto out;
	}
	for (int i = 0; i < iters; i++) {
		struct ibv_sge sge = { .addr = my.va, .length = (uint32_t)size, .lkey = mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
			.opcode = write_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl(IMM_BASE + (uint32_t)i),
			.wr.rdma = { .remote_addr = rem.va, .rkey = rem.rkey },
		}, *bad;
		struct ibv_wc wc;

		memset(buf, 'a' + i % 26, (size_t)size);
		if (ibv_post_send(qp, &wr, &bad) || wait_wc(cq, &wc)) {
			fprintf(stderr, "rxe_imm: send %d failed\n", i);
			close(fd);
			goto out;
		}
	}
	rc = io_read_full(fd, msg, 5, WAIT_MS) || strcmp(msg, "done") ? die("no \"done\" from the server") : 0;
	if (!rc)
		printf("client: %d %s of %ld bytes sent\n", iters, write_imm ? "RDMA WRITEs with immediate" : "SENDs with immediate", size);
	close(fd);
out:
	vio_release(ctx, pd, mr, cq, NULL, qp, buf);
	return rc;
}
