/* SPDX-License-Identifier: MIT */
/* Wire format of the sr and ec reliability modes, version 2 (docs/wire.md).
 *
 * Data: every packet is a UC "RDMA WRITE Only" or "RDMA WRITE Only with
 * Immediate" to the peer's data QPN, carrying its own RETH, so a NIC's UC
 * QP (or uroce) places it on arrival in any order. A plain WRITE goes
 * without immediate to the WR's (raddr + offset, rkey). Packets of a
 * message the receiver must match (SEND, WRITE with immediate, ec) carry
 * the immediate below; their RETH uses rkey 0, which addresses the
 * receiving QP's message space (va = byte offset in the message; parity:
 * parity index x MTU), or the WR's rkey for WRITE with immediate.
 *
 * Control: SEND Only to the peer's control QPN (its data QPN + 1), payload
 * = the control header + a type's body, all big endian. */
#ifndef UROCE_TRANSPORT_SR_WIRE_H
#define UROCE_TRANSPORT_SR_WIRE_H

#include <stdbool.h>
#include <stdint.h>

/* 2: the control header carries the receiving QP's token */
#define SRW_VERSION 2u

/* Immediate (host order): | msg 12 (slot 8 + generation 4) | kind 3 | idx 17 |
 * The 12-bit message number is the sender's message sequence number mod
 * 4096: its low 8 bits name the slot, the next 4 the generation, so a late
 * packet of a finished message never matches the slot's next message. */
#define SRW_MSG_BITS 12u
#define SRW_MSG_MASK ((1u << SRW_MSG_BITS) - 1)
#define SRW_KIND_BITS 3u
#define SRW_IDX_BITS 17u
#define SRW_IDX_MASK ((1u << SRW_IDX_BITS) - 1)

enum srw_kind {
	SRW_DATA = 0,      /* data packet idx of the message */
	SRW_LAST = 1,      /* the last data packet: the message has idx + 1 packets */
	SRW_LAST_DESC = 2, /* the last data packet of a message that also has a descriptor */
	SRW_DESC = 3,      /* the message's descriptor (SRW_DESC_LEN bytes) */
	SRW_PARITY = 4,    /* ec: parity packet idx = submessage x m + j */
	SRW_BE_WRITE = 5,  /* be: a packet of a plain WRITE, placed by its RETH; its message
	                    * number is the next one that takes a receive */
	SRW_BE_TAIL = 6,   /* be: a second copy of a message's last packet, so that losing the
	                    * tail rarely leaves the message to its deadline */
};

static inline uint32_t srw_imm(uint32_t msg, enum srw_kind kind, uint32_t idx)
{
	return (msg & SRW_MSG_MASK) << (SRW_KIND_BITS + SRW_IDX_BITS) | (uint32_t)kind << SRW_IDX_BITS |
	       (idx & SRW_IDX_MASK);
}
static inline uint32_t srw_imm_msg(uint32_t imm)
{
	return imm >> (SRW_KIND_BITS + SRW_IDX_BITS);
}
static inline uint32_t srw_imm_kind(uint32_t imm)
{
	return (imm >> SRW_IDX_BITS) & ((1u << SRW_KIND_BITS) - 1);
}
static inline uint32_t srw_imm_idx(uint32_t imm)
{
	return imm & SRW_IDX_MASK;
}

/* rkey 0: the receiving QP's message space (never a real key: key index 0
 * is never handed out). */
#define SRW_MSG_RKEY 0u

/* Descriptor: the receiver's metadata of a message, sent before its data
 * (and, for ec, once more after its parity). */
#define SRW_DESC_LEN 32u
/* Layout (bytes): 0 version, 1 WR opcode (SEND, SEND_WITH_IMM or
 * RDMA_WRITE_WITH_IMM), 2 flags (enum srw_desc_flag), 3 1 = carries
 * parity, 4-7 message length, 8-11 the WR's immediate as posted (network
 * order), 12-15 rkey and 16-23 raddr (WRITE with immediate), 24-27 PSN of
 * the message's first packet, 28-31 reserved; big endian. */
enum srw_desc_flag {
	SRW_DESC_IMM = 1,
	SRW_DESC_FENCE = 2, /* deliver (or count) it only once every PSN before its first has arrived */
};

/* Control header: | version 8 | type 8 | be16 length | be32 token |
 * length counts header and body. token is the receiving QP's random token
 * (uroce_qp_token), which its peer learnt at connect (attr.dest_token):
 * an off-path host that spoofs the peer's addresses and guesses the QPN
 * still has to guess 32 random bits before any control packet acts. */
