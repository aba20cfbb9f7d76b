/* SPDX-License-Identifier: MIT */
/* uroce_hadamard_*_cuda: the transform of gpu/hadamard.h on device memory,
 * by the kernels of hadamard_kernels.cu, whose PTX liburoce carries
 * (hadamard_kernels_ptx.c, generated) and loads through the driver
 * (cuda_api.c) into each context it is called in. The launches, queued on
 * the caller's stream, run the stages in order:
 *   hd_tile     the stages of distance below min(n, HD_TILE) in shared
 *               memory, one CUDA block per tile of HD_TILE floats;
 *   hd_stagesK  K (<= 4) further stages a pass over the whole buffer, each
 *               thread with 2^K floats in registers.
 * The pass holding the stage n/2 scales. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "uroce_config.h"
#include "transport/core/qp_internal.h"
#include "gpu/cuda_api.h"
#include "gpu/hadamard.h"

#if UROCE_HAVE_CUDA

/* As in hadamard_kernels.cu. */
#define HD_TILE 4096u
#define HD_TILE_THREADS 512u
#define HD_STAGE_THREADS 256u
#define HD_STAGES_MAX 4u
/* the kernels loop over what a grid this size does not cover */
#define HD_GRID_MAX (1u << 30)

extern const char hd_kernels_ptx[];

enum { HD_FN_TILE, HD_FN_STAGES1, HD_NFN = HD_FN_STAGES1 + HD_STAGES_MAX };

static const char *const fn_names[HD_NFN] = { "hd_tile", "hd_stages1", "hd_stages2", "hd_stages3", "hd_stages4" };

/* The module of each context it was loaded in. The id (CUDA 12's
 * cuCtxGetId) tells a new context from a destroyed one at the same
 * address; older drivers key by address only. When the table is full the
 * oldest entry is dropped without unloading: its context may be gone. */
#define HD_CTX_MAX 32

struct hd_mod {
	cu_context ctx;
	unsigned long long id;
	cu_function fn[HD_NFN];
};

static struct hd_mod mods[HD_CTX_MAX];
static unsigned nmods, oldest;
static pthread_mutex_t mods_lock = PTHREAD_MUTEX_INITIALIZER;

/* The kernels of the calling thread's current context, loaded on first use. */
static int kernels(const char *fn, const struct cuda_api *a, cu_function out[HD_NFN])
{
	struct hd_mod *m = NULL, e = { 0 };
	cu_module mod;
	cu_result r;
	int rc = 0;

	r = a->ctx_get_current(&e.ctx);
	if (r)
		return uroce_fail(-EIO, "%s: cuCtxGetCurrent: %s", fn, cuda_err(r));
	if (!e.ctx)
		return uroce_fail(-ENODEV,
		                  "%s: no CUDA context is current on this thread (make the buffer's current first: "
		                  "cudaSetDevice, or cuCtxSetCurrent)",
		                  fn);
	if (a->ctx_get_id && a->ctx_get_id(e.ctx, &e.id))
		e.id = 0;

	pthread_mutex_lock(&mods_lock);
	for (unsigned i = 0; i < nmods; i++)
		if (mods[i].ctx == e.ctx && mods[i].id == e.id) {
			m = &mods[i];
			break;
		}
	if (!m) {
		/* JIT-compiles the PTX for this GPU (the driver caches it on disk) */
		r = a->module_load_data(&mod, hd_kernels_ptx);
		if (r) {
			rc = uroce_fail(-EIO, "%s: cuModuleLoadData of the Hadamard kernels: %s", fn, cuda_err(r));
			goto out;
		}
		for (unsigned i = 0; i < HD_NFN; i++) {
			r = a->module_get_function(&e.fn[i], mod, fn_names[i]);
			if (r) {
				/* the module stays loaded: its context frees it */
				rc = uroce_fail(-EIO, "%s: cuModuleGetFunction %s: %s", fn, fn_names[i], cuda_err(r));
				goto out;
			}
		}
		if (nmods < HD_CTX_MAX) {
			m = &mods[nmods++];
		} else {
			m = &mods[oldest];
			oldest = (oldest + 1) % HD_CTX_MAX;
		}
		*m = e;
	}
	for (unsigned i = 0; i < HD_NFN; i++)
		out[i] = m->fn[i];
out:
	pthread_mutex_unlock(&mods_lock);
	return rc;
}

