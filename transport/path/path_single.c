/* SPDX-License-Identifier: MIT */
/* Single path: every packet on the first usable path (path 0 while it
 * works), as a NIC's RC QP with one UDP source port. */
#include "transport/path/path.h"

static unsigned single_select(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid)
{
	(void)avoid; /* one path: a retransmission takes it too */
	return path_scan(ps, 0, now, bytes, PATH_NONE);
}

const struct path_ops path_single_ops = {
	.name = "single",
	.select = single_select,
};
