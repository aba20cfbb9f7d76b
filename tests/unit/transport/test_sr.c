/* SPDX-License-Identifier: MIT */
/* The sr and ec reliability modes over the loop fabric (simulated time):
 * - every mode, ordered and unordered, delivers a mix of SEND, SEND with
 *   immediate, WRITE and WRITE with immediate at 0, 1e-4, 1e-3 and 1e-2
 *   loss with reordering and duplication both ways: data checked, every
 *   message completed exactly once, in order where ordered;
 * - ec rebuilds up to m lost chunks of every submessage with no
 *   retransmission (RS and XOR);
 * - a partial-completion bitmap shows exactly the chunks that arrived, the
 *   early completion is PARTIAL with the bytes placed, and a late copy of
 *   the missing packet is not written;
 * - a receive handle's top chunk, for chunk_pkts not dividing 2^17 and a
 *   length not known yet, is read only up to index 2^17 - 1;
 * - a stream sent in pieces out of order arrives as one message;
 * - a stream completed early at the receiver, pieces still to come or
 *   lost, still completes at the sender and the QP goes on;
 * - sr that loses every copy of one packet ends in RETRY_EXC_ERR and ERR;
 * - reordering alone causes (almost) no retransmission;
 * - keyed by immediate (rel.imm_keyed), sr and ec, the mix arrives whole at every
 *   loss rate with every BTH PSN renumbered on the way as a NIC's UC QP
 *   numbers them (plain sr under the same renumbering takes nothing); a
 *   descriptor without the token is dropped as bad_token, data ahead of
 *   its descriptor as no_desc, and both are sent again;
 * - bad attributes and opcodes are refused with a message. */
#include "tr_test.h"

#include "dataplane/wire.h"
#include "transport/rel/sr/rel_sr.h"

#define NSLOTS 24u
#define SLOT 20480u
#define MAXLEN 20000u
#define OUTSTANDING 16u
#define SRC_OFF 0u
#define RECV_OFF 0u
#define WRITE_OFF (NSLOTS * SLOT)

enum kind { K_SEND, K_SEND_IMM, K_WRITE, K_WRITE_IMM };

struct msg {
	uint8_t kind;
	uint32_t len;
	uint32_t recv;  /* receive index it consumes (not K_WRITE) */
	uint64_t sum;
};

#define SR_WIN_MIN_PKTS 16u /* rel.window_pkts' least accepted value */

static uint64_t sum_of(const uint8_t *b, uint32_t n)
{
	return test_hash(0x1234567ull, b, n);
}

static void rel_opts(struct tr_opts *o, enum uroce_reliability r, enum uroce_ordering ord, enum uroce_ec_code code,
                     unsigned k, unsigned m)
{
	tr_opts_default(o, UROCE_QPT_RC);
	o->rel.reliability = r;
	o->rel.ordering = ord;
	o->rel.ec_code = code;
	o->rel.ec_k = (uint8_t)k;
	o->rel.ec_m = (uint8_t)m;
	o->max_wr = 64;
}

static void post_recv(struct tr_side *b, uint32_t id)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };

	tr_sge(&sg, b, RECV_OFF + (id % NSLOTS) * SLOT, SLOT);
	REQUIRE(uroce_post_recv(b->qp, &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

static const char *mode_name(const struct tr_opts *o)
{
	static char b[64];

	snprintf(b, sizeof(b), "%s%s%s %s", uroce_reliability_str(o->rel.reliability),
	         o->rel.reliability == UROCE_REL_EC ? (o->rel.ec_code == UROCE_EC_XOR ? "-xor" : "-rs") : "",
	         o->rel.imm_keyed ? "-keyed" : "", uroce_ordering_str(o->rel.ordering));
	return b;
}

/* --- a NIC's numbering: every data packet from A gets the next PSN of one
 * counter, a resent one too, as a UC QP posts it (the receiver must not
 * read them). The frame is rewritten in place (the fabric's slot). -------- */

struct nic_psn {
	uint32_t dqpn;         /* B's data QPN */
	uint32_t next;         /* the NIC's next PSN */
	uint64_t renumbered;
	uint64_t sends, rkey0_writes; /* SENDs with immediate; WRITEs to rkey 0 (a NIC could not take them) */
	unsigned bad_token;    /* descriptors still to send with a wrong token */
	unsigned drop_desc;    /* descriptors still to drop (their data goes ahead) */
	uint32_t ec_k, ec_drop; /* ec: drop data chunks j < ec_drop of every k, first copy only */
	uint32_t seen[4096 / 32]; /* sender PSNs (mod 4096) dropped once */
	uint64_t dropped;
};

static bool nic_psn_filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct nic_psn *n = arg;
	struct roce_pkt pkt;
	uint8_t out[9216], desc[SRW_DESC_LEN];

	if (roce_parse(frame, len, &pkt, NULL) != UROCE_DROP_NONE || pkt.dqpn != n->dqpn ||
	    (pkt.opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM) && pkt.opcode != (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM)) ||
	    len > sizeof(out))
		return false;
	n->sends += pkt.opcode == (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM);
	n->rkey0_writes += pkt.opcode == (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM) && pkt.reth.rkey == SRW_MSG_RKEY;
	if (srw_imm_kind(pkt.imm) == SRW_DESC && srw_imm_idx(pkt.imm) == 0 && n->drop_desc) {
		n->drop_desc--;
		return true;
	}
	if (n->ec_drop && srw_imm_kind(pkt.imm) <= SRW_LAST_DESC && srw_imm_idx(pkt.imm) % n->ec_k < n->ec_drop &&
	    !(n->seen[(pkt.psn & 4095) / 32] >> (pkt.psn % 32) & 1)) {
		n->seen[(pkt.psn & 4095) / 32] |= 1u << (pkt.psn % 32);
		n->dropped++;
		return true;
	}
	if (srw_imm_kind(pkt.imm) == SRW_DESC && n->bad_token && pkt.payload_len == SRW_DESC_LEN) {
		n->bad_token--;
		memcpy(desc, pkt.payload, SRW_DESC_LEN);
		desc[31] ^= 0x5a;
		pkt.payload = desc;
	}
	pkt.psn = n->next;
	n->next = (n->next + 1) & ROCE_PSN_MASK;
	REQUIRE(roce_build(out, sizeof(out), &pkt) == (int)len, "rebuild a renumbered packet");
	memcpy((uint8_t *)(uintptr_t)frame, out, len); /* the test stands in for the sending NIC */
	n->renumbered++;
	return false;
}

