/* perftest's out-of-band TCP exchange (the Ethernet one, without -R): in
 * every step the client writes first and the server reads, then answers
 * with the same kind of message. Integers travel big-endian, doubles
 * byte-swapped to big-endian, the QP data as perftest's ASCII key message.
 * Every wait is bounded and keeps the transport running.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

static uint64_t deadline_after(double secs)
{
	return perf_now_ns() + (uint64_t)(secs * 1e9);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -errno : (fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0);
}

/* Wait for fd to be ready for ev; run the transport meanwhile. The
 * deadline moves on while the peer's packets keep arriving. */
static int wait_fd(struct perf_comm *c, int fd, short ev, uint64_t deadline)
{
	uint64_t seen = c->activity ? c->activity(c->progress_arg) : 0;

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = ev};
		int n = poll(&pfd, 1, c->progress ? 0 : 50);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (c->progress && c->progress(c->progress_arg) < 0)
			return -EIO;
		uint64_t t = perf_now_ns();
		if (t < deadline)
			continue;
		uint64_t now_seen = c->activity ? c->activity(c->progress_arg) : seen;
		if (now_seen == seen)
			return -ETIMEDOUT;
		seen = now_seen;
		deadline = t + (uint64_t)(c->timeout * 1e9);
	}
}

static int write_all(struct perf_comm *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t deadline = deadline_after(c->timeout);

	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			fprintf(stderr, "uroce-perf: TCP write to the peer failed: %s\n", strerror(errno));
			return -errno;
		}
		int rc = wait_fd(c, c->fd, POLLOUT, deadline);
		if (rc) {
			fprintf(stderr, "uroce-perf: TCP write to the peer: %s\n",
				rc == -ETIMEDOUT ? "timed out (see --timeout)" : strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static int read_all(struct perf_comm *c, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t deadline = deadline_after(c->timeout);

	while (len) {
		ssize_t n = recv(c->fd, p, len, 0);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0) {
			fprintf(stderr, "uroce-perf: the peer closed the TCP connection early\n");
			return -ECONNRESET;
		}
		if (errno != EAGAIN && errno != EINTR) {
			fprintf(stderr, "uroce-perf: TCP read from the peer failed: %s\n", strerror(errno));
			return -errno;
		}
		int rc = wait_fd(c, c->fd, POLLIN, deadline);
		if (rc) {
			fprintf(stderr, "uroce-perf: waiting for the peer over TCP: %s\n",
				rc == -ETIMEDOUT ? "timed out (see --timeout)" : strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int perf_xchg(struct perf_comm *c, const void *mine, void *theirs, size_t len)
{
	int rc;

	if (c->is_client) {
		rc = write_all(c, mine, len);
		return rc ? rc : read_all(c, theirs, len);
	}
	rc = read_all(c, theirs, len);
	return rc ? rc : write_all(c, mine, len);
}

static int client_connect(struct perf_comm *c, const char *server, int port)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
	char service[16];
	uint64_t deadline = deadline_after(c->timeout);
	int rc;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(server, service, &hints, &res);
	if (rc) {
		fprintf(stderr, "uroce-perf: cannot resolve server '%s': %s\n", server, gai_strerror(rc));
		return -EINVAL;
	}
	/* The server may not listen yet: retry until the timeout. */
	for (;;) {
		int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		if (!connect(fd, res->ai_addr, res->ai_addrlen)) {
			c->fd = fd;
			rc = 0;
			break;
		}
		rc = -errno;
		close(fd);
		if (perf_now_ns() >= deadline) {
			fprintf(stderr, "uroce-perf: cannot connect to %s:%d within %.0f s: %s\n",
				server, port, c->timeout, strerror(-rc));
			break;
		}
		usleep(100 * 1000);
	}
	freeaddrinfo(res);
	return rc;
}

static int server_accept(struct perf_comm *c, int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1, lfd, rc;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1)) {
		rc = -errno;
		fprintf(stderr, "uroce-perf: cannot listen on TCP port %d: %s\n", port, strerror(-rc));
		close(lfd);
		return rc;
	}
	struct pollfd pfd = {.fd = lfd, .events = POLLIN};
	rc = poll(&pfd, 1, (int)(c->timeout * 1000));
	if (rc <= 0) {
		fprintf(stderr, "uroce-perf: no client connected to TCP port %d within %.0f s (see --timeout)\n",
			port, c->timeout);
		close(lfd);
		return -ETIMEDOUT;
	}
	c->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	rc = c->fd < 0 ? -errno : 0;
	close(lfd);
	return rc;
}

int perf_comm_open(struct perf_comm *c, const char *server, int port, double timeout)
{
	int rc, one = 1;

	c->fd = -1;
	c->is_client = server != NULL;
	c->timeout = timeout;
	rc = server ? client_connect(c, server, port) : server_accept(c, port);
	if (rc)
		return rc;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rc = set_nonblock(c->fd);
	if (rc)
		return rc;
	if (server)
		sleep(1); /* as perftest's client does before the version */
	return 0;
}

void perf_comm_close(struct perf_comm *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int perf_xchg_versions(struct perf_comm *c)
{
	char mine[PERF_VERSION_LEN] = {0}, theirs[PERF_VERSION_LEN];
	int rc;

	memcpy(mine, PERF_VERSION, sizeof(PERF_VERSION));
	rc = perf_xchg(c, mine, theirs, sizeof(mine));
	if (rc)
		return rc;
	memcpy(c->rem_version, theirs, PERF_VERSION_LEN);
	c->rem_version[PERF_VERSION_LEN] = 0;
	c->rem_version_num = atof(c->rem_version);
	if (c->rem_version_num < 5.0) {
		fprintf(stderr, "uroce-perf: the peer announced version '%s'; accepted: perftest 5.x/6.x (4.5-0.x packages)\n",
			c->rem_version);
		return -EPROTO;
	}
	return 0;
}

int perf_xchg_sys(struct perf_comm *c)
{
	uint32_t mine, theirs;
	int rc;

	if (c->rem_version_num < 5.32) /* older perftest skips this step */
		return 0;
	mine = htonl(PERF_CYCLE_BUFFER);
	rc = perf_xchg(c, &mine, &theirs, 4);
	if (rc)
		return rc;
	mine = htonl(PERF_CACHE_LINE);
	return perf_xchg(c, &mine, &theirs, 4);
}

int perf_xchg_mtu(struct perf_comm *c, int mine, int *out)
{
	char m[4] = {0}, t[5] = {0};
	size_t len = c->rem_version_num >= 5.31 ? 2 : 4;
	int rc;

	m[0] = (char)('0' + mine);
	rc = perf_xchg(c, m, t, len);
	if (rc)
		return rc;
	int rem = atoi(t);
	*out = (rem >= UROCE_MTU_256 && rem <= UROCE_MTU_4096 && rem < mine) ? rem : mine;
	return 0;
}

void perf_key_format(const struct perf_dest *d, char msg[PERF_KEY_MSG_LEN])
{
	int n = snprintf(msg, PERF_KEY_MSG_LEN, "%04x:%04x:%06x:%06x:%08x:%016llx:",
			 d->lid & 0xffff, d->out_reads & 0xffff, d->qpn & 0xffffff, d->psn & 0xffffff,
			 d->rkey, (unsigned long long)d->vaddr);
	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, (size_t)(PERF_KEY_MSG_LEN - n), "%02x:", d->gid[i]);
	snprintf(msg + n, (size_t)(PERF_KEY_MSG_LEN - n), "%08x:", d->srqn);
}

/* One hex field ending in ':' of at most maxdig digits. */
static int key_field(const char **p, const char *end, int maxdig, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;

	while (s < end && *s != ':') {
		int h;
		if (*s >= '0' && *s <= '9')
			h = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			h = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			h = *s - 'A' + 10;
		else
			return -EINVAL;
		x = x << 4 | (uint64_t)h;
		if (++nd > maxdig)
			return -EINVAL;
		s++;
	}
	if (s >= end || nd == 0)
		return -EINVAL;
	*v = x;
	*p = s + 1;
	return 0;
}

int perf_key_parse(const char *msg, size_t len, struct perf_dest *d)
{
	static const int digits[6] = {4, 4, 6, 6, 8, 16};
	const char *p = msg, *end = msg + len;
	uint64_t v[6], g, srqn = 0;

	for (int i = 0; i < 6; i++)
		if (key_field(&p, end, digits[i], &v[i]))
			return -EINVAL;
	d->lid = (uint32_t)v[0];
	d->out_reads = (uint32_t)v[1];
	d->qpn = (uint32_t)v[2];
	d->psn = (uint32_t)v[3];
	d->rkey = (uint32_t)v[4];
	d->vaddr = v[5];
	for (int i = 0; i < 16; i++) {
		if (key_field(&p, end, 2, &g))
			return -EINVAL;
		d->gid[i] = (uint8_t)g;
	}
	/* SRQN is optional in older perftest */
	if (p < end && *p && key_field(&p, end, 8, &srqn))
		return -EINVAL;
	d->srqn = (uint32_t)srqn;
	return 0;
}

int perf_handshake(struct perf_comm *c, const struct perf_dest *mine, struct perf_dest *theirs)
{
	char m[PERF_KEY_MSG_LEN] = {0}, t[PERF_KEY_MSG_LEN];
	struct perf_dest scratch;
	int rc;

	perf_key_format(mine, m);
	rc = perf_xchg(c, m, t, sizeof(m));
	if (rc)
		return rc;
	if (perf_key_parse(t, sizeof(t), theirs ? theirs : &scratch)) {
		fprintf(stderr, "uroce-perf: the peer's key message is malformed: '%.*s'; expected "
			"LID:OUT_READS:QPN:PSN:RKEY:VADDR:16 GID bytes:SRQN: in hex\n", (int)sizeof(t) - 1, t);
		return -EPROTO;
	}
	return 0;
}

static uint64_t dbl_be(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return htobe64(u);
}

static double be_dbl(uint64_t u)
{
	double d;
	u = be64toh(u);
	memcpy(&d, &u, 8);
	return d;
}

int perf_xchg_bw_report(struct perf_comm *c, const struct perf_bw_report *mine, struct perf_bw_report *theirs)
{
	uint64_t m, t = 0;
	int rc;

	m = htobe64(mine->size);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->size = be64toh(t);
	if (c->rem_version_num >= 5.33) {
		m = htobe64(mine->iters);
		if ((rc = perf_xchg(c, &m, &t, 8)))
			return rc;
		theirs->iters = be64toh(t);
	} else {
		uint32_t m4 = htonl((uint32_t)mine->iters), t4 = 0;
		if ((rc = perf_xchg(c, &m4, &t4, 4)))
			return rc;
		theirs->iters = ntohl(t4);
	}
	m = dbl_be(mine->bw_peak);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->bw_peak = be_dbl(t);
	m = dbl_be(mine->bw_avg);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->bw_avg = be_dbl(t);
	m = dbl_be(mine->msg_rate);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->msg_rate = be_dbl(t);
	return 0;
}

int perf_close_connection(struct perf_comm *c, const struct perf_dest *mine)
{
	char done[5];
	int rc = perf_handshake(c, mine, NULL);

	if (rc)
		return rc;
	rc = write_all(c, "done", 5);
	if (rc)
		return rc;
	/* perftest writes its "done" and closes without reading ours; read
	 * the peer's briefly so its close is not a reset, but do not need it. */
	double saved = c->timeout;
	c->timeout = saved < 2 ? saved : 2;
	int (*prog)(void *) = c->progress;
	uint64_t (*act)(void *) = c->activity;
	c->progress = NULL;
	c->activity = NULL;
	uint64_t deadline = deadline_after(c->timeout);
	size_t got = 0;
	while (got < sizeof(done) && perf_now_ns() < deadline) {
		ssize_t n = recv(c->fd, done + got, sizeof(done) - got, 0);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			break;
		if (wait_fd(c, c->fd, POLLIN, deadline))
			break;
	}
	c->progress = prog;
	c->activity = act;
	c->timeout = saved;
	return 0;
}
