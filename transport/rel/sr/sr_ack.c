/* SPDX-License-Identifier: MIT */
/* sr's acknowledgments. The receiver's side: the SACK it sends (and any
 * control packet) on the peer's control QP. The sender's side: what a SACK
 * acknowledges is retired, feeding the RTT, RACK's loss detection and the
 * credits of probes; WQEs whose packets are all acknowledged complete; the
 * control QP's packets are checked and dispatched here. */
#include <string.h>

#include "transport/failover/failover.h"
#include "transport/rel/rel.h"
#include "transport/rel/sr/sr_internal.h"
#include "transport/core/mw.h"
#include "transport/core/seg.h"

/* --- receiving: SACK generation ------------------------------------------- */

int sr_send_ctrl(struct uroce_qp *qp, const uint8_t *body, uint32_t len)
{
	struct sr_state *st = sr_of(qp);
	const struct dest *d = &qp->d;
	uint16_t sport = qp->sport;
	int rc;

	/* over a QP's paths in turn: a dead one loses a few cumulative SACKs
	 * and RTSs, never all of them */
	if (st->ps.n > 1) {
		unsigned i = sr_pc_ctrl_path(qp);

		sport = st->ps.p[i].sport;
		d = st->ps.p[i].port == qp->port ? &qp->d : &st->pdest[st->ps.p[i].port];
	}
	rc = ctx_send_seg(qp->ctx, &(struct seg){ .qp = qp, .d = d, .sport = sport, .op = SEG_SEND, .dqpn = qp_ctrl_dqpn(qp),
	                                          .psn = st->tx.ctrl_psn, .len = len, .buf = body });
	if (rc)
		return rc;
	st->tx.ctrl_psn = psn_add(st->tx.ctrl_psn, 1);
	qp->tx_packets++;
	return 0;
}

int sr_send_sack(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_SACK_FIXED + SRW_SACK_MAX_BITS / 8];
	uint32_t nbits = (st->cfg.window_pkts + 31) & ~31u, msg_bits = 0, len;
	int rc;

	if (nbits > SRW_SACK_MAX_BITS)
		nbits = SRW_SACK_MAX_BITS;
	len = SRW_CTRL_HDR_LEN + SRW_SACK_FIXED + nbits / 8;
	memset(b, 0, len);
	srw_ctrl_hdr(b, SRW_CTRL_SACK, (uint16_t)len, qp->tok_remote);
	roce_put_be32(b + SRW_CTRL_HDR_LEN, r->cum);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 4, r->msg_cum);
	for (uint32_t i = 0; i < 32; i++) {
		const struct sr_rmsg *m = &r->slot[(r->msg_cum + 1 + i) % SR_MSG_WIN];

		if (i + 1 < SR_MSG_WIN && m->bound && m->seq == r->msg_cum + 1 + i && m->done)
			msg_bits |= 1u << i;
	}
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 8, msg_bits);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 12, r->dups);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 16, r->dup_psn);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 20, sr_rx_msg_limit(qp));
	roce_put_be16(b + SRW_CTRL_HDR_LEN + 24, (uint16_t)nbits);
	if (r->ask_rx_ns) {
		/* how long the asking packet waited for this SACK: Swift's
		 * endpoint delay, kept out of its fabric delay */
		uint64_t hold = (st->tx.now > r->ask_rx_ns ? st->tx.now - r->ask_rx_ns : 0) >> SRW_SACK_HOLD_SHIFT;

		roce_put_be16(b + SRW_CTRL_HDR_LEN + 26, (uint16_t)(hold > 0xffff ? 0xffff : hold));
	}
	/* a byte of the ring at a time where it does not straddle a word
	 * or the ring's end (almost always), a bit at a time elsewhere */
	for (uint32_t i = 0; i < nbits; i += 8) {
		uint32_t pos = (r->cum + 1 + i) & r->mask; /* the ring divides the PSN space */
		uint8_t v = 0;

		if ((pos & 63) <= 56 && pos + 8 <= r->nbits)
			v = (uint8_t)(r->bits[pos >> 6] >> (pos & 63));
		else
			for (uint32_t k = 0; k < 8; k++)
				v |= (uint8_t)(bit_get(r->bits, (pos + k) & r->mask) << k);
		b[SRW_CTRL_HDR_LEN + SRW_SACK_FIXED + i / 8] = v;
	}
	rc = sr_send_ctrl(qp, b, len);
	if (rc)
		return rc;
	r->sack_pending = false;
	r->ask_rx_ns = 0;
	qp->stats.sacks_sent++;
	if (r->fan_due && st->ps.n > 1 && st->tx.now - r->fan_ns >= SR_SACK_FAN_GAP_NS) {
		/* A copy of what arrived: the sender resent it, so SACKs may be
		 * dying on paths this end cannot tell apart (it sends no data
		 * on them, so it never learns which are dead). This one goes
		 * on every path too, at most SR_SACK_FAN_MAX and once per
		 * SR_SACK_FAN_GAP_NS: SACKs are cumulative, so the copies are
		 * harmless, and one through a live path keeps the sender going. */
		r->fan_ns = st->tx.now;
		qp->stats.sacks_sent += sr_pc_send_ctrl_copies(qp, b, len, sr_pc_fan_paths(qp) - 1);
	}
	r->fan_due = false;
	return 0;
}

