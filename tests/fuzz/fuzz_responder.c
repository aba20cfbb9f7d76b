/* Fuzz target for the receive side of connected RC, UC and UD QPs (the
 * responder, and the RC completer for responses) and of an sr and an ec
 * QP (their receiver, and their sender's SACK and NACK handling) and of a
 * be QP (its receiver, its VOTE control packets, its sender): each
 * input is decoded into a short sequence of forged packets, multi-packet
 * messages, raw frames, local work requests, time jumps and region
 * revocations, sent from a raw loop port to a context. After every input
 * every byte outside the registered regions (guard zones, a read-only
 * region, another PD's region, a deregistered one) must be unchanged, or
 * the target aborts; an sr/ec message that completes must hold exactly
 * the bytes sent, also where ec rebuilt them; a be receive completion
 * must fit the receive it ends and carry TIMEOUT or PREEMPTED only with
 * PARTIAL. Congestion notification and control: CNPs to every
 * QP, CE-marked and trimmed packets, TRIM, RTS and PULL control packets,
 * an sr QP that runs EQDS in place of the plain one (setup bit 7), resets
 * and re-creation of the sr/ec QPs; the context must never send two CNPs
 * for one QP less than 4 us apart (simulated time), and the EQDS sender's
 * credit must never pass what its own RTSs asked for by more than a quantum.
 * Built for libFuzzer with clang; with -DFUZZ_STANDALONE_MAIN it carries a
 * main() that replays a corpus and seeded random inputs (every build), and
 * writes the seed corpus with --write-corpus DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
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

static bool is_sr(unsigned qi)
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
#define BE_CMD(c) (((c) & 0x8f) == 0x8a)
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
#define SR_CMD(c) (((c) & 0xc8) == 0xc0)
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
#define CC_CMD(c) (((c) & 0x8f) == 0x88)
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

static struct {
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
} fz;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_responder: %s (%s)\n", what, uroce_last_error());
	abort();
}

/* ---- the input reader: past the end it reads zeros ---- */

struct reader {
	const uint8_t *p;
	size_t n, at;
};

static uint8_t rd8(struct reader *r)
{
	return r->at < r->n ? r->p[r->at++] : 0;
}

static uint16_t rd16(struct reader *r)
{
	uint16_t v = rd8(r);
	return (uint16_t)(v | rd8(r) << 8);
}

static uint32_t rd32(struct reader *r)
{
	uint32_t v = rd16(r);
	return v | (uint32_t)rd16(r) << 16;
}

/* ---- setup, once per process ---- */

static uint8_t *area(enum area a)
{
	return fz.mem + fz.off[a];
}

static uint64_t area_va(enum area a)
{
	return (uint64_t)(uintptr_t)area(a);
}

static void bring_up(unsigned i)
{
	struct uroce_qp_attr a;
	enum uroce_qp_type t = qp_type[i];
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	if (uroce_qp_modify(fz.qp[i], &a, UROCE_QP_STATE))
		die("qp to RESET");
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qkey = UD_QKEY;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ |
	                    UROCE_ACCESS_REMOTE_ATOMIC;
	mask = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	       (t == UROCE_QPT_UD ? UROCE_QP_QKEY : UROCE_QP_ACCESS_FLAGS);
	if (uroce_qp_modify(fz.qp[i], &a, mask))
		die("qp to INIT");
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = qp_mtu_enum[i];
	a.dest_qp_num = peer_qpn[i];
	a.dest_token = FZ_PEER_TOKEN;
	a.rq_psn = fz.base_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	roce_ipv4_mapped(a.ah_attr.dgid, loop_port_ipv4_be(RAW_PORT));
	a.ah_attr.sgid_index = fz.sgid_v4;
	if (t == UROCE_QPT_UD)
		mask = UROCE_QP_STATE;
	else
		mask = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
		       UROCE_QP_DEST_TOKEN | (t == UROCE_QPT_RC ? UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER : 0);
	if (uroce_qp_modify(fz.qp[i], &a, mask))
		die("qp to RTR");
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = (fz.base_psn + 0x1000) & ROCE_PSN_MASK;
	a.timeout = 10;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	mask = UROCE_QP_STATE | UROCE_QP_SQ_PSN |
	       (t == UROCE_QPT_RC ? UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
	                                    UROCE_QP_MAX_QP_RD_ATOMIC : 0);
	if (uroce_qp_modify(fz.qp[i], &a, mask))
		die("qp to RTS");
	fz.refill[i] = true;
	if (i == QP_BE) {
		/* the peer starts over with the QP: message 0 from its first PSN */
		fz.be.rx_psn = a.rq_psn;
		fz.be.rx_msg = 0;
		memset(fz.be.touched, 0, sizeof(fz.be.touched));
	}
	if (is_sr(i)) {
		/* the peer starts over with the QP */
		struct sr_peer *sp = &fz.sr[i - QP_SR];

		sp->rx_psn = a.rq_psn;
		sp->rx_msg = 0;
		sp->dups = 0;
		sp->tx_psn0 = sp->tx_nxt = a.sq_psn;
		sp->tx_msgs = 0;
		memset(sp->touched, 0, sizeof(sp->touched));
		sp->rts_want = sp->rts_spec = sp->asked = 0;
	}
}

static void post_recvs(unsigned i)
{
	struct uroce_sge sg[2] = {
		{ area_va(AREA_B1), B1_LEN, fz.mr[AREA_B1]->lkey },
		{ area_va(AREA_B2), B2_LEN, fz.mr[AREA_B2]->lkey },
	};
	struct uroce_recv_wr wr = { .wr_id = i, .sg_list = sg, .num_sge = 2 };

	/* posting past the depth fails: that is how the queue is known full */
	for (unsigned k = 0; k < RECV_DEPTH; k++)
		if (uroce_post_recv(fz.qp[i], &wr, NULL))
			break;
	fz.refill[i] = false;
}

static struct uroce_mr *reg(struct uroce_pd *pd, enum area a, int access)
{
	struct uroce_mr *mr;

	if (uroce_mr_reg(pd, area(a), area_len[a], access, &mr))
		die("mr_reg");
	return mr;
}

/* The adaptive-timeout group over the be QP, new for every input (its
 * rounds and votes start over), and the QP's own deadline back. */
/* Receive handles whose chunk indexes reach the top of the message's
 * 2^17 packets (CC_RESET bit 2) need a buffer that long at the sr MTU:
 * mapped on demand, outside the guard-checked areas, written only by
 * such messages. */
#define BIG_LEN ((1u << SRW_IDX_BITS) * 256u + 65536u)
static uint8_t *fz_big;
static struct uroce_mr *fz_big_mr;
static uint32_t fz_chunk_next; /* rel.chunk_pkts of the next sr/ec QP new_qp makes; 0: its usual */

static void be_group(void)
{
	struct uroce_tmo_attr ta = { .group_id = BE_GROUP, .msg_bytes = 4096 };

	if (fz.tmo && uroce_tmo_destroy(fz.tmo))
		die("tmo_destroy");
	fz.tmo = NULL;
	if (uroce_tmo_create(&ta, &fz.qp[QP_BE], 1, &fz.tmo))
		die("tmo_create");
	if (uroce_qp_set_timeout(fz.qp[QP_BE], BE_TMO_US))
		die("qp_set_timeout");
}

static struct uroce_qp *new_qp(unsigned i, bool eqds);

static void setup(void)
{
	struct uroce_context_attr ca = { .port = "loop:0" };
	struct port_config pc = { .kind = PORT_KIND_LOOP, .loop_index = RAW_PORT };
	char err[256] = "";
	size_t at = GUARD;
	struct uroce_mr *tmp;

	fz.fab = loop_fabric_create(2, 1);
	if (!fz.fab || loop_fabric_connect(fz.fab, CTX_PORT, RAW_PORT, NULL, NULL))
		die("loop fabric");
	ca.loop_fabric = fz.fab;
	if (uroce_context_create(&fz.ctx, &ca))
		die("context_create");
	pc.fabric = fz.fab;
	if (port_open(&fz.raw, &pc, err, sizeof(err))) {
		fprintf(stderr, "fuzz_responder: raw port: %s\n", err);
		abort();
	}
	{
		uint8_t want[16], gid[16];
		bool found = false;

		roce_ipv4_mapped(want, loop_port_ipv4_be(CTX_PORT));
		for (int i = 0; uroce_query_gid(fz.ctx, 1, i, gid) == 0; i++) {
			if (memcmp(gid, want, 16) == 0) {
				fz.sgid_v4 = (uint8_t)i;
				found = true;
			} else if (!fz.have_gid6 && memcmp(gid, want, 12) != 0) {
				memcpy(fz.ctx_gid6, gid, 16);
				fz.have_gid6 = true;
			}
		}
		if (!found)
			die("no GID of the loop port's IPv4 address");
	}
	if (uroce_pd_alloc(fz.ctx, &fz.pd) || uroce_pd_alloc(fz.ctx, &fz.pd2) ||
	    uroce_cq_create(fz.ctx, 4096, &fz.scq) || uroce_cq_create(fz.ctx, 4096, &fz.rcq))
		die("pd/cq");

	for (int a = 0; a < AREA__COUNT; a++) {
		fz.off[a] = at;
		at += area_len[a] + GUARD;
	}
	fz.mem_len = at;
	fz.mem_len = (fz.mem_len + 4095) / 4096 * 4096; /* aligned_alloc takes whole pages here */
	fz.mem = aligned_alloc(4096, fz.mem_len);
	fz.shadow = malloc(fz.mem_len);
	fz.a_snap = malloc(A_LEN);
	if (!fz.mem || !fz.shadow || !fz.a_snap)
		die("memory");
	/* distinct bytes everywhere, none the forged payloads carry */
	for (size_t k = 0; k < fz.mem_len; k++)
		fz.shadow[k] = (uint8_t)(0xa5 ^ (k * 13) ^ (k >> 9));
	memcpy(fz.mem, fz.shadow, fz.mem_len);

	/* a key that was valid once */
	tmp = reg(fz.pd, AREA_A, 15);
	fz.revoked_rkey = tmp->rkey;
	if (uroce_mr_dereg(tmp))
		die("mr_dereg");
	fz.mr[AREA_A] = reg(fz.pd, AREA_A, 15);
	fz.mr[AREA_B1] = reg(fz.pd, AREA_B1, UROCE_ACCESS_LOCAL_WRITE);
	fz.mr[AREA_B2] = reg(fz.pd, AREA_B2, UROCE_ACCESS_LOCAL_WRITE);
	fz.mr[AREA_C] = reg(fz.pd, AREA_C, UROCE_ACCESS_LOCAL_WRITE);
	fz.mr[AREA_D] = reg(fz.pd, AREA_D, UROCE_ACCESS_REMOTE_READ);
	fz.mr[AREA_E] = reg(fz.pd2, AREA_E, 15);

	fz_big = mmap(NULL, BIG_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fz_big == MAP_FAILED || uroce_mr_reg(fz.pd, fz_big, BIG_LEN, UROCE_ACCESS_LOCAL_WRITE, &fz_big_mr))
		die("big receive region");
	for (unsigned i = 0; i < NQP; i++)
		fz.qp[i] = new_qp(i, false);
	/* QP_SR's twin that runs EQDS (receiver-driven credit) */
	fz.sr_twin[0] = fz.qp[QP_SR];
	fz.sr_twin[1] = new_qp(QP_SR, true);
	if (ec_code_init(&fz.code, EC_KIND_RS, EC_K, EC_M))
		die("ec_code_init");
	be_group();
	fz.trim_next = -1;
	fz.ready = true;
}

/* Create QP i as setup has it (eqds: QP_SR's twin with EQDS) */
static struct uroce_qp *new_qp(unsigned i, bool eqds)
{
	struct uroce_qp_init_attr ia = { .qp_type = qp_type[i], .send_cq = fz.scq, .recv_cq = fz.rcq };
	struct uroce_qp *qp;

	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = RECV_DEPTH;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	if (i == QP_SR || i == QP_EC) {
		/* sr completes in order, ec as each message is whole */
		ia.rel.reliability = i == QP_SR ? UROCE_REL_SR : UROCE_REL_EC;
		ia.rel.ordering = i == QP_SR ? UROCE_ORDER_ORDERED : UROCE_ORDER_UNORDERED;
		ia.rel.window_pkts = SR_WINDOW;
		ia.rel.ec_code = UROCE_EC_RS;
		ia.rel.ec_k = EC_K;
		ia.rel.ec_m = EC_M;
		ia.rel.ec_fto_us = EC_FTO_US;
		ia.rel.chunk_pkts = i == QP_EC ? 2 : 0; /* partial-completion chunks */
		if (fz_chunk_next)
			ia.rel.chunk_pkts = fz_chunk_next;
	}
	if (i == QP_BE) {
		ia.rel.reliability = UROCE_REL_BE;
		ia.rel.timeout_us = BE_TMO_US;
	}
	if (eqds) {
		/* 1 Gb/s: one speculative BDP (20 us) is 2.5 KB, so a few posts
		 * wait for credit */
		ia.cc.algo = UROCE_CC_EQDS;
		ia.cc.link_mbps = 1000;
	}
	if (uroce_qp_create(fz.pd, &ia, &qp))
		die("qp_create");
	return qp;
}

/* ---- READ responses may carry only bytes a READ was allowed to see ---- */

static const struct roce_parse_opts trust_icrc = { .skip_icrc = true };

/* Remember every READ request a frame we send carries to the RC QP,
 * however it was made (structured or raw bytes). */
static void note_sent(const uint8_t *frame, uint32_t len)
{
	struct roce_pkt p;

	if (roce_parse(frame, len, &p, &trust_icrc) != UROCE_DROP_NONE ||
	    p.opcode != (ROCE_TR_RC | ROCE_OP_READ_REQUEST) || p.dqpn != uroce_qp_num(fz.qp[QP_RC]))
		return;
	fz.reads[fz.nreads % 64] = (struct sent_read){ p.psn, p.reth.dma_len, p.reth.va };
	fz.nreads++;
}

static bool inside(uint64_t va, uint64_t len, enum area a)
{
	return va >= area_va(a) && len <= area_len[a] && va - area_va(a) <= area_len[a] - len;
}

/* A READ response the context sent: its bytes must be those of a READ
 * request we sent, at that request's offset, inside a region that allows
 * remote reads of this PD (A or the read-only D). Anything else is memory
 * the peer had no right to see. */
static void check_read_response(const uint8_t *frame, uint32_t len)
{
	struct roce_pkt p;
	unsigned n = fz.nreads < 64 ? fz.nreads : 64;

	if (roce_parse(frame, len, &p, &trust_icrc) != UROCE_DROP_NONE || p.opcode < (ROCE_TR_RC | ROCE_OP_READ_RESP_FIRST) ||
	    p.opcode > (ROCE_TR_RC | ROCE_OP_READ_RESP_ONLY) || !p.payload_len)
		return;
	for (unsigned k = 0; k < n; k++) {
		const struct sent_read *r = &fz.reads[(fz.nreads - 1 - k) % 64];
		int32_t d = roce_psn_diff(p.psn, r->psn);
		uint64_t va = r->va + (uint64_t)d * qp_mtu[QP_RC];

		if (d < 0 || (uint64_t)d * qp_mtu[QP_RC] >= r->len || va < r->va)
			continue;
		if (inside(va, p.payload_len, AREA_A) || inside(va, p.payload_len, AREA_D)) {
			fz.st.read_resp_bytes += p.payload_len;
			return;
		}
	}
	fprintf(stderr, "fuzz_responder: READ response PSN %#x, %u bytes, answers no READ request inside a readable region\n",
	        p.psn, p.payload_len);
	abort();
}

/* ---- moving time and draining everything the context produced ---- */

/* A data packet the sr or ec QP's sender sent to its peer: the peer's
 * SACKs are forged relative to the newest PSN sent. */
static void note_sr_sent(const uint8_t *frame, uint32_t len)
{
	struct roce_pkt p;

	if (roce_parse(frame, len, &p, &trust_icrc) != UROCE_DROP_NONE ||
	    (p.opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY) && p.opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM)))
		return;
	for (unsigned i = QP_SR; i <= QP_EC; i++) {
		struct sr_peer *sp = &fz.sr[i - QP_SR];
		uint32_t nxt = (p.psn + 1) & ROCE_PSN_MASK;

		if (p.dqpn == peer_qpn[i] && roce_psn_diff(nxt, sp->tx_nxt) > 0 &&
		    roce_psn_diff(nxt, sp->tx_psn0) > 0 && roce_psn_diff(nxt, sp->tx_psn0) < 0x10000)
			sp->tx_nxt = nxt;
	}
}

/* An RTS the sr or ec QP's sender sent: the credit it may take is bounded
 * by the largest want (plus a quantum). */
static void note_rts(const uint8_t *frame, uint32_t len)
{
	struct roce_pkt p;

	if (roce_parse(frame, len, &p, &trust_icrc) != UROCE_DROP_NONE || p.opcode != (ROCE_TR_UC | ROCE_OP_SEND_ONLY) ||
	    p.payload_len < SRW_CTRL_HDR_LEN + SRW_RTS_LEN || p.payload[0] != SRW_VERSION || p.payload[1] != SRW_CTRL_RTS)
		return;
	for (unsigned i = QP_SR; i <= QP_EC; i++) {
		struct sr_peer *sp = &fz.sr[i - QP_SR];
		uint64_t want = roce_get_be64(p.payload + SRW_CTRL_HDR_LEN);

		if (p.dqpn == peer_qpn[i] + 1 && want > sp->asked)
			sp->asked = want;
	}
}

static void sr_wc(unsigned i, const struct uroce_wc *wc)
{
	struct sr_peer *sp = &fz.sr[i - QP_SR];

	if (wc->status != UROCE_WC_SUCCESS) {
		if (wc->status != UROCE_WC_WR_FLUSH_ERR)
			fz.st.sr_recv_err[i - QP_SR]++;
		return;
	}
	fz.st.sr_recv_ok[i - QP_SR]++;
	if (wc->byte_len > qp_mtu[i])
		fz.st.sr_recv_multi[i - QP_SR]++;
	if (wc->wc_flags & UROCE_WC_PARTIAL)
		fz.st.sr_partial[i - QP_SR]++;
	sp->wc_ok++;
	sp->wc_len = wc->byte_len;
	sp->wc_partial = wc->wc_flags & UROCE_WC_PARTIAL;
}

/* A be receive completion: it ends one receive of BE_RECV_LEN bytes. A
 * RECV places into that receive only, so its byte_len fits it; a WRITE
 * with immediate's byte_len counts what went to the key's region (not
 * bounded by the receive). Flags: TIMEOUT and PREEMPTED say the message
 * ended before it was whole, so they come with PARTIAL. */
static void be_flags_check(const struct uroce_wc *wc, const char *side)
{
	if (!(wc->wc_flags & UROCE_WC_PARTIAL) && (wc->wc_flags & (UROCE_WC_TIMEOUT | UROCE_WC_PREEMPTED))) {
		fprintf(stderr, "fuzz_responder: be %s completion wr_id %llu, status %d, %u bytes, flags %#x: TIMEOUT or "
		        "PREEMPTED without PARTIAL\n", side, (unsigned long long)wc->wr_id, (int)wc->status, wc->byte_len,
		        (unsigned)wc->wc_flags);
		abort();
	}
}

