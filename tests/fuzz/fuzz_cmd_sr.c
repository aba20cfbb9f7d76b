/* SPDX-License-Identifier: MIT */
/* The responder fuzz target's commands for the sr and ec QPs (enum
 * sr_cmd): the forged peer's data, descriptors, parity, whole messages,
 * SACKs, NACKs and control packets, and local sends, receive handles and
 * streams. */
#include "fuzz_responder.h"

/* ---- what the QPs sent and completed (drain) ---- */

/* A data packet the sr or ec QP's sender sent to its peer: the peer's
 * SACKs are forged relative to the newest PSN sent. */
void note_sr_sent(const uint8_t *frame, uint32_t len)
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

/* A receive completion of the sr or ec QP: counted, and kept for the
 * message commands to check. */
void sr_wc(unsigned i, const struct uroce_wc *wc)
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

/* ---- the forged peer of QP_SR and QP_EC ---- */

struct sr_peer *peer_of(unsigned qi)
{
	if (!is_sr(qi))
		die("peer_of: not an sr/ec QP");
	return &fz.sr[qi - QP_SR];
}

/* Message payloads: a pattern that differs from one MTU to the next, so
 * a chunk rebuilt from the wrong data shows. */
void fill_msg(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t k = 0; k < len; k++)
		p[k] = (uint8_t)(seed * 41u + k * 7u + (k >> 8) * 13u + 1u);
}

/* Message numbers single packets used: a message made of those is not
 * the forged sender's own, and its bytes are not checked. */
