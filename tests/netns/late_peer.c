/* SPDX-License-Identifier: MIT */
/* Late duplicates against reused buffers (tests/netns/late_dup.sh): the
 * client sends N messages over one QP of the chosen reliability (rc, sr,
 * ec, be), SENDs and WRITEs with immediate in turn, one at a time; the
 * server gives message i the receive i over slot i of its region (the
 * WRITE with immediate writes the same slot), checks each message when it
 * completes and at once overwrites the slot with a pattern of its own (the
 * application reusing the buffer). Copies of the client's packets that a
 * router sends again long after (tens to hundreds of milliseconds) must
 * change none of it: once the run's late copies have all arrived (the
 * script creates --settled FILE), the server checks every byte of the
 * region and prints its drop counters by reason.
 *
 *   late_peer --role server --port afxdp:IF --rel MODE -n N --settled FILE [options]
 *   late_peer --role client --port afxdp:IF --rel MODE -n N --server-ip A.B.C.D [options]
 *
 * The server's last line:
 *   late_peer: server MODE: N messages, P partial, C bytes changed; late copies: L (after the last message: A);
 *   drops: reason=count ...
 * Exit 0 when every message arrived whole and in order with the right
 * bytes and no byte of a reused slot changed; 1 otherwise; 2 for a usage
 * error. Every wait is bounded (--timeout-s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "../lib/peer.h"

#define SLOT 8192u
#define MAX_MSGS 4096u
#define REUSED 0xc3u
#define BE_TIMEOUT_US 10000000u /* be deadlines: 10 s, far beyond a run's gaps */
#define SR_RTO_MIN_US 20000u
#define QP_TIMEOUT 14u          /* rc: local ACK timeout 4.096 us << 14 = 67 ms */

struct opts {
	bool server;
	const char *port;
	const char *settled;
	enum uroce_reliability rel;
	uint32_t server_ip_be;
	uint16_t tcp_port;
	uint32_t nmsg;
	uint32_t pace_us;
	unsigned timeout_s;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* message i: its length, opcode and bytes */
static uint32_t msg_len(uint32_t i)
{
	return 1000u + (i * 997u) % 7000u;
}

static bool msg_is_write(uint32_t i)
{
	return i % 2u == 1u;
}

static uint8_t msg_byte(uint32_t i, uint32_t off)
{
	return (uint8_t)(i * 131u + off * 7u + (off >> 8) + 0x11u);
}

/* ---- the QP ------------------------------------------------------------ */
static struct uroce_qp *qp_new(struct uroce_pd *pd, struct uroce_cq *scq, struct uroce_cq *rcq,
                               enum uroce_reliability rel, uint32_t nwr)
{
	struct uroce_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = UROCE_QPT_RC;
	ia.rel.reliability = rel;
	if (rel == UROCE_REL_SR || rel == UROCE_REL_EC)
		ia.rel.rto_min_us = SR_RTO_MIN_US;
	if (rel == UROCE_REL_EC) {
		ia.rel.ec_code = UROCE_EC_RS;
		ia.rel.ec_k = 4;
		ia.rel.ec_m = 2;
	}
	if (rel == UROCE_REL_BE)
		ia.rel.timeout_us = BE_TIMEOUT_US;
	return peer_qp_create(pd, &ia, scq, rcq, nwr, "create the QP");
}

static void qp_init(struct uroce_qp *qp)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	peer_check(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS),
	      "QP to INIT");
}

/* INIT -> RTR -> RTS */
static void qp_connect(struct uroce_qp *qp, uint8_t sgid, uint32_t peer_ip_be, uint32_t peer_qpn, uint32_t rq_psn,
                       uint32_t sq_psn, uint32_t peer_token)
{
	struct uroce_qp_attr a;
	int mask = peer_rtr_attr(&a, peer_ip_be, sgid, peer_qpn, peer_token, rq_psn);

	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	peer_check(uroce_qp_modify(qp, &a, mask | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER), "QP to RTR");
	mask = peer_rc_rts_attr(&a, sq_psn, QP_TIMEOUT, 1);
	peer_check(uroce_qp_modify(qp, &a, mask), "QP to RTS");
}

