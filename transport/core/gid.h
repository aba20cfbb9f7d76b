/* SPDX-License-Identifier: MIT */
/* The ports' GID tables (gid.c). */
#ifndef UROCE_TRANSPORT_CORE_GID_H
#define UROCE_TRANSPORT_CORE_GID_H

#include <stdbool.h>
#include <stdint.h>
#include "transport/core/qp_internal.h"

/* Fill the GID table of the port with index pi (just opened) and start
 * watching the kernel for changes. Returns 0 or -errno (uroce_fail). */
int gid_port_init(struct uroce_context *ctx, unsigned pi);
/* Stop watching (the tables stay readable). */
void gid_fini(struct uroce_context *ctx);
/* Slow path, on the engine's thread: every GID_POLL_NS read the kernel's
 * address and link changes, refresh the tables and raise GID_CHANGE,
 * PORT_ACTIVE and PORT_ERR. Returns the events raised. */
unsigned gid_slow_path(struct uroce_context *ctx);
/* Copy entry index of port pi's table into gid; any thread. 0 or -ENOENT. */
int gid_get(struct uroce_context *ctx, unsigned pi, unsigned index, uint8_t gid[16]);
/* Entries in port pi's table now; any thread. */
unsigned gid_count(struct uroce_context *ctx, unsigned pi);
/* True when gid is one of the GIDs of the port with index port: the
 * destination check every received packet passes (rxe's check_addr).
 * Engine thread. */
bool ctx_port_has_gid(const struct uroce_context *ctx, unsigned port, const uint8_t gid[16]);

#endif /* UROCE_TRANSPORT_CORE_GID_H */
