/* sr: selective repeat. Every packet is a self-contained RDMA WRITE Only
 * (sr_wire.h) placed on arrival; the receiver answers with SACKs (a
 * cumulative PSN plus a bitmap of the window) on the sender's control QP.
 * A packet is declared lost by time, not by duplicate counts (RACK, RFC
 * 8985): once a packet sent after it was acknowledged and a reordering
 * window has passed; a tail-loss probe covers the last packets of a burst,
 * and the RTO (srtt + 4 rttvar, floored) everything else. Only the holes
 * are sent again, with their original PSNs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/failover/failover.h"
#include "transport/rel/rel.h"
#include "transport/rel/sr/rel_sr.h"

enum { PH_START = 0, PH_DESC1, PH_DATA, PH_PARITY, PH_DESC2, PH_DONE };

static void push_recv_wc(struct uroce_qp *qp, struct sr_rmsg *m);

/* --- configuration ------------------------------------------------------ */

int sr_init_common(struct uroce_qp *qp, bool ec)
{
	const struct uroce_rel_attr *a = &qp->init.rel;
	struct sr_state *st;
	int rc;

	if ((unsigned)a->loss >= UROCE_LOSS__COUNT)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.loss %d; accepted UROCE_LOSS_RACK (0), UROCE_LOSS_RTO (1)",
		                  (int)a->loss);
	if (a->window_pkts && (a->window_pkts < SR_WIN_MIN || a->window_pkts > SR_WIN_MAX))
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.window_pkts %u; accepted 0 (= %u) or %u-%u",
		                  a->window_pkts, SR_WIN_DEFAULT, SR_WIN_MIN, SR_WIN_MAX);
	if (a->chunk_pkts > 4096)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.chunk_pkts %u; accepted 0 (= 1) to 4096", a->chunk_pkts);
	if (ec && (unsigned)a->ec_code >= UROCE_EC__COUNT)
		return uroce_fail(-EINVAL, "uroce_qp_create: rel.ec_code %d; accepted UROCE_EC_RS (0), UROCE_EC_XOR (1)",
		                  (int)a->ec_code);
	st = calloc(1, sizeof(*st));
	if (!st)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	st->cfg = *a;
	st->ec = ec;
	if (!st->cfg.window_pkts)
		st->cfg.window_pkts = SR_WIN_DEFAULT;
	if (!st->cfg.chunk_pkts)
		st->cfg.chunk_pkts = 1;
	st->rto_min_ns = (a->rto_min_us ? a->rto_min_us : SR_RTO_MIN_DEFAULT_NS / 1000) * 1000ull;
	if (ec) {
		unsigned k = a->ec_k ? a->ec_k : 32, m = a->ec_m ? a->ec_m : 8;

		rc = ec_code_init(&st->code, a->ec_code == UROCE_EC_XOR ? EC_KIND_XOR : EC_KIND_RS, k, m);
		if (rc) {
			free(st);
			return uroce_fail(rc, "uroce_qp_create: rel.ec_k %u, ec_m %u; accepted 1 <= k <= %u, 1 <= m <= %u, "
			                      "k + m <= %u (0 = 32 and 8)", k, m, EC_MAX_K, EC_MAX_M, EC_MAX_N);
		}
		st->cfg.ec_k = (uint8_t)k;
		st->cfg.ec_m = (uint8_t)m;
		if (st->cfg.window_pkts < 2 * (k + m) + 4)
			st->cfg.window_pkts = 2 * (k + m) + 4; /* a whole submessage and its parity fit */
	}
	qp->rel_state = st;
	rc = sr_pc_init(qp);
	if (rc) {
		if (ec)
			ec_code_fini(&st->code);
		free(st);
		qp->rel_state = NULL;
	}
	return rc;
}

static int sr_init(struct uroce_qp *qp)
{
	return sr_init_common(qp, false);
}

static void sr_free_bufs(struct sr_state *st)
{
	free(st->tx.ring);
	free(st->tx.par);
	free(st->rx.bits);
	free(st->rx.pend);
	free(st->rx.par);
	free(st->rx.par_msg);
	free(st->rx.par_idx);
	free(st->rx.par_ok);
	free(st->rx.scratch);
	free(st->rx.slot_bits);
	for (unsigned i = 0; i < SR_MSG_WIN; i++)
		free(st->rx.slot[i].wqe.sge);
	memset(&st->tx, 0, sizeof(st->tx));
	memset(&st->rx, 0, sizeof(st->rx));
}

/* RESET or destroy: messages bound to receive handles end without a
 * completion; a handle the application already gave back is freed, the
 * others are marked done so giving them back frees them. */
static void release_handles(struct sr_state *st)
{
	for (unsigned i = 0; i < SR_MSG_WIN; i++) {
		struct sr_rmsg *m = &st->rx.slot[i];

		if (m->bound && !m->delivered && m->wqe.precv)
			precv_finish(m->wqe.precv, false);
		m->wqe.precv = NULL;
	}
}

void sr_fini(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);

	if (!st)
		return;
	release_handles(st);
	/* before the buffers: wiping rx forgets that the QP waits in its
	 * port's EQDS pacer, which would grant it after the free */
	sr_pc_fini(qp);
	sr_free_bufs(st);
	if (st->ec)
		ec_code_fini(&st->code);
	free(st);
	qp->rel_state = NULL;
}

/* RTR: the MTU is known, size the rings and bitmaps. */
int sr_ready(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	uint32_t ring = 1, rbits = 1, sge;
	bool ok = true;
	int rc;

	if (qp->state == UROCE_QPS_RTR) {
		/* RTR -> RTS: the send PSN is known now */
		st->tx.una = st->tx.nxt = qp->snd_nxt;
		return 0;
	}
	sr_free_bufs(st);
	while (ring < st->cfg.window_pkts)
		ring <<= 1;
	/* the receiver's window has slack over the sender's: ec parity the
	 * sender gave up on leaves holes until its message is done */
	while (rbits < 2 * ring)
		rbits <<= 1;
	st->tx.ring = calloc(ring, sizeof(*st->tx.ring));
	st->tx.mask = ring - 1;
	st->tx.win_pkts = st->cfg.window_pkts;
	st->tx.win_bytes = st->cfg.window_bytes ? st->cfg.window_bytes : st->cfg.window_pkts * qp->mtu;
	st->rx.bits = calloc(rbits / 64 ? rbits / 64 : 1, sizeof(uint64_t));
	st->rx.pend = calloc(rbits / 64 ? rbits / 64 : 1, sizeof(uint64_t));
	st->rx.nbits = rbits;
	st->rx.mask = rbits - 1;
	st->rx.max_pkts = SR_MAX_MSG_PKTS;
	st->chunk_bytes = st->cfg.chunk_pkts * qp->mtu;
	sge = qp->init.srq ? qp->init.srq->max_sge : qp->attr.cap.max_recv_sge;
	if (!sge)
		sge = 1;
	/* One bit per packet a message may have, 16 KiB a slot, in one
	 * calloc per QP: large enough to be its own zero mapping, so only the
	 * pages messages touch become resident (10 000 QPs would otherwise
	 * hold 10 GiB). */
	st->rx.slot_bits = calloc((size_t)SR_MSG_WIN * (st->ec ? 2 : 1), SR_MAX_MSG_PKTS / 8);
	ok = st->tx.ring && st->rx.bits && st->rx.pend && st->rx.slot_bits;
	for (unsigned i = 0; ok && i < SR_MSG_WIN; i++) {
		struct sr_rmsg *m = &st->rx.slot[i];

		m->bits = st->rx.slot_bits + (size_t)i * (SR_MAX_MSG_PKTS / 64);
		if (st->ec)
			m->subdone = st->rx.slot_bits + (size_t)(SR_MSG_WIN + i) * (SR_MAX_MSG_PKTS / 64);
		m->wqe.sge = calloc(sge, sizeof(struct uroce_sge));
		ok = m->wqe.sge != NULL;
	}
	if (ok && st->ec) {
		uint32_t km = st->cfg.ec_k + st->cfg.ec_m;

		st->tx.par = malloc((size_t)ring * qp->mtu);
		st->rx.par = malloc((size_t)rbits * qp->mtu);
		st->rx.par_msg = calloc(rbits, sizeof(uint32_t));
		st->rx.par_idx = calloc(rbits, sizeof(uint32_t));
		st->rx.par_ok = calloc(rbits, 1);
		st->rx.scratch = malloc((size_t)km * qp->mtu);
		ok = st->tx.par && st->rx.par && st->rx.par_msg && st->rx.par_idx && st->rx.par_ok && st->rx.scratch;
	}
	if (!ok) {
		sr_free_bufs(st);
		return uroce_fail(-ENOMEM, "uroce_qp_modify: QP 0x%x: out of memory for the %s window", qp->qpn,
		                  st->ec ? "ec" : "sr");
	}
	st->tx.una = st->tx.nxt = qp->snd_nxt;
	st->tx.rto = SR_RTO_INIT_NS > st->rto_min_ns ? SR_RTO_INIT_NS : st->rto_min_ns;
	st->rx.cum = qp->epsn;
	st->rx.high = psn_add(qp->epsn, ROCE_PSN_MASK);
	st->fto_ns = st->cfg.ec_fto_us ? st->cfg.ec_fto_us * 1000ull : 1000000ull;
	rc = sr_pc_ready(qp);
	if (rc)
		sr_free_bufs(st);
	return rc;
}