/* The mixed workload at one loss rate. */
static void run_mix(const struct tr_opts *o, double loss, uint64_t seed, uint32_t nmsg)
{
	struct loop_impairment imp = { 0 };
	struct tr_pair p;
	struct test_rng rng = { seed };
	struct msg *msgs = calloc(nmsg, sizeof(*msgs));
	uint32_t *recv_msg = calloc(nmsg, sizeof(*recv_msg));
	uint8_t *recv_seen = calloc(nmsg, 1);
	uint32_t posted = 0, completed = 0, nrecv = 0, recv_posted = 0, recv_done = 0, next_recv = 0, steps = 0;
	struct uroce_qp_stats sa, sb;
	bool ordered = o->rel.ordering == UROCE_ORDER_ORDERED;

	REQUIRE(msgs && recv_msg && recv_seen, "alloc");
	imp = tr_imp_mixed(loss);
	tr_open(&p, o, seed, &imp, &imp);
	struct tr_side *a = &p.s[0], *b = &p.s[1];
	struct nic_psn np = { .dqpn = uroce_qp_num(b->qp), .next = (uint32_t)seed * 7919u & ROCE_PSN_MASK };

	if (o->rel.imm_keyed)
		REQUIRE(loop_fabric_set_filter(p.fab, 0, nic_psn_filter, &np) == 0, "filter");
	for (uint32_t i = 0; i < nmsg; i++) {
		msgs[i].kind = (uint8_t)test_rng_below(&rng, 4);
		if (o->rel.imm_keyed && msgs[i].kind == K_WRITE)
			msgs[i].kind = K_WRITE_IMM; /* a NIC completes no plain WRITE at the receiver */
		msgs[i].len = (uint32_t)(test_rng_below(&rng, 4) == 0 ? test_rng_below(&rng, 64)
		                                                       : test_rng_below(&rng, MAXLEN + 1));
		if (msgs[i].kind != K_WRITE) {
			msgs[i].recv = nrecv;
			recv_msg[nrecv++] = i;
		}
	}
	while ((completed < nmsg || recv_done < nrecv) && steps < 6000000u) {
		struct uroce_wc wc[16];
		int n;

		while (recv_posted < nrecv && recv_posted < recv_done + 16) {
			post_recv(b, recv_posted);
			recv_posted++;
		}
		while (posted < nmsg && posted < completed + OUTSTANDING) {
			struct msg *m = &msgs[posted];
			uint32_t slot = posted % NSLOTS;
			struct uroce_sge sg;
			struct uroce_send_wr wr;

			tr_fill(a->buf + SRC_OFF + slot * SLOT, m->len, (uint32_t)posted * 2654435761u);
			m->sum = sum_of(a->buf + SRC_OFF + slot * SLOT, m->len);
			memset(&wr, 0, sizeof(wr));
			tr_sge(&sg, a, SRC_OFF + slot * SLOT, m->len);
			wr.wr_id = posted;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.send_flags = UROCE_SEND_SIGNALED;
			wr.imm_data = htobe32(0xabc00000u + posted);
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + WRITE_OFF + slot * SLOT);
			wr.wr.rdma.rkey = b->mr->rkey;
			wr.opcode = m->kind == K_SEND ? UROCE_WR_SEND : m->kind == K_SEND_IMM ? UROCE_WR_SEND_WITH_IMM
			            : m->kind == K_WRITE ? UROCE_WR_RDMA_WRITE : UROCE_WR_RDMA_WRITE_WITH_IMM;
			REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
			posted++;
		}
		tr_step(&p);
		steps++;
		n = uroce_poll_cq(a->scq, 16, wc);
		for (int i = 0; i < n; i++) {
			REQUIRE(wc[i].status == UROCE_WC_SUCCESS, "%s loss %g: send %llu: %s", mode_name(o), loss,
			        (unsigned long long)wc[i].wr_id, uroce_wc_status_str(wc[i].status));
			REQUIRE(wc[i].wr_id == completed, "%s: send completion %llu, expected %u (in post order)",
			        mode_name(o), (unsigned long long)wc[i].wr_id, completed);
			if (msgs[completed].kind == K_WRITE) {
				uint32_t slot = completed % NSLOTS;

				if (sum_of(b->buf + WRITE_OFF + slot * SLOT, msgs[completed].len) != msgs[completed].sum) {
					uint32_t off = 0;

					tr_fill(a->buf + SRC_OFF + slot * SLOT, msgs[completed].len, (uint32_t)completed * 2654435761u);
					while (off < msgs[completed].len &&
					       b->buf[WRITE_OFF + slot * SLOT + off] == a->buf[SRC_OFF + slot * SLOT + off])
						off++;
					REQUIRE(0, "%s loss %g: WRITE %u (%u bytes) placed wrong bytes from offset %u", mode_name(o),
					        loss, completed, msgs[completed].len, off);
				}
			}
			completed++;
		}
		n = uroce_poll_cq(b->rcq, 16, wc);
		for (int i = 0; i < n; i++) {
			uint32_t r = (uint32_t)wc[i].wr_id, mi;
			const struct msg *m;
			const uint8_t *data;

			REQUIRE(wc[i].status == UROCE_WC_SUCCESS, "%s loss %g: recv %u: %s", mode_name(o), loss, r,
			        uroce_wc_status_str(wc[i].status));
			REQUIRE(r < nrecv && !recv_seen[r], "%s: receive %u completed twice or unknown", mode_name(o), r);
			if (ordered)
				REQUIRE(r == next_recv, "%s: receive %u completed before %u", mode_name(o), r, next_recv);
			next_recv++;
			recv_seen[r] = 1;
			mi = recv_msg[r];
			m = &msgs[mi];
			REQUIRE(wc[i].byte_len == m->len, "%s: receive %u: %u bytes, sent %u", mode_name(o), r,
			        wc[i].byte_len, m->len);
			REQUIRE(!(wc[i].wc_flags & UROCE_WC_PARTIAL), "partial flag on a whole message");
			if (m->kind == K_SEND) {
				REQUIRE(!(wc[i].wc_flags & UROCE_WC_WITH_IMM), "SEND with an immediate");
				REQUIRE(wc[i].opcode == UROCE_WC_RECV, "opcode");
			} else {
				REQUIRE((wc[i].wc_flags & UROCE_WC_WITH_IMM) && wc[i].imm_data == htobe32(0xabc00000u + mi),
				        "%s: receive %u: immediate 0x%x", mode_name(o), r, be32toh(wc[i].imm_data));
				REQUIRE(wc[i].opcode == (m->kind == K_SEND_IMM ? UROCE_WC_RECV : UROCE_WC_RECV_RDMA_WITH_IMM),
				        "opcode %d", wc[i].opcode);
			}
			data = m->kind == K_WRITE_IMM ? b->buf + WRITE_OFF + (mi % NSLOTS) * SLOT
			                              : b->buf + RECV_OFF + (r % NSLOTS) * SLOT;
			REQUIRE(sum_of(data, m->len) == m->sum, "%s loss %g: message %u (kind %d, %u bytes) arrived wrong",
			        mode_name(o), loss, mi, m->kind, m->len);
			recv_done++;
		}
	}
	REQUIRE(completed == nmsg && recv_done == nrecv, "%s loss %g: %u/%u sends, %u/%u receives after %u steps",
	        mode_name(o), loss, completed, nmsg, recv_done, nrecv, steps);
	uroce_qp_stats(a->qp, &sa);
	uroce_qp_stats(b->qp, &sb);
	printf("  %-18s loss %-6g %u msgs: retx %llu (rack %llu, tlp %llu, rto %llu, spurious %llu), sacks %llu, "
	       "parity %llu, rebuilt %llu, nacks %llu, srtt %llu us\n",
	       mode_name(o), loss, nmsg, (unsigned long long)sa.retransmits, (unsigned long long)sa.rack_losses,
	       (unsigned long long)sa.tlp_probes, (unsigned long long)sa.rto_losses,
	       (unsigned long long)sa.spurious_retx, (unsigned long long)sb.sacks_sent,
	       (unsigned long long)sa.parity_sent, (unsigned long long)sb.ec_recovered,
	       (unsigned long long)sb.ec_nacks_sent, (unsigned long long)(sa.srtt_ns / 1000));
	if (loss == 0)
		CHECK(sa.rto_losses == 0, "%s: RTO fired without loss", mode_name(o));
	if (o->rel.imm_keyed)
		REQUIRE(np.renumbered >= nmsg && np.sends >= nmsg && np.rkey0_writes == 0,
		        "%s: %llu packets renumbered, %llu SENDs with immediate, %llu WRITEs to rkey 0", mode_name(o),
		        (unsigned long long)np.renumbered, (unsigned long long)np.sends,
		        (unsigned long long)np.rkey0_writes);
	tr_close(&p);
	free(msgs);
	free(recv_msg);
	free(recv_seen);
}