static void be_wc(const struct uroce_wc *wc)
{
	struct be_peer *bp = &fz.be;

	if (wc->status == UROCE_WC_WR_FLUSH_ERR)
		return;
	be_flags_check(wc, "receive");
	if (wc->opcode == UROCE_WC_RECV && wc->byte_len > BE_RECV_LEN) {
		fprintf(stderr, "fuzz_responder: be receive completion wr_id %llu, status %d, flags %#x: byte_len %u "
		        "past the %u bytes of the receive it ends\n", (unsigned long long)wc->wr_id, (int)wc->status,
		        (unsigned)wc->wc_flags, wc->byte_len, BE_RECV_LEN);
		abort();
	}
	if (fz.settling)
		return;
	bp->wc_ok++;
	bp->wc_len = wc->byte_len;
	bp->wc_flags = wc->wc_flags;
	bp->wc_status = (int)wc->status;
	bp->wc_opcode = (int)wc->opcode;
	if (wc->status != UROCE_WC_SUCCESS) {
		fz.st.be_recv_err++;
		return;
	}
	fz.st.be_recv_ok++;
	if (wc->opcode == UROCE_WC_RECV_RDMA_WITH_IMM)
		fz.st.be_recv_imm++;
	if (wc->wc_flags & UROCE_WC_PARTIAL)
		fz.st.be_recv_partial++;
	if (wc->wc_flags & UROCE_WC_TIMEOUT)
		fz.st.be_recv_timeout++;
	if (wc->wc_flags & UROCE_WC_PREEMPTED)
		fz.st.be_recv_preempted++;
}

static void be_send_wc(const struct uroce_wc *wc)
{
	if (wc->status != UROCE_WC_SUCCESS)
		return;
	be_flags_check(wc, "send");
	if (wc->wc_flags & UROCE_WC_TIMEOUT)
		fz.st.be_send_timeout++;
	else
		fz.st.be_send_ok++;
}

static void drain(void)
{
	struct uroce_frame in[64];
	struct uroce_wc wc[64];
	struct uroce_async_event ev;
	uint16_t got;
	int n;

	while ((got = port_rx_burst(fz.raw, in, 64)) > 0) {
		for (uint16_t k = 0; k < got; k++) {
			check_read_response(in[k].data, in[k].len);
			note_sr_sent(in[k].data, in[k].len);
			note_rts(in[k].data, in[k].len);
		}
		port_free(fz.raw, in, got);
	}
	while ((n = uroce_poll_cq(fz.rcq, 64, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			for (unsigned i = 0; i < NQP; i++) {
				if (wc[k].qp_num != uroce_qp_num(fz.qp[i]))
					continue;
				fz.refill[i] = true;
				if (i == QP_BE) {
					be_wc(&wc[k]);
					continue;
				}
				if (is_sr(i)) {
					sr_wc(i, &wc[k]);
					continue;
				}
				if (wc[k].status != UROCE_WC_SUCCESS)
					continue;
				if (wc[k].opcode == UROCE_WC_RECV) {
					fz.st.recv_ok++;
					if (wc[k].byte_len > qp_mtu[i] + (i == QP_UD ? 40u : 0u))
						fz.st.recv_multi++;
				} else if (wc[k].byte_len > qp_mtu[i]) {
					fz.st.write_imm_multi++;
				}
			}
		}
	}
	while ((n = uroce_poll_cq(fz.scq, 64, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			fz.st.send_wc++;
			for (unsigned i = QP_SR; i <= QP_EC; i++)
				if (wc[k].qp_num == uroce_qp_num(fz.qp[i]) && wc[k].status == UROCE_WC_SUCCESS)
					fz.st.sr_send_ok[i - QP_SR]++;
			if (wc[k].qp_num == uroce_qp_num(fz.qp[QP_BE]))
				be_send_wc(&wc[k]);
			if (wc[k].status == UROCE_WC_SUCCESS &&
			    (wc[k].opcode == UROCE_WC_RDMA_READ || wc[k].opcode == UROCE_WC_COMP_SWAP ||
			     wc[k].opcode == UROCE_WC_FETCH_ADD))
				fz.st.local_reads_done++; /* forged responses placed in C */
		}
	}
	while (uroce_get_async_event(fz.ctx, &ev) == 0)
		uroce_ack_async_event(&ev);
}

/* The notification point sends at most one CNP per CNP_MIN_GAP_NS per QP:
 * after every progress call, a QP whose CNP count moved by d must date its
 * last CNP (the engine's time of the receive burst it answers) at least d
 * x 4 us after the one before. */
static void cnp_check(void)
{
	for (unsigned i = 0; i < NQP; i++) {
		const struct uroce_qp *qp = fz.qp[i];
		uint64_t n = qp->stats.cnps_sent, t = qp->cnp_last_ns;

		if (n > fz.cnp_seen[i]) {
			uint64_t d = n - fz.cnp_seen[i];

			if (fz.cnp_dated[i] && t - fz.cnp_date[i] < d * CNP_MIN_GAP_NS) {
				fprintf(stderr, "fuzz_responder: QP %u sent %llu CNP(s) %llu ns after the one before (at most one "
				        "per %u ns)\n", i, (unsigned long long)d, (unsigned long long)(t - fz.cnp_date[i]),
				        CNP_MIN_GAP_NS);
				abort();
			}
			fz.cnp_date[i] = t;
			fz.cnp_dated[i] = true;
			fz.st.cnps_checked += d;
		}
		fz.cnp_seen[i] = n;
	}
}

/* A QP now in fz.qp[i] (new, or the other twin): its CNPs count from here. */
static void cnp_track(unsigned i)
{
	fz.cnp_seen[i] = fz.qp[i]->stats.cnps_sent;
	fz.cnp_date[i] = fz.qp[i]->cnp_last_ns;
	fz.cnp_dated[i] = fz.cnp_seen[i] != 0;
}

/* The EQDS sender (QP_SR's twin): it never sends past its credit and
 * speculation, and takes no credit past the largest want its RTSs carried
 * plus one quantum (checked when nothing is in flight, so every RTS it
 * sent has been seen). */
static void eqds_check(void)
{
	const struct sr_state *st = fz.qp[QP_SR] == fz.sr_twin[1] ? sr_of(fz.qp[QP_SR]) : NULL;
	uint64_t credit, sent, spec;

	if (!st || !st->cc.ops || st->cc.ops->id != UROCE_CC_EQDS || loop_fabric_in_flight(fz.fab))
		return;
	credit = eqds_tx_credit_cum(st->cc.st);
	sent = eqds_tx_sent(st->cc.st);
	spec = eqds_tx_spec(st->cc.st);
	if (credit > fz.sr[0].asked + EQDS_QUANTUM || sent > credit + spec) {
		fprintf(stderr, "fuzz_responder: EQDS sender: credit %llu (its RTSs asked for %llu at most), %llu sent, "
		        "%llu speculative\n", (unsigned long long)credit, (unsigned long long)fz.sr[0].asked,
		        (unsigned long long)sent, (unsigned long long)spec);
		abort();
	}
	fz.st.eqds_checked++;
}

static void step(uint64_t ns)
{
	loop_fabric_advance(fz.fab, ns);
	uroce_progress(fz.ctx);
	cnp_check();
	drain();
	eqds_check();
}

/* QPs knocked into ERR come back, so later packets still reach the
 * responder. Receive queues are topped up only here after a recovery and
 * by a time jump, so that enough SENDs find none (RNR NAK, UC/UD drop). */
static void sr_release(unsigned qi);

static void recover(void)
{
	for (unsigned i = 0; i < NQP; i++) {
		struct uroce_qp_attr qa;

		if (uroce_qp_query(fz.qp[i], &qa, NULL))
			die("qp_query");
		if (qa.qp_state == UROCE_QPS_ERR) {
			if (i < NQP_IB)
				fz.st.qp_errs++;
			else if (is_sr(i))
				fz.st.sr_qp_errs[i - QP_SR]++;
			else
				fz.st.be_qp_errs++;
			step(1000); /* let the flush completions out first */
			if (is_sr(i))
				sr_release(i);
			bring_up(i);
			post_recvs(i);
		}
	}
}

/* ---- the guard check ---- */

static void check_unchanged(const uint8_t *now, const uint8_t *was, size_t len, const char *what)
{
	if (memcmp(now, was, len) == 0)
		return;
	for (size_t k = 0; k < len; k++) {
		if (now[k] != was[k]) {
			fprintf(stderr, "fuzz_responder: %s changed at byte %zu of %zu: %02x, was %02x\n", what, k, len,
			        now[k], was[k]);
			break;
		}
	}
	abort();
}

static void check_guards(void)
{
	static const char *const name[AREA__COUNT] = { "guard before A", "guard before B1", "guard before B2",
		                                       "guard before C", "guard before D", "guard before E" };

	for (int a = 0; a < AREA__COUNT; a++)
		check_unchanged(fz.mem + fz.off[a] - GUARD, fz.shadow + fz.off[a] - GUARD, GUARD, name[a]);
	check_unchanged(fz.mem + fz.off[AREA_E] + E_LEN, fz.shadow + fz.off[AREA_E] + E_LEN, GUARD,
	                "guard after E");
	check_unchanged(area(AREA_D), fz.shadow + fz.off[AREA_D], D_LEN, "read-only region D");
	check_unchanged(area(AREA_E), fz.shadow + fz.off[AREA_E], E_LEN, "region E of another PD");
	if (!fz.mr[AREA_A])
		check_unchanged(area(AREA_A), fz.a_snap, A_LEN, "region A after deregistration");
}

static void revoke_toggle(void)
{
	if (fz.mr[AREA_A]) {
		fz.revoked_rkey = fz.mr[AREA_A]->rkey;
		if (uroce_mr_dereg(fz.mr[AREA_A]))
			die("mr_dereg A");
		fz.mr[AREA_A] = NULL;
		memcpy(fz.a_snap, area(AREA_A), A_LEN);
	} else {
		check_unchanged(area(AREA_A), fz.a_snap, A_LEN, "region A after deregistration");
		fz.mr[AREA_A] = reg(fz.pd, AREA_A, 15);
	}
}

/* ---- forging ---- */

/* Payload bytes: a pattern of the packet, never the memory's fill. */
static void fill_payload(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t k = 0; k < len; k++)
		p[k] = (uint8_t)(seed * 29u + k * 3u + 1u);
}

/* Headers of a packet from the raw port to the context, the way the
 * connected peer sends them. */
static void pkt_init(struct roce_pkt *p, unsigned qi)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->smac, fz.raw->mac, 6);
	loop_port_mac(CTX_PORT, p->dmac);
	roce_ipv4_mapped(p->sip, fz.raw->ipv4_be);
	roce_ipv4_mapped(p->dip, loop_port_ipv4_be(CTX_PORT));
	p->ttl = 64;
	p->dont_fragment = true;
	p->sport = 0xc000;
	p->dport = ROCE_UDP_PORT;
	p->pkey = ROCE_PKEY_DEFAULT;
	p->dqpn = uroce_qp_num(fz.qp[qi]);
	p->deth.qkey = UD_QKEY;
	p->deth.src_qp = PEER_QPN;
}

/* Address, P_Key and header variations from the flags byte: bits 2..4
 * pick the addressing (0..4 right, 5 another source, 6 another
 * destination, 7 another P_Key), bit 5 with mode 4 IPv6, bit 6 alone a
 * VLAN tag. Most combinations are what the connected peer sends. */
static void pkt_addressing(struct roce_pkt *p, uint8_t flags)
{
	switch (flags >> 2 & 7) {
	case 4:
		if ((flags & 0x20) && fz.have_gid6) {
			/* RoCEv2 over IPv6 to our IPv6 GID, from an address nobody connected */
			p->ipv6 = true;
			memcpy(p->dip, fz.ctx_gid6, 16);
			memset(p->sip, 0, 16);
			p->sip[0] = 0xfe;
			p->sip[1] = 0x80;
			p->sip[15] = 2;
			p->flow_label = 0x12345;
		}
		break;
	case 5: /* another host */
		p->sip[15] ^= 0x0b;
		break;
	case 6: /* not us */
		p->dip[14] ^= 0x40;
		break;
	case 7: /* another partition, or limited membership of ours */
		p->pkey = (flags & 0x20) ? 0x7fff : 0x1234;
		break;
	default:
		break;
	}
	p->has_vlan = (flags & 0xc0) == 0x40;
	p->vlan_tci = 3;
}

/* flags with both top bits and addressing mode 7: a flipped ICRC bit */
static bool flags_bad_icrc(uint8_t flags)
{
	return (flags & 0xdc) == 0xdc;
}

/* Build p into a frame of the raw port and send it; bad_icrc flips a bit
 * of the ICRC. Returns false when it cannot be built. */
static bool send_pkt(const struct roce_pkt *p, bool bad_icrc)
{
	struct uroce_frame f;
	struct roce_pkt q;
	int len;

	if (fz.tos_next || fz.trim_next >= 0) {
		/* CC_TOS, CC_TRIMMED: this command's packets carry a TOS (CE,
		 * DSCP), and those with a RETH and a payload arrive cut short as a
		 * switch trims them (DSCP 63, the RETH's length kept) */
		const struct roce_opcode_info *info = roce_opcode_info(p->opcode);

		q = *p;
		q.tos = fz.tos_next;
		if (fz.trim_next >= 0 && info && (info->mask & ROCE_HAS(ROCE_HDR_RETH)) && q.payload_len) {
			q.payload_len = (uint32_t)fz.trim_next % q.payload_len;
			q.tos = (uint8_t)(SRW_TRIM_DSCP << 2 | (fz.tos_next & 3u));
		}
		p = &q;
	}
	if (port_alloc(fz.raw, &f, 1) != 1)
		die("raw port: no frame");
	len = roce_build(f.data, f.room, p);
	if (len < 0) {
		port_free(fz.raw, &f, 1);
		return false;
	}
	if (bad_icrc)
		f.data[len - 1] ^= 0x10;
	f.len = (uint32_t)len;
	note_sent(f.data, f.len);
	if (port_tx_burst(fz.raw, &f, 1) != 1)
		port_free(fz.raw, &f, 1);
	fz.st.pkts++;
	for (unsigned k = 0; k < STEPS_PER_PKT && !fz.burst_next; k++)
		step(1000); /* CC_TOS's burst: the command's packets arrive together, at its end */
	return true;
}

static void send_bytes(const uint8_t *b, uint32_t len)
{
	struct uroce_frame f;

	if (!len)
		return;
	if (port_alloc(fz.raw, &f, 1) != 1)
		die("raw port: no frame");
	if (len > f.room)
		len = f.room;
	memcpy(f.data, b, len);
	f.len = len;
	note_sent(f.data, f.len);
	if (port_tx_burst(fz.raw, &f, 1) != 1)
		port_free(fz.raw, &f, 1);
	fz.st.pkts++;
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
}

static void qp_psns(unsigned qi, uint32_t *epsn, uint32_t *snd_nxt)
{
	struct uroce_qp_attr qa;

	if (uroce_qp_query(fz.qp[qi], &qa, NULL))
		die("qp_query");
	*epsn = qa.rq_psn;
	*snd_nxt = qa.sq_psn;
}

/* Region the rkey choice names: its key, start and length. */
static void pick_key(uint8_t sel, struct reader *r, uint32_t *rkey, uint64_t *base, uint64_t *len)
{
	enum area a = AREA_A;

	switch (sel & 7) {
	case 4:
		a = AREA_D;
		break;
	case 5:
		a = AREA_E;
		break;
	case 6:
		*rkey = fz.revoked_rkey;
		break;
	case 7:
		*rkey = rd32(r);
		break;
	default:
		break;
	}
	*base = area_va(a);
	*len = area_len[a];
	if ((sel & 7) < 6)
		*rkey = fz.mr[a] ? fz.mr[a]->rkey : fz.revoked_rkey;
}

static uint64_t pick_va(uint8_t mode, uint16_t off, uint64_t base, uint64_t len)
{
	switch (mode & 7) {
	case 0: return base + off % len;
	case 1: return base;
	case 2: return base + len - off % 64;             /* near the end: may straddle it */
	case 3: return base - 1 - off % 64;                /* just before the start */
	case 4: return base + len + off % 64;              /* just past the end */
	case 5: return UINT64_MAX - off % 4096;            /* va + len wraps 2^64 */
	case 6: return base + ((uint64_t)off << 32);       /* far away */
	default: return base + (off % len & ~7ull);        /* aligned, inside */
	}
}