void sr_reset(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);

	release_handles(st);
	sr_pc_fini(qp); /* first, as in sr_fini */
	sr_free_bufs(st);
	st->tx.msg_post = 0;
}

size_t sr_state_bytes(const struct uroce_qp *qp)
{
	const struct sr_state *st = sr_of(qp);
	size_t n = sizeof(*st);

	if (!st || !st->tx.ring)
		return n;
	n += (size_t)(st->tx.mask + 1) * sizeof(struct sr_txp) + st->rx.nbits / 8;
	n += (size_t)SR_MSG_WIN * (SR_MAX_MSG_PKTS / 8);
	if (st->ec)
		n += (size_t)(st->tx.mask + 1 + st->rx.nbits) * qp->mtu;
	return n;
}

/* What sr_state_bytes says of a QP with the default window after RTR. */
size_t sr_default_state_bytes(bool ec, uint32_t mtu)
{
	uint32_t ring = SR_WIN_DEFAULT, rbits = 2 * SR_WIN_DEFAULT;
	size_t n = sizeof(struct sr_state) + (size_t)ring * sizeof(struct sr_txp) + rbits / 8;

	n += (size_t)SR_MSG_WIN * (SR_MAX_MSG_PKTS / 8);
	if (ec)
		n += (size_t)(ring + rbits) * mtu;
	return n;
}

/* --- posting -------------------------------------------------------------- */

int sr_post(struct uroce_qp *qp, const struct uroce_send_wr *wr, struct swqe *w)
{
	struct sr_state *st = sr_of(qp);
	uint32_t mtu = qp->mtu;

	if (wr_is_local(wr->opcode)) {
		/* BIND_MW / LOCAL_INV: no packet, no message number (mw.c) */
		w->msg_off = w->msg_len = w->unacked = 0;
		w->sr_flags = 0;
		return 0;
	}
	switch (wr->opcode) {
	case UROCE_WR_SEND:
	case UROCE_WR_SEND_WITH_IMM:
	case UROCE_WR_RDMA_WRITE:
	case UROCE_WR_RDMA_WRITE_WITH_IMM:
		break;
	default:
		return uroce_fail(-EINVAL, "uroce_post_send: opcode %d on a QP with reliability %s; accepted SEND, "
		                           "SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, BIND_MW, LOCAL_INV (READ and atomics need rc)",
		                  (int)wr->opcode, st->ec ? "ec" : "sr");
	}
	if (npkts(w->length, mtu) > SR_MAX_MSG_PKTS)
		return uroce_fail(-EINVAL, "uroce_post_send: %u bytes is %u packets at MTU %u; reliability %s carries "
		                           "at most %u packets a message", w->length, npkts(w->length, mtu), mtu,
		                  st->ec ? "ec" : "sr", SR_MAX_MSG_PKTS);
	w->msg_off = 0;
	w->msg_len = w->length;
	w->unacked = 0;
	w->sr_flags = 0;
	if (st->tx.posting) {
		pstream_fill(st->tx.posting, wr, w); /* a piece of a stream (partial.c) */
		return 0;
	}
	if (qp->init.rel.imm_counter && (wr->opcode == UROCE_WR_SEND || wr->opcode == UROCE_WR_SEND_WITH_IMM))
		return uroce_fail(-EINVAL, "uroce_post_send: QP 0x%x counts immediates (rel.imm_counter): it carries "
		                           "RDMA_WRITE and RDMA_WRITE_WITH_IMM only; send on another QP", qp->qpn);
	if (wr->opcode == UROCE_WR_RDMA_WRITE)
		return 0; /* placed by its own RETH: no slot, no metadata */
	w->sr_flags = SRW_F_SLOT;
	if (wr->send_flags & UROCE_SEND_FENCE)
		w->sr_flags |= SRW_F_FENCE | SRW_F_DESC; /* the descriptor says so */
	w->msg_seq = __atomic_fetch_add(&st->tx.msg_post, 1, __ATOMIC_RELAXED);
	if (wr->opcode != UROCE_WR_SEND)
		w->sr_flags |= SRW_F_DESC; /* the immediate travels in the descriptor */
	if (st->ec)
		w->sr_flags |= SRW_F_DESC | SRW_F_EC;
	return 0;
}

/* --- sending -------------------------------------------------------------- */

void sr_tx_gather(const struct swqe *w, uint32_t off, uint8_t *dst, uint32_t len)
{
	sge_copy_out(w->sge, w->num_sge, off - w->msg_off, dst, len);
}

void sr_gather_wqe(void *arg, uint8_t *dst, uint32_t len)
{
	const struct sr_gather *g = arg;

	sr_tx_gather(g->w, g->off, dst, len);
}

static struct swqe *wqe_at(struct uroce_qp *qp, uint32_t sq_idx)
{
	return &qp->sq[sq_idx & qp->sq_mask];
}

/* The descriptor's 32 bytes (docs/wire.md, "sr and ec"). */
void sr_desc_fill(const struct swqe *w, uint32_t first_psn, uint8_t *b)
{
	memset(b, 0, SRW_DESC_LEN);
	b[0] = SRW_VERSION;
	b[1] = w->opcode;
	b[2] = (uint8_t)((w->opcode == UROCE_WR_SEND ? 0 : SRW_DESC_IMM) | ((w->sr_flags & SRW_F_FENCE) ? SRW_DESC_FENCE : 0));
	b[3] = (w->sr_flags & SRW_F_EC) ? 1 : 0;
	roce_put_be32(b + 4, w->msg_len);
	memcpy(b + 8, &w->imm, 4); /* as posted: network order */
	roce_put_be32(b + 12, w->rkey);
	roce_put_be64(b + 16, w->raddr);
	roce_put_be32(b + 24, first_psn);
}

/* Build and stage the packet at ring entry psn. */
/* AckReq, as rc sets it: the receiver SACKs a burst when a packet in it
 * asks (or when it sees a gap or a duplicate). Asking on every packet
 * made one SACK per data packet once a burst spread over many QPs. Ask
 * on the last packet of each WQE (its completion waits for it), every
 * SR_ACKREQ_EVERY PSNs, on every retransmission, on descriptors and ec
 * packets, and on the packet that fills the window (nothing more could
 * leave to carry the ask). */
static bool wants_sack(const struct uroce_qp *qp, const struct sr_txp *p, const struct swqe *w, uint32_t psn)
{
	const struct sr_state *st = sr_of(qp);
	const struct sr_tx *t = &st->tx;

	/* ec keeps a SACK per packet: its sender resolves parity and
	 * descriptors from the receiver's message state, and its fallback
	 * (the NACK) is timed from the last packet seen */
	if (p->ntx || (p->flags & SRP_EC) || psn % st->ack_every == 0)
		return true;
	/* the packet that fills the window (a bulk sender sits at its edge,
	 * so asking on every packet near it would ask on nearly all) */
	if (((psn - t->una) & ROCE_PSN_MASK) + 1 >= t->win_pkts ||
	    (uint64_t)t->inflight_bytes + p->len + qp->mtu > t->win_bytes)
		return true;
	/* the last packet a controller lets out before it holds the rest:
	 * without a SACK for it the sender would sit out an RTO */
	if (sr_pc_last_before_hold(qp, p))
		return true;
	switch (p->kind) {
	case SRW_DESC:
		return true;
	default:
		return p->off + p->len >= w->msg_off + w->length;
	}
}

