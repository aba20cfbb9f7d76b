/* The context's two calls into a QP: a received packet and a transmit
 * pass. Both go through the QP's reliability table (rel.h). */
#include "transport/qp_internal.h"
#include "transport/rel.h"

bool qp_tx(struct uroce_qp *qp)
{
	if (qp->fatal_pending)
		qp_fatal(qp);
	return qp->rel->tx(qp);
}

void qp_rx(struct uroce_qp *qp, const struct uroce_frame *f, const struct roce_pkt *pkt)
{
	if (!rx_check_conn(qp, pkt))
		return;
	if (qp->rel->is_ctrl(qp, pkt))
		qp->rel->rx_ctrl(qp, pkt);
	else
		qp->rel->rx_data(qp, f, pkt);
}
