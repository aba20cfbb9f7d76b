/* SPDX-License-Identifier: MIT */
/* The verbs objects and the rules around them: the QP state machine (legal
 * and illegal transitions, required and refused attributes, with their
 * messages), SRQ, MR revocation, and refused posts (the responder's
 * checks and RNR: test_rc_responder.c). */
#include <sys/mman.h>
#include <unistd.h>

#include "tr_test.h"

#define STEPS 200000u

static int modify(struct uroce_qp *qp, enum uroce_qp_state st, int mask)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	a.port_num = 1;
	a.path_mtu = UROCE_MTU_1024;
	a.ah_attr.dgid[10] = a.ah_attr.dgid[11] = 0xff;
	a.ah_attr.dgid[12] = 10;
	a.ah_attr.dgid[15] = 2;
	a.ah_attr.sgid_index = 1; /* IPv4-mapped, as the dgid */
	a.dest_qp_num = 0x11;
	a.timeout = 10;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	return uroce_qp_modify(qp, &a, mask);
}

static void test_state_machine(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_qp_attr qa;
	const int init_rc = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS;
	const int rtr_rc = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
	                   UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
	const int rts_rc = UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY |
	                   UROCE_QP_MAX_QP_RD_ATOMIC;
	struct uroce_send_wr wr = { 0 };
	struct uroce_qp *qp;

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 3, NULL, NULL);
	qp = p.s[0].qp;
	for (int i = 0; i < 2; i++) /* random, never a special QPN (0, 1, 0xffffff multicast) */
		CHECK(uroce_qp_num(p.s[i].qp) >= 2 && uroce_qp_num(p.s[i].qp) < 0xffffff, "QPN 0x%x",
		      uroce_qp_num(p.s[i].qp));
	CHECK(uroce_qp_num(qp) != uroce_qp_num(p.s[1].qp) || p.s[0].ctx != p.s[1].ctx, "QPN reused");
	/* back to RESET, then walk the legal path with errors on the way */
	CHECK(modify(qp, UROCE_QPS_RESET, UROCE_QP_STATE) == 0, "RTS->RESET: %s", uroce_last_error());
	uroce_qp_query(qp, &qa, NULL);
	CHECK(qa.qp_state == UROCE_QPS_RESET, "state %s", uroce_qp_state_str(qa.qp_state));
	CHECK(modify(qp, UROCE_QPS_RTR, rtr_rc) == -EINVAL, "RESET->RTR allowed");
	CHECK(strstr(uroce_last_error(), "RESET -> RTR is not allowed") != NULL, "msg: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_INIT, UROCE_QP_STATE | UROCE_QP_PORT) == -EINVAL, "INIT without PKEY/ACCESS");
	CHECK(strstr(uroce_last_error(), "missing required attributes: ACCESS_FLAGS|PKEY_INDEX") != NULL, "msg: %s",
	      uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_INIT, init_rc | UROCE_QP_SQ_PSN) == -EINVAL, "INIT with SQ_PSN");
	CHECK(strstr(uroce_last_error(), "does not take SQ_PSN") != NULL, "msg: %s", uroce_last_error());
	CHECK(uroce_post_send(qp, &wr, NULL) == -EINVAL, "post_send in RESET");
	CHECK(modify(qp, UROCE_QPS_INIT, init_rc) == 0, "RESET->INIT: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_INIT, init_rc) == 0, "INIT->INIT: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_RTS, rts_rc) == -EINVAL, "INIT->RTS allowed");
	CHECK(modify(qp, UROCE_QPS_RTR, rtr_rc & ~UROCE_QP_MIN_RNR_TIMER) == -EINVAL, "RTR without MIN_RNR_TIMER");
	CHECK(strstr(uroce_last_error(), "MIN_RNR_TIMER") != NULL, "msg: %s", uroce_last_error());
	{
		struct uroce_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = UROCE_QPS_RTR;
		a.path_mtu = 7;
		CHECK(uroce_qp_modify(qp, &a, rtr_rc) == -EINVAL, "path_mtu 7 accepted");
		CHECK(strstr(uroce_last_error(), "path_mtu 7") != NULL, "msg: %s", uroce_last_error());
	}
	CHECK(modify(qp, UROCE_QPS_RTR, rtr_rc) == 0, "INIT->RTR: %s", uroce_last_error());
	CHECK(uroce_post_send(qp, &wr, NULL) == -EINVAL, "post_send in RTR");
	CHECK(strstr(uroce_last_error(), "is in RTR") != NULL, "msg: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_RTS, rts_rc & ~UROCE_QP_TIMEOUT) == -EINVAL, "RTS without TIMEOUT");
	{
		struct uroce_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = UROCE_QPS_RTS;
		a.retry_cnt = 8;
		CHECK(uroce_qp_modify(qp, &a, rts_rc) == -EINVAL, "retry_cnt 8 accepted");
		CHECK(strstr(uroce_last_error(), "retry_cnt 8; accepted 0-7") != NULL, "msg: %s", uroce_last_error());
	}
	CHECK(modify(qp, UROCE_QPS_RTS, rts_rc) == 0, "RTR->RTS: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_RTS, UROCE_QP_STATE | UROCE_QP_MIN_RNR_TIMER) == 0, "RTS->RTS: %s",
	      uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_RTS, UROCE_QP_STATE | UROCE_QP_PATH_MTU) == -EINVAL, "RTS->RTS PATH_MTU");
	CHECK(modify(qp, UROCE_QPS_SQD, UROCE_QP_STATE) == 0, "RTS->SQD: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_SQD, UROCE_QP_STATE | UROCE_QP_TIMEOUT) == 0, "SQD->SQD: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_RTS, UROCE_QP_STATE) == 0, "SQD->RTS: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_INIT, init_rc) == -EINVAL, "RTS->INIT allowed");
	{
		struct uroce_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = UROCE_QPS_ERR;
		a.cur_qp_state = UROCE_QPS_INIT;
		CHECK(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_CUR_STATE) == -EINVAL, "wrong cur_qp_state");
	}
	CHECK(modify(qp, UROCE_QPS_ERR, UROCE_QP_STATE) == 0, "RTS->ERR: %s", uroce_last_error());
	CHECK(modify(qp, UROCE_QPS_RTS, rts_rc) == -EINVAL, "ERR->RTS allowed");
	CHECK(modify(qp, UROCE_QPS_RESET, UROCE_QP_STATE) == 0, "ERR->RESET: %s", uroce_last_error());
	CHECK(uroce_qp_modify(qp, &qa, 1 << 25) == -EINVAL, "unknown mask bit");
	CHECK(strcmp(uroce_qp_state_str(UROCE_QPS_SQD), "SQD") == 0, "state name");
	CHECK(strcmp(uroce_wc_status_str(UROCE_WC_RETRY_EXC_ERR), "transport retry counter exceeded") == 0, "wc str");
	CHECK(uroce_qp_state_bytes(UROCE_QPT_RC) > 0 && uroce_qp_state_bytes(UROCE_QPT_RC) < 4096, "state bytes %zu",
	      uroce_qp_state_bytes(UROCE_QPT_RC));
	/* UD needs QKEY, not ACCESS_FLAGS, on RESET->INIT */
	{
		struct uroce_qp_init_attr ia;
		struct uroce_qp *ud;

		memset(&ia, 0, sizeof(ia));
		ia.qp_type = UROCE_QPT_UD;
		ia.send_cq = ia.recv_cq = p.s[0].scq;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
		REQUIRE(uroce_qp_create(p.s[0].pd, &ia, &ud) == 0, "ud: %s", uroce_last_error());
		CHECK(modify(ud, UROCE_QPS_INIT, init_rc) == -EINVAL, "UD INIT with ACCESS_FLAGS");
		CHECK(modify(ud, UROCE_QPS_INIT, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_QKEY) == 0,
		      "UD RESET->INIT: %s", uroce_last_error());
		CHECK(modify(ud, UROCE_QPS_RTR, UROCE_QP_STATE) == 0, "UD INIT->RTR: %s", uroce_last_error());
		CHECK(modify(ud, UROCE_QPS_RTS, UROCE_QP_STATE | UROCE_QP_SQ_PSN) == 0, "UD RTR->RTS: %s",
		      uroce_last_error());
		CHECK(uroce_cq_destroy(p.s[0].scq) == -EBUSY, "CQ destroyed under a QP");
		CHECK(uroce_qp_destroy(ud) == 0, "ud destroy");
		ia.qp_type = 9;
		CHECK(uroce_qp_create(p.s[0].pd, &ia, &ud) == -EINVAL, "qp_type 9 accepted");
		CHECK(strstr(uroce_last_error(), "qp_type") != NULL, "msg: %s", uroce_last_error());
	}
	CHECK(uroce_context_destroy(p.s[0].ctx) == -EBUSY, "context destroyed while in use");
	tr_close(&p);
}

