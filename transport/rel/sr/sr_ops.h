/* The rel_ops hooks sr and ec share: ec is sr whose messages also carry
 * coded submessages, set apart by sr_init_common's ec flag, so only its
 * init and default state size differ (rel_sr.c, rel_ec.c). */
#ifndef UROCE_SR_OPS_H
#define UROCE_SR_OPS_H

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
	.complete = req_complete,          \
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

#endif
