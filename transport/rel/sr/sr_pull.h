/* SPDX-License-Identifier: MIT */
/* EQDS's receiver in sr and ec: one pull pacer per port (sr_pull.c). */
#ifndef UROCE_TRANSPORT_SR_PULL_H
#define UROCE_TRANSPORT_SR_PULL_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/cc/cc_eqds.h"

struct uroce_qp;

/* The receiver's side of one QP: what its peer asked for, what it granted. */
struct eqds_rx {
	uint64_t want, spec;     /* the peer's last RTS (cumulative bytes) */
	uint64_t granted;        /* credit granted so far (cumulative) */
	struct uroce_qp *next;   /* the pacer's queue of QPs still owed credit */
	bool queued;
	bool pull_due;           /* the pacer granted: a PULL leaves in the next transmit pass */
	bool pull_fan;           /* the sender asked again for what it was granted: PULLs are being lost */
	uint32_t port;
	uint64_t rate_bps;       /* the QP's link rate: its port's pacer runs at it */
	uint32_t mtu;            /* payload of a full packet: the pacer counts headers too */
};

/* Receiver: an RTS arrived (the peer wants credit up to want - spec). */
void eqds_rx_rts(struct uroce_qp *qp, struct eqds_rx *e, uint64_t want, uint64_t spec);
/* The QP leaves its port's pacer (reset, destroy). */
void eqds_rx_detach(struct uroce_qp *qp, struct eqds_rx *e);

#endif /* UROCE_TRANSPORT_SR_PULL_H */
