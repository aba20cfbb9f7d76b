/* SPDX-License-Identifier: MIT */
/* ec: erasure coding that falls back to sr (SDR-RDMA 4.1.2). A message is
 * cut into submessages of k data packets, each followed at once by m parity
 * packets (ec_code.c: Reed-Solomon through ISA-L, or XOR); a short last
 * submessage of kk < k packets carries ceil(kk m / k) (ec_parity_for), so a
 * small message pays parity in proportion to its data. The receiver
 * rebuilds lost data in place as soon as any decodable set of a
 * submessage is there, and then counts every PSN of the submessage as
 * arrived, so the sender sends nothing again. A submessage that cannot be
 * decoded once the fallback timeout has passed is named in a NACK, and sr
 * repairs its holes. Everything else is sr's (rel_sr.c and its sr_*.c).
 *
 * PSNs of a message that starts at PSN f: f = descriptor, then for each
 * submessage its data then its parity, then the descriptor once more. */
#include <errno.h>
#include <string.h>

#include "transport/rel/rel.h"
#include "transport/rel/sr/sr_ops.h"

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

uint32_t ec_psn_data(const struct sr_state *st, uint32_t first, uint32_t idx)
{
	return psn_add(first, 1 + idx + (idx / st->cfg.ec_k) * st->cfg.ec_m);
}

uint32_t ec_sub_parity(const struct sr_state *st, uint32_t npk, uint32_t sub)
{
	return ec_parity_for(&st->code, min_u32(st->cfg.ec_k, npk - sub * st->cfg.ec_k));
}

/* Only the last submessage may be short, so every one before it has m. */
uint32_t ec_psn_parity(const struct sr_state *st, uint32_t first, uint32_t npk, uint32_t q)
{
	uint32_t k = st->cfg.ec_k, m = st->cfg.ec_m, s = q / m;

	return psn_add(first, 1 + min_u32((s + 1) * k, npk) + s * m + q % m);
}

uint32_t ec_total_pkts(const struct sr_state *st, uint32_t npk)
{
	uint32_t nsub = (npk + st->cfg.ec_k - 1) / st->cfg.ec_k;

	return 2 + npk + (nsub ? (nsub - 1) * st->cfg.ec_m + ec_sub_parity(st, npk, nsub - 1) : 0);
}

/* --- sender ------------------------------------------------------------------ */

void ec_tx_encode(struct uroce_qp *qp, struct swqe *w, uint32_t sub, uint32_t first_ring_psn)
{
	struct sr_state *st = sr_of(qp);
	uint32_t k = st->cfg.ec_k, mtu = qp->mtu;
	uint32_t npk = npkts(w->length, mtu), np = ec_sub_parity(st, npkts(w->msg_len, mtu), sub);
	uint8_t *data[EC_MAX_K], *par[EC_MAX_M];

	for (uint32_t j = 0; j < k; j++) {
		uint32_t idx = sub * k + j, off = idx * mtu;
		uint8_t *buf = st->rx.scratch + (size_t)j * mtu;

		if (idx < npk && off + mtu <= w->length && w->num_sge == 1) {
			/* a whole chunk in one buffer: encode from it in place */
			data[j] = (uint8_t *)(uintptr_t)(w->sge[0].addr + off);
			continue;
		}
		data[j] = buf;
		if (idx < npk) {
			uint32_t len = min_u32(mtu, w->length - off);

			sr_tx_gather(w, w->msg_off + off, buf, len);
			memset(buf + len, 0, mtu - len);
		} else {
			memset(buf, 0, mtu); /* the last submessage is padded with zero chunks that are not sent */
		}
	}
	for (uint32_t j = 0; j < np; j++)
		par[j] = st->tx.par + (size_t)(psn_add(first_ring_psn, j) & st->tx.mask) * mtu;
	ec_encode(&st->code, mtu, data, par, np);
}

