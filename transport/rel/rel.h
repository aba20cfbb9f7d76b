/* SPDX-License-Identifier: MIT */
/* Reliability policies: one folder each behind this table (rel/rc/,
 * rel/sr/ with ec, rel/be/). The QP holds one pointer to its table; the
 * core, the failover machine and the context call the table, never a
 * policy by name. */
#ifndef UROCE_TRANSPORT_REL_H
#define UROCE_TRANSPORT_REL_H

#include <stdbool.h>
#include <stddef.h>

#include "transport/core/qp_internal.h"

/* rel_ops.flags */
enum {
	/* self-describing packets on any path in any order (sr, ec): a CNP
	 * goes to the policy's controller, the control QPN carries only its
	 * control packets besides failover's */
	REL_F_SPRAYS = 1,
};

struct rel_ops {
	const char *name;
	unsigned flags;
	/* creation: validate qp->init.rel and allocate the policy's state */
	int (*init)(struct uroce_qp *qp);
	void (*fini)(struct uroce_qp *qp);
	/* INIT -> RTR: size what depends on the path MTU; RTR -> RTS: the
	 * send PSN is known (called with the attributes applied, the state not) */
	int (*ready)(struct uroce_qp *qp);
	/* post time, on the poster's thread, after the generic checks filled w:
	 * can this policy carry the WR, and its per-WR fields (the chunking of
	 * the message). 0 or -EINVAL (uroce_fail). */
	int (*post)(struct uroce_qp *qp, const struct uroce_send_wr *wr, struct swqe *w);
	/* transmit: the next chunks, retransmissions and control; true = more left */
	bool (*tx)(struct uroce_qp *qp);
	/* a request/data packet that passed the connection checks; f is NULL
	 * for a NIC's arrival (a completion as the packet it stands for: no
	 * payload where the NIC placed it, sr keyed by immediate only) */
	void (*rx_data)(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt);
	/* ACK / NAK / READ response (rc), SACK / NACK (sr, ec) */
	void (*rx_ctrl)(struct uroce_qp *qp, const struct roce_pkt *pkt);
	/* is this packet control (for rx_ctrl) rather than data? */
	bool (*is_ctrl)(const struct uroce_qp *qp, const struct roce_pkt *pkt);
	/* the QP's retransmission timer fired */
	void (*timer)(struct wheel_timer *t, void *arg);
	/* a send WR is done: its completion (if signaled) goes to the send CQ */
	void (*complete)(struct uroce_qp *qp, struct swqe *w, enum uroce_wc_status st);
	/* the QP went to ERR (flush follows) or back to RESET */
	void (*error)(struct uroce_qp *qp);
	void (*reset)(struct uroce_qp *qp);
	/* bytes of per-QP state this policy holds (for the scale benchmark) */
	size_t (*state_bytes)(const struct uroce_qp *qp);
	/* after a post_recv (any thread): does the engine need a kick to use it? NULL = no */
	bool (*rx_wants_kick)(const struct uroce_qp *qp);
	/* uroce_rel_state_bytes: a QP's state at the defaults, with no QP (NULL = 0) */
	size_t (*default_state_bytes)(void);
	/* uroce_qp_stats: the policy's own counters on top of the QP's (NULL = none) */
	void (*stats)(const struct uroce_qp *qp, struct uroce_qp_stats *s);
	/* uroce_qp_path_stats: path i (NULL = the policy keeps no paths) */
	int (*path_stats)(const struct uroce_qp *qp, unsigned i, struct uroce_path_stats *out);
	/* a CNP arrived for the packet with this PSN (NULL = only counted) */
	void (*cnp)(struct uroce_qp *qp, uint32_t psn);
	/* failover moved the QP to another member (qp->d is the new one):
	 * rewind = send again what went by the old one. Packets rewound. */
	unsigned (*fo_switch)(struct uroce_qp *qp, bool rewind);
	/* failover: nothing of the QP's is in flight */
	bool (*fo_idle)(const struct uroce_qp *qp);
	/* a receive WR with a partial-completion handle is flushed: give the
	 * handle back (whole or not); its wc_flags. Only a policy that takes
	 * handles (uroce_precv_post) sets it. */
	unsigned (*precv_end)(struct uroce_precv *h, bool whole);
};

extern const struct rel_ops rel_rc_ops;
extern const struct rel_ops rel_sr_ops;
extern const struct rel_ops rel_ec_ops;
extern const struct rel_ops rel_be_ops;

static inline const struct rel_ops *rel_ops_of(enum uroce_reliability r)
{
	switch (r) {
	case UROCE_REL_SR:
		return &rel_sr_ops;
	case UROCE_REL_EC:
		return &rel_ec_ops;
	case UROCE_REL_BE:
		return &rel_be_ops;
	default:
		return &rel_rc_ops;
	}
}

static inline bool rel_rx_wants_kick(const struct uroce_qp *qp)
{
	return qp->rel->rx_wants_kick && qp->rel->rx_wants_kick(qp);
}

#endif /* UROCE_TRANSPORT_REL_H */