static int send_txp(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_state *st = sr_of(qp);
	struct sr_txp *p = &st->tx.ring[psn & st->tx.mask];
	struct swqe *w = wqe_at(qp, p->sq_idx);
	struct roce_pkt pkt;
	struct sr_gather g = { .w = w, .off = p->off };
	uint8_t desc[SRW_DESC_LEN];
	gather_fn gf = NULL;
	const struct dest *d;
	unsigned path;
	int rc;

	rc = sr_pc_gate(qp, p, p->ntx != 0, &path, &d);
	if (rc)
		return rc;
	ctx_pkt_init(qp->ctx, &pkt, d, st->ps.p[path].sport);
	if (st->cc.ops->flags & CC_ECN || (st->ps.cc && st->ps.cc[0].ops->flags & CC_ECN))
		pkt.tos = (uint8_t)((pkt.tos & ~3u) | 2u); /* ECT(0): a switch may mark it CE */
	pkt.dqpn = qp->dqpn;
	pkt.psn = psn;
	pkt.payload_len = p->len;
	pkt.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM;
	pkt.imm = p->imm;
	pkt.reth.rkey = SRW_MSG_RKEY;
	pkt.reth.dma_len = p->len;
	switch (p->kind) {
	case SRP_PLAIN:
		pkt.opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY;
		pkt.reth.va = w->raddr + p->off;
		pkt.reth.rkey = w->rkey;
		gf = p->len ? sr_gather_wqe : NULL;
		break;
	case SRW_DESC:
		/* a retransmitted descriptor needs its message's first PSN: it
		 * is kept in the entry's offset field */
		sr_desc_fill(w, p->off, desc);
		pkt.payload = desc;
		pkt.reth.va = 0;
		break;
	case SRW_PARITY:
		pkt.payload = st->tx.par + (size_t)(psn & st->tx.mask) * qp->mtu;
		pkt.reth.va = (uint64_t)p->off * qp->mtu;
		break;
	default: /* data */
		if (w->opcode == UROCE_WR_RDMA_WRITE_WITH_IMM) {
			pkt.reth.va = w->raddr + p->off;
			pkt.reth.rkey = w->rkey;
		} else {
			pkt.reth.va = p->off;
		}
		gf = p->len ? sr_gather_wqe : NULL;
		break;
	}
	pkt.ackreq = wants_sack(qp, p, w, psn);
	rc = ctx_send_pkt(qp->ctx, d->port, &pkt, gf, &g);
	if (rc)
		return rc == -EAGAIN ? -ENOBUFS : rc; /* -EAGAIN tells the callers a controller holds it */
	sr_pc_sent(qp, p, path);
	qp->tx_packets++;
	p->sent_ns = st->tx.now;
	if (!p->ntx)
		p->first_ns = p->sent_ns;
	p->ntx++;
	st->tx.last_tx_ns = p->sent_ns;
	return 0;
}

/* Take a new PSN for a packet of w. */
static struct sr_txp *txp_new(struct uroce_qp *qp, uint32_t sq_idx, uint8_t kind, uint32_t off, uint32_t len,
                              uint32_t imm)
{
	struct sr_state *st = sr_of(qp);
	struct sr_txp *p = &st->tx.ring[st->tx.nxt & st->tx.mask];

	memset(p, 0, sizeof(*p));
	p->sq_idx = sq_idx;
	p->kind = kind;
	p->off = off;
	p->len = (uint16_t)len;
	p->imm = imm;
	return p;
}

/* SRP_NOCREDIT for a packet of a probe, remembering the last such PSN so
 * that a credit update walks only up to it (and not at all without one). */
static uint8_t probe_flag(struct sr_tx *t, uint32_t psn)
{
	if (!t->probing)
		return 0;
	t->probe_any = true;
	t->probe_last = psn;
	return SRP_NOCREDIT;
}

static bool window_open(const struct sr_state *st, uint32_t n, uint32_t bytes)
{
	uint32_t used = (st->tx.nxt - st->tx.una) & ROCE_PSN_MASK;

	if (used + n > st->tx.win_pkts)
		return false;
	return used == 0 || st->tx.inflight_bytes + bytes <= st->tx.win_bytes;
}

static void sr_arm(struct uroce_qp *qp);

/* The next new packet of the WQE at sq_cur; false when it cannot go now. */
static int tx_new(struct uroce_qp *qp, struct swqe *w)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint32_t mtu = qp->mtu, sq_idx = qp->sq_cur, npk, k = st->cfg.ec_k, m = st->cfg.ec_m;
	uint32_t msg12 = w->msg_seq & SRW_MSG_MASK, psn = t->nxt;
	struct sr_txp *p;
	int rc;

	npk = npkts(w->length, mtu);
	for (;;) {
		switch (t->phase) {
		case PH_START:
			if ((w->sr_flags & SRW_F_STREAM_END) ||
			    ((w->sr_flags & SRW_F_SLOT) && (int32_t)(w->msg_seq - t->peer_msg_cum) < 0)) {
				/* the end has no packet; a piece of a message a SACK
				 * says is delivered (completed early) would only be
				 * dropped there: it takes no PSN */
				t->phase = PH_DONE;
				continue;
			}
			if ((w->sr_flags & SRW_F_SLOT) &&
			    (int32_t)(w->msg_seq - (t->peer_msg_cum + SR_MSG_WIN)) >= 0)
				return -EAGAIN; /* the receiver's slots are all taken: a SACK reopens them */
			if ((w->sr_flags & SRW_F_SLOT) && t->have_limit &&
			    (int32_t)(w->msg_seq - t->peer_msg_limit) >= 0) {
				/* no receive posted for it: one probe when nothing is in
				 * flight (its SACK brings the credits), else wait */
				if (t->una != t->nxt) {
					qp->stats.credit_waits++;
					return -EAGAIN;
				}
				t->probing = true;
			}
			t->pidx = 0;
			t->sub = 0;
			t->par_j = 0;
			t->first_psn = t->nxt;
			sr_pc_msg_start(qp, w->msg_len);
			t->phase = (w->sr_flags & SRW_F_DESC) && w->msg_off == 0 ? PH_DESC1 : PH_DATA;
			continue;
		case PH_DESC1:
		case PH_DESC2:
			if (!window_open(st, 1, SRW_DESC_LEN))
				return -EAGAIN;
			p = txp_new(qp, sq_idx, SRW_DESC, t->first_psn, SRW_DESC_LEN, srw_imm(msg12, SRW_DESC, 0));
			p->flags = (uint8_t)(((w->sr_flags & SRW_F_EC) ? SRP_EC : 0) | probe_flag(t, psn));
			rc = send_txp(qp, psn);
			if (rc)
				return rc;
			t->phase = t->phase == PH_DESC1 ? PH_DATA : PH_DONE;
			break;
		case PH_DATA: {
			uint32_t off = t->pidx * mtu, len = w->length - off < mtu ? w->length - off : mtu;
			uint32_t moff = w->msg_off + off, idx = moff >> __builtin_ctz(mtu); /* path MTUs are powers of two */
			bool last = moff + len >= w->msg_len;
			uint8_t kind;

			if (w->length == 0)
				len = 0;
			if ((w->sr_flags & SRW_F_EC) && t->pidx && t->pidx % k == 0 && t->par_j < m) {
				/* parity of the submessage just sent goes out right after it */
				t->sub = t->pidx / k - 1;
				t->phase = PH_PARITY;
				continue;
			}
			if (t->pidx >= npk) {
				if (w->sr_flags & SRW_F_EC) {
					t->sub = (npk - 1) / k;
					t->phase = t->par_j < m ? PH_PARITY : PH_DESC2;
				} else {
					t->phase = PH_DONE;
				}
				continue;
			}
			if (!window_open(st, 1, len))
				return -EAGAIN;
			if (!(w->sr_flags & SRW_F_SLOT))
				kind = SRP_PLAIN;
			else if (!last)
				kind = SRW_DATA;
			else
				kind = (w->sr_flags & SRW_F_DESC) ? SRW_LAST_DESC : SRW_LAST;
			p = txp_new(qp, sq_idx, kind, moff, len, srw_imm(msg12, kind == SRP_PLAIN ? 0 : kind, idx));
			p->flags = (uint8_t)(((w->sr_flags & SRW_F_EC) ? SRP_EC : 0) | probe_flag(t, psn));
			rc = send_txp(qp, psn);
			if (rc)
				return rc;
			t->pidx++;
			t->par_j = 0;
			break;
		}
		case PH_PARITY:
			if (t->par_j == 0) {
				/* all m parity packets take consecutive PSNs: encode into them at once */
				if (!window_open(st, m, m * mtu))
					return -EAGAIN;
				ec_tx_encode(qp, w, t->sub, psn);
			}
			p = txp_new(qp, sq_idx, SRW_PARITY, t->sub * m + t->par_j, mtu,
			            srw_imm(msg12, SRW_PARITY, t->sub * m + t->par_j));
			p->flags = (uint8_t)(SRP_EC | probe_flag(t, psn));
			rc = send_txp(qp, psn);
			if (rc)
				return rc;
			qp->stats.parity_sent++;
			if (++t->par_j == m)
				t->phase = t->pidx >= npk ? PH_DESC2 : PH_DATA;
			break;
		case PH_DONE:
		default:
			t->phase = PH_START;
			t->probing = false;
			w->state = SWQE_SENT;
			qp->sq_cur++;
			return 0;
		}
		/* a packet left: account it */
		w->unacked++;
		t->inflight_bytes += t->ring[psn & t->mask].len;
		t->nxt = psn_add(t->nxt, 1);
		return 0;
	}
}

