/* SPDX-License-Identifier: MIT */
/* The table through which a context on an RDMA NIC (a verbs port) keeps
 * its objects on the device. The public calls check their arguments as
 * for any context, then hand the object to this table instead of the
 * engine: the NIC's own RC and UC QPs run the transport (rdma/verbs_nic.c).
 * Core code reaches a NIC only through ctx->nic, never by name. */
#ifndef UROCE_TRANSPORT_CORE_NIC_H
#define UROCE_TRANSPORT_CORE_NIC_H

#include <stddef.h>
#include <uroce/uroce.h>

struct seg;
struct mr_int;

struct nic_ops {
	int (*pd_alloc)(struct uroce_pd *pd);   /* fills pd->nic */
	void (*pd_free)(struct uroce_pd *pd);
	int (*mr_reg)(struct uroce_pd *pd, void *addr, size_t length, int access, struct uroce_mr **out);
	int (*mr_dereg)(struct uroce_mr *mr);
	struct mr_int *(*mr_find)(struct uroce_context *ctx, uint32_t lkey); /* a region by its NIC lkey, or NULL */
	struct mr_int *(*mr_find_rkey)(struct uroce_context *ctx, uint32_t rkey); /* and by its rkey */
	int (*mr_reg_dmabuf)(struct uroce_pd *pd, int fd, uint64_t offset, size_t length, uint64_t iova, int access,
	                     struct uroce_mr **out);
	int (*cq_create)(struct uroce_cq *cq, int cqe); /* fills cq->nic */
	void (*cq_destroy)(struct uroce_cq *cq);
	int (*poll_cq)(struct uroce_cq *cq, int n, struct uroce_wc *wc);
	/* qp: zeroed, with ctx, pd and init set; fills qp->nic and qp->qpn */
	int (*qp_create)(struct uroce_qp *qp, struct uroce_qp_init_attr *attr);
	int (*qp_destroy)(struct uroce_qp *qp);
	int (*qp_modify)(struct uroce_qp *qp, const struct uroce_qp_attr *attr, int mask);
	int (*qp_query)(struct uroce_qp *qp, struct uroce_qp_attr *attr, struct uroce_qp_init_attr *init);
	int (*post_send)(struct uroce_qp *qp, struct uroce_send_wr *wr, struct uroce_send_wr **bad_wr);
	int (*post_recv)(struct uroce_qp *qp, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr);
	int (*srq_create)(struct uroce_srq *srq, const struct uroce_srq_init_attr *attr); /* fills srq->nic */
	void (*srq_destroy)(struct uroce_srq *srq);
	int (*post_srq_recv)(struct uroce_srq *srq, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr);
	int (*ah_create)(struct uroce_ah *ah, const struct uroce_ah_attr *attr); /* fills ah->nic */
	void (*ah_destroy)(struct uroce_ah *ah);
	/* sr over the NIC: the engine keeps the QP; its segments go by the
	 * NIC's QPs (fills qp->segq, nic_qpn, nic_ctrl_qpn) */
	int (*seg_create)(struct uroce_qp *qp, unsigned npaths);
	void (*seg_destroy)(struct uroce_qp *qp);
	int (*seg_connect)(struct uroce_qp *qp);  /* INIT -> RTR, the peer's numbers set */
	/* a QP with backups: its NIC QPs' numbers on another port (index) */
	int (*seg_port_nums)(const struct uroce_qp *qp, unsigned port, uint32_t *qpn, uint32_t *ctrl_qpn);
	int (*seg_post)(struct uroce_qp *qp, const struct seg *s);
	unsigned (*poll)(struct uroce_context *ctx); /* the engine loop: arrivals (ctx_nic_arrival) */
	void (*flush)(struct uroce_context *ctx);    /* the end of a transmit pass: chained WRs to the NIC */
};

#endif /* UROCE_TRANSPORT_CORE_NIC_H */
