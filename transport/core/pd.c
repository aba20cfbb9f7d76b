/* SPDX-License-Identifier: MIT */
/* Protection domains: the owner that MRs, QPs, SRQs and AHs count on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/core/nic.h"

int uroce_pd_alloc(struct uroce_context *ctx, struct uroce_pd **out)
{
	struct uroce_pd *pd;

	if (!ctx || !out)
		return uroce_fail(-EINVAL, "uroce_pd_alloc: ctx and out are required");
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return uroce_fail(-ENOMEM, "uroce_pd_alloc: out of memory");
	pd->ctx = ctx;
	if (ctx->nic) {
		int rc = ctx->nic->pd_alloc(pd);

		if (rc) {
			free(pd);
			return rc;
		}
	}
	__atomic_fetch_add(&ctx->npd, 1, __ATOMIC_RELAXED);
	*out = pd;
	return 0;
}

int uroce_pd_free(struct uroce_pd *pd)
{
	if (!pd)
		return uroce_fail(-EINVAL, "uroce_pd_free: pd is NULL");
	if (pd->refs)
		return uroce_fail(-EBUSY, "uroce_pd_free: %u MRs/QPs/SRQs/AHs still use this PD", pd->refs);
	if (pd->ctx->nic)
		pd->ctx->nic->pd_free(pd);
	__atomic_fetch_sub(&pd->ctx->npd, 1, __ATOMIC_RELAXED);
	free(pd);
	return 0;
}
