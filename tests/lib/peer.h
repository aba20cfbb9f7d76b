/* SPDX-License-Identifier: MIT */
/* What the test programs that meet their peer over TCP share: a message
 * and exit (peer_die, peer_check, prefixed with peer_name), a monotonic
 * clock in ms, the "qpn psn rkey va token" line each end sends (read with
 * a deadline), an IPv4-mapped GID and an initial PSN nobody off-path can
 * predict; accepting the one client while the context progresses; a QP's
 * creation and its RTR/RTS attributes toward a peer's IPv4 address.
 * Header only: every program is one file. */
#ifndef UROCE_TESTS_LIB_PEER_H
#define UROCE_TESTS_LIB_PEER_H

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

static const char *peer_name = "peer"; /* the prefix of peer_die's messages */
static volatile sig_atomic_t peer_stop; /* SIGINT or SIGTERM came (peer_start) */

static inline __attribute__((format(printf, 1, 2), noreturn)) void peer_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", peer_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/* A uroce call's negative status ends the program with its text. */
static inline void peer_check(int rc, const char *what)
{
	if (rc < 0)
		peer_die("%s: %s (%s)", what, uroce_strerror(rc), uroce_last_error());
}

static inline uint64_t peer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* What each end tells the other: "qpn psn rkey va token\n". */
struct peer_info {
	uint32_t qpn, psn, rkey;
	uint64_t va;
	uint32_t token; /* the QP's uroce_qp_token() */
};

/* One line into buf, without its newline, by deadline (peer_now_ms);
 * -ETIMEDOUT, -ECONNRESET or -EMSGSIZE otherwise. */
static inline int peer_read_line(int fd, char *buf, size_t cap, uint64_t deadline)
{
	size_t n = 0;

	while (n + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)deadline - (int64_t)peer_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		if (read(fd, buf + n, 1) != 1)
			return -ECONNRESET;
		if (buf[n] == '\n') {
			buf[n] = 0;
			return 0;
		}
		n++;
	}
	return -EMSGSIZE;
}

static inline void peer_send_info(int fd, const struct peer_info *mine)
{
	char line[128];
	int len = snprintf(line, sizeof(line), "%" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu32 "\n",
	                   mine->qpn, mine->psn, mine->rkey, mine->va, mine->token);

	if (write(fd, line, (size_t)len) != len)
		peer_die("exchange: cannot send the connection data");
}

/* The peer's line within timeout_ms, or the program ends. */
static inline void peer_recv_info(int fd, struct peer_info *theirs, uint64_t timeout_ms)
{
	char line[128];

	if (peer_read_line(fd, line, sizeof(line), peer_now_ms() + timeout_ms) < 0)
		peer_die("exchange: no connection data from the peer within %" PRIu64 " ms", timeout_ms);
	if (sscanf(line, "%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu64 " %" SCNu32, &theirs->qpn, &theirs->psn,
	           &theirs->rkey, &theirs->va, &theirs->token) != 5)
		peer_die("exchange: malformed connection data '%s' (want 'qpn psn rkey va token')", line);
}

static inline void peer_gid_of_ipv4(uint8_t gid[16], uint32_t ip_be)
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &ip_be, 4);
}

/* The index of port's IPv4-mapped GID for its address (the GID table
 * starts with the link-local IPv6 one where the port has it). */
static inline uint8_t peer_sgid_v4(struct uroce_context *ctx, uint8_t port)
{
	struct uroce_port_attr pa;
	uint8_t want[16], gid[16];

	peer_check(uroce_query_port(ctx, port, &pa), "query a port");
	peer_gid_of_ipv4(want, pa.ipv4_be);
	for (int i = 0; i < 256; i++) {
		int rc = uroce_query_gid(ctx, port, i, gid);

		if (rc == 0 && !memcmp(gid, want, 16))
			return (uint8_t)i;
		if (rc < 0 && rc != -ENOENT)
			break;
	}
	peer_die("port %u has no IPv4-mapped GID for its address in its GID table", port);
}

/* Listens on TCP port and accepts one client within timeout_ms, the
 * context progressing meanwhile; dies on failure. The client's address
 * goes to *client_ip_be. */
