/* SPDX-License-Identifier: MIT */
/* The context's two calls into a QP: a received packet and a transmit
 * pass. Both go through the QP's reliability table (rel.h). Congestion
 * notification is common to every connected QP, as on a RoCE NIC: an
 * arrival marked CE is answered by a CNP (the notification point), and a
 * CNP goes to the QP's controller (the reaction point, sr_paths.c). */
#include "transport/failover/failover.h"
#include "transport/core/qp_internal.h"
#include "transport/rel/rel.h"
#include "transport/rel/sr/sr_wire.h"
#include "transport/core/qp_dispatch.h"
#include "transport/core/rx_check.h"

static bool qp_sprays(const struct uroce_qp *qp)
{
	return qp->rel->flags & REL_F_SPRAYS;
}

static void send_cnp(struct uroce_qp *qp)
{
	struct roce_pkt pkt;

	ctx_pkt_init(qp->ctx, &pkt, &qp->d, qp->sport);
	pkt.opcode = ROCE_OP_CNP;
	pkt.dqpn = qp->dqpn;
	/* the marked packet's PSN (a NIC ignores it): the sender counts the
	 * mark on the path that packet took */
	pkt.psn = qp->cnp_psn;
	if (ctx_send_pkt(qp->ctx, qp->d.port, &pkt, NULL, NULL))
		return; /* the TX stage is full: the next pass sends it */
	qp->cnp_pending = false;
	qp->cnp_last_ns = ctx_now(qp->ctx);
	qp->stats.cnps_sent++;
	qp->tx_packets++;
}

bool qp_tx(struct uroce_qp *qp)
{
	bool more;

	if (qp->fatal_pending)
		qp_fatal(qp);
	if (qp->cnp_pending)
		send_cnp(qp);
	more = qp->rel->tx(qp);
	if (qp->fo)
		qp_failover.after_tx(qp);
	return more;
}

void qp_rx(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	if (!rx_check_conn(qp, pkt))
		return;
	/* a control packet proves its connection first: the token this QP
	 * drew, which only its peer learnt (a shorter payload is refused by
	 * the control parsers, and acts on nothing) */
	if (pkt->dqpn == qp->ctrl_qpn && pkt->payload_len >= SRW_CTRL_HDR_LEN &&
	    !srw_ctrl_token_ok(pkt->payload, qp->tok_local)) {
		ctx_count_drop(qp->ctx, UROCE_DROP_BAD_TOKEN);
		return;
	}
	if (pkt->opcode == ROCE_OP_CNP) {
		if (qp->type == UROCE_QPT_UD) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_OPCODE);
			return;
		}
		qp->rx_packets++;
		if (qp->rel->cnp)
			qp->rel->cnp(qp, pkt->psn);
		else
			qp->stats.cnps_rcvd++;
		return;
	}
	if ((pkt->tos & 3u) == 3u && qp->type != UROCE_QPT_UD) {
		uint64_t now = ctx_now(qp->ctx);

		qp->stats.ecn_ce_rcvd++;
		if (!qp->cnp_pending && now - qp->cnp_last_ns >= CNP_MIN_GAP_NS) {
			qp->cnp_pending = true;
			qp->cnp_psn = pkt->psn;
			ctx_kick(qp);
		}
	}
	if (qp->fo && pkt->dqpn == qp->ctrl_qpn) {
		if (qp_failover.rx(qp, pkt))
			return; /* notice, probe or an answer */
		if (!qp_sprays(qp)) {
			ctx_count_drop(qp->ctx, UROCE_DROP_BAD_CTRL); /* rc has nothing else there */
			return;
		}
	}
	if (qp->rel->is_ctrl(qp, pkt))
		qp->rel->rx_ctrl(qp, pkt);
	else
		qp->rel->rx_data(qp, f, pkt);
}
