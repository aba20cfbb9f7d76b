/* SPDX-License-Identifier: MIT */
/* Timing wheel: many timers at random deadlines across every level (and
 * beyond the wheel's reach) fire exactly once, in the first advance at or
 * after their tick, so never early and never more than one tick late;
 * cancel, re-arm, re-arm from the callback and cancel from a callback. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "dataplane/timer_wheel.h"
#include "dp_test.h"

struct rec {
	struct wheel_timer t;
	uint64_t deadline;
	unsigned fired;
	uint64_t fired_at;  /* now of the advance that ran it */
	uint64_t prev_now;  /* now of the advance before that */
	bool cancelled;
};

/* g_prev_now is NO_ADVANCE until the first advance of a test */
#define NO_ADVANCE UINT64_MAX
static uint64_t g_now, g_prev_now;
static bool g_advanced;
static uint64_t g_last_tick_in_call; /* expiry order within one advance */
static uint64_t g_tick;
static unsigned g_order_errors;

static void on_fire(struct wheel_timer *t, void *arg)
{
	struct rec *r = arg;
	uint64_t tick = r->deadline / g_tick + (r->deadline % g_tick != 0);

	r->fired++;
	r->fired_at = g_now;
	r->prev_now = g_prev_now;
	if (tick < g_last_tick_in_call)
		g_order_errors++;
	g_last_tick_in_call = tick;
	CHECK(t == &r->t, "callback got the wrong timer");
	CHECK(!wheel_timer_pending(t), "a firing timer must not be pending");
}

static unsigned advance_to(struct timer_wheel *w, uint64_t now)
{
	unsigned n;

	g_prev_now = g_advanced ? g_now : NO_ADVANCE;
	g_advanced = true;
	g_now = now;
	g_last_tick_in_call = 0;
	n = timer_wheel_advance(w, now);
	return n;
}

/* expected fire time: the start of the deadline's (rounded up) tick */
static uint64_t due_time(uint64_t deadline)
{
	return (deadline / g_tick + (deadline % g_tick != 0)) * g_tick;
}

static void check_fired(struct rec *r, const char *what)
{
	uint64_t due = due_time(r->deadline);

	CHECK(r->fired == 1, "%s: timer (deadline %llu) fired %u times", what, (unsigned long long)r->deadline,
	      r->fired);
	CHECK(r->fired_at >= r->deadline, "%s: fired at %llu before its deadline %llu", what,
	      (unsigned long long)r->fired_at, (unsigned long long)r->deadline);
	CHECK(due - r->deadline < g_tick, "%s: due tick more than one tick after the deadline", what);
	CHECK(r->prev_now == NO_ADVANCE || r->prev_now < due, "%s: deadline %llu: an earlier advance (now %llu) was already due at %llu but did not fire it",
	      what, (unsigned long long)r->deadline, (unsigned long long)r->prev_now, (unsigned long long)due);
}

/*
 * n timers with deadlines drawn from [start, start + span), advanced in
 * random steps (all at most a tick, or with jumps: mostly under a tick,
 * sometimes long): each fires once, in the first advance whose now
 * reaches its tick.
 */
static void test_random(uint64_t tick, uint64_t start, uint64_t span, unsigned n, uint64_t seed, bool jumps)
{
	struct timer_wheel w;
	struct rec *recs = calloc(n, sizeof(*recs));
	struct test_rng rng = { seed };
	unsigned fired = 0, steps = 0;
	uint64_t last = 0;

	REQUIRE(recs, "out of memory");
	g_tick = tick;
	g_now = g_prev_now = start;
	g_advanced = false;
	g_order_errors = 0;
	REQUIRE(timer_wheel_init(&w, tick, start) == 0, "init");
	for (unsigned i = 0; i < n; i++) {
		/* a quarter of them in the first 300 ticks (level 0), the rest
		 * spread over the span, crossing every level */
		uint64_t d = (i % 4 == 0) ? test_rng_below(&rng, 300 * tick) : test_rng_below(&rng, span);

		recs[i].deadline = start + d;
		if (recs[i].deadline > last)
			last = recs[i].deadline;
		wheel_timer_init(&recs[i].t, on_fire, &recs[i]);
		timer_wheel_add(&w, &recs[i].t, recs[i].deadline);
		CHECK(wheel_timer_pending(&recs[i].t), "armed timer not pending");
	}
	CHECK(timer_wheel_pending(&w) == n, "pending %llu, armed %u", (unsigned long long)timer_wheel_pending(&w), n);

	while (g_now <= last + tick && steps < 4000000) {
		uint64_t r = test_rng_below(&rng, 100), step;

		if (r < 70 || !jumps)
			step = 1 + test_rng_below(&rng, tick); /* within a tick */
		else if (r < 95)
			step = 1 + test_rng_below(&rng, 300 * tick);
		else
			step = 1 + test_rng_below(&rng, span / 64 + 1); /* a long jump */
		fired += advance_to(&w, g_now + step);
		steps++;
	}
	CHECK(fired == n, "tick %llu: %u of %u timers fired (steps %u)", (unsigned long long)tick, fired, n, steps);
	CHECK(timer_wheel_pending(&w) == 0, "timers still pending after the last deadline");
	CHECK(g_order_errors == 0, "%u timers fired out of expiry order within one advance", g_order_errors);
	for (unsigned i = 0; i < n; i++)
		check_fired(&recs[i], "random");
	free(recs);
}