struct end {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *scq, *rcq;
	struct uroce_qp *qp;
	struct uroce_mr *mr;
	uint8_t *buf;
	uint8_t sgid;
};

static void end_open(struct end *e, const struct opts *o)
{
	struct uroce_context_attr ca;
	size_t size = (size_t)o->nmsg * SLOT;

	memset(e, 0, sizeof(*e));
	memset(&ca, 0, sizeof(ca));
	ca.port = o->port;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	peer_check(uroce_context_create(&e->ctx, &ca), o->port);
	e->sgid = peer_sgid_v4(e->ctx, 1);
	peer_check(uroce_pd_alloc(e->ctx, &e->pd), "allocate a PD");
	peer_check(uroce_cq_create(e->ctx, (int)o->nmsg + 16, &e->scq), "create a CQ");
	peer_check(uroce_cq_create(e->ctx, (int)o->nmsg + 16, &e->rcq), "create a CQ");
	e->buf = aligned_alloc(4096, size);
	if (!e->buf)
		peer_die("out of memory");
	peer_check(uroce_mr_reg(e->pd, e->buf, size, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &e->mr),
	      "register the region");
	e->qp = qp_new(e->pd, e->scq, e->rcq, o->rel, o->nmsg + 16);
}

static void end_close(struct end *e)
{
	uroce_qp_destroy(e->qp);
	uroce_mr_dereg(e->mr);
	uroce_cq_destroy(e->rcq);
	uroce_cq_destroy(e->scq);
	uroce_pd_free(e->pd);
	uroce_context_destroy(e->ctx);
	free(e->buf);
}

static void print_drops(const char *who, struct uroce_context *ctx)
{
	struct uroce_port_stats ps;
	bool any = false;

	peer_check(uroce_port_stats(ctx, 1, &ps), "port statistics");
	printf("late_peer: %s drops:", who);
	for (int r = 1; r < UROCE_DROP__COUNT; r++) {
		if (!ps.drops[r])
			continue;
		printf(" %s=%" PRIu64, uroce_drop_reason_name((enum uroce_drop_reason)r), ps.drops[r]);
		any = true;
	}
	printf("%s\n", any ? "" : " none");
}

/* the drops a late copy of the mode's packets is counted as: rc and sr/ec
 * by PSN (duplicate) or, sr/ec, by message (stale_msg); be by message
 * (late; its duplicates are mostly the last packet's copy it sends itself) */
static uint64_t late_copies(enum uroce_reliability rel, const struct uroce_port_stats *ps)
{
	if (rel == UROCE_REL_BE)
		return ps->drops[UROCE_DROP_LATE];
	return ps->drops[UROCE_DROP_DUPLICATE] + ps->drops[UROCE_DROP_STALE_MSG] + ps->drops[UROCE_DROP_LATE];
}

/* ====================================================================== */

