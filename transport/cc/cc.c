/* SPDX-License-Identifier: MIT */
/* The congestion-control table and the gate every controller shares: a
 * window on bytes in flight, then a pacer on the controller's rate. */
#include <string.h>

#include "transport/cc/cc.h"

const struct cc_ops *cc_ops_of(enum uroce_cc id)
{
	switch (id) {
	case UROCE_CC_DCQCN:
		return &cc_dcqcn_ops;
	case UROCE_CC_SWIFT:
		return &cc_swift_ops;
	case UROCE_CC_CUBIC:
		return &cc_cubic_ops;
	case UROCE_CC_EQDS:
		return &cc_eqds_ops;
	default:
		return &cc_none_ops;
	}
}

void cc_ignore_ack(void *s, const struct cc_ack *a)
{
	(void)s;
	(void)a;
}

void cc_ignore_loss(void *s, uint64_t now, bool rto)
{
	(void)s;
	(void)now;
	(void)rto;
}

void cc_flow_init(struct cc_flow *f, const struct cc_ops *ops, const struct cc_env *env, uint64_t now)
{
	memset(f, 0, sizeof(*f));
	f->ops = ops;
	ops->init(f->st, env, now);
}

uint64_t cc_flow_gate(struct cc_flow *f, uint64_t now, uint32_t bytes)
{
	const struct cc_ops *o = f->ops;
	uint64_t rate;

	/* a window always lets one packet out when nothing is in flight,
	 * so a window below a packet paces instead of stalling */
	if (f->inflight && (uint64_t)f->inflight + bytes > o->window(f->st))
		return UINT64_MAX;
	if ((o->flags & CC_CREDIT) && o->credit(f->st) < (int64_t)bytes)
		return UINT64_MAX;
	rate = o->rate_bps ? o->rate_bps(f->st, now) : 0;
	if (rate && f->next_tx_ns > now)
		return f->next_tx_ns;
	return 0;
}

void cc_flow_sent(struct cc_flow *f, uint64_t now, uint32_t bytes)
{
	const struct cc_ops *o = f->ops;
	uint64_t rate = o->rate_bps ? o->rate_bps(f->st, now) : 0;

	f->inflight += bytes;
	if (rate) {
		/* the schedule goes on from where it was while the timer that
		 * woke us was at most CC_PACE_SLACK_NS late (its 1 us ticks
		 * would otherwise cost up to a tick a packet); an idle pacer
		 * restarts from now: no credit for the silence */
		uint64_t start = f->next_tx_ns + CC_PACE_SLACK_NS >= now ? f->next_tx_ns : now;
		/* the link carries the headers too: pace what it carries */
		uint64_t gap = ((uint64_t)(bytes + CC_PKT_OVERHEAD) * 8u * 1000000000u + rate - 1) / rate;

		if (f->max_gap_ns && gap > f->max_gap_ns)
			gap = f->max_gap_ns;
		f->next_tx_ns = start + gap;
	}
	if (o->on_sent)
		o->on_sent(f->st, now, bytes);
}