static unsigned grid(uint64_t units, unsigned per_block)
{
	uint64_t g = (units + per_block - 1) / per_block;

	return g > HD_GRID_MAX ? HD_GRID_MAX : (unsigned)g;
}

static int launch(const char *fn, const struct cuda_api *a, cu_function f, const char *name, unsigned blocks,
                  unsigned threads, void *stream, void **params)
{
	cu_result r = a->launch_kernel(f, blocks, 1, 1, threads, 1, 1, 0, stream, params, NULL);

	return r ? uroce_fail(-EIO, "%s: cuLaunchKernel %s (%u x %u threads): %s", fn, name, blocks, threads,
	                      cuda_err(r))
	         : 0;
}

static int hd_cuda(const char *fn, float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream)
{
	const struct cuda_api *a;
	cu_function f[HD_NFN];
	unsigned long long cnt = count;
	uint64_t n = (uint64_t)block * stride;
	unsigned ln = (unsigned)__builtin_ctzll(n), lh;
	float s = hd_scale(block);
	int rc;

	a = cuda_api();
	if (!a)
		return uroce_fail(-ENODEV, "%s: %s", fn, cuda_api_why());
	rc = kernels(fn, a, f);
	if (rc)
		return rc;

	/* the stages stride .. min(n, HD_TILE)/2, scaled when that ends the group */
	if (stride < HD_TILE) {
		unsigned h0 = stride, hend = n < HD_TILE ? (unsigned)n : HD_TILE;
		int scale = n <= HD_TILE;
		void *p[] = { &dbuf, &cnt, &h0, &hend, &s, &scale };

		rc = launch(fn, a, f[HD_FN_TILE], fn_names[HD_FN_TILE], grid(cnt, HD_TILE), HD_TILE_THREADS, stream, p);
		if (rc)
			return rc;
	}
	/* the rest, up to HD_STAGES_MAX a pass; the pass ending at n/2 scales */
	lh = (unsigned)__builtin_ctz(stride > HD_TILE ? stride : HD_TILE);
	while (lh < ln) {
		unsigned k = ln - lh < HD_STAGES_MAX ? ln - lh : HD_STAGES_MAX;
		int scale = lh + k == ln;
		void *p[] = { &dbuf, &cnt, &lh, &s, &scale };

		rc = launch(fn, a, f[HD_FN_STAGES1 + k - 1], fn_names[HD_FN_STAGES1 + k - 1], grid(cnt >> k, HD_STAGE_THREADS),
		            HD_STAGE_THREADS, stream, p);
		if (rc)
			return rc;
		lh += k;
	}
	return 0;
}

#endif /* UROCE_HAVE_CUDA */

static int run(const char *fn, float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream)
{
	int rc = hd_check(fn, dbuf, count, block, stride);

	if (rc || !count)
		return rc;
#if UROCE_HAVE_CUDA
	return hd_cuda(fn, dbuf, count, block, stride, stream);
#else
	(void)stream;
	return uroce_fail(-ENOTSUP, "%s: liburoce was built without nvcc: no Hadamard kernels", fn);
#endif
}

int uroce_hadamard_encode_cuda(float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream)
{
	return run("uroce_hadamard_encode_cuda", dbuf, count, block, stride, stream);
}

int uroce_hadamard_decode_cuda(float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream)
{
	return run("uroce_hadamard_decode_cuda", dbuf, count, block, stride, stream);
}
