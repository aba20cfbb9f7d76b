/* SPDX-License-Identifier: MIT */
/* The be reliability mode (OptiNIC's best effort) over the loop fabric,
 * in simulated time:
 * - at 0, 1e-3 and 1e-2 loss every receive completes once, by its
 *   deadline, with exactly the bytes of the packets that arrived (a test
 *   filter drops and counts them), PARTIAL and TIMEOUT/PREEMPTED exactly
 *   when the message lost packets or its last one, and the buffer holds
 *   the arrived packets' bytes and nothing where packets were lost;
 * - a newer message preempts the active one, and the older one's late
 *   packets, injected after its completion, are dropped as late and
 *   change no byte;
 * - a receive with nothing arriving ends at its own deadline, the QP's
 *   deadline can be changed, a sender held back by the link ends its WR at
 *   its deadline with the bytes sent;
 * - keyed by immediate (rel.imm_keyed), with every BTH PSN renumbered on
 *   the way as a NIC's UC QP numbers them, the same at every loss rate,
 *   except that a message's data counts only once its descriptor (with
 *   the token) is there; a forged descriptor and data ahead of it are
 *   dropped by reason and preempt nothing;
 * - after a blackout longer than the PSN window, the sender's SYNC lets
 *   whole messages through again;
 * - the per-QP state is OptiNIC-sized;
 * - bad attributes and opcodes are refused with a message. */
#include "tr_test.h"
#include "../../lib/xorshift.h"

#include "dataplane/wire.h"
#include "transport/rel/sr/sr_wire.h"

#define TMO_US 2000u
#define SLOT (16u * 1024u)
#define NSLOT 24u
#define WRITE_OFF (NSLOT * SLOT)
#define SRC_OFF 0u
#define BATCH 8u
#define CANARY 0xeeu
#define MAXMSG 600u

/* What the filter let through, per message number (low 12 bits). */
struct seen {
	uint64_t rng;
	double p;
	uint64_t dropped, passed;
	uint32_t bytes[4096];
	bool last_ok[4096], desc_ok[4096];
	uint8_t got[4096][16];  /* packet idx arrived (bit map, 128 packets) */
	/* capture: packets of message cap_msg with idx >= cap_from are kept, not delivered */
	int cap_msg;
	uint32_t cap_from;
	uint8_t cap[16][2048];
	uint32_t cap_len[16], ncap;
	bool cap_pass;           /* captured packets are delivered too */
	bool drop_last_of[4096];
	uint64_t wbase;          /* plain WRITEs: arrived 1 KiB pages of the receiver's buffer */
	uint8_t wgot[TR_BUF / 1024 / 8];
	bool keyed;              /* data counts only behind its descriptor; PSNs renumbered as a NIC's */
	uint32_t next_psn;
	uint32_t bad_token;      /* descriptors still to pass with a wrong token (they do not count) */
};

static bool filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct seen *s = arg;
	struct roce_pkt pkt;
	uint32_t kind, idx, msg;

	if (roce_parse(frame, len, &pkt, NULL) != UROCE_DROP_NONE ||
	    (pkt.opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM) &&
	     !(s->keyed && pkt.opcode == (ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM))))
		return false;
	kind = (pkt.imm >> 17) & 7;
	idx = pkt.imm & 0x1ffff;
	msg = pkt.imm >> 20;
	if ((int)msg == s->cap_msg && kind != 3 && idx >= s->cap_from && s->ncap < 16) {
		memcpy(s->cap[s->ncap], frame, len);
		s->cap_len[s->ncap++] = len;
		if (!s->cap_pass)
			return true;
	}
	if ((s->p > 0 && (double)(xs64(&s->rng) >> 11) / 9007199254740992.0 < s->p) ||
	    ((kind == 1 || kind == 6) && s->drop_last_of[msg])) {
		s->dropped++;
		return true;
	}
	s->passed++;
	if (s->keyed) {
		/* the test stands in for the sending NIC: its own PSNs */
		uint8_t out[2048], desc[32];

		if (kind == 3 && s->bad_token && pkt.payload_len == 32) {
			s->bad_token--;
			memcpy(desc, pkt.payload, 32);
			desc[31] ^= 0x5a;
			pkt.payload = desc;
			kind = 7; /* counts as nothing */
		}
		pkt.psn = s->next_psn;
		s->next_psn = (s->next_psn + 1) & ROCE_PSN_MASK;
		REQUIRE(len <= sizeof(out) && roce_build(out, sizeof(out), &pkt) == (int)len, "renumber");
		memcpy((uint8_t *)(uintptr_t)frame, out, len);
		if (kind == 7)
			return false;
		if ((kind == 0 || kind == 1 || kind == 6) && !s->desc_ok[msg])
			return false; /* ahead of its descriptor: dropped there (no_desc) */
	}
	if (kind == 3) {
		s->desc_ok[msg] = true;
		return false;
	}
	if (kind == 5) {
		uint64_t pg = (pkt.reth.va - s->wbase) / 1024;

		if (pg < TR_BUF / 1024)
			s->wgot[pg / 8] |= (uint8_t)(1u << (pg % 8));
		return false;
	}
	if (kind == 6) {
		if (s->last_ok[msg])
			return false; /* the tail's copy: the receiver drops it */
		kind = 1;     /* the tail was lost: its copy stands in */
	}
	if (kind == 0 || kind == 1) {
		s->bytes[msg] += pkt.payload_len;
		if (idx < 128)
			s->got[msg][idx / 8] |= (uint8_t)(1u << (idx % 8));
	}
	if (kind == 1)
		s->last_ok[msg] = true;
	return false;
}

