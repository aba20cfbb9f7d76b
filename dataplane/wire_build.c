/* SPDX-License-Identifier: MIT */
/* Building RoCEv2 frames from a struct roce_pkt: Ethernet, IP, UDP, BTH and
 * the extension headers the opcode table lists, then pad and ICRC. */
#include <errno.h>

#include "dataplane/wire.h"

#define IPV4_FLAG_DF 0x4000u
#define IPV6_FLOW_MASK 0xfffffu

static inline uint32_t l2_len(const struct roce_pkt *p)
{
	return ETH_HDR_LEN + (p->has_vlan ? VLAN_HDR_LEN : 0u);
}

static inline uint32_t l3_hdr_len(const struct roce_pkt *p)
{
	return p->ipv6 ? IPV6_HDR_LEN : IPV4_HDR_LEN;
}

static inline uint8_t pad_for(uint32_t payload_len)
{
	return (uint8_t)(-payload_len & 3u);
}

uint32_t roce_hdr_len(const struct roce_pkt *p)
{
	const struct roce_opcode_info *info = roce_opcode_info(p->opcode);

	if (!info)
		return 0;
	return l2_len(p) + l3_hdr_len(p) + UDP_HDR_LEN + info->hdr_len;
}

uint32_t roce_frame_len(const struct roce_pkt *p)
{
	uint32_t hdr = roce_hdr_len(p);

	if (!hdr)
		return 0;
	return hdr + p->payload_len + pad_for(p->payload_len) + ICRC_LEN;
}

void roce_ipv4_mapped(uint8_t out[16], uint32_t ipv4_be)
{
	memset(out, 0, 10);
	out[10] = 0xff;
	out[11] = 0xff;
	memcpy(out + 12, &ipv4_be, 4);
}

/* Slow path, kept out of roce_build's body: fields that do not fit their
 * wire width would be silently truncated, so refuse them instead. */
static bool fields_fit(const struct roce_pkt *p, uint32_t mask)
{
	if (p->dqpn > ROCE_QPN_MASK || p->psn > ROCE_PSN_MASK || p->tver != 0)
		return false;
	if (p->ipv6 && p->flow_label > IPV6_FLOW_MASK)
		return false;
	if ((mask & ROCE_HAS(ROCE_HDR_AETH)) && p->aeth.msn > 0xffffffu)
		return false;
	if ((mask & ROCE_HAS(ROCE_HDR_DETH)) && p->deth.src_qp > ROCE_QPN_MASK)
		return false;
	return true;
}

static void put_l2(uint8_t *b, const struct roce_pkt *p)
{
	memcpy(b, p->dmac, 6);
	memcpy(b + 6, p->smac, 6);
	if (p->has_vlan) {
		roce_put_be16(b + 12, ROCE_ETHERTYPE_VLAN);
		roce_put_be16(b + 14, p->vlan_tci);
		b += VLAN_HDR_LEN;
	}
	roce_put_be16(b + 12, p->ipv6 ? ROCE_ETHERTYPE_IPV6 : ROCE_ETHERTYPE_IPV4);
}

static void put_ipv4(uint8_t *ip, const struct roce_pkt *p, uint32_t ip_len)
{
	ip[0] = 0x45;
	ip[1] = p->tos;
	roce_put_be16(ip + 2, (uint16_t)ip_len);
	roce_put_be16(ip + 4, p->ip_id);
	roce_put_be16(ip + 6, p->dont_fragment ? IPV4_FLAG_DF : 0);
	ip[8] = p->ttl;
	ip[9] = ROCE_IPPROTO_UDP;
	ip[10] = 0;
	ip[11] = 0;
	memcpy(ip + 12, p->sip + 12, 4);
	memcpy(ip + 16, p->dip + 12, 4);
	roce_put_be16(ip + 10, ipv4_csum(ip, IPV4_HDR_LEN));
}

static void put_ipv6(uint8_t *ip, const struct roce_pkt *p, uint32_t ip_len)
{
	roce_put_be32(ip, 6u << 28 | (uint32_t)p->tos << 20 | p->flow_label);
	roce_put_be16(ip + 4, (uint16_t)(ip_len - IPV6_HDR_LEN));
	ip[6] = ROCE_IPPROTO_UDP;
	ip[7] = p->ttl;
	memcpy(ip + 8, p->sip, 16);
	memcpy(ip + 24, p->dip, 16);
}

static void put_bth(uint8_t *b, const struct roce_pkt *p, uint8_t pad)
{
	b[0] = p->opcode;
	b[1] = (uint8_t)((p->se ? 0x80 : 0) | (p->migreq ? 0x40 : 0) | pad << 4 | p->tver);
	roce_put_be16(b + 2, p->pkey);
	roce_put_be32(b + 4, (p->fecn ? 0x80000000u : 0) | (p->becn ? 0x40000000u : 0) | p->dqpn);
	roce_put_be32(b + 8, (p->ackreq ? 0x80000000u : 0) | p->psn);
}

