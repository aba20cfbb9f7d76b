/* SPDX-License-Identifier: MIT */
/* IMMCOUNTER's table of the context (immcounter.c). */
#ifndef UROCE_TRANSPORT_CORE_IMMCOUNTER_H
#define UROCE_TRANSPORT_CORE_IMMCOUNTER_H

#include <stdint.h>
#include "transport/core/qp_internal.h"

int imm_table_init(struct uroce_context *ctx);
void imm_table_fini(struct uroce_context *ctx);
/* A counted WRITE_WITH_IMM message with immediate imm (network order)
 * arrived whole: count it, fire what it completes. Engine thread. */
void imm_count(struct uroce_context *ctx, uint32_t imm);

#endif /* UROCE_TRANSPORT_CORE_IMMCOUNTER_H */
