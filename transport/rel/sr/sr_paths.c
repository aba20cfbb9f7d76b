/* SPDX-License-Identifier: MIT */
/* Paths and congestion control of an sr/ec QP: which path a
 * packet takes and whether a controller lets it go now (sender), and the
 * congestion feedback a receiver returns (CE is answered by a CNP in
 * qp_dispatch.c, trimmed packets by a TRIM NACK here). sr_tx.c and
 * sr_ack.c call in where a packet leaves, is acknowledged or is lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rel/sr/rel_sr.h"

#define CC_LINK_MBPS_DEFAULT 10000u
#define CC_BASE_RTT_US_DEFAULT 20u
#define ACK_EVERY_DEFAULT 16u
#define IP_ECT0 0x02u

static void eqds_maybe_rts(struct uroce_qp *qp, bool now_anyway);

static bool cc_per_path(const struct sr_state *st)
{
	return st->ps.cc != NULL;
}

int sr_pc_init(struct uroce_qp *qp)
{
	const struct uroce_path_attr *pa = &qp->init.path;
	const struct uroce_cc_attr *ca = &qp->init.cc;
	struct sr_state *st = sr_of(qp);

	if (pa->npaths > UROCE_MAX_PATHS)
		return uroce_fail(-EINVAL, "uroce_qp_create: path.npaths %u; accepted 0 (= 1) to %u", pa->npaths,
		                  UROCE_MAX_PATHS);
	if ((unsigned)pa->policy >= UROCE_PATH__COUNT)
		return uroce_fail(-EINVAL, "uroce_qp_create: path.policy %d; accepted default, single, p2c, rr, random "
		                           "(0-%d)", (int)pa->policy, UROCE_PATH__COUNT - 1);
	if (pa->nports > UROCE_MAX_PORTS)
		return uroce_fail(-EINVAL, "uroce_qp_create: path.nports %u; accepted 0 (the QP's port) to %u", pa->nports,
		                  UROCE_MAX_PORTS);
	for (unsigned i = 0; i < pa->nports; i++)
		if (pa->ports[i] < 1 || pa->ports[i] > qp->ctx->nports)
			return uroce_fail(-EINVAL, "uroce_qp_create: path.ports[%u] = %u; accepted port numbers 1-%u", i,
			                  pa->ports[i], qp->ctx->nports);
	if ((unsigned)ca->algo >= UROCE_CC__COUNT)
		return uroce_fail(-EINVAL, "uroce_qp_create: cc.algo %d; accepted none, dcqcn, swift, cubic, eqds (0-%d)",
		                  (int)ca->algo, UROCE_CC__COUNT - 1);
	if (ca->ack_every_pkts > SR_WIN_MAX)
		return uroce_fail(-EINVAL, "uroce_qp_create: cc.ack_every_pkts %u; accepted 0 (= %u) to %u",
		                  ca->ack_every_pkts, ACK_EVERY_DEFAULT, SR_WIN_MAX);
	st->ack_every = ca->ack_every_pkts ? ca->ack_every_pkts : ACK_EVERY_DEFAULT;
	st->tx.msg_path = PATH_NONE;
	return 0;
}

/* INIT -> RTR: the source port, the MTU and the destination are known. */
int sr_pc_ready(struct uroce_qp *qp)
{
	const struct uroce_path_attr *pa = &qp->init.path;
	const struct uroce_cc_attr *ca = &qp->init.cc;
	struct sr_state *st = sr_of(qp);
	const struct cc_ops *ops = cc_ops_of(ca->algo);
	uint8_t ports[UROCE_MAX_PORTS];
	unsigned nports = pa->nports ? pa->nports : 1;
	struct cc_env env;
	uint64_t now = ctx_clock(qp->ctx);
	int rc;

	path_set_fini(&st->ps);
	/* the context port indices first, then the next hops: in one loop
	 * gcc's vectoriser sees an overflow of ports[] that cannot happen
	 * (sr_pc_init refused more than UROCE_MAX_PORTS) */
	for (unsigned i = 0; i < nports; i++)
		ports[i] = pa->nports ? (uint8_t)(pa->ports[i] - 1) : qp->port;
	for (unsigned i = 0; i < nports; i++) {
		if (ports[i] == qp->port)
			continue;
		/* another port: its next hop, but the QP's own addresses (the
		 * peer checks them), so only the egress differs */
		rc = ctx_resolve_dest(qp->ctx, ports[i], &qp->attr.ah_attr, &st->pdest[ports[i]]);
		if (rc)
			return uroce_fail(rc, "uroce_qp_modify: QP 0x%x: path port %u: %s", qp->qpn, ports[i] + 1u,
			                  uroce_last_error());
		memcpy(st->pdest[ports[i]].sip, qp->d.sip, 16);
	}
	if (path_set_init(&st->ps, pa, qp->sport, ports, nports, ((uint64_t)qp->qpn << 32) ^ qp->dqpn ^ now))
		return uroce_fail(-ENOMEM, "uroce_qp_modify: QP 0x%x: out of memory for %u paths", qp->qpn, pa->npaths);
	/* source ports the peer chose for its engine's queue (UROCE_QP_SPORTS) */
	for (unsigned i = 0; qp->attr.num_sports && i < st->ps.n; i++)
		st->ps.p[i].sport = qp->attr.sports[i % qp->attr.num_sports];
	env.mtu = qp->mtu;
	env.line_bps = (uint64_t)(ca->link_mbps ? ca->link_mbps : CC_LINK_MBPS_DEFAULT) * 1000000u;
	env.base_rtt_ns = (uint64_t)(ca->base_rtt_us ? ca->base_rtt_us : CC_BASE_RTT_US_DEFAULT) * 1000u;
	env.max_window = st->cfg.window_bytes ? st->cfg.window_bytes : st->cfg.window_pkts * qp->mtu;
	if (ops->flags & CC_PER_PATH) {
		st->ps.cc = calloc(st->ps.n, sizeof(*st->ps.cc));
		if (!st->ps.cc) {
			path_set_fini(&st->ps);
			return uroce_fail(-ENOMEM, "uroce_qp_modify: QP 0x%x: out of memory for %u controllers", qp->qpn,
			                  st->ps.n);
		}
		for (unsigned i = 0; i < st->ps.n; i++)
			cc_flow_init(&st->ps.cc[i], ops, &env, now);
		cc_flow_init(&st->cc, &cc_none_ops, &env, now);
	} else {
		cc_flow_init(&st->cc, ops, &env, now);
	}
	st->rx.eqds.rate_bps = env.line_bps;
	st->rx.eqds.port = qp->port;
	st->rx.eqds.mtu = qp->mtu;
	st->tx.msg_path = PATH_NONE;
	return 0;
}

