/* SPDX-License-Identifier: MIT */
/* The boundary between a policy (sr, ec, be, failover's control) and the
 * data path under it. A policy hands out segments: one self-describing
 * RDMA WRITE, WRITE_WITH_IMM or SEND of at most one MTU, with its path,
 * its bytes and, for a WRITE, the remote address and key. It never builds
 * a header itself. The frame path (afxdp, dpdk, loop) makes each segment
 * one RoCEv2 UC packet (seg.c); a NIC's data path posts it as one work
 * request on the UC QP that stands for the path (docs/architecture.md). */
#ifndef UROCE_TRANSPORT_CORE_SEG_H
#define UROCE_TRANSPORT_CORE_SEG_H

#include <stdint.h>

#include "transport/core/qp_internal.h"

enum seg_op {
	SEG_WRITE,     /* placed by va/rkey, no completion at the receiver */
	SEG_WRITE_IMM, /* placed by va/rkey, the immediate names it */
	SEG_SEND,      /* a control message to the peer's control QP */
	SEG_SEND_IMM,  /* bytes for the receiver to place, the immediate naming
	                * them: what a NIC cannot place by rkey (sr keyed by
	                * immediate: descriptors, SEND messages' data) */
};

enum seg_flags {
	SEG_ACKREQ = 1u << 0, /* the sender asks for an acknowledgment of it */
	SEG_ECT = 1u << 1,    /* ECN-capable: a switch may mark it CE */
};

struct seg {
	struct uroce_qp *qp;
	const struct dest *d; /* the path: the port and addresses it leaves by */
	uint16_t sport;       /* and the UDP source port that names it */
	uint16_t path;        /* its index (a NIC sends it by that path's QP) */
	uint8_t op;           /* enum seg_op */
	uint8_t flags;        /* enum seg_flags */
	uint32_t dqpn;
	uint32_t psn;  /* the policy's sequence; a NIC numbers its own */
	uint32_t len;  /* at most one MTU */
	uint32_t imm;  /* the _IMM ops: as it travels */
	uint64_t va;   /* WRITEs: the remote address and key */
	uint32_t rkey;
	/* the bytes: buf, or else len bytes at offset off of the SGE list */
	const void *buf;
	const struct uroce_sge *sge;
	uint32_t nsge;
	uint32_t off;
};

/* Hand s to the data path of its port: 0, -ENOBUFS when the TX stage is
 * full (try again in the next pass), or the builder's error. */
int ctx_send_seg(struct uroce_context *ctx, const struct seg *s);

#endif
