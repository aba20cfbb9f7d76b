/* SPDX-License-Identifier: MIT */
/* uroce_port_capture_start / _stop: a port's frames into a pcap file
 * (dataplane/port_capture.c), run on the engine's thread. */
#include <errno.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port_capture.h"
#include "transport/core/ctx_call.h"
#include "transport/core/qp_internal.h"

struct cap_start_arg {
	const char *path;
	uint64_t max_frames;
};

static int capture_start_here(struct uroce_context *ctx, unsigned pi, const void *argp)
{
	const struct cap_start_arg *a = argp;
	char err[256];
	int rc;

	rc = port_capture_start(ctx->ports[pi].port, a->path, a->max_frames, err, sizeof(err));
	if (rc)
		return uroce_fail(rc, "uroce_port_capture_start: port %u: %s", pi + 1, err);
	return 0;
}

CTX_CALL3(cap_start, capture_start_here, struct uroce_context *, unsigned, const void *)

static int check_port(struct uroce_context *ctx, uint8_t port_num, const char *fn)
{
	int pi;

	if (!ctx)
		return uroce_fail(-EINVAL, "%s: ctx is NULL", fn);
	pi = ctx_port_index(ctx, port_num, fn);
	if (pi < 0)
		return pi;
	if (ctx->ports[pi].port->ops->nic)
		return uroce_fail(-EOPNOTSUPP, "%s: port %u is an RDMA NIC's (verbs): its packets never pass uroce; "
		                  "capture them on the NIC (ibdump, or tcpdump where the driver mirrors RDMA)", fn,
		                  port_num);
	return pi;
}

int uroce_port_capture_start(struct uroce_context *ctx, uint8_t port_num, const char *path, uint64_t max_frames)
{
	struct cap_start_arg a = { path, max_frames };
	int pi = check_port(ctx, port_num, "uroce_port_capture_start");

	if (pi < 0)
		return pi;
	if (!path || !*path)
		return uroce_fail(-EINVAL, "uroce_port_capture_start: path is required (a file to create)");
	if (ctx_remote(ctx)) {
		struct cap_start_args ca = { ctx, (unsigned)pi, &a };

		return ctx_call(ctx, cap_start_call, &ca);
	}
	return capture_start_here(ctx, (unsigned)pi, &a);
}

static int capture_stop_here(struct uroce_context *ctx, unsigned pi, struct uroce_capture_stats *st)
{
	struct port_capture c;
	int rc = port_capture_stop(ctx->ports[pi].port, &c);

	if (rc == -ENOENT)
		return uroce_fail(rc, "uroce_port_capture_stop: no capture runs on port %u", pi + 1);
	if (st) {
		memset(st, 0, sizeof(*st));
		st->frames = c.frames;
		st->bytes = c.bytes;
		st->missed = c.missed;
		st->error = c.error;
	}
	if (rc)
		return uroce_fail(rc, "uroce_port_capture_stop: port %u: writing the capture failed (%s); %llu frames "
		                  "written", pi + 1, strerror(-rc), (unsigned long long)c.frames);
	return 0;
}

CTX_CALL3(cap_stop, capture_stop_here, struct uroce_context *, unsigned, struct uroce_capture_stats *)

int uroce_port_capture_stop(struct uroce_context *ctx, uint8_t port_num, struct uroce_capture_stats *st)
{
	int pi = check_port(ctx, port_num, "uroce_port_capture_stop");

	if (pi < 0)
		return pi;
	if (ctx_remote(ctx)) {
		struct cap_stop_args ca = { ctx, (unsigned)pi, st };

		return ctx_call(ctx, cap_stop_call, &ca);
	}
	return capture_stop_here(ctx, (unsigned)pi, st);
}
