/* Power of two choices (UCCL section 4.1): two random usable paths, the
 * one with the lower smoothed RTT; fewer bytes in flight breaks a tie. A
 * path with no RTT yet wins, so every path gets measured. */
#include "transport/path/path.h"

static bool better(const struct qp_path *a, const struct qp_path *b)
{
	if (a->srtt_ns != b->srtt_ns)
		return a->srtt_ns < b->srtt_ns;
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
	return better(&ps->p[b], &ps->p[a]) ? b : a;
}

const struct path_ops path_p2c_ops = {
	.name = "p2c",
	.select = p2c_select,
};