void ec_tx_nack(struct uroce_qp *qp, const uint8_t *b, uint32_t len)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint32_t msg, flags, first_sub, nbits, k = st->cfg.ec_k, hits = 0, lost = 0, held = 0;
	/* a packet already sent again goes once more at most once per RTT
	 * (the RTO floor before an RTT sample): a receiver's NACKs back off
	 * from its fallback timeout, so more come only from a forger */
	uint64_t now = ctx_clock(qp->ctx), gap = t->srtt ? t->srtt : st->rto_min_ns;

	msg = roce_get_be32(b);
	first_sub = roce_get_be16(b + 4);
	nbits = roce_get_be16(b + 6);
	flags = roce_get_be32(b + 8);
	if (nbits % 32 || nbits > SRW_NACK_MAX_BITS || len < SRW_NACK_FIXED + nbits / 8) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];
		const struct swqe *w = &qp->sq[p->sq_idx & qp->sq_mask];
		uint32_t s;

		if (!(w->sr_flags & SRW_F_SLOT) || w->msg_seq != msg)
			continue;
		hits++;
		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		if (p->kind == SRW_DESC) {
			if (!(flags & SRW_NACK_DESC))
				continue;
		} else if (p->kind == SRW_PARITY) {
			continue; /* parity is not sent again: the data it protects is */
		} else {
			s = p->off / qp->mtu / k;
			if (s < first_sub || s - first_sub >= nbits ||
			    !((b[SRW_NACK_FIXED + (s - first_sub) / 8] >> ((s - first_sub) % 8)) & 1))
				continue;
		}
		if (p->ntx > 1 && now - p->sent_ns < gap) {
			held++;
			continue;
		}
		/* from now on sr's: RACK and the RTO look after it */
		p->flags &= (uint8_t)~SRP_EC;
		sr_txp_lost(qp, p, SR_LOSS_NACK);
		lost++;
	}
	if (!hits) {
		ctx_count_drop(qp->ctx, UROCE_DROP_STALE_RESPONSE); /* names no message in flight */
		return;
	}
	if (held && !lost) {
		ctx_count_drop(qp->ctx, UROCE_DROP_CTRL_RATE); /* all it names went less than an RTT ago */
		return;
	}
	qp->stats.ec_nacks_rcvd++;
	ctx_kick(qp);
}

/* --- receiver ------------------------------------------------------------------ */

void ec_rx_parity(struct uroce_qp *qp, struct sr_rmsg *m, const struct roce_pkt *pkt, uint32_t q)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	uint32_t slot = pkt->psn & r->mask, s = q / st->cfg.ec_m;

	if (m->have_npk && (s * st->cfg.ec_k >= m->npk || q % st->cfg.ec_m >= ec_sub_parity(st, m->npk, s))) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	m->is_ec = true;
	memcpy(r->par + (size_t)slot * qp->mtu, pkt->payload, qp->mtu);
	r->par_msg[slot] = m->seq;
	r->par_idx[slot] = q;
	r->par_ok[slot] = 1;
	if (!m->have_first && m->have_npk) {
		m->first_psn = psn_add(pkt->psn, (uint32_t)-(int32_t)ec_psn_parity(st, 0, m->npk, q)) & ROCE_PSN_MASK;
		m->have_first = true;
	}
	sr_rx_mark_psn(qp, pkt->psn);
	ec_rx_sub(qp, m, s, true);
	sr_rx_check_done(qp, m);
}

/* Every PSN of submessage sub counts as arrived. */
static void mark_sub(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t sub, uint32_t kk)
{
	struct sr_state *st = sr_of(qp);

	if (!m->have_first)
		return; /* the message's end marks them all */
	for (uint32_t j = 0; j < kk; j++)
		sr_rx_count_psn(qp, ec_psn_data(st, m->first_psn, sub * st->cfg.ec_k + j));
	for (uint32_t j = 0, np = ec_sub_parity(st, m->npk, sub); j < np; j++)
		sr_rx_count_psn(qp, ec_psn_parity(st, m->first_psn, m->npk, sub * st->cfg.ec_m + j));
}

