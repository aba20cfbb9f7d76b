/* Connecting to a test server that accepts exactly one connection: it is
 * never probed, only a refused connect (not listening yet) is tried again,
 * every 100 ms until the deadline. Plain C (no uroce or verbs headers), for
 * the host-side peers and the programs built for the guest alike. */
#ifndef UROCE_TESTS_INTEROP_TCP_RETRY_H
#define UROCE_TESTS_INTEROP_TCP_RETRY_H

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The connected socket, or -errno (the last connect's) after timeout_ms. */
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

#endif /* UROCE_TESTS_INTEROP_TCP_RETRY_H */
