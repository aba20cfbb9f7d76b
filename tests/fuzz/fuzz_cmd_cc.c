/* SPDX-License-Identifier: MIT */
/* The responder fuzz target's congestion commands (enum cc_cmd): CNPs, IP
 * TOS and trimming of the next command's packets, TRIM, RTS and PULL
 * control packets, resets and re-creation of the sr/ec QPs; and the
 * checks of CNP spacing and of the EQDS sender's credit. */
#include "fuzz_responder.h"

/* ---- what the context sent, and the checks after every step ---- */

/* An RTS the sr or ec QP's sender sent: the credit it may take is bounded
 * by the largest want (plus a quantum). */
void note_rts(const uint8_t *frame, uint32_t len)
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
/* The notification point sends at most one CNP per CNP_MIN_GAP_NS per QP:
 * after every progress call, a QP whose CNP count moved by d must date its
 * last CNP (the engine's time of the receive burst it answers) at least d
 * x 4 us after the one before. */
void cnp_check(void)
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
void eqds_check(void)
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

/* ---- the commands ---- */

/* QP_SR is one of its twins for the whole input: the plain one, or the one
 * that runs EQDS. The other waits in RESET. */
void sr_twin_pick(bool eqds)
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
void cmd_cc_reset(struct reader *r)
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

const struct fz_mode fz_mode_cc = { CC_CMD_MASK, CC_CMD_BITS, cmd_cc };