#define SRW_CTRL_HDR_LEN 8u
enum srw_ctrl_type {
	SRW_CTRL_SACK = 1,
	SRW_CTRL_NACK = 2,
	SRW_CTRL_VOTE = 3, /* be: an adaptive-timeout proposal (tmo.c) */
	SRW_CTRL_TRIM = 4, /* trimmed packets: send them again now */
	SRW_CTRL_RTS = 5,  /* EQDS: request to send (what the sender wants credit for) */
	SRW_CTRL_PULL = 6, /* EQDS: the receiver's credit */
	SRW_CTRL_FO = 7,   /* failover: notice, probe and their answers (failover.h) */
	SRW_CTRL_SYNC = 8, /* be: the sender's next PSN, so a receiver out of step finds it again */
	SRW_CTRL_POOL = 9, /* verbs, rel.nic_rc: the sender's RC pool QPNs (rdma/verbs_seg.c) */
};

/* POOL body: be16 first pool index (>= 1; index 0 is the data QPN given
 * at connect), be16 n, be32 qpn[n]   (1 <= n <= SRW_POOL_MAX) */
#define SRW_POOL_FIXED 4u
#define SRW_POOL_MAX 32u

/* TRIM body: PSNs of data packets that arrived trimmed to their headers
 * (a switch's Ultra Ethernet trimming: DSCP SRW_TRIM_DSCP, payload cut):
 *   be16 n, be16 rsvd, be32 psn[n]   (1 <= n <= SRW_TRIM_MAX) */
#define SRW_TRIM_FIXED 4u
#define SRW_TRIM_MAX 32u
#define SRW_TRIM_DSCP 63u

/* RTS body (EQDS):
 *   be64 want   bytes the sender will have sent once its backlog is out (cumulative)
 *   be64 spec   speculative bytes it allowed itself without credit (cumulative)
 * PULL body:
 *   be64 credit bytes the receiver grants in all (cumulative; a lost PULL is
 *               made good by the next) */
#define SRW_RTS_LEN 16u
#define SRW_PULL_LEN 8u

/* VOTE body (be):
 *   be32 group_id   the collective's group
 *   be32 round      the exchange it belongs to
 *   be64 proposal   the member's proposed timeout, ns
 *   be32 flags      SRW_VOTE_ASK: the sender still lacks the receiver's vote */
#define SRW_VOTE_LEN 20u
enum srw_vote_flag { SRW_VOTE_ASK = 1 };

/* SYNC body (be):
 *   be32 psn        the PSN of the sender's next data packet */
#define SRW_SYNC_LEN 4u

/* SACK body: cumulative PSN, bitmap, message completion.
 *   be32 cum_psn    every PSN before it has arrived
 *   be32 msg_cum    every message before it is done (completed or given up)
 *   be32 msg_bits   bit i: message msg_cum + 1 + i is done too
 *   be32 dups       duplicates the receiver has seen (cumulative)
 *   be32 dup_psn    the PSN of the last one (a DSACK: if the sender had
 *                   retransmitted it, the retransmission was not needed)
 *   be32 msg_limit  receives are posted for every message before it (the
 *                   credits: a sender starts no message at or past it,
 *                   except one probe when nothing is in flight)
 *   be16 nbits      bitmap bits, a multiple of 32, at most SRW_SACK_MAX_BITS
 *   be16 hold       how long the receiver held the packet that asked for this
 *                   SACK before sending it (the endpoint delay Swift uses), in
 *                   units of 256 ns, saturating (0 = unknown; was reserved)
 *   bitmap          bit i (byte i/8, bit i%8) = PSN cum_psn + 1 + i arrived */
#define SRW_SACK_FIXED 28u
#define SRW_SACK_MAX_BITS 1024u
#define SRW_SACK_HOLD_SHIFT 8u

/* NACK body (ec): the submessages of one message that cannot be decoded.
 *   be32 msg        message sequence number
 *   be16 first_sub  bit i of the bitmap = submessage first_sub + i
 *   be16 nbits      a multiple of 32, at most SRW_NACK_MAX_BITS
 *   be32 flags      SRW_NACK_DESC: the descriptor never arrived
 *   bitmap */
#define SRW_NACK_FIXED 12u
#define SRW_NACK_MAX_BITS 1024u
enum srw_nack_flag { SRW_NACK_DESC = 1 };

/* Write the control header at b; returns the body. */
static inline uint8_t *srw_ctrl_hdr(uint8_t *b, enum srw_ctrl_type type, uint32_t len, uint32_t token)
{
	b[0] = SRW_VERSION;
	b[1] = (uint8_t)type;
	b[2] = (uint8_t)(len >> 8);
	b[3] = (uint8_t)len;
	b[4] = (uint8_t)(token >> 24);
	b[5] = (uint8_t)(token >> 16);
	b[6] = (uint8_t)(token >> 8);
	b[7] = (uint8_t)token;
	return b + SRW_CTRL_HDR_LEN;
}

/* The token of a received control payload (at least SRW_CTRL_HDR_LEN
 * bytes) against the QP's own, in constant time. */
static inline bool srw_ctrl_token_ok(const uint8_t *b, uint32_t mine)
{
	uint32_t got = (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];

	return (got ^ mine) == 0;
}

#endif /* UROCE_TRANSPORT_SR_WIRE_H */
