/* SPDX-License-Identifier: MIT */
/* Memory regions inside the library (mr.c): the key table, the lookups
 * and bounds checks every packet that names a key passes. */
#ifndef UROCE_TRANSPORT_CORE_MR_H
#define UROCE_TRANSPORT_CORE_MR_H

#include <stdbool.h>
#include <stdint.h>
#include "transport/core/qp_internal.h"

#define MR_TABLE_SIZE (1u << 16)  /* key = index << 8 | random key byte */

/* MR key state of a new context (mr.c). */
int mr_keys_init(struct uroce_context *ctx);
void mr_keys_fini(struct uroce_context *ctx);

/* Key table slots shared by regions and windows (mr.c). */
uint32_t mr_slot_find(struct uroce_context *ctx); /* a free index, 0 when full */
uint8_t mr_key_byte_new(struct uroce_context *ctx, uint32_t idx); /* differs from the last keys at idx */

/* --- MR lookup (the hot-path check) --------------------------------------- */
/* A key is index << 8 | a random byte; lkey and rkey of one region differ
 * in that byte, so a local key is no remote key (mr.c). */
static inline struct mr_int *mr_lookup_key(struct uroce_context *ctx, uint32_t key, bool remote)
{
	uint32_t idx = key >> 8;
	struct mr_int *m;

	if (idx >= MR_TABLE_SIZE)
		return NULL;
	m = ctx->mrs[idx];
	return (m && (remote ? m->pub.rkey : m->pub.lkey) == key && !m->is_mw) ? m : NULL;
}

static inline struct mr_int *mr_lookup_lkey(struct uroce_context *ctx, uint32_t key)
{
	return mr_lookup_key(ctx, key, false);
}

static inline struct mr_int *mr_lookup_rkey(struct uroce_context *ctx, uint32_t key)
{
	return mr_lookup_key(ctx, key, true);
}

/* Per index of the key table, mr_last_keys holds MR_KEY_REC bytes: the
 * key bytes of the last lkey and rkey handed out there, then MR_KEY_WAS_MW
 * when the last object there was a memory window (a key naming its index
 * is revoked, not unknown, until a region takes the index). */
#define MR_KEY_REC 3u
#define MR_KEY_WAS_MW 1u

/* The region or window rkey opens to qp's peer: a region of qp's PD, or a
 * window bound to qp under exactly this key (its slot's pub holds the
 * bind's range and access, for mr_check). NULL with *why: BAD_RKEY for a
 * key that names nothing, another PD or a window bound to another QP;
 * RKEY_REVOKED for a window invalidated, rebound under another key or
 * deallocated (its index not reused since). Never an lkey. */
static inline struct mr_int *rkey_lookup(struct uroce_qp *qp, uint32_t rkey, enum uroce_drop_reason *why)
{
	struct uroce_context *ctx = qp->ctx;
	uint32_t idx = rkey >> 8;
	struct mr_int *m;
	bool revoked;

	*why = UROCE_DROP_BAD_RKEY;
	if (idx >= MR_TABLE_SIZE)
		return NULL;
	m = ctx->mrs[idx];
	if (__builtin_expect(m && m->pub.rkey == rkey && m->pub.pd == qp->pd, 1)) {
		const struct mw_int *mw = (const struct mw_int *)m;

		/* a window opens to its own QP's peer only (the QPN too: a QP
		 * destroyed since may have left its address to a new one) */
		return !m->is_mw || (mw->qp == qp && mw->qpn == qp->qpn) ? m : NULL;
	}
	if (m)
		revoked = m->is_mw && m->pub.pd == qp->pd;
	else
		revoked = ctx->mr_last_keys[MR_KEY_REC * idx + 2] & MR_KEY_WAS_MW;
	if (revoked)
		*why = UROCE_DROP_RKEY_REVOKED;
	return NULL;
}

/* True when [va, va+len) lies inside m and access has every bit of need. */
static inline bool mr_check(const struct mr_int *m, const struct uroce_pd *pd, uint64_t va, uint64_t len,
                            int need)
{
	uint64_t start = (uint64_t)(uintptr_t)m->pub.addr;

	if (m->pub.pd != pd || (m->pub.access & need) != need)
		return false;
	if (va < start || len > m->pub.length || va - start > m->pub.length - len)
		return false;
	return true;
}

/* Local buffers are checked at post time; a region deregistered since then
 * must not be written: true when every SGE's lkey is still live. */
static inline bool sges_live(struct uroce_context *ctx, const struct uroce_sge *sge, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (sge[i].length && !mr_lookup_lkey(ctx, sge[i].lkey))
			return false;
	return true;
}

#endif /* UROCE_TRANSPORT_CORE_MR_H */
