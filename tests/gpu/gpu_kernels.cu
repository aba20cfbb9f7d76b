/* SPDX-License-Identifier: MIT */
// Device-side halves of gpu_check: fill a buffer with a pattern, and count
// the bytes that differ from it, so the check never trusts a host copy.
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

__device__ static uint8_t pattern(size_t i, unsigned seed)
{
	return (uint8_t)((i * 2654435761u) >> 13 ^ seed);
}

__global__ static void fill(uint8_t *d, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		d[i] = pattern(i, seed);
}

__global__ static void count_bad(const uint8_t *d, size_t n, unsigned seed, unsigned long long *bad)
{
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		if (d[i] != pattern(i, seed))
			atomicAdd(bad, 1ull);
}

extern "C" int gpu_alloc(void **p, size_t n)
{
	return cudaMalloc(p, n) == cudaSuccess && cudaMemset(*p, 0, n) == cudaSuccess ? 0 : -1;
}

extern "C" void gpu_free(void *p)
{
	cudaFree(p);
}

extern "C" int gpu_fill(void *d, size_t n, unsigned seed)
{
	fill<<<64, 256>>>((uint8_t *)d, n, seed);
	return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

// bytes of d that differ from the pattern, or -1 on a CUDA error
extern "C" long long gpu_count_bad(const void *d, size_t n, unsigned seed)
{
	unsigned long long *bad, h = 0;

	if (cudaMalloc(&bad, sizeof(*bad)) != cudaSuccess || cudaMemset(bad, 0, sizeof(*bad)) != cudaSuccess)
		return -1;
	count_bad<<<64, 256>>>((const uint8_t *)d, n, seed, bad);
	if (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpy(&h, bad, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess)
		h = ~0ull;
	cudaFree(bad);
	return h == ~0ull ? -1 : (long long)h;
}

extern "C" const char *gpu_last_error(void)
{
	return cudaGetErrorString(cudaGetLastError());
}
