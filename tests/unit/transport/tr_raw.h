/* SPDX-License-Identifier: MIT */
/* Packets built by a test, not by a QP: into the fabric at a port
 * (tr_inject), or sent by a raw loop port playing a QP's connected peer
 * (tr_raw_pkt, tr_raw_tx). */
#ifndef UROCE_TESTS_TR_RAW_H
#define UROCE_TESTS_TR_RAW_H

#include "tr_test.h"
#include "dataplane/wire.h"

/* p built and handed to the fabric as if port `from` had sent it. */
static inline void tr_inject(struct loop_fabric *fab, unsigned from, const struct roce_pkt *p)
{
	uint8_t f[2048];
	int len = roce_build(f, sizeof(f), p);

	REQUIRE(len > 0, "roce_build: %d", len);
	REQUIRE(loop_fabric_inject(fab, from, f, (uint32_t)len) == 0, "inject: %s", loop_fabric_last_error(fab));
}

/* The headers of a packet from the raw port to loop port 0 (the context):
 * right MACs, IP addresses and P_Key; the rest zero. */
static inline void tr_raw_pkt(struct roce_pkt *p, const struct port *raw, uint16_t sport)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->smac, raw->mac, 6);
	loop_port_mac(0, p->dmac);
	roce_ipv4_mapped(p->sip, raw->ipv4_be);
	roce_ipv4_mapped(p->dip, loop_port_ipv4_be(0));
	p->ttl = 64;
	p->sport = sport;
	p->dport = ROCE_UDP_PORT;
	p->pkey = ROCE_PKEY_DEFAULT;
}

/* p sent from the raw port: 0, -1 when it cannot be built (the frame goes
 * back), -2 when the port refuses it. */
static inline int tr_raw_tx(struct port *raw, const struct roce_pkt *p)
{
	struct uroce_frame f;
	int len;

	REQUIRE(port_alloc(raw, &f, 1) == 1, "raw port: no frame");
	len = roce_build(f.data, f.room, p);
	if (len <= 0) {
		port_free(raw, &f, 1);
		return -1;
	}
	f.len = (uint32_t)len;
	if (port_tx_burst(raw, &f, 1) != 1) {
		port_free(raw, &f, 1);
		return -2;
	}
	return 0;
}

/* A QP of type from RESET or INIT to RTS toward the peer a addresses: the
 * caller sets a's dest_qp_num, rq_psn, max_dest_rd_atomic, ah_attr,
 * sq_psn, timeout, retry_cnt and rnr_retry; the rest is fixed here (port
 * 1, Q_Key 0x42, every access, MTU 1024, min_rnr_timer 1, max_rd_atomic 1).
 * Each modify takes the attributes type has. */
static inline void tr_raw_connect(struct uroce_qp *qp, enum uroce_qp_type type, struct uroce_qp_attr *a)
{
	bool ud = type == UROCE_QPT_UD, rc = type == UROCE_QPT_RC;

	a->port_num = 1;
	a->qkey = 0x42;
	a->qp_access_flags = 15;
	a->path_mtu = UROCE_MTU_1024;
	a->min_rnr_timer = 1;
	a->max_rd_atomic = 1;
	a->qp_state = UROCE_QPS_INIT;
	REQUIRE(uroce_qp_modify(qp, a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                                       (ud ? UROCE_QP_QKEY : UROCE_QP_ACCESS_FLAGS)) == 0,
	        "init: %s", uroce_last_error());
	a->qp_state = UROCE_QPS_RTR;
	REQUIRE(uroce_qp_modify(qp, a, ud ? UROCE_QP_STATE : UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU |
	                                       UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
	                                       (rc ? UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER : 0)) == 0,
	        "rtr: %s", uroce_last_error());
	a->qp_state = UROCE_QPS_RTS;
	REQUIRE(uroce_qp_modify(qp, a, UROCE_QP_STATE | UROCE_QP_SQ_PSN |
	                                       (rc ? UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
	                                                     UROCE_QP_MAX_QP_RD_ATOMIC : 0)) == 0,
	        "rts: %s", uroce_last_error());
}

#endif /* UROCE_TESTS_TR_RAW_H */
