/* SPDX-License-Identifier: MIT */
/* OptiNIC's block-wise Hadamard coding on the CPU (section 3.2): groups of
 * block x stride floats, block b of a group its floats b, b + stride, ...
 * (so one packet carries coefficients of stride blocks), each block through
 * the orthonormal fast Walsh-Hadamard transform. In the flat view a group's
 * transform is the butterflies of distance stride .. n/2 (gpu/hadamard.h),
 * so one loop serves every stride. AVX2 runs eight butterflies at once;
 * both paths do the same float operations on every value in the same
 * order, so they, and the CUDA kernels, agree bit for bit.
 *
 * Built with -ffp-contract=off: a fused multiply-add would round once
 * where the others round twice. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/core/qp_internal.h"
#include "gpu/hadamard.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define HD_X86 1
#else
#define HD_X86 0
#endif

/* Stages of distance below this many floats (16 KiB) run tile by tile, in
 * L1. The longer ones pair floats a multiple of HD_TILE apart: the group
 * is then rows of HD_TILE floats, and a panel of HD_PANEL columns of
 * every row (one cache line a row) takes all of them at once, so the
 * group is read twice in all, not once a stage. */
#define HD_TILE 4096u
#define HD_PANEL 16u

int hd_check(const char *fn, const void *buf, size_t count, uint32_t block, uint32_t stride)
{
	if (block < 2 || block > HD_BLOCK_MAX || (block & (block - 1)))
		return uroce_fail(-EINVAL, "%s: block %u; accepted a power of two, 2 to %u", fn, block, HD_BLOCK_MAX);
	if (!stride || stride > HD_STRIDE_MAX || (stride & (stride - 1)))
		return uroce_fail(-EINVAL, "%s: stride %u; accepted a power of two, 1 to %u", fn, stride, HD_STRIDE_MAX);
	if ((uint64_t)block * stride > HD_GROUP_MAX)
		return uroce_fail(-EINVAL, "%s: block %u x stride %u is past %u floats a group", fn, block, stride,
		                  HD_GROUP_MAX);
	if (count % ((size_t)block * stride))
		return uroce_fail(-EINVAL, "%s: count %zu floats is not a multiple of block %u x stride %u (pad the buffer)",
		                  fn, count, block, stride);
	if (count > SIZE_MAX / sizeof(float))
		return uroce_fail(-EINVAL, "%s: count %zu floats is too large", fn, count);
	if (count && !buf)
		return uroce_fail(-EINVAL, "%s: buf is NULL", fn);
	return 0;
}

float hd_scale(uint32_t block)
{
	unsigned k = (unsigned)__builtin_ctz(block);
	double s = 1.0 / (double)(1u << (k / 2)); /* exact */

	return (float)(k & 1 ? s * 0.70710678118654752440 : s); /* 1/sqrt(2), rounded once */
}

/* One stage of distance h over x[0, n), scaled when s is not 0 (the last). */
static void stage_scalar(float *x, size_t n, size_t h, float s)
{
	for (size_t i = 0; i < n; i += 2 * h)
		for (size_t k = i; k < i + h; k++) {
			float a = x[k], b = x[k + h];
			float p = a + b, q = a - b;

			if (s != 0.0f) {
				p = p * s;
				q = q * s;
			}
			x[k] = p;
			x[k + h] = q;
		}
}

