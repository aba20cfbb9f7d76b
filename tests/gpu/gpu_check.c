/* SPDX-License-Identifier: MIT */
/* gpu_check: CUDA memory through uroce on a GPU machine. cudaMalloc'ed
 * buffers are filled by a kernel, staged (uroce_gpu_stage_in: cuMemcpyDtoH
 * into pinned host memory), written by RDMA WRITE over a two-port loop
 * fabric, staged out into the peer's cudaMalloc'ed buffer and counted by a
 * kernel: 0 bytes may differ. uroce_mr_reg_gpu of device memory on a port
 * whose engine copies with the CPU must refuse with its message.
 * Then the Hadamard kernels: uroce_hadamard_{en,de}code_cuda must give the
 * CPU's bits (uroce_hadamard_{en,de}code) for every shape, refuse what the
 * CPU refuses, and say -ENODEV on a thread with no current context; their
 * speed is printed beside a device-to-device copy, the CPU's beside
 * memcpy. Exits 0 when every check holds; prints what it moved. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "tr_test.h"

int gpu_alloc(void **p, size_t n);
void gpu_free(void *p);
int gpu_fill(void *d, size_t n, unsigned seed);
long long gpu_count_bad(const void *d, size_t n, unsigned seed);
const char *gpu_last_error(void);
int gpu_htod(void *d, const void *h, size_t n);
int gpu_dtoh(void *h, const void *d, size_t n);
int gpu_dtod_async(void *dst, const void *src, size_t n, void *stream);
void *gpu_stream_create(void);
void gpu_stream_destroy(void *s);
int gpu_stream_sync(void *s);
void *gpu_event_create(void);
void gpu_event_destroy(void *e);
int gpu_event_record(void *e, void *stream);
float gpu_event_ms(void *a, void *b);
const char *gpu_name(void);

#define STEPS 2000000u
#define SEED 0x5au

/* hadamard_kernels.cu's tile (floats): the shapes have groups either side */
#define HD_TILE 4096u
#define HD_CASE_MAX (64u << 20) /* bytes of the largest case */
#define HD_GPU_BYTES (256u << 20)
#define HD_CPU_BYTES (64u << 20)
#define HD_GPU_REPS 10
#define HD_CPU_REPS 3

/* Finite floats from 2^-20 to 2^21 of either sign, one in 64 subnormal:
 * every rounding, and subnormals kept (no flush to zero), as on the CPU. */
static void hd_fill(float *x, size_t n, uint64_t seed)
{
	struct test_rng r = { seed };

	for (size_t i = 0; i < n; i++) {
		uint64_t v = test_rng_next(&r);
		uint32_t bits = (uint32_t)(v >> 63) << 31 | (uint32_t)(v >> 8 & 0x7fffff);

		if (v & 63)
			bits |= (uint32_t)(127 - 20 + (v >> 32) % 41) << 23;
		memcpy(&x[i], &bits, sizeof(bits));
	}
}

static uint32_t hd_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

/* The GPU's encode of a random buffer against the CPU's, then its decode
 * of the CPU's encoding against the CPU's decode: bit for bit. */
