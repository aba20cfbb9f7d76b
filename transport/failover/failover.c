/* SPDX-License-Identifier: MIT */
/* Failover across a port group (SHIFT section 4.2, docs/failover.md).
 *
 * A QP with backups has members: the primary (its own port and ah_attr)
 * and up to three backups, each a local port and the peer's GID behind
 * it. One member carries everything the QP sends (qp->d); packets from any
 * member are accepted. A member is usable when its link is up, nothing
 * here failed it (link, RTO, receive errors) and the peer did not say it
 * failed it. SHIFT's send-queue states are the enum below, and fo_step is
 * the one transition function; fo_run applies it until nothing changes.
 *
 * SHIFT sits on a NIC and has to copy WQEs to a second QP, and so meets
 * RNR and double-write corner cases when an ACK is lost at the switch.
 * Here both ends keep one PSN space across members: rewinding is go-back-N
 * (rc) or marking the outstanding packets lost (sr) on the new member,
 * and the responder's duplicate detection answers a packet it already
 * has without consuming a receive or placing it again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/neigh.h"
#include "transport/failover/failover.h"
#include "transport/rel/rel.h"
#include "transport/rel/sr/sr_wire.h"
#include "transport/core/async.h"
#include "transport/core/seg.h"

#define FO_STEPS_MAX 8u

static const char *const state_names[UROCE_FO__COUNT] = {
	[UROCE_FO_DEFAULT] = "Default",
	[UROCE_FO_FALLBACK] = "Fallback",
	[UROCE_FO_WAIT_SIGNALED] = "WaitSignaled",
	[UROCE_FO_WAIT_SINKED] = "WaitSinked",
};

static const char *const cause_names[UROCE_FO_CAUSE__COUNT] = {
	[UROCE_FO_CAUSE_NONE] = "none",
	[UROCE_FO_CAUSE_LINK] = "link",
	[UROCE_FO_CAUSE_RTO] = "rto",
	[UROCE_FO_CAUSE_ERRORS] = "errors",
	[UROCE_FO_CAUSE_PEER] = "peer",
};

const char *uroce_fo_state_str(enum uroce_fo_state s)
{
	return (unsigned)s < UROCE_FO__COUNT ? state_names[s] : NULL;
}

const char *uroce_fo_cause_str(enum uroce_fo_cause c)
{
	return (unsigned)c < UROCE_FO_CAUSE__COUNT ? cause_names[c] : NULL;
}

/* --- setup ------------------------------------------------------------------ */

static const struct ctx_hook fo_ctx_hook; /* the context's slow path and link changes, below */

static int fo_init(struct uroce_qp *qp)
{
	const struct uroce_failover_attr *a = &qp->init.failover;
	struct fo_state *f;

	if (!a->nbackups) {
		if (a->rto_fail || a->no_fail_back || a->err_threshold || a->probe_us || a->down_timeout_ms)
			return uroce_fail(-EINVAL, "uroce_qp_create: failover settings without failover.nbackups; "
			                           "accepted: nbackups 1-%u with them, or all zero", UROCE_FO_MAX_MEMBERS - 1);
		return 0;
	}
	if (a->nbackups > UROCE_FO_MAX_MEMBERS - 1)
		return uroce_fail(-EINVAL, "uroce_qp_create: failover.nbackups %u; accepted 0-%u", a->nbackups,
		                  UROCE_FO_MAX_MEMBERS - 1);
	if (qp->type != UROCE_QPT_RC ||
	    (qp->init.rel.reliability != UROCE_REL_RC && qp->init.rel.reliability != UROCE_REL_SR))
		return uroce_fail(-EINVAL, "uroce_qp_create: failover needs qp_type UROCE_QPT_RC with reliability rc or "
		                           "sr (ec and be have no go-back to rewind with; uc and ud no acknowledgments)");
	if (qp->init.path.nports)
		return uroce_fail(-EINVAL, "uroce_qp_create: failover with path.nports %u: the paths of a QP with "
		                           "backups follow its active member; accepted: path.nports 0 (to use "
		                           "every port at once, stripe over one QP per port: uroce_stripe_create)",
		                  qp->init.path.nports);
	if (qp->ctx->nports < 2)
		return uroce_fail(-EINVAL, "uroce_qp_create: failover needs a context with at least two ports "
		                           "(it has %u)", qp->ctx->nports);
	f = calloc(1, sizeof(*f));
	if (!f)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	f->qp = qp;
	f->cfg = *a;
	if (!f->cfg.rto_fail)
		f->cfg.rto_fail = FO_RTO_FAIL_DEFAULT;
	if (!f->cfg.err_threshold)
		f->cfg.err_threshold = FO_ERR_THRESHOLD_DEFAULT;
	if (!f->cfg.probe_us)
		f->cfg.probe_us = FO_PROBE_US_DEFAULT;
	if (!f->cfg.down_timeout_ms)
		f->cfg.down_timeout_ms = FO_DOWN_TIMEOUT_MS_DEFAULT;
	f->n = (uint8_t)(a->nbackups + 1u);
	f->info.nmembers = f->n;
	if (ctx_hook_add(qp->ctx, &fo_ctx_hook)) {
		free(f);
		return uroce_fail(-ENOSPC, "uroce_qp_create: the context's hook table is full");
	}
	qp->fo = f;
	f->next = qp->ctx->fo_head;
	qp->ctx->fo_head = f;
	qp->ctx->link_poll_ns = FO_LINK_POLL_NS; /* a link going down fails over: read carriers closely */
	return 0;
}