/* --- ACKing the sender's WQEs ------------------------------------------------ */

/* Complete the WQEs at the tail whose packets are all acknowledged. */
void sr_retire(struct uroce_qp *qp)
{
	while (qp->sq_tail != qp->sq_cur) {
		struct swqe *w = sr_wqe_at(qp, qp->sq_tail);

		if (w->state != SWQE_SENT || w->unacked)
			break;
		if (wr_is_local(w->opcode)) {
			if (!qp_local_retire(qp, w))
				return; /* its failure ended the QP */
			continue;
		}
		qp->rel->complete(qp, w, UROCE_WC_SUCCESS);
		qp->sq_tail++;
	}
}

void sr_txp_lost(struct uroce_qp *qp, struct sr_txp *p, enum sr_loss why)
{
	struct sr_tx *t = &sr_of(qp)->tx;

	sr_pc_lost(qp, p, why, ctx_clock(qp->ctx));
	p->flags |= SRP_LOST;
	t->nlost++;
}

static void rtt_sample(struct sr_state *st, uint64_t rtt)
{
	struct sr_tx *t = &st->tx;
	uint64_t rto;

	if (!t->srtt) {
		t->srtt = rtt;
		t->rttvar = rtt / 2;
	} else {
		uint64_t d = rtt > t->srtt ? rtt - t->srtt : t->srtt - rtt;

		t->rttvar = (3 * t->rttvar + d) / 4;
		t->srtt = (7 * t->srtt + rtt) / 8;
	}
	if (!t->min_rtt || rtt < t->min_rtt)
		t->min_rtt = rtt;
	rto = st->cfg.rto_rtts ? st->cfg.rto_rtts * t->srtt : t->srtt + 4 * t->rttvar;
	if (rto < st->rto_min_ns)
		rto = st->rto_min_ns;
	if (rto > SR_RTO_MAX_NS)
		rto = SR_RTO_MAX_NS;
	t->rto = rto;
}

static void rtt_stats(struct uroce_qp *qp)
{
	qp->stats.srtt_ns = sr_of(qp)->tx.srtt;
	qp->stats.rto_ns = sr_of(qp)->tx.rto;
}

/* RACK's reordering window: a quarter of the smallest RTT, or more when
 * packets sent once were seen arriving that much behind later ones. */
static uint64_t reo_wnd(const struct sr_tx *t)
{
	uint64_t w = t->min_rtt / 4;

	if (t->reo_max + t->reo_max / 4 > w)
		w = t->reo_max + t->reo_max / 4;
	return w;
}

/* RACK: packets sent before the newest acknowledged one are lost once the
 * RTT plus the reordering window has passed since they left. Returns the
 * earliest time one of the others would be. */
uint64_t sr_rack_detect(struct uroce_qp *qp, uint64_t now)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint64_t next = UINT64_MAX, wnd = reo_wnd(t);

	if (st->cfg.loss != UROCE_LOSS_RACK || !t->rack_xmit)
		return next;
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];
		uint64_t when;

		if (p->first_ns > t->rack_xmit)
			break; /* first sends go in PSN order: neither this nor any later one went before it */
		if (p->flags & (SRP_SACKED | SRP_LOST | SRP_EC))
			continue;
		if (p->sent_ns > t->rack_xmit || (p->sent_ns == t->rack_xmit && roce_psn_diff(psn, t->rack_psn) >= 0))
			continue; /* not sent before the newest delivered one */
		when = p->sent_ns + t->rack_rtt + wnd;
		if (when <= now) {
			sr_txp_lost(qp, p, SR_LOSS_RACK);
			qp->stats.rack_losses++;
		} else if (when < next) {
			next = when;
		}
	}
	return next;
}

