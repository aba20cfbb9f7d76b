/* SPDX-License-Identifier: MIT */
/* No congestion control: the reliability window alone limits a QP. */
#include "transport/cc/cc.h"

static void none_init(void *s, const struct cc_env *env, uint64_t now)
{
	(void)s;
	(void)env;
	(void)now;
}

static uint64_t none_window(const void *s)
{
	(void)s;
	return UINT64_MAX;
}

const struct cc_ops cc_none_ops = {
	.name = "none",
	.id = UROCE_CC_NONE,
	.state_bytes = 0,
	.init = none_init,
	.on_ack = cc_ignore_ack,
	.on_loss = cc_ignore_loss,
	.window = none_window,
};