static void fo_fini(struct uroce_qp *qp)
{
	struct fo_state **pp;

	if (!qp->fo)
		return;
	for (pp = &qp->ctx->fo_head; *pp; pp = &(*pp)->next) {
		if (*pp == qp->fo) {
			*pp = qp->fo->next;
			break;
		}
	}
	free(qp->fo);
	qp->fo = NULL;
	if (!qp->ctx->fo_head)
		qp->ctx->link_poll_ns = 0;
}

static int fo_check_backups(struct uroce_qp *qp, const struct uroce_qp_attr *attr, int mask, unsigned mtu)
{
	struct fo_state *f = qp->fo;
	bool v6 = (mask & UROCE_QP_AV) ? !neigh_addr_is_v4(attr->ah_attr.dgid) : qp->d.ipv6;
	int rc;

	if (!f) {
		if (mask & UROCE_QP_ALT_PATH)
			return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x: UROCE_QP_ALT_PATH (backup_ah) needs a QP "
			                           "created with failover.nbackups > 0", qp->qpn);
		return 0;
	}
	if (!(mask & UROCE_QP_ALT_PATH))
		return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x has %u backups: INIT -> RTR needs "
		                           "UROCE_QP_ALT_PATH with backup_ah[0..%u]", qp->qpn, f->n - 1u, f->n - 2u);
	/* resolved here, before the modify changes anything; used once
	 * fo_ready marks the group ready */
	for (unsigned i = 1; i < f->n; i++) {
		const struct uroce_ah_attr *ah = &attr->backup_ah[i - 1];
		int pi = ctx_port_index(qp->ctx, ah->port_num, "uroce_qp_modify: backup_ah port_num");
		uint32_t link;

		if (pi < 0)
			return pi;
		if (qp->segq) {
			/* a verbs context: each member is the NIC QPs of one port,
			 * connected to the peer's numbers behind it */
			if (!pi)
				return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x backup_ah[%u].port_num 1: on a verbs "
				                           "context the primary is port 1 and each backup a port of its own; "
				                           "accepted: 2-%u", qp->qpn, i - 1u, qp->ctx->nports);
			for (unsigned j = 1; j < i; j++)
				if (attr->backup_ah[j - 1].port_num == ah->port_num)
					return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x backup_ah[%u] and [%u] are both on "
					                           "port %u; on a verbs context each backup is a port of its own",
					                  qp->qpn, j - 1u, i - 1u, ah->port_num);
			if (!attr->backup_dest_qpn[i - 1] || !attr->backup_dest_ctrl_qpn[i - 1] ||
			    attr->backup_dest_qpn[i - 1] > ROCE_QPN_MASK || attr->backup_dest_ctrl_qpn[i - 1] > ROCE_QPN_MASK)
				return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x backup %u: backup_dest_qpn 0x%x, "
				                           "backup_dest_ctrl_qpn 0x%x; on a verbs context each device numbers "
				                           "its own QPs: accepted the peer's uroce_qp_port_nums() for the "
				                           "port behind the backup (1-0xffffff each)", qp->qpn, i - 1u,
				                  attr->backup_dest_qpn[i - 1], attr->backup_dest_ctrl_qpn[i - 1]);
		} else if (attr->backup_dest_qpn[i - 1] || attr->backup_dest_ctrl_qpn[i - 1]) {
			return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x backup %u: backup_dest_qpn / "
			                           "backup_dest_ctrl_qpn are a verbs context's; a uroce QP on frame ports "
			                           "has one number on every port (accepted: 0)", qp->qpn, i - 1u);
		}
		link = qp->ctx->ports[pi].port->mtu;
		if (mtu + ROCE_PKT_HDR_MAX_V4 + 20u > link)
			return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x backup_ah[%u]: path MTU %u does not fit port "
			                           "%u's IP MTU %u", qp->qpn, i - 1u, mtu, (unsigned)pi + 1u, link);
		rc = ctx_resolve_dest(qp->ctx, (unsigned)pi, ah, &f->m[i].d);
		if (rc) {
			char why[512];

			snprintf(why, sizeof(why), "%s", uroce_last_error());
			return uroce_fail(rc, "uroce_qp_modify: QP 0x%x backup_ah[%u]: %s", qp->qpn, i - 1u, why);
		}
		if (f->m[i].d.ipv6 != v6)
			return uroce_fail(-EINVAL, "uroce_qp_modify: QP 0x%x backup_ah[%u] is of the other IP family than "
			                           "ah_attr; accepted: GIDs of one family in every member", qp->qpn, i - 1u);
	}
	return 0;
}