/* Cancel half at random (some twice); only the rest fire. */
static void test_cancel(void)
{
	enum { N = 5000 };
	static struct rec recs[N];
	struct timer_wheel w;
	struct test_rng rng = { 99 };
	unsigned fired, cancelled = 0;

	g_tick = 100;
	g_now = g_prev_now = 0;
	g_advanced = false;
	timer_wheel_init(&w, g_tick, 0);
	memset(recs, 0, sizeof(recs));
	for (unsigned i = 0; i < N; i++) {
		recs[i].deadline = 1 + test_rng_below(&rng, 10000000);
		wheel_timer_init(&recs[i].t, on_fire, &recs[i]);
		timer_wheel_add(&w, &recs[i].t, recs[i].deadline);
	}
	for (unsigned i = 0; i < N; i++) {
		if (test_rng_below(&rng, 2)) {
			CHECK(timer_wheel_cancel(&w, &recs[i].t), "cancel of a pending timer returns true");
			CHECK(!timer_wheel_cancel(&w, &recs[i].t), "second cancel returns false");
			CHECK(!wheel_timer_pending(&recs[i].t), "cancelled timer still pending");
			recs[i].cancelled = true;
			cancelled++;
		}
	}
	CHECK(timer_wheel_pending(&w) == N - cancelled, "pending count after cancels");
	fired = 0;
	for (uint64_t t = 0; t <= 10000000 + g_tick; t += 997)
		fired += advance_to(&w, t);
	CHECK(fired == N - cancelled, "fired %u, expected %u", fired, N - cancelled);
	for (unsigned i = 0; i < N; i++) {
		if (recs[i].cancelled)
			CHECK(recs[i].fired == 0, "cancelled timer %u fired", i);
		else
			check_fired(&recs[i], "cancel");
	}
	CHECK(!timer_wheel_cancel(&w, &recs[0].t), "cancel after firing returns false");
}

/* A periodic timer that re-arms itself from its callback. */
struct periodic {
	struct wheel_timer t;
	struct timer_wheel *w;
	uint64_t next;
	uint64_t period;
	unsigned count, limit, late;
};

static void on_periodic(struct wheel_timer *t, void *arg)
{
	struct periodic *p = arg;

	if (g_now < p->next || g_now - p->next >= 2 * g_tick)
		p->late++;
	p->count++;
	if (p->count < p->limit) {
		p->next += p->period;
		timer_wheel_add(p->w, t, p->next);
	}
}

/* A callback that re-arms for a deadline already past: it must fire on
 * the next advance, not loop inside this one. */
struct past {
	struct wheel_timer t;
	struct timer_wheel *w;
	unsigned count;
};

static void on_past(struct wheel_timer *t, void *arg)
{
	struct past *p = arg;

	if (++p->count < 5)
		timer_wheel_add(p->w, t, 0);
}

/* A callback that cancels a sibling due on the same tick and arms a
 * fresh timer on it. */
struct killer {
	struct wheel_timer t;
	struct timer_wheel *w;
	struct rec *victim;
	struct rec *spawn;
};

static void on_killer(struct wheel_timer *t, void *arg)
{
	struct killer *k = arg;

	(void)t;
	timer_wheel_cancel(k->w, &k->victim->t);
	k->victim->cancelled = true;
	timer_wheel_add(k->w, &k->spawn->t, k->spawn->deadline);
}

