/* SPDX-License-Identifier: MIT */
/* Striping (TransferEngine's DomainGroup): one transfer split into shards
 * of near-equal size, shard i one WRITE_WITH_IMM on QP i of the stripe, all
 * carrying the transfer's immediate, so the receiver's IMMCOUNTER ends the
 * transfer once it has counted uroce_stripe_shards() arrivals, in whatever
 * order the ports deliver them. A stripe is a list of QPs, nothing more:
 * posting runs on the caller's thread, as uroce_post_send does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/rel/sr/rel_sr.h"
#include "transport/core/mr.h"

#define STRIPE_MIN_SHARD_DEFAULT (64u << 10)
/* Shard boundaries fall on multiples of this many bytes from the start of
 * the transfer when every shard is at least twice as long: shards then
 * start on page boundaries of a page-aligned buffer. */
#define STRIPE_ALIGN 4096u

struct uroce_stripe {
	unsigned nqps;
	uint32_t min_shard;
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_qp *qps[UROCE_MAX_PORTS];
};

unsigned uroce_stripe_shards(uint64_t len, unsigned nqps, uint32_t min_shard)
{
	uint64_t m = min_shard ? min_shard : STRIPE_MIN_SHARD_DEFAULT;
	uint64_t want = len / m + (len % m != 0);

	if (want > nqps)
		want = nqps;
	return want ? (unsigned)want : 1u;
}

/* The longest message the QP takes: sr and ec count a message's packets
 * in 17 bits, rc only in bytes. */
static uint64_t qp_max_msg(const struct uroce_qp *qp)
{
	uint64_t sr = (uint64_t)SR_MAX_MSG_PKTS * qp->mtu;

	if (qp->init.rel.reliability == UROCE_REL_RC || sr > UROCE_MAX_MSG)
		return UROCE_MAX_MSG;
	return sr;
}

