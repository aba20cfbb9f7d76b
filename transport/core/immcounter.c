/* SPDX-License-Identifier: MIT */
/* IMMCOUNTER (TransferEngine section 3.3): completion by counting
 * immediates instead of by order. The context keeps, per immediate value,
 * the arrivals not yet taken and a FIFO of expectations; QPs created with
 * rel.imm_counter add to it from any port. Everything here runs on the
 * engine's thread (the API calls travel there by ctx_call). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "transport/core/fifo.h"
#include "transport/core/immcounter.h"

#define IMM_TABLE_MIN 64u
/* Entries a context keeps: those with only arrivals nobody expects yet
 * (a peer picks those immediates) at most IMM_UNEXPECTED_MAX, all of them
 * at most IMM_ENTRIES_MAX, so an expectation always finds room while the
 * peers' unexpected counts fill theirs. The table stays at most half
 * full: 2 x IMM_ENTRIES_MAX slots of 32 bytes, 4 MiB. */
#define IMM_UNEXPECTED_MAX 16384u
#define IMM_ENTRIES_MAX 65536u
#define IMM_TABLE_MAX (2 * IMM_ENTRIES_MAX)

struct imm_exp {
	struct imm_exp *next;
	uint32_t count;
	uroce_imm_cb cb;
	void *arg;
	int *flag;
};

struct imm_slot {
	uint32_t imm;            /* network order, as posted */
	bool used;
	uint64_t count;          /* arrivals not taken by an expectation */
	struct imm_exp *head, *tail;
};

struct imm_table {
	struct imm_slot *slots;
	uint32_t mask, used;
	uint32_t unexpected; /* entries with counts and no expectation */
};

static uint32_t imm_hash(uint32_t imm)
{
	imm ^= imm >> 16;
	imm *= 0x7feb352du;
	imm ^= imm >> 15;
	return imm;
}

static struct imm_slot *find(struct imm_table *t, uint32_t imm, bool add)
{
	if (!t->slots)
		return NULL;
	for (uint32_t i = imm_hash(imm) & t->mask;; i = (i + 1) & t->mask) {
		struct imm_slot *s = &t->slots[i];

		if (s->used && s->imm == imm)
			return s;
		if (!s->used) {
			if (!add)
				return NULL;
			s->used = true;
			s->imm = imm;
			t->used++;
			return s;
		}
	}
}

/* Remove s (its count taken, no expectation left): backward-shift
 * deletion, so the probe runs stay without holes and no tombstones. */