static void hd_case(float *d, void *stream, uint32_t block, uint32_t stride, size_t groups)
{
	size_t n = (size_t)block * stride, count = n * groups, bytes = count * sizeof(float);
	float *want = malloc(bytes), *got = malloc(bytes);

	REQUIRE(bytes <= HD_CASE_MAX && want && got, "case of %zu bytes", bytes);
	hd_fill(want, count, SEED ^ (uint64_t)block << 20 ^ stride ^ (uint64_t)groups << 40);
	for (int dec = 0; dec < 2; dec++) {
		const char *what = dec ? "decode" : "encode";
		size_t differ = 0, first = 0;
		int rc;

		REQUIRE(gpu_htod(d, want, bytes) == 0, "cudaMemcpy: %s", gpu_last_error());
		rc = dec ? uroce_hadamard_decode_cuda(d, count, block, stride, stream)
		         : uroce_hadamard_encode_cuda(d, count, block, stride, stream);
		REQUIRE(rc == 0, "%s_cuda block %u stride %u: %d %s", what, block, stride, rc, uroce_last_error());
		REQUIRE(gpu_stream_sync(stream) == 0, "the %s kernels: %s", what, gpu_last_error());
		REQUIRE(gpu_dtoh(got, d, bytes) == 0, "cudaMemcpy: %s", gpu_last_error());
		rc = dec ? uroce_hadamard_decode(want, count, block, stride)
		         : uroce_hadamard_encode(want, count, block, stride);
		REQUIRE(rc == 0, "the CPU's %s: %s", what, uroce_last_error());
		for (size_t i = count; i-- > 0;)
			if (memcmp(&got[i], &want[i], sizeof(float))) {
				differ++;
				first = i;
			}
		printf("gpu_check: hadamard %s block %u stride %u, %zu floats (group %s the tile)%s: "
		       "%zu differ from the CPU\n",
		       what, block, stride, count, n < HD_TILE ? "under" : n > HD_TILE ? "over" : "as",
		       stream ? "" : ", default stream", differ);
		CHECK(differ == 0, "%s block %u stride %u: %zu of %zu floats differ, the first [%zu]: GPU %a (%08x), CPU %a (%08x)",
		      what, block, stride, differ, count, first, (double)got[first], hd_bits(got[first]),
		      (double)want[first], hd_bits(want[first]));
	}
	free(want);
	free(got);
}

struct hd_thread {
	float *d;
	int rc;
	char why[512];
};

/* a new thread: no context is current on it */
static void *hd_no_context(void *arg)
{
	struct hd_thread *t = arg;

	t->rc = uroce_hadamard_encode_cuda(t->d, 64, 8, 2, NULL);
	snprintf(t->why, sizeof(t->why), "%s", uroce_last_error());
	return NULL;
}

static void hd_refusals(float *d)
{
	static const struct {
		size_t count;
		uint32_t block, stride;
		bool null;
		const char *why;
	} bad[] = {
		{ 64, 3, 2, false, "block 3; accepted a power of two" },
		{ 64, 1, 2, false, "block 1; accepted" },
		{ 64, 8, 0, false, "stride 0; accepted a power of two" },
		{ 64, 8, 6, false, "stride 6; accepted" },
		{ 1u << 30, 1u << 24, 65536, false, "is past" },
		{ 60, 8, 2, false, "count 60 floats is not a multiple" },
		{ 64, 8, 2, true, "buf is NULL" },
	};
	struct hd_thread t = { .d = d };
	pthread_t th;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (int dec = 0; dec < 2; dec++) {
			float *p = bad[i].null ? NULL : d;
			int rc = dec ? uroce_hadamard_decode_cuda(p, bad[i].count, bad[i].block, bad[i].stride, NULL)
			             : uroce_hadamard_encode_cuda(p, bad[i].count, bad[i].block, bad[i].stride, NULL);
			const char *fn = dec ? "uroce_hadamard_decode_cuda: " : "uroce_hadamard_encode_cuda: ";

			CHECK(rc == -EINVAL && !strncmp(uroce_last_error(), fn, strlen(fn)) &&
			          strstr(uroce_last_error(), bad[i].why),
			      "%s%zu floats block %u stride %u: %d '%s'", fn, bad[i].count, bad[i].block, bad[i].stride, rc,
			      uroce_last_error());
		}
	CHECK(uroce_hadamard_encode_cuda(NULL, 0, 8, 2, NULL) == 0 && uroce_hadamard_decode_cuda(NULL, 0, 8, 2, NULL) == 0,
	      "count 0: %s", uroce_last_error());
	REQUIRE(pthread_create(&th, NULL, hd_no_context, &t) == 0 && pthread_join(th, NULL) == 0, "pthread");
	CHECK(t.rc == -ENODEV && strstr(t.why, "no CUDA context is current"), "no current context: %d '%s'", t.rc,
	      t.why);
	printf("gpu_check: hadamard argument errors -EINVAL, no current context -ENODEV (%s)\n", t.why);
}

