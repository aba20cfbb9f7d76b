/* SPDX-License-Identifier: MIT */
/* What other modes take from sr: the rel_ops hooks ec shares with it (ec
 * is sr whose messages also carry coded submessages, set apart by
 * sr_init_common's ec flag, so only its init and default state size
 * differ), and the post-time checks of a message sent as self-contained
 * WRITEs (sr, ec, be). */
#ifndef UROCE_SR_OPS_H
#define UROCE_SR_OPS_H

#include <errno.h>

#include "transport/core/qp_internal.h"
#include "transport/rel/sr/rel_sr.h"

#define SR_REL_OPS_SHARED                  \
	.flags = REL_F_SPRAYS,             \
	.fini = sr_fini,                   \
	.ready = sr_ready,                 \
	.post = sr_post,                   \
	.tx = sr_tx,                       \
	.rx_data = sr_rx_data,             \
	.rx_ctrl = sr_rx_ctrl,             \
	.is_ctrl = sr_is_ctrl,             \
	.timer = sr_timer,                 \
	.complete = qp_complete_swqe,      \
	.error = sr_error,                 \
	.reset = sr_reset,                 \
	.state_bytes = sr_state_bytes,     \
	.rx_wants_kick = sr_rx_wants_kick, \
	.stats = sr_pc_stats,              \
	.path_stats = sr_pc_path_stats,    \
	.cnp = sr_pc_cnp,                  \
	.fo_switch = sr_fo_switch,         \
	.fo_idle = sr_fo_idle,             \
	.precv_end = precv_finish

/* rel_<mode>_ops of sr (is_ec false) or ec (true): they differ only by the
 * flag their init and default state size pass on. */
#define SR_REL_OPS_DEFINE(mode, is_ec)					\
	static int mode##_init(struct uroce_qp *qp)			\
	{								\
		return sr_init_common(qp, is_ec);			\
	}								\
	static size_t mode##_default_bytes(void)			\
	{								\
		return sr_default_state_bytes(is_ec, 4096);		\
	}								\
	const struct rel_ops rel_##mode##_ops = {			\
		.name = #mode,						\
		.init = mode##_init,					\
		.default_state_bytes = mode##_default_bytes,		\
		SR_REL_OPS_SHARED,					\
	}

/* A SEND or WRITE (with or without immediate) of at most SR_MAX_MSG_PKTS
 * packets; rel names the mode in the error. Local WRs are the caller's. */
static inline int sr_post_check(const struct uroce_send_wr *wr, uint32_t length, uint32_t mtu, const char *rel)
{
	switch (wr->opcode) {
	case UROCE_WR_SEND:
	case UROCE_WR_SEND_WITH_IMM:
	case UROCE_WR_RDMA_WRITE:
	case UROCE_WR_RDMA_WRITE_WITH_IMM:
		break;
	default:
		return uroce_fail(-EINVAL, "uroce_post_send: opcode %d on a QP with reliability %s; accepted SEND, "
		                           "SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, BIND_MW, LOCAL_INV (READ and atomics need rc)",
		                  (int)wr->opcode, rel);
	}
	if (npkts(length, mtu) > SR_MAX_MSG_PKTS)
		return uroce_fail(-EINVAL, "uroce_post_send: %u bytes is %u packets at MTU %u; reliability %s carries "
		                           "at most %u packets a message", length, npkts(length, mtu), mtu, rel,
		                  SR_MAX_MSG_PKTS);
	return 0;
}

#endif
