/* Fuzz target for the receive side of connected RC, UC and UD QPs (the
 * responder, and the RC completer for responses): each input is decoded
 * into a short sequence of forged packets, multi-packet messages, raw
 * frames, local work requests, time jumps and region revocations, sent
 * from a raw loop port to a context. After every input every byte outside
 * the registered regions (guard zones, a read-only region, another PD's
 * region, a deregistered one) must be unchanged, or the target aborts.
 * Built for libFuzzer with clang; with -DFUZZ_STANDALONE_MAIN it carries a
 * main() that replays a corpus and seeded random inputs (every build), and
 * writes the seed corpus with --write-corpus DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port.h"
#include "dataplane/port_loop.h"
#include "dataplane/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Layout of the guarded memory: G A G B1 G B2 G C G D G E G. A is the
 * RDMA target (full remote access), B1+B2 the two SGEs of every receive
 * WQE, C the local buffer of the RC QP's own READs and atomics, D a
 * read-only region, E a region of another PD. Sizes keep every area
 * 8-byte aligned (atomics). */
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

enum { QP_RC, QP_UC, QP_UD, NQP };
static const enum uroce_qp_type qp_type[NQP] = { UROCE_QPT_RC, UROCE_QPT_UC, UROCE_QPT_UD };
static const uint8_t qp_tr[NQP] = { ROCE_TR_RC, ROCE_TR_UC, ROCE_TR_UD };
/* RC at 1024, UC at 256 (long messages cheaply), UD up to 1024 */
static const enum uroce_mtu qp_mtu_enum[NQP] = { UROCE_MTU_1024, UROCE_MTU_256, UROCE_MTU_1024 };
static const uint32_t qp_mtu[NQP] = { 1024, 256, 1024 };

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

struct fuzz_stats {
	uint64_t inputs, cmds, pkts;
	uint64_t recv_ok, recv_multi, write_imm_multi, a_changed, qp_errs, send_wc, read_resp_bytes;
	uint64_t local_reads_done;
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
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = fz.base_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	roce_ipv4_mapped(a.ah_attr.dgid, loop_port_ipv4_be(RAW_PORT));
	a.ah_attr.sgid_index = fz.sgid_v4;
	if (t == UROCE_QPT_UD)
		mask = UROCE_QP_STATE;
	else
		mask = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
		       (t == UROCE_QPT_RC ? UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER : 0);
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

	for (unsigned i = 0; i < NQP; i++) {
		struct uroce_qp_init_attr ia = { .qp_type = qp_type[i], .send_cq = fz.scq, .recv_cq = fz.rcq };

		ia.cap.max_send_wr = 64;
		ia.cap.max_recv_wr = RECV_DEPTH;
		ia.cap.max_send_sge = 2;
		ia.cap.max_recv_sge = 2;
		if (uroce_qp_create(fz.pd, &ia, &fz.qp[i]))
			die("qp_create");
	}
	fz.ready = true;
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

static void drain(void)
{
	struct uroce_frame in[64];
	struct uroce_wc wc[64];
	struct uroce_async_event ev;
	uint16_t got;
	int n;

	while ((got = port_rx_burst(fz.raw, in, 64)) > 0) {
		for (uint16_t k = 0; k < got; k++)
			check_read_response(in[k].data, in[k].len);
		port_free(fz.raw, in, got);
	}
	while ((n = uroce_poll_cq(fz.rcq, 64, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			for (unsigned i = 0; i < NQP; i++) {
				if (wc[k].qp_num != uroce_qp_num(fz.qp[i]))
					continue;
				fz.refill[i] = true;
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
			if (wc[k].status == UROCE_WC_SUCCESS &&
			    (wc[k].opcode == UROCE_WC_RDMA_READ || wc[k].opcode == UROCE_WC_COMP_SWAP ||
			     wc[k].opcode == UROCE_WC_FETCH_ADD))
				fz.st.local_reads_done++; /* forged responses placed in C */
		}
	}
	while (uroce_get_async_event(fz.ctx, &ev) == 0)
		uroce_ack_async_event(&ev);
}

static void step(uint64_t ns)
{
	loop_fabric_advance(fz.fab, ns);
	uroce_progress(fz.ctx);
	drain();
}

/* QPs knocked into ERR come back, so later packets still reach the
 * responder. Receive queues are topped up only here after a recovery and
 * by a time jump, so that enough SENDs find none (RNR NAK, UC/UD drop). */
static void recover(void)
{
	for (unsigned i = 0; i < NQP; i++) {
		struct uroce_qp_attr qa;

		if (uroce_qp_query(fz.qp[i], &qa, NULL))
			die("qp_query");
		if (qa.qp_state == UROCE_QPS_ERR) {
			fz.st.qp_errs++;
			step(1000); /* let the flush completions out first */
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
	int len;

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
	for (unsigned k = 0; k < STEPS_PER_PKT; k++)
		step(1000);
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

/* Back to a known state: nothing in flight, QPs fresh, memory refilled. */
static void reset_all(uint8_t setup_byte)
{
	static const uint32_t psns[4] = { 0, 0xfffff8, 0x800000, 0x123456 };

	for (unsigned k = 0; k < SETTLE_STEPS && (loop_fabric_in_flight(fz.fab) || k < 2); k++)
		step(100000);
	if (!fz.mr[AREA_A])
		revoke_toggle();
	fz.base_psn = psns[setup_byte & 3];
	fz.nreads = 0;
	for (unsigned i = 0; i < NQP; i++)
		bring_up(i);
	step(1000);
	memcpy(fz.mem, fz.shadow, fz.mem_len);
	for (unsigned i = 0; i < NQP; i++)
		post_recvs(i);
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
	printf("fuzz_responder: wrote %u seeds to %s\n", count, dir);
	return 0;
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
	for (unsigned i = UROCE_DROP_SHORT_FRAME; i < UROCE_DROP__COUNT; i++)
		if (ps.drops[i])
			printf("  %-18s %llu\n", uroce_drop_reason_name(i), (unsigned long long)ps.drops[i]);
}

int main(int argc, char **argv)
{
	static uint8_t buf[RANDOM_MAX_LEN];
	unsigned corpus = 0;
	struct uroce_port_stats ps;
	int fails = 0;

	if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
		return write_corpus(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--only") == 0) {
		/* replay one input or folder, print what it reached, check nothing */
		feed_path(argv[2]);
		print_stats();
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
#undef MUST
	printf("fuzz_responder: %u corpus files, %u random inputs: %s\n", corpus, RANDOM_INPUTS,
	       fails ? "FAILED" : "no failure");
	return fails ? 1 : 0;
}
#endif
