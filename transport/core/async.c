/* SPDX-License-Identifier: MIT */
/* Asynchronous events (ibv_get_async_event): the engine raises them (CQ
 * overrun, a QP gone fatal, a port's link or GIDs changing) into a ring
 * the application drains without blocking. */
#include <errno.h>

#include "transport/core/qp_internal.h"
#include "transport/core/async.h"

static const char *const event_names[] = {
	[UROCE_EVENT_CQ_ERR] = "CQ error",
	[UROCE_EVENT_QP_FATAL] = "local work queue catastrophic error",
	[UROCE_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
	[UROCE_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
	[UROCE_EVENT_COMM_EST] = "communication established",
	[UROCE_EVENT_SQ_DRAINED] = "send queue drained",
	[UROCE_EVENT_PATH_MIG] = "path migrated",
	[UROCE_EVENT_PATH_MIG_ERR] = "path migration request error",
	[UROCE_EVENT_DEVICE_FATAL] = "local catastrophic error",
	[UROCE_EVENT_PORT_ACTIVE] = "port active",
	[UROCE_EVENT_PORT_ERR] = "port error",
	[UROCE_EVENT_LID_CHANGE] = "LID change",
	[UROCE_EVENT_PKEY_CHANGE] = "P_Key change",
	[UROCE_EVENT_SM_CHANGE] = "SM change",
	[UROCE_EVENT_SRQ_ERR] = "SRQ catastrophic error",
	[UROCE_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	[UROCE_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	[UROCE_EVENT_CLIENT_REREGISTER] = "client reregistration",
	[UROCE_EVENT_GID_CHANGE] = "GID table change",
};

const char *uroce_event_type_str(enum uroce_event_type type)
{
	if ((unsigned)type >= sizeof(event_names) / sizeof(event_names[0]) || !event_names[type])
		return "unknown";
	return event_names[type];
}

int ctx_async_init(struct uroce_context *ctx)
{
	ctx->async = spsc_ring_create(UROCE_ASYNC_EVENT_MAX, sizeof(struct uroce_async_event));
	return ctx->async ? 0 : -ENOMEM;
}

void ctx_async_fini(struct uroce_context *ctx)
{
	spsc_ring_destroy(ctx->async);
	ctx->async = NULL;
}

void ctx_async_event(struct uroce_context *ctx, const struct uroce_async_event *ev)
{
	/* A full ring keeps the oldest events: the first failure is the one
	 * that explains the rest. */
	if (!ctx->async || !spsc_ring_enqueue(ctx->async, ev))
		__atomic_fetch_add(&ctx->async_lost, 1, __ATOMIC_RELAXED);
}

void ctx_async_port_event(struct uroce_context *ctx, unsigned port_index, enum uroce_event_type type)
{
	struct uroce_async_event ev = { .event_type = type };

	ev.element.port_num = (int)port_index + 1;
	ctx_async_event(ctx, &ev);
}

int uroce_get_async_event(struct uroce_context *ctx, struct uroce_async_event *event)
{
	if (!ctx || !event)
		return uroce_fail(-EINVAL, "uroce_get_async_event: ctx and event are required");
	if (!ctx->async || !spsc_ring_dequeue(ctx->async, event))
		return -EAGAIN;
	return 0;
}

void uroce_ack_async_event(struct uroce_async_event *event)
{
	(void)event; /* events own nothing: the element outlives them */
}

uint64_t uroce_async_events_lost(struct uroce_context *ctx)
{
	return ctx ? __atomic_load_n(&ctx->async_lost, __ATOMIC_RELAXED) : 0;
}