static void fo_ready(struct uroce_qp *qp)
{
	struct fo_state *f = qp->fo;

	f->m[0].d = qp->d;
	for (unsigned i = 0; i < f->n; i++) {
		f->m[i].link_up = qp->ctx->ports[f->m[i].d.port].link_up;
		f->m[i].failed = UROCE_FO_CAUSE_NONE;
		f->m[i].peer_failed = false;
		f->m[i].probe_out = false;
		f->m[i].err_fails = 0;
		f->m[i].hold_until = 0;
	}
	f->active = 0;
	f->state = UROCE_FO_DEFAULT;
	f->ready = true;
}

static void fo_reset(struct uroce_qp *qp)
{
	struct fo_state *f = qp->fo;

	if (!f)
		return;
	if (f->ready)
		qp_set_dest(qp, &f->m[0].d);
	f->ready = false;
	f->active = 0;
	f->state = UROCE_FO_DEFAULT;
	f->rto_run = 0;
	f->notice_seq = 0;
	f->notice_acked = true;
	f->peer_seq = 0; /* the peer's first notice is 1 */
	f->all_down_since = 0;
	f->switch_tx_pending = false;
	f->switch_ns = 0;
}

/* --- members ------------------------------------------------------------------ */

static bool usable(const struct fo_state *f, unsigned i)
{
	const struct fo_member *m = &f->m[i];

	return m->link_up && m->failed == UROCE_FO_CAUSE_NONE && !m->peer_failed;
}

static unsigned first_usable(const struct fo_state *f)
{
	for (unsigned i = 0; i < f->n; i++)
		if (usable(f, i))
			return i;
	return FO_NONE;
}

static uint8_t local_fail_mask(const struct fo_state *f)
{
	uint8_t mask = 0;

	for (unsigned i = 0; i < f->n; i++)
		if (f->m[i].failed != UROCE_FO_CAUSE_NONE || !f->m[i].link_up)
			mask |= (uint8_t)(1u << i);
	return mask;
}

static uint8_t up_mask(const struct fo_state *f)
{
	uint8_t mask = 0;

	for (unsigned i = 0; i < f->n; i++)
		if (usable(f, i))
			mask |= (uint8_t)(1u << i);
	return mask;
}

