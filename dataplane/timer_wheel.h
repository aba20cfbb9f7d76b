/* SPDX-License-Identifier: MIT */
/* Hierarchical hashed timing wheel: O(1) arm and cancel of intrusive
 * timers, expiry driven by a tick count derived from a nanosecond clock.
 *
 * Four levels of 256 slots cover 2^32 ticks ahead (71 minutes at a 1 us
 * tick); a timer further out parks in the top level and is re-hashed when
 * that slot cascades. A timer whose deadline is D ns expires on tick
 * ceil(D / tick_ns), so it fires in the first timer_wheel_advance() whose
 * now is >= D, and never more than one tick after D when advance is
 * called at least once a tick. A wheel belongs to one thread.
 */
#ifndef UROCE_DATAPLANE_TIMER_WHEEL_H
#define UROCE_DATAPLANE_TIMER_WHEEL_H

#include <stdbool.h>
#include <stdint.h>

#define TIMER_WHEEL_BITS 8u
#define TIMER_WHEEL_SLOTS (1u << TIMER_WHEEL_BITS)
#define TIMER_WHEEL_LEVELS 4u

struct wheel_timer;
struct timer_wheel;

/* Called once when the timer expires; the timer is no longer pending and
 * may be re-armed (or freed) from inside the callback. */
typedef void (*wheel_timer_fn)(struct wheel_timer *t, void *arg);

/* Embed one in the object it times; no allocation happens in the wheel. */
struct wheel_timer {
	struct wheel_timer *next;
	struct wheel_timer **pprev; /* NULL when not pending */
	uint64_t expires;           /* tick */
	wheel_timer_fn fn;
	void *arg;
	uint16_t slot;              /* level * TIMER_WHEEL_SLOTS + index, or TIMER_WHEEL_OVERDUE */
};

/* slot of a timer armed for a tick already processed */
#define TIMER_WHEEL_OVERDUE (TIMER_WHEEL_LEVELS * TIMER_WHEEL_SLOTS)

struct timer_wheel {
	uint64_t tick_ns;
	uint64_t cur;     /* next tick to process: all ticks < cur are done */
	uint64_t pending; /* armed timers */
	/* one bit per non-empty slot, so empty stretches are skipped a word
	 * at a time instead of a slot at a time */
	uint64_t nonempty[TIMER_WHEEL_LEVELS][TIMER_WHEEL_SLOTS / 64];
	struct wheel_timer *slots[TIMER_WHEEL_LEVELS][TIMER_WHEEL_SLOTS];
	struct wheel_timer *overdue; /* armed for a tick already processed */
};

/* Prepare a timer (not pending). */
void wheel_timer_init(struct wheel_timer *t, wheel_timer_fn fn, void *arg);

static inline bool wheel_timer_pending(const struct wheel_timer *t)
{
	return t->pprev != 0;
}

/* Start the wheel at now_ns with ticks of tick_ns (> 0). Returns 0 or
 * -EINVAL for a zero tick. */
int timer_wheel_init(struct timer_wheel *w, uint64_t tick_ns, uint64_t now_ns);

/* Arm t to expire at deadline_ns; a pending timer is moved. A deadline in
 * a tick already processed fires on the next advance (from inside a
 * callback: the next advance call, not this one). */
void timer_wheel_add(struct timer_wheel *w, struct wheel_timer *t, uint64_t deadline_ns);

/* Disarm t; harmless on a timer that is not pending. Returns whether it
 * was pending. */
bool timer_wheel_cancel(struct timer_wheel *w, struct wheel_timer *t);

/* Run overdue timers, then process every tick up to and including
 * now_ns / tick_ns, running the callbacks of timers that expire, in order
 * of expiry tick. Returns the number of callbacks run. Time going
 * backwards processes no ticks. */
unsigned timer_wheel_advance(struct timer_wheel *w, uint64_t now_ns);

static inline uint64_t timer_wheel_pending(const struct timer_wheel *w)
{
	return w->pending;
}

/* Cancel every pending timer without running it (teardown). */
void timer_wheel_clear(struct timer_wheel *w);

#endif /* UROCE_DATAPLANE_TIMER_WHEEL_H */