/* A packet sent 1 + retry_cnt times fails the QP only once it has gone
 * unacknowledged for as long as rc would wait: 1 + retry_cnt local ACK
 * timeouts (4.096 us x 2^timeout; 0 = never). sr resends much sooner than
 * that (its RTO follows the RTT), but a peer that is only slow for a few
 * milliseconds (descheduled) must not end the connection. */
static bool gave_up(const struct uroce_qp *qp, const struct sr_txp *p)
{
	uint64_t limit, base = p->first_ns;

	if (!qp->attr.timeout)
		return false;
	if (qp->fo) {
		/* retries count on the member the packet is on now */
		base = fo_retry_base(qp, base);
		if (base == UINT64_MAX)
			return false;
	}
	limit = (uint64_t)(qp->attr.retry_cnt + 1u) * (4096ull << qp->attr.timeout);
	return sr_of(qp)->tx.now - base >= limit;
}

/* Retransmit the packets marked lost: 0, -EAGAIN when a controller holds
 * them, -ENOBUFS when the TX stage is full. */
static int tx_lost(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	int rc;

	for (uint32_t psn = t->una; t->nlost && psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];

		if (!(p->flags & SRP_LOST))
			continue;
		if (p->flags & SRP_NOCREDIT) {
			/* a probe waiting for receives: not a loss, no retry spent */
			p->ntx = 1;
		} else if (p->ntx > qp->attr.retry_cnt && gave_up(qp, p)) {
			/* out of retries: as rc, the oldest WQE fails and the QP
			 * goes to ERR, which flushes the others */
			qp->rel->complete(qp, wqe_at(qp, qp->sq_tail), UROCE_WC_RETRY_EXC_ERR);
			qp->sq_tail++;
			qp_to_error(qp);
			return 0;
		}
		rc = send_txp(qp, psn);
		if (rc)
			return rc;
		p->flags &= (uint8_t)~SRP_LOST;
		t->nlost--;
		qp->stats.retransmits++;
	}
	return 0;
}

/* --- receiving: SACK generation ------------------------------------------- */

int sr_send_ctrl(struct uroce_qp *qp, const uint8_t *body, uint32_t len)
{
	struct sr_state *st = sr_of(qp);
	const struct dest *d = &qp->d;
	uint16_t sport = qp->sport;
	struct roce_pkt pkt;
	int rc;

	/* over a QP's paths in turn: a dead one loses a few cumulative SACKs
	 * and RTSs, never all of them */
	if (st->ps.n > 1) {
		unsigned i = sr_pc_ctrl_path(qp);

		sport = st->ps.p[i].sport;
		d = st->ps.p[i].port == qp->port ? &qp->d : &st->pdest[st->ps.p[i].port];
	}
	ctx_pkt_init(qp->ctx, &pkt, d, sport);
	pkt.opcode = ROCE_TR_UC | ROCE_OP_SEND_ONLY;
	pkt.dqpn = psn_add(qp->dqpn, 1) & ROCE_QPN_MASK;
	pkt.psn = st->tx.ctrl_psn;
	pkt.payload = body;
	pkt.payload_len = len;
	rc = ctx_send_pkt(qp->ctx, d->port, &pkt, NULL, NULL);
	if (rc)
		return rc;
	st->tx.ctrl_psn = psn_add(st->tx.ctrl_psn, 1);
	qp->tx_packets++;
	return 0;
}

bool sr_rx_wants_kick(const struct uroce_qp *qp)
{
	return __atomic_load_n(&sr_of(qp)->rx.rnr, __ATOMIC_ACQUIRE);
}

/* Messages before this have a receive: those bound plus those posted. An
 * SRQ's receives are shared, so its QP does not limit (as rc's code 31). */
static uint32_t rx_msg_limit(const struct uroce_qp *qp)
{
	const struct sr_rx *r = &sr_of(qp)->rx;

	if (qp->init.srq || qp->init.rel.imm_counter)
		return r->bind_next + (1u << 30); /* counted messages take no receive */
	return r->bind_next + (atomic_load_explicit(&qp->rq_head, memory_order_acquire) - qp->rq_tail);
}

static int send_sack(struct uroce_qp *qp)
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
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 20, rx_msg_limit(qp));
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

/* --- transmit pass ---------------------------------------------------------- */

static void sr_retire(struct uroce_qp *qp);

bool sr_tx(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);
	enum uroce_qp_state s = qp->state;
	unsigned budget = 64;
	int rc;

	if (s == UROCE_QPS_ERR) {
		qp_flush(qp);
		return false;
	}
	if (s != UROCE_QPS_RTR && s != UROCE_QPS_RTS && s != UROCE_QPS_SQD)
		return false;
	/* the clock, not the engine's iteration start: an application that
	 * posts after a pause would date its packets in the past */
	st->tx.now = ctx_clock(qp->ctx);
	if (__atomic_load_n(&st->rx.rnr, __ATOMIC_ACQUIRE) && rx_msg_limit(qp) != st->rx.bind_next) {
		__atomic_store_n(&st->rx.rnr, false, __ATOMIC_RELEASE);
		st->rx.sack_pending = true; /* receives arrived: tell the waiting sender */
	}
	/* the trims first: the sender resends them before RACK, reading the
	 * SACK's holes, would wait out its reordering window */
	if (st->rx.ntrim && sr_send_trims(qp))
		return true;
	if (st->rx.sack_pending && send_sack(qp))
		return true;
	if (st->ec && ec_rx_nacks(qp, st->tx.now))
		return true; /* a NACK did not fit in the TX stage */
	if (st->rx.eqds.pull_due && eqds_send_pull(qp))
		return true;
	if (s == UROCE_QPS_RTR)
		return false;
	if (st->tx.cc_gave_up && qp->sq_tail != head) {
		/* EQDS's RTSs went unanswered past every retry (sr_paths.c):
		 * as out of retries in tx_lost */
		qp->rel->complete(qp, wqe_at(qp, qp->sq_tail), UROCE_WC_RETRY_EXC_ERR);
		qp->sq_tail++;
		qp_to_error(qp);
		return false;
	}
	rc = tx_lost(qp);
	if (rc == -EAGAIN) {
		/* a controller holds even the retransmissions: its pacer's
		 * time, or an acknowledgment, sends them */
		sr_retire(qp);
		sr_arm(qp);
		return false;
	}
	if (rc)
		return true;
	if (qp->state != s)
		return false; /* out of retries */
	while (qp->sq_cur != head && budget--) {
		struct swqe *w = wqe_at(qp, qp->sq_cur);

		if (s == UROCE_QPS_SQD && w->state == SWQE_POSTED && st->tx.phase == PH_START)
			break;
		if (wr_is_local(w->opcode)) {
			/* carried out in queue order; it retires at the tail (sr_retire) */
			if (!qp_local_wr(qp, w))
				break; /* failed: nothing after it starts, the QP ends when it retires */
			qp->sq_cur++;
			continue;
		}
		if (qp->fo && w->state == SWQE_POSTED && st->tx.phase == PH_START && !fo_may_start(qp))
			break; /* failing back: the backup drains first */
		w->state = SWQE_SENDING;
		rc = tx_new(qp, w);
		if (rc == -EAGAIN)
			break; /* window or slots full: a SACK kicks us */
		if (rc)
			return true; /* TX stage full */
	}
	sr_retire(qp);
	sr_arm(qp);
	return budget == (unsigned)-1 && qp->sq_cur != head;
}

/* --- ACKing the sender's WQEs ------------------------------------------------ */

void sr_error(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;

	/* receive WQEs bound to unfinished messages flush, in message order */
	for (uint32_t seq = r->msg_cum; seq != r->bind_next; seq++) {
		struct sr_rmsg *m = &r->slot[seq % SR_MSG_WIN];

		if (m->bound && m->seq == seq && !m->delivered) {
			m->st = UROCE_WC_WR_FLUSH_ERR;
			push_recv_wc(qp, m);
		}
		m->bound = false;
	}
	r->msg_cum = r->bind_next;
	r->nfence = 0;
	st->tx.phase = PH_START;
	st->tx.nlost = 0;
	st->tx.una = st->tx.nxt;
	st->tx.inflight_bytes = 0;
	st->tx.pace_ns = 0;
}

