/* SPDX-License-Identifier: MIT */
/* A checked stream of messages over one sr QP with failover between two
 * RDMA devices (tests/interop/verbs_failover.sh, in two Soft-RoCE
 * guests): each end opens one context over two verbs ports (rxe0 on the
 * guest's first NIC, rxe1 on its second); member 0 is port 1, member 1
 * port 2 with the peer's port-2 GID and the numbers of its NIC QPs there
 * (uroce_qp_port_nums). The script takes a NIC down and up while the
 * stream runs.
 *
 * Message i is 16..--max-msg bytes (a length drawn from i): a header
 * {magic, i, length, ~i} then bytes drawn from i. An even i is a SEND, an
 * odd i an RDMA WRITE_WITH_IMM (immediate i) into slot i of the
 * receiver's region; both consume receive i. Every WR is signaled.
 *
 * Checked: the receiver completes exactly the messages 0..N-1, each once,
 * in order, with the right opcode, immediate, length and every byte, and
 * nothing after the last within a second; the sender gets one successful
 * completion per WR, in posting order. Any violation: a message naming
 * it and exit 1.
 *
 *   verbs_fo --role send|recv|refusals -d verbs:DEV1,verbs:DEV2 [--peer HOST] [--port P]
 *            [-n N] [--max-msg B] [--window W] [--pace-us U] [--max-sec S] [--rto-min-us R]
 *
 * --rto-min-us (default 20000): sr's RTO floor. A TCG guest's RTT is
 * milliseconds; with the 200 us default, three timeouts before the first
 * RTT sample would fail a member that works (rto_fail).
 *
 * --role refusals: no peer; what a verbs context refuses about failover,
 * each refusal checked for its errno and the words that say what is
 * accepted (one line each, "refused ... : MESSAGE").
 *
 * The receiver listens on --port (18600) for the sender's TCP exchange
 * (QPNs, tokens, GIDs, the region), which closes before any data moves.
 * Output lines: "verbs_fo[ROLE]: t=S at|event|final msgs=N state=..
 * active=.. up=0x.. failovers=.. failbacks=.. cause=.. rewound=..", then
 * "ok". Exit 0, 1 on a failure, 2 on a bad argument. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <uroce/uroce.h>

#include "../../apps/app_counters.h"
#include "../../apps/tcp_exchange.h"

#define VF_MAGIC 0x76666f31u /* "vfo1" */
#define VF_HDR 16u
#define VF_RSLOTS 256u       /* receives posted ahead */
#define VF_GID_INDEX 1       /* the IPv4-mapped GID */
#define VF_BEAT_NS 200000000ull

struct vf_info {
	uint32_t qpn[2], ctrl[2], token, psn, rkey, count, max_msg;
	uint64_t addr;
	uint8_t gid[2][16];
};

static const char *role_name = "?";
static uint64_t t0;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int rc)
{
	printf("verbs_fo[%s]: FAIL %s%s%s\n", role_name, what, rc ? ": " : "", rc ? uroce_last_error() : "");
	fflush(stdout);
	exit(1);
}

static void bad_arg(const char *msg)
{
	fprintf(stderr, "verbs_fo: %s\n", msg);
	exit(2);
}

static uint32_t msg_len(uint32_t i, uint32_t max)
{
	return VF_HDR + (uint32_t)(((uint64_t)i * 2654435761u) % (max - VF_HDR + 1));
}

static void msg_fill(uint8_t *b, uint32_t i, uint32_t len)
{
	uint32_t h[4] = { VF_MAGIC, i, len, ~i };

	memcpy(b, h, VF_HDR);
	for (uint32_t j = VF_HDR; j < len; j++)
		b[j] = (uint8_t)(i * 31u + j * 7u);
}

static bool msg_ok(const uint8_t *b, uint32_t i, uint32_t len, char *why, size_t wl)
{
	uint32_t h[4];

	memcpy(h, b, VF_HDR);
	if (h[0] != VF_MAGIC || h[1] != i || h[2] != len || h[3] != ~i) {
		snprintf(why, wl, "header {0x%x, %u, %u, 0x%x}, expected {0x%x, %u, %u, 0x%x}", h[0], h[1], h[2], h[3],
		         VF_MAGIC, i, len, ~i);
		return false;
	}
	for (uint32_t j = VF_HDR; j < len; j++)
		if (b[j] != (uint8_t)(i * 31u + j * 7u)) {
			snprintf(why, wl, "byte %u is 0x%02x, expected 0x%02x", j, b[j], (uint8_t)(i * 31u + j * 7u));
			return false;
		}
	return true;
}

