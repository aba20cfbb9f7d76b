/* SPDX-License-Identifier: MIT */
/* Completion queues: an SPSC ring the engine fills and the app polls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/core/async.h"
#include "transport/core/nic.h"
#include "gpu/hadamard.h"

int uroce_cq_create(struct uroce_context *ctx, int cqe, struct uroce_cq **out)
{
	struct uroce_cq *cq;
	uint32_t n = 1;

	if (!ctx || !out)
		return uroce_fail(-EINVAL, "uroce_cq_create: ctx and out are required");
	if (cqe < 1 || cqe > (1 << 20))
		return uroce_fail(-EINVAL, "uroce_cq_create: cqe %d; accepted: 1-%d", cqe, 1 << 20);
	while (n < (uint32_t)cqe)
		n <<= 1;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return uroce_fail(-ENOMEM, "uroce_cq_create: out of memory");
	cq->ctx = ctx;
	if (ctx->nic) {
		int rc = ctx->nic->cq_create(cq, cqe);

		if (rc) {
			free(cq);
			return rc;
		}
	}
	/* on a NIC too: the completions of sr QPs, whose engine is uroce's */
	cq->ring = spsc_ring_create(n, sizeof(struct uroce_wc));
	if (!cq->ring) {
		if (cq->nic)
			ctx->nic->cq_destroy(cq);
		free(cq);
		return uroce_fail(-ENOMEM, "uroce_cq_create: out of memory");
	}
	__atomic_fetch_add(&ctx->ncq, 1, __ATOMIC_RELAXED);
	*out = cq;
	return 0;
}

int uroce_cq_destroy(struct uroce_cq *cq)
{
	if (!cq)
		return uroce_fail(-EINVAL, "uroce_cq_destroy: cq is NULL");
	if (cq->refs)
		return uroce_fail(-EBUSY, "uroce_cq_destroy: %u QPs still use this CQ", cq->refs);
	if (cq->channel) {
		int rc = cq_channel_detach(cq);

		if (rc)
			return rc;
	}
	__atomic_fetch_sub(&cq->ctx->ncq, 1, __ATOMIC_RELAXED);
	if (cq->nic)
		cq->ctx->nic->cq_destroy(cq);
	spsc_ring_destroy(cq->ring);
	if (cq->hd)
		spsc_ring_destroy(cq->hd);
	free(cq);
	return 0;
}

/* As long as the CQ's ring: every record goes with a completion there. */
int cq_hd_attach(struct uroce_cq *cq)
{
	struct spsc_ring *r;

	if (__atomic_load_n(&cq->hd, __ATOMIC_ACQUIRE))
		return 0;
	r = spsc_ring_create(spsc_ring_capacity(cq->ring), sizeof(struct cq_hd));
	if (!r)
		return uroce_fail(-ENOMEM, "uroce_qp_create: out of memory");
	/* two QPs made at once on two threads: one ring wins */
	struct spsc_ring *none = NULL;

	if (!__atomic_compare_exchange_n(&cq->hd, &none, r, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		spsc_ring_destroy(r);
	return 0;
}

/* The poller decodes what the engine placed (the cost falls on the
 * application's thread, not on the engine's other QPs). */
static void cq_decode(struct uroce_cq *cq, struct uroce_wc *wc, int n)
{
	struct spsc_ring *r = __atomic_load_n(&cq->hd, __ATOMIC_ACQUIRE);
	struct cq_hd h;

	for (int i = 0; i < n; i++) {
		if (!(wc[i].wc_flags & UROCE_WC_HADAMARD))
			continue;
		if (!r || spsc_ring_dequeue_burst(r, &h, 1) != 1) {
			wc[i].wc_flags &= ~(unsigned)UROCE_WC_HADAMARD; /* cannot be: records go with completions */
			continue;
		}
		if (h.count)
			hd_cpu(h.buf, h.count, h.block, h.stride, 0);
	}
}

/* Verbs' CQ overrun (IBTA 11.6.2): the CQ goes to error and raises
 * CQ_ERR, and every QP completing into it becomes fatal; completions are
 * never dropped silently. The QPs move to ERR from their own transmit
 * pass, not here in the middle of whatever completed. */
static void cq_overrun(struct uroce_cq *cq)
{
	struct uroce_context *ctx = cq->ctx;
	struct uroce_async_event ev = { .event_type = UROCE_EVENT_CQ_ERR };

	__atomic_store_n(&cq->error, true, __ATOMIC_RELEASE);
	ev.element.cq = cq;
	ctx_async_event(ctx, &ev);
	for (uint32_t i = 0; i < ctx->qpt.nlive; i++) {
		struct uroce_qp *qp = ctx->qpt.live[i];

		if ((qp->scq == cq || qp->rcq == cq) && qp->state != UROCE_QPS_ERR) {
			qp->fatal_pending = true;
			ctx_kick(qp);
		}
	}
}

void cq_push(struct uroce_cq *cq, const struct uroce_wc *wc)
{
	if (!cq->error && spsc_ring_enqueue(cq->ring, wc)) {
		if (cq->channel)
			cq_notify(cq);
		return;
	}
	__atomic_fetch_add(&cq->overflows, 1, __ATOMIC_RELAXED);
	if (!cq->error) {
		cq_overrun(cq);
		if (cq->channel)
			cq_notify(cq); /* a sleeper wakes to find the error */
	}
}

int uroce_poll_cq(struct uroce_cq *cq, int n, struct uroce_wc *wc)
{
	if (!cq || n < 0 || (n && !wc))
		return uroce_fail(-EINVAL, "uroce_poll_cq: cq and wc are required, n >= 0");
	/* the flag first: completions queued before the overrun are all in
	 * the ring by the time it is set, so an empty ring then means none is
	 * left to deliver */
	bool error = __atomic_load_n(&cq->error, __ATOMIC_ACQUIRE);
	int got = (int)spsc_ring_dequeue_burst(cq->ring, wc, (uint32_t)n);

	if (got && __atomic_load_n(&cq->hd, __ATOMIC_RELAXED))
		cq_decode(cq, wc, got);

	if (cq->nic && got < n) {
		/* then what the NIC's own QPs completed */
		int more = cq->ctx->nic->poll_cq(cq, n - got, wc + got);

		if (more < 0)
			return got ? got : more;
		got += more;
	}

	if (got == 0 && n && error)
		return uroce_fail(-EIO, "uroce_poll_cq: the CQ overran and is in error (%llu completions lost); "
		                        "its QPs went to ERR; destroy it and create a larger one",
		                  (unsigned long long)__atomic_load_n(&cq->overflows, __ATOMIC_RELAXED));
	return got;
}
