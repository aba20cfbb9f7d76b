/* SPDX-License-Identifier: MIT */
/* TCP check for the netns tests: a one-connection echo server and a client
 * that pushes a pattern through it and compares what comes back, to prove
 * the kernel's TCP still works on an interface with the XDP program on.
 *   tcp_echo server PORT [--ready-file F] [--timeout-ms T]
 *   tcp_echo client ADDR PORT BYTES [--timeout-ms T]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BYTES (64u << 20)

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int usage(void)
{
	fprintf(stderr, "usage: tcp_echo server PORT [--ready-file F] [--timeout-ms T]\n"
			"       tcp_echo client ADDR PORT BYTES [--timeout-ms T]\n");
	return 2;
}

static long num(const char *s, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < min || v > max) {
		fprintf(stderr, "tcp_echo: '%s' is not a number in %ld-%ld\n", s, min, max);
		exit(2);
	}
	return v;
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + (i >> 9));
}

/* Waits for fd to become ready within the overall deadline. */
static int wait_fd(int fd, short ev, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	long long left = deadline - now_ms();

	if (left <= 0)
		return -ETIMEDOUT;
	int rc = poll(&pfd, 1, (int)left);
	return rc > 0 ? 0 : rc == 0 ? -ETIMEDOUT : -errno;
}

static int server(int port, const char *ready, long timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), c;
	char buf[65536];

	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		perror("tcp_echo: server");
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "w");
		if (!f || fclose(f)) {
			perror(ready);
			return 1;
		}
	}
	if (wait_fd(ls, POLLIN, deadline) || (c = accept(ls, NULL, NULL)) < 0) {
		fprintf(stderr, "tcp_echo: server: no connection within %ld ms\n", timeout_ms);
		return 1;
	}
	for (;;) {
		ssize_t n;

		if (wait_fd(c, POLLIN, deadline)) {
			fprintf(stderr, "tcp_echo: server: timed out\n");
			return 1;
		}
		n = read(c, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0) {
			perror("tcp_echo: server read");
			return 1;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w;
			if (wait_fd(c, POLLOUT, deadline))
				return 1;
			w = write(c, buf + off, (size_t)(n - off));
			if (w < 0) {
				perror("tcp_echo: server write");
				return 1;
			}
			off += w;
		}
	}
	close(c);
	close(ls);
	return 0;
}

static int client(const char *addr, int port, size_t bytes, long timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	size_t sent = 0, got = 0;
	unsigned char buf[65536];
	int s;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcp_echo: '%s' is not an IPv4 address\n", addr);
		return 2;
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (s < 0 || (connect(s, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS)) {
		perror("tcp_echo: connect");
		return 1;
	}
	while (got < bytes) {
		struct pollfd pfd = { .fd = s, .events = POLLIN | (sent < bytes ? POLLOUT : 0) };
		long long left = deadline - now_ms();

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
			fprintf(stderr, "tcp_echo: client: timed out with %zu/%zu bytes echoed\n", got, bytes);
			return 1;
		}
		if (pfd.revents & (POLLERR | POLLHUP) && !(pfd.revents & POLLIN)) {
			int e = 0;
			socklen_t l = sizeof(e);
			getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &l);
			fprintf(stderr, "tcp_echo: client: connection failed: %s\n", strerror(e));
			return 1;
		}
		if ((pfd.revents & POLLOUT) && sent < bytes) {
			size_t n = bytes - sent < sizeof(buf) ? bytes - sent : sizeof(buf);
			for (size_t i = 0; i < n; i++)
				buf[i] = pattern(sent + i);
			ssize_t w = write(s, buf, n);
			if (w > 0)
				sent += (size_t)w;
			else if (w < 0 && errno != EAGAIN) {
				perror("tcp_echo: client write");
				return 1;
			}
			if (sent == bytes)
				shutdown(s, SHUT_WR);
		}
		if (pfd.revents & POLLIN) {
			ssize_t n = read(s, buf, sizeof(buf));
			if (n == 0)
				break;
			if (n < 0) {
				if (errno == EAGAIN)
					continue;
				perror("tcp_echo: client read");
				return 1;
			}
			for (ssize_t i = 0; i < n; i++) {
				if (buf[i] != pattern(got + (size_t)i)) {
					fprintf(stderr, "tcp_echo: client: byte %zu differs\n", got + (size_t)i);
					return 1;
				}
			}
			got += (size_t)n;
		}
	}
	close(s);
	if (got != bytes) {
		fprintf(stderr, "tcp_echo: client: %zu of %zu bytes came back\n", got, bytes);
		return 1;
	}
	printf("tcp_echo: %zu bytes echoed intact\n", bytes);
	return 0;
}

int main(int argc, char **argv)
{
	long timeout_ms = 10000;
	const char *ready = NULL;
	int pos = 0;
	const char *args[4] = { 0 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
			timeout_ms = num(argv[++i], 1, 600000);
		else if (!strcmp(argv[i], "--ready-file") && i + 1 < argc)
			ready = argv[++i];
		else if (pos < 4)
			args[pos++] = argv[i];
		else
			return usage();
	}
	if (pos >= 2 && !strcmp(args[0], "server") && pos == 2)
		return server((int)num(args[1], 1, 65535), ready, timeout_ms);
	if (pos == 4 && !strcmp(args[0], "client"))
		return client(args[1], (int)num(args[2], 1, 65535), (size_t)num(args[3], 1, MAX_BYTES), timeout_ms);
	return usage();
}
