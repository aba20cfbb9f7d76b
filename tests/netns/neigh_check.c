/* SPDX-License-Identifier: MIT */
/* Table-driven checks of dataplane/neigh.c against the kernel's tables:
 * on-link and gatewayed next hops over IPv4 and IPv6, resolution of a
 * missing entry, and the errors for unroutable, unresolvable and local
 * destinations. Run inside the namespace neigh_check.sh builds:
 *   neigh_check IFACE PEER_MAC
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "dataplane/neigh.h"

struct route_case {
	const char *dst;
	const char *nexthop; /* NULL: expect rc */
	int rc;
};

struct resolve_case {
	const char *dst;
	int rc;    /* 0: expect the peer's MAC */
	int rc2;   /* a second acceptable error */
};

static int failures;

static void addr(const char *s, uint8_t out[16])
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, s, out) == 1)
		return;
	if (inet_pton(AF_INET, s, &a4) != 1) {
		fprintf(stderr, "neigh_check: bad address in the table: %s\n", s);
		failures++;
		memset(out, 0, 16);
		return;
	}
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, &a4, 4);
}

static void show(const uint8_t a[16], char *buf, size_t len)
{
	if (neigh_addr_is_v4(a))
		inet_ntop(AF_INET, a + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, a, buf, (socklen_t)len);
}

int main(int argc, char **argv)
{
	static const struct route_case routes[] = {
		{ "10.83.0.2", "10.83.0.2", 0 },
		{ "10.99.0.7", "10.83.0.2", 0 },
		{ "fd00::2", "fd00::2", 0 },
		{ "fd99::5", "fd00::2", 0 },
		{ "192.0.2.1", NULL, -ENETUNREACH },
		{ "10.83.0.1", NULL, -EHOSTUNREACH }, /* our own address */
	};
	static const struct resolve_case resolves[] = {
		{ "10.83.0.2", 0, 0 },
		{ "10.99.0.7", 0, 0 },
		{ "fd00::2", 0, 0 },
		{ "fd99::5", 0, 0 },
		{ "192.0.2.1", -ENETUNREACH, -ENETUNREACH },
		{ "10.83.0.99", -ETIMEDOUT, -EHOSTUNREACH },
		{ "fd00::99", -ETIMEDOUT, -EHOSTUNREACH },
	};
	uint8_t peer[6], mac[6], ip[16], nh[16];
	unsigned m[6];
	int ifindex, rc, oif;

	if (argc != 3 || sscanf(argv[2], "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6) {
		fprintf(stderr, "usage: neigh_check IFACE PEER_MAC\n");
		return 2;
	}
	for (int i = 0; i < 6; i++)
		peer[i] = (uint8_t)m[i];
	ifindex = (int)if_nametoindex(argv[1]);
	if (!ifindex) {
		fprintf(stderr, "neigh_check: no interface %s\n", argv[1]);
		return 2;
	}

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route_case *c = &routes[i];
		uint8_t want[16];
		char got[64] = "-";

		addr(c->dst, ip);
		oif = 0;
		rc = neigh_route(ifindex, ip, nh, &oif);
		if (!rc)
			show(nh, got, sizeof(got));
		if (c->nexthop)
			addr(c->nexthop, want);
		bool ok = c->nexthop ? rc == 0 && !memcmp(nh, want, 16) && oif == ifindex : rc == c->rc;
		printf("%s: route %s -> rc %d next hop %s\n", ok ? "ok" : "FAIL", c->dst, rc, got);
		failures += !ok;
	}
	for (size_t i = 0; i < sizeof(resolves) / sizeof(resolves[0]); i++) {
		const struct resolve_case *c = &resolves[i];

		addr(c->dst, ip);
		memset(mac, 0, sizeof(mac));
		rc = neigh_resolve(ifindex, ip, mac, 1500);
		bool ok = c->rc == 0 ? rc == 0 && !memcmp(mac, peer, 6) : rc == c->rc || rc == c->rc2;
		printf("%s: resolve %s -> rc %d mac %02x:%02x:%02x:%02x:%02x:%02x\n", ok ? "ok" : "FAIL", c->dst, rc,
		       mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
		failures += !ok;
	}

	/* Lookup only: what resolve left behind is there, and a miss is a
	 * miss (no resolution started). */
	addr("10.83.0.2", ip);
	rc = neigh_lookup(ifindex, ip, mac);
	printf("%s: lookup 10.83.0.2 -> rc %d\n", rc == 0 && !memcmp(mac, peer, 6) ? "ok" : "FAIL", rc);
	failures += !(rc == 0 && !memcmp(mac, peer, 6));
	addr("10.83.0.50", ip);
	rc = neigh_lookup(ifindex, ip, mac);
	printf("%s: lookup 10.83.0.50 (never asked) -> rc %d\n", rc == -ENOENT ? "ok" : "FAIL", rc);
	failures += rc != -ENOENT;

	rc = neigh_resolve(ifindex, ip, mac, -1);
	printf("%s: negative timeout -> rc %d\n", rc == -EINVAL ? "ok" : "FAIL", rc);
	failures += rc != -EINVAL;

	printf("%s\n", failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