void sr_pc_fo_ports(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct path_set *ps = &st->ps;

	/* a new member is a new route: what the paths learnt (RTT, losses,
	 * quarantine) was of the old one */
	for (unsigned i = 0; i < ps->n; i++) {
		struct qp_path *p = &ps->p[i];

		p->port = qp->port;
		p->state = PATH_UP;
		p->inflight = 0;
		p->loss_run = p->downs = 0;
		p->srtt_ns = p->min_rtt_ns = 0;
		p->down_until = 0;
	}
	ps->nup = ps->n;
	st->rx.eqds.port = qp->port;
	/* RTSs lost on the old member spend no retry on the new one */
	st->tx.rts_unanswered = 0;
}

void sr_pc_fini(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);

	eqds_rx_detach(qp, &st->rx.eqds);
	path_set_fini(&st->ps);
}

void sr_pc_stats(const struct uroce_qp *qp, struct uroce_qp_stats *s)
{
	const struct sr_state *st = sr_of(qp);
	uint64_t now = ctx_clock(qp->ctx);

	for (unsigned i = 0; i < st->ps.n; i++)
		s->paths_down += st->ps.p[i].quarantines;
	if (!st->cc.ops)
		return;
	if (st->ps.cc) {
		s->cc_window_bytes = 0;
		for (unsigned i = 0; i < st->ps.n; i++) {
			uint64_t w = st->ps.cc[i].ops->window(st->ps.cc[i].st);

			s->cc_window_bytes = w == UINT64_MAX || s->cc_window_bytes + w < w ? UINT64_MAX
			                                                                     : s->cc_window_bytes + w;
		}
		return;
	}
	s->cc_window_bytes = st->cc.ops->window(st->cc.st);
	/* a read of the rate may advance a controller's timers to now: on
	 * a copy, so that reading the counters changes nothing */
	{
		struct cc_flow f = st->cc;

		s->cc_rate_bps = f.ops->rate_bps ? f.ops->rate_bps(f.st, now) : 0;
	}
}

