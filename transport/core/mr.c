/* SPDX-License-Identifier: MIT */
/* Memory regions: registration, keys and revocation (the table the
 * responder checks every rkey against; memory windows, mw.c, take slots of
 * the same table). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "transport/core/qp_internal.h"
#include "transport/core/mr.h"
#include "transport/core/nic.h"
#include "transport/core/dmabuf.h"

struct mr_args {
	struct uroce_pd *pd;
	void *addr;
	size_t length;
	int access;
	struct uroce_mr **out;
	struct uroce_mr *mr;
};

int mr_keys_init(struct uroce_context *ctx)
{
	struct timespec ts;

	ctx->mr_last_keys = calloc(MR_TABLE_SIZE, MR_KEY_REC);
	if (!ctx->mr_last_keys)
		return -ENOMEM;
	/* Random at start, as rxe's keys are: a peer that saw one rkey
	 * cannot name the next region, nor the regions of another run. */
	if (getrandom(&ctx->mr_rng, sizeof(ctx->mr_rng), GRND_NONBLOCK) != (ssize_t)sizeof(ctx->mr_rng)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ctx->mr_rng = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)ctx;
	}
	ctx->mr_rng |= 1; /* xorshift never leaves 0 */
	return 0;
}

void mr_keys_fini(struct uroce_context *ctx)
{
	free(ctx->mr_last_keys);
	ctx->mr_last_keys = NULL;
}

static uint8_t mr_key_byte(struct uroce_context *ctx)
{
	uint64_t x = ctx->mr_rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	ctx->mr_rng = x;
	return (uint8_t)(x >> 32);
}

uint8_t mr_key_byte_new(struct uroce_context *ctx, uint32_t idx)
{
	const uint8_t *last = &ctx->mr_last_keys[MR_KEY_REC * idx];
	uint8_t b;

	do
		b = mr_key_byte(ctx);
	while (b == last[0] || b == last[1]);
	return b;
}

/* Key bytes of a new region at index idx: its lkey and rkey differ, and
 * each differs from the keys the last object at this index had, so a
 * revoked key never names its successor. */
static void mr_new_keys(struct uroce_context *ctx, uint32_t idx, struct uroce_mr *mr)
{
	uint8_t *last = &ctx->mr_last_keys[MR_KEY_REC * idx];
	uint8_t lb, rb;

	lb = mr_key_byte_new(ctx, idx);
	do
		rb = mr_key_byte_new(ctx, idx);
	while (rb == lb);
	last[0] = lb;
	last[1] = rb;
	last[2] = 0; /* a region's index: its old keys are unknown, not revoked windows */
	mr->lkey = idx << 8 | lb;
	mr->rkey = idx << 8 | rb;
}

uint32_t mr_slot_find(struct uroce_context *ctx)
{
	uint32_t idx;

	for (idx = ctx->next_mr; idx < MR_TABLE_SIZE && ctx->mrs[idx]; idx++)
		;
	if (idx >= MR_TABLE_SIZE) {
		for (idx = 1; idx < MR_TABLE_SIZE && ctx->mrs[idx]; idx++)
			;
		if (idx >= MR_TABLE_SIZE)
			return 0;
	}
	return idx;
}

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
	                  UROCE_ACCESS_REMOTE_ATOMIC | UROCE_ACCESS_MW_BIND;
	struct uroce_context *ctx;
	struct mr_int *m;
	uint32_t idx;

	if (!pd || !out || (!addr && length))
		return uroce_fail(-EINVAL, "uroce_mr_reg: pd, out and addr (for a non-empty region) are required");
	if (access & ~known)
		return uroce_fail(-EINVAL, "uroce_mr_reg: unknown access bits 0x%x; accepted: LOCAL_WRITE, "
		                           "REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC, MW_BIND", access & ~known);
	if ((access & (UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_ATOMIC)) && !(access & UROCE_ACCESS_LOCAL_WRITE))
		return uroce_fail(-EINVAL, "uroce_mr_reg: REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too "
		                           "(as in ibverbs)");
	if ((uint64_t)(uintptr_t)addr + length < (uint64_t)(uintptr_t)addr)
		return uroce_fail(-EINVAL, "uroce_mr_reg: region wraps around the address space");
	ctx = pd->ctx;
	if (ctx->nic)
		return ctx->nic->mr_reg(pd, addr, length, access, out);
	if (ctx_remote(ctx)) {
		struct mr_args a = { pd, addr, length, access, out, NULL };

		return ctx_call(ctx, mr_reg_call, &a);
	}
	idx = mr_slot_find(ctx);
	if (!idx)
		return uroce_fail(-ENOMEM, "uroce_mr_reg: all %u keys in use (memory regions and windows)",
		                  MR_TABLE_SIZE - 1);
	m = calloc(1, sizeof(*m));
	if (!m)
		return uroce_fail(-ENOMEM, "uroce_mr_reg: out of memory");
	m->index = idx;
	m->pub.pd = pd;
	m->pub.addr = addr;
	m->pub.length = length;
	m->pub.access = access;
	mr_new_keys(ctx, idx, &m->pub);
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
	if (ctx->nic)
		return ctx->nic->mr_dereg(mr);
	if (ctx_remote(ctx)) {
		struct mr_args a = { .mr = mr };

		/* synchronous: the key is revoked on the engine before this returns */
		return ctx_call(ctx, mr_dereg_call, &a);
	}
	if (m->nbound)
		return uroce_fail(-EBUSY, "uroce_mr_dereg: %u memory window(s) are bound to the region; invalidate "
		                          "them (LOCAL_INV) or deallocate them first", m->nbound);
	ctx->mrs[m->index] = NULL; /* revoked: lookups fail from now on */
	for (uint32_t i = 0; i < ctx->qpt.nlive; i++) {
		struct uroce_qp *qp = ctx->qpt.live[i];

		/* the WRITE stays in progress with no region: its next
		 * packet is refused as bad_rkey (NAK remote access error),
		 * as any packet naming the revoked key is */
		if (qp->write_mr == m)
			qp->write_mr = NULL;
	}
	ctx->nmr--;
	__atomic_fetch_sub(&mr->pd->refs, 1, __ATOMIC_RELAXED);
	dmabuf_unmap(m->map, m->map_len);
	free(m);
	return 0;
}
