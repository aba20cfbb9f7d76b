/* SPDX-License-Identifier: MIT */
/* A verbs port: an RDMA device's port opened through libibverbs. The
 * NIC moves the bytes; the port hands no frames to the engine. What the
 * transport's NIC objects (verbs_nic.c) need of it is here. */
#ifndef UROCE_RDMA_VERBS_PORT_H
#define UROCE_RDMA_VERBS_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "dataplane/port.h"
#include "rdma/verbs_ts.h"
#include "transport/core/qp_internal.h"

#define VERBS_GID_MAX 64u

struct verbs_port {
	struct ibv_context *ibctx;
	uint8_t ib_port;
	bool link_up;
	/* the device's RoCEv2 GIDs in its own order: uroce's index i is the
	 * device's index dev_index[i] */
	unsigned ngid;
	uint8_t gid[VERBS_GID_MAX][16];
	uint16_t dev_index[VERBS_GID_MAX];
	uint64_t next_event_ns; /* the async queue is read at most every EVENT_POLL_NS */
	bool dmabuf_probed;     /* at the first PD */
	bool dmabuf_ok;         /* the device registers dmabuf MRs */
	void *segqs;            /* sr QPs' NIC resources (verbs_seg.c) */
	void *seg_cq;           /* their one CQ, polled by the engine */
	void *seg_cqx;          /* the same as an extended CQ (NULL where the device has none) */
	struct verbs_ts ts;     /* the device's completion timestamps, where it stamps */
	struct port *port;
	unsigned seg_cq_need;   /* the completions they all can have in it */
	void *mrs;              /* the regions registered (verbs_nic.c), for post-time checks */
	unsigned nsegq;
	unsigned nbroken;       /* of them, those whose QPs failed and wait to be connected again */
};

static inline struct verbs_port *verbs_port_of(struct port *p)
{
	return p->priv;
}

/* A PD on a verbs context: one on each port's device (by port index). */
struct verbs_pd {
	struct ibv_pd *pd[UROCE_MAX_PORTS];
};

static inline struct ibv_pd *verbs_pd(const struct uroce_pd *pd, unsigned port)
{
	return ((const struct verbs_pd *)pd->nic)->pd[port];
}

/* The lkey on port's device of the region whose public lkey (port 1's)
 * is lkey; 0 when no region has it (verbs_nic.c). */
uint32_t verbs_nic_lkey(struct uroce_context *ctx, uint32_t lkey, unsigned port);

/* The device's GID index of uroce's GID index i, or -1 when there is none. */
static inline int verbs_port_dev_gid(const struct verbs_port *vp, unsigned i)
{
	return i < vp->ngid ? vp->dev_index[i] : -1;
}

#endif /* UROCE_RDMA_VERBS_PORT_H */
