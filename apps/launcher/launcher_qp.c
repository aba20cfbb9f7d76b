/* SPDX-License-Identifier: MIT */
/* The launcher's QP commands: create, connect (active), accept (passive),
 * show, destroy, wait. connect and accept speak perftest's exchange
 * (apps/perf_exchange.c: versions, system data, MTU, key messages, the
 * reliability prefix of a uroce peer), so the peer may be another
 * launcher, uroce-perf, or a perftest binary on a RoCE host. The exchange
 * stays open while the QP runs: the active end closes it at stop with
 * perftest's ending (a barrier, the bandwidth report, "done"), and the
 * passive end answers that ending when it comes. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "launcher.h"
#include "app_rand.h"

#define L_BACKUP_MSG_LEN 48 /* "UROCE-BACKUP1 " + 32 hex digits of the GID + padding + '\n' */

static const char *const kind_names[L_KIND__COUNT] = { "rc", "uc", "ud", "sr", "ec", "be" };

const char *l_kind_str(enum l_qp_kind k)
{
	return k < L_KIND__COUNT ? kind_names[k] : "?";
}

static bool kind_rel(enum l_qp_kind k)
{
	return k == L_SR || k == L_EC || k == L_BE;
}

/* ---- calls run on the QP's engine ---- */

struct qcall {
	struct l_qp *q;
	int what;
	struct l_qp *other;             /* connect local: the passive QP */
	uint8_t backup_gid[16];
	bool has_backup_gid;
	struct uroce_port_attr pa;
	int gid_index;
	char err[512];
	/* show */
	struct uroce_qp_attr attr;
	struct uroce_qp_stats st;
	struct uroce_path_stats paths[16];
	int npaths;
	struct uroce_failover_info fo;
	bool has_fo;
};

enum { QC_CREATE, QC_BUFFERS, QC_UNBUF, QC_RTS, QC_DESTROY, QC_SHOW, QC_PORT };

static int fail(struct qcall *c, const char *what, int rc)
{
	snprintf(c->err, sizeof(c->err), "%s: %s", what, uroce_last_error()[0] ? uroce_last_error() : uroce_strerror(rc));
	return rc;
}

/* The index of the port's first IPv4-mapped GID (its IPv4 address). */
static int port_gid_index(struct l_lcore *lc, uint8_t num, const uint8_t gid[16])
{
	for (int i = 0; i < 64; i++) {
		uint8_t g[16];
		if (uroce_query_gid(lc->ctx, num, i, g))
			break;
		if (!memcmp(g, gid, 16))
			return i;
	}
	return 0;
}

static int qc_create(struct l_lcore *lc, struct qcall *c)
{
	struct l_qp *q = c->q;
	struct uroce_qp_attr a = {0};
	int rc;

	if ((rc = uroce_cq_create(lc->ctx, 2 * L_MAX_DEPTH + 16, &q->scq)) ||
	    (rc = uroce_cq_create(lc->ctx, 2 * L_MAX_DEPTH + 16, &q->rcq)))
		return fail(c, "cannot create the CQs", rc);
	q->init.send_cq = q->scq;
	q->init.recv_cq = q->rcq;
	q->init.cap.max_send_wr = L_MAX_DEPTH;
	q->init.cap.max_recv_wr = 2 * L_MAX_DEPTH;
	q->init.cap.max_send_sge = 1;
	q->init.cap.max_recv_sge = 1;
	if ((rc = uroce_qp_create(lc->pd, &q->init, &q->qp)))
		return fail(c, "cannot create the QP", rc);
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = L.port[q->port].num;
	int mask = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT;
	if (q->kind == L_UD) {
		a.qkey = L_QKEY;
		mask |= UROCE_QP_QKEY;
	} else {
		a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE |
		                    (q->kind == L_RC ? UROCE_ACCESS_REMOTE_READ : 0);
		mask |= UROCE_QP_ACCESS_FLAGS;
	}
	if ((rc = uroce_qp_modify(q->qp, &a, mask)))
		return fail(c, "cannot move the QP to INIT", rc);
	return 0;
}

static size_t slot_len(const struct l_qp *q)
{
	return q->tr.size + (q->kind == L_UD ? PERF_UD_GRH : 0);
}

static int qc_buffers(struct l_lcore *lc, struct qcall *c)
{
	struct l_qp *q = c->q;
	int rc;

	q->buf_len = slot_len(q) * 3 * q->tr.depth; /* send: depth slots; receive: 2 x depth */
	q->buf = aligned_alloc(4096, (q->buf_len + 4095) & ~(size_t)4095);
	if (!q->buf)
		return fail(c, "out of memory for the QP's buffers", -ENOMEM);
	memset(q->buf, 0, q->buf_len);
	rc = uroce_mr_reg(lc->pd, q->buf, q->buf_len,
	                  UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ, &q->mr);
	if (rc)
		return fail(c, "cannot register the QP's buffers", rc);
	return 0;
}

