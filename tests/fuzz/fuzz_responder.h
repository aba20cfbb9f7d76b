/* SPDX-License-Identifier: MIT */
/* What the files of the responder fuzz target share: the layout of the
 * guarded memory, the QPs, the command encodings, the state of the forged
 * peers, the input reader, and the helpers the command files call. The
 * target itself is described in fuzz_responder.c. */
#ifndef FUZZ_RESPONDER_H
#define FUZZ_RESPONDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port.h"
#include "dataplane/port_loop.h"
#include "dataplane/wire.h"
#include "transport/rel/sr/ec_code.h"
#include "transport/core/qp_internal.h"
#include "transport/rel/be/rel_be.h"
#include "transport/rel/sr/rel_sr.h"
#include "transport/rel/sr/sr_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* Layout of the guarded memory: G A G B1 G B2 G C G D G E G. A is the
 * RDMA target (full remote access), B1+B2 the two SGEs of every receive
 * WQE, C the local buffer of the RC QP's own READs and atomics, D a
 * read-only region, E a region of another PD. Sizes keep every area
 * 8-byte aligned (atomics). */
/* the raw peer's token: our QPs' control packets to it carry it */
#define FZ_PEER_TOKEN 0x5eed7043u
#define GUARD 4096u
#define A_LEN 16384u
#define B1_LEN 1504u
#define B2_LEN 2000u
#define C_LEN 4096u
#define D_LEN 4096u
#define E_LEN 4096u
enum area { AREA_A, AREA_B1, AREA_B2, AREA_C, AREA_D, AREA_E, AREA__COUNT };
static const uint32_t area_len[AREA__COUNT] = { A_LEN, B1_LEN, B2_LEN, C_LEN, D_LEN, E_LEN };

/* Bounds per input: commands decoded, and progress passes per command. */
#define MAX_CMDS 96u
#define STEPS_PER_PKT 1u
#define SETTLE_STEPS 64u
#define RECV_DEPTH 16u
#define MAX_PAYLOAD 4200u /* past the largest path MTU: the loop MTU is 4096 + headers */

/* The raw peer and the port it talks to. QPs are connected to the raw
 * port's address as their remote GID. */
#define CTX_PORT 0u
#define RAW_PORT 1u
#define PEER_QPN 0x99u
#define UD_QKEY 0x42u

/* QP_SR, QP_EC and QP_BE are connected RC QPs with reliability sr, ec and
 * be: each takes two QPNs (data, and data + 1 for control) and sends UC
 * opcodes. The structured packet commands address the first NQP_IB only;
 * fz.sr[] has an entry for QP_SR and QP_EC only (is_sr), QP_BE has fz.be. */
enum { QP_RC, QP_UC, QP_UD, QP_SR, QP_EC, QP_BE, NQP };
#define NQP_IB 3u
static const enum uroce_qp_type qp_type[NQP] = { UROCE_QPT_RC, UROCE_QPT_UC, UROCE_QPT_UD, UROCE_QPT_RC,
	                                         UROCE_QPT_RC, UROCE_QPT_RC };
static const uint8_t qp_tr[NQP] = { ROCE_TR_RC, ROCE_TR_UC, ROCE_TR_UD, ROCE_TR_UC, ROCE_TR_UC, ROCE_TR_UC };
/* RC at 1024, UC at 256 (long messages cheaply), UD up to 1024; sr, ec and
 * be at 256, so a receive buffer takes messages of up to 13 packets and ec
 * submessages are short */
static const enum uroce_mtu qp_mtu_enum[NQP] = { UROCE_MTU_1024, UROCE_MTU_256, UROCE_MTU_1024, UROCE_MTU_256,
	                                         UROCE_MTU_256, UROCE_MTU_256 };
static const uint32_t qp_mtu[NQP] = { 1024, 256, 1024, 256, 256, 256 };
/* The peer's QPN each QP is connected to: the sr, ec and be QPs get their
 * own, so the raw port tells their packets apart (control goes to it + 1). */
