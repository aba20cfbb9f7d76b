/* SPDX-License-Identifier: MIT */
/* Failover across a port group, on the loop fabric (simulated time): two
 * contexts of two ports each, wired port 1 to port 1 and port 2 to port
 * 2, one QP with a backup on each side, rc and sr. A stream of SENDs and
 * WRITEs with immediate runs while links go down, flap, black-hole, ACKs
 * get lost or a link corrupts; every case checks that each message
 * arrives once, in order, with its bytes, that each send WR completes
 * exactly once with success, and that no completion comes late. Also:
 * every member down past the down timeout ends in an error completion and
 * ERR, not a hang; bad arguments are refused with a reason. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"
#include "tr_test.h"

#define BUF (4u << 20)
#define SLOT (20u * 1024u)
#define NSLOT 64u
#define WOFF (2u << 20)        /* WRITE_WITH_IMM lands here, SENDs below */
#define MAX_STEPS 3000000u
#define WINDOW 24u
#define RQ_DEPTH 128u
#define MS 1000000ull

static struct loop_fabric *fab;
static struct tr_host A, B;
static enum uroce_reliability rel;
static struct uroce_failover_attr fo_cfg;

static void side_open(struct tr_host *s, unsigned first_loop)
{
	struct uroce_qp_init_attr ia;

	tr_host_open(s, fab, first_loop, 2, BUF, 4096, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE);
	REQUIRE(uroce_cq_create(s->ctx, 4096, &s->rcq) == 0, "cq");
	tr_qp_attr(&ia, UROCE_QPT_RC, s->cq, s->rcq, 256, 256);
	ia.rel.reliability = rel;
	ia.failover = fo_cfg;
	REQUIRE(uroce_qp_create(s->pd, &ia, &s->qp[0]) == 0, "qp_create: %s", uroce_last_error());
}

static int connect_qp(struct tr_host *s, struct tr_host *peer, bool backups)
{
	struct uroce_qp_attr a = { 0 };
	int rc, mask;

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	rc = uroce_qp_modify(s->qp[0], &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = uroce_qp_num(peer->qp[0]);
	a.dest_token = uroce_qp_token(peer->qp[0]);
	a.rq_psn = 0xfffff0; /* PSNs wrap in the first messages */
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	REQUIRE(uroce_query_gid(peer->ctx, 1, 1, a.ah_attr.dgid) == 0, "gid: %s", uroce_last_error());
	a.ah_attr.sgid_index = 1;
	REQUIRE(uroce_query_gid(peer->ctx, 2, 1, a.backup_ah[0].dgid) == 0, "gid: %s", uroce_last_error());
	a.backup_ah[0].sgid_index = 1;
	a.backup_ah[0].port_num = 2;
	mask = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN | UROCE_QP_RQ_PSN |
	       UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER | (backups ? UROCE_QP_ALT_PATH : 0);
	rc = uroce_qp_modify(s->qp[0], &a, mask);
	if (rc)
		return rc;
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = 0xfffff0;
	a.timeout = 10; /* ~4 ms: the window (256 packets) takes 2 ms at the links' 1 Gb/s */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return uroce_qp_modify(s->qp[0], &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                          UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC);
}

static const struct loop_impairment wire = { .rate_bps = 1000000000ull, .delay_ns = 10000 };

static void pair_open(enum uroce_reliability r, uint64_t seed)
{
	rel = r;
	fab = loop_fabric_create(4, seed);
	REQUIRE(fab, "fabric");
	/* 1 Gb/s links with 10 us of delay: a run lasts tens of milliseconds,
	 * long enough for links to go and come back inside it */
	REQUIRE(loop_fabric_connect(fab, 0, 2, &wire, &wire) == 0, "wire 1");
	REQUIRE(loop_fabric_connect(fab, 1, 3, &wire, &wire) == 0, "wire 2");
	side_open(&A, 0);
	side_open(&B, 2);
	REQUIRE(connect_qp(&A, &B, true) == 0, "connect A: %s", uroce_last_error());
	REQUIRE(connect_qp(&B, &A, true) == 0, "connect B: %s", uroce_last_error());
}

static void pair_close(void)
{
	tr_host_close(&A);
	tr_host_close(&B);
	loop_fabric_destroy(fab);
}

static void step(void)
{
	tr_host_step(fab, &A, &B, 10000u);
}

/* --- the stream ------------------------------------------------------------- */

static uint32_t msg_len(unsigned i)
{
	return 500u + (i * 7919u) % (SLOT - 500u);
}

static void fill(uint8_t *b, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1u);
}

