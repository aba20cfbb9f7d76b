/* SPDX-License-Identifier: MIT */
/* Latency baseline for `uroce-perf write_lat`: a kernel UDP ping-pong whose
 * both ends busy-poll their sockets (non-blocking recv in a loop), as uroce
 * busy-polls its rings, so no wakeup latency is counted against the kernel.
 * Reports one-way latency (RTT/2) like perftest and sockperf.
 *
 *   udp_pingpong server --ip A.B.C.D [--port P] [--duration SEC]
 *   udp_pingpong client --ip A.B.C.D [--port P] [--size N] [--iters N]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *ip = NULL;
	long port = 11112, size = 64, iters = 20000;
	double duration = 60;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	uint8_t buf[9000];

	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: udp_pingpong server|client --ip A.B.C.D [--port P] [--size N] [--iters N] "
				"[--duration SEC]\n");
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ip"))
			ip = argv[i + 1];
		else if (!strcmp(argv[i], "--port"))
			port = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--size"))
			size = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--iters"))
			iters = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--duration"))
			duration = strtod(argv[i + 1], NULL);
		else {
			fprintf(stderr, "udp_pingpong: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (!ip || inet_pton(AF_INET, ip, &sa.sin_addr) != 1 || port < 1 || port > 65535 || size < 1 ||
	    size > (long)sizeof(buf) || iters < 1 || iters > 10000000) {
		fprintf(stderr, "udp_pingpong: needs --ip A.B.C.D; --port 1-65535, --size 1-%zu, --iters 1-10000000\n",
			sizeof(buf));
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udp_pingpong: socket");
		return 1;
	}
	memset(buf, 0xab, sizeof(buf));

	if (!strcmp(argv[1], "server")) {
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			perror("udp_pingpong: bind");
			return 1;
		}
		fprintf(stderr, "udp_pingpong: serving\n");
		uint64_t end = now_ns() + (uint64_t)(duration * 1e9);
		while (now_ns() < end) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
			if (n > 0)
				sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
		}
		return 0;
	}

	uint64_t *lat = calloc((size_t)iters, sizeof(*lat));
	if (!lat || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("udp_pingpong: connect");
		return 1;
	}
	for (long i = 0; i < iters; i++) {
		uint64_t t0 = now_ns(), deadline = t0 + 1000000000ull;
		ssize_t n;

		if (send(fd, buf, (size_t)size, 0) != size) {
			perror("udp_pingpong: send");
			return 1;
		}
		while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) < 0 && errno == EAGAIN) {
			if (now_ns() > deadline) {
				fprintf(stderr, "udp_pingpong: no answer within 1 s (iteration %ld)\n", i);
				return 1;
			}
		}
		lat[i] = (now_ns() - t0) / 2;
	}
	qsort(lat, (size_t)iters, sizeof(*lat), cmp_u64);
	double sum = 0;
	for (long i = 0; i < iters; i++)
		sum += (double)lat[i];
	printf("{\"mode\":\"udp_pingpong\",\"size\":%ld,\"iters\":%ld,\"median_us\":%.3f,\"avg_us\":%.3f,"
	       "\"p99_us\":%.3f}\n",
	       size, iters, lat[iters / 2] / 1e3, sum / iters / 1e3, lat[(size_t)(iters * 0.99)] / 1e3);
	free(lat);
	return 0;
}