static void be_opts(struct tr_opts *o)
{
	tr_opts_default(o, UROCE_QPT_RC);
	o->rel.reliability = UROCE_REL_BE;
	o->rel.timeout_us = TMO_US;
	o->max_wr = 64;
}

static void post_recv_at(struct tr_side *b, uint64_t id, uint32_t off, uint32_t len, uint32_t tmo)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .timeout_us = tmo };

	tr_sge(&sg, b, off, len);
	REQUIRE(uroce_post_recv(b->qp, &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

static void post_send_op(struct tr_side *a, struct tr_side *b, enum uroce_wr_opcode op, uint64_t id, uint32_t src,
                         uint32_t len, uint32_t dst, uint32_t imm, uint32_t tmo)
{
	struct uroce_sge sg;
	struct uroce_send_wr wr;

	tr_sge(&sg, a, src, len);
	tr_wr(&wr, id, &sg, op);
	wr.imm_data = imm;
	wr.timeout_us = tmo;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + dst);
	wr.wr.rdma.rkey = b->mr->rkey;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post_send: %s", uroce_last_error());
}

struct bmsg {
	enum uroce_wr_opcode op;
	uint32_t len, src, dst, seq; /* seq: message number (plain WRITE: the next one's) */
	bool recv;
};

/* Check the bytes of message m at dst against the source, packet by
 * packet: arrived packets hold the source, lost ones the canary. */
static void check_bytes(const struct tr_pair *p, const struct bmsg *m, const struct seen *s)
{
	const uint8_t *src = p->s[0].buf + m->src, *dst = p->s[1].buf + m->dst;
	uint32_t seq = m->seq & 4095;

	for (uint32_t i = 0; i * 1024 < m->len; i++) {
		uint32_t l = m->len - i * 1024 < 1024 ? m->len - i * 1024 : 1024, pg = m->dst / 1024 + i;
		bool got = m->recv ? (s->got[seq][i / 8] >> (i % 8)) & 1 : (s->wgot[pg / 8] >> (pg % 8)) & 1;
		bool same = !memcmp(src + i * 1024, dst + i * 1024, l), canary = true;

		for (uint32_t k = 0; k < l; k++)
			canary &= dst[i * 1024 + k] == CANARY;
		CHECK(got ? same : canary, "message %u packet %u: arrived %d but the buffer holds %s", m->seq, i, got,
		      same ? "the data" : canary ? "the canary" : "something else");
	}
}

static void run_loss(double p, uint64_t seed, bool keyed)
{
	static struct seen s;
	struct tr_pair pr;
	struct tr_opts o;
	struct bmsg msgs[BATCH];
	uint64_t rng = seed, t_done_prev, timeouts = 0, partial = 0, preempted = 0, nrecv = 0, bytes = 0, sent = 0;
	uint32_t seq = 0;

	be_opts(&o);
	o.rel.imm_keyed = keyed;
	tr_open(&pr, &o, seed, NULL, NULL);
	memset(&s, 0, sizeof(s));
	s.rng = seed | 1;
	s.p = p;
	s.cap_msg = -1;
	s.wbase = (uint64_t)(uintptr_t)pr.s[1].buf;
	s.keyed = keyed;
	s.next_psn = (uint32_t)seed * 7919u & ROCE_PSN_MASK;
	REQUIRE(loop_fabric_set_filter(pr.fab, 0, filter, &s) == 0, "filter");
	tr_fill(pr.s[0].buf, TR_BUF, (uint32_t)seed);
	for (unsigned batch = 0; batch < MAXMSG / BATCH; batch++) {
		unsigned nr = 0, got = 0, gots = 0;
		uint64_t t_post;

		memset(pr.s[1].buf, CANARY, TR_BUF);
		memset(s.wgot, 0, sizeof(s.wgot));
		for (unsigned i = 0; i < BATCH; i++) {
			struct bmsg *m = &msgs[i];
			uint32_t r = (uint32_t)xs64(&rng);

			m->op = (enum uroce_wr_opcode)(r % 4);
			if (keyed && m->op == UROCE_WR_RDMA_WRITE)
				m->op = UROCE_WR_RDMA_WRITE_WITH_IMM; /* a NIC completes no plain WRITE at the receiver */
			m->len = (r >> 8) % SLOT + (r >> 30 == 0 ? 0 : 1);
			if (r % 13 == 0)
				m->len = 0;
			m->src = (i * SLOT) % (TR_BUF - SLOT);
			m->recv = m->op != UROCE_WR_RDMA_WRITE;
			m->dst = m->recv && m->op != UROCE_WR_RDMA_WRITE_WITH_IMM ? nr * SLOT : WRITE_OFF + i * SLOT;
			m->seq = seq;
			if (m->recv) {
				post_recv_at(&pr.s[1], nr, nr * SLOT, SLOT, 0);
				nr++;
				seq++;
			}
		}
		t_post = loop_fabric_now(pr.fab);
		t_done_prev = t_post;
		for (unsigned i = 0; i < BATCH; i++)
			post_send_op(&pr.s[0], &pr.s[1], msgs[i].op, i, msgs[i].src, msgs[i].len, msgs[i].dst, 0x1000000u + i, 0);
		/* every receive, in order, each by its deadline */
		for (unsigned i = 0, r = 0; i < BATCH; i++) {
			struct bmsg *m = &msgs[i];
			struct uroce_wc wc;
			uint32_t q = m->seq & 4095, npk = m->len ? (m->len + 1023) / 1024 : 1;
			bool lost_last, has_imm = m->op == UROCE_WR_SEND_WITH_IMM || m->op == UROCE_WR_RDMA_WRITE_WITH_IMM;
			uint64_t now;

			if (!m->recv)
				continue;
			REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "loss %g: receive %u never completed", p, r);
			now = loop_fabric_now(pr.fab);
			CHECK(wc.wr_id == r, "receive %u completed as %llu: out of order", r, (unsigned long long)wc.wr_id);
			CHECK(now - t_done_prev <= (TMO_US + 100) * 1000ull,
			      "receive %u took %llu us after it became the oldest: deadline %u us", r,
			      (unsigned long long)((now - t_done_prev) / 1000), TMO_US);
			t_done_prev = now;
			CHECK(wc.status == UROCE_WC_SUCCESS, "receive %u: %s", r, uroce_wc_status_str(wc.status));
			CHECK(wc.byte_len == s.bytes[q], "loss %g message %u (%u bytes, %u packets): byte_len %u, %u arrived", p,
			      m->seq, m->len, npk, wc.byte_len, s.bytes[q]);
			lost_last = !s.last_ok[q];
			CHECK(!!(wc.wc_flags & (UROCE_WC_TIMEOUT | UROCE_WC_PREEMPTED)) == lost_last,
			      "message %u: flags 0x%x, its last packet %s", m->seq, wc.wc_flags, lost_last ? "lost" : "arrived");
			CHECK(!!(wc.wc_flags & UROCE_WC_PARTIAL) == (lost_last || s.bytes[q] < m->len),
			      "message %u: flags 0x%x with %u of %u bytes", m->seq, wc.wc_flags, s.bytes[q], m->len);
			CHECK(!!(wc.wc_flags & UROCE_WC_WITH_IMM) == (has_imm && s.desc_ok[q]),
			      "message %u: WITH_IMM %d, descriptor arrived %d", m->seq, !!(wc.wc_flags & UROCE_WC_WITH_IMM),
			      s.desc_ok[q]);
			if (wc.wc_flags & UROCE_WC_WITH_IMM)
				CHECK(wc.imm_data == 0x1000000u + i, "message %u: imm 0x%x", m->seq, wc.imm_data);
			CHECK(wc.opcode == (m->op == UROCE_WR_RDMA_WRITE_WITH_IMM && s.desc_ok[q] ? UROCE_WC_RECV_RDMA_WITH_IMM :
			                    m->op == UROCE_WR_RDMA_WRITE_WITH_IMM && s.bytes[q] ? UROCE_WC_RECV_RDMA_WITH_IMM :
			                                                                         UROCE_WC_RECV),
			      "message %u: wc opcode %d", m->seq, wc.opcode);
			timeouts += !!(wc.wc_flags & UROCE_WC_TIMEOUT);
			preempted += !!(wc.wc_flags & UROCE_WC_PREEMPTED);
			partial += !!(wc.wc_flags & UROCE_WC_PARTIAL);
			bytes += wc.byte_len;
			nrecv++;
			r++;
			got++;
		}
		/* the sender completes every WR once its packets are out */
		while (gots < BATCH) {
			struct uroce_wc wc;

			REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 10000) == 0, "send completion");
			CHECK(wc.status == UROCE_WC_SUCCESS && !(wc.wc_flags & UROCE_WC_TIMEOUT), "send %llu: %s flags 0x%x",
			      (unsigned long long)wc.wr_id, uroce_wc_status_str(wc.status), wc.wc_flags);
			gots++;
			sent++;
		}
		for (unsigned i = 0; i < 50; i++)
			tr_step(&pr); /* late plain WRITE packets settle */
		for (unsigned i = 0; i < BATCH; i++)
			check_bytes(&pr, &msgs[i], &s);
		(void)got;
	}
	{
		struct uroce_wc wc;

		CHECK(uroce_poll_cq(pr.s[1].rcq, 1, &wc) == 0, "a receive completed twice");
	}
	printf("  %sloss %g: %llu receives, %llu bytes, %llu partial, %llu preempted, %llu timed out; %llu packets "
	       "lost\n", keyed ? "keyed, " : "", p, (unsigned long long)nrecv, (unsigned long long)bytes, (unsigned long long)partial,
	       (unsigned long long)preempted, (unsigned long long)timeouts, (unsigned long long)s.dropped);
	if (p == 0)
		CHECK(partial == 0 && s.dropped == 0, "lossless run: %llu partial", (unsigned long long)partial);
	else
		CHECK(s.dropped > 0 && (p < 0.005 || partial > 0), "loss %g dropped %llu packets, %llu partial", p,
		      (unsigned long long)s.dropped, (unsigned long long)partial);
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	tr_close(&pr);
}