static bool fo_dst_ok(const struct uroce_qp *qp, unsigned port, const uint8_t dip[16])
{
	const struct fo_state *f = qp->fo;

	if (!f->ready)
		return false;
	for (unsigned i = 0; i < f->n; i++)
		if (f->m[i].d.port == port && !memcmp(f->m[i].d.sip, dip, 16))
			return true;
	return false;
}

uint64_t fo_retry_base(const struct uroce_qp *qp, uint64_t first_ns)
{
	const struct fo_state *f = qp->fo;

	if (!f->ready)
		return first_ns;
	if (f->all_down_since)
		return UINT64_MAX;
	return f->switch_ns > first_ns ? f->switch_ns : first_ns;
}

static int fo_member_rx(const struct uroce_qp *qp, unsigned port, const uint8_t sip[16], const uint8_t dip[16])
{
	const struct fo_state *f = qp->fo;

	if (!f || !f->ready)
		return -1;
	for (unsigned i = 0; i < f->n; i++) {
		const struct dest *d = &f->m[i].d;

		if (d->port == port && !memcmp(d->dip, sip, 16) && !memcmp(d->sip, dip, 16))
			return (int)i;
	}
	return -1;
}

/* --- control packets ----------------------------------------------------------- */

static int send_ctrl(struct fo_state *f, unsigned member, uint8_t kind, uint32_t seq)
{
	struct uroce_qp *qp = f->qp;
	uint8_t b[SRW_CTRL_HDR_LEN + FO_BODY_LEN];
	int rc;

	srw_ctrl_hdr(b, SRW_CTRL_FO, (uint16_t)sizeof(b), qp->tok_remote);
	b[SRW_CTRL_HDR_LEN] = kind;
	b[SRW_CTRL_HDR_LEN + 1] = (uint8_t)member;
	b[SRW_CTRL_HDR_LEN + 2] = f->active;
	b[SRW_CTRL_HDR_LEN + 3] = local_fail_mask(f);
	roce_put_be32(b + SRW_CTRL_HDR_LEN + 4, seq);
	rc = ctx_send_seg(qp->ctx, &(struct seg){ .qp = qp, .d = &f->m[member].d, .sport = qp->sport, .op = SEG_SEND,
	                                          .dqpn = qp_ctrl_dqpn(qp), .psn = seq & ROCE_PSN_MASK,
	                                          .len = sizeof(b), .buf = b });
	if (!rc)
		qp->tx_packets++;
	return rc;
}

/* The member a notice goes by: the active one, else any whose link is up. */
static unsigned notice_member(const struct fo_state *f)
{
	if (f->m[f->active].link_up)
		return f->active;
	for (unsigned i = 0; i < f->n; i++)
		if (f->m[i].link_up)
			return i;
	return FO_NONE;
}

static void send_notice(struct fo_state *f, uint64_t now)
{
	unsigned m = notice_member(f);

	f->notice_next_ns = now + f->notice_gap_ns;
	if (f->notice_gap_ns < FO_NOTICE_RETRY_MAX_NS)
		f->notice_gap_ns *= 2;
	if (m == FO_NONE)
		return;
	if (!send_ctrl(f, m, FO_NOTICE, f->notice_seq))
		f->info.notices_sent++;
}

/* What the peer is told changed (the active member, or the members this
 * side failed): a new notice, sent until it is answered. */
static void notice_new(struct fo_state *f, uint64_t now)
{
	f->notice_seq++;
	f->notice_acked = false;
	f->notice_gap_ns = FO_NOTICE_RETRY_NS;
	send_notice(f, now);
}

/* --- the state machine ------------------------------------------------------------ */

static bool fo_idle(const struct uroce_qp *qp)
{
	return qp->rel->fo_idle(qp);
}

static void raise_mig(struct uroce_qp *qp, enum uroce_event_type t)
{
	struct uroce_async_event ev = { .event_type = t };

	ev.element.qp = qp;
	ctx_async_event(qp->ctx, &ev);
}

/* Move everything the QP sends to member k; rewind: send again what is
 * outstanding (it went by the member left behind). */
