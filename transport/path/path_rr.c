/* SPDX-License-Identifier: MIT */
/* Round robin over the usable paths. */
#include "transport/path/path.h"

static unsigned rr_select(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid)
{
	unsigned i = path_scan(ps, ps->rr, now, bytes, avoid);

	if (i != PATH_NONE)
		ps->rr = (uint16_t)((i + 1) % ps->n);
	return i;
}

const struct path_ops path_rr_ops = {
	.name = "rr",
	.select = rr_select,
};
