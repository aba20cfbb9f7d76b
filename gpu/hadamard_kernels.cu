/* SPDX-License-Identifier: MIT */
// The kernels of uroce_hadamard_*_cuda (gpu/hadamard_cuda.c), compiled to
// PTX and embedded in liburoce, loaded through the driver at run time.
// A group's transform is the butterflies of distance h = stride .. n/2 in
// ascending order, the scale after the last (gpu/hadamard.h). Every float
// goes through the same additions and multiplications, in the same order,
// as on the CPU (gpu/hadamard.c): __fadd_rn / __fsub_rn / __fmul_rn are
// never fused into an FMA, whatever -fmad says, so the bits agree.
//
// hd_tile runs the stages shorter than a tile in shared memory; the longer
// ones (h >= HD_TILE, n > HD_TILE) go through hd_stagesK, K stages a pass
// with the 2^K floats of a thread in registers.

// Floats of a tile (16 KiB): keep in step with hadamard_cuda.c.
#define HD_TILE 4096u
#define HD_TILE_THREADS 512u
#define HD_STAGE_THREADS 256u

// (a, b) <- (a + b, a - b), each times s on the group's last stage: two
// roundings, as the CPU's (a + b) * s with -ffp-contract=off.
__device__ static __forceinline__ void bfly(float &a, float &b, bool scale, float s)
{
	float p = __fadd_rn(a, b), q = __fsub_rn(a, b);

	if (scale) {
		p = __fmul_rn(p, s);
		q = __fmul_rn(q, s);
	}
	a = p;
	b = q;
}

// Stages h = h0, 2 h0, ... below hend of every aligned tile of HD_TILE
// floats (the last one shorter: count is a multiple of the group size n,
// and hend = min(n, HD_TILE), so a pair never leaves its tile or group).
// scale: hend is n, so the stage hend/2 is the group's last.
extern "C" __global__ void __launch_bounds__(HD_TILE_THREADS)
hd_tile(float *buf, unsigned long long count, unsigned int h0, unsigned int hend, float s, int scale)
{
	__shared__ float sh[HD_TILE];

	// the tile loop's bound is the same for all threads of a block, so
	// every one of them reaches each __syncthreads()
	for (unsigned long long base = (unsigned long long)blockIdx.x * HD_TILE; base < count;
	     base += (unsigned long long)gridDim.x * HD_TILE) {
		unsigned int len = count - base < HD_TILE ? (unsigned int)(count - base) : HD_TILE;
		float *x = buf + base;

		for (unsigned int k = threadIdx.x; k < len; k += blockDim.x)
			sh[k] = x[k];
		__syncthreads();
		for (unsigned int h = h0; h < hend; h *= 2) {
			bool last = scale && 2 * h == hend;

			// pair p: i has bit h clear, its other bits those of p
			for (unsigned int p = threadIdx.x; p < len / 2; p += blockDim.x) {
				unsigned int i = ((p & ~(h - 1)) << 1) | (p & (h - 1));

				bfly(sh[i], sh[i + h], last, s);
			}
			__syncthreads();
		}
		for (unsigned int k = threadIdx.x; k < len; k += blockDim.x)
			x[k] = sh[k];
		__syncthreads(); // the next tile overwrites sh
	}
}

// Stages h, 2h, .., 2^(K-1) h (h = 2^lh) over the whole buffer: thread t
// owns the 2^K floats i0 + j h, j < 2^K, whose bits lh .. lh+K-1 are those
// of j, and runs the K stages on them in order. The groups need no offset:
// each is a multiple of 2^K h floats, so the pairs stay inside it. scale:
// the stage 2^(K-1) h is the group's last.
template <int K>
__device__ static __forceinline__ void stages(float *buf, unsigned long long count, unsigned int lh, float s,
                                              int scale)
{
	const unsigned long long h = 1ull << lh, m = h - 1, threads = count >> K;

	for (unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; t < threads;
	     t += (unsigned long long)gridDim.x * blockDim.x) {
		float *x = buf + (((t & ~m) << K) | (t & m));
		float v[1 << K];

#pragma unroll
		for (int j = 0; j < (1 << K); j++)
			v[j] = x[j * h];
#pragma unroll
		for (int l = 0; l < K; l++)
#pragma unroll
			for (int j = 0; j < (1 << K); j++)
				if (!(j & (1 << l)))
					bfly(v[j], v[j | 1 << l], scale && l == K - 1, s);
#pragma unroll
		for (int j = 0; j < (1 << K); j++)
			x[j * h] = v[j];
	}
}

#define HD_STAGES(K)                                                                                       \
	extern "C" __global__ void __launch_bounds__(HD_STAGE_THREADS)                                     \
	hd_stages##K(float *buf, unsigned long long count, unsigned int lh, float s, int scale)            \
	{                                                                                                  \
		stages<K>(buf, count, lh, s, scale);                                                       \
	}

HD_STAGES(1)
HD_STAGES(2)
HD_STAGES(3)
HD_STAGES(4)
