/* SPDX-License-Identifier: MIT */
/* The CPU cost of the Hadamard coding (gpu/hadamard.c) against a plain
 * memcpy of the same buffer, one invocation: for each (block, stride), ns
 * per float of uroce_hadamard_encode (the AVX2 path where the CPU has it)
 * and of the scalar path, the best of --reps runs over a buffer of --mib
 * MiB, and the ratio to the best memcpy of that buffer into another.
 *
 *   hd_cost [--mib M] [--reps R]
 *
 * Prints one line per case, "hd_cost block=B stride=S avx2_ns=.. scalar_ns=..
 * memcpy_ns=.. avx2_over_memcpy=.. scalar_over_memcpy=..". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uroce/uroce.h>

#include "gpu/hadamard.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static const uint32_t cases[][2] = {
		{ 256, 1 },   { 1024, 1 },   { 4096, 1 },    { 16384, 1 }, { 65536, 1 }, { 256, 256 },
		{ 1024, 256 }, { 4096, 256 }, { 16384, 64 }, { 65536, 16 }, { 4096, 1024 }, { 1u << 24, 1 },
	};
	unsigned mib = 64, reps = 5;
	size_t n;
	float *a, *b;

	for (int i = 1; i < argc; i++) {
		char *end;
		unsigned long v;

		if (i + 1 < argc && (!strcmp(argv[i], "--mib") || !strcmp(argv[i], "--reps"))) {
			v = strtoul(argv[i + 1], &end, 10);
			if (*end || !v || v > (strcmp(argv[i], "--mib") ? 100 : 1024)) {
				fprintf(stderr, "hd_cost: %s '%s': accepted %s\n", argv[i], argv[i + 1],
				        strcmp(argv[i], "--mib") ? "1 to 100" : "1 to 1024 (MiB)");
				return 2;
			}
			*(strcmp(argv[i], "--mib") ? &reps : &mib) = (unsigned)v;
			i++;
			continue;
		}
		fprintf(stderr, "usage: hd_cost [--mib M] [--reps R]\n");
		return strcmp(argv[i], "--help") ? 2 : 0;
	}
	n = (size_t)mib << 18;
	a = aligned_alloc(64, n * 4);
	b = aligned_alloc(64, n * 4);
	if (!a || !b)
		return 1;
	for (size_t i = 0; i < n; i++)
		a[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	memcpy(b, a, n * 4);
	printf("hd_cost buffer=%u MiB reps=%u avx2=%s\n", mib, reps, hd_have_avx2() ? "yes" : "no (both scalar)");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint32_t blk = cases[c][0], str = cases[c][1];
		uint64_t best[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };

		if (n % ((size_t)blk * str))
			continue;
		for (unsigned r = 0; r < reps; r++) {
			uint64_t t0 = now_ns(), t;

			hd_cpu(a, n, blk, str, 0);
			t = now_ns() - t0;
			best[0] = t < best[0] ? t : best[0];
			t0 = now_ns();
			hd_cpu(a, n, blk, str, 1);
			t = now_ns() - t0;
			best[1] = t < best[1] ? t : best[1];
			t0 = now_ns();
			memcpy(b, a, n * 4);
			__asm__ volatile("" ::"r"(b) : "memory");
			t = now_ns() - t0;
			best[2] = t < best[2] ? t : best[2];
		}
		printf("hd_cost block=%u stride=%u avx2_ns=%.3f scalar_ns=%.3f memcpy_ns=%.3f avx2_over_memcpy=%.2f "
		       "scalar_over_memcpy=%.2f\n",
		       blk, str, (double)best[0] / (double)n, (double)best[1] / (double)n, (double)best[2] / (double)n,
		       (double)best[0] / (double)best[2], (double)best[1] / (double)best[2]);
	}
	free(a);
	free(b);
	return 0;
}
