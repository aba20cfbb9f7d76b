/* Power of two choices (UCCL section 4.1): two random usable paths, the
 * one with the lower smoothed RTT; fewer bytes in flight breaks a tie. A
 * path with no RTT yet wins, so every path gets measured; so does an idle
 * one whose RTT is stale, one packet at a time: otherwise the path with
 * the highest RTT is never picked again and its RTT never corrected. */
#include "transport/path/path.h"

#define P2C_STALE_RTTS 4u             /* an idle path's RTT is stale after this many of them, */
#define P2C_STALE_MAX_NS 10000000ull  /* or after 10 ms */

/* The RTT the choice compares: 0 (measure it) for an unmeasured path and
 * for an idle path not heard from in a while. */
static uint64_t rtt_of(const struct qp_path *p, uint64_t now)
{
	uint64_t age = P2C_STALE_RTTS * p->srtt_ns;

	if (age > P2C_STALE_MAX_NS)
		age = P2C_STALE_MAX_NS;
	return !p->inflight && now - p->last_ack_ns > age ? 0 : p->srtt_ns;
}

static bool better(const struct qp_path *a, const struct qp_path *b, uint64_t now)
{
	uint64_t ra = rtt_of(a, now), rb = rtt_of(b, now);

	if (ra != rb)
		return ra < rb;
	return a->inflight < b->inflight;
}

static unsigned p2c_select(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid)
{
	uint64_t r = path_rand(ps);
	unsigned a, b;

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
	return better(&ps->p[b], &ps->p[a], now) ? b : a;
}

const struct path_ops path_p2c_ops = {
	.name = "p2c",
	.select = p2c_select,
};