/* One structured packet: 23 bytes after the command byte. */
static void cmd_pkt(struct reader *r)
{
	uint8_t t = rd8(r), psnsel = rd8(r), keysel = rd8(r);
	uint16_t vaoff = rd16(r);
	uint8_t lensel = rd8(r), flags = rd8(r);
	uint32_t imm = rd32(r);
	uint8_t syn = rd8(r), qkeysel = rd8(r);
	uint16_t msn = rd16(r);
	uint32_t swap = rd32(r), cmp = rd32(r);
	static uint8_t payload[MAX_PAYLOAD];
	unsigned qi = (t & 3) % 3; /* RC twice as often: it has the most paths */
	uint32_t mtu = qp_mtu[qi], epsn, snd_nxt, base_psn;
	unsigned opsel = t >> 2;
	const struct roce_opcode_info *info;
	struct roce_pkt p;
	uint64_t rbase, rlen, va;
	uint32_t rkey = 0;
	bool unknown = false;

	pkt_init(&p, qi);
	if (opsel < 48) {
		const uint8_t *ops = qi == QP_RC ? rc_ops : qi == QP_UC ? uc_ops : ud_ops;
		unsigned nops = qi == QP_RC ? sizeof(rc_ops) : qi == QP_UC ? sizeof(uc_ops) : sizeof(ud_ops);

		p.opcode = (uint8_t)(qp_tr[qi] | ops[opsel % nops]);
	} else if (opsel < 56) {
		p.opcode = (uint8_t)(qp_tr[(qi + 1 + (opsel & 1)) % 3] | rc_ops[(opsel >> 1) % sizeof(rc_ops)]);
	} else {
		p.opcode = (uint8_t)(imm >> 24 ^ cmp); /* any of the 256 */
	}
	info = roce_opcode_info(p.opcode);
	if (!info) {
		unknown = true;
		info = roce_opcode_info(ROCE_TR_UD | ROCE_OP_SEND_ONLY);
	}

	qp_psns(qi, &epsn, &snd_nxt);
	/* responses count back from the last PSN sent, requests from the expected one */
	base_psn = (info->mask & ROCE_REQ) ? epsn : snd_nxt - 1;
	switch (psnsel >> 5) {
	case 4: p.psn = base_psn + (psnsel & 31) - 16; break;
	case 5: p.psn = base_psn - 1 - (psnsel & 31); break;
	case 6: p.psn = swap; break;
	case 7: p.psn = base_psn + 0x800000; break;
	default: p.psn = base_psn; break;
	}
	p.psn &= ROCE_PSN_MASK;
	if (psnsel & 0x10 && !(info->mask & ROCE_REQ))
		p.psn = (snd_nxt - 1 - (psnsel & 7)) & ROCE_PSN_MASK; /* inside a recent window */

	pick_key(keysel, r, &rkey, &rbase, &rlen);
	va = pick_va(keysel >> 3, vaoff, rbase, rlen);
	p.reth.va = va;
	p.reth.rkey = rkey;
	p.atomic.va = (keysel & 0x40) ? va : (va & ~7ull);
	p.atomic.rkey = rkey;
	p.atomic.swap_add = (uint64_t)swap << (keysel >> 7 ? 32 : 0) | swap;
	p.atomic.compare = (uint64_t)imm << 32 | cmp;
	p.ieth_rkey = rkey;
	p.imm = imm;
	p.aeth.syndrome = syn;
	p.aeth.msn = msn | (uint32_t)(syn & 0x80) << 16;
	p.atomic_ack = (uint64_t)cmp << 32 | swap;
	p.deth.qkey = (qkeysel & 3) ? UD_QKEY : (qkeysel & 4) ? 0x80000000u | UD_QKEY : swap;
	p.deth.src_qp = (qkeysel & 8) ? swap & ROCE_QPN_MASK : PEER_QPN;
	if (qkeysel & 0x10)
		p.dqpn = (qkeysel & 0x20) ? (uroce_qp_num(fz.qp[(qi + 1) % 3])) : (swap & ROCE_QPN_MASK);
	p.ackreq = flags & 1;
	p.se = flags & 2;
	p.fecn = qkeysel & 0x40;
	p.becn = qkeysel & 0x80;
	p.migreq = (qkeysel & 0xc0) == 0xc0;
	pkt_addressing(&p, flags);

	if (info->mask & ROCE_PAYLOAD) {
		switch (lensel & 7) {
		case 3: p.payload_len = 0; break;
		case 4: p.payload_len = vaoff % (mtu + 1); break;
		case 5: p.payload_len = mtu + 1 + (lensel >> 3) * 97u; break;
		case 6: p.payload_len = 1 + (lensel >> 3 & 7); break;
		case 7: p.payload_len = (rd16(r) % 4) * 1024 + (lensel >> 3) * 13u; break;
		default: p.payload_len = mtu; break;
		}
		if (p.payload_len > MAX_PAYLOAD)
			p.payload_len = MAX_PAYLOAD;
		fill_payload(payload, p.payload_len, (uint32_t)fz.st.pkts);
		p.payload = payload;
	}
	switch (lensel >> 3 & 7) {
	case 0:
	case 1: p.reth.dma_len = p.payload_len; break;
	case 2: p.reth.dma_len = p.payload_len + mtu * (1u + (lensel >> 6)); break;
	case 3: p.reth.dma_len = 0; break;
	case 4: p.reth.dma_len = vaoff; break;
	case 5: p.reth.dma_len = swap; break;
	case 6: p.reth.dma_len = UINT32_MAX - (lensel >> 6); break;
	default: p.reth.dma_len = (uint32_t)(rbase + rlen - va) + (lensel >> 6); break; /* to the end, or past it */
	}
	if (unknown) {
		/* build a valid UD packet, then put the opcode with no row in */
		uint8_t op = p.opcode;
		struct uroce_frame f;
		int len;

		p.opcode = ROCE_TR_UD | ROCE_OP_SEND_ONLY;
		if (port_alloc(fz.raw, &f, 1) != 1)
			die("raw port: no frame");
		len = roce_build(f.data, f.room, &p);
		if (len > 0) {
			uint32_t l3 = ETH_HDR_LEN + (p.has_vlan ? VLAN_HDR_LEN : 0);
			uint32_t bth = l3 + (p.ipv6 ? IPV6_HDR_LEN : IPV4_HDR_LEN) + UDP_HDR_LEN;

			f.data[bth] = op;
			roce_put_le32(f.data + len - ICRC_LEN, roce_icrc(f.data + l3, (uint32_t)len - l3, p.ipv6));
			send_bytes(f.data, (uint32_t)len);
		}
		port_free(fz.raw, &f, 1);
		return;
	}
	send_pkt(&p, flags_bad_icrc(flags));
}

/* A well-formed multi-packet SEND or WRITE (FIRST, MIDDLEs of exactly
 * the MTU, LAST), sometimes with one flaw. 6 bytes after the command. */
static void cmd_msg(struct reader *r)
{
	uint8_t t = rd8(r), n = rd8(r);
	uint16_t lastlen = rd16(r), vaoff = rd16(r);
	unsigned qi = t & 1 ? QP_UC : QP_RC;
	bool write = t & 2, imm = t & 4;
	unsigned flaw = t >> 3 & 15; /* 0..7: none */
	uint32_t mtu = qp_mtu[qi], npkt = 2 + n % (qi == QP_UC ? 14u : 6u);
	uint32_t last = 1 + lastlen % mtu, total = (npkt - 1) * mtu + last;
	uint32_t epsn, snd_nxt, psn;
	static uint8_t payload[MAX_PAYLOAD];
	uint64_t va = area_va(AREA_A) + (total < A_LEN ? vaoff % (A_LEN - total + 1) : 0);

	qp_psns(qi, &epsn, &snd_nxt);
	psn = epsn;
	for (uint32_t k = 0; k < npkt; k++) {
		struct roce_pkt p;
		uint8_t op;
		bool is_last = k == npkt - 1;

		if (write)
			op = k == 0 ? ROCE_OP_WRITE_FIRST : !is_last ? ROCE_OP_WRITE_MIDDLE :
			     imm ? ROCE_OP_WRITE_LAST_IMM : ROCE_OP_WRITE_LAST;
		else
			op = k == 0 ? ROCE_OP_SEND_FIRST : !is_last ? ROCE_OP_SEND_MIDDLE :
			     imm ? ROCE_OP_SEND_LAST_IMM : ROCE_OP_SEND_LAST;
		pkt_init(&p, qi);
		p.opcode = (uint8_t)(qp_tr[qi] | op);
		p.psn = psn & ROCE_PSN_MASK;
		p.ackreq = is_last;
		p.imm = 0xabcd0000u | k;
		p.payload_len = is_last ? last : mtu;
		p.reth.va = va;
		p.reth.rkey = fz.mr[AREA_A] ? fz.mr[AREA_A]->rkey : fz.revoked_rkey;
		p.reth.dma_len = total;
		switch (flaw) {
		case 8: /* one MIDDLE a byte short */
			if (k == 1 && !is_last)
				p.payload_len--;
			break;
		case 9: /* a PSN skipped before the LAST */
			if (is_last)
				p.psn = (p.psn + 1) & ROCE_PSN_MASK;
			break;
		case 10: /* the RETH promises less than is sent */
			p.reth.dma_len = total - last;
			break;
		case 11: /* a LAST longer than what is left */
			if (is_last)
				p.payload_len = mtu;
			p.reth.dma_len = total - (last < mtu ? 1 : 0);
			break;
		case 12: /* a foreign key in the FIRST */
			p.reth.rkey = fz.mr[AREA_E]->rkey;
			break;
		case 13: /* the region revoked after the FIRST */
			if (k == 1)
				revoke_toggle();
			break;
		case 14: /* from another host */
			p.sip[15] ^= 0x0b;
			break;
		case 15: /* another P_Key */
			p.pkey = 0x1234;
			break;
		default:
			break;
		}
		fill_payload(payload, p.payload_len, k + total);
		p.payload = payload;
		send_pkt(&p, false);
		/* flaws that add a packet: a duplicate MIDDLE, and a MIDDLE after the LAST */
		if ((flaw == 6 && k == 1 && !is_last) || (flaw == 7 && is_last)) {
			if (flaw == 7) {
				p.opcode = (uint8_t)(qp_tr[qi] | (write ? ROCE_OP_WRITE_MIDDLE : ROCE_OP_SEND_MIDDLE));
				p.psn = (p.psn + 1) & ROCE_PSN_MASK;
				p.payload_len = mtu;
			}
			send_pkt(&p, false);
		}
		psn++;
	}
}

/* Raw frame bytes: n from the input. */
static void cmd_raw(struct reader *r, bool keep_l4)
{
	static uint8_t buf[2048];
	uint32_t n = rd8(r) * 4u + rd8(r) % 4u, len = 0;

	if (keep_l4) {
		/* valid Ethernet/IPv4/UDP in front of raw transport bytes, ICRC fixed */
		struct roce_pkt p;
		int hl;

		pkt_init(&p, QP_RC);
		p.opcode = ROCE_TR_UD | ROCE_OP_SEND_ONLY;
		hl = roce_build(buf, sizeof(buf), &p);
		if (hl < 0)
			die("roce_build");
		len = ETH_HDR_LEN + IPV4_HDR_LEN + UDP_HDR_LEN;
	}
	while (n-- && len < sizeof(buf) - ICRC_LEN && r->at < r->n)
		buf[len++] = rd8(r);
	if (keep_l4) {
		uint32_t l3 = ETH_HDR_LEN, udp = l3 + IPV4_HDR_LEN;

		len += ICRC_LEN;
		roce_put_be16(buf + l3 + 2, (uint16_t)(len - l3));
		roce_put_be16(buf + l3 + 10, 0);
		roce_put_be16(buf + l3 + 10, ipv4_csum(buf + l3, IPV4_HDR_LEN));
		roce_put_be16(buf + udp + 4, (uint16_t)(len - udp));
		roce_put_le32(buf + len - ICRC_LEN, roce_icrc(buf + l3, len - l3, false));
	}
	send_bytes(buf, len);
}

/* A local work request on the RC or UC QP, so that forged responses find
 * something outstanding. 4 bytes after the command. */
static void cmd_post(struct reader *r)
{
	static const enum uroce_wr_opcode ops[] = { UROCE_WR_RDMA_READ, UROCE_WR_ATOMIC_FETCH_AND_ADD,
		                                    UROCE_WR_ATOMIC_CMP_AND_SWP, UROCE_WR_RDMA_WRITE,
		                                    UROCE_WR_SEND, UROCE_WR_RDMA_WRITE_WITH_IMM };
	uint8_t sel = rd8(r);
	uint16_t len = rd16(r);
	uint8_t off = rd8(r);
	unsigned qi = sel & 1 ? QP_UC : QP_RC;
	enum uroce_wr_opcode op = ops[(sel >> 1) % 6];
	struct uroce_sge sg;
	struct uroce_send_wr wr;

	if (qi == QP_UC && (op == UROCE_WR_RDMA_READ || op == UROCE_WR_ATOMIC_FETCH_AND_ADD ||
	                    op == UROCE_WR_ATOMIC_CMP_AND_SWP))
		op = UROCE_WR_RDMA_WRITE;
	memset(&wr, 0, sizeof(wr));
	sg.lkey = fz.mr[AREA_C]->lkey;
	sg.length = op == UROCE_WR_ATOMIC_FETCH_AND_ADD || op == UROCE_WR_ATOMIC_CMP_AND_SWP ? 8u : len % 3500u;
	/* a READ's buffer ends where C does: one byte too many lands in the guard */
	if (op == UROCE_WR_RDMA_READ && (off & 1))
		sg.addr = area_va(AREA_C) + C_LEN - sg.length;
	else
		sg.addr = area_va(AREA_C) + (off * 8u) % (C_LEN - sg.length + 1) / 8 * 8;
	wr.wr_id = sel;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 0x10000ull * off;
	wr.wr.rdma.rkey = 0x1234;
	if (op == UROCE_WR_ATOMIC_FETCH_AND_ADD || op == UROCE_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = 0x10000ull * off;
		wr.wr.atomic.rkey = 0x1234;
		wr.wr.atomic.compare_add = len;
	}
	uroce_post_send(fz.qp[qi], &wr, NULL); /* a full queue refuses: fine */
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
}

static void cmd_time(struct reader *r)
{
	uint8_t e = rd8(r);

	/* up to ~1 s: retransmit timers, RNR waits, retry exhaustion; the
	 * application has posted more receives meanwhile */
	for (unsigned k = 0; k < 4; k++)
		step(1000ull << (e % 21));
	for (unsigned i = 0; i < NQP; i++)
		if (fz.refill[i])
			post_recvs(i);
}

/* ---- sr and ec: the forged peer of QP_SR and QP_EC ---- */

static struct sr_peer *peer_of(unsigned qi)
{
	if (!is_sr(qi))
		die("peer_of: not an sr/ec QP");
	return &fz.sr[qi - QP_SR];
}

/* Message payloads: a pattern that differs from one MTU to the next, so
 * a chunk rebuilt from the wrong data shows. */
static void fill_msg(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t k = 0; k < len; k++)
		p[k] = (uint8_t)(seed * 41u + k * 7u + (k >> 8) * 13u + 1u);
}

/* Message numbers single packets used: a message made of those is not
 * the forged sender's own, and its bytes are not checked. */
static void touch(unsigned qi, uint32_t msg)
{
	msg &= SRW_MSG_MASK;
	peer_of(qi)->touched[msg / 64] |= 1ull << (msg % 64);
}

static bool touched(unsigned qi, uint32_t msg)
{
	msg &= SRW_MSG_MASK;
	return peer_of(qi)->touched[msg / 64] >> (msg % 64) & 1;
}

/* PSN of a packet of the forged sender, by the top 3 bits of sel. */
static uint32_t sr_pick_psn(unsigned qi, uint8_t sel, struct reader *r)
{
	struct sr_peer *sp = peer_of(qi);
	uint32_t x = sel & 31, psn;

	switch (sel >> 5) {
	case 4: psn = sp->rx_psn + 1 + x; break;          /* ahead, inside the window: a hole before it */
	case 5: psn = sp->rx_psn - 1 - x; break;          /* a copy of one sent */
	case 6: psn = rd32(r); break;                     /* anywhere */
	case 7: psn = sp->rx_psn + SR_RX_BITS + x; break; /* past the receiver's window */
	default: psn = sp->rx_psn++; break;               /* the next */
	}
	sp->rx_psn &= ROCE_PSN_MASK;
	return psn & ROCE_PSN_MASK;
}

/* Message number of a single packet, by the top 2 bits of sel. */
static uint32_t sr_pick_msg(unsigned qi, uint8_t sel, struct reader *r)
{
	struct sr_peer *sp = peer_of(qi);
	uint32_t x = sel & 63, msg;

	switch (sel >> 6) {
	case 1: /* a later one inside the window; with bit 5, the sender moves on to it */
		msg = sp->rx_msg + 1 + (x & 7);
		if (x & 32)
			sp->rx_msg = msg;
		break;
	case 2: msg = sp->rx_msg - 1 - x; break; /* an earlier one: finished, or still open */
	case 3: msg = x & 32 ? rd16(r) : sp->rx_msg + SR_MSG_WINDOW + x; break; /* beyond the window, or any */
	default: msg = sp->rx_msg; break;        /* the one being sent */
	}
	touch(qi, msg);
	return msg & SRW_MSG_MASK;
}

/* rkey of an sr packet: 0-2 the message space (rkey 0), 3 A, 4 the
 * read-only D, 5 E of another PD, 6 revoked, 7 from the input. */
static uint32_t sr_pick_rkey(uint8_t sel, struct reader *r, uint64_t *base, uint64_t *len)
{
	uint32_t rkey;

	if ((sel & 7) < 3) {
		*base = 0;
		*len = SR_RECV_LEN;
		return SRW_MSG_RKEY;
	}
	pick_key((uint8_t)((sel & 7) == 3 ? 0 : sel & 7), r, &rkey, base, len);
	return rkey;
}

static const uint8_t sr_other_ops[8] = {
	ROCE_TR_UC | ROCE_OP_SEND_ONLY,     ROCE_TR_UC | ROCE_OP_WRITE_FIRST, ROCE_TR_RC | ROCE_OP_WRITE_ONLY,
	ROCE_TR_UC | ROCE_OP_WRITE_LAST_IMM, ROCE_TR_RC | ROCE_OP_SEND_ONLY, ROCE_TR_UD | ROCE_OP_SEND_ONLY,
	ROCE_TR_RC | ROCE_OP_READ_REQUEST,  ROCE_TR_RC | ROCE_OP_WRITE_ONLY_IMM,
};

/* One data packet: 10 bytes after the command (more for a random PSN,
 * message number or rkey). */
static void cmd_sr_pkt(struct reader *r, unsigned qi, bool twice)
{
	static const uint8_t kinds[8] = { SRW_DATA, SRW_DATA, SRW_DATA, SRW_LAST, SRW_LAST_DESC, SRW_DESC, SRW_PARITY, 5 };
	uint8_t psnsel = rd8(r), opsel = rd8(r), msgsel = rd8(r);
	uint16_t idxsel = rd16(r);
	uint8_t keysel = rd8(r);
	uint16_t vaoff = rd16(r);
	uint8_t lensel = rd8(r), flags = rd8(r);
	static uint8_t payload[MAX_PAYLOAD];
	uint32_t mtu = qp_mtu[qi], idx, kind, msg;
	uint64_t base, rlen, mbase;
	struct roce_pkt p;

	pkt_init(&p, qi);
	p.psn = sr_pick_psn(qi, psnsel, r);
	msg = sr_pick_msg(qi, msgsel, r);
	idx = idxsel & 0x8000 ? ((uint32_t)idxsel << 2 | 3) & SRW_IDX_MASK : idxsel % 16u;
	kind = kinds[opsel >> 3 & 7];
	if (kind == 5)
		kind = 5 + (opsel >> 6) % 3u; /* reserved */
	switch (opsel & 7) {
	case 5: p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY; break; /* a plain WRITE */
	case 6: p.opcode = sr_other_ops[opsel >> 5]; break;
	case 7: /* data to the control QPN */
		p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
		p.dqpn = (uroce_qp_num(fz.qp[qi]) + 1) & ROCE_QPN_MASK;
		break;
	default: p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM; break;
	}
	p.imm = srw_imm(msg, (enum srw_kind)kind, idx);
	p.reth.rkey = sr_pick_rkey(keysel, r, &base, &rlen);
	/* where the message starts: an MTU multiple inside the region */
	mbase = p.reth.rkey == SRW_MSG_RKEY && (keysel & 7) < 3 ? 0 : base + (vaoff % rlen) / mtu * mtu;
	switch (keysel >> 3 & 7) {
	case 5: p.reth.va = mbase + (uint64_t)idx * mtu + 1 + vaoff % (mtu - 1); break; /* not where idx goes */
	case 6: p.reth.va = pick_va((uint8_t)(2 + (vaoff & 1)), vaoff, base, rlen); break; /* at the end, before the start */
	case 7: p.reth.va = pick_va((uint8_t)(4 + vaoff % 3), vaoff, base, rlen); break; /* past the end, wrapping, far */
	default: p.reth.va = mbase + (uint64_t)idx * mtu; break;
	}
	switch (lensel & 7) {
	case 4: p.payload_len = 1 + vaoff % mtu; break; /* a LAST's length */
	case 5: p.payload_len = 0; break;
	case 6: p.payload_len = mtu + 1 + (lensel >> 3 & 7) * 97u; break; /* longer than the MTU */
	case 7: p.payload_len = (lensel >> 3 & 7) ? (lensel >> 3 & 7) : SRW_DESC_LEN; break;
	default: p.payload_len = mtu; break;
	}
	fill_msg(payload, p.payload_len, (uint32_t)fz.st.pkts);
	p.payload = payload;
	switch (lensel >> 6) {
	case 2: p.reth.dma_len = p.payload_len + 1; break;
	case 3: p.reth.dma_len = p.payload_len - 1; break; /* 0 - 1 wraps */
	default: p.reth.dma_len = p.payload_len; break;
	}
	p.ackreq = flags & 1;
	p.se = flags & 2;
	pkt_addressing(&p, flags);
	if (send_pkt(&p, flags_bad_icrc(flags)) && twice)
		send_pkt(&p, false); /* a copy: a duplicate, and the DSACK of the next SACK */
}

