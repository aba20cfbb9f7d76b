/* SPDX-License-Identifier: MIT */
/* Hierarchical hashed timing wheel (the classic cascading design): arming
 * hashes a timer into the level its distance falls in; when the level
 * below wraps, one slot of the level above is re-hashed downwards. */
#include <errno.h>
#include <string.h>

#include "dataplane/timer_wheel.h"

#define SLOT_MASK (TIMER_WHEEL_SLOTS - 1u)
#define WORDS (TIMER_WHEEL_SLOTS / 64u)
/* Distances this far or further are parked in the top level. */
#define MAX_DELTA ((uint64_t)1 << (TIMER_WHEEL_BITS * TIMER_WHEEL_LEVELS))

void wheel_timer_init(struct wheel_timer *t, wheel_timer_fn fn, void *arg)
{
	t->next = NULL;
	t->pprev = NULL;
	t->expires = 0;
	t->fn = fn;
	t->arg = arg;
	t->slot = 0;
}

int timer_wheel_init(struct timer_wheel *w, uint64_t tick_ns, uint64_t now_ns)
{
	if (!tick_ns)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->tick_ns = tick_ns;
	w->cur = now_ns / tick_ns;
	return 0;
}

static inline void set_bit(uint64_t *bits, unsigned i)
{
	bits[i / 64] |= (uint64_t)1 << (i % 64);
}

static inline void clear_bit(uint64_t *bits, unsigned i)
{
	bits[i / 64] &= ~((uint64_t)1 << (i % 64));
}

/* First set bit at or after from, or TIMER_WHEEL_SLOTS. */
static inline unsigned find_next_bit(const uint64_t *bits, unsigned from)
{
	unsigned w = from / 64;
	uint64_t word;

	if (from >= TIMER_WHEEL_SLOTS)
		return TIMER_WHEEL_SLOTS;
	word = bits[w] & (~(uint64_t)0 << (from % 64));
	for (;;) {
		if (word)
			return w * 64 + (unsigned)__builtin_ctzll(word);
		if (++w == WORDS)
			return TIMER_WHEEL_SLOTS;
		word = bits[w];
	}
}

static inline bool level_empty(const struct timer_wheel *w, unsigned level)
{
	uint64_t any = 0;

	for (unsigned i = 0; i < WORDS; i++)
		any |= w->nonempty[level][i];
	return !any;
}

/* Hash t by its distance from cur. A timer for a tick already processed
 * cannot go into a slot (that slot now stands for a tick a full turn
 * ahead), so it waits on the overdue list for the next advance. */
static void enqueue(struct timer_wheel *w, struct wheel_timer *t)
{
	uint64_t e = t->expires;
	uint64_t delta = e - w->cur;
	unsigned level, idx;
	struct wheel_timer **head;

	if (e < w->cur) {
		head = &w->overdue;
		t->slot = TIMER_WHEEL_OVERDUE;
		goto link;
	}
	if (delta >= MAX_DELTA) {
		e = w->cur + MAX_DELTA - 1;
		delta = MAX_DELTA - 1;
	}
	level = 0;
	while (delta >= ((uint64_t)1 << (TIMER_WHEEL_BITS * (level + 1))))
		level++;
	idx = (unsigned)(e >> (TIMER_WHEEL_BITS * level)) & SLOT_MASK;

	head = &w->slots[level][idx];
	t->slot = (uint16_t)(level * TIMER_WHEEL_SLOTS + idx);
	set_bit(w->nonempty[level], idx);
link:
	t->next = *head;
	if (t->next)
		t->next->pprev = &t->next;
	*head = t;
	t->pprev = head;
}

static void unlink_timer(struct timer_wheel *w, struct wheel_timer *t)
{
	unsigned level = t->slot / TIMER_WHEEL_SLOTS, idx = t->slot & SLOT_MASK;

	*t->pprev = t->next;
	if (t->next)
		t->next->pprev = t->pprev;
	t->next = NULL;
	t->pprev = NULL;
	if (t->slot != TIMER_WHEEL_OVERDUE && !w->slots[level][idx])
		clear_bit(w->nonempty[level], idx);
}

void timer_wheel_add(struct timer_wheel *w, struct wheel_timer *t, uint64_t deadline_ns)
{
	uint64_t ticks = deadline_ns / w->tick_ns;

	if (t->pprev)
		unlink_timer(w, t);
	else
		w->pending++;
	/* round up: a timer must never fire before its deadline */
	t->expires = ticks + (deadline_ns % w->tick_ns != 0);
	enqueue(w, t);
}

