/* SPDX-License-Identifier: MIT */
/* IPv6 Neighbor Discovery over Ethernet (RFC 4861), the part a port that
 * owns its link (DPDK) needs to do itself: Neighbor Solicitation and
 * Advertisement frames built and parsed (ICMPv6 checksum, solicited-node
 * multicast), the in-place answer to a solicitation for our address, and a
 * small neighbour table. The IPv6 twin of arp.h.
 */
#ifndef UROCE_DATAPLANE_ND_H
#define UROCE_DATAPLANE_ND_H

#include <stdbool.h>
#include <stdint.h>

#define ND_ETHERTYPE_IPV6 0x86ddu
#define ND_ICMPV6 58u
#define ND_TYPE_NS 135u
#define ND_TYPE_NA 136u
/* Ethernet 14 + IPv6 40 + NS/NA 24 + one link-layer address option 8. */
#define ND_FRAME_LEN 86u
/* RFC 4861 7.1: ND is only accepted with the link's own hop limit. */
#define ND_HOP_LIMIT 255u
/* NA flags (first byte after the checksum) */
#define ND_NA_ROUTER 0x80u
#define ND_NA_SOLICITED 0x40u
#define ND_NA_OVERRIDE 0x20u

/* One NS or NA, addresses as on the wire. lladdr is the source link-layer
 * option of an NS or the target link-layer option of an NA. */
struct nd_msg {
	uint8_t type;        /* ND_TYPE_NS or ND_TYPE_NA */
	uint8_t flags;       /* NA: ND_NA_* */
	uint8_t smac[6];     /* Ethernet source */
	uint8_t src[16];     /* IPv6 source (:: for a DAD probe) */
	uint8_t dst[16];
	uint8_t target[16];
	bool has_lladdr;
	uint8_t lladdr[6];
};

enum nd_parse_result {
	ND_OK = 0,
	ND_SHORT,       /* ends inside the headers, or payload length disagrees */
	ND_INVALID,     /* RFC 4861 validation failed: hop limit, code, checksum, target */
	ND_NOT_ND,      /* not an untagged IPv6 ICMPv6 NS or NA */
};

/* Untagged IPv6 whose next header is ICMPv6 and type NS or NA: the frames
 * a port consumes itself. Cheap: a handful of byte compares. */
static inline bool nd_is_nd(const uint8_t *frame, uint32_t len)
{
	return len >= 55 && frame[12] == 0x86 && frame[13] == 0xdd && frame[20] == ND_ICMPV6 &&
	       (frame[54] == ND_TYPE_NS || frame[54] == ND_TYPE_NA);
}

/* Parse and validate (RFC 4861 7.1.1 / 7.1.2) an NS or NA frame. */
enum nd_parse_result nd_parse(const uint8_t *frame, uint32_t len, struct nd_msg *m);

/* The solicited-node multicast address of ip (ff02::1:ffXX:XXXX) and its
 * Ethernet multicast MAC (33:33:ff:XX:XX:XX). */
void nd_solicited_node(const uint8_t ip[16], uint8_t group[16], uint8_t mac[6]);

/* An NS from (smac, src) for target, to its solicited-node group, with a
 * source link-layer option. Returns ND_FRAME_LEN or -ENOSPC. */
int nd_build_ns(uint8_t *buf, uint32_t cap, const uint8_t smac[6], const uint8_t src[16],
                const uint8_t target[16]);

/* An NA for target from smac, to (dmac, dst), with flags and a target
 * link-layer option. Returns ND_FRAME_LEN or -ENOSPC. */
int nd_build_na(uint8_t *buf, uint32_t cap, const uint8_t smac[6], const uint8_t target[16], const uint8_t dmac[6],
                const uint8_t dst[16], uint8_t flags);

/* The ICMPv6 checksum (RFC 4443 2.3) of the ICMPv6 message at l4, len
 * bytes, between src and dst; over a message whose checksum field holds
 * the right value, it returns 0. */
uint16_t nd_icmp6_csum(const uint8_t src[16], const uint8_t dst[16], const uint8_t *l4, uint32_t len);

#define ND_NEIGH_MAX 64u

struct nd_neigh {
	uint8_t ip[16];
	uint8_t mac[6];
	bool used;
	bool complete;  /* false: we solicited it and wait for its NA */
	uint64_t stamp; /* caller's clock when last confirmed; picks the victim */
};

struct nd_table {
	struct nd_neigh e[ND_NEIGH_MAX];
};

struct nd_stats {
	uint64_t ns_rx;        /* solicitations for our address */
	uint64_t na_tx;        /* answers built in place */
	uint64_t na_rx;        /* advertisements learned */
	uint64_t ns_tx;        /* solicitations sent while resolving */
	uint64_t ignored;      /* valid ND about someone else */
	uint64_t malformed;    /* failed parsing or validation */
};

void nd_table_init(struct nd_table *t);
/* Add or refresh ip -> mac; when full, replaces the least recently confirmed. */
void nd_table_learn(struct nd_table *t, const uint8_t ip[16], const uint8_t mac[6], uint64_t now);
/* We are about to solicit ip: an incomplete entry that its NA may fill. */
void nd_table_solicit(struct nd_table *t, const uint8_t ip[16], uint64_t now);
/* The MAC of a complete entry for ip. */
bool nd_table_lookup(const struct nd_table *t, const uint8_t ip[16], uint8_t mac[6]);

enum nd_action {
	ND_ACTION_CONSUMED = 0, /* learned from or ignored; free the frame */
	ND_ACTION_REPLY,        /* the frame now holds our NA, *out_len bytes */
	ND_ACTION_MALFORMED,
};

/*
 * Handle one received NS/NA for the host my_mac with addresses my_ips[0..n):
 * an NA fills the entry of its target only when the table has one (we
 * solicited it, or learned it before), and changes a known MAC only with
 * the Override flag (RFC 4861 7.2.5); a solicited NA sent to a multicast
 * address is malformed (7.1.2). An NS for one of my_ips teaches its
 * source and is rewritten in place into the solicited NA (frame needs room
 * for ND_FRAME_LEN bytes). So no host on the link can fill the table, or
 * take over a known peer's address without an Override. A DAD probe (source ::) for our address is answered
 * to all-nodes, as RFC 4861 7.2.4 says.
 */
enum nd_action nd_input(struct nd_table *t, struct nd_stats *st, const uint8_t my_mac[6], const uint8_t (*my_ips)[16],
                        unsigned n_ips, uint8_t *frame, uint32_t len, uint32_t room, uint64_t now, uint32_t *out_len);

#endif /* UROCE_DATAPLANE_ND_H */