/* Complete the WQEs at the tail whose packets are all acknowledged. */
static void sr_retire(struct uroce_qp *qp)
{
	while (qp->sq_tail != qp->sq_cur) {
		struct swqe *w = wqe_at(qp, qp->sq_tail);

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

static void txp_acked(struct uroce_qp *qp, struct sr_txp *p)
{
	struct sr_state *st = sr_of(qp);
	struct swqe *w = wqe_at(qp, p->sq_idx);

	if (p->flags & SRP_LOST)
		st->tx.nlost--;
	sr_pc_gone(qp, p);
	p->flags = (uint8_t)((p->flags | SRP_SACKED) & ~SRP_LOST);
	st->tx.inflight_bytes -= p->len;
	if (w->unacked)
		w->unacked--;
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
static uint64_t rack_detect(struct uroce_qp *qp, uint64_t now)
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
	txp_acked(qp, p);
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
		const struct swqe *w = wqe_at(qp, p->sq_idx);

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
		const struct swqe *w = wqe_at(qp, p->sq_idx);
		uint32_t ahead = w->msg_seq - msg_cum;

		if ((p->flags & SRP_SACKED) || !(p->flags & SRP_EC) || !(w->sr_flags & SRW_F_SLOT))
			continue;
		if ((int32_t)ahead < 0 || (ahead >= 1 && ahead <= 32 && ((msg_bits >> (ahead - 1)) & 1))) {
			txp_acked(qp, p);
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
	uint64_t now = ctx_clock(qp->ctx);
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
	if (newest) {
		rtt_sample(st, now > newest->sent_ns ? now - newest->sent_ns : 1);
		rtt_stats(qp);
	}
	if (sum.pkts)
		sr_pc_ack_done(qp, now, newest ? now - newest->sent_ns : 0,
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
		t->backoff = 0;
		t->tlp_out = false;
		fo_progress(qp);
	}
	rack_detect(qp, now);
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

/* --- timer ----------------------------------------------------------------- */

/* Arm the QP's one timer for the earliest of: RTO of the oldest packet,
 * the tail-loss probe, a RACK reordering window, an ec fallback timeout. */
static void sr_arm(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint64_t when = UINT64_MAX, now = ctx_clock(qp->ctx), rto;
	bool any = false;

	if (!t->ring)
		return;
	rto = sr_rto_now(t);
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		const struct sr_txp *p = &t->ring[psn & t->mask];
		uint64_t d;

		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		/* ec packets wait for the receiver's fallback NACK first */
		d = p->sent_ns + rto + ((p->flags & SRP_EC) ? st->fto_ns + t->rto : 0);
		if (d < when)
			when = d;
		any = true;
		/* sent once, and first sends go in PSN order: no later packet
		 * is due before it */
		if (p->sent_ns == p->first_ns && !(p->flags & SRP_EC))
			break;
	}
	if (any && st->cfg.loss == UROCE_LOSS_RACK && !t->tlp_out && t->srtt) {
		uint64_t pto = t->last_tx_ns + 2 * t->srtt + t->min_rtt / 4;

		if (pto < when)
			when = pto;
	}
	if (t->rack_xmit) {
		uint64_t r = rack_detect(qp, now);

		if (r < when)
			when = r;
	}
	if (st->ec) {
		uint64_t f = ec_rx_fto_next(qp);

		if (f < when)
			when = f;
	}
	if (t->pace_ns && t->pace_ns < when)
		when = t->pace_ns; /* a pacer or a quarantine holds packets until then */
	if (when == UINT64_MAX) {
		engine_timer_cancel(qp->ctx->eng, &qp->retry_timer);
		return;
	}
	if (when <= now)
		when = now + 1000;
	engine_timer_arm(qp->ctx->eng, &qp->retry_timer, when);
}

void sr_timer(struct wheel_timer *tm, void *arg)
{
	struct uroce_qp *qp = arg;
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint64_t now = ctx_clock(qp->ctx), rto;
	uint32_t last = 0;
	bool lost = false, any = false;

	(void)tm;
	if (qp->state < UROCE_QPS_RTR || qp->state > UROCE_QPS_SQD || !t->ring)
		return;
	rto = sr_rto_now(t);
	rack_detect(qp, now);
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];
		uint64_t extra = (p->flags & SRP_EC) ? st->fto_ns + t->rto : 0;

		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		any = true;
		last = psn;
		if (p->sent_ns + rto + extra <= now) {
			if (p->kind == SRW_PARITY) {
				/* parity is never sent again: the data it protects is */
				txp_acked(qp, p);
				continue;
			}
			p->flags &= (uint8_t)~SRP_EC;
			sr_txp_lost(qp, p, SR_LOSS_RTO);
			qp->stats.rto_losses++;
			lost = true;
		}
	}
	if (lost) {
		qp->stats.timeouts++;
		if (t->backoff < 16)
			t->backoff++;
		t->tlp_out = false;
		/* failover may take the member out and rewind onto another */
		fo_on_rto(qp);
	} else if (any && st->cfg.loss == UROCE_LOSS_RACK && !t->tlp_out && t->srtt && !t->nlost &&
	           now >= t->last_tx_ns + 2 * t->srtt + t->min_rtt / 4) {
		/* tail-loss probe: send the last packet again so a SACK shows the holes */
		struct sr_txp *p = &t->ring[last & t->mask];

		if (!(p->flags & SRP_EC)) {
			sr_txp_lost(qp, p, SR_LOSS_PROBE);
			t->tlp_out = true;
			qp->stats.tlp_probes++;
		}
	}
	while (t->una != t->nxt && (t->ring[t->una & t->mask].flags & SRP_SACKED))
		t->una = psn_add(t->una, 1);
	sr_retire(qp);
	sr_arm(qp);
	ctx_kick(qp);
}

/* --- failover ----------------------------------------------------------------- */

/* The QP moved to another member (qp->d): the paths follow it, and
 * rewind makes every packet not yet acknowledged due again. */
unsigned sr_fo_switch(struct uroce_qp *qp, bool rewind)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	unsigned n = 0;

	sr_pc_fo_ports(qp);
	if (!rewind || !t->ring)
		return 0;
	for (uint32_t psn = t->una; psn != t->nxt; psn = psn_add(psn, 1)) {
		struct sr_txp *p = &t->ring[psn & t->mask];

		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		if (p->kind == SRW_PARITY) {
			txp_acked(qp, p); /* parity is never sent again: the data it protects is */
			continue;
		}
		p->flags &= (uint8_t)~SRP_EC;
		sr_txp_lost(qp, p, SR_LOSS_FAILOVER);
		n++;
	}
	t->backoff = 0;
	t->tlp_out = false;
	sr_retire(qp);
	sr_arm(qp);
	ctx_kick(qp);
	return n;
}

bool sr_fo_idle(const struct uroce_qp *qp)
{
	const struct sr_state *st = sr_of(qp);

	return st->tx.phase == PH_START && st->tx.una == st->tx.nxt && qp->sq_tail == qp->sq_cur;
}

/* --- receiving: data --------------------------------------------------------- */

static void rx_set_arrived(struct sr_rx *r, uint32_t psn)
{
	bit_set(r->bits, psn & r->mask);
}

static void fence_check(struct uroce_qp *qp);

static void rx_advance_cum(struct uroce_qp *qp)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	uint32_t was = r->cum;

	while (bit_get(r->bits, r->cum & r->mask)) {
		r->bits[(r->cum & r->mask) >> 6] &= ~(1ull << (r->cum & 63));
		r->cum = psn_add(r->cum, 1);
	}
	if (r->ask)
		r->sack_pending = true;
	if (r->cum != was && r->nfence)
		fence_check(qp);
}

void sr_rx_mark_psn(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	int32_t d = roce_psn_diff(psn, r->cum);

	if (d < 0 || (uint32_t)d >= r->nbits)
		return;
	rx_set_arrived(r, psn);
	/* the sender has gone past every PSN up to this one: those counted
	 * in advance (parity of a whole submessage) count now */
	while (roce_psn_diff(psn, r->high) > 0) {
		r->high = psn_add(r->high, 1);
		if (bit_get(r->pend, r->high & r->mask)) {
			r->pend[(r->high & r->mask) >> 6] &= ~(1ull << (r->high & 63));
			rx_set_arrived(r, r->high);
		}
	}
	rx_advance_cum(qp);
}

void sr_rx_count_psn(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	int32_t d = roce_psn_diff(psn, r->cum);

	if (d < 0 || (uint32_t)d >= r->nbits)
		return;
	if (roce_psn_diff(psn, r->high) <= 0) {
		rx_set_arrived(r, psn);
		rx_advance_cum(qp);
	} else {
		/* not sent yet: acknowledging it would acknowledge the future */
		bit_set(r->pend, psn & r->mask);
	}
}

uint32_t sr_pkt_len(const struct uroce_qp *qp, const struct sr_rmsg *m, uint32_t idx)
{
	uint32_t off = idx * qp->mtu;

	if (!m->have_npk || off >= m->len)
		return m->have_npk && m->len == 0 && idx == 0 ? 0 : qp->mtu;
	return m->len - off < qp->mtu ? m->len - off : qp->mtu;
}

bool sr_rx_place(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t off, const uint8_t *src, uint32_t len)
{
	if (!len)
		return true;
	if (m->write) {
		/* sge[0] holds the target; a rebuilt chunk never came with a RETH
		 * of its own, so the key is checked here for every write */
		if (!rx_check_write(qp, m->rkey, m->wqe.sge[0].addr + off, len))
			return false;
		memcpy((uint8_t *)(uintptr_t)(m->wqe.sge[0].addr + off), src, len);
	} else {
		sge_copy_in(m->wqe.sge, m->wqe.num_sge, off, src, len);
	}
	return true;
}