static bool same(const uint8_t *b, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (b[i] != (uint8_t)(seed * 131u + i * 7u + (i >> 8) + 1u))
			return false;
	return true;
}

static void post_recv(unsigned i)
{
	struct uroce_sge sg = { (uint64_t)(uintptr_t)(B.buf + (i % NSLOT) * SLOT), SLOT, B.mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1 };

	REQUIRE(uroce_post_recv(B.qp[0], &wr, NULL) == 0, "post_recv: %s", uroce_last_error());
}

static int post_msg(unsigned i)
{
	uint32_t len = msg_len(i);
	uint8_t *src = A.buf + (i % NSLOT) * SLOT;
	struct uroce_sge sg = { (uint64_t)(uintptr_t)src, len, A.mr->lkey };
	struct uroce_send_wr wr = { .wr_id = i, .sg_list = &sg, .num_sge = 1, .send_flags = UROCE_SEND_SIGNALED };

	fill(src, len, i);
	/* one-sided and two-sided in turn */
	if (i % 2) {
		wr.opcode = UROCE_WR_SEND;
	} else {
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(i);
		wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(B.buf + WOFF + (i % NSLOT) * SLOT);
		wr.wr.rdma.rkey = B.mr->rkey;
	}
	return uroce_post_send(A.qp[0], &wr, NULL);
}

struct run {
	unsigned n;
	unsigned posted, sent_done, recvd;
	unsigned steps;
	bool failed_wr;          /* a send completed in error (expected only by the down-timeout case) */
	enum uroce_wc_status first_err;
};

typedef void (*scenario_fn)(struct run *r, void *arg);

static int check_recv(const struct uroce_wc *wc, struct run *r)
{
	unsigned i = r->recvd;
	uint32_t len = msg_len(i);

	if (wc->status != UROCE_WC_SUCCESS) {
		fprintf(stderr, "recv %u: status %s\n", i, uroce_wc_status_str(wc->status));
		return -1;
	}
	if (wc->wr_id != i) {
		fprintf(stderr, "recv out of order or duplicated: wr_id %llu, expected %u\n",
		        (unsigned long long)wc->wr_id, i);
		return -1;
	}
	if (i % 2) {
		if (wc->opcode != UROCE_WC_RECV || wc->byte_len != len || !same(B.buf + (i % NSLOT) * SLOT, len, i)) {
			fprintf(stderr, "SEND %u: opcode %d len %u (want %u) or bytes wrong\n", i, wc->opcode, wc->byte_len,
			        len);
			return -1;
		}
	} else if (wc->opcode != UROCE_WC_RECV_RDMA_WITH_IMM || be32toh(wc->imm_data) != i ||
	           !same(B.buf + WOFF + (i % NSLOT) * SLOT, len, i)) {
		fprintf(stderr, "WRITE_IMM %u: opcode %d imm %u or bytes wrong\n", i, wc->opcode, be32toh(wc->imm_data));
		return -1;
	}
	r->recvd++;
	if (r->recvd + RQ_DEPTH - 2 < r->n)
		post_recv(r->recvd + RQ_DEPTH - 2); /* RQ_DEPTH - 1 receives stay posted */
	return 0;
}

/* Run n messages through the pair, calling fn every step; 0 when every
 * one arrived once in order and every WR completed once. */