void touch(unsigned qi, uint32_t msg)
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
void put_desc(uint8_t *d, uint8_t version, uint8_t op, uint8_t ec, uint32_t len, uint32_t imm, uint32_t rkey,
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

uint32_t xorshift32(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* An area of guarded memory holds exactly what was sent. */
void check_bytes(const uint8_t *now, const uint8_t *want, uint32_t len, const char *what, unsigned qi,
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
			/* a short last submessage carries parity in proportion */
			for (uint32_t j = 0; j < ec_parity_for(&fz.code, i % EC_K + 1); j++)
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
			ec_encode(&fz.code, mtu, data, par,
			          ec_parity_for(&fz.code, npk - s * EC_K < EC_K ? npk - s * EC_K : EC_K));
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

/* A control packet from the forged peer of an sr, ec or be QP to its
 * control QPN (to_data: its data QPN); flags: addressing and a bad ICRC,
 * as pkt_addressing and flags_bad_icrc read them. */
void fz_send_ctrl(unsigned qi, const uint8_t *b, uint32_t len, uint8_t op, uint8_t flags, bool to_data)
{
	static uint8_t buf[1024];
	uint32_t *psn = qi == QP_BE ? &fz.be.ctrl_psn : &peer_of(qi)->ctrl_psn;
	struct roce_pkt p;

	b = fz_token(buf, sizeof(buf), b, len, qi, fz.raw_token);
	pkt_init(&p, qi);
	if (!to_data)
		p.dqpn = (uroce_qp_num(fz.qp[qi]) + 1) & ROCE_QPN_MASK;
	p.opcode = op;
	p.psn = (*psn)++ & ROCE_PSN_MASK;
	p.payload = b;
	p.payload_len = len;
	pkt_addressing(&p, flags);
	send_pkt(&p, flags_bad_icrc(flags));
}

/* Control header, and the payload cut short by flags bits 0-1 = 3. */
uint32_t ctrl_hdr(uint8_t *b, uint8_t type, uint32_t len, uint8_t flags, uint8_t cut)
{
	srw_ctrl_hdr(b, type, len, 0); /* fz_send_ctrl puts the token in */
	if ((flags & 3) == 3)
		return cut % 8u < len ? len - 1 - cut % 8u : 0;
	return len;
}

/* The end of a SACK or NACK in b (size bytes, header and fixed part
 * written): the bitmap of nbits (all ones, or bytes from the input, at
 * most max_bits), the header, and the packet to the QP's sender. */
static void send_bitmap_ctrl(struct reader *r, unsigned qi, uint8_t *b, size_t size, uint8_t type, uint32_t fixed,
                             uint32_t nbits, uint32_t max_bits, bool ones, uint8_t flags, uint8_t cut)
{
	uint32_t bytes = nbits / 8 < max_bits / 8 ? nbits / 8 : max_bits / 8, len;

	for (uint32_t k = 0; k < bytes; k++)
		b[SRW_CTRL_HDR_LEN + fixed + k] = ones ? 0xff : rd8(r);
	len = SRW_CTRL_HDR_LEN + fixed + nbits / 8;
	len = ctrl_hdr(b, type, len, flags, cut);
	fz_send_ctrl(qi, b, len < size ? len : size, ROCE_TR_UC | ROCE_OP_SEND_ONLY, flags, false);
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
	uint32_t x = cumsel & 31, cum, msg_cum, limit, nbits;

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
	memset(b, 0, sizeof(b));
	roce_put_be32(body, cum & ROCE_PSN_MASK);
	roce_put_be32(body + 4, msg_cum);
	roce_put_be32(body + 8, (uint32_t)msgbits << (msgsel & 32 ? 16 : 0));
	roce_put_be32(body + 12, sp->dups);
	roce_put_be32(body + 16, (sp->tx_nxt - 1 - (dupsel >> 3 & 31)) & ROCE_PSN_MASK);
	roce_put_be32(body + 20, limit);
	roce_put_be16(body + 24, (uint16_t)nbits);
	send_bitmap_ctrl(r, qi, b, sizeof(b), SRW_CTRL_SACK, SRW_SACK_FIXED, nbits, SRW_SACK_MAX_BITS, ones, flags, msgsel);
}

/* A NACK to the QP's sender: 5 bytes after the command, then the bitmap
 * (ones with the variant bit). */
static void cmd_sr_nack(struct reader *r, unsigned qi, bool ones)
{
	uint8_t msgsel = rd8(r), subsel = rd8(r), nbsel = rd8(r), flagsel = rd8(r), flags = rd8(r);
	struct sr_peer *sp = peer_of(qi);
	static uint8_t b[SRW_CTRL_HDR_LEN + SRW_NACK_FIXED + SRW_NACK_MAX_BITS / 8];
	uint8_t *body = b + SRW_CTRL_HDR_LEN;
	uint32_t msg, nbits;

	switch (msgsel >> 6) {
	case 1: msg = sp->tx_msgs + (msgsel & 7); break; /* not posted */
	case 2: msg = rd32(r); break;
	default: msg = sp->tx_msgs - 1 - (msgsel & 7); break; /* a recent one */
	}
	nbits = nbsel >> 6 == 3 ? (nbsel & 32 ? rd16(r) : nbsel & 63u) : (nbsel & 3) * 32u;
	memset(b, 0, sizeof(b));
	roce_put_be32(body, msg);
	roce_put_be16(body + 4, subsel & 0x80 ? rd16(r) : subsel & 7);
	roce_put_be16(body + 6, (uint16_t)nbits);
	roce_put_be32(body + 8, (flagsel & 1 ? SRW_NACK_DESC : 0) | (flagsel & 0x80 ? rd32(r) : 0));
	send_bitmap_ctrl(r, qi, b, sizeof(b), SRW_CTRL_NACK, SRW_NACK_FIXED, nbits, SRW_NACK_MAX_BITS, ones, flags, flagsel);
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
void sr_release(unsigned qi)
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
	/* two pieces: the sender gathers, ec encodes from a copy */
	local_sges(&wr, sg, length, off, sel & 0x10);
	wr.wr_id = sel;
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

const struct fz_mode fz_mode_sr = { SR_CMD_MASK, SR_CMD_BITS, cmd_sr };
