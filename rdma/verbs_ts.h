/* SPDX-License-Identifier: MIT */
/* The device's completion timestamps on the engine's clock (verbs_ts.c).
 * A NIC that stamps completions (ibv_query_device_ex: a nonzero
 * completion_timestamp_mask and hca_core_clock) gives the engine the time
 * a SACK or a data segment arrived, not the time the engine got to its
 * completion: RTT samples and the receiver's hold time then leave out the
 * wait in the CQ. The stamps count the device's free-running clock, in
 * cycles of hca_core_clock kHz, wrapping at the mask; a calibration point
 * (the device's clock read with ibv_query_rt_values_ex, and the engine's
 * CLOCK_MONOTONIC around it) maps them, and is taken again every 100 ms
 * so that the two clocks' drift stays below a microsecond. */
#ifndef UROCE_RDMA_VERBS_TS_H
#define UROCE_RDMA_VERBS_TS_H

#include <stdbool.h>
#include <stdint.h>

#define VERBS_TS_RECAL_NS 100000000ull

struct verbs_ts {
	bool on;            /* the device stamps the engine's CQ */
	uint64_t khz;       /* hca_core_clock */
	uint64_t mask;      /* completion_timestamp_mask: the counter wraps at mask + 1 */
	uint64_t cal_cycles; /* the calibration point: the device's clock ... */
	uint64_t cal_ns;     /* ... and the engine's at the same moment; 0 = none yet */
	uint64_t next_cal_ns;
};

/* Device cycles c as engine nanoseconds, or 0 when there is no
 * calibration yet. c may lie before or after the calibration point by
 * less than half the counter's span. */
static inline uint64_t verbs_ts_ns(const struct verbs_ts *t, uint64_t c)
{
	uint64_t d, ns;

	if (!t->cal_ns || !t->khz)
		return 0;
	d = (c - t->cal_cycles) & t->mask;
	if (d > t->mask / 2) { /* before the calibration point */
		d = (t->mask - d + 1) & t->mask;
		ns = (uint64_t)((unsigned __int128)d * 1000000u / t->khz);
		return ns < t->cal_ns ? t->cal_ns - ns : 1;
	}
	return t->cal_ns + (uint64_t)((unsigned __int128)d * 1000000u / t->khz);
}

struct ibv_context;

/* Take the calibration point again if it is due (now: the engine's clock). */
void verbs_ts_calibrate(struct verbs_ts *t, struct ibv_context *ibctx, uint64_t now);

#endif