/* ns a float of encode on the GPU against a device-to-device copy */
static void hd_time_gpu(void *stream, uint32_t block, uint32_t stride)
{
	size_t count = HD_GPU_BYTES / sizeof(float);
	void *a, *b, *e0 = gpu_event_create(), *e1 = gpu_event_create();
	float ms_hd, ms_copy;

	REQUIRE(e0 && e1 && gpu_alloc(&a, HD_GPU_BYTES) == 0 && gpu_alloc(&b, HD_GPU_BYTES) == 0, "cuda: %s",
	        gpu_last_error());
	REQUIRE(gpu_fill(a, HD_GPU_BYTES, SEED) == 0, "fill: %s", gpu_last_error());
	/* the first call loads the module; timed from the second */
	REQUIRE(uroce_hadamard_encode_cuda(a, count, block, stride, stream) == 0 && gpu_stream_sync(stream) == 0,
	        "encode: %s %s", uroce_last_error(), gpu_last_error());
	REQUIRE(gpu_event_record(e0, stream) == 0, "event: %s", gpu_last_error());
	for (int r = 0; r < HD_GPU_REPS; r++)
		REQUIRE(uroce_hadamard_encode_cuda(a, count, block, stride, stream) == 0, "encode: %s", uroce_last_error());
	REQUIRE(gpu_event_record(e1, stream) == 0 && (ms_hd = gpu_event_ms(e0, e1)) >= 0, "event: %s",
	        gpu_last_error());
	REQUIRE(gpu_dtod_async(b, a, HD_GPU_BYTES, stream) == 0 && gpu_stream_sync(stream) == 0, "copy: %s",
	        gpu_last_error());
	REQUIRE(gpu_event_record(e0, stream) == 0, "event: %s", gpu_last_error());
	for (int r = 0; r < HD_GPU_REPS; r++)
		REQUIRE(gpu_dtod_async(b, a, HD_GPU_BYTES, stream) == 0, "copy: %s", gpu_last_error());
	REQUIRE(gpu_event_record(e1, stream) == 0 && (ms_copy = gpu_event_ms(e0, e1)) >= 0, "event: %s",
	        gpu_last_error());
	printf("gpu_check: hadamard GPU encode block %u stride %u, %u MiB: %.4f ns a float; "
	       "cudaMemcpyAsync D2D %.4f ns a float; %.2fx the copy\n",
	       block, stride, HD_GPU_BYTES >> 20, ms_hd * 1e6 / HD_GPU_REPS / (double)count,
	       ms_copy * 1e6 / HD_GPU_REPS / (double)count, ms_copy > 0 ? ms_hd / ms_copy : 0.0);
	gpu_event_destroy(e0);
	gpu_event_destroy(e1);
	gpu_free(a);
	gpu_free(b);
}

static double hd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ns a float of the CPU's encode against memcpy */
static void hd_time_cpu(uint32_t block, uint32_t stride)
{
	size_t count = HD_CPU_BYTES / sizeof(float);
	float *a = malloc(HD_CPU_BYTES), *b = malloc(HD_CPU_BYTES);
	volatile float sink;
	double t, hd, copy;

	REQUIRE(a && b, "out of memory");
	hd_fill(a, count, SEED);
	memcpy(b, a, HD_CPU_BYTES); /* both touched before timing */
	t = hd_now();
	for (int r = 0; r < HD_CPU_REPS; r++)
		REQUIRE(uroce_hadamard_encode(a, count, block, stride) == 0, "encode: %s", uroce_last_error());
	hd = hd_now() - t;
	t = hd_now();
	for (int r = 0; r < HD_CPU_REPS; r++)
		memcpy(b, a, HD_CPU_BYTES);
	copy = hd_now() - t;
	sink = b[count / 2];
	(void)sink;
	printf("gpu_check: hadamard CPU encode block %u stride %u, %u MiB: %.4f ns a float; memcpy %.4f ns a float; "
	       "%.2fx the copy%s\n",
	       block, stride, HD_CPU_BYTES >> 20, hd * 1e9 / HD_CPU_REPS / (double)count,
	       copy * 1e9 / HD_CPU_REPS / (double)count, copy > 0 ? hd / copy : 0.0,
#if defined(__SANITIZE_ADDRESS__)
	       " (an ASan build: the CPU's times are not its speed)"
#else
	       ""
#endif
	);
	free(a);
	free(b);
}

