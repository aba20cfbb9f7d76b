/* SPDX-License-Identifier: MIT */
/* The responder fuzz target's seed corpus: one input per path worth
 * starting from, written by fuzz_standalone --write-corpus DIR. */
#include <errno.h>

#include "fuzz_responder.h"

struct seed {
	uint8_t b[512];
	size_t n;
};

static void put(struct seed *s, const void *p, size_t n)
{
	if (s->n + n > sizeof(s->b)) {
		fprintf(stderr, "fuzz_responder: seed too long\n");
		exit(1);
	}
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void put8(struct seed *s, uint8_t v)
{
	put(s, &v, 1);
}

static void put16(struct seed *s, uint16_t v)
{
	put8(s, (uint8_t)v);
	put8(s, (uint8_t)(v >> 8));
}

static void put32(struct seed *s, uint32_t v)
{
	put16(s, (uint16_t)v);
	put16(s, (uint16_t)(v >> 16));
}

/* opcode index into the QP's own table (opsel < 48) */
static uint8_t op_index(unsigned qi, uint8_t op)
{
	const uint8_t *ops = qi == QP_RC ? rc_ops : qi == QP_UC ? uc_ops : ud_ops;
	unsigned nops = qi == QP_RC ? sizeof(rc_ops) : qi == QP_UC ? sizeof(uc_ops) : sizeof(ud_ops);

	for (unsigned k = 0; k < nops; k++)
		if (ops[k] == op)
			return (uint8_t)k;
	fprintf(stderr, "fuzz_responder: no op %#x for QP %u\n", op, qi);
	exit(1);
}

struct pkt_spec {
	unsigned qi;
	uint8_t op;      /* low 5 bits, from the QP's table */
	uint8_t psnsel, keysel, lensel, flags, syn, qkeysel;
	uint16_t vaoff, msn;
	uint32_t imm, swap, cmp;
};

static void put_pkt(struct seed *s, const struct pkt_spec *k)
{
	put8(s, 0); /* CMD: structured packet */
	put8(s, (uint8_t)(op_index(k->qi, k->op) << 2 | k->qi)); /* qi = (t & 3) % 3 */
	put8(s, k->psnsel);
	put8(s, k->keysel);
	put16(s, k->vaoff);
	put8(s, k->lensel);
	put8(s, k->flags);
	put32(s, k->imm);
	put8(s, k->syn);
	put8(s, k->qkeysel);
	put16(s, k->msn);
	put32(s, k->swap);
	put32(s, k->cmp);
}

/* keysel: rkey choice (0..7) | va mode << 3 */
#define KEY(rk, vam) ((uint8_t)((rk) | (vam) << 3))
/* lensel: payload mode | dma mode << 3 */
#define LEN(pl, dm) ((uint8_t)((pl) | (dm) << 3))

static void put_msg(struct seed *s, unsigned qi, bool write, bool imm, unsigned flaw, uint8_t n, uint16_t lastlen,
                    uint16_t vaoff)
{
	put8(s, CMD_MSG);
	put8(s, (uint8_t)((qi == QP_UC) | write << 1 | imm << 2 | flaw << 3));
	put8(s, n);
	put16(s, lastlen);
	put16(s, vaoff);
}

static void put_pkt_simple(struct seed *s, unsigned qi, uint8_t op, uint8_t keysel, uint16_t vaoff, uint8_t lensel,
                           uint8_t flags)
{
	struct pkt_spec k = { .qi = qi, .op = op, .keysel = keysel, .vaoff = vaoff, .lensel = lensel,
		              .flags = flags, .qkeysel = 1, .imm = 0x1234, .swap = 5, .cmp = 2 };

	put_pkt(s, &k);
}

/* sr/ec command bytes and their fields (cmd_sr_*) */
static uint8_t srcmd(unsigned qi, bool v, enum sr_cmd c)
{
	return (uint8_t)(0xc0 | (qi == QP_EC ? 0x20 : 0) | (v ? 0x10 : 0) | c);
}

struct sr_msg_spec {
	unsigned qi;
	bool late;
	uint8_t optype, loss, flaw, n;
	uint16_t lastsel, vaoff, order;
	uint32_t dropd;
	uint8_t dropo, dup, msgsel, flags;
};

static void put_sr_msg(struct seed *s, const struct sr_msg_spec *m)
{
	put8(s, srcmd(m->qi, m->late, SR_MSG));
	put8(s, (uint8_t)(m->optype | m->loss << 2 | m->flaw << 4));
	put8(s, m->n);
	put16(s, m->lastsel);
	put16(s, m->vaoff);
	put16(s, m->order);
	put32(s, m->dropd);
	put8(s, m->dropo);
	put8(s, m->dup);
	put8(s, m->msgsel);
	put8(s, m->flags);
}

/* opsel: bits 0-2 the opcode (0 WRITE Only with Immediate, 5 WRITE Only,
 * 6 another, 7 to the control QPN), bits 3-5 the kind (0 data, 3 last,
 * 4 last with descriptor, 5 descriptor, 6 parity, 7 reserved) */
#define OPK(op, k) ((uint8_t)((op) | (k) << 3))
struct sr_pkt_spec {
	unsigned qi;
	bool twice;
	uint8_t psnsel, opsel, msgsel;
	uint16_t idx;
	uint8_t keysel;
	uint16_t vaoff;
	uint8_t lensel, flags;
};

static void put_sr_pkt(struct seed *s, const struct sr_pkt_spec *k)
{
	put8(s, srcmd(k->qi, k->twice, SR_PKT));
	put8(s, k->psnsel);
	put8(s, k->opsel);
	put8(s, k->msgsel);
	put16(s, k->idx);
	put8(s, k->keysel);
	put16(s, k->vaoff);
	put8(s, k->lensel);
	put8(s, k->flags);
}

/* opsel: 0 SEND, 1 SEND_IMM, 2 WRITE_IMM, 6 RDMA_WRITE; misc: 1 = version 1 */
static void put_sr_desc(struct seed *s, unsigned qi, uint8_t psnsel, uint8_t msgsel, uint8_t opsel, uint8_t misc,
                        uint16_t len, uint8_t keysel, uint16_t vaoff)
{
	put8(s, srcmd(qi, false, SR_DESC));
	put8(s, psnsel);
	put8(s, msgsel);
	put8(s, opsel);
	put8(s, misc);
	put16(s, len);
	put8(s, keysel);
	put16(s, vaoff);
}

static void put_sr_parity(struct seed *s, unsigned qi, uint8_t psnsel, uint8_t msgsel, uint8_t qsel, uint8_t lensel)
{
	put8(s, srcmd(qi, false, SR_PARITY));
	put8(s, psnsel);
	put8(s, msgsel);
	put8(s, qsel);
	put8(s, lensel);
	put8(s, 0);
}

/* cumsel 0: all sent; msgsel 0: every message posted; limsel 0: 64
 * credits; nbsel 0: 32 bits; ones: the bitmap all ones (else 4 zero
 * bytes for 32 bits follow) */
static void put_sr_sack(struct seed *s, unsigned qi, bool ones, uint8_t cumsel, uint8_t msgsel, uint8_t dupsel,
                        uint8_t limsel, uint8_t nbsel, uint8_t flags)
{
	put8(s, srcmd(qi, ones, SR_SACK));
	put8(s, cumsel);
	put8(s, msgsel);
	put8(s, dupsel);
	put8(s, limsel);
	put8(s, nbsel);
	put8(s, flags);
	put16(s, 0);
	if (!ones && nbsel >> 6 < 2)
		put32(s, 0);
}

static void put_sr_nack(struct seed *s, unsigned qi, bool ones, uint8_t msgsel, uint8_t subsel, uint8_t nbsel,
                        uint8_t flagsel)
{
	put8(s, srcmd(qi, ones, SR_NACK));
	put8(s, msgsel);
	put8(s, subsel);
	put8(s, nbsel);
	put8(s, flagsel);
	put8(s, 0);
}

/* sel: bits 0-2 SEND, SEND_IMM, WRITE, WRITE_IMM, SEND, WRITE, SEND_IMM,
 * READ; 0x10 two SGEs; 0x20 unsignaled; 0x40 up to 7 bytes; 0x08 a
 * stream instead; 0x80 a receive handle instead (0x88 give the oldest
 * back, 0xc0 on part of B1, 0xa0 reset the QP) */
static void put_sr_post(struct seed *s, unsigned qi, bool three, uint8_t sel, uint16_t len)
{
	put8(s, srcmd(qi, three, SR_POST));
	put8(s, sel);
	put16(s, len);
	put8(s, 0);
}

static void put_sr_ctrl(struct seed *s, unsigned qi, bool to_data, uint8_t opsel, const uint8_t *b, uint8_t n)
{
	put8(s, srcmd(qi, to_data, SR_CTRL));
	put8(s, opsel);
	put8(s, n);
	put(s, b, n);
}

/* be command bytes and their fields (cmd_be_*) */
static uint8_t becmd(enum be_cmd c)
{
	return (uint8_t)(0x8a | c << 4);
}

struct be_pkt_spec {
	bool again;
	uint8_t psnsel, msgsel, opsel; /* opsel: kind | opcode mode << 3 */
	uint16_t idx;
	uint8_t keysel;
	uint16_t vaoff;
	uint8_t lensel, paysel, flags;
};

static void put_be_pkt(struct seed *s, const struct be_pkt_spec *k)
{
	put8(s, becmd(k->again ? BE_PKT_RE : BE_PKT));
	put8(s, k->psnsel);
	put8(s, k->msgsel);
	put8(s, k->opsel);
	put16(s, k->idx);
	put8(s, k->keysel);
	put16(s, k->vaoff);
	put8(s, k->lensel);
	put8(s, k->paysel);
	put8(s, k->flags);
}

struct be_msg_spec {
	bool late;
	uint8_t optype, loss, order, dup_on, n;
	uint16_t lastsel, vaoff, seed;
	uint32_t dropd;
	uint8_t dup, msgsel;
};

static void put_be_msg(struct seed *s, const struct be_msg_spec *m)
{
	put8(s, becmd(m->late ? BE_MSG_LATE : BE_MSG));
	put8(s, (uint8_t)(m->optype | m->loss << 2 | m->order << 4 | m->dup_on << 6));
	put8(s, m->n);
	put16(s, m->lastsel);
	put16(s, m->vaoff);
	put16(s, m->seed);
	put32(s, m->dropd);
	put8(s, m->dup);
	put8(s, m->msgsel);
}

/* sel: group | flaw << 2 | 0x40 other opcode | 0x80 to the data QPN */
static void put_be_vote(struct seed *s, uint8_t sel, uint8_t round, uint32_t prop, uint8_t shift, uint8_t vflags)
{
	put8(s, becmd(BE_VOTE));
	put8(s, sel);
	put8(s, round);
	put32(s, prop);
	put8(s, shift);
	put8(s, vflags);
}

/* sel: op (0 SEND, 1 SEND_IMM, 2 WRITE, 3 WRITE_IMM) | 4 two SGEs | 8
 * unsignaled | 0x10 tiny | (WRs - 1) << 5 | 0x80 READ */
static void put_be_post(struct seed *s, uint8_t sel, uint16_t len, uint8_t tmosel)
{
	put8(s, becmd(BE_POST));
	put8(s, sel);
	put16(s, len);
	put8(s, 0);
	put8(s, tmosel);
}

/* congestion command bytes and their fields (cmd_cc_*) */
static uint8_t cccmd(enum cc_cmd c)
{
	return (uint8_t)(0x88 | c << 4);
}

static void put_cc_cnp(struct seed *s, uint8_t qsel, uint8_t psnsel, uint8_t flags)
{
	put8(s, cccmd(CC_CNP));
	put8(s, qsel);
	put8(s, psnsel);
	put8(s, flags);
}

/* the next command's packets: TOS (3 = CE), in one burst */
static void put_cc_tos(struct seed *s, uint8_t tos, bool burst)
{
	put8(s, cccmd(CC_TOS));
	put8(s, tos);
	put8(s, burst);
}

/* the next command's RETH packets trimmed to cut % their length */
static void put_cc_trimmed(struct seed *s, uint8_t cut)
{
	put8(s, cccmd(CC_TRIMMED));
	put8(s, cut);
}

/* nsel: bit 0 ec, bit 1 n one more in the header, n = 1 + (nsel >> 2 & 7)
 * (bit 7: 29 + .., 31 = 0); one PSN selector each */
static void put_cc_trim(struct seed *s, uint8_t nsel, uint8_t flags, const uint8_t *psel, unsigned n)
{
	put8(s, cccmd(CC_TRIM));
	put8(s, nsel);
	put8(s, flags);
	put(s, psel, n);
}

/* sel: bit 0 ec, bits 1-3 what (0 more, 1 more and speculative, 2 want
 * back, 3 spec past want, 4 spec back, 5 huge, 7 the same), bits 4-7 how much */
static void put_cc_rts(struct seed *s, uint8_t sel, uint8_t flags)
{
	put8(s, cccmd(CC_RTS));
	put8(s, sel);
	put8(s, flags);
}

/* sel: bit 0 ec, top 3 bits the credit (0 asked, 1 less, 2 a quantum
 * more, 3 past it, 5 zero, 6 the largest) */
static void put_cc_pull(struct seed *s, uint8_t sel, uint8_t flags)
{
	put8(s, cccmd(CC_PULL));
	put8(s, sel);
	put8(s, flags);
}

static void put_cc_ctrl(struct seed *s, uint8_t tsel, const uint8_t *b, uint8_t n)
{
	put8(s, cccmd(CC_CTRL));
	put8(s, tsel);
	put8(s, n);
	put(s, b, n);
}

/* sel: bit 0 ec, bit 1 destroy and create again */
static void put_cc_reset(struct seed *s, uint8_t sel)
{
	put8(s, cccmd(CC_RESET));
	put8(s, sel);
}

/* bit 2 too: chunk_pkts (1 + chunk), then sr_top_chunks's arguments */
static void put_cc_top_chunks(struct seed *s, uint8_t sel, uint16_t chunk, uint8_t nmsgs, uint16_t hcut, uint8_t tail)
{
	put_cc_reset(s, (uint8_t)(sel | 4));
	put16(s, chunk);
	put8(s, nmsgs);
	put16(s, hcut);
	put8(s, tail);
}

static void write_seed(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f)) {
		fprintf(stderr, "fuzz_responder: %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

#define SEED(name, psnbase, ...)                         \
	do {                                             \
		struct seed s_ = { .n = 0 };             \
		struct seed *s = &s_;                    \
		put8(s, psnbase);                        \
		__VA_ARGS__;                             \
		write_seed(dir, name, s);                \
		count++;                                 \
	} while (0)

int write_corpus(const char *dir)
{
	unsigned count = 0;
	const uint8_t ok = 0; /* flags: right addresses, no ACK request */

	setup(); /* for the QP numbers */

	/* the placements: ONLY, FIRST/MIDDLE/LAST, with and without immediate */
	SEED("rc_write_only", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(0, 0), 100, LEN(4, 0), 1));
	SEED("rc_write_imm", 1, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY_IMM, KEY(0, 0), 300, LEN(6, 0), 1));
	SEED("rc_send_only", 0, put_pkt_simple(s, QP_RC, ROCE_OP_SEND_ONLY, 0, 0, LEN(4, 0), 1));
	SEED("rc_send_msg", 0, put_msg(s, QP_RC, false, false, 0, 1, 500, 0));
	SEED("rc_send_msg_imm_wrap", 1, put_msg(s, QP_RC, false, true, 0, 1, 1023, 0));
	SEED("rc_write_msg", 0, put_msg(s, QP_RC, true, false, 0, 3, 77, 900));
	SEED("rc_write_msg_imm", 2, put_msg(s, QP_RC, true, true, 0, 5, 1023, 4000));
	SEED("uc_send_msg_long", 0, put_msg(s, QP_UC, false, true, 0, 11, 200, 0));
	SEED("uc_write_msg", 3, put_msg(s, QP_UC, true, false, 0, 13, 255, 12000));
	SEED("uc_write_only", 0, put_pkt_simple(s, QP_UC, ROCE_OP_WRITE_ONLY, KEY(0, 7), 8, LEN(6, 0), ok));
	SEED("ud_send", 0, put_pkt_simple(s, QP_UD, ROCE_OP_SEND_ONLY, 0, 0, LEN(4, 0), ok));
	SEED("ud_send_imm_v6", 0, put_pkt_simple(s, QP_UD, ROCE_OP_SEND_ONLY_IMM, 0, 0, LEN(6, 0), 4 << 2 | 0x20));
	SEED("ud_send_too_long", 0, put_pkt_simple(s, QP_UD, ROCE_OP_SEND_ONLY, 0, 0, LEN(7, 31), ok); put16(s, 3));
	{
		struct pkt_spec k = { .qi = QP_UD, .op = ROCE_OP_SEND_ONLY, .lensel = LEN(6, 0), .qkeysel = 0,
			              .swap = 0x77 };
		SEED("ud_bad_qkey", 0, put_pkt(s, &k));
	}
	/* READ and atomics at the responder */
	SEED("rc_read", 0, put_pkt_simple(s, QP_RC, ROCE_OP_READ_REQUEST, KEY(0, 0), 64, LEN(0, 4), 1));
	SEED("rc_read_readonly_region", 0,
	     put_pkt_simple(s, QP_RC, ROCE_OP_READ_REQUEST, KEY(4, 0), 64, LEN(0, 2), 1));
	SEED("rc_read_dup", 0, put_pkt_simple(s, QP_RC, ROCE_OP_READ_REQUEST, KEY(0, 0), 64, LEN(0, 2), 1);
	     { struct pkt_spec k = { .qi = QP_RC, .op = ROCE_OP_READ_REQUEST, .psnsel = 0xa1, .keysel = KEY(0, 0),
		                     .vaoff = 64, .lensel = LEN(0, 2) };
	       put_pkt(s, &k); });
	SEED("rc_fetch_add", 0, put_pkt_simple(s, QP_RC, ROCE_OP_FETCH_ADD, KEY(0, 7), 808, 0, 1));
	SEED("rc_cmp_swap", 0, put_pkt_simple(s, QP_RC, ROCE_OP_CMP_SWAP, KEY(0, 7), 1616, 0, 1));
	SEED("rc_atomic_misaligned", 0, put_pkt_simple(s, QP_RC, ROCE_OP_FETCH_ADD, KEY(0, 0) | 0x40, 3, 0, 1));
	SEED("rc_atomic_readonly", 0, put_pkt_simple(s, QP_RC, ROCE_OP_CMP_SWAP, KEY(4, 7), 16, 0, 1));
	/* refusals of the address, key and bounds checks */
	SEED("rc_write_bad_rkey", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(7, 0), 0, LEN(6, 0), 1);
	     put32(s, 0x101));
	SEED("rc_write_revoked", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(6, 0), 0, LEN(6, 0), 1));
	SEED("rc_write_other_pd", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(5, 0), 0, LEN(6, 0), 1));
	SEED("rc_write_readonly", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(4, 0), 0, LEN(6, 0), 1));
	SEED("rc_write_straddle_end", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(0, 2), 5, LEN(0, 0), 1));
	SEED("rc_write_before_start", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(0, 3), 5, LEN(6, 0), 1));
	SEED("uc_write_wrap", 0, put_pkt_simple(s, QP_UC, ROCE_OP_WRITE_ONLY, KEY(0, 5), 3, LEN(6, 0), ok));
	SEED("rc_write_dma_huge", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_FIRST, KEY(0, 0), 0, LEN(0, 6), 1));
	SEED("rc_write_dma_past_end", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(0, 0) | 0x80, 16000,
	                                                 LEN(4, 7) | 0x40, 1));
	SEED("rc_wrong_src", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(0, 0), 0, LEN(6, 0), 5 << 2));
	SEED("rc_wrong_dst", 0, put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(0, 0), 0, LEN(6, 0), 6 << 2));
	SEED("uc_wrong_pkey", 0, put_pkt_simple(s, QP_UC, ROCE_OP_WRITE_ONLY, KEY(0, 0), 0, LEN(6, 0), 7 << 2));
	SEED("rc_bad_icrc", 0, put_pkt_simple(s, QP_RC, ROCE_OP_SEND_ONLY, 0, 0, LEN(6, 0), 0xdc));
	/* sequence: ahead, behind, flaws inside messages */
	{
		struct pkt_spec k = { .qi = QP_RC, .op = ROCE_OP_SEND_ONLY, .psnsel = 0x9f, .lensel = LEN(6, 0) };
		SEED("rc_psn_ahead", 0, put_pkt(s, &k));
	}
	SEED("rc_middle_alone", 0, put_pkt_simple(s, QP_RC, ROCE_OP_SEND_MIDDLE, 0, 0, 0, 1));
	SEED("rc_msg_short_middle", 0, put_msg(s, QP_RC, false, false, 8, 2, 9, 0));
	SEED("uc_msg_gap", 0, put_msg(s, QP_UC, true, false, 9, 4, 9, 0));
	SEED("rc_msg_extra_middle", 0, put_msg(s, QP_RC, true, false, 7, 1, 9, 0));
	SEED("rc_msg_dup_middle", 0, put_msg(s, QP_RC, false, false, 6, 1, 9, 0));
	SEED("rc_msg_reth_short", 0, put_msg(s, QP_RC, true, false, 10, 2, 100, 0));
	SEED("uc_msg_last_long", 0, put_msg(s, QP_UC, true, false, 11, 2, 100, 0));
	SEED("rc_msg_revoked_midway", 0, put_msg(s, QP_RC, true, false, 13, 3, 100, 0));
	SEED("rc_msg_other_host", 0, put_msg(s, QP_RC, true, false, 14, 1, 100, 0));
	SEED("rc_send_overflow", 0, put_msg(s, QP_RC, false, false, 0, 5, 1000, 0));
	SEED("rc_send_no_wqe", 0, for (int k = 0; k < 18; k++) put_pkt_simple(s, QP_RC, ROCE_OP_SEND_ONLY, 0, 0,
	                                                                         LEN(6, 0), 1));
	/* responses at the RC completer, with something outstanding */
	SEED("rc_read_response", 0, put8(s, CMD_POST); put8(s, 0); put16(s, 2500); put8(s, 3);
	     { struct pkt_spec k = { .qi = QP_RC, .op = ROCE_OP_READ_RESP_FIRST, .psnsel = 0x12, .lensel = LEN(0, 0) };
	       put_pkt(s, &k);
	       k.op = ROCE_OP_READ_RESP_MIDDLE; k.psnsel = 0x11; put_pkt(s, &k);
	       k.op = ROCE_OP_READ_RESP_LAST; k.psnsel = 0x10; k.lensel = LEN(4, 0); k.vaoff = 452; put_pkt(s, &k); });
	SEED("rc_atomic_ack", 0, put8(s, CMD_POST); put8(s, 2); put16(s, 8); put8(s, 0);
	     { struct pkt_spec k = { .qi = QP_RC, .op = ROCE_OP_ATOMIC_ACK, .psnsel = 0x10, .swap = 9, .cmp = 1 };
	       put_pkt(s, &k); });
	SEED("rc_nak_stale", 0, put8(s, CMD_POST); put8(s, 6); put16(s, 100); put8(s, 0);
	     { struct pkt_spec k = { .qi = QP_RC, .op = ROCE_OP_ACK, .psnsel = 0x7f, .syn = AETH_NAK_REM_ACC_ERR };
	       put_pkt(s, &k); });
	SEED("rc_rnr_nak_then_time", 0, put8(s, CMD_POST); put8(s, 8); put16(s, 100); put8(s, 0);
	     { struct pkt_spec k = { .qi = QP_RC, .op = ROCE_OP_ACK, .psnsel = 0x10, .syn = AETH_RNR_NAK | 31 };
	       put_pkt(s, &k); } put8(s, CMD_TIME); put8(s, 20));
	SEED("rc_ack_credit", 0, put8(s, CMD_POST); put8(s, 8); put16(s, 100); put8(s, 0);
	     { struct pkt_spec k = { .qi = QP_RC, .op = ROCE_OP_ACK, .psnsel = 0x10, .syn = 31 };
	       put_pkt(s, &k); });
	/* unstructured */
	SEED("raw_frame", 0, put8(s, CMD_RAW); put8(s, 20); put8(s, 0);
	     for (int k = 0; k < 80; k++) put8(s, (uint8_t)(k * 37)));
	/* BTH (RC WRITE_ONLY to the RC QP, PSN of the first base), RETH, payload */
	SEED("raw_transport", 0, put8(s, CMD_RAW_L4); put8(s, 10); put8(s, 0); put8(s, ROCE_TR_RC | ROCE_OP_WRITE_ONLY);
	     put8(s, 0); put16(s, 0xffff); put8(s, 0); put8(s, (uint8_t)(uroce_qp_num(fz.qp[QP_RC]) >> 16));
	     put8(s, (uint8_t)(uroce_qp_num(fz.qp[QP_RC]) >> 8)); put8(s, (uint8_t)uroce_qp_num(fz.qp[QP_RC]));
	     put8(s, 0x80); put8(s, 0); put8(s, 0); put8(s, 0);
	     for (int k = 0; k < 28; k++) put8(s, (uint8_t)k));
	SEED("revoke_then_write", 0, put8(s, CMD_REVOKE); put8(s, 0);
	     put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(6, 0), 0, LEN(6, 0), 1); put8(s, CMD_REVOKE); put8(s, 0);
	     put_pkt_simple(s, QP_RC, ROCE_OP_WRITE_ONLY, KEY(0, 0), 0, LEN(6, 0), 1));
	/* sr and ec, the receiver: whole messages (in order, shuffled,
	 * reversed), ec rebuilding lost packets, flaws */