int sr_pc_path_stats(const struct uroce_qp *qp, unsigned i, struct uroce_path_stats *out)
{
	const struct sr_state *st = sr_of(qp);
	const struct qp_path *p;

	if (!st->ps.p || i >= st->ps.n)
		return uroce_fail(-EINVAL, "uroce_qp_path_stats: path %u; QP 0x%x has %u (accepted 0-%u)%s", i, qp->qpn,
		                  st->ps.n, st->ps.n ? st->ps.n - 1u : 0u, st->ps.p ? "" : " once it is in RTR");
	p = &st->ps.p[i];
	memset(out, 0, sizeof(*out));
	out->sport = p->sport;
	out->port_num = (uint8_t)(p->port + 1);
	out->up = p->state == PATH_UP;
	out->inflight_bytes = p->inflight;
	out->srtt_ns = p->srtt_ns;
	out->min_rtt_ns = p->min_rtt_ns;
	out->tx_pkts = p->tx_pkts;
	out->acked_pkts = p->acked_pkts;
	out->losses = p->losses;
	out->ecn_marks = p->ecn_marks;
	out->trims = p->trims;
	if (st->ps.cc)
		out->cc_window_bytes = st->ps.cc[i].ops->window(st->ps.cc[i].st);
	return 0;
}

void sr_pc_msg_start(struct uroce_qp *qp, uint32_t msg_len)
{
	struct sr_tx *t = &sr_of(qp)->tx;

	t->msg_sticky = msg_len < sr_of(qp)->ps.spray_min;
	t->msg_path = PATH_NONE;
	/* EQDS: a message adds to what the sender wants; ask before the
	 * credit runs out, not after. An idle sender starts a burst with one
	 * BDP on speculation, its RTS beside it. */
	if (sr_of(qp)->cc.ops->flags & CC_CREDIT) {
		struct sr_state *st = sr_of(qp);
		bool spec = !st->cc.inflight && st->cc.ops->speculate(st->cc.st);

		eqds_maybe_rts(qp, spec);
	}
}

static struct cc_flow *flow_of(struct sr_state *st, unsigned path)
{
	return cc_per_path(st) ? &st->ps.cc[path] : &st->cc;
}

/* Bytes the sender still has to send: lost packets, the rest of the WQE
 * going out and up to 64 WQEs after it (EQDS asks for this much). */
static uint64_t tx_backlog(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire), n = 0;
	uint64_t b = (uint64_t)t->nlost * qp->mtu;

	for (uint32_t i = qp->sq_cur; i != head && n < 64; i++, n++) {
		const struct swqe *w = &qp->sq[i & qp->sq_mask];
		uint64_t done = i == qp->sq_cur ? (uint64_t)t->pidx * qp->mtu : 0;

		b += w->length > done ? w->length - done : 0;
		b += qp->mtu; /* its descriptor or tail: never under-ask */
	}
	return b;
}

static uint64_t eqds_retry_ns(const struct sr_tx *t)
{
	return 2 * t->srtt > EQDS_RTS_RETRY_MIN_NS ? 2 * t->srtt : EQDS_RTS_RETRY_MIN_NS;
}

static void eqds_maybe_rts(struct uroce_qp *qp, bool now_anyway)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	const struct cc_ops *o = st->cc.ops;
	uint64_t sent, spec, asked, want;
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_RTS_LEN];
	unsigned n;

	o->rts_counts(st->cc.st, &sent, &spec, &asked);
	want = sent + tx_backlog(qp);
	if (!o->rts_due(st->cc.st, &want, t->now, now_anyway ? 0 : eqds_retry_ns(t)) && !now_anyway)
		return;
	srw_ctrl_hdr(b, SRW_CTRL_RTS, sizeof(b), qp->tok_remote);
	roce_put_be64(b + SRW_CTRL_HDR_LEN, want);
	roce_put_be64(b + SRW_CTRL_HDR_LEN + 8, spec);
	/* a retry (it wants no more than it asked for): the last RTS or its
	 * PULLs were lost, so this one goes on every path */
	n = sr_pc_send_credit_ctrl(qp, b, sizeof(b), asked && want <= asked);
	qp->stats.cc_rts_sent += n;
	if (n && !t->rts_unanswered++)
		t->rts_first_ns = t->now;
}