static uint64_t port_drop(struct tr_side *s, enum uroce_drop_reason r)
{
	struct uroce_port_stats ps;

	REQUIRE(uroce_port_stats(s->ctx, 1, &ps) == 0, "port_stats");
	return ps.drops[r];
}

/* Message 0 loses its second half on the way (kept aside), message 1
 * preempts it; after the application reuses the buffer, the kept packets
 * arrive late and must not change a byte. Then a message whose last
 * packet is lost and that nothing follows ends at its deadline. */
static void run_preempt(void)
{
	static struct seen s;
	struct tr_pair pr;
	struct tr_opts o;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	uint64_t late0, t0;

	be_opts(&o);
	tr_open(&pr, &o, 77, NULL, NULL);
	memset(&s, 0, sizeof(s));
	s.cap_msg = 0;
	s.cap_from = 4;
	REQUIRE(loop_fabric_set_filter(pr.fab, 0, filter, &s) == 0, "filter");
	tr_fill(pr.s[0].buf, TR_BUF, 5);
	memset(pr.s[1].buf, 0, TR_BUF);
	post_recv_at(&pr.s[1], 100, 0, SLOT, 0);
	post_recv_at(&pr.s[1], 101, SLOT, SLOT, 0);
	post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 1, 0, 8192, 0, 0, 0);
	REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 1000) == 0, "send 1");
	for (int i = 0; i < 20; i++)
		tr_step(&pr);
	CHECK(uroce_poll_cq(pr.s[1].rcq, 1, &wc) == 0, "message 0 completed before anything preempted it");
	CHECK(s.ncap == 5, "kept %u packets of message 0 (4 and the tail's copy)", s.ncap);
	post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 2, 8192, 4096, 0, 0, 0);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 1000) == 0, "message 0's completion");
	CHECK(wc.wr_id == 100 && wc.byte_len == 4096 && (wc.wc_flags & UROCE_WC_PREEMPTED) &&
	      (wc.wc_flags & UROCE_WC_PARTIAL) && !(wc.wc_flags & UROCE_WC_TIMEOUT),
	      "message 0: wr_id %llu, %u bytes, flags 0x%x; want 100, 4096 bytes, PREEMPTED|PARTIAL",
	      (unsigned long long)wc.wr_id, wc.byte_len, wc.wc_flags);
	CHECK(!memcmp(pr.s[1].buf, pr.s[0].buf, 4096), "message 0's first half");
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 1000) == 0, "message 1's completion");
	CHECK(wc.wr_id == 101 && wc.byte_len == 4096 && wc.wc_flags == 0, "message 1: wr_id %llu, %u bytes, flags 0x%x",
	      (unsigned long long)wc.wr_id, wc.byte_len, wc.wc_flags);
	/* the application reuses message 0's buffer; its lost half comes late */
	memset(pr.s[1].buf, 0x5a, SLOT);
	late0 = port_drop(&pr.s[1], UROCE_DROP_LATE);
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	for (unsigned i = 0; i < s.ncap; i++)
		REQUIRE(loop_fabric_inject(pr.fab, 0, s.cap[i], s.cap_len[i]) == 0, "inject: %s",
		        loop_fabric_last_error(pr.fab));
	for (int i = 0; i < 50; i++)
		tr_step(&pr);
	CHECK(port_drop(&pr.s[1], UROCE_DROP_LATE) - late0 == s.ncap, "late drops %llu of %u injected",
	      (unsigned long long)(port_drop(&pr.s[1], UROCE_DROP_LATE) - late0), s.ncap);
	for (uint32_t i = 0; i < SLOT; i++)
		if (pr.s[1].buf[i] != 0x5a) {
			CHECK(0, "byte %u of the reused buffer changed after its message completed", i);
			break;
		}
	CHECK(uroce_poll_cq(pr.s[1].rcq, 1, &wc) == 0, "a late packet made a completion");
	REQUIRE(uroce_qp_stats(pr.s[1].qp, &qs) == 0, "stats");

	CHECK(qs.late_drops == s.ncap && qs.be_preempted == 1, "late_drops %llu, be_preempted %llu",
	      (unsigned long long)qs.late_drops, (unsigned long long)qs.be_preempted);

	/* message 2 of one packet arrives whole; its tail's copy, sent again
	 * at the same PSN, is one duplicate per copy and nothing else */
	{
		uint64_t dup0, late1;

		s.cap_msg = 2;
		s.cap_from = 0;
		s.cap_pass = true;
		s.ncap = 0;
		loop_fabric_set_filter(pr.fab, 0, filter, &s);
		post_recv_at(&pr.s[1], 102, 0, SLOT, 0);
		post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 3, 0, 100, 0, 0, 0);
		REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 1000) == 0, "message 2");
		CHECK(wc.wr_id == 102 && wc.byte_len == 100 && wc.wc_flags == 0, "message 2: %u bytes, flags 0x%x",
		      wc.byte_len, wc.wc_flags);
		for (int i = 0; i < 20; i++)
			tr_step(&pr);
		REQUIRE(s.ncap == 2, "message 2's last packet and its copy: %u captured", s.ncap);
		loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
		dup0 = port_drop(&pr.s[1], UROCE_DROP_DUPLICATE);
		late1 = port_drop(&pr.s[1], UROCE_DROP_LATE);
		for (int k = 0; k < 2; k++)
			REQUIRE(loop_fabric_inject(pr.fab, 0, s.cap[1], s.cap_len[1]) == 0, "inject the tail's copy");
		for (int i = 0; i < 20; i++)
			tr_step(&pr);
		CHECK(port_drop(&pr.s[1], UROCE_DROP_DUPLICATE) - dup0 == 2 && port_drop(&pr.s[1], UROCE_DROP_LATE) == late1,
		      "two more copies of the tail's copy: duplicate +%llu, late +%llu; want +2 and +0",
		      (unsigned long long)(port_drop(&pr.s[1], UROCE_DROP_DUPLICATE) - dup0),
		      (unsigned long long)(port_drop(&pr.s[1], UROCE_DROP_LATE) - late1));
		s.cap_pass = false;
	}

	/* message 3 loses its last packet, nothing follows: its deadline ends it */
	loop_fabric_set_filter(pr.fab, 0, filter, &s);
	s.cap_msg = -1;
	s.drop_last_of[3] = true;
	post_recv_at(&pr.s[1], 103, 0, SLOT, 0);
	for (int i = 0; i < 5; i++)
		tr_step(&pr);
	t0 = loop_fabric_now(pr.fab);
	post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND_WITH_IMM, 4, 0, 3000, 0, 0xabcd, 0);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "message 3's completion");
	CHECK(wc.wr_id == 103 && wc.byte_len == 2048 && (wc.wc_flags & UROCE_WC_TIMEOUT) &&
	      (wc.wc_flags & UROCE_WC_WITH_IMM) && wc.imm_data == 0xabcd,
	      "message 3: wr_id %llu, %u bytes, flags 0x%x, imm 0x%x", (unsigned long long)wc.wr_id, wc.byte_len,
	      wc.wc_flags, wc.imm_data);
	CHECK(loop_fabric_now(pr.fab) - t0 <= (TMO_US + 100) * 1000ull && loop_fabric_now(pr.fab) - t0 >= TMO_US * 900ull,
	      "message 3 ended %llu us after it started; deadline %u us",
	      (unsigned long long)((loop_fabric_now(pr.fab) - t0) / 1000), TMO_US);
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	tr_close(&pr);
}

