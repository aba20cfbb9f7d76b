/* SPDX-License-Identifier: MIT */
/* Parsing and validating received RoCEv2 frames into a struct roce_pkt.
 * Every rejection returns the one drop reason that names it; nothing is
 * read past the frame's length. */
#include "dataplane/wire.h"

/* IPv4 flags/fragment field: only DF may be set (no fragments, and the
 * reserved "evil" bit must be clear). */
#define IPV4_FRAG_BITS_BAD 0xbfffu

/* ::ffff:a.b.c.d, the RoCEv2 GID of an IPv4 address */
static inline void ipv4_mapped(uint8_t out[16], const uint8_t *a)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };
	memcpy(out, prefix, 12);
	memcpy(out + 12, a, 4);
}

/*
 * The checks run outermost header first, so the reason is the first thing
 * wrong on the way in. Lengths: the IP header's length decides where the
 * packet ends (Ethernet may pad tiny frames past it) but must fit in the
 * frame; every header after that must fit before the ICRC.
 */
enum uroce_drop_reason roce_parse(const uint8_t *f, uint32_t len, struct roce_pkt *p,
                                  const struct roce_parse_opts *opts)
{
	const struct roce_opcode_info *info;
	uint32_t l3, l4, bth, end, rem, pad, mask;
	uint16_t etype, dport;
	const uint8_t *ip, *b;

	if (len < ETH_HDR_LEN)
		return UROCE_DROP_SHORT_FRAME;
	etype = roce_get_be16(f + 12);
	l3 = ETH_HDR_LEN;
	p->has_vlan = false;
	p->vlan_tci = 0;
	if (etype == ROCE_ETHERTYPE_VLAN) {
		if (len < ETH_HDR_LEN + VLAN_HDR_LEN)
			return UROCE_DROP_SHORT_FRAME;
		p->has_vlan = true;
		p->vlan_tci = roce_get_be16(f + 14);
		etype = roce_get_be16(f + 16);
		l3 += VLAN_HDR_LEN;
	}

	ip = f + l3;
	if (etype == ROCE_ETHERTYPE_IPV4) {
		uint32_t tot;

		if (len - l3 < IPV4_HDR_LEN)
			return UROCE_DROP_SHORT_FRAME;
		if (ip[0] != 0x45) /* version 4, no options */
			return UROCE_DROP_BAD_IP_HEADER;
		if (ipv4_csum(ip, IPV4_HDR_LEN) != 0)
			return UROCE_DROP_BAD_IP_CSUM;
		if (roce_get_be16(ip + 6) & IPV4_FRAG_BITS_BAD)
			return UROCE_DROP_BAD_IP_HEADER;
		if (ip[9] != ROCE_IPPROTO_UDP)
			return UROCE_DROP_NOT_UDP;
		tot = roce_get_be16(ip + 2);
		if (tot < IPV4_HDR_LEN || tot > len - l3)
			return UROCE_DROP_BAD_LENGTH;
		end = l3 + tot;
		l4 = l3 + IPV4_HDR_LEN;
		p->ipv6 = false;
	} else if (etype == ROCE_ETHERTYPE_IPV6) {
		uint32_t plen;

		if (len - l3 < IPV6_HDR_LEN)
			return UROCE_DROP_SHORT_FRAME;
		if (ip[0] >> 4 != 6)
			return UROCE_DROP_BAD_IP_HEADER;
		/* extension headers are not followed: RoCEv2 senders use none */
		if (ip[6] != ROCE_IPPROTO_UDP)
			return UROCE_DROP_NOT_UDP;
		plen = roce_get_be16(ip + 4);
		if (plen > len - l3 - IPV6_HDR_LEN)
			return UROCE_DROP_BAD_LENGTH;
		end = l3 + IPV6_HDR_LEN + plen;
		l4 = l3 + IPV6_HDR_LEN;
		p->ipv6 = true;
	} else {
		return UROCE_DROP_NOT_IP;
	}

	if (end - l4 < UDP_HDR_LEN)
		return UROCE_DROP_SHORT_FRAME;
	dport = roce_get_be16(f + l4 + 2);
	if (dport != ROCE_UDP_PORT && (!opts || !opts->extra_port || dport != opts->extra_port))
		return UROCE_DROP_WRONG_PORT;
	if (roce_get_be16(f + l4 + 4) != end - l4)
		return UROCE_DROP_BAD_LENGTH;

	bth = l4 + UDP_HDR_LEN;
	if (end - bth < BTH_LEN + ICRC_LEN)
		return UROCE_DROP_SHORT_FRAME;
	b = f + bth;
	if (b[1] & 0x0f)
		return UROCE_DROP_BAD_BTH;
	info = roce_opcode_info(b[0]);
	if (!info)
		return UROCE_DROP_UNKNOWN_OPCODE;
	if (end - bth < (uint32_t)info->hdr_len + ICRC_LEN)
		return UROCE_DROP_SHORT_FRAME;

	/* Payload and pad together keep the packet a multiple of 4 bytes
	 * (IBTA 9.2.2); an opcode without payload has neither. */
	rem = end - bth - info->hdr_len - ICRC_LEN;
	pad = (b[1] >> 4) & 3u;
	mask = info->mask;
	if (!(mask & ROCE_PAYLOAD)) {
		if (rem | pad)
			return UROCE_DROP_BAD_PAD;
	} else if (pad > rem || (rem & 3u)) {
		return UROCE_DROP_BAD_PAD;
	}

	p->icrc = roce_get_le32(f + end - ICRC_LEN);
	if (!(opts && opts->skip_icrc) && roce_icrc(ip, end - l3, p->ipv6) != p->icrc)
		return UROCE_DROP_BAD_ICRC;

	/* Valid: fill the descriptor. */
	memcpy(p->dmac, f, 6);
	memcpy(p->smac, f + 6, 6);
	if (p->ipv6) {
		uint32_t w = roce_get_be32(ip);
		p->tos = (uint8_t)(w >> 20);
		p->flow_label = w & 0xfffffu;
		p->ttl = ip[7];
		p->ip_id = 0;
		p->dont_fragment = false;
		memcpy(p->sip, ip + 8, 16);
		memcpy(p->dip, ip + 24, 16);
	} else {
		p->tos = ip[1];
		p->flow_label = 0;
		p->ttl = ip[8];
		p->ip_id = roce_get_be16(ip + 4);
		p->dont_fragment = (ip[6] & 0x40) != 0;
		ipv4_mapped(p->sip, ip + 12);
		ipv4_mapped(p->dip, ip + 16);
	}
	p->sport = roce_get_be16(f + l4);
	p->dport = dport;

	p->opcode = b[0];
	p->se = (b[1] & 0x80) != 0;
	p->migreq = (b[1] & 0x40) != 0;
	p->pad = (uint8_t)pad;
	p->tver = 0;
	p->pkey = roce_get_be16(b + 2);
	p->fecn = (b[4] & 0x80) != 0;
	p->becn = (b[4] & 0x40) != 0;
	p->dqpn = roce_get_be32(b + 4) & ROCE_QPN_MASK;
	p->ackreq = (b[8] & 0x80) != 0;
	p->psn = roce_get_be32(b + 8) & ROCE_PSN_MASK;

	const uint8_t *off = info->offset;
	if (mask & ROCE_HAS(ROCE_HDR_DETH)) {
		const uint8_t *h = b + off[ROCE_HDR_DETH];
		p->deth.qkey = roce_get_be32(h);
		p->deth.src_qp = roce_get_be32(h + 4) & ROCE_QPN_MASK;
	}
	if (mask & ROCE_HAS(ROCE_HDR_RETH)) {
		const uint8_t *h = b + off[ROCE_HDR_RETH];
		p->reth.va = roce_get_be64(h);
		p->reth.rkey = roce_get_be32(h + 8);
		p->reth.dma_len = roce_get_be32(h + 12);
	}
	if (mask & ROCE_HAS(ROCE_HDR_ATOMETH)) {
		const uint8_t *h = b + off[ROCE_HDR_ATOMETH];
		p->atomic.va = roce_get_be64(h);
		p->atomic.rkey = roce_get_be32(h + 8);
		p->atomic.swap_add = roce_get_be64(h + 12);
		p->atomic.compare = roce_get_be64(h + 20);
	}
	if (mask & ROCE_HAS(ROCE_HDR_AETH)) {
		uint32_t w = roce_get_be32(b + off[ROCE_HDR_AETH]);
		p->aeth.syndrome = (uint8_t)(w >> 24);
		p->aeth.msn = w & 0xffffffu;
	}
	if (mask & ROCE_HAS(ROCE_HDR_ATOMACKETH))
		p->atomic_ack = roce_get_be64(b + off[ROCE_HDR_ATOMACKETH]);
	if (mask & ROCE_HAS(ROCE_HDR_IMMDT))
		p->imm = roce_get_be32(b + off[ROCE_HDR_IMMDT]);
	if (mask & ROCE_HAS(ROCE_HDR_IETH))
		p->ieth_rkey = roce_get_be32(b + off[ROCE_HDR_IETH]);

	p->l3_off = (uint16_t)l3;
	p->l4_off = (uint16_t)l4;
	p->bth_off = (uint16_t)bth;
	p->payload_off = (uint16_t)(bth + info->hdr_len);
	p->payload = f + p->payload_off;
	p->payload_len = rem - pad;
	p->frame_len = end;
	return UROCE_DROP_NONE;
}