/* EQDS short of credit spends retries only on RTSs that went and drew no
 * PULL (eqds_tx_pull resets the count): its held packets never go, so
 * they never run out of copies. 1 + retry_cnt unanswered retries, and the
 * first RTS unanswered for as long as rc would wait (gave_up's limit),
 * end the QP. Counted per RTS sent, not per RTO waited: an engine thread
 * that merely did not run sent none. */
static bool eqds_gave_up(const struct uroce_qp *qp)
{
	const struct sr_tx *t = &sr_of(qp)->tx;

	if (!qp->attr.timeout || t->rts_unanswered < 2u + qp->attr.retry_cnt)
		return false;
	return t->now - t->rts_first_ns >= (uint64_t)(qp->attr.retry_cnt + 1u) * (4096ull << qp->attr.timeout);
}

int sr_pc_gate(struct uroce_qp *qp, struct sr_txp *p, bool retx, unsigned *path, const struct dest **d)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	struct path_set *ps = &st->ps;
	uint64_t now = t->now, g;
	unsigned i;

	t->credit_blocked = false;
	if (!cc_per_path(st)) {
		g = cc_flow_gate(&st->cc, now, p->len);
		if (g) {
			t->pace_ns = g == UINT64_MAX ? 0 : g;
			if (st->cc.ops->flags & CC_CREDIT && g == UINT64_MAX) {
				/* ask (again, once the retry time passed: an RTS or its
				 * PULLs may be lost), and wake up to ask again */
				t->credit_blocked = true;
				eqds_maybe_rts(qp, false);
				t->pace_ns = now + eqds_retry_ns(t);
				if (eqds_gave_up(qp)) {
					t->cc_gave_up = true;
					ctx_kick(qp);
				}
			}
			qp->stats.cc_blocked++;
			return -EAGAIN;
		}
	}
	if (ps->n == 1 && !ps->cc) {
		i = 0; /* one path: never quarantined (it is the last) */
	} else if (!retx && t->msg_sticky && t->msg_path != PATH_NONE && path_usable(ps, t->msg_path, now, p->len)) {
		i = t->msg_path;
	} else {
		/* a packet lost once goes again by a path that is delivering,
		 * not by chance onto another dead one (nor as a probe) */
		i = retx && ps->ops != &path_single_ops ? path_healthy(ps, now, p->len, p->path) : PATH_NONE;
		if (i == PATH_NONE)
			i = ps->ops->select(ps, now, p->len, retx ? p->path : PATH_NONE);
		if (i == PATH_NONE) {
			g = path_next_open(ps, now, p->len);
			t->pace_ns = g == UINT64_MAX ? 0 : g;
			qp->stats.cc_blocked++;
			return -EAGAIN;
		}
		if (!retx && t->msg_sticky)
			t->msg_path = (uint16_t)i;
	}
	*path = i;
	*d = ps->p[i].port == qp->port ? &qp->d : &st->pdest[ps->p[i].port];
	return 0;
}

unsigned sr_pc_ctrl_path(struct uroce_qp *qp)
{
	struct sr_state *st = sr_of(qp);
	struct path_set *ps = &st->ps;

	for (unsigned k = 0; k < ps->n; k++) {
		unsigned i = (st->tx.ctrl_rr + k) % ps->n;

		if (ps->p[i].state == PATH_UP) {
			st->tx.ctrl_rr = (uint16_t)((i + 1) % ps->n);
			return i;
		}
	}
	st->tx.ctrl_rr = (uint16_t)((st->tx.ctrl_rr + 1) % ps->n);
	return st->tx.ctrl_rr;
}

unsigned sr_pc_send_ctrl_copies(struct uroce_qp *qp, const uint8_t *body, uint32_t len, unsigned copies)
{
	unsigned k;

	/* sr_send_ctrl moves to the next usable path each time */
	for (k = 0; k < copies; k++)
		if (sr_send_ctrl(qp, body, len))
			break;
	return k;
}

unsigned sr_pc_fan_paths(const struct uroce_qp *qp)
{
	unsigned n = sr_of(qp)->ps.n;

	return n < SR_SACK_FAN_MAX ? n : SR_SACK_FAN_MAX;
}

unsigned sr_pc_send_credit_ctrl(struct uroce_qp *qp, const uint8_t *body, uint32_t len, bool fan)
{
	unsigned n = sr_of(qp)->ps.n;

	/* A receiver never learns which of its own paths are dead (it sends
	 * no data on them), so over a dead spine half its PULLs would vanish
	 * and each one lost stalls the sender until an RTS retry gets through
	 * (and that one is at risk too). Two copies on two paths: both die
	 * far less often, for one small packet per 16 KiB quantum; a retry
	 * (losses already happened) goes on every path. */
	return sr_pc_send_ctrl_copies(qp, body, len, fan ? sr_pc_fan_paths(qp) : n < 2 ? 1 : 2);
}

