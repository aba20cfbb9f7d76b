/* SPDX-License-Identifier: MIT */
/* The tools' --counters option: uroce's QP and port counters (retransmits,
 * timeouts, NAKs, drops by reason) printed at exit, after the perftest /
 * rdma-core output, which stays unchanged without the option. */
#ifndef UROCE_APPS_APP_COUNTERS_H
#define UROCE_APPS_APP_COUNTERS_H

#include <stdio.h>

#include <uroce/uroce.h>

/* Two lines, "uroce counters: qp k=v ..." (the QPs' counters summed) and
 * "uroce counters: port N k=v ... drops=TOTAL [reason=n ...]" (drop
 * reasons with a nonzero count only). NULL QPs are skipped. */
void app_counters_print(FILE *f, struct uroce_qp *const *qps, int nqps, struct uroce_context *ctx,
			uint8_t port_num);

/* Each port's note (uroce_port_attr.note): what it could not do as asked,
 * one "uroce port N: ..." line per port that has one. */
void app_port_notes(FILE *f, struct uroce_context *ctx);

#endif