/* Descriptor bytes (docs/wire.md, "sr and ec"). */
static void put_desc(uint8_t *d, uint8_t version, uint8_t op, uint8_t ec, uint32_t len, uint32_t imm, uint32_t rkey,
                     uint64_t raddr, uint32_t first_psn)
{
	memset(d, 0, SRW_DESC_LEN);
	d[0] = version;
	d[1] = op;
	d[2] = op == UROCE_WR_SEND ? 0 : SRW_DESC_IMM;
	d[3] = ec;
	roce_put_be32(d + 4, len);
	roce_put_be32(d + 8, imm);
	roce_put_be32(d + 12, rkey);
	roce_put_be64(d + 16, raddr);
	roce_put_be32(d + 24, first_psn);
}

/* One descriptor: 9 bytes after the command (more for random fields). */
static void cmd_sr_desc(struct reader *r, unsigned qi, bool twice)
{
	static const uint8_t ops[8] = { UROCE_WR_SEND, UROCE_WR_SEND_WITH_IMM, UROCE_WR_RDMA_WRITE_WITH_IMM,
		                        UROCE_WR_SEND, UROCE_WR_SEND_WITH_IMM, UROCE_WR_RDMA_WRITE_WITH_IMM,
		                        UROCE_WR_RDMA_WRITE, 0xff };
	uint8_t psnsel = rd8(r), msgsel = rd8(r), opsel = rd8(r), misc = rd8(r);
	uint16_t lensel = rd16(r);
	uint8_t keysel = rd8(r);
	uint16_t vaoff = rd16(r);
	uint8_t d[48], op, ec, version;
	uint32_t len, rkey = 0, first, msg;
	uint64_t base, rlen, raddr = 0;
	struct roce_pkt p;

	pkt_init(&p, qi);
	p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
	p.psn = sr_pick_psn(qi, psnsel, r);
	msg = sr_pick_msg(qi, msgsel, r);
	p.imm = srw_imm(msg, SRW_DESC, misc & 0x80 ? misc & 0x7fu : 0);
	/* up to 4 KiB (a receive buffer takes 3504), or up to 32 MiB: past
	 * the 2^17 packets a message may have */
	len = lensel & 0x8000 ? (uint32_t)(lensel & 0x7fff) << 10 : lensel % 4096u;
	op = ops[opsel & 7] == 0xff ? (uint8_t)(opsel >> 3) : ops[opsel & 7];
	if (op != UROCE_WR_SEND && op != UROCE_WR_SEND_WITH_IMM) {
		pick_key(keysel, r, &rkey, &base, &rlen);
		raddr = pick_va(keysel >> 3, vaoff, base, rlen);
	}
	version = (misc & 7) ? SRW_VERSION : (uint8_t)(misc >> 3 & 3);
	ec = (uint8_t)((qi == QP_EC) ^ !!(opsel & 0x40)); /* the ec flag on an sr QP, or an ec message without it */
	switch (misc >> 5 & 3) {
	case 2: first = p.psn - 1 - (vaoff & 15); break;
	case 3: first = rd32(r); break;
	default: first = p.psn; break;
	}
	memset(d, 0, sizeof(d));
	put_desc(d, version, op, ec, len, 0x11220000u | msg, rkey, raddr, first);
	p.payload = d;
	p.payload_len = !(opsel & 0x80) ? SRW_DESC_LEN : (misc & 8) ? sizeof(d) : 31u - (misc >> 4 & 7);
	p.reth.rkey = keysel & 0x80 && fz.mr[AREA_A] ? fz.mr[AREA_A]->rkey : SRW_MSG_RKEY;
	p.reth.va = 0;
	p.reth.dma_len = p.payload_len;
	if (send_pkt(&p, false) && twice)
		send_pkt(&p, false);
}

/* One parity packet: 5 bytes after the command. */
static void cmd_sr_parity(struct reader *r, unsigned qi, bool twice)
{
	uint8_t psnsel = rd8(r), msgsel = rd8(r), qsel = rd8(r), lensel = rd8(r), flags = rd8(r);
	static uint8_t payload[MAX_PAYLOAD];
	uint32_t mtu = qp_mtu[qi], q;
	struct roce_pkt p;

	pkt_init(&p, qi);
	p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
	p.psn = sr_pick_psn(qi, psnsel, r);
	q = qsel & 0x80 ? (uint32_t)(qsel & 0x7f) << 10 : qsel % 8u;
	p.imm = srw_imm(sr_pick_msg(qi, msgsel, r), SRW_PARITY, q);
	p.reth.rkey = (lensel & 0x30) == 0x30 && fz.mr[AREA_A] ? fz.mr[AREA_A]->rkey : SRW_MSG_RKEY;
	p.reth.va = (uint64_t)q * mtu + ((lensel & 0x30) == 0x20 ? 1 + (lensel >> 6) : 0);
	switch (lensel & 7) {
	case 5: p.payload_len = mtu - 1 - (lensel >> 6); break;
	case 6: p.payload_len = mtu + 1 + (lensel >> 6); break;
	case 7: p.payload_len = 0; break;
	default: p.payload_len = mtu; break;
	}
	fill_msg(payload, p.payload_len, (uint32_t)fz.st.pkts);
	p.payload = payload;
	p.reth.dma_len = p.payload_len;
	pkt_addressing(&p, flags);
	if (send_pkt(&p, flags_bad_icrc(flags)) && twice)
		send_pkt(&p, false);
}

/* Positions of a message on the wire, in PSN order: the descriptor, data
 * packets, and with ec each submessage's parity after its data and the
 * descriptor again at the end. */
#define SR_MSG_MAX_PKTS 24u
#define SR_MSG_MAX_POS (2u + SR_MSG_MAX_PKTS + (SR_MSG_MAX_PKTS / EC_K) * EC_M)
enum { POS_DATA, POS_PARITY, POS_DESC };
struct sr_pos {
	uint8_t what;
	uint32_t idx; /* data or parity index */
	uint32_t psn;
	bool lost;
};

