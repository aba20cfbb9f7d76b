/* SPDX-License-Identifier: MIT */
/* sr_uc_send: uroce's sr data packets toward a NIC's UC QP. The host end of
 * sr_to_rxe_uc.sh: a uroce RC QP with reliability sr, connected to the UC QP
 * of uc_sink (a vmlab guest's rdma_rxe), sends one RDMA WRITE and one RDMA
 * WRITE with immediate. Every sr data packet is a UC WRITE Only (with
 * Immediate) carrying its own RETH (transport/rel/sr/sr_wire.h), which is what a UC
 * QP places. The guest sends no SACKs (its control QPN is no uroce QP), so
 * the sender retransmits until retry_cnt runs out: the first WR completes
 * with RETRY_EXC_ERR and the second is flushed; that is expected here. What
 * counts is what the guest placed, which uc_sink checks and reports back.
 *
 * Exits 0 when both WRs completed as expected (RETRY_EXC_ERR, WR_FLUSH_ERR)
 * and the exchange with the guest worked; it prints the guest's verdict but
 * does not judge by it (the driver script does).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "transport/rel/sr/sr_wire.h"
#include "sr_uc_common.h"

/* uc_sink decodes the immediate with sr_uc_common.h's copy of the layout. */
_Static_assert(SRW_MSG_BITS == 12 && SRW_KIND_BITS == 3 && SRW_IDX_BITS == 17,
	       "sr_uc_common.h's immediate layout no longer matches transport/rel/sr/sr_wire.h");
_Static_assert((int)SRW_DATA == (int)SRUC_KIND_DATA && (int)SRW_LAST == (int)SRUC_KIND_LAST &&
		       (int)SRW_LAST_DESC == (int)SRUC_KIND_LAST_DESC,
	       "sr_uc_common.h's immediate kinds no longer match transport/rel/sr/sr_wire.h");

#define PROG "sr_uc_send"
#define CONNECT_TIMEOUT_MS 30000
#define MAX_REGION (8u << 20)
#define IMM_DATA 0x53520001u /* the WR's own immediate (it travels in the descriptor, which rxe drops) */

struct opts {
	const char *port_spec;
	const char *server;
	int tcp_port;
	int retry_cnt;
	int gidx;          /* -1: the port's IPv4 GID */
	int timeout_s;
	uint32_t rto_min_us;
};

