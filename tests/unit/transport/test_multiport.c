/* SPDX-License-Identifier: MIT */
/* A context over several ports, on the loop fabric: two contexts of two
 * ports each, wired port 1 to port 1 and port 2 to port 2. Each QP and AH
 * sends through the port it names (counters, GRH source GIDs and a downed
 * link prove which), per-port queries and drop counters answer for their
 * own port, and bad port numbers are refused with a reason. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"
#include "tr_test.h"

#define BUF (256u * 1024u)
#define MAX_STEPS 200000u

static struct loop_fabric *fab;
static struct tr_host A, B;

static void side_open(struct tr_host *s, unsigned first_loop)
{
	tr_host_open(s, fab, first_loop, 2, BUF, 1024,
	             UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ);
}

static void step(void)
{
	tr_host_step(fab, &A, &B, TR_STEP_IDLE_NS);
}

static int wait_wc(struct uroce_cq *cq, struct uroce_wc *wc)
{
	for (unsigned i = 0; i < MAX_STEPS; i++) {
		if (uroce_poll_cq(cq, 1, wc) == 1)
			return 0;
		step();
	}
	return -1;
}

static struct uroce_qp *qp_new(struct tr_host *s, enum uroce_qp_type type)
{
	struct uroce_qp_init_attr ia;
	struct uroce_qp *qp;

	tr_qp_attr(&ia, type, s->cq, s->cq, 64, 64);
	REQUIRE(uroce_qp_create(s->pd, &ia, &qp) == 0, "qp_create: %s", uroce_last_error());
	return qp;
}

static int qp_init(struct uroce_qp *qp, uint8_t port, bool ud)
{
	struct uroce_qp_attr a = { 0 };

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = port;
	a.qkey = 0x11111111;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ;
	return uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                                       (ud ? UROCE_QP_QKEY : UROCE_QP_ACCESS_FLAGS));
}

/* RTR and RTS towards peer QP on the peer's port peer_port; ah_port is
 * what ah_attr.port_num says (0 = the QP's own). */
static int rc_connect(struct uroce_qp *qp, struct tr_host *peer, struct uroce_qp *pqp, uint8_t peer_port,
                      uint8_t ah_port)
{
	struct uroce_qp_attr a = { 0 };
	int rc;

	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = uroce_qp_num(pqp);
	a.dest_token = uroce_qp_token(pqp);
	a.rq_psn = test_psn(42);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = ah_port;
	REQUIRE(uroce_query_gid(peer->ctx, peer_port, 1, a.ah_attr.dgid) == 0, "gid: %s", uroce_last_error());
	a.ah_attr.sgid_index = 1; /* IPv4-mapped, as the dgid */
	rc = uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
	                                     UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = test_psn(42);
	a.timeout = 8;
	a.retry_cnt = 3;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                       UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC);
}

static void rc_pair(struct uroce_qp **a, struct uroce_qp **b, uint8_t port)
{
	*a = qp_new(&A, UROCE_QPT_RC);
	*b = qp_new(&B, UROCE_QPT_RC);
	REQUIRE(qp_init(*a, port, false) == 0, "init: %s", uroce_last_error());
	REQUIRE(qp_init(*b, port, false) == 0, "init: %s", uroce_last_error());
	REQUIRE(rc_connect(*a, &B, *b, port, port) == 0, "connect a: %s", uroce_last_error());
	REQUIRE(rc_connect(*b, &A, *a, port, 0) == 0, "connect b: %s", uroce_last_error());
}

static uint64_t tx_of(struct tr_host *s, uint8_t port)
{
	struct uroce_port_stats st;

	REQUIRE(uroce_port_stats(s->ctx, port, &st) == 0, "port_stats: %s", uroce_last_error());
	return st.tx_packets;
}

static uint64_t drops_of(struct tr_host *s, uint8_t port, enum uroce_drop_reason r)
{
	struct uroce_port_stats st;

	REQUIRE(uroce_port_stats(s->ctx, port, &st) == 0, "port_stats: %s", uroce_last_error());
	return st.drops[r];
}

static void sge(struct uroce_sge *g, struct tr_host *s, uint32_t off, uint32_t len)
{
	g->addr = (uint64_t)(uintptr_t)(s->buf + off);
	g->length = len;
	g->lkey = s->mr->lkey;
}

