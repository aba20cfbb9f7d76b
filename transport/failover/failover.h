/* SPDX-License-Identifier: MIT */
/* Failover across a port group (SHIFT): the state of one QP with backups
 * and the calls the rest of the transport makes into it (failover.c). */
#ifndef UROCE_TRANSPORT_FAILOVER_H
#define UROCE_TRANSPORT_FAILOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/core/qp_internal.h"

#define FO_LINK_POLL_NS 100000ull  /* netlink and link state are read this often while a group exists */
#define FO_ERR_WINDOW_NS 1000000ull /* receive errors are counted over windows this long */
/* notices taken this far ahead of the newest applied, copies answered this
 * far behind: each side sends one new notice per change of state, and
 * several changes between two answered notices are few */
#define FO_SEQ_WIN 64u
#define FO_NOTICE_RETRY_NS 200000ull /* an unanswered notice goes again after this, ... */
#define FO_NOTICE_RETRY_MAX_NS 100000000ull /* ... doubling up to this: a dead peer costs 10 a second */
#define FO_RTO_FAIL_DEFAULT 3u
#define FO_ERR_THRESHOLD_DEFAULT 64u
#define FO_PROBE_US_DEFAULT 500u
#define FO_DOWN_TIMEOUT_MS_DEFAULT 10000u
#define FO_ERR_HOLD_NS 100000000ull /* a member failed on errors stays out this long, doubling each time */
#define FO_ERR_HOLD_MAX_SHIFT 7u
#define FO_NONE 0xffu

/* Failover control packets (sr_wire.h's control header, type
 * SRW_CTRL_FO), to the peer's control QPN; body:
 *   u8 kind, u8 member (the member it travels on), u8 active (the
 *   sender's), u8 fail_mask (members the sender failed itself), be32 seq */
enum fo_kind { FO_NOTICE = 1, FO_NOTICE_ACK = 2, FO_PROBE = 3, FO_PROBE_ACK = 4 };
#define FO_BODY_LEN 8u

struct fo_member {
	struct dest d;
	bool link_up;       /* its local port's link */
	uint8_t failed;     /* enum uroce_fo_cause of a local failure; NONE = not failed here */
	bool peer_failed;   /* the peer's last word: it failed this member on its side */
	bool probe_out;     /* a probe was sent and is not answered yet */
	uint8_t err_fails;  /* times it failed on receive errors (its hold-down doubles each time) */
	uint64_t hold_until; /* failed on errors: no probe brings it back before this */
};

struct fo_state {
	struct uroce_qp *qp;
	struct fo_state *next;  /* the context's list of QPs with backups */
	struct uroce_failover_attr cfg; /* defaults filled */
	uint8_t n;              /* members, primary included */
	uint8_t active;
	uint8_t state;          /* enum uroce_fo_state */
	bool ready;             /* members resolved (RTR) */
	struct fo_member m[UROCE_FO_MAX_MEMBERS];
	uint32_t rto_run;       /* retransmission timeouts since the last progress */
	uint32_t notice_seq;    /* of the last notice sent (0: none yet) */
	bool notice_acked;
	uint64_t notice_next_ns;
	uint32_t peer_seq;      /* newest notice of the peer applied (0: none yet) */
	uint32_t probe_seq;
	uint64_t probe_next_ns;
	uint64_t all_down_since; /* 0 = some member usable */
	uint64_t tx_mark;       /* qp->tx_packets at the last switch */
	uint64_t switch_ns;     /* when it was */
	uint64_t notice_gap_ns; /* the next retry of an unanswered notice waits this long (doubling) */
	bool switch_tx_pending; /* the first packet after it is still to leave */
	struct uroce_failover_info info;
};

/* Failover as the QP core sees it (qp.c, qp_dispatch.c, rx_check.c): the
 * core reaches it only through this table, and past init only on a QP
 * with backups (qp->fo). */
struct fo_ext {
	/* creation: validate init.failover and allocate qp->fo (NULL without backups) */
	int (*init)(struct uroce_qp *qp);
	void (*fini)(struct uroce_qp *qp);
	/* INIT -> RTR, before anything changes: validate and resolve the
	 * backups (attr->backup_ah); then, once the primary (qp->d) is set, ready */
	int (*check_backups)(struct uroce_qp *qp, const struct uroce_qp_attr *attr, int mask, unsigned mtu);
	void (*ready)(struct uroce_qp *qp);
	/* RESET: back to the primary, every member usable */
	void (*reset)(struct uroce_qp *qp);
	/* after a transmit pass: the first packet after a switch left? */
	void (*after_tx)(struct uroce_qp *qp);
	/* a packet to the control QPN: true = failover's (notice, probe, answer), consumed */
	bool (*rx)(struct uroce_qp *qp, const struct roce_pkt *pkt);
	/* is a packet that came in on port, from sip to dip, from one of the
	 * members? The member's index, or -1 */
	int (*member_rx)(const struct uroce_qp *qp, unsigned port, const uint8_t sip[16], const uint8_t dip[16]);
	/* is dip the address of a member whose port is port (the destination check)? */
	bool (*dst_ok)(const struct uroce_qp *qp, unsigned port, const uint8_t dip[16]);
	/* a NIC refused work of the member(s) on port (a verbs context's
	 * error completion): they fail, as on receive errors */
	void (*port_err)(struct uroce_qp *qp, unsigned port);
};
extern const struct fo_ext qp_failover;

/* sr: the time a packet first sent at first_ns counts its retries from
 * (the last switch, if later), or UINT64_MAX while every member is down:
 * the down timeout decides then, not the retry count. */
uint64_t fo_retry_base(const struct uroce_qp *qp, uint64_t first_ns);

/* The retransmission timer fired with nothing acknowledged: true when
 * failover took it (a member was failed and the work rewound, or every
 * member is down and retries are not counted), false to retry as usual. */
bool fo_on_rto(struct uroce_qp *qp);
/* Something new was acknowledged. */
static inline void fo_progress(struct uroce_qp *qp)
{
	if (qp->fo)
		qp->fo->rto_run = 0;
}
/* Does the QP send by a backup now (not its primary)? */
static inline bool fo_on_backup(const struct uroce_qp *qp)
{
	return qp->fo && qp->fo->active != 0;
}
/* Transmit, at a WR boundary (the next WR is not started yet): may a new
 * WR start now? (WaitSinked holds new work until the backup drained.) */
bool fo_may_start(struct uroce_qp *qp);


/* The reliability-specific halves are the policy's fo_switch and fo_idle
 * (rel.h): send again what is outstanding on the QP's destination now,
 * and whether nothing is. */

#endif /* UROCE_TRANSPORT_FAILOVER_H */