struct vf {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *scq, *rcq;
	struct uroce_qp *qp;
	struct uroce_mr *mr;
	uint8_t *buf;
	struct uroce_failover_info last;
	uint64_t next_beat;
};

static void report(struct vf *v, const char *kind, uint32_t msgs)
{
	struct uroce_failover_info fi;

	if (uroce_qp_failover_info(v->qp, &fi))
		die("uroce_qp_failover_info", -1);
	if (!strcmp(kind, "tick")) {
		bool changed = fi.state != v->last.state || fi.active != v->last.active || fi.up_mask != v->last.up_mask ||
		               fi.failovers != v->last.failovers || fi.failbacks != v->last.failbacks;
		uint64_t now = now_ns();

		if (changed)
			kind = "event";
		else if (now >= v->next_beat)
			kind = "at";
		else
			return;
		v->next_beat = now + VF_BEAT_NS;
	}
	v->last = fi;
	printf("verbs_fo[%s]: t=%.3f %s msgs=%u state=%s active=%u up=0x%x failovers=%" PRIu64 " failbacks=%" PRIu64
	       " cause=%s rewound=%" PRIu64 " notices=%" PRIu64 "/%" PRIu64 " probes=%" PRIu64 "/%" PRIu64 "\n",
	       role_name, (double)(now_ns() - t0) / 1e9, kind, msgs, uroce_fo_state_str(fi.state), fi.active,
	       fi.up_mask, fi.failovers, fi.failbacks, uroce_fo_cause_str(fi.last_cause), fi.rewound_pkts,
	       fi.notices_sent, fi.notices_rcvd, fi.probes_sent, fi.probes_answered);
	fflush(stdout);
}

static void open_end(struct vf *v, const char *devs, size_t buflen, unsigned rto_min_us, struct vf_info *me)
{
	char spec[2][64];
	const char *specs[2] = { spec[0], spec[1] };
	const char *comma = strchr(devs, ',');
	struct uroce_context_attr ca = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	int rc;

	if (!comma || strchr(comma + 1, ',') || (size_t)(comma - devs) >= sizeof(spec[0]) ||
	    strlen(comma + 1) >= sizeof(spec[1]))
		bad_arg("-d: accepted two ports, \"verbs:DEV1,verbs:DEV2\"");
	snprintf(spec[0], sizeof(spec[0]), "%.*s", (int)(comma - devs), devs);
	snprintf(spec[1], sizeof(spec[1]), "%s", comma + 1);
	ca.ports = specs;
	ca.nports = 2;
	ca.mode = UROCE_ENGINE_EMBEDDED;
	ca.engine_cpu = -1;
	if ((rc = uroce_context_create(&v->ctx, &ca)))
		die("uroce_context_create", rc);
	for (uint8_t p = 1; p <= 2; p++)
		if ((rc = uroce_query_gid(v->ctx, p, VF_GID_INDEX, me->gid[p - 1])))
			die("a port has no IPv4 GID (index 1)", rc);
	v->buf = aligned_alloc(4096, (buflen + 4095) & ~(size_t)4095);
	if (!v->buf)
		die("out of memory", 0);
	memset(v->buf, 0, buflen);
	if ((rc = uroce_pd_alloc(v->ctx, &v->pd)) ||
	    (rc = uroce_mr_reg(v->pd, v->buf, buflen, UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &v->mr)))
		die("pd/mr", rc);
	if ((rc = uroce_cq_create(v->ctx, 1024, &v->scq)) || (rc = uroce_cq_create(v->ctx, 1024, &v->rcq)))
		die("uroce_cq_create", rc);
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = v->scq;
	ia.recv_cq = v->rcq;
	ia.cap = (struct uroce_qp_cap){ .max_send_wr = 256, .max_recv_wr = VF_RSLOTS, .max_send_sge = 1,
		                        .max_recv_sge = 1 };
	ia.rel.reliability = UROCE_REL_SR;
	ia.rel.imm_keyed = 1; /* the NICs number their own PSNs */
	ia.rel.rto_min_us = rto_min_us;
	ia.failover.nbackups = 1;
	ia.failover.down_timeout_ms = 60000;
	if ((rc = uroce_qp_create(v->pd, &ia, &v->qp)))
		die("uroce_qp_create", rc);
	for (uint8_t p = 1; p <= 2; p++)
		if ((rc = uroce_qp_port_nums(v->qp, p, &me->qpn[p - 1], &me->ctrl[p - 1])))
			die("uroce_qp_port_nums", rc);
	me->token = uroce_qp_token(v->qp);
	me->psn = (uint32_t)(now_ns() & 0xffffff);
	me->rkey = v->mr->rkey;
	me->addr = (uint64_t)(uintptr_t)v->buf;
}

