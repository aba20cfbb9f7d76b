/* SPDX-License-Identifier: MIT */
/* Extras of the DPDK port beyond struct port_ops: it owns the whole link,
 * so it resolves neighbours itself (ARP) instead of asking the kernel. */
#ifndef UROCE_DATAPLANE_PORT_DPDK_H
#define UROCE_DATAPLANE_PORT_DPDK_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/arp.h"
#include "dataplane/nd.h"
#include "dataplane/port.h"

/*
 * Find the MAC of ipv4_be (network order) on the port's link: from the
 * neighbour table if known, else by broadcasting ARP requests (every
 * 100 ms) and polling for the reply for up to timeout_ms. Frames that are
 * not ARP and arrive meanwhile are kept for the next rx_burst (up to a
 * small stash; older ones are dropped and counted as no_buffer).
 * Returns 0 and fills mac, -ETIMEDOUT, -ENOBUFS (no mbuf for the request)
 * or -EINVAL (not a dpdk port, ipv4_be 0, timeout_ms negative).
 */
int port_dpdk_resolve(struct port *p, uint32_t ipv4_be, uint8_t mac[6], int timeout_ms);

/* The neighbour table only, no traffic: true and mac if ipv4_be is known. */
bool port_dpdk_neigh_lookup(struct port *p, uint32_t ipv4_be, uint8_t mac[6]);

/* Copy of the port's ARP counters; zeros for a port that is not dpdk. */
void port_dpdk_arp_stats(struct port *p, struct arp_stats *out);

/*
 * The IPv6 twin of port_dpdk_resolve (RFC 4861): from the ND table if
 * known, else Neighbor Solicitations from the port's link-local address to
 * ip's solicited-node group every 100 ms until an advertisement arrives or
 * timeout_ms passes. The port itself answers solicitations for its
 * link-local fe80:: EUI-64 (GID 0). Same returns; -EINVAL for a multicast ip.
 */
int port_dpdk_resolve6(struct port *p, const uint8_t ip[16], uint8_t mac[6], int timeout_ms);

/* Copy of the port's ND counters; zeros for a port that is not dpdk. */
void port_dpdk_nd_stats(struct port *p, struct nd_stats *out);

#endif /* UROCE_DATAPLANE_PORT_DPDK_H */
