/* SPDX-License-Identifier: MIT */
/* The tools' out-of-band TCP connection: connect with retries, accept one
 * client, whole-message send and receive with deadlines; see tcp_exchange.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_exchange.h"

#define CONNECT_RETRY_MS 100   /* between attempts while the server is not listening yet */
#define CONNECT_ATTEMPT_MS 1000 /* one attempt's wait for the handshake */
#define PROGRESS_POLL_MS 0     /* with a progress callback, poll without blocking */
/* Transport progress calls between two looks at the socket: a poll() per
 * call made the write_bw server spend most of its loop in the kernel
 * (profile in docs/performance.md), and delayed its ACKs. */
#define PROGRESS_SPINS 64

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 0: no deadline. */
static uint64_t deadline_after(double secs)
{
	return secs > 0 ? now_ns() + (uint64_t)(secs * 1e9) : 0;
}

/* Milliseconds to the deadline for poll(), at most cap; -1 without either. */
static int ms_left(uint64_t deadline, int cap)
{
	uint64_t now = now_ns(), ms;

	if (!deadline)
		return cap;
	if (now >= deadline)
		return 0;
	ms = (deadline - now + 999999) / 1000000;
	return cap >= 0 && ms > (uint64_t)cap ? cap : (int)ms;
}

/* One line on stderr, "PROG: ...", unless the caller asked for quiet. */
__attribute__((format(printf, 2, 3)))
static void say(const struct tcp_exchange *x, const char *fmt, ...)
{
	va_list ap;

	if (x->quiet)
		return;
	fprintf(stderr, "%s: ", x->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* One attempt on one address: the connected socket (non-blocking, as
 * send and receive want it), or negative errno. */
static int connect_once(const struct addrinfo *ai, uint64_t deadline)
{
	int fd, err = 0;
	socklen_t el = sizeof(err);
	struct pollfd p;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
		return fd;
	if (errno != EINPROGRESS) {
		err = errno;
		goto fail;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, ms_left(deadline, CONNECT_ATTEMPT_MS)) != 1) {
		err = ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el))
		err = errno;
	if (!err)
		return fd;
fail:
	close(fd);
	return -err;
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* Small messages in lockstep: do not hold one back for the next. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* HOST:PORT as a user writes it: [HOST]:PORT for an IPv6 address. */
static const char *host_port(const char *host, unsigned port, char *buf, size_t len)
{
	snprintf(buf, len, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	return buf;
}

int tcp_exchange_connect(struct tcp_exchange *x, const char *host, unsigned port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *t;
	uint64_t deadline = deadline_after(x->timeout_s);
	char service[8], shown[300];
	int n, fd = -ECONNREFUSED;

	x->fd = -1;
	snprintf(service, sizeof(service), "%u", port);
	n = getaddrinfo(host, service, &hints, &res);
	if (n) {
		say(x, "cannot resolve the server %s (port %u): %s", host, port, gai_strerror(n));
		return -EINVAL;
	}
	/* The server may not listen yet: try every address, again and again,
	 * until the deadline. */
	for (;;) {
		for (t = res; t; t = t->ai_next) {
			fd = connect_once(t, deadline);
			if (fd >= 0)
				break;
		}
		if (fd >= 0 || (deadline && now_ns() >= deadline))
			break;
		usleep(CONNECT_RETRY_MS * 1000);
	}
	freeaddrinfo(res);
	if (fd < 0) {
		say(x, "Couldn't connect to %s within %g s (--timeout): %s", host_port(host, port, shown, sizeof(shown)),
		    x->timeout_s, strerror(-fd));
		return fd;
	}
	set_nodelay(fd);
	x->fd = fd;
	return 0;
}

/* Bind and listen on one wildcard address; the socket or -errno. */
static int listen_one(int family, const struct sockaddr *sa, socklen_t len)
{
	int one = 1, zero = 0, fd, err;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* one socket for both families, whatever net.ipv6.bindv6only says */
	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)))
		goto fail;
	if (!bind(fd, sa, len) && !listen(fd, 1))
		return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

/* A listening socket on PORT that a client reaches over IPv4 or IPv6: one
 * dual-stack IPv6 socket (IPv4 clients arrive as ::ffff:a.b.c.d), or an
 * IPv4 one where the kernel has no IPv6. */