static int qc_port(struct l_lcore *lc, struct qcall *c)
{
	struct l_qp *q = c->q;
	int rc = uroce_query_port(lc->ctx, L.port[q->port].num, &c->pa);

	if (rc)
		return fail(c, "cannot query the port", rc);
	c->gid_index = port_gid_index(lc, L.port[q->port].num, c->pa.gid);
	if (q->backup >= 0) {
		struct uroce_port_attr pb;
		if ((rc = uroce_query_port(lc->ctx, L.port[q->backup].num, &pb)))
			return fail(c, "cannot query the backup port", rc);
		memcpy(c->backup_gid, pb.gid, 16);
		c->has_backup_gid = true;
	}
	return 0;
}

/* RTR and RTS with the peer's numbers (q->rem); c->backup_gid: the peer's
 * GID behind the backup port. */
static int qc_rts(struct l_lcore *lc, struct qcall *c)
{
	struct l_qp *q = c->q;
	const struct perf_dest *r = &q->rem;
	struct uroce_ah_attr ah = {0};
	struct uroce_qp_attr a = {0};
	int mask = UROCE_QP_STATE, rc;

	memcpy(ah.dgid, r->gid, 16);
	ah.sgid_index = (uint8_t)c->gid_index;
	ah.hop_limit = 64;
	ah.port_num = L.port[q->port].num;
	a.qp_state = UROCE_QPS_RTR;
	if (q->kind != L_UD) {
		a.path_mtu = (enum uroce_mtu)c->pa.active_mtu;
		a.dest_qp_num = r->qpn;
		a.rq_psn = r->psn;
		a.ah_attr = ah;
		mask |= UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN;
		if (kind_rel(q->kind) || q->backup >= 0) {
			a.dest_token = r->srqn;
			mask |= UROCE_QP_DEST_TOKEN;
			if (r->lid || r->out_reads) {
				a.dest_ctrl_qpn = r->out_reads << 16 | r->lid;
				mask |= UROCE_QP_DEST_CTRL_QPN;
			}
		}
		if (q->backup >= 0) {
			memcpy(a.backup_ah[0].dgid, c->backup_gid, 16);
			a.backup_ah[0].sgid_index = (uint8_t)c->gid_index;
			a.backup_ah[0].hop_limit = 64;
			a.backup_ah[0].port_num = L.port[q->backup].num;
			mask |= UROCE_QP_ALT_PATH;
		}
		if (q->init.qp_type == UROCE_QPT_RC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = 12;
			mask |= UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
		}
	}
	if ((rc = uroce_qp_modify(q->qp, &a, mask)))
		return fail(c, "cannot move the QP to RTR", rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = q->my.psn;
	mask = UROCE_QP_STATE | UROCE_QP_SQ_PSN;
	if (q->init.qp_type == UROCE_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		uint32_t theirs = q->kind == L_RC && q->backup < 0 ? r->out_reads : 16;
		a.max_rd_atomic = (uint8_t)(theirs && theirs < 16 ? theirs : 16);
		mask |= UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC;
	}
	if ((rc = uroce_qp_modify(q->qp, &a, mask)))
		return fail(c, "cannot move the QP to RTS", rc);
	if (q->kind == L_UD) {
		if ((rc = uroce_ah_create(lc->pd, &ah, &q->ah)))
			return fail(c, "cannot create the address handle", rc);
		q->rem_qkey = L_QKEY;
	}
	return l_traffic_prepare(q);
}

static int qc_destroy(struct l_lcore *lc, struct qcall *c)
{
	struct l_qp *q = c->q;

	(void)lc;
	q->live = false;
	if (q->ah)
		uroce_ah_destroy(q->ah);
	if (q->qp)
		uroce_qp_destroy(q->qp);
	if (q->mr)
		uroce_mr_dereg(q->mr);
	if (q->scq)
		uroce_cq_destroy(q->scq);
	if (q->rcq)
		uroce_cq_destroy(q->rcq);
	q->ah = NULL;
	q->qp = NULL;
	q->mr = NULL;
	q->scq = q->rcq = NULL;
	return 0;
}

static int qc_show(struct l_lcore *lc, struct qcall *c)
{
	struct l_qp *q = c->q;
	struct uroce_qp_init_attr init;

	(void)lc;
	if (uroce_qp_query(q->qp, &c->attr, &init) || uroce_qp_stats(q->qp, &c->st))
		return fail(c, "cannot read the QP", -EIO);
	c->npaths = 0;
	for (unsigned i = 0; i < 16 && kind_rel(q->kind); i++)
		if (uroce_qp_path_stats(q->qp, i, &c->paths[c->npaths]) == 0)
			c->npaths++;
		else
			break;
	c->has_fo = q->backup >= 0 && uroce_qp_failover_info(q->qp, &c->fo) == 0;
	return 0;
}

static int qcall_fn(struct l_lcore *lc, void *arg)
{
	struct qcall *c = arg;

	switch (c->what) {
	case QC_CREATE: return qc_create(lc, c);
	case QC_BUFFERS: return qc_buffers(lc, c);
	case QC_UNBUF:
		if (c->q->mr)
			uroce_mr_dereg(c->q->mr);
		free(c->q->buf);
		c->q->mr = NULL;
		c->q->buf = NULL;
		return 0;
	case QC_RTS: return qc_rts(lc, c);
	case QC_DESTROY: return qc_destroy(lc, c);
	case QC_SHOW: return qc_show(lc, c);
	case QC_PORT: return qc_port(lc, c);
	}
	return -EINVAL;
}

static int qcall(struct qcall *c, int what)
{
	c->what = what;
	c->err[0] = 0;
	return l_call(c->q->lcore, qcall_fn, c);
}

/* ---- create ---- */

static int kind_parse(const char *s, enum l_qp_kind *out)
{
	for (int k = 0; k < L_KIND__COUNT; k++)
		if (!strcmp(s, kind_names[k])) {
			*out = (enum l_qp_kind)k;
			return 0;
		}
	return -1;
}

int l_cmd_create_qp(int argc, char **argv)
{
	struct l_qp *q = NULL;
	enum l_qp_kind kind;
	int port = 0, backup = -1;
	uint64_t v;
	struct uroce_qp_init_attr init = {0};
	bool rel_opts = false;

	if (argc < 3)
		return -EINVAL;
	if (kind_parse(argv[2], &kind)) {
		l_err("create qp: '%s' is not a QP kind: rc, uc, ud, sr, ec or be\n", argv[2]);
		return -EINVAL;
	}
	for (int i = 3; i < argc; i += 2) {
		const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!val) {
			l_err("create qp: '%s' needs a value\n", k);
			return -EINVAL;
		}
		if (!strcmp(k, "port")) {
			if (l_parse_port(val, false, &port))
				return -EINVAL;
		} else if (!strcmp(k, "backup")) {
			if (l_parse_port(val, false, &backup))
				return -EINVAL;
		} else if (!strcmp(k, "paths")) {
			if (l_parse_uint(val, UROCE_MAX_PATHS, &v) || !v) {
				l_err("create qp: paths '%s' is not a number in 1..%u\n", val, UROCE_MAX_PATHS);
				return -EINVAL;
			}
			init.path.npaths = (uint16_t)v;
			rel_opts = true;
		} else if (!strcmp(k, "policy")) {
			if (uroce_path_policy_parse(val, &init.path.policy) || init.path.policy == UROCE_PATH_DEFAULT) {
				l_err("create qp: policy '%s' is not single, p2c, rr or random\n", val);
				return -EINVAL;
			}
			rel_opts = true;
		} else if (!strcmp(k, "cc")) {
			if (uroce_cc_parse(val, &init.cc.algo)) {
				l_err("create qp: cc '%s' is not none, dcqcn, swift, cubic or eqds\n", val);
				return -EINVAL;
			}
			rel_opts = true;
		} else if (!strcmp(k, "timeout")) {
			if (l_parse_uint(val, 60000000, &v) || !v) {
				l_err("create qp: timeout '%s' is not a number of microseconds in 1..60000000\n", val);
				return -EINVAL;
			}
			if (kind != L_BE) {
				l_err("create qp: timeout is be's deadline per message; a %s QP has none\n", argv[2]);
				return -EINVAL;
			}
			init.rel.timeout_us = (uint32_t)v;
		} else {
			l_err("create qp: unknown option '%s': port, paths, policy, cc, backup, timeout\n", k);
			return -EINVAL;
		}
	}
	if (rel_opts && !kind_rel(kind)) {
		l_err("create qp: paths, policy and cc are for sr, ec and be QPs; %s keeps one path\n", argv[2]);
		return -EINVAL;
	}
	if (backup >= 0) {
		if (kind != L_RC && kind != L_SR) {
			l_err("create qp: failover (backup) is for rc and sr QPs, not %s\n", argv[2]);
			return -EINVAL;
		}
		if (backup == port) {
			l_err("create qp: the backup is port %d, the QP's own port: give another\n", port);
			return -EINVAL;
		}
		if (L.port[backup].lcore != L.port[port].lcore) {
			l_err("create qp: port %d is on engine %d and backup port %d on engine %d: a QP's ports share its "
			      "engine (ports go to cores in turn: port i on core i mod the number of cores)\n", port,
			      L.port[port].lcore, backup, L.port[backup].lcore);
			return -EINVAL;
		}
		if (L.port[port].verbs) {
			l_err("create qp: failover on verbs ports needs the peer's numbers per member, which this "
			      "launcher does not exchange\n");
			return -EINVAL;
		}
		init.failover.nbackups = 1;
	}
	for (int i = 0; i < L_MAX_QPS; i++)
		if (!L.qp[i].used) {
			q = &L.qp[i];
			break;
		}
	if (!q) {
		l_err("create qp: all %d QPs are in use (destroy qp N frees one)\n", L_MAX_QPS);
		return -ENOSPC;
	}
	int id = (int)(q - L.qp);
	memset(q, 0, sizeof(*q));
	q->id = id;
	q->comm.tcp.fd = -1;
	q->kind = kind;
	q->port = port;
	q->backup = backup;
	q->lcore = L.port[port].lcore;
	q->init = init;
	q->init.qp_type = kind == L_UC ? UROCE_QPT_UC : kind == L_UD ? UROCE_QPT_UD : UROCE_QPT_RC;
	q->init.rel.reliability = kind == L_SR ? UROCE_REL_SR : kind == L_EC ? UROCE_REL_EC :
	                          kind == L_BE ? UROCE_REL_BE : UROCE_REL_RC;
	struct qcall c = { .q = q };
	if (qcall(&c, QC_CREATE)) {
		l_err("create qp: %s\n", c.err);
		qcall(&c, QC_DESTROY);
		return -EIO;
	}
	q->used = true;
	q->state = L_QP_CREATED;
	l_out("QP %d created: %s on port %d%s%s, QPN 0x%06x\n", id, argv[2], port, backup >= 0 ? ", backup port " : "",
	      backup >= 0 ? L.port[backup].spec : "", uroce_qp_num(q->qp));
	return 0;
}

