/* SPDX-License-Identifier: MIT */
/* The responder fuzz target's commands for the be QP (enum be_cmd): the
 * forged peer's packets, whole messages (some late), VOTEs and control
 * packets, local sends with deadlines, and the timeout group's exchange. */
#include "fuzz_responder.h"

/* ---- what the QP completed (drain) ---- */

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

void be_wc(const struct uroce_wc *wc)
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

void be_send_wc(const struct uroce_wc *wc)
{
	if (wc->status != UROCE_WC_SUCCESS)
		return;
	be_flags_check(wc, "send");
	if (wc->wc_flags & UROCE_WC_TIMEOUT)
		fz.st.be_send_timeout++;
	else
		fz.st.be_send_ok++;
}

/* ---- the forged peer of QP_BE ---- */

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
	fz_send_ctrl(QP_BE, b, len, sel & 0x40 ? ROCE_TR_UC | ROCE_OP_SEND_ONLY_IMM : ROCE_TR_UC | ROCE_OP_SEND_ONLY, 0,
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
	fz_send_ctrl(QP_BE, b, len, ops[opsel & 7], 0, n & 0x80);
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
	local_sges(&wr, sg, length, off, sel & 4);
	wr.wr_id = 0xbe00u | sel;
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

const struct fz_mode fz_mode_be = { BE_CMD_MASK, BE_CMD_BITS, cmd_be };