static void hd_checks(void)
{
	/* block x stride: groups under, at and over the tile; strides at and
	 * past it (no shared-memory stage), the largest block and stride */
	static const struct {
		uint32_t block, stride;
		size_t groups;
	} cases[] = {
		{ 2, 1, 6145 },  { 4, 2, 1000 },   { 8, 8, 700 },     { 256, 1, 100 },  { 256, 8, 9 },
		{ 2, 2048, 5 },  { 1024, 4, 3 },   { 4096, 1, 5 },    { 4096, 2, 3 },   { 2, 1024, 7 },
		{ 8, 1024, 3 },  { 256, 256, 2 },  { 4096, 1024, 2 }, { 2, 8192, 3 },   { 4, 4096, 2 },
		{ 4, 65536, 2 }, { 65536, 1, 3 },  { 65536, 2, 1 },   { 65536, 8, 1 },  { 1u << 24, 1, 1 },
	};
	void *stream = gpu_stream_create();
	void *d;

	printf("gpu_check: hadamard on %s\n", gpu_name());
	REQUIRE(stream && gpu_alloc(&d, HD_CASE_MAX) == 0, "cuda: %s", gpu_last_error());
	hd_refusals(d);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		hd_case(d, stream, cases[i].block, cases[i].stride, cases[i].groups);
	hd_case(d, NULL, 256, 8, 3); /* the default stream */
	gpu_free(d);
	hd_time_gpu(stream, 4096, 1024);
	hd_time_gpu(stream, 65536, 1);
	hd_time_cpu(4096, 1024);
	hd_time_cpu(65536, 1);
	gpu_stream_destroy(stream);
}

int main(int argc, char **argv)
{
	size_t len = argc > 1 ? strtoull(argv[1], NULL, 0) : (8u << 20);
	struct uroce_gpu_stage *sa, *sb;
	struct uroce_mr *mr = NULL;
	struct uroce_send_wr wr = { 0 };
	struct uroce_sge sg;
	struct uroce_wc wc;
	struct tr_pair p;
	struct tr_opts o;
	void *src, *dst;
	long long bad;

	printf("gpu_check: backend %s (%s), %zu bytes\n", uroce_gpu_backend(), uroce_gpu_backend_why(), len);
	REQUIRE(!strcmp(uroce_gpu_backend(), "cuda"), "no CUDA backend: %s", uroce_gpu_backend_why());
	REQUIRE(gpu_alloc(&src, len) == 0 && gpu_alloc(&dst, len) == 0, "cudaMalloc: %s", gpu_last_error());
	REQUIRE(gpu_fill(src, len, SEED) == 0, "fill: %s", gpu_last_error());
	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 7, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	CHECK(uroce_mr_reg_gpu(a->pd, src, len, o.mr_access, &mr) == -EOPNOTSUPP &&
	      strstr(uroce_last_error(), "is CUDA device memory"), "device memory on a CPU port: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_create(a->pd, len, o.mr_access, &sa) == 0, "stage: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_create(b->pd, len, o.mr_access, &sb) == 0, "stage: %s", uroce_last_error());
	REQUIRE(uroce_gpu_stage_in(sa, 0, src, len) == 0, "stage in: %s", uroce_last_error());
	sg = (struct uroce_sge){ (uintptr_t)uroce_gpu_stage_mr(sa)->addr, (uint32_t)len, uroce_gpu_stage_mr(sa)->lkey };
	tr_wr(&wr, 1, &sg, UROCE_WR_RDMA_WRITE);
	wr.wr.rdma.remote_addr = (uintptr_t)uroce_gpu_stage_mr(sb)->addr;
	wr.wr.rdma.rkey = uroce_gpu_stage_mr(sb)->rkey;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	REQUIRE(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_SUCCESS, "write: %s",
	        uroce_wc_status_str(wc.status));
	REQUIRE(uroce_gpu_stage_out(sb, 0, dst, len) == 0, "stage out: %s", uroce_last_error());
	bad = gpu_count_bad(dst, len, SEED);
	CHECK(bad == 0, "%lld of %zu bytes differ in the peer's GPU buffer (-1: CUDA error %s)", bad, len,
	      gpu_last_error());
	printf("gpu_check: %zu bytes GPU -> stage -> RDMA WRITE -> stage -> GPU, %lld differ\n", len, bad);
	CHECK(uroce_gpu_stage_destroy(sa) == 0 && uroce_gpu_stage_destroy(sb) == 0, "destroy");
	tr_close(&p);
	gpu_free(src);
	gpu_free(dst);
	hd_checks();
	return test_done("gpu_check");
}
