/* SPDX-License-Identifier: MIT */
/* Test helper for ipv6_gid.sh: open a context on one afxdp port (dedicated
 * engine thread, so the table is rewritten on that thread while this one
 * reads it) and print its GID table at start and after every GID_CHANGE,
 * and every port event, one line each, until SECONDS pass or SIGTERM.
 *   gid_watch IFACE SECONDS
 * Lines: "table N GID0 GID1 ...", "event NAME port P".
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uroce/uroce.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int print_table(struct uroce_context *ctx)
{
	struct uroce_port_attr pa;
	char text[INET6_ADDRSTRLEN];
	uint8_t gid[16];

	if (uroce_query_port(ctx, 1, &pa)) {
		fprintf(stderr, "gid_watch: query_port: %s\n", uroce_last_error());
		return -1;
	}
	printf("table %d", pa.gid_tbl_len);
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (uroce_query_gid(ctx, 1, i, gid)) {
			/* the table changed under us: a GID_CHANGE follows */
			printf(" ?");
			continue;
		}
		printf(" %s", inet_ntop(AF_INET6, gid, text, sizeof(text)));
	}
	printf("\n");
	return 0;
}

static const char *event_name(enum uroce_event_type t)
{
	switch (t) {
	case UROCE_EVENT_GID_CHANGE:
		return "GID_CHANGE";
	case UROCE_EVENT_PORT_ACTIVE:
		return "PORT_ACTIVE";
	case UROCE_EVENT_PORT_ERR:
		return "PORT_ERR";
	default:
		return "OTHER";
	}
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca;
	struct uroce_context *ctx;
	struct uroce_async_event ev;
	struct timespec ms = { 0, 1000000 };
	char spec[64];
	long secs;
	int rc = 0;

	if (argc != 3 || (secs = strtol(argv[2], NULL, 10)) < 1 || secs > 600) {
		fprintf(stderr, "usage: gid_watch IFACE SECONDS (1-600)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGTERM, on_term);
	snprintf(spec, sizeof(spec), "afxdp:%s", argv[1]);
	memset(&ca, 0, sizeof(ca));
	ca.port = spec;
	ca.mode = UROCE_ENGINE_DEDICATED;
	ca.engine_cpu = -1;
	if (uroce_context_create(&ctx, &ca)) {
		fprintf(stderr, "gid_watch: %s: %s\n", spec, uroce_last_error());
		return 1;
	}
	if (print_table(ctx))
		rc = 1;
	for (long i = 0; !rc && !stop && i < secs * 1000; i++) {
		while (uroce_get_async_event(ctx, &ev) == 0) {
			printf("event %s port %d\n", event_name(ev.event_type), ev.element.port_num);
			if (ev.event_type == UROCE_EVENT_GID_CHANGE && print_table(ctx))
				rc = 1;
			uroce_ack_async_event(&ev);
		}
		nanosleep(&ms, NULL);
	}
	if (uroce_async_events_lost(ctx))
		printf("lost %llu\n", (unsigned long long)uroce_async_events_lost(ctx));
	if (uroce_context_destroy(ctx)) {
		fprintf(stderr, "gid_watch: destroy: %s\n", uroce_last_error());
		rc = 1;
	}
	return rc;
}