/* --- a filter that drops chosen data packets of A -> B -------------------- */

struct drop_rule {
	bool every_copy;        /* drop retransmissions too */
	uint32_t k, m;          /* ec: drop data chunks j < drop_per_sub of every submessage */
	uint32_t drop_per_sub;
	uint32_t npk;           /* ec: packets of a message, when set: a short last submessage loses
	                         * no more than the parity scaled to it (ceil(kk m / k)) */
	uint32_t idx[4];        /* sr: drop these packet indexes */
	unsigned nidx;
	uint32_t seen[4096 / 32]; /* PSNs (mod 4096) already dropped once */
	uint64_t dropped;
	bool off;
};

static bool drop_filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct drop_rule *d = arg;
	struct roce_pkt pkt;
	uint32_t kind, idx, bit;

	if (d->off || roce_parse(frame, len, &pkt, NULL) != UROCE_DROP_NONE)
		return false;
	if (pkt.opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM))
		return false;
	kind = (pkt.imm >> 17) & 7;
	idx = pkt.imm & 0x1ffff;
	if (kind > 2)
		return false; /* descriptor, parity */
	bit = pkt.psn & 4095;
	if (d->drop_per_sub) {
		uint32_t lim = d->drop_per_sub;

		if (d->npk && idx / d->k == (d->npk - 1) / d->k) {
			uint32_t kk = d->npk - idx / d->k * d->k, np = (kk * d->m + d->k - 1) / d->k;

			lim = lim < np ? lim : np;
		}
		if (idx % d->k >= lim)
			return false;
	} else {
		bool hit = false;

		for (unsigned i = 0; i < d->nidx; i++)
			hit |= d->idx[i] == idx;
		if (!hit)
			return false;
	}
	if (!d->every_copy && (d->seen[bit / 32] >> (bit % 32) & 1))
		return false;
	d->seen[bit / 32] |= 1u << (bit % 32);
	d->dropped++;
	return true;
}

static void send_one(struct tr_side *a, struct tr_side *b, uint32_t len, uint64_t id, enum uroce_wr_opcode op)
{
	struct uroce_sge sg;
	struct uroce_send_wr wr;

	tr_sge(&sg, a, SRC_OFF, len);
	tr_wr(&wr, id, &sg, op);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + WRITE_OFF);
	wr.wr.rdma.rkey = b->mr->rkey;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
}

/* ec: m of every k data chunks lost on their only transmission (the short
 * last submessage: as many as its scaled parity), every message still
 * arrives whole, nothing is sent again. */