static uint32_t xorshift32(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* An area of guarded memory holds exactly what was sent. */
static void check_bytes(const uint8_t *now, const uint8_t *want, uint32_t len, const char *what, unsigned qi,
                        uint32_t msg)
{
	for (uint32_t k = 0; k < len; k++) {
		if (now[k] != want[k]) {
			fprintf(stderr,
			        "fuzz_responder: %s QP completed message %u of %u bytes, but byte %u of %s is %02x, "
			        "sent %02x\n",
			        qi == QP_EC ? "ec" : qi == QP_BE ? "be" : "sr", msg, len, k, what, now[k], want[k]);
			abort();
		}
	}
}

/* A whole message of the forged sender: 16 bytes after the command.
 *   t: bits 0-1 SEND, SEND with immediate, WRITE with immediate to A,
 *      plain WRITE to A; 2-3 losses: none, one data packet per
 *      submessage (ec rebuilds it, sr gets it again at the end), by the
 *      masks and sent again at the end, by the masks for good; 4-7 a
 *      flaw (8-15) or none
 *   n: packets; lastsel: the last one's length; vaoff: WRITE offset in A,
 *   and which packet a flaw hits; order: 0 in PSN order, 1 reversed,
 *   else a shuffle; dropd: data packets lost (bit i = index i); dropo:
 *   bit 0/1 the first/second descriptor, bits 2-7 parity q % 6; dup: bit
 *   7 sends packet (dup & 31) twice; msgsel: the message number (0-1 the
 *   next, 2 an earlier one, 3 skipping some); flags: the first packet's
 *   addressing. late_copy: a copy of the first data packet after all. */
static void cmd_sr_msg(struct reader *r, unsigned qi, bool late_copy)
{
	uint8_t t = rd8(r), n = rd8(r);
	uint16_t lastsel = rd16(r), vaoff = rd16(r), order = rd16(r);
	uint32_t dropd = rd32(r);
	uint8_t dropo = rd8(r), dup = rd8(r), msgsel = rd8(r), flags = rd8(r);
	static uint8_t msgbuf[SR_MSG_MAX_PKTS * 256], parity[(SR_MSG_MAX_PKTS / EC_K) * EC_M][256];
	static uint8_t chunk[EC_K][256];
	static struct sr_pos pos[SR_MSG_MAX_POS];
	uint8_t desc[SRW_DESC_LEN], sendorder[SR_MSG_MAX_POS];
	struct sr_peer *sp = peer_of(qi);
	unsigned optype = t & 3, loss = t >> 2 & 3, flaw = t >> 4;
	bool write = optype >= 2, plain = optype == 3;
	bool has_desc = !plain && (qi == QP_EC || optype != 0), ec = qi == QP_EC && !plain;
	uint32_t mtu = qp_mtu[qi], npk = 1 + n % (write ? SR_MSG_MAX_PKTS : 13u);
	uint32_t last = 1 + lastsel % mtu, total, npos = 0, nsub, msg = 0, first_psn, rkey = 0, fi, seed;
	uint64_t base = 0, wc_before = sp->wc_ok, rec_before = 0;
	bool resend = loss == 2 || (loss == 1 && !ec), check;
	struct uroce_qp_stats qs;

	if (n == 0xff) { /* a message of no bytes */
		npk = 1;
		last = 0;
	}
	total = (npk - 1) * mtu + last;
	nsub = (npk + EC_K - 1) / EC_K;
	fi = vaoff % npk;
	if (write || flaw == 13 || flaw == 14) {
		rkey = fz.mr[AREA_A] ? fz.mr[AREA_A]->rkey : fz.revoked_rkey;
		base = area_va(AREA_A) + vaoff % (A_LEN - total + 1);
		if (flaw == 14) /* the target straddles A's start or end */
			base = vaoff & 1 ? area_va(AREA_A) - mtu * (1u + (vaoff >> 1) % 2u)
			                 : area_va(AREA_A) + A_LEN - total + mtu * (1u + (vaoff >> 1) % 2u);
	}
	if (!plain) {
		switch (msgsel >> 6) {
		case 2: msg = sp->rx_msg - 1 - (msgsel & 63); break; /* an earlier number: finished, or open */
		case 3: /* skips some: they never come */
			msg = sp->rx_msg + 1 + (msgsel & 3);
			sp->rx_msg = msg + 1;
			break;
		default: msg = sp->rx_msg++; break;
		}
	}
	check = !plain && flaw < 8 && loss != 3 && (msgsel >> 6) < 2 && !touched(qi, msg) && fz.mr[AREA_A];
	touch(qi, msg);

	/* the layout, PSNs in order from the next one */
	first_psn = sp->rx_psn;
	if (has_desc)
		pos[npos++] = (struct sr_pos){ POS_DESC, 0, 0, false };
	for (uint32_t i = 0; i < npk; i++) {
		pos[npos++] = (struct sr_pos){ POS_DATA, i, 0, false };
		if (ec && ((i + 1) % EC_K == 0 || i + 1 == npk))
			for (uint32_t j = 0; j < EC_M; j++)
				pos[npos++] = (struct sr_pos){ POS_PARITY, i / EC_K * EC_M + j, 0, false };
	}
	if (ec)
		pos[npos++] = (struct sr_pos){ POS_DESC, 1, 0, false };
	for (uint32_t k = 0; k < npos; k++)
		pos[k].psn = (first_psn + k) & ROCE_PSN_MASK;
	sp->rx_psn = (first_psn + npos) & ROCE_PSN_MASK;
	if (flaw == 15) { /* two PSNs swapped: the layout the receiver infers is off */
		uint32_t a = vaoff % npos, b = (uint32_t)(vaoff >> 8) % npos, tmp = pos[a].psn;

		pos[a].psn = pos[b].psn;
		pos[b].psn = tmp;
	}

	/* losses */
	for (uint32_t k = 0; k < npos; k++) {
		struct sr_pos *ps = &pos[k];

		if (loss == 1 && ps->what == POS_DATA) {
			uint32_t s = ps->idx / EC_K, kk = npk - s * EC_K < EC_K ? npk - s * EC_K : EC_K;

			ps->lost = ps->idx % EC_K == ((dropd >> (2 * (s % 16))) & 3) % kk;
		} else if (loss >= 2) {
			if (ps->what == POS_DATA)
				ps->lost = ps->idx < 32 && (dropd >> ps->idx & 1);
			else if (ps->what == POS_DESC)
				ps->lost = dropo >> ps->idx & 1;
			else
				ps->lost = dropo >> (2 + ps->idx % 6) & 1;
		}
	}

	/* the bytes: data, parity of each submessage, the descriptor */
	seed = (uint32_t)fz.st.pkts ^ msg << 8;
	fill_msg(msgbuf, total, seed);
	if (ec) {
		for (uint32_t s = 0; s < nsub; s++) {
			uint8_t *data[EC_K], *par[EC_M];

			for (uint32_t j = 0; j < EC_K; j++) {
				uint32_t idx = s * EC_K + j, len = idx < npk ? (idx + 1 < npk ? mtu : last) : 0;

				memset(chunk[j], 0, mtu);
				memcpy(chunk[j], msgbuf + idx * mtu, len);
				data[j] = chunk[j];
			}
			for (uint32_t j = 0; j < EC_M; j++)
				par[j] = parity[s * EC_M + j];
			ec_encode(&fz.code, mtu, data, par);
		}
	}
	if (has_desc)
		put_desc(desc, SRW_VERSION,
		         optype == 0 ? UROCE_WR_SEND : optype == 1 ? UROCE_WR_SEND_WITH_IMM : UROCE_WR_RDMA_WRITE_WITH_IMM,
		         ec, flaw == 10 ? total + mtu : total, 0xfeed0000u | msg, write ? rkey : 0, write ? base : 0,
		         first_psn);

	/* the order they go in */
	for (uint32_t k = 0; k < npos; k++)
		sendorder[k] = (uint8_t)(order == 1 ? npos - 1 - k : k);
	if (order > 1) {
		uint32_t s = order;

		for (uint32_t k = npos - 1; k > 0; k--) {
			uint32_t j = xorshift32(&s) % (k + 1);
			uint8_t tmp = sendorder[k];

			sendorder[k] = sendorder[j];
			sendorder[j] = tmp;
		}
	}
	if (qi == QP_EC && uroce_qp_stats(fz.qp[qi], &qs) == 0)
		rec_before = qs.ec_recovered;

	for (uint32_t round = 0; round < 2; round++) {
		bool first = true;

		for (uint32_t o = 0; o < npos; o++) {
			const struct sr_pos *ps = &pos[round ? o : sendorder[o]];
			struct roce_pkt p;

			if (ps->lost == !round)
				continue; /* round 0 sends what is not lost, round 1 (resend) the rest in order */
			pkt_init(&p, qi);
			p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
			p.psn = ps->psn;
			p.reth.rkey = SRW_MSG_RKEY;
			switch (ps->what) {
			case POS_DESC:
				p.imm = srw_imm(msg, SRW_DESC, 0);
				p.payload = desc;
				p.payload_len = SRW_DESC_LEN;
				p.reth.va = 0;
				break;
			case POS_PARITY:
				p.imm = srw_imm(msg, SRW_PARITY, ps->idx);
				if (flaw == 12 && ps->idx == 0)
					p.imm = srw_imm(msg, SRW_PARITY, EC_M); /* says it belongs to the next submessage */
				p.payload = parity[ps->idx];
				p.payload_len = mtu;
				p.reth.va = (uint64_t)ps->idx * mtu;
				break;
			default: {
				uint32_t i = ps->idx;
				enum srw_kind kind = i + 1 < npk ? SRW_DATA : has_desc ? SRW_LAST_DESC : SRW_LAST;

				if (flaw == 11 && i == fi)
					kind = kind == SRW_DATA ? SRW_LAST : SRW_DATA; /* a LAST in the middle, or none */
				if (plain)
					p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY;
				p.imm = srw_imm(msg, kind, i);
				p.payload = msgbuf + i * mtu;
				p.payload_len = i + 1 < npk ? mtu : last;
				if (write || flaw == 14 || (flaw == 13 && i == fi)) {
					/* into A; a flaw 13 SEND has one packet say WRITE, a WRITE
					 * has one packet to another PD's region */
					p.reth.rkey = flaw == 13 && write ? fz.mr[AREA_E]->rkey : rkey;
					p.reth.va = base + (uint64_t)i * mtu;
				} else {
					p.reth.va = (uint64_t)i * mtu;
				}
				if (flaw == 8 && i == fi)
					p.reth.va++;
				if (flaw == 9 && i == fi)
					p.payload_len = p.payload_len == mtu ? mtu - 1 : p.payload_len + 1;
				break;
			}
			}
			p.reth.dma_len = p.payload_len;
			if (first && !round)
				pkt_addressing(&p, flags);
			send_pkt(&p, first && !round && flags_bad_icrc(flags));
			first = false;
			if ((dup & 0x80) && !round && o == (dup & 31u) % npos)
				send_pkt(&p, false);
		}
		if (!resend)
			break;
	}
	if (late_copy) {
		/* a late copy of a packet of a finished message, or a duplicate */
		struct roce_pkt p;

		pkt_init(&p, qi);
		p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
		p.psn = pos[has_desc ? 1 : 0].psn;
		p.imm = srw_imm(msg, npk > 1 ? SRW_DATA : has_desc ? SRW_LAST_DESC : SRW_LAST, 0);
		p.payload = msgbuf;
		p.payload_len = p.reth.dma_len = npk > 1 ? mtu : last;
		p.reth.rkey = write ? rkey : SRW_MSG_RKEY;
		p.reth.va = write ? base : 0;
		send_pkt(&p, false);
	}

	/* CC_TOS's burst held every step until the command's end: deliver
	 * them now, or this message's completion would be counted during the
	 * next command and checked against that message's bytes */
	if (fz.burst_next)
		for (unsigned k = 0; k < npos + 2u || (loop_fabric_in_flight(fz.fab) && k < SETTLE_STEPS); k++)
			step(1000);
	/* A message of the forged sender's own that completed holds what was
	 * sent, also the packets ec rebuilt. */
	if (check && sp->wc_ok != wc_before && sp->wc_len == total && !sp->wc_partial) {
		if (write) {
			check_bytes((const uint8_t *)(uintptr_t)base, msgbuf, total, "region A", qi, msg);
		} else {
			check_bytes(area(AREA_B1), msgbuf, total < B1_LEN ? total : B1_LEN, "receive buffer B1", qi, msg);
			if (total > B1_LEN)
				check_bytes(area(AREA_B2), msgbuf + B1_LEN, total - B1_LEN, "receive buffer B2", qi, msg);
		}
		fz.st.sr_verified[qi - QP_SR]++;
		if (qi == QP_EC && uroce_qp_stats(fz.qp[qi], &qs) == 0 && qs.ec_recovered > rec_before)
			fz.st.ec_rebuilt_verified++;
	}
}

/* A control packet to the QP's control QPN: UC SEND Only unless op says. */
/* The control header's token (bytes 4-7): the target QP's own, as its
 * peer learnt it at connect, unless raw (then the input's bytes stay, and
 * the packet is almost always dropped as bad_token). Copied to buf. */
static const uint8_t *fz_token(uint8_t *buf, size_t cap, const uint8_t *b, uint32_t len, unsigned qi, bool raw)
{
	uint32_t t = uroce_qp_token(fz.qp[qi]);

	if (raw || len < SRW_CTRL_HDR_LEN || len > cap)
		return b;
	memcpy(buf, b, len);
	roce_put_be32(buf + 4, t);
	return buf;
}

static void fz_send_ctrl(unsigned qi, const uint8_t *b, uint32_t len, uint8_t op, uint8_t flags, bool to_data)
{
	static uint8_t buf[1024];
	struct roce_pkt p;

	b = fz_token(buf, sizeof(buf), b, len, qi, fz.raw_token);
	pkt_init(&p, qi);
	if (!to_data)
		p.dqpn = (uroce_qp_num(fz.qp[qi]) + 1) & ROCE_QPN_MASK;
	p.opcode = op;
	p.psn = peer_of(qi)->ctrl_psn++ & ROCE_PSN_MASK;
	p.payload = b;
	p.payload_len = len;
	pkt_addressing(&p, flags);
	send_pkt(&p, flags_bad_icrc(flags));
}

/* Control header, and the payload cut short by flags bits 0-1 = 3. */
static uint32_t ctrl_hdr(uint8_t *b, uint8_t type, uint32_t len, uint8_t flags, uint8_t cut)
{
	srw_ctrl_hdr(b, type, len, 0); /* fz_send_ctrl puts the token in */
	if ((flags & 3) == 3)
		return cut % 8u < len ? len - 1 - cut % 8u : 0;
	return len;
}

/* A SACK to the QP's sender: 8 bytes after the command, then the bitmap
 * (ones with the variant bit). */
static void cmd_sr_sack(struct reader *r, unsigned qi, bool ones)
{
	uint8_t cumsel = rd8(r), msgsel = rd8(r), dupsel = rd8(r), limsel = rd8(r), nbsel = rd8(r), flags = rd8(r);
	uint16_t msgbits = rd16(r);
	struct sr_peer *sp = peer_of(qi);
	static uint8_t b[SRW_CTRL_HDR_LEN + SRW_SACK_FIXED + SRW_SACK_MAX_BITS / 8];
	uint8_t *body = b + SRW_CTRL_HDR_LEN;
	uint32_t x = cumsel & 31, cum, msg_cum, limit, nbits, bytes, len;

	switch (cumsel >> 5) {
	case 3: cum = sp->tx_nxt - 1 - (x & 15); break;   /* all but the newest: the bitmap tells */
	case 4: cum = sp->tx_psn0 + x; break;              /* counted from the first PSN */
	case 5: cum = sp->tx_nxt + 1 + x; break;           /* PSNs never sent */
	case 6: cum = sp->tx_nxt - SR_WINDOW - 1 - x; break; /* behind what is in flight */
	case 7: cum = rd32(r); break;
	default: cum = sp->tx_nxt; break;                   /* everything sent */
	}
	switch (msgsel >> 6) {
	case 1: msg_cum = sp->tx_msgs - 1 - (msgsel & 7); break;
	case 2: msg_cum = sp->tx_msgs + 1 + (msgsel & 63); break; /* messages never posted */
	case 3: msg_cum = rd32(r); break;
	default: msg_cum = sp->tx_msgs; break;
	}
	switch (limsel >> 6) {
	case 1: limit = sp->tx_msgs + (limsel & 7); break; /* few credits, or none */
	case 2: limit = sp->tx_msgs - 1 - (limsel & 7); break;
	case 3: limit = rd32(r); break;
	default: limit = sp->tx_msgs + SR_MSG_WINDOW; break;
	}
	switch (nbsel >> 6) {
	case 2: nbits = (nbsel & 31) * 32u; break;
	case 3: nbits = nbsel & 32 ? rd16(r) : nbsel & 63u; break; /* mostly not a multiple of 32 */
	default: nbits = SR_WINDOW; break;
	}
	if (dupsel & 1)
		sp->dups += 1 + (dupsel >> 1 & 3); /* the receiver saw copies, the last of dup_psn */
	bytes = nbits / 8 < SRW_SACK_MAX_BITS / 8 ? nbits / 8 : SRW_SACK_MAX_BITS / 8;
	memset(b, 0, sizeof(b));
	roce_put_be32(body, cum & ROCE_PSN_MASK);
	roce_put_be32(body + 4, msg_cum);
	roce_put_be32(body + 8, (uint32_t)msgbits << (msgsel & 32 ? 16 : 0));
	roce_put_be32(body + 12, sp->dups);
	roce_put_be32(body + 16, (sp->tx_nxt - 1 - (dupsel >> 3 & 31)) & ROCE_PSN_MASK);
	roce_put_be32(body + 20, limit);
	roce_put_be16(body + 24, (uint16_t)nbits);
	for (uint32_t k = 0; k < bytes; k++)
		body[SRW_SACK_FIXED + k] = ones ? 0xff : rd8(r);
	len = SRW_CTRL_HDR_LEN + SRW_SACK_FIXED + nbits / 8;
	len = ctrl_hdr(b, SRW_CTRL_SACK, len, flags, msgsel);
	fz_send_ctrl(qi, b, len < sizeof(b) ? len : sizeof(b), ROCE_TR_UC | ROCE_OP_SEND_ONLY, flags, false);
}

/* A NACK to the QP's sender: 5 bytes after the command, then the bitmap
 * (ones with the variant bit). */
static void cmd_sr_nack(struct reader *r, unsigned qi, bool ones)
{
	uint8_t msgsel = rd8(r), subsel = rd8(r), nbsel = rd8(r), flagsel = rd8(r), flags = rd8(r);
	struct sr_peer *sp = peer_of(qi);
	static uint8_t b[SRW_CTRL_HDR_LEN + SRW_NACK_FIXED + SRW_NACK_MAX_BITS / 8];
	uint8_t *body = b + SRW_CTRL_HDR_LEN;
	uint32_t msg, nbits, bytes, len;

	switch (msgsel >> 6) {
	case 1: msg = sp->tx_msgs + (msgsel & 7); break; /* not posted */
	case 2: msg = rd32(r); break;
	default: msg = sp->tx_msgs - 1 - (msgsel & 7); break; /* a recent one */
	}
	nbits = nbsel >> 6 == 3 ? (nbsel & 32 ? rd16(r) : nbsel & 63u) : (nbsel & 3) * 32u;
	bytes = nbits / 8 < SRW_NACK_MAX_BITS / 8 ? nbits / 8 : SRW_NACK_MAX_BITS / 8;
	memset(b, 0, sizeof(b));
	roce_put_be32(body, msg);
	roce_put_be16(body + 4, subsel & 0x80 ? rd16(r) : subsel & 7);
	roce_put_be16(body + 6, (uint16_t)nbits);
	roce_put_be32(body + 8, (flagsel & 1 ? SRW_NACK_DESC : 0) | (flagsel & 0x80 ? rd32(r) : 0));
	for (uint32_t k = 0; k < bytes; k++)
		body[SRW_NACK_FIXED + k] = ones ? 0xff : rd8(r);
	len = SRW_CTRL_HDR_LEN + SRW_NACK_FIXED + nbits / 8;
	len = ctrl_hdr(b, SRW_CTRL_NACK, len, flags, flagsel);
	fz_send_ctrl(qi, b, len < sizeof(b) ? len : sizeof(b), ROCE_TR_UC | ROCE_OP_SEND_ONLY, flags, false);
}

/* A control packet of raw bytes: 2 bytes after the command, then the
 * payload. opsel: bits 0-2 the opcode (0-4 UC SEND Only), bit 3 a right
 * header (version 1, type = bits 4-5, length = the payload's + bits 6-7).
 * to_data: to the data QPN instead. */
static void cmd_sr_ctrl(struct reader *r, unsigned qi, bool to_data)
{
	static const uint8_t ops[8] = { ROCE_TR_UC | ROCE_OP_SEND_ONLY, ROCE_TR_UC | ROCE_OP_SEND_ONLY,
		                        ROCE_TR_UC | ROCE_OP_SEND_ONLY, ROCE_TR_UC | ROCE_OP_SEND_ONLY,
		                        ROCE_TR_UC | ROCE_OP_SEND_ONLY, ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM,
		                        ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM, ROCE_TR_RC | ROCE_OP_SEND_ONLY };
	uint8_t opsel = rd8(r), n = rd8(r), b[128];
	uint32_t len = n % sizeof(b);

	for (uint32_t k = 0; k < len; k++)
		b[k] = rd8(r);
	if ((opsel & 8) && len >= SRW_CTRL_HDR_LEN) {
		b[0] = SRW_VERSION;
		b[1] = opsel >> 4 & 3;
		roce_put_be16(b + 2, (uint16_t)(len + (opsel >> 6)));
	}
	fz.raw_token = !(opsel & 8); /* raw bytes keep their (wrong) token */
	fz_send_ctrl(qi, b, len, ops[opsel & 7], 0, to_data);
	fz.raw_token = false;
}

/* Give back the oldest receive handle (it completes now, partially, if
 * its message is not whole); false when it cannot yet (-EBUSY). */
static bool precv_give_back(unsigned qi)
{
	struct sr_peer *sp = peer_of(qi);
	uint64_t bits[4];

	if (!sp->nprecv)
		return true;
	if (uroce_precv_bitmap(sp->precv[0], bits, 4) < 0)
		die("precv_bitmap");
	if (uroce_precv_complete(sp->precv[0]))
		return false;
	fz.st.sr_precv_given[qi - QP_SR]++;
	memmove(sp->precv, sp->precv + 1, --sp->nprecv * sizeof(sp->precv[0]));
	sp->precv[sp->nprecv] = NULL; /* given back: no longer ours to keep reachable */
	return true;
}

static void sr_release(unsigned qi);

/* The receive side of partial completion: post a receive handle on B1
 * (all of it, or with bit 6 a part), or with bit 3 give the oldest back;
 * with bit 5 the application resets the QP instead (the handles it holds
 * given back in ERR first) and posts receives again. */
static void sr_precv(unsigned qi, uint8_t sel, uint16_t len)
{
	struct sr_peer *sp = peer_of(qi);
	struct uroce_sge sg = { area_va(AREA_B1), sel & 0x40 ? 1u + len % B1_LEN : B1_LEN, fz.mr[AREA_B1]->lkey };

	if (sel & 0x20) {
		sr_release(qi);
		bring_up(qi);
		step(1000);
		post_recvs(qi);
	} else if ((sel & 8) || sp->nprecv == sizeof(sp->precv) / sizeof(sp->precv[0]))
		precv_give_back(qi);
	else if (uroce_precv_post(fz.qp[qi], &sg, 0x100u | qi, &sp->precv[sp->nprecv]) == 0)
		sp->nprecv++; /* a full receive queue refuses: fine */
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
}

/* A streaming send of len bytes in pieces of two MTUs, last piece first. */
static void sr_stream(unsigned qi, uint16_t len, uint8_t off)
{
	struct uroce_pstream *ps;
	uint32_t length = len % 3000u, piece = 2 * qp_mtu[qi];

	if (uroce_pstream_start(fz.qp[qi], length, 0x200u | qi, &ps))
		return;
	peer_of(qi)->tx_msgs++;
	fz.st.sr_streams[qi - QP_SR]++;
	for (uint32_t o = length ? (length - 1) / piece * piece : 0;; o -= piece) {
		uint32_t n = length - o < piece ? length - o : piece;
		struct uroce_sge sg = { area_va(AREA_C) + (off * 8u) % (C_LEN - n + 1), n, fz.mr[AREA_C]->lkey };

		if (length)
			uroce_pstream_continue(ps, o, &sg); /* a full send queue refuses: a piece never sent */
		if (!o)
			break;
	}
	if (uroce_pstream_end(ps)) {
		/* a full send queue: it ends before the QP is reset (sr_release),
		 * the one before it now if it can */
		if (peer_of(qi)->stream && uroce_pstream_end(peer_of(qi)->stream) == 0)
			peer_of(qi)->stream = NULL;
		if (peer_of(qi)->stream)
			die("two streams left unended");
		peer_of(qi)->stream = ps;
	}
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
}

/* Before the sr/ec QP is reset: a stream left unended ends and every
 * receive handle is given back (else both leak), in ERR, where queues
 * are flushed and posts are taken. */
static void sr_release(unsigned qi)
{
	struct sr_peer *sp = peer_of(qi);
	struct uroce_qp_attr a;

	if (!sp->nprecv && !sp->stream)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_ERR;
	if (uroce_qp_modify(fz.qp[qi], &a, UROCE_QP_STATE))
		die("qp to ERR");
	step(1000);
	if (sp->stream && uroce_pstream_end(sp->stream))
		die("pstream_end in ERR");
	sp->stream = NULL;
	step(1000);
	while (sp->nprecv)
		if (!precv_give_back(qi))
			die("precv_complete in ERR");
}

/* A local work request on the sr or ec QP, sent to the forged peer, whose
 * SACKs complete it: 4 bytes after the command; the variant bit posts
 * three. sel: bits 0-2 the opcode, bit 4 two SGEs, bit 5 unsignaled, bit
 * 6 up to 7 bytes; bit 7 a receive handle instead (sr_precv), bit 3
 * alone a stream. */
static void cmd_sr_post(struct reader *r, unsigned qi, bool burst)
{
	static const enum uroce_wr_opcode ops[8] = { UROCE_WR_SEND, UROCE_WR_SEND_WITH_IMM, UROCE_WR_RDMA_WRITE,
		                                     UROCE_WR_RDMA_WRITE_WITH_IMM, UROCE_WR_SEND, UROCE_WR_RDMA_WRITE,
		                                     UROCE_WR_SEND_WITH_IMM, UROCE_WR_RDMA_READ };
	uint8_t sel = rd8(r);
	uint16_t len = rd16(r);
	uint8_t off = rd8(r);
	enum uroce_wr_opcode op = ops[sel & 7];
	struct uroce_sge sg[2];
	struct uroce_send_wr wr;
	uint32_t length = sel & 0x40 ? len % 8u : len % 3000u; /* up to 12 packets */

	if (sel & 0x80) {
		sr_precv(qi, sel, len);
		return;
	}
	if (sel & 8) {
		sr_stream(qi, len, off);
		return;
	}
	memset(&wr, 0, sizeof(wr));
	sg[0].lkey = sg[1].lkey = fz.mr[AREA_C]->lkey;
	sg[0].addr = area_va(AREA_C) + (off * 8u) % (C_LEN - length + 1);
	sg[0].length = length;
	wr.num_sge = 1;
	if ((sel & 0x10) && length > 1) {
		/* two pieces: the sender gathers, ec encodes from a copy */
		sg[0].length = length / 2;
		sg[1].addr = area_va(AREA_C) + C_LEN - (length - length / 2);
		sg[1].length = length - length / 2;
		wr.num_sge = 2;
	}
	wr.wr_id = sel;
	wr.sg_list = sg;
	wr.opcode = op;
	wr.send_flags = sel & 0x20 ? 0 : UROCE_SEND_SIGNALED;
	wr.imm_data = 0x12345678u;
	wr.wr.rdma.remote_addr = 0x10000ull * off;
	wr.wr.rdma.rkey = 0x1234;
	for (unsigned k = 0; k < (burst ? 3u : 1u); k++) {
		/* a full queue or an opcode sr does not carry refuses: fine */
		if (uroce_post_send(fz.qp[qi], &wr, NULL) == 0 && op != UROCE_WR_RDMA_WRITE)
			peer_of(qi)->tx_msgs++;
	}
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
}

static void cmd_sr(struct reader *r, uint8_t cmd)
{
	unsigned qi = cmd & 0x20 ? QP_EC : QP_SR;
	bool v = cmd & 0x10;

	fz.st.sr_cmds[qi - QP_SR]++;
	switch ((enum sr_cmd)(cmd & 7)) {
	case SR_PKT: cmd_sr_pkt(r, qi, v); break;
	case SR_DESC: cmd_sr_desc(r, qi, v); break;
	case SR_PARITY: cmd_sr_parity(r, qi, v); break;
	case SR_MSG: cmd_sr_msg(r, qi, v); break;
	case SR_SACK: cmd_sr_sack(r, qi, v); break;
	case SR_NACK: cmd_sr_nack(r, qi, v); break;
	case SR_POST: cmd_sr_post(r, qi, v); break;
	case SR_CTRL: cmd_sr_ctrl(r, qi, v); break;
	}
}

/* ---- be: the forged peer of QP_BE ---- */

static void be_touch(uint32_t msg)
{
	msg &= SRW_MSG_MASK;
	fz.be.touched[msg / 64] |= 1ull << (msg % 64);
}

static bool be_touched(uint32_t msg)
{
	msg &= SRW_MSG_MASK;
	return fz.be.touched[msg / 64] >> (msg % 64) & 1;
}

/* The receiver's active message number: it moves on by itself when a
 * receive's deadline passes (the sender's WR would have timed out too). */
static uint32_t be_cur(void)
{
	return be_of(fz.qp[QP_BE])->cur & SRW_MSG_MASK;
}

/* The peer's next message number, not behind the receiver's. */
static uint32_t be_next_msg(void)
{
	struct be_peer *bp = &fz.be;
	uint32_t cur = be_cur();

	if (((cur - bp->rx_msg) & SRW_MSG_MASK) < BE_MSG_HALF)
		bp->rx_msg = cur;
	return bp->rx_msg & SRW_MSG_MASK;
}

/* PSN of a forged packet, by psnsel: top 3 bits 0-3 the next (the peer
 * moves on), 4 ahead by 1-32 (a hole), 5 behind by 1-32 (inside the
 * BE_DUP_WIN-PSN duplicate window: a copy), 6 behind by BE_DUP_WIN + 0..31 (late), 7 with bit
 * 4 any PSN (4 more bytes), else near the 2^16 window ahead. */
static uint32_t be_pick_psn(uint8_t sel, struct reader *r)
{
	struct be_peer *bp = &fz.be;
	uint32_t x = sel & 31, psn;

	switch (sel >> 5) {
	case 4: psn = bp->rx_psn + 1 + x; break;
	case 5: psn = bp->rx_psn - 1 - x; break;
	case 6: psn = bp->rx_psn - 1 - BE_DUP_WIN - x; break;
	case 7: psn = x & 16 ? rd32(r) : bp->rx_psn + BE_PSN_AHEAD - 8 + (x & 15); break;
	default: psn = bp->rx_psn++; break;
	}
	bp->rx_psn &= ROCE_PSN_MASK;
	return psn & ROCE_PSN_MASK;
}

/* Message number, by msgsel: top 2 bits 0 the peer's next (not behind the
 * receiver), 1 ahead by 1-8 (preempts; with bit 5 the peer moves on to
 * it), 2 behind by 1-32 (late; 1 behind with kind 6 is the tail's copy),
 * 3 with bit 5 any (2 more bytes), else around half the number space
 * ahead (new below it, late from it on). */
static uint32_t be_pick_msg(uint8_t sel, struct reader *r)
{
	struct be_peer *bp = &fz.be;
	uint32_t x = sel & 63, next = be_next_msg(), msg;

	switch (sel >> 6) {
	case 1:
		msg = next + 1 + (x & 7);
		if (x & 32)
			bp->rx_msg = msg & SRW_MSG_MASK;
		break;
	case 2: msg = next - 1 - (x & 31); break;
	case 3: msg = x & 32 ? rd16(r) : next + BE_MSG_HALF - 4 + (x & 7); break;
	default: msg = next; break;
	}
	be_touch(msg);
	return msg & SRW_MSG_MASK;
}

/* One forged data packet: 10 bytes after the command (more for a random
 * PSN, message number, key, length or payload).
 *   psnsel, msgsel: be_pick_psn, be_pick_msg
 *   opsel: bits 0-2 the kind (0 data, 1 last, 2 last-with-descriptor (not
 *     be's), 3 descriptor, 4 parity (not be's), 5 plain WRITE, 6 tail copy,
 *     7 reserved); bits 3-5 the opcode: 0-4 WRITE Only with Immediate,
 *     5 WRITE Only, 6 another (bits 6-7 of opsel), 7 to the control QPN
 *   idx (16 bits): bit 15 up to 2^17 - 1, else 0-15
 *   keysel: bits 0-2 the rkey (0-1 rkey 0, 2-3 A's, 4 read-only D, 5 E of
 *     another PD, 6 the revoked one, 7 random); bits 3-5 the va (0-4 at
 *     idx's offset, 5 off it by a few bytes, 6 at the region's end or
 *     before its start, 7 past it, wrapping or far)
 *   vaoff (16 bits): where a message starts in the region, va offsets
 *   lensel: bits 0-2 the payload (0-3 the MTU, 4 1..MTU, 5 0, 6 over the
 *     MTU, with bit 5 any of 0..MAX_PAYLOAD (2 more bytes), 7 a
 *     descriptor's 32 bytes or 1-7); bits 6-7 the DMA length (2 one more,
 *     3 one less)
 *   paysel: bits 6-7: 0-1 a pattern, 2 a descriptor (bit 0 op WRITE with
 *     immediate to A, else SEND with immediate; bits 1-2 a flaw: 1 op
 *     SEND, 2 the ec flag, 3 version 0; its length that of a message whose
 *     last packet is index idx % 16 of 1 + vaoff % MTU bytes, as lensel 4
 *     makes it), 3 bytes from the input (up to 64, the rest a pattern)
 *   flags: addressing as for the structured packet (bits 0-1 ack/SE) */
static void cmd_be_pkt(struct reader *r, bool again)
{
	static const uint8_t other_ops[4] = { ROCE_TR_UC | ROCE_OP_SEND_ONLY, ROCE_TR_RC | ROCE_OP_WRITE_ONLY_IMM,
		                              ROCE_TR_UC | ROCE_OP_WRITE_FIRST, ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM };
	uint8_t psnsel = rd8(r), msgsel = rd8(r), opsel = rd8(r);
	uint16_t idxsel = rd16(r);
	uint8_t keysel = rd8(r);
	uint16_t vaoff = rd16(r);
	uint8_t lensel = rd8(r), paysel = rd8(r), flags = rd8(r);
	static uint8_t payload[MAX_PAYLOAD];
	uint32_t mtu = qp_mtu[QP_BE], idx, kind = opsel & 7u, msg, rkey;
	uint64_t base, rlen, mbase;
	struct roce_pkt p;

	pkt_init(&p, QP_BE);
	p.psn = be_pick_psn(psnsel, r);
	msg = be_pick_msg(msgsel, r);
	idx = idxsel & 0x8000 ? ((uint32_t)idxsel << 2 | 3) & SRW_IDX_MASK : idxsel % 16u;
	switch (opsel >> 3 & 7) {
	case 5: p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY; break;
	case 6: p.opcode = other_ops[opsel >> 6]; break;
	case 7:
		p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
		p.dqpn = (uroce_qp_num(fz.qp[QP_BE]) + 1) & ROCE_QPN_MASK;
		break;
	default: p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM; break;
	}
	p.imm = srw_imm(msg, (enum srw_kind)kind, idx);
	/* rkey 0 (the receive's buffer), A, D, E, revoked, random */
	if ((keysel & 7) < 2) {
		rkey = SRW_MSG_RKEY;
		base = 0;
		rlen = BE_RECV_LEN;
	} else {
		pick_key((uint8_t)((keysel & 7) < 4 ? 0 : keysel & 7), r, &rkey, &base, &rlen);
	}
	p.reth.rkey = rkey;
	mbase = (keysel & 7) < 2 ? 0 : base + (vaoff % rlen) / mtu * mtu;
	switch (keysel >> 3 & 7) {
	case 5: p.reth.va = mbase + (uint64_t)idx * mtu + 1 + vaoff % (mtu - 1); break;
	case 6: p.reth.va = pick_va((uint8_t)(2 + (vaoff & 1)), vaoff, base, rlen); break;
	case 7: p.reth.va = pick_va((uint8_t)(4 + vaoff % 3), vaoff, base, rlen); break;
	default: p.reth.va = mbase + (uint64_t)idx * mtu; break;
	}
	switch (lensel & 7) {
	case 4: p.payload_len = 1 + vaoff % mtu; break;
	case 5: p.payload_len = 0; break;
	case 6: p.payload_len = lensel & 0x20 ? rd16(r) % (MAX_PAYLOAD + 1u) : mtu + 1 + (lensel >> 3 & 3) * 97u; break;
	case 7: p.payload_len = (lensel >> 3 & 7) ? (lensel >> 3 & 7) : SRW_DESC_LEN; break;
	default: p.payload_len = mtu; break;
	}
	fill_msg(payload, p.payload_len, (uint32_t)fz.st.pkts);
	switch (paysel >> 6) {
	case 2:
		if (p.payload_len >= SRW_DESC_LEN) {
			uint8_t op = (paysel & 1) ? UROCE_WR_RDMA_WRITE_WITH_IMM : UROCE_WR_SEND_WITH_IMM;
			uint32_t dkey = op == UROCE_WR_SEND_WITH_IMM ? 0 : fz.mr[AREA_A] ? fz.mr[AREA_A]->rkey : fz.revoked_rkey;

			put_desc(payload, (paysel >> 1 & 3) == 3 ? 0 : SRW_VERSION,
			         (paysel >> 1 & 3) == 1 ? UROCE_WR_SEND : op, (paysel >> 1 & 3) == 2,
			         idx % 16u * mtu + 1 + vaoff % mtu,
			         0xbe000000u | msg, dkey, dkey ? area_va(AREA_A) : 0, p.psn);
		}
		break;
	case 3:
		for (uint32_t k = 0; k < p.payload_len && k < 64; k++)
			payload[k] = rd8(r);
		break;
	default:
		break;
	}
	p.payload = payload;
	switch (lensel >> 6) {
	case 2: p.reth.dma_len = p.payload_len + 1; break;
	case 3: p.reth.dma_len = p.payload_len - 1; break;
	default: p.reth.dma_len = p.payload_len; break;
	}
	p.ackreq = flags & 1;
	p.se = flags & 2;
	pkt_addressing(&p, flags);
	if (send_pkt(&p, flags_bad_icrc(flags)) && again) {
		/* the same packet under the next PSN: its index counted twice? */
		p.psn = fz.be.rx_psn++ & ROCE_PSN_MASK;
		fz.be.rx_psn &= ROCE_PSN_MASK;
		send_pkt(&p, false);
	}
}

/* Positions of a be message on the wire, in PSN order (rel_be.c tx_wqe):
 * the descriptor (with an immediate), data packets, the descriptor again
 * before the last packet (with more than one), the last packet and its
 * copy (kind 6; a plain WRITE has neither: all its packets are kind 5). */
#define BE_MSG_MAX_PKTS 24u
#define BE_MSG_MAX_POS (BE_MSG_MAX_PKTS + 3u)
enum { BPOS_DATA, BPOS_DESC, BPOS_TAIL };
struct be_pos {
	uint8_t what;
	uint32_t idx, psn;
	bool lost;
};

/* A whole message of the forged sender: 14 bytes after the command.
 *   t: bits 0-1 SEND, SEND with immediate, WRITE with immediate to A,
 *      plain WRITE to A; 2-3 losses: none, by the dropd mask (bit k =
 *      position k), the last packet (its copy ends the message), the last
 *      and its copy (the deadline or the next message ends it); 4-5 order:
 *      PSN order, reversed, shuffled (by order); 6 position dup % npos sent
 *      twice; 7 unused
 *   n: packets, 1 + n % 15 (a SEND of 14 or 15 is longer than the receive),
 *      WRITE 1 + n % 24, 0xff one empty packet; lastsel: the last one's
 *      length; vaoff: the WRITE's offset in A; order: the shuffle's seed
 *   msgsel: bits 0-1: 0-1 the next number, 2 skipping 1-4 (they are
 *      preempted), 3 an earlier one (late); bits 2-5 how far
 *   late (BE_MSG_LATE): then 100 us later copies of its first and tail
 *   packets (late, or duplicates).
 * A message of the peer's own (the next number, not touched by single
 * packets, nothing lost) that completes whole holds the bytes sent. */
static void cmd_be_msg(struct reader *r, bool late)
{
	uint8_t t = rd8(r), n = rd8(r);
	uint16_t lastsel = rd16(r), vaoff = rd16(r), order = rd16(r);
	uint32_t dropd = rd32(r);
	uint8_t dup = rd8(r), msgsel = rd8(r);
	static uint8_t msgbuf[BE_MSG_MAX_PKTS * 256];
	static struct be_pos pos[BE_MSG_MAX_POS];
	uint8_t desc[SRW_DESC_LEN], sendorder[BE_MSG_MAX_POS];
	struct be_peer *bp = &fz.be;
	unsigned optype = t & 3, loss = t >> 2 & 3;
	bool write = optype >= 2, plain = optype == 3, imm = optype == 1 || optype == 2;
	uint32_t mtu = qp_mtu[QP_BE], npk = 1 + n % (write ? BE_MSG_MAX_PKTS : 15u), last = 1 + lastsel % mtu;
	uint32_t total, npos = 0, msg, rkey = 0, first_psn, seed = order | 1u;
	uint64_t base = 0, wc_before = bp->wc_ok;
	bool check;

	if (n == 0xff) {
		npk = 1;
		last = 0;
	}
	total = (npk - 1) * mtu + last;
	if (write) {
		rkey = fz.mr[AREA_A] ? fz.mr[AREA_A]->rkey : fz.revoked_rkey;
		base = area_va(AREA_A) + vaoff % (A_LEN - total + 1);
	}
	msg = be_next_msg();
	switch (msgsel & 3) {
	case 2: msg = msg + 1 + (msgsel >> 2 & 3); break;
	case 3: msg = msg - 1 - (msgsel >> 2 & 15); break;
	default: break;
	}
	msg &= SRW_MSG_MASK;
	if ((msgsel & 3) < 3 && !plain)
		bp->rx_msg = (msg + 1) & SRW_MSG_MASK; /* a plain WRITE takes no number of its own */
	check = !plain && loss == 0 && (msgsel & 3) < 2 && !be_touched(msg) && fz.mr[AREA_A];
	be_touch(msg);

	/* the layout */
	if (imm)
		pos[npos++] = (struct be_pos){ BPOS_DESC, 0, 0, false };
	for (uint32_t i = 0; i < npk; i++) {
		if (i + 1 == npk && imm && npk > 1)
			pos[npos++] = (struct be_pos){ BPOS_DESC, 1, 0, false };
		pos[npos++] = (struct be_pos){ BPOS_DATA, i, 0, false };
		if (i + 1 == npk && !plain)
			pos[npos++] = (struct be_pos){ BPOS_TAIL, i, 0, false };
	}
	first_psn = bp->rx_psn;
	for (uint32_t k = 0; k < npos; k++) {
		pos[k].psn = (first_psn + k) & ROCE_PSN_MASK;
		switch (loss) {
		case 1: pos[k].lost = k < 32 && (dropd >> k & 1); break;
		case 2: pos[k].lost = pos[k].what == BPOS_DATA && pos[k].idx + 1 == npk; break;
		case 3: pos[k].lost = pos[k].what != BPOS_DESC && pos[k].idx + 1 == npk; break;
		default: break;
		}
	}
	bp->rx_psn = (first_psn + npos) & ROCE_PSN_MASK;

	/* the order */
	for (uint32_t k = 0; k < npos; k++)
		sendorder[k] = (uint8_t)((t >> 4 & 3) == 1 ? npos - 1 - k : k);
	if ((t >> 4 & 3) >= 2) {
		for (uint32_t k = npos - 1; k > 0; k--) {
			uint32_t j = xorshift32(&seed) % (k + 1);
			uint8_t tmp = sendorder[k];

			sendorder[k] = sendorder[j];
			sendorder[j] = tmp;
		}
	}

	fill_msg(msgbuf, total, (uint32_t)fz.st.pkts ^ msg << 8 ^ 0xbe);
	if (imm)
		put_desc(desc, SRW_VERSION, optype == 1 ? UROCE_WR_SEND_WITH_IMM : UROCE_WR_RDMA_WRITE_WITH_IMM, 0, total,
		         0xbe000000u | msg, write ? rkey : 0, write ? base : 0, first_psn);

	for (uint32_t o = 0; o < npos; o++) {
		const struct be_pos *ps = &pos[sendorder[o]];
		struct roce_pkt p;

		if (ps->lost)
			continue;
		pkt_init(&p, QP_BE);
		p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
		p.psn = ps->psn;
		if (ps->what == BPOS_DESC) {
			p.imm = srw_imm(msg, SRW_DESC, 0);
			p.payload = desc;
			p.payload_len = SRW_DESC_LEN;
			p.reth.rkey = SRW_MSG_RKEY;
			p.reth.va = 0;
		} else {
			uint32_t i = ps->idx;
			enum srw_kind kind = plain ? SRW_BE_WRITE : ps->what == BPOS_TAIL ? SRW_BE_TAIL :
			                     i + 1 < npk ? SRW_DATA : SRW_LAST;

			p.imm = srw_imm(msg, kind, i);
			p.payload = msgbuf + i * mtu;
			p.payload_len = i + 1 < npk ? mtu : last;
			p.reth.rkey = write ? rkey : SRW_MSG_RKEY;
			p.reth.va = write ? base + (uint64_t)i * mtu : (uint64_t)i * mtu;
		}
		p.reth.dma_len = p.payload_len;
		send_pkt(&p, false);
		if ((t & 0x40) && sendorder[o] == dup % npos)
			send_pkt(&p, false); /* the same PSN: a duplicate */
	}

	/* The peer's own message completed whole: it holds what was sent. */
	if (check && bp->wc_ok != wc_before && bp->wc_status == UROCE_WC_SUCCESS && bp->wc_len == total &&
	    !(bp->wc_flags & UROCE_WC_PARTIAL)) {
		if (write) {
			check_bytes((const uint8_t *)(uintptr_t)base, msgbuf, total, "region A", QP_BE, msg);
		} else {
			check_bytes(area(AREA_B1), msgbuf, total < B1_LEN ? total : B1_LEN, "receive buffer B1", QP_BE, msg);
			if (total > B1_LEN)
				check_bytes(area(AREA_B2), msgbuf + B1_LEN, total - B1_LEN, "receive buffer B2", QP_BE, msg);
		}
		fz.st.be_verified++;
	}

	if (late) {
		/* past the deadline: copies of the first packet and of the tail */
		struct roce_pkt p;

		step(2 * BE_TMO_US * 1000ull);
		for (unsigned c = 0; c < 2; c++) {
			const struct be_pos *ps = &pos[c == 0 ? 0 : npos - 1];

			if (ps->what == BPOS_DESC)
				continue;
			pkt_init(&p, QP_BE);
			p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
			p.psn = ps->psn;
			p.imm = srw_imm(msg, plain ? SRW_BE_WRITE : ps->what == BPOS_TAIL ? SRW_BE_TAIL :
			                ps->idx + 1 < npk ? SRW_DATA : SRW_LAST, ps->idx);
			p.payload = msgbuf + ps->idx * mtu;
			p.payload_len = p.reth.dma_len = ps->idx + 1 < npk ? mtu : last;
			p.reth.rkey = write ? rkey : SRW_MSG_RKEY;
			p.reth.va = write ? base + (uint64_t)ps->idx * mtu : (uint64_t)ps->idx * mtu;
			send_pkt(&p, false);
		}
	}
}

/* A control packet to the be QP's control QPN (or its data QPN). */
static void be_send_ctrl_pkt(const uint8_t *b, uint32_t len, uint8_t op, bool to_data)
{
	static uint8_t buf[1024];
	struct roce_pkt p;

	b = fz_token(buf, sizeof(buf), b, len, QP_BE, fz.raw_token);
	pkt_init(&p, QP_BE);
	if (!to_data)
		p.dqpn = (uroce_qp_num(fz.qp[QP_BE]) + 1) & ROCE_QPN_MASK;
	p.opcode = op;
	p.psn = fz.be.ctrl_psn++ & ROCE_PSN_MASK;
	p.payload = b;
	p.payload_len = len;
	send_pkt(&p, false);
}

/* A VOTE (type 3): 8 bytes after the command, more for random fields.
 *   sel: bits 0-1 the group (0, 3 ours, 1 another, 2 any: 4 bytes);
 *     bits 2-4 a flaw: 0-3 none, 4 version 2, 5 type SACK, 6 the length
 *     field one more, 7 the payload 3 bytes short or (bit 5) 8 long;
 *     bit 6 SEND Only with Immediate instead of SEND Only; bit 7 to the
 *     data QPN
 *   roundsel: bit 7 any round (4 bytes), else 0-7 (the rounds BE_TMO uses)
 *   prop (32 bits) << shift (low 6 bits of shsel): the proposal, ns
 *   vflags: bit 0 ASK (the local member answers for a round it has), bit 7
 *     any flags (4 bytes)
 * Whether it counted: the QP's control packets received grow. */
static void cmd_be_vote(struct reader *r)
{
	uint8_t sel = rd8(r), roundsel = rd8(r);
	uint32_t prop = rd32(r);
	uint8_t shsel = rd8(r), vflags = rd8(r);
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_VOTE_LEN + 8];
	uint32_t len = SRW_CTRL_HDR_LEN + SRW_VOTE_LEN, group, round, flags;
	uint64_t drops_before, drops_after;
	struct uroce_port_stats ps;

	switch (sel & 3) {
	case 1: group = BE_GROUP + 1; break;
	case 2: group = rd32(r); break;
	default: group = BE_GROUP; break;
	}
	round = roundsel & 0x80 ? rd32(r) : roundsel & 7u;
	flags = vflags & 0x80 ? rd32(r) : vflags & 1u;
	memset(b, 0, sizeof(b));
	b[0] = SRW_VERSION;
	b[1] = SRW_CTRL_VOTE;
	roce_put_be32(b + SRW_CTRL_HDR_LEN, group);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 4, round);
	roce_put_be64(b + SRW_CTRL_HDR_LEN + 8, (uint64_t)prop << (shsel & 63));
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 16, flags);
	switch (sel >> 2 & 7) {
	case 4: b[0] = SRW_VERSION + 1; break;
	case 5: b[1] = SRW_CTRL_SACK; break;
	case 7: len = sel & 0x20 ? len + 8 : len - 3; break;
	default: break;
	}
	roce_put_be16(b + 2, (uint16_t)(len + ((sel >> 2 & 7) == 6)));
	uroce_port_stats(fz.ctx, 1, &ps);
	drops_before = ps.drops[UROCE_DROP_BAD_CTRL];
	be_send_ctrl_pkt(b, len, sel & 0x40 ? ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM : ROCE_TR_UC | ROCE_OP_SEND_ONLY,
	                 sel & 0x80);
	uroce_port_stats(fz.ctx, 1, &ps);
	drops_after = ps.drops[UROCE_DROP_BAD_CTRL];
	if (drops_after == drops_before && !(sel & 0xc0) && group == BE_GROUP && (sel >> 2 & 7) < 4)
		fz.st.be_votes_ok++;
}