static int stream(unsigned n, scenario_fn fn, void *arg, struct run *r)
{
	struct uroce_wc wc[16];

	memset(r, 0, sizeof(*r));
	r->n = n;
	for (unsigned i = 0; i < RQ_DEPTH - 1 && i < n; i++)
		post_recv(i);
	for (r->steps = 0; r->steps < MAX_STEPS && (r->recvd < n || r->sent_done < n); r->steps++) {
		int k;

		while (r->posted < n && r->posted - r->sent_done < WINDOW && !r->failed_wr) {
			REQUIRE(post_msg(r->posted) == 0, "post_send: %s", uroce_last_error());
			r->posted++;
		}
		if (fn)
			fn(r, arg);
		step();
		k = uroce_poll_cq(A.cq, 16, wc);
		for (int j = 0; j < k; j++) {
			if (wc[j].status != UROCE_WC_SUCCESS) {
				if (!r->failed_wr)
					r->first_err = wc[j].status;
				r->failed_wr = true;
				continue;
			}
			if (wc[j].wr_id != r->sent_done) {
				fprintf(stderr, "send completion out of order or twice: wr_id %llu, expected %u\n",
				        (unsigned long long)wc[j].wr_id, r->sent_done);
				return -1;
			}
			r->sent_done++;
		}
		if (r->failed_wr)
			return 1;
		k = uroce_poll_cq(B.rcq, 16, wc);
		for (int j = 0; j < k; j++)
			if (check_recv(&wc[j], r))
				return -1;
	}
	if (r->recvd < n || r->sent_done < n) {
		fprintf(stderr, "stalled: %u of %u received, %u completed, %u steps\n", r->recvd, n, r->sent_done,
		        r->steps);
		return -1;
	}
	/* nothing more may come: no duplicate completion, no late receive */
	for (unsigned s = 0; s < 3000; s++) {
		step();
		if (uroce_poll_cq(A.cq, 16, wc) || uroce_poll_cq(B.rcq, 16, wc)) {
			fprintf(stderr, "a completion after the end: wr_id %llu\n", (unsigned long long)wc[0].wr_id);
			return -1;
		}
	}
	return 0;
}

static void info(struct tr_host *s, struct uroce_failover_info *fi)
{
	REQUIRE(uroce_qp_failover_info(s->qp[0], fi) == 0, "failover_info: %s", uroce_last_error());
}

static void show(const char *name, struct tr_host *s)
{
	struct uroce_failover_info fi;
	struct uroce_qp_stats st;

	info(s, &fi);
	uroce_qp_stats(s->qp[0], &st);
	printf("    %s: %s active %u up 0x%x failovers %llu failbacks %llu cause %s rewound %llu notices %llu/%llu "
	       "probes %llu/%llu dups %llu\n",
	       name, uroce_fo_state_str(fi.state), fi.active, fi.up_mask, (unsigned long long)fi.failovers,
	       (unsigned long long)fi.failbacks, uroce_fo_cause_str(fi.last_cause),
	       (unsigned long long)fi.rewound_pkts, (unsigned long long)fi.notices_sent,
	       (unsigned long long)fi.notices_rcvd, (unsigned long long)fi.probes_sent,
	       (unsigned long long)fi.probes_answered, (unsigned long long)st.duplicates);
}

/* --- scenarios -------------------------------------------------------------- */

struct link_plan {
	unsigned at_msg;         /* act once this many messages arrived */
	unsigned port;           /* fabric port (its link: both directions) */
	uint64_t down_ns;        /* 0 = stays down */
	unsigned port2;          /* a second link, or ~0u */
	uint64_t port2_delay_ns; /* after the first went down */
	uint64_t port2_down_ns;
	/* state */
	bool done1, up1, done2, up2;
	uint64_t t1, t2;
};

static void link_scenario(struct run *r, void *arg)
{
	struct link_plan *p = arg;
	uint64_t now = loop_fabric_now(fab);

	if (!p->done1 && r->recvd >= p->at_msg) {
		REQUIRE(loop_fabric_set_link(fab, p->port, false) == 0, "link");
		p->done1 = true;
		p->t1 = now;
	}
	if (p->done1 && !p->up1 && p->down_ns && now - p->t1 >= p->down_ns) {
		REQUIRE(loop_fabric_set_link(fab, p->port, true) == 0, "link");
		p->up1 = true;
	}
	if (p->port2 != ~0u && p->done1 && !p->done2 && now - p->t1 >= p->port2_delay_ns) {
		REQUIRE(loop_fabric_set_link(fab, p->port2, false) == 0, "link");
		p->done2 = true;
		p->t2 = now;
	}
	if (p->done2 && !p->up2 && p->port2_down_ns && now - p->t2 >= p->port2_down_ns) {
		REQUIRE(loop_fabric_set_link(fab, p->port2, true) == 0, "link");
		p->up2 = true;
	}
}