void sr_rx_read(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t off, uint8_t *dst, uint32_t len)
{
	if (!len)
		return;
	if (m->write)
		memcpy(dst, (const uint8_t *)(uintptr_t)(m->wqe.sge[0].addr + off), len);
	else
		sge_copy_out(m->wqe.sge, m->wqe.num_sge, off, dst, len);
	(void)qp;
}

static void push_recv_wc(struct uroce_qp *qp, struct sr_rmsg *m)
{
	struct uroce_wc wc;
	bool whole = m->st == UROCE_WC_SUCCESS && m->have_npk && m->nrecv >= m->npk;

	if (qp->init.rel.imm_counter) {
		/* no receive, no completion: the IMMCOUNTER takes it, once */
		if (whole && m->op == UROCE_WR_RDMA_WRITE_WITH_IMM && m->have_desc) {
			imm_count(qp->ctx, m->imm);
			qp->stats.imm_counted++;
		}
		return;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = m->wqe.wr_id;
	wc.status = m->st;
	wc.qp_num = qp->qpn;
	wc.src_qp = qp->dqpn;
	wc.opcode = m->op == UROCE_WR_RDMA_WRITE_WITH_IMM ? UROCE_WC_RECV_RDMA_WITH_IMM : UROCE_WC_RECV;
	wc.byte_len = whole ? m->len : m->placed; /* a partial completion reports what was placed */
	if (m->op != UROCE_WR_SEND && m->have_desc) {
		wc.wc_flags |= UROCE_WC_WITH_IMM;
		wc.imm_data = m->imm;
	}
	if (m->wqe.precv) {
		wc.wc_flags |= precv_finish(m->wqe.precv, whole);
		m->wqe.precv = NULL;
	}
	cq_push(qp->rcq, &wc);
}

/* Deliver finished messages: in order, or (unordered) as they finish;
 * the window's base moves past delivered ones. */
static void deliver(struct uroce_qp *qp, struct sr_rmsg *m)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;

	if (m && st->cfg.ordering == UROCE_ORDER_UNORDERED && !m->delivered) {
		push_recv_wc(qp, m);
		m->delivered = true;
	}
	for (;;) {
		struct sr_rmsg *b = &r->slot[r->msg_cum % SR_MSG_WIN];

		if (!b->bound || b->seq != r->msg_cum || !b->done)
			break;
		if (!b->delivered) {
			push_recv_wc(qp, b);
			b->delivered = true;
		}
		b->bound = false;
		r->msg_cum++;
	}
}

/* The most packets a message may have while its length is unknown: a
 * SEND fits its receive, a WRITE with immediate the message limit. */
static uint32_t fin_max_pkts(const struct uroce_qp *qp, const struct sr_rmsg *m)
{
	uint32_t n = sr_of(qp)->rx.max_pkts;

	if (m->have_npk)
		return m->npk ? m->npk : 1;
	if (!m->write && npkts(m->wqe.length, qp->mtu) < n)
		n = npkts(m->wqe.length, qp->mtu);
	return n ? n : 1;
}

/* A finished message's PSN span (struct sr_fin), kept so that a late
 * packet naming it counts only at a PSN it can have used. */
static void fin_record(struct uroce_qp *qp, const struct sr_rmsg *m, bool early)
{
	struct sr_state *st = sr_of(qp);
	struct sr_fin *f = &st->rx.fin[m->seq % SR_FIN_RING];
	uint32_t n = fin_max_pkts(qp, m);

	f->seq = m->seq;
	/* completed by the application before its packets all came, and no
	 * descriptor fixes its layout: a stream's pieces still to be sent,
	 * or resent, take PSNs no packet seen so far bounds. The sender
	 * starts no piece once a SACK says the message is done, and starts
	 * message seq + SR_MSG_WIN only after that: its first packet closes
	 * the span (fin_close) */
	f->open = early && !(m->have_first && m->have_npk);
	if (m->have_first && m->have_npk) {
		/* the sender's layout: the descriptor at first_psn, then the
		 * packets (ec: parity after each submessage, a descriptor last) */
		f->lo = m->first_psn;
		f->hi = psn_add(m->first_psn, (m->is_ec ? ec_total_pkts(st, n) : n + 1) - 1);
		f->known = SR_FIN_SPAN;
	} else if (m->have_base) {
		/* packet idx went at base + idx (a stream's pieces: several
		 * bases); its descriptor just before index 0, if it may have
		 * one (a LAST without the descriptor flag says it has none) */
		bool desc = st->ec || m->desc_expected || !m->have_npk;

		f->lo = desc ? psn_add(m->base_lo, ROCE_PSN_MASK) : m->base_lo;
		f->hi = psn_add(m->base_hi, (st->ec ? ec_total_pkts(st, n) : n) - 1);
		f->known = SR_FIN_SPAN;
	} else {
		f->hi = n; /* nothing of it came: the first late packet sets the span */
		f->known = SR_FIN_LEARN;
	}
}

/* May a late packet (kind, idx) of finished message seq mark psn? Its
 * drop reason if not: a number no longer (or never) known here, or a
 * PSN outside that message's span. */
static enum uroce_drop_reason fin_check(struct uroce_qp *qp, uint32_t seq, uint32_t psn, uint32_t kind, uint32_t idx)
{
	struct sr_state *st = sr_of(qp);
	struct sr_fin *f = &st->rx.fin[seq % SR_FIN_RING];

	if (f->known == SR_FIN_NONE || f->seq != seq)
		return UROCE_DROP_STALE_MSG;
	if (f->known == SR_FIN_LEARN) {
		uint32_t n = f->hi, base = psn_add(psn, (uint32_t)-(kind == SRW_DESC ? 0 : idx));

		f->lo = psn_add(base, ROCE_PSN_MASK);
		f->hi = psn_add(base, st->ec ? ec_total_pkts(st, n) : n);
		f->known = SR_FIN_SPAN;
	}
	if (f->open)
		return UROCE_DROP_NONE; /* a piece lost before those seen may lie below lo too */
	if (roce_psn_diff(psn, f->lo) < 0 || roce_psn_diff(psn, f->hi) > 0)
		return UROCE_DROP_PSN_OUT_OF_WINDOW;
	return UROCE_DROP_NONE;
}

/* A packet of message seq at psn: the sender knew message seq -
 * SR_MSG_WIN done when it started it (its slot window), so that message,
 * if open, sent nothing at or after psn: its span ends before it (and
 * starts at the receive window's base, where a lost piece may lie). */
static void fin_close(struct uroce_qp *qp, uint32_t seq, uint32_t psn)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	struct sr_fin *f = &r->fin[(seq - SR_MSG_WIN) % SR_FIN_RING];

	if (!f->open || f->seq != seq - SR_MSG_WIN)
		return;
	f->open = false;
	f->lo = r->cum;
	f->hi = psn_add(psn, ROCE_PSN_MASK);
	f->known = SR_FIN_SPAN;
}

static void finish_msg(struct uroce_qp *qp, struct sr_rmsg *m, enum uroce_wc_status st, bool early)
{
	struct sr_state *s = sr_of(qp);

	if (m->done)
		return;
	m->done = true;
	fin_record(qp, m, early);
	if (m->fence)
		s->rx.nfence--;
	m->st = st;
	if (m->is_ec && m->have_first && m->have_npk) {
		/* every PSN of the message counts as arrived: lost parity, rebuilt data */
		uint32_t total = ec_total_pkts(s, m->npk);

		for (uint32_t i = 0; i < total; i++)
			sr_rx_count_psn(qp, psn_add(m->first_psn, i));
	}
	deliver(qp, m);
}

void sr_rx_finish(struct uroce_qp *qp, struct sr_rmsg *m)
{
	finish_msg(qp, m, UROCE_WC_SUCCESS, true);
	sr_of(qp)->rx.sack_pending = true; /* its msg_cum tells the sender to start no more pieces of it */
}

void sr_rx_check_done(struct uroce_qp *qp, struct sr_rmsg *m)
{
	if (m->done || !m->have_npk || m->nrecv < m->npk || (m->desc_expected && !m->have_desc))
		return;
	/* fenced: every packet sent before it must be here first */
	if (m->fence && (!m->have_first || roce_psn_diff(sr_of(qp)->rx.cum, m->first_psn) < 0))
		return;
	finish_msg(qp, m, UROCE_WC_SUCCESS, false);
}

/* cum moved: fenced messages waiting for it may finish now (re-entered
 * from their own finishing, which can move cum again: the outer call
 * scans once more instead) */
