/* SPDX-License-Identifier: MIT */
/* Shared helpers for the dataplane unit tests: a failure counter with a
 * CHECK macro, a seeded generator, and a wall-clock guard that bounds
 * every wait loop (a hang becomes a failure, never a stuck test). */
#ifndef UROCE_TESTS_DP_TEST_H
#define UROCE_TESTS_DP_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int test_failures;

/* Stop printing after this many failures so one bug does not flood the
 * log of a loop over thousands of cases (they are still counted). */
#define TEST_MAX_REPORTED 30

#define CHECK(cond, ...)                                                         \
	do {                                                                     \
		if (!(cond)) {                                                   \
			if (test_failures++ < TEST_MAX_REPORTED) {               \
				fprintf(stderr, "%s:%d: check failed: %s: ",     \
				        __FILE__, __LINE__, #cond);              \
				fprintf(stderr, __VA_ARGS__);                    \
				fputc('\n', stderr);                             \
			}                                                        \
		}                                                                \
	} while (0)

/* A failed precondition makes the rest of the test meaningless. */
#define REQUIRE(cond, ...)                                                       \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: required: %s: ", __FILE__,       \
			        __LINE__, #cond);                                \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
			exit(1);                                                 \
		}                                                                \
	} while (0)

static inline int test_done(const char *name)
{
	if (test_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
		return 1;
	}
	printf("%s: all checks passed\n", name);
	return 0;
}

/* splitmix64: deterministic everywhere, so a failure replays. */
struct test_rng {
	uint64_t s;
};

static inline uint64_t test_rng_next(struct test_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t test_rng_below(struct test_rng *r, uint64_t n)
{
	return test_rng_next(r) % n;
}

static inline uint64_t test_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deadline for wait loops: generous, because the machine may be busy with
 * other tests; it only turns a hang into a failure. */
#define TEST_HANG_NS (120ull * 1000000000ull)

/* FNV-1a over bytes, chained: fingerprints everything a run delivered. */
static inline uint64_t test_hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define TEST_HASH_INIT 0xcbf29ce484222325ull

/* An initial PSN from a seed: anywhere in the 24-bit space, as a real
 * peer's random one, and the same at every run. */
static inline uint32_t test_psn(uint64_t seed)
{
	struct test_rng r = { seed };

	return (uint32_t)test_rng_next(&r) & 0xffffffu;
}

#endif /* UROCE_TESTS_DP_TEST_H */
