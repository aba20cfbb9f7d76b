/* SPDX-License-Identifier: MIT */
/* RoCEv2 wire format: the opcode table, the packet descriptor, and the
 * builder and parser that read the table. Byte-exact with IBTA Vol. 1
 * Annex A17 and the Linux kernel's rdma_rxe.
 *
 * Layout of a frame:
 *   Ethernet [802.1Q] | IPv4 or IPv6 | UDP (dport 4791) | BTH | ext hdrs |
 *   payload | pad (0-3) | ICRC (4, little-endian)
 */
#ifndef UROCE_DATAPLANE_WIRE_H
#define UROCE_DATAPLANE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <endian.h>

#include <uroce/uroce.h>

#define ROCE_UDP_PORT 4791u

#define ETH_HDR_LEN 14u
#define VLAN_HDR_LEN 4u
#define IPV4_HDR_LEN 20u /* uroce never sends IP options and drops them */
#define IPV6_HDR_LEN 40u
#define UDP_HDR_LEN 8u
#define BTH_LEN 12u
#define RETH_LEN 16u
#define AETH_LEN 4u
#define IMMDT_LEN 4u
#define DETH_LEN 8u
#define IETH_LEN 4u
#define ATOMETH_LEN 28u
#define ATOMACKETH_LEN 8u
#define ICRC_LEN 4u
#define CNP_RSVD_LEN 16u /* CNP: BTH is followed by 16 reserved bytes, then ICRC */

#define ROCE_ETHERTYPE_IPV4 0x0800u
#define ROCE_ETHERTYPE_IPV6 0x86ddu
#define ROCE_ETHERTYPE_VLAN 0x8100u
#define ROCE_IPPROTO_UDP 17u

/* Largest header stack: Ethernet + VLAN + IPv6 + UDP + BTH + AtomicETH. */
#define ROCE_MAX_HDR_LEN (ETH_HDR_LEN + VLAN_HDR_LEN + IPV6_HDR_LEN + UDP_HDR_LEN + BTH_LEN + ATOMETH_LEN)

/* Extension headers an opcode carries, one bit each. */
enum roce_hdr {
	ROCE_HDR_RETH = 0,
	ROCE_HDR_AETH,
	ROCE_HDR_IMMDT,
	ROCE_HDR_DETH,
	ROCE_HDR_IETH,
	ROCE_HDR_ATOMETH,
	ROCE_HDR_ATOMACKETH,
	ROCE_HDR__COUNT
};

#define ROCE_HAS(h) (1u << (h))
#define ROCE_PAYLOAD (1u << 16) /* opcode may carry payload */
#define ROCE_REQ (1u << 17)     /* sent by a requester (vs. a response) */
#define ROCE_FIRST (1u << 18)
#define ROCE_MIDDLE (1u << 19)
#define ROCE_LAST (1u << 20)
#define ROCE_ONLY (ROCE_FIRST | ROCE_LAST)
#define ROCE_RSVD16 (1u << 21)  /* CNP: 16 reserved bytes follow the BTH */

/* BTH opcodes (upper 3 bits: transport; lower 5: operation). */
enum roce_transport {
	ROCE_TR_RC = 0x00,
	ROCE_TR_UC = 0x20,
	ROCE_TR_RD = 0x40,
	ROCE_TR_UD = 0x60,
	ROCE_TR_CNP = 0x80,
};

enum roce_opcode {
	ROCE_OP_SEND_FIRST = 0x00,
	ROCE_OP_SEND_MIDDLE = 0x01,
	ROCE_OP_SEND_LAST = 0x02,
	ROCE_OP_SEND_LAST_IMM = 0x03,
	ROCE_OP_SEND_ONLY = 0x04,
	ROCE_OP_SEND_ONLY_IMM = 0x05,
	ROCE_OP_WRITE_FIRST = 0x06,
	ROCE_OP_WRITE_MIDDLE = 0x07,
	ROCE_OP_WRITE_LAST = 0x08,
	ROCE_OP_WRITE_LAST_IMM = 0x09,
	ROCE_OP_WRITE_ONLY = 0x0a,
	ROCE_OP_WRITE_ONLY_IMM = 0x0b,
	ROCE_OP_READ_REQUEST = 0x0c,
	ROCE_OP_READ_RESP_FIRST = 0x0d,
	ROCE_OP_READ_RESP_MIDDLE = 0x0e,
	ROCE_OP_READ_RESP_LAST = 0x0f,
	ROCE_OP_READ_RESP_ONLY = 0x10,
	ROCE_OP_ACK = 0x11,
	ROCE_OP_ATOMIC_ACK = 0x12,
	ROCE_OP_CMP_SWAP = 0x13,
	ROCE_OP_FETCH_ADD = 0x14,
	ROCE_OP_SEND_LAST_INV = 0x16,
	ROCE_OP_SEND_ONLY_INV = 0x17,
	ROCE_OP_CNP = 0x81, /* RoCEv2 congestion notification packet */
};

