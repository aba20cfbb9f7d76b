/* Forged and malformed requests: a raw loop port sends 200 000 random
 * RoCEv2 packets (every opcode, PSNs around the expected one, valid and
 * invalid rkeys, addresses in, around and far from the region, any
 * length) to RC, UC and UD QPs. Nothing crashes (ASan/UBSan build), no
 * byte outside the registered region changes (guard zones on both sides),
 * every refusal is counted by reason, and a QP knocked into ERR is brought
 * back through RESET. */
#include "tr_test.h"
#include "../dataplane/loop_test.h"

#define REGION 65536u
#define GUARD 65536u
#define NPKT 200000u

static const uint8_t ops[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
	0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17,
};

static void bring_up(struct uroce_qp *qp, enum uroce_qp_type type, uint32_t peer_qpn, uint32_t psn)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE) == 0, "reset: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x42;
	a.qp_access_flags = 15;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                                        (type == UROCE_QPT_UD ? UROCE_QP_QKEY : UROCE_QP_ACCESS_FLAGS)) == 0,
	        "init: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.dgid[10] = a.ah_attr.dgid[11] = 0xff;
	a.ah_attr.dgid[12] = 10;
	a.ah_attr.dgid[15] = 2;
	if (type == UROCE_QPT_UD)
		REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE) == 0, "rtr: %s", uroce_last_error());
	else
		REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
		                                        UROCE_QP_RQ_PSN |
		                                        (type == UROCE_QPT_RC ? UROCE_QP_MAX_DEST_RD_ATOMIC |
		                                                                        UROCE_QP_MIN_RNR_TIMER : 0)) == 0,
		        "rtr: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 10;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 1;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN |
	                                        (type == UROCE_QPT_RC ? UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                                                        UROCE_QP_RNR_RETRY |
	                                                                        UROCE_QP_MAX_QP_RD_ATOMIC : 0)) == 0,
	        "rts: %s", uroce_last_error());
}

static void post_recvs(struct uroce_qp *qp, struct uroce_mr *mr, uint8_t *region)
{
	for (;;) {
		struct uroce_sge sg = { (uint64_t)(uintptr_t)(region + 1024), 8192, mr->lkey };
		struct uroce_recv_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 };

		if (uroce_post_recv(qp, &wr, NULL))
			return;
	}
}

