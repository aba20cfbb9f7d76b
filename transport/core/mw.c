/* SPDX-License-Identifier: MIT */
/* Memory windows, type 2 (ibv_alloc_mw / IBV_WR_BIND_MW, IBTA type 2): a
 * window takes a slot of the MR key table, so its rkey is looked up as a
 * region's is (rkey_lookup). A BIND_MW work request binds it to the QP it
 * was posted on; LOCAL_INV, a SEND with Invalidate arriving on that QP or
 * uroce_mw_dealloc revokes it. Binds and invalidations run on the engine
 * thread in send-queue order; they send nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/rel/rel.h"
#include "transport/core/mr.h"
#include "transport/core/mw.h"

/* write_mr of a QP whose WRITE in progress lost its window */
struct mr_int mw_revoked = { .is_mw = true };

struct mw_args {
	struct uroce_pd *pd;
	enum uroce_mw_type type;
	struct uroce_mw **out;
	struct uroce_mw *mw;
};

static struct mw_int *mw_of(struct uroce_mw *mw)
{
	return (struct mw_int *)((char *)mw - offsetof(struct mw_int, pub));
}

static bool mw_valid(const struct mw_int *mw)
{
	return mw->slot.pub.rkey != 0;
}

/* The QP the window is bound to, while it still exists. */
static struct uroce_qp *mw_bound_qp(struct uroce_context *ctx, const struct mw_int *mw)
{
	if (!mw->qp || qpt_get(&ctx->qpt, mw->qpn) != mw->qp)
		return NULL;
	return mw->qp;
}

/* Invalid from now on: every key of it is refused as rkey_revoked, also
 * by the rest of a WRITE that passed its check before. */
static void mw_revoke(struct uroce_context *ctx, struct mw_int *mw)
{
	struct uroce_qp *qp = mw_bound_qp(ctx, mw);

	if (!mw_valid(mw))
		return;
	if (qp && qp->write_mr == &mw->slot)
		qp->write_mr = &mw_revoked;
	mw->mr->nbound--;
	mw->mr = NULL;
	mw->qp = NULL;
	mw->qpn = 0;
	mw->slot.pub.rkey = 0;
	mw->slot.pub.addr = NULL;
	mw->slot.pub.length = 0;
	mw->slot.pub.access = 0;
}

static int mw_alloc_call(void *arg)
{
	struct mw_args *a = arg;

	return uroce_mw_alloc(a->pd, a->type, a->out);
}

static int mw_dealloc_call(void *arg)
{
	return uroce_mw_dealloc(((struct mw_args *)arg)->mw);
}

int uroce_mw_alloc(struct uroce_pd *pd, enum uroce_mw_type type, struct uroce_mw **out)
{
	struct uroce_context *ctx;
	struct mw_int *mw;
	uint32_t idx;

	if (!pd || !out)
		return uroce_fail(-EINVAL, "uroce_mw_alloc: pd and out are required");
	if (pd->ctx->nic)
		return uroce_fail(-EOPNOTSUPP, "uroce_mw_alloc: memory windows are not carried on a verbs port yet");
	if (type != UROCE_MW_TYPE_2)
		return uroce_fail(-EINVAL, "uroce_mw_alloc: window type %d; only UROCE_MW_TYPE_2 is accepted (type 1 "
		                           "is bound by a verb call, which uroce does not have)", (int)type);
	ctx = pd->ctx;
	if (ctx_remote(ctx)) {
		struct mw_args a = { .pd = pd, .type = type, .out = out };

		return ctx_call(ctx, mw_alloc_call, &a);
	}
	idx = mr_slot_find(ctx);
	if (!idx)
		return uroce_fail(-ENOMEM, "uroce_mw_alloc: all %u keys in use (memory regions and windows)",
		                  MR_TABLE_SIZE - 1);
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return uroce_fail(-ENOMEM, "uroce_mw_alloc: out of memory");
	mw->slot.index = idx;
	mw->slot.is_mw = true;
	mw->slot.pub.pd = pd;
	mw->pub.pd = pd;
	mw->pub.type = type;
	/* invalid until bound: its first key is the caller's uroce_inc_rkey of this one */
	mw->pub.rkey = idx << 8 | mr_key_byte_new(ctx, idx);
	mw->key = mw->pub.rkey;
	ctx->mr_last_keys[MR_KEY_REC * idx + 2] = MR_KEY_WAS_MW; /* the last keys stay: none of it was live yet */
	ctx->mrs[idx] = &mw->slot;
	ctx->next_mr = idx + 1;
	__atomic_fetch_add(&pd->refs, 1, __ATOMIC_RELAXED);
	*out = &mw->pub;
	return 0;
}

