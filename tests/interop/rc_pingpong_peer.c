/* SPDX-License-Identifier: MIT */
/* An ibv_rc_pingpong-compatible client built on uroce's wire format and a
 * uroce port: it proves that the kernel's rdma_rxe accepts the RC SENDs and
 * ACKs uroce builds, and that uroce parses what rxe sends back.
 *
 * The peer (a guest) runs `ibv_rc_pingpong -d rxe0 -g 1 -n N -s S` as the
 * server. This program does the TCP exchange through a kernel socket, then
 * plays the client's side of the ping-pong: for each iteration one SEND
 * (ONLY, or FIRST/MIDDLE/LAST above the path MTU) with AckReq on its last
 * packet, then waits for rxe's ACK and the server's SEND, which it ACKs.
 * Lost packets are retransmitted go-back-N style, a bounded number of times.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "dataplane/neigh.h"
#include "dataplane/port.h"
#include "dataplane/wire.h"
#include "interop_io.h"

#define PROG "rc_pingpong_peer"

/* ibv_rc_pingpong's wire contract (rdma-core libibverbs/examples). */
#define PP_TCP_PORT 18515
#define PP_DEST_MSG_LEN 52 /* "%04x:%06x:%06x:%32s" and its NUL */
#define PP_DONE_LEN 5      /* "done" and its NUL, one write */

/* Bounds: every wait below ends. */
#define CONNECT_TIMEOUT_MS 30000 /* server still starting: retry refused connects */
#define EXCHANGE_TIMEOUT_MS 30000
#define NEIGH_TIMEOUT_MS 3000
#define LINGER_MS 300            /* keep answering retransmits after the last message */
#define TX_RETRY_MAX 1000        /* port_poll rounds to wait for TX ring room */
#define MAX_SIZE (1u << 20)
#define MAX_ITERS 1000000

enum { MTU_DEFAULT = 1024 };

struct opts {
	const char *port_spec;
	const char *server;
	int tcp_port;
	long iters;
	long size;
	uint32_t mtu;
	int rto_ms;
	int retries;
	int timeout_s;
	long corrupt_icrc;
	bool verbose;
};

struct counters {
	uint64_t tx_data_pkts;
	uint64_t tx_retrans_pkts;
	uint64_t tx_acks;
	uint64_t tx_naks;
	uint64_t rx_acks;
	uint64_t rx_naks;
	uint64_t rx_data_pkts;
	uint64_t rx_dup_pkts;
	uint64_t rx_ooo_pkts;
	uint64_t rx_other_qp;
	uint64_t rx_unexpected_op;
	uint64_t rx_parse_drops;
	uint64_t timeouts;
};

struct peer {
	struct opts o;
	struct port *port;

	/* addressing: the template every frame is built from */
	struct roce_pkt tmpl;
	uint16_t ip_id;

	uint32_t my_qpn, my_psn;
	uint32_t rem_qpn, rem_psn;

	/* requester: one message in flight at a time, as the pingpong does */
	uint8_t *sbuf;
	uint32_t msg_first_psn;
	uint32_t msg_npkts;
	bool in_flight;
	uint64_t sent_ns;
	int tries;
	bool fatal_nak; /* remote access/operation error: retrying is pointless */
	long sent_msgs, acked_msgs;

	/* responder */
	uint32_t expect_psn;
	uint32_t msn;
	uint32_t cur_bytes;
	bool nak_sent; /* one NAK per gap, as IBTA asks */
	long recv_msgs;
	long bad_len_msgs;

