/* SPDX-License-Identifier: MIT */
/* The switch's routing table: longest-prefix match over IPv4 and IPv6
 * prefixes, each to an ECMP group picked by a seeded flow hash. The
 * switch's own; not part of its API. */
#ifndef UROCE_APPS_FABRIC_FSW_ROUTE_H
#define UROCE_APPS_FABRIC_FSW_ROUTE_H

#include <stdint.h>

#include "apps/fabric/fsw.h"
#include "apps/fabric/fsw_pkt.h"

struct fsw_rt4 {
	uint32_t net; /* host byte order */
	uint32_t mask;
	uint8_t plen;
	uint8_t n;
	uint8_t ports[FSW_ECMP_MAX];
};

struct fsw_rt6 {
	uint8_t net[16];
	uint8_t plen;
	uint8_t n;
	uint8_t ports[FSW_ECMP_MAX];
};

/* Each family's routes longest prefix first, so the first match wins. */
struct fsw_rtab {
	uint64_t key; /* hash seed */
	unsigned n4, n6;
	struct fsw_rt4 v4[FSW_ROUTES_MAX];
	struct fsw_rt6 v6[FSW_ROUTES_MAX];
};

void fsw_rtab_build(struct fsw_rtab *t, const struct fsw_cfg *cfg);

/* The egress port of a parsed frame, or -1 when no route matches. */
int fsw_rtab_egress(const struct fsw_rtab *t, const uint8_t *f, const struct fsw_hdr *h);

#endif /* UROCE_APPS_FABRIC_FSW_ROUTE_H */
