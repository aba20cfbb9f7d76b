/* SPDX-License-Identifier: MIT */
/* The responder fuzz target's commands for the RC, UC and UD QPs: forged
 * packets, multi-packet messages, raw frames, local work requests, time
 * jumps and region revocations (enum cmd). */
#include "fuzz_responder.h"

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

static void cmd_ib(struct reader *r, uint8_t cmd)
{
	switch (cmd & 15) {
	case CMD_MSG:
	case CMD_MSG2: cmd_msg(r); break;
	case CMD_RAW: cmd_raw(r, false); break;
	case CMD_RAW_L4: cmd_raw(r, true); break;
	case CMD_POST: cmd_post(r); break;
	case CMD_TIME: cmd_time(r); break;
	case CMD_REVOKE:
		/* a quarter of the time: deregistration walks the QP table,
		 * which would otherwise take most of the fuzzer's time */
		if ((rd8(r) & 3) == 0)
			revoke_toggle();
		else
			cmd_pkt(r);
		break;
	default: cmd_pkt(r); break;
	}
}

/* every command byte the other modes leave */
const struct fz_mode fz_mode_ib = { 0, 0, cmd_ib };
