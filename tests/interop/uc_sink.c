/* SPDX-License-Identifier: MIT */
/* uc_sink: a UC QP on a verbs device (the kernel's rdma_rxe in a vmlab
 * guest) as the receiver of uroce's sr data packets, to show that a NIC's
 * UC QP places them. Built on the host against libibverbs and copied into
 * the guest (sr_to_rxe_uc.sh), as make-captures.sh does with rxe_imm.
 *
 *   uc_sink [-d DEV] [-g GIDX] [-p TCP_PORT] [-w WRITE_LEN] [-i IMM_LEN]
 *           [-S SEED] [-m MTU] [-r RECV_WRS] [-q] [-t TIMEOUT_S]
 *
 * It registers one buffer with REMOTE_WRITE: a guard, the region of the
 * plain RDMA WRITE, a guard, the region of the RDMA WRITE with immediate,
 * a guard, all filled with SRUC_FILL. It posts RECV_WRS receives (one is
 * used by every WRITE Only with Immediate that rxe places), waits for
 * sr_uc_send on TCP, moves the UC QP to RTR with the host's QPN, GID and
 * PSN, and answers with its own QPN, GID, rkey, the regions and the seed
 * (sr_uc_common.h). When the host says it is done (or the wait runs out) it
 * drains the CQ until it stays quiet and checks:
 *   write: the region holds sruc_byte(seed, 1, off) at every offset;
 *   imm:   the region holds sruc_byte(seed, 2, off); every completion is a
 *          successful RECV_RDMA_WITH_IMM whose immediate decodes to message
 *          MSG, index < n, kind 0 (1 or 2 on index n-1) and whose byte_len
 *          is that packet's length; every index 0..n-1 came at least once
 *          (more than once only as the sender's retransmissions);
 *   guards: untouched.
 * With -q the receives go to an SRQ. rxe then completes each copy of the
 * WRITE_WITH_IMM's descriptor (a WRITE Only with Immediate to rkey 0, which
 * a UC QP with its own receive queue drops silently) with
 * IBV_WC_REM_ACCESS_ERR, taking a receive (IBTA's UC "class D" for an R_Key
 * violation with an SRQ): those are counted and printed, not failures.
 * Prints one line "uc_sink: PASS ..." or "uc_sink: FAIL: ..." (and the
 * details before it), sends the same line to the host, exits 0 on PASS.
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

#include <infiniband/verbs.h>

#include "verbs_io.h"

#include "sr_uc_common.h"

#define GUARD 4096u            /* bytes before, between and after the regions */
#define SRUC_FILL 0xa5u        /* what the buffer holds before anything is placed */
#define MAX_REGION (8u << 20)  /* bytes a region may take */
#define MAX_IMM_PKTS 1024u     /* packets of the WRITE_WITH_IMM we keep counts for */
#define MAX_RECV_WRS 4096
#define QUIET_MS 500           /* the CQ must stay empty this long before the check */
#define DRAIN_MAX_MS 10000     /* and the drain ends after this long in any case */
#define MAX_REPORT 8           /* bad packets listed per region */
#define MAX_ORDER 64           /* completions whose index is printed in order */

struct opts {
	const char *dev;
	int gidx;
	int tcp_port;
	uint32_t write_len, imm_len, seed, mtu;
	int recv_wrs;
	bool srq;
	int timeout_s;
};

