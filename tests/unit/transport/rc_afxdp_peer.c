/* SPDX-License-Identifier: MIT */
/* One end of the RC-over-AF_XDP netns test. Both ends exchange their QPN,
 * rkey, buffer address and GID through files in a directory; then the
 * "client" does RDMA WRITE, RDMA READ and SEND of several sizes at the
 * given path MTU and verifies every byte, the "server" posts receives,
 * verifies what it receives and what was written into it.
 *   rc_afxdp_peer client|server IFACE DIR MTU_BYTES [GID_INDEX]
 * GID_INDEX 1 (default) talks IPv4, 2 IPv6 (see uroce_query_gid).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#define BUF (4u << 20)
#define READ_OFF (2u << 20)
#define LIMIT_NS (30ull * 1000000000ull)

static const uint32_t sizes[] = { 1, 1000, 1024, 4096, 4097, 10000, 65536, 300000, 1000000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fill(uint8_t *b, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 31u + i * 7u + (i >> 9));
}

static int check(const uint8_t *b, uint32_t n, uint32_t seed)
{
	for (uint32_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(seed * 31u + i * 7u + (i >> 9)))
			return -1;
	return 0;
}

#define DIE(...)                                                        \
	do {                                                            \
		fprintf(stderr, __VA_ARGS__);                           \
		fprintf(stderr, " (%s)\n", uroce_last_error());         \
		exit(1);                                                \
	} while (0)

struct info {
	uint32_t qpn, psn, rkey; /* psn: the initial PSN the end sends with, random */
	uint64_t addr;
	uint8_t gid[16];
};

static void put_info(const char *dir, const char *role, const struct info *in)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, role);
	snprintf(path, sizeof(path), "%s/%s.info", dir, role);
	f = fopen(tmp, "w");
	if (!f || fwrite(in, sizeof(*in), 1, f) != 1 || fclose(f))
		DIE("cannot write %s", tmp);
	if (rename(tmp, path))
		DIE("cannot rename to %s", path);
}

static void get_info(const char *dir, const char *role, struct info *in)
{
	char path[512];
	uint64_t t0 = now_ns();

	snprintf(path, sizeof(path), "%s/%s.info", dir, role);
	for (;;) {
		FILE *f = fopen(path, "r");

		if (f) {
			size_t n = fread(in, sizeof(*in), 1, f);

			fclose(f);
			if (n == 1)
				return;
		}
		if (now_ns() - t0 > LIMIT_NS)
			DIE("no %s from the peer", path);
		usleep(10000);
	}
}

