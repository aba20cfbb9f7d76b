/* SPDX-License-Identifier: MIT */
/* be: best effort with bounded completion (OptiNIC). Its per-QP state is
 * this struct and nothing else: the receive WR being filled lives in the
 * QP's cur_rwqe (as rc's does), the send side in the send queue. */
#ifndef UROCE_TRANSPORT_REL_BE_H
#define UROCE_TRANSPORT_REL_BE_H

#include "transport/core/qp_internal.h"
#include "transport/rel/sr/sr_wire.h"

#define BE_TIMEOUT_DEFAULT_US 1000u
#define BE_TIMEOUT_MAX_US 60000000u     /* a minute: a longer deadline is no bound */
#define BE_MSG_HALF (1u << (SRW_MSG_BITS - 1)) /* a message number this far back is late, not new */
#define BE_DUP_WIN 32u                  /* PSNs behind the highest checked for duplicates; older ones are late */
#define BE_PSN_AHEAD (1u << 14)         /* a PSN further ahead of the highest is not the peer's (forged or stale):
                                         * the packets a loss burst may take, so that a blind forger must try
                                         * 2^24 / 2^14 PSNs */
/* a message number further ahead of the active one is not the peer's: it
 * would preempt every receive up to it. A sender whose messages were all
 * lost meanwhile is met again as the receiver's deadlines move it on. */
#define BE_MSG_AHEAD 64u
/* the sender says its next PSN (SYNC, token-checked) before every PSN
 * that is a multiple of this: a receiver that lost more than BE_PSN_AHEAD in a row (a link
 * down for a while) refuses every later packet until it hears one */
#define BE_SYNC_PKTS 1024u

/* be_state.flags */
enum {
	BE_F_DESC = 1,   /* the active message's descriptor arrived */
	BE_F_LEN = 2,    /* its length is known */
	BE_F_WRITE = 4,  /* it is a WRITE with immediate (rkey is its key) */
	BE_F_ERR = 8,    /* a packet did not fit the receive buffer */
	BE_F_DESC1 = 16, /* sender: the descriptor before the data went out */
	BE_F_DESC2 = 32, /* sender: ... and the one before the last packet */
	BE_F_TAIL = 64,  /* sender: the last packet went out, its copy not yet */
	BE_F_KEYED = 128, /* a packet was placed under rkey: only then is it this message's key */
};

struct be_state {
	/* receiver: the one active message (OptiNIC's wqe_seq) */
	uint32_t cur;          /* its number: older ones are late, a newer one preempts it */
	uint32_t placed;       /* bytes placed */
	uint32_t len;          /* its length (BE_F_LEN) */
	uint32_t imm;          /* the WR's immediate, from the descriptor (network order) */
	uint32_t rkey;         /* WRITE with immediate: its key, revoked if it ends early (BE_F_KEYED) */
	uint32_t psn_hi;       /* highest PSN that arrived */
	uint32_t seen;         /* bit i: PSN psn_hi - i arrived (a network duplicate is dropped at once) */
	uint32_t psn_gap;      /* PSNs in (psn_gap, psn_hi - BE_DUP_WIN] were jumped over, never seen: one
	                        * is taken (in increasing order), so a jump ahead (a loss burst, or one
	                        * forged packet inside the window) does not make the peer's next packets late */
	uint32_t start_us;     /* when its receive WR became the oldest (clock, us): its deadline counts from here */
	uint32_t next_idx;     /* packets come in index order: below this is a copy, never counted twice */
	uint8_t op;            /* enum uroce_wr_opcode */
	uint8_t flags;
	/* sender */
	uint16_t ctrl_psn;     /* PSN of the next control packet (votes, SYNC) */
	uint32_t msg_post;     /* next message number (poster's thread) */
	uint32_t timeout_us;   /* the QP's deadline for WRs that name none */
};

static inline struct be_state *be_of(const struct uroce_qp *qp)
{
	return qp->rel_state;
}

/* Send a control packet (SEND Only to the peer's control QPN). */
int be_send_ctrl(struct uroce_qp *qp, const uint8_t *body, uint32_t len);

/* tmo.c: a VOTE arrived on qp's control QPN. */
void tmo_rx_vote(struct uroce_qp *qp, const uint8_t *body, uint32_t len);

#endif /* UROCE_TRANSPORT_REL_BE_H */