static void fo_switch(struct fo_state *f, unsigned k, bool rewind)
{
	struct uroce_qp *qp = f->qp;

	f->active = (uint8_t)k;
	qp_set_dest(qp, &f->m[k].d);
	f->rto_run = 0;
	f->all_down_since = 0; /* k is usable */
	f->info.rewound_pkts += qp->rel->fo_switch(qp, rewind);
	notice_new(f, ctx_now(qp->ctx));
	f->tx_mark = qp->tx_packets;
	f->switch_tx_pending = true;
	f->switch_ns = ctx_now(qp->ctx);
	ctx_kick(qp);
	raise_mig(qp, UROCE_EVENT_PATH_MIG);
}

/* One transition of SHIFT's send-queue machine from what is known now. */
static void fo_step(struct fo_state *f)
{
	struct uroce_qp *qp = f->qp;
	bool act_ok = usable(f, f->active);
	unsigned best = first_usable(f);
	uint64_t now = ctx_now(qp->ctx);

	if (act_ok && f->all_down_since) {
		/* every member was down and this one is back: what waited
		 * goes now, not at the next retransmission timeout */
		f->all_down_since = 0;
		fo_switch(f, f->active, true);
	} else if (!act_ok && best == FO_NONE && !f->all_down_since) {
		f->all_down_since = now ? now : 1;
	}

	switch ((enum uroce_fo_state)f->state) {
	case UROCE_FO_DEFAULT:
		if (act_ok)
			return;
		f->state = UROCE_FO_FALLBACK;
		if (best != FO_NONE) {
			f->info.failovers++;
			f->info.last_fail_ns = now;
			fo_switch(f, best, true);
		}
		return;
	case UROCE_FO_FALLBACK:
		if (!act_ok && best != FO_NONE) {
			if (best == 0) {
				f->info.failbacks++;
				f->state = UROCE_FO_DEFAULT;
			} else {
				f->info.failovers++;
				f->info.last_fail_ns = now;
			}
			fo_switch(f, best, true);
		} else if (act_ok && f->active == 0) {
			f->state = UROCE_FO_DEFAULT; /* everything was down; the primary came back first */
		} else if (act_ok && usable(f, 0) && !f->cfg.no_fail_back) {
			f->state = UROCE_FO_WAIT_SIGNALED;
		}
		return;
	case UROCE_FO_WAIT_SIGNALED:
	case UROCE_FO_WAIT_SINKED:
		if (!usable(f, 0)) {
			f->state = UROCE_FO_FALLBACK; /* the primary failed again while we came back */
		} else if (!act_ok) {
			f->info.failbacks++; /* the backup failed first: back at once, rewinding */
			f->state = UROCE_FO_DEFAULT;
			fo_switch(f, 0, true);
		} else if (f->state == UROCE_FO_WAIT_SIGNALED && fo_idle(qp)) {
			/* nothing is in progress (a transmit between WRs moves
			 * it on too: fo_may_start) */
			f->state = UROCE_FO_WAIT_SINKED;
		} else if (f->state == UROCE_FO_WAIT_SINKED && fo_idle(qp)) {
			/* everything sent on the backup is acknowledged: order holds */
			f->info.failbacks++;
			f->state = UROCE_FO_DEFAULT;
			fo_switch(f, 0, false);
		}
		return;
	default:
		f->state = UROCE_FO_DEFAULT;
	}
}

static void fo_run(struct fo_state *f)
{
	if (!f->ready)
		return;
	for (unsigned i = 0; i < FO_STEPS_MAX; i++) {
		uint8_t was_state = f->state, was_active = f->active;

		fo_step(f);
		if (f->state == was_state && f->active == was_active)
			break;
	}
}

/* A member failed here (cause), or came back (NONE). */
static void member_set(struct fo_state *f, unsigned i, enum uroce_fo_cause cause, uint64_t now)
{
	struct fo_member *m = &f->m[i];
	uint8_t was_active = f->active;

	if (m->failed == (uint8_t)cause)
		return;
	m->failed = (uint8_t)cause;
	m->probe_out = false;
	if (cause != UROCE_FO_CAUSE_NONE) {
		f->info.last_cause = cause;
		f->probe_next_ns = now + (uint64_t)f->cfg.probe_us * 1000u;
	}
	if (cause == UROCE_FO_CAUSE_ERRORS) {
		/* an idle link shows no errors: without a hold-down a corrupting
		 * one would come back at the first answered probe, and flap */
		m->hold_until = now + (FO_ERR_HOLD_NS << m->err_fails);
		if (m->err_fails < FO_ERR_HOLD_MAX_SHIFT)
			m->err_fails++;
	}
	fo_run(f);
	/* the peer learns which members this side failed (a switch told it already) */
	if (f->active == was_active)
		notice_new(f, now);
}