#if HD_X86
__attribute__((target("avx2"))) static void stage_avx2(float *x, size_t n, size_t h, float s)
{
	__m256 vs = _mm256_set1_ps(s);

	if (h >= 8) {
		for (size_t i = 0; i < n; i += 2 * h)
			for (size_t k = i; k < i + h; k += 8) {
				__m256 a = _mm256_loadu_ps(x + k), b = _mm256_loadu_ps(x + k + h);
				__m256 p = _mm256_add_ps(a, b), q = _mm256_sub_ps(a, b);

				if (s != 0.0f) {
					p = _mm256_mul_ps(p, vs);
					q = _mm256_mul_ps(q, vs);
				}
				_mm256_storeu_ps(x + k, p);
				_mm256_storeu_ps(x + k + h, q);
			}
		return;
	}
	/* h 1, 2 or 4 within eight floats: w is v with each lane's partner;
	 * the lower lane of a pair takes v + w (= a + b), the upper w - v
	 * (= a - b), the scalar operations exactly */
	for (size_t i = 0; i < n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), w, r;

		if (h == 4) {
			w = _mm256_permute2f128_ps(v, v, 0x01);
			r = _mm256_blend_ps(_mm256_add_ps(v, w), _mm256_sub_ps(w, v), 0xf0);
		} else if (h == 2) {
			w = _mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2));
			r = _mm256_blend_ps(_mm256_add_ps(v, w), _mm256_sub_ps(w, v), 0xcc);
		} else {
			w = _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1));
			r = _mm256_blend_ps(_mm256_add_ps(v, w), _mm256_sub_ps(w, v), 0xaa);
		}
		if (s != 0.0f)
			r = _mm256_mul_ps(r, vs);
		_mm256_storeu_ps(x + i, r);
	}
}
#endif

#if HD_X86
/* Three stages at once: distances h, 2h, 4h on the eight vectors at
 * u + j d (j's bits are the stages'), the last scaled when s != 0. Each
 * float goes through the same three butterflies, in the same order, as in
 * three radix-2 passes: the same bits, an eighth of the loads and stores. */
#define HD_BF(a, b)                                                                                                    \
	do {                                                                                                           \
		__m256 t_ = _mm256_add_ps(a, b);                                                                       \
		b = _mm256_sub_ps(a, b);                                                                               \
		a = t_;                                                                                                \
	} while (0)

__attribute__((target("avx2"))) static inline void bf8_avx2(float *u, size_t d, float s)
{
	__m256 v0 = _mm256_loadu_ps(u), v1 = _mm256_loadu_ps(u + d), v2 = _mm256_loadu_ps(u + 2 * d),
	       v3 = _mm256_loadu_ps(u + 3 * d), v4 = _mm256_loadu_ps(u + 4 * d), v5 = _mm256_loadu_ps(u + 5 * d),
	       v6 = _mm256_loadu_ps(u + 6 * d), v7 = _mm256_loadu_ps(u + 7 * d);

	HD_BF(v0, v1);
	HD_BF(v2, v3);
	HD_BF(v4, v5);
	HD_BF(v6, v7);
	HD_BF(v0, v2);
	HD_BF(v1, v3);
	HD_BF(v4, v6);
	HD_BF(v5, v7);
	HD_BF(v0, v4);
	HD_BF(v1, v5);
	HD_BF(v2, v6);
	HD_BF(v3, v7);
	if (s != 0.0f) {
		__m256 vs = _mm256_set1_ps(s);

		v0 = _mm256_mul_ps(v0, vs), v1 = _mm256_mul_ps(v1, vs), v2 = _mm256_mul_ps(v2, vs);
		v3 = _mm256_mul_ps(v3, vs), v4 = _mm256_mul_ps(v4, vs), v5 = _mm256_mul_ps(v5, vs);
		v6 = _mm256_mul_ps(v6, vs), v7 = _mm256_mul_ps(v7, vs);
	}
	_mm256_storeu_ps(u, v0), _mm256_storeu_ps(u + d, v1), _mm256_storeu_ps(u + 2 * d, v2);
	_mm256_storeu_ps(u + 3 * d, v3), _mm256_storeu_ps(u + 4 * d, v4), _mm256_storeu_ps(u + 5 * d, v5);
	_mm256_storeu_ps(u + 6 * d, v6), _mm256_storeu_ps(u + 7 * d, v7);
}

/* stages h, 2h, 4h over x[0, n) (h >= 8, 8h <= n) */
__attribute__((target("avx2"))) static void stage3_avx2(float *x, size_t n, size_t h, float s)
{
	for (size_t i = 0; i < n; i += 8 * h)
		for (size_t k = i; k < i + h; k += 8)
			bf8_avx2(x + k, h, s);
}

#endif

typedef void stage_fn(float *x, size_t n, size_t h, float s);