/* Deadlines of their own: a receive's, the QP's after set_timeout, and a
 * sender's held back by a slow link. */
static void run_deadlines(void)
{
	struct tr_pair pr;
	struct tr_opts o;
	struct uroce_wc wc;
	struct loop_impairment slow = { .rate_bps = 100000000ull, .backpressure = true, .queue_bytes = 16384 };
	uint64_t t0;

	be_opts(&o);
	tr_open(&pr, &o, 9, &slow, NULL);
	/* 512 KiB at 100 Mbit/s takes 42 ms; the sender's deadline is 1 ms */
	post_recv_at(&pr.s[1], 3, 0, TR_BUF, 5000);
	post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 7, 0, 512 * 1024, 0, 0, 1000);
	REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 100000) == 0, "sender's completion");
	CHECK(wc.wr_id == 7 && (wc.wc_flags & UROCE_WC_TIMEOUT) && (wc.wc_flags & UROCE_WC_PARTIAL) &&
	      wc.byte_len > 0 && wc.byte_len < 512 * 1024, "sender: wr %llu, %u bytes, flags 0x%x",
	      (unsigned long long)wc.wr_id, wc.byte_len, wc.wc_flags);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "receiver's completion");
	CHECK(wc.wr_id == 3 && (wc.wc_flags & UROCE_WC_PARTIAL) && wc.byte_len > 0 && wc.byte_len < 512 * 1024,
	      "receiver of the cut message: %u bytes, flags 0x%x", wc.byte_len, wc.wc_flags);
	/* receives that nothing reaches: each ends at its deadline */
	t0 = loop_fabric_now(pr.fab);
	post_recv_at(&pr.s[1], 1, 0, SLOT, 300);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "receive with its own deadline");
	CHECK(wc.byte_len == 0 && (wc.wc_flags & UROCE_WC_TIMEOUT) && loop_fabric_now(pr.fab) - t0 >= 300000 &&
	      loop_fabric_now(pr.fab) - t0 <= 400000, "300 us receive: %u bytes, flags 0x%x, after %llu us",
	      wc.byte_len, wc.wc_flags, (unsigned long long)((loop_fabric_now(pr.fab) - t0) / 1000));
	REQUIRE(uroce_qp_set_timeout(pr.s[1].qp, 700) == 0, "set_timeout: %s", uroce_last_error());
	t0 = loop_fabric_now(pr.fab);
	post_recv_at(&pr.s[1], 2, 0, SLOT, 0);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "receive with the QP's deadline");
	CHECK((wc.wc_flags & UROCE_WC_TIMEOUT) && loop_fabric_now(pr.fab) - t0 >= 700000 &&
	      loop_fabric_now(pr.fab) - t0 <= 800000, "700 us receive ended after %llu us",
	      (unsigned long long)((loop_fabric_now(pr.fab) - t0) / 1000));
	tr_close(&pr);
}