struct guest {
	uint32_t qpn, psn, rkey, write_len, imm_len, seed, mtu, msg;
	uint64_t write_va, imm_va;
	uint8_t gid[16];
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --port afxdp:IFACE --server IPV4 [options]\n"
		"  Sends an RDMA WRITE and an RDMA WRITE with immediate on a uroce sr QP to\n"
		"  uc_sink's UC QP (run it first, in the guest); sizes, seed and MTU come\n"
		"  from uc_sink.\n"
		"  -P, --port SPEC        uroce port: afxdp:IFACE[:QUEUE] (or any uroce port spec)\n"
		"  -S, --server IPV4      uc_sink's address (the TCP exchange)\n"
		"  -p, --tcp-port N       its TCP port, 1..65535 (default %d)\n"
		"  -r, --retry-cnt N      the QP's retry_cnt, 0..7 (default 1): each packet goes\n"
		"                         out at most N + 1 times, since no SACK ever comes\n"
		"  -R, --rto-min-us N     floor of the sr RTO, 0..1000000 us (default 0: uroce's 200 us)\n"
		"  -g, --gid-index N      source GID index, 0..255 (default: the port's IPv4 GID)\n"
		"  -t, --timeout S        bound of each wait, 1..3600 s (default 60)\n"
		"  -h, --help             this text\n",
		SRUC_TCP_PORT);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'P' },
		{ "server", required_argument, NULL, 'S' },
		{ "tcp-port", required_argument, NULL, 'p' },
		{ "retry-cnt", required_argument, NULL, 'r' },
		{ "rto-min-us", required_argument, NULL, 'R' },
		{ "gid-index", required_argument, NULL, 'g' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct in_addr a;
	int c;

	*o = (struct opts){ .tcp_port = SRUC_TCP_PORT, .retry_cnt = 1, .gidx = -1, .timeout_s = 60 };
	while ((c = getopt_long(argc, argv, "P:S:p:r:R:g:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 'P': o->port_spec = optarg; break;
		case 'S': o->server = optarg; break;
		case 'p': IO_OPT(PROG, "--tcp-port", 1, 65535, o->tcp_port); break;
		case 'r': IO_OPT(PROG, "--retry-cnt", 0, 7, o->retry_cnt); break;
		case 'R': IO_OPT(PROG, "--rto-min-us", 0, 1000000, o->rto_min_us); break;
		case 'g': IO_OPT(PROG, "--gid-index", 0, 255, o->gidx); break;
		case 't': IO_OPT(PROG, "--timeout", 1, 3600, o->timeout_s); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, PROG ": unexpected argument '%s' (options only; try --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->port_spec || !o->server) {
		fprintf(stderr, PROG ": --port and --server are required\n");
		usage(stderr);
		return -EINVAL;
	}
	if (inet_pton(AF_INET, o->server, &a) != 1) {
		fprintf(stderr, PROG ": --server '%s' is not an IPv4 address (dotted quad, e.g. 10.47.0.11)\n",
			o->server);
		return -EINVAL;
	}
	return 0;
}

static void fail_call(const char *what, int err)
{
	const char *detail = uroce_last_error();

	fprintf(stderr, PROG ": %s: %s%s%s\n", what, uroce_strerror(err), detail && *detail ? ": " : "",
		detail ? detail : "");
}

/* ------------------------------------------------------------------ TCP */

static int tcp_connect(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	inet_pton(AF_INET, host, &sa.sin_addr);
	return tcp_connect_retry(&sa, CONNECT_TIMEOUT_MS);
}

static int parse_guest(const char *rec, struct guest *g)
{
	char hex[33];
	unsigned qpn, psn, rkey;

	if (sscanf(rec, "G %x %x %32s %x %" SCNx64 " %" SCNu32 " %" SCNx64 " %" SCNu32 " %" SCNu32 " %" SCNu32
		   " %" SCNu32, &qpn, &psn, hex, &rkey, &g->write_va, &g->write_len, &g->imm_va, &g->imm_len,
		   &g->seed, &g->mtu, &g->msg) != 11 || strlen(hex) != 32) {
		fprintf(stderr, PROG ": the guest's record '%s' is not \"G QPN PSN GID RKEY WVA WLEN IVA ILEN SEED MTU "
			"MSG\"\n", rec);
		return -EINVAL;
	}
	if (io_hex_to_gid(hex, g->gid))
		return -EINVAL;
	g->qpn = qpn;
	g->psn = psn;
	g->rkey = rkey;
	if (qpn > 0xffffff || qpn < 2 || g->write_len < 1 || g->write_len > MAX_REGION || g->imm_len < 1 ||
	    g->imm_len > MAX_REGION ||
	    !io_mtu_ok(g->mtu) || g->msg) {
		fprintf(stderr, PROG ": the guest asks for QPN 0x%x, write %u B, imm %u B, MTU %u, message %u; "
			"accepted QPN 2..0xffffff, lengths 1..%u, MTU 256/512/1024/2048/4096, message 0\n",
			qpn, g->write_len, g->imm_len, g->mtu, g->msg, MAX_REGION);
		return -EINVAL;
	}
	return 0;
}

/* ----------------------------------------------------------------- main */

struct res {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_mr *mr;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	uint8_t *buf;
};

static void release(struct res *r)
{
	if (r->qp)
		uroce_qp_destroy(r->qp);
	if (r->cq)
		uroce_cq_destroy(r->cq);
	if (r->mr)
		uroce_mr_dereg(r->mr);
	if (r->pd)
		uroce_pd_free(r->pd);
	if (r->ctx)
		uroce_context_destroy(r->ctx);
	free(r->buf);
}

static int run(const struct opts *o, struct res *r)
{
	struct uroce_context_attr cattr = { .port = o->port_spec, .mode = UROCE_ENGINE_EMBEDDED, .engine_cpu = -1 };
	struct uroce_qp_init_attr init = {
		.qp_type = UROCE_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.rel = { .reliability = UROCE_REL_SR, .rto_min_us = o->rto_min_us },
	};
	struct uroce_port_attr pa;
	struct uroce_qp_attr attr;
	struct uroce_qp_stats qs;
	struct uroce_port_stats ps;
	struct guest g;
	uint8_t my_gid[16];
	char rec[SRUC_REC_LEN], hex[33];
	uint32_t my_psn, qpn;
	int err, fd = -1, gidx = o->gidx, ncomp = 0, rc = 1;
	enum uroce_wc_status st[2] = { UROCE_WC_SUCCESS, UROCE_WC_SUCCESS };

	err = uroce_context_create(&r->ctx, &cattr);
	if (err) {
		fail_call("cannot open the port", err);
		return 1;
	}
	if ((err = uroce_query_port(r->ctx, 1, &pa))) {
		fail_call("cannot query port 1", err);
		return 1;
	}
	if (gidx < 0) {
		for (int i = 0; i < pa.gid_tbl_len; i++)
			if (!uroce_query_gid(r->ctx, 1, i, my_gid) && !memcmp(my_gid, pa.gid, 16)) {
				gidx = i;
				break;
			}
		if (gidx < 0) {
			fprintf(stderr, PROG ": %s has no IPv4 address: give one to the interface or pick a GID "
				"with --gid-index\n", o->port_spec);
			return 1;
		}
	}
	if ((err = uroce_query_gid(r->ctx, 1, gidx, my_gid))) {
		fail_call("cannot read the source GID", err);
		return 1;
	}
	if ((err = uroce_pd_alloc(r->ctx, &r->pd)) || (err = uroce_cq_create(r->ctx, 8, &r->cq))) {
		fail_call("cannot allocate a PD or CQ", err);
		return 1;
	}
	init.send_cq = r->cq;
	init.recv_cq = r->cq;
	if ((err = uroce_qp_create(r->pd, &init, &r->qp))) {
		fail_call("cannot create the sr QP", err);
		return 1;
	}
	qpn = uroce_qp_num(r->qp);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = UROCE_QPS_INIT;
	attr.port_num = 1;
	if ((err = uroce_qp_modify(r->qp, &attr, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
					       UROCE_QP_ACCESS_FLAGS))) {
		fail_call("cannot move the QP to INIT", err);
		return 1;
	}
	srand48((long)io_now_ms() ^ getpid());
	my_psn = (uint32_t)lrand48() & 0xffffff;

	/* The exchange: our address first, uc_sink answers from RTR. */
	fd = tcp_connect(o->server, o->tcp_port);
	if (fd < 0) {
		fprintf(stderr, PROG ": cannot connect to uc_sink at %s:%d: %s\n", o->server, o->tcp_port,
			strerror(-fd));
		return 1;
	}
	io_gid_to_hex(my_gid, hex);
	if (sruc_write_rec(fd, "H %06x %06x %s", qpn, my_psn, hex) || (err = sruc_read_rec(fd, rec, o->timeout_s * 1000))) {
		fprintf(stderr, PROG ": exchange with uc_sink failed: %s\n", strerror(err ? -err : EIO));
		goto out;
	}
	if (parse_guest(rec, &g))
		goto out;
	printf(PROG ": sr QP 0x%06x (control 0x%06x), PSN 0x%06x -> UC QP 0x%06x, rkey 0x%08x, MTU %u\n", qpn,
	       (qpn + 1) & 0xffffff, my_psn, g.qpn, g.rkey, g.mtu);

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = UROCE_QPS_RTR;
	attr.path_mtu = (enum uroce_mtu)io_mtu_code(g.mtu);
	attr.dest_qp_num = g.qpn;
	attr.dest_token = 0; /* rxe's UC QP: no token, and it sends no control */
	attr.rq_psn = g.psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	memcpy(attr.ah_attr.dgid, g.gid, 16);
	attr.ah_attr.sgid_index = (uint8_t)gidx;
	attr.ah_attr.port_num = 1;
	if ((err = uroce_qp_modify(r->qp, &attr, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
					       UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC |
					       UROCE_QP_MIN_RNR_TIMER | UROCE_QP_DEST_TOKEN))) {
		fail_call("cannot move the QP to RTR", err);
		goto out;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = UROCE_QPS_RTS;
	attr.sq_psn = my_psn;
	attr.timeout = 14;
	attr.retry_cnt = (uint8_t)o->retry_cnt;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	if ((err = uroce_qp_modify(r->qp, &attr, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT |
					       UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC))) {
		fail_call("cannot move the QP to RTS", err);
		goto out;
	}

	/* Both messages' bytes, as uc_sink expects them. */
	size_t len = (size_t)g.write_len + g.imm_len;
	r->buf = malloc(len);
	if (!r->buf) {
		fprintf(stderr, PROG ": cannot allocate %zu bytes\n", len);
		goto out;
	}
	for (uint32_t i = 0; i < g.write_len; i++)
		r->buf[i] = sruc_byte(g.seed, SRUC_REGION_WRITE, i);
	for (uint32_t i = 0; i < g.imm_len; i++)
		r->buf[g.write_len + i] = sruc_byte(g.seed, SRUC_REGION_IMM, i);
	if ((err = uroce_mr_reg(r->pd, r->buf, len, UROCE_ACCESS_LOCAL_WRITE, &r->mr))) {
		fail_call("cannot register the source buffer", err);
		goto out;
	}
	struct uroce_sge sge[2] = {
		{ .addr = (uintptr_t)r->buf, .length = g.write_len, .lkey = r->mr->lkey },
		{ .addr = (uintptr_t)(r->buf + g.write_len), .length = g.imm_len, .lkey = r->mr->lkey },
	};
	struct uroce_send_wr wr[2] = {
		{ .wr_id = 1, .sg_list = &sge[0], .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE,
		  .send_flags = UROCE_SEND_SIGNALED, .wr.rdma = { .remote_addr = g.write_va, .rkey = g.rkey } },
		{ .wr_id = 2, .sg_list = &sge[1], .num_sge = 1, .opcode = UROCE_WR_RDMA_WRITE_WITH_IMM,
		  .send_flags = UROCE_SEND_SIGNALED, .imm_data = htonl(IMM_DATA),
		  .wr.rdma = { .remote_addr = g.imm_va, .rkey = g.rkey } },
	}, *badwr;
	wr[0].next = &wr[1];
	if ((err = uroce_post_send(r->qp, &wr[0], &badwr))) {
		fail_call("uroce_post_send", err);
		goto out;
	}
	printf(PROG ": posted RDMA_WRITE %u B to 0x%" PRIx64 " and RDMA_WRITE_WITH_IMM %u B to 0x%" PRIx64
	       ", retry_cnt %d\n", g.write_len, g.write_va, g.imm_len, g.imm_va, o->retry_cnt);

	uint64_t t0 = io_now_ms(), deadline = t0 + (uint64_t)o->timeout_s * 1000u;
	while (ncomp < 2) {
		struct uroce_wc wc[2];
		int n;

		if ((err = uroce_progress(r->ctx)) < 0) {
			fail_call("uroce_progress", err);
			goto out;
		}
		n = uroce_poll_cq(r->cq, 2, wc);
		if (n < 0) {
			fail_call("uroce_poll_cq", n);
			goto out;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id != 1 && wc[i].wr_id != 2) {
				fprintf(stderr, PROG ": a completion for wr_id %" PRIu64 ", which was never posted\n",
					wc[i].wr_id);
				goto out;
			}
			st[wc[i].wr_id - 1] = wc[i].status;
			printf(PROG ": %s completed after %" PRIu64 " ms: %s\n",
			       wc[i].wr_id == 1 ? "RDMA_WRITE" : "RDMA_WRITE_WITH_IMM", io_now_ms() - t0,
			       uroce_wc_status_str(wc[i].status));
			ncomp++;
		}
		if (ncomp < 2 && io_now_ms() > deadline) {
			fprintf(stderr, PROG ": only %d of 2 WRs completed in %d s\n", ncomp, o->timeout_s);
			goto out;
		}
	}
	if ((err = uroce_qp_stats(r->qp, &qs)) || (err = uroce_port_stats(r->ctx, 1, &ps))) {
		fail_call("cannot read the counters", err);
		goto out;
	}
	printf(PROG ": qp: tx_packets=%" PRIu64 " retransmits=%" PRIu64 " rto_losses=%" PRIu64 " timeouts=%" PRIu64
	       " tlp_probes=%" PRIu64 " sacks_rcvd=%" PRIu64 " rx_packets=%" PRIu64 "\n", qs.tx_packets,
	       qs.retransmits, qs.rto_losses, qs.timeouts, qs.tlp_probes, qs.sacks_rcvd, qs.rx_packets);
	printf(PROG ": port: tx_packets=%" PRIu64 " rx_packets=%" PRIu64, ps.tx_packets, ps.rx_packets);
	for (int i = 1; i < UROCE_DROP__COUNT; i++)
		if (ps.drops[i])
			printf(" %s=%" PRIu64, uroce_drop_reason_name((enum uroce_drop_reason)i), ps.drops[i]);
	printf("\n");
	fflush(stdout);

	if (sruc_write_rec(fd, "D %" PRIu64 " %" PRIu64 " %s %s", qs.tx_packets, qs.retransmits,
		      uroce_wc_status_str(st[0]), uroce_wc_status_str(st[1]))) {
		fprintf(stderr, PROG ": cannot tell uc_sink we are done\n");
		goto out;
	}
	if ((err = sruc_read_rec(fd, rec, o->timeout_s * 1000)) || strncmp(rec, "V ", 2)) {
		fprintf(stderr, PROG ": no verdict from uc_sink (%s)\n", err ? strerror(-err) : rec);
		goto out;
	}
	printf(PROG ": uc_sink says: %s\n", rec + 2);

	/* No SACK ever comes from a UC QP: the oldest WR runs out of retries,
	 * the QP goes to ERR and flushes the other. */
	if (st[0] != UROCE_WC_RETRY_EXC_ERR || st[1] != UROCE_WC_WR_FLUSH_ERR) {
		fprintf(stderr, PROG ": the WRs completed %s / %s; expected %s / %s (nothing acknowledges sr "
			"packets here)\n", uroce_wc_status_str(st[0]), uroce_wc_status_str(st[1]),
			uroce_wc_status_str(UROCE_WC_RETRY_EXC_ERR), uroce_wc_status_str(UROCE_WC_WR_FLUSH_ERR));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct res r = { 0 };
	int rc;

	if (parse_opts(argc, argv, &o))
		return 2;
	rc = run(&o, &r);
	release(&r);
	return rc;
}
