/* SPDX-License-Identifier: MIT */
/* Shared receive queues. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/core/nic.h"

int uroce_srq_create(struct uroce_pd *pd, const struct uroce_srq_init_attr *attr, struct uroce_srq **out)
{
	struct uroce_srq *srq;
	uint32_t n = 1, sge;

	if (!pd || !attr || !out)
		return uroce_fail(-EINVAL, "uroce_srq_create: pd, attr and out are required");
	if (attr->max_wr < 1 || attr->max_wr > QP_MAX_WR || attr->max_sge > QP_MAX_SGE)
		return uroce_fail(-EINVAL, "uroce_srq_create: max_wr %u, max_sge %u; accepted: max_wr 1-%u, "
		                           "max_sge 0-%u", attr->max_wr, attr->max_sge, QP_MAX_WR, QP_MAX_SGE);
	while (n < attr->max_wr)
		n <<= 1;
	sge = attr->max_sge ? attr->max_sge : 1;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return uroce_fail(-ENOMEM, "uroce_srq_create: out of memory");
	srq->pd = pd;
	if (pd->ctx->nic) {
		int rc = pd->ctx->nic->srq_create(srq, attr);

		if (rc) {
			free(srq);
			return rc;
		}
		goto done;
	}
	srq->q = calloc(n, sizeof(*srq->q));
	srq->sges = calloc((size_t)n * sge, sizeof(*srq->sges));
	if (!srq->q || !srq->sges) {
		free(srq->q);
		free(srq->sges);
		free(srq);
		return uroce_fail(-ENOMEM, "uroce_srq_create: out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		srq->q[i].sge = srq->sges + (size_t)i * sge;
	srq->size = n;
	srq->mask = n - 1;
	srq->max_sge = sge;
done:
	__atomic_fetch_add(&pd->refs, 1, __ATOMIC_RELAXED);
	*out = srq;
	return 0;
}

int uroce_srq_destroy(struct uroce_srq *srq)
{
	if (!srq)
		return uroce_fail(-EINVAL, "uroce_srq_destroy: srq is NULL");
	if (srq->refs)
		return uroce_fail(-EBUSY, "uroce_srq_destroy: %u QPs still use this SRQ", srq->refs);
	__atomic_fetch_sub(&srq->pd->refs, 1, __ATOMIC_RELAXED);
	if (srq->nic)
		srq->pd->ctx->nic->srq_destroy(srq);
	free(srq->q);
	free(srq->sges);
	free(srq);
	return 0;
}