bool sr_pc_last_before_hold(const struct uroce_qp *qp, const struct sr_txp *p)
{
	const struct sr_state *st = sr_of(qp);
	const struct cc_flow *f = cc_per_path(st) ? &st->ps.cc[p->path < st->ps.n ? p->path : 0] : &st->cc;
	const struct cc_ops *o = f->ops;
	uint64_t w;

	if (o->flags & CC_CREDIT)
		return o->credit(f->st) < (int64_t)(p->len + qp->mtu);
	w = o->window(f->st);
	return w != UINT64_MAX && (uint64_t)f->inflight + p->len + qp->mtu > w;
}

void sr_pc_sent(struct uroce_qp *qp, struct sr_txp *p, unsigned path)
{
	struct sr_state *st = sr_of(qp);
	uint64_t now = st->tx.now;

	p->path = (uint8_t)path;
	p->flags |= SRP_CCIN;
	path_sent(&st->ps, path, now, p->len);
	/* the pacing floor: one packet per RTO (as the timer backs off) */
	flow_of(st, path)->max_gap_ns = sr_rto_now(&st->tx);
	cc_flow_sent(flow_of(st, path), now, p->len);
	if (cc_per_path(st))
		cc_flow_sent(&st->cc, now, p->len); /* the QP's none: keeps its in-flight count */
	st->tx.pace_ns = 0;
}

void sr_pc_gone(struct uroce_qp *qp, struct sr_txp *p)
{
	struct sr_state *st = sr_of(qp);

	if (!(p->flags & SRP_CCIN))
		return;
	p->flags &= (uint8_t)~SRP_CCIN;
	if (p->path < st->ps.n)
		path_gone(&st->ps, p->path, p->len);
	cc_flow_gone(flow_of(st, p->path), p->len);
	if (cc_per_path(st))
		cc_flow_gone(&st->cc, p->len);
}

void sr_pc_acked(struct uroce_qp *qp, const struct sr_txp *p, uint64_t now)
{
	struct sr_state *st = sr_of(qp);
	uint64_t rtt = now > p->sent_ns ? now - p->sent_ns : 1;
	bool first = p->ntx == 1;

	if (p->path >= st->ps.n)
		return;
	path_acked(&st->ps, p->path, now, first ? rtt : 0, first);
	if (cc_per_path(st)) {
		struct cc_flow *f = &st->ps.cc[p->path];
		struct cc_ack a = {
			.now = now,
			.rtt_ns = first ? rtt : 0,
			.bytes = p->len,
			.pkts = 1,
			.inflight = f->inflight,
		};

		f->ops->on_ack(f->st, &a);
	}
}

void sr_pc_ack_done(struct uroce_qp *qp, uint64_t now, uint64_t rtt_ns, uint64_t remote_ns, uint32_t bytes,
                    uint32_t pkts, uint8_t hops)
{
	struct sr_state *st = sr_of(qp);
	struct cc_ack a = {
		.now = now,
		.rtt_ns = rtt_ns,
		.remote_ns = remote_ns < rtt_ns ? remote_ns : 0,
		.bytes = bytes,
		.pkts = pkts,
		.inflight = st->cc.inflight,
		.hops = hops,
	};

	if (!cc_per_path(st) && pkts)
		st->cc.ops->on_ack(st->cc.st, &a);
}

void sr_pc_lost(struct uroce_qp *qp, struct sr_txp *p, enum sr_loss why, uint64_t now)
{
	struct sr_state *st = sr_of(qp);
	struct cc_flow *f;
	bool was_in = p->flags & SRP_CCIN;

	sr_pc_gone(qp, p);
	if (why == SR_LOSS_PROBE || why == SR_LOSS_NOCREDIT || why == SR_LOSS_FAILOVER || p->path >= st->ps.n)
		return;
	/* a packet lost twice tells of its path once */
	path_lost(&st->ps, p->path, now, was_in && why != SR_LOSS_TRIM);
	if (why == SR_LOSS_TRIM)
		st->ps.p[p->path].trims++;
	f = flow_of(st, p->path);
	f->ops->on_loss(f->st, now, why == SR_LOSS_RTO);
	qp->stats.cc_losses++;
}