static void test_srq_and_revocation(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_srq *srq;
	struct uroce_srq_init_attr sa = { .max_wr = 16, .max_sge = 2 };
	struct uroce_qp_init_attr ia;
	struct uroce_qp *qp2;
	struct uroce_sge sg;
	struct uroce_send_wr wr = { 0 };
	struct uroce_recv_wr rw = { 0 };
	struct uroce_wc wc;

	tr_opts_default(&o, UROCE_QPT_RC);
	memset(&p, 0, sizeof(p));
	p.fab = loop_fabric_create(2, 7);
	REQUIRE(p.fab && loop_fabric_connect(p.fab, 0, 1, NULL, NULL) == 0, "fabric");
	tr_side_open(&p, 0, &o);
	tr_side_open(&p, 1, &o);
	/* side 1's QP takes receives from an SRQ */
	REQUIRE(uroce_srq_create(p.s[1].pd, &sa, &srq) == 0, "srq: %s", uroce_last_error());
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = p.s[1].scq;
	ia.recv_cq = p.s[1].rcq;
	ia.srq = srq;
	ia.cap.max_send_wr = 16;
	REQUIRE(uroce_qp_create(p.s[1].pd, &ia, &qp2) == 0, "qp: %s", uroce_last_error());
	CHECK(uroce_qp_destroy(p.s[1].qp) == 0, "destroy");
	p.s[1].qp = qp2;
	REQUIRE(tr_connect(&p, 0, &o) == 0 && tr_connect(&p, 1, &o) == 0, "connect: %s", uroce_last_error());
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	CHECK(uroce_post_recv(b->qp, &rw, NULL) == -EINVAL, "post_recv on an SRQ QP accepted");
	for (int i = 0; i < 3; i++) {
		tr_sge(&sg, b, 10000u * (uint32_t)i, 5000);
		rw.wr_id = 40 + (uint64_t)i;
		rw.sg_list = &sg;
		rw.num_sge = 1;
		REQUIRE(uroce_post_srq_recv(srq, &rw, NULL) == 0, "srq post: %s", uroce_last_error());
	}
	for (int i = 0; i < 3; i++) {
		tr_fill(a->buf + 100000, 4000, (uint32_t)i);
		tr_sge(&sg, a, 100000, 4000);
		wr.wr_id = (uint64_t)i;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = UROCE_WR_SEND;
		wr.send_flags = UROCE_SEND_SIGNALED;
		REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
		CHECK(tr_wait(&p, b->rcq, &wc, STEPS) == 0 && wc.wr_id == 40u + (unsigned)i && wc.byte_len == 4000,
		      "srq recv %d", i);
		CHECK(memcmp(a->buf + 100000, b->buf + 10000 * i, 4000) == 0, "srq data %d", i);
		CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_SUCCESS, "send %d", i);
	}
	/* a deregistered region's rkey is revoked at once */
	{
		struct uroce_mr *mr2;
		uint8_t *extra = calloc(1, 4096);
		uint32_t rkey;

		REQUIRE(uroce_mr_reg(b->pd, extra, 4096, o.mr_access, &mr2) == 0, "mr: %s", uroce_last_error());
		rkey = mr2->rkey;
		CHECK(uroce_mr_dereg(mr2) == 0, "dereg");
		tr_sge(&sg, a, 0, 64);
		wr.opcode = UROCE_WR_RDMA_WRITE;
		wr.wr_id = 9;
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)extra;
		wr.wr.rdma.rkey = rkey;
		REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
		CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_REM_ACCESS_ERR,
		      "write to a revoked rkey: %s", uroce_wc_status_str(wc.status));
		for (int i = 0; i < 4096; i++)
			if (extra[i]) {
				CHECK(0, "revoked region written");
				break;
			}
		free(extra);
	}
	/* bad local SGEs are refused at post */
	sg.lkey ^= 0x300;
	wr.opcode = UROCE_WR_SEND;
	CHECK(uroce_post_send(a->qp, &wr, NULL) == -EINVAL, "bad lkey accepted");
	CHECK(uroce_mr_reg(a->pd, a->buf, 10, UROCE_ACCESS_REMOTE_WRITE, &(struct uroce_mr *){ NULL }) == -EINVAL,
	      "REMOTE_WRITE without LOCAL_WRITE accepted");
	CHECK(uroce_srq_destroy(srq) == -EBUSY, "SRQ destroyed under a QP");
	CHECK(uroce_qp_destroy(b->qp) == 0, "destroy");
	CHECK(uroce_srq_destroy(srq) == 0, "srq destroy");
	b->qp = NULL;
	{
		struct uroce_qp_init_attr ib = ia;

		ib.srq = NULL;
		ib.cap.max_recv_wr = 4;
		REQUIRE(uroce_qp_create(b->pd, &ib, &b->qp) == 0, "qp");
	}
	tr_close(&p);
}