struct remote {
	uint32_t qpn, psn;
	union ibv_gid gid;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uc_sink [-d DEV] [-g GIDX] [-p TCP_PORT] [-w WRITE_LEN] [-i IMM_LEN] [-S SEED]\n"
		"               [-m MTU] [-r RECV_WRS] [-t TIMEOUT_S]\n"
		"  A UC QP that receives sr_uc_send's RDMA WRITE and RDMA WRITE with immediate\n"
		"  (uroce's sr data packets) and checks what the device placed.\n"
		"  -d DEV        verbs device (default: the first)\n"
		"  -g GIDX       GID index to use, 0..255 (default 1: rxe's IPv4-mapped GID)\n"
		"  -p TCP_PORT   port the host connects to, 1..65535 (default %d)\n"
		"  -w WRITE_LEN  bytes of the plain RDMA WRITE, 1..%u (default 65636)\n"
		"  -i IMM_LEN    bytes of the RDMA WRITE with immediate, 1..%u (default 3109)\n"
		"  -S SEED       data pattern seed, 0..4294967295 (default 1)\n"
		"  -m MTU        path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)\n"
		"  -r RECV_WRS   receives posted, 1..%d (default 64)\n"
		"  -q            post them to a shared receive queue (SRQ) instead of the QP's own\n"
		"  -t TIMEOUT_S  bound of each wait, 1..3600 s (default 60)\n",
		SRUC_TCP_PORT, MAX_REGION, MAX_REGION, MAX_RECV_WRS);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){ .gidx = 1, .tcp_port = SRUC_TCP_PORT, .write_len = 65536 + 100,
			    .imm_len = 3 * 1024 + 37, .seed = 1, .mtu = 1024, .recv_wrs = 64, .timeout_s = 60 };
	while ((c = getopt(argc, argv, "d:g:p:w:i:S:m:r:t:qh")) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; break;
		case 'g': IO_OPT("uc_sink", "-g", 0, 255, o->gidx); break;
		case 'p': IO_OPT("uc_sink", "-p", 1, 65535, o->tcp_port); break;
		case 'w': IO_OPT("uc_sink", "-w", 1, MAX_REGION, o->write_len); break;
		case 'i': IO_OPT("uc_sink", "-i", 1, MAX_REGION, o->imm_len); break;
		case 'S': IO_OPT("uc_sink", "-S", 0, UINT32_MAX, o->seed); break;
		case 'm':
			if (io_parse_mtu("uc_sink", "-m", optarg, &o->mtu))
				return -EINVAL;
			break;
		case 'r': IO_OPT("uc_sink", "-r", 1, MAX_RECV_WRS, o->recv_wrs); break;
		case 't': IO_OPT("uc_sink", "-t", 1, 3600, o->timeout_s); break;
		case 'q': o->srq = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "uc_sink: unexpected argument '%s' (options only; try -h)\n", argv[optind]);
		return -EINVAL;
	}
	if ((o->imm_len + o->mtu - 1) / o->mtu > MAX_IMM_PKTS) {
		fprintf(stderr, "uc_sink: -i %u is %u packets at MTU %u; at most %u\n", o->imm_len,
			(o->imm_len + o->mtu - 1) / o->mtu, o->mtu, MAX_IMM_PKTS);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ TCP */

static int parse_gid(const char *s, union ibv_gid *g)
{
	return strlen(s) != 32 ? -EINVAL : io_hex_to_gid(s, g->raw);
}

/* --------------------------------------------------------------- checks */

struct verdict {
	bool fail;
	char first[256]; /* the first thing that differed, for the summary line */
};

static void bad(struct verdict *v, const char *fmt, ...)
{
	va_list ap;
	char line[256];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("uc_sink:   %s\n", line);
	if (!v->fail)
		snprintf(v->first, sizeof(v->first), "%s", line);
	v->fail = true;
}

/* Compare a region with the pattern, packet by packet (a packet is one MTU
 * of the message, the last one shorter). */
static void check_region(struct verdict *v, const char *name, const uint8_t *p, uint32_t len, uint32_t seed,
			 unsigned region, uint32_t mtu)
{
	uint32_t npk = (len + mtu - 1) / mtu, badpk = 0, untouched = 0;

	for (uint32_t k = 0; k < npk; k++) {
		uint32_t off = k * mtu, plen = len - off < mtu ? len - off : mtu, diff = 0, first = 0, fill = 0;

		for (uint32_t i = 0; i < plen; i++) {
			if (p[off + i] != sruc_byte(seed, region, off + i)) {
				if (!diff++)
					first = i;
			}
			fill += p[off + i] == SRUC_FILL;
		}
		if (!diff)
			continue;
		badpk++;
		untouched += fill == plen;
		if (badpk <= MAX_REPORT)
			bad(v, "%s packet %u (offset %u, %u bytes): %u bytes differ, first at +%u: 0x%02x, expected 0x%02x%s",
			    name, k, off, plen, diff, first, p[off + first], sruc_byte(seed, region, off + first),
			    fill == plen ? " (never written)" : "");
	}
	if (badpk)
		bad(v, "%s: %u of %u packets wrong (%u never written)", name, badpk, npk, untouched);
	else
		printf("uc_sink:   %s: all %u bytes (%u packets) as expected\n", name, len, npk);
}

static void check_guard(struct verdict *v, const char *name, const uint8_t *p, uint32_t len)
{
	uint32_t diff = 0, first = 0;

	for (uint32_t i = 0; i < len; i++)
		if (p[i] != SRUC_FILL && !diff++)
			first = i;
	if (diff)
		bad(v, "%s: %u of %u bytes written, first at +%u (0x%02x)", name, diff, len, first, p[first]);
}

/* ----------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	struct opts o;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_srq *srq = NULL;
	struct remote rem;
	union ibv_gid my_gid;
	uint8_t *buf = NULL;
	uint32_t wva_off, iva_off, buf_len, my_psn, npk, seen[MAX_IMM_PKTS] = { 0 };
	char rec[SRUC_REC_LEN], g[33], summary[320];
	struct verdict v = { 0 };
	unsigned long ncomp = 0, nbadcomp = 0, nrej = 0;
	uint32_t order[MAX_ORDER], norder = 0, first_high = 0, ooo_idx = 0, ooo_after = 0;
	bool any_first = false, ooo = false;
	uint64_t done_tx = 0, done_retx = 0;
	bool got_done = false;
	int fd = -1, rc = 1, err;

	if (parse_opts(argc, argv, &o))
		return 2;
	npk = (o.imm_len + o.mtu - 1) / o.mtu;

	ctx = vio_open_device(o.dev);
	if (!ctx) {
		fprintf(stderr, "uc_sink: FAIL: no verbs device %s\n", o.dev ? o.dev : "(none at all)");
		return 1;
	}

	/* guard | write region | guard | imm region | guard */
	wva_off = GUARD;
	iva_off = GUARD + ((o.write_len + 63) & ~63u) + GUARD;
	buf_len = iva_off + ((o.imm_len + 63) & ~63u) + GUARD;
	buf = aligned_alloc(4096, (buf_len + 4095) & ~4095u);
	if (!buf) {
		fprintf(stderr, "uc_sink: FAIL: cannot allocate %u bytes\n", buf_len);
		goto out;
	}
	memset(buf, SRUC_FILL, buf_len);
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, buf_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	cq = ibv_create_cq(ctx, o.recv_wrs + 1, NULL, NULL, 0);
	if (!mr || !cq) {
		fprintf(stderr, "uc_sink: FAIL: cannot register %u bytes or create a CQ of %d: %s\n", buf_len,
			o.recv_wrs + 1, strerror(errno));
		goto out;
	}
	if (o.srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = (uint32_t)o.recv_wrs, .max_sge = 1 } };

		srq = ibv_create_srq(pd, &sa);
		if (!srq) {
			fprintf(stderr, "uc_sink: FAIL: cannot create an SRQ of %d: %s\n", o.recv_wrs, strerror(errno));
			goto out;
		}
	}
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = 1, .max_recv_wr = srq ? 0 : (uint32_t)o.recv_wrs, .max_send_sge = 1,
			 .max_recv_sge = srq ? 0 : 1 },
	};
	qp = ibv_create_qp(pd, &qa);
	struct ibv_qp_attr ia = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	if (!qp || ibv_modify_qp(qp, &ia, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		fprintf(stderr, "uc_sink: FAIL: cannot create the UC QP or move it to INIT: %s\n", strerror(errno));
		goto out;
	}
	if (ibv_query_gid(ctx, 1, o.gidx, &my_gid)) {
		fprintf(stderr, "uc_sink: FAIL: cannot read GID %d of port 1\n", o.gidx);
		goto out;
	}
	/* Receives first: a WRITE with immediate needs one to be placed. They
	 * have no buffer (the data goes where the RETH says). */
	for (int i = 0; i < o.recv_wrs; i++) {
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = NULL, .num_sge = 0 }, *badwr;

		if (srq ? ibv_post_srq_recv(srq, &wr, &badwr) : ibv_post_recv(qp, &wr, &badwr)) {
			fprintf(stderr, "uc_sink: FAIL: ibv_post_recv %d of %d: %s\n", i, o.recv_wrs, strerror(errno));
			goto out;
		}
	}
	srand48((long)io_now_ms() ^ getpid());
	my_psn = (uint32_t)lrand48() & 0xffffff;

	printf("uc_sink: UC QP 0x%06x on %s, waiting for the host on TCP %d (write %u B, imm %u B = %u packets, "
	       "MTU %u, seed %u)\n", qp->qp_num, ibv_get_device_name(ctx->device), o.tcp_port, o.write_len, o.imm_len,
	       npk, o.mtu, o.seed);
	fflush(stdout);
	fd = tcp_accept_one(o.tcp_port, o.timeout_s * 1000);
	if (fd < 0) {
		fprintf(stderr, "uc_sink: FAIL: no connection on TCP %d: %s\n", o.tcp_port, strerror(-fd));
		goto out;
	}
	if ((err = sruc_read_rec(fd, rec, o.timeout_s * 1000))) {
		fprintf(stderr, "uc_sink: FAIL: no address from the host: %s\n", strerror(-err));
		goto out;
	}
	{
		unsigned qpn, psn;

		if (sscanf(rec, "H %x %x %32s", &qpn, &psn, g) != 3 || parse_gid(g, &rem.gid) || qpn > 0xffffff ||
		    psn > 0xffffff) {
			fprintf(stderr, "uc_sink: FAIL: the host's record '%s' is not \"H QPN PSN GID\"\n", rec);
			goto out;
		}
		rem.qpn = qpn;
		rem.psn = psn;
	}
	struct ibv_qp_attr ra = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)io_mtu_code(o.mtu),
		.dest_qp_num = rem.qpn,
		.rq_psn = rem.psn,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = rem.gid, .sgid_index = (uint8_t)o.gidx, .hop_limit = 64 },
			.port_num = 1,
		},
	};
	if (ibv_modify_qp(qp, &ra, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)) {
		fprintf(stderr, "uc_sink: FAIL: cannot move the UC QP to RTR: %s\n", strerror(errno));
		goto out;
	}
	io_gid_to_hex(my_gid.raw, g);
	if (sruc_write_rec(fd, "G %06x %06x %s %08x %016" PRIx64 " %u %016" PRIx64 " %u %u %u %u", qp->qp_num, my_psn, g,
		      mr->rkey, (uint64_t)(uintptr_t)(buf + wva_off), o.write_len,
		      (uint64_t)(uintptr_t)(buf + iva_off), o.imm_len, o.seed, o.mtu, 0u)) {
		fprintf(stderr, "uc_sink: FAIL: cannot send our address to the host\n");
		goto out;
	}
	printf("uc_sink: RTR toward host QP 0x%06x (PSN 0x%06x); sent rkey 0x%08x, write at +%u, imm at +%u\n",
	       rem.qpn, rem.psn, mr->rkey, wva_off, iva_off);
	fflush(stdout);

	/* Until the host is done: collect completions as they come. */
	uint64_t deadline = io_now_ms() + (uint64_t)o.timeout_s * 1000u, last_comp = io_now_ms();
	for (;;) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(cq, 16, wc);

		if (n < 0) {
			bad(&v, "ibv_poll_cq failed (%d)", n);
			break;
		}
		for (int i = 0; i < n; i++) {
			uint32_t imm = ntohl(wc[i].imm_data), idx = SRUC_IMM_IDX(imm), kind = SRUC_IMM_KIND(imm);
			uint32_t msg = SRUC_IMM_MSG(imm), want_len;
			bool last = idx + 1 == npk;

			last_comp = io_now_ms();
			if (o.srq && wc[i].status == IBV_WC_REM_ACCESS_ERR) {
				nrej++; /* the descriptor, rkey 0 (see the top) */
				continue;
			}
			ncomp++;
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
			    !(wc[i].wc_flags & IBV_WC_WITH_IMM)) {
				nbadcomp++;
				bad(&v, "completion %lu: status %s, opcode %d, flags 0x%x (expected a successful "
				    "RECV_RDMA_WITH_IMM with an immediate)", ncomp, ibv_wc_status_str(wc[i].status),
				    (int)wc[i].opcode, (unsigned)wc[i].wc_flags);
				continue;
			}
			want_len = idx < npk ? (last ? o.imm_len - idx * o.mtu : o.mtu) : 0;
			if (msg != 0 || idx >= npk || (last ? kind != SRUC_KIND_LAST && kind != SRUC_KIND_LAST_DESC
							   : kind != SRUC_KIND_DATA) ||
			    wc[i].byte_len != want_len) {
				nbadcomp++;
				bad(&v, "completion %lu: immediate 0x%08x = message %u kind %u index %u, byte_len %u; "
				    "expected message 0, index 0..%u, kind 0 (1 or 2 on index %u), byte_len %u",
				    ncomp, imm, msg, kind, idx, wc[i].byte_len, npk - 1, npk - 1, want_len);
				continue;
			}
			/* arrival order: a packet whose first copy completes
			 * after a higher index's was placed out of order */
			if (!seen[idx]) {
				if (any_first && idx < first_high && !ooo) {
					ooo = true;
					ooo_idx = idx;
					ooo_after = first_high;
				}
				if (!any_first || idx > first_high)
					first_high = idx;
				any_first = true;
			}
			if (norder < MAX_ORDER)
				order[norder++] = idx;
			seen[idx]++;
		}
		if (n)
			continue;
		if (!got_done) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 1) == 1) {
				if ((err = sruc_read_rec(fd, rec, 5000)) ||
				    sscanf(rec, "D %" SCNu64 " %" SCNu64, &done_tx, &done_retx) != 2) {
					bad(&v, "the host's done record is missing or malformed (%s)",
					    err ? strerror(-err) : rec);
					break;
				}
				printf("uc_sink: host done: %s\n", rec + 2);
				got_done = true;
				deadline = io_now_ms() + DRAIN_MAX_MS;
				last_comp = io_now_ms();
			} else if (io_now_ms() > deadline) {
				bad(&v, "the host did not say it was done within %d s", o.timeout_s);
				break;
			}
			continue;
		}
		/* done: drain until quiet (rxe may still be placing what the
		 * host sent last) */
		if (io_now_ms() - last_comp >= QUIET_MS || io_now_ms() > deadline)
			break;
		usleep(1000);
	}

	/* The checks. */
	printf("uc_sink: checking\n");
	check_region(&v, "write", buf + wva_off, o.write_len, o.seed, SRUC_REGION_WRITE, o.mtu);
	check_region(&v, "imm", buf + iva_off, o.imm_len, o.seed, SRUC_REGION_IMM, o.mtu);
	check_guard(&v, "guard before write", buf, wva_off);
	check_guard(&v, "guard after write", buf + wva_off + o.write_len, iva_off - wva_off - o.write_len);
	check_guard(&v, "guard after imm", buf + iva_off + o.imm_len, buf_len - iva_off - o.imm_len);
	{
		uint32_t missing = 0, dups = 0;
		char idxs[160] = "";
		size_t used = 0;

		for (uint32_t k = 0; k < npk; k++) {
			if (!seen[k]) {
				if (used < sizeof(idxs) - 12)
					used += (size_t)snprintf(idxs + used, sizeof(idxs) - used, " %u", k);
				missing++;
			}
			if (seen[k] > 1)
				dups += seen[k] - 1;
		}
		printf("uc_sink:   imm: completion order (packet index):");
		for (uint32_t k = 0; k < norder; k++)
			printf(" %u", order[k]);
		printf("%s\n", ncomp - nbadcomp > norder ? " ..." : "");
		if (ooo)
			printf("uc_sink:   imm: out of order: index %u first completed after index %u\n", ooo_idx, ooo_after);
		else
			printf("uc_sink:   imm: in order: every index first completed after the lower ones\n");
		if (missing)
			bad(&v, "imm: no completion for %u of %u packet indices:%s", missing, npk, idxs);
		else
			printf("uc_sink:   imm: %lu RECV_RDMA_WITH_IMM completions, every index 0..%u at least once "
			       "(%u more copies: the sender's retransmissions)\n", ncomp - nbadcomp, npk - 1, dups);
	}
	if (o.srq)
		printf("uc_sink:   srq: %lu REM_ACCESS_ERR completions (the descriptor's copies: rkey 0)\n", nrej);
	if (!v.fail) {
		snprintf(summary, sizeof(summary), "PASS: rxe placed the %u-byte RDMA WRITE and the %u-byte WRITE "
			 "with immediate (%u packets, %lu completions) exactly", o.write_len, o.imm_len, npk, ncomp);
		rc = 0;
	} else {
		snprintf(summary, sizeof(summary), "FAIL: %s", v.first);
	}
	printf("uc_sink: %s\n", summary);
	fflush(stdout);
	sruc_write_rec(fd, "V %.180s", summary);
out:
	if (fd >= 0)
		close(fd);
	vio_release(ctx, pd, mr, cq, srq, qp, buf);
	return rc;
}
