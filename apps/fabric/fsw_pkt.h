/* SPDX-License-Identifier: MIT */
/* Header work of the switch on one frame: classify (fsw_pkt.c), rewrite
 * for forwarding and mark ECN (fsw_pkt.c), trim to headers (fsw_trim.c).
 * The switch's own; not part of its API. */
#ifndef UROCE_APPS_FABRIC_FSW_PKT_H
#define UROCE_APPS_FABRIC_FSW_PKT_H

#include <stdbool.h>
#include <stdint.h>

#include "apps/fabric/fsw.h"

/* Where the headers of a routable frame are. */
struct fsw_hdr {
	uint32_t l3;  /* IP header */
	uint32_t l4;  /* UDP header */
	uint32_t end; /* end of the IP packet (Ethernet padding may follow) */
	bool ipv6;
	uint16_t sport;
	uint16_t dport;
};

/* ECN codepoints (RFC 3168) in the low two bits of TOS / traffic class. */
#define FSW_ECN_NOT_ECT 0u
#define FSW_ECN_CE 3u

/* Check the frame is IPv4 (no fragment, a good header checksum) or IPv6
 * carrying UDP, whole. FSW_DROP_NONE and h, or the reason to drop it. */
enum fsw_drop fsw_hdr_parse(const uint8_t *f, uint32_t len, struct fsw_hdr *h);

static inline uint8_t fsw_hdr_ttl(const uint8_t *f, const struct fsw_hdr *h)
{
	return h->ipv6 ? f[h->l3 + 7] : f[h->l3 + 8];
}

static inline uint8_t fsw_hdr_ecn(const uint8_t *f, const struct fsw_hdr *h)
{
	return h->ipv6 ? (uint8_t)((f[h->l3 + 1] >> 4) & 3u) : (uint8_t)(f[h->l3 + 1] & 3u);
}

/* A RoCEv2 CNP: UDP 4791 with BTH opcode 0x81. */
bool fsw_hdr_is_cnp(const uint8_t *f, const struct fsw_hdr *h);

/* In the switch's copy: egress MACs, TTL - 1, CE when asked, and the IPv4
 * header checksum again. The ICRC masks TTL, TOS and the checksum, so it
 * stays valid. */
void fsw_hdr_forward(uint8_t *f, const struct fsw_hdr *h, const uint8_t dmac[6], const uint8_t smac[6], bool ce);

/*
 * Trimming (fsw_trim.c). fsw_trim_len: the length of the frame cut to its
 * Ethernet/IP/UDP/BTH and extension headers plus the ICRC, when f is a
 * valid RoCEv2 packet (ICRC checked: a switch must not vouch for a damaged
 * one) that carries payload; 0 otherwise (not trimmable). fsw_trim_write:
 * writes that frame into out, with IP and UDP lengths, no pad, DSCP dscp
 * (ECN kept) and a fresh ICRC.
 */
uint32_t fsw_trim_len(const uint8_t *f, uint32_t len, const struct fsw_hdr *h);
void fsw_trim_write(const uint8_t *f, const struct fsw_hdr *h, uint32_t trimmed_len, uint8_t dscp, uint8_t *out);

#endif /* UROCE_APPS_FABRIC_FSW_PKT_H */