/* The first set bit at or after j of a SACK bitmap (bit j = byte j / 8,
 * bit j % 8), or nbits; zero bytes are skipped whole. */
static uint32_t sack_next_bit(const uint8_t *b, uint32_t nbits, uint32_t j)
{
	const uint8_t *map = b + SRW_SACK_FIXED;

	while (j < nbits) {
		uint8_t v = (uint8_t)(map[j / 8] >> (j % 8));

		if (v)
			return j + (uint32_t)__builtin_ctz(v);
		j = (j / 8 + 1) * 8;
	}
	return nbits;
}

/* What one SACK acknowledged, for the controller. */
struct sack_sum {
	uint32_t bytes, pkts;
};

/* One PSN a SACK acknowledges: retire it, and feed RACK, the RTT, the
 * path and the controller. */
static void sack_one(struct uroce_qp *qp, uint32_t psn, uint64_t now, const struct sr_txp **newest, bool *progress,
                     struct sack_sum *sum)
{
	struct sr_tx *t = &sr_of(qp)->tx;
	struct sr_txp *p = &t->ring[psn & t->mask];

	if (p->flags & SRP_SACKED)
		return;
	if (p->flags & SRP_CCIN) {
		sum->bytes += p->len;
		sum->pkts++;
		sr_pc_acked(qp, p, now);
	}
	sr_txp_acked(qp, p);
	*progress = true;
	if (p->ntx == 1) {
		if (!*newest || p->sent_ns >= (*newest)->sent_ns)
			*newest = p;
		/* sent before the newest packet delivered earlier and only
		 * arriving now: that much reordering is real */
		if (t->rack_xmit > p->sent_ns && t->rack_ack_ns && now - t->rack_ack_ns > t->reo_max)
			t->reo_max = now - t->rack_ack_ns;
	}
	if (p->sent_ns > t->rack_xmit || (p->sent_ns == t->rack_xmit && roce_psn_diff(psn, t->rack_psn) > 0)) {
		/* a retransmission acknowledged sooner than an RTT may answer its first copy */
		if (p->ntx == 1 || now - p->sent_ns >= t->min_rtt) {
			t->rack_xmit = p->sent_ns;
			t->rack_psn = psn;
			t->rack_rtt = now - p->sent_ns;
			t->rack_ack_ns = now;
		}
	}
}

/* Probes sent beyond the receiver's receives were dropped there: once it
 * has receives for them, send them again at once. */
static void credit_arrived(struct uroce_qp *qp, uint64_t now)
{
	struct sr_tx *t = &sr_of(qp)->tx;

	/* no probe in flight (the usual case: every SACK raises the limit) */
	if (!t->probe_any || roce_psn_diff(t->probe_last, t->una) < 0)
		return;
	for (uint32_t psn = t->una; psn != psn_add(t->probe_last, 1); psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];
		const struct swqe *w = sr_wqe_at(qp, p->sq_idx);

		if (!(p->flags & SRP_NOCREDIT) || (int32_t)(w->msg_seq - t->peer_msg_limit) >= 0)
			continue;
		p->flags &= (uint8_t)~SRP_NOCREDIT;
		/* one sent an RTT ago and not acknowledged found no receive */
		if (!(p->flags & (SRP_SACKED | SRP_LOST)) && t->srtt && now - p->sent_ns >= t->srtt)
			sr_txp_lost(qp, p, SR_LOSS_NOCREDIT);
	}
}

/* ec: the receiver has finished these messages, so their parity and
 * descriptors that were never acknowledged (lost, or not needed once the
 * data was whole) are done with. True if any was. */
static bool ec_msgs_done(struct uroce_qp *qp, uint32_t msg_cum, uint32_t msg_bits)
{
	struct sr_tx *t = &sr_of(qp)->tx;
	bool any = false;

	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];
		const struct swqe *w = sr_wqe_at(qp, p->sq_idx);
		uint32_t ahead = w->msg_seq - msg_cum;

		if ((p->flags & SRP_SACKED) || !(p->flags & SRP_EC) || !(w->sr_flags & SRW_F_SLOT))
			continue;
		if ((int32_t)ahead < 0 || (ahead >= 1 && ahead <= 32 && ((msg_bits >> (ahead - 1)) & 1))) {
			sr_txp_acked(qp, p);
			any = true;
		}
	}
	return any;
}