static void run_ec_zero_retx(enum uroce_ec_code code, unsigned k, unsigned m, unsigned drop_per_sub)
{
	struct tr_opts o;
	struct tr_pair p;
	struct drop_rule d = { 0 };
	struct uroce_qp_stats sa, sb;
	struct uroce_wc wc;
	const uint32_t len = 200000; /* 196 packets: several submessages and a short last one */
	const unsigned nmsg = 4;

	rel_opts(&o, UROCE_REL_EC, UROCE_ORDER_ORDERED, code, k, m);
	tr_open(&p, &o, 77, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	d.k = k;
	d.m = m;
	d.drop_per_sub = drop_per_sub;
	d.npk = (len + 1023) / 1024;
	REQUIRE(loop_fabric_set_filter(p.fab, 0, drop_filter, &d) == 0, "filter");
	tr_fill(a->buf + SRC_OFF, len, 99);
	for (unsigned i = 0; i < nmsg; i++) {
		struct uroce_sge sg;
		struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

		tr_sge(&sg, b, i * len, len);
		REQUIRE(uroce_post_recv(b->qp, &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
		send_one(a, b, len, i, UROCE_WR_SEND);
	}
	for (unsigned i = 0; i < nmsg; i++) {
		REQUIRE(tr_wait(&p, b->rcq, &wc, 400000) == 0, "ec %s(%u,%u): receive %u never completed",
		        code == UROCE_EC_XOR ? "xor" : "rs", k, m, i);
		REQUIRE(wc.status == UROCE_WC_SUCCESS && wc.byte_len == len, "receive: %s, %u bytes",
		        uroce_wc_status_str(wc.status), wc.byte_len);
		REQUIRE(!memcmp(b->buf + i * len, a->buf + SRC_OFF, len), "rebuilt bytes differ");
	}
	for (unsigned i = 0; i < nmsg; i++) {
		REQUIRE(tr_wait(&p, a->scq, &wc, 400000) == 0, "send %u never completed", i);
		REQUIRE(wc.status == UROCE_WC_SUCCESS, "send: %s", uroce_wc_status_str(wc.status));
	}
	uroce_qp_stats(a->qp, &sa);
	uroce_qp_stats(b->qp, &sb);
	printf("  ec %s(%u,%u), %u of every %u data lost: dropped %llu, rebuilt %llu, retransmits %llu, nacks %llu\n",
	       code == UROCE_EC_XOR ? "xor" : "rs", k, m, drop_per_sub, k, (unsigned long long)d.dropped,
	       (unsigned long long)sb.ec_recovered, (unsigned long long)sa.retransmits,
	       (unsigned long long)sb.ec_nacks_sent);
	REQUIRE(d.dropped > 0 && sb.ec_recovered == d.dropped, "rebuilt %llu of %llu lost",
	        (unsigned long long)sb.ec_recovered, (unsigned long long)d.dropped);
	REQUIRE(sa.retransmits == 0 && sb.ec_nacks_sent == 0, "ec sent %llu packets again (%llu NACKs)",
	        (unsigned long long)sa.retransmits, (unsigned long long)sb.ec_nacks_sent);
	tr_close(&p);
}

/* ec beyond its reach: more than m lost in a submessage; the NACK brings
 * sr's repair. */
static void run_ec_fallback(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct drop_rule d = { 0 };
	struct uroce_qp_stats sa, sb;
	struct uroce_wc wc;
	const uint32_t len = 40000;

	rel_opts(&o, UROCE_REL_EC, UROCE_ORDER_ORDERED, UROCE_EC_RS, 8, 2);
	tr_open(&p, &o, 78, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	d.k = 8;
	d.drop_per_sub = 3; /* 3 of 8 with m = 2: cannot decode */
	REQUIRE(loop_fabric_set_filter(p.fab, 0, drop_filter, &d) == 0, "filter");
	tr_fill(a->buf + SRC_OFF, len, 7);
	{
		struct uroce_sge sg;
		struct uroce_recv_wr wr = { .wr_id = 0, .sg_list = &sg, .num_sge = 1 };

		tr_sge(&sg, b, RECV_OFF, len);
		REQUIRE(uroce_post_recv(b->qp, &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
	}
	send_one(a, b, len, 0, UROCE_WR_SEND);
	REQUIRE(tr_wait(&p, b->rcq, &wc, 400000) == 0, "ec fallback: receive never completed");
	REQUIRE(wc.status == UROCE_WC_SUCCESS && wc.byte_len == len, "receive: %s", uroce_wc_status_str(wc.status));
	REQUIRE(!memcmp(b->buf + RECV_OFF, a->buf + SRC_OFF, len), "repaired bytes differ");
	REQUIRE(tr_wait(&p, a->scq, &wc, 400000) == 0 && wc.status == UROCE_WC_SUCCESS, "send");
	uroce_qp_stats(a->qp, &sa);
	uroce_qp_stats(b->qp, &sb);
	printf("  ec rs(8,2), 3 of every 8 lost: dropped %llu, NACKs %llu (%llu early), retransmits %llu\n",
	       (unsigned long long)d.dropped, (unsigned long long)sb.ec_nacks_sent,
	       (unsigned long long)sb.ec_nacks_early, (unsigned long long)sa.retransmits);
	REQUIRE(sb.ec_nacks_sent >= 1 && sa.ec_nacks_rcvd >= 1, "no NACK");
	/* the later submessages showed the first ones undecodable: their NACK
	 * went before the message fell silent */
	REQUIRE(sb.ec_nacks_early >= 1, "%llu NACKs, none early", (unsigned long long)sb.ec_nacks_sent);
	REQUIRE(sa.retransmits >= d.dropped, "fewer retransmissions (%llu) than holes (%llu)",
	        (unsigned long long)sa.retransmits, (unsigned long long)d.dropped);
	tr_close(&p);
}

/* Partial completion: the bitmap is exactly what arrived. */
static void run_bitmap(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct drop_rule d = { 0 };
	struct uroce_precv *h;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_qp_stats sa;
	uint64_t bits[2];
	const uint32_t len = 30 * 1024 + 100, buflen = 32 * 1024, chunk = 2048;
	uint32_t placed = 0;
	int nch;

	rel_opts(&o, UROCE_REL_SR, UROCE_ORDER_ORDERED, UROCE_EC_RS, 0, 0);
	o.rel.chunk_pkts = 2;
	tr_open(&p, &o, 79, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	d.every_copy = true;
	d.idx[0] = 5;  /* chunk 2 */
	d.idx[1] = 17; /* chunk 8 */
	d.nidx = 2;
	REQUIRE(loop_fabric_set_filter(p.fab, 0, drop_filter, &d) == 0, "filter");
	memset(b->buf + RECV_OFF, 0xee, buflen);
	tr_sge(&sg, b, RECV_OFF, buflen);
	REQUIRE(uroce_precv_post(b->qp, &sg, 42, &h) == 0, "precv_post: %s", uroce_last_error());
	nch = uroce_precv_bitmap(h, bits, 2);
	REQUIRE(nch >= 0 && bits[0] == 0, "bitmap before anything arrived: %d chunks, 0x%llx", nch,
	        (unsigned long long)bits[0]);
	tr_fill(a->buf + SRC_OFF, len, 3);
	send_one(a, b, len, 1, UROCE_WR_SEND);
	for (unsigned i = 0; i < 200000; i++) {
		uroce_qp_stats(a->qp, &sa);
		if (sa.retransmits >= 4)
			break;
		tr_step(&p);
	}
	REQUIRE(sa.retransmits >= 4, "the lost packets were never sent again");
	nch = uroce_precv_bitmap(h, bits, 2);
	REQUIRE(nch == 16, "%d chunks, expected 16 (30 KiB + 100 in 2 KiB chunks)", nch);
	REQUIRE(bits[0] == (0xffffull & ~(1ull << 2) & ~(1ull << 8)), "bitmap 0x%llx, expected 0x%llx",
	        (unsigned long long)bits[0], (unsigned long long)(0xffffull & ~(1ull << 2) & ~(1ull << 8)));
	REQUIRE(uroce_poll_cq(b->rcq, 1, &wc) == 0, "a receive with holes completed on its own");
	REQUIRE(uroce_precv_complete(h) == 0, "precv_complete: %s", uroce_last_error());
	REQUIRE(uroce_poll_cq(b->rcq, 1, &wc) == 1, "no completion after precv_complete");
	placed = len - 2 * 1024;
	REQUIRE(wc.wr_id == 42 && wc.status == UROCE_WC_SUCCESS && (wc.wc_flags & UROCE_WC_PARTIAL) &&
	        wc.byte_len == placed, "completion: id %llu %s flags 0x%x %u bytes (expected PARTIAL, %u)",
	        (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status), wc.wc_flags, wc.byte_len, placed);
	for (uint32_t c = 0; c < 16; c++) {
		uint32_t off = c * chunk, n = c == 15 ? len - off : chunk;
		bool lost = c == 2 || c == 8;

		if (lost) {
			/* the lost packet's half stays as it was; the other half arrived */
			const uint8_t *x = b->buf + RECV_OFF + (c == 2 ? 5 : 17) * 1024u;

			for (uint32_t i = 0; i < 1024; i++)
				REQUIRE(x[i] == 0xee, "chunk %u: byte %u written though its packet never arrived", c, i);
			continue;
		}
		REQUIRE(!memcmp(b->buf + RECV_OFF + off, a->buf + SRC_OFF + off, n), "chunk %u differs", c);
	}
	/* the missing packets get through now: too late, they must not land */
	d.off = true;
	REQUIRE(tr_wait(&p, a->scq, &wc, 400000) == 0 && wc.status == UROCE_WC_SUCCESS,
	        "send after the late packets: %s", uroce_wc_status_str(wc.status));
	for (uint32_t i = 0; i < 1024; i++)
		REQUIRE(b->buf[RECV_OFF + 5 * 1024 + i] == 0xee && b->buf[RECV_OFF + 17 * 1024 + i] == 0xee,
		        "a late packet wrote into a completed receive");
	printf("  bitmap: 16 chunks, 2 missing, PARTIAL completion of %u bytes, late packets not placed\n", placed);
	tr_close(&p);
}

/* A stream in pieces, out of order; the receiver sees one message. */
static void run_stream(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_pstream *s;
	struct uroce_precv *h;
	struct uroce_sge sg;
	struct uroce_wc wc;
	uint64_t bits[1];
	const uint32_t len = 10 * 1024 + 300;

	rel_opts(&o, UROCE_REL_SR, UROCE_ORDER_ORDERED, UROCE_EC_RS, 0, 0);
	tr_open(&p, &o, 80, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	tr_sge(&sg, b, RECV_OFF, SLOT);
	REQUIRE(uroce_precv_post(b->qp, &sg, 7, &h) == 0, "precv_post: %s", uroce_last_error());
	tr_fill(a->buf + SRC_OFF, len, 11);
	REQUIRE(uroce_pstream_start(a->qp, len, 99, &s) == 0, "pstream_start: %s", uroce_last_error());
	for (int piece = 5; piece >= 0; piece--) {
		uint32_t off = (uint32_t)piece * 2048, n = len - off < 2048 ? len - off : 2048;

		tr_sge(&sg, a, SRC_OFF + off, n);
		REQUIRE(uroce_pstream_continue(s, off, &sg) == 0, "pstream_continue: %s", uroce_last_error());
	}
	tr_sge(&sg, a, SRC_OFF, 100);
	REQUIRE(uroce_pstream_continue(s, 100, &sg) == -EINVAL, "an unaligned offset was accepted");
	REQUIRE(uroce_pstream_end(s) == 0, "pstream_end: %s", uroce_last_error());
	REQUIRE(tr_wait(&p, b->rcq, &wc, 100000) == 0, "stream never arrived");
	REQUIRE(wc.wr_id == 7 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == len && !(wc.wc_flags & UROCE_WC_PARTIAL),
	        "stream receive: %s %u bytes flags 0x%x", uroce_wc_status_str(wc.status), wc.byte_len, wc.wc_flags);
	REQUIRE(uroce_precv_bitmap(h, bits, 1) == 11 && bits[0] == 0x7ff, "bitmap of a whole message 0x%llx",
	        (unsigned long long)bits[0]);
	REQUIRE(uroce_precv_complete(h) == 0, "precv_complete");
	REQUIRE(!memcmp(b->buf + RECV_OFF, a->buf + SRC_OFF, len), "stream bytes differ");
	REQUIRE(tr_wait(&p, a->scq, &wc, 100000) == 0 && wc.wr_id == 99 && wc.status == UROCE_WC_SUCCESS &&
	        wc.byte_len == len, "stream send completion");
	REQUIRE(uroce_poll_cq(a->scq, 1, &wc) == 0, "a stream completed more than once");
	printf("  stream: 6 pieces in reverse order, one message of %u bytes\n", len);
	tr_close(&p);
}

/* Drops every copy of one data packet of one message while on; keeps
 * the last data frame of that message and the last data PSN sent. */
struct piece_drop {
	uint32_t msg, idx;
	bool on;
	uint64_t dropped;
	uint8_t frame[2048];
	uint32_t frame_len, last_psn;
	uint64_t sent;  /* data packets of msg that left, of index 4 to 9 (the pieces posted last) */
};

static bool piece_filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct piece_drop *d = arg;
	struct roce_pkt pkt;

	if (roce_parse(frame, len, &pkt, NULL) != UROCE_DROP_NONE || pkt.opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM))
		return false;
	if (roce_psn_diff(pkt.psn, d->last_psn) > 0 || !d->frame_len)
		d->last_psn = pkt.psn;
	if (srw_imm_kind(pkt.imm) > SRW_LAST || srw_imm_msg(pkt.imm) != d->msg)
		return false;
	if (srw_imm_idx(pkt.imm) >= 4 && srw_imm_idx(pkt.imm) < 10)
		d->sent++;
	if (len <= sizeof(d->frame)) {
		memcpy(d->frame, frame, len);
		d->frame_len = len;
	}
	if (!d->on || srw_imm_idx(pkt.imm) != d->idx)
		return false;
	d->dropped++;
	return true;
}

/* A stream the receiver completes early (PARTIAL), while pieces are still
 * to come: the last piece first, another message's packets between the
 * pieces, the rest posted after the early completion, and (lose) one
 * packet of a piece sent before it lost until after it. The pieces' PSN
 * bases lie outside the span the receiver saw used; the sender must still
 * complete the stream (the receiver drops the late bytes), and the QP go
 * on carrying more than a window of packets. */
static void run_stream_early(bool lose)
{
	struct tr_opts o;
	struct tr_pair p;
	struct piece_drop d = { .msg = 0, .idx = 2 };
	struct uroce_pstream *s;
	struct uroce_precv *h;
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct uroce_qp_attr qa;
	struct uroce_qp_init_attr qi;
	struct uroce_qp_stats sa;
	uint64_t bits[1] = { 0 };
	const uint32_t len = 10 * 1024 + 300, want = lose ? 0x40bu : 0x40fu; /* chunks 0, 1, (2,) 3 and 10 */
	const unsigned nafter = SR_MSG_WIN + 8; /* x 16 packets: past the 256-packet window and message 0 + SR_MSG_WIN */
	bool got_part = false, got_send = false, got_stream = false;
	unsigned after = 0;
	uint64_t sent0, sent1;

	rel_opts(&o, UROCE_REL_SR, UROCE_ORDER_ORDERED, UROCE_EC_RS, 0, 0);
	o.rel.chunk_pkts = 1;
	tr_open(&p, &o, lose ? 85 : 84, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	d.on = lose;
	REQUIRE(loop_fabric_set_filter(p.fab, 0, piece_filter, &d) == 0, "filter");
	tr_fill(a->buf + SRC_OFF, len, 13);
	memset(b->buf + RECV_OFF, 0xee, SLOT);
	tr_sge(&sg, b, RECV_OFF, SLOT);
	REQUIRE(uroce_precv_post(b->qp, &sg, 0, &h) == 0, "precv_post: %s", uroce_last_error());
	post_recv(b, 1);
	REQUIRE(uroce_pstream_start(a->qp, len, 99, &s) == 0, "pstream_start: %s", uroce_last_error());
	tr_sge(&sg, a, SRC_OFF + 10240, 300);
	REQUIRE(uroce_pstream_continue(s, 10240, &sg) == 0, "pstream_continue: %s", uroce_last_error());
	tr_sge(&sg, a, SRC_OFF, 4096);
	REQUIRE(uroce_pstream_continue(s, 0, &sg) == 0, "pstream_continue: %s", uroce_last_error());
	send_one(a, b, 8192, 1, UROCE_WR_SEND); /* message 1, between the stream's pieces */
	for (unsigned i = 0; i < 200000 && (bits[0] & want) != want; i++) {
		tr_step(&p);
		uroce_precv_bitmap(h, bits, 1);
	}
	REQUIRE((bits[0] & want) == want, "the first pieces never arrived: bitmap 0x%llx", (unsigned long long)bits[0]);
	if (lose) {
		/* its first copy and at least one resend lost before the early completion */
		for (unsigned i = 0; i < 400000 && d.dropped < 2; i++)
			tr_step(&p);
		REQUIRE(d.dropped >= 2, "packet 2 was not resent (%llu copies)", (unsigned long long)d.dropped);
	}
	REQUIRE(uroce_precv_complete(h) == 0, "precv_complete: %s", uroce_last_error());
	if (tr_wait(&p, b->rcq, &wc, 100000) == 0)
		got_part = wc.wr_id == 0 && wc.status == UROCE_WC_SUCCESS && (wc.wc_flags & UROCE_WC_PARTIAL);
	CHECK(got_part, "no PARTIAL completion of the stream's receive");
	for (unsigned i = 0; i < 200; i++)
		tr_step(&p); /* the SACK saying so reaches the sender */
	d.on = false;
	sent0 = d.sent;
	/* the rest of the stream, after the receiver completed it */
	tr_sge(&sg, a, SRC_OFF + 4096, 4096);
	REQUIRE(uroce_pstream_continue(s, 4096, &sg) == 0, "pstream_continue: %s", uroce_last_error());
	tr_sge(&sg, a, SRC_OFF + 8192, 2048);
	REQUIRE(uroce_pstream_continue(s, 8192, &sg) == 0, "pstream_continue: %s", uroce_last_error());
	REQUIRE(uroce_pstream_end(s) == 0, "pstream_end: %s", uroce_last_error());
	if (tr_wait(&p, a->scq, &wc, 2000000) == 0)
		got_send = wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS;
	CHECK(got_send, "message 1's send: id %llu %s", (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status));
	if (got_send && tr_wait(&p, a->scq, &wc, 2000000) == 0)
		got_stream = wc.wr_id == 99 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == len;
	CHECK(got_stream, "the stream's send did not complete: id %llu %s", (unsigned long long)wc.wr_id,
	      uroce_wc_status_str(wc.status));
	sent1 = d.sent;
	/* the pieces posted after the sender learnt take no PSN */
	CHECK(sent1 == sent0, "%llu packets of the pieces posted after the early completion sent, want 0",
	      (unsigned long long)(sent1 - sent0));
	CHECK(tr_wait(&p, b->rcq, &wc, 100000) == 0 && wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS &&
	          wc.byte_len == 8192 && !memcmp(b->buf + RECV_OFF + SLOT, a->buf + SRC_OFF, 8192),
	      "message 1's receive");
	for (uint32_t i = 4 * 1024; i < 10 * 1024; i++)
		if (b->buf[RECV_OFF + i] != 0xee) {
			CHECK(false, "byte %u of the completed receive was written by a late piece", i);
			break;
		}
	/* more than a window of packets after it (their receives reuse slot 0
	 * at the end): each completes whole */
	for (; got_stream && after < nafter; after++) {
		post_recv(b, 2 + after);
		send_one(a, b, 16384, 2 + after, UROCE_WR_SEND);
		if (tr_wait(&p, b->rcq, &wc, 400000) || wc.wr_id != 2 + after || wc.status != UROCE_WC_SUCCESS ||
		    wc.byte_len != 16384 || tr_wait(&p, a->scq, &wc, 400000) || wc.status != UROCE_WC_SUCCESS)
			break;
	}
	CHECK(after == nafter, "%u of %u messages after the stream completed", after, nafter);
	if (after == nafter && !lose) {
		/* the sender has started message 0 + SR_MSG_WIN, so it knows the
		 * stream done: a packet naming it now (a forger's: a copy of its
		 * last packet) at the PSN the next message takes is dropped, and
		 * that message's real packet lands */
		struct roce_pkt fp;
		uint8_t f[2048];
		uint64_t oow = 0;
		struct uroce_port_stats ps;
		int flen;
		bool got = false;

		REQUIRE(d.frame_len && roce_parse(d.frame, d.frame_len, &fp, NULL) == UROCE_DROP_NONE, "no stream frame kept");
		fp.psn = psn_add(d.last_psn, 1);
		flen = roce_build(f, sizeof(f), &fp);
		REQUIRE(flen > 0, "roce_build: %d", flen);
		REQUIRE(uroce_port_stats(b->ctx, 1, &ps) == 0, "port_stats");
		oow = ps.drops[UROCE_DROP_PSN_OUT_OF_WINDOW];
		REQUIRE(loop_fabric_inject(p.fab, 0, f, (uint32_t)flen) == 0, "inject");
		for (unsigned i = 0; i < 20; i++)
			tr_step(&p);
		post_recv(b, 2 + nafter);
		tr_fill(a->buf + SRC_OFF, 3000, 17);
		send_one(a, b, 3000, 2 + nafter, UROCE_WR_SEND);
		if (tr_wait(&p, b->rcq, &wc, 400000) == 0)
			got = wc.wr_id == 2 + nafter && wc.status == UROCE_WC_SUCCESS && wc.byte_len == 3000 &&
			      !memcmp(b->buf + RECV_OFF + ((2 + nafter) % NSLOTS) * SLOT, a->buf + SRC_OFF, 3000);
		REQUIRE(uroce_port_stats(b->ctx, 1, &ps) == 0, "port_stats");
		printf("  stream's number at the next message's PSN, after message %u: psn_out_of_window +%llu, that "
		       "message %s\n", SR_MSG_WIN, (unsigned long long)(ps.drops[UROCE_DROP_PSN_OUT_OF_WINDOW] - oow),
		       got ? "received whole" : "not received");
		CHECK(ps.drops[UROCE_DROP_PSN_OUT_OF_WINDOW] - oow == 1, "the forged packet: psn_out_of_window +%llu, want +1",
		      (unsigned long long)(ps.drops[UROCE_DROP_PSN_OUT_OF_WINDOW] - oow));
		CHECK(got, "the message after the forged packet was not received whole");
	}
	REQUIRE(uroce_qp_query(a->qp, &qa, &qi) == 0, "query");
	uroce_qp_stats(a->qp, &sa);
	printf("  stream completed early after %s: stream send %s (%llu packets of the pieces posted after), %u of %u later "
	       "messages, sender %s, %llu resent, %llu copies of packet 2 lost\n", lose ? "a lost packet" : "2 of 4 pieces",
	       got_stream ? "SUCCESS" : "not completed", (unsigned long long)(sent1 - sent0), after, nafter,
	       uroce_qp_state_str(qa.qp_state), (unsigned long long)sa.retransmits, (unsigned long long)d.dropped);
	CHECK(qa.qp_state == UROCE_QPS_RTS, "sender QP in %s", uroce_qp_state_str(qa.qp_state));
	tr_close(&p);
}

/* Every copy of one packet lost: RETRY_EXC_ERR, ERR, the rest flushed. */
static void run_lost_forever(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct drop_rule d = { 0 };
	struct uroce_wc wc;
	struct uroce_qp_attr qa;
	struct uroce_qp_init_attr qi;
	unsigned steps = 0;
	uint64_t t0, t1, limit;

	rel_opts(&o, UROCE_REL_SR, UROCE_ORDER_ORDERED, UROCE_EC_RS, 0, 0);
	o.retry_cnt = 3;
	o.timeout = 8; /* 4.096 us x 2^8 = 1.05 ms: rc would give up after 4 of them */
	limit = 4 * (4096ull << 8);
	tr_open(&p, &o, 81, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	d.every_copy = true;
	d.idx[0] = 2;
	d.nidx = 1;
	REQUIRE(loop_fabric_set_filter(p.fab, 0, drop_filter, &d) == 0, "filter");
	tr_fill(a->buf + SRC_OFF, 8192, 5);
	for (unsigned i = 0; i < 4; i++) {
		post_recv(b, i);
		send_one(a, b, i ? 1024 : 8192, i, UROCE_WR_SEND); /* only the first has a packet 2 */
	}
	t0 = loop_fabric_now(p.fab);
	while (uroce_poll_cq(a->scq, 1, &wc) == 0 && steps++ < 2000000)
		tr_step(&p);
	t1 = loop_fabric_now(p.fab);
	REQUIRE(steps < 2000000, "no completion: the QP hangs");
	REQUIRE(wc.wr_id == 0 && wc.status == UROCE_WC_RETRY_EXC_ERR, "first completion: %llu %s",
	        (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status));
	for (unsigned i = 1; i < 4; i++) {
		REQUIRE(tr_wait(&p, a->scq, &wc, 1000) == 0, "WR %u never flushed", i);
		REQUIRE(wc.wr_id == i && wc.status == UROCE_WC_WR_FLUSH_ERR, "WR %u: %s", i,
		        uroce_wc_status_str(wc.status));
	}
	REQUIRE(uroce_qp_query(a->qp, &qa, &qi) == 0 && qa.qp_state == UROCE_QPS_ERR, "QP state %s",
	        uroce_qp_state_str(qa.qp_state));
	printf("  sr: every copy of packet 2 lost (%llu copies): RETRY_EXC_ERR after %.2f ms (%u steps), 3 flushed, "
	       "ERR\n", (unsigned long long)d.dropped, (double)(t1 - t0) / 1e6, steps);
	/* as rc: 1 + retry_cnt copies at least, and not before 1 + retry_cnt
	 * local ACK timeouts have passed (sr resends faster than that) */
	REQUIRE(d.dropped >= 4, "%llu copies sent with retry_cnt 3, expected 4 or more", (unsigned long long)d.dropped);
	REQUIRE(t1 - t0 >= limit && t1 - t0 < 4 * limit, "gave up after %llu ns; rc's limit is %llu",
	        (unsigned long long)(t1 - t0), (unsigned long long)limit);
	tr_close(&p);
}

/* Reordering without loss: RACK waits out the reordering window. */
static void run_reorder(void)
{
	struct loop_impairment imp = { 0 };
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_wc wc;
	struct uroce_qp_stats sa;
	const unsigned nmsg = 200;
	uint64_t pkts;

	imp.reorder = 0.05;
	imp.reorder_max_ns = 20000;
	imp.delay_ns = 10000;
	rel_opts(&o, UROCE_REL_SR, UROCE_ORDER_ORDERED, UROCE_EC_RS, 0, 0);
	tr_open(&p, &o, 82, &imp, &imp);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	tr_fill(a->buf + SRC_OFF, 16384, 9);
	for (unsigned i = 0; i < nmsg; i++) {
		send_one(a, b, 16384, i, UROCE_WR_RDMA_WRITE);
		REQUIRE(tr_wait(&p, a->scq, &wc, 200000) == 0 && wc.status == UROCE_WC_SUCCESS, "write %u", i);
	}
	uroce_qp_stats(a->qp, &sa);
	pkts = sa.tx_packets;
	printf("  sr, 5%% reordered by up to 20 us, no loss: %llu packets, %llu sent again (%llu spurious)\n",
	       (unsigned long long)pkts, (unsigned long long)sa.retransmits, (unsigned long long)sa.spurious_retx);
	REQUIRE(sa.retransmits * 200 <= pkts, "%llu retransmissions of %llu packets with no loss",
	        (unsigned long long)sa.retransmits, (unsigned long long)pkts);
	tr_close(&p);
}

/* One message A -> B under a NIC's numbering; its data checked. */
static void keyed_one(struct tr_pair *p, uint32_t id, enum uroce_wr_opcode op, uint32_t len)
{
	struct tr_side *a = &p->s[0], *b = &p->s[1];
	struct uroce_wc wc;

	tr_fill(a->buf + SRC_OFF, len, id + 5);
	post_recv(b, id);
	send_one(a, b, len, id, op);
	REQUIRE(tr_wait(p, a->scq, &wc, 400000) == 0 && wc.status == UROCE_WC_SUCCESS, "keyed message %u: sent", id);
	REQUIRE(tr_wait(p, b->rcq, &wc, 400000) == 0 && wc.status == UROCE_WC_SUCCESS && wc.byte_len == len,
	        "keyed message %u: received", id);
	REQUIRE(!memcmp(a->buf + SRC_OFF, b->buf + RECV_OFF + (id % NSLOTS) * SLOT, len), "keyed message %u: data", id);
}

static void run_keyed(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_wc wc;
	struct uroce_qp_init_attr ia;
	struct uroce_qp *qp;
	struct uroce_pstream *ps;
	struct nic_psn np = { .next = 0x400000 };

	/* plain sr reads the BTH PSN: under a NIC's numbering (here far from
	 * the PSNs it expects) it takes nothing */
	rel_opts(&o, UROCE_REL_SR, UROCE_ORDER_ORDERED, UROCE_EC_RS, 0, 0);
	tr_open(&p, &o, 90, NULL, NULL);
	np.dqpn = uroce_qp_num(p.s[1].qp);
	REQUIRE(loop_fabric_set_filter(p.fab, 0, nic_psn_filter, &np) == 0, "filter");
	post_recv(&p.s[1], 0);
	send_one(&p.s[0], &p.s[1], 4096, 0, UROCE_WR_SEND);
	tr_steps(&p, 3000);
	CHECK(uroce_poll_cq(p.s[1].rcq, 1, &wc) == 0 &&
	      tr_drops(p.s[1].ctx, UROCE_DROP_PSN_OUT_OF_WINDOW) + tr_drops(p.s[1].ctx, UROCE_DROP_DUPLICATE) > 0,
	      "plain sr took packets a NIC numbered");
	tr_close(&p);

	o.rel.imm_keyed = 1;
	tr_open(&p, &o, 91, NULL, NULL);
	memset(&np, 0, sizeof(np));
	np.dqpn = uroce_qp_num(p.s[1].qp);
	np.next = 0xfffff0; /* wraps */
	REQUIRE(loop_fabric_set_filter(p.fab, 0, nic_psn_filter, &np) == 0, "filter");
	np.bad_token = 1;
	keyed_one(&p, 0, UROCE_WR_SEND, 8192);
	CHECK(tr_drops(p.s[1].ctx, UROCE_DROP_BAD_TOKEN) == 1, "descriptor without the token: %llu bad_token",
	      (unsigned long long)tr_drops(p.s[1].ctx, UROCE_DROP_BAD_TOKEN));
	np.drop_desc = 1;
	keyed_one(&p, 1, UROCE_WR_SEND_WITH_IMM, 8192);
	CHECK(tr_drops(p.s[1].ctx, UROCE_DROP_NO_DESC) >= 1, "data ahead of its descriptor: %llu no_desc",
	      (unsigned long long)tr_drops(p.s[1].ctx, UROCE_DROP_NO_DESC));
	printf("  sr keyed by immediate: a forged descriptor dropped (bad_token), data ahead of its lost descriptor "
	       "dropped (no_desc %llu), both messages whole after resending\n",
	       (unsigned long long)tr_drops(p.s[1].ctx, UROCE_DROP_NO_DESC));

	/* what it refuses */
	{
		struct uroce_sge sg;
		struct uroce_send_wr wr;

		tr_sge(&sg, &p.s[0], 0, 64);
		tr_wr(&wr, 9, &sg, UROCE_WR_RDMA_WRITE);
		REQUIRE(uroce_post_send(p.s[0].qp, &wr, NULL) == -EINVAL && strstr(uroce_last_error(), "imm_keyed"),
		        "plain WRITE on a keyed QP: %s", uroce_last_error());
	}
	REQUIRE(uroce_pstream_start(p.s[0].qp, 4096, 1, &ps) == -EINVAL && strstr(uroce_last_error(), "imm_keyed"),
	        "stream on a keyed QP: %s", uroce_last_error());
	tr_qp_attr(&ia, UROCE_QPT_RC, p.s[0].scq, p.s[0].rcq, 4, 4);
	ia.rel.reliability = UROCE_REL_RC;
	ia.rel.imm_keyed = 1;
	REQUIRE(uroce_qp_create(p.s[0].pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "imm_keyed"),
	        "rc keyed: %s", uroce_last_error());
	ia.rel.reliability = UROCE_REL_SR;
	ia.rel.nic_rc = 1;
	REQUIRE(uroce_qp_create(p.s[0].pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "rel.nic_rc"),
	        "an RC pool off a verbs port: %s", uroce_last_error());
	tr_close(&p);
}

/* ec keyed by immediate under a NIC's numbering: parity rebuilds 2 lost
 * chunks of every 7 with nothing sent again; a lost leading descriptor
 * costs only the data that went ahead of it, which is sent again. */
static void run_keyed_ec(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_qp_stats sa, sb;
	struct nic_psn np = { 0 };
	/* 20 packets: three submessages of k = 7, the last short (6 packets
	 * with ceil(6 x 2 / 7) = 2 parity, enough for its 2 lost too) */
	const uint32_t len = 20000;

	rel_opts(&o, UROCE_REL_EC, UROCE_ORDER_ORDERED, UROCE_EC_RS, 7, 2);
	o.rel.imm_keyed = 1;
	tr_open(&p, &o, 92, NULL, NULL);
	np.dqpn = uroce_qp_num(p.s[1].qp);
	np.next = 0xfffff0; /* wraps */
	np.ec_k = 7;
	np.ec_drop = 2;
	REQUIRE(loop_fabric_set_filter(p.fab, 0, nic_psn_filter, &np) == 0, "filter");
	keyed_one(&p, 0, UROCE_WR_SEND, len);
	keyed_one(&p, 1, UROCE_WR_SEND_WITH_IMM, len);
	uroce_qp_stats(p.s[0].qp, &sa);
	uroce_qp_stats(p.s[1].qp, &sb);
	REQUIRE(np.dropped > 0 && sb.ec_recovered == np.dropped && sa.retransmits == 0 && sb.ec_nacks_sent == 0,
	        "ec keyed: %llu lost, %llu rebuilt, %llu sent again, %llu NACKs", (unsigned long long)np.dropped,
	        (unsigned long long)sb.ec_recovered, (unsigned long long)sa.retransmits,
	        (unsigned long long)sb.ec_nacks_sent);
	printf("  ec keyed by immediate: %llu of every 7 chunks lost, all %llu rebuilt, nothing sent again\n",
	       (unsigned long long)np.ec_drop, (unsigned long long)sb.ec_recovered);
	np.ec_drop = 0;
	np.drop_desc = 1;
	keyed_one(&p, 2, UROCE_WR_SEND_WITH_IMM, len);
	uroce_qp_stats(p.s[0].qp, &sa);
	uroce_qp_stats(p.s[1].qp, &sb);
	CHECK(tr_drops(p.s[1].ctx, UROCE_DROP_NO_DESC) >= 1, "ec keyed, leading descriptor lost: %llu no_desc",
	      (unsigned long long)tr_drops(p.s[1].ctx, UROCE_DROP_NO_DESC));
	printf("  ec keyed, its leading descriptor lost: data ahead of it dropped (no_desc %llu), the message whole "
	       "after %llu resent (%llu NACKs)\n", (unsigned long long)tr_drops(p.s[1].ctx, UROCE_DROP_NO_DESC),
	       (unsigned long long)sa.retransmits, (unsigned long long)sb.ec_nacks_sent);
	tr_close(&p);
}

static void run_bad_args(void)
{
	struct tr_opts o;
	struct tr_pair p;
	struct uroce_qp_init_attr ia;
	struct uroce_qp *qp;
	struct uroce_sge sg;
	struct uroce_send_wr wr;

	rel_opts(&o, UROCE_REL_SR, UROCE_ORDER_ORDERED, UROCE_EC_RS, 0, 0);
	tr_open(&p, &o, 83, NULL, NULL);
	struct tr_side *a = &p.s[0];

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = UROCE_QPT_UC;
	ia.send_cq = a->scq;
	ia.recv_cq = a->rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.rel.reliability = UROCE_REL_SR;
	REQUIRE(uroce_qp_create(a->pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "UROCE_QPT_RC"),
	        "sr on UC: %s", uroce_last_error());
	ia.qp_type = UROCE_QPT_RC;
	ia.rel.reliability = UROCE_REL_EC;
	ia.rel.ec_k = 65;
	REQUIRE(uroce_qp_create(a->pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "accepted"),
	        "ec k 65: %s", uroce_last_error());
	ia.rel.ec_k = 0;
	ia.rel.reliability = (enum uroce_reliability)7;
	REQUIRE(uroce_qp_create(a->pd, &ia, &qp) == -EINVAL, "reliability 7 accepted");
	memset(&wr, 0, sizeof(wr));
	tr_sge(&sg, a, 0, 64);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_RDMA_READ;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == -EINVAL && strstr(uroce_last_error(), "need rc"),
	        "READ on sr: %s", uroce_last_error());
	printf("  bad attributes and opcodes refused with a message\n");
	tr_close(&p);
}

/* precv_note for the packets of a message's top chunk, its length not
 * known (no LAST yet): the message's bitmap is one allocation of exactly
 * 2^17 bits here, so an ASan build catches a read past it (the slot
 * bitmaps of the last slot end their allocation the same way). */
static void run_precv_top_chunk(void)
{
	static const uint32_t cps[] = { 3, 5, 7, 1000, 4095, 4096, 2, 1 };

	for (unsigned k = 0; k < sizeof(cps) / sizeof(cps[0]); k++) {
		uint32_t cp = cps[k], nch = SR_MAX_MSG_PKTS / cp + 1, c = (SR_MAX_MSG_PKTS - 1) / cp;
		struct uroce_precv *h = calloc(1, sizeof(*h) + (nch + 63) / 64 * sizeof(uint64_t));
		struct sr_rmsg m;

		memset(&m, 0, sizeof(m));
		m.bits = calloc(SR_MAX_MSG_PKTS / 64, sizeof(uint64_t));
		REQUIRE(h && m.bits, "memory");
		h->chunk_pkts = cp;
		h->nchunks = nch;
		for (uint32_t i = c * cp; i < SR_MAX_MSG_PKTS; i++) {
			bit_set(m.bits, i);
			precv_note(h, &m, i);
		}
		CHECK(h->bits[c / 64] >> (c % 64) & 1, "chunk_pkts %u: the top chunk %u (packets %u..%u) is not marked whole",
		      cp, c, c * cp, SR_MAX_MSG_PKTS - 1);
		if (c)
			CHECK(!(h->bits[(c - 1) / 64] >> ((c - 1) % 64) & 1), "chunk_pkts %u: chunk %u marked, none of it came",
			      cp, c - 1);
		free(m.bits);
		free(h);
	}
}

int main(int argc, char **argv)
{
	static const double losses[] = { 0, 1e-4, 1e-3, 1e-2 };
	struct tr_opts o;

	if (argc > 1 && !strcmp(argv[1], "stream_early")) {
		/* only the early-completed streams */
		run_stream_early(false);
		run_stream_early(true);
		return test_done("tr_sr");
	}
	run_bad_args();
	for (unsigned mode = 0; mode < 3; mode++) {
		for (unsigned ord = 0; ord < 2; ord++) {
			if (mode == 0)
				rel_opts(&o, UROCE_REL_SR, (enum uroce_ordering)ord, UROCE_EC_RS, 0, 0);
			else
				rel_opts(&o, UROCE_REL_EC, (enum uroce_ordering)ord, mode == 1 ? UROCE_EC_RS : UROCE_EC_XOR, 8, 2);
			for (unsigned l = 0; l < 4; l++)
				run_mix(&o, losses[l], 1000 + mode * 10 + ord * 100 + l, ord ? 300 : 600);
		}
	}
	/* keyed by immediate, under a NIC's numbering */
	for (unsigned mode = 0; mode < 2; mode++) {
		for (unsigned ord = 0; ord < 2; ord++) {
			if (mode == 0)
				rel_opts(&o, UROCE_REL_SR, (enum uroce_ordering)ord, UROCE_EC_RS, 0, 0);
			else
				rel_opts(&o, UROCE_REL_EC, (enum uroce_ordering)ord, UROCE_EC_RS, 8, 2);
			o.rel.imm_keyed = 1;
			for (unsigned l = 0; l < 4; l += (l ? 1 : 2))
				run_mix(&o, losses[l], 7000 + mode * 10 + ord * 100 + l, 300);
		}
	}
	run_keyed();
	run_keyed_ec();
	/* the smallest window: a receive map of 32 bits, less than one word */
	for (unsigned ord = 0; ord < 2; ord++) {
		rel_opts(&o, UROCE_REL_SR, (enum uroce_ordering)ord, UROCE_EC_RS, 0, 0);
		o.rel.window_pkts = SR_WIN_MIN_PKTS;
		run_mix(&o, 1e-2, 5000 + ord, 400);
	}
	run_ec_zero_retx(UROCE_EC_RS, 32, 8, 8);
	run_ec_zero_retx(UROCE_EC_RS, 8, 2, 2);
	run_ec_zero_retx(UROCE_EC_XOR, 8, 2, 2);
	run_ec_fallback();
	run_bitmap();
	run_precv_top_chunk();
	run_stream();
	run_stream_early(false);
	run_stream_early(true);
	run_lost_forever();
	run_reorder();
	return test_done("tr_sr");
}
