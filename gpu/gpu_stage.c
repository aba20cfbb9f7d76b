/* SPDX-License-Identifier: MIT */
/* GPU buffers for uroce: registration of CUDA device memory (a dmabuf
 * handed to the NIC, or nvidia-peermem's ibv_reg_mr), and, where the NIC
 * cannot reach GPU memory (afxdp, dpdk: the engine copies with the CPU),
 * staging buffers in pinned host memory with copies in and out (UCCL's
 * AF_XDP path). CUDA is the driver loaded at run time (cuda_api.c); without
 * it the same calls run on the CPU: "device" pointers are host pointers
 * and the copies are memcpy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/core/qp_internal.h"
#include "gpu/cuda_api.h"

struct uroce_gpu_stage {
	struct uroce_mr *mr;
	uint8_t *buf;
	size_t len;
	bool cuda_host;  /* cuMemHostAlloc'ed (else aligned_alloc'ed, mlocked if allowed) */
	bool locked;
};

const char *uroce_gpu_backend(void)
{
	return cuda_api() ? "cuda" : "cpu";
}

const char *uroce_gpu_backend_why(void)
{
	return cuda_api_why();
}

static bool peermem_loaded(void)
{
	return access("/sys/module/nvidia_peermem", F_OK) == 0;
}

int uroce_mr_reg_gpu(struct uroce_pd *pd, void *ptr, size_t length, int access, struct uroce_mr **out)
{
	const struct cuda_api *cu;
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t base, end;
	int fd = -1, rc;
	cu_result r;

	if (!pd || !ptr || !length || !out)
		return uroce_fail(-EINVAL, "uroce_mr_reg_gpu: pd, ptr, a non-zero length and out are required");
	if (!cuda_is_device_ptr(ptr))
		return uroce_mr_reg(pd, ptr, length, access, out); /* host memory (always so with the CPU backend) */
	cu = cuda_api();
	if (!pd->ctx->nic)
		return uroce_fail(-EOPNOTSUPP, "uroce_mr_reg_gpu: %p is CUDA device memory and an afxdp or dpdk "
		                                    "port moves bytes with the CPU: stage it through pinned host memory "
		                                    "(uroce_gpu_stage_create, _in, _out)", ptr);
	/* a dmabuf of the whole pages, the region starting where ptr does */
	base = (uintptr_t)ptr & ~(uintptr_t)(page - 1);
	end = ((uintptr_t)ptr + length + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
	r = cu->mem_get_handle_for_address_range(&fd, (cu_deviceptr)base, end - base,
	                                         CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (!r) {
		rc = uroce_mr_reg_dmabuf(pd, fd, (uintptr_t)ptr - base, length, (uintptr_t)ptr, access, out);
		close(fd); /* the MR holds its own reference */
		if (rc != -EOPNOTSUPP)
			return rc;
	}
	if (peermem_loaded())
		return uroce_mr_reg(pd, ptr, length, access, out); /* NCCL's fallback: ibv_reg_mr of the device pointer */
	return uroce_fail(-EOPNOTSUPP, "uroce_mr_reg_gpu: the NIC cannot reach CUDA memory %p: %s, and "
	                               "nvidia-peermem is not loaded; accepted: a NIC with dmabuf MRs, or "
	                               "modprobe nvidia-peermem, or staging (uroce_gpu_stage_create)", ptr,
	                  r ? cuda_err(r) : "no dmabuf memory regions on this device");
}

int uroce_gpu_stage_create(struct uroce_pd *pd, size_t length, int access, struct uroce_gpu_stage **out)
{
	const struct cuda_api *cu = cuda_api();
	long page = sysconf(_SC_PAGESIZE);
	struct uroce_gpu_stage *s;
	int rc;

	if (!pd || !length || !out)
		return uroce_fail(-EINVAL, "uroce_gpu_stage_create: pd, a non-zero length and out are required");
	s = calloc(1, sizeof(*s));
	if (!s)
		return uroce_fail(-ENOMEM, "uroce_gpu_stage_create: out of memory");
	s->len = length;
	if (cu && !cu->mem_host_alloc((void **)&s->buf, length, CU_MEMHOSTALLOC_PORTABLE)) {
		s->cuda_host = true; /* pinned and mapped for the GPU's copy engines */
	} else {
		s->buf = aligned_alloc((size_t)page, (length + (size_t)page - 1) & ~((size_t)page - 1));
		if (!s->buf) {
			free(s);
			return uroce_fail(-ENOMEM, "uroce_gpu_stage_create: cannot allocate %zu bytes", length);
		}
		s->locked = mlock(s->buf, length) == 0; /* best effort: RLIMIT_MEMLOCK may forbid it */
	}
	rc = uroce_mr_reg(pd, s->buf, length, access, &s->mr);
	if (rc) {
		uroce_gpu_stage_destroy(s);
		return rc;
	}
	*out = s;
	return 0;
}

int uroce_gpu_stage_destroy(struct uroce_gpu_stage *s)
{
	int rc;

	if (!s)
		return uroce_fail(-EINVAL, "uroce_gpu_stage_destroy: stage is NULL");
	if (s->mr && (rc = uroce_mr_dereg(s->mr)))
		return rc;
	if (s->cuda_host) {
		cuda_api()->mem_free_host(s->buf);
	} else {
		if (s->locked)
			munlock(s->buf, s->len);
		free(s->buf);
	}
	free(s);
	return 0;
}

struct uroce_mr *uroce_gpu_stage_mr(const struct uroce_gpu_stage *s)
{
	return s ? s->mr : NULL;
}

static int stage_range(const struct uroce_gpu_stage *s, size_t off, const void *p, size_t len, const char *fn)
{
	if (!s || (!p && len))
		return uroce_fail(-EINVAL, "%s: stage and the buffer are required", fn);
	if (off > s->len || len > s->len - off)
		return uroce_fail(-EINVAL, "%s: bytes %zu..%zu are outside the %zu-byte stage", fn, off, off + len,
		                       s->len);
	return 0;
}

int uroce_gpu_stage_in(struct uroce_gpu_stage *s, size_t off, const void *src, size_t len)
{
	int rc = stage_range(s, off, src, len, "uroce_gpu_stage_in");
	cu_result r;

	if (rc)
		return rc;
	if (cuda_is_device_ptr(src)) {
		r = cuda_api()->memcpy_dtoh(s->buf + off, (cu_deviceptr)(uintptr_t)src, len);
		if (r)
			return uroce_fail(-EIO, "uroce_gpu_stage_in: cuMemcpyDtoH of %zu bytes: %s", len, cuda_err(r));
	} else {
		memcpy(s->buf + off, src, len);
	}
	return 0;
}

int uroce_gpu_stage_out(struct uroce_gpu_stage *s, size_t off, void *dst, size_t len)
{
	int rc = stage_range(s, off, dst, len, "uroce_gpu_stage_out");
	cu_result r;

	if (rc)
		return rc;
	if (cuda_is_device_ptr(dst)) {
		r = cuda_api()->memcpy_htod((cu_deviceptr)(uintptr_t)dst, s->buf + off, len);
		if (r)
			return uroce_fail(-EIO, "uroce_gpu_stage_out: cuMemcpyHtoD of %zu bytes: %s", len, cuda_err(r));
	} else {
		memcpy(dst, s->buf + off, len);
	}
	return 0;
}
