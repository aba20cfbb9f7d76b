/* Reliability policies: one file each behind this table (rel_rc.c,
 * rel_sr.c, rel_ec.c). The QP holds one pointer to its table; qp.c and the
 * context call the table, never a policy by name. */
#ifndef UROCE_TRANSPORT_REL_H
#define UROCE_TRANSPORT_REL_H

#include <stdbool.h>
#include <stddef.h>

#include "transport/qp_internal.h"

struct rel_ops {
	const char *name;
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
	/* a request/data packet that passed the connection checks */
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

/* sr/ec: a message found no receive posted; a post_recv kicks the QP so
 * its SACK tells the waiting sender (rel_sr.c). */
bool sr_rx_wants_kick(const struct uroce_qp *qp);

static inline bool rel_rx_wants_kick(const struct uroce_qp *qp)
{
	return qp->rel->rx_wants_kick && qp->rel->rx_wants_kick(qp);
}

/* rel_rc.c: IBTA go-back-N, also the path of UC and UD QPs */
bool rc_tx(struct uroce_qp *qp);
void rc_rx_data(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt);

#endif /* UROCE_TRANSPORT_REL_H */
