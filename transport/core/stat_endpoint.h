/* SPDX-License-Identifier: MIT */
/* The read-only statistics endpoint of a context (stat_endpoint.c): a
 * snapshot of its counters in /dev/shm that the engine refreshes from its
 * slow path, for uroce-stat and other readers in other processes. */
#ifndef UROCE_TRANSPORT_CORE_STAT_ENDPOINT_H
#define UROCE_TRANSPORT_CORE_STAT_ENDPOINT_H

#include <uroce/uroce.h>

struct uroce_context;

/* Publish the context's endpoint as attr asks (stat_endpoint, stat_max_qps,
 * the UROCE_STAT environment variable); specs name its ports. Called once
 * the ports are open, before a DEDICATED engine thread starts. 0, or a
 * negative errno when attr asked for the endpoint explicitly and it could
 * not be made (by default a failure just leaves the context without one). */
int stat_ep_open(struct uroce_context *ctx, const struct uroce_context_attr *attr, const char *const *specs,
                 unsigned nspecs);
/* On the engine's thread, every loop: refresh the snapshot when it is due
 * (a coarse clock read otherwise). */
void stat_ep_tick(struct uroce_context *ctx);
/* Remove the endpoint (the engine thread has stopped). */
void stat_ep_close(struct uroce_context *ctx);

#endif