static const uint32_t peer_qpn[NQP] = { PEER_QPN, PEER_QPN, PEER_QPN, 0x200, 0x300, 0x400 };

static inline bool is_sr(unsigned qi)
{
	return qi == QP_SR || qi == QP_EC;
}

/* sr and ec: a window of 32 packets (the receiver's PSN bitmap is twice
 * the sender's ring: 64), ec with RS 4+2 so short inputs decode, a
 * fallback timeout of 20 us (a time jump brings NACKs). */
#define SR_WINDOW 32u
#define SR_RX_BITS 64u
#define EC_K 4u
#define EC_M 2u
#define EC_FTO_US 20u
#define SR_MSG_WINDOW 64u /* the receiver's message slots */
#define SR_RECV_LEN (B1_LEN + B2_LEN)

/* be: a deadline of 50 us for every WR that names none (a time jump ends
 * receives), restored before every input (a VOTE exchange may change it);
 * one adaptive-timeout group over the QP, so that VOTEs find one. */
#define BE_TMO_US 50u
#define BE_GROUP 7u
#define BE_RECV_LEN (B1_LEN + B2_LEN) /* every be receive posted: B1 and B2 */

/* Operations of each transport (low 5 bits), as the opcode table has them. */
static const uint8_t rc_ops[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
	                          0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17 };
static const uint8_t uc_ops[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b };
static const uint8_t ud_ops[] = { 0x04, 0x05 };

/* Command kinds: the low 4 bits of a command byte. */
enum cmd {
	CMD_PKT_LAST = 8,  /* 0..8: one structured packet */
	CMD_MSG = 9,       /* 9, 10: a multi-packet message */
	CMD_MSG2 = 10,
	CMD_RAW = 11,      /* raw frame bytes */
	CMD_RAW_L4 = 12,   /* valid Ethernet/IP/UDP, raw BTH and after, ICRC fixed */
	CMD_POST = 13,     /* a local work request on the RC or UC QP */
	CMD_TIME = 14,     /* a jump of simulated time */
	CMD_REVOKE = 15,   /* then a byte: 0 mod 4 deregisters region A or registers it again, else a packet */
};

/* be commands: a command byte with the top bit set and a low nibble of 10
 * (0x8a, 0x9a, ... 0xfa: bytes CMD_MSG2 had, a second value of CMD_MSG,
 * which keeps the bytes 0x0a..0x7a). Bits 4-6 are the command. */
#define BE_CMD_MASK 0x8fu
#define BE_CMD_BITS 0x8au
enum be_cmd {
	BE_PKT = 0,     /* one forged data packet (kind 0..7, any message number, key, va, length, PSN) */
	BE_PKT_RE = 1,  /* the same, then a copy of it under the next PSN (the same index twice) */
	BE_MSG = 2,     /* a whole message in the sender's layout, shuffled, some lost or duplicated */
	BE_MSG_LATE = 3, /* the same, then, past the deadline, late copies of its first and tail packets */
	BE_VOTE = 4,    /* a VOTE to the control QPN with fuzzer fields and header flaws */
	BE_CTRL = 5,    /* a control packet of raw bytes */
	BE_POST = 6,    /* a local SEND / WRITE / WRITE_WITH_IMM (or one refused) with a deadline */
	BE_TMO = 7,     /* the local member exchanges its proposal (its VOTEs go out), or a warm-up */
};

/* sr/ec commands: a command byte with both top bits set and low bits 0..7
 * (the other bytes keep the meanings above; the low 4 bits of these alone
 * would be one structured packet). Bit 5 picks the QP (0 sr, 1 ec), bit 4
 * is a variant bit of the command, bits 0..2 the command. */