#define SRMSG(...)                                                      \
	do {                                                            \
		struct sr_msg_spec m_ = { __VA_ARGS__ };               \
		put_sr_msg(s, &m_);                                    \
	} while (0)
#define SRPKT(...)                                                      \
	do {                                                            \
		struct sr_pkt_spec k_ = { __VA_ARGS__ };               \
		put_sr_pkt(s, &k_);                                    \
	} while (0)
	SEED("sr_send_msg", 0, SRMSG(.qi = QP_SR, .n = 4, .lastsel = 99));
	SEED("sr_send_msg_psn_wrap", 1, SRMSG(.qi = QP_SR, .n = 12, .lastsel = 7));
	SEED("sr_send_imm_shuffled", 0, SRMSG(.qi = QP_SR, .optype = 1, .n = 8, .lastsel = 200, .order = 0x1234));
	SEED("sr_write_imm_reversed", 0, SRMSG(.qi = QP_SR, .optype = 2, .n = 11, .lastsel = 30, .vaoff = 3000,
	                                       .order = 1));
	SEED("sr_plain_write_msg", 0, SRMSG(.qi = QP_SR, .optype = 3, .n = 5, .lastsel = 17, .vaoff = 100,
	                                    .order = 7));
	SEED("sr_msg_lost_resent", 0, SRMSG(.qi = QP_SR, .n = 7, .lastsel = 255, .loss = 2, .dropd = 0x24,
	                                    .order = 99));
	SEED("sr_msg_one_lost_per_sub", 0, SRMSG(.qi = QP_SR, .optype = 1, .n = 9, .lastsel = 5, .loss = 1,
	                                         .dropd = 0x1b));
	SEED("sr_msg_zero_len", 0, SRMSG(.qi = QP_SR, .optype = 1, .n = 0xff));
	SEED("sr_msg_dup_and_late_copy", 0, SRMSG(.qi = QP_SR, .late = true, .n = 2, .lastsel = 9, .dup = 0x81));
	SEED("sr_msg_old_number", 0, SRMSG(.qi = QP_SR, .n = 1); SRMSG(.qi = QP_SR, .n = 1, .msgsel = 0x80));
	SEED("sr_msg_skipped_number", 0, SRMSG(.qi = QP_SR, .n = 2, .msgsel = 0xc0); SRMSG(.qi = QP_SR, .n = 2);
	     put8(s, CMD_TIME); put8(s, 12));
	SEED("sr_msg_never_whole", 0, SRMSG(.qi = QP_SR, .n = 6, .loss = 3, .dropd = 0x4); put8(s, CMD_TIME);
	     put8(s, 14));
	SEED("ec_send_decode", 0, SRMSG(.qi = QP_EC, .n = 9, .lastsel = 70, .loss = 1, .dropd = 0x39,
	                                .order = 0x77));
	SEED("ec_send_imm_decode_short_sub", 0, SRMSG(.qi = QP_EC, .optype = 1, .n = 5, .lastsel = 3, .loss = 1,
	                                              .dropd = 0x7));
	SEED("ec_write_imm_decode", 0, SRMSG(.qi = QP_EC, .optype = 2, .n = 15, .lastsel = 128, .vaoff = 5000,
	                                     .loss = 1, .dropd = 0xe4, .order = 0x4321));
	SEED("ec_write_imm_decode_reversed", 0, SRMSG(.qi = QP_EC, .optype = 2, .n = 23, .lastsel = 255, .vaoff = 77,
	                                              .loss = 1, .dropd = 0x1234, .order = 1));
	SEED("ec_plain_write_msg", 0, SRMSG(.qi = QP_EC, .optype = 3, .n = 6, .lastsel = 40, .vaoff = 9000));
	SEED("ec_desc_lost_then_again", 0, SRMSG(.qi = QP_EC, .n = 6, .lastsel = 10, .loss = 3, .dropo = 1));
	SEED("ec_parity_lost_data_whole", 0, SRMSG(.qi = QP_EC, .n = 7, .lastsel = 10, .loss = 3, .dropo = 0xfc));
	SEED("ec_undecodable_nack", 0, SRMSG(.qi = QP_EC, .n = 7, .lastsel = 10, .loss = 3, .dropd = 0x3,
	                                     .dropo = 0x4); put8(s, CMD_TIME); put8(s, 6); put8(s, CMD_TIME);
	     put8(s, 8));
	SEED("ec_lost_resent", 0, SRMSG(.qi = QP_EC, .optype = 1, .n = 10, .lastsel = 1, .loss = 2, .dropd = 0x303,
	                                .dropo = 0x5c, .order = 5));
	SEED("ec_msg_late_copy", 0, SRMSG(.qi = QP_EC, .late = true, .n = 3, .lastsel = 9, .loss = 1));
	SEED("ec_msg_old_number", 0, SRMSG(.qi = QP_EC, .n = 2); SRMSG(.qi = QP_EC, .n = 2, .msgsel = 0x80));
	/* rebuilt chunks of a WRITE with immediate outside the region: refused */
	SEED("ec_write_straddle_start", 0, SRMSG(.qi = QP_EC, .optype = 2, .flaw = 14, .n = 3, .lastsel = 255,
	                                         .vaoff = 1));
	SEED("ec_write_straddle_end", 0, SRMSG(.qi = QP_EC, .optype = 2, .flaw = 14, .n = 5, .lastsel = 20,
	                                       .vaoff = 2, .loss = 1));
	SEED("ec_send_straddle_start", 0, SRMSG(.qi = QP_EC, .optype = 0, .flaw = 14, .n = 1, .lastsel = 255,
	                                        .vaoff = 3));
	SEED("sr_msg_bad_va", 0, SRMSG(.qi = QP_SR, .flaw = 8, .n = 4, .vaoff = 2));
	SEED("ec_write_imm_bad_va", 0, SRMSG(.qi = QP_EC, .optype = 2, .flaw = 8, .n = 4, .vaoff = 1, .loss = 1));
	SEED("ec_msg_short_data", 0, SRMSG(.qi = QP_EC, .flaw = 9, .n = 6, .vaoff = 1, .loss = 1, .dropd = 0x2));
	SEED("ec_msg_desc_len", 0, SRMSG(.qi = QP_EC, .flaw = 10, .n = 6, .lastsel = 100));
	SEED("sr_msg_last_in_middle", 0, SRMSG(.qi = QP_SR, .optype = 1, .flaw = 11, .n = 6, .vaoff = 2,
	                                       .order = 1));
	SEED("ec_msg_parity_wrong_sub", 0, SRMSG(.qi = QP_EC, .flaw = 12, .n = 3, .loss = 1));
	SEED("sr_send_one_pkt_to_a", 0, SRMSG(.qi = QP_SR, .flaw = 13, .n = 3, .vaoff = 1, .order = 1));
	SEED("ec_send_one_pkt_to_a", 0, SRMSG(.qi = QP_EC, .flaw = 13, .n = 3, .vaoff = 2, .order = 0x55,
	                                      .loss = 1));
	SEED("ec_write_imm_other_pd", 0, SRMSG(.qi = QP_EC, .optype = 2, .flaw = 13, .n = 3, .vaoff = 1,
	                                       .loss = 1));
	SEED("ec_msg_psn_swap", 0, SRMSG(.qi = QP_EC, .flaw = 15, .n = 9, .vaoff = 0x0301, .loss = 1));
	/* single packets: a message built from parts, and each refusal */
	SEED("sr_parts_write_imm", 0, put_sr_desc(s, QP_SR, 0, 0, 2, 1, 600, KEY(0, 1), 0);
	     SRPKT(.qi = QP_SR, .opsel = OPK(0, 0), .idx = 1, .keysel = KEY(3, 0), .vaoff = 0, .lensel = 0);
	     SRPKT(.qi = QP_SR, .opsel = OPK(0, 4), .idx = 2, .keysel = KEY(3, 0), .lensel = 4, .vaoff = 87);
	     SRPKT(.qi = QP_SR, .opsel = OPK(0, 0), .idx = 0, .keysel = KEY(3, 0), .lensel = 0));
	SEED("sr_parts_send", 0, SRPKT(.qi = QP_SR, .psnsel = 0x80, .opsel = OPK(0, 3), .idx = 1, .lensel = 4,
	                               .vaoff = 10);
	     SRPKT(.qi = QP_SR, .opsel = OPK(0, 0), .idx = 0); SRPKT(.qi = QP_SR, .twice = true, .opsel = OPK(0, 0),
	                                                             .idx = 0, .psnsel = 0xa0));
	/* no descriptor: parity at PSN +3 and +4 before the message's length
	 * is known, then its LAST at +2; data 0 (+1) is rebuilt */
	SEED("ec_parts_parity_first", 0, put_sr_parity(s, QP_EC, 0x83, 0, 1, 0); put_sr_parity(s, QP_EC, 0x82, 0, 0, 0);
	     SRPKT(.qi = QP_EC, .psnsel = 0x81, .opsel = OPK(0, 3), .idx = 1, .lensel = 4, .vaoff = 50));
	SEED("sr_pkt_reserved_kind", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 7)));
	SEED("sr_pkt_parity_on_sr", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 6)));
	SEED("sr_pkt_to_ctrl_qpn", 0, SRPKT(.qi = QP_SR, .opsel = OPK(7, 0)));
	SEED("sr_pkt_other_opcode", 0, SRPKT(.qi = QP_EC, .opsel = OPK(6, 0) | 0x40));
	SEED("sr_plain_write_readonly", 0, SRPKT(.qi = QP_SR, .opsel = OPK(5, 0), .keysel = KEY(4, 0), .vaoff = 64));
	SEED("sr_plain_write_other_pd", 0, SRPKT(.qi = QP_SR, .opsel = OPK(5, 0), .keysel = KEY(5, 0)));
	SEED("sr_plain_write_revoked", 0, SRPKT(.qi = QP_SR, .opsel = OPK(5, 0), .keysel = KEY(6, 0)));
	SEED("sr_plain_write_past_end", 0, SRPKT(.qi = QP_SR, .opsel = OPK(5, 0), .keysel = KEY(3, 6), .vaoff = 6));
	SEED("sr_write_imm_wrap", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 3), .keysel = KEY(3, 7), .vaoff = 1));
	SEED("sr_pkt_bad_va", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 0), .idx = 2, .keysel = KEY(0, 5)));
	SEED("sr_pkt_longer_than_mtu", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 3), .lensel = 6));
	SEED("sr_pkt_dma_len_differs", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 0), .lensel = 0x80));
	SEED("sr_pkt_beyond_window", 0, SRPKT(.qi = QP_SR, .psnsel = 0xe0, .opsel = OPK(0, 0)));
	SEED("sr_pkt_dup", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 0)); SRPKT(.qi = QP_SR, .psnsel = 0xa0,
	                                                                     .opsel = OPK(0, 0)));
	SEED("sr_pkt_stale_msg", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 3), .msgsel = 0xc5));
	SEED("sr_pkt_idx_huge", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 3), .idx = 0xffff));
	SEED("sr_pkt_over_recv_buffer", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 3), .idx = 14));
	SEED("sr_pkt_no_recv", 0, for (int k = 0; k < 18; k++) SRPKT(.qi = QP_SR, .opsel = OPK(0, 3),
	                                                               .msgsel = 0x60));
	SEED("sr_pkt_misaddressed", 0, SRPKT(.qi = QP_EC, .opsel = OPK(0, 3), .flags = 5 << 2);
	     SRPKT(.qi = QP_EC, .opsel = OPK(0, 3), .flags = 7 << 2); SRPKT(.qi = QP_EC, .opsel = OPK(0, 3),
	                                                                   .flags = 0xdc));
	SEED("sr_desc_bad_version", 0, put_sr_desc(s, QP_SR, 0, 0, 1, 0x10, 100, 0, 0));
	SEED("sr_desc_ec_flag_on_sr", 0, put_sr_desc(s, QP_SR, 0, 0, 0x41, 1, 100, 0, 0));
	SEED("sr_desc_bad_op", 0, put_sr_desc(s, QP_SR, 0, 0, 6, 1, 100, 0, 0));
	SEED("sr_desc_short", 0, put_sr_desc(s, QP_SR, 0, 0, 0x81, 0x31, 100, 0, 0));
	SEED("sr_desc_nonzero_rkey", 0, put_sr_desc(s, QP_SR, 0, 0, 1, 1, 100, 0x80, 0));
	SEED("sr_desc_too_long_for_recv", 0, put_sr_desc(s, QP_SR, 0, 0, 0, 1, 4000, 0, 0));
	SEED("sr_desc_huge", 0, put_sr_desc(s, QP_SR, 0, 0, 1, 1, 0xffff, 0, 0));
	SEED("sr_desc_write_imm_readonly", 0, put_sr_desc(s, QP_SR, 0, 0, 2, 1, 100, KEY(4, 1), 0));
	SEED("sr_desc_twice", 0, put_sr_desc(s, QP_EC, 0, 0, 1, 1, 100, 0, 0);
	     put_sr_desc(s, QP_EC, 0, 0, 1, 1, 100, 0, 0));
	SEED("ec_desc_len_disagrees", 0, SRPKT(.qi = QP_EC, .opsel = OPK(0, 4), .idx = 1, .lensel = 4, .vaoff = 10);
	     put_sr_desc(s, QP_EC, 0, 0, 0, 1, 3000, 0, 0));
	SEED("ec_parity_bad_len", 0, put_sr_parity(s, QP_EC, 0, 0, 0, 5));
	SEED("ec_parity_bad_va", 0, put_sr_parity(s, QP_EC, 0, 0, 1, 0x20));
	SEED("ec_parity_past_msg", 0, put_sr_desc(s, QP_EC, 0, 0, 0, 1, 300, 0, 0);
	     put_sr_parity(s, QP_EC, 0, 0, 6, 0));
	SEED("ec_parity_alone_nack", 0, put_sr_parity(s, QP_EC, 0x81, 0, 0, 0); put8(s, CMD_TIME); put8(s, 6));
	/* the sender: local posts, and what the peer answers */
	SEED("sr_post_send_sack", 0, put_sr_post(s, QP_SR, false, 0, 1000); put_sr_sack(s, QP_SR, false, 0, 0, 0, 0, 0, 0));
	SEED("sr_post_write_imm_sack_ones", 0, put_sr_post(s, QP_SR, false, 3, 2000);
	     put_sr_sack(s, QP_SR, true, 0x60, 0, 0, 0, 0, 0));
	SEED("sr_post_partial_sack_rack", 0, put_sr_post(s, QP_SR, true, 2, 1500);
	     put_sr_sack(s, QP_SR, true, 0x66, 0, 0, 0, 0, 0); put8(s, CMD_TIME); put8(s, 8);
	     put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 0));
	SEED("sr_post_rto_dsack", 0, put_sr_post(s, QP_SR, false, 0x10, 700); put8(s, CMD_TIME); put8(s, 8);
	     put_sr_sack(s, QP_SR, true, 0, 0, 0x09, 0, 0, 0));
	SEED("sr_post_tail_probe", 0, put_sr_post(s, QP_SR, false, 0, 700); put_sr_sack(s, QP_SR, true, 0x62, 0, 0, 0, 0, 0);
	     put_sr_post(s, QP_SR, false, 0, 300); put8(s, CMD_TIME); put8(s, 5); put8(s, CMD_TIME); put8(s, 5));
	SEED("sr_post_retry_exceeded", 0, put_sr_post(s, QP_SR, false, 1, 300); put8(s, CMD_TIME); put8(s, 10);
	     put8(s, CMD_TIME); put8(s, 12); put8(s, CMD_TIME); put8(s, 14));
	SEED("sr_post_no_credits", 0, put_sr_post(s, QP_SR, false, 0, 100); put_sr_sack(s, QP_SR, true, 0x60, 0, 0, 0x40, 0, 0);
	     put_sr_post(s, QP_SR, true, 0, 100); put_sr_sack(s, QP_SR, true, 0, 0, 0, 0x41, 0, 0);
	     put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 0));
	SEED("sr_post_read_refused", 0, put_sr_post(s, QP_SR, false, 7, 100));
	SEED("sr_post_tiny_two_sges", 0, put_sr_post(s, QP_EC, true, 0x50, 5); put_sr_sack(s, QP_EC, true, 0, 0, 0, 0, 0, 0));
	SEED("sr_sack_ahead", 0, put_sr_post(s, QP_SR, false, 0, 300); put_sr_sack(s, QP_SR, true, 0xa3, 0, 0, 0, 0, 0));
	SEED("sr_sack_old", 0, put_sr_post(s, QP_SR, true, 0, 2500); put_sr_sack(s, QP_SR, true, 0xc0, 0, 0, 0, 0, 0));
	SEED("sr_sack_msgs_never_posted", 0, put_sr_sack(s, QP_SR, true, 0, 0x85, 0, 0, 0, 0));
	SEED("sr_sack_bad_nbits", 0, put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0xc5, 0));
	SEED("sr_sack_big_bitmap", 0, put_sr_post(s, QP_SR, false, 0, 2000); put_sr_sack(s, QP_SR, true, 0x70, 0, 0, 0, 0x9f, 0));
	SEED("sr_sack_cut_short", 0, put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 3));
	SEED("ec_post_send_nack", 0, put_sr_post(s, QP_EC, false, 0, 1500); put_sr_nack(s, QP_EC, true, 0, 0, 1, 0);
	     put8(s, CMD_TIME); put8(s, 9); put_sr_sack(s, QP_EC, true, 0, 0, 0, 0, 0, 0));
	SEED("ec_post_nack_desc", 0, put_sr_post(s, QP_EC, false, 1, 600); put_sr_nack(s, QP_EC, false, 0, 0, 0, 1));
	SEED("ec_post_rto", 0, put_sr_post(s, QP_EC, false, 3, 2900); put8(s, CMD_TIME); put8(s, 11);
	     put_sr_sack(s, QP_EC, true, 0x61, 0, 0, 0, 0, 0));
	SEED("ec_nack_unknown_msg", 0, put_sr_post(s, QP_EC, false, 0, 300); put_sr_nack(s, QP_EC, true, 0x43, 0, 1, 0));
	SEED("ec_nack_bad_nbits", 0, put_sr_nack(s, QP_EC, true, 0, 0, 0xc7, 0));
	SEED("sr_nack_on_sr", 0, put_sr_post(s, QP_SR, false, 0, 300); put_sr_nack(s, QP_SR, true, 0, 0, 1, 0));
	{
		static const uint8_t b[] = { 1, 1, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			                     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };

		/* partial completion: receive handles (setup 0x0c: no other receives),
	 * streams */
	SEED("sr_precv_whole", 0x0c, put_sr_post(s, QP_SR, false, 0x80, 0); SRMSG(.qi = QP_SR, .n = 3, .lastsel = 9);
	     put_sr_post(s, QP_SR, false, 0x88, 0));
	SEED("sr_precv_partial_late_copy", 0x0c, put_sr_post(s, QP_SR, false, 0x80, 0);
	     SRMSG(.qi = QP_SR, .n = 3, .loss = 3, .dropd = 0x2); put_sr_post(s, QP_SR, false, 0x88, 0);
	     SRPKT(.qi = QP_SR, .opsel = OPK(0, 0), .idx = 1, .msgsel = 0x80));
	SEED("ec_precv_partial_chunks", 0x0c, put_sr_post(s, QP_EC, false, 0x80, 0);
	     SRMSG(.qi = QP_EC, .n = 4, .loss = 3, .dropd = 0x30, .dropo = 0x30); put_sr_post(s, QP_EC, false, 0x88, 0));
	SEED("ec_precv_decoded", 0x0c, put_sr_post(s, QP_EC, false, 0x80, 0);
	     SRMSG(.qi = QP_EC, .optype = 1, .n = 5, .loss = 1, .dropd = 0x9); put_sr_post(s, QP_EC, false, 0x88, 0));
	SEED("sr_precv_short_buffer", 0x0c, put_sr_post(s, QP_SR, false, 0xc0, 100); SRMSG(.qi = QP_SR, .n = 2));
	SEED("sr_precv_give_back_unbound", 0x0c, put_sr_post(s, QP_SR, false, 0x80, 0);
	     put_sr_post(s, QP_SR, false, 0x80, 0); put_sr_post(s, QP_SR, false, 0x88, 0));
	SEED("sr_precv_reset_holding", 0x0c, put_sr_post(s, QP_SR, false, 0x80, 0);
	     SRMSG(.qi = QP_SR, .n = 3, .loss = 3, .dropd = 0x1); put_sr_post(s, QP_SR, false, 0xa0, 0);
	     SRMSG(.qi = QP_SR, .n = 1));
	/* receive handles whose chunks reach index 2^17 - 1 before the length is known */
	SEED("sr_precv_top_chunk3_slot63", 0, put_cc_top_chunks(s, 2, 2, 63, 1000, 4));
	SEED("sr_precv_top_chunk4095_slot63", 0, put_cc_top_chunks(s, 2, 4094, 63, 333, 40));
	SEED("sr_precv_top_chunk7_slot5", 0, put_cc_top_chunks(s, 2, 6, 5, 0, 9));
	SEED("ec_precv_top_chunk5", 0, put_cc_top_chunks(s, 3, 4, 0, 4097, 8));
	SEED("sr_stream_sack", 0, put_sr_post(s, QP_SR, false, 0x08, 1700); put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 0));
	SEED("ec_stream_sack", 0, put_sr_post(s, QP_EC, false, 0x08, 1000); put_sr_sack(s, QP_EC, true, 0, 0, 0, 0, 0, 0));
	SEED("sr_stream_empty", 0, put_sr_post(s, QP_SR, false, 0x08, 0); put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 0));
	SEED("sr_ctrl_bad_version", 0, put_sr_ctrl(s, QP_SR, false, 0, (const uint8_t[]){ 2, 1, 0, 32 }, 4));
		SEED("sr_ctrl_bad_type", 0, put_sr_ctrl(s, QP_SR, false, 8 | 3 << 4, b, 36));
		SEED("sr_ctrl_len_past_payload", 0, put_sr_ctrl(s, QP_SR, false, 8 | 1 << 4 | 0x40, b, 36));
		SEED("sr_ctrl_header_only", 0, put_sr_ctrl(s, QP_SR, false, 8 | 1 << 4, b, 4));
		SEED("sr_ctrl_too_short", 0, put_sr_ctrl(s, QP_EC, false, 0, b, 2));
		SEED("sr_ctrl_wrong_opcode", 0, put_sr_ctrl(s, QP_SR, false, 5, b, 36));
		SEED("sr_ctrl_to_data_qpn", 0, put_sr_ctrl(s, QP_EC, true, 0, b, 36));
	}
	/* be: whole messages of each kind, losses the tail's copy or the
	 * deadline ends, preemption, late copies; single packets of each kind,
	 * key and PSN; VOTEs; local posts with deadlines */
