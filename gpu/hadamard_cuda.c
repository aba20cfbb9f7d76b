/* SPDX-License-Identifier: MIT */
/* uroce_hadamard_*_cuda: placeholder until the kernels land. */
#include <errno.h>

#include "transport/core/qp_internal.h"
#include "gpu/hadamard.h"

int uroce_hadamard_encode_cuda(float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream)
{
	int rc = hd_check("uroce_hadamard_encode_cuda", dbuf, count, block, stride);

	(void)stream;
	return rc ? rc : uroce_fail(-ENOTSUP, "uroce_hadamard_encode_cuda: not built");
}

int uroce_hadamard_decode_cuda(float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream)
{
	int rc = hd_check("uroce_hadamard_decode_cuda", dbuf, count, block, stride);

	(void)stream;
	return rc ? rc : uroce_fail(-ENOTSUP, "uroce_hadamard_decode_cuda: not built");
}