#define SR_CMD_MASK 0xc8u
#define SR_CMD_BITS 0xc0u
enum sr_cmd {
	SR_PKT = 0,    /* one data packet: WRITE Only (with Immediate), any kind, key, va, length, PSN */
	SR_DESC = 1,   /* one descriptor (kind 3) */
	SR_PARITY = 2, /* one parity packet (kind 4) */
	SR_MSG = 3,    /* a whole message, packets shuffled, some lost, sometimes one flaw */
	SR_SACK = 4,   /* a SACK to the QP's sender */
	SR_NACK = 5,   /* a NACK to the QP's sender */
	SR_POST = 6,   /* a local SEND/WRITE (with immediate) on the QP */
	SR_CTRL = 7,   /* a control packet of raw bytes, or another opcode to the control QPN */
};

/* Congestion notification and control commands: a command byte
 * with the top bit set and a low nibble of 8 (0x88, 0x98, ... 0xf8: bytes a
 * structured packet had, which keeps 0x08..0x78). Bits 4-6 are the
 * command; each reads a selector byte for its QP and variant. */
#define CC_CMD_MASK 0x8fu
#define CC_CMD_BITS 0x88u
enum cc_cmd {
	CC_CNP = 0,     /* a CNP (opcode 0x81) to any QP, data or control QPN, any PSN and addressing */
	CC_TOS = 1,     /* the IP TOS (DSCP, ECN: CE) of the next command's packets; a bit sends them in one burst */
	CC_TRIMMED = 2, /* the next command's packets with a RETH arrive trimmed: payload cut, DSCP 63 */
	CC_TRIM = 3,    /* a TRIM to the sr/ec sender: PSNs in flight, stale, ahead, any; n and length flaws */
	CC_RTS = 4,     /* an RTS to the sr/ec receiver: counts that grow, go back, spec past want, huge; short */
	CC_PULL = 5,    /* a PULL to the sr/ec sender: credit against what it asked for, past it, any; short */
	CC_CTRL = 6,    /* a TRIM, RTS or PULL of raw bytes to the sr, ec or be control QPN */
	CC_RESET = 7,   /* the application resets or re-creates the sr/ec QP (it may wait in its port's pacer) */
};
#define SETUP_SR_EQDS 0x80u /* setup byte: QP_SR is the twin that runs EQDS */

struct fuzz_stats {
	uint64_t inputs, cmds, pkts;
	uint64_t recv_ok, recv_multi, write_imm_multi, a_changed, qp_errs, send_wc, read_resp_bytes;
	uint64_t local_reads_done;
	/* sr (0) and ec (1) */
	uint64_t sr_cmds[2], sr_recv_ok[2], sr_recv_multi[2], sr_recv_err[2], sr_send_ok[2], sr_qp_errs[2];
	uint64_t sr_verified[2]; /* completed messages whose bytes were checked */
	uint64_t sr_partial[2], sr_precv_given[2], sr_streams[2];
	uint64_t sr_top_chunks; /* sr handles in the last slot that got packets with the top index */
	uint64_t ec_rebuilt_verified; /* ... of them ec messages with rebuilt packets */
	/* be */
	uint64_t be_cmds, be_recv_ok, be_recv_partial, be_recv_timeout, be_recv_preempted, be_recv_err;
	uint64_t be_recv_imm, be_verified, be_send_ok, be_send_timeout, be_qp_errs, be_votes_ok;
	/* congestion notification and control */
	uint64_t cc_cmds, cnps_checked, eqds_inputs, eqds_checked, qp_recreated;
};

/* The forged peer of the be QP: its sending side, and what it saw the QP
 * complete. */
struct be_peer {
	uint32_t rx_psn;   /* next data PSN it sends */
	uint32_t rx_msg;   /* next message number that takes a receive */
	uint32_t ctrl_psn; /* next PSN of its control packets */
	uint64_t wc_ok;    /* receive completions of the QP (not flushed), and the last one's */
	uint32_t wc_len, wc_flags;
	int wc_status, wc_opcode;
	uint64_t touched[(SRW_MSG_MASK + 1) / 64]; /* message numbers single packets used */
};