/* ---- connect, accept ---- */

static struct l_qp *get_qp(const char *s, enum l_qp_state want, const char *cmd)
{
	int n;

	if (l_parse_qp(s, false, &n))
		return NULL;
	if (!L.qp[n].used) {
		l_err("%s: QP %d does not exist (create qp makes one)\n", cmd, n);
		return NULL;
	}
	if (want == L_QP_CREATED && L.qp[n].state != L_QP_CREATED) {
		l_err("%s: QP %d is already connected: destroy it and create another\n", cmd, n);
		return NULL;
	}
	return &L.qp[n];
}

static void fill_my_dest(struct l_qp *q, const struct qcall *pc)
{
	struct perf_dest *d = &q->my;

	memset(d, 0, sizeof(*d));
	d->out_reads = 16;
	d->qpn = uroce_qp_num(q->qp);
	d->psn = app_rand_psn();
	if (kind_rel(q->kind) || q->backup >= 0) {
		uint32_t ctrl = uroce_qp_ctrl_num(q->qp);

		/* the token in the SRQ number field, the control QPN in the LID
		 * and outstanding-reads fields, as uroce-perf sends them */
		d->srqn = uroce_qp_token(q->qp);
		d->lid = ctrl & 0xffff;
		d->out_reads = ctrl >> 16;
	}
	d->rkey = q->mr->rkey;
	d->vaddr = (uint64_t)(uintptr_t)(q->buf + slot_len(q) * q->tr.depth); /* the receive slots */
	memcpy(d->gid, pc->pa.gid, 16);
}

