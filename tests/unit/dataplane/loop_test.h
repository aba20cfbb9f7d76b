/* SPDX-License-Identifier: MIT */
/* Helpers shared by the loop-port and engine tests: opening loop ports,
 * and writing a sequenced RoCEv2 frame between two of them. */
#ifndef UROCE_TESTS_LOOP_TEST_H
#define UROCE_TESTS_LOOP_TEST_H

#include <string.h>

#include "dataplane/port_loop.h"
#include "dataplane/wire.h"
#include "dp_test.h"

static inline struct port *open_loop_port(struct loop_fabric *fab, unsigned index)
{
	struct port_config cfg = { .kind = PORT_KIND_LOOP, .fabric = fab, .loop_index = index };
	struct port *p = NULL;
	char err[256] = "";
	int rc = port_open(&p, &cfg, err, sizeof(err));

	REQUIRE(rc == 0, "port_open loop:%u: %s", index, err);
	return p;
}

/* A RoCEv2 UC "RDMA WRITE Only" from port `from` to port `to` carrying
 * payload_len bytes derived from seq; psn = seq. */
static inline void test_roce_pkt(struct roce_pkt *pkt, const struct port *from, const struct port *to, uint32_t seq,
                                 uint32_t payload_len)
{
	memset(pkt, 0, sizeof(*pkt));
	memcpy(pkt->smac, from->mac, 6);
	memcpy(pkt->dmac, to->mac, 6);
	roce_ipv4_mapped(pkt->sip, from->ipv4_be);
	roce_ipv4_mapped(pkt->dip, to->ipv4_be);
	pkt->ttl = 64;
	pkt->dont_fragment = true;
	pkt->sport = (uint16_t)(49152 + (seq & 0x3fff));
	pkt->dport = ROCE_UDP_PORT;
	pkt->opcode = ROCE_TR_UC | ROCE_OP_WRITE_ONLY;
	pkt->pkey = ROCE_PKEY_DEFAULT;
	pkt->dqpn = 0x11;
	pkt->psn = seq & ROCE_PSN_MASK;
	pkt->reth.va = 0x1000ull * seq;
	pkt->reth.rkey = 0xabcd;
	pkt->reth.dma_len = payload_len;
	pkt->payload = NULL; /* filled in place by the caller's helper */
	pkt->payload_len = payload_len;
}

/* Payload byte i of frame seq: every frame's content differs. */
static inline uint8_t test_payload_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131u + i * 7u + (i >> 8));
}

/* Build a RoCE frame into f (already allocated from `from`). Returns the
 * frame length. */
static inline uint32_t test_build_roce(struct uroce_frame *f, const struct port *from, const struct port *to,
                                       uint32_t seq, uint32_t payload_len)
{
	struct roce_pkt pkt;
	uint8_t payload[4096];
	int len;

	REQUIRE(payload_len <= sizeof(payload), "payload too long");
	test_roce_pkt(&pkt, from, to, seq, payload_len);
	for (uint32_t i = 0; i < payload_len; i++)
		payload[i] = test_payload_byte(seq, i);
	pkt.payload = payload;
	len = roce_build(f->data, f->room, &pkt);
	REQUIRE(len > 0, "roce_build failed: %d", len);
	f->len = (uint32_t)len;
	return (uint32_t)len;
}

#endif /* UROCE_TESTS_LOOP_TEST_H */
