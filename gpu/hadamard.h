/* SPDX-License-Identifier: MIT */
/* Block-wise Hadamard coding (uroce_hadamard_*): what the CPU and the CUDA
 * versions share, so that both refuse the same arguments and scale by the
 * same float. The transform of one group of n = block x stride floats is
 * the flat fast Walsh-Hadamard butterflies of distance h = stride,
 * 2 stride, ..., n/2 in that order, (x[i], x[i+h]) <- (x[i] + x[i+h],
 * x[i] - x[i+h]) for every i with (i & h) == 0, then every float times
 * hd_scale(block). Each float's value depends only on that order, not on
 * how the butterflies of one distance are spread over lanes or threads. */
#ifndef UROCE_GPU_HADAMARD_H
#define UROCE_GPU_HADAMARD_H

#include <stddef.h>
#include <stdint.h>

#define HD_BLOCK_MAX (1u << 24)
#define HD_STRIDE_MAX 65536u
#define HD_GROUP_MAX (1u << 28)

/* 0, or -EINVAL with the reason (uroce_fail, naming fn). */
int hd_check(const char *fn, const void *buf, size_t count, uint32_t block, uint32_t stride);
/* 1/sqrt(block) rounded to float once (exact for powers of 4). */
float hd_scale(uint32_t block);
/* The CPU transform, args checked. isa: 0 = the best this CPU has,
 * 1 = scalar, 2 = AVX2 (falls back to scalar without it). */
void hd_cpu(float *buf, size_t count, uint32_t block, uint32_t stride, int isa);
/* True when this CPU runs the AVX2 path. */
int hd_have_avx2(void);

#endif /* UROCE_GPU_HADAMARD_H */
