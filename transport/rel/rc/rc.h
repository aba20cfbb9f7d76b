/* SPDX-License-Identifier: MIT */
/* rc's parts (rel_rc.c, rc_requester.c, rc_responder.c, rc_completer.c,
 * rc_credit.c): what they call of each other. Included by them (and their
 * unit tests) only. */
#ifndef UROCE_TRANSPORT_REL_RC_H
#define UROCE_TRANSPORT_REL_RC_H

#include <stdbool.h>
#include <stdint.h>
#include "transport/core/qp_internal.h"

/* --- limits ---------------------------------------------------------------- */
#define RC_WINDOW_PSNS 256u       /* unacked packets in flight per QP: keeps loop/NIC rings from overflowing */
#define RC_ACKREQ_EVERY 16u       /* ask for an ACK at least this often inside a long message */
/* READ responses a requester asks for at once: the responder sends them
 * back to back at its rate, and more than a receive ring's worth (an
 * AF_XDP ring holds at most 2048) only come back to be dropped. A larger
 * READ goes as requests of at most this many responses, aligned to its
 * start, each sent once the one before it is answered in full. */
#define RC_READ_RESP_PKTS 2048u

/* The responses a READ of len bytes has outstanding at most (one request) */
static inline uint32_t rd_req_pkts(uint32_t len, uint32_t mtu)
{
	uint32_t n = npkts(len, mtu);

	return n < RC_READ_RESP_PKTS ? n : RC_READ_RESP_PKTS;
}

/* --- RC credits (rc_credit.c) -------------------------------------------- */
uint8_t rc_credit_code(uint32_t avail);       /* AETH code for avail receive WQEs */
uint32_t rc_credit_count(uint8_t code);       /* WQEs a code stands for; 31 = UINT32_MAX */
uint8_t rc_resp_credits(struct uroce_qp *qp); /* the code this responder advertises now */
void rc_credit_update(struct uroce_qp *qp, uint32_t msn, uint8_t code); /* an ACK-type AETH arrived */
/* May the WQE at SQ index sq_index (not started yet) start now? */
bool rc_credit_may_start(struct uroce_qp *qp, uint32_t sq_index, uint8_t opcode);
void rc_credit_started(struct uroce_qp *qp, uint8_t opcode);

/* --- requester, responder, completer ------------------------------------- */
bool rc_tx(struct uroce_qp *qp);             /* the policy's transmit step (rc_requester.c) */
void rc_rx_data(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt); /* rc_responder.c */
bool resp_tx(struct uroce_qp *qp);
void comp_rx(struct uroce_qp *qp, const struct roce_pkt *pkt);
void rc_retry_timer_fn(struct wheel_timer *t, void *arg);
void rc_arm_retry(struct uroce_qp *qp);
/* A send WQE completes: READ/atomic credit back, then its CQE. */
void req_complete(struct uroce_qp *qp, struct swqe *w, enum uroce_wc_status st);
/* failover's hooks (rc_completer.c) */
unsigned rc_fo_rewind(struct uroce_qp *qp);
bool rc_fo_idle(const struct uroce_qp *qp);

#endif /* UROCE_TRANSPORT_REL_RC_H */
