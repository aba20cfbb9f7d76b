/* SPDX-License-Identifier: MIT */
/* Connection checks on every received packet, before the requester or the
 * responder sees it (rxe_recv.c's check_addr and check_keys, IBTA 9.6 and
 * 9.9): the destination is the connected QP's own GID (else one of the
 * arrival port's GIDs); for RC and UC
 * the source is the QP's remote GID (or, for a QP with backups, the
 * addresses are those of one of its members and the packet came in at
 * that member's port, the active one's included); the BTH P_Key matches the QP's; a
 * response is acted on only inside the requester's outstanding window.
 * Anything else is counted under its own drop reason and never NAKed: a
 * host that is not the peer learns nothing and changes nothing. */
#include <string.h>

#include "transport/failover/failover.h"
#include "transport/core/qp_internal.h"
#include "transport/core/gid.h"
#include "transport/core/mr.h"
#include "transport/core/nic.h"
#include "transport/core/rx_check.h"

/* IBTA 10.9.3: the low 15 bits name the partition (0 is invalid), bit 15
 * is full membership, and two limited members may not talk. */
static bool pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

bool rx_check_dst(struct uroce_context *ctx, unsigned port, const struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	bool ok;

	/* A connected QP takes packets only at the GID it sends from, as
	 * rxe's check_addr: one compare per packet, and stricter than any
	 * GID of the port. Datagrams, unknown QPNs and QPs without a peer
	 * yet are checked against the port's table. */
	if (qp && qp->type != UROCE_QPT_UD && qp->state >= UROCE_QPS_RTR &&
	    qp->state <= UROCE_QPS_SQD)
		ok = qp->fo ? qp_failover.dst_ok(qp, port, pkt->dip) : !memcmp(pkt->dip, qp->d.sip, 16);
	else
		ok = ctx_port_has_gid(ctx, port, pkt->dip);
	if (ok)
		return true;
	ctx_count_drop(ctx, UROCE_DROP_BAD_DST_ADDR);
	return false;
}

bool rx_check_conn(struct uroce_qp *qp, const struct roce_pkt *pkt)
{
	/* The port's P_Key table has one entry (pkey_index 0 is the only one
	 * uroce_qp_modify accepts). */
	if (!pkey_match(pkt->pkey, ROCE_PKEY_DEFAULT)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_PKEY);
		return false;
	}
	if (qp->type == UROCE_QPT_UD)
		return true; /* datagrams come from anyone who knows the Q_Key */
	/* Before RTR a connected QP has no peer: nothing may reach it. */
	if (qp->state < UROCE_QPS_RTR || qp->state > UROCE_QPS_SQD) {
		ctx_count_drop(qp->ctx, UROCE_DROP_QP_STATE);
		return false;
	}
	/* a QP with backups: from any member, at that member's own port */
	if (qp->fo ? qp_failover.member_rx(qp, qp->ctx->rx_port, pkt->sip, pkt->dip) < 0
	           : memcmp(pkt->sip, qp->d.dip, 16) != 0) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_SRC_ADDR);
		return false;
	}
	return true;
}

/* The region mr (NULL: no key matched, counted as why) may take a write
 * of [va, va+len) from qp's peer: the QP's and the region's access, the
 * bounds; otherwise counted by reason, NULL. Inlined: as a call it cost
 * sr's 64-byte WRITE 7 instructions a packet. */
static inline __attribute__((always_inline)) struct mr_int *
write_allowed(struct uroce_qp *qp, struct mr_int *mr, enum uroce_drop_reason why, uint64_t va, uint32_t len)
{
	bool allowed;

	if (!mr) {
		ctx_count_drop(qp->ctx, why);
		return NULL;
	}
	allowed = (qp->attr.qp_access_flags & UROCE_ACCESS_REMOTE_WRITE) && (mr->pub.access & UROCE_ACCESS_REMOTE_WRITE);
	if (!allowed || !mr_check(mr, qp->pd, va, len, UROCE_ACCESS_REMOTE_WRITE)) {
		ctx_count_drop(qp->ctx, allowed ? UROCE_DROP_OUT_OF_BOUNDS : UROCE_DROP_ACCESS_DENIED);
		qp->stats.access_errors++;
		return NULL;
	}
	return mr;
}

struct mr_int *rx_check_write(struct uroce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len)
{
	enum uroce_drop_reason why = UROCE_DROP_BAD_RKEY;
	struct mr_int *mr = rkey_lookup(qp, rkey, &why); /* a region, or a window bound to this QP */

	return write_allowed(qp, mr, why, va, len);
}

struct mr_int *rx_check_write_nic(struct uroce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len)
{
	return write_allowed(qp, qp->ctx->nic->mr_find_rkey(qp->ctx, rkey), UROCE_DROP_BAD_RKEY, va, len);
}

bool rx_response_in_window(struct uroce_qp *qp, uint32_t psn)
{
	/* Outstanding: from the oldest PSN still owed a response to the
	 * highest one sent (a go-back lowers snd_nxt, not snd_max). An ACK of
	 * a later request moves acked_psn past a READ whose responses were
	 * lost, so the oldest incomplete WQE's first PSN bounds it too.
	 * Nothing outstanding makes the window empty: a ghost falls outside. */
	uint32_t una = psn_add(qp->rc.acked_psn, 1);
	int32_t from_una, to_max;

	if (qp->sq_tail != atomic_load_explicit(&qp->sq_head, memory_order_acquire)) {
		const struct swqe *w = &qp->sq[qp->sq_tail & qp->sq_mask];

		if (w->state != SWQE_POSTED && roce_psn_diff(w->first_psn, una) < 0)
			una = w->first_psn;
	}
	from_una = roce_psn_diff(psn, una);
	to_max = roce_psn_diff(psn, qp->rc.snd_max);

	if (from_una >= 0 && to_max < 0)
		return true;
	ctx_count_drop(qp->ctx, UROCE_DROP_STALE_RESPONSE);
	return false;
}
