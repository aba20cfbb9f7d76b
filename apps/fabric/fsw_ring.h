/* SPDX-License-Identifier: MIT */
/* A FIFO of variable-length frame records in one preallocated byte buffer:
 * the storage of the switch's queues and delay lines. Each record is a
 * small header (a time and a length) and the frame, 8-byte aligned; a
 * record that does not fit before the buffer's end starts again at 0. */
#ifndef UROCE_APPS_FABRIC_FSW_RING_H
#define UROCE_APPS_FABRIC_FSW_RING_H

#include <stdbool.h>
#include <stdint.h>

struct fsw_rec {
	uint64_t t;   /* queue: arrival; delay line: when it is due */
	uint32_t len; /* frame bytes in data[] */
	uint32_t rsvd;
	uint8_t data[];
};

#define FSW_REC_HDR ((uint32_t)sizeof(struct fsw_rec))

struct fsw_ring {
	uint8_t *buf;
	uint32_t cap;
	uint32_t head;     /* oldest record */
	uint32_t tail;     /* where the next record goes */
	uint32_t wrap_end; /* end of the upper part while wrapped */
	bool wrapped;      /* records in [head, wrap_end) and [0, tail) */
	uint32_t count;
};

/* Room for records of frames totalling `bytes`, each at least min_frame
 * long, whatever their order and sizes (max_frame the largest). */
uint32_t fsw_ring_size_for(uint32_t bytes, uint32_t min_frame, uint32_t max_frame);

int fsw_ring_init(struct fsw_ring *r, uint32_t cap);
void fsw_ring_free(struct fsw_ring *r);

/* A new record at the tail with len set, or NULL when it does not fit. */
struct fsw_rec *fsw_ring_push(struct fsw_ring *r, uint32_t len);
void fsw_ring_pop(struct fsw_ring *r);

static inline struct fsw_rec *fsw_ring_first(const struct fsw_ring *r)
{
	return r->count ? (struct fsw_rec *)(void *)(r->buf + r->head) : NULL;
}

/* The record after rec, or NULL at the tail. */
struct fsw_rec *fsw_ring_next(const struct fsw_ring *r, const struct fsw_rec *rec);

#endif /* UROCE_APPS_FABRIC_FSW_RING_H */
