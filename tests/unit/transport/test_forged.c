/* SPDX-License-Identifier: MIT */
/* Forged and malformed requests: a raw loop port sends 200 000 random
 * RoCEv2 packets (every opcode, PSNs around the expected one, valid and
 * invalid rkeys, addresses in, around and far from the region, lengths
 * often exactly the path MTU, right and wrong IP addresses and P_Keys) to
 * RC, UC and UD QPs, and between them well-formed multi-packet SENDs and
 * WRITEs (FIRST and MIDDLEs of exactly the MTU, a LAST of 1..MTU, PSNs in
 * sequence from the expected one). Nothing crashes (ASan/UBSan build), no
 * byte outside the region changes (guard zones on both sides), every
 * refusal is counted by reason, a QP knocked into ERR is brought back
 * through RESET, and MIDDLE and LAST packets are placed: their bytes are
 * found in the region, or in the receive buffer of a completion. */
#include "tr_raw.h"
#include "../dataplane/loop_test.h"

#define REGION 65536u
#define GUARD 65536u
#define NPKT 200000u
#define MTU 1024u
/* one forged iteration in MSG_EVERY is a whole multi-packet message */
#define MSG_EVERY 16u
#define MSG_MAX_PKTS 8u       /* FIRST + up to 6 MIDDLEs + LAST: 8 KiB, the receive buffer */
#define RECV_OFF 1024u        /* receive buffers: region + RECV_OFF, RECV_LEN bytes */
#define RECV_LEN 8192u
/* placements each (RC, UC) x (SEND, WRITE) must reach: about 3000 of
 * each are sent; a few are lost to the state the random traffic leaves
 * (a message already open at the QP), most must land */
#define MIN_PLACED 1500u

static const uint8_t ops[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
	0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17,
};

/* The port's GID of its IPv4 address (the family of the peer's GID). */
static uint8_t sgid_v4;

static uint8_t find_sgid_v4(struct uroce_context *ctx)
{
	uint8_t want[16], gid[16];

	roce_ipv4_mapped(want, loop_port_ipv4_be(0));
	for (int i = 0; uroce_query_gid(ctx, 1, i, gid) == 0; i++)
		if (memcmp(gid, want, 16) == 0)
			return (uint8_t)i;
	REQUIRE(0, "no GID of 10.0.0.1 on loop:0");
	return 0;
}

static void bring_up(struct uroce_qp *qp, enum uroce_qp_type type, uint32_t peer_qpn, uint32_t psn)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RESET;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE) == 0, "reset: %s", uroce_last_error());
	memset(&a, 0, sizeof(a));
	a.dest_qp_num = peer_qpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 4;
	a.ah_attr.dgid[10] = a.ah_attr.dgid[11] = 0xff;
	a.ah_attr.dgid[12] = 10;
	a.ah_attr.dgid[15] = 2;
	a.ah_attr.sgid_index = sgid_v4;
	a.sq_psn = 0;
	a.timeout = 10;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	tr_raw_connect(qp, type, &a);
}

static void post_recvs(struct uroce_qp *qp, struct uroce_mr *mr, uint8_t *region)
{
	for (;;) {
		struct uroce_sge sg = { (uint64_t)(uintptr_t)(region + RECV_OFF), RECV_LEN, mr->lkey };
		struct uroce_recv_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 };

		if (uroce_post_recv(qp, &wr, NULL))
			return;
	}
}

static uint32_t expected_psn(struct uroce_qp *qp)
{
	struct uroce_qp_attr qa;

	REQUIRE(uroce_qp_query(qp, &qa, NULL) == 0, "query: %s", uroce_last_error());
	return qa.rq_psn;
}

/* Send one frame from the raw port and let the context take it. */
static void forge(struct loop_fabric *fab, struct uroce_context *ctx, struct port *raw, const struct roce_pkt *pkt)
{
	if (tr_raw_tx(raw, pkt) == -1)
		return; /* not buildable: nothing sent, nothing to run */
	loop_fabric_advance(fab, 1000);
	uroce_progress(ctx);
	{
		struct uroce_frame in[64];
		uint16_t got = port_rx_burst(raw, in, 64);

		port_free(raw, in, got);
	}
}

