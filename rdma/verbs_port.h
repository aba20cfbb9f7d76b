/* A verbs port: an RDMA device's port opened through libibverbs. The
 * NIC moves the bytes; the port hands no frames to the engine. What the
 * transport's NIC objects (verbs_nic.c) need of it is here. */
#ifndef UROCE_RDMA_VERBS_PORT_H
#define UROCE_RDMA_VERBS_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "dataplane/port.h"

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
	unsigned seg_cq_need;   /* the completions they all can have in it */
	void *mrs;              /* the regions registered (verbs_nic.c), for post-time checks */
	unsigned nsegq;
};

static inline struct verbs_port *verbs_port_of(struct port *p)
{
	return p->priv;
}

/* The device's GID index of uroce's GID index i, or -1 when there is none. */
static inline int verbs_port_dev_gid(const struct verbs_port *vp, unsigned i)
{
	return i < vp->ngid ? vp->dev_index[i] : -1;
}

#endif /* UROCE_RDMA_VERBS_PORT_H */