/* OptiNIC's windows: a WRITE with immediate into a memory window that
 * ends by timeout revokes the window; a later packet with its key is
 * dropped as rkey_revoked and writes nothing. The window is bound by a
 * BIND_MW on the receiving be QP, which completes in order. */
static void run_window(void)
{
	static struct seen s;
	struct tr_pair pr;
	struct tr_opts o;
	struct uroce_wc wc;
	struct uroce_mw *mw;
	struct uroce_send_wr bw;
	uint64_t revoked0;
	uint32_t key;

	be_opts(&o);
	o.mr_access |= UROCE_ACCESS_MW_BIND;
	tr_open(&pr, &o, 21, NULL, NULL);
	memset(&s, 0, sizeof(s));
	s.cap_msg = -1;
	REQUIRE(uroce_mw_alloc(pr.s[1].pd, UROCE_MW_TYPE_2, &mw) == 0, "mw_alloc: %s", uroce_last_error());
	tr_bind_wr(&bw, &pr.s[1], mw, WRITE_OFF, 8192, UROCE_ACCESS_REMOTE_WRITE, 55);
	key = bw.bind_mw.rkey;
	REQUIRE(uroce_post_send(pr.s[1].qp, &bw, NULL) == 0, "bind: %s", uroce_last_error());
	REQUIRE(tr_wait(&pr, pr.s[1].scq, &wc, 1000) == 0, "bind completion");
	CHECK(wc.wr_id == 55 && wc.status == UROCE_WC_SUCCESS && wc.opcode == UROCE_WC_BIND_MW, "bind: %s opcode %d",
	      uroce_wc_status_str(wc.status), wc.opcode);
	REQUIRE(loop_fabric_set_filter(pr.fab, 0, filter, &s) == 0, "filter");
	s.drop_last_of[0] = true;
	tr_fill(pr.s[0].buf, TR_BUF, 8);
	memset(pr.s[1].buf + WRITE_OFF, 0, 8192);
	post_recv_at(&pr.s[1], 1, 0, SLOT, 0);
	{
		struct uroce_sge sg;
		struct uroce_send_wr wr;

		memset(&wr, 0, sizeof(wr));
		tr_sge(&sg, &pr.s[0], 0, 4096);
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(pr.s[1].buf + WRITE_OFF);
		wr.wr.rdma.rkey = key;
		REQUIRE(uroce_post_send(pr.s[0].qp, &wr, NULL) == 0, "write: %s", uroce_last_error());
		REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "the write's receive");
		CHECK((wc.wc_flags & UROCE_WC_TIMEOUT) && wc.byte_len == 3072 && !memcmp(pr.s[1].buf + WRITE_OFF, pr.s[0].buf, 3072),
		      "the write through the window: %u bytes, flags 0x%x", wc.byte_len, wc.wc_flags);
		/* the next message uses the same key: the window is revoked */
		revoked0 = port_drop(&pr.s[1], UROCE_DROP_RKEY_REVOKED);
		memset(pr.s[1].buf + WRITE_OFF, 0, 8192);
		post_recv_at(&pr.s[1], 2, 0, SLOT, 0);
		REQUIRE(uroce_post_send(pr.s[0].qp, &wr, NULL) == 0, "write again: %s", uroce_last_error());
		REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 100000) == 0, "the second write's receive");
		/* all 4 packets and the tail's copy refused: a refused packet has
		 * no effect, so not even the last one ends the message early */
		CHECK(wc.byte_len == 0 && (wc.wc_flags & UROCE_WC_TIMEOUT) &&
		      port_drop(&pr.s[1], UROCE_DROP_RKEY_REVOKED) - revoked0 == 5,
		      "through the revoked window: %u bytes placed, flags 0x%x, %llu packets dropped as rkey_revoked",
		      wc.byte_len, wc.wc_flags, (unsigned long long)(port_drop(&pr.s[1], UROCE_DROP_RKEY_REVOKED) - revoked0));
		for (unsigned i = 0; i < 8192; i++)
			if (pr.s[1].buf[WRITE_OFF + i]) {
				CHECK(0, "byte %u written through a revoked window", i);
				break;
			}
	}
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	CHECK(uroce_mw_dealloc(mw) == 0, "mw_dealloc: %s", uroce_last_error());
	tr_close(&pr);
}

