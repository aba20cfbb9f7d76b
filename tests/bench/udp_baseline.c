/* SPDX-License-Identifier: MIT */
/* Baseline for `uroce-perf raw`: the kernel UDP socket moving datagrams of
 * the same on-wire size as the RoCEv2 frames, batched with sendmmsg and
 * recvmmsg (the kernel's best case for small datagrams).
 *
 *   udp_baseline send --dst-ip A.B.C.D --size PAYLOAD [--duration SEC]
 *   udp_baseline recv [--duration SEC] [--idle-ms MS]
 * PAYLOAD is the RDMA payload; the datagram carries BTH+RETH+payload+ICRC
 * bytes so the Ethernet frame has exactly the length uroce sends.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define MAX_DGRAM 9000
#define ROCE_WRITE_ONLY_OVERHEAD (12 + 16 + 4) /* BTH + RETH + ICRC */
#define L2_L3_L4 (14 + 20 + 8)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: udp_baseline send --dst-ip A.B.C.D --size PAYLOAD [--duration SEC]\n"
			"       udp_baseline recv [--duration SEC] [--idle-ms MS]\n");
}

int main(int argc, char **argv)
{
	const char *dst = NULL;
	double duration = -1;
	long size = -1, idle_ms = 1000;
	int sending;

	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv"))) {
		usage();
		return 2;
	}
	sending = !strcmp(argv[1], "send");
	for (int i = 2; i < argc; i++) {
		if (i + 1 >= argc) {
			fprintf(stderr, "udp_baseline: %s needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--dst-ip"))
			dst = argv[++i];
		else if (!strcmp(argv[i], "--size"))
			size = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--duration"))
			duration = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--idle-ms"))
			idle_ms = strtol(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "udp_baseline: unknown option %s\n", argv[i]);
			usage();
			return 2;
		}
	}
	if (duration < 0)
		duration = sending ? 3 : 30;

	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udp_baseline: socket");
		return 1;
	}
	int buf = 8 << 20;
	setsockopt(fd, SOL_SOCKET, sending ? SO_SNDBUF : SO_RCVBUF, &buf, sizeof(buf));

	static uint8_t data[BATCH][MAX_DGRAM];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(4791)};

	if (sending) {
		if (!dst || inet_pton(AF_INET, dst, &sa.sin_addr) != 1 || size < 0 ||
		    size + ROCE_WRITE_ONLY_OVERHEAD > MAX_DGRAM) {
			fprintf(stderr, "udp_baseline: send needs --dst-ip A.B.C.D and --size 0-%d\n",
				MAX_DGRAM - ROCE_WRITE_ONLY_OVERHEAD);
			return 2;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			perror("udp_baseline: connect");
			return 1;
		}
		size_t dlen = (size_t)size + ROCE_WRITE_ONLY_OVERHEAD;
		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < BATCH; i++) {
			iov[i].iov_base = data[i];
			iov[i].iov_len = dlen;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		uint64_t sent = 0, t0 = now_ns(), deadline = t0 + (uint64_t)(duration * 1e9), t1;
		while ((t1 = now_ns()) < deadline) {
			int n = sendmmsg(fd, msgs, BATCH, 0);
			if (n > 0)
				sent += (uint64_t)n;
			else if (n < 0 && errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED) {
				perror("udp_baseline: sendmmsg");
				return 1;
			}
		}
		double secs = (double)(t1 - t0) / 1e9;
		size_t flen = dlen + L2_L3_L4;
		printf("{\"mode\":\"udp_send\",\"payload\":%ld,\"frame\":%zu,\"frames\":%" PRIu64
		       ",\"seconds\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f}\n",
		       size, flen, sent, secs, sent / secs / 1e6, sent * flen * 8 / secs / 1e9);
		return 0;
	}

	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("udp_baseline: bind 4791");
		return 1;
	}
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = data[i];
		iov[i].iov_len = MAX_DGRAM;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	fprintf(stderr, "udp_baseline: receiving on UDP 4791\n");
	uint64_t got = 0, bytes = 0, first = 0, last = 0, start = now_ns();
	uint64_t deadline = start + (uint64_t)(duration * 1e9);
	for (;;) {
		/* Busy-poll like the AF_XDP receiver does: the kernel's best case. */
		int n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		uint64_t t = now_ns();
		if (n <= 0) {
			if (t >= deadline || (first && t - last >= (uint64_t)idle_ms * 1000000ull))
				break;
			continue;
		}
		if (!first)
			first = t;
		last = t;
		got += (uint64_t)n;
		for (int i = 0; i < n; i++)
			bytes += msgs[i].msg_len + L2_L3_L4;
	}
	double secs = last > first ? (double)(last - first) / 1e9 : 0;
	printf("{\"mode\":\"udp_recv\",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"seconds\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f}\n",
	       got, bytes, secs, secs > 0 ? got / secs / 1e6 : 0, secs > 0 ? bytes * 8 / secs / 1e9 : 0);
	return got ? 0 : 1;
}