/* What the forged peer of an sr/ec QP knows: its own sending side (to the
 * QP's receiver) and what the QP's sender sent it. */
struct sr_peer {
	uint32_t rx_psn;    /* next data PSN it sends */
	uint32_t rx_msg;    /* next message number it sends */
	uint32_t ctrl_psn;  /* next PSN of its control packets */
	uint32_t dups;      /* duplicates its SACKs report */
	uint32_t tx_psn0;   /* the QP's first send PSN */
	uint32_t tx_nxt;    /* one past the newest data PSN the QP sent */
	uint32_t tx_msgs;   /* messages posted on the QP that take a receiver slot */
	uint64_t wc_ok;     /* successful receive completions of the QP, and the last one's length */
	uint32_t wc_len;
	bool wc_partial;    /* ... and whether it was a partial completion */
	struct uroce_precv *precv[8]; /* receive handles posted and not given back, oldest first */
	unsigned nprecv;
	struct uroce_pstream *stream; /* a stream whose end did not fit in the send queue yet */
	uint64_t touched[(SRW_MSG_MASK + 1) / 64]; /* message numbers single packets used */
	uint64_t rts_want, rts_spec; /* EQDS: what it asked the QP's receiver for (cumulative) */
	uint64_t asked;     /* the largest want the QP's own RTSs carried */
};

struct fz_state {
	bool ready;
	struct loop_fabric *fab;
	struct uroce_context *ctx;
	struct port *raw;
	struct uroce_pd *pd, *pd2;
	struct uroce_cq *scq, *rcq;
	struct uroce_qp *qp[NQP];
	struct uroce_mr *mr[AREA__COUNT];
	uint32_t revoked_rkey;
	uint8_t *mem, *shadow, *a_snap;
	size_t mem_len;
	size_t off[AREA__COUNT];
	uint8_t sgid_v4;     /* the port's GID of its IPv4 address */
	uint8_t ctx_gid6[16]; /* and an IPv6 one, when it has one */
	bool have_gid6;
	bool refill[NQP];
	uint32_t base_psn;
	/* READ requests sent to the RC QP in this input (a ring) */
	struct sent_read {
		uint32_t psn, len;
		uint64_t va;
	} reads[64];
	unsigned nreads;
	struct sr_peer sr[2]; /* of QP_SR, QP_EC */
	struct be_peer be;    /* of QP_BE */
	struct uroce_tmo *tmo; /* the adaptive-timeout group over QP_BE */
	bool settling;         /* reset_all: be receives the last input left end by deadline (checked, not counted) */
	struct ec_code code;  /* the peer's encoder: RS 4+2, as the ec QP */
	struct uroce_qp *sr_twin[2]; /* QP_SR without, and with EQDS; fz.qp[QP_SR] is one of them */
	bool raw_token;              /* the next control packet keeps the input's token bytes */
	/* what CC_TOS / CC_TRIMMED set for the next command's packets */
	uint8_t tos_next;
	bool burst_next, mod_fresh;
	int trim_next;       /* -1, or how much of a payload is left (mod its length) */
	/* the CNPs each QP sent: its counter and the engine's date of the last */
	uint64_t cnp_seen[NQP], cnp_date[NQP];
	bool cnp_dated[NQP];
	struct uroce_qp_stats gone[NQP]; /* counters of the QPs CC_RESET destroyed */
	struct fuzz_stats st;
};

extern struct fz_state fz;

/* ---- the input reader: past the end it reads zeros ---- */

struct reader {
	const uint8_t *p;
	size_t n, at;
};

static inline uint8_t rd8(struct reader *r)
{
	return r->at < r->n ? r->p[r->at++] : 0;
}

static inline uint16_t rd16(struct reader *r)
{
	uint16_t v = rd8(r);
	return (uint16_t)(v | rd8(r) << 8);
}