/* A link down for longer than the receiver's PSN window: every later
 * packet lies past it. The sender's SYNC (every 1024 PSNs, on the control
 * QPN with the token) moves the window on, and whole messages arrive
 * again; without it, nothing would. */
struct blackout {
	uint32_t left;
	uint64_t dropped;
};

static bool blackout_filter(void *arg, const uint8_t *frame, uint32_t len)
{
	struct blackout *b = arg;

	(void)frame;
	(void)len;
	if (!b->left)
		return false;
	b->left--;
	b->dropped++;
	return true;
}

static void run_resync(void)
{
	/* the receiver numbers the lost messages too: NBIG receives end empty */
	enum { NBIG = 20, NSMALL = 40, SMALL = 32 * 1024, NWHOLE_MIN = 16 };
	struct loop_impairment wire = { .rate_bps = 10000000000ull, .backpressure = true, .queue_bytes = 65536 };
	struct blackout bo = { .left = 20000 }; /* > 2^14 (BE_PSN_AHEAD), < 20 x 1025 frames */
	struct tr_pair pr;
	struct tr_opts o;
	struct uroce_wc wc;
	unsigned whole = 0, ended = 0, last_whole = 0;

	be_opts(&o);
	tr_open(&pr, &o, 31, &wire, NULL);
	REQUIRE(loop_fabric_set_filter(pr.fab, 0, blackout_filter, &bo) == 0, "filter");
	tr_fill(pr.s[0].buf, TR_BUF, 6);
	/* 20 MiB into the dead link; the sender's deadlines do not cut them short */
	for (unsigned i = 0; i < NBIG; i++)
		post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, i, 0, TR_BUF, 0, 0, 60000000);
	for (unsigned i = 0; i < NBIG; i++)
		REQUIRE(tr_wait(&pr, pr.s[0].scq, &wc, 2000000) == 0, "the sender's completion %u", i);
	CHECK(bo.left == 0 && bo.dropped == 20000, "the blackout took %llu frames, %u left",
	      (unsigned long long)bo.dropped, bo.left);
	memset(pr.s[1].buf, 0, TR_BUF);
	for (unsigned i = 0; i < NBIG + NSMALL; i++)
		post_recv_at(&pr.s[1], 1000 + i, (i % 32) * SMALL, SMALL, 0);
	for (unsigned i = 0; i < NSMALL; i++)
		post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 100 + i, (i % 32) * SMALL, SMALL, 0, 0, 60000000);
	for (unsigned i = 0; i < NBIG + NSMALL; i++) {
		if (tr_wait(&pr, pr.s[1].rcq, &wc, 2000000))
			break;
		ended++;
		if (wc.status == UROCE_WC_SUCCESS && !wc.wc_flags && wc.byte_len == SMALL) {
			uint32_t k = (uint32_t)(wc.wr_id - 1000) % 32, j = (uint32_t)(wc.wr_id - 1000 - NBIG) % 32;

			whole++;
			last_whole = (unsigned)(wc.wr_id - 1000);
			CHECK(!memcmp(pr.s[1].buf + k * SMALL, pr.s[0].buf + j * SMALL, SMALL), "receive %llu's bytes",
			      (unsigned long long)wc.wr_id);
		}
	}
	CHECK(ended == NBIG + NSMALL, "%u of %u receives ended", ended, NBIG + NSMALL);
	CHECK(whole >= NWHOLE_MIN && last_whole == NBIG + NSMALL - 1,
	      "after a blackout of %u frames: %u of %u messages whole (the last whole one %u), want at least %u and "
	      "the last", 20000u, whole, NSMALL, last_whole, NWHOLE_MIN);
	printf("after a %u-frame blackout: %u of the %u messages sent after it whole\n", 20000u, whole, NSMALL);
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	tr_close(&pr);
}

