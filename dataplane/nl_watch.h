/* SPDX-License-Identifier: MIT */
/* The kernel's view of its interfaces over rtnetlink: a non-blocking
 * watcher of address and link changes (polled from the engine's slow path),
 * and one-shot reads of an interface's addresses and link state.
 */
#ifndef UROCE_DATAPLANE_NL_WATCH_H
#define UROCE_DATAPLANE_NL_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Addresses of one family nl_if_addrs keeps; more are left out (a RoCE
 * port with more than this many addresses is not a case worth a bigger
 * table on every context). */
#define NL_ADDRS_MAX 16u

/* What changed on an interface. */
enum nl_watch_what {
	NL_WATCH_ADDR,   /* an IPv4 or IPv6 address came or went */
	NL_WATCH_LINK,   /* link flags or operstate changed; running says how it is now */
	NL_WATCH_RESYNC, /* notifications were lost (socket overrun): re-read everything (ifindex 0) */
};

/* Called once per notification; running is meaningful for NL_WATCH_LINK. */
typedef void (*nl_watch_fn)(void *arg, int ifindex, enum nl_watch_what what, bool running);

struct nl_watch;

/* Open a non-blocking rtnetlink socket subscribed to RTMGRP_LINK,
 * RTMGRP_IPV4_IFADDR and RTMGRP_IPV6_IFADDR. NULL and a message in err on
 * failure. */
struct nl_watch *nl_watch_open(char *err, size_t errlen);
void nl_watch_close(struct nl_watch *w);

/* Drain what the kernel has queued, without blocking, calling fn for each
 * notification. Returns how many were seen (0 when none), or -errno. */
int nl_watch_poll(struct nl_watch *w, nl_watch_fn fn, void *arg);

/* The usable addresses of interface ifindex (RTM_GETADDR dump), in the
 * kernel's order. IPv6 addresses still in duplicate address detection
 * (tentative) or that failed it are left out: the kernel does not answer
 * neighbour solicitations for them yet. */
struct nl_if_addrs {
	unsigned n4, n6;
	uint32_t v4_be[NL_ADDRS_MAX];
	uint8_t v6[NL_ADDRS_MAX][16];
	uint8_t v6_scope[NL_ADDRS_MAX]; /* RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, ... */
};
int nl_if_addrs(int ifindex, struct nl_if_addrs *out);

/* Whether interface ifindex is up and running (IFF_UP and IFF_RUNNING:
 * administratively up with carrier). Returns 0 or -errno. */
int nl_link_running(int ifindex, bool *running);

/* fe80::/64 with the modified EUI-64 interface identifier of mac (RFC 4291
 * appendix A): the link-local address the kernel gives an interface by
 * default, and RoCE's GID 0. */
void nl_link_local_from_mac(const uint8_t mac[6], uint8_t out[16]);

/* The MAC an EUI-64 link-local address was formed from; false when addr is
 * not fe80::/64 with an ff:fe EUI-64 identifier. */
bool nl_mac_from_link_local(const uint8_t addr[16], uint8_t mac[6]);

#endif /* UROCE_DATAPLANE_NL_WATCH_H */