static inline uint32_t rd32(struct reader *r)
{
	uint32_t v = rd16(r);
	return v | (uint32_t)rd16(r) << 16;
}

/* Receive handles whose chunk indexes reach the top of the message's
 * 2^17 packets (CC_RESET bit 2) need a buffer that long at the sr MTU:
 * mapped on demand, outside the guard-checked areas, written only by
 * such messages. */
#define BIG_LEN ((1u << SRW_IDX_BITS) * 256u + 65536u)

/* A mode's commands: the command bytes c with (c & mask) == bits; run()
 * decodes the rest of the command from the input and sends it. */
struct fz_mode {
	uint8_t mask, bits;
	void (*run)(struct reader *r, uint8_t cmd);
};

extern const struct fz_mode fz_mode_ib, fz_mode_sr, fz_mode_be, fz_mode_cc;

/* fuzz_responder.c: setup, sending, time, the guard check */
void die(const char *what);
uint8_t *area(enum area a);
uint64_t area_va(enum area a);
void bring_up(unsigned i);
void post_recvs(unsigned i);
extern uint8_t *fz_big;
extern struct uroce_mr *fz_big_mr;
extern uint32_t fz_chunk_next;
void setup(void);
struct uroce_qp *new_qp(unsigned i, bool eqds);
extern const struct roce_parse_opts trust_icrc;
void step(uint64_t ns);
void revoke_toggle(void);
void fill_payload(uint8_t *p, uint32_t len, uint32_t seed);
void pkt_init(struct roce_pkt *p, unsigned qi);
void pkt_addressing(struct roce_pkt *p, uint8_t flags);
bool flags_bad_icrc(uint8_t flags);
bool send_pkt(const struct roce_pkt *p, bool bad_icrc);
void send_bytes(const uint8_t *b, uint32_t len);
void local_sges(struct uroce_send_wr *wr, struct uroce_sge sg[2], uint32_t length, uint8_t off, bool split);
void qp_psns(unsigned qi, uint32_t *epsn, uint32_t *snd_nxt);
void pick_key(uint8_t sel, struct reader *r, uint32_t *rkey, uint64_t *base, uint64_t *len);
uint64_t pick_va(uint8_t mode, uint16_t off, uint64_t base, uint64_t len);

/* fuzz_cmd_sr.c: the forged peer of the sr and ec QPs */
void note_sr_sent(const uint8_t *frame, uint32_t len);
void sr_wc(unsigned i, const struct uroce_wc *wc);
struct sr_peer *peer_of(unsigned qi);
void fill_msg(uint8_t *p, uint32_t len, uint32_t seed);
void touch(unsigned qi, uint32_t msg);
void put_desc(uint8_t *d, uint8_t version, uint8_t op, uint8_t ec, uint32_t len, uint32_t imm, uint32_t rkey,
              uint64_t raddr, uint32_t first_psn);
uint32_t xorshift32(uint32_t *s);
void check_bytes(const uint8_t *now, const uint8_t *want, uint32_t len, const char *what, unsigned qi,
                 uint32_t msg);
void fz_send_ctrl(unsigned qi, const uint8_t *b, uint32_t len, uint8_t op, uint8_t flags, bool to_data);
uint32_t ctrl_hdr(uint8_t *b, uint8_t type, uint32_t len, uint8_t flags, uint8_t cut);
void sr_release(unsigned qi);

/* fuzz_cmd_be.c */
void be_wc(const struct uroce_wc *wc);
void be_send_wc(const struct uroce_wc *wc);

/* fuzz_cmd_cc.c */
void note_rts(const uint8_t *frame, uint32_t len);
void cnp_check(void);
void eqds_check(void);
void sr_twin_pick(bool eqds);
void cmd_cc_reset(struct reader *r);

/* fuzz_seeds.c (the standalone driver only) */
int write_corpus(const char *dir);

#endif
