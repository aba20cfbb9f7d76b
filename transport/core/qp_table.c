/* SPDX-License-Identifier: MIT */
/* QPs by number: random QPNs, an open-addressing hash table (linear
 * probing, tombstones, rebuilt when they pile up) and a dense live list. */
#include "transport/core/qp_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "transport/core/qp_internal.h"

#define QPT_MIN_SLOTS 64u

static int qpt_alloc(struct qp_table *t, uint32_t slots)
{
	uint32_t *keys = calloc(slots, sizeof(*keys));
	struct uroce_qp **slot = calloc(slots, sizeof(*slot));

	if (!keys || !slot) {
		free(keys);
		free(slot);
		return -ENOMEM;
	}
	t->keys = keys;
	t->slot = slot;
	t->mask = slots - 1;
	t->shift = 32u - (uint32_t)__builtin_ctz(slots);
	t->nkeys = t->ntomb = 0;
	return 0;
}

static void qpt_put(struct qp_table *t, uint32_t qpn, struct uroce_qp *qp)
{
	uint32_t i = qpt_hash(t, qpn);

	/* qpt_reserve keeps a quarter of the slots free: an empty or
	 * tombstone slot comes before the probe wraps */
	for (uint32_t n = 0; n < t->mask && t->keys[i] != QPT_EMPTY && t->keys[i] != QPT_TOMB; n++)
		i = (i + 1) & t->mask;
	if (t->keys[i] == QPT_TOMB)
		t->ntomb--;
	t->keys[i] = qpn;
	t->slot[i] = qp;
	t->nkeys++;
}

static int qpt_random(struct qp_table *t, uint32_t *out)
{
	if (!t->nrnd) {
		if (getrandom(t->rnd, sizeof(t->rnd), 0) != (ssize_t)sizeof(t->rnd))
			return -EIO;
		t->nrnd = sizeof(t->rnd) / sizeof(t->rnd[0]);
	}
	*out = t->rnd[--t->nrnd];
	t->rnd[t->nrnd] = 0; /* a used number does not stay behind */
	return 0;
}

int qpt_init(struct qp_table *t)
{
	memset(t, 0, sizeof(*t));
	if (qpt_random(t, &t->salt) || qpt_alloc(t, QPT_MIN_SLOTS))
		return -ENOMEM;
	return 0;
}

void qpt_fini(struct qp_table *t)
{
	free(t->keys);
	free(t->slot);
	free(t->live);
	memset(t, 0, sizeof(*t));
}

/* Room for more keys: at most 3/4 of the slots used (keys + tombstones),
 * else a rebuild at a size where the keys fill at most half. */
static int qpt_reserve(struct qp_table *t, uint32_t more)
{
	struct qp_table old = *t;
	uint32_t slots = QPT_MIN_SLOTS;

	if ((uint64_t)(t->nkeys + t->ntomb + more) * 4 <= (uint64_t)(t->mask + 1) * 3)
		return 0;
	while ((uint64_t)(t->nkeys + more) * 2 > slots)
		slots <<= 1;
	if (qpt_alloc(t, slots)) {
		*t = old;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i <= old.mask; i++)
		if (old.keys[i] != QPT_EMPTY && old.keys[i] != QPT_TOMB)
			qpt_put(t, old.keys[i], old.slot[i]);
	free(old.keys);
	free(old.slot);
	return 0;
}

uint32_t qpt_draw(struct qp_table *t, uint32_t span, int *err)
{
	if (t->nkeys + span > QPT_MAX_NUMS) {
		*err = -ENOMEM;
		return 0;
	}
	/* a try fails with odds below 1 in 100 (at most 65519 numbers of
	 * 2^24 are taken): 64 tries do not all fail */
	for (unsigned tries = 0; tries < 64; tries++) {
		uint32_t r, q;

		if (qpt_random(t, &r)) {
			*err = -EIO;
			return 0;
		}
		q = r & 0xffffffu;
		if (q < 2 || q + span - 1 > QPT_QPN_MAX)
			continue;
		if (qpt_get(t, q) || (span == 2 && qpt_get(t, q + 1)))
			continue;
		return q;
	}
	*err = -ENOMEM;
	return 0;
}

int qpt_add(struct qp_table *t, struct uroce_qp *qp, uint32_t qpn, uint32_t span)
{
	if (t->nlive == t->live_cap) {
		uint32_t cap = t->live_cap ? t->live_cap * 2 : 16;
		struct uroce_qp **l = realloc(t->live, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		t->live = l;
		t->live_cap = cap;
	}
	if (qpt_reserve(t, span))
		return -ENOMEM;
	for (uint32_t i = 0; i < span; i++)
		qpt_put(t, qpn + i, qp);
	qp->qpt_idx = t->nlive;
	t->live[t->nlive++] = qp;
	return 0;
}

static void qpt_remove_key(struct qp_table *t, uint32_t qpn)
{
	uint32_t i = qpt_hash(t, qpn);

	for (uint32_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
		if (t->keys[i] == QPT_EMPTY)
			return;
		if (t->keys[i] != qpn)
			continue;
		t->slot[i] = NULL;
		t->nkeys--;
		if (t->keys[(i + 1) & t->mask] != QPT_EMPTY) {
			t->keys[i] = QPT_TOMB;
			t->ntomb++;
			return;
		}
		/* the end of a run: it and the tombstones before it are empty */
		t->keys[i] = QPT_EMPTY;
		for (uint32_t m = 0; m < t->mask; m++) {
			i = (i - 1) & t->mask;
			if (t->keys[i] != QPT_TOMB)
				break;
			t->keys[i] = QPT_EMPTY;
			t->ntomb--;
		}
		return;
	}
}

void qpt_del(struct qp_table *t, struct uroce_qp *qp, uint32_t qpn, uint32_t span)
{
	uint32_t k = qp->qpt_idx;

	for (uint32_t i = 0; i < span; i++)
		qpt_remove_key(t, qpn + i);
	if (k < t->nlive && t->live[k] == qp) {
		t->live[k] = t->live[--t->nlive];
		t->live[k]->qpt_idx = k;
	}
}