static int run_server(const struct opts *o)
{
	struct end e;
	struct peer_info mine, theirs;
	struct uroce_port_stats ps;
	struct uroce_qp_stats qs;
	uint32_t peer_ip_be, done = 0, partial = 0, bad = 0;
	uint64_t changed = 0, deadline, late_at_end, first_changed = UINT64_MAX;
	const char *mode = uroce_reliability_str(o->rel);
	int fd;

	end_open(&e, o);
	memset(e.buf, 0, (size_t)o->nmsg * SLOT);
	qp_init(e.qp);
	for (uint32_t i = 0; i < o->nmsg; i++) {
		struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)(e.buf + (size_t)i * SLOT), .length = SLOT,
		                         .lkey = e.mr->lkey };
		struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
		struct uroce_recv_wr *bw;

		peer_check(uroce_post_recv(e.qp, &wr, &bw), "post a receive");
	}
	printf("late_peer: server (%s) on %s, waiting on TCP port %u\n", mode, o->port, o->tcp_port);
	fflush(stdout);
	fd = peer_tcp_accept(e.ctx, o->tcp_port, o->timeout_s * 1000ull, &peer_ip_be);
	mine = (struct peer_info){ .qpn = uroce_qp_num(e.qp), .token = uroce_qp_token(e.qp), .psn = peer_rand_psn(), .rkey = e.mr->rkey,
		                   .va = (uint64_t)(uintptr_t)e.buf };
	/* ready for the client's first packet before it learns where to send it */
	peer_recv_info(fd, &theirs, o->timeout_s * 1000ull);
	qp_connect(e.qp, e.sgid, peer_ip_be, theirs.qpn, theirs.psn, mine.psn, theirs.token);
	peer_send_info(fd, &mine);
	close(fd);

	/* every message, checked at its completion; its slot reused at once */
	deadline = peer_now_ms() + o->timeout_s * 1000u;
	while (done < o->nmsg && !peer_stop) {
		struct uroce_wc wc[16];
		int n;

		if (peer_now_ms() > deadline)
			peer_die("server: %u of %u messages in %u s", done, o->nmsg, o->timeout_s);
		peer_check(uroce_progress(e.ctx), "progress");
		n = uroce_poll_cq(e.rcq, 16, wc);
		peer_check(n, "poll the receive CQ");
		for (int k = 0; k < n; k++) {
			uint32_t i = (uint32_t)wc[k].wr_id, len = msg_len(i);
			uint8_t *slot = e.buf + (size_t)i * SLOT;
			bool write = msg_is_write(i);
			bool ok = wc[k].status == UROCE_WC_SUCCESS && i == done && wc[k].byte_len == len &&
			          !(wc[k].wc_flags & (UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT | UROCE_WC_PREEMPTED)) &&
			          wc[k].opcode == (write ? UROCE_WC_RECV_RDMA_WITH_IMM : UROCE_WC_RECV) &&
			          (!write || ((wc[k].wc_flags & UROCE_WC_WITH_IMM) && ntohl(wc[k].imm_data) == i));

			partial += !!(wc[k].wc_flags & UROCE_WC_PARTIAL);
			for (uint32_t b = 0; ok && i < o->nmsg && b < len; b++)
				ok = slot[b] == msg_byte(i, b);
			if (!ok) {
				if (!bad++)
					fprintf(stderr,
					        "late_peer: server: message %u (expected %u): status %s, opcode %d, flags 0x%x, "
					        "%u bytes (expected %u), immediate %u: not the message sent\n",
					        i, done, uroce_wc_status_str(wc[k].status), (int)wc[k].opcode, wc[k].wc_flags,
					        wc[k].byte_len, len, ntohl(wc[k].imm_data));
			}
			if (i < o->nmsg)
				memset(slot, REUSED, SLOT); /* the application reuses the buffer */
			done++;
		}
	}
	peer_check(uroce_port_stats(e.ctx, 1, &ps), "port statistics");
	late_at_end = late_copies(o->rel, &ps);
	printf("late_peer: server: all %u messages completed; waiting for the late copies (%s)\n", o->nmsg,
	       o->settled);
	fflush(stdout);

	/* the late copies: until the script says the router sent its last
	 * one, then a little longer for it to cross */
	deadline = peer_now_ms() + o->timeout_s * 1000u;
	for (uint64_t end_at = 0; !peer_stop;) {
		struct stat sb;
		struct uroce_wc wc[16];
		int n;

		peer_check(uroce_progress(e.ctx), "progress");
		n = uroce_poll_cq(e.rcq, 16, wc);
		peer_check(n, "poll the receive CQ");
		for (int k = 0; k < n; k++) {
			fprintf(stderr, "late_peer: server: a receive completed after the last message (wr_id %" PRIu64
			                ", %u bytes, flags 0x%x)\n", wc[k].wr_id, wc[k].byte_len, wc[k].wc_flags);
			bad++;
		}
		if (!end_at && stat(o->settled, &sb) == 0)
			end_at = peer_now_ms() + 200u;
		if (end_at && peer_now_ms() > end_at)
			break;
		if (peer_now_ms() > deadline) {
			fprintf(stderr, "late_peer: server: %s did not appear within %u s\n", o->settled, o->timeout_s);
			bad++;
			break;
		}
		usleep(n ? 0 : 50);
	}
	for (size_t b = 0; b < (size_t)o->nmsg * SLOT; b++) {
		if (e.buf[b] != REUSED) {
			if (first_changed == UINT64_MAX)
				first_changed = b;
			changed++;
		}
	}
	if (changed)
		fprintf(stderr, "late_peer: server: %" PRIu64 " bytes of reused slots changed after their messages "
		                "completed, the first at slot %" PRIu64 " byte %" PRIu64 "\n",
		        changed, first_changed / SLOT, first_changed % SLOT);
	peer_check(uroce_port_stats(e.ctx, 1, &ps), "port statistics");
	peer_check(uroce_qp_stats(e.qp, &qs), "QP statistics");
	print_drops("server", e.ctx);
	printf("late_peer: server QP: rx_packets=%" PRIu64 " duplicates=%" PRIu64 " late_drops=%" PRIu64
	       " sacks_sent=%" PRIu64 "\n",
	       qs.rx_packets, qs.duplicates, qs.late_drops, qs.sacks_sent);
	printf("late_peer: server %s: %u messages, %u partial, %u wrong, %" PRIu64 " bytes changed; late copies: %" PRIu64
	       " (after the last message: %" PRIu64 "); drops: duplicate=%" PRIu64 " stale_msg=%" PRIu64
	       " late=%" PRIu64 "\n",
	       mode, done, partial, bad, changed, late_copies(o->rel, &ps), late_copies(o->rel, &ps) - late_at_end,
	       ps.drops[UROCE_DROP_DUPLICATE], ps.drops[UROCE_DROP_STALE_MSG], ps.drops[UROCE_DROP_LATE]);
	fflush(stdout);
	end_close(&e);
	return done == o->nmsg && !bad && !partial && !changed ? 0 : 1;
}