static void on_sack(struct uroce_qp *qp, const uint8_t *b, uint32_t len, uint8_t ttl)
{
	struct sack_sum sum = { 0, 0 };
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint32_t cum = roce_get_be32(b), msg_cum = roce_get_be32(b + 4), dups = roce_get_be32(b + 12), dup_psn = roce_get_be32(b + 16), nbits;
	uint32_t msg_limit;
	uint64_t now = ctx_clock(qp->ctx), at;
	const struct sr_txp *newest = NULL;
	bool progress = false;
	int32_t d_nxt = roce_psn_diff(cum, t->nxt);

	msg_limit = roce_get_be32(b + 20);
	nbits = roce_get_be16(b + 24);
	if (nbits % 32 || nbits > SRW_SACK_MAX_BITS || len < SRW_SACK_FIXED + nbits / 8) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	/* acknowledging what was never sent is forged; one from before the
	 * oldest packet the ring can have held is stale (a reordered SACK is
	 * at most a window behind): neither moves anything */
	if (d_nxt > 0 || roce_psn_diff(cum, t->una) < -(int32_t)(t->mask + 1)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_STALE_RESPONSE);
		return;
	}
	if ((int32_t)(msg_cum - __atomic_load_n(&st->tx.msg_post, __ATOMIC_RELAXED)) > 0) {
		ctx_count_drop(qp->ctx, UROCE_DROP_STALE_RESPONSE);
		return;
	}
	qp->stats.sacks_rcvd++;
	t->last_ack_ns = now;
	if ((int32_t)(msg_cum - t->peer_msg_cum) > 0)
		t->peer_msg_cum = msg_cum;
	/* the credits: a receiver posts receives for messages to come, but a
	 * sender starts none past the slot window ahead of what it posted, so
	 * a limit further out (a forger's, or an SRQ's 2^30) only moves it there */
	{
		uint32_t most = __atomic_load_n(&st->tx.msg_post, __ATOMIC_RELAXED) + SR_MSG_WIN;

		if ((int32_t)(msg_limit - most) > 0)
			msg_limit = most;
	}
	if ((int32_t)(msg_limit - t->peer_msg_limit) > 0 || !t->have_limit) {
		t->peer_msg_limit = msg_limit;
		t->have_limit = true;
		credit_arrived(qp, now);
	}
	if ((int32_t)(dups - t->peer_dups) > 0) {
		/* the receiver saw a copy of what it had (DSACK): if that copy was
		 * a retransmission, it was not needed, and reordering is larger
		 * than RACK's window assumed */
		uint32_t back = (t->nxt - dup_psn) & ROCE_PSN_MASK;
		const struct sr_txp *dp = &t->ring[dup_psn & t->mask];

		t->peer_dups = dups;
		/* the window widens at most once per RTT (RFC 8985 7.2): a
		 * duplicate anyone can send behind the receiver's cumulative PSN
		 * must not grow it at the rate the forger sends */
		bool spurious = back >= 1 && back <= t->mask + 1 && dp->ntx > 1 && !(dp->flags & SRP_EC);

		if (spurious)
			qp->stats.spurious_retx++;
		if (spurious && (!t->reo_grow_ns || now - t->reo_grow_ns >= (t->srtt ? t->srtt : st->rto_min_ns))) {
			t->reo_grow_ns = now;
			t->reo_max = t->reo_max < t->min_rtt / 4 ? t->min_rtt / 4 : t->reo_max * 2;
			/* RFC 8985 caps the window at srtt; measured reordering
			 * beyond it (a slow lane) is real, so only the RTO caps it */
			if (t->reo_max > t->rto)
				t->reo_max = t->rto;
		}
	}
	/* everything before cum, then the bitmap: bit j = PSN cum + 1 + j.
	 * Only the PSNs it acknowledges are visited, not the whole window:
	 * a SACK comes per receive burst, and walking 256 ring entries for
	 * each cost more than the rest of the packet path (performance.md). */
	uint32_t psn = t->una;

	for (; psn != t->nxt && roce_psn_diff(psn, cum) < 0; psn = psn_add(psn, 1))
		sack_one(qp, psn, now, &newest, &progress, &sum);
	if (psn != t->nxt) {
		int32_t d = roce_psn_diff(psn, cum);

		for (uint32_t j = sack_next_bit(b, nbits, d > 0 ? (uint32_t)d - 1 : 0); j < nbits;
		     j = sack_next_bit(b, nbits, j + 1)) {
			uint32_t q = psn_add(cum, j + 1);

			if (roce_psn_diff(q, t->nxt) >= 0)
				break;
			sack_one(qp, q, now, &newest, &progress, &sum);
		}
	}
	/* the RTT ends when the SACK arrived: a NIC that stamps completions
	 * says when (without the wait in its CQ), else it is now */
	at = qp->ctx->nic_rx_ns ? qp->ctx->nic_rx_ns : now;
	if (newest) {
		rtt_sample(st, at > newest->sent_ns ? at - newest->sent_ns : 1);
		rtt_stats(qp);
	}
	if (sum.pkts)
		sr_pc_ack_done(qp, now, newest && at > newest->sent_ns ? at - newest->sent_ns : 0,
		               (uint64_t)roce_get_be16(b + 26) << SRW_SACK_HOLD_SHIFT, sum.bytes, sum.pkts,
		               (uint8_t)(ttl <= SR_TTL_INIT ? SR_TTL_INIT - ttl : 0));
	if (st->ec && ec_msgs_done(qp, msg_cum, roce_get_be32(b + 8)))
		progress = true;
	while (t->una != t->nxt && (t->ring[t->una & t->mask].flags & SRP_SACKED))
		t->una = psn_add(t->una, 1);
	/* forget a probe the window has passed, before PSNs wrap around to it */
	if (t->probe_any && roce_psn_diff(t->probe_last, t->una) < 0)
		t->probe_any = false;
	if (progress) {
		/* the backed-off RTO stays until an RTT sample (a packet sent
		 * once) says what it is: with every acknowledged packet a copy,
		 * a floor below the RTT would fire again at once (RFC 6298 5.7;
		 * seen on rxe in TCG guests, whose RTT is milliseconds) */
		if (newest)
			t->backoff = 0;
		t->tlp_out = false;
		fo_progress(qp);
	}
	sr_rack_detect(qp, now);
	sr_retire(qp);
	sr_arm(qp);
	ctx_kick(qp);
}