static bool file_exists(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void wait_wc(struct uroce_context *ctx, struct uroce_cq *cq, struct uroce_wc *wc, const char *what)
{
	uint64_t t0 = now_ns();

	while (uroce_poll_cq(cq, 1, wc) != 1) {
		if (uroce_progress(ctx) < 0)
			DIE("progress");
		if (now_ns() - t0 > LIMIT_NS)
			DIE("%s: no completion", what);
	}
	if (wc->status != UROCE_WC_SUCCESS)
		DIE("%s: %s", what, uroce_wc_status_str(wc->status));
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca = { 0 };
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_mr *mr;
	struct uroce_qp *qp;
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_qp_attr a = { 0 };
	struct info me, peer;
	char spec[64];
	uint8_t *buf;
	bool client;
	enum uroce_mtu mtu;

	int gid_index = argc == 6 ? atoi(argv[5]) : 1;

	if (argc < 5 || argc > 6 || (strcmp(argv[1], "client") && strcmp(argv[1], "server")) ||
	    (gid_index != 1 && gid_index != 2)) {
		fprintf(stderr, "usage: %s client|server IFACE DIR MTU_BYTES [GID_INDEX 1|2]\n", argv[0]);
		return 2;
	}
	client = !strcmp(argv[1], "client");
	switch (atoi(argv[4])) {
	case 1024: mtu = UROCE_MTU_1024; break;
	case 2048: mtu = UROCE_MTU_2048; break;
	case 4096: mtu = UROCE_MTU_4096; break;
	default:
		fprintf(stderr, "MTU_BYTES: accepted 1024, 2048, 4096\n");
		return 2;
	}
	snprintf(spec, sizeof(spec), "afxdp:%s", argv[2]);
	ca.port = spec;
	if (uroce_context_create(&ctx, &ca))
		DIE("context on %s", spec);
	buf = aligned_alloc(4096, BUF);
	if (!buf)
		DIE("memory");
	memset(buf, 0, BUF);
	fill(buf + READ_OFF, BUF - READ_OFF, client ? 1 : 2);
	if (uroce_pd_alloc(ctx, &pd) || uroce_cq_create(ctx, 1024, &cq) ||
	    uroce_mr_reg(pd, buf, BUF, 15, &mr))
		DIE("objects");
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (uroce_qp_create(pd, &ia, &qp))
		DIE("qp");
	me.qpn = uroce_qp_num(qp);
	if (getrandom(&me.psn, sizeof(me.psn), 0) != (ssize_t)sizeof(me.psn))
		DIE("getrandom");
	me.psn &= 0xffffff;
	me.rkey = mr->rkey;
	me.addr = (uint64_t)(uintptr_t)buf;
	if (uroce_query_gid(ctx, 1, gid_index, me.gid))
		DIE("query_gid %d", gid_index);
	put_info(argv[3], argv[1], &me);
	get_info(argv[3], client ? "server" : "client", &peer);

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = 15;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS))
		DIE("INIT");
	if (!client) {
		/* receives before RTR, as ibverbs programs do */
		for (unsigned i = 0; i < NSIZES; i++) {
			struct uroce_sge sg = { (uint64_t)(uintptr_t)(buf + (1u << 20)), 1u << 20, mr->lkey };
			struct uroce_recv_wr rw = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

			if (uroce_post_recv(qp, &rw, NULL))
				DIE("post_recv");
		}
	}
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.dgid, peer.gid, 16);
	a.ah_attr.sgid_index = (uint8_t)gid_index; /* the source of the dgid's family */
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
	                                    UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER))
		DIE("RTR");
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = me.psn;
	a.timeout = 17; /* ~0.5 s: a busy 2-core CI box can stall a process for tens of ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	if (uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                    UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC))
		DIE("RTS");

	/* like a real exchange: the client starts once the server's QP can
	 * take packets (RTR needs the peer's MAC, and IPv6 neighbour discovery
	 * may take longer than the retry budget) */
	put_info(argv[3], client ? "client-ready" : "server-ready", &me);
	if (client) {
		get_info(argv[3], "server-ready", &peer);
		for (unsigned i = 0; i < NSIZES; i++) {
			uint32_t n = sizes[i];
			struct uroce_sge sg = { (uint64_t)(uintptr_t)buf, n, mr->lkey };
			struct uroce_send_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1,
			                            .send_flags = UROCE_SEND_SIGNALED };
			struct uroce_wc wc;

			/* WRITE n bytes into the server's first MiB */
			fill(buf, n, 100 + i);
			wr.opcode = UROCE_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = peer.addr;
			wr.wr.rdma.rkey = peer.rkey;
			if (uroce_post_send(qp, &wr, NULL))
				DIE("post write");
			wait_wc(ctx, cq, &wc, "write");
			/* READ n bytes of the server's pattern */
			memset(buf + (1u << 20), 0, n);
			sg.addr = (uint64_t)(uintptr_t)(buf + (1u << 20));
			wr.opcode = UROCE_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = peer.addr + READ_OFF;
			if (uroce_post_send(qp, &wr, NULL))
				DIE("post read");
			wait_wc(ctx, cq, &wc, "read");
			if (check(buf + (1u << 20), n, 2))
				DIE("read of %u bytes: data differs", n);
			/* SEND n bytes */
			sg.addr = (uint64_t)(uintptr_t)buf;
			fill(buf, n, 200 + i);
			wr.opcode = UROCE_WR_SEND;
			if (uroce_post_send(qp, &wr, NULL))
				DIE("post send");
			wait_wc(ctx, cq, &wc, "send");
			{
				struct uroce_qp_stats qs;

				uroce_qp_stats(qp, &qs);
				printf("client: %u bytes: write, read, send ok (timeouts so far %llu)\n", n,
				       (unsigned long long)qs.timeouts);
			}
		}
		put_info(argv[3], "client-done", &me);
		/* stay a little so that the last ACKs reach the server */
		for (uint64_t t0 = now_ns(); now_ns() - t0 < 200000000ull;)
			uroce_progress(ctx);
	} else {
		for (unsigned i = 0; i < NSIZES; i++) {
			struct uroce_wc wc;

			wait_wc(ctx, cq, &wc, "recv");
			if (wc.wr_id != i || wc.byte_len != sizes[i])
				DIE("recv %u: wr_id %llu len %u", i, (unsigned long long)wc.wr_id, wc.byte_len);
			if (check(buf + (1u << 20), sizes[i], 200 + i))
				DIE("recv of %u bytes: data differs", sizes[i]);
			/* the WRITE before this SEND is complete and in place */
			if (check(buf, sizes[i], 100 + i))
				DIE("write of %u bytes: data differs", sizes[i]);
			printf("server: %u bytes: write and send verified\n", sizes[i]);
		}
		for (uint64_t t0 = now_ns(); !file_exists(argv[3], "client-done.info");) {
			uroce_progress(ctx);
			if (now_ns() - t0 > LIMIT_NS)
				DIE("the client did not finish");
		}
	}
	{
		struct uroce_qp_stats st;

		struct uroce_port_stats ps;

		uroce_qp_stats(qp, &st);
		uroce_port_stats(ctx, 1, &ps);
		printf("%s: tx %llu rx %llu retransmits %llu timeouts %llu seq_naks %llu; port drops:", argv[1],
		       (unsigned long long)st.tx_packets, (unsigned long long)st.rx_packets,
		       (unsigned long long)st.retransmits, (unsigned long long)st.timeouts,
		       (unsigned long long)st.seq_naks_rcvd);
		for (int r = 1; r < UROCE_DROP__COUNT; r++)
			if (ps.drops[r])
				printf(" %s %llu", uroce_drop_reason_name((enum uroce_drop_reason)r),
				       (unsigned long long)ps.drops[r]);
		printf("\n");
	}
	uroce_qp_destroy(qp);
	uroce_mr_dereg(mr);
	uroce_cq_destroy(cq);
	uroce_pd_free(pd);
	if (uroce_context_destroy(ctx))
		DIE("context_destroy");
	free(buf);
	return 0;
}
