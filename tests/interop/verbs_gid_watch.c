/* SPDX-License-Identifier: MIT */
/* The GID table of a verbs port follows the device: prints the table, then
 * runs the context until a GID_CHANGE event arrives (at most SECONDS) and
 * prints it again. Run in a vmlab guest by verbs_rc.sh, which adds an
 * address to the interface meanwhile:  verbs_gid_watch SPEC SECONDS */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <uroce/uroce.h>

static void print_table(struct uroce_context *ctx, const char *when)
{
	uint8_t g[16];
	char s[INET6_ADDRSTRLEN];

	for (int i = 0; uroce_query_gid(ctx, 1, i, g) == 0; i++)
		printf("%s gid %d %s\n", when, i, inet_ntop(AF_INET6, g, s, sizeof(s)));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca = { .port = argc > 1 ? argv[1] : "verbs:rxe0" };
	double secs = argc > 2 ? atof(argv[2]) : 20;
	struct uroce_context *ctx;
	struct timespec t0, t;

	if (uroce_context_create(&ctx, &ca)) {
		fprintf(stderr, "context %s: %s\n", ca.port, uroce_last_error());
		return 1;
	}
	print_table(ctx, "before");
	printf("watching\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct uroce_async_event ev;

		uroce_progress(ctx);
		if (uroce_get_async_event(ctx, &ev) == 0) {
			int gid_change = ev.event_type == UROCE_EVENT_GID_CHANGE;

			printf("event %s port %d\n", uroce_event_type_str(ev.event_type), ev.element.port_num);
			uroce_ack_async_event(&ev);
			if (gid_change)
				break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > secs) {
			printf("no GID_CHANGE in %.0f s\n", secs);
			uroce_context_destroy(ctx);
			return 1;
		}
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	print_table(ctx, "after");
	uroce_context_destroy(ctx);
	return 0;
}