/* A 20 000-byte WRITE from A's region at off to B's, then a READ of it
 * back into A at off + 64 KiB; both checked byte for byte. */
static void write_read(struct uroce_qp *qa, uint32_t off, uint8_t seed)
{
	struct uroce_send_wr wr = { 0 }, *bad;
	struct uroce_sge g;
	struct uroce_wc wc;
	const uint32_t len = 20000;

	for (uint32_t i = 0; i < len; i++)
		A.buf[off + i] = (uint8_t)(seed + i * 13u);
	sge(&g, &A, off, len);
	wr.wr_id = 1;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(B.buf + off);
	wr.wr.rdma.rkey = B.mr->rkey;
	REQUIRE(uroce_post_send(qa, &wr, &bad) == 0, "post write: %s", uroce_last_error());
	REQUIRE(wait_wc(A.cq, &wc) == 0, "no write completion");
	CHECK(wc.status == UROCE_WC_SUCCESS, "write: %s", uroce_wc_status_str(wc.status));
	CHECK(!memcmp(A.buf + off, B.buf + off, len), "written bytes differ");
	sge(&g, &A, off + 65536, len);
	wr.wr_id = 2;
	wr.opcode = UROCE_WR_RDMA_READ;
	REQUIRE(uroce_post_send(qa, &wr, &bad) == 0, "post read: %s", uroce_last_error());
	REQUIRE(wait_wc(A.cq, &wc) == 0, "no read completion");
	CHECK(wc.status == UROCE_WC_SUCCESS, "read: %s", uroce_wc_status_str(wc.status));
	CHECK(!memcmp(A.buf + off, A.buf + off + 65536, len), "read bytes differ");
}

static void test_create_errors(void)
{
	struct uroce_context *ctx;
	struct uroce_context_attr ca = { 0 };
	const char *dup[2] = { "loop:6", "loop:6" };
	const char *mixed[2] = { "loop:6", "afxdp:lo" };
	const char *bad2[2] = { "loop:6", "ether:eth0" };
	const char *nul[2] = { "loop:6", NULL };
	const char *nine[9] = { "loop:6" };

	ca.loop_fabric = fab;
	ca.port = "loop:6";
	ca.ports = dup;
	ca.nports = 1;
	CHECK(uroce_context_create(&ctx, &ca) == -EINVAL, "port and ports both accepted");
	ca.port = NULL;
	ca.nports = 0;
	CHECK(uroce_context_create(&ctx, &ca) == -EINVAL && strstr(uroce_last_error(), "accepted: 1-8"),
	      "nports 0: %s", uroce_last_error());
	ca.ports = nine;
	ca.nports = 9;
	CHECK(uroce_context_create(&ctx, &ca) == -EINVAL, "nports 9 accepted");
	ca.ports = dup;
	ca.nports = 2;
	CHECK(uroce_context_create(&ctx, &ca) == -EINVAL && strstr(uroce_last_error(), "opened once"),
	      "duplicate port: %s", uroce_last_error());
	ca.ports = mixed;
	CHECK(uroce_context_create(&ctx, &ca) == -EINVAL && strstr(uroce_last_error(), "cannot share"),
	      "loop with afxdp: %s", uroce_last_error());
	ca.ports = bad2;
	CHECK(uroce_context_create(&ctx, &ca) < 0 && strstr(uroce_last_error(), "port 2"),
	      "bad second spec: %s", uroce_last_error());
	ca.ports = nul;
	CHECK(uroce_context_create(&ctx, &ca) == -EINVAL, "NULL spec accepted");
}

