/* SPDX-License-Identifier: MIT */
/* ARP for IPv4 over Ethernet (RFC 826): building and parsing request and
 * reply frames, and a small fixed-size neighbour table. Used by backends
 * that own the whole link (DPDK) and so must answer and resolve themselves.
 */
#ifndef UROCE_DATAPLANE_ARP_H
#define UROCE_DATAPLANE_ARP_H

#include <stdbool.h>
#include <stdint.h>

#define ARP_ETHERTYPE 0x0806u
#define ARP_HDR_LEN 28u   /* htype, ptype, hlen, plen, op, sha, spa, tha, tpa */
#define ARP_FRAME_LEN 42u /* Ethernet header + ARP, before padding */
/* Frames shorter than this are padded: the Ethernet minimum without FCS. */
#define ARP_MIN_FRAME_LEN 60u

enum arp_op {
	ARP_OP_REQUEST = 1,
	ARP_OP_REPLY = 2,
};

/* One ARP message, addresses as on the wire (IPv4 in network order). */
struct arp_msg {
	uint16_t op;
	uint8_t sha[6];
	uint32_t spa_be;
	uint8_t tha[6];
	uint32_t tpa_be;
};

/* Why a frame with the ARP EtherType was not usable. */
enum arp_parse_result {
	ARP_OK = 0,
	ARP_SHORT,        /* frame ends inside the ARP header */
	ARP_UNSUPPORTED,  /* not Ethernet/IPv4 ARP, or an op other than 1/2 */
	ARP_NOT_ARP,      /* EtherType is not ARP */
};

/* EtherType ARP, untagged: the frames a port consumes itself. */
static inline bool arp_is_arp(const uint8_t *frame, uint32_t len)
{
	return len >= 14 && frame[12] == 0x08 && frame[13] == 0x06;
}

/* Parse an untagged Ethernet frame carrying ARP. Never reads past len. */
enum arp_parse_result arp_parse(const uint8_t *frame, uint32_t len, struct arp_msg *m);

/*
 * Write an Ethernet + ARP frame to buf: destination dmac, source m->sha,
 * zero padding up to ARP_MIN_FRAME_LEN. Returns the frame length, or
 * -ENOSPC when cap < ARP_MIN_FRAME_LEN.
 */
int arp_build(uint8_t *buf, uint32_t cap, const uint8_t dmac[6], const struct arp_msg *m);

/* A broadcast "who has tip? tell sip" from smac. Same returns as arp_build. */
int arp_build_request(uint8_t *buf, uint32_t cap, const uint8_t smac[6], uint32_t sip_be, uint32_t tip_be);

/* Neighbours: small, fixed, searched linearly (a port talks to a handful of
 * peers; 64 compares of a uint32 beat any hashing at this size). */
#define ARP_NEIGH_MAX 64u

struct arp_neigh {
	uint32_t ip_be; /* 0: free slot */
	uint8_t mac[6];
	uint64_t stamp; /* caller's clock when last confirmed; picks the victim */
};

struct arp_table {
	struct arp_neigh e[ARP_NEIGH_MAX];
};

/* Counters of what arp_input did, for a port's diagnostics. */
struct arp_stats {
	uint64_t requests_rx;  /* requests for our address */
	uint64_t replies_tx;   /* answers built in place */
	uint64_t replies_rx;   /* replies learned */
	uint64_t requests_tx;  /* requests sent while resolving */
	uint64_t ignored;      /* valid ARP that concerned someone else */
	uint64_t malformed;    /* ARP EtherType that did not parse */
};

void arp_table_init(struct arp_table *t);

/* Add or refresh ip -> mac; when full, replaces the least recently confirmed. */
void arp_table_learn(struct arp_table *t, uint32_t ip_be, const uint8_t mac[6], uint64_t now);

/* Refresh ip -> mac only if ip is already present (RFC 826's merge step). */
bool arp_table_update(struct arp_table *t, uint32_t ip_be, const uint8_t mac[6], uint64_t now);

/* Copy the MAC of ip into mac; false if unknown. */
bool arp_table_lookup(const struct arp_table *t, uint32_t ip_be, uint8_t mac[6]);

/* What arp_input decided about a frame. */
enum arp_action {
	ARP_ACTION_CONSUMED = 0, /* learned from or ignored; the frame may be freed */
	ARP_ACTION_REPLY,        /* the frame now holds our reply, *out_len bytes */
	ARP_ACTION_MALFORMED,    /* ARP EtherType but unusable; see *why */
};

/*
 * Handle one received ARP frame for the host (my_mac, my_ip_be), RFC 826:
 * a sender already in the table is refreshed; a sender addressing us is
 * learned; a request for my_ip_be is rewritten in place into the reply
 * (frame must have room for ARP_MIN_FRAME_LEN bytes, else it is only
 * learned from). my_ip_be == 0 answers nothing.
 */
enum arp_action arp_input(struct arp_table *t, struct arp_stats *st, const uint8_t my_mac[6],
			  uint32_t my_ip_be, uint8_t *frame, uint32_t len, uint32_t room,
			  uint64_t now, uint32_t *out_len, enum arp_parse_result *why);

#endif /* UROCE_DATAPLANE_ARP_H */
