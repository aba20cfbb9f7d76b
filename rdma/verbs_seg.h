/* SPDX-License-Identifier: MIT */
/* sr's segments on a NIC (verbs_seg.c): a QP's UC pool, control and data
 * QPs, their CQ and bounce buffers. Reached through verbs_nic_ops. */
#ifndef UROCE_RDMA_VERBS_SEG_H
#define UROCE_RDMA_VERBS_SEG_H

#include <infiniband/verbs.h>

#include "rdma/verbs_port.h"
#include "transport/core/qp_internal.h"

struct seg;

/* uroce's address vector as the device's (its GID index mapped); 0 or
 * -EINVAL with the reason, prefixed by fn, in uroce_last_error
 * (verbs_nic.c). */
int verbs_nic_ah(const struct verbs_port *vp, const struct uroce_ah_attr *a, struct ibv_ah_attr *o, const char *fn);

int verbs_seg_create(struct uroce_qp *qp, unsigned npaths);
void verbs_seg_destroy(struct uroce_qp *qp);
int verbs_seg_connect(struct uroce_qp *qp);
int verbs_seg_port_nums(const struct uroce_qp *qp, unsigned port, uint32_t *qpn, uint32_t *ctrl_qpn);
int verbs_seg_post(struct uroce_qp *qp, const struct seg *s);
unsigned verbs_seg_poll(struct uroce_context *ctx);
void verbs_seg_flush(struct uroce_context *ctx);

#endif
