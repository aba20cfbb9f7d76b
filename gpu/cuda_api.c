/* SPDX-License-Identifier: MIT */
/* dlopen of the CUDA driver: the symbols uroce uses, by the versioned names
 * the driver exports (cuda.h maps cuMemcpyHtoD to cuMemcpyHtoD_v2 etc.). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "gpu/cuda_api.h"

static struct cuda_api api;
static const struct cuda_api *loaded;
static char why[256] = "not loaded yet";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *sym(void *h, const char *name, bool *ok)
{
	void *p = dlsym(h, name);

	if (!p && *ok) {
		snprintf(why, sizeof(why), "libcuda.so.1 has no %s (a driver older than CUDA 11.7?)", name);
		*ok = false;
	}
	return p;
}

static void load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	bool ok = true;
	cu_result r;

	if (!h) {
		snprintf(why, sizeof(why), "no CUDA driver (dlopen libcuda.so.1: %s)", dlerror());
		return;
	}
	*(void **)&api.init = sym(h, "cuInit", &ok);
	*(void **)&api.pointer_get_attribute = sym(h, "cuPointerGetAttribute", &ok);
	*(void **)&api.mem_get_handle_for_address_range = sym(h, "cuMemGetHandleForAddressRange", &ok);
	*(void **)&api.memcpy_htod = sym(h, "cuMemcpyHtoD_v2", &ok);
	*(void **)&api.memcpy_dtoh = sym(h, "cuMemcpyDtoH_v2", &ok);
	*(void **)&api.mem_host_alloc = sym(h, "cuMemHostAlloc", &ok);
	*(void **)&api.mem_free_host = sym(h, "cuMemFreeHost", &ok);
	*(void **)&api.get_error_string = sym(h, "cuGetErrorString", &ok);
	*(void **)&api.ctx_get_current = sym(h, "cuCtxGetCurrent", &ok);
	*(void **)&api.ctx_get_id = dlsym(h, "cuCtxGetId"); /* optional */
	*(void **)&api.module_load_data = sym(h, "cuModuleLoadData", &ok);
	*(void **)&api.module_get_function = sym(h, "cuModuleGetFunction", &ok);
	/* the legacy default stream for NULL (not cuLaunchKernel_ptsz) */
	*(void **)&api.launch_kernel = sym(h, "cuLaunchKernel", &ok);
	if (!ok)
		return; /* the handle stays open: harmless, and dlclose of a driver is not */
	r = api.init(0);
	if (r) {
		snprintf(why, sizeof(why), "cuInit failed (CUresult %d): no usable GPU", r);
		return;
	}
	snprintf(why, sizeof(why), "loaded");
	loaded = &api;
}

const struct cuda_api *cuda_api(void)
{
	pthread_once(&once, load);
	return loaded;
}

const char *cuda_api_why(void)
{
	pthread_once(&once, load);
	return why;
}

bool cuda_is_device_ptr(const void *ptr)
{
	const struct cuda_api *a = cuda_api();
	unsigned type = 0;

	/* a host pointer the driver never saw: CUDA_ERROR_INVALID_VALUE */
	return a && !a->pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (cu_deviceptr)(uintptr_t)ptr) &&
	       type == CU_MEMORYTYPE_DEVICE;
}

const char *cuda_err(cu_result r)
{
	const char *s = NULL;

	if (loaded && loaded->get_error_string && !loaded->get_error_string(r, &s) && s)
		return s;
	return "unknown CUDA error";
}