static int run_client(const struct opts *o)
{
	struct end e;
	struct peer_info mine, theirs;
	struct uroce_qp_stats qs;
	int fd;

	end_open(&e, o);
	for (uint32_t i = 0; i < o->nmsg; i++)
		for (uint32_t b = 0; b < msg_len(i); b++)
			e.buf[(size_t)i * SLOT + b] = msg_byte(i, b);
	fd = peer_tcp_connect(o->server_ip_be, o->tcp_port, o->timeout_s * 1000ull);
	mine = (struct peer_info){ .qpn = uroce_qp_num(e.qp), .token = uroce_qp_token(e.qp), .psn = peer_rand_psn() };
	peer_send_info(fd, &mine);
	peer_recv_info(fd, &theirs, o->timeout_s * 1000ull);
	close(fd);
	qp_init(e.qp);
	qp_connect(e.qp, e.sgid, o->server_ip_be, theirs.qpn, theirs.psn, mine.psn, theirs.token);
	printf("late_peer: client (%s) connected: QPN %u to QPN %u\n", uroce_reliability_str(o->rel), mine.qpn,
	       theirs.qpn);
	fflush(stdout);
	/* one message at a time: the late copies of each arrive long after it
	 * completed, while later ones are in flight or after the last */
	for (uint32_t i = 0; i < o->nmsg && !peer_stop; i++) {
		struct uroce_sge sge = { .addr = (uint64_t)(uintptr_t)(e.buf + (size_t)i * SLOT), .length = msg_len(i),
		                         .lkey = e.mr->lkey };
		struct uroce_send_wr wr, *bw;
		struct uroce_wc wc;
		uint64_t deadline = peer_now_ms() + o->timeout_s * 1000u;
		int n;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = UROCE_SEND_SIGNALED;
		if (msg_is_write(i)) {
			wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl(i);
			wr.wr.rdma.remote_addr = theirs.va + (uint64_t)i * SLOT;
			wr.wr.rdma.rkey = theirs.rkey;
		} else {
			wr.opcode = UROCE_WR_SEND;
		}
		peer_check(uroce_post_send(e.qp, &wr, &bw), "post a send");
		while ((n = uroce_poll_cq(e.scq, 1, &wc)) == 0) {
			if (peer_now_ms() > deadline)
				peer_die("client: message %u did not complete within %u s", i, o->timeout_s);
			if (peer_stop)
				peer_die("client: interrupted at message %u", i);
			peer_check(uroce_progress(e.ctx), "progress");
		}
		peer_check(n, "poll the send CQ");
		if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != i || (wc.wc_flags & (UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT)))
			peer_die("client: message %u completed with %s, flags 0x%x", i, uroce_wc_status_str(wc.status),
			    wc.wc_flags);
		for (uint64_t until = now_us() + o->pace_us; now_us() < until;)
			uroce_progress(e.ctx); /* ACKs and SACKs of what is still out */
	}
	/* answer what the server still says for a moment (the last SACKs) */
	for (uint64_t until = peer_now_ms() + 100u; peer_now_ms() < until;)
		uroce_progress(e.ctx);
	peer_check(uroce_qp_stats(e.qp, &qs), "QP statistics");
	print_drops("client", e.ctx);
	printf("late_peer: client %s: %u messages sent; tx_packets=%" PRIu64 " retransmits=%" PRIu64 " timeouts=%" PRIu64
	       " rack_losses=%" PRIu64 " tlp_probes=%" PRIu64 " rto_losses=%" PRIu64 " spurious_retx=%" PRIu64 "\n",
	       uroce_reliability_str(o->rel), o->nmsg, qs.tx_packets, qs.retransmits, qs.timeouts, qs.rack_losses,
	       qs.tlp_probes, qs.rto_losses, qs.spurious_retx);
	fflush(stdout);
	end_close(&e);
	return peer_stop ? 1 : 0;
}

