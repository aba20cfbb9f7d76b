/* SPDX-License-Identifier: MIT */
/* --pcap FILE (app_pcap.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "app_pcap.h"

int app_pcap_start(const char *prog, struct uroce_context *ctx, uint8_t port, const char *path)
{
	int rc = uroce_port_capture_start(ctx, port, path, 0);

	if (rc)
		fprintf(stderr, "%s: --pcap %s: %s\n", prog, path, uroce_last_error());
	return rc;
}

int app_pcap_stop(const char *prog, struct uroce_context *ctx, uint8_t port, const char *path, FILE *f)
{
	struct uroce_capture_stats st = {0};
	int rc = uroce_port_capture_stop(ctx, port, &st);

	if (rc == -ENOENT) {
		fprintf(stderr, "%s: --pcap %s: %s\n", prog, path, uroce_last_error());
		return rc;
	}
	fprintf(f, "%s: --pcap %s: %" PRIu64 " frames (%" PRIu64 " bytes)", prog, path, st.frames, st.bytes);
	if (st.missed)
		fprintf(f, "; %" PRIu64 " frames NOT written (%s)", st.missed,
		        st.error ? strerror(-st.error) : "past the bound of 1000000 frames");
	fputc('\n', f);
	return rc;
}
