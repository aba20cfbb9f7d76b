/* SPDX-License-Identifier: MIT */
/* IPv6 Neighbor Discovery (RFC 4861) for ports that own their link: NS/NA
 * frames, validation, the in-place answer, the neighbour table. */
#include <errno.h>
#include <string.h>

#include "dataplane/nd.h"

#define OFF_ETYPE 12
#define OFF_IP6 14
#define OFF_ICMP (OFF_IP6 + 40)
#define ICMP_ND_LEN 24u  /* type, code, checksum, flags/reserved, target */
#define OPT_SLLA 1u
#define OPT_TLLA 2u

static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 0x01 };

static inline uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static bool is_zero(const uint8_t a[16])
{
	static const uint8_t z[16];

	return !memcmp(a, z, 16);
}

uint16_t nd_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *l4, uint32_t len)
{
	uint64_t sum = 0;

	/* pseudo-header: source, destination, upper-layer length, next header */
	for (unsigned i = 0; i < 16; i += 2)
		sum += get16(src + i) + get16(dst + i);
	sum += len >> 16;
	sum += len & 0xffff;
	sum += ND_ICMPV6;
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += get16(l4 + i);
	if (len & 1)
		sum += (uint16_t)(l4[len - 1] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void nd_solicited_node(const uint8_t ip[16], uint8_t group[16], uint8_t mac[6])
{
	static const uint8_t prefix[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

	memcpy(group, prefix, 13);
	memcpy(group + 13, ip + 13, 3);
	mac[0] = mac[1] = 0x33;
	memcpy(mac + 2, group + 12, 4);
}

enum nd_parse_result nd_parse(const uint8_t *frame, uint32_t len, struct nd_msg *m)
{
	const uint8_t *ip = frame + OFF_IP6, *icmp = frame + OFF_ICMP;
	uint32_t plen, off;

	if (!nd_is_nd(frame, len))
		return ND_NOT_ND;
	if (len < OFF_ICMP + ICMP_ND_LEN)
		return ND_SHORT;
	plen = get16(ip + 4);
	if (plen < ICMP_ND_LEN || OFF_ICMP + plen > len)
		return ND_SHORT;
	memset(m, 0, sizeof(*m));
	m->type = icmp[0];
	memcpy(m->smac, frame + 6, 6);
	memcpy(m->src, ip + 8, 16);
	memcpy(m->dst, ip + 24, 16);
	memcpy(m->target, icmp + 8, 16);
	m->flags = m->type == ND_TYPE_NA ? icmp[4] : 0;
	/* RFC 4861 7.1.1/7.1.2: hop limit 255 (not forwarded), code 0, a
	 * correct checksum, a unicast target */
	if (ip[7] != ND_HOP_LIMIT || icmp[1] != 0 || nd_icmp6_csum(m->src, m->dst, icmp, plen) != 0 ||
	    m->target[0] == 0xff)
		return ND_INVALID;
	for (off = ICMP_ND_LEN; off + 2 <= plen;) {
		const uint8_t *o = icmp + off;
		uint32_t olen = (uint32_t)o[1] * 8u;

		if (!olen || off + olen > plen)
			return ND_INVALID; /* a zero-length option: RFC 4861 says discard */
		if (olen >= 8 && ((m->type == ND_TYPE_NS && o[0] == OPT_SLLA) ||
		                  (m->type == ND_TYPE_NA && o[0] == OPT_TLLA))) {
			m->has_lladdr = true;
			memcpy(m->lladdr, o + 2, 6);
		}
		off += olen;
	}
	/* a DAD probe (source ::) carries no source link-layer option */
	if (m->type == ND_TYPE_NS && is_zero(m->src) && m->has_lladdr)
		return ND_INVALID;
	return ND_OK;
}

/* Ethernet + IPv6 + ICMPv6 NS/NA with one link-layer option. */
static int build(uint8_t *buf, uint32_t cap, const uint8_t dmac[6], const uint8_t smac[6], const uint8_t src[16],
                 const uint8_t dst[16], uint8_t type, uint8_t flags, const uint8_t target[16], uint8_t opt)
{
	uint8_t *ip = buf + OFF_IP6, *icmp = buf + OFF_ICMP;
	const uint32_t plen = ICMP_ND_LEN + 8;

	if (cap < ND_FRAME_LEN)
		return -ENOSPC;
	memcpy(buf, dmac, 6);
	memcpy(buf + 6, smac, 6);
	put16(buf + OFF_ETYPE, ND_ETHERTYPE_IPV6);
	memset(ip, 0, 4);
	ip[0] = 0x60;
	put16(ip + 4, (uint16_t)plen);
	ip[6] = ND_ICMPV6;
	ip[7] = ND_HOP_LIMIT;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	memset(icmp, 0, plen);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	icmp[24] = opt;
	icmp[25] = 1; /* 8 bytes */
	memcpy(icmp + 26, smac, 6);
	put16(icmp + 2, nd_icmp6_csum(src, dst, icmp, plen));
	return (int)ND_FRAME_LEN;
}

int nd_build_ns(uint8_t *buf, uint32_t cap, const uint8_t smac[6], const uint8_t src[16], const uint8_t target[16])
{
	uint8_t group[16], mac[6];

	nd_solicited_node(target, group, mac);
	return build(buf, cap, mac, smac, src, group, ND_TYPE_NS, 0, target, OPT_SLLA);
}

int nd_build_na(uint8_t *buf, uint32_t cap, const uint8_t smac[6], const uint8_t target[16], const uint8_t dmac[6],
                const uint8_t dst[16], uint8_t flags)
{
	return build(buf, cap, dmac, smac, target, dst, ND_TYPE_NA, flags, target, OPT_TLLA);
}

void nd_table_init(struct nd_table *t)
{
	memset(t, 0, sizeof(*t));
}

static struct nd_neigh *nd_table_slot(struct nd_table *t, const uint8_t ip[16])
{
	struct nd_neigh *victim = &t->e[0];

	for (unsigned i = 0; i < ND_NEIGH_MAX; i++) {
		struct nd_neigh *e = &t->e[i];

		if (e->used && !memcmp(e->ip, ip, 16)) {
			victim = e;
			break;
		}
		if (!e->used || (victim->used && e->stamp < victim->stamp))
			victim = e;
	}
	return victim;
}

static struct nd_neigh *nd_table_find(struct nd_table *t, const uint8_t ip[16])
{
	for (unsigned i = 0; i < ND_NEIGH_MAX; i++)
		if (t->e[i].used && !memcmp(t->e[i].ip, ip, 16))
			return &t->e[i];
	return NULL;
}

void nd_table_learn(struct nd_table *t, const uint8_t ip[16], const uint8_t mac[6], uint64_t now)
{
	struct nd_neigh *e = nd_table_slot(t, ip);

	memcpy(e->ip, ip, 16);
	memcpy(e->mac, mac, 6);
	e->used = e->complete = true;
	e->stamp = now;
}

void nd_table_solicit(struct nd_table *t, const uint8_t ip[16], uint64_t now)
{
	struct nd_neigh *e;

	if (nd_table_find(t, ip))
		return;
	e = nd_table_slot(t, ip);
	memcpy(e->ip, ip, 16);
	e->used = true;
	e->complete = false;
	e->stamp = now;
}

bool nd_table_lookup(const struct nd_table *t, const uint8_t ip[16], uint8_t mac[6])
{
	for (unsigned i = 0; i < ND_NEIGH_MAX; i++)
		if (t->e[i].used && t->e[i].complete && !memcmp(t->e[i].ip, ip, 16)) {
			memcpy(mac, t->e[i].mac, 6);
			return true;
		}
	return false;
}

enum nd_action nd_input(struct nd_table *t, struct nd_stats *st, const uint8_t my_mac[6], const uint8_t (*my_ips)[16],
                        unsigned n_ips, uint8_t *frame, uint32_t len, uint32_t room, uint64_t now, uint32_t *out_len)
{
	struct nd_msg m;
	bool mine = false;

	if (nd_parse(frame, len, &m) != ND_OK) {
		st->malformed++;
		return ND_ACTION_MALFORMED;
	}
	for (unsigned i = 0; i < n_ips; i++)
		mine |= !memcmp(m.target, my_ips[i], 16);
	if (m.type == ND_TYPE_NA) {
		const uint8_t *mac = m.has_lladdr ? m.lladdr : m.smac;
		struct nd_neigh *e = nd_table_find(t, m.target);

		if (m.dst[0] == 0xff && (m.flags & ND_NA_SOLICITED)) {
			st->malformed++;
			return ND_ACTION_MALFORMED;
		}
		/* only a solicited or known address, and a known one changes
		 * its MAC only with Override */
		if (!e || (e->complete && memcmp(e->mac, mac, 6) && !(m.flags & ND_NA_OVERRIDE))) {
			st->ignored++;
			return ND_ACTION_CONSUMED;
		}
		memcpy(e->mac, mac, 6);
		e->complete = true;
		e->stamp = now;
		st->na_rx++;
		return ND_ACTION_CONSUMED;
	}
	if (!mine) {
		st->ignored++;
		return ND_ACTION_CONSUMED;
	}
	/* who solicits us is a neighbour we will answer (RFC 4861 7.2.3) */
	if (!is_zero(m.src) && m.has_lladdr)
		nd_table_learn(t, m.src, m.lladdr, now);
	st->ns_rx++;
	if (room < ND_FRAME_LEN)
		return ND_ACTION_CONSUMED;
	{
		uint8_t target[16], dmac[6], dst[16];
		bool dad = is_zero(m.src);
		int n;

		memcpy(target, m.target, 16);
		if (dad) { /* answer a duplicate check to all nodes, unsolicited */
			memcpy(dst, all_nodes, 16);
			dmac[0] = dmac[1] = 0x33;
			memcpy(dmac + 2, all_nodes + 12, 4);
		} else {
			memcpy(dst, m.src, 16);
			memcpy(dmac, m.has_lladdr ? m.lladdr : m.smac, 6);
		}
		n = nd_build_na(frame, room, my_mac, target, dmac, dst,
		                (uint8_t)(ND_NA_OVERRIDE | (dad ? 0 : ND_NA_SOLICITED)));
		if (n < 0)
			return ND_ACTION_CONSUMED;
		*out_len = (uint32_t)n;
		st->na_tx++;
		return ND_ACTION_REPLY;
	}
}