static void fence_check(struct uroce_qp *qp)
{
	struct sr_rx *r = &sr_of(qp)->rx;

	if (r->in_fence) {
		r->fence_again = true;
		return;
	}
	r->in_fence = true;
	do {
		r->fence_again = false;
		for (uint32_t seq = r->msg_cum; seq != r->bind_next && r->nfence; seq++) {
			struct sr_rmsg *m = &r->slot[seq % SR_MSG_WIN];

			if (m->bound && m->seq == seq && m->fence && !m->done)
				sr_rx_check_done(qp, m);
		}
	} while (r->fence_again);
	r->in_fence = false;
}

void sr_rx_note_pkt(struct uroce_qp *qp, struct sr_rmsg *m, uint32_t idx)
{
	(void)qp;
	if (m->wqe.precv)
		precv_note(m->wqe.precv, m, idx);
}

/* Bind receive WQEs to messages up to seq (order-based matching). */
static struct sr_rmsg *bind_upto(struct uroce_qp *qp, uint32_t seq)
{
	struct sr_rx *r = &sr_of(qp)->rx;

	while ((int32_t)(seq - r->bind_next) >= 0) {
		struct sr_rmsg *m = &r->slot[r->bind_next % SR_MSG_WIN];
		struct uroce_sge *sge = m->wqe.sge;
		uint64_t *bits = m->bits, *sub = m->subdone;

		if (m->bound)
			return NULL; /* its previous message is not delivered yet */
		memset(m, 0, offsetof(struct sr_rmsg, bits));
		m->bits = bits;
		m->subdone = sub;
		m->wqe.sge = sge;
		if (qp->init.rel.imm_counter) {
			/* a counted WRITE with immediate needs no receive */
			m->wqe.wr_id = 0;
			m->wqe.precv = NULL;
			m->wqe.num_sge = 0;
			m->wqe.length = 0;
		} else if (!qp_take_rwqe(qp, &m->wqe)) {
			ctx_count_drop(qp->ctx, UROCE_DROP_NO_RECV_BUFFER);
			return NULL;
		}
		memset(bits, 0, (size_t)m->bits_words * 8);
		if (sub)
			memset(sub, 0, (size_t)m->bits_words * 8);
		m->bits_words = 0;
		m->seq = r->bind_next;
		m->bound = true;
		m->op = UROCE_WR_SEND;
		m->st = UROCE_WC_SUCCESS;
		if (m->wqe.precv)
			precv_bind(m->wqe.precv, qp, m);
		r->bind_next++;
	}
	return &r->slot[seq % SR_MSG_WIN];
}

bool sr_rx_bind_next(struct uroce_qp *qp)
{
	struct sr_rx *r = &sr_of(qp)->rx;

	if (r->bind_next - r->msg_cum >= SR_MSG_WIN)
		return false;
	return bind_upto(qp, r->bind_next) != NULL;
}

/* The receiver cannot go on (a message longer than its buffer): like
 * rc's responder it goes to ERR; the sender runs out of retries. */
static void rx_fatal(struct uroce_qp *qp, struct sr_rmsg *m, enum uroce_wc_status st, enum uroce_drop_reason why)
{
	/* as rc's responder for an invalid request (IBTA class C) */
	struct uroce_async_event ev = { .event_type = UROCE_EVENT_QP_REQ_ERR };

	ctx_count_drop(qp->ctx, why);
	m->st = st;
	push_recv_wc(qp, m);
	m->delivered = true;
	m->bound = false;
	qp_to_error(qp);
	ev.element.qp = qp;
	ctx_async_event(qp->ctx, &ev);
}