/* The parity store's slot holding parity q of m, or -1. With the
 * message's first PSN known it is where that PSN lands; else a search. */
static int32_t find_parity(const struct sr_state *st, const struct sr_rmsg *m, uint32_t q)
{
	const struct sr_rx *r = &st->rx;

	if (m->have_first && m->have_npk) {
		uint32_t i = ec_psn_parity(st, m->first_psn, m->npk, q) & r->mask;

		return r->par_ok[i] && r->par_msg[i] == m->seq && r->par_idx[i] == q ? (int32_t)i : -1;
	}
	for (uint32_t i = 0; i < r->nbits; i++)
		if (r->par_ok[i] && r->par_msg[i] == m->seq && r->par_idx[i] == q)
			return (int32_t)i;
	return -1;
}

void ec_rx_sub(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t sub, bool try_decode)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	uint32_t k = st->cfg.ec_k, em = st->cfg.ec_m, mtu = qp->mtu, kk, np, have = 0;
	uint8_t present[EC_MAX_N];
	uint8_t *chunks[EC_MAX_N];
	int32_t pslot[EC_MAX_M];
	bool failed = false;
	int n;

	if (!m->have_npk || sub * k >= m->npk || bit_get(m->subdone, sub))
		return;
	kk = min_u32(k, m->npk - sub * k);
	np = ec_sub_parity(st, m->npk, sub);
	for (uint32_t j = 0; j < kk; j++)
		have += bit_get(m->bits, sub * k + j);
	if (have == kk) {
		bit_set(m->subdone, sub);
		mark_sub(qp, m, sub, kk);
		return;
	}
	if (!try_decode)
		return; /* data still arriving in order: nothing to decode yet */
	memset(present, 0, sizeof(present));
	for (uint32_t j = 0; j < k; j++)
		present[j] = j >= kk || bit_get(m->bits, sub * k + j); /* padding chunks are known zeros */
	for (uint32_t j = 0; j < np; j++) {
		pslot[j] = find_parity(st, m, sub * em + j);
		if (pslot[j] >= 0) {
			present[k + j] = 1;
			chunks[k + j] = r->par + (size_t)pslot[j] * mtu;
		}
	}
	if (!ec_can_decode(&st->code, present, np))
		return;
	for (uint32_t j = 0; j < k; j++) {
		uint8_t *buf = r->scratch + (size_t)j * mtu;
		uint32_t len = j < kk ? sr_pkt_len(qp, m, sub * k + j) : 0;

		chunks[j] = buf;
		if (present[j] && len)
			sr_rx_read(qp, m, (sub * k + j) * mtu, buf, len);
		if (present[j])
			memset(buf + len, 0, mtu - len);
	}
	uint64_t built = st->code.dec_misses;

	n = ec_decode(&st->code, mtu, chunks, present, np);
	qp->stats.ec_decode_tables += st->code.dec_misses - built;
	if (n <= 0)
		return;
	for (uint32_t j = 0; j < kk; j++) {
		uint32_t idx = sub * k + j, len;

		if (present[j])
			continue;
		len = sr_pkt_len(qp, m, idx);
		if (!sr_rx_place(qp, m, idx * mtu, chunks[j], len)) {
			failed = true; /* outside the WRITE's region: dropped, counted */
			continue;
		}
		sr_msg_mark(m, idx);
		m->nrecv++;
		m->placed += len;
		qp->stats.ec_recovered++;
		sr_rx_note_pkt(qp, m, idx);
	}
	if (failed)
		return;
	for (uint32_t j = 0; j < np; j++)
		if (pslot[j] >= 0)
			r->par_ok[pslot[j]] = 0; /* its parity slots are free again */
	bit_set(m->subdone, sub);
	mark_sub(qp, m, sub, kk);
}

/* PSNs a later arrival must lead a packet by before the packet counts as
 * lost for an early NACK: reordering over sprayed paths stays below it. */
