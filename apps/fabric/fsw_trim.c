/* SPDX-License-Identifier: MIT */
/* Packet trimming (Ultra Ethernet, NDP): a RoCEv2 packet that finds its
 * queue full is cut to its headers and sent on at strict priority with a
 * DSCP of its own, so the receiver learns of the loss at once (EQDS's
 * TRIMMED NACK) instead of by a timeout. The cut packet is a valid RoCEv2
 * packet without payload: lengths, pad and ICRC are written again. */
#include <string.h>

#include "apps/fabric/fsw_pkt.h"
#include "dataplane/wire.h"

/* BTH byte 1: SE(1) M(1) PadCnt(2) TVer(4) */
#define BTH_PAD_MASK 0x30u

uint32_t fsw_trim_len(const uint8_t *f, uint32_t len, const struct fsw_hdr *h)
{
	struct roce_pkt p;

	if (h->dport != ROCE_UDP_PORT)
		return 0;
	/* the slow path: only frames that found the queue full get here */
	if (roce_parse(f, len, &p, NULL) != UROCE_DROP_NONE || !p.payload_len)
		return 0;
	return (uint32_t)p.payload_off + ICRC_LEN;
}

void fsw_trim_write(const uint8_t *f, const struct fsw_hdr *h, uint32_t trimmed_len, uint8_t dscp, uint8_t *out)
{
	uint8_t *ip = out + h->l3, *udp = out + h->l4, *bth = udp + UDP_HDR_LEN;
	uint32_t ip_len = trimmed_len - h->l3, udp_len = trimmed_len - h->l4;

	memcpy(out, f, trimmed_len - ICRC_LEN);
	bth[1] &= (uint8_t)~BTH_PAD_MASK;
	roce_put_be16(udp + 4, (uint16_t)udp_len);
	roce_put_be16(udp + 6, 0);
	if (h->ipv6) {
		/* traffic class straddles bytes 0 and 1: DSCP is its top 6 bits */
		uint8_t tc = (uint8_t)(dscp << 2 | ((ip[1] >> 4) & 3u));

		ip[0] = (uint8_t)((ip[0] & 0xf0u) | tc >> 4);
		ip[1] = (uint8_t)((ip[1] & 0x0fu) | (tc & 0x0fu) << 4);
		roce_put_be16(ip + 4, (uint16_t)udp_len);
	} else {
		ip[1] = (uint8_t)(dscp << 2 | (ip[1] & 3u));
		roce_put_be16(ip + 2, (uint16_t)ip_len);
		ip[10] = 0;
		ip[11] = 0;
		roce_put_be16(ip + 10, ipv4_csum(ip, IPV4_HDR_LEN));
	}
	roce_put_le32(out + trimmed_len - ICRC_LEN, roce_icrc(ip, ip_len, h->ipv6));
}