/* A control packet of raw bytes: 2 bytes after the command, then the
 * payload. opsel: bits 0-2 the opcode (0-4 UC SEND Only), bit 3 a right
 * header (version 2, type = bits 4-5: none, SACK, SYNC or VOTE; length = the payload's + bits 6-7);
 * n: bits 0-6 the length, bit 7 to the data QPN. */
static void cmd_be_ctrl(struct reader *r)
{
	static const uint8_t ops[8] = { ROCE_TR_UC | ROCE_OP_SEND_ONLY, ROCE_TR_UC | ROCE_OP_SEND_ONLY,
		                        ROCE_TR_UC | ROCE_OP_SEND_ONLY, ROCE_TR_UC | ROCE_OP_SEND_ONLY,
		                        ROCE_TR_UC | ROCE_OP_SEND_ONLY, ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM,
		                        ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM, ROCE_TR_RC | ROCE_OP_SEND_ONLY };
	uint8_t opsel = rd8(r), n = rd8(r), b[128];
	uint32_t len = n & 0x7fu;

	for (uint32_t k = 0; k < len; k++)
		b[k] = rd8(r);
	if ((opsel & 8) && len >= SRW_CTRL_HDR_LEN) {
		static const uint8_t types[4] = { 0, SRW_CTRL_SACK, SRW_CTRL_SYNC, SRW_CTRL_VOTE };

		b[0] = SRW_VERSION;
		b[1] = types[opsel >> 4 & 3];
		roce_put_be16(b + 2, (uint16_t)(len + (opsel >> 6)));
	}
	fz.raw_token = !(opsel & 8);
	be_send_ctrl_pkt(b, len, ops[opsel & 7], n & 0x80);
	fz.raw_token = false;
}