bool timer_wheel_cancel(struct timer_wheel *w, struct wheel_timer *t)
{
	if (!t->pprev)
		return false;
	unlink_timer(w, t);
	w->pending--;
	return true;
}

/* Re-hash one slot of an upper level into the levels below it. */
static void cascade_slot(struct timer_wheel *w, unsigned level, unsigned idx)
{
	struct wheel_timer *list = w->slots[level][idx];

	w->slots[level][idx] = NULL;
	clear_bit(w->nonempty[level], idx);
	while (list) {
		struct wheel_timer *t = list;

		list = t->next;
		enqueue(w, t);
	}
}

/* cur sits on a level-0 boundary: cascade level 1, and each level above
 * whose boundary this also is. */
static void cascade(struct timer_wheel *w)
{
	for (unsigned level = 1; level < TIMER_WHEEL_LEVELS; level++) {
		unsigned idx = (unsigned)(w->cur >> (TIMER_WHEEL_BITS * level)) & SLOT_MASK;

		cascade_slot(w, level, idx);
		if (idx)
			break;
	}
}

/* Run a list of due timers (a level-0 slot or the overdue list). The list
 * is detached first, so a callback that re-arms its timer for a tick
 * already processed lands on the overdue list for the next advance rather
 * than looping here; a callback cancelling another timer of the same list
 * unlinks it from the detached list through its pprev. */
static unsigned run_list(struct timer_wheel *w, struct wheel_timer **head)
{
	struct wheel_timer *list = *head;
	unsigned n = 0;

	*head = NULL;
	if (list)
		list->pprev = &list;
	while (list) {
		struct wheel_timer *t = list;

		list = t->next;
		if (list)
			list->pprev = &list;
		t->next = NULL;
		t->pprev = NULL;
		w->pending--;
		t->fn(t, t->arg);
		n++;
	}
	return n;
}

unsigned timer_wheel_advance(struct timer_wheel *w, uint64_t now_ns)
{
	uint64_t now_tick = now_ns / w->tick_ns;
	unsigned fired = 0;

	if (now_tick == UINT64_MAX)
		now_tick--;
	if (w->overdue)
		fired += run_list(w, &w->overdue);
	while (w->cur <= now_tick) {
		unsigned idx, next, empty_levels;
		uint64_t base, span, to;

		if (!w->pending) {
			/* nothing armed: any position is consistent */
			w->cur = now_tick + 1;
			break;
		}
		idx = (unsigned)w->cur & SLOT_MASK;
		if (!idx)
			cascade(w);
		base = w->cur - idx;
		next = find_next_bit(w->nonempty[0], idx);
		if (next < TIMER_WHEEL_SLOTS && base + next <= now_tick) {
			w->cur = base + next + 1;
			clear_bit(w->nonempty[0], next);
			fired += run_list(w, &w->slots[0][next]);
			continue;
		}
		/* Nothing due in the rest of this block. If the lowest levels
		 * are empty altogether, nothing can happen before the boundary
		 * where the first non-empty level cascades, so jump there. */
		empty_levels = 0;
		while (empty_levels < TIMER_WHEEL_LEVELS - 1 && level_empty(w, empty_levels))
			empty_levels++;
		span = (uint64_t)1 << (TIMER_WHEEL_BITS * (empty_levels ? empty_levels : 1));
		to = (w->cur | (span - 1)) + 1;
		w->cur = to <= now_tick + 1 ? to : now_tick + 1;
	}
	return fired;
}

void timer_wheel_clear(struct timer_wheel *w)
{
	for (unsigned level = 0; level < TIMER_WHEEL_LEVELS; level++) {
		for (unsigned idx = 0; idx < TIMER_WHEEL_SLOTS; idx++) {
			struct wheel_timer *t = w->slots[level][idx];

			while (t) {
				struct wheel_timer *n = t->next;

				t->next = NULL;
				t->pprev = NULL;
				t = n;
			}
			w->slots[level][idx] = NULL;
		}
		memset(w->nonempty[level], 0, sizeof(w->nonempty[level]));
	}
	while (w->overdue) {
		struct wheel_timer *t = w->overdue;

		w->overdue = t->next;
		t->next = NULL;
		t->pprev = NULL;
	}
	w->pending = 0;
}