static uint32_t ec_reorder_pkts(const struct sr_state *st)
{
	return st->cfg.ec_m > 8 ? st->cfg.ec_m : 8;
}

/* Whether submessage sub of m is known to be undecodable: with every
 * packet of it that a later arrival leads by ec_reorder_pkts counted as
 * lost, and the others still given the benefit of the doubt, too few
 * remain. Needs the message's layout (have_first, have_npk). */
static bool sub_undecodable(const struct sr_state *st, const struct sr_rmsg *m, uint32_t sub)
{
	uint32_t k = st->cfg.ec_k, em = st->cfg.ec_m, kk = min_u32(k, m->npk - sub * k);
	uint32_t np = ec_sub_parity(st, m->npk, sub), reo = ec_reorder_pkts(st);
	uint8_t present[EC_MAX_N];
	bool any_lost = false;

	/* nothing of it is lost before a later arrival leads its first PSN */
	if (roce_psn_diff(st->rx.high, ec_psn_data(st, m->first_psn, sub * k)) < (int32_t)reo)
		return false;
	memset(present, 1, sizeof(present));
	for (uint32_t j = 0; j < kk; j++) {
		uint32_t idx = sub * k + j;

		if (bit_get(m->bits, idx) ||
		    roce_psn_diff(st->rx.high, ec_psn_data(st, m->first_psn, idx)) < (int32_t)reo)
			continue;
		present[j] = 0;
		any_lost = true;
	}
	if (!any_lost)
		return false;
	for (uint32_t j = 0; j < np; j++)
		if (roce_psn_diff(st->rx.high, ec_psn_parity(st, m->first_psn, m->npk, sub * em + j)) >= (int32_t)reo)
			present[k + j] = find_parity(st, m, sub * em + j) >= 0;
	return !ec_can_decode(&st->code, present, np);
}

/* May submessage sub of m be given up on: did anything sent after it arrive? */
static bool sub_overdue(const struct sr_state *st, const struct sr_rmsg *m, uint32_t sub)
{
	uint32_t nsub = (m->npk + st->cfg.ec_k - 1) / st->cfg.ec_k;

	if (sub + 1 == nsub || !m->have_first)
		return true; /* the last one: the idle time alone decides */
	return roce_psn_diff(st->rx.high, ec_psn_parity(st, m->first_psn, m->npk,
	                                                sub * st->cfg.ec_m + ec_sub_parity(st, m->npk, sub) - 1)) > 0;
}

/* The fallback: the message has been silent for the fallback timeout
 * (a repeated NACK waits longer each time: the repair needs an RTT). */
static bool nack_due(const struct sr_state *st, const struct sr_rmsg *m, uint64_t now)
{
	if (!m->bound || m->done || !m->last_rx_ns || !m->is_ec)
		return false;
	if (now - m->last_rx_ns < st->fto_ns)
		return false;
	return !m->nack_ns || now - m->nack_ns >= st->fto_ns << (m->nacks < 6 ? m->nacks : 6);
}

/* The first undecodable submessage of m at or after m->nack_sub, or
 * UINT32_MAX: later arrivals show it cannot be rebuilt, so its NACK need
 * not wait for the message to fall silent. */
static uint32_t first_undecodable(const struct sr_state *st, const struct sr_rmsg *m)
{
	uint32_t nsub;

	if (!m->bound || m->done || !m->is_ec || !m->have_first || !m->have_npk)
		return UINT32_MAX;
	nsub = (m->npk + st->cfg.ec_k - 1) / st->cfg.ec_k;
	for (uint32_t s = m->nack_sub; s < nsub; s++) {
		if (bit_get(m->subdone, s))
			continue;
		if (roce_psn_diff(st->rx.high, ec_psn_data(st, m->first_psn, s * st->cfg.ec_k)) < (int32_t)ec_reorder_pkts(st))
			break; /* nothing later is led far enough either */
		if (sub_undecodable(st, m, s))
			return s;
	}
	return UINT32_MAX;
}