/* Keyed: a descriptor with a wrong token counts as nothing (bad_token) and
 * the data behind it is dropped (no_desc) until the second descriptor
 * (before the last packet) proves the message; a forged data packet of the
 * active message or of a newer one, its descriptor never sent, is dropped
 * as no_desc and preempts nothing. */
static void run_keyed_forged(void)
{
	static struct seen s;
	struct tr_pair pr;
	struct tr_opts o;
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	uint64_t nd0;

	be_opts(&o);
	o.rel.imm_keyed = 1;
	tr_open(&pr, &o, 31, NULL, NULL);
	memset(&s, 0, sizeof(s));
	s.keyed = true;
	s.cap_msg = -1;
	s.bad_token = 1;
	REQUIRE(loop_fabric_set_filter(pr.fab, 0, filter, &s) == 0, "filter");
	tr_fill(pr.s[0].buf, TR_BUF, 9);
	post_recv_at(&pr.s[1], 100, 0, SLOT, 0);
	post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 1, 0, 4096, 0, 0, 0);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 1000) == 0, "message 0");
	CHECK(wc.wr_id == 100 && wc.byte_len == 1024 && wc.wc_flags == UROCE_WC_PARTIAL &&
	      !memcmp(pr.s[1].buf + 3072, pr.s[0].buf + 3072, 1024),
	      "message 0 behind a forged descriptor: %u bytes, flags 0x%x; want its last 1024, PARTIAL", wc.byte_len,
	      wc.wc_flags);
	CHECK(port_drop(&pr.s[1], UROCE_DROP_BAD_TOKEN) == 1 && port_drop(&pr.s[1], UROCE_DROP_NO_DESC) == 3,
	      "bad_token %llu, no_desc %llu; want 1 and 3", (unsigned long long)port_drop(&pr.s[1], UROCE_DROP_BAD_TOKEN),
	      (unsigned long long)port_drop(&pr.s[1], UROCE_DROP_NO_DESC));

	/* message 1 whole, its data packets kept to forge from */
	s.cap_msg = 1;
	s.cap_from = 0;
	s.cap_pass = true;
	post_recv_at(&pr.s[1], 101, 0, SLOT, 0);
	post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 2, 0, 2048, 0, 0, 0);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 1000) == 0, "message 1");
	CHECK(wc.wr_id == 101 && wc.byte_len == 2048 && wc.wc_flags == 0, "message 1: %u bytes, flags 0x%x",
	      wc.byte_len, wc.wc_flags);
	REQUIRE(s.ncap >= 1, "message 1's packets kept: %u", s.ncap);
	s.cap_msg = -1;
	post_recv_at(&pr.s[1], 102, 0, SLOT, 0);
	post_recv_at(&pr.s[1], 103, SLOT, SLOT, 0);
	nd0 = port_drop(&pr.s[1], UROCE_DROP_NO_DESC);
	for (uint32_t msg = 2; msg <= 3; msg++) {
		/* message 2 is the active one (no descriptor yet), 3 a newer one */
		struct roce_pkt pkt;
		uint8_t f[2048];
		int len;

		REQUIRE(roce_parse(s.cap[0], s.cap_len[0], &pkt, NULL) == UROCE_DROP_NONE, "parse");
		pkt.imm = srw_imm(msg, SRW_DATA, 0);
		len = roce_build(f, sizeof(f), &pkt);
		REQUIRE(len > 0 && loop_fabric_inject(pr.fab, 0, f, (uint32_t)len) == 0, "inject");
	}
	for (int i = 0; i < 50; i++)
		tr_step(&pr);
	CHECK(port_drop(&pr.s[1], UROCE_DROP_NO_DESC) - nd0 == 2 && uroce_poll_cq(pr.s[1].rcq, 1, &wc) == 0,
	      "forged data of the active and a newer message: no_desc +%llu (want +2), a completion %s",
	      (unsigned long long)(port_drop(&pr.s[1], UROCE_DROP_NO_DESC) - nd0), "appeared or not");
	post_send_op(&pr.s[0], &pr.s[1], UROCE_WR_SEND, 3, 0, 3000, 0, 0, 0);
	REQUIRE(tr_wait(&pr, pr.s[1].rcq, &wc, 1000) == 0, "message 2");
	REQUIRE(uroce_qp_stats(pr.s[1].qp, &qs) == 0, "stats");
	CHECK(wc.wr_id == 102 && wc.byte_len == 3000 && wc.wc_flags == 0 && qs.be_preempted == 0,
	      "message 2 after the forgeries: wr_id %llu, %u bytes, flags 0x%x, %llu preempted", (unsigned long long)wc.wr_id,
	      wc.byte_len, wc.wc_flags, (unsigned long long)qs.be_preempted);
	printf("  keyed: a forged descriptor (bad_token) and forged data of the active and of a newer message "
	       "(no_desc) dropped, nothing preempted\n");
	loop_fabric_set_filter(pr.fab, 0, NULL, NULL);
	tr_close(&pr);
}