static bool drop_all(void *arg, const uint8_t *frame, uint32_t len)
{
	(void)arg;
	(void)frame;
	(void)len;
	return true;
}

struct hole_plan {
	unsigned at_msg;
	bool both;          /* both directions of member 0, else only B -> A (the ACKs) */
	uint64_t heal_ns;   /* 0 = never */
	bool done, healed;
	uint64_t t;
};

static void hole_scenario(struct run *r, void *arg)
{
	struct hole_plan *p = arg;

	if (!p->done && r->recvd >= p->at_msg) {
		REQUIRE(loop_fabric_set_filter(fab, 2, drop_all, NULL) == 0, "filter");
		if (p->both)
			REQUIRE(loop_fabric_set_filter(fab, 0, drop_all, NULL) == 0, "filter");
		p->done = true;
		p->t = loop_fabric_now(fab);
	}
	if (p->done && !p->healed && p->heal_ns && loop_fabric_now(fab) - p->t >= p->heal_ns) {
		loop_fabric_set_filter(fab, 2, NULL, NULL);
		loop_fabric_set_filter(fab, 0, NULL, NULL);
		p->healed = true;
	}
}

struct wait_plan {
	struct link_plan l;
	bool armed, hit;
	unsigned kill_port; /* taken down once the sender is failing back */
};

static void failback_scenario(struct run *r, void *arg)
{
	struct wait_plan *p = arg;
	struct uroce_failover_info fi;

	link_scenario(r, &p->l);
	if (!p->l.up1 || p->hit)
		return;
	info(&A, &fi);
	if (fi.state == UROCE_FO_WAIT_SIGNALED || fi.state == UROCE_FO_WAIT_SINKED) {
		REQUIRE(loop_fabric_set_link(fab, p->kill_port, false) == 0, "link");
		p->hit = true;
	}
}

/* --- cases ------------------------------------------------------------------ */

#define N_MSGS 300u

static void case_link_down(enum uroce_reliability r)
{
	struct link_plan p = { .at_msg = 100, .port = 0, .port2 = ~0u };
	struct uroce_failover_info fa, fb;
	struct run run;

	pair_open(r, 11);
	CHECK(stream(N_MSGS, link_scenario, &p, &run) == 0, "%s: link down mid-transfer", uroce_reliability_str(r));
	info(&A, &fa);
	info(&B, &fb);
	show("A", &A);
	show("B", &B);
	CHECK(fa.failovers >= 1 && fa.active == 1 && fa.state == UROCE_FO_FALLBACK && fa.last_cause == UROCE_FO_CAUSE_LINK,
	      "%s: A failed over on the link (failovers %llu active %u state %s)", uroce_reliability_str(r),
	      (unsigned long long)fa.failovers, fa.active, uroce_fo_state_str(fa.state));
	CHECK(fb.failovers >= 1 && fb.active == 1, "%s: B followed", uroce_reliability_str(r));
	CHECK(fa.last_switch_tx_ns >= fa.last_fail_ns && fa.last_switch_tx_ns - fa.last_fail_ns < MS,
	      "%s: traffic on the backup within 1 ms of the detection (%llu ns)", uroce_reliability_str(r),
	      (unsigned long long)(fa.last_switch_tx_ns - fa.last_fail_ns));
	pair_close();
}

static void case_flap(enum uroce_reliability r)
{
	struct link_plan p = { .at_msg = 60, .port = 0, .down_ns = 20 * MS, .port2 = ~0u };
	struct uroce_failover_info fa, fb;
	struct run run;

	pair_open(r, 12);
	CHECK(stream(N_MSGS * 2, link_scenario, &p, &run) == 0, "%s: flapping link", uroce_reliability_str(r));
	info(&A, &fa);
	info(&B, &fb);
	show("A", &A);
	show("B", &B);
	CHECK(p.up1, "%s: the link came back during the run", uroce_reliability_str(r));
	CHECK(fa.failovers >= 1 && fa.failbacks >= 1 && fa.active == 0 && fa.state == UROCE_FO_DEFAULT,
	      "%s: A failed over and back (failovers %llu failbacks %llu active %u state %s)", uroce_reliability_str(r),
	      (unsigned long long)fa.failovers, (unsigned long long)fa.failbacks, fa.active,
	      uroce_fo_state_str(fa.state));
	CHECK(fb.active == 0 && fb.state == UROCE_FO_DEFAULT, "%s: B is back on the primary (active %u, %s)",
	      uroce_reliability_str(r), fb.active, uroce_fo_state_str(fb.state));
	pair_close();
}

