/* SPDX-License-Identifier: MIT */
/* Incast through the fabric switch (apps/fabric, over loop ports, in
 * simulated time): three bulk senders and a victim sending small messages
 * to one receiver whose switch port is the bottleneck. For every
 * controller, with the port trimming or marking ECN: every byte arrives
 * exactly once, trimmed packets are NACKed and sent again, the victim's
 * messages all complete; the run prints the victim's FCT and the queue. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/fabric/fsw.h"
#include "dataplane/port.h"
#include "tr_test.h"

#define NH 5u          /* hosts: 0-2 bulk, 3 victim, 4 receiver */
#define RX 4u
#define VICTIM 3u
#define BULK_SIZE 65536u
#define VICTIM_SIZE 4096u
#define DEPTH 4u
#define HBUF (4u << 20)
#define RATE_BPS 2000000000ull
#define RUN_NS 30000000ull

struct host {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *cq;
	struct uroce_mr *mr;
	uint8_t *buf;
	struct uroce_qp *qp[NH];  /* senders: qp[0]; receiver: qp[sender] */
};

struct run {
	struct loop_fabric *fab;
	struct port *sw[NH];
	struct fsw *s;
	struct host h[NH];
	uint32_t posted[NH], done[NH], sent_done[NH];
	uint64_t post_ns[NH][DEPTH];
	uint64_t *fct;            /* victim FCTs, ns */
	unsigned nfct;
	uint64_t bad;
};

static unsigned host_loop(unsigned i)
{
	return NH + i;
}

static void host_open(struct run *r, unsigned i)
{
	struct host *h = &r->h[i];
	struct uroce_context_attr ca = { 0 };
	char spec[32];

	snprintf(spec, sizeof(spec), "loop:%u", host_loop(i));
	ca.port = spec;
	ca.loop_fabric = r->fab;
	REQUIRE(uroce_context_create(&h->ctx, &ca) == 0, "context: %s", uroce_last_error());
	REQUIRE(uroce_pd_alloc(h->ctx, &h->pd) == 0, "pd");
	REQUIRE(uroce_cq_create(h->ctx, 4096, &h->cq) == 0, "cq");
	h->buf = aligned_alloc(4096, HBUF);
	REQUIRE(h->buf, "buf");
	memset(h->buf, 0, HBUF);
	REQUIRE(uroce_mr_reg(h->pd, h->buf, HBUF, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &h->mr) == 0,
	        "mr");
}

static struct uroce_qp *qp_new(struct host *h, const struct uroce_cc_attr *cc)
{
	struct uroce_qp_init_attr ia;
	struct uroce_qp *qp;

	tr_qp_attr(&ia, UROCE_QPT_RC, h->cq, h->cq, 64, 64);
	ia.rel.reliability = UROCE_REL_SR;
	ia.cc = *cc;
	REQUIRE(uroce_qp_create(h->pd, &ia, &qp) == 0, "qp: %s", uroce_last_error());
	return qp;
}

static void qp_connect(struct uroce_qp *qp, struct host *peer_h, struct uroce_qp *peer, uint32_t psn)
{
	struct uroce_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_REMOTE_WRITE;
	REQUIRE(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS) ==
	                0,
	        "init");
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = uroce_qp_num(peer);
	a.dest_token = uroce_qp_token(peer);
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	REQUIRE(uroce_query_gid(peer_h->ctx, 1, tr_gid_index, a.ah_attr.dgid) == 0, "gid");
	a.ah_attr.sgid_index = (uint8_t)tr_gid_index;
	REQUIRE(uroce_qp_modify(qp, &a,
	                        UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN | UROCE_QP_RQ_PSN |
	                                UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER) == 0,
	        "rtr: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	REQUIRE(uroce_qp_modify(qp, &a,
	                        UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC) == 0,
	        "rts: %s", uroce_last_error());
}