static int listen_on(struct tcp_exchange *x, unsigned port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd = listen_one(AF_INET6, (const struct sockaddr *)&a6, sizeof(a6));

	/* IPv6 off: no AF_INET6 sockets (ipv6.disable=1) or no :: to bind */
	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL || fd == -EPROTONOSUPPORT)
		fd = listen_one(AF_INET, (const struct sockaddr *)&a4, sizeof(a4));
	if (fd < 0)
		say(x, "Couldn't listen to port %u: %s", port, strerror(-fd));
	return fd;
}

int tcp_exchange_accept(struct tcp_exchange *x, unsigned port)
{
	uint64_t deadline = deadline_after(x->timeout_s);
	struct pollfd p;
	int lfd, fd, n;

	x->fd = -1;
	lfd = listen_on(x, port);
	if (lfd < 0)
		return lfd;
	p = (struct pollfd){ .fd = lfd, .events = POLLIN };
	do
		n = poll(&p, 1, ms_left(deadline, -1));
	while (n < 0 && errno == EINTR);
	if (n != 1) {
		say(x, "no client connected to TCP port %u within %g s (--timeout)", port, x->timeout_s);
		close(lfd);
		return -ETIMEDOUT;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	n = fd < 0 ? -errno : 0;
	close(lfd);
	if (n) {
		say(x, "accept() on TCP port %u failed: %s", port, strerror(-n));
		return n;
	}
	set_nodelay(fd);
	x->fd = fd;
	return 0;
}

/* Until fd is ready for ev, running the transport meanwhile. The deadline
 * moves on while the peer's packets keep arriving. */
/* Wait for ev on the connection until *deadline; while the peer's packets
 * keep arriving (activity) the deadline moves on, and the caller keeps the
 * moved one for the rest of its message. */
static int wait_fd(struct tcp_exchange *x, short ev, uint64_t *deadline)
{
	uint64_t seen = x->activity ? x->activity(x->arg) : 0;

	for (;;) {
		struct pollfd pfd = { .fd = x->fd, .events = ev };
		int n = poll(&pfd, 1, x->progress ? PROGRESS_POLL_MS : ms_left(*deadline, -1));

		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; x->progress && i < PROGRESS_SPINS; i++)
			if (x->progress(x->arg) < 0)
				return -EIO;
		uint64_t t = now_ns();

		if (!*deadline || t < *deadline)
			continue;
		uint64_t now_seen = x->activity ? x->activity(x->arg) : seen;

		if (now_seen == seen)
			return -ETIMEDOUT;
		seen = now_seen;
		*deadline = deadline_after(x->timeout_s);
	}
}

static void say_io(const struct tcp_exchange *x, const char *dir, int err)
{
	if (err == -ETIMEDOUT)
		say(x, "TCP %s the peer: timed out after %g s (--timeout)", dir, x->timeout_s);
	else if (err == -ECONNRESET)
		say(x, "TCP %s the peer: the peer closed the connection", dir);
	else
		say(x, "TCP %s the peer failed: %s", dir, strerror(-err));
}

int tcp_exchange_send(struct tcp_exchange *x, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t deadline = deadline_after(x->timeout_s);
	int rc = 0;

	while (!rc && len) {
		ssize_t n = send(x->fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			rc = errno == EPIPE ? -ECONNRESET : -errno;
		} else {
			rc = wait_fd(x, POLLOUT, &deadline);
		}
	}
	if (rc)
		say_io(x, "write to", rc);
	return rc;
}

int tcp_exchange_recv(struct tcp_exchange *x, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t deadline = deadline_after(x->timeout_s);
	int rc = 0;

	while (!rc && len) {
		ssize_t n = recv(x->fd, p, len, 0);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n == 0) {
			rc = -ECONNRESET;
		} else if (errno != EAGAIN && errno != EINTR) {
			rc = -errno;
		} else {
			rc = wait_fd(x, POLLIN, &deadline);
		}
	}
	if (rc)
		say_io(x, "read from", rc);
	return rc;
}

void tcp_exchange_close(struct tcp_exchange *x)
{
	if (x->fd >= 0)
		close(x->fd);
	x->fd = -1;
}