static int buffers(struct l_qp *q, const char *cmd)
{
	struct qcall c = { .q = q };

	if (q->mr || q->buf) /* an earlier connect or accept that failed */
		qcall(&c, QC_UNBUF);
	q->tr = L.tr;
	if (q->kind == L_UD && q->tr.size > 4096) {
		l_err("%s: a UD message fits one MTU: set traffic size 4096 or less first\n", cmd);
		return -1;
	}
	if (qcall(&c, QC_BUFFERS)) {
		l_err("%s: %s\n", cmd, c.err);
		return -1;
	}
	return 0;
}

/* The exchange on an open connection, then RTS. */
static int exchange(struct l_qp *q, const char *cmd)
{
	struct qcall pc = { .q = q };
	int agreed, rc;
	char bmsg[L_BACKUP_MSG_LEN + 1], theirs[L_BACKUP_MSG_LEN + 1];

	if (qcall(&pc, QC_PORT)) {
		l_err("%s: %s\n", cmd, pc.err);
		return -1;
	}
	q->comm.rel = &q->init.rel;
	if ((rc = perf_xchg_versions(&q->comm)) || (rc = perf_xchg_sys(&q->comm)) ||
	    (rc = perf_xchg_mtu(&q->comm, pc.pa.active_mtu, &agreed)))
		goto bad;
	pc.pa.active_mtu = agreed;
	fill_my_dest(q, &pc);
	if ((rc = perf_handshake_qps(&q->comm, &q->my, &q->rem, 1)))
		goto bad;
	if (q->backup >= 0) {
		char hex[33];
		for (int i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", pc.backup_gid[i]);
		snprintf(bmsg, sizeof(bmsg), "UROCE-BACKUP1 %-32s%*s\n", hex, L_BACKUP_MSG_LEN - 14 - 32 - 1, "");
		if ((rc = perf_xchg(&q->comm, bmsg, theirs, L_BACKUP_MSG_LEN)))
			goto bad;
		theirs[L_BACKUP_MSG_LEN] = 0;
		if (strncmp(theirs, "UROCE-BACKUP1 ", 14)) {
			l_err("%s: the peer has no backup port (a QP with a backup needs a launcher peer whose QP has one)\n",
			      cmd);
			return -1;
		}
		for (int i = 0; i < 16; i++) {
			unsigned b;
			if (sscanf(theirs + 14 + 2 * i, "%2x", &b) != 1) {
				l_err("%s: the peer's backup GID is unreadable\n", cmd);
				return -1;
			}
			pc.backup_gid[i] = (uint8_t)b;
		}
	}
	if (qcall(&pc, QC_RTS)) {
		l_err("%s: %s\n", cmd, pc.err);
		return -1;
	}
	/* perftest's barrier after RTR, and the key messages again */
	struct perf_dest again;
	if ((rc = perf_handshake(&q->comm, &q->my, NULL)) || (rc = perf_handshake_qps(&q->comm, &q->my, &again, 1)))
		goto bad;
	return 0;
bad:
	l_err("%s: the exchange with the peer failed: %s\n", cmd, strerror(-rc));
	return -1;
}

static double opt_timeout(int argc, char **argv, int from, int *tcp_port, const char *cmd, int *bad)
{
	double t = L_DEFAULT_TIMEOUT_S;

	*bad = 0;
	for (int i = from; i < argc; i += 2) {
		uint64_t v;
		if (i + 1 >= argc) {
			l_err("%s: '%s' needs a value\n", cmd, argv[i]);
			*bad = 1;
		} else if (!strcmp(argv[i], "tcp-port")) {
			if (l_parse_uint(argv[i + 1], 65535, &v) || !v) {
				l_err("%s: tcp-port '%s' is not a port in 1..65535\n", cmd, argv[i + 1]);
				*bad = 1;
			} else
				*tcp_port = (int)v;
		} else if (!strcmp(argv[i], "timeout")) {
			if (l_parse_uint(argv[i + 1], 3600, &v) || !v) {
				l_err("%s: timeout '%s' is not a number of seconds in 1..3600\n", cmd, argv[i + 1]);
				*bad = 1;
			} else
				t = (double)v;
		} else {
			l_err("%s: unknown option '%s': tcp-port, timeout\n", cmd, argv[i]);
			*bad = 1;
		}
		if (*bad)
			break;
	}
	return t;
}

/* connect qp N local M: two QPs of this launcher, no exchange */
static int connect_local(struct l_qp *a, struct l_qp *b)
{
	struct qcall ca = { .q = a }, cb = { .q = b };

	if (a == b || a->kind != b->kind || (a->backup < 0) != (b->backup < 0)) {
		l_err("connect qp: QPs %d and %d cannot be joined: %s\n", a->id, b->id,
		      a == b ? "a QP is not its own peer" : "they differ in kind or in failover");
		return -EINVAL;
	}
	if (buffers(a, "connect qp") || buffers(b, "connect qp"))
		return -EIO;
	if (qcall(&ca, QC_PORT) || qcall(&cb, QC_PORT)) {
		l_err("connect qp: %s%s\n", ca.err, cb.err);
		return -EIO;
	}
	fill_my_dest(a, &ca);
	fill_my_dest(b, &cb);
	a->rem = b->my;
	b->rem = a->my;
	memcpy(ca.backup_gid, cb.backup_gid, 16);
	memcpy(cb.backup_gid, ca.backup_gid, 16);
	if (a->backup >= 0) {
		struct qcall t = { .q = a };
		qcall(&t, QC_PORT);
		memcpy(cb.backup_gid, t.backup_gid, 16);
		t.q = b;
		qcall(&t, QC_PORT);
		memcpy(ca.backup_gid, t.backup_gid, 16);
	}
	b->passive = true;
	if (qcall(&ca, QC_RTS) || qcall(&cb, QC_RTS)) {
		l_err("connect qp: %s%s\n", ca.err, cb.err);
		return -EIO;
	}
	a->local = b->local = true;
	snprintf(a->peer, sizeof(a->peer), "QP %d (this launcher)", b->id);
	snprintf(b->peer, sizeof(b->peer), "QP %d (this launcher)", a->id);
	a->state = b->state = L_QP_CONNECTED;
	l_out("QP %d connected to QP %d of this launcher (QPN 0x%06x <-> 0x%06x)\n", a->id, b->id, a->my.qpn, b->my.qpn);
	return 0;
}

int l_cmd_connect_qp(int argc, char **argv)
{
	struct l_qp *q;
	int tcp_port = L_TCP_PORT, bad;

	if (argc < 4)
		return -EINVAL;
	q = get_qp(argv[2], L_QP_CREATED, "connect qp");
	if (!q)
		return -EINVAL;
	if (!strcmp(argv[3], "local")) {
		struct l_qp *b;
		if (argc != 5)
			return -EINVAL;
		b = get_qp(argv[4], L_QP_CREATED, "connect qp");
		return b ? connect_local(q, b) : -EINVAL;
	}
	double t = opt_timeout(argc, argv, 4, &tcp_port, "connect qp", &bad);
	if (bad)
		return -EINVAL;
	if (buffers(q, "connect qp"))
		return -EIO;
	q->comm.tcp.fd = -1;
	l_out("QP %d: connecting to %s:%d ...\n", q->id, argv[3], tcp_port);
	if (perf_comm_open(&q->comm, argv[3], tcp_port, t)) {
		l_err("connect qp: no connection to %s:%d\n", argv[3], tcp_port);
		return -EIO;
	}
	if (exchange(q, "connect qp")) {
		perf_comm_close(&q->comm);
		return -EIO;
	}
	snprintf(q->peer, sizeof(q->peer), "%s:%d", argv[3], tcp_port);
	q->state = L_QP_CONNECTED;
	l_out("QP %d connected to %s (QPN 0x%06x -> 0x%06x), %s %u B x %u ready\n", q->id, q->peer, q->my.qpn,
	      q->rem.qpn, l_op_str(q->tr.op), q->tr.size, q->tr.depth);
	return 0;
}

int l_cmd_accept_qp(int argc, char **argv)
{
	struct l_qp *q;
	int tcp_port = L_TCP_PORT, bad;

	if (argc < 3)
		return -EINVAL;
	q = get_qp(argv[2], L_QP_CREATED, "accept qp");
	if (!q)
		return -EINVAL;
	double t = opt_timeout(argc, argv, 3, &tcp_port, "accept qp", &bad);
	if (bad)
		return -EINVAL;
	if (buffers(q, "accept qp"))
		return -EIO;
	q->passive = true;
	l_out("QP %d: waiting for a peer on TCP port %d (%.0f s) ...\n", q->id, tcp_port, t);
	if (perf_comm_open(&q->comm, NULL, tcp_port, t)) {
		l_err("accept qp: no peer connected to port %d\n", tcp_port);
		q->passive = false;
		return -EIO;
	}
	if (exchange(q, "accept qp")) {
		perf_comm_close(&q->comm);
		q->passive = false;
		return -EIO;
	}
	char ip[64] = "?";
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (!getpeername(q->comm.tcp.fd, (struct sockaddr *)&ss, &sl)) {
		const struct in6_addr *a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		/* the dual-stack socket sees an IPv4 peer as ::ffff:a.b.c.d */
		if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(a6))
			inet_ntop(AF_INET, &a6->s6_addr[12], ip, sizeof(ip));
		else
			inet_ntop(ss.ss_family, ss.ss_family == AF_INET ? (void *)&((struct sockaddr_in *)&ss)->sin_addr :
			          (void *)a6, ip, sizeof(ip));
	}
	snprintf(q->peer, sizeof(q->peer), "%s (accepted on %d)", ip, tcp_port);
	q->state = L_QP_CONNECTED;
	l_out("QP %d accepted %s (QPN 0x%06x <- 0x%06x), serving %s %u B x %u\n", q->id, ip, q->my.qpn, q->rem.qpn,
	      l_op_str(q->tr.op), q->tr.size, q->tr.depth);
	return 0;
}

