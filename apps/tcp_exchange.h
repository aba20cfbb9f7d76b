/* SPDX-License-Identifier: MIT */
/* The TCP connection that carries the tools' out-of-band exchange
 * (uroce-pingpong: rdma-core's pingpong format; uroce-perf: perftest's):
 * connect with retries, accept one client, send and receive whole
 * messages, every wait bounded. The message formats stay in the tools.
 */
#ifndef UROCE_APPS_TCP_EXCHANGE_H
#define UROCE_APPS_TCP_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tcp_exchange {
	int fd;                /* -1 when not connected */
	const char *prog;      /* the tool's name, first word of every message */
	double timeout_s;      /* bound of each wait (connect, accept, one send or receive); 0 = none */
	/* Optional, called while a send or receive waits, so the transport
	 * keeps running (a write_bw server receives its data while it waits
	 * for the client's report); a negative return ends the wait with -EIO. */
	int (*progress)(void *arg);
	/* Optional: a count that moves while the peer is alive (packets
	 * received). A wait ends at timeout_s only if it has not moved since
	 * the wait began or was last extended. */
	uint64_t (*activity)(void *arg);
	void *arg;
	bool quiet;            /* no message on failure (a read that may fail) */
};

/* Connect to HOST:PORT (IPv4 or IPv6, whatever the name resolves to),
 * retrying every 100 ms while the server does not listen yet, until
 * timeout_s. Returns 0 or negative errno, with "Couldn't connect to
 * HOST:PORT" (rdma-core's and perftest's words) and the reason. */
int tcp_exchange_connect(struct tcp_exchange *x, const char *host, unsigned port);

/* Listen on PORT (every IPv4 and IPv6 address: one dual-stack socket, or
 * IPv4 alone where the kernel has no IPv6) and accept exactly one client
 * within timeout_s. Returns 0 or negative errno, with a message. */
int tcp_exchange_accept(struct tcp_exchange *x, unsigned port);

/* All of buf, or negative errno with a message: -ETIMEDOUT when the wait
 * ran out, -ECONNRESET when the peer closed first (receive). MSG_NOSIGNAL:
 * a peer that left gives an error, not SIGPIPE. */
int tcp_exchange_send(struct tcp_exchange *x, const void *buf, size_t len);
int tcp_exchange_recv(struct tcp_exchange *x, void *buf, size_t len);

void tcp_exchange_close(struct tcp_exchange *x);

#endif