static void case_blackhole(enum uroce_reliability r)
{
	struct hole_plan p = { .at_msg = 80, .both = true, .heal_ns = 30 * MS };
	struct uroce_failover_info fa;
	struct run run;

	pair_open(r, 13);
	CHECK(stream(N_MSGS * 2, hole_scenario, &p, &run) == 0, "%s: black hole (no link change)",
	      uroce_reliability_str(r));
	info(&A, &fa);
	show("A", &A);
	show("B", &B);
	CHECK(fa.failovers >= 1 && fa.failbacks >= 1 && fa.active == 0,
	      "%s: RTO expiry failed the member over, a probe brought it back (failovers %llu failbacks %llu active %u)",
	      uroce_reliability_str(r), (unsigned long long)fa.failovers, (unsigned long long)fa.failbacks, fa.active);
	pair_close();
}

/* SHIFT's corner case: the responder has the SEND (its receive consumed),
 * the ACK is lost, the sender fails over and sends it again. Here it is a
 * duplicate by PSN: answered, never placed or consumed twice. */
static void case_ack_lost(enum uroce_reliability r)
{
	struct hole_plan p = { .at_msg = 50, .both = false };
	struct uroce_failover_info fa;
	struct uroce_qp_stats sb;
	struct run run;

	pair_open(r, 14);
	CHECK(stream(N_MSGS, hole_scenario, &p, &run) == 0, "%s: ACKs lost, then failover", uroce_reliability_str(r));
	info(&A, &fa);
	uroce_qp_stats(B.qp[0], &sb);
	show("A", &A);
	show("B", &B);
	CHECK(fa.failovers >= 1 && fa.active == 1, "%s: the sender failed over (failovers %llu, cause %s)",
	      uroce_reliability_str(r), (unsigned long long)fa.failovers, uroce_fo_cause_str(fa.last_cause));
	CHECK(sb.duplicates > 0, "%s: the rewind resent what had arrived (duplicates %llu)", uroce_reliability_str(r),
	      (unsigned long long)sb.duplicates);
	pair_close();
}

static void case_corrupt(enum uroce_reliability r)
{
	struct loop_impairment bad = wire;
	struct uroce_failover_info fa, fb;
	struct run run;

	fo_cfg.err_threshold = 16; /* a 1 Gb/s link carries ~120 packets a millisecond */
	pair_open(r, 15);
	/* A -> B on member 0 corrupts: B counts bad ICRCs on its port 1 */
	bad.corrupt = 0.5;
	bad.corrupt_skip = 14;
	REQUIRE(loop_fabric_set_impairment(fab, 0, &bad) == 0, "impair");
	CHECK(stream(N_MSGS, NULL, NULL, &run) == 0, "%s: corrupting link", uroce_reliability_str(r));
	info(&A, &fa);
	info(&B, &fb);
	show("A", &A);
	show("B", &B);
	CHECK(fb.failovers >= 1 && fb.last_cause == UROCE_FO_CAUSE_ERRORS,
	      "%s: B failed member 0 on its error counters (cause %s)", uroce_reliability_str(r),
	      uroce_fo_cause_str(fb.last_cause));
	/* the member stays out for its hold-down (100 ms), then a probe may
	 * bring it back: a long run may end on either member, both ends on one */
	CHECK(fa.failovers >= 1 && fa.last_cause == UROCE_FO_CAUSE_PEER && fa.active == fb.active,
	      "%s: A moved on B's notice (failovers %llu, cause %s, active %u and %u)", uroce_reliability_str(r),
	      (unsigned long long)fa.failovers, uroce_fo_cause_str(fa.last_cause), fa.active, fb.active);
	pair_close();
	fo_cfg.err_threshold = 0;
}

