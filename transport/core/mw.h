/* SPDX-License-Identifier: MIT */
/* The send WR classes, and the WRs that send nothing (mw.c): BIND_MW,
 * LOCAL_INV and remote invalidation of memory windows. */
#ifndef UROCE_TRANSPORT_CORE_MW_H
#define UROCE_TRANSPORT_CORE_MW_H

#include <stdbool.h>
#include <stdint.h>
#include "transport/core/qp_internal.h"

/* Work requests that send nothing: they take effect when the transmit
 * path reaches them. A BIND_MW WQE keeps its bind in fields no local WR
 * uses otherwise: raddr = addr, compare_add = length, swap = the window
 * (struct mw_int *), rkey = the new key, imm = mw_access_flags, ud_qkey =
 * the region's lkey; a LOCAL_INV's key is in imm. */
static inline bool wr_is_local(uint8_t op)
{
	return op == UROCE_WR_LOCAL_INV || op == UROCE_WR_BIND_MW;
}
/* READ and atomics: they hold a READ/atomic credit and wait for a response. */
static inline bool wr_is_rd(uint8_t op)
{
	return op >= UROCE_WR_RDMA_READ && op <= UROCE_WR_ATOMIC_FETCH_AND_ADD;
}
static inline bool wr_is_atomic(uint8_t op)
{
	return op == UROCE_WR_ATOMIC_CMP_AND_SWP || op == UROCE_WR_ATOMIC_FETCH_AND_ADD;
}
/* SEND and WRITE of every kind: segmented at the path MTU. */
static inline bool wr_is_data(uint8_t op)
{
	return op <= UROCE_WR_SEND_WITH_IMM || op == UROCE_WR_SEND_WITH_INV;
}
/* A WRITE in progress through a window that was revoked points here: the
 * rest of its packets are refused as rkey_revoked. */
extern struct mr_int mw_revoked;
/* The transmit path reached a BIND_MW or LOCAL_INV WQE (every WQE before
 * it started): carry it out and mark it SENT with nothing outstanding.
 * false: it failed; start nothing after it; it completes in error and
 * moves the QP to ERR once it retires (qp_local_retire). */
bool qp_local_wr(struct uroce_qp *qp, struct swqe *w);
/* w, a local WQE qp_local_wr carried out, is at the SQ's tail: complete it
 * (qp->rel->complete), sq_tail++, and if it failed move the QP to ERR.
 * false when it failed. */
bool qp_local_retire(struct uroce_qp *qp, struct swqe *w);
/* Retire every carried-out local WQE at the tail (a WQE that sends
 * nothing gets no ACK: it retires once nothing before it is outstanding). */
void qp_retire_locals(struct uroce_qp *qp);
/* Remote invalidation (SEND with Invalidate; be timeouts): revoke the
 * window rkey names, which must be bound to qp under that key. NONE, or
 * the drop reason it fails with (nothing changed then). */
enum uroce_drop_reason mw_remote_invalidate(struct uroce_qp *qp, uint32_t rkey);

#endif /* UROCE_TRANSPORT_CORE_MW_H */
