/* SPDX-License-Identifier: MIT */
// Device-side halves of gpu_check: fill a buffer with a pattern, and count
// the bytes that differ from it, so the check never trusts a host copy;
// and the runtime calls (copies, streams, events) of its Hadamard checks.
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

// The runtime calls of the Hadamard checks, for gpu_check.c (a C file
// built without CUDA's headers): 0 or -1 (gpu_last_error() says why).
extern "C" int gpu_htod(void *d, const void *h, size_t n)
{
	return cudaMemcpy(d, h, n, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
}

extern "C" int gpu_dtoh(void *h, const void *d, size_t n)
{
	return cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
}

extern "C" int gpu_dtod_async(void *dst, const void *src, size_t n, void *stream)
{
	return cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, (cudaStream_t)stream) == cudaSuccess ? 0 : -1;
}

extern "C" void *gpu_stream_create(void)
{
	cudaStream_t s;

	// a blocking stream: cudaMemcpy (the legacy stream) orders with it
	return cudaStreamCreate(&s) == cudaSuccess ? (void *)s : NULL;
}

extern "C" void gpu_stream_destroy(void *s)
{
	cudaStreamDestroy((cudaStream_t)s);
}

// waits for the stream; a kernel's fault comes back here
extern "C" int gpu_stream_sync(void *s)
{
	return cudaStreamSynchronize((cudaStream_t)s) == cudaSuccess ? 0 : -1;
}

extern "C" void *gpu_event_create(void)
{
	cudaEvent_t e;

	return cudaEventCreate(&e) == cudaSuccess ? (void *)e : NULL;
}

extern "C" void gpu_event_destroy(void *e)
{
	cudaEventDestroy((cudaEvent_t)e);
}

extern "C" int gpu_event_record(void *e, void *stream)
{
	return cudaEventRecord((cudaEvent_t)e, (cudaStream_t)stream) == cudaSuccess ? 0 : -1;
}

// milliseconds from a to b, once b has happened; -1 on an error
extern "C" float gpu_event_ms(void *a, void *b)
{
	float ms = -1;

	if (cudaEventSynchronize((cudaEvent_t)b) != cudaSuccess ||
	    cudaEventElapsedTime(&ms, (cudaEvent_t)a, (cudaEvent_t)b) != cudaSuccess)
		return -1;
	return ms;
}

extern "C" const char *gpu_name(void)
{
	static cudaDeviceProp p;
	int d;

	if (cudaGetDevice(&d) != cudaSuccess || cudaGetDeviceProperties(&p, d) != cudaSuccess)
		return "?";
	return p.name;
}