int uroce_stripe_create(struct uroce_qp *const *qps, unsigned nqps, uint32_t min_shard, struct uroce_stripe **out)
{
	struct uroce_stripe *s;

	if (!qps || !out)
		return uroce_fail(-EINVAL, "uroce_stripe_create: qps and out are required");
	*out = NULL;
	if (nqps < 1 || nqps > UROCE_MAX_PORTS)
		return uroce_fail(-EINVAL, "uroce_stripe_create: nqps %u; accepted 1-%u (one QP per pair of ports)", nqps,
		                  UROCE_MAX_PORTS);
	for (unsigned i = 0; i < nqps; i++) {
		const struct uroce_qp *qp = qps[i];
		enum uroce_reliability rel;

		if (!qp)
			return uroce_fail(-EINVAL, "uroce_stripe_create: qps[%u] is NULL; accepted %u connected QPs", i,
			                  nqps);
		rel = qp->init.rel.reliability;
		if (qp->type != UROCE_QPT_RC || (rel != UROCE_REL_RC && rel != UROCE_REL_SR && rel != UROCE_REL_EC))
			return uroce_fail(-EINVAL, "uroce_stripe_create: qps[%u] (QP 0x%x) is a %s QP with reliability %s; "
			                           "accepted RC-type QPs with reliability rc, sr or ec (a shard must arrive "
			                           "for its immediate to be counted)", i, qp->qpn,
			                  qp->type == UROCE_QPT_UC ? "UC" : qp->type == UROCE_QPT_UD ? "UD" : "RC",
			                  uroce_reliability_str(rel) ? uroce_reliability_str(rel) : "?");
		if (qp->state != UROCE_QPS_RTS)
			return uroce_fail(-EINVAL, "uroce_stripe_create: qps[%u] (QP 0x%x) is in %s; accepted connected QPs "
			                           "(RTS)", i, qp->qpn, uroce_qp_state_str((enum uroce_qp_state)qp->state));
		if (qp->ctx != qps[0]->ctx || qp->pd != qps[0]->pd)
			return uroce_fail(-EINVAL, "uroce_stripe_create: qps[%u] (QP 0x%x) is in another %s than qps[0]; "
			                           "accepted QPs of one context and one PD (one lkey serves every shard, "
			                           "and the peer's rkey every QP)", i, qp->qpn,
			                  qp->ctx != qps[0]->ctx ? "context" : "PD");
		for (unsigned j = 0; j < i; j++)
			if (qps[j] == qp)
				return uroce_fail(-EINVAL, "uroce_stripe_create: QP 0x%x is listed twice (qps[%u] and "
				                           "qps[%u]); accepted distinct QPs, one per pair of ports", qp->qpn, j,
				                  i);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return uroce_fail(-ENOMEM, "uroce_stripe_create: out of memory");
	s->nqps = nqps;
	s->min_shard = min_shard ? min_shard : STRIPE_MIN_SHARD_DEFAULT;
	s->ctx = qps[0]->ctx;
	s->pd = qps[0]->pd;
	memcpy(s->qps, qps, nqps * sizeof(*qps));
	*out = s;
	return 0;
}

int uroce_stripe_destroy(struct uroce_stripe *s)
{
	if (!s)
		return uroce_fail(-EINVAL, "uroce_stripe_destroy: a stripe is required");
	free(s);
	return 0;
}

/* Offset of shard i of n in a transfer of len bytes (off(n) = len):
 * i x len / n without overflow, rounded down to STRIPE_ALIGN when every
 * shard stays at least STRIPE_ALIGN long (so none is empty). */
static uint64_t shard_off(uint64_t len, unsigned n, unsigned i)
{
	uint64_t off = (len / n) * i + (len % n) * i / n;

	if (i < n && len / n >= 2u * STRIPE_ALIGN)
		off &= ~(uint64_t)(STRIPE_ALIGN - 1);
	return off;
}

static uint32_t sq_room(const struct uroce_qp *qp)
{
	return qp->sq_size - (atomic_load_explicit(&qp->sq_head, memory_order_relaxed) -
	                      __atomic_load_n(&qp->sq_tail, __ATOMIC_ACQUIRE));
}

/* Everything uroce_post_send would refuse, checked on every shard before
 * the first is posted: a half-posted transfer would never be counted. */
static int check_all(struct uroce_stripe *s, const struct uroce_stripe_write *w, unsigned n)
{
	const unsigned ok_flags = UROCE_SEND_SIGNALED | UROCE_SEND_FENCE;

	if (w->send_flags & ~ok_flags)
		return uroce_fail(-EINVAL, "uroce_stripe_post_write: send_flags 0x%x; accepted UROCE_SEND_SIGNALED and "
		                           "UROCE_SEND_FENCE", w->send_flags);
	if (w->remote_addr + w->len < w->remote_addr)
		return uroce_fail(-EINVAL, "uroce_stripe_post_write: remote [0x%llx, +%llu) wraps around; accepted a "
		                           "range inside the address space", (unsigned long long)w->remote_addr,
		                  (unsigned long long)w->len);
	if (w->len) {
		struct mr_int *m = mr_lookup_lkey(s->ctx, w->lkey);

		if (!m)
			return uroce_fail(-EINVAL, "uroce_stripe_post_write: lkey 0x%x names no registered region",
			                  w->lkey);
		if (!mr_check(m, s->pd, w->addr, w->len, 0))
			return uroce_fail(-EINVAL, "uroce_stripe_post_write: [0x%llx, +%llu) is outside lkey 0x%x's region "
			                           "or the region is in another PD than the stripe's QPs",
			                  (unsigned long long)w->addr, (unsigned long long)w->len, w->lkey);
	}
	for (unsigned i = 0; i < n; i++) {
		struct uroce_qp *qp = s->qps[i];
		uint64_t len = shard_off(w->len, n, i + 1) - shard_off(w->len, n, i);
		uint8_t st = qp->state;

		if (st != UROCE_QPS_RTS && st != UROCE_QPS_SQD && st != UROCE_QPS_ERR)
			return uroce_fail(-EINVAL, "uroce_stripe_post_write: QP %u of the stripe (0x%x) is in %s; sends are "
			                           "posted in RTS (or SQD/ERR)", i, qp->qpn,
			                  uroce_qp_state_str((enum uroce_qp_state)st));
		if (len > qp_max_msg(qp))
			return uroce_fail(-EINVAL, "uroce_stripe_post_write: %llu bytes in %u shard(s) of up to %llu; QP %u "
			                           "(0x%x, %s) carries at most %llu bytes a message",
			                  (unsigned long long)w->len, n, (unsigned long long)len, i, qp->qpn,
			                  uroce_reliability_str(qp->init.rel.reliability),
			                  (unsigned long long)qp_max_msg(qp));
		if (!sq_room(qp))
			return uroce_fail(-ENOMEM, "uroce_stripe_post_write: QP %u of the stripe (0x%x) has its send queue "
			                           "full (%u WRs outstanding); nothing was posted", i, qp->qpn, qp->sq_size);
	}
	return 0;
}

int uroce_stripe_post_write(struct uroce_stripe *s, const struct uroce_stripe_write *w, unsigned *nshards)
{
	unsigned n;
	int rc;

	if (!s || !w)
		return uroce_fail(-EINVAL, "uroce_stripe_post_write: a stripe and a write are required");
	n = uroce_stripe_shards(w->len, s->nqps, s->min_shard);
	rc = check_all(s, w, n);
	if (rc)
		return rc;
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = shard_off(w->len, n, i), end = shard_off(w->len, n, i + 1);
		struct uroce_sge sge = { .addr = w->addr + off, .length = (uint32_t)(end - off), .lkey = w->lkey };
		struct uroce_send_wr wr = {
			.wr_id = w->wr_id, .sg_list = &sge, .num_sge = end > off, .opcode = UROCE_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = w->send_flags, .imm_data = w->imm_data,
		};

		wr.wr.rdma.remote_addr = w->remote_addr + off;
		wr.wr.rdma.rkey = w->rkey;
		rc = uroce_post_send(s->qps[i], &wr, NULL);
		if (rc) {
			/* cannot happen after check_all (this thread is the QPs'
			 * only poster); said plainly if it ever does */
			char why[256];

			snprintf(why, sizeof(why), "%s", uroce_last_error());
			return uroce_fail(rc, "uroce_stripe_post_write: shard %u of %u refused after %u were posted (the "
			                      "transfer will not be counted): %s", i, n, i, why);
		}
	}
	if (nshards)
		*nshards = n;
	return 0;
}
