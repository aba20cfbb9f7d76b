/* SPDX-License-Identifier: MIT */
/* Calibrating the device's completion timestamps (verbs_ts.h). */
#include <time.h>

#include <infiniband/verbs.h>

#include "rdma/verbs_ts.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void verbs_ts_calibrate(struct verbs_ts *t, struct ibv_context *ibctx, uint64_t now)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	uint64_t before, after;

	if (!t->on || now < t->next_cal_ns)
		return;
	t->next_cal_ns = now + VERBS_TS_RECAL_NS;
	before = mono_ns();
	if (ibv_query_rt_values_ex(ibctx, &v) || !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return; /* the last point stays */
	after = mono_ns();
	/* the raw clock is a cycle count, carried in the timespec */
	t->cal_cycles = ((uint64_t)v.raw_clock.tv_sec * 1000000000ull + (uint64_t)v.raw_clock.tv_nsec) & t->mask;
	t->cal_ns = before + (after - before) / 2;
}