/* ---- the end of a run ---- */

static void passive_summary(struct l_qp *q, const struct perf_bw_report *theirs)
{
	uint64_t msgs = atomic_load(&q->c.recv_msgs), bytes = atomic_load(&q->c.recv_bytes);
	uint64_t ok = atomic_load(&q->c.verified), bad = atomic_load(&q->c.bad), part = atomic_load(&q->c.partial);

	if (L.json) {
		l_async("{\"event\":\"peer_done\",\"qp\":%d,\"peer_iters\":%" PRIu64 ",\"peer_bw_avg_MBps\":%.2f,"
		        "\"recv_msgs\":%" PRIu64 ",\"recv_bytes\":%" PRIu64 ",\"verified\":%" PRIu64 ",\"bad\":%" PRIu64
		        ",\"partial\":%" PRIu64 "}\n", q->id, theirs ? theirs->iters : 0, theirs ? theirs->bw_avg : 0,
		        msgs, bytes, ok, bad, part);
		return;
	}
	l_async("QP %d: the peer ended its run%s", q->id, theirs ? "" : " (it left without the closing exchange)\n");
	if (theirs)
		l_async(": it completed %" PRIu64 " messages of %" PRIu64 " B at %.2f MB/s\n", theirs->iters, theirs->size,
		        theirs->bw_avg);
	l_async("QP %d: here: %" PRIu64 " messages received (%" PRIu64 " bytes), data %s: %" PRIu64 " good, %" PRIu64
	        " bad%s\n", q->id, msgs, bytes, q->tr.verify ? "verified" : "not checked (verify off)", ok, bad,
	        part ? ", some partial" : "");
}

