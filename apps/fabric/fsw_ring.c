/* SPDX-License-Identifier: MIT */
/* The switch's record FIFO (see fsw_ring.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apps/fabric/fsw_ring.h"

static inline uint32_t rec_size(uint32_t len)
{
	return (FSW_REC_HDR + len + 7u) & ~7u;
}

uint32_t fsw_ring_size_for(uint32_t bytes, uint32_t min_frame, uint32_t max_frame)
{
	/* Each frame costs at most rec_size(len) <= len * (1 + (HDR+7)/min)
	 * bytes, and the space skipped at a wrap is less than one record. */
	uint64_t per = (uint64_t)bytes * (min_frame + FSW_REC_HDR + 7u) / min_frame;
	uint64_t total = per + 2u * rec_size(max_frame);

	return total > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)((total + 63u) & ~63ull);
}

int fsw_ring_init(struct fsw_ring *r, uint32_t cap)
{
	memset(r, 0, sizeof(*r));
	cap &= ~7u;
	r->buf = aligned_alloc(64, ((size_t)cap + 63u) & ~(size_t)63u);
	if (!r->buf)
		return -ENOMEM;
	r->cap = cap;
	r->wrap_end = cap;
	return 0;
}

void fsw_ring_free(struct fsw_ring *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

struct fsw_rec *fsw_ring_push(struct fsw_ring *r, uint32_t len)
{
	uint32_t need = rec_size(len), at;
	struct fsw_rec *rec;

	if (need > r->cap)
		return NULL;
	if (!r->wrapped) {
		if (r->cap - r->tail >= need) {
			at = r->tail;
		} else if (r->head >= need) {
			/* the upper part ends where the tail stood */
			r->wrap_end = r->tail;
			r->wrapped = true;
			at = 0;
		} else {
			return NULL;
		}
	} else {
		if (r->head - r->tail < need)
			return NULL;
		at = r->tail;
	}
	r->tail = at + need;
	r->count++;
	rec = (struct fsw_rec *)(void *)(r->buf + at);
	rec->len = len;
	return rec;
}

void fsw_ring_pop(struct fsw_ring *r)
{
	const struct fsw_rec *rec = (const struct fsw_rec *)(const void *)(r->buf + r->head);

	if (!r->count)
		return;
	r->head += rec_size(rec->len);
	r->count--;
	if (r->wrapped && r->head == r->wrap_end) {
		r->head = 0;
		r->wrapped = false;
		r->wrap_end = r->cap;
	}
	if (!r->count) {
		/* empty: start again at 0, the whole buffer in one piece */
		r->head = r->tail = 0;
		r->wrapped = false;
		r->wrap_end = r->cap;
	}
}

struct fsw_rec *fsw_ring_next(const struct fsw_ring *r, const struct fsw_rec *rec)
{
	uint32_t off = (uint32_t)((const uint8_t *)rec - r->buf) + rec_size(rec->len);

	/* only a record of the upper part can end at wrap_end: the lower
	 * part ends at tail <= head < wrap_end */
	if (r->wrapped && off == r->wrap_end)
		off = 0;
	if (off == r->tail)
		return NULL;
	return (struct fsw_rec *)(void *)(r->buf + off);
}
