/* Memory regions: registration, keys and revocation (the table the
 * responder checks every rkey against). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/qp_internal.h"

struct mr_args {
	struct uroce_pd *pd;
	void *addr;
	size_t length;
	int access;
	struct uroce_mr **out;
	struct uroce_mr *mr;
};

static int mr_reg_call(void *arg)
{
	struct mr_args *a = arg;

	return uroce_mr_reg(a->pd, a->addr, a->length, a->access, a->out);
}

static int mr_dereg_call(void *arg)
{
	return uroce_mr_dereg(((struct mr_args *)arg)->mr);
}

int uroce_mr_reg(struct uroce_pd *pd, void *addr, size_t length, int access, struct uroce_mr **out)
{
	const int known = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ |
	                  UROCE_ACCESS_REMOTE_ATOMIC;
	struct uroce_context *ctx;
	struct mr_int *m;
	uint32_t idx;

	if (!pd || !out || (!addr && length))
		return uroce_fail(-EINVAL, "uroce_mr_reg: pd, out and addr (for a non-empty region) are required");
	if (access & ~known)
		return uroce_fail(-EINVAL, "uroce_mr_reg: unknown access bits 0x%x; accepted: LOCAL_WRITE, "
		                           "REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC", access & ~known);
	if ((access & (UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_ATOMIC)) && !(access & UROCE_ACCESS_LOCAL_WRITE))
		return uroce_fail(-EINVAL, "uroce_mr_reg: REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too "
		                           "(as in ibverbs)");
	if ((uint64_t)(uintptr_t)addr + length < (uint64_t)(uintptr_t)addr)
		return uroce_fail(-EINVAL, "uroce_mr_reg: region wraps around the address space");
	ctx = pd->ctx;
	if (ctx_remote(ctx)) {
		struct mr_args a = { pd, addr, length, access, out, NULL };

		return ctx_call(ctx, mr_reg_call, &a);
	}
	for (idx = ctx->next_mr; idx < MR_TABLE_SIZE && ctx->mrs[idx]; idx++)
		;
	if (idx >= MR_TABLE_SIZE) {
		for (idx = 1; idx < MR_TABLE_SIZE && ctx->mrs[idx]; idx++)
			;
		if (idx >= MR_TABLE_SIZE)
			return uroce_fail(-ENOMEM, "uroce_mr_reg: all %u memory regions in use", MR_TABLE_SIZE - 1);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return uroce_fail(-ENOMEM, "uroce_mr_reg: out of memory");
	m->index = idx;
	m->pub.pd = pd;
	m->pub.addr = addr;
	m->pub.length = length;
	m->pub.access = access;
	/* a fresh generation per registration, so a stale key never matches */
	m->pub.lkey = m->pub.rkey = idx << 8 | ctx->mr_gen++;
	ctx->mrs[idx] = m;
	ctx->next_mr = idx + 1;
	ctx->nmr++;
	__atomic_fetch_add(&pd->refs, 1, __ATOMIC_RELAXED);
	*out = &m->pub;
	return 0;
}

int uroce_mr_dereg(struct uroce_mr *mr)
{
	struct mr_int *m = (struct mr_int *)mr;
	struct uroce_context *ctx;

	if (!mr)
		return uroce_fail(-EINVAL, "uroce_mr_dereg: mr is NULL");
	ctx = mr->pd->ctx;
	if (ctx_remote(ctx)) {
		struct mr_args a = { .mr = mr };

		/* synchronous: the key is revoked on the engine before this returns */
		return ctx_call(ctx, mr_dereg_call, &a);
	}
	ctx->mrs[m->index] = NULL; /* revoked: lookups fail from now on */
	for (uint32_t i = 0; i < QP_TABLE_SIZE; i++) {
		struct uroce_qp *qp = ctx->qps[i];

		if (qp && qp->write_mr == m) {
			qp->write_mr = NULL;
			qp->in_write = false;
		}
	}
	ctx->nmr--;
	__atomic_fetch_sub(&mr->pd->refs, 1, __ATOMIC_RELAXED);
	free(m);
	return 0;
}
