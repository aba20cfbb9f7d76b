/* SPDX-License-Identifier: MIT */
/* Setup and teardown of SPSC rings; the enqueue/dequeue fast path is
 * inline in spsc_ring.h. */
#include <errno.h>
#include <stdlib.h>

#include "dataplane/spsc_ring.h"

size_t spsc_ring_memsize(uint32_t count, uint32_t esize)
{
	size_t sz;

	if (!count || count > SPSC_RING_MAX_COUNT || (count & (count - 1)) || !esize)
		return 0;
	if ((size_t)count > (SIZE_MAX - sizeof(struct spsc_ring)) / esize)
		return 0;
	sz = sizeof(struct spsc_ring) + (size_t)count * esize;
	/* aligned_alloc wants a multiple of the alignment */
	return (sz + SPSC_CACHE_LINE - 1) & ~(size_t)(SPSC_CACHE_LINE - 1);
}

int spsc_ring_init(struct spsc_ring *r, uint32_t count, uint32_t esize)
{
	if (!spsc_ring_memsize(count, esize))
		return -EINVAL;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	r->prod_tail_cache = 0;
	r->cons_head_cache = 0;
	r->size = count;
	r->mask = count - 1;
	r->esize = esize;
	r->own_mem = 0;
	return 0;
}

struct spsc_ring *spsc_ring_create(uint32_t count, uint32_t esize)
{
	size_t sz = spsc_ring_memsize(count, esize);
	struct spsc_ring *r;

	if (!sz) {
		errno = EINVAL;
		return NULL;
	}
	r = aligned_alloc(SPSC_CACHE_LINE, sz);
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	spsc_ring_init(r, count, esize);
	r->own_mem = 1;
	return r;
}

void spsc_ring_destroy(struct spsc_ring *r)
{
	if (r && r->own_mem)
		free(r);
}