/* SQD: the message in progress finishes, the next waits for RTS. */
static void test_sqd(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_sge sg;
	struct uroce_send_wr wr = { 0 };
	struct uroce_wc wc;

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 8, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	tr_post_recv(b, 1, 0, 200000);
	tr_post_recv(b, 2, 200000, 200000);
	tr_sge(&sg, a, 0, 150000);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_SEND;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.wr_id = 1;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	for (int i = 0; i < 3; i++)
		tr_step(&p);
	CHECK(modify(a->qp, UROCE_QPS_SQD, UROCE_QP_STATE) == 0, "RTS->SQD: %s", uroce_last_error());
	wr.wr_id = 2;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post in SQD: %s", uroce_last_error());
	CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.wr_id == 1 && wc.status == UROCE_WC_SUCCESS,
	      "the message in progress did not finish in SQD");
	for (int i = 0; i < 3000; i++)
		tr_step(&p);
	CHECK(uroce_poll_cq(a->scq, 1, &wc) == 0, "a new message was sent in SQD");
	CHECK(modify(a->qp, UROCE_QPS_RTS, UROCE_QP_STATE) == 0, "SQD->RTS: %s", uroce_last_error());
	CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.wr_id == 2 && wc.status == UROCE_WC_SUCCESS,
	      "held message after SQD->RTS");
	CHECK(tr_wait(&p, b->rcq, &wc, STEPS) == 0 && wc.wr_id == 1 && wc.byte_len == 150000, "recv 1");
	CHECK(tr_wait(&p, b->rcq, &wc, STEPS) == 0 && wc.wr_id == 2 && wc.byte_len == 150000, "recv 2");
	tr_close(&p);
}