int l_qp_finish_passive(struct l_qp *q)
{
	struct perf_bw_report mine = {0}, theirs = {0};
	int rc;

	l_traffic_scan_writes(q);
	mine.size = q->tr.size;
	mine.iters = atomic_load(&q->c.recv_msgs);
	if ((rc = perf_handshake(&q->comm, &q->my, NULL)) || (rc = perf_xchg_bw_report(&q->comm, &mine, &theirs)) ||
	    (rc = perf_close_connection(&q->comm, &q->my))) {
		passive_summary(q, NULL);
		perf_comm_close(&q->comm);
		return rc;
	}
	passive_summary(q, &theirs);
	perf_comm_close(&q->comm);
	return 0;
}

int l_qp_close_active(struct l_qp *q)
{
	struct perf_bw_report mine = {0}, theirs = {0};
	uint64_t t0 = atomic_load(&q->c.t_first_ns), t1 = atomic_load(&q->c.t_last_ns);
	double secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
	int rc;

	mine.size = q->run.size;
	mine.iters = atomic_load(&q->c.completed);
	mine.bw_avg = secs > 0 ? (double)atomic_load(&q->c.bytes) / secs / 1048576.0 : 0; /* perftest's MB: MiB */
	mine.bw_peak = mine.bw_avg;
	mine.msg_rate = secs > 0 ? (double)mine.iters / secs / 1e6 : 0;
	if (q->local) {
		struct l_qp *b = NULL;
		if (!q->run_open)
			return 0;
		q->run_open = false;
		for (int i = 0; i < L_MAX_QPS; i++)
			if (L.qp[i].used && L.qp[i].local && L.qp[i].passive && L.qp[i].rem.qpn == q->my.qpn)
				b = &L.qp[i];
		if (b) {
			l_traffic_scan_writes(b);
			passive_summary(b, &mine);
		}
		return 0;
	}
	q->run_open = false;
	if (q->comm.tcp.fd < 0)
		return 0;
	if (q->comm.tcp.timeout_s > L_CLOSE_TIMEOUT_S || q->comm.tcp.timeout_s <= 0)
		q->comm.tcp.timeout_s = L_CLOSE_TIMEOUT_S; /* a peer that is gone costs seconds, not the connect's wait */
	rc = perf_handshake(&q->comm, &q->my, NULL);
	if (!rc)
		rc = perf_xchg_bw_report(&q->comm, &mine, &theirs);
	if (!rc)
		rc = perf_close_connection(&q->comm, &q->my);
	perf_comm_close(&q->comm);
	if (rc)
		l_err("QP %d: the closing exchange with %s failed: %s\n", q->id, q->peer, strerror(-rc));
	else if (!L.json)
		l_out("QP %d: run closed with %s; it counted %" PRIu64 " receive completions%s\n", q->id, q->peer,
		      theirs.iters, q->run.op == L_OP_WRITE || q->run.op == L_OP_READ ? " (writes and reads make none)" : "");
	return rc;
}