/* --- events ------------------------------------------------------------------------ */

bool fo_on_rto(struct uroce_qp *qp)
{
	struct fo_state *f = qp->fo;

	if (!f || !f->ready)
		return false;
	if (first_usable(f) == FO_NONE)
		return true; /* nowhere to go: the down timeout decides, and a member's return resends */
	if (++f->rto_run < f->cfg.rto_fail)
		return false;
	member_set(f, f->active, UROCE_FO_CAUSE_RTO, ctx_now(qp->ctx));
	return true;
}

bool fo_may_start(struct uroce_qp *qp)
{
	struct fo_state *f = qp->fo;

	if (!f || f->state == UROCE_FO_DEFAULT || f->state == UROCE_FO_FALLBACK)
		return true;
	/* only the two moves that need no rewind: the caller is between WRs
	 * and keeps its cursor (fo_run, from the slow path, does the rest) */
	if (!usable(f, 0) || !usable(f, f->active))
		return true;
	if (f->state == UROCE_FO_WAIT_SIGNALED)
		f->state = UROCE_FO_WAIT_SINKED; /* the message in progress is out */
	if (fo_idle(qp)) {
		f->info.failbacks++;
		f->state = UROCE_FO_DEFAULT;
		fo_switch(f, 0, false);
		return true;
	}
	return false;
}

static void fo_port_link(struct uroce_context *ctx, unsigned port, bool up)
{
	uint64_t now = ctx_now(ctx);

	for (struct fo_state *f = ctx->fo_head; f; f = f->next) {
		if (!f->ready)
			continue;
		for (unsigned i = 0; i < f->n; i++) {
			struct fo_member *m = &f->m[i];

			if (m->d.port != port || m->link_up == up)
				continue;
			m->link_up = up;
			if (!up) {
				member_set(f, i, UROCE_FO_CAUSE_LINK, now);
			} else {
				/* back: probe it now; an answer brings it back */
				m->probe_out = false;
				f->probe_next_ns = now;
			}
		}
	}
}

static void on_notice(struct fo_state *f, unsigned member, const uint8_t *b, uint64_t now)
{
	uint32_t seq = roce_get_be32(b + 4);
	int32_t ahead = (int32_t)(seq - f->peer_seq);
	uint8_t peer_mask = b[3];

	/* The peer numbers its notices 1, 2, ... from its RTR: a notice is
	 * taken only a few ahead of the newest applied (the first one too),
	 * a copy only a few behind it is answered (its answer was lost), and
	 * anything else is no notice of this connection's. */
	if (ahead > (int32_t)FO_SEQ_WIN || ahead <= -(int32_t)FO_SEQ_WIN) {
		ctx_count_drop(f->qp->ctx, UROCE_DROP_CTRL_SEQ);
		return;
	}
	send_ctrl(f, member, FO_NOTICE_ACK, seq);
	if (ahead <= 0)
		return; /* a copy or an older notice */
	f->peer_seq = seq;
	f->info.notices_rcvd++;
	for (unsigned i = 0; i < f->n; i++) {
		bool pf = (peer_mask >> i) & 1u;

		if (pf && !f->m[i].peer_failed) {
			f->m[i].peer_failed = true;
			if (i == f->active)
				f->info.last_cause = UROCE_FO_CAUSE_PEER;
		} else if (!pf) {
			f->m[i].peer_failed = false;
		}
	}
	(void)now;
	fo_run(f);
}