static void test_queries(void)
{
	struct uroce_port_attr pa;
	uint8_t gid[16], mac[6];
	uint32_t ip;

	CHECK(uroce_num_ports(A.ctx) == 2, "num_ports %d", uroce_num_ports(A.ctx));
	CHECK(uroce_num_ports(NULL) == -EINVAL, "num_ports(NULL)");
	for (uint8_t p = 1; p <= 2; p++) {
		REQUIRE(uroce_query_port(A.ctx, p, &pa) == 0, "query_port %u: %s", p, uroce_last_error());
		loop_port_mac(p - 1u, mac);
		CHECK(!memcmp(pa.mac, mac, 6), "port %u has another port's MAC", p);
		CHECK(pa.ipv4_be == loop_port_ipv4_be(p - 1u), "port %u address", p);
		CHECK(pa.link_up, "port %u down", p);
		REQUIRE(uroce_query_gid(A.ctx, p, 1, gid) == 0, "gid");
		memcpy(&ip, gid + 12, 4);
		CHECK(gid[10] == 0xff && ip == loop_port_ipv4_be(p - 1u), "port %u IPv4 GID", p);
		REQUIRE(uroce_query_gid(A.ctx, p, 2, gid) == 0, "gid6");
		CHECK(gid[0] == 0xfd && gid[15] == p, "port %u IPv6 GID ends in %u", p, gid[15]);
	}
	CHECK(uroce_query_port(A.ctx, 0, &pa) == -EINVAL, "port 0 accepted");
	CHECK(uroce_query_port(A.ctx, 3, &pa) == -EINVAL && strstr(uroce_last_error(), "accepted: 1-2"),
	      "port 3: %s", uroce_last_error());
	CHECK(uroce_query_gid(A.ctx, 3, 1, gid) == -EINVAL, "gid of port 3");
	{
		struct uroce_port_stats st;

		CHECK(uroce_port_stats(A.ctx, 3, &st) == -EINVAL, "stats of port 3");
	}
}

static void test_bad_port_numbers(void)
{
	struct uroce_qp *q = qp_new(&A, UROCE_QPT_RC), *peer = qp_new(&B, UROCE_QPT_RC);

	CHECK(qp_init(q, 3, false) == -EINVAL && strstr(uroce_last_error(), "port_num 3"), "QP on port 3: %s",
	      uroce_last_error());
	CHECK(qp_init(q, 0, false) == -EINVAL, "QP on port 0");
	REQUIRE(qp_init(q, 1, false) == 0, "init: %s", uroce_last_error());
	REQUIRE(qp_init(peer, 1, false) == 0, "init: %s", uroce_last_error());
	/* INIT -> INIT may move the QP to another port */
	REQUIRE(qp_init(q, 2, false) == 0, "INIT -> INIT to port 2: %s", uroce_last_error());
	{
		struct uroce_qp_attr qa;

		REQUIRE(uroce_qp_query(q, &qa, NULL) == 0, "query");
		CHECK(qa.port_num == 2, "port_num %u after INIT -> INIT", qa.port_num);
	}
	CHECK(rc_connect(q, &B, peer, 2, 1) == -EINVAL && strstr(uroce_last_error(), "ah_attr.port_num"),
	      "AV naming another port: %s", uroce_last_error());
	CHECK(uroce_qp_destroy(q) == 0 && uroce_qp_destroy(peer) == 0, "destroy");
}

/* RC on port 1 moves only port 1's counters; RC on port 2 only port 2's. */
static void test_rc_per_port(struct uroce_qp *x, struct uroce_qp *y)
{
	uint64_t a1 = tx_of(&A, 1), a2 = tx_of(&A, 2), b1 = tx_of(&B, 1), b2 = tx_of(&B, 2);

	write_read(x, 0, 1);
	CHECK(tx_of(&A, 1) > a1 && tx_of(&B, 1) > b1, "port 1 carried nothing");
	CHECK(tx_of(&A, 2) == a2 && tx_of(&B, 2) == b2, "port 2 carried port 1's QP: %llu %llu",
	      (unsigned long long)(tx_of(&A, 2) - a2), (unsigned long long)(tx_of(&B, 2) - b2));
	a1 = tx_of(&A, 1);
	b1 = tx_of(&B, 1);
	write_read(y, 20000, 2);
	CHECK(tx_of(&A, 2) > a2 && tx_of(&B, 2) > b2, "port 2 carried nothing");
	CHECK(tx_of(&A, 1) == a1 && tx_of(&B, 1) == b1, "port 1 carried port 2's QP");
}

/* UD from A port 2: the receiver's GRH names A's port-2 address; an AH of
 * port 1 is refused on a port-2 QP; a datagram to a QPN nobody has is a
 * NO_QP drop on the port it arrived on. */
