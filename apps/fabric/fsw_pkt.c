/* SPDX-License-Identifier: MIT */
/* Classifying a frame for routing and rewriting its headers on the way
 * out (see fsw_pkt.h). */
#include <string.h>

#include "apps/fabric/fsw_pkt.h"
#include "dataplane/wire.h"

#define IPV4_MF 0x2000u
#define IPV4_OFFSET_MASK 0x1fffu

enum fsw_drop fsw_hdr_parse(const uint8_t *f, uint32_t len, struct fsw_hdr *h)
{
	uint32_t l3 = ETH_HDR_LEN;
	uint16_t etype;
	const uint8_t *ip;

	if (len < ETH_HDR_LEN)
		return FSW_DROP_PARSE;
	etype = roce_get_be16(f + 12);
	if (etype == ROCE_ETHERTYPE_VLAN) {
		/* the tag is kept: this router forwards within one VLAN */
		if (len < ETH_HDR_LEN + VLAN_HDR_LEN)
			return FSW_DROP_PARSE;
		etype = roce_get_be16(f + 16);
		l3 += VLAN_HDR_LEN;
	}
	ip = f + l3;
	if (etype == ROCE_ETHERTYPE_IPV4) {
		uint32_t ihl, tot;

		if (len - l3 < IPV4_HDR_LEN || ip[0] >> 4 != 4)
			return FSW_DROP_PARSE;
		ihl = (ip[0] & 0x0fu) * 4u;
		if (ihl < IPV4_HDR_LEN || ihl > len - l3 || ipv4_csum(ip, ihl) != 0)
			return FSW_DROP_PARSE;
		/* a fragment's UDP ports are not where they would be */
		if (roce_get_be16(ip + 6) & (IPV4_MF | IPV4_OFFSET_MASK))
			return FSW_DROP_PARSE;
		if (ip[9] != ROCE_IPPROTO_UDP)
			return FSW_DROP_NOT_UDP;
		tot = roce_get_be16(ip + 2);
		if (tot < ihl + UDP_HDR_LEN || tot > len - l3)
			return FSW_DROP_PARSE;
		h->ipv6 = false;
		h->l4 = l3 + ihl;
		h->end = l3 + tot;
	} else if (etype == ROCE_ETHERTYPE_IPV6) {
		uint32_t plen;

		if (len - l3 < IPV6_HDR_LEN || ip[0] >> 4 != 6)
			return FSW_DROP_PARSE;
		/* extension headers are not followed (RoCEv2 sends none) */
		if (ip[6] != ROCE_IPPROTO_UDP)
			return FSW_DROP_NOT_UDP;
		plen = roce_get_be16(ip + 4);
		if (plen < UDP_HDR_LEN || plen > len - l3 - IPV6_HDR_LEN)
			return FSW_DROP_PARSE;
		h->ipv6 = true;
		h->l4 = l3 + IPV6_HDR_LEN;
		h->end = h->l4 + plen;
	} else {
		return FSW_DROP_NOT_IP;
	}
	h->l3 = l3;
	h->sport = roce_get_be16(f + h->l4);
	h->dport = roce_get_be16(f + h->l4 + 2);
	return FSW_DROP_NONE;
}

bool fsw_hdr_is_cnp(const uint8_t *f, const struct fsw_hdr *h)
{
	return h->dport == ROCE_UDP_PORT && h->end - h->l4 >= UDP_HDR_LEN + BTH_LEN &&
	       f[h->l4 + UDP_HDR_LEN] == ROCE_OP_CNP;
}

void fsw_hdr_forward(uint8_t *f, const struct fsw_hdr *h, const uint8_t dmac[6], const uint8_t smac[6], bool ce)
{
	uint8_t *ip = f + h->l3;

	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	if (h->ipv6) {
		ip[7]--;
		if (ce)
			ip[1] |= FSW_ECN_CE << 4;
		return;
	}
	ip[8]--;
	if (ce)
		ip[1] |= FSW_ECN_CE;
	ip[10] = 0;
	ip[11] = 0;
	roce_put_be16(ip + 10, ipv4_csum(ip, h->l4 - h->l3));
}
