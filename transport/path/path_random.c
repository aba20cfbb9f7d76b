/* SPDX-License-Identifier: MIT */
/* A uniformly random usable path: a random start, then the first usable
 * one from there (uniform while every path is usable). */
#include "transport/path/path.h"

static unsigned random_select(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid)
{
	return path_scan(ps, (unsigned)(path_rand(ps) % ps->n), now, bytes, avoid);
}

const struct path_ops path_random_ops = {
	.name = "random",
	.select = random_select,
};