/* One row per BTH opcode. Unused rows have name == NULL. */
struct roce_opcode_info {
	const char *name;                /* "RC_SEND_ONLY", as rxe names them */
	uint32_t mask;                   /* ROCE_HAS(...) | ROCE_PAYLOAD | ... */
	uint8_t hdr_len;                 /* BTH + all extension headers */
	uint8_t offset[ROCE_HDR__COUNT]; /* from the start of BTH; 0 = absent */
	uint8_t payload_offset;          /* == hdr_len */
};

extern const struct roce_opcode_info roce_opcode_table[256];

static inline const struct roce_opcode_info *roce_opcode_info(uint8_t op)
{
	return roce_opcode_table[op].name ? &roce_opcode_table[op] : NULL;
}

/* AETH syndromes (upper 3 bits select the kind). */
#define AETH_ACK 0x00u
#define AETH_RNR_NAK 0x20u
#define AETH_NAK 0x60u
#define AETH_NAK_PSN_SEQ_ERR 0x60u
#define AETH_NAK_INVALID_REQ 0x61u
#define AETH_NAK_REM_ACC_ERR 0x62u
#define AETH_NAK_REM_OP_ERR 0x63u
#define AETH_NAK_INV_RD_REQ 0x64u
#define AETH_ACK_UNLIMITED 0x1fu /* ACK, invalid credit count (rxe sends it) */

#define ROCE_PKEY_DEFAULT 0xffffu
#define ROCE_PSN_MASK 0xffffffu
#define ROCE_QPN_MASK 0xffffffu

/*
 * Everything in one RoCEv2 packet, host byte order. The builder reads it;
 * the parser fills it. Addresses: for IPv4 the address is in the last 4
 * bytes of sip/dip as an IPv4-mapped IPv6 address (::ffff:a.b.c.d), which
 * is also the RoCEv2 GID of that address.
 */
struct roce_pkt {
	/* Ethernet */
	uint8_t dmac[6];
	uint8_t smac[6];
	bool has_vlan;
	uint16_t vlan_tci; /* PCP(3) DEI(1) VID(12) */

	/* IP */
	bool ipv6;
	uint8_t sip[16];
	uint8_t dip[16];
	uint8_t tos;         /* DSCP << 2 | ECN (IPv4 TOS / IPv6 traffic class) */
	uint8_t ttl;         /* hop limit */
	uint16_t ip_id;      /* IPv4 identification */
	bool dont_fragment;  /* IPv4 DF bit (rxe sets it) */
	uint32_t flow_label; /* IPv6, 20 bits */

	/* UDP */
	uint16_t sport; /* path entropy */
	uint16_t dport; /* ROCE_UDP_PORT */

	/* BTH */
	uint8_t opcode;
	bool se;       /* solicited event */
	bool migreq;   /* migration state */
	uint8_t pad;   /* 0-3; the builder computes it, the parser reports it */
	uint8_t tver;  /* transport header version, 0 */
	uint16_t pkey;
	bool fecn;
	bool becn;
	uint32_t dqpn; /* 24 bits */
	bool ackreq;
	uint32_t psn;  /* 24 bits */