/* ====================================================================== */

static void usage(void)
{
	fprintf(stderr,
	        "usage: late_peer --role server --port afxdp:IF --rel rc|sr|ec|be -n N --settled FILE [options]\n"
	        "       late_peer --role client --port afxdp:IF --rel rc|sr|ec|be -n N --server-ip A.B.C.D [options]\n"
	        "       options: --tcp-port N (18790) --pace-us U (between messages, 1000) --timeout-s S (bound of\n"
	        "       every wait, 30)\n");
	exit(2);
}

static long num_arg(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == 0 || *end || v < lo || v > hi) {
		fprintf(stderr, "late_peer: %s %s: accepted %ld..%ld\n", opt, s, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "role", required_argument, NULL, 'r' },     { "port", required_argument, NULL, 'p' },
		{ "rel", required_argument, NULL, 'R' },      { "server-ip", required_argument, NULL, 's' },
		{ "settled", required_argument, NULL, 'S' },  { "tcp-port", required_argument, NULL, 't' },
		{ "pace-us", required_argument, NULL, 'P' },  { "timeout-s", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 },
	};
	struct opts o = { .tcp_port = 18790, .nmsg = 0, .pace_us = 1000, .timeout_s = 30, .rel = UROCE_REL__COUNT };
	const char *role = NULL;
	struct in_addr ia;
	int c;

	peer_name = "late_peer";

	while ((c = getopt_long(argc, argv, "n:", lo, NULL)) != -1) {
		switch (c) {
		case 'r': role = optarg; break;
		case 'p': o.port = optarg; break;
		case 'R':
			for (int r = 0; r < UROCE_REL__COUNT; r++)
				if (!strcmp(optarg, uroce_reliability_str((enum uroce_reliability)r)))
					o.rel = (enum uroce_reliability)r;
			if (o.rel == UROCE_REL__COUNT) {
				fprintf(stderr, "late_peer: --rel %s: accepted rc, sr, ec, be\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (inet_pton(AF_INET, optarg, &ia) != 1) {
				fprintf(stderr, "late_peer: --server-ip %s: not an IPv4 address\n", optarg);
				return 2;
			}
			o.server_ip_be = ia.s_addr;
			break;
		case 'S': o.settled = optarg; break;
		case 't': o.tcp_port = (uint16_t)num_arg("--tcp-port", optarg, 1, 65535); break;
		case 'P': o.pace_us = (uint32_t)num_arg("--pace-us", optarg, 0, 1000000); break;
		case 'T': o.timeout_s = (unsigned)num_arg("--timeout-s", optarg, 1, 600); break;
		case 'n': o.nmsg = (uint32_t)num_arg("-n", optarg, 1, MAX_MSGS); break;
		default: usage();
		}
	}
	if (!role || !o.port || !o.nmsg || o.rel == UROCE_REL__COUNT || optind != argc)
		usage();
	o.server = peer_role(role, o.server_ip_be != 0);
	if (o.server && !o.settled) {
		fprintf(stderr, "late_peer: the server needs --settled FILE\n");
		return 2;
	}
	peer_start();
	return o.server ? run_server(&o) : run_client(&o);
}
