/* SPDX-License-Identifier: MIT */
/* Checksums on the wire: the RoCEv2 invariant CRC (ICRC) and the IPv4
 * header checksum. */
#include <isa-l/crc.h>

#include "dataplane/wire.h"

/*
 * The ICRC is CRC-32 with zlib's (reflected, Ethernet) polynomial over a
 * pseudo packet: 8 bytes of 0xff standing in for InfiniBand's masked LRH,
 * then the IP, UDP and BTH headers with the fields routers may change set
 * to all-ones, then the rest of the packet as it is up to the ICRC. Only
 * the first 8 + 60 bytes differ from the frame, so they are masked in a
 * stack copy and the CRC continues over the rest in place: the payload is
 * never copied. crc32_gzip_refl is zlib's crc32 (pre- and post-inverted,
 * chainable); ISA-L's crc32_ieee is the unreflected variant and would be
 * wrong here.
 */
#define LRH_MASK_LEN 8u

uint32_t roce_icrc(const uint8_t *l3, uint32_t l3_len, bool ipv6)
{
	uint8_t ps[LRH_MASK_LEN + IPV6_HDR_LEN + UDP_HDR_LEN + BTH_LEN];
	const uint32_t iphl = ipv6 ? IPV6_HDR_LEN : IPV4_HDR_LEN;
	const uint32_t n = iphl + UDP_HDR_LEN + BTH_LEN;
	uint8_t *ip = ps + LRH_MASK_LEN;
	uint8_t *udp = ip + iphl;
	uint8_t *bth = udp + UDP_HDR_LEN;
	uint32_t crc;

	/* Callers (the parser, the builder) have checked the length; this
	 * only keeps a misuse from reading out of bounds. */
	if (l3_len < n + ICRC_LEN)
		return 0;

	memset(ps, 0xff, LRH_MASK_LEN);
	memcpy(ip, l3, n);
	if (ipv6) {
		/* traffic class and flow label: everything after the version */
		ip[0] |= 0x0f;
		ip[1] = 0xff;
		ip[2] = 0xff;
		ip[3] = 0xff;
		ip[7] = 0xff; /* hop limit */
	} else {
		ip[1] = 0xff;  /* TOS (DSCP, ECN) */
		ip[8] = 0xff;  /* TTL */
		ip[10] = 0xff; /* header checksum */
		ip[11] = 0xff;
	}
	udp[6] = 0xff; /* UDP checksum */
	udp[7] = 0xff;
	bth[4] = 0xff; /* FECN, BECN, resv6a */

	crc = crc32_gzip_refl(0, ps, LRH_MASK_LEN + n);
	return crc32_gzip_refl(crc, l3 + n, l3_len - n - ICRC_LEN);
}

uint16_t ipv4_csum(const uint8_t *hdr, uint32_t len)
{
	/* One's-complement sums do not care about byte order, so add native
	 * 32-bit words and swap once at the end. */
	uint64_t sum = 0;
	uint32_t i = 0;

	if (len == IPV4_HDR_LEN) {
		/* every packet's header, built and checked: five words, no loop */
		uint32_t w[5];

		memcpy(w, hdr, sizeof(w));
		sum = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
		sum = (sum & 0xffffffffu) + (sum >> 32);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		return be16toh((uint16_t)~sum);
	}
	for (; i + 4 <= len; i += 4) {
		uint32_t w;
		memcpy(&w, hdr + i, 4);
		sum += w;
	}
	if (i + 2 <= len) {
		uint16_t w;
		memcpy(&w, hdr + i, 2);
		sum += w;
		i += 2;
	}
	if (i < len) {
		/* odd trailing byte: the high half of a big-endian word */
		uint16_t w = htobe16((uint16_t)(hdr[i] << 8));
		sum += w;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return be16toh((uint16_t)~sum);
}