static void case_failback_fails(enum uroce_reliability r, bool kill_backup)
{
	struct wait_plan p = { .l = { .at_msg = 60, .port = 0, .down_ns = 10 * MS, .port2 = ~0u } };
	struct uroce_failover_info fa;
	struct run run;

	p.kill_port = kill_backup ? 1 : 0;
	pair_open(r, kill_backup ? 16 : 17);
	CHECK(stream(N_MSGS * 2, failback_scenario, &p, &run) == 0, "%s: %s fails during fail-back",
	      uroce_reliability_str(r), kill_backup ? "the backup" : "the primary");
	info(&A, &fa);
	show("A", &A);
	show("B", &B);
	CHECK(p.hit, "%s: the failure hit during WaitSignaled/WaitSinked", uroce_reliability_str(r));
	if (kill_backup)
		CHECK(fa.active == 0, "%s: on the primary after the backup died (active %u)", uroce_reliability_str(r),
		      fa.active);
	else
		CHECK(fa.active == 1 && fa.state == UROCE_FO_FALLBACK, "%s: back in Fallback on the backup (%u, %s)",
		      uroce_reliability_str(r), fa.active, uroce_fo_state_str(fa.state));
	pair_close();
}

static void case_both_down(enum uroce_reliability r)
{
	/* primary down, then the backup 2 ms later; the backup returns after 40 ms */
	struct link_plan p = { .at_msg = 80, .port = 0, .port2 = 1, .port2_delay_ns = 2 * MS, .port2_down_ns = 40 * MS };
	struct uroce_failover_info fa;
	struct run run;

	pair_open(r, 18);
	CHECK(stream(N_MSGS, link_scenario, &p, &run) == 0, "%s: both links down, then one back",
	      uroce_reliability_str(r));
	info(&A, &fa);
	show("A", &A);
	show("B", &B);
	CHECK(p.up2 && fa.active == 1, "%s: the returning backup carries the rest (active %u)", uroce_reliability_str(r),
	      fa.active);
	pair_close();
}

static void case_down_timeout(enum uroce_reliability r)
{
	struct link_plan p = { .at_msg = 40, .port = 0, .port2 = 1, .port2_delay_ns = 1 * MS };
	struct uroce_qp_attr qa;
	struct run run;
	int rc;

	fo_cfg.down_timeout_ms = 50;
	pair_open(r, 19);
	rc = stream(N_MSGS, link_scenario, &p, &run);
	CHECK(rc == 1 && run.first_err == UROCE_WC_RETRY_EXC_ERR,
	      "%s: every member down past the timeout: an error completion (rc %d, %s) after %u steps",
	      uroce_reliability_str(r), rc, uroce_wc_status_str(run.first_err), run.steps);
	CHECK(uroce_qp_query(A.qp[0], &qa, NULL) == 0 && qa.cur_qp_state == UROCE_QPS_ERR, "%s: the QP is in ERR",
	      uroce_reliability_str(r));
	pair_close();
	fo_cfg.down_timeout_ms = 0;
}

