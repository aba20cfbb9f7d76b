/* SPDX-License-Identifier: MIT */
/* Next-hop MAC resolution for kernel-visible ports (afxdp): the route and
 * neighbour tables read over rtnetlink, with the kernel doing ARP/ND when an
 * entry is missing. Slow path: call it at connection setup, not per packet.
 *
 * Addresses are 16 bytes: IPv6, or IPv4 as an IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d, as roce_ipv4_mapped() writes it).
 */
#ifndef UROCE_DATAPLANE_NEIGH_H
#define UROCE_DATAPLANE_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

/* Largest timeout neigh_resolve accepts; the kernel gives up on ARP after
 * about 3 s (3 probes, 1 s apart) anyway. */
#define NEIGH_TIMEOUT_MAX_MS 60000

/* True when addr is IPv4-mapped (::ffff:a.b.c.d). */
bool neigh_addr_is_v4(const uint8_t addr[16]);

/*
 * Route lookup (RTM_GETROUTE): the next hop towards dst, which is dst itself
 * when it is on-link, else the gateway. ifindex 0 takes the kernel's choice
 * of route. ifindex > 0 wants the next hop out of that interface: the
 * kernel's route when it leaves there, else a lookup pinned to it (which,
 * like a socket bound to the device, treats a destination without a route
 * through it as on-link). On success writes nexthop and, if oif is not
 * NULL, the outgoing interface. Returns 0, -ENETUNREACH (no route),
 * -EHOSTUNREACH (dst is local, a blackhole or an unreachable route) or
 * another -errno.
 */
int neigh_route(int ifindex, const uint8_t dst[16], uint8_t nexthop[16], int *oif);

/*
 * Neighbour lookup only (RTM_GETNEIGH): the MAC the kernel holds for ip on
 * ifindex, if the entry is usable (reachable, stale, delay, probe,
 * permanent or noarp). Returns 0, -ENOENT (no usable entry), -EHOSTUNREACH
 * (the kernel tried and failed) or another -errno. Never triggers
 * resolution.
 */
int neigh_lookup(int ifindex, const uint8_t ip[16], uint8_t mac[6]);

/*
 * The MAC to put in frames towards ip: route lookup, then the next hop's
 * neighbour entry; when there is none the kernel is asked to resolve it
 * (NTF_USE, or a datagram to the discard port without CAP_NET_ADMIN) and
 * the table is polled until timeout_ms (0..NEIGH_TIMEOUT_MAX_MS) passes.
 * Returns 0, -ETIMEDOUT, -EHOSTUNREACH, -ENETUNREACH, -EINVAL or -errno.
 */
int neigh_resolve(int ifindex, const uint8_t ip[16], uint8_t mac[6], int timeout_ms);

#endif /* UROCE_DATAPLANE_NEIGH_H */
