/* SPDX-License-Identifier: MIT */
/* The context's QPs by number: QPNs are drawn at random from the 24-bit
 * space (an off-path host has to guess them), so the table is an
 * open-addressing hash keyed by QPN with a dense list of the live QPs for
 * walks. Every change runs on the engine thread (DEDICATED mode sends
 * create/destroy there through ctx_call), so lookups need no lock. */
#ifndef UROCE_TRANSPORT_QP_TABLE_H
#define UROCE_TRANSPORT_QP_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct uroce_qp;

#define QPT_QPN_MAX 0xfffffeu    /* 0xffffff is the multicast QPN; 0 and 1 are SMI and GSI */
#define QPT_MAX_NUMS 65519u      /* live numbers (a QP with a control QPN holds two) */
#define QPT_EMPTY 0u             /* never a QPN handed out */
#define QPT_TOMB 0xffffffffu     /* a removed key: probes go on past it */

struct qp_table {
	uint32_t *keys;          /* QPN, QPT_EMPTY or QPT_TOMB */
	struct uroce_qp **slot;  /* the QP of keys[i] */
	uint32_t mask;           /* slots - 1 (a power of two) */
	uint32_t shift;          /* 32 - log2(slots) */
	uint32_t salt;           /* random: the slot order is nobody's to predict */
	uint32_t nkeys, ntomb;
	struct uroce_qp **live;  /* every live QP once, for walks */
	uint32_t nlive, live_cap;
	uint32_t rnd[32];        /* getrandom output not used yet */
	uint32_t nrnd;
};

int qpt_init(struct qp_table *t);
void qpt_fini(struct qp_table *t);

static inline uint32_t qpt_hash(const struct qp_table *t, uint32_t qpn)
{
	return ((qpn ^ t->salt) * 0x9e3779b1u) >> t->shift;
}

/* The QP that owns qpn (its data or control QPN), or NULL. */
static inline struct uroce_qp *qpt_get(const struct qp_table *t, uint32_t qpn)
{
	uint32_t i;

	if (qpn == QPT_EMPTY || qpn > QPT_QPN_MAX)
		return NULL;
	i = qpt_hash(t, qpn);
	/* at most every slot; an empty one always exists (load <= 3/4) */
	for (uint32_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
		if (t->keys[i] == qpn)
			return t->slot[i];
		if (t->keys[i] == QPT_EMPTY)
			return NULL;
	}
	return NULL;
}

/* A free random QPN for a QP taking span (1 or 2) numbers, qpn .. qpn +
 * span - 1, all in 2..0xfffffe: 0 with -ENOMEM or -EIO in *err. */
uint32_t qpt_draw(struct qp_table *t, uint32_t span, int *err);

/* qp takes qpn (and qpn + 1 when span is 2); qp->qpt_idx is set. Returns
 * 0 or -ENOMEM (nothing changed then). */
int qpt_add(struct qp_table *t, struct uroce_qp *qp, uint32_t qpn, uint32_t span);
void qpt_del(struct qp_table *t, struct uroce_qp *qp, uint32_t qpn, uint32_t span);

/* Walks: for (i = 0; i < t->nlive; i++) t->live[i] visits each live QP once. */

#endif
