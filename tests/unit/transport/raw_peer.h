/* SPDX-License-Identifier: MIT */
/* A raw loop port playing an RC/UC/UD QP's connected peer (PEER_QPN, at
 * 10.0.0.2), for the tests of what a QP does with the packets it is sent:
 * one context on loop:0 with a PD, a CQ and a registered REGION between
 * two GUARD zones, the raw port on loop:1. raw_peer_open sets it up,
 * raw_peer_close checks the guards and tears it down. Header only; each
 * test program has its own. */
#ifndef UROCE_TESTS_RAW_PEER_H
#define UROCE_TESTS_RAW_PEER_H

#include "tr_raw.h"
#include "../dataplane/loop_test.h"

#define REGION 65536u
#define GUARD 4096u
#define PEER_QPN 0x99u

static struct loop_fabric *fab;
static struct uroce_context *ctx;
static struct port *raw;
static struct uroce_pd *pd;
static struct uroce_cq *cq;
static struct uroce_mr *mr;
static uint8_t *mem, *region;

static inline void step(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uroce_progress(ctx);
		loop_fabric_advance(fab, 2000);
	}
}

/* A packet from the connected peer (the raw port) to the context's port. */
static inline void pkt_init(struct roce_pkt *p, uint8_t opcode, uint32_t dqpn, uint32_t psn)
{
	tr_raw_pkt(p, raw, 0xc001);
	p->opcode = opcode;
	p->dqpn = dqpn;
	p->psn = psn & ROCE_PSN_MASK;
}

static inline void send_raw(const struct roce_pkt *p)
{
	REQUIRE(tr_raw_tx(raw, p) == 0, "raw tx of opcode 0x%02x", p->opcode);
}

/* Drain what the context sent back; remember the last AETH syndrome of
 * an ACK-opcode packet (255 = none). */
static uint8_t last_syn;
static unsigned got_pkts;
static inline void drain(void)
{
	struct uroce_frame in[64];
	uint16_t n = port_rx_burst(raw, in, 64);

	for (uint16_t i = 0; i < n; i++) {
		struct roce_pkt p;

		if (roce_parse(in[i].data, in[i].len, &p, NULL) == UROCE_DROP_NONE) {
			got_pkts++;
			if ((p.opcode & 0x1f) == ROCE_OP_ACK)
				last_syn = p.aeth.syndrome;
		}
	}
	port_free(raw, in, n);
}

static inline void settle(void)
{
	last_syn = 255;
	for (int i = 0; i < 50; i++) {
		step(1);
		drain();
	}
}

/* Drain the context's events; true when one of type for qp was among them. */
static inline bool saw_qp_event(enum uroce_event_type type, struct uroce_qp *qp)
{
	struct uroce_async_event ev;
	bool seen = false;

	while (uroce_get_async_event(ctx, &ev) == 0) {
		if (ev.event_type == type && ev.element.qp == qp)
			seen = true;
		uroce_ack_async_event(&ev);
	}
	return seen;
}

/* A QP of type connected to the raw port's PEER_QPN, taken to RTS, with
 * both its CQs on qcq and queues of 64 WRs. */
static inline struct uroce_qp *make_qp_cq(enum uroce_qp_type type, uint8_t max_dest_rd_atomic, uint32_t rq_psn,
                                   uint32_t sq_psn, struct uroce_cq *qcq)
{
	struct uroce_qp_init_attr ia = { .qp_type = type, .send_cq = qcq, .recv_cq = qcq };
	struct uroce_qp_attr a;
	struct uroce_qp *qp;

	ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	REQUIRE(uroce_qp_create(pd, &ia, &qp) == 0, "qp: %s", uroce_last_error());
	memset(&a, 0, sizeof(a));
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd_atomic;
	roce_ipv4_mapped(a.ah_attr.dgid, raw->ipv4_be);
	a.ah_attr.sgid_index = 1; /* IPv4-mapped, as the dgid */
	a.sq_psn = sq_psn;
	a.timeout = 14;  /* ~67 ms: longer than any case here */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	tr_raw_connect(qp, type, &a);
	return qp;
}

static inline struct uroce_qp *make_qp(enum uroce_qp_type type, uint8_t max_dest_rd_atomic, uint32_t rq_psn,
                                uint32_t sq_psn)
{
	return make_qp_cq(type, max_dest_rd_atomic, rq_psn, sq_psn, cq);
}

/* The peer READs len bytes from the start of the region at psn. */
static inline void send_read(struct uroce_qp *qp, uint32_t psn, uint32_t len)
{
	struct roce_pkt p;

	pkt_init(&p, ROCE_TR_RC | ROCE_OP_READ_REQUEST, uroce_qp_num(qp), psn);
	p.reth.va = (uint64_t)(uintptr_t)region;
	p.reth.rkey = mr->rkey;
	p.reth.dma_len = len;
	send_raw(&p);
}

static inline void write_only(struct roce_pkt *p, uint32_t dqpn, uint32_t psn, uint32_t off, const uint8_t *data, uint32_t len)
{
	pkt_init(p, ROCE_TR_RC | ROCE_OP_WRITE_ONLY, dqpn, psn);
	p->ackreq = true;
	p->reth.va = (uint64_t)(uintptr_t)(region + off);
	p->reth.rkey = mr->rkey;
	p->reth.dma_len = len;
	p->payload = data;
	p->payload_len = len;
}

static inline void raw_peer_open(uint64_t seed)
{
	struct uroce_context_attr ca = { .port = "loop:0" };

	fab = loop_fabric_create(2, seed);
	REQUIRE(fab && loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "fabric");
	ca.loop_fabric = fab;
	REQUIRE(uroce_context_create(&ctx, &ca) == 0, "ctx: %s", uroce_last_error());
	raw = open_loop_port(fab, 1);
	REQUIRE(uroce_pd_alloc(ctx, &pd) == 0 && uroce_cq_create(ctx, 1024, &cq) == 0, "pd/cq");
	mem = calloc(1, GUARD + REGION + GUARD);
	REQUIRE(mem, "memory");
	region = mem + GUARD;
	REQUIRE(uroce_mr_reg(pd, region, REGION, 15, &mr) == 0, "mr: %s", uroce_last_error());
}

/* No byte of the guards changed; everything goes. */
static inline void raw_peer_close(void)
{
	for (unsigned i = 0; i < GUARD; i++)
		CHECK(mem[i] == 0 && mem[GUARD + REGION + i] == 0, "guard byte %u changed", i);
	CHECK(uroce_mr_dereg(mr) == 0 && uroce_cq_destroy(cq) == 0 && uroce_pd_free(pd) == 0, "teardown");
	CHECK(uroce_context_destroy(ctx) == 0, "ctx: %s", uroce_last_error());
	port_close(raw);
	loop_fabric_destroy(fab);
	free(mem);
}

#endif /* UROCE_TESTS_RAW_PEER_H */
