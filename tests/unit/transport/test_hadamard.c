/* SPDX-License-Identifier: MIT */
/* gpu/hadamard.c against a naive O(n^2) reference (the Sylvester matrix,
 * H[j][k] = (-1)^popcount(j & k) / sqrt(block), summed in double over each
 * block's strided floats): every (block, stride) of the cases, random data.
 * The scalar and AVX2 paths give the same bits on every case, larger ones
 * included; decode(encode(x)) is x within float rounding; a zeroed packet
 * of encoded floats decodes to an error whose energy is the lost
 * coefficients' (the transform is orthonormal) and, with stride as long as
 * the packet, spread evenly: each float of a block off by the one lost
 * coefficient of its block / sqrt(block). Bad arguments are refused with
 * what is accepted; the CUDA calls without a driver (or a context) say so. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "gpu/hadamard.h"

static unsigned failures;
static unsigned long checks;

#define CHECK(c, ...)                                                                                                  \
	do {                                                                                                           \
		checks++;                                                                                              \
		if (!(c)) {                                                                                            \
			failures++;                                                                                    \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                           \
			fprintf(stderr, __VA_ARGS__);                                                                  \
			fputc('\n', stderr);                                                                           \
		}                                                                                                      \
	} while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	/* uniform in [-1, 1), with a few large values (a gradient's outliers) */
	float v = (float)((double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0);

	return (rng & 0xff) == 0 ? v * 100.0f : v;
}

static float *rand_buf(size_t n)
{
	float *b = malloc(n * sizeof(float));

	if (!b) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		b[i] = frand();
	return b;
}

static unsigned log2u(uint32_t v)
{
	return (unsigned)__builtin_ctz(v);
}

/* y = H x per block, in double. */
static void naive(const float *x, double *y, size_t count, uint32_t block, uint32_t stride)
{
	size_t n = (size_t)block * stride;
	double s = 1.0 / sqrt((double)block);

	for (size_t g = 0; g < count; g += n)
		for (uint32_t b = 0; b < stride; b++)
			for (uint32_t j = 0; j < block; j++) {
				double acc = 0;

				for (uint32_t k = 0; k < block; k++) {
					double v = x[g + (size_t)k * stride + b];

					acc += __builtin_popcount(j & k) & 1 ? -v : v;
				}
				y[g + (size_t)j * stride + b] = acc * s;
			}
}

/* A bound on the rounding of log2(block) stages: each value is a sum of at
 * most sum|x| of its block, rounded once a stage and once by the scale. */
static double tol(const float *x, size_t g, uint32_t b, uint32_t block, uint32_t stride)
{
	double sum = 0;

	for (uint32_t k = 0; k < block; k++)
		sum += fabs(x[g + (size_t)k * stride + b]);
	return (log2u(block) + 2) * 1.2e-7 * sum / sqrt((double)block) + 1e-30;
}

static void against_naive(uint32_t block, uint32_t stride, unsigned groups)
{
	size_t n = (size_t)block * stride, count = n * groups;
	float *x = rand_buf(count), *y = malloc(count * sizeof(float));
	double *ref = malloc(count * sizeof(double));
	unsigned bad = 0;

	memcpy(y, x, count * sizeof(float));
	CHECK(uroce_hadamard_encode(y, count, block, stride) == 0, "encode %u/%u: %s", block, stride, uroce_last_error());
	naive(x, ref, count, block, stride);
	for (size_t g = 0; g < count; g += n)
		for (uint32_t b = 0; b < stride; b++) {
			double t = tol(x, g, b, block, stride);

			for (uint32_t j = 0; j < block; j++) {
				size_t i = g + (size_t)j * stride + b;

				if (fabs(y[i] - ref[i]) > t && bad++ < 3)
					fprintf(stderr, "block %u stride %u: [%zu] %.9g, reference %.9g (tolerance %.3g)\n", block,
					        stride, i, y[i], ref[i], t);
			}
		}
	CHECK(!bad, "block %u stride %u: %u floats off the reference", block, stride, bad);
	free(x);
	free(y);
	free(ref);
}

