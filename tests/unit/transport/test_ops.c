/* SPDX-License-Identifier: MIT */
/* Every opcode over RC (and UC/UD where valid) on a perfect loop wire:
 * segmentation at several MTUs, SGLs, inline data, immediates, READ of
 * many packets, atomics, UD's GRH and Q_Key, PSNs wrapping past 2^24. */
#include "tr_test.h"

#define STEPS 200000u

static void post_recv(struct tr_side *s, uint64_t id, uint32_t off, uint32_t len)
{
	struct uroce_sge sg;
	struct uroce_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };
	struct uroce_recv_wr *bad;

	tr_sge(&sg, s, off, len);
	REQUIRE(uroce_post_recv(s->qp, &wr, &bad) == 0, "post_recv: %s", uroce_last_error());
}

static void post(struct tr_side *s, struct uroce_send_wr *wr)
{
	struct uroce_send_wr *bad;
	int rc = uroce_post_send(s->qp, wr, &bad);

	REQUIRE(rc == 0, "post_send: %s", uroce_last_error());
}

static void expect_wc(struct tr_pair *p, struct uroce_cq *cq, uint64_t id, enum uroce_wc_status st,
                      enum uroce_wc_opcode op, uint32_t len, const char *what)
{
	struct uroce_wc wc;

	if (tr_wait(p, cq, &wc, STEPS)) {
		CHECK(0, "%s: no completion", what);
		return;
	}
	CHECK(wc.wr_id == id, "%s: wr_id %llu want %llu", what, (unsigned long long)wc.wr_id, (unsigned long long)id);
	CHECK(wc.status == st, "%s: status %s want %s", what, uroce_wc_status_str(wc.status), uroce_wc_status_str(st));
	if (st == UROCE_WC_SUCCESS) {
		CHECK(wc.opcode == op, "%s: opcode %d want %d", what, wc.opcode, op);
		if (len != UINT32_MAX)
			CHECK(wc.byte_len == len, "%s: byte_len %u want %u", what, wc.byte_len, len);
	}
}