int ec_rx_nacks(struct uroce_qp *qp, uint64_t now)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	/* the early search runs only when a new highest PSN arrived (and
	 * again after a pass whose NACK did not fit in the TX stage) */
	bool scan = r->high != r->ec_scan_high;

	for (uint32_t seq = r->msg_cum; seq != r->bind_next; seq++) {
		struct sr_rmsg *m = &r->slot[seq % SR_MSG_WIN];
		uint8_t b[SRW_CTRL_HDR_LEN + SRW_NACK_FIXED + SRW_NACK_MAX_BITS / 8];
		uint32_t first = UINT32_MAX, nsub, nbits = 0, flags = 0, early = UINT32_MAX, last = 0;
		bool fallback;
		int rc;

		if (m->seq != seq)
			continue;
		fallback = nack_due(st, m, now);
		if (!fallback && scan)
			early = first_undecodable(st, m);
		if (!fallback && early == UINT32_MAX)
			continue;
		memset(b, 0, sizeof(b));
		if (!m->have_npk) {
			flags |= SRW_NACK_DESC;
		} else {
			nsub = (m->npk + st->cfg.ec_k - 1) / st->cfg.ec_k;
			for (uint32_t s = fallback ? 0 : early; s < nsub; s++) {
				if (bit_get(m->subdone, s))
					continue;
				/* (early: first_undecodable already found it so) */
				if (fallback ? !sub_overdue(st, m, s) : s != early && !sub_undecodable(st, m, s))
					continue;
				if (first == UINT32_MAX)
					first = s;
				if (s - first >= SRW_NACK_MAX_BITS)
					break;
				b[SRW_CTRL_HDR_LEN + SRW_NACK_FIXED + (s - first) / 8] |= (uint8_t)(1u << ((s - first) % 8));
				nbits = ((s - first) / 32 + 1) * 32;
				last = s;
			}
			if (fallback && m->desc_expected && !m->have_desc)
				flags |= SRW_NACK_DESC;
		}
		if (!nbits && !flags)
			continue;
		srw_ctrl_hdr(b, SRW_CTRL_NACK, (uint16_t)(SRW_CTRL_HDR_LEN + SRW_NACK_FIXED + nbits / 8), qp->tok_remote);
		roce_put_be32(b + SRW_CTRL_HDR_LEN, seq);
		roce_put_be16(b + SRW_CTRL_HDR_LEN + 4, (uint16_t)(first == UINT32_MAX ? 0 : first));
		roce_put_be16(b + SRW_CTRL_HDR_LEN + 6, (uint16_t)nbits);
		roce_put_be32(b + SRW_CTRL_HDR_LEN + 8, flags);
		rc = sr_send_ctrl(qp, b, SRW_CTRL_HDR_LEN + SRW_NACK_FIXED + nbits / 8);
		if (rc)
			return rc;
		if (nbits && last + 1 > m->nack_sub)
			m->nack_sub = last + 1;
		if (fallback) {
			m->nack_ns = now;
			m->nacks++;
		} else {
			qp->stats.ec_nacks_early++;
		}
		qp->stats.ec_nacks_sent++;
	}
	r->ec_scan_high = r->high;
	return 0;
}

uint64_t ec_rx_fto_next(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	uint64_t next = UINT64_MAX;

	for (uint32_t seq = r->msg_cum; seq != r->bind_next; seq++) {
		const struct sr_rmsg *m = &r->slot[seq % SR_MSG_WIN];
		uint64_t d;

		if (!m->bound || m->seq != seq || m->done || !m->last_rx_ns || !m->is_ec)
			continue;
		d = m->last_rx_ns + st->fto_ns;
		if (m->nack_ns && m->nack_ns + (st->fto_ns << (m->nacks < 6 ? m->nacks : 6)) > d)
			d = m->nack_ns + (st->fto_ns << (m->nacks < 6 ? m->nacks : 6));
		if (d < next)
			next = d;
	}
	return next;
}

SR_REL_OPS_DEFINE(ec, true); /* rel_ec_ops */