static void test_ud(void)
{
	struct uroce_qp *ua = qp_new(&A, UROCE_QPT_UD), *ub = qp_new(&B, UROCE_QPT_UD);
	struct uroce_qp_attr a = { 0 };
	struct uroce_ah_attr aa = { 0 };
	struct uroce_ah *ah2, *ah1;
	struct uroce_send_wr wr = { 0 }, *bad;
	struct uroce_recv_wr rw = { 0 }, *rbad;
	struct uroce_sge g, rg;
	struct uroce_wc wc;
	uint8_t gid[16];
	uint64_t nq1, nq2;

	REQUIRE(qp_init(ua, 2, true) == 0 && qp_init(ub, 2, true) == 0, "ud init: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTR;
	REQUIRE(uroce_qp_modify(ua, &a, UROCE_QP_STATE) == 0 && uroce_qp_modify(ub, &a, UROCE_QP_STATE) == 0, "rtr");
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 7;
	REQUIRE(uroce_qp_modify(ua, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN) == 0, "rts: %s", uroce_last_error());
	REQUIRE(uroce_query_gid(B.ctx, 2, 1, aa.dgid) == 0, "gid");
	aa.sgid_index = 1; /* IPv4-mapped, as the dgid */
	aa.port_num = 2;
	REQUIRE(uroce_ah_create(A.pd, &aa, &ah2) == 0, "ah port 2: %s", uroce_last_error());
	aa.port_num = 0; /* = port 1 */
	REQUIRE(uroce_query_gid(B.ctx, 1, 1, aa.dgid) == 0, "gid");
	REQUIRE(uroce_ah_create(A.pd, &aa, &ah1) == 0, "ah port 1: %s", uroce_last_error());
	aa.port_num = 5;
	{
		struct uroce_ah *ah5;

		CHECK(uroce_ah_create(A.pd, &aa, &ah5) == -EINVAL && strstr(uroce_last_error(), "port_num 5"),
		      "AH on port 5: %s", uroce_last_error());
	}
	sge(&rg, &B, 100000, 40 + 512);
	rw.wr_id = 9;
	rw.sg_list = &rg;
	rw.num_sge = 1;
	REQUIRE(uroce_post_recv(ub, &rw, &rbad) == 0, "post_recv: %s", uroce_last_error());
	memset(A.buf + 100000, 0x5a, 512);
	sge(&g, &A, 100000, 512);
	wr.wr_id = 3;
	wr.opcode = UROCE_WR_SEND;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah1;
	wr.wr.ud.remote_qpn = uroce_qp_num(ub);
	wr.wr.ud.remote_qkey = 0x11111111;
	CHECK(uroce_post_send(ua, &wr, &bad) == -EINVAL && strstr(uroce_last_error(), "own port"),
	      "port-1 AH on a port-2 QP: %s", uroce_last_error());
	wr.wr.ud.ah = ah2;
	REQUIRE(uroce_post_send(ua, &wr, &bad) == 0, "ud send: %s", uroce_last_error());
	REQUIRE(wait_wc(A.cq, &wc) == 0 && wc.status == UROCE_WC_SUCCESS, "ud send completion");
	REQUIRE(wait_wc(B.cq, &wc) == 0, "no ud receive");
	CHECK(wc.status == UROCE_WC_SUCCESS && wc.wr_id == 9 && wc.byte_len == 40 + 512, "ud receive %s, %u bytes",
	      uroce_wc_status_str(wc.status), wc.byte_len);
	REQUIRE(uroce_query_gid(A.ctx, 2, 1, gid) == 0, "gid");
	/* IPv4: as rxe, the IPv4 header fills the GRH's last 20 bytes */
	CHECK(!memcmp(B.buf + 100000 + 20 + 12, gid + 12, 4), "GRH source address is not A's port 2");
	CHECK(B.buf[100000 + 40] == 0x5a && B.buf[100000 + 40 + 511] == 0x5a, "ud payload");

	/* to a QPN B does not have: counted on B's port 2 only */
	nq1 = drops_of(&B, 1, UROCE_DROP_NO_QP);
	nq2 = drops_of(&B, 2, UROCE_DROP_NO_QP);
	wr.wr.ud.remote_qpn = 0xabcde;
	REQUIRE(uroce_post_send(ua, &wr, &bad) == 0, "ud send: %s", uroce_last_error());
	REQUIRE(wait_wc(A.cq, &wc) == 0 && wc.status == UROCE_WC_SUCCESS, "ud send completion");
	for (unsigned i = 0; i < 50; i++)
		step();
	CHECK(drops_of(&B, 2, UROCE_DROP_NO_QP) == nq2 + 1, "NO_QP on port 2: %llu",
	      (unsigned long long)(drops_of(&B, 2, UROCE_DROP_NO_QP) - nq2));
	CHECK(drops_of(&B, 1, UROCE_DROP_NO_QP) == nq1, "NO_QP counted on port 1");
	CHECK(uroce_ah_destroy(ah1) == 0 && uroce_ah_destroy(ah2) == 0, "ah destroy");
	CHECK(uroce_qp_destroy(ua) == 0 && uroce_qp_destroy(ub) == 0, "ud destroy");
}

/* Port 1's link goes down: its QP runs out of retries, port 2's QP goes on. */
static void test_link_down(struct uroce_qp *x, struct uroce_qp *y)
{
	struct uroce_send_wr wr = { 0 }, *bad;
	struct uroce_port_attr pa;
	struct uroce_qp_attr qa;
	struct uroce_sge g;
	struct uroce_wc wc;

	REQUIRE(loop_fabric_set_link(fab, 0, false) == 0, "link down");
	REQUIRE(uroce_query_port(A.ctx, 1, &pa) == 0 && !pa.link_up, "port 1 still up");
	REQUIRE(uroce_query_port(A.ctx, 2, &pa) == 0 && pa.link_up, "port 2 went down too");
	sge(&g, &A, 0, 100);
	wr.wr_id = 77;
	wr.opcode = UROCE_WR_RDMA_WRITE;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)B.buf;
	wr.wr.rdma.rkey = B.mr->rkey;
	REQUIRE(uroce_post_send(x, &wr, &bad) == 0, "post: %s", uroce_last_error());
	write_read(y, 40000, 3);
	REQUIRE(wait_wc(A.cq, &wc) == 0, "no completion on the downed port's QP");
	CHECK(wc.wr_id == 77 && wc.status == UROCE_WC_RETRY_EXC_ERR, "wr %llu: %s", (unsigned long long)wc.wr_id,
	      uroce_wc_status_str(wc.status));
	REQUIRE(uroce_qp_query(x, &qa, NULL) == 0, "query");
	CHECK(qa.qp_state == UROCE_QPS_ERR, "QP on the downed port is in %s", uroce_qp_state_str(qa.qp_state));
	write_read(y, 60000, 4);
	REQUIRE(uroce_qp_query(y, &qa, NULL) == 0, "query");
	CHECK(qa.qp_state == UROCE_QPS_RTS && qa.port_num == 2, "port 2's QP: %s, port %u",
	      uroce_qp_state_str(qa.qp_state), qa.port_num);
}

int main(void)
{
	struct uroce_qp *x, *xb, *y, *yb;

	fab = loop_fabric_create(8, 42);
	REQUIRE(fab, "fabric");
	REQUIRE(loop_fabric_connect(fab, 0, 2, NULL, NULL) == 0, "wire 0-2");
	REQUIRE(loop_fabric_connect(fab, 1, 3, NULL, NULL) == 0, "wire 1-3");
	test_create_errors();
	side_open(&A, 0);
	side_open(&B, 2);
	test_queries();
	test_bad_port_numbers();
	rc_pair(&x, &xb, 1);
	rc_pair(&y, &yb, 2);
	test_rc_per_port(x, y);
	test_ud();
	test_link_down(x, y);
	CHECK(uroce_qp_destroy(x) == 0 && uroce_qp_destroy(xb) == 0, "destroy x");
	CHECK(uroce_qp_destroy(y) == 0 && uroce_qp_destroy(yb) == 0, "destroy y");
	tr_host_close(&A);
	tr_host_close(&B);
	loop_fabric_destroy(fab);
	return test_done("tr_multiport");
}