/* Extension headers, each at the offset the opcode's row gives. */
static void put_ext(uint8_t *bth, const struct roce_pkt *p, const struct roce_opcode_info *info)
{
	const uint32_t m = info->mask;
	const uint8_t *off = info->offset;

	if (m & ROCE_HAS(ROCE_HDR_DETH)) {
		uint8_t *h = bth + off[ROCE_HDR_DETH];
		roce_put_be32(h, p->deth.qkey);
		roce_put_be32(h + 4, p->deth.src_qp); /* top byte reserved, 0 */
	}
	if (m & ROCE_HAS(ROCE_HDR_RETH)) {
		uint8_t *h = bth + off[ROCE_HDR_RETH];
		roce_put_be64(h, p->reth.va);
		roce_put_be32(h + 8, p->reth.rkey);
		roce_put_be32(h + 12, p->reth.dma_len);
	}
	if (m & ROCE_HAS(ROCE_HDR_ATOMETH)) {
		uint8_t *h = bth + off[ROCE_HDR_ATOMETH];
		roce_put_be64(h, p->atomic.va);
		roce_put_be32(h + 8, p->atomic.rkey);
		roce_put_be64(h + 12, p->atomic.swap_add);
		roce_put_be64(h + 20, p->atomic.compare);
	}
	if (m & ROCE_HAS(ROCE_HDR_AETH))
		roce_put_be32(bth + off[ROCE_HDR_AETH], (uint32_t)p->aeth.syndrome << 24 | p->aeth.msn);
	if (m & ROCE_HAS(ROCE_HDR_ATOMACKETH))
		roce_put_be64(bth + off[ROCE_HDR_ATOMACKETH], p->atomic_ack);
	if (m & ROCE_HAS(ROCE_HDR_IMMDT))
		roce_put_be32(bth + off[ROCE_HDR_IMMDT], p->imm);
	if (m & ROCE_HAS(ROCE_HDR_IETH))
		roce_put_be32(bth + off[ROCE_HDR_IETH], p->ieth_rkey);
	if (m & ROCE_RSVD16)
		memset(bth + BTH_LEN, 0, CNP_RSVD_LEN);
}

int roce_build(uint8_t *buf, uint32_t cap, const struct roce_pkt *p)
{
	const struct roce_opcode_info *info = roce_opcode_info(p->opcode);
	uint32_t l3, l4, bth, pay, ip_len, frame_len;
	uint8_t pad;

	if (!info)
		return -EINVAL;
	if (p->payload_len && !(info->mask & ROCE_PAYLOAD))
		return -EINVAL;
	if (!fields_fit(p, info->mask))
		return -EINVAL;

	pad = pad_for(p->payload_len);
	l3 = l2_len(p);
	l4 = l3 + l3_hdr_len(p);
	bth = l4 + UDP_HDR_LEN;
	pay = bth + info->hdr_len;
	/* 64-bit so a huge payload_len cannot wrap the checks below */
	uint64_t ip_len64 = (uint64_t)pay - l3 + p->payload_len + pad + ICRC_LEN;
	uint64_t ip_max = 0xffffu + (p->ipv6 ? IPV6_HDR_LEN : 0u);
	if (ip_len64 > ip_max)
		return -EINVAL;
	ip_len = (uint32_t)ip_len64;
	frame_len = l3 + ip_len;
	if (frame_len > cap)
		return -ENOSPC;

	put_l2(buf, p);
	if (p->ipv6)
		put_ipv6(buf + l3, p, ip_len);
	else
		put_ipv4(buf + l3, p, ip_len);

	roce_put_be16(buf + l4, p->sport);
	roce_put_be16(buf + l4 + 2, p->dport ? p->dport : ROCE_UDP_PORT);
	roce_put_be16(buf + l4 + 4, (uint16_t)(ip_len - (l4 - l3)));
	roce_put_be16(buf + l4 + 6, 0); /* as rxe and ConnectX send it; the ICRC covers the rest */

	put_bth(buf + bth, p, pad);
	put_ext(buf + bth, p, info);

	if (p->payload && p->payload_len && p->payload != buf + pay)
		memmove(buf + pay, p->payload, p->payload_len);
	memset(buf + pay + p->payload_len, 0, pad);

	roce_put_le32(buf + frame_len - ICRC_LEN, roce_icrc(buf + l3, ip_len, p->ipv6));
	return (int)frame_len;
}