void l_qps_poll_peers(void)
{
	for (int i = 0; i < L_MAX_QPS; i++) {
		struct l_qp *q = &L.qp[i];
		struct pollfd pfd;

		if (!q->used || !q->passive || q->local || q->comm.tcp.fd < 0)
			continue;
		pfd.fd = q->comm.tcp.fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) > 0)
			l_qp_finish_passive(q);
	}
}

/* ---- show, destroy, wait ---- */

static const char *state_str(const struct l_qp *q)
{
	switch (q->state) {
	case L_QP_CREATED: return "created";
	case L_QP_CONNECTED:
		return q->passive ? (q->local || q->comm.tcp.fd >= 0 ? "connected, serving" : "connected, run ended") :
		       atomic_load(&q->running) ? "connected, sending" : "connected";
	case L_QP_CLOSED: return "closed";
	case L_QP_ERROR: return "error";
	}
	return "?";
}

static void show_one(struct l_qp *q)
{
	struct qcall c = { .q = q };
	const struct uroce_qp_stats *s = &c.st;

	if (qcall(&c, QC_SHOW)) {
		l_err("show qp %d: %s\n", q->id, c.err);
		return;
	}
	if (L.json) {
		l_json_qp(stdout, q);
		fflush(stdout);
		return;
	}
	l_out("********************* QP %d *********************\n", q->id);
	l_out("Kind: %s, port %d%s, QPN 0x%06x, state %s (%s)\n", l_kind_str(q->kind), q->port,
	      q->backup >= 0 ? " with a backup" : "", uroce_qp_num(q->qp), uroce_qp_state_str(c.attr.qp_state),
	      state_str(q));
	if (q->state != L_QP_CREATED)
		l_out("Peer: %s, QPN 0x%06x; PSN: next to send 0x%06x (from 0x%06x), next expected 0x%06x (from 0x%06x)\n",
		      q->peer, q->rem.qpn, c.attr.sq_psn, q->my.psn, c.attr.rq_psn, q->rem.psn);
	if (kind_rel(q->kind))
		l_out("Policies: reliability %s, paths %u (%s), cc %s\n", uroce_reliability_str(q->init.rel.reliability),
		      q->init.path.npaths ? q->init.path.npaths : 1,
		      uroce_path_policy_str(q->init.path.policy ? q->init.path.policy :
		                            (q->init.path.npaths > 1 ? UROCE_PATH_P2C : UROCE_PATH_SINGLE)),
		      uroce_cc_str(q->init.cc.algo));
	if (q->state != L_QP_CREATED)
		l_out("Traffic: %s %u B x %u%s: posted %" PRIu64 ", completed %" PRIu64 ", errors %" PRIu64
		      "; received %" PRIu64 "; verified %" PRIu64 ", bad %" PRIu64 "\n", l_op_str(q->tr.op), q->tr.size,
		      q->tr.depth, q->tr.verify ? ", verify on" : "", atomic_load(&q->c.posted),
		      atomic_load(&q->c.completed), atomic_load(&q->c.errors), atomic_load(&q->c.recv_msgs),
		      atomic_load(&q->c.verified), atomic_load(&q->c.bad));
	l_out("Counters: tx %" PRIu64 ", rx %" PRIu64 ", retransmits %" PRIu64 ", timeouts %" PRIu64
	      ", seq NAKs %" PRIu64 "/%" PRIu64 " (sent/received), RNR NAKs %" PRIu64 "/%" PRIu64 ", duplicates %" PRIu64
	      "\n", s->tx_packets, s->rx_packets, s->retransmits, s->timeouts, s->seq_naks_sent, s->seq_naks_rcvd,
	      s->rnr_naks_sent, s->rnr_naks_rcvd, s->duplicates);
	if (kind_rel(q->kind))
		l_out("sr/ec/be: SACKs %" PRIu64 "/%" PRIu64 ", RACK losses %" PRIu64 ", RTO losses %" PRIu64
		      ", srtt %.1f us, rto %.1f us, parity %" PRIu64 ", recovered %" PRIu64 ", be timeouts %" PRIu64
		      ", late drops %" PRIu64 "\n", s->sacks_sent, s->sacks_rcvd, s->rack_losses, s->rto_losses,
		      (double)s->srtt_ns / 1e3, (double)s->rto_ns / 1e3, s->parity_sent, s->ec_recovered,
		      s->be_timeouts, s->late_drops);
	if (kind_rel(q->kind) && q->init.cc.algo != UROCE_CC_NONE) {
		char win[32];
		if (s->cc_window_bytes == UINT64_MAX)
			snprintf(win, sizeof(win), "none");
		else
			snprintf(win, sizeof(win), "%" PRIu64 " B", s->cc_window_bytes);
		l_out("Controller %s: rate %.3f Gb/s%s, window %s, blocked %" PRIu64 ", losses %" PRIu64 ", CNPs %" PRIu64
		      "/%" PRIu64 ", ECN CE %" PRIu64 "\n", uroce_cc_str(q->init.cc.algo), (double)s->cc_rate_bps / 1e9,
		      s->cc_rate_bps ? "" : " (not paced)", win, s->cc_blocked, s->cc_losses, s->cnps_sent, s->cnps_rcvd,
		      s->ecn_ce_rcvd);
	}
	for (int i = 0; i < c.npaths; i++)
		l_out("  path %-3d sport %-5u port %u %-4s srtt %8.1f us  min %8.1f us  tx %-10" PRIu64 " acked %-10" PRIu64
		      " losses %" PRIu64 "\n", i, c.paths[i].sport, c.paths[i].port_num, c.paths[i].up ? "up" : "down",
		      (double)c.paths[i].srtt_ns / 1e3, (double)c.paths[i].min_rtt_ns / 1e3, c.paths[i].tx_pkts,
		      c.paths[i].acked_pkts, c.paths[i].losses);
	if (c.has_fo)
		l_out("Failover: state %s, active member %u (%s), members up 0x%x, failovers %" PRIu64 ", failbacks %" PRIu64
		      ", last cause %s, rewound %" PRIu64 " packets\n", uroce_fo_state_str(c.fo.state), c.fo.active,
		      c.fo.active ? "backup" : "primary", c.fo.up_mask, c.fo.failovers, c.fo.failbacks,
		      uroce_fo_cause_str(c.fo.last_cause), c.fo.rewound_pkts);
}

