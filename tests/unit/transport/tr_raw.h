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

#endif /* UROCE_TESTS_TR_RAW_H */
