/* SPDX-License-Identifier: MIT */
/* What the interop peers share, host side (uroce) and guest side (verbs)
 * alike: a monotonic clock, integer options, the TCP exchange (connect with
 * retries, accept one, read with a deadline) and GIDs as 32 hex digits.
 * Plain C with no uroce or verbs headers, so that the guest programs build
 * on their own with `cc prog.c -libverbs` (the include resolves beside the
 * source). */
#ifndef UROCE_TESTS_INTEROP_INTEROP_IO_H
#define UROCE_TESTS_INTEROP_INTEROP_IO_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t io_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* An integer option in lo..hi into *out; else a message prefixed by prog
 * and -EINVAL. */
static inline int io_parse_long(const char *prog, const char *what, const char *s, long lo, long hi,
				long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: %s '%s' is invalid: expected an integer in %ld..%ld\n", prog, what, s, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* In a getopt switch: optarg as an integer in lo..hi into dst, or a
 * message and `return -EINVAL` from the option parser. */
#define IO_OPT(prog, what, lo, hi, dst)                                              \
	do {                                                                         \
		long io_v_;                                                          \
		if (io_parse_long(prog, what, optarg, lo, hi, &io_v_))               \
			return -EINVAL;                                              \
		(dst) = (__typeof__(dst))io_v_;                                      \
	} while (0)

/* The path MTUs both ends accept. */
static inline int io_mtu_ok(long mtu)
{
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

/* The IBTA code of a path MTU (1 for 256 .. 5 for 4096), which verbs'
 * enum ibv_mtu and uroce's enum uroce_mtu both use; 1024's for any other. */
static inline int io_mtu_code(uint32_t mtu)
{
	for (int c = 1; c <= 5; c++)
		if (mtu == 128u << c)
			return c;
	return 3;
}

/* A path MTU option: 0, or a message and -EINVAL. */
static inline int io_parse_mtu(const char *prog, const char *what, const char *s, uint32_t *out)
{
	long v;

	if (io_parse_long(prog, what, s, 256, 4096, &v))
		return -EINVAL;
	if (!io_mtu_ok(v)) {
		fprintf(stderr, "%s: %s %ld: accepted 256, 512, 1024, 2048, 4096\n", prog, what, v);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* Connecting to a test server that accepts exactly one connection: it is
 * never probed, only a refused connect (not listening yet) is tried again,
 * every 100 ms until the deadline. The connected socket, or -errno (the
 * last connect's) after timeout_ms. */
static inline int tcp_connect_retry(const struct sockaddr_in *sa, unsigned timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

		if (fd < 0)
			return -errno;
		if (!connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
			return fd;
		err = errno;
		close(fd);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (err != ECONNREFUSED ||
		    (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > (long)timeout_ms)
			return -err;
		usleep(100000);
	}
}

/* Listens on port, accepts one connection within timeout_ms and closes the
 * listener: the socket or -errno. */
static inline int tcp_accept_one(int port, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;
	struct pollfd p;

	if (ls < 0)
		return -errno;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		int err = -errno;

		close(ls);
		return err;
	}
	p = (struct pollfd){ .fd = ls, .events = POLLIN };
	if (poll(&p, 1, timeout_ms) != 1) {
		close(ls);
		return -ETIMEDOUT;
	}
	fd = accept(ls, NULL, NULL);
	close(ls);
	return fd < 0 ? -errno : fd;
}

/* Reads exactly len bytes within timeout_ms: 0, -ETIMEDOUT, -ECONNRESET
 * (the peer closed) or -errno. */
static inline int io_read_full(int fd, char *buf, size_t len, int timeout_ms)
{
	uint64_t end = io_now_ms() + (uint64_t)timeout_ms;
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)(end - io_now_ms());
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)(left > 100 ? 100 : left));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

/* A GID as 32 hex digits, wire order: how the pingpongs print it. */
static inline void io_gid_to_hex(const uint8_t gid[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", gid[i]);
}

static inline int io_hex_to_gid(const char *s, uint8_t gid[16])
{
	for (int i = 0; i < 16; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		gid[i] = (uint8_t)v;
	}
	return 0;
}

#endif /* UROCE_TESTS_INTEROP_INTEROP_IO_H */
