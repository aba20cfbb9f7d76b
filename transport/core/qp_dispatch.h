/* SPDX-License-Identifier: MIT */
/* The engine's two calls into a QP (qp_dispatch.c): its transmit pass
 * and an arriving packet, checked, to the QP's policy. */
#ifndef UROCE_TRANSPORT_CORE_QP_DISPATCH_H
#define UROCE_TRANSPORT_CORE_QP_DISPATCH_H

#include <stdbool.h>
#include "transport/core/qp_internal.h"

bool qp_tx(struct uroce_qp *qp);             /* requester + responder transmit work; true = more left */
void qp_rx(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt);

#endif /* UROCE_TRANSPORT_CORE_QP_DISPATCH_H */