static void case_args(void)
{
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_failover_info fi;
	struct uroce_qp_attr a = { 0 };
	struct uroce_qp *qp;

	pair_open(UROCE_REL_RC, 20);
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = A.cq;
	ia.recv_cq = A.rcq;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.failover.nbackups = UROCE_FO_MAX_MEMBERS;
	CHECK(uroce_qp_create(A.pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "accepted 0-3"),
	      "nbackups 4 refused: %s", uroce_last_error());
	ia.failover.nbackups = 1;
	ia.rel.reliability = UROCE_REL_EC;
	CHECK(uroce_qp_create(A.pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "rc or sr"),
	      "ec refused: %s", uroce_last_error());
	ia.rel.reliability = UROCE_REL_SR;
	ia.path.nports = 2;
	ia.path.ports[0] = 1;
	ia.path.ports[1] = 2;
	CHECK(uroce_qp_create(A.pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "uroce_stripe_create"),
	      "path.nports refused: %s", uroce_last_error());
	memset(&ia.path, 0, sizeof(ia.path));
	ia.rel.reliability = UROCE_REL_RC;
	ia.failover.nbackups = 0;
	ia.failover.probe_us = 100;
	CHECK(uroce_qp_create(A.pd, &ia, &qp) == -EINVAL && strstr(uroce_last_error(), "nbackups"),
	      "settings without backups refused: %s", uroce_last_error());
	ia.failover.probe_us = 0;
	CHECK(uroce_qp_create(A.pd, &ia, &qp) == 0, "plain QP");
	CHECK(uroce_qp_failover_info(qp, &fi) == -EINVAL && strstr(uroce_last_error(), "no backups"),
	      "info without backups: %s", uroce_last_error());
	CHECK(uroce_qp_destroy(qp) == 0, "destroy");
	/* a QP with a backup: RTR needs it, with a port of the context */
	ia.failover.nbackups = 1;
	CHECK(uroce_qp_create(A.pd, &ia, &qp) == 0, "fo QP: %s", uroce_last_error());
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE;
	CHECK(uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS) == 0,
	      "init");
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = uroce_qp_num(B.qp[0]);
	a.dest_token = uroce_qp_token(B.qp[0]);
	a.max_dest_rd_atomic = 1;
	REQUIRE(uroce_query_gid(B.ctx, 1, 1, a.ah_attr.dgid) == 0, "gid");
	a.ah_attr.sgid_index = 1;
	int m = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN | UROCE_QP_RQ_PSN |
	        UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
	CHECK(uroce_qp_modify(qp, &a, m) == -EINVAL && strstr(uroce_last_error(), "UROCE_QP_ALT_PATH"),
	      "RTR without the backups: %s", uroce_last_error());
	a.backup_ah[0].port_num = 3;
	CHECK(uroce_qp_modify(qp, &a, m | UROCE_QP_ALT_PATH) == -EINVAL && strstr(uroce_last_error(), "accepted: 1-2"),
	      "backup on port 3: %s", uroce_last_error());
	/* per-member QPNs are a verbs context's: a frame QP has one number */
	a.backup_ah[0].port_num = 2;
	a.backup_dest_qpn[0] = uroce_qp_num(B.qp[0]);
	CHECK(uroce_qp_modify(qp, &a, m | UROCE_QP_ALT_PATH) == -EINVAL && strstr(uroce_last_error(), "accepted: 0"),
	      "backup_dest_qpn on frame ports: %s", uroce_last_error());
	a.backup_dest_qpn[0] = 0;
	{
		uint32_t n1 = 0, c1 = 0;

		CHECK(uroce_qp_port_nums(qp, 2, &n1, &c1) == 0 && n1 == uroce_qp_num(qp) && c1 == uroce_qp_ctrl_num(qp),
		      "port 2's numbers are the QP's own on frame ports: %s", uroce_last_error());
		CHECK(uroce_qp_port_nums(qp, 3, &n1, &c1) == -EINVAL && strstr(uroce_last_error(), "ports 1-2"),
		      "port_nums of port 3: %s", uroce_last_error());
	}
	CHECK(uroce_qp_destroy(qp) == 0, "destroy");
	/* a one-port context has nothing to fail over to */
	pair_close();
}

int main(void)
{
	static const enum uroce_reliability rels[] = { UROCE_REL_RC, UROCE_REL_SR };

	fo_cfg.nbackups = 1;
	fo_cfg.probe_us = 200;
	case_args();
	for (unsigned i = 0; i < 2; i++) {
		enum uroce_reliability r = rels[i];

		printf("%s: link down mid-transfer\n", uroce_reliability_str(r));
		case_link_down(r);
		printf("%s: flapping link\n", uroce_reliability_str(r));
		case_flap(r);
		printf("%s: black hole, RTO detection, heal\n", uroce_reliability_str(r));
		case_blackhole(r);
		printf("%s: ACKs lost, then failover (SHIFT's RNR corner)\n", uroce_reliability_str(r));
		case_ack_lost(r);
		printf("%s: corrupting link, error counters\n", uroce_reliability_str(r));
		case_corrupt(r);
		printf("%s: backup fails during fail-back\n", uroce_reliability_str(r));
		case_failback_fails(r, true);
		printf("%s: primary fails again during fail-back\n", uroce_reliability_str(r));
		case_failback_fails(r, false);
		printf("%s: both links down, then one back\n", uroce_reliability_str(r));
		case_both_down(r);
		printf("%s: every member down past the timeout\n", uroce_reliability_str(r));
		case_down_timeout(r);
	}
	return test_done("tr_failover");
}