/* The scalar and AVX2 paths and the public call: the same bits. */
static void same_bits(uint32_t block, uint32_t stride, unsigned groups)
{
	size_t count = (size_t)block * stride * groups, sz = count * sizeof(float);
	float *x = rand_buf(count), *a = malloc(sz), *v = malloc(sz);

	memcpy(a, x, sz);
	memcpy(v, x, sz);
	hd_cpu(a, count, block, stride, 1);
	hd_cpu(v, count, block, stride, 2);
	CHECK(!memcmp(a, v, sz), "block %u stride %u: scalar and AVX2 differ", block, stride);
	CHECK(uroce_hadamard_encode(x, count, block, stride) == 0, "encode");
	CHECK(!memcmp(a, x, sz), "block %u stride %u: the public call differs from the scalar path", block, stride);
	/* decode back: x within rounding */
	memcpy(v, a, sz);
	hd_cpu(a, count, block, stride, 1);
	hd_cpu(v, count, block, stride, 2);
	CHECK(!memcmp(a, v, sz), "block %u stride %u: scalar and AVX2 decodes differ", block, stride);
	free(x);
	free(a);
	free(v);
}

static void identity(uint32_t block, uint32_t stride)
{
	size_t count = (size_t)block * stride * 2;
	float *x = rand_buf(count), *y = malloc(count * sizeof(float));
	double worst = 0, top = 0;

	memcpy(y, x, count * sizeof(float));
	CHECK(uroce_hadamard_encode(y, count, block, stride) == 0, "encode");
	CHECK(uroce_hadamard_decode(y, count, block, stride) == 0, "decode");
	for (size_t i = 0; i < count; i++) {
		double d = fabs((double)y[i] - x[i]);

		worst = d > worst ? d : worst;
		top = fabs(x[i]) > top ? fabs(x[i]) : top;
	}
	/* 2 log2(block) + 2 roundings, each of at most the largest value */
	CHECK(worst <= 2 * (log2u(block) + 2) * 1.2e-7 * top,
	      "block %u stride %u: decode(encode(x)) off by %.3g (largest value %.3g)", block, stride, worst, top);
	free(x);
	free(y);
}

/* A lost packet of pkt encoded floats: the decoded error's energy is the
 * lost coefficients', and with stride == pkt every float of the group is
 * off by its block's lost coefficient / sqrt(block). */
static void lost_packet(uint32_t block, uint32_t stride, uint32_t pkt)
{
	size_t n = (size_t)block * stride;
	float *x = rand_buf(n), *y = malloc(n * sizeof(float));
	float *y0 = malloc(n * sizeof(float));
	double lost = 0, err = 0, worst = 0, noise = 0;
	size_t at = (size_t)(n / pkt / 2) * pkt; /* a packet in the middle */

	/* the rounding of a lossless round trip, the tolerance below */
	memcpy(y0, x, n * sizeof(float));
	uroce_hadamard_encode(y0, n, block, stride);
	uroce_hadamard_decode(y0, n, block, stride);
	for (size_t i = 0; i < n; i++)
		noise = fabs((double)y0[i] - x[i]) > noise ? fabs((double)y0[i] - x[i]) : noise;
	memcpy(y, x, n * sizeof(float));
	uroce_hadamard_encode(y, n, block, stride);
	float *keep = malloc(pkt * sizeof(float));

	memcpy(keep, y + at, pkt * sizeof(float));
	for (uint32_t i = 0; i < pkt; i++) {
		lost += (double)y[at + i] * y[at + i];
		y[at + i] = 0;
	}
	uroce_hadamard_decode(y, n, block, stride);
	for (size_t i = 0; i < n; i++) {
		double e = (double)y[i] - x[i];

		err += e * e;
		if (stride == pkt) {
			double d = fabs(fabs(e) - fabs(keep[i % stride]) / sqrt((double)block));

			worst = d > worst ? d : worst;
		}
	}
	CHECK(fabs(err - lost) <= 1e-4 * lost + 1e-9, "block %u stride %u: error energy %.6g, lost %.6g", block, stride,
	      err, lost);
	if (stride == pkt)
		CHECK(worst <= 2 * noise + 1e-6,
		      "block %u stride %u: a float's error is %.3g off its block's lost coefficient / sqrt(block) "
		      "(round trip noise %.3g)", block, stride, worst, noise);
	free(x);
	free(y);
	free(y0);
	free(keep);
}

static void refused(int rc, const char *want)
{
	CHECK(rc == -EINVAL && strstr(uroce_last_error(), want), "rc %d, '%s' (wanted -EINVAL and '%s')", rc,
	      uroce_last_error(), want);
}