int uroce_mw_dealloc(struct uroce_mw *pub)
{
	struct uroce_context *ctx;
	struct mw_int *mw;

	if (!pub)
		return uroce_fail(-EINVAL, "uroce_mw_dealloc: mw is NULL");
	ctx = pub->pd->ctx;
	if (ctx_remote(ctx)) {
		struct mw_args a = { .mw = pub };

		/* synchronous: the key is revoked on the engine before this returns */
		return ctx_call(ctx, mw_dealloc_call, &a);
	}
	mw = mw_of(pub);
	mw_revoke(ctx, mw);
	/* the index remembers a window: its keys count as revoked until reused */
	ctx->mrs[mw->slot.index] = NULL;
	__atomic_fetch_sub(&pub->pd->refs, 1, __ATOMIC_RELAXED);
	free(mw);
	return 0;
}

/* BIND_MW: the checks of post time again, since the
 * window or the region may be gone since; then the old key (if bound) is
 * revoked and the new one opens the range to this QP's peer alone. */
static bool mw_bind(struct uroce_qp *qp, const struct swqe *w)
{
	struct uroce_context *ctx = qp->ctx;
	struct mw_int *mw = (struct mw_int *)(uintptr_t)w->swap;
	uint32_t idx = w->rkey >> 8, access = w->imm;
	struct mr_int *mr;
	uint64_t start;
	uint8_t *last;

	if (idx >= MR_TABLE_SIZE || ctx->mrs[idx] != &mw->slot)
		return false; /* deallocated after the post */
	if (mw_valid(mw) && mw_bound_qp(ctx, mw) && mw->qp != qp)
		return false; /* a type 2 window is rebound through its own QP only (while that exists) */
	mr = mr_lookup_lkey(ctx, w->ud_qkey);
	if (!mr || mr->pub.pd != qp->pd || !(mr->pub.access & UROCE_ACCESS_MW_BIND) ||
	    (access & ~(unsigned)mr->pub.access))
		return false; /* deregistered after the post */
	start = (uint64_t)(uintptr_t)mr->pub.addr;
	if (w->raddr < start || w->compare_add > mr->pub.length || w->raddr - start > mr->pub.length - w->compare_add)
		return false;
	mw_revoke(ctx, mw);
	mw->mr = mr;
	mr->nbound++;
	mw->qp = qp;
	mw->qpn = qp->qpn;
	mw->key = w->rkey;
	mw->slot.pub.addr = (void *)(uintptr_t)w->raddr;
	mw->slot.pub.length = w->compare_add;
	mw->slot.pub.access = (int)access;
	mw->slot.pub.rkey = w->rkey;
	last = &ctx->mr_last_keys[MR_KEY_REC * idx];
	last[1] = (uint8_t)w->rkey; /* a region taking the index later gets other key bytes */
	return true;
}

/* LOCAL_INV: a window of the QP's PD under exactly this key, and valid
 * (as rxe: invalidating an invalid window is an error). Any QP of the PD
 * may post it, as in rxe; a peer's invalidation has to come through the
 * window's own QP (mw_remote_invalidate). */
static bool mw_local_inv(struct uroce_qp *qp, uint32_t rkey)
{
	struct uroce_context *ctx = qp->ctx;
	uint32_t idx = rkey >> 8;
	struct mr_int *m = idx < MR_TABLE_SIZE ? ctx->mrs[idx] : NULL;
	struct mw_int *mw = (struct mw_int *)m;

	if (!m || !m->is_mw || m->pub.pd != qp->pd || !mw_valid(mw) || mw->key != rkey)
		return false;
	mw_revoke(ctx, mw);
	return true;
}

bool qp_local_wr(struct uroce_qp *qp, struct swqe *w)
{
	bool ok = w->opcode == UROCE_WR_BIND_MW ? mw_bind(qp, w) : mw_local_inv(qp, w->imm);

	w->state = SWQE_SENT;
	w->unacked = 0;
	w->first_psn = w->last_psn = w->resp_psn = qp->snd_nxt; /* holds no PSN */
	w->done = !ok; /* a local WQE's done: it failed */
	return ok;
}

bool qp_local_retire(struct uroce_qp *qp, struct swqe *w)
{
	bool ok = !w->done;

	qp->rel->complete(qp, w, ok ? UROCE_WC_SUCCESS :
	                         w->opcode == UROCE_WR_BIND_MW ? UROCE_WC_MW_BIND_ERR : UROCE_WC_LOC_PROT_ERR);
	qp->sq_tail++;
	if (!ok)
		qp_to_error(qp); /* a local error ends the QP, as in rxe; the WQEs after it flush */
	return ok;
}

void qp_retire_locals(struct uroce_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head, memory_order_acquire);

	while (qp->sq_tail != head) {
		struct swqe *w = &qp->sq[qp->sq_tail & qp->sq_mask];

		if (!wr_is_local(w->opcode) || w->state == SWQE_POSTED)
			return;
		if (!qp_local_retire(qp, w))
			return;
	}
}

enum uroce_drop_reason mw_remote_invalidate(struct uroce_qp *qp, uint32_t rkey)
{
	enum uroce_drop_reason why;
	struct mr_int *m = rkey_lookup(qp, rkey, &why);

	if (!m)
		return why;
	if (!m->is_mw)
		return UROCE_DROP_ACCESS_DENIED; /* a region's key: only windows are invalidated */
	mw_revoke(qp->ctx, (struct mw_int *)m);
	return UROCE_DROP_NONE;
}
