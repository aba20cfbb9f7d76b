/* SPDX-License-Identifier: MIT */
/* Routing: longest-prefix match, then ECMP by a seeded hash of (source IP,
 * destination IP, UDP source port, UDP destination port). RoCEv2 carries
 * its path entropy in the UDP source port, so the source ports of one QP
 * spread over a group's members while each port keeps to one member (no
 * reordering within a flow). */
#include <string.h>

#include "apps/fabric/fsw_route.h"
#include "dataplane/wire.h"

/* splitmix64's finaliser: every input bit moves every output bit. */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t mask4(uint8_t plen)
{
	return plen ? ~0u << (32 - plen) : 0;
}

void fsw_rtab_build(struct fsw_rtab *t, const struct fsw_cfg *cfg)
{
	memset(t, 0, sizeof(*t));
	t->key = mix64(cfg->seed ^ 0x6a09e667f3bcc909ull);
	/* insertion sort, longest first; equal lengths keep configuration order */
	for (unsigned i = 0; i < cfg->nroutes; i++) {
		const struct fsw_route *r = &cfg->route[i];

		if (!r->ipv6) {
			struct fsw_rt4 e = { .mask = mask4(r->plen), .plen = r->plen, .n = r->nports };
			unsigned j = t->n4++;

			e.net = roce_get_be32(r->prefix) & e.mask;
			memcpy(e.ports, r->ports, sizeof(e.ports));
			for (; j && t->v4[j - 1].plen < r->plen; j--)
				t->v4[j] = t->v4[j - 1];
			t->v4[j] = e;
		} else {
			struct fsw_rt6 e = { .plen = r->plen, .n = r->nports };
			unsigned j = t->n6++;

			memcpy(e.net, r->prefix, 16);
			memcpy(e.ports, r->ports, sizeof(e.ports));
			for (; j && t->v6[j - 1].plen < r->plen; j--)
				t->v6[j] = t->v6[j - 1];
			t->v6[j] = e;
		}
	}
}

static bool match6(const uint8_t *a, const uint8_t *net, uint8_t plen)
{
	uint8_t full = plen / 8, bits = plen % 8;

	if (memcmp(a, net, full))
		return false;
	return !bits || ((a[full] ^ net[full]) & (uint8_t)(0xff00u >> bits)) == 0;
}

static inline unsigned pick(uint64_t h, unsigned n)
{
	return (unsigned)(((h >> 32) * n) >> 32);
}

int fsw_rtab_egress(const struct fsw_rtab *t, const uint8_t *f, const struct fsw_hdr *h)
{
	const uint8_t *ip = f + h->l3;
	uint64_t ports = (uint64_t)h->sport << 16 | h->dport, x;

	if (!h->ipv6) {
		uint32_t src = roce_get_be32(ip + 12), dst = roce_get_be32(ip + 16);

		for (unsigned i = 0; i < t->n4; i++) {
			const struct fsw_rt4 *e = &t->v4[i];

			if ((dst & e->mask) != e->net)
				continue;
			if (e->n == 1)
				return e->ports[0];
			x = mix64(t->key ^ ((uint64_t)src << 32 | dst));
			return e->ports[pick(mix64(x ^ ports), e->n)];
		}
		return -1;
	}
	for (unsigned i = 0; i < t->n6; i++) {
		const struct fsw_rt6 *e = &t->v6[i];

		if (!match6(ip + 24, e->net, e->plen))
			continue;
		if (e->n == 1)
			return e->ports[0];
		x = t->key;
		for (unsigned w = 0; w < 4; w++)
			x = mix64(x ^ roce_get_be64(ip + 8 + 8 * w));
		return e->ports[pick(mix64(x ^ ports), e->n)];
	}
	return -1;
}