static inline int peer_tcp_accept(struct uroce_context *ctx, uint16_t port, uint64_t timeout_ms,
                                  uint32_t *client_ip_be)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	socklen_t alen = sizeof(a);
	uint64_t deadline = peer_now_ms() + timeout_ms;
	int one = 1, lfd, fd = -1;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		peer_die("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 1) < 0)
		peer_die("TCP port %u: cannot listen: %s", port, strerror(errno));
	while (fd < 0 && !peer_stop) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (peer_now_ms() > deadline)
			peer_die("no client connected to TCP port %u within %" PRIu64 " ms", port, timeout_ms);
		uroce_progress(ctx);
		if (poll(&p, 1, 1) == 1)
			fd = accept(lfd, (struct sockaddr *)&a, &alen);
	}
	close(lfd);
	if (fd < 0)
		peer_die("interrupted while waiting for the client");
	*client_ip_be = a.sin_addr.s_addr;
	return fd;
}

/* Connects to the server's TCP port, trying again every 100 ms for
 * timeout_ms; dies on failure. */
static inline int peer_tcp_connect(uint32_t ip_be, uint16_t port, uint64_t timeout_ms)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint64_t deadline = peer_now_ms() + timeout_ms;

	a.sin_addr.s_addr = ip_be;
	while (!peer_stop && peer_now_ms() < deadline) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0)
			peer_die("socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		close(fd);
		usleep(100000);
	}
	peer_die("cannot connect to the server's TCP port %u within %" PRIu64 " ms", port, timeout_ms);
}

/* The QP of ia (its type and policy) on scq/rcq with nwr WRs of one SGE
 * each way; dies with what on failure. */
static inline struct uroce_qp *peer_qp_create(struct uroce_pd *pd, struct uroce_qp_init_attr *ia,
                                              struct uroce_cq *scq, struct uroce_cq *rcq, uint32_t nwr,
                                              const char *what)
{
	struct uroce_qp *qp;

	ia->send_cq = scq;
	ia->recv_cq = rcq;
	ia->cap = (struct uroce_qp_cap){ .max_send_wr = nwr, .max_recv_wr = nwr, .max_send_sge = 1, .max_recv_sge = 1 };
	peer_check(uroce_qp_create(pd, ia, &qp), what);
	return qp;
}

/* RTR toward the peer at peer_ip_be (port 1, source GID sgid, MTU 1024,
 * hop limit 64): a's fields and the mask they take. */
static inline int peer_rtr_attr(struct uroce_qp_attr *a, uint32_t peer_ip_be, uint8_t sgid, uint32_t peer_qpn,
                                uint32_t peer_token, uint32_t rq_psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = UROCE_QPS_RTR;
	a->path_mtu = UROCE_MTU_1024;
	a->dest_qp_num = peer_qpn;
	a->dest_token = peer_token;
	a->rq_psn = rq_psn;
	peer_gid_of_ipv4(a->ah_attr.dgid, peer_ip_be);
	a->ah_attr.sgid_index = sgid;
	a->ah_attr.hop_limit = 64;
	a->ah_attr.port_num = 1;
	return UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
	       UROCE_QP_DEST_TOKEN;
}

/* An RC QP's RTS (retry_cnt and rnr_retry 7): a's fields and their mask. */
static inline int peer_rc_rts_attr(struct uroce_qp_attr *a, uint32_t sq_psn, uint8_t timeout, uint8_t max_rd_atomic)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = UROCE_QPS_RTS;
	a->sq_psn = sq_psn;
	a->timeout = timeout;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = max_rd_atomic;
	return UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
	       UROCE_QP_MAX_QP_RD_ATOMIC;
}

static inline uint32_t peer_rand_psn(void)
{
	uint32_t v;

	/* getrandom: random() is not seeded here, or from the time */
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)random();
	return v & 0xffffffu;
}

static inline void peer__on_signal(int sig)
{
	(void)sig;
	peer_stop = 1;
}

/* --role ROLE: 1 for server, 0 for client (which needs --server-ip), or
 * the message and exit 2. */
static inline int peer_role(const char *role, bool has_server_ip)
{
	if (!strcmp(role, "server"))
		return 1;
	if (!strcmp(role, "client") && has_server_ip)
		return 0;
	fprintf(stderr, "%s: --role %s: accepted 'server' or 'client' (the client needs --server-ip)\n", peer_name,
	        role);
	exit(2);
}

/* SIGINT and SIGTERM set peer_stop; random() seeded from the clock and
 * the pid. */
static inline void peer_start(void)
{
	signal(SIGINT, peer__on_signal);
	signal(SIGTERM, peer__on_signal);
	srandom((unsigned)(peer_now_ms() ^ (uint64_t)getpid()));
}

#endif /* UROCE_TESTS_LIB_PEER_H */
