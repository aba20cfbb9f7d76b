/* SPDX-License-Identifier: MIT */
/* The standalone fuzz drivers' seeded random stream (xorshift64*). */
#ifndef FUZZ_RNG_H
#define FUZZ_RNG_H

#include <stdint.h>

static inline uint64_t fuzz_rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

#endif