/* A local work request on the be QP, whose packets go to the raw port: 5
 * bytes after the command.
 *   sel: bits 0-1 SEND, SEND with immediate, WRITE, WRITE with immediate;
 *     bit 2 two SGEs; bit 3 unsignaled; bit 4 up to 7 bytes; bits 5-6 one
 *     to four WRs; bit 7 a READ instead (be refuses it)
 *   len: up to 4095 bytes (16 packets); off: where in C
 *   tmosel: the WR's deadline: 0 the QP's, 1-127 that many us (1 us ends
 *     it before its packets leave), 128-253 1-126 ms, 254 past the
 *     maximum (refused), 255 the maximum */
static void cmd_be_post(struct reader *r)
{
	static const enum uroce_wr_opcode ops[4] = { UROCE_WR_SEND, UROCE_WR_SEND_WITH_IMM, UROCE_WR_RDMA_WRITE,
		                                     UROCE_WR_RDMA_WRITE_WITH_IMM };
	uint8_t sel = rd8(r);
	uint16_t len = rd16(r);
	uint8_t off = rd8(r), tmosel = rd8(r);
	uint32_t length = sel & 0x10 ? len % 8u : len % 4096u;
	struct uroce_sge sg[2];
	struct uroce_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	sg[0].lkey = sg[1].lkey = fz.mr[AREA_C]->lkey;
	sg[0].addr = area_va(AREA_C) + (off * 8u) % (C_LEN - length + 1);
	sg[0].length = length;
	wr.num_sge = 1;
	if ((sel & 4) && length > 1) {
		sg[0].length = length / 2;
		sg[1].addr = area_va(AREA_C) + C_LEN - (length - length / 2);
		sg[1].length = length - length / 2;
		wr.num_sge = 2;
	}
	wr.wr_id = 0xbe00u | sel;
	wr.sg_list = sg;
	wr.opcode = sel & 0x80 ? UROCE_WR_RDMA_READ : ops[sel & 3];
	wr.send_flags = sel & 8 ? 0 : UROCE_SEND_SIGNALED;
	wr.imm_data = 0x87654321u;
	wr.wr.rdma.remote_addr = 0x10000ull * off;
	wr.wr.rdma.rkey = 0x1234;
	wr.timeout_us = tmosel == 0 ? 0 : tmosel < 128 ? tmosel : tmosel < 254 ? (tmosel - 127u) * 1000u :
	                tmosel == 254 ? BE_TIMEOUT_MAX_US + 1 : BE_TIMEOUT_MAX_US;
	for (unsigned k = 0; k <= (sel >> 5 & 3u); k++)
		uroce_post_send(fz.qp[QP_BE], &wr, NULL); /* a full queue or a refused WR: fine */
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
}

/* The local member of the adaptive-timeout group: 2 bytes after the
 * command. sel bit 7: a warm-up of (val + 1) us (applied to the QP), else
 * an exchange for round val & 7 (its VOTE goes to the raw port; once the
 * peer's VOTE for that round came, the QP's deadline follows). */
static void cmd_be_tmo(struct reader *r)
{
	uint8_t sel = rd8(r), val = rd8(r);

	if (sel & 0x80)
		uroce_tmo_warmup(fz.tmo, (val + 1ull) * 1000);
	else
		uroce_tmo_exchange(fz.tmo, val & 7u); /* -EAGAIN while the peer's is missing */
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
}

static void cmd_be(struct reader *r, uint8_t cmd)
{
	fz.st.be_cmds++;
	switch ((enum be_cmd)(cmd >> 4 & 7)) {
	case BE_PKT: cmd_be_pkt(r, false); break;
	case BE_PKT_RE: cmd_be_pkt(r, true); break;
	case BE_MSG: cmd_be_msg(r, false); break;
	case BE_MSG_LATE: cmd_be_msg(r, true); break;
	case BE_VOTE: cmd_be_vote(r); break;
	case BE_CTRL: cmd_be_ctrl(r); break;
	case BE_POST: cmd_be_post(r); break;
	case BE_TMO: cmd_be_tmo(r); break;
	}
}

/* Back to a known state: nothing in flight, QPs fresh, memory refilled. */
/* ---- congestion notification and control ---- */

/* QP_SR is one of its twins for the whole input: the plain one, or the one
 * that runs EQDS. The other waits in RESET. */
static void sr_twin_pick(bool eqds)
{
	struct uroce_qp *want = fz.sr_twin[eqds];
	struct uroce_qp_attr a;

	if (fz.qp[QP_SR] == want)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	if (uroce_qp_modify(fz.qp[QP_SR], &a, UROCE_QP_STATE))
		die("twin to RESET");
	fz.qp[QP_SR] = want;
	cnp_track(QP_SR);
}

/* sr or ec, by bit 0 of a selector */
static unsigned cc_qp(uint8_t sel)
{
	return sel & 1 ? QP_EC : QP_SR;
}

/* A CNP: 3 bytes. qsel: the QP (mod NQP), bit 3 to the control QPN of an
 * sr/ec/be QP, bit 4 BECN set; psnsel: top 2 bits the PSN (0 one the sr/ec
 * QP sent, or its expected one; 1 any; 2 zero; 3 ahead of anything sent);
 * flags: addressing (pkt_addressing), a bad ICRC. */
static void cmd_cc_cnp(struct reader *r)
{
	uint8_t qsel = rd8(r), psnsel = rd8(r), flags = rd8(r);
	unsigned qi = qsel % NQP;
	uint32_t x = psnsel & 31, epsn, snd;
	struct roce_pkt p;

	qp_psns(qi, &epsn, &snd);
	pkt_init(&p, qi);
	p.opcode = ROCE_OP_CNP;
	if ((qsel & 8) && qi >= QP_SR)
		p.dqpn = (uroce_qp_num(fz.qp[qi]) + 1) & ROCE_QPN_MASK;
	p.becn = qsel & 0x10;
	switch (psnsel >> 6) {
	case 1: p.psn = rd32(r); break;
	case 2: p.psn = 0; break;
	case 3: p.psn = snd + 1 + x * 1000u; break;
	default: p.psn = is_sr(qi) ? fz.sr[qi - QP_SR].tx_nxt - 1 - x : epsn; break;
	}
	p.psn &= ROCE_PSN_MASK;
	pkt_addressing(&p, flags);
	send_pkt(&p, flags_bad_icrc(flags));
}

/* A TRIM: 2 bytes, then a byte per PSN. nsel: bit 0 the QP (sr/ec); bit 1
 * the header's n one more than the PSNs carried; bits 2-6: n = 1..8, or
 * with bit 7 29..36 (33 and more are refused) and 0. flags: addressing,
 * bits 0-1 = 3 cut short.
 * A PSN's byte: top 3 bits in flight (from the newest back), from the first
 * sent on, never sent, before the first, any, far behind, the newest. */
static void cmd_cc_trim(struct reader *r)
{
	uint8_t nsel = rd8(r), flags = rd8(r);
	unsigned qi = cc_qp(nsel), v = nsel >> 2 & 31, n = !(nsel & 0x80) ? 1 + v % 8 : v == 31 ? 0 : 29 + v % 8;
	struct sr_peer *sp = &fz.sr[qi - QP_SR];
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_TRIM_FIXED + 4 * 64];
	uint32_t len;

	memset(b, 0, sizeof(b));
	for (unsigned k = 0; k < n; k++) {
		uint8_t sel = rd8(r);
		uint32_t x = sel & 31, psn;

		switch (sel >> 5) {
		case 1: psn = sp->tx_psn0 + x; break;
		case 2: psn = sp->tx_nxt + x; break;
		case 3: psn = sp->tx_psn0 - 1 - x; break;
		case 4: psn = rd32(r); break;
		case 5: psn = sp->tx_nxt - SR_WINDOW - 1 - x; break;
		case 6: psn = sp->tx_nxt - 1; break;
		default: psn = sp->tx_nxt - 1 - x; break;
		}
		roce_put_be32(b + SRW_CTRL_HDR_LEN + SRW_TRIM_FIXED + 4 * k, psn & ROCE_PSN_MASK);
	}
	roce_put_be16(b + SRW_CTRL_HDR_LEN, (uint16_t)(n + !!(nsel & 2)));
	len = ctrl_hdr(b, SRW_CTRL_TRIM, SRW_CTRL_HDR_LEN + SRW_TRIM_FIXED + 4 * n, flags, nsel);
	fz_send_ctrl(qi, b, len, ROCE_TR_UC | ROCE_OP_SEND_ONLY, flags, false);
}

/* An RTS to the QP's receiver (its port's pull pacer): 2 bytes (more for
 * any counts). sel: bit 0 the QP; bits 1-3 what the forged sender asks
 * (more; more and more speculative; want back; spec past want; spec back;
 * huge; any; the same again), bits 4-7 how much. flags: addressing, bits
 * 0-1 = 3 cut short, bit 5 (addressing mode 0..3 only) a header length 4
 * short with the body whole. */
static void cmd_cc_rts(struct reader *r)
{
	uint8_t sel = rd8(r), flags = rd8(r);
	unsigned qi = cc_qp(sel);
	struct sr_peer *sp = &fz.sr[qi - QP_SR];
	uint64_t want = sp->rts_want, spec = sp->rts_spec, m = 1u + (sel >> 4);
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_RTS_LEN];
	uint32_t len;

	switch (sel >> 1 & 7) {
	case 0: want += m * 4096u; break;
	case 1: want += m * 4096u; spec += m * 1024u; break;
	case 2: want = want > m ? want - m : 0; break;
	case 3: spec = want + m; break;
	case 4: spec = spec > m ? spec - m : 0; want += 4096u; break;
	case 5: want = 1ull << (40 + m); break;
	case 6:
		want = rd32(r);
		want |= (uint64_t)rd32(r) << 32;
		spec = rd32(r);
		break;
	default: break;
	}
	if (want >= sp->rts_want && spec >= sp->rts_spec && spec <= want) {
		sp->rts_want = want; /* what the receiver keeps, if it takes it */
		sp->rts_spec = spec;
	}
	roce_put_be64(b + SRW_CTRL_HDR_LEN, want);
	roce_put_be64(b + SRW_CTRL_HDR_LEN + 8, spec);
	len = ctrl_hdr(b, SRW_CTRL_RTS, sizeof(b), flags, sel);
	if ((flags & 0x3c) == 0x20)
		roce_put_be16(b + 2, (uint16_t)(sizeof(b) - 4));
	fz_send_ctrl(qi, b, len, ROCE_TR_UC | ROCE_OP_SEND_ONLY, flags & 0x1f, false);
}

/* A PULL to the QP's sender: 2 bytes (more for any credit). sel: bit 0 the
 * QP; top 3 bits the credit (what its RTSs asked for, less, a quantum
 * more, past that, any, zero, the largest); bits 1-4 how much. flags:
 * addressing, bits 0-1 = 3 cut short, bit 5 (addressing 0..3) a header
 * length 4 short with the credit whole. */
static void cmd_cc_pull(struct reader *r)
{
	uint8_t sel = rd8(r), flags = rd8(r);
	unsigned qi = cc_qp(sel);
	uint64_t asked = fz.sr[qi - QP_SR].asked, x = sel >> 1 & 15, credit;
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_PULL_LEN];
	uint32_t len;

	switch (sel >> 5) {
	case 1: credit = asked > x * 1024u ? asked - x * 1024u : 0; break;
	case 2: credit = asked + EQDS_QUANTUM; break;
	case 3: credit = asked + EQDS_QUANTUM + 1 + x; break;
	case 4:
		credit = rd32(r);
		credit |= (uint64_t)rd32(r) << 32;
		break;
	case 5: credit = 0; break;
	case 6: credit = UINT64_MAX - x; break;
	default: credit = asked; break;
	}
	roce_put_be64(b + SRW_CTRL_HDR_LEN, credit);
	len = ctrl_hdr(b, SRW_CTRL_PULL, sizeof(b), flags, sel);
	if ((flags & 0x3c) == 0x20)
		roce_put_be16(b + 2, (uint16_t)(sizeof(b) - 4));
	fz_send_ctrl(qi, b, len, ROCE_TR_UC | ROCE_OP_SEND_ONLY, flags & 0x1f, false);
}

/* A TRIM, RTS or PULL of raw bytes: 2 bytes, then the body. tsel: bits
 * 0-1 the type (TRIM, RTS, PULL, TRIM), bits 2-3 the QP (sr, ec, be, sr),
 * bits 4-5 how much the header's length is short of the payload's */
static void cmd_cc_ctrl(struct reader *r)
{
	uint8_t tsel = rd8(r), n = rd8(r), b[SRW_CTRL_HDR_LEN + 64];
	unsigned q = (tsel >> 2 & 3) % 3, qi = q == 2 ? QP_BE : q ? QP_EC : QP_SR;
	uint32_t len = SRW_CTRL_HDR_LEN + n % 64u;
	struct roce_pkt p;

	for (uint32_t k = SRW_CTRL_HDR_LEN; k < len; k++)
		b[k] = rd8(r);
	b[0] = SRW_VERSION;
	b[1] = (uint8_t)(SRW_CTRL_TRIM + (tsel & 3u) % 3u);
	roce_put_be16(b + 2, (uint16_t)(len - (tsel >> 4 & 3)));
	if (qi != QP_BE) {
		fz_send_ctrl(qi, b, len, ROCE_TR_UC | ROCE_OP_SEND_ONLY, 0, false);
		return;
	}
	pkt_init(&p, qi);
	p.dqpn = (uroce_qp_num(fz.qp[qi]) + 1) & ROCE_QPN_MASK;
	p.opcode = ROCE_TR_UC | ROCE_OP_SEND_ONLY;
	p.psn = fz.be.ctrl_psn++ & ROCE_PSN_MASK;
	roce_put_be32(b + 4, uroce_qp_token(fz.qp[qi]));
	p.payload = b;
	p.payload_len = len;
	send_pkt(&p, false);
}

static void sr_top_chunks(unsigned qi, uint8_t nmsgs, uint16_t hcut, uint8_t tail);

/* The application resets the sr or ec QP, or with bit 1 destroys it and
 * creates it again (an EQDS receiver may be waiting in its port's pacer):
 * 1 byte. With bit 2, 6 more: the new QP's rel.chunk_pkts (16 bits, 1 +
 * it mod 4096; a reset keeps the QP's), then sr_top_chunks's count of
 * messages (8), the handle's length below BIG_LEN (16) and tail (8). */
static void cmd_cc_reset(struct reader *r)
{
	uint8_t sel = rd8(r);
	unsigned qi = cc_qp(sel);
	uint16_t chunk = 0, hcut = 0;
	uint8_t nmsgs = 0, tail = 0;

	if (sel & 4) {
		chunk = rd16(r);
		nmsgs = rd8(r);
		hcut = rd16(r);
		tail = rd8(r);
	}
	sr_release(qi);
	if (sel & 2) {
		bool eqds = qi == QP_SR && fz.qp[QP_SR] == fz.sr_twin[1];
		struct uroce_qp_stats q;
		uint64_t *a = (uint64_t *)&fz.gone[qi], *b = (uint64_t *)&q;

		if (uroce_qp_stats(fz.qp[qi], &q))
			die("qp_stats");
		for (size_t k = 0; k < sizeof(q) / sizeof(uint64_t); k++)
			a[k] += b[k];
		if (uroce_qp_destroy(fz.qp[qi]))
			die("qp_destroy");
		fz_chunk_next = sel & 4 ? 1u + chunk % 4096u : 0;
		fz.qp[qi] = new_qp(qi, eqds);
		fz_chunk_next = 0;
		if (qi == QP_SR)
			fz.sr_twin[eqds] = fz.qp[qi];
		cnp_track(qi);
		fz.st.qp_recreated++;
	}
	bring_up(qi);
	step(1000);
	if (sel & 4)
		sr_top_chunks(qi, nmsgs, hcut, tail);
	else
		post_recvs(qi);
}

/* On a QP just brought up (no receives): the forged peer sends nmsgs
 * empty messages, each to a receive posted for it, so the next message
 * takes slot nmsgs mod 64 (the last slot's bitmap ends the allocation);
 * a receive handle on the big region, BIG_LEN - hcut long (its chunk
 * bitmap ends anywhere in a word), takes that message; then its DATA
 * packets with the tail top indexes 2^17 - tail .. 2^17 - 1, length
 * unknown (no LAST): the chunk of the top index ends past 2^17 when
 * chunk_pkts does not divide it. The QP is left without other receives. */
static void sr_top_chunks(unsigned qi, uint8_t nmsgs, uint16_t hcut, uint8_t tail)
{
	struct sr_peer *sp = peer_of(qi);
	uint32_t mtu = qp_mtu[qi];
	static uint8_t payload[256];
	struct roce_pkt p;

	/* ec's bitmaps are followed by its subdone ones: only sr's ends an
	 * allocation, and only sr takes a message of one bare LAST */
	for (unsigned k = 0; qi == QP_SR && k < nmsgs % 128u; k++) {
		struct uroce_sge sg = { area_va(AREA_B1), B1_LEN, fz.mr[AREA_B1]->lkey };
		struct uroce_recv_wr wr = { .wr_id = qi, .sg_list = &sg, .num_sge = 1 };

		if (uroce_post_recv(fz.qp[qi], &wr, NULL))
			break;
		pkt_init(&p, qi);
		p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
		p.psn = sp->rx_psn++ & ROCE_PSN_MASK;
		touch(qi, sp->rx_msg);
		p.imm = srw_imm(sp->rx_msg++ & SRW_MSG_MASK, SRW_LAST, 0);
		p.reth.rkey = SRW_MSG_RKEY;
		p.payload = payload;
		send_pkt(&p, false);
		step(1000);
	}
	{
		struct uroce_sge sg = { (uint64_t)(uintptr_t)fz_big, BIG_LEN - hcut, fz_big_mr->lkey };

		if (sp->nprecv < sizeof(sp->precv) / sizeof(sp->precv[0]) &&
		    uroce_precv_post(fz.qp[qi], &sg, 0x300u | qi, &sp->precv[sp->nprecv]) == 0) {
			sp->nprecv++;
			fz.st.sr_top_chunks += qi == QP_SR && tail && sp->rx_msg % SR_MSG_WINDOW == SR_MSG_WINDOW - 1;
		}
	}
	touch(qi, sp->rx_msg);
	fill_msg(payload, mtu, (uint32_t)fz.st.pkts);
	for (uint32_t k = 0; k < tail; k++) {
		uint32_t idx = (1u << SRW_IDX_BITS) - tail + k;

		pkt_init(&p, qi);
		p.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
		p.psn = sp->rx_psn++ & ROCE_PSN_MASK;
		p.imm = srw_imm(sp->rx_msg & SRW_MSG_MASK, SRW_DATA, idx);
		p.reth.rkey = SRW_MSG_RKEY;
		p.reth.va = (uint64_t)idx * mtu;
		p.reth.dma_len = mtu;
		p.payload = payload;
		p.payload_len = mtu;
		send_pkt(&p, false);
		step(1000);
	}
}

