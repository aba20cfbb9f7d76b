/* SPDX-License-Identifier: MIT */
/* The context's asynchronous events (async.c): the engine raises,
 * the application takes. */
#ifndef UROCE_TRANSPORT_CORE_ASYNC_H
#define UROCE_TRANSPORT_CORE_ASYNC_H

#include "transport/core/qp_internal.h"

int ctx_async_init(struct uroce_context *ctx);
void ctx_async_fini(struct uroce_context *ctx);
void ctx_async_event(struct uroce_context *ctx, const struct uroce_async_event *ev);
/* PORT_ACTIVE, PORT_ERR or GID_CHANGE for the port with index port_index. */
void ctx_async_port_event(struct uroce_context *ctx, unsigned port_index, enum uroce_event_type type);

#endif /* UROCE_TRANSPORT_CORE_ASYNC_H */