static void run_open(struct run *r, const struct uroce_cc_attr *cc, bool trim, bool ecn)
{
	struct fsw_cfg cfg;
	char spec[160], err[256] = "";

	memset(r, 0, sizeof(*r));
	r->fab = loop_fabric_create(2 * NH, 7);
	REQUIRE(r->fab, "fabric");
	fsw_cfg_init(&cfg);
	cfg.seed = 3;
	for (unsigned i = 0; i < NH; i++) {
		uint8_t mac[6];
		uint32_t ip = ntohl(loop_port_ipv4_be(host_loop(i)));
		struct port_config pc = { .kind = PORT_KIND_LOOP, .fabric = r->fab, .loop_index = i };

		REQUIRE(loop_fabric_connect(r->fab, i, host_loop(i), NULL, NULL) == 0, "connect");
		loop_port_mac(host_loop(i), mac);
		/* the receiver's port is the bottleneck: 2 Gb/s, 64 KiB */
		snprintf(spec, sizeof(spec), "p%u,peer=%02x:%02x:%02x:%02x:%02x:%02x%s%s%s", i, mac[0], mac[1], mac[2],
		         mac[3], mac[4], mac[5], i == RX ? ",rate=2g,queue=64k,delay=2us" : ",delay=2us",
		         i == RX && trim ? ",trim=1" : "", i == RX && ecn ? ",ecn=1k:10k:0.01" : "");
		REQUIRE(fsw_cfg_add_port(&cfg, spec, err, sizeof(err)) == 0, "port %s: %s", spec, err);
		snprintf(spec, sizeof(spec), "%u.%u.%u.%u/32=%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, i);
		REQUIRE(fsw_cfg_add_route(&cfg, spec, err, sizeof(err)) == 0, "route %s: %s", spec, err);
		REQUIRE(port_open(&r->sw[i], &pc, err, sizeof(err)) == 0, "switch port: %s", err);
	}
	r->s = fsw_create(&cfg, r->sw, NH, loop_fabric_clock, r->fab, err, sizeof(err));
	REQUIRE(r->s, "fsw_create: %s", err);
	for (unsigned i = 0; i < NH; i++)
		host_open(r, i);
	for (unsigned i = 0; i < RX; i++) {
		r->h[i].qp[0] = qp_new(&r->h[i], cc);
		r->h[RX].qp[i] = qp_new(&r->h[RX], cc);
	}
	for (unsigned i = 0; i < RX; i++) {
		qp_connect(r->h[i].qp[0], &r->h[RX], r->h[RX].qp[i], test_psn(100 + i));
		qp_connect(r->h[RX].qp[i], &r->h[i], r->h[i].qp[0], test_psn(100 + i));
	}
	r->fct = calloc(100000, sizeof(uint64_t));
}

static void run_close(struct run *r)
{
	for (unsigned i = 0; i < NH; i++) {
		struct host *h = &r->h[i];

		for (unsigned q = 0; q < NH; q++)
			if (h->qp[q])
				CHECK(uroce_qp_destroy(h->qp[q]) == 0, "qp_destroy");
		CHECK(uroce_mr_dereg(h->mr) == 0, "mr");
		CHECK(uroce_cq_destroy(h->cq) == 0, "cq");
		CHECK(uroce_pd_free(h->pd) == 0, "pd");
		CHECK(uroce_context_destroy(h->ctx) == 0, "ctx");
		free(h->buf);
	}
	fsw_destroy(r->s);
	for (unsigned i = 0; i < NH; i++)
		port_close(r->sw[i]);
	loop_fabric_destroy(r->fab);
	free(r->fct);
}

static uint32_t msg_size(unsigned i)
{
	return i == VICTIM ? VICTIM_SIZE : BULK_SIZE;
}

/* Sender i's message seq: its slot in both buffers, its bytes. */
static uint32_t slot_off(unsigned i, uint32_t seq)
{
	return i * (HBUF / RX) + (seq % DEPTH) * BULK_SIZE;
}

static void post(struct run *r, unsigned i, uint64_t now)
{
	struct host *h = &r->h[i];
	uint32_t seq = r->posted[i], len = msg_size(i), off = slot_off(i, seq);
	struct uroce_sge sg = { .addr = (uint64_t)(uintptr_t)(h->buf + off), .length = len, .lkey = h->mr->lkey };
	struct uroce_send_wr wr, *bad;
	struct uroce_recv_wr rr = { .wr_id = seq }, *rbad;

	tr_fill(h->buf + off, len, i * 7919u + seq);
	REQUIRE(uroce_post_recv(r->h[RX].qp[i], &rr, &rbad) == 0, "post_recv");
	tr_wr(&wr, seq, &sg, UROCE_WR_RDMA_WRITE_WITH_IMM);
	wr.imm_data = htonl(seq);
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(r->h[RX].buf + off);
	wr.wr.rdma.rkey = r->h[RX].mr->rkey;
	REQUIRE(uroce_post_send(h->qp[0], &wr, &bad) == 0, "post_send: %s", uroce_last_error());
	r->post_ns[i][seq % DEPTH] = now;
	r->posted[i]++;
}

static void poll_all(struct run *r, uint64_t now)
{
	static uint8_t expect[BULK_SIZE];
	struct uroce_wc wc[32];
	int k;

	while ((k = uroce_poll_cq(r->h[RX].cq, 32, wc)) > 0)
		for (int j = 0; j < k; j++) {
			unsigned i = 0;
			uint32_t seq = ntohl(wc[j].imm_data), len, off;

			while (i < RX && uroce_qp_num(r->h[RX].qp[i]) != wc[j].qp_num)
				i++;
			REQUIRE(i < RX && wc[j].status == UROCE_WC_SUCCESS, "recv wc %d", wc[j].status);
			len = msg_size(i);
			off = slot_off(i, seq);
			tr_fill(expect, len, i * 7919u + seq);
			if (seq != r->done[i] || wc[j].byte_len != len || memcmp(r->h[RX].buf + off, expect, len))
				r->bad++;
			memset(r->h[RX].buf + off, 0, len);
			if (i == VICTIM && r->nfct < 100000)
				r->fct[r->nfct++] = now - r->post_ns[i][seq % DEPTH];
			r->done[i]++;
		}
	for (unsigned i = 0; i < RX; i++)
		while ((k = uroce_poll_cq(r->h[i].cq, 32, wc)) > 0)
			for (int j = 0; j < k; j++) {
				REQUIRE(wc[j].status == UROCE_WC_SUCCESS, "send wc %s", uroce_wc_status_str(wc[j].status));
				r->sent_done[i]++;
			}
}

static void step(struct run *r)
{
	int n = 0;

	for (unsigned i = 0; i < NH; i++)
		n += uroce_progress(r->h[i].ctx);
	n += (int)fsw_poll(r->s);
	loop_fabric_advance(r->fab, n ? 500 : 1000);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void incast(enum uroce_cc algo, bool trim, bool ecn)
{
	struct uroce_cc_attr cc = { .algo = algo, .link_mbps = (uint32_t)(RATE_BPS / 1000000), .base_rtt_us = 10 };
	struct fsw_port_stats ps;
	struct uroce_qp_stats qs, rs;
	struct run r;
	uint64_t t0, trims = 0, nacks = 0, cnps = 0;
	bool drained = false;

	run_open(&r, &cc, trim, ecn);
	t0 = loop_fabric_now(r.fab);
	for (unsigned s = 0; s < 40000000 && loop_fabric_now(r.fab) - t0 < RUN_NS; s++) {
		uint64_t now = loop_fabric_now(r.fab);

		for (unsigned i = 0; i < RX; i++)
			while (r.posted[i] < r.done[i] + DEPTH)
				post(&r, i, now);
		step(&r);
		poll_all(&r, loop_fabric_now(r.fab));
	}
	for (unsigned s = 0; s < 4000000 && !drained; s++) {
		drained = true;
		for (unsigned i = 0; i < RX; i++)
			if (r.done[i] < r.posted[i] || r.sent_done[i] < r.posted[i])
				drained = false;
		step(&r);
		poll_all(&r, loop_fabric_now(r.fab));
	}
	CHECK(drained, "%s: did not drain", uroce_cc_str(algo));
	CHECK(r.bad == 0, "%s: %lu messages wrong or out of order", uroce_cc_str(algo), (unsigned long)r.bad);
	CHECK(r.nfct > 50, "%s: the victim completed only %u messages", uroce_cc_str(algo), r.nfct);
	REQUIRE(fsw_port_stats(r.s, RX, &ps) == 0, "switch stats");
	for (unsigned i = 0; i < RX; i++) {
		REQUIRE(uroce_qp_stats(r.h[i].qp[0], &qs) == 0 && uroce_qp_stats(r.h[RX].qp[i], &rs) == 0, "stats");
		trims += rs.trims_rcvd;
		nacks += qs.trim_nacks_rcvd;
		cnps += qs.cnps_rcvd;
	}
	if (trim && algo == UROCE_CC_CUBIC)
		CHECK(ps.data.trimmed > 0, "cubic: the switch trimmed nothing");
	if (trim) {
		/* what the switch trimmed reached the receiver, was NACKed and sent again */
		CHECK(ps.data.trimmed == 0 || (trims > 0 && nacks > 0), "%s: %lu trimmed, %lu seen, %lu NACKed",
		      uroce_cc_str(algo), (unsigned long)ps.data.trimmed, (unsigned long)trims, (unsigned long)nacks);
	}
	if (ecn && algo == UROCE_CC_DCQCN)
		CHECK(ps.data.ecn_marked == 0 || cnps > 0, "dcqcn: %lu marks and no CNP", (unsigned long)ps.data.ecn_marked);
	qsort(r.fct, r.nfct, sizeof(uint64_t), cmp_u64);
	printf("  incast %-5s%s%s: victim FCT p50 %6.1f us p99 %7.1f us (%u msgs), bulk %u/%u/%u msgs, queue max %u B, "
	       "%lu tail drops, %lu trimmed (%lu NACKed), %lu ECN marks (%lu CNPs)\n",
	       uroce_cc_str(algo), trim ? " trim" : "", ecn ? " ecn" : "", r.fct[r.nfct / 2] / 1e3,
	       r.fct[r.nfct * 99 / 100] / 1e3, r.nfct, r.done[0], r.done[1], r.done[2], ps.data.max_depth_bytes,
	       (unsigned long)ps.data.tail_drops, (unsigned long)ps.data.trimmed, (unsigned long)nacks,
	       (unsigned long)ps.data.ecn_marked, (unsigned long)cnps);
	run_close(&r);
}

int main(void)
{
	/* (none with trimming is a retransmission storm: every trimmed packet
	 * goes again at once into the full queue; trimming needs a controller) */
	incast(UROCE_CC_NONE, false, false);
	incast(UROCE_CC_DCQCN, false, true);
	incast(UROCE_CC_SWIFT, false, false);
	incast(UROCE_CC_CUBIC, false, false);
	incast(UROCE_CC_EQDS, true, false);
	/* CUBIC fills the queue: its overflow is trimmed, NACKed and resent */
	incast(UROCE_CC_CUBIC, true, false);
	return test_done("tr_incast");
}