static void cmd_cc(struct reader *r, uint8_t cmd)
{
	fz.st.cc_cmds++;
	switch ((enum cc_cmd)(cmd >> 4 & 7)) {
	case CC_CNP: cmd_cc_cnp(r); break;
	case CC_TOS: {
		uint8_t tos = rd8(r), bits = rd8(r);

		fz.tos_next = tos;
		fz.burst_next = bits & 1;
		fz.mod_fresh = true;
		break;
	}
	case CC_TRIMMED:
		fz.trim_next = rd8(r);
		fz.mod_fresh = true;
		break;
	case CC_TRIM: cmd_cc_trim(r); break;
	case CC_RTS: cmd_cc_rts(r); break;
	case CC_PULL: cmd_cc_pull(r); break;
	case CC_CTRL: cmd_cc_ctrl(r); break;
	case CC_RESET: cmd_cc_reset(r); break;
	}
}

static void reset_all(uint8_t setup_byte)
{
	static const uint32_t psns[4] = { 0, 0xfffff8, 0x800000, 0x123456 };

	fz.settling = true;
	for (unsigned k = 0; k < SETTLE_STEPS && (loop_fabric_in_flight(fz.fab) || k < 2); k++)
		step(100000);
	if (!fz.mr[AREA_A])
		revoke_toggle();
	fz.base_psn = psns[setup_byte & 3];
	fz.nreads = 0;
	for (unsigned i = QP_SR; i <= QP_EC; i++)
		sr_release(i);
	/* a chunk_pkts CC_RESET chose holds for its input only (inputs replay alike) */
	for (unsigned i = QP_SR; i <= QP_EC; i++)
		if (sr_of(fz.qp[i])->cfg.chunk_pkts != (i == QP_EC ? 2u : 1u)) {
			uint8_t b[2] = { (uint8_t)(i == QP_EC), 2 };
			struct reader rr = { b, sizeof(b), 0 };

			cmd_cc_reset(&rr); /* re-creates it as setup made it, receives posted */
		}
	sr_twin_pick((setup_byte & SETUP_SR_EQDS) != 0);
	for (unsigned i = 0; i < NQP; i++)
		bring_up(i);
	be_group();
	fz.be.ctrl_psn = 0;
	step(1000);
	memcpy(fz.mem, fz.shadow, fz.mem_len);
	/* setup bits 2-3 both set: the sr and ec QPs start with no receives
	 * (receive handles find room) */
	for (unsigned i = 0; i < NQP; i++)
		if (!is_sr(i) || (setup_byte & 0x0c) != 0x0c)
			post_recvs(i);
	fz.settling = false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size, 0 };

	if (!fz.ready)
		setup();
	reset_all(rd8(&r));
	fz.st.inputs++;
	for (unsigned c = 0; c < MAX_CMDS && r.at < r.n; c++) {
		uint8_t cmd = rd8(&r);

		fz.st.cmds++;
		/* CC_TOS and CC_TRIMMED hold for the one command after them */
		if (!fz.mod_fresh) {
			fz.tos_next = 0;
			fz.trim_next = -1;
			fz.burst_next = false;
		}
		fz.mod_fresh = false;
		if (CC_CMD(cmd)) {
			cmd_cc(&r, cmd);
			recover();
			continue;
		}
		if (SR_CMD(cmd)) {
			cmd_sr(&r, cmd);
			recover();
			continue;
		}
		if (BE_CMD(cmd)) {
			cmd_be(&r, cmd);
			recover();
			continue;
		}
		switch (cmd & 15) {
		case CMD_MSG:
		case CMD_MSG2: cmd_msg(&r); break;
		case CMD_RAW: cmd_raw(&r, false); break;
		case CMD_RAW_L4: cmd_raw(&r, true); break;
		case CMD_POST: cmd_post(&r); break;
		case CMD_TIME: cmd_time(&r); break;
		case CMD_REVOKE:
			/* a quarter of the time: deregistration walks the QP table,
			 * which would otherwise take most of the fuzzer's time */
			if ((rd8(&r) & 3) == 0)
				revoke_toggle();
			else
				cmd_pkt(&r);
			break;
		default: cmd_pkt(&r); break;
		}
		recover();
	}
	fz.tos_next = 0;
	fz.trim_next = -1;
	fz.burst_next = fz.mod_fresh = false;
	if (fz.qp[QP_SR] == fz.sr_twin[1])
		fz.st.eqds_inputs++;
	for (unsigned k = 0; k < 4; k++)
		step(1000);
	if (fz.mr[AREA_A] && memcmp(area(AREA_A), fz.shadow + fz.off[AREA_A], A_LEN))
		fz.st.a_changed++;
	check_guards();
	return 0;
}

#ifdef FUZZ_STANDALONE_MAIN
#include <dirent.h>
#include <errno.h>

/* Random inputs after the corpus: a few seconds under the sanitizers. */
#define RANDOM_INPUTS 10000u
#define RANDOM_MAX_LEN 400u

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static void feed_file(const char *path)
{
	static uint8_t buf[1 << 16];
	FILE *f = fopen(path, "rb");
	size_t len;

	if (!f) {
		fprintf(stderr, "fuzz_responder: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
}

/* A corpus folder, or one input file (a reproducer). */
static unsigned feed_path(const char *path)
{
	char file[4096];
	unsigned n = 0;
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d && errno == ENOTDIR) {
		feed_file(path);
		return 1;
	}
	if (!d) {
		fprintf(stderr, "fuzz_responder: corpus %s: %s\n", path, strerror(errno));
		exit(1);
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		feed_file(file);
		n++;
	}
	closedir(d);
	return n;
}

/* ---- the seed corpus: one input per path worth starting from ---- */

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

static int write_corpus(const char *dir)
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

/* QP i's counters over every QP that has been it: the current one, QP_SR's
 * other twin, the ones destroyed (the counters are all uint64_t; gauges
 * such as srtt_ns add up to nothing meaningful) */
static void qp_stats_all(unsigned i, struct uroce_qp_stats *q)
{
	struct uroce_qp_stats o;
	uint64_t *a = (uint64_t *)q, *b = (uint64_t *)&o, *g = (uint64_t *)&fz.gone[i];

	_Static_assert(sizeof(o) % sizeof(uint64_t) == 0, "uroce_qp_stats: uint64_t fields");
	if (uroce_qp_stats(fz.qp[i], q))
		die("qp_stats");
	if (i == QP_SR && uroce_qp_stats(fz.qp[QP_SR] == fz.sr_twin[0] ? fz.sr_twin[1] : fz.sr_twin[0], &o) == 0)
		for (size_t k = 0; k < sizeof(o) / sizeof(uint64_t); k++)
			a[k] += b[k];
	for (size_t k = 0; k < sizeof(o) / sizeof(uint64_t); k++)
		a[k] += g[k];
}

/* congestion counters summed over every QP */
enum { CCT_CNPS_SENT, CCT_CNPS_RCVD, CCT_CE, CCT_TRIMMED, CCT_TRIM_NACKS, CCT_RTS_SENT, CCT_RTS_RCVD, CCT_PULLS_SENT,
       CCT_PULLS_RCVD, CCT__COUNT };

static void cc_totals(uint64_t t[CCT__COUNT])
{
	memset(t, 0, CCT__COUNT * sizeof(t[0]));
	for (unsigned i = 0; i < NQP; i++) {
		struct uroce_qp_stats q;

		qp_stats_all(i, &q);
		t[CCT_CNPS_SENT] += q.cnps_sent;
		t[CCT_CNPS_RCVD] += q.cnps_rcvd;
		t[CCT_CE] += q.ecn_ce_rcvd;
		t[CCT_TRIMMED] += q.trims_rcvd;
		t[CCT_TRIM_NACKS] += q.trim_nacks_rcvd;
		t[CCT_RTS_SENT] += q.cc_rts_sent;
		t[CCT_RTS_RCVD] += q.cc_rts_rcvd;
		t[CCT_PULLS_SENT] += q.cc_pulls_sent;
		t[CCT_PULLS_RCVD] += q.cc_pulls_rcvd;
	}
}

static void print_stats(void)
{
	struct uroce_port_stats ps;

	uroce_port_stats(fz.ctx, 1, &ps);
	printf("fuzz_responder: %llu inputs, %llu commands, %llu packets; placed: %llu receives (%llu multi-packet), "
	       "%llu multi-packet WRITE_IMM, region A written in %llu inputs, %llu READ response bytes sent, "
	       "%llu local READs/atomics completed by forged responses; %llu QPs recovered from ERR\n",
	       (unsigned long long)fz.st.inputs, (unsigned long long)fz.st.cmds, (unsigned long long)fz.st.pkts,
	       (unsigned long long)fz.st.recv_ok, (unsigned long long)fz.st.recv_multi,
	       (unsigned long long)fz.st.write_imm_multi, (unsigned long long)fz.st.a_changed,
	       (unsigned long long)fz.st.read_resp_bytes, (unsigned long long)fz.st.local_reads_done,
	       (unsigned long long)fz.st.qp_errs);
	for (unsigned i = QP_SR; i <= QP_EC; i++) {
		struct uroce_qp_stats q;
		unsigned j = i - QP_SR;

		qp_stats_all(i, &q);
		printf("fuzz_responder: %s: %llu commands; receive side: %llu messages completed (%llu multi-packet, "
		       "%llu bytes checked, %llu partial of %llu handles given back), %llu failed, %llu SACKs sent, "
		       "%llu rebuilt by ec, %llu NACKs sent; "
		       "send side: %llu WRs completed (%llu streams), %llu SACKs accepted, %llu retransmits (%llu RACK, "
		       "%llu probes, %llu RTO, %llu spurious), %llu parity sent, %llu NACKs taken, %llu credit waits; "
		       "%llu recovered from ERR\n",
		       i == QP_SR ? "sr" : "ec", (unsigned long long)fz.st.sr_cmds[j],
		       (unsigned long long)fz.st.sr_recv_ok[j], (unsigned long long)fz.st.sr_recv_multi[j],
		       (unsigned long long)fz.st.sr_verified[j], (unsigned long long)fz.st.sr_partial[j],
		       (unsigned long long)fz.st.sr_precv_given[j], (unsigned long long)fz.st.sr_recv_err[j],
		       (unsigned long long)q.sacks_sent, (unsigned long long)q.ec_recovered,
		       (unsigned long long)q.ec_nacks_sent, (unsigned long long)fz.st.sr_send_ok[j],
		       (unsigned long long)fz.st.sr_streams[j],
		       (unsigned long long)q.sacks_rcvd, (unsigned long long)q.retransmits,
		       (unsigned long long)q.rack_losses, (unsigned long long)q.tlp_probes,
		       (unsigned long long)q.rto_losses, (unsigned long long)q.spurious_retx,
		       (unsigned long long)q.parity_sent, (unsigned long long)q.ec_nacks_rcvd,
		       (unsigned long long)q.credit_waits, (unsigned long long)fz.st.sr_qp_errs[j]);
	}
	printf("fuzz_responder: ec messages with rebuilt packets whose bytes were checked: %llu\n",
	       (unsigned long long)fz.st.ec_rebuilt_verified);
	{
		struct uroce_qp_stats q;

		if (uroce_qp_stats(fz.qp[QP_BE], &q))
			die("qp_stats");
		printf("fuzz_responder: be: %llu commands; receive side: %llu completed (%llu WRITE with immediate, "
		       "%llu partial, %llu by deadline, %llu preempted, %llu bytes checked), %llu failed, %llu late "
		       "drops, %llu duplicates, %llu VOTEs taken; send side: %llu WRs completed, %llu ended by their "
		       "deadline; QP counters: %llu timeouts, %llu preempted; %llu recovered from ERR\n",
		       (unsigned long long)fz.st.be_cmds, (unsigned long long)fz.st.be_recv_ok,
		       (unsigned long long)fz.st.be_recv_imm, (unsigned long long)fz.st.be_recv_partial,
		       (unsigned long long)fz.st.be_recv_timeout, (unsigned long long)fz.st.be_recv_preempted,
		       (unsigned long long)fz.st.be_verified, (unsigned long long)fz.st.be_recv_err,
		       (unsigned long long)q.late_drops, (unsigned long long)q.duplicates,
		       (unsigned long long)fz.st.be_votes_ok, (unsigned long long)fz.st.be_send_ok,
		       (unsigned long long)fz.st.be_send_timeout, (unsigned long long)q.be_timeouts,
		       (unsigned long long)q.be_preempted, (unsigned long long)fz.st.be_qp_errs);
	}
	{
		uint64_t sum[CCT__COUNT];

		cc_totals(sum);
		printf("fuzz_responder: congestion: %llu commands, %llu inputs with the EQDS sr QP, %llu QPs re-created; "
		       "CNPs: %llu sent (%llu checked 4 us apart), %llu taken, %llu CE marks; %llu trimmed arrivals, %llu "
		       "packets resent on a TRIM; EQDS: %llu RTS sent, %llu taken, %llu PULLs sent, %llu taken, credit "
		       "checked %llu times\n",
		       (unsigned long long)fz.st.cc_cmds, (unsigned long long)fz.st.eqds_inputs,
		       (unsigned long long)fz.st.qp_recreated, (unsigned long long)sum[CCT_CNPS_SENT],
		       (unsigned long long)fz.st.cnps_checked, (unsigned long long)sum[CCT_CNPS_RCVD],
		       (unsigned long long)sum[CCT_CE], (unsigned long long)sum[CCT_TRIMMED],
		       (unsigned long long)sum[CCT_TRIM_NACKS], (unsigned long long)sum[CCT_RTS_SENT],
		       (unsigned long long)sum[CCT_RTS_RCVD], (unsigned long long)sum[CCT_PULLS_SENT],
		       (unsigned long long)sum[CCT_PULLS_RCVD],
		       (unsigned long long)fz.st.eqds_checked);
	}
	for (unsigned i = UROCE_DROP_SHORT_FRAME; i < UROCE_DROP__COUNT; i++)
		if (ps.drops[i])
			printf("  %-18s %llu\n", uroce_drop_reason_name(i), (unsigned long long)ps.drops[i]);
}

int main(int argc, char **argv)
{
	static uint8_t buf[RANDOM_MAX_LEN];
	unsigned corpus = 0;
	struct uroce_port_stats ps;
	struct uroce_qp_stats srs, ecs;
	int fails = 0;

	if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
		return write_corpus(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--only") == 0) {
		/* replay one input or folder, print what it reached, check nothing */
		feed_path(argv[2]);
		print_stats();
		fflush(stdout); /* LeakSanitizer's report at exit ends the process without flushing */
		return 0;
	}
	for (int i = 1; i < argc; i++)
		corpus += feed_path(argv[i]);
	for (unsigned i = 0; i < RANDOM_INPUTS; i++) {
		uint32_t len = 1 + (uint32_t)(next() % RANDOM_MAX_LEN);

		for (uint32_t k = 0; k < len; k++)
			buf[k] = (uint8_t)next();
		LLVMFuzzerTestOneInput(buf, len);
	}
	print_stats();
	/* the target must keep reaching placement and every kind of refusal,
	 * or it has quietly stopped testing the responder */
	uroce_port_stats(fz.ctx, 1, &ps);
	qp_stats_all(QP_SR, &srs);
	qp_stats_all(QP_EC, &ecs);
#define MUST(cond)                                                              \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "fuzz_responder: never reached: %s\n", #cond); \
			fails++;                                                \
		}                                                               \
	} while (0)
	MUST(fz.st.recv_multi > 0);
	MUST(fz.st.write_imm_multi > 0);
	MUST(fz.st.a_changed > 0);
	MUST(fz.st.read_resp_bytes > 0);
	MUST(fz.st.local_reads_done > 0);
	MUST(fz.st.qp_errs > 0);
	MUST(ps.drops[UROCE_DROP_BAD_RKEY] > 0);
	MUST(ps.drops[UROCE_DROP_OUT_OF_BOUNDS] > 0);
	MUST(ps.drops[UROCE_DROP_ACCESS_DENIED] > 0);
	MUST(ps.drops[UROCE_DROP_PSN_OUT_OF_WINDOW] > 0);
	MUST(ps.drops[UROCE_DROP_DUPLICATE] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_OPCODE] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_QKEY] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_LENGTH_MSG] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_ICRC] > 0);
	MUST(ps.drops[UROCE_DROP_UNKNOWN_OPCODE] > 0);
	/* sr and ec: messages complete (and hold what was sent), ec rebuilds,
	 * the sender takes SACKs, late and malformed packets are refused */
	MUST(fz.st.sr_recv_ok[0] > 0);
	MUST(fz.st.sr_recv_ok[1] > 0);
	MUST(fz.st.sr_verified[0] > 0);
	MUST(fz.st.sr_top_chunks > 0);
	MUST(ecs.ec_recovered > 0);
	MUST(fz.st.ec_rebuilt_verified > 0);
	MUST(srs.sacks_rcvd + ecs.sacks_rcvd > 0);
	MUST(ps.drops[UROCE_DROP_STALE_MSG] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_CTRL] > 0);
	/* be: messages complete whole (and hold what was sent), by deadline
	 * and preempted; late packets are refused; VOTEs are taken; WRs sent */
	MUST(fz.st.be_recv_ok > 0);
	MUST(fz.st.be_verified > 0);
	MUST(fz.st.be_recv_timeout > 0);
	MUST(fz.st.be_recv_preempted > 0);
	MUST(fz.st.be_votes_ok > 0);
	MUST(fz.st.be_send_ok > 0);
	MUST(ps.drops[UROCE_DROP_LATE] > 0);
	/* congestion: CNPs both ways (and dated 4 us apart), trimmed packets
	 * NACKed and TRIMs taken, RTSs and PULLs both ways, the EQDS sender's
	 * credit checked, QPs re-created */
	{
		uint64_t t[CCT__COUNT];

		cc_totals(t);
		MUST(t[CCT_CNPS_SENT] > 0);
		MUST(fz.st.cnps_checked > 0);
		MUST(t[CCT_CNPS_RCVD] > 0);
		MUST(t[CCT_TRIMMED] > 0);
		MUST(t[CCT_TRIM_NACKS] > 0);
		MUST(t[CCT_RTS_SENT] > 0);
		MUST(t[CCT_RTS_RCVD] > 0);
		MUST(t[CCT_PULLS_SENT] > 0);
		MUST(t[CCT_PULLS_RCVD] > 0);
		MUST(fz.st.eqds_checked > 0);
		MUST(fz.st.qp_recreated > 0);
	}
#undef MUST
	printf("fuzz_responder: %u corpus files, %u random inputs: %s\n", corpus, RANDOM_INPUTS,
	       fails ? "FAILED" : "no failure");
	fflush(stdout); /* LeakSanitizer's report at exit ends the process without flushing */
	return fails ? 1 : 0;
}
#endif