static void test_rc_uc(enum uroce_qp_type type, enum uroce_mtu mtu)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_sge sg[4];
	struct uroce_send_wr wr;
	struct uroce_wc wc;
	const uint32_t sizes[] = { 0, 1, 255, 256, 1023, 1024, 1025, 4096, 5000, 65536, 100000 };
	uint32_t m = uroce_mtu_bytes(mtu);
	char what[96];

	tr_opts_default(&o, type);
	o.mtu = mtu;
	tr_open(&p, &o, 1, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t n = sizes[k];

		/* SEND with a 3-element SGL, and SEND_WITH_IMM */
		tr_fill(a->buf, n, k);
		memset(b->buf, 0, 3 * 65536 + 100000);
		post_recv(b, 100 + k, 0, 200000);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = k;
		wr.opcode = (k & 1) ? UROCE_WR_SEND_WITH_IMM : UROCE_WR_SEND;
		wr.imm_data = htobe32(0xabc00000u + k);
		wr.send_flags = UROCE_SEND_SIGNALED;
		tr_sge(&sg[0], a, 0, n / 3);
		tr_sge(&sg[1], a, n / 3, n / 3);
		tr_sge(&sg[2], a, 2 * (n / 3), n - 2 * (n / 3));
		wr.sg_list = sg;
		wr.num_sge = 3;
		post(a, &wr);
		snprintf(what, sizeof(what), "%s mtu %u send %u", type == UROCE_QPT_RC ? "RC" : "UC", m, n);
		expect_wc(&p, a->scq, k, UROCE_WC_SUCCESS, UROCE_WC_SEND, UINT32_MAX, what);
		if (tr_wait(&p, b->rcq, &wc, STEPS) == 0) {
			CHECK(wc.status == UROCE_WC_SUCCESS && wc.byte_len == n && wc.wr_id == 100 + k,
			      "%s: recv status %s len %u", what, uroce_wc_status_str(wc.status), wc.byte_len);
			CHECK(!!(wc.wc_flags & UROCE_WC_WITH_IMM) == (k & 1), "%s: imm flag", what);
			if (k & 1)
				CHECK(be32toh(wc.imm_data) == 0xabc00000u + k, "%s: imm 0x%x", what, be32toh(wc.imm_data));
			CHECK(memcmp(a->buf, b->buf, n) == 0, "%s: data differs", what);
		} else {
			CHECK(0, "%s: no recv completion", what);
		}

		/* RDMA WRITE (unsignaled, then signaled WRITE_WITH_IMM) */
		tr_fill(a->buf, n, k + 50);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 1000 + k;
		wr.opcode = UROCE_WR_RDMA_WRITE;
		tr_sge(&sg[0], a, 0, n);
		wr.sg_list = sg;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + 300000);
		wr.wr.rdma.rkey = b->mr->rkey;
		post(a, &wr);
		post_recv(b, 200 + k, 0, 16);
		wr.wr_id = 2000 + k;
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.imm_data = htobe32(k);
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + 500000);
		post(a, &wr);
		snprintf(what, sizeof(what), "%s mtu %u write %u", type == UROCE_QPT_RC ? "RC" : "UC", m, n);
		expect_wc(&p, a->scq, 2000 + k, UROCE_WC_SUCCESS, UROCE_WC_RDMA_WRITE, UINT32_MAX, what);
		expect_wc(&p, b->rcq, 200 + k, UROCE_WC_SUCCESS, UROCE_WC_RECV_RDMA_WITH_IMM, n, what);
		CHECK(memcmp(a->buf, b->buf + 300000, n) == 0, "%s: data differs", what);
		CHECK(memcmp(a->buf, b->buf + 500000, n) == 0, "%s: imm data differs", what);

		if (type != UROCE_QPT_RC)
			continue;
		/* RDMA READ into two SGEs */
		tr_fill(b->buf + 700000, n, k + 99);
		memset(a->buf + 200000, 0, n);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 3000 + k;
		wr.opcode = UROCE_WR_RDMA_READ;
		wr.send_flags = UROCE_SEND_SIGNALED;
		tr_sge(&sg[0], a, 200000, n / 2);
		tr_sge(&sg[1], a, 200000 + n / 2, n - n / 2);
		wr.sg_list = sg;
		wr.num_sge = 2;
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(b->buf + 700000);
		wr.wr.rdma.rkey = b->mr->rkey;
		post(a, &wr);
		snprintf(what, sizeof(what), "RC mtu %u read %u", m, n);
		expect_wc(&p, a->scq, 3000 + k, UROCE_WC_SUCCESS, UROCE_WC_RDMA_READ, n, what);
		CHECK(memcmp(a->buf + 200000, b->buf + 700000, n) == 0, "%s: data differs", what);
	}

	/* inline SEND: the buffer may change right after posting */
	if (1) {
		uint8_t tmp[200];

		tr_fill(tmp, sizeof(tmp), 7);
		post_recv(b, 77, 0, 1000);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 7;
		wr.opcode = UROCE_WR_SEND;
		wr.send_flags = UROCE_SEND_INLINE | UROCE_SEND_SIGNALED;
		sg[0].addr = (uint64_t)(uintptr_t)tmp;
		sg[0].length = sizeof(tmp);
		sg[0].lkey = 0; /* inline: no lkey needed */
		wr.sg_list = sg;
		wr.num_sge = 1;
		post(a, &wr);
		memset(tmp, 0, sizeof(tmp));
		expect_wc(&p, a->scq, 7, UROCE_WC_SUCCESS, UROCE_WC_SEND, UINT32_MAX, "inline");
		expect_wc(&p, b->rcq, 77, UROCE_WC_SUCCESS, UROCE_WC_RECV, sizeof(tmp), "inline recv");
		tr_fill(tmp, sizeof(tmp), 7);
		CHECK(memcmp(tmp, b->buf, sizeof(tmp)) == 0, "inline data differs");
	}

	if (type == UROCE_QPT_RC) {
		/* atomics */
		uint64_t *target = (uint64_t *)(b->buf + 800000);
		uint64_t *res = (uint64_t *)(a->buf + 900000);

		*target = 5;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 50;
		wr.opcode = UROCE_WR_ATOMIC_FETCH_AND_ADD;
		wr.send_flags = UROCE_SEND_SIGNALED;
		tr_sge(&sg[0], a, 900000, 8);
		wr.sg_list = sg;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)target;
		wr.wr.atomic.rkey = b->mr->rkey;
		wr.wr.atomic.compare_add = 10;
		post(a, &wr);
		expect_wc(&p, a->scq, 50, UROCE_WC_SUCCESS, UROCE_WC_FETCH_ADD, 8, "fetch_add");
		CHECK(*res == 5 && *target == 15, "fetch_add: got %llu, target %llu", (unsigned long long)*res,
		      (unsigned long long)*target);
		wr.wr_id = 51;
		wr.opcode = UROCE_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 15;
		wr.wr.atomic.swap = 99;
		post(a, &wr);
		expect_wc(&p, a->scq, 51, UROCE_WC_SUCCESS, UROCE_WC_COMP_SWAP, 8, "cmp_swap");
		CHECK(*res == 15 && *target == 99, "cmp_swap hit: got %llu, target %llu", (unsigned long long)*res,
		      (unsigned long long)*target);
		wr.wr_id = 52;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 7;
		post(a, &wr);
		expect_wc(&p, a->scq, 52, UROCE_WC_SUCCESS, UROCE_WC_COMP_SWAP, 8, "cmp_swap miss");
		CHECK(*res == 99 && *target == 99, "cmp_swap miss: got %llu, target %llu", (unsigned long long)*res,
		      (unsigned long long)*target);
		/* misaligned atomic refused at post time */
		wr.wr.atomic.remote_addr += 4;
		CHECK(uroce_post_send(a->qp, &wr, NULL) == -EINVAL, "misaligned atomic accepted");
	} else {
		memset(&wr, 0, sizeof(wr));
		wr.opcode = UROCE_WR_RDMA_READ;
		CHECK(uroce_post_send(a->qp, &wr, NULL) == -EINVAL, "UC READ accepted");
		CHECK(strstr(uroce_last_error(), "not valid on a UC QP") != NULL, "msg: %s", uroce_last_error());
	}
	CHECK(uroce_poll_cq(a->scq, 1, &wc) == 0, "stray send completion");
	/* unsignaled SENDs complete silently; the signaled one after them reports */
	for (int i = 0; i < 6; i++) {
		post_recv(b, 500 + (uint64_t)i, 0, 4096);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 600 + (uint64_t)i;
		wr.opcode = UROCE_WR_SEND;
		wr.send_flags = i == 5 ? UROCE_SEND_SIGNALED : 0;
		tr_sge(&sg[0], a, 0, 2000);
		wr.sg_list = sg;
		wr.num_sge = 1;
		post(a, &wr);
	}
	expect_wc(&p, a->scq, 605, UROCE_WC_SUCCESS, UROCE_WC_SEND, UINT32_MAX, "signaled after unsignaled");
	for (int i = 0; i < 6; i++)
		expect_wc(&p, b->rcq, 500 + (uint64_t)i, UROCE_WC_SUCCESS, UROCE_WC_RECV, 2000, "recv of unsignaled");
	CHECK(uroce_poll_cq(a->scq, 1, &wc) == 0, "unsignaled send completed");
	tr_close(&p);
}

