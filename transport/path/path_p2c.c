/* SPDX-License-Identifier: MIT */
/* Power of two choices (UCCL section 4.1): two random usable paths, the
 * one with the lower smoothed RTT; fewer bytes in flight breaks a tie. A
 * path with no RTT yet wins, so every path gets measured; so does, in one
 * choice of 32, an idle one whose RTT is stale, one packet at a time:
 * otherwise the path with the highest RTT is never picked again and its
 * RTT never corrected. */
#include "transport/path/path.h"

#define P2C_STALE_RTTS 4u             /* an idle path's RTT is stale after this many of them, */
#define P2C_STALE_MAX_NS 10000000ull  /* or after 10 ms */
#define P2C_STALE_EVERY_LOG2 5u       /* looked at in one choice of 32 (random): the rest cost nothing */

/* An idle path whose RTT is older than 4 of them (or 10 ms): the choice
 * takes it, to measure it again. */
__attribute__((cold, noinline)) static bool stale(const struct qp_path *p, uint64_t now)
{
	uint64_t idle;

	if (p->inflight) /* busy: its acknowledgments keep the RTT fresh */
		return false;
	idle = now - p->last_ack_ns;
	return idle > P2C_STALE_MAX_NS || idle > P2C_STALE_RTTS * p->srtt_ns;
}

static bool better(const struct qp_path *a, const struct qp_path *b)
{
	if (a->srtt_ns != b->srtt_ns)
		return a->srtt_ns < b->srtt_ns;
	return a->inflight < b->inflight;
}

static unsigned p2c_select(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid)
{
	uint64_t r = path_rand(ps);
	unsigned a, b, w;

	if (ps->n == 1)
		return path_usable(ps, 0, now, bytes) ? 0 : PATH_NONE;
	a = path_scan(ps, (unsigned)(r % ps->n), now, bytes, avoid);
	if (a == PATH_NONE)
		return PATH_NONE;
	/* the second choice: another usable path from another random start */
	b = path_scan(ps, (unsigned)((r >> 32) % ps->n), now, bytes, avoid);
	if (b == a || b == PATH_NONE)
		b = path_scan(ps, (a + 1) % ps->n, now, bytes, avoid);
	if (b == PATH_NONE || b == a)
		return a;
	w = better(&ps->p[b], &ps->p[a]) ? b : a;
	/* the other one only when its RTT is stale (looked at now and then) */
	if (__builtin_expect(((r >> 16) & ((1u << P2C_STALE_EVERY_LOG2) - 1)) == 0, 0) && stale(&ps->p[a ^ b ^ w], now))
		return a ^ b ^ w;
	return w;
}

const struct path_ops path_p2c_ops = {
	.name = "p2c",
	.select = p2c_select,
};
