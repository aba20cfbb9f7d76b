/* SPDX-License-Identifier: MIT */
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
 *
 * This file is the harness: setup, the command loop and its dispatch
 * table, sending, time and the checks. Each mode's commands are in their
 * own file: fuzz_cmd_ib.c (rc, uc, ud), fuzz_cmd_sr.c (sr and ec),
 * fuzz_cmd_be.c, fuzz_cmd_cc.c (congestion). Built for libFuzzer with
 * clang; fuzz_standalone.c adds a main() that replays a corpus and seeded
 * random inputs (every build), and fuzz_seeds.c writes the seed corpus
 * (--write-corpus DIR). */
#include <sys/mman.h>

#include "fuzz_responder.h"

struct fz_state fz;

void die(const char *what)
{
	fprintf(stderr, "fuzz_responder: %s (%s)\n", what, uroce_last_error());
	abort();
}

/* ---- setup, once per process ---- */

uint8_t *area(enum area a)
{
	return fz.mem + fz.off[a];
}

uint64_t area_va(enum area a)
{
	return (uint64_t)(uintptr_t)area(a);
}

void bring_up(unsigned i)
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

void post_recvs(unsigned i)
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

uint8_t *fz_big;
struct uroce_mr *fz_big_mr;
uint32_t fz_chunk_next; /* rel.chunk_pkts of the next sr/ec QP new_qp makes; 0: its usual */

/* The adaptive-timeout group over the be QP, new for every input (its
 * rounds and votes start over), and the QP's own deadline back. */
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

void setup(void)
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
struct uroce_qp *new_qp(unsigned i, bool eqds)
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

const struct roce_parse_opts trust_icrc = { .skip_icrc = true };

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

void step(uint64_t ns)
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

void revoke_toggle(void)
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
void fill_payload(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t k = 0; k < len; k++)
		p[k] = (uint8_t)(seed * 29u + k * 3u + 1u);
}

/* Headers of a packet from the raw port to the context, the way the
 * connected peer sends them. */
void pkt_init(struct roce_pkt *p, unsigned qi)
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
void pkt_addressing(struct roce_pkt *p, uint8_t flags)
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
bool flags_bad_icrc(uint8_t flags)
{
	return (flags & 0xdc) == 0xdc;
}

/* Build p into a frame of the raw port and send it; bad_icrc flips a bit
 * of the ICRC. Returns false when it cannot be built. */
bool send_pkt(const struct roce_pkt *p, bool bad_icrc)
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

void send_bytes(const uint8_t *b, uint32_t len)
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

void qp_psns(unsigned qi, uint32_t *epsn, uint32_t *snd_nxt)
{
	struct uroce_qp_attr qa;

	if (uroce_qp_query(fz.qp[qi], &qa, NULL))
		die("qp_query");
	*epsn = qa.rq_psn;
	*snd_nxt = qa.sq_psn;
}

/* A local send's SGEs in region C: length bytes at off * 8 (mod what
 * fits), or with split two pieces, the second ending where C does. */
void local_sges(struct uroce_send_wr *wr, struct uroce_sge sg[2], uint32_t length, uint8_t off, bool split)
{
	sg[0].lkey = sg[1].lkey = fz.mr[AREA_C]->lkey;
	sg[0].addr = area_va(AREA_C) + (off * 8u) % (C_LEN - length + 1);
	sg[0].length = length;
	wr->num_sge = 1;
	if (split && length > 1) {
		sg[0].length = length / 2;
		sg[1].addr = area_va(AREA_C) + C_LEN - (length - length / 2);
		sg[1].length = length - length / 2;
		wr->num_sge = 2;
	}
	wr->sg_list = sg;
}

/* Region the rkey choice names: its key, start and length. */
void pick_key(uint8_t sel, struct reader *r, uint32_t *rkey, uint64_t *base, uint64_t *len)
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

uint64_t pick_va(uint8_t mode, uint16_t off, uint64_t base, uint64_t len)
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
/* Back to a known state: nothing in flight, QPs fresh, memory refilled. */
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

/* The dispatch table: a command byte runs the first mode that takes it.
 * The encodings of cc, sr and be take disjoint bytes; rc/uc/ud takes the
 * rest. */
static const struct fz_mode *const modes[] = { &fz_mode_cc, &fz_mode_sr, &fz_mode_be, &fz_mode_ib };

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
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			if ((cmd & modes[m]->mask) == modes[m]->bits) {
				modes[m]->run(&r, cmd);
				break;
			}
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