static void run_bad_args(void)
{
	struct tr_pair pr;
	struct tr_opts o;
	struct uroce_qp_init_attr ia;
	struct uroce_qp *q;
	struct uroce_sge sg;
	struct uroce_send_wr wr;

	be_opts(&o);
	tr_open(&pr, &o, 3, NULL, NULL);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = pr.s[0].scq;
	ia.recv_cq = pr.s[0].rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.rel.reliability = UROCE_REL_BE;
	ia.rel.timeout_us = 61000000;
	CHECK(uroce_qp_create(pr.s[0].pd, &ia, &q) == -EINVAL && strstr(uroce_last_error(), "timeout_us"),
	      "a 61 s deadline: %s", uroce_last_error());
	ia.rel.timeout_us = 0;
	ia.rel.imm_counter = 1;
	CHECK(uroce_qp_create(pr.s[0].pd, &ia, &q) == -EINVAL && strstr(uroce_last_error(), "imm_counter"),
	      "imm_counter on be: %s", uroce_last_error());
	ia.rel.imm_counter = 0;
	ia.qp_type = UROCE_QPT_UC;
	CHECK(uroce_qp_create(pr.s[0].pd, &ia, &q) == -EINVAL && strstr(uroce_last_error(), "UROCE_QPT_RC"),
	      "be on UC: %s", uroce_last_error());
	memset(&wr, 0, sizeof(wr));
	tr_sge(&sg, &pr.s[0], 0, 8);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_RDMA_READ;
	CHECK(uroce_post_send(pr.s[0].qp, &wr, NULL) == -EINVAL && strstr(uroce_last_error(), "READ"),
	      "READ on be: %s", uroce_last_error());
	wr.opcode = UROCE_WR_SEND;
	wr.timeout_us = 61000000;
	CHECK(uroce_post_send(pr.s[0].qp, &wr, NULL) == -EINVAL && strstr(uroce_last_error(), "timeout_us"),
	      "a send's 61 s deadline: %s", uroce_last_error());
	CHECK(uroce_qp_set_timeout(pr.s[0].qp, 0) == -EINVAL, "set_timeout 0");
	{
		struct tr_pair rc;
		struct tr_opts ro;

		tr_opts_default(&ro, UROCE_QPT_RC);
		tr_open(&rc, &ro, 4, NULL, NULL);
		CHECK(uroce_qp_set_timeout(rc.s[0].qp, 100) == -EINVAL && strstr(uroce_last_error(), "be"),
		      "set_timeout on rc: %s", uroce_last_error());
		tr_close(&rc);
	}
	CHECK(uroce_reliability_str(UROCE_REL_BE) && !strcmp(uroce_reliability_str(UROCE_REL_BE), "be"), "name");
	tr_close(&pr);
}

int main(void)
{
	size_t be = uroce_rel_state_bytes(UROCE_REL_BE), sr = uroce_rel_state_bytes(UROCE_REL_SR);

	printf("be state per QP: %zu bytes (OptiNIC: 52); sr: %zu; QP object: %zu\n", be, sr,
	       uroce_qp_state_bytes(UROCE_QPT_RC));
	CHECK(be > 0 && be <= 52, "be keeps %zu bytes per QP; OptiNIC's QP is 52", be);
	run_bad_args();
	run_preempt();
	run_deadlines();
	run_window();
	run_resync();
	run_loss(0, 11, false);
	run_loss(1e-3, 12, false);
	run_loss(1e-2, 13, false);
	run_loss(0, 21, true);
	run_loss(1e-3, 22, true);
	run_loss(1e-2, 23, true);
	run_keyed_forged();
	return test_done("tr_be");
}
