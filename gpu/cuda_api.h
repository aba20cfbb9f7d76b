/* SPDX-License-Identifier: MIT */
/* The CUDA driver API, loaded at run time (dlopen("libcuda.so.1")), so that
 * liburoce neither links nor needs CUDA: without a driver every call here
 * says "no CUDA" and the CPU backend serves. Only the few types and
 * constants used are declared (values from CUDA's cuda.h). */
#ifndef UROCE_GPU_CUDA_API_H
#define UROCE_GPU_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int cu_result;                 /* CUresult: 0 = CUDA_SUCCESS */
typedef unsigned long long cu_deviceptr;
typedef void *cu_context;              /* CUcontext, CUmodule, CUfunction, CUstream: opaque handles */
typedef void *cu_module;
typedef void *cu_function;
typedef void *cu_stream;

#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
#define CU_MEMHOSTALLOC_PORTABLE 1

struct cuda_api {
	cu_result (*init)(unsigned flags);
	cu_result (*pointer_get_attribute)(void *data, int attribute, cu_deviceptr ptr);
	cu_result (*mem_get_handle_for_address_range)(void *handle, cu_deviceptr dptr, size_t size, int type,
	                                                unsigned long long flags);
	cu_result (*memcpy_htod)(cu_deviceptr dst, const void *src, size_t len);
	cu_result (*memcpy_dtoh)(void *dst, cu_deviceptr src, size_t len);
	cu_result (*mem_host_alloc)(void **p, size_t len, unsigned flags);
	cu_result (*mem_free_host)(void *p);
	cu_result (*get_error_string)(cu_result r, const char **s);
	cu_result (*ctx_get_current)(cu_context *ctx);
	/* NULL before CUDA 12.0's driver: a context's unique id */
	cu_result (*ctx_get_id)(cu_context ctx, unsigned long long *id);
	cu_result (*module_load_data)(cu_module *mod, const void *image);
	cu_result (*module_get_function)(cu_function *fn, cu_module mod, const char *name);
	cu_result (*launch_kernel)(cu_function fn, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
	                           unsigned block_y, unsigned block_z, unsigned shared_bytes, cu_stream stream,
	                           void **params, void **extra);
};

/* The driver's table, loaded once (thread-safe); NULL when libcuda.so.1
 * cannot be loaded or initialised (why in cuda_api_why()). */
const struct cuda_api *cuda_api(void);
const char *cuda_api_why(void);
/* True when ptr is CUDA device memory (needs the driver). */
bool cuda_is_device_ptr(const void *ptr);
/* "CUDA_ERROR_..." text of r. */
const char *cuda_err(cu_result r);

#endif /* UROCE_GPU_CUDA_API_H */
