/* SPDX-License-Identifier: MIT */
/* Shared helpers for the wire tests: a seeded generator, random packets of
 * any opcode and field-by-field comparison; the failure counter and CHECK
 * are the dataplane tests' (dp_test.h). */
#ifndef UROCE_TESTS_WIRE_TEST_H
#define UROCE_TESTS_WIRE_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/wire.h"
#include "../dataplane/dp_test.h" /* CHECK, REQUIRE, test_done */

/* A CNP captured from a ConnectX-4 Lx (published with scapy's RoCE tests),
 * ICRC stored little-endian in its last 4 bytes (0x2a00fd82). */
#define WIRE_CX4_CNP                                                                         \
	{                                                                                    \
		0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, \
		0x00, 0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, \
		0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, \
		0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, \
		0x00, 0x00, 0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    \
		0,    0,    0,    0,    0,    0x82, 0xfd, 0x00, 0x2a                          \
	}

/* xorshift64*: deterministic across platforms, so a failure replays. */
struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

static inline uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(rng_next(r) % n);
}

static inline void rng_fill(struct rng *r, void *buf, size_t n)
{
	uint8_t *b = buf;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rng_next(r);
}

/* Every opcode the table defines, in order; returns how many. */
static inline unsigned all_opcodes(uint8_t out[256])
{
	unsigned n = 0;
	for (unsigned op = 0; op < 256; op++)
		if (roce_opcode_info((uint8_t)op))
			out[n++] = (uint8_t)op;
	return n;
}

/*
 * A packet of the given shape with every field random within its wire
 * width. payload points at caller storage of payload_len bytes (filled
 * here); ignored for opcodes without payload.
 */
static inline void random_pkt(struct roce_pkt *p, struct rng *r, uint8_t opcode, bool ipv6,
                              bool vlan, uint8_t *payload, uint32_t payload_len)
{
	const struct roce_opcode_info *info = roce_opcode_info(opcode);

	memset(p, 0, sizeof(*p));
	rng_fill(r, p->dmac, 6);
	rng_fill(r, p->smac, 6);
	p->has_vlan = vlan;
	p->vlan_tci = vlan ? (uint16_t)rng_next(r) : 0;
	p->ipv6 = ipv6;
	if (ipv6) {
		rng_fill(r, p->sip, 16);
		rng_fill(r, p->dip, 16);
		p->flow_label = rng_below(r, 1u << 20);
	} else {
		roce_ipv4_mapped(p->sip, (uint32_t)rng_next(r));
		roce_ipv4_mapped(p->dip, (uint32_t)rng_next(r));
		p->ip_id = (uint16_t)rng_next(r);
		p->dont_fragment = rng_next(r) & 1;
	}
	p->tos = (uint8_t)rng_next(r);
	p->ttl = (uint8_t)rng_next(r);
	p->sport = (uint16_t)rng_next(r);
	p->dport = ROCE_UDP_PORT;
	p->opcode = opcode;
	p->se = rng_next(r) & 1;
	p->migreq = rng_next(r) & 1;
	p->pkey = (uint16_t)rng_next(r);
	p->fecn = rng_next(r) & 1;
	p->becn = rng_next(r) & 1;
	p->dqpn = (uint32_t)rng_next(r) & ROCE_QPN_MASK;
	p->ackreq = rng_next(r) & 1;
	p->psn = (uint32_t)rng_next(r) & ROCE_PSN_MASK;
	p->reth.va = rng_next(r);
	p->reth.rkey = (uint32_t)rng_next(r);
	p->reth.dma_len = (uint32_t)rng_next(r);
	p->aeth.syndrome = (uint8_t)rng_next(r);
	p->aeth.msn = (uint32_t)rng_next(r) & 0xffffffu;
	p->imm = (uint32_t)rng_next(r);
	p->deth.qkey = (uint32_t)rng_next(r);
	p->deth.src_qp = (uint32_t)rng_next(r) & ROCE_QPN_MASK;
	p->ieth_rkey = (uint32_t)rng_next(r);
	p->atomic.va = rng_next(r);
	p->atomic.rkey = (uint32_t)rng_next(r);
	p->atomic.swap_add = rng_next(r);
	p->atomic.compare = rng_next(r);
	p->atomic_ack = rng_next(r);
	if (info && (info->mask & ROCE_PAYLOAD) && payload_len) {
		rng_fill(r, payload, payload_len);
		p->payload = payload;
		p->payload_len = payload_len;
	}
}