static void test_ud(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_ah *ah;
	struct uroce_ah_attr aa;
	struct uroce_port_attr pa;
	struct uroce_sge sg;
	struct uroce_send_wr wr;
	struct uroce_wc wc;
	struct uroce_port_stats st;

	tr_opts_default(&o, UROCE_QPT_UD);
	tr_open(&p, &o, 2, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	uroce_query_port(b->ctx, 1, &pa);
	memset(&aa, 0, sizeof(aa));
	REQUIRE(uroce_query_gid(b->ctx, 1, tr_gid_index, aa.dgid) == 0, "gid");
	aa.sgid_index = (uint8_t)tr_gid_index; /* the source of the dgid's family */
	REQUIRE(uroce_ah_create(a->pd, &aa, &ah) == 0, "ah: %s", uroce_last_error());
	for (uint32_t n = 0; n <= 4096; n = n ? n * 4 : 1) {
		post_recv(b, n, 0, 40 + 4096);
		tr_fill(a->buf, n, n);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = n;
		wr.opcode = n & 1 ? UROCE_WR_SEND_WITH_IMM : UROCE_WR_SEND;
		wr.imm_data = htobe32(n);
		wr.send_flags = UROCE_SEND_SIGNALED;
		tr_sge(&sg, a, 0, n);
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = uroce_qp_num(b->qp);
		wr.wr.ud.remote_qkey = 0x80000000u; /* high bit: use the QP's qkey */
		post(a, &wr);
		expect_wc(&p, a->scq, n, UROCE_WC_SUCCESS, UROCE_WC_SEND, UINT32_MAX, "ud send");
		if (tr_wait(&p, b->rcq, &wc, STEPS)) {
			CHECK(0, "ud %u: no recv", n);
			continue;
		}
		CHECK(wc.status == UROCE_WC_SUCCESS && wc.byte_len == 40 + n, "ud %u: %s len %u", n,
		      uroce_wc_status_str(wc.status), wc.byte_len);
		CHECK(wc.wc_flags & UROCE_WC_GRH, "ud: no GRH flag");
		CHECK(wc.src_qp == uroce_qp_num(a->qp), "ud: src_qp 0x%x", wc.src_qp);
		CHECK(memcmp(b->buf + 40, a->buf, n) == 0, "ud %u: data differs", n);
		if (tr_gid_index == 2) {
			uint8_t src[16];

			/* IPv6: the GRH area is the IPv6 header */
			uroce_query_gid(a->ctx, 1, 2, src);
			CHECK((b->buf[0] >> 4) == 6 && memcmp(b->buf + 8, src, 16) == 0,
			      "ud: GRH area does not hold the sender's IPv6 header");
		} else {
			/* the IPv4 header sits in the last 20 bytes of the GRH area */
			CHECK(b->buf[20] == 0x45 && memcmp(b->buf + 20 + 12, (const uint8_t[]){ 10, 0, 0, 1 }, 4) == 0,
			      "ud: GRH area does not hold the sender's IPv4 header");
		}
	}
	/* over one MTU: refused at post */
	tr_sge(&sg, a, 0, 8192);
	CHECK(uroce_post_send(a->qp, &wr, NULL) == -EINVAL, "UD over MTU accepted");
	/* wrong qkey: dropped and counted */
	post_recv(b, 9, 0, 5000);
	tr_sge(&sg, a, 0, 10);
	wr.wr.ud.remote_qkey = 0x1234;
	wr.wr_id = 99;
	post(a, &wr);
	expect_wc(&p, a->scq, 99, UROCE_WC_SUCCESS, UROCE_WC_SEND, UINT32_MAX, "ud bad qkey send");
	for (int i = 0; i < 100; i++)
		tr_step(&p);
	CHECK(uroce_poll_cq(b->rcq, 1, &wc) == 0, "bad qkey delivered");
	uroce_port_stats(b->ctx, 1, &st);
	CHECK(st.drops[UROCE_DROP_BAD_QKEY] == 1, "bad_qkey drops %llu", (unsigned long long)st.drops[UROCE_DROP_BAD_QKEY]);
	CHECK(uroce_ah_destroy(ah) == 0, "ah_destroy");
	tr_close(&p);
}

int main(void)
{
	test_rc_uc(UROCE_QPT_RC, UROCE_MTU_1024);
	test_rc_uc(UROCE_QPT_RC, UROCE_MTU_256);
	test_rc_uc(UROCE_QPT_RC, UROCE_MTU_4096);
	test_rc_uc(UROCE_QPT_UC, UROCE_MTU_1024);
	test_rc_uc(UROCE_QPT_UC, UROCE_MTU_4096);
	test_ud();
	/* the same over IPv6 GIDs */
	tr_gid_index = 2;
	test_rc_uc(UROCE_QPT_RC, UROCE_MTU_4096);
	test_rc_uc(UROCE_QPT_UC, UROCE_MTU_1024);
	test_ud();
	{
		struct uroce_context *ctx;
		struct uroce_context_attr ca = { .port = "loop:0" };
		struct loop_fabric *fab = loop_fabric_create(1, 1);
		uint8_t gid[16];

		ca.loop_fabric = fab;
		REQUIRE(fab && uroce_context_create(&ctx, &ca) == 0, "ctx");
		CHECK(uroce_query_gid(ctx, 1, 3, gid) == -ENOENT, "gid index 3 (past a loop port's 3) accepted");
		CHECK(uroce_query_gid(ctx, 1, 1, gid) == 0 && gid[10] == 0xff && gid[12] == 10, "IPv4-mapped gid");
		CHECK(uroce_query_gid(ctx, 1, 2, gid) == 0 && gid[0] == 0xfd && gid[15] == 1, "loop IPv6 gid");
		uroce_context_destroy(ctx);
		loop_fabric_destroy(fab);
	}
	return test_done("transport_ops");
}
