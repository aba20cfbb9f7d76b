/* SPDX-License-Identifier: MIT */
/* Address handles: a UD destination resolved once, on its port. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/core/nic.h"
#include "transport/core/ctx_call.h"

CTX_CALL3(ah_create, uroce_ah_create, struct uroce_pd *, const struct uroce_ah_attr *, struct uroce_ah **)

int uroce_ah_create(struct uroce_pd *pd, const struct uroce_ah_attr *attr, struct uroce_ah **out)
{
	struct uroce_ah *ah;
	int rc;

	if (!pd || !attr || !out)
		return uroce_fail(-EINVAL, "uroce_ah_create: pd, attr and out are required");
	if (pd->ctx->nic) {
		ah = calloc(1, sizeof(*ah));
		if (!ah)
			return uroce_fail(-ENOMEM, "uroce_ah_create: out of memory");
		ah->pd = pd;
		rc = pd->ctx->nic->ah_create(ah, attr);
		if (rc) {
			free(ah);
			return rc;
		}
		goto done;
	}
	/* The MAC is resolved on the engine thread, as for a QP's AV: a DPDK
	 * port resolves by polling its own receive queue, which only the
	 * engine may touch. */
	if (ctx_remote(pd->ctx)) {
		struct ah_create_args a = { pd, attr, out };

		return ctx_call(pd->ctx, ah_create_call, &a);
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return uroce_fail(-ENOMEM, "uroce_ah_create: out of memory");
	rc = ctx_port_index(pd->ctx, attr->port_num ? attr->port_num : 1u, "ah_attr");
	if (rc >= 0)
		rc = ctx_resolve_dest(pd->ctx, (unsigned)rc, attr, &ah->d);
	if (rc) {
		char why[512];

		snprintf(why, sizeof(why), "%s", uroce_last_error());
		free(ah);
		return uroce_fail(rc, "uroce_ah_create: %s", why);
	}
	ah->pd = pd;
done:
	ah->attr = *attr;
	__atomic_fetch_add(&pd->refs, 1, __ATOMIC_RELAXED);
	*out = ah;
	return 0;
}

int uroce_ah_destroy(struct uroce_ah *ah)
{
	if (!ah)
		return uroce_fail(-EINVAL, "uroce_ah_destroy: ah is NULL");
	__atomic_fetch_sub(&ah->pd->refs, 1, __ATOMIC_RELAXED);
	if (ah->nic)
		ah->pd->ctx->nic->ah_destroy(ah);
	free(ah);
	return 0;
}