int main(void)
{
	static const uint32_t nv[][3] = {
		{ 2, 1, 8 },    { 4, 1, 4 },   { 8, 1, 4 },    { 16, 1, 2 },   { 256, 1, 2 },  { 1024, 1, 1 },
		{ 2, 8, 2 },    { 4, 2, 2 },   { 8, 4, 2 },    { 64, 16, 1 },  { 256, 256, 1 }, { 32, 1024, 1 },
		{ 2048, 4, 1 }, { 16, 2, 3 },  { 4096, 2, 1 },
	};
	static const uint32_t sb[][3] = {
		{ 2, 1, 64 },      { 4, 1, 32 },    { 8, 1, 16 },     { 2, 2, 16 },   { 2, 4, 16 },   { 4, 2, 16 },
		{ 16, 1, 8 },      { 256, 1, 8 },   { 8192, 1, 2 },   { 16384, 1, 2 }, { 65536, 1, 1 }, { 65536, 2, 1 },
		{ 4096, 1024, 1 }, { 256, 256, 4 }, { 1024, 256, 2 }, { 2, 65536, 1 }, { 1 << 20, 1, 1 },
	};
	float f[64];

	printf("AVX2 path: %s\n", hd_have_avx2() ? "this CPU has it" : "not on this CPU (scalar twice)");
	for (size_t i = 0; i < sizeof(nv) / sizeof(nv[0]); i++)
		against_naive(nv[i][0], nv[i][1], nv[i][2]);
	for (size_t i = 0; i < sizeof(sb) / sizeof(sb[0]); i++)
		same_bits(sb[i][0], sb[i][1], sb[i][2]);
	for (uint32_t block = 2; block <= 65536; block *= 4)
		identity(block, block >= 4096 ? 1 : 8);
	identity(8, 1024);
	lost_packet(1024, 1, 1024); /* one block lost whole */
	lost_packet(4096, 1, 1024);
	lost_packet(256, 1024, 1024);
	lost_packet(4096, 256, 256);
	lost_packet(65536, 16, 1024);

	/* the scale: exact for powers of 4, 1/sqrt(2) rounded once otherwise */
	CHECK(hd_scale(4) == 0.5f && hd_scale(65536) == 1.0f / 256 && hd_scale(2) == (float)(1 / sqrt(2.0)),
	      "scale %.9g %.9g %.9g", hd_scale(4), hd_scale(65536), hd_scale(2));

	refused(uroce_hadamard_encode(f, 64, 0, 1), "block 0; accepted a power of two, 2 to");
	refused(uroce_hadamard_encode(f, 64, 1, 1), "block 1; accepted");
	refused(uroce_hadamard_encode(f, 64, 12, 1), "block 12; accepted");
	refused(uroce_hadamard_encode(f, 64, 1u << 25, 1), "block 33554432; accepted");
	refused(uroce_hadamard_decode(f, 64, 8, 0), "stride 0; accepted a power of two, 1 to 65536");
	refused(uroce_hadamard_decode(f, 64, 8, 6), "stride 6; accepted");
	refused(uroce_hadamard_decode(f, 64, 8, 1u << 17), "stride 131072; accepted");
	refused(uroce_hadamard_encode(f, 64, 1u << 24, 65536), "is past");
	refused(uroce_hadamard_encode(f, 60, 8, 2), "count 60 floats is not a multiple of block 8 x stride 2");
	refused(uroce_hadamard_encode(NULL, 64, 8, 2), "buf is NULL");
	CHECK(uroce_hadamard_encode(NULL, 0, 8, 2) == 0, "count 0: %s", uroce_last_error());
	refused(uroce_hadamard_encode_cuda(f, 60, 8, 2, NULL), "uroce_hadamard_encode_cuda: count 60");
	refused(uroce_hadamard_decode_cuda(f, 64, 3, 2, NULL), "uroce_hadamard_decode_cuda: block 3");
	{
		/* this machine has no CUDA driver: -ENODEV, or -ENOTSUP from a
		 * build without nvcc; either says why */
		int rc = uroce_hadamard_encode_cuda(f, 64, 8, 2, NULL);

		CHECK((rc == -ENODEV && strstr(uroce_last_error(), "uroce_hadamard_encode_cuda: ")) ||
		          (rc == -ENOTSUP && strstr(uroce_last_error(), "without nvcc")),
		      "cuda without a driver: %d '%s'", rc, uroce_last_error());
	}
	printf("%lu checks, %u failed\n", checks, failures);
	return failures ? 1 : 0;
}