#define BEMSG(...) put_be_msg(s, &(struct be_msg_spec){ __VA_ARGS__ })
#define BEPKT(...) put_be_pkt(s, &(struct be_pkt_spec){ __VA_ARGS__ })
	SEED("be_send_msg", 0, BEMSG(.optype = 0, .n = 2, .lastsel = 99));
	SEED("be_send_imm_shuffled", 1, BEMSG(.optype = 1, .n = 4, .lastsel = 10, .order = 2, .seed = 7));
	SEED("be_write_imm_reversed", 0, BEMSG(.optype = 2, .n = 9, .lastsel = 255, .vaoff = 3000, .order = 1));
	SEED("be_plain_write_msg", 0, BEMSG(.optype = 3, .n = 5, .lastsel = 3, .vaoff = 100);
	     BEMSG(.optype = 0, .n = 1, .lastsel = 40));
	SEED("be_empty_msg", 0, BEMSG(.optype = 1, .n = 0xff));
	SEED("be_msg_last_lost", 0, BEMSG(.optype = 0, .n = 3, .loss = 2, .lastsel = 7));
	SEED("be_msg_tail_lost_deadline", 0, BEMSG(.optype = 2, .n = 3, .loss = 3, .vaoff = 64); put8(s, CMD_TIME);
	     put8(s, 7));
	SEED("be_msg_lost_dup", 2, BEMSG(.optype = 1, .n = 6, .loss = 1, .dropd = 0x14, .dup_on = 1, .dup = 3,
	                                 .order = 3, .seed = 0x55));
	SEED("be_msg_skip_preempts", 0, BEMSG(.optype = 0, .n = 3, .loss = 3); BEMSG(.optype = 0, .n = 2, .msgsel = 2 | 1 << 2));
	SEED("be_msg_earlier_late", 0, BEMSG(.optype = 0, .n = 2); BEMSG(.optype = 0, .n = 2, .msgsel = 3));
	SEED("be_msg_late_copies", 0, BEMSG(.late = true, .optype = 1, .n = 3, .lastsel = 50); BEMSG(.optype = 0, .n = 1));
	SEED("be_send_too_long", 0, BEMSG(.optype = 1, .n = 13, .lastsel = 255); put8(s, CMD_TIME); put8(s, 6));
	SEED("be_pkt_data_then_deadline", 0, BEPKT(.opsel = 0); put8(s, CMD_TIME); put8(s, 6));
	SEED("be_pkt_last", 3, BEPKT(.opsel = 1, .idx = 2, .lensel = 4, .vaoff = 77));
	SEED("be_pkt_same_index_new_psn", 0, BEPKT(.again = true, .opsel = 0); BEPKT(.opsel = 1, .idx = 1, .lensel = 4));
	SEED("be_pkt_preempts", 0, BEPKT(.opsel = 0); BEPKT(.msgsel = 0x42, .opsel = 1, .lensel = 4, .vaoff = 9));
	SEED("be_pkt_late_msg", 0, BEMSG(.optype = 0, .n = 1); BEPKT(.msgsel = 0x80, .opsel = 0));
	SEED("be_pkt_tail_after_end", 0, BEMSG(.optype = 0, .n = 1, .loss = 0); BEPKT(.msgsel = 0x80, .opsel = 6,
	                                                                              .lensel = 4));
	SEED("be_pkt_msg_half_ahead", 0, BEPKT(.msgsel = 0xc3, .opsel = 0));
	SEED("be_pkt_psn_ahead_hole", 0, BEPKT(.psnsel = 0x85, .opsel = 0); BEPKT(.opsel = 1, .idx = 1, .lensel = 4));
	SEED("be_pkt_psn_dup_window", 0, BEPKT(.opsel = 0); BEPKT(.psnsel = 0xa0, .opsel = 0));
	SEED("be_pkt_psn_late", 0, BEPKT(.psnsel = 0xc0, .opsel = 0));
	SEED("be_pkt_psn_far_ahead", 0, BEPKT(.psnsel = 0xe9, .opsel = 0); BEPKT(.psnsel = 0xe0, .opsel = 0));
	SEED("be_pkt_write_imm_a", 0, BEPKT(.opsel = 1, .keysel = 2, .vaoff = 512, .lensel = 4));
	SEED("be_pkt_revoked_key", 0, BEPKT(.opsel = 1, .keysel = 6, .lensel = 4));
	SEED("be_pkt_random_key", 0, BEPKT(.opsel = 0, .keysel = 7); put32(s, 0x4242));
	SEED("be_pkt_write_past_end", 0, BEPKT(.opsel = 5, .keysel = 2 | 7 << 3, .vaoff = 4));
	SEED("be_plain_write_readonly", 0, BEPKT(.opsel = 5, .keysel = 4));
	SEED("be_plain_write_other_pd", 0, BEPKT(.opsel = 5, .keysel = 5, .vaoff = 256));
	SEED("be_pkt_va_off", 0, BEPKT(.opsel = 0, .idx = 3, .keysel = 5 << 3, .vaoff = 5));
	SEED("be_pkt_len_any", 0, BEPKT(.opsel = 1, .lensel = 6 | 0x20); put16(s, 4100));
	SEED("be_pkt_dma_len_differs", 0, BEPKT(.opsel = 0, .lensel = 0xc0));
	SEED("be_pkt_idx_huge", 0, BEPKT(.opsel = 1, .idx = 0xffff, .lensel = 4));
	SEED("be_pkt_desc", 0, BEPKT(.opsel = 3, .idx = 2, .lensel = 7, .paysel = 0x80, .vaoff = 600);
	     BEPKT(.opsel = 1, .idx = 2, .lensel = 4, .vaoff = 600));
	SEED("be_pkt_desc_write_imm", 0, BEPKT(.opsel = 3, .lensel = 7, .paysel = 0x81, .vaoff = 300);
	     BEPKT(.opsel = 1, .keysel = 2, .lensel = 4, .vaoff = 300));
	SEED("be_pkt_desc_flaws", 0, BEPKT(.opsel = 3, .lensel = 7, .paysel = 0x82); BEPKT(.opsel = 3, .lensel = 7,
	     .paysel = 0x84); BEPKT(.opsel = 3, .lensel = 7, .paysel = 0x86); BEPKT(.opsel = 3, .lensel = 1));
	SEED("be_pkt_raw_payload", 0, BEPKT(.opsel = 3, .lensel = 7, .paysel = 0xc0);
	     for (int k = 0; k < 32; k++) put8(s, (uint8_t)(k * 7)));
	SEED("be_pkt_other_kinds", 0, BEPKT(.opsel = 2); BEPKT(.opsel = 4); BEPKT(.opsel = 7));
	SEED("be_pkt_other_opcodes", 0, BEPKT(.opsel = 5 << 3 | 0); BEPKT(.opsel = 6 << 3 | 0x40);
	     BEPKT(.opsel = 6 << 3 | 0xc0));
	SEED("be_pkt_to_ctrl_qpn", 0, BEPKT(.opsel = 7 << 3));
	SEED("be_pkt_misaddressed", 0, BEPKT(.opsel = 0, .flags = 5 << 2); BEPKT(.opsel = 0, .flags = 0xdc));
	SEED("be_pkt_no_recv", 0, for (int k = 0; k < 18; k++) BEPKT(.msgsel = 0x60, .opsel = 1, .lensel = 5));
	SEED("be_vote_ok", 0, put_be_vote(s, 0, 0, 5000, 4, 0));
	SEED("be_vote_ask_exchange", 0, put8(s, becmd(BE_TMO)); put8(s, 0); put8(s, 1);
	     put_be_vote(s, 0, 1, 90000, 0, 1); put8(s, becmd(BE_TMO)); put8(s, 0); put8(s, 1);
	     BEMSG(.optype = 0, .n = 2));
	SEED("be_vote_other_group", 0, put_be_vote(s, 1, 0, 1, 0, 0));
	SEED("be_vote_flaws", 0, put_be_vote(s, 4 << 2, 0, 1, 0, 0); put_be_vote(s, 5 << 2, 0, 1, 0, 0);
	     put_be_vote(s, 6 << 2, 0, 1, 0, 0); put_be_vote(s, 7 << 2, 0, 1, 0, 0);
	     put_be_vote(s, 7 << 2 | 0x20, 0, 1, 0, 0); put_be_vote(s, 0x40, 0, 1, 0, 0);
	     put_be_vote(s, 0x80, 0, 1, 0, 0));
	SEED("be_vote_huge_proposal", 0, put8(s, becmd(BE_TMO)); put8(s, 0); put8(s, 2);
	     put_be_vote(s, 0, 2, 0xffffffffu, 40, 0); put8(s, becmd(BE_TMO)); put8(s, 0); put8(s, 2));
	SEED("be_tmo_warmup", 0, put8(s, becmd(BE_TMO)); put8(s, 0x80); put8(s, 200); BEMSG(.optype = 0, .n = 2));
	SEED("be_ctrl_raw", 0, put8(s, becmd(BE_CTRL)); put8(s, 8 | 3 << 4); put8(s, 24);
	     for (int k = 0; k < 24; k++) put8(s, (uint8_t)k);
	     put8(s, becmd(BE_CTRL)); put8(s, 0); put8(s, 0x80 | 3); put8(s, 1); put8(s, 3); put8(s, 0));
	SEED("be_post_send", 0, put_be_post(s, 0, 1000, 0));
	SEED("be_post_send_imm_two_sges", 0, put_be_post(s, 1 | 4, 2000, 0));
	SEED("be_post_write_imm_deadline", 0, put_be_post(s, 3, 3000, 1); put_be_post(s, 3, 300, 130));
	SEED("be_post_write_burst", 0, put_be_post(s, 2 | 3 << 5, 4000, 0); put_be_post(s, 0x10 | 8, 5, 0));
	SEED("be_post_refused", 0, put_be_post(s, 0x80, 100, 0); put_be_post(s, 0, 100, 254);
	     put_be_post(s, 0, 100, 255));
	/* congestion notification and control; setup byte 0x80:
	 * QP_SR is the twin that runs EQDS */
	{
		static const uint8_t in_flight[2] = { 0x00, 0x01 }, stale3[3] = { 0x60, 0x40, 0x5f },
			     any[1] = { 0x80 }, acked[2] = { 0xe0, 0x20 };
		static const uint8_t trim_raw[8] = { 0, 2, 0, 0, 0, 0, 0, 1 }, rts_raw[16] = { 0, 0, 0, 0, 0, 1 },
			     pull_raw[8] = { 0, 0, 0, 0, 0, 0, 0x40, 0 };

		SEED("cc_cnp_each_qp", 0, for (uint8_t q = 0; q < NQP; q++) put_cc_cnp(s, q, 0, 0);
		     put_cc_cnp(s, QP_SR | 8, 0, 0); put_cc_cnp(s, QP_BE | 8, 0x40, 0); put_cc_cnp(s, QP_UC | 0x10, 0x80, 0));
		SEED("cc_cnp_misaddressed", 0, put_cc_cnp(s, QP_RC, 0, 5 << 2); put_cc_cnp(s, QP_SR, 0, 6 << 2);
		     put_cc_cnp(s, QP_EC, 0, 7 << 2); put_cc_cnp(s, QP_UC, 0, 0xdc); put_cc_cnp(s, QP_UD, 0xc0, 0x40));
		SEED("cc_cnp_sr_sent_psn", 0, put_sr_post(s, QP_SR, true, 2, 2000); put_cc_cnp(s, QP_SR, 0x01, 0);
		     put_cc_cnp(s, QP_SR, 0xc0, 0); put_cc_cnp(s, QP_EC, 0, 0));
		SEED("cc_cnp_eqds_sent_psn", 0x80, put_sr_post(s, QP_SR, false, 2, 2000); put_cc_cnp(s, QP_SR, 0x02, 0));
		SEED("cc_ce_sr_msg", 0, put_cc_tos(s, 3, false); SRMSG(.qi = QP_SR, .n = 12, .lastsel = 99));
		SEED("cc_ce_sr_msg_burst", 0, put_cc_tos(s, 3, true); SRMSG(.qi = QP_SR, .n = 12, .lastsel = 99);
		     put_cc_tos(s, 3, false); SRMSG(.qi = QP_SR, .n = 6, .lastsel = 9));
		SEED("cc_ce_ec_msg", 0, put_cc_tos(s, 0xff, false); SRMSG(.qi = QP_EC, .n = 9, .lastsel = 70));
		SEED("cc_ce_rc_uc_ud", 0, put_cc_tos(s, 3, false); put_msg(s, QP_RC, true, false, 0, 6, 100, 0);
		     put_cc_tos(s, 3, false); put_msg(s, QP_UC, true, false, 0, 9, 100, 0);
		     put_cc_tos(s, 3, false); put_pkt_simple(s, QP_UD, ROCE_OP_SEND_ONLY, 0, 0, LEN(4, 0), 0));
		SEED("cc_ce_be_msg", 0, put_cc_tos(s, 3, false); BEMSG(.optype = 0, .n = 6, .lastsel = 99));
		SEED("cc_ce_eqds_sr_msg", 0x80, put_cc_tos(s, 3, false); SRMSG(.qi = QP_SR, .n = 10, .lastsel = 5);
		     put_sr_post(s, QP_SR, true, 0, 2000));
		SEED("cc_trimmed_sr_pkt", 0, put_cc_trimmed(s, 0); SRPKT(.qi = QP_SR, .opsel = OPK(0, 0));
		     put_cc_trimmed(s, 17); SRPKT(.qi = QP_SR, .opsel = OPK(5, 0), .keysel = 3));
		SEED("cc_trimmed_sr_msg", 0, put_cc_trimmed(s, 5); SRMSG(.qi = QP_SR, .n = 7, .lastsel = 99));
		SEED("cc_trimmed_ec_msg", 0, put_cc_trimmed(s, 0); SRMSG(.qi = QP_EC, .n = 9, .lastsel = 70, .order = 3));
		SEED("cc_trimmed_dup_and_ahead", 0, SRPKT(.qi = QP_SR, .opsel = OPK(0, 0)); put_cc_trimmed(s, 0);
		     SRPKT(.qi = QP_SR, .psnsel = 0xa0, .opsel = OPK(0, 0)); put_cc_trimmed(s, 0);
		     SRPKT(.qi = QP_SR, .psnsel = 0xe0, .opsel = OPK(0, 0)); put_cc_trimmed(s, 0);
		     SRPKT(.qi = QP_SR, .psnsel = 0x83, .opsel = OPK(0, 0)));
		SEED("cc_dscp63_whole", 0, put_cc_tos(s, 0xfc, false); SRPKT(.qi = QP_SR, .opsel = OPK(0, 3));
		     put_cc_tos(s, 0xfe, false); SRMSG(.qi = QP_EC, .n = 3, .lastsel = 7));
		SEED("cc_trim_in_flight", 0, put_sr_post(s, QP_SR, true, 2, 2999);
		     put_cc_trim(s, 1 << 2, 0, in_flight, 2); put8(s, CMD_TIME); put8(s, 4);
		     put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 0));
		SEED("cc_trim_stale_ahead", 0, put_sr_post(s, QP_SR, false, 2, 2000); put_cc_trim(s, 2 << 2, 0, stale3, 3);
		     put_cc_trim(s, 0x00, 0, any, 1); put32(s, 0x123456));
		SEED("cc_trim_after_sack", 0, put_sr_post(s, QP_SR, true, 2, 1500);
		     put_sr_sack(s, QP_SR, true, 0x62, 0, 0, 0, 0, 0); put_cc_trim(s, 1 << 2, 0, acked, 2));
		SEED("cc_trim_flaws", 0, put_sr_post(s, QP_SR, false, 2, 2000);
		     put_cc_trim(s, 0x80 | 31 << 2, 0, any, 0); /* n = 0 */
		     put_cc_trim(s, 0x80 | 4 << 2, 0, (const uint8_t[33]){ 0 }, 33); /* n = 33 */
		     put_cc_trim(s, 2 | 1 << 2, 0, in_flight, 2); /* the header says 3 */
		     put_cc_trim(s, 1 << 2, 3, in_flight, 2)); /* cut short */
		SEED("cc_trim_ec", 0, put_sr_post(s, QP_EC, false, 0, 2000); put_cc_trim(s, 1 | 1 << 2, 0, in_flight, 2));
		SEED("cc_trim_eqds", 0x80, put_sr_post(s, QP_SR, true, 2, 2999); put_cc_trim(s, 2 << 2, 0, stale3, 3);
		     put_cc_trim(s, 1 << 2, 0, in_flight, 2); put8(s, CMD_TIME); put8(s, 4));
		SEED("cc_rts_pulls", 0, put_cc_rts(s, 0x30, 0); put8(s, CMD_TIME); put8(s, 6); put_cc_rts(s, 0x12, 0);
		     put8(s, CMD_TIME); put8(s, 8); put_cc_rts(s, 0x01, 0); put8(s, CMD_TIME); put8(s, 6));
		SEED("cc_rts_flaws", 0, put_cc_rts(s, 0x50, 0); put_cc_rts(s, 0x04, 0); put_cc_rts(s, 0x06, 0);
		     put_cc_rts(s, 0x08, 0); put_cc_rts(s, 0x00, 0x20); put_cc_rts(s, 0x00, 3); put_cc_rts(s, 0x00, 5 << 2);
		     put_cc_rts(s, 0x0e, 0); put8(s, CMD_TIME); put8(s, 10));
		SEED("cc_rts_huge_paced", 0, put_cc_rts(s, 0x0a, 0); put_cc_rts(s, 0x0b, 0); put8(s, CMD_TIME); put8(s, 20);
		     put8(s, CMD_TIME); put8(s, 12));
		SEED("cc_rts_huge_then_reset", 0, put_cc_rts(s, 0x0a, 0); put_cc_rts(s, 0x0b, 0); put8(s, CMD_TIME);
		     put8(s, 10); put_cc_reset(s, 0); put_cc_rts(s, 0x30, 0); put8(s, CMD_TIME); put8(s, 12);
		     put_cc_reset(s, 1); put8(s, CMD_TIME); put8(s, 12));
		SEED("cc_rts_then_destroy", 0, put_cc_rts(s, 0x0a, 0); put_cc_rts(s, 0x0b, 0); put8(s, CMD_TIME);
		     put8(s, 10); put_cc_reset(s, 2); put8(s, CMD_TIME); put8(s, 12); put_cc_rts(s, 0x30, 0);
		     put8(s, CMD_TIME); put8(s, 10));
		SEED("cc_eqds_post_pull", 0x80, for (int k = 0; k < 4; k++) put_sr_post(s, QP_SR, true, 2, 2999);
		     put8(s, CMD_TIME); put8(s, 5); put_cc_pull(s, 0x00, 0); put8(s, CMD_TIME); put8(s, 6);
		     put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 0); put_cc_pull(s, 0x40, 0); put8(s, CMD_TIME);
		     put8(s, 6); put_sr_sack(s, QP_SR, true, 0, 0, 0, 0, 0, 0));
		SEED("cc_eqds_pull_flaws", 0x80, for (int k = 0; k < 4; k++) put_sr_post(s, QP_SR, true, 2, 2999);
		     put8(s, CMD_TIME); put8(s, 5); put_cc_pull(s, 0x60, 0); put_cc_pull(s, 0xc0, 0);
		     put_cc_pull(s, 0x20, 0); put_cc_pull(s, 0xa0, 0); put_cc_pull(s, 0x00, 0x20); put_cc_pull(s, 0x00, 3);
		     put_cc_pull(s, 0x00, 5 << 2); put_cc_pull(s, 0x80, 0); put32(s, 0x10000); put32(s, 0);
		     put8(s, CMD_TIME); put8(s, 6));
		SEED("cc_eqds_reset_recreate", 0x80, put_sr_post(s, QP_SR, true, 2, 2999); put_cc_pull(s, 0, 0);
		     put_cc_reset(s, 2); put_sr_post(s, QP_SR, true, 2, 2999); put_cc_pull(s, 0, 0); put8(s, CMD_TIME);
		     put8(s, 6));
		SEED("cc_pull_not_eqds", 0, put_sr_post(s, QP_SR, false, 2, 2000); put_cc_pull(s, 0x00, 0);
		     put_cc_pull(s, 0x41, 0));
		SEED("cc_ctrl_raw", 0, put_cc_ctrl(s, 0x00, trim_raw, 8); put_cc_ctrl(s, 0x01, rts_raw, 16);
		     put_cc_ctrl(s, 0x15, rts_raw, 16); put_cc_ctrl(s, 0x06, pull_raw, 8); put_cc_ctrl(s, 0x0a, pull_raw, 8);
		     put_cc_ctrl(s, 0x35, rts_raw, 3));
	}
#undef SRMSG
#undef SRPKT
#undef BEMSG
#undef BEPKT
	printf("fuzz_responder: wrote %u seeds to %s\n", count, dir);
	return 0;
}
