/* SPDX-License-Identifier: MIT */
/* The checks an arriving packet passes before a policy sees it
 * (rx_check.c), and the two a policy asks for itself. */
#ifndef UROCE_TRANSPORT_CORE_RX_CHECK_H
#define UROCE_TRANSPORT_CORE_RX_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include "transport/core/qp_internal.h"

/* The destination address is a connected QP's own source GID, or for
 * datagrams and unknown QPNs one of the arrival port's GIDs. */
bool rx_check_dst(struct uroce_context *ctx, unsigned port, const struct uroce_qp *qp, const struct roce_pkt *pkt);
/* P_Key, and for RC/UC the QP's state and the source being its remote GID. */
bool rx_check_conn(struct uroce_qp *qp, const struct roce_pkt *pkt);
/* sr and be: a packet may write [va, va+len) through rkey (QP and key
 * allow REMOTE_WRITE, bounds); otherwise counted by reason, NULL. */
struct mr_int *rx_check_write(struct uroce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len);
/* The same on a NIC's context, by the NIC's keys: for what the NIC did not
 * place itself (sr's data sent by a failover backup as SENDs). */
struct mr_int *rx_check_write_nic(struct uroce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len);
/* A response PSN lies in [oldest unacknowledged, highest sent]. */
bool rx_response_in_window(struct uroce_qp *qp, uint32_t psn);

#endif /* UROCE_TRANSPORT_CORE_RX_CHECK_H */