static void rx_desc(struct uroce_qp *qp, struct sr_rmsg *m, const struct roce_pkt *pkt)
{
	const uint8_t *b = pkt->payload;
	uint32_t len, rkey;
	uint64_t raddr;

	if (pkt->payload_len < SRW_DESC_LEN || b[0] != SRW_VERSION ||
	    (b[1] != UROCE_WR_SEND && b[1] != UROCE_WR_SEND_WITH_IMM && b[1] != UROCE_WR_RDMA_WRITE_WITH_IMM) ||
	    (b[3] && !sr_of(qp)->ec) || (b[2] & ~(SRW_DESC_IMM | SRW_DESC_FENCE))) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	if (qp->init.rel.imm_counter && b[1] != UROCE_WR_RDMA_WRITE_WITH_IMM) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE); /* a counting QP takes no SENDs */
		return;
	}
	len = roce_get_be32(b + 4);
	rkey = roce_get_be32(b + 12);
	raddr = roce_get_be64(b + 16);
	if (m->have_npk && len != m->len) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (npkts(len, qp->mtu) > sr_of(qp)->rx.max_pkts) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (b[1] == UROCE_WR_RDMA_WRITE_WITH_IMM) {
		if (!rx_check_write(qp, rkey, raddr, len))
			return;
		if (!m->write) {
			m->write = true;
			m->rkey = rkey;
			m->wqe.sge[0].addr = raddr; /* the target, for rebuilt chunks */
		} else if (m->wqe.sge[0].addr != raddr || m->rkey != rkey) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
			return;
		}
	} else if (m->write) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	} else if (len > m->wqe.length) {
		rx_fatal(qp, m, UROCE_WC_LOC_LEN_ERR, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	m->op = b[1];
	memcpy(&m->imm, b + 8, 4);
	if ((b[2] & SRW_DESC_FENCE) && !m->fence) {
		m->fence = true;
		sr_of(qp)->rx.nfence++;
	}
	m->len = len;
	m->npk = npkts(len, qp->mtu);
	m->have_npk = true;
	m->have_desc = true;
	m->desc_expected = true;
	m->is_ec = b[3] != 0;
	if (!m->have_first) {
		m->first_psn = roce_get_be32(b + 24) & ROCE_PSN_MASK;
		m->have_first = true;
	}
	sr_rx_mark_psn(qp, pkt->psn);
	sr_rx_note_pkt(qp, m, m->npk - 1); /* the last chunk may be whole now that its end is known */
	if (m->is_ec)
		for (uint32_t s = 0; s * sr_of(qp)->cfg.ec_k < m->npk; s++)
			ec_rx_sub(qp, m, s, true);
	sr_rx_check_done(qp, m);
}

static void rx_plain_write(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	struct mr_int *mr;

	if (pkt->payload_len != pkt->reth.dma_len || pkt->payload_len > qp->mtu) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	/* a zero-length one too: it marks its PSN arrived, so an unchecked
	 * one would make the real packet at that PSN a duplicate */
	mr = rx_check_write(qp, pkt->reth.rkey, pkt->reth.va, pkt->payload_len);
	if (!mr)
		return;
	if (pkt->payload_len)
		memcpy((uint8_t *)(uintptr_t)pkt->reth.va, pkt->payload, pkt->payload_len);
	sr_rx_mark_psn(qp, pkt->psn);
}

void sr_rx_data(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	struct sr_state *st = sr_of(qp);
	struct sr_rx *r = &st->rx;
	uint32_t imm, seq, kind, idx, mtu = qp->mtu;
	struct sr_rmsg *m;
	bool late;
	int32_t d;

	(void)f;
	if (pkt->opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY) && pkt->opcode != (ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	if (qp->state < UROCE_QPS_RTR || qp->state > UROCE_QPS_SQD || !r->bits) {
		ctx_count_drop(qp->ctx, UROCE_DROP_QP_STATE);
		return;
	}
	d = roce_psn_diff(pkt->psn, r->cum);
	if (d >= (int32_t)r->nbits) {
		qp->stats.out_of_sequence++;
		ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
		return;
	}
	if (d < 0 || bit_get(r->bits, pkt->psn & r->mask)) {
		/* a copy of what arrived: answer so the sender stops, count it so
		 * it learns its retransmission was not needed */
		uint64_t now = ctx_now(qp->ctx);

		qp->stats.duplicates++;
		r->dups++;
		r->dup_psn = pkt->psn;
		ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
		/* a SACK (and its copies on every path) for duplicates at most
		 * once per RTT: a sender resends no faster, so more duplicates
		 * than that are a forger's (anyone can send one behind cum) */
		if (r->dup_sack_ns && now - r->dup_sack_ns < (st->tx.srtt ? st->tx.srtt : st->rto_min_ns)) {
			qp->stats.dup_sacks_held++;
			return;
		}
		r->dup_sack_ns = now;
		r->sack_pending = true;
		r->fan_due = true;
		ctx_kick(qp);
		return;
	}
	if ((pkt->tos >> 2) == SRW_TRIM_DSCP && pkt->payload_len < pkt->reth.dma_len) {
		/* a switch cut its payload (trimming): nothing to place, but the
		 * sender learns at once which packet to send again */
		sr_rx_trimmed(qp, pkt->psn);
		return;
	}
	qp->rx_packets++;
	/* a SACK for the burst when a packet asks, and whenever one came out
	 * of order: ahead of a hole, or late into one (the sender's loss
	 * detection and its reordering window need both at once); only once
	 * the packet is taken (rx_advance_cum): a forged one gets no answer */
	r->ask = pkt->ackreq || d != 0 || roce_psn_diff(pkt->psn, r->high) < 0;
	if (r->ask && !r->ask_rx_ns)
		r->ask_rx_ns = ctx_now(qp->ctx);
	ctx_kick(qp); /* the SACK leaves in the next transmit pass: one per burst */
	if (pkt->opcode == (ROCE_TR_UC | ROCE_OP_WRITE_ONLY)) {
		rx_plain_write(qp, pkt);
		return;
	}
	imm = pkt->imm;
	kind = srw_imm_kind(imm);
	idx = srw_imm_idx(imm);
	seq = r->msg_cum + ((srw_imm_msg(imm) - r->msg_cum) & SRW_MSG_MASK);
	if (kind > SRW_PARITY || (kind == SRW_PARITY && !st->ec)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
		return;
	}
	if (seq - r->msg_cum >= SR_MSG_WIN) {
		/* a late packet of a message already finished (completed early,
		 * or whole by decoding): it lands nowhere, but its PSN counts so
		 * the sender stops. One from too far ahead is dropped unmarked. */
		bool behind = ((r->msg_cum - srw_imm_msg(imm)) & SRW_MSG_MASK) <= SRW_MSG_MASK + 1 - 2 * SR_MSG_WIN;
		/* only inside the span that message used: another PSN would
		 * make a current message's real packet a duplicate */
		enum uroce_drop_reason why = behind ? fin_check(qp, seq - (SRW_MSG_MASK + 1), pkt->psn, kind, idx)
		                                    : UROCE_DROP_STALE_MSG;

		if (why == UROCE_DROP_NONE)
			sr_rx_mark_psn(qp, pkt->psn);
		if (why != UROCE_DROP_NONE || (kind != SRW_PARITY && kind != SRW_DESC))
			ctx_count_drop(qp->ctx, why != UROCE_DROP_NONE ? why : UROCE_DROP_STALE_MSG);
		return;
	}
	fin_close(qp, seq, pkt->psn);
	m = &r->slot[seq % SR_MSG_WIN];
	if (!(m->bound && m->seq == seq)) {
		m = bind_upto(qp, seq);
		if (!m) {
			/* no receive WQE: dropped unmarked; the SACK tells the sender
			 * how many receives there are, and a post_recv brings the next */
			__atomic_store_n(&r->rnr, true, __ATOMIC_RELEASE);
			r->sack_pending = true;
			return;
		}
	}
	if (m->done) {
		/* its message finished (partial completion, or decoded): a late
		 * copy; an ec message's trailing parity and descriptor are
		 * expected, not counted. Its PSN counts only inside the span
		 * the message used. */
		enum uroce_drop_reason why = fin_check(qp, seq, pkt->psn, kind, idx);

		if (why != UROCE_DROP_NONE) {
			ctx_count_drop(qp->ctx, why);
			return;
		}
		sr_rx_mark_psn(qp, pkt->psn);
		if (kind != SRW_PARITY && kind != SRW_DESC)
			ctx_count_drop(qp->ctx, UROCE_DROP_STALE_MSG);
		return;
	}
	m->last_rx_ns = ctx_now(qp->ctx);
	m->nacks = 0; /* packets flow again: a later stall gets its NACK after one timeout */
	switch (kind) {
	case SRW_DESC:
		if (pkt->reth.rkey != SRW_MSG_RKEY) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_RKEY);
			return;
		}
		if (m->have_desc) {
			/* ec's second copy goes at the message's last PSN; one at
			 * any other PSN is not this message's */
			if (pkt->psn != m->first_psn &&
			    !(m->is_ec && m->have_npk && pkt->psn == psn_add(m->first_psn, ec_total_pkts(st, m->npk) - 1))) {
				ctx_count_drop(qp->ctx, UROCE_DROP_PSN_OUT_OF_WINDOW);
				return;
			}
			ctx_count_drop(qp->ctx, UROCE_DROP_DUPLICATE);
			sr_rx_mark_psn(qp, pkt->psn);
			return;
		}
		rx_desc(qp, m, pkt);
		return;
	case SRW_PARITY:
		if (pkt->reth.rkey != SRW_MSG_RKEY || pkt->payload_len != mtu || pkt->reth.va != (uint64_t)idx * mtu) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
			return;
		}
		ec_rx_parity(qp, m, pkt, idx);
		return;
	default:
		break;
	}
	/* a data packet */
	/* only a zero-length message's one packet (index 0) is empty */
	if (idx >= r->max_pkts || pkt->payload_len != pkt->reth.dma_len || pkt->payload_len > mtu ||
	    (kind == SRW_DATA && pkt->payload_len != mtu) || (pkt->payload_len == 0 && idx != 0) ||
	    (m->have_npk && idx >= m->npk) ||
	    (m->have_npk && kind != SRW_DATA && idx + 1 != m->npk)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_LENGTH_MSG);
		return;
	}
	if (pkt->reth.rkey == SRW_MSG_RKEY) {
		if (qp->init.rel.imm_counter) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE); /* a SEND's packet: a counting QP takes none */
			return;
		}
		if (m->write || pkt->reth.va != (uint64_t)idx * mtu) {
			ctx_count_drop(qp->ctx, UROCE_DROP_OUT_OF_BOUNDS);
			return;
		}
		if ((uint64_t)idx * mtu + pkt->payload_len > m->wqe.length) {
			rx_fatal(qp, m, UROCE_WC_LOC_LEN_ERR, UROCE_DROP_BAD_LENGTH_MSG);
			return;
		}
	} else {
		/* WRITE with immediate: into the rkey's region, at a consistent offset */
		uint64_t base = pkt->reth.va - (uint64_t)idx * mtu;

		if (pkt->reth.va < (uint64_t)idx * mtu || (m->write && (m->wqe.sge[0].addr != base || m->rkey != pkt->reth.rkey)) ||
		    (!m->write && m->nrecv)) {
			ctx_count_drop(qp->ctx, UROCE_DROP_OUT_OF_BOUNDS);
			return;
		}
		if (!rx_check_write(qp, pkt->reth.rkey, pkt->reth.va, pkt->payload_len))
			return;
		m->write = true;
		m->rkey = pkt->reth.rkey;
		m->op = UROCE_WR_RDMA_WRITE_WITH_IMM;
		m->wqe.sge[0].addr = base;
	}
	if (m->is_ec && !m->have_first) {
		/* ec messages take consecutive PSNs: this packet tells where it starts */
		m->first_psn = psn_add(pkt->psn, (uint32_t)-(int32_t)ec_psn_data(st, 0, idx)) & ROCE_PSN_MASK;
		m->have_first = true;
	}
	if (kind != SRW_DATA && !m->have_npk) {
		m->npk = idx + 1;
		m->len = idx * mtu + pkt->payload_len;
		m->have_npk = true;
	}
	if (!sr_rx_place(qp, m, idx * mtu, pkt->payload, pkt->payload_len))
		return;
	{
		/* where its packets went, for the span it keeps once finished */
		uint32_t base = psn_add(pkt->psn, (uint32_t)-idx);

		if (!m->have_base) {
			m->base_lo = m->base_hi = base;
			m->have_base = true;
		} else if (roce_psn_diff(base, m->base_lo) < 0) {
			m->base_lo = base;
		} else if (roce_psn_diff(base, m->base_hi) > 0) {
			m->base_hi = base;
		}
	}
	if (!bit_get(m->bits, idx)) {
		sr_msg_mark(m, idx);
		m->nrecv++;
		m->placed += pkt->payload_len;
		sr_rx_note_pkt(qp, m, idx);
	}
	if (kind == SRW_LAST_DESC)
		m->desc_expected = true;
	late = roce_psn_diff(pkt->psn, r->high) < 0; /* something sent after it came first */
	sr_rx_mark_psn(qp, pkt->psn);
	if (m->is_ec)
		ec_rx_sub(qp, m, idx / st->cfg.ec_k, late);
	sr_rx_check_done(qp, m);
}

static size_t sr_default_bytes(void)
{
	return sr_default_state_bytes(false, 4096);
}

const struct rel_ops rel_sr_ops = {
	.name = "sr",
	.flags = REL_F_SPRAYS,
	.init = sr_init,
	.fini = sr_fini,
	.ready = sr_ready,
	.post = sr_post,
	.tx = sr_tx,
	.rx_data = sr_rx_data,
	.rx_ctrl = sr_rx_ctrl,
	.is_ctrl = sr_is_ctrl,
	.timer = sr_timer,
	.complete = req_complete,
	.error = sr_error,
	.reset = sr_reset,
	.state_bytes = sr_state_bytes,
	.rx_wants_kick = sr_rx_wants_kick,
	.default_state_bytes = sr_default_bytes,
	.stats = sr_pc_stats,
	.path_stats = sr_pc_path_stats,
	.cnp = sr_pc_cnp,
	.fo_switch = sr_fo_switch,
	.fo_idle = sr_fo_idle,
};