static void on_probe_ack(struct fo_state *f, unsigned member, const uint8_t *b, uint64_t now)
{
	struct fo_member *m = &f->m[member];

	if (!m->probe_out || roce_get_be32(b + 4) != f->probe_seq)
		return; /* stale, or not asked */
	m->probe_out = false;
	f->info.probes_answered++;
	m->peer_failed = (b[3] >> member) & 1u;
	if (!m->link_up)
		return;
	if (m->failed == UROCE_FO_CAUSE_ERRORS &&
	    (now < m->hold_until || f->qp->ctx->fo_err_delta[m->d.port] >= f->cfg.err_threshold))
		return; /* held down, or still corrupting: try again later */
	member_set(f, member, UROCE_FO_CAUSE_NONE, now);
	fo_run(f);
}

static bool fo_rx(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	struct fo_state *f = qp->fo;
	const uint8_t *b = pkt->payload;
	uint64_t now;
	int member;

	if (!f || pkt->dqpn != qp->ctrl_qpn || pkt->opcode != (ROCE_TR_UC | ROCE_OP_SEND_ONLY) ||
	    pkt->payload_len < SRW_CTRL_HDR_LEN || b[1] != SRW_CTRL_FO)
		return false;
	if (b[0] != SRW_VERSION || roce_get_be16(b + 2) != SRW_CTRL_HDR_LEN + FO_BODY_LEN ||
	    pkt->payload_len < SRW_CTRL_HDR_LEN + FO_BODY_LEN || !f->ready ||
	    (qp->state != UROCE_QPS_RTR && qp->state != UROCE_QPS_RTS && qp->state != UROCE_QPS_SQD)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return true;
	}
	/* the member it came by: addresses and arrival port must agree, and
	 * with the member the sender says it used */
	member = fo_member_rx(qp, qp->ctx->rx_port, pkt->sip, pkt->dip);
	b += SRW_CTRL_HDR_LEN;
	if (member < 0 || b[1] != (uint8_t)member || b[2] >= f->n) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
		return true;
	}
	qp->rx_packets++;
	now = ctx_now(qp->ctx);
	switch (b[0]) {
	case FO_NOTICE:
		on_notice(f, (unsigned)member, b, now);
		break;
	case FO_NOTICE_ACK:
		if (roce_get_be32(b + 4) == f->notice_seq)
			f->notice_acked = true;
		break;
	case FO_PROBE:
		if (f->m[member].link_up)
			send_ctrl(f, (unsigned)member, FO_PROBE_ACK, roce_get_be32(b + 4));
		break;
	case FO_PROBE_ACK:
		on_probe_ack(f, (unsigned)member, b, now);
		break;
	default:
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL);
	}
	return true;
}

/* A NIC refused the work of the member(s) on port (an error completion,
 * a post refused): they fail as a port with receive errors does. */
static void fo_port_err(struct uroce_qp *qp, unsigned port)
{
	struct fo_state *f = qp->fo;

	if (!f || !f->ready)
		return;
	for (unsigned i = 0; i < f->n; i++)
		if (f->m[i].d.port == port && f->m[i].failed == UROCE_FO_CAUSE_NONE)
			member_set(f, i, UROCE_FO_CAUSE_ERRORS, ctx_now(qp->ctx));
}

/* --- the slow path ------------------------------------------------------------------- */

/* Receive errors of a port: frames its parser refused as damaged. */
static uint64_t port_errors(const struct port *p)
{
	return p->stats.drops[UROCE_DROP_BAD_ICRC] + p->stats.drops[UROCE_DROP_BAD_IP_CSUM] +
	       p->stats.drops[UROCE_DROP_BAD_LENGTH] + p->stats.drops[UROCE_DROP_SHORT_FRAME] +
	       p->stats.drops[UROCE_DROP_BAD_IP_HEADER];
}

static void err_window(struct uroce_context *ctx, uint64_t now)
{
	for (unsigned i = 0; i < ctx->nports; i++) {
		uint64_t e = port_errors(ctx->ports[i].port);

		ctx->fo_err_delta[i] = e - ctx->fo_err_base[i];
		ctx->fo_err_base[i] = e;
	}
	ctx->fo_err_ns = now;
	for (struct fo_state *f = ctx->fo_head; f; f = f->next) {
		if (!f->ready)
			continue;
		for (unsigned i = 0; i < f->n; i++)
			if (f->m[i].failed == UROCE_FO_CAUSE_NONE &&
			    ctx->fo_err_delta[f->m[i].d.port] >= f->cfg.err_threshold)
				member_set(f, i, UROCE_FO_CAUSE_ERRORS, now);
	}
}