int l_qp_show_data(struct l_qp *q, struct uroce_qp_attr *attr, struct uroce_qp_stats *st,
                   struct uroce_failover_info *fo, bool *has_fo)
{
	struct qcall c = { .q = q };
	int rc = qcall(&c, QC_SHOW);

	if (rc)
		return rc;
	*attr = c.attr;
	*st = c.st;
	*fo = c.fo;
	*has_fo = c.has_fo;
	return 0;
}

int l_cmd_show_qp(int argc, char **argv)
{
	int n, shown = 0;

	if (argc != 3)
		return -EINVAL;
	if (l_parse_qp(argv[2], true, &n))
		return -EINVAL;
	for (int i = n < 0 ? 0 : n; i < (n < 0 ? L_MAX_QPS : n + 1); i++)
		if (L.qp[i].used) {
			show_one(&L.qp[i]);
			shown++;
		}
	if (!shown && n >= 0) {
		l_err("show qp: QP %d does not exist\n", n);
		return -EIO;
	}
	if (!shown)
		l_out("no QPs (create qp makes one)\n");
	return 0;
}

static void destroy_one(struct l_qp *q)
{
	struct qcall c = { .q = q };

	if (q->state == L_QP_CONNECTED && !q->passive && atomic_load(&q->running))
		l_traffic_stop_qp(q);
	if (!q->passive)
		l_qp_close_active(q);
	perf_comm_close(&q->comm);
	qcall(&c, QC_DESTROY);
	free(q->buf);
	q->buf = NULL;
	q->used = false;
}

int l_cmd_destroy_qp(int argc, char **argv)
{
	int n;

	if (argc != 3)
		return -EINVAL;
	if (l_parse_qp(argv[2], true, &n))
		return -EINVAL;
	if (n >= 0 && !L.qp[n].used) {
		l_err("destroy qp: QP %d does not exist\n", n);
		return -EIO;
	}
	for (int i = n < 0 ? 0 : n; i < (n < 0 ? L_MAX_QPS : n + 1); i++)
		if (L.qp[i].used) {
			destroy_one(&L.qp[i]);
			l_out("QP %d destroyed\n", i);
		}
	return 0;
}

void l_qp_destroy_all(void)
{
	for (int i = 0; i < L_MAX_QPS; i++)
		if (L.qp[i].used)
			destroy_one(&L.qp[i]);
}

int l_cmd_wait_qp(int argc, char **argv)
{
	int n, tcp_port = 0, bad;

	if (argc < 3)
		return -EINVAL;
	if (l_parse_qp(argv[2], true, &n))
		return -EINVAL;
	double t = opt_timeout(argc, argv, 3, &tcp_port, "wait qp", &bad);
	if (bad || tcp_port)
		return -EINVAL;
	uint64_t end = l_now_ns() + (uint64_t)(t * 1e9);
	for (;;) {
		int waiting = 0;
		l_tick();
		for (int i = n < 0 ? 0 : n; i < (n < 0 ? L_MAX_QPS : n + 1); i++)
			waiting += L.qp[i].used && L.qp[i].passive && !L.qp[i].local && L.qp[i].comm.tcp.fd >= 0;
		if (!waiting || L.quit)
			return 0;
		if (l_now_ns() >= end) {
			l_err("wait qp: %d QP(s) still serving after %.0f s\n", waiting, t);
			return -ETIMEDOUT;
		}
		struct pollfd pfd = { -1, 0, 0 };
		poll(&pfd, 0, 50);
	}
}
