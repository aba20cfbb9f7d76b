/* SPDX-License-Identifier: MIT */
/* The device's completion stamps on the engine's clock (rdma/verbs_ts.h):
 * cycles of a 1 GHz and a 156.25 MHz clock after and before the
 * calibration point, across the counter's wrap (a 48-bit and a 64-bit
 * mask), and nothing before a calibration. The device reading itself needs
 * a NIC that stamps (rxe does not): docs/ports.md. */
#include "rdma/verbs_ts.h"
#include "../dataplane/dp_test.h"

int main(void)
{
	const uint64_t m48 = (1ull << 48) - 1;
	struct verbs_ts t = { .on = true, .khz = 1000000, .mask = m48, .cal_cycles = 1000, .cal_ns = 5000000000ull };

	CHECK(verbs_ts_ns(&t, 1000) == 5000000000ull, "the calibration point itself");
	CHECK(verbs_ts_ns(&t, 1000 + 2500) == 5000002500ull, "2500 cycles of 1 GHz after it: 2.5 us");
	CHECK(verbs_ts_ns(&t, 400) == 5000000000ull - 600, "600 cycles before it");
	/* the counter wrapped since the point: its stamp is small again */
	t.cal_cycles = m48 - 99;
	CHECK(verbs_ts_ns(&t, 50) == 5000000000ull + 150, "150 cycles later, across the wrap");
	t.cal_cycles = 20;
	CHECK(verbs_ts_ns(&t, m48 - 9) == 5000000000ull - 30, "30 cycles earlier, across the wrap backwards");
	/* 156.25 MHz (a 6.4 ns cycle), full 64-bit counter */
	t.khz = 156250;
	t.mask = UINT64_MAX;
	t.cal_cycles = UINT64_MAX - 4;
	CHECK(verbs_ts_ns(&t, 5) == 5000000000ull + 64, "10 cycles of 6.4 ns across a 64-bit wrap: %llu",
	      (unsigned long long)verbs_ts_ns(&t, 5));
	/* a stamp from before the engine's clock began cannot go below 1 */
	t.cal_ns = 10;
	t.cal_cycles = 1000000;
	CHECK(verbs_ts_ns(&t, 0) == 1, "before the clock's start: 1, not a wrap to 2^64");
	t.cal_ns = 0;
	CHECK(verbs_ts_ns(&t, 123) == 0, "no calibration yet: no time");
	return test_done("tr_verbs_ts");
}