/* --- control QP ----------------------------------------------------------- */

bool sr_is_ctrl(const struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	return pkt->dqpn == qp->ctrl_qpn;
}

void sr_rx_ctrl(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	struct sr_state *st = sr_of(qp);
	const uint8_t *b = pkt->payload;
	uint32_t len;

	if (pkt->opcode != (ROCE_TR_UC | ROCE_OP_SEND_ONLY)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	if (qp->state != UROCE_QPS_RTS && qp->state != UROCE_QPS_SQD) {
		ctx_count_drop(qp->ctx, UROCE_DROP_QP_STATE);
		return;
	}
	if (!st->tx.ring || pkt->payload_len < SRW_CTRL_HDR_LEN || b[0] != SRW_VERSION) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	len = roce_get_be16(b + 2);
	if (len > pkt->payload_len || len < SRW_CTRL_HDR_LEN) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	qp->rx_packets++;
	switch (b[1]) {
	case SRW_CTRL_SACK:
		if (len < SRW_CTRL_HDR_LEN + SRW_SACK_FIXED) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
			return;
		}
		on_sack(qp, b + SRW_CTRL_HDR_LEN, len - SRW_CTRL_HDR_LEN, pkt->ttl);
		break;
	case SRW_CTRL_TRIM:
		if (len < SRW_CTRL_HDR_LEN + SRW_TRIM_FIXED) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
			return;
		}
		sr_tx_trims(qp, b + SRW_CTRL_HDR_LEN, len - SRW_CTRL_HDR_LEN);
		break;
	case SRW_CTRL_RTS:
		if (len < SRW_CTRL_HDR_LEN + SRW_RTS_LEN) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
			return;
		}
		eqds_rx_rts(qp, &st->rx.eqds, roce_get_be64(b + SRW_CTRL_HDR_LEN), roce_get_be64(b + SRW_CTRL_HDR_LEN + 8));
		break;
	case SRW_CTRL_PULL:
		if (len < SRW_CTRL_HDR_LEN + SRW_PULL_LEN || !(st->cc.ops->flags & CC_CREDIT)) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
			return;
		}
		eqds_tx_pull(qp, roce_get_be64(b + SRW_CTRL_HDR_LEN));
		break;
	case SRW_CTRL_NACK:
		if (!st->ec || len < SRW_CTRL_HDR_LEN + SRW_NACK_FIXED) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
			return;
		}
		ec_tx_nack(qp, b + SRW_CTRL_HDR_LEN, len - SRW_CTRL_HDR_LEN);
		break;
	default:
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
	}
}