int main(void)
{
	struct loop_fabric *fab = loop_fabric_create(2, 77);
	struct uroce_context_attr ca = { .port = "loop:0" };
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_mr *mr;
	struct uroce_qp *qp[3];
	struct port *raw;
	struct test_rng rng = { 99 };
	uint8_t *mem, *region, *shadow;
	uint32_t epsn[3] = { 0, 0, 0 };
	const enum uroce_qp_type types[3] = { UROCE_QPT_RC, UROCE_QPT_UC, UROCE_QPT_UD };
	struct uroce_port_stats st;
	uint64_t refused = 0;
	unsigned restarts = 0;

	REQUIRE(fab && loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "fabric");
	ca.loop_fabric = fab;
	REQUIRE(uroce_context_create(&ctx, &ca) == 0, "ctx: %s", uroce_last_error());
	raw = open_loop_port(fab, 1);
	REQUIRE(uroce_pd_alloc(ctx, &pd) == 0 && uroce_cq_create(ctx, 1 << 16, &cq) == 0, "pd/cq");
	mem = malloc(GUARD + REGION + GUARD);
	shadow = malloc(GUARD + REGION + GUARD);
	REQUIRE(mem && shadow, "memory");
	tr_fill(mem, GUARD + REGION + GUARD, 3);
	memcpy(shadow, mem, GUARD + REGION + GUARD);
	region = mem + GUARD;
	REQUIRE(uroce_mr_reg(pd, region, REGION, 15, &mr) == 0, "mr: %s", uroce_last_error());
	for (int i = 0; i < 3; i++) {
		struct uroce_qp_init_attr ia = { .qp_type = types[i], .send_cq = cq, .recv_cq = cq };

		ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
		ia.cap.max_recv_sge = 1;
		REQUIRE(uroce_qp_create(pd, &ia, &qp[i]) == 0, "qp: %s", uroce_last_error());
		bring_up(qp[i], types[i], 0x99, 0);
		post_recvs(qp[i], mr, region);
	}

	for (uint32_t n = 0; n < NPKT; n++) {
		unsigned t = (unsigned)test_rng_below(&rng, 3);
		struct roce_pkt pkt;
		struct uroce_frame f;
		uint64_t r = test_rng_next(&rng);
		int len;

		memset(&pkt, 0, sizeof(pkt));
		memcpy(pkt.smac, raw->mac, 6);
		loop_port_mac(0, pkt.dmac);
		roce_ipv4_mapped(pkt.sip, raw->ipv4_be);
		roce_ipv4_mapped(pkt.dip, loop_port_ipv4_be(0));
		pkt.ttl = 64;
		pkt.sport = 0xc000;
		pkt.dport = ROCE_UDP_PORT;
		pkt.pkey = ROCE_PKEY_DEFAULT;
		/* mostly the QP's own transport, sometimes another */
		pkt.opcode = (uint8_t)((r & 7) ? (t == 0 ? ROCE_TR_RC : t == 1 ? ROCE_TR_UC : ROCE_TR_UD)
		                                : (test_rng_below(&rng, 4) << 5));
		pkt.opcode |= ops[test_rng_below(&rng, sizeof(ops))];
		if (!roce_opcode_info(pkt.opcode))
			continue;
		pkt.dqpn = (r >> 3 & 31) ? uroce_qp_num(qp[t]) : (uint32_t)test_rng_below(&rng, 1 << 24);
		/* PSN: the expected one, nearby, or anywhere */
		pkt.psn = (uint32_t)((r >> 8 & 3) ? epsn[t] + (uint32_t)test_rng_below(&rng, 3) - 1
		                                  : test_rng_below(&rng, 1 << 24)) & ROCE_PSN_MASK;
		pkt.ackreq = r >> 10 & 1;
		{
			/* address: inside, straddling either edge, or far away */
			uint64_t base = (uint64_t)(uintptr_t)region;
			uint64_t choice = test_rng_below(&rng, 5);
			uint64_t va = choice == 0 ? base + test_rng_below(&rng, REGION) :
			              choice == 1 ? base + REGION - test_rng_below(&rng, 2048) :
			              choice == 2 ? base - test_rng_below(&rng, 2048) :
			              choice == 3 ? test_rng_next(&rng) : base + (test_rng_below(&rng, REGION / 8) * 8);

			pkt.reth.va = va;
			pkt.atomic.va = va;
		}
		pkt.reth.rkey = (r >> 12 & 3) ? mr->rkey : (uint32_t)test_rng_next(&rng);
		pkt.atomic.rkey = pkt.reth.rkey;
		pkt.reth.dma_len = (uint32_t)((r >> 14 & 3) ? test_rng_below(&rng, 4096) : test_rng_next(&rng));
		pkt.deth.qkey = (r >> 16 & 3) ? 0x42 : (uint32_t)test_rng_next(&rng);
		pkt.deth.src_qp = 0x99;
		pkt.aeth.syndrome = (uint8_t)test_rng_next(&rng);
		pkt.aeth.msn = (uint32_t)test_rng_below(&rng, 1 << 24);
		if (roce_opcode_info(pkt.opcode)->mask & ROCE_PAYLOAD)
			pkt.payload_len = (uint32_t)test_rng_below(&rng, 1100);
		if (port_alloc(raw, &f, 1) != 1) {
			CHECK(0, "raw port: no frame");
			break;
		}
		len = roce_build(f.data, f.room, &pkt);
		if (len < 0) {
			port_free(raw, &f, 1);
			continue;
		}
		f.len = (uint32_t)len;
		if (port_tx_burst(raw, &f, 1) != 1)
			port_free(raw, &f, 1);
		if (pkt.psn == epsn[t] && pkt.dqpn == uroce_qp_num(qp[t]))
			epsn[t] = (epsn[t] + 1) & ROCE_PSN_MASK; /* a guess; the fuzz does not need it exact */
		loop_fabric_advance(fab, 1000);
		uroce_progress(ctx);
		{
			struct uroce_frame in[64];
			uint16_t got = port_rx_burst(raw, in, 64);

			port_free(raw, in, got);
		}
		{
			struct uroce_wc wc[64];

			while (uroce_poll_cq(cq, 64, wc) > 0)
				;
		}
		if ((n & 63) == 0) {
			for (int i = 0; i < 3; i++) {
				struct uroce_qp_attr qa;

				uroce_qp_query(qp[i], &qa, NULL);
				if (qa.qp_state == UROCE_QPS_ERR) {
					bring_up(qp[i], types[i], 0x99, epsn[i]);
					restarts++;
				}
				post_recvs(qp[i], mr, region);
			}
		}
	}
	CHECK(memcmp(mem, shadow, GUARD) == 0, "bytes before the region changed");
	CHECK(memcmp(mem + GUARD + REGION, shadow + GUARD + REGION, GUARD) == 0, "bytes after the region changed");
	uroce_port_stats(ctx, 1, &st);
	for (unsigned i = UROCE_DROP_NO_QP; i < UROCE_DROP__COUNT; i++) {
		if (st.drops[i])
			printf("  %-18s %llu\n", uroce_drop_reason_name(i), (unsigned long long)st.drops[i]);
		refused += st.drops[i];
	}
	printf("forged: %u packets, %llu refused by reason, %u QP restarts from ERR\n", NPKT,
	       (unsigned long long)refused, restarts);
	CHECK(refused > NPKT / 4, "only %llu refusals counted", (unsigned long long)refused);
	CHECK(st.drops[UROCE_DROP_NO_QP] && st.drops[UROCE_DROP_BAD_RKEY] && st.drops[UROCE_DROP_OUT_OF_BOUNDS] &&
	      st.drops[UROCE_DROP_BAD_QKEY] && st.drops[UROCE_DROP_PSN_OUT_OF_WINDOW] && st.drops[UROCE_DROP_BAD_OPCODE],
	      "a refusal reason was never counted");
	for (int i = 0; i < 3; i++)
		CHECK(uroce_qp_destroy(qp[i]) == 0, "destroy");
	CHECK(uroce_mr_dereg(mr) == 0 && uroce_cq_destroy(cq) == 0 && uroce_pd_free(pd) == 0, "teardown");
	CHECK(uroce_context_destroy(ctx) == 0, "ctx: %s", uroce_last_error());
	port_close(raw);
	CHECK(loop_fabric_free_frames(fab) > 0, "pool");
	loop_fabric_destroy(fab);
	free(mem);
	free(shadow);
	return test_done("transport_forged");
}