static void test_rearm(void)
{
	struct timer_wheel w;
	struct periodic p = { .period = 12345, .limit = 200 };
	struct past past = { 0 };
	struct killer k;
	struct rec victim = { 0 }, spawn = { 0 }, moved = { 0 };
	unsigned n;

	g_tick = 1000;
	g_now = g_prev_now = 0;
	g_advanced = false;
	timer_wheel_init(&w, g_tick, 0);

	p.w = &w;
	p.next = 5000;
	wheel_timer_init(&p.t, on_periodic, &p);
	timer_wheel_add(&w, &p.t, p.next);
	for (uint64_t t = 0; t < 200 * 12345 + 10000; t += 500)
		advance_to(&w, t);
	CHECK(p.count == p.limit, "periodic timer fired %u of %u times", p.count, p.limit);
	CHECK(p.late == 0, "periodic timer fired early or late %u times", p.late);
	CHECK(!wheel_timer_pending(&p.t), "periodic timer pending after its last run");

	past.w = &w;
	wheel_timer_init(&past.t, on_past, &past);
	timer_wheel_add(&w, &past.t, 1); /* long past */
	n = advance_to(&w, g_now + 1);
	CHECK(n == 1 && past.count == 1, "re-armed-in-the-past timer ran %u times in one advance", past.count);
	for (int i = 0; i < 10; i++)
		advance_to(&w, g_now + 1);
	CHECK(past.count == 5, "re-armed-in-the-past timer ran %u times, expected 5", past.count);

	/* killer and victim share a tick; the killer was armed last, so it
	 * sits first in the slot and runs first */
	victim.deadline = spawn.deadline = g_now + 50 * g_tick;
	wheel_timer_init(&victim.t, on_fire, &victim);
	wheel_timer_init(&spawn.t, on_fire, &spawn);
	k.w = &w;
	k.victim = &victim;
	k.spawn = &spawn;
	wheel_timer_init(&k.t, on_killer, &k);
	timer_wheel_add(&w, &victim.t, victim.deadline);
	timer_wheel_add(&w, &k.t, victim.deadline);
	/* moving a pending timer: fires once, at the new deadline */
	moved.deadline = g_now + 10 * g_tick;
	wheel_timer_init(&moved.t, on_fire, &moved);
	timer_wheel_add(&w, &moved.t, g_now + 3 * g_tick);
	timer_wheel_add(&w, &moved.t, moved.deadline);
	CHECK(timer_wheel_pending(&w) == 3, "moving a pending timer must not count it twice");
	for (int i = 0; i < 200; i++)
		advance_to(&w, g_now + 500);
	CHECK(victim.fired == 0, "timer cancelled by a sibling's callback fired");
	CHECK(spawn.fired == 1, "timer armed by a callback for its own tick fired %u times", spawn.fired);
	CHECK(spawn.fired_at >= spawn.deadline, "spawned timer fired early");
	check_fired(&moved, "moved");
	CHECK(timer_wheel_pending(&w) == 0, "nothing should be pending");
}

static void test_edges(void)
{
	struct timer_wheel w;
	struct rec far = { 0 }, near = { 0 };

	CHECK(timer_wheel_init(&w, 0, 0) == -EINVAL, "tick 0 must be refused");

	/* a wheel started late in time, a timer ten hours out (beyond 2^32
	 * ticks of 1 us... no: 3.6e10 ticks, parked at the top level and
	 * re-hashed), reached by one jump */
	g_tick = 1000;
	g_now = g_prev_now = 5000000000123ull;
	g_advanced = false;
	timer_wheel_init(&w, g_tick, g_now);
	far.deadline = g_now + 36000ull * 1000000000ull;
	near.deadline = g_now + 1;
	wheel_timer_init(&far.t, on_fire, &far);
	wheel_timer_init(&near.t, on_fire, &near);
	timer_wheel_add(&w, &far.t, far.deadline);
	timer_wheel_add(&w, &near.t, near.deadline);
	CHECK(advance_to(&w, g_now - 1000000) == 0, "time going backwards fires nothing");
	g_now = 5000000000123ull;
	CHECK(advance_to(&w, g_now + 1000) == 1, "near timer fires on the next tick");
	CHECK(advance_to(&w, far.deadline - 1) == 0, "far timer must not fire 1 ns early");
	CHECK(advance_to(&w, far.deadline + 5 * g_tick) == 1, "far timer fires after one jump");
	check_fired(&near, "near");
	CHECK(far.fired == 1 && far.fired_at >= far.deadline, "far timer fired %u times", far.fired);

	/* clear disarms without running */
	timer_wheel_add(&w, &near.t, g_now + 10);
	timer_wheel_clear(&w);
	CHECK(!wheel_timer_pending(&near.t) && timer_wheel_pending(&w) == 0, "clear left a timer pending");
	CHECK(advance_to(&w, g_now + 1000000) == 0, "a cleared timer fired");
}

int main(void)
{
	/* every advance at most a tick apart: levels 0-1, then 0-2 */
	test_random(1000, 0, 1ull << 24, 20000, 4, false);
	test_random(1000, 5000, 1ull << 27, 5000, 5, false);
	/* 1 us ticks, deadlines up to ~67 s: levels 0-3 */
	test_random(1000, 0, 1ull << 36, 20000, 1, true);
	/* 1 ns ticks, deadlines up to 2^34 ticks: past the wheel's 2^32 reach */
	test_random(1, 123456789, 1ull << 34, 5000, 2, true);
	/* odd tick and start: rounding of deadlines that fall mid-tick */
	test_random(777, 999999937, 1ull << 28, 20000, 3, true);
	test_cancel();
	test_rearm();
	test_edges();
	return test_done("timer_wheel");
}