	/* extension headers, valid as the opcode's mask says */
	struct {
		uint64_t va;
		uint32_t rkey;
		uint32_t dma_len;
	} reth;
	struct {
		uint8_t syndrome;
		uint32_t msn; /* 24 bits */
	} aeth;
	uint32_t imm; /* ImmDt, as the 32-bit value on the wire (big-endian read) */
	struct {
		uint32_t qkey;
		uint32_t src_qp; /* 24 bits */
	} deth;
	uint32_t ieth_rkey;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add;
		uint64_t compare;
	} atomic;
	uint64_t atomic_ack; /* original remote value */

	/* payload: builder copies payload_len bytes from payload if non-NULL,
	 * else leaves the payload area as it is (already written in place). The
	 * parser points payload into the frame. */
	const uint8_t *payload;
	uint32_t payload_len;

	/* parser outputs: offsets into the frame */
	uint16_t l3_off;
	uint16_t l4_off;
	uint16_t bth_off;
	uint16_t payload_off;
	uint32_t frame_len; /* through the ICRC; Ethernet padding past it excluded */
	uint32_t icrc; /* as found in the frame (parser) or written (builder) */
};

/* Field access at any alignment (a frame may sit at any offset in a UMEM);
 * memcpy compiles to one load or store. 24-bit fields (QPN, PSN, MSN) are
 * the low 3 bytes of a big-endian 32-bit word. */
#define ROCE_ACCESSORS(name, type, to_host, to_wire)			\
	static inline type roce_get_##name(const uint8_t *b)		\
	{								\
		type v;							\
		memcpy(&v, b, sizeof(v));				\
		return to_host(v);					\
	}								\
	static inline void roce_put_##name(uint8_t *b, type v)		\
	{								\
		v = to_wire(v);						\
		memcpy(b, &v, sizeof(v));				\
	}

/* roce_get_be16/be32/be64/le32 and roce_put_be16/be32/be64/le32 */
ROCE_ACCESSORS(be16, uint16_t, be16toh, htobe16)
ROCE_ACCESSORS(be32, uint32_t, be32toh, htobe32)
ROCE_ACCESSORS(be64, uint64_t, be64toh, htobe64)
ROCE_ACCESSORS(le32, uint32_t, le32toh, htole32)

/* Bytes of headers in front of the payload for this packet (L2..ext hdrs),
 * or 0 for an unknown opcode. */
uint32_t roce_hdr_len(const struct roce_pkt *p);

/* Total frame length this packet builds to (headers, payload, pad, ICRC). */
uint32_t roce_frame_len(const struct roce_pkt *p);

/*
 * Build the frame for p into buf (cap bytes). Computes pad, the IP lengths,
 * the IPv4 header checksum and the ICRC. Returns the frame length, or
 * -EINVAL (unknown opcode, payload on an opcode that takes none, bad field)
 * or -ENOSPC (cap too small).
 */
int roce_build(uint8_t *buf, uint32_t cap, const struct roce_pkt *p);

/* Parser behaviour. */
struct roce_parse_opts {
	bool skip_icrc;        /* trust the ICRC (e.g. a NIC checked it) */
	uint16_t extra_port;   /* second accepted UDP dport (0 = none) */
};

/*
 * Parse frame[0..len). Never reads outside it. On success fills p (payload
 * points into frame) and returns UROCE_DROP_NONE; otherwise returns the
 * reason the frame was rejected. p's contents are unspecified on failure.
 */
enum uroce_drop_reason roce_parse(const uint8_t *frame, uint32_t len, struct roce_pkt *p,
                                  const struct roce_parse_opts *opts);

/* ICRC over an IP packet (l3 points at the IP header, l3_len includes the
 * trailing 4 ICRC bytes, which are not covered). Returns the CRC value that
 * is stored little-endian in the last 4 bytes. */
uint32_t roce_icrc(const uint8_t *l3, uint32_t l3_len, bool ipv6);

/* IPv4 header checksum of hdr[0..len) as stored (big-endian 16 bit): with
 * the checksum field zeroed it is the value to store; over a header with a
 * correct checksum in place it is 0. */
uint16_t ipv4_csum(const uint8_t *hdr, uint32_t len);

/* Fill an IPv4-mapped IPv6 address (also the RoCEv2 GID) from an IPv4
 * address in network byte order. */
void roce_ipv4_mapped(uint8_t out[16], uint32_t ipv4_be);

/* PSN arithmetic modulo 2^24: a - b as a signed 24-bit distance. */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

#endif /* UROCE_DATAPLANE_WIRE_H */
