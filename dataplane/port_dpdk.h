/* Extras of the DPDK port beyond struct port_ops: it owns the whole link,
 * so it resolves neighbours itself (ARP) instead of asking the kernel. */
#ifndef UROCE_DATAPLANE_PORT_DPDK_H
#define UROCE_DATAPLANE_PORT_DPDK_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/arp.h"
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

#endif /* UROCE_DATAPLANE_PORT_DPDK_H */