static void fo_tick(struct fo_state *f, uint64_t now)
{
	struct uroce_qp *qp = f->qp;

	if (!f->ready || qp->state < UROCE_QPS_RTR || qp->state > UROCE_QPS_SQD)
		return;
	if (!f->notice_acked && f->notice_seq && now >= f->notice_next_ns)
		send_notice(f, now);
	if (now >= f->probe_next_ns) {
		bool any = false;

		f->probe_next_ns = now + (uint64_t)f->cfg.probe_us * 1000u;
		f->probe_seq++;
		for (unsigned i = 0; i < f->n; i++) {
			struct fo_member *m = &f->m[i];

			if (m->failed == UROCE_FO_CAUSE_NONE || !m->link_up ||
			    (m->failed == UROCE_FO_CAUSE_ERRORS && now < m->hold_until))
				continue;
			m->probe_out = true;
			any = true;
			if (!send_ctrl(f, i, FO_PROBE, f->probe_seq))
				f->info.probes_sent++;
		}
		(void)any;
	}
	fo_run(f);
	if (f->all_down_since && now - f->all_down_since >= (uint64_t)f->cfg.down_timeout_ms * 1000000u &&
	    !fo_idle(qp) && qp->state == UROCE_QPS_RTS) {
		/* every member gone too long: the oldest WR fails, the rest flush */
		qp_fail_oldest(qp, UROCE_WC_RETRY_EXC_ERR);
		raise_mig(qp, UROCE_EVENT_PATH_MIG_ERR);
	}
}

static unsigned fo_slow_path(struct uroce_context *ctx)
{
	uint64_t now;

	if (!ctx->fo_head)
		return 0;
	now = ctx_now(ctx);
	if (now - ctx->fo_tick_ns < FO_LINK_POLL_NS / 2)
		return 0;
	ctx->fo_tick_ns = now;
	if (now - ctx->fo_err_ns >= FO_ERR_WINDOW_NS)
		err_window(ctx, now);
	for (struct fo_state *f = ctx->fo_head; f; f = f->next)
		fo_tick(f, now);
	return 0;
}

/* After a transmit pass: the first packet after a switch left. */
static void fo_after_tx(struct uroce_qp *qp)
{
	struct fo_state *f = qp->fo;

	if (f->switch_tx_pending && qp->tx_packets != f->tx_mark) {
		f->switch_tx_pending = false;
		f->info.last_switch_tx_ns = ctx_now(qp->ctx);
	}
}

const struct fo_ext qp_failover = {
	.init = fo_init,
	.fini = fo_fini,
	.check_backups = fo_check_backups,
	.ready = fo_ready,
	.reset = fo_reset,
	.after_tx = fo_after_tx,
	.rx = fo_rx,
	.member_rx = fo_member_rx,
	.dst_ok = fo_dst_ok,
	.port_err = fo_port_err,
};

static const struct ctx_hook fo_ctx_hook = {
	.slow = fo_slow_path,
	.link = fo_port_link,
};

/* --- the API ---------------------------------------------------------------------------- */

struct info_args {
	struct uroce_qp *qp;
	struct uroce_failover_info *out;
};

static int info_call(void *arg)
{
	struct info_args *a = arg;
	struct fo_state *f = a->qp->fo;

	*a->out = f->info;
	a->out->state = (enum uroce_fo_state)f->state;
	a->out->active = f->active;
	a->out->up_mask = up_mask(f);
	a->out->nmembers = f->n;
	return 0;
}

int uroce_qp_failover_info(struct uroce_qp *qp, struct uroce_failover_info *info)
{
	struct info_args a = { .qp = qp, .out = info };

	if (!qp || !info)
		return uroce_fail(-EINVAL, "uroce_qp_failover_info: qp and info are required");
	if (!qp->fo)
		return uroce_fail(-EINVAL, "uroce_qp_failover_info: QP 0x%x has no backups (failover.nbackups 0)",
		                  qp->qpn);
	if (ctx_remote(qp->ctx))
		return ctx_call(qp->ctx, info_call, &a);
	return info_call(&a);
}