/* A receive buffer whose region is deregistered after posting is never
 * written: LOC_PROT_ERR at the receiver, REM_OP_ERR at the sender. */
static void test_recv_region_revoked(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_mr *mr;
	uint8_t *extra = calloc(1, 8192);
	struct uroce_sge sg;
	struct uroce_recv_wr rw = { .wr_id = 77, .sg_list = &sg, .num_sge = 1 };
	struct uroce_send_wr wr = { 0 };
	struct uroce_wc wc;

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 9, NULL, NULL);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	REQUIRE(extra && uroce_mr_reg(b->pd, extra, 8192, o.mr_access, &mr) == 0, "mr: %s", uroce_last_error());
	sg.addr = (uint64_t)(uintptr_t)extra;
	sg.length = 8192;
	sg.lkey = mr->lkey;
	REQUIRE(uroce_post_recv(b->qp, &rw, NULL) == 0, "post_recv: %s", uroce_last_error());
	CHECK(uroce_mr_dereg(mr) == 0, "dereg");
	tr_fill(a->buf, 3000, 1);
	tr_sge(&sg, a, 0, 3000);
	tr_wr(&wr, 10, &sg, UROCE_WR_SEND);
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_REM_OP_ERR, "sender: %s",
	      uroce_wc_status_str(wc.status));
	CHECK(tr_wait(&p, b->rcq, &wc, STEPS) == 0 && wc.wr_id == 77 && wc.status == UROCE_WC_LOC_PROT_ERR,
	      "receiver: %s", uroce_wc_status_str(wc.status));
	for (int i = 0; i < 8192; i++)
		if (extra[i]) {
			CHECK(0, "a revoked receive buffer was written");
			break;
		}
	free(extra);
	tr_close(&p);
}