static void connect_qp(struct vf *v, const struct vf_info *me, const struct vf_info *peer)
{
	struct uroce_qp_attr a = { 0 };
	int rc;

	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	if ((rc = uroce_qp_modify(v->qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                                         UROCE_QP_ACCESS_FLAGS)))
		die("QP to INIT", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = peer->qpn[0];
	a.dest_ctrl_qpn = peer->ctrl[0];
	a.dest_token = peer->token;
	a.rq_psn = peer->psn;
	a.min_rnr_timer = 12;
	a.max_dest_rd_atomic = 1;
	memcpy(a.ah_attr.dgid, peer->gid[0], 16);
	a.ah_attr.sgid_index = VF_GID_INDEX;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.port_num = 1;
	memcpy(a.backup_ah[0].dgid, peer->gid[1], 16);
	a.backup_ah[0].sgid_index = VF_GID_INDEX;
	a.backup_ah[0].hop_limit = 64;
	a.backup_ah[0].port_num = 2;
	a.backup_dest_qpn[0] = peer->qpn[1];
	a.backup_dest_ctrl_qpn[0] = peer->ctrl[1];
	if ((rc = uroce_qp_modify(v->qp, &a, UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN |
	                                         UROCE_QP_DEST_TOKEN | UROCE_QP_DEST_CTRL_QPN | UROCE_QP_RQ_PSN |
	                                         UROCE_QP_MIN_RNR_TIMER | UROCE_QP_MAX_DEST_RD_ATOMIC |
	                                         UROCE_QP_ALT_PATH)))
		die("QP to RTR", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = me->psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if ((rc = uroce_qp_modify(v->qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                         UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC)))
		die("QP to RTS", rc);
}

static void post_recv(struct vf *v, uint32_t k, uint32_t max)
{
	struct uroce_sge sg = { .addr = (uintptr_t)(v->buf + (size_t)(k % VF_RSLOTS) * max), .length = max,
		                .lkey = v->mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = k, .sg_list = &sg, .num_sge = 1 }, *bad;
	int rc = uroce_post_recv(v->qp, &wr, &bad);

	if (rc)
		die("uroce_post_recv", rc);
}

static int run_recv(struct vf *v, const struct vf_info *me, uint32_t n, double max_sec)
{
	uint32_t max = me->max_msg, got = 0;
	uint8_t *wreg = v->buf + (size_t)VF_RSLOTS * max; /* WRITE slot i at wreg + i * max */
	uint64_t end = now_ns() + (uint64_t)(max_sec * 1e9), quiet_until = 0;
	char why[160];

	for (;;) {
		struct uroce_wc wc;
		int k = uroce_progress(v->ctx) < 0 ? -1 : uroce_poll_cq(v->rcq, 1, &wc);

		if (k < 0)
			die("uroce_progress / uroce_poll_cq", k);
		report(v, "tick", got);
		if (now_ns() > end) {
			printf("verbs_fo[recv]: FAIL timed out after %.0f s with %u of %u messages\n", max_sec, got, n);
			return 1;
		}
		if (got == n && !quiet_until)
			quiet_until = now_ns() + 1000000000ull; /* a second for anything extra to show */
		if (quiet_until && now_ns() > quiet_until)
			break;
		if (!k)
			continue;
		if (wc.status != UROCE_WC_SUCCESS) {
			printf("verbs_fo[recv]: FAIL receive %" PRIu64 ": %s\n", wc.wr_id, uroce_wc_status_str(wc.status));
			return 1;
		}
		if (got == n || wc.wr_id != got) {
			printf("verbs_fo[recv]: FAIL completion of receive %" PRIu64 " where %u was next (of %u)\n", wc.wr_id,
			       got, n);
			return 1;
		}
		if (got % 2 == 0) {
			const uint8_t *b = v->buf + (size_t)(got % VF_RSLOTS) * max;

			if (wc.opcode != UROCE_WC_RECV || (wc.wc_flags & UROCE_WC_WITH_IMM) ||
			    wc.byte_len != msg_len(got, max) || !msg_ok(b, got, wc.byte_len, why, sizeof(why))) {
				printf("verbs_fo[recv]: FAIL message %u (SEND, opcode %d, %u bytes): %s\n", got, (int)wc.opcode,
				       wc.byte_len, why);
				return 1;
			}
		} else {
			const uint8_t *b = wreg + (size_t)got * max;

			snprintf(why, sizeof(why), "immediate %u", ntohl(wc.imm_data));
			if (wc.opcode != UROCE_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & UROCE_WC_WITH_IMM) ||
			    ntohl(wc.imm_data) != got || wc.byte_len != msg_len(got, max) ||
			    !msg_ok(b, got, wc.byte_len, why, sizeof(why))) {
				printf("verbs_fo[recv]: FAIL message %u (WRITE_WITH_IMM, opcode %d, %u bytes): %s\n", got,
				       (int)wc.opcode, wc.byte_len, why);
				return 1;
			}
		}
		got++;
		if (got + VF_RSLOTS - 1 < n)
			post_recv(v, got + VF_RSLOTS - 1, max);
	}
	report(v, "final", got);
	return 0;
}

static int run_send(struct vf *v, const struct vf_info *peer, uint32_t n, uint32_t window, uint64_t pace_ns,
                    double max_sec)
{
	uint32_t max = peer->max_msg, posted = 0, done = 0;
	uint64_t end = now_ns() + (uint64_t)(max_sec * 1e9), next_post = 0;

	while (done < n) {
		struct uroce_wc wc;
		int k;

		if (posted < n && posted - done < window && now_ns() >= next_post) {
			uint8_t *b = v->buf + (size_t)(posted % window) * max;
			uint32_t len = msg_len(posted, max);
			struct uroce_sge sg = { .addr = (uintptr_t)b, .length = len, .lkey = v->mr->lkey };
			struct uroce_send_wr wr = { .wr_id = posted, .sg_list = &sg, .num_sge = 1,
				                    .send_flags = UROCE_SEND_SIGNALED }, *bad;
			int rc;

			msg_fill(b, posted, len);
			if (posted % 2) {
				wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
				wr.imm_data = htonl(posted);
				wr.wr.rdma.remote_addr = peer->addr + (uint64_t)VF_RSLOTS * max + (uint64_t)posted * max;
				wr.wr.rdma.rkey = peer->rkey;
			} else {
				wr.opcode = UROCE_WR_SEND;
			}
			if ((rc = uroce_post_send(v->qp, &wr, &bad)))
				die("uroce_post_send", rc);
			posted++;
			next_post = now_ns() + pace_ns;
		}
		k = uroce_progress(v->ctx) < 0 ? -1 : uroce_poll_cq(v->scq, 1, &wc);
		if (k < 0)
			die("uroce_progress / uroce_poll_cq", k);
		report(v, "tick", done);
		if (now_ns() > end) {
			printf("verbs_fo[send]: FAIL timed out after %.0f s with %u of %u messages completed\n", max_sec, done,
			       n);
			return 1;
		}
		if (!k)
			continue;
		if (wc.status != UROCE_WC_SUCCESS || wc.wr_id != done) {
			printf("verbs_fo[send]: FAIL completion of WR %" PRIu64 " (%s) where %u was next\n", wc.wr_id,
			       uroce_wc_status_str(wc.status), done);
			return 1;
		}
		done++;
	}
	report(v, "final", done);
	return 0;
}

/* One refusal: rc must be want and the message must hold words. */
static int refused(const char *what, int rc, int want, const char *words)
{
	const char *msg = uroce_last_error();

	if (rc != want || !strstr(msg, words)) {
		printf("verbs_fo[refusals]: FAIL %s: rc %d (want %d), message \"%s\" (want \"%s\" in it)\n", what, rc,
		       want, msg, words);
		return 1;
	}
	printf("verbs_fo[refusals]: refused %s: %s\n", what, msg);
	return 0;
}

static int run_refusals(const char *devs)
{
	struct vf_info me = { 0 };
	struct vf v = { 0 };
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_qp_attr a = { 0 };
	struct uroce_qp *qp;
	uint32_t n, c;
	int bad = 0, m;

	open_end(&v, devs, 4096, 0, &me); /* an sr QP with a backup, in INIT below */
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = v.scq;
	ia.recv_cq = v.rcq;
	ia.cap = (struct uroce_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 };
	ia.failover.nbackups = 1;
	bad |= refused("an rc QP (the NIC's own) with a backup", uroce_qp_create(v.pd, &ia, &qp), -EOPNOTSUPP,
	               "sr takes paths and backups");
	ia.rel.reliability = UROCE_REL_SR;
	ia.rel.imm_keyed = 1;
	ia.rel.nic_rc = 1;
	bad |= refused("failover over an RC pool", uroce_qp_create(v.pd, &ia, &qp), -EINVAL,
	               "failover over UC pools only");
	bad |= refused("the numbers of port 3", uroce_qp_port_nums(v.qp, 3, &n, &c), -EINVAL, "ports 1-2");
	ia.rel.nic_rc = 0;
	ia.failover.nbackups = 0;
	if (uroce_qp_create(v.pd, &ia, &qp))
		die("an sr QP without backups", -1);
	bad |= refused("port 2's numbers of a QP without backups", uroce_qp_port_nums(qp, 2, &n, &c), -EINVAL,
	               "only when created with failover.nbackups > 0");
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 2;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	bad |= refused("a QP on port 2", uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT |
	                                                            UROCE_QP_ACCESS_FLAGS),
	               -EINVAL, "runs on port 1");
	uroce_qp_destroy(qp);
	a.port_num = 1;
	if (uroce_qp_modify(v.qp, &a, UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS))
		die("QP to INIT", -1);
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = UROCE_MTU_1024;
	a.dest_qp_num = me.qpn[0];
	a.dest_ctrl_qpn = me.ctrl[0];
	a.dest_token = me.token;
	a.max_dest_rd_atomic = 1;
	memcpy(a.ah_attr.dgid, me.gid[0], 16);
	a.ah_attr.sgid_index = VF_GID_INDEX;
	a.ah_attr.port_num = 1;
	memcpy(a.backup_ah[0].dgid, me.gid[1], 16);
	a.backup_ah[0].sgid_index = VF_GID_INDEX;
	a.backup_ah[0].port_num = 2;
	m = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_DEST_TOKEN |
	    UROCE_QP_DEST_CTRL_QPN | UROCE_QP_RQ_PSN | UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER |
	    UROCE_QP_ALT_PATH;
	bad |= refused("a backup without the peer's numbers behind it", uroce_qp_modify(v.qp, &a, m), -EINVAL,
	               "uroce_qp_port_nums()");
	a.backup_dest_qpn[0] = me.qpn[1];
	a.backup_dest_ctrl_qpn[0] = me.ctrl[1];
	a.backup_ah[0].port_num = 1;
	bad |= refused("a backup on port 1 (the primary's)", uroce_qp_modify(v.qp, &a, m), -EINVAL, "accepted: 2-2");
	return bad;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "role", required_argument, NULL, 'r' },   { "dev", required_argument, NULL, 'd' },
		{ "peer", required_argument, NULL, 'p' },   { "port", required_argument, NULL, 'P' },
		{ "count", required_argument, NULL, 'n' },  { "max-msg", required_argument, NULL, 'm' },
		{ "window", required_argument, NULL, 'w' }, { "pace-us", required_argument, NULL, 'u' },
		{ "max-sec", required_argument, NULL, 't' }, { "rto-min-us", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	const char *role = NULL, *devs = NULL, *peer_host = NULL;
	unsigned port = 18600, n = 2000, max = 4096, window = 32, pace_us = 0, rto_min_us = 20000;
	double max_sec = 120;
	struct tcp_exchange x = { .fd = -1, .prog = "verbs_fo", .timeout_s = 60 };
	struct vf_info me = { 0 }, peer = { 0 };
	struct vf v = { 0 };
	int c, rc;

	while ((c = getopt_long(argc, argv, "r:d:p:P:n:m:w:u:t:R:", opts, NULL)) != -1) {
		switch (c) {
		case 'r': role = optarg; break;
		case 'd': devs = optarg; break;
		case 'p': peer_host = optarg; break;
		case 'P': port = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': n = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm': max = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': window = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'u': pace_us = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': max_sec = strtod(optarg, NULL); break;
		case 'R': rto_min_us = (unsigned)strtoul(optarg, NULL, 0); break;
		default: bad_arg("usage: verbs_fo --role send|recv -d verbs:DEV1,verbs:DEV2 [--peer HOST] [--port P] "
		                 "[-n N] [--max-msg B] [--window W] [--pace-us U] [--max-sec S] [--rto-min-us R]");
		}
	}
	if (!role || (strcmp(role, "send") && strcmp(role, "recv") && strcmp(role, "refusals")))
		bad_arg("--role: accepted send, recv, refusals");
	if (!devs)
		bad_arg("-d: accepted two ports, \"verbs:DEV1,verbs:DEV2\"");
	if (!strcmp(role, "refusals")) {
		role_name = role;
		if (run_refusals(devs))
			return 1;
		printf("verbs_fo[refusals]: ok\n");
		return 0;
	}
	if (!strcmp(role, "send") && !peer_host)
		bad_arg("--peer: the receiver's address, required with --role send");
	if (n < 1 || n > 100000 || max < VF_HDR || max > 65536 || window < 1 || window > 128 || !port || port > 65535 ||
	    max_sec <= 0 || rto_min_us > 1000000)
		bad_arg("accepted: -n 1-100000, --max-msg 16-65536, --window 1-128, --port 1-65535, --max-sec > 0, "
		        "--rto-min-us 0-1000000");
	role_name = role;
	t0 = now_ns();
	me.max_msg = max;
	me.count = n;
	if (!strcmp(role, "recv")) {
		open_end(&v, devs, (size_t)VF_RSLOTS * max + (size_t)n * max, rto_min_us, &me);
		if ((rc = tcp_exchange_accept(&x, port)) || (rc = tcp_exchange_recv(&x, &peer, sizeof(peer))) ||
		    (rc = tcp_exchange_send(&x, &me, sizeof(me))))
			die("the exchange", 0);
		n = peer.count;
		me.max_msg = max = peer.max_msg;
		if (n < 1 || n > 100000 || max < VF_HDR || max > 65536 || (size_t)n * max > (size_t)me.count * me.max_msg)
			die("the sender's count and size do not fit this end's region (give both the same -n and --max-msg)",
			    0);
	} else {
		open_end(&v, devs, (size_t)window * max, rto_min_us, &me);
		if ((rc = tcp_exchange_connect(&x, peer_host, port)) || (rc = tcp_exchange_send(&x, &me, sizeof(me))) ||
		    (rc = tcp_exchange_recv(&x, &peer, sizeof(peer))))
			die("the exchange", 0);
		peer.max_msg = max;
	}
	connect_qp(&v, &me, &peer);
	if (!strcmp(role, "recv"))
		for (uint32_t k = 0; k < VF_RSLOTS && k < n; k++)
			post_recv(&v, k, max); /* (receives are posted from INIT on) */
	tcp_exchange_close(&x); /* nothing more goes by TCP: the NICs may go down */
	{
		struct uroce_port_attr pa[2];

		if (uroce_query_port(v.ctx, 1, &pa[0]) || uroce_query_port(v.ctx, 2, &pa[1]))
			die("uroce_query_port", -1);
		printf("verbs_fo[%s]: connected: qpn 0x%x/0x%x ctrl 0x%x/0x%x, peer qpn 0x%x/0x%x ctrl 0x%x/0x%x, %u "
		       "messages, arrival times: %s, %s\n", role, me.qpn[0], me.qpn[1], me.ctrl[0], me.ctrl[1], peer.qpn[0],
		       peer.qpn[1], peer.ctrl[0], peer.ctrl[1], n, pa[0].completion_ts ? "device stamps" : "engine clock",
		       pa[1].completion_ts ? "device stamps" : "engine clock");
	}
	fflush(stdout);
	rc = !strcmp(role, "recv") ? run_recv(&v, &me, n, max_sec)
	                           : run_send(&v, &peer, n, window, (uint64_t)pace_us * 1000u, max_sec);
	for (uint8_t p = 1; p <= 2; p++)
		app_counters_print(stdout, &v.qp, p == 1, v.ctx, p);
	if (rc)
		return 1;
	printf("verbs_fo[%s]: ok\n", role);
	return 0;
}