static void unlink_slot(struct imm_table *t, struct imm_slot *s)
{
	uint32_t i = (uint32_t)(s - t->slots), j = i;

	for (;;) {
		uint32_t h;

		j = (j + 1) & t->mask;
		if (!t->slots[j].used)
			break;
		h = imm_hash(t->slots[j].imm) & t->mask;
		/* j's entry may move to the hole at i when i lies on its probe run h..j */
		if (((j - h) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	memset(&t->slots[i], 0, sizeof(t->slots[i]));
	t->used--;
}

/* Keep the table at most half full; entries go when their counts are
 * taken, so it holds what is pending, within the bounds above. */
static int grow(struct imm_table *t)
{
	struct imm_table n = { 0 };
	uint32_t size = t->slots ? (t->mask + 1) * 2 : IMM_TABLE_MIN;

	if (t->slots && t->used + 1 <= (t->mask + 1) / 2)
		return 0;
	if (size > IMM_TABLE_MAX)
		return -ENOMEM;
	n.slots = calloc(size, sizeof(*n.slots));
	if (!n.slots)
		return -ENOMEM;
	n.mask = size - 1;
	for (uint32_t i = 0; t->slots && i <= t->mask; i++)
		if (t->slots[i].used)
			*find(&n, t->slots[i].imm, true) = t->slots[i];
	free(t->slots);
	n.unexpected = t->unexpected;
	*t = n;
	return 0;
}

/* Fire the expectations whose counts have arrived, oldest first. */
static void settle(struct imm_slot *s)
{
	while (s->head && s->count >= s->head->count) {
		struct imm_exp *e = s->head;

		s->count -= e->count;
		s->head = e->next;
		if (!s->head)
			s->tail = NULL;
		if (e->flag)
			__atomic_store_n(e->flag, 1, __ATOMIC_RELEASE);
		if (e->cb)
			e->cb(e->arg, s->imm);
		free(e);
	}
}

/* After settle: an entry with nothing pending goes; one with counts and
 * no expectation is unexpected. was_unexp: it was before the change. */
static void account(struct imm_table *t, struct imm_slot *s, bool was_unexp)
{
	bool unexp = !s->head && s->count;

	t->unexpected += (uint32_t)unexp - (uint32_t)was_unexp;
	if (!s->head && !s->count)
		unlink_slot(t, s);
}

void imm_count(struct uroce_context *ctx, uint32_t imm)
{
	struct imm_table *t = ctx->imm;
	struct imm_slot *s = find(t, imm, false);
	bool was_unexp;

	if (!s && (t->unexpected >= IMM_UNEXPECTED_MAX || t->used >= IMM_ENTRIES_MAX || grow(t) ||
	           !(s = find(t, imm, true)))) {
		/* the message was placed and acknowledged; only its count is
		 * lost, and said so (docs/api.md) */
		ctx->imm_lost++;
		ctx_count_drop(ctx, UROCE_DROP_TABLE_FULL);
		return;
	}
	was_unexp = !s->head && s->count;
	s->count++;
	settle(s);
	account(t, s, was_unexp);
}

int imm_table_init(struct uroce_context *ctx)
{
	ctx->imm = calloc(1, sizeof(*ctx->imm));
	return ctx->imm ? 0 : -ENOMEM;
}

void imm_table_fini(struct uroce_context *ctx)
{
	struct imm_table *t = ctx->imm;

	if (!t)
		return;
	for (uint32_t i = 0; t->slots && i <= t->mask; i++)
		while (t->slots[i].head) {
			struct imm_exp *e = t->slots[i].head;

			t->slots[i].head = e->next;
			free(e);
		}
	free(t->slots);
	free(t);
	ctx->imm = NULL;
}

struct imm_args {
	struct uroce_context *ctx;
	uint32_t imm, count;
	uroce_imm_cb cb;
	void *arg;
	int *flag;
	uint64_t out;
};

static int expect_call(void *arg)
{
	struct imm_args *a = arg;

	return uroce_expect_imm_count(a->ctx, a->imm, a->count, a->cb, a->arg, a->flag);
}

int uroce_expect_imm_count(struct uroce_context *ctx, uint32_t imm_data, uint32_t count, uroce_imm_cb cb, void *arg,
                           int *flag)
{
	struct imm_exp *e;
	struct imm_slot *s;
	bool was_unexp;

	if (!ctx || !count)
		return uroce_fail(-EINVAL, "uroce_expect_imm_count: a context and a count of at least 1 are required");
	if (ctx_remote(ctx)) {
		struct imm_args a = { ctx, imm_data, count, cb, arg, flag, 0 };

		return ctx_call(ctx, expect_call, &a);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return uroce_fail(-ENOMEM, "uroce_expect_imm_count: out of memory");
	s = find(ctx->imm, imm_data, false);
	if (!s && (ctx->imm->used >= IMM_ENTRIES_MAX || grow(ctx->imm) || !(s = find(ctx->imm, imm_data, true)))) {
		free(e);
		return uroce_fail(-ENOMEM, "uroce_expect_imm_count: the context tracks %u immediates at most "
		                           "(%u of them with counts nobody expects)", IMM_ENTRIES_MAX,
		                  IMM_UNEXPECTED_MAX);
	}
	was_unexp = !s->head && s->count;
	e->count = count;
	e->cb = cb;
	e->arg = arg;
	e->flag = flag;
	FIFO_APPEND(s->head, s->tail, e, next);
	settle(s); /* arrivals may already be waiting */
	account(ctx->imm, s, was_unexp);
	return 0;
}

static int count_call(void *arg)
{
	struct imm_args *a = arg;

	a->out = uroce_imm_count(a->ctx, a->imm);
	return 0;
}

uint64_t uroce_imm_count(struct uroce_context *ctx, uint32_t imm_data)
{
	struct imm_slot *s;

	if (!ctx)
		return 0;
	if (ctx_remote(ctx)) {
		struct imm_args a = { .ctx = ctx, .imm = imm_data };

		ctx_call(ctx, count_call, &a);
		return a.out;
	}
	s = find(ctx->imm, imm_data, false);
	return s ? s->count : 0;
}