/* The passes of one instruction set: radix 2, and radix 8 where it has one. */
struct hd_isa {
	stage_fn *stage, *stage3;
};

/* Stages h .. n/2 over x[0, n), three at once where they fit, the stage
 * n/2 scaled by s (0: none). */
static void run_stages(const struct hd_isa *isa, float *x, size_t n, size_t h, float s)
{
	while (h < n) {
		if (isa->stage3 && h >= 8 && 8 * h <= n) {
			isa->stage3(x, n, h, 8 * h == n ? s : 0.0f);
			h *= 8;
		} else {
			isa->stage(x, n, h, 2 * h == n ? s : 0.0f);
			h *= 2;
		}
	}
}

/* Stages h0 .. n/2 of one group x[0, n), the last scaled by s; tmp holds
 * a panel (n / HD_TILE x HD_PANEL floats), or is NULL. */
static void group(const struct hd_isa *isa, float *x, size_t n, size_t h0, float s, float *tmp)
{
	size_t h = h0;

	if (n <= HD_TILE) {
		run_stages(isa, x, n, h, s);
		return;
	}
	/* a stage shorter than a tile pairs floats of one tile only */
	if (h < HD_TILE) {
		for (size_t t = 0; t < n; t += HD_TILE)
			run_stages(isa, x + t, HD_TILE, h0, 0.0f);
		h = HD_TILE;
	}
	if (!tmp) {
		run_stages(isa, x, n, h, s); /* whole sweeps of the group */
		return;
	}
	/* rows HD_TILE floats (16 KiB) apart fall in one L1 set: the panel
	 * is gathered into tmp, where its rows are adjacent, and the stages
	 * of distance h between rows are stages of distance h / HD_TILE x
	 * HD_PANEL there */
	size_t nr = n / HD_TILE;

	for (size_t c = 0; c < HD_TILE; c += HD_PANEL) {
		for (size_t r = 0; r < nr; r++)
			memcpy(tmp + r * HD_PANEL, x + r * HD_TILE + c, HD_PANEL * sizeof(float));
		run_stages(isa, tmp, nr * HD_PANEL, h / HD_TILE * HD_PANEL, s);
		for (size_t r = 0; r < nr; r++)
			memcpy(x + r * HD_TILE + c, tmp + r * HD_PANEL, HD_PANEL * sizeof(float));
	}
}

int hd_have_avx2(void)
{
#if HD_X86
	return __builtin_cpu_supports("avx2");
#else
	return 0;
#endif
}

void hd_cpu(float *buf, size_t count, uint32_t block, uint32_t stride, int isa)
{
	size_t n = (size_t)block * stride;
	float s = hd_scale(block);
	static const struct hd_isa scalar = { stage_scalar, NULL };
	const struct hd_isa *is = &scalar;

#if HD_X86
	static const struct hd_isa avx2 = { stage_avx2, stage3_avx2 };

	/* eight floats a vector: a group of fewer (n 2, 4) stays scalar */
	if (isa != 1 && n >= 8 && hd_have_avx2())
		is = &avx2;
#else
	(void)isa;
#endif
	/* the panel's gather buffer (up to 4 MiB; without it the long stages
	 * sweep the whole group: slower, the same bits) */
	float *tmp = n > HD_TILE ? malloc(n / HD_TILE * HD_PANEL * sizeof(float)) : NULL;

	for (size_t g = 0; g < count; g += n)
		group(is, buf + g, n, stride, s, tmp);
	free(tmp);
}

static int hd_run(const char *fn, float *buf, size_t count, uint32_t block, uint32_t stride)
{
	int rc = hd_check(fn, buf, count, block, stride);

	if (!rc)
		hd_cpu(buf, count, block, stride, 0);
	return rc;
}

int uroce_hadamard_encode(float *buf, size_t count, uint32_t block, uint32_t stride)
{
	return hd_run("uroce_hadamard_encode", buf, count, block, stride);
}

/* the transform is its own inverse */
int uroce_hadamard_decode(float *buf, size_t count, uint32_t block, uint32_t stride)
{
	return hd_run("uroce_hadamard_decode", buf, count, block, stride);
}