void sr_pc_cnp(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_state *st = sr_of(qp);
	struct sr_tx *t = &st->tx;
	uint64_t now = ctx_clock(qp->ctx);
	unsigned path = 0;

	qp->stats.cnps_rcvd++;
	if (!t->ring)
		return;
	/* the CNP names the marked packet: its path counts the mark */
	if (roce_psn_diff(psn, t->una) >= 0 && roce_psn_diff(psn, t->nxt) < 0)
		path = t->ring[psn & t->mask].path;
	if (path >= st->ps.n)
		path = 0;
	path_ecn(&st->ps, path);
	{
		struct cc_flow *f = flow_of(st, path);

		if (f->ops->on_cnp)
			f->ops->on_cnp(f->st, now);
	}
	ctx_kick(qp);
}

/* --- trimming --------------------------------------------------------------- */

void sr_rx_trimmed(struct uroce_qp *qp, uint32_t psn)
{
	struct sr_rx *r = &sr_of(qp)->rx;

	qp->stats.trims_rcvd++;
	for (unsigned i = 0; i < r->ntrim; i++)
		if (r->trim_psn[i] == psn)
			return;
	if (r->ntrim < SRW_TRIM_MAX)
		r->trim_psn[r->ntrim++] = psn;
	ctx_kick(qp);
}

int sr_send_trims(struct uroce_qp *qp)
{
	struct sr_rx *r = &sr_of(qp)->rx;
	uint8_t b[SRW_CTRL_HDR_LEN + SRW_TRIM_FIXED + 4 * SRW_TRIM_MAX];
	uint32_t len = SRW_CTRL_HDR_LEN + SRW_TRIM_FIXED + 4u * r->ntrim;
	int rc;

	srw_ctrl_hdr(b, SRW_CTRL_TRIM, (uint16_t)len, qp->tok_remote);
	roce_put_be16(b + SRW_CTRL_HDR_LEN, r->ntrim);
	roce_put_be16(b + SRW_CTRL_HDR_LEN + 2, 0);
	for (unsigned i = 0; i < r->ntrim; i++)
		roce_put_be32(b + SRW_CTRL_HDR_LEN + 4 + 4 * i, r->trim_psn[i]);
	rc = sr_send_ctrl(qp, b, len);
	if (!rc)
		r->ntrim = 0;
	return rc;
}

void sr_tx_trims(struct uroce_qp *qp, const uint8_t *b, uint32_t len)
{
	struct sr_tx *t = &sr_of(qp)->tx;
	uint32_t n = roce_get_be16(b);
	uint64_t now = ctx_clock(qp->ctx);
	/* before an RTT sample the RTO floor stands in for the minimum RTT,
	 * so a packet goes again for TRIMs at most once per either */
	uint64_t gap = t->min_rtt ? t->min_rtt : sr_of(qp)->rto_min_ns;
	bool any = false;

	if (n == 0 || n > SRW_TRIM_MAX || len < SRW_TRIM_FIXED + 4 * n) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t psn = roce_get_be32(b + SRW_TRIM_FIXED + 4 * i);
		struct sr_txp *p;

		/* only a packet in flight, sent once or more and neither
		 * acknowledged nor already waiting: anything else is stale or
		 * forged and moves nothing */
		if (roce_psn_diff(psn, t->una) < 0 || roce_psn_diff(psn, t->nxt) >= 0) {
			ctx_count_drop(qp->ctx, UROCE_DROP_STALE_RESPONSE);
			continue;
		}
		p = &t->ring[psn & t->mask];
		if (p->flags & (SRP_SACKED | SRP_LOST))
			continue;
		/* a packet already sent again (RACK or an earlier NACK) less than
		 * a minimum RTT ago: the NACK is of an older copy, and this one
		 * may yet arrive. A first copy's NACK is always its own (a
		 * trimmed header skips the queues: it comes back sooner than
		 * any RTT the SACKs measured) */
		if (p->ntx > 1 && now - p->sent_ns < gap) {
			ctx_count_drop(qp->ctx, UROCE_DROP_CTRL_RATE);
			continue;
		}
		sr_txp_lost(qp, p, SR_LOSS_TRIM);
		qp->stats.trim_nacks_rcvd++;
		any = true;
	}
	if (any)
		ctx_kick(qp);
}
