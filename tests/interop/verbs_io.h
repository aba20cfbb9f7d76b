/* SPDX-License-Identifier: MIT */
/* What the interop programs that run on rxe in a guest (libibverbs) share:
 * opening a device by name and releasing what they created. Plain C plus
 * <infiniband/verbs.h>, built with `cc prog.c -libverbs` (the include
 * resolves beside the source). */
#ifndef UROCE_TESTS_INTEROP_VERBS_IO_H
#define UROCE_TESTS_INTEROP_VERBS_IO_H

#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

/* The device called name, or the first one when name is NULL; NULL when
 * there is none. */
static inline struct ibv_context *vio_open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	if (list) ibv_free_device_list(list);
	return ctx;
}

/* Destroys what is not NULL, in the order verbs wants, and frees buf. */
static inline void vio_release(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_mr *mr, struct ibv_cq *cq,
			       struct ibv_srq *srq, struct ibv_qp *qp, void *buf)
{
	if (qp) ibv_destroy_qp(qp);
	if (srq) ibv_destroy_srq(srq);
	if (cq) ibv_destroy_cq(cq);
	if (mr) ibv_dereg_mr(mr);
	if (pd) ibv_dealloc_pd(pd);
	if (ctx) ibv_close_device(ctx);
	free(buf);
}

#endif /* UROCE_TESTS_INTEROP_VERBS_IO_H */