#define CMP(field)                                                                  \
	do {                                                                        \
		if (a->field != b->field) {                                         \
			snprintf(why, n, "%s: %llx != %llx", #field,                \
			         (unsigned long long)a->field,                      \
			         (unsigned long long)b->field);                     \
			return false;                                               \
		}                                                                   \
	} while (0)

#define CMP_BYTES(field, len)                                                       \
	do {                                                                        \
		if (memcmp(a->field, b->field, len)) {                              \
			snprintf(why, n, "%s differs", #field);                     \
			return false;                                               \
		}                                                                   \
	} while (0)

/* Every field the wire carries for a's opcode; why says the first that
 * differs. The payload is compared by content. */
static inline bool pkt_equal(const struct roce_pkt *a, const struct roce_pkt *b, char *why,
                             size_t n)
{
	const struct roce_opcode_info *info = roce_opcode_info(a->opcode);
	uint32_t m = info ? info->mask : 0;

	CMP_BYTES(dmac, 6);
	CMP_BYTES(smac, 6);
	CMP(has_vlan);
	if (a->has_vlan)
		CMP(vlan_tci);
	CMP(ipv6);
	CMP_BYTES(sip, 16);
	CMP_BYTES(dip, 16);
	CMP(tos);
	CMP(ttl);
	if (a->ipv6) {
		CMP(flow_label);
	} else {
		CMP(ip_id);
		CMP(dont_fragment);
	}
	CMP(sport);
	CMP(dport);
	CMP(opcode);
	CMP(se);
	CMP(migreq);
	CMP(tver);
	CMP(pkey);
	CMP(fecn);
	CMP(becn);
	CMP(dqpn);
	CMP(ackreq);
	CMP(psn);
	if (m & ROCE_HAS(ROCE_HDR_RETH)) {
		CMP(reth.va);
		CMP(reth.rkey);
		CMP(reth.dma_len);
	}
	if (m & ROCE_HAS(ROCE_HDR_AETH)) {
		CMP(aeth.syndrome);
		CMP(aeth.msn);
	}
	if (m & ROCE_HAS(ROCE_HDR_IMMDT))
		CMP(imm);
	if (m & ROCE_HAS(ROCE_HDR_DETH)) {
		CMP(deth.qkey);
		CMP(deth.src_qp);
	}
	if (m & ROCE_HAS(ROCE_HDR_IETH))
		CMP(ieth_rkey);
	if (m & ROCE_HAS(ROCE_HDR_ATOMETH)) {
		CMP(atomic.va);
		CMP(atomic.rkey);
		CMP(atomic.swap_add);
		CMP(atomic.compare);
	}
	if (m & ROCE_HAS(ROCE_HDR_ATOMACKETH))
		CMP(atomic_ack);
	CMP(payload_len);
	if (a->payload_len && memcmp(a->payload, b->payload, a->payload_len)) {
		snprintf(why, n, "payload content differs");
		return false;
	}
	return true;
}

/* A heap copy of exactly len bytes, so ASan flags any read past the end. */
static inline uint8_t *exact_copy(const uint8_t *src, uint32_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	if (!b) {
		perror("malloc");
		exit(99);
	}
	memcpy(b, src, len);
	return b;
}

#endif /* UROCE_TESTS_WIRE_TEST_H */