/* uroce_mr_reg_dmabuf refuses what is not a dmabuf, saying what it is
 * (a real dmabuf, a udmabuf, is registered and moved in tests/interop's
 * dmabuf test: this host's kernel has no /dev/udmabuf). */
static void test_dmabuf_refused(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_mr *mr = NULL;
	int fd = memfd_create("not-a-dmabuf", 0);

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 11, NULL, NULL);
	REQUIRE(fd >= 0 && ftruncate(fd, 4096) == 0, "memfd");
	CHECK(uroce_mr_reg_dmabuf(p.s[0].pd, fd, 0, 4096, 0, o.mr_access, &mr) == -EINVAL && !mr, "memfd accepted");
	CHECK(strstr(uroce_last_error(), "is not a dmabuf (it is /memfd:not-a-dmabuf") &&
	      strstr(uroce_last_error(), "accepted: a dmabuf fd"), "msg: %s", uroce_last_error());
	close(fd);
	CHECK(uroce_mr_reg_dmabuf(p.s[0].pd, fd, 0, 4096, 0, o.mr_access, &mr) == -EBADF && !mr, "closed fd accepted");
	CHECK(strstr(uroce_last_error(), "not an open file descriptor"), "msg: %s", uroce_last_error());
	CHECK(uroce_mr_reg_dmabuf(p.s[0].pd, 0, 0, 0, 0, o.mr_access, &mr) == -EINVAL &&
	      strstr(uroce_last_error(), "non-zero length"), "length 0: %s", uroce_last_error());
	tr_close(&p);
}

/* Posting after a long pause without progress: the ACK timeout counts
 * from the post, not from the last engine iteration (that bug fired the
 * timer at once and resent a packet for nothing). */
static void test_timer_after_pause(void)
{
	struct tr_pair p;
	struct tr_opts o;
	struct uroce_sge sg;
	struct uroce_send_wr wr = { 0 };
	struct uroce_wc wc;
	struct uroce_qp_stats qs;
	struct loop_impairment slow = { .delay_ns = 200000 }; /* 0.2 ms each way, timeout ~1 ms */

	tr_opts_default(&o, UROCE_QPT_RC);
	tr_open(&p, &o, 10, &slow, &slow);
	struct tr_side *a = &p.s[0], *b = &p.s[1];

	for (int i = 0; i < 10; i++)
		tr_step(&p);
	loop_fabric_advance(p.fab, 5000000000ull); /* 5 s with nobody progressing */
	tr_post_recv(b, 1, 0, 4096);
	tr_sge(&sg, a, 0, 100);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = UROCE_WR_SEND;
	wr.send_flags = UROCE_SEND_SIGNALED;
	REQUIRE(uroce_post_send(a->qp, &wr, NULL) == 0, "post: %s", uroce_last_error());
	CHECK(tr_wait(&p, a->scq, &wc, STEPS) == 0 && wc.status == UROCE_WC_SUCCESS, "send after a pause");
	uroce_qp_stats(a->qp, &qs);
	CHECK(qs.timeouts == 0 && qs.retransmits == 0, "after a pause: %llu timeouts, %llu retransmits",
	      (unsigned long long)qs.timeouts, (unsigned long long)qs.retransmits);
	tr_close(&p);
}

int main(void)
{
	test_timer_after_pause();
	test_recv_region_revoked();
	test_dmabuf_refused();
	test_sqd();
	test_state_machine();
	test_srq_and_revocation();
	return test_done("transport_verbs");
}
