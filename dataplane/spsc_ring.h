/* SPDX-License-Identifier: MIT */
/* Lock-free single-producer/single-consumer ring of fixed-size elements:
 * how app threads hand commands to a pinned engine core and get replies.
 *
 * Exactly one thread enqueues and exactly one thread dequeues (they may be
 * the same). Indices run free (uint32_t, wrapping); the slot is index & mask.
 * The producer publishes with a release store of head after copying the
 * elements in, the consumer publishes with a release store of tail after
 * copying them out; each side reads the other's index with acquire, so the
 * element bytes are visible before the index that covers them. Each side
 * keeps a private copy of the other's index and re-reads the shared one only
 * when the copy says the ring is full (or empty), so in steady state the
 * two cache lines are not bounced on every call.
 */
#ifndef UROCE_DATAPLANE_SPSC_RING_H
#define UROCE_DATAPLANE_SPSC_RING_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SPSC_CACHE_LINE 64

/* 2^31 elements at most, so that head - tail never needs a 33rd bit. */
#define SPSC_RING_MAX_COUNT (1u << 31)

struct spsc_ring {
	/* written by the producer only */
	alignas(SPSC_CACHE_LINE) _Atomic uint32_t head;
	uint32_t prod_tail_cache; /* producer's last view of tail */

	/* written by the consumer only */
	alignas(SPSC_CACHE_LINE) _Atomic uint32_t tail;
	uint32_t cons_head_cache; /* consumer's last view of head */

	/* read-only after init */
	alignas(SPSC_CACHE_LINE) uint32_t size; /* elements, a power of two */
	uint32_t mask;
	uint32_t esize; /* bytes per element */
	uint32_t own_mem; /* freed by spsc_ring_destroy */
	alignas(SPSC_CACHE_LINE) unsigned char slots[];
};

/* Bytes a ring of count elements of esize bytes needs, or 0 if count is
 * not a power of two in [1, SPSC_RING_MAX_COUNT] or esize is 0. */
size_t spsc_ring_memsize(uint32_t count, uint32_t esize);

/* Initialise a ring in caller memory of spsc_ring_memsize() bytes, aligned
 * to SPSC_CACHE_LINE. Returns 0 or -EINVAL. */
int spsc_ring_init(struct spsc_ring *r, uint32_t count, uint32_t esize);

/* Allocate and initialise a ring. Returns NULL with errno set (EINVAL for a
 * count that is not a power of two, ENOMEM). */
struct spsc_ring *spsc_ring_create(uint32_t count, uint32_t esize);
void spsc_ring_destroy(struct spsc_ring *r);

/* Elements in the ring: exact when both sides are idle, a snapshot
 * otherwise. tail is read first so that head (which only grows past it)
 * cannot be older than tail and the difference cannot wrap. */
static inline uint32_t spsc_ring_count(const struct spsc_ring *r)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	return h - t;
}

static inline uint32_t spsc_ring_capacity(const struct spsc_ring *r)
{
	return r->size;
}

/* Copy n elements between the ring starting at free-running index idx and
 * a flat buffer, in at most two pieces (before and after the wrap). */
static inline void spsc_ring__copy_in(struct spsc_ring *r, uint32_t idx, const void *src, uint32_t n)
{
	uint32_t slot = idx & r->mask;
	uint32_t first = r->size - slot;

	if (first > n)
		first = n;
	memcpy(r->slots + (size_t)slot * r->esize, src, (size_t)first * r->esize);
	if (n > first)
		memcpy(r->slots, (const unsigned char *)src + (size_t)first * r->esize,
		       (size_t)(n - first) * r->esize);
}

static inline void spsc_ring__copy_out(const struct spsc_ring *r, uint32_t idx, void *dst, uint32_t n)
{
	uint32_t slot = idx & r->mask;
	uint32_t first = r->size - slot;

	if (first > n)
		first = n;
	memcpy(dst, r->slots + (size_t)slot * r->esize, (size_t)first * r->esize);
	if (n > first)
		memcpy((unsigned char *)dst + (size_t)first * r->esize, r->slots,
		       (size_t)(n - first) * r->esize);
}

/* How many of n elements one side may move: base + the other side's
 * index (cached, loaded again only when the cache says too few) less its
 * own index, i.e. free slots for the producer (base = size), filled ones for
 * the consumer (base = 0). */
static inline uint32_t spsc_ring__movable(uint32_t base, uint32_t own, uint32_t *cache,
                                          const _Atomic uint32_t *other, uint32_t n)
{
	uint32_t have = base + *cache - own;

	if (have < n) {
		*cache = atomic_load_explicit(other, memory_order_acquire);
		have = base + *cache - own;
		if (n > have)
			n = have;
	}
	return n;
}

/* Producer: enqueue up to n elements from objs (an array of n * esize
 * bytes). Returns how many were enqueued, from the front of objs; fewer
 * than n only when the ring is full. */
static inline uint32_t spsc_ring_enqueue_burst(struct spsc_ring *r, const void *objs, uint32_t n)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	n = spsc_ring__movable(r->size, head, &r->prod_tail_cache, &r->tail, n);
	if (!n)
		return 0;
	spsc_ring__copy_in(r, head, objs, n);
	atomic_store_explicit(&r->head, head + n, memory_order_release);
	return n;
}

/* Consumer: dequeue up to n elements into objs. Returns how many. */
static inline uint32_t spsc_ring_dequeue_burst(struct spsc_ring *r, void *objs, uint32_t n)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	n = spsc_ring__movable(0, tail, &r->cons_head_cache, &r->head, n);
	if (!n)
		return 0;
	spsc_ring__copy_out(r, tail, objs, n);
	atomic_store_explicit(&r->tail, tail + n, memory_order_release);
	return n;
}

/* Single-element conveniences: true when the element moved. */
static inline int spsc_ring_enqueue(struct spsc_ring *r, const void *obj)
{
	return spsc_ring_enqueue_burst(r, obj, 1) == 1;
}

static inline int spsc_ring_dequeue(struct spsc_ring *r, void *obj)
{
	return spsc_ring_dequeue_burst(r, obj, 1) == 1;
}

#endif /* UROCE_DATAPLANE_SPSC_RING_H */
