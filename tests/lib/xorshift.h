/* SPDX-License-Identifier: MIT */
/* xorshift64 (13, 7, 17): the tests' and benchmarks' cheap deterministic
 * stream, the same numbers on every platform so that a run replays from
 * its seed. *s must not be 0. */
#ifndef UROCE_TESTS_LIB_XORSHIFT_H
#define UROCE_TESTS_LIB_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xs64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif /* UROCE_TESTS_LIB_XORSHIFT_H */