/* Payload byte i of message m: differs between messages and from the fill. */
static uint8_t msg_byte(uint32_t m, uint32_t i)
{
	return (uint8_t)(m * 89u + i * 5u + (i >> 10) * 3u + 0x11u);
}

/* What the well-formed messages reached, per QP (RC, UC) and kind. */
struct msg_count {
	unsigned sent[2][2];   /* [qp][0 = SEND, 1 = WRITE] */
	unsigned placed[2][2]; /* every byte found where it belongs */
	unsigned middles[2][2];
	unsigned lasts[2][2];
};

/* A well-formed message of npkt packets (FIRST, MIDDLEs of MTU, LAST of
 * last bytes) from the expected PSN on, then the proof of placement: for
 * a WRITE the bytes in the region, for a SEND (or a WRITE with immediate)
 * the completion and, for a SEND, the receive buffer. */
static void send_message(struct loop_fabric *fab, struct uroce_context *ctx, struct port *raw, struct uroce_qp *qp,
                         unsigned t, struct uroce_cq *cq, struct uroce_mr *mr, uint8_t *region, struct test_rng *rng,
                         uint32_t m, struct msg_count *mc)
{
	static uint8_t payload[MSG_MAX_PKTS * MTU];
	bool write = test_rng_below(rng, 2), imm = test_rng_below(rng, 2);
	uint32_t npkt = 3 + (uint32_t)test_rng_below(rng, MSG_MAX_PKTS - 2);
	uint32_t last = 1 + (uint32_t)test_rng_below(rng, MTU), total = (npkt - 1) * MTU + last;
	/* WRITEs land past the receive buffers, 8-byte aligned or not */
	uint64_t off = RECV_OFF + RECV_LEN + test_rng_below(rng, REGION - RECV_OFF - RECV_LEN - total + 1);
	uint32_t psn = expected_psn(qp);
	struct uroce_wc wc[64];
	bool completed = false;
	int n;

	for (uint32_t i = 0; i < total; i++)
		payload[i] = msg_byte(m, i);
	mc->sent[t][write]++;
	for (uint32_t k = 0; k < npkt; k++) {
		struct roce_pkt pkt;
		bool is_last = k == npkt - 1;
		uint8_t op;

		if (write)
			op = k == 0 ? ROCE_OP_WRITE_FIRST : !is_last ? ROCE_OP_WRITE_MIDDLE :
			     imm ? ROCE_OP_WRITE_LAST_IMM : ROCE_OP_WRITE_LAST;
		else
			op = k == 0 ? ROCE_OP_SEND_FIRST : !is_last ? ROCE_OP_SEND_MIDDLE :
			     imm ? ROCE_OP_SEND_LAST_IMM : ROCE_OP_SEND_LAST;
		tr_raw_pkt(&pkt, raw, 0xc000);
		pkt.opcode = (uint8_t)((t == 0 ? ROCE_TR_RC : ROCE_TR_UC) | op);
		pkt.dqpn = uroce_qp_num(qp);
		pkt.psn = (psn + k) & ROCE_PSN_MASK;
		pkt.ackreq = is_last;
		pkt.imm = m;
		pkt.reth.va = (uint64_t)(uintptr_t)(region + off);
		pkt.reth.rkey = mr->rkey;
		pkt.reth.dma_len = total;
		pkt.payload = payload + k * MTU;
		pkt.payload_len = is_last ? last : MTU;
		forge(fab, ctx, raw, &pkt);
	}
	while ((n = uroce_poll_cq(cq, 64, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].qp_num != uroce_qp_num(qp) || wc[i].status != UROCE_WC_SUCCESS ||
			    wc[i].byte_len != total)
				continue;
			if (write && imm && wc[i].opcode == UROCE_WC_RECV_RDMA_WITH_IMM && wc[i].imm_data == htobe32(m))
				completed = true;
			if (!write && wc[i].opcode == UROCE_WC_RECV &&
			    (!imm || wc[i].imm_data == htobe32(m)) && memcmp(region + RECV_OFF, payload, total) == 0)
				completed = true;
		}
	}
	if (write && memcmp(region + off, payload, total) == 0)
		completed = !imm || completed;
	if (!completed)
		return;
	mc->placed[t][write]++;
	mc->middles[t][write] += npkt - 2;
	mc->lasts[t][write]++;
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
	struct msg_count mc;
	unsigned wrong_sent[3] = { 0, 0, 0 };
	const enum uroce_qp_type types[3] = { UROCE_QPT_RC, UROCE_QPT_UC, UROCE_QPT_UD };
	struct uroce_port_stats st;
	uint64_t refused = 0;
	unsigned restarts = 0;

	memset(&mc, 0, sizeof(mc));
	REQUIRE(fab && loop_fabric_connect(fab, 0, 1, NULL, NULL) == 0, "fabric");
	ca.loop_fabric = fab;
	REQUIRE(uroce_context_create(&ctx, &ca) == 0, "ctx: %s", uroce_last_error());
	raw = open_loop_port(fab, 1);
	sgid_v4 = find_sgid_v4(ctx);
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
		uint64_t r = test_rng_next(&rng);
		uint32_t epsn;

		if (n % MSG_EVERY == MSG_EVERY - 1) {
			/* a well-formed message to RC or UC, from a working QP */
			t = (unsigned)test_rng_below(&rng, 2);
			if (tr_qp_state(qp[t]) == UROCE_QPS_ERR) {
				bring_up(qp[t], types[t], 0x99, expected_psn(qp[t]));
				post_recvs(qp[t], mr, region);
				restarts++;
			}
			send_message(fab, ctx, raw, qp[t], t, cq, mr, region, &rng, n, &mc);
			continue;
		}
		if ((n & 1023) == 500) { /* never a message iteration */
			/* a WRITE the QP would take, but from the wrong host, to
			 * the wrong address or in another partition: nothing lands */
			static const char *const what[3] = { "source address", "destination address", "P_Key" };
			unsigned bad = (unsigned)test_rng_below(&rng, 3);
			uint8_t data[64];
			uint8_t *at = region + REGION - sizeof(data);
			uint8_t before[sizeof(data)];

			t = (unsigned)test_rng_below(&rng, 2);
			if (tr_qp_state(qp[t]) == UROCE_QPS_ERR) {
				bring_up(qp[t], types[t], 0x99, expected_psn(qp[t]));
				post_recvs(qp[t], mr, region);
				restarts++;
			}
			memcpy(before, at, sizeof(data));
			for (unsigned i = 0; i < sizeof(data); i++)
				data[i] = (uint8_t)~before[i];
			tr_raw_pkt(&pkt, raw, 0xc000);
			pkt.opcode = (uint8_t)((t == 0 ? ROCE_TR_RC : ROCE_TR_UC) | ROCE_OP_WRITE_ONLY);
			pkt.dqpn = uroce_qp_num(qp[t]);
			pkt.psn = expected_psn(qp[t]);
			pkt.reth.va = (uint64_t)(uintptr_t)at;
			pkt.reth.rkey = mr->rkey;
			pkt.reth.dma_len = sizeof(data);
			pkt.payload = data;
			pkt.payload_len = sizeof(data);
			if (bad == 0)
				pkt.sip[15] ^= 0x0b;
			else if (bad == 1)
				pkt.dip[14] ^= 0x40;
			else
				pkt.pkey = 0x1234;
			forge(fab, ctx, raw, &pkt);
			CHECK(memcmp(at, before, sizeof(data)) == 0, "a WRITE with the wrong %s was placed", what[bad]);
			wrong_sent[bad]++;
			continue;
		}
		tr_raw_pkt(&pkt, raw, 0xc000);
		/* sometimes not the peer, not us, or not our partition */
		switch (r >> 20 & 63) {
		case 0: pkt.sip[15] ^= 0x0b; break;
		case 1: pkt.dip[14] ^= 0x40; break;
		case 2: pkt.pkey = 0x1234; break;
		default: break;
		}
		/* mostly the QP's own transport, sometimes another */
		pkt.opcode = (uint8_t)((r & 7) ? (t == 0 ? ROCE_TR_RC : t == 1 ? ROCE_TR_UC : ROCE_TR_UD)
		                                : (test_rng_below(&rng, 4) << 5));
		pkt.opcode |= ops[test_rng_below(&rng, sizeof(ops))];
		if (!roce_opcode_info(pkt.opcode))
			continue;
		pkt.dqpn = (r >> 3 & 31) ? uroce_qp_num(qp[t]) : (uint32_t)test_rng_below(&rng, 1 << 24);
		/* PSN: the expected one, nearby, or anywhere */
		epsn = expected_psn(qp[t]);
		pkt.psn = (uint32_t)((r >> 8 & 3) ? epsn + (uint32_t)test_rng_below(&rng, 3) - 1
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
		if (roce_opcode_info(pkt.opcode)->mask & ROCE_PAYLOAD) {
			/* a quarter exactly the MTU, which FIRST and MIDDLE need */
			pkt.payload_len = (r >> 18 & 3) ? (uint32_t)test_rng_below(&rng, 1100) : MTU;
			if (r >> 26 & 1)
				pkt.reth.dma_len = pkt.payload_len + (uint32_t)(r >> 27 & 3) * MTU;
		}
		forge(fab, ctx, raw, &pkt);
		{
			struct uroce_wc wc[64];

			while (uroce_poll_cq(cq, 64, wc) > 0)
				;
		}
		if ((n & 63) == 0) {
			for (int i = 0; i < 3; i++) {
				if (tr_qp_state(qp[i]) == UROCE_QPS_ERR) {
					bring_up(qp[i], types[i], 0x99, expected_psn(qp[i]));
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
	printf("forged: %u iterations, %llu refused by reason, %u QP restarts from ERR\n", NPKT,
	       (unsigned long long)refused, restarts);
	for (unsigned t = 0; t < 2; t++) {
		for (unsigned w = 0; w < 2; w++) {
			printf("  %s %-5s messages: %u sent, %u placed (%u MIDDLE, %u LAST packets)\n", t ? "UC" : "RC",
			       w ? "WRITE" : "SEND", mc.sent[t][w], mc.placed[t][w], mc.middles[t][w], mc.lasts[t][w]);
			CHECK(mc.placed[t][w] >= MIN_PLACED && mc.placed[t][w] * 10 >= mc.sent[t][w] * 9 &&
			      mc.middles[t][w] >= mc.placed[t][w] && mc.lasts[t][w] == mc.placed[t][w],
			      "%s %s: only %u of %u multi-packet messages placed", t ? "UC" : "RC", w ? "WRITE" : "SEND",
			      mc.placed[t][w], mc.sent[t][w]);
		}
	}
	CHECK(refused > NPKT / 4, "only %llu refusals counted", (unsigned long long)refused);
	CHECK(st.drops[UROCE_DROP_NO_QP] && st.drops[UROCE_DROP_BAD_RKEY] && st.drops[UROCE_DROP_OUT_OF_BOUNDS] &&
	      st.drops[UROCE_DROP_BAD_QKEY] && st.drops[UROCE_DROP_PSN_OUT_OF_WINDOW] && st.drops[UROCE_DROP_BAD_OPCODE] &&
	      st.drops[UROCE_DROP_STALE_RESPONSE],
	      "a refusal reason was never counted");
	CHECK(wrong_sent[0] && wrong_sent[1] && wrong_sent[2], "a wrong-address case was never sent");
	CHECK(st.drops[UROCE_DROP_BAD_SRC_ADDR] >= wrong_sent[0], "bad_src_addr: %llu counted, %u sent",
	      (unsigned long long)st.drops[UROCE_DROP_BAD_SRC_ADDR], wrong_sent[0]);
	CHECK(st.drops[UROCE_DROP_BAD_DST_ADDR] >= wrong_sent[1], "bad_dst_addr: %llu counted, %u sent",
	      (unsigned long long)st.drops[UROCE_DROP_BAD_DST_ADDR], wrong_sent[1]);
	CHECK(st.drops[UROCE_DROP_BAD_PKEY] >= wrong_sent[2], "bad_pkey: %llu counted, %u sent",
	      (unsigned long long)st.drops[UROCE_DROP_BAD_PKEY], wrong_sent[2]);
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