	long corrupted; /* data packets sent with a wrong ICRC so far */
	struct counters c;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rc_pingpong_peer --port afxdp:IFACE --server IPV4 [options]\n"
		"  ibv_rc_pingpong client over a uroce port; the server runs\n"
		"  `ibv_rc_pingpong -d DEV -g GIDX -n ITERS -s SIZE` with the same -n/-s/-m.\n"
		"  -P, --port SPEC        uroce port (afxdp:IFACE[:QUEUE], dpdk[:PORTID])\n"
		"  -S, --server IPV4      the server's address\n"
		"  -p, --tcp-port N       TCP port of the exchange (default %d)\n"
		"  -n, --iters N          iterations, 1..%d (default 1000)\n"
		"  -s, --size N           message size in bytes, 1..%u (default 4096)\n"
		"  -m, --mtu N            path MTU: 256, 512, 1024, 2048 or 4096 (default %d)\n"
		"  -r, --rto-ms N         retransmit timeout, 1..10000 ms (default 200)\n"
		"  -R, --retries N        retransmissions of one message, 0..100 (default 7)\n"
		"  -t, --timeout S        give up after S seconds, 1..3600 (default 60)\n"
		"  -C, --corrupt-icrc N   send the first N data packets with a wrong ICRC\n"
		"                         (the peer must drop them; retransmission recovers)\n"
		"  -v, --verbose          one line per packet\n",
		PP_TCP_PORT, MAX_ITERS, MAX_SIZE, MTU_DEFAULT);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'P' },
		{ "server", required_argument, NULL, 'S' },
		{ "tcp-port", required_argument, NULL, 'p' },
		{ "iters", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "rto-ms", required_argument, NULL, 'r' },
		{ "retries", required_argument, NULL, 'R' },
		{ "timeout", required_argument, NULL, 't' },
		{ "corrupt-icrc", required_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .tcp_port = PP_TCP_PORT, .iters = 1000, .size = 4096, .mtu = MTU_DEFAULT,
			    .rto_ms = 200, .retries = 7, .timeout_s = 60 };
	while ((c = getopt_long(argc, argv, "P:S:p:n:s:m:r:R:t:C:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'P': o->port_spec = optarg; break;
		case 'S': o->server = optarg; break;
		case 'p': IO_OPT(PROG, "--tcp-port", 1, 65535, o->tcp_port); break;
		case 'n': IO_OPT(PROG, "--iters", 1, MAX_ITERS, o->iters); break;
		case 's': IO_OPT(PROG, "--size", 1, MAX_SIZE, o->size); break;
		case 'm':
			if (io_parse_mtu(PROG, "--mtu", optarg, &o->mtu))
				return -EINVAL;
			break;
		case 'r': IO_OPT(PROG, "--rto-ms", 1, 10000, o->rto_ms); break;
		case 'R': IO_OPT(PROG, "--retries", 0, 100, o->retries); break;
		case 't': IO_OPT(PROG, "--timeout", 1, 3600, o->timeout_s); break;
		case 'C': IO_OPT(PROG, "--corrupt-icrc", 0, MAX_ITERS, o->corrupt_icrc); break;
		case 'v': o->verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "rc_pingpong_peer: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->port_spec || !o->server) {
		fprintf(stderr, "rc_pingpong_peer: --port and --server are required\n");
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ TCP */

static int tcp_connect(const struct in_addr *srv, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = *srv };

	return tcp_connect_retry(&sa, CONNECT_TIMEOUT_MS);
}

static int write_full(int fd, const char *buf, size_t len)
{
	ssize_t n = write(fd, buf, len);

	/* One write: the v44 server reads "done" with a single read(). */
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static int exchange(struct peer *pp, int fd, const uint8_t my_gid[16], uint8_t rem_gid[16])
{
	char msg[PP_DEST_MSG_LEN], gid[33], rgid[33];
	unsigned lid, qpn, psn;
	int rc;

	io_gid_to_hex(my_gid, gid);
	snprintf(msg, sizeof(msg), "%04x:%06x:%06x:%s", 0u, pp->my_qpn, pp->my_psn, gid);
	rc = write_full(fd, msg, sizeof(msg));
	if (rc)
		return rc;
	rc = io_read_full(fd, msg, sizeof(msg), EXCHANGE_TIMEOUT_MS);
	if (rc)
		return rc;
	msg[sizeof(msg) - 1] = '\0';
	if (strlen(msg) != PP_DEST_MSG_LEN - 1 || sscanf(msg, "%x:%x:%x:%32s", &lid, &qpn, &psn, rgid) != 4 ||
	    strlen(rgid) != 32 || io_hex_to_gid(rgid, rem_gid)) {
		fprintf(stderr, "rc_pingpong_peer: server's address message '%s' is not LID:QPN:PSN:GID\n", msg);
		return -EPROTO;
	}
	pp->rem_qpn = qpn & ROCE_QPN_MASK;
	pp->rem_psn = psn & ROCE_PSN_MASK;
	printf("  local address:  LID 0x0000, QPN 0x%06x, PSN 0x%06x, GID %s\n", pp->my_qpn, pp->my_psn, gid);
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", lid, pp->rem_qpn, pp->rem_psn, rgid);
	return 0;
}

/* ---------------------------------------------------------------- frames */

static const char *op_name(uint8_t op)
{
	const struct roce_opcode_info *i = roce_opcode_info(op);

	return i ? i->name : "?";
}

/* Build p into a port frame and send it; false if the port took nothing.
 * corrupt flips the ICRC, to show the peer drops such a packet. */
static bool tx_one(struct peer *pp, struct roce_pkt *p, bool corrupt)
{
	struct uroce_frame f;
	int len;

	p->ip_id = pp->ip_id++;
	for (int i = 0; port_alloc(pp->port, &f, 1) != 1; i++) {
		if (i == TX_RETRY_MAX) {
			port_count_drop(pp->port, UROCE_DROP_NO_BUFFER);
			return false;
		}
		port_poll(pp->port);
	}
	len = roce_build(f.data, f.room, p);
	if (len < 0) {
		fprintf(stderr, "rc_pingpong_peer: roce_build %s: %s\n", op_name(p->opcode), strerror(-len));
		port_free(pp->port, &f, 1);
		return false;
	}
	f.len = (uint32_t)len;
	if (corrupt)
		f.data[len - 1] ^= 0xffu;
	for (int i = 0; i < TX_RETRY_MAX; i++) {
		if (port_tx_burst(pp->port, &f, 1) == 1) {
			if (pp->o.verbose)
				printf("  tx %-22s psn 0x%06x%s len %d%s\n", op_name(p->opcode), p->psn,
				       p->ackreq ? " ackreq" : "", len, corrupt ? " BAD-ICRC" : "");
			return true;
		}
		port_poll(pp->port);
	}
	port_count_drop(pp->port, UROCE_DROP_TX_RING_FULL);
	port_free(pp->port, &f, 1);
	return false;
}

/* Packet k (0-based) of the message in flight. */
static bool send_data_pkt(struct peer *pp, uint32_t k, bool corrupt)
{
	const uint32_t size = (uint32_t)pp->o.size, mtu = pp->o.mtu;
	const uint32_t n = pp->msg_npkts;
	struct roce_pkt p = pp->tmpl;

	if (n == 1)
		p.opcode = ROCE_TR_RC | ROCE_OP_SEND_ONLY;
	else if (k == 0)
		p.opcode = ROCE_TR_RC | ROCE_OP_SEND_FIRST;
	else if (k == n - 1)
		p.opcode = ROCE_TR_RC | ROCE_OP_SEND_LAST;
	else
		p.opcode = ROCE_TR_RC | ROCE_OP_SEND_MIDDLE;
	p.dqpn = pp->rem_qpn;
	p.psn = (pp->msg_first_psn + k) & ROCE_PSN_MASK;
	/* rc_pingpong signals every send, so rxe would ask for an ACK on
	 * every message's last packet; do the same. */
	p.ackreq = k == n - 1;
	p.payload = pp->sbuf + (size_t)k * mtu;
	p.payload_len = k == n - 1 ? size - k * mtu : mtu;
	return tx_one(pp, &p, corrupt);
}

/* Go-back-N from PSN `from` to the end of the message in flight. */
static void send_msg_from(struct peer *pp, uint32_t from, bool retrans)
{
	uint32_t k = (uint32_t)roce_psn_diff(from, pp->msg_first_psn);

	for (; k < pp->msg_npkts; k++) {
		bool corrupt = !retrans && pp->corrupted < pp->o.corrupt_icrc;

		if (!send_data_pkt(pp, k, corrupt))
			break;
		pp->corrupted += corrupt;
		if (retrans)
			pp->c.tx_retrans_pkts++;
		else
			pp->c.tx_data_pkts++;
	}
	pp->sent_ns = now_ns();
}

static void start_msg(struct peer *pp)
{
	const uint32_t size = (uint32_t)pp->o.size;

	pp->msg_first_psn = pp->my_psn;
	pp->msg_npkts = (size + pp->o.mtu - 1) / pp->o.mtu;
	pp->my_psn = (pp->my_psn + pp->msg_npkts) & ROCE_PSN_MASK;
	/* A recognisable payload: the iteration in every byte. */
	memset(pp->sbuf, (int)(pp->sent_msgs & 0xff), size);
	pp->in_flight = true;
	pp->tries = 0;
	pp->sent_msgs++;
	send_msg_from(pp, pp->msg_first_psn, false);
}

static void send_ack(struct peer *pp, uint32_t psn, uint8_t syndrome)
{
	struct roce_pkt p = pp->tmpl;

	p.opcode = ROCE_TR_RC | ROCE_OP_ACK;
	p.dqpn = pp->rem_qpn;
	p.psn = psn & ROCE_PSN_MASK;
	p.aeth.syndrome = syndrome;
	p.aeth.msn = pp->msn & 0xffffffu;
	if (tx_one(pp, &p, false)) {
		if (syndrome == AETH_ACK_UNLIMITED)
			pp->c.tx_acks++;
		else
			pp->c.tx_naks++;
	}
}

static void on_ack(struct peer *pp, const struct roce_pkt *r)
{
	const uint8_t kind = r->aeth.syndrome & 0x60u;
	uint32_t last = (pp->msg_first_psn + pp->msg_npkts - 1) & ROCE_PSN_MASK;

	if (kind == AETH_ACK) {
		pp->c.rx_acks++;
		if (pp->in_flight && roce_psn_diff(r->psn, last) >= 0) {
			pp->in_flight = false;
			pp->acked_msgs++;
		}
		return;
	}
	pp->c.rx_naks++;
	if (!pp->in_flight)
		return;
	if (r->aeth.syndrome == AETH_NAK_PSN_SEQ_ERR) {
		/* The responder expects r->psn: resend from there now. */
		if (roce_psn_diff(r->psn, pp->msg_first_psn) >= 0 && roce_psn_diff(r->psn, last) <= 0)
			send_msg_from(pp, r->psn, true);
		return;
	}
	if (kind == AETH_RNR_NAK)
		return; /* no receive posted yet: the RTO timer resends */
	fprintf(stderr, "rc_pingpong_peer: server NAKed psn 0x%06x with syndrome 0x%02x\n", r->psn,
		r->aeth.syndrome);
	pp->fatal_nak = true;
}

static void on_send(struct peer *pp, const struct roce_pkt *r)
{
	const uint8_t op = r->opcode & 0x1fu;
	int32_t d = roce_psn_diff(r->psn, pp->expect_psn);

	if (d < 0) {
		/* Our ACK was lost and rxe retransmits: acknowledge again up to
		 * what was received, with the current MSN. */
		pp->c.rx_dup_pkts++;
		if (r->ackreq)
			send_ack(pp, pp->expect_psn - 1, AETH_ACK_UNLIMITED);
		return;
	}
	if (d > 0) {
		pp->c.rx_ooo_pkts++;
		if (!pp->nak_sent) {
			send_ack(pp, pp->expect_psn, AETH_NAK_PSN_SEQ_ERR);
			pp->nak_sent = true;
		}
		return;
	}
	pp->nak_sent = false;
	pp->c.rx_data_pkts++;
	pp->expect_psn = (pp->expect_psn + 1) & ROCE_PSN_MASK;
	if (op == ROCE_OP_SEND_FIRST || op == ROCE_OP_SEND_ONLY)
		pp->cur_bytes = 0;
	pp->cur_bytes += r->payload_len;
	if (op == ROCE_OP_SEND_LAST || op == ROCE_OP_SEND_ONLY) {
		pp->msn++;
		pp->recv_msgs++;
		if (pp->cur_bytes != (uint32_t)pp->o.size) {
			pp->bad_len_msgs++;
			fprintf(stderr, "rc_pingpong_peer: server message %ld has %u bytes, expected %ld\n",
				pp->recv_msgs, pp->cur_bytes, pp->o.size);
		}
	}
	if (r->ackreq)
		send_ack(pp, r->psn, AETH_ACK_UNLIMITED);
}

static void rx_poll(struct peer *pp)
{
	static const struct roce_parse_opts popts = { .skip_icrc = false };
	struct uroce_frame f[PORT_BURST_MAX];
	uint16_t n = port_rx_burst(pp->port, f, PORT_BURST_MAX);

	for (uint16_t i = 0; i < n; i++) {
		struct roce_pkt r;
		enum uroce_drop_reason why = roce_parse(f[i].data, f[i].len, &r, &popts);

		if (why != UROCE_DROP_NONE) {
			port_count_drop(pp->port, why);
			pp->c.rx_parse_drops++;
			if (pp->o.verbose)
				printf("  rx drop: %s (%u bytes)\n", uroce_drop_reason_name(why), f[i].len);
			continue;
		}
		if (pp->o.verbose)
			printf("  rx %-22s psn 0x%06x%s len %u\n", op_name(r.opcode), r.psn,
			       r.ackreq ? " ackreq" : "", f[i].len);
		if (r.dqpn != pp->my_qpn) {
			pp->c.rx_other_qp++;
			continue;
		}
		switch (r.opcode) {
		case ROCE_TR_RC | ROCE_OP_ACK:
			on_ack(pp, &r);
			break;
		case ROCE_TR_RC | ROCE_OP_SEND_FIRST:
		case ROCE_TR_RC | ROCE_OP_SEND_MIDDLE:
		case ROCE_TR_RC | ROCE_OP_SEND_LAST:
		case ROCE_TR_RC | ROCE_OP_SEND_ONLY:
			on_send(pp, &r);
			break;
		default:
			pp->c.rx_unexpected_op++;
			break;
		}
	}
	if (n)
		port_free(pp->port, f, n);
}

/* The ping-pong itself. Returns 0 when every message went both ways. */
static int run(struct peer *pp)
{
	const uint64_t rto = (uint64_t)pp->o.rto_ms * 1000000ull;
	const uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)pp->o.timeout_s * 1000000000ull;
	uint64_t t_end;

	while (pp->acked_msgs < pp->o.iters || pp->recv_msgs < pp->o.iters) {
		uint64_t t;

		/* Like the real client: the next SEND goes out once the last one
		 * is ACKed and the server's answer to it has arrived. */
		if (!pp->in_flight && pp->sent_msgs < pp->o.iters && pp->recv_msgs >= pp->sent_msgs)
			start_msg(pp);
		rx_poll(pp);
		port_poll(pp->port);
		if (pp->fatal_nak)
			return -EPROTO;
		t = now_ns(); /* after start_msg stamped sent_ns */
		if (pp->in_flight && t - pp->sent_ns > rto) {
			if (pp->tries >= pp->o.retries) {
				fprintf(stderr, "rc_pingpong_peer: message %ld (psn 0x%06x) not ACKed after %d retransmissions\n",
					pp->sent_msgs, pp->msg_first_psn, pp->tries);
				return -ETIMEDOUT;
			}
			pp->tries++;
			pp->c.timeouts++;
			send_msg_from(pp, pp->msg_first_psn, true);
		}
		if (t > deadline) {
			fprintf(stderr, "rc_pingpong_peer: gave up after %d s: %ld/%ld sent messages ACKed, %ld/%ld received\n",
				pp->o.timeout_s, pp->acked_msgs, pp->o.iters, pp->recv_msgs, pp->o.iters);
			return -ETIMEDOUT;
		}
	}
	t_end = now_ns();

	/* The server finishes when our last ACK reaches it; if that ACK is
	 * lost, rxe retransmits its SEND, which must be answered again. */
	while (now_ns() - t_end < LINGER_MS * 1000000ull) {
		rx_poll(pp);
		port_poll(pp->port);
	}

	double secs = (double)(t_end - t0) / 1e9;
	uint64_t bytes = 2ull * (uint64_t)pp->o.size * (uint64_t)pp->o.iters;
	printf("%" PRIu64 " bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, secs, bytes * 8.0 / secs / 1e6);
	printf("%ld iters in %.2f seconds = %.2f usec/iter\n", pp->o.iters, secs, secs * 1e6 / (double)pp->o.iters);
	return pp->bad_len_msgs ? -EPROTO : 0;
}

static void print_counters(const struct peer *pp)
{
	const struct counters *c = &pp->c;
	const struct uroce_port_stats *s = &pp->port->stats;

	printf("peer: sent %ld messages (%" PRIu64 " data packets, %ld with a bad ICRC, %" PRIu64
	       " retransmitted, %" PRIu64 " timeouts), %" PRIu64 " ACKs, %" PRIu64 " NAKs\n",
	       pp->sent_msgs, c->tx_data_pkts, pp->corrupted, c->tx_retrans_pkts, c->timeouts, c->tx_acks,
	       c->tx_naks);
	printf("peer: received %ld messages (%" PRIu64 " data packets, %" PRIu64 " duplicate, %" PRIu64
	       " out of order), %" PRIu64 " ACKs, %" PRIu64 " NAKs; ignored %" PRIu64 " other-QP, %" PRIu64
	       " unexpected-opcode, %" PRIu64 " unparsable\n",
	       pp->recv_msgs, c->rx_data_pkts, c->rx_dup_pkts, c->rx_ooo_pkts, c->rx_acks, c->rx_naks,
	       c->rx_other_qp, c->rx_unexpected_op, c->rx_parse_drops);
	printf("port: rx %" PRIu64 " packets %" PRIu64 " bytes, tx %" PRIu64 " packets %" PRIu64 " bytes",
	       s->rx_packets, s->rx_bytes, s->tx_packets, s->tx_bytes);
	for (int r = 1; r < UROCE_DROP__COUNT; r++)
		if (s->drops[r])
			printf(", %s %" PRIu64, uroce_drop_reason_name((enum uroce_drop_reason)r), s->drops[r]);
	printf("\n");
}

static int iface_ipv4(const char *ifname, struct in_addr *out)
{
	struct ifaddrs *ifa, *i;
	int rc = -EADDRNOTAVAIL;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, ifname)) {
			*out = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			rc = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return rc;
}

static uint32_t rand24(void)
{
	uint32_t v = 0;
	FILE *f = fopen("/dev/urandom", "rb");

	if (!f || fread(&v, sizeof(v), 1, f) != 1)
		v = (uint32_t)now_ns() ^ (uint32_t)getpid();
	if (f)
		fclose(f);
	return v & ROCE_PSN_MASK;
}

int main(int argc, char **argv)
{
	struct peer pp = { 0 };
	struct port_config cfg;
	struct in_addr srv, local = {0};
	uint8_t my_gid[16], rem_gid[16], srv_gid[16];
	char err[256];
	int fd = -1, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_opts(argc, argv, &pp.o))
		return 2;
	if (inet_pton(AF_INET, pp.o.server, &srv) != 1) {
		fprintf(stderr, "rc_pingpong_peer: --server '%s' is not an IPv4 address (a.b.c.d)\n", pp.o.server);
		return 2;
	}
	if (port_config_parse(pp.o.port_spec, &cfg, err, sizeof(err))) {
		fprintf(stderr, "rc_pingpong_peer: --port: %s\n", err);
		return 2;
	}
	if (cfg.kind != PORT_KIND_AFXDP) {
		/* The TCP exchange and ARP need the kernel to own the interface. */
		fprintf(stderr, "rc_pingpong_peer: --port '%s': only afxdp:IFACE ports are supported here\n",
			pp.o.port_spec);
		return 2;
	}
	rc = iface_ipv4(cfg.ifname, &local);
	if (rc) {
		fprintf(stderr, "rc_pingpong_peer: interface %s has no IPv4 address: %s\n", cfg.ifname, strerror(-rc));
		return 2;
	}
	pp.sbuf = calloc(1, (size_t)pp.o.size);
	if (!pp.sbuf)
		return 1;

	rc = port_open(&pp.port, &cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "rc_pingpong_peer: opening port %s: %s\n", pp.o.port_spec, err);
		free(pp.sbuf);
		return 1;
	}
	printf("peer: port %s open, mac %02x:%02x:%02x:%02x:%02x:%02x, mtu %u, address %s\n", pp.o.port_spec,
	       pp.port->mac[0], pp.port->mac[1], pp.port->mac[2], pp.port->mac[3], pp.port->mac[4],
	       pp.port->mac[5], pp.port->mtu, inet_ntoa(local));
	if (pp.port->mtu && pp.port->mtu < pp.o.mtu + IPV4_HDR_LEN + UDP_HDR_LEN + BTH_LEN + ICRC_LEN) {
		fprintf(stderr, "rc_pingpong_peer: link MTU %u is too small for path MTU %u\n", pp.port->mtu, pp.o.mtu);
		rc = -EMSGSIZE;
		goto out;
	}

	/* QPN: anything but 0 and 1 (special QPs); rxe's own start at 0x11. */
	pp.my_qpn = 0x100 + (rand24() & 0xffff);
	pp.my_psn = rand24();

	fd = tcp_connect(&srv, pp.o.tcp_port);
	if (fd < 0) {
		rc = fd;
		fprintf(stderr, "rc_pingpong_peer: connect %s:%d: %s\n", pp.o.server, pp.o.tcp_port, strerror(-rc));
		goto out;
	}
	roce_ipv4_mapped(my_gid, local.s_addr);
	rc = exchange(&pp, fd, my_gid, rem_gid);
	if (rc) {
		fprintf(stderr, "rc_pingpong_peer: address exchange: %s\n", strerror(-rc));
		goto out;
	}
	roce_ipv4_mapped(srv_gid, srv.s_addr);
	if (memcmp(rem_gid, srv_gid, 16)) {
		/* rxe sends from its GID's address; packets to any other would
		 * not be the server's. Only -g with the IPv4 GID works here. */
		fprintf(stderr, "rc_pingpong_peer: server GID is not ::ffff:%s (run it with the IPv4 GID, -g 1)\n",
			pp.o.server);
		rc = -EPROTO;
		goto out;
	}

	/* Every frame starts from this template. */
	memcpy(pp.tmpl.smac, pp.port->mac, 6);
	rc = neigh_resolve(pp.port->ifindex, srv_gid, pp.tmpl.dmac, NEIGH_TIMEOUT_MS);
	if (rc) {
		fprintf(stderr, "rc_pingpong_peer: no MAC for %s on %s: %s\n", pp.o.server, cfg.ifname, strerror(-rc));
		goto out;
	}
	memcpy(pp.tmpl.sip, my_gid, 16);
	memcpy(pp.tmpl.dip, srv_gid, 16);
	pp.tmpl.ttl = 64;
	pp.tmpl.dont_fragment = true;
	/* One UDP source port per QP pair, from the dynamic range, as rxe does. */
	pp.tmpl.sport = (uint16_t)(0xc000u | ((pp.my_qpn ^ pp.rem_qpn) & 0x3fffu));
	pp.tmpl.dport = ROCE_UDP_PORT;
	pp.tmpl.pkey = ROCE_PKEY_DEFAULT;
	pp.ip_id = (uint16_t)rand24();
	pp.expect_psn = pp.rem_psn;
	printf("peer: server mac %02x:%02x:%02x:%02x:%02x:%02x\n", pp.tmpl.dmac[0], pp.tmpl.dmac[1],
	       pp.tmpl.dmac[2], pp.tmpl.dmac[3], pp.tmpl.dmac[4], pp.tmpl.dmac[5]);

	rc = write_full(fd, "done", PP_DONE_LEN);
	if (rc) {
		fprintf(stderr, "rc_pingpong_peer: sending \"done\": %s\n", strerror(-rc));
		goto out;
	}
	rc = run(&pp);
	print_counters(&pp);
	if (!rc)
		printf("peer: OK: %ld iterations of %ld bytes each way\n", pp.o.iters, pp.o.size);
out:
	if (fd >= 0)
		close(fd);
	port_close(pp.port);
	free(pp.sbuf);
	return rc ? 1 : 0;
}
