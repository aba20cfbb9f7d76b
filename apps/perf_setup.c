/* SPDX-License-Identifier: MIT */
/* The verbs resources of a perftest-style run on uroce's API: one context
 * (embedded engine), PD, one buffer region for all QPs, a send and a
 * receive CQ, the QPs, and their move to RTS as perftest's ctx_connect does.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app_counters.h"
#include "app_error.h"
#include "app_rand.h"
#include "perf.h"
#include "app_pcap.h"

uint64_t perf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* On a verbs port the NIC runs rc's transport: waiting on the TCP exchange
 * then blocks, as perftest does, instead of spinning the engine (which on
 * a one-CPU host takes the CPU from the NIC driver: rxe's server side ran
 * at half speed). sr there is uroce's engine: it is progressed. */
int perf_nic_port(const struct perf_opts *o)
{
	return o->devs[0] && !strncmp(o->devs[0], "verbs:", 6) && o->rel.attr.reliability == UROCE_REL_RC;
}

int perf_progress(void *arg)
{
	struct perf_ctx *p = arg;
	int rc;

	if (p->nic || p->dedicated)
		return 0; /* the NIC, or the engine threads, run the transport */
	rc = uroce_progress(p->ctx);

	if (rc < 0) {
		fprintf(stderr, "uroce-perf: transport: %s (%s)\n", uroce_strerror(rc), uroce_last_error());
		p->failed = 1;
	}
	return rc;
}

uint64_t perf_activity(void *arg)
{
	struct perf_ctx *p = arg;
	struct uroce_port_stats st;
	uint64_t n = 0;

	for (int k = 0; k < p->neng; k++)
		if (!uroce_port_stats(p->eng[k].ctx, (uint8_t)p->o->ib_port, &st))
			n += st.rx_packets;
	return n;
}

uint8_t *perf_send_area(struct perf_ctx *p, int qp)
{
	return p->buf + (size_t)qp * p->qp_buf;
}

uint8_t *perf_recv_area(struct perf_ctx *p, int qp)
{
	return p->buf + (size_t)qp * p->qp_buf + p->qp_buf / 2;
}

static const char *qpt_name(enum uroce_qp_type t)
{
	return t == UROCE_QPT_RC ? "RC" : t == UROCE_QPT_UC ? "UC" : "UD";
}

static int fail(const char *what, int rc)
{
	fprintf(stderr, "uroce-perf: %s: %s%s%s\n", what, uroce_strerror(rc),
		*app_last_error() ? ": " : "", app_last_error());
	return rc;
}

int perf_setup(struct perf_ctx *p)
{
	struct perf_opts *o = p->o;
	struct uroce_context_attr ca = {0};
	size_t nq = (size_t)o->num_qps;
	int rc;

	p->qp = calloc(nq, sizeof(*p->qp));
	p->ah = calloc(nq, sizeof(*p->ah));
	p->my = calloc(nq, sizeof(*p->my));
	p->rem = calloc(nq, sizeof(*p->rem));
	if (!p->qp || !p->ah || !p->my || !p->rem) {
		fprintf(stderr, "uroce-perf: cannot allocate the state of %d QPs\n", o->num_qps);
		return -ENOMEM;
	}
	p->neng = o->nengines ? o->nengines : 1;
	p->dedicated = o->nengines > 0;
	p->t_open_ns = perf_now_ns();
	for (int k = 0; k < p->neng; k++) {
		const char *one[1] = { o->eng_spec[k] };
		struct perf_engine *e = &p->eng[k];

		memset(&ca, 0, sizeof(ca));
		ca.ports = o->steer ? one : o->devs;
		ca.nports = o->steer ? 1 : (unsigned)o->ndevs;
		ca.eal_argc = o->eal_argc;
		ca.eal_argv = o->eal_argv;
		/* engines: a thread each, on its CPU; else this thread runs the transport */
		ca.mode = p->dedicated ? UROCE_ENGINE_DEDICATED : UROCE_ENGINE_EMBEDDED;
		ca.engine_cpu = o->ncores ? o->cores[k] : -1;
		rc = uroce_context_create(&e->ctx, &ca);
		if (rc) {
			char what[96];

			snprintf(what, sizeof(what), "cannot open the device%s%s", o->steer ? " " : "",
				 o->steer ? o->eng_spec[k] : "");
			return fail(what, rc);
		}
		app_port_notes(stderr, e->ctx);
		if (o->pcap_path) {
			if (p->neng > 1)
				snprintf(p->pcap[k], sizeof(p->pcap[k]), "%s.%d", o->pcap_path, k);
			else
				snprintf(p->pcap[k], sizeof(p->pcap[k]), "%s", o->pcap_path);
			if (app_pcap_start("uroce-perf", e->ctx, (uint8_t)o->ib_port, p->pcap[k])) {
				p->pcap[k][0] = 0;
				return -EINVAL;
			}
		}
		rc = uroce_pd_alloc(e->ctx, &e->pd);
		if (rc)
			return fail("cannot allocate a PD", rc);
	}
	p->ctx = p->eng[0].ctx;
	p->pd = p->eng[0].pd;
	rc = uroce_query_port(p->ctx, (uint8_t)o->ib_port, &p->port);
	if (rc)
		return fail("cannot query the port", rc);
	/* -x N: the entry of the port's GID table this end sends from and
	 * announces (perftest's GID index) */
	rc = uroce_query_gid(p->ctx, (uint8_t)o->ib_port, o->gid_index, p->port.gid);
	if (rc)
		return fail("-x/--gid-index names no GID of the port", rc);

	/* Each QP gets [send half | receive half], each half as large as the
	 * largest message (plus the GRH room UD receives start with), page
	 * aligned; perftest lays its buffers out the same way. */
	uint64_t maxsz = o->all ? PERF_MAX_SIZE : o->size;
	size_t half = ((size_t)maxsz + PERF_UD_GRH + PERF_CYCLE_BUFFER - 1) & ~(size_t)(PERF_CYCLE_BUFFER - 1);
	p->qp_buf = 2 * half;
	p->buf_size = p->qp_buf * (size_t)o->num_qps;
	if (posix_memalign((void **)&p->buf, PERF_CYCLE_BUFFER, p->buf_size)) {
		fprintf(stderr, "uroce-perf: cannot allocate %zu bytes of buffers\n", p->buf_size);
		return -ENOMEM;
	}
	memset(p->buf, 0, p->buf_size);
	for (int k = 0; k < p->neng; k++) {
		rc = uroce_mr_reg(p->eng[k].pd, p->buf, p->buf_size,
				  UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_REMOTE_READ |
					  UROCE_ACCESS_REMOTE_ATOMIC,
				  &p->eng[k].mr);
		if (rc)
			return fail("cannot register the buffers", rc);
	}
	p->mr = p->eng[0].mr;

	/* Only send_bw and send_lat post receives (perftest prints RX depth
	 * for them only); the other tests' receive queues and CQ stay at one
	 * entry per QP, so many QPs do not multiply an unused 512. */
	int uses_recv = o->test == PERF_SEND_BW || o->test == PERF_SEND_LAT;
	int rx_depth = uses_recv ? o->rx_depth : 1;
	/* at most 8192 x 16384 + 16 entries (perf_args.c's bounds): an int;
	 * each engine's CQs take its own QPs' */
	int qps_per = (o->num_qps + p->neng - 1) / p->neng;
	for (int k = 0; k < p->neng; k++) {
		int cqe = o->tx_depth * qps_per + 16;
		rc = uroce_cq_create(p->eng[k].ctx, cqe, &p->eng[k].send_cq);
		if (rc)
			return fail(o->num_qps > 1 ? "cannot create the send CQ (tx_depth x QPs entries; see -t)"
						   : "cannot create the send CQ", rc);
		cqe = rx_depth * qps_per + 16;
		rc = uroce_cq_create(p->eng[k].ctx, cqe, &p->eng[k].recv_cq);
		if (rc)
			return fail(o->num_qps > 1 ? "cannot create the receive CQ (rx_depth x QPs entries; see -r)"
						   : "cannot create the receive CQ", rc);
		if (o->events) {
			/* -e: both CQs on one channel, armed; poll_cqs sleeps on it */
			struct perf_engine *e = &p->eng[k];

			if ((rc = uroce_comp_channel_create(e->ctx, &e->ch)) ||
			    (rc = uroce_cq_set_channel(e->send_cq, e->ch, NULL)) ||
			    (rc = uroce_cq_set_channel(e->recv_cq, e->ch, NULL)) ||
			    (rc = uroce_req_notify_cq(e->send_cq, 0)) || (rc = uroce_req_notify_cq(e->recv_cq, 0)))
				return fail("cannot set up the completion channel (-e)", rc);
		}
	}
	p->send_cq = p->eng[0].send_cq;
	p->recv_cq = p->eng[0].recv_cq;

	srand48((long)perf_now_ns() ^ getpid());
	for (int i = 0; i < o->num_qps; i++) {
		struct perf_engine *e = perf_eng_of(p, i);
		struct uroce_qp_init_attr ia = {0};
		ia.qp_type = o->conn;
		ia.send_cq = e->send_cq;
		ia.recv_cq = e->recv_cq;
		ia.cap.max_send_wr = (uint32_t)o->tx_depth;
		ia.cap.max_recv_wr = (uint32_t)rx_depth;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.rel = o->rel.attr;
		ia.path = o->rel.path;
		ia.cc = o->rel.cc;
		rc = uroce_qp_create(e->pd, &ia, &p->qp[i]);
		if (rc) {
			char what[64];
			snprintf(what, sizeof(what), "cannot create QP %d of %d", i + 1, o->num_qps);
			return fail(what, rc);
		}

		struct uroce_qp_attr a = {0};
		int mask = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT;
		a.qp_state = UROCE_QPS_INIT;
		a.port_num = (uint8_t)o->ib_port;
		if (o->conn == UROCE_QPT_UD) {
			a.qkey = PERF_DEFAULT_QKEY;
			mask |= UROCE_QP_QKEY;
		} else {
			a.qp_access_flags = UROCE_ACCESS_REMOTE_WRITE | UROCE_ACCESS_LOCAL_WRITE |
					    (o->conn == UROCE_QPT_RC ? UROCE_ACCESS_REMOTE_READ | UROCE_ACCESS_REMOTE_ATOMIC : 0);
			mask |= UROCE_QP_ACCESS_FLAGS;
		}
		rc = uroce_qp_modify(p->qp[i], &a, mask);
		if (rc)
			return fail("cannot move a QP to INIT", rc);

		struct perf_dest *d = &p->my[i];
		memset(d, 0, sizeof(*d));
		d->lid = 0;
		d->out_reads = (uint32_t)o->out_reads;
		d->qpn = uroce_qp_num(p->qp[i]);
		d->psn = app_rand_psn();
		/* sr/ec/be: the QP's token in the XRC SRQ number field, which
		 * perftest's RC ignores (only a uroce peer speaks these modes) */
		if (o->rel.attr.reliability != UROCE_REL_RC) {
			uint32_t ctrl = uroce_qp_ctrl_num(p->qp[i]);

			d->srqn = uroce_qp_token(p->qp[i]);
			/* and its control QPN in the LID and outstanding-reads
			 * fields, which RoCE and sr (no READ) leave unused */
			d->lid = ctrl & 0xffff;
			d->out_reads = ctrl >> 16;
		}
		d->rkey = e->mr->rkey;
		/* The peer writes to / reads from our receive half (write_lat
		 * polls its last byte; write_bw and read_bw use it too). */
		d->vaddr = (uint64_t)(uintptr_t)perf_recv_area(p, i);
		memcpy(d->gid, p->port.gid, 16);
	}
	p->mtu = o->mtu ? o->mtu : p->port.active_mtu;
	if (o->mtu && (uint32_t)o->mtu > (uint32_t)p->port.active_mtu) {
		fprintf(stderr, "uroce-perf: -m %u is larger than the link carries (%u); using %u\n",
			uroce_mtu_bytes(o->mtu), uroce_mtu_bytes(p->port.active_mtu),
			uroce_mtu_bytes(p->port.active_mtu));
		p->mtu = p->port.active_mtu;
	}
	p->comm.tcp.progress = p->nic ? NULL : perf_progress;
	p->comm.tcp.activity = perf_activity;
	p->comm.tcp.arg = p;
	return 0;
}

static int gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return !memcmp(g, pfx, 12);
}

int perf_connect_qps(struct perf_ctx *p)
{
	struct perf_opts *o = p->o;
	int rc;

	if (gid_is_v4mapped(p->rem[0].gid) != gid_is_v4mapped(p->port.gid)) {
		/* perftest's words, so scripts that grep for them keep working */
		fprintf(stderr, "Found Incompatibility issue with GID types.\n"
			"uroce-perf: this end's GID (-x %d) is %s but the peer's is %s; pick GID indices of one "
			"family on both ends (on rdma_rxe: show_gids)\n", o->gid_index,
			gid_is_v4mapped(p->port.gid) ? "IPv4-mapped" : "IPv6",
			gid_is_v4mapped(p->rem[0].gid) ? "IPv4-mapped" : "IPv6");
		return -EPROTO;
	}
	for (int i = 0; i < o->num_qps; i++) {
		struct perf_dest *r = &p->rem[i];
		struct uroce_ah_attr ah = {0};
		memcpy(ah.dgid, r->gid, 16);
		ah.sgid_index = (uint8_t)o->gid_index;
		ah.hop_limit = 64; /* perftest asks 0xff; the kernel sends the route's 64 */
		ah.port_num = (uint8_t)o->ib_port;

		struct uroce_qp_attr a = {0};
		int mask = UROCE_QP_STATE;
		a.qp_state = UROCE_QPS_RTR;
		if (o->conn != UROCE_QPT_UD) {
			a.path_mtu = p->mtu;
			a.dest_qp_num = r->qpn;
			a.rq_psn = r->psn;
			a.ah_attr = ah;
			a.dest_token = o->rel.attr.reliability != UROCE_REL_RC ? r->srqn : 0;
			mask |= UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN | UROCE_QP_DEST_TOKEN;
			if (o->rel.attr.reliability != UROCE_REL_RC && (r->lid || r->out_reads)) {
				a.dest_ctrl_qpn = r->out_reads << 16 | r->lid;
				mask |= UROCE_QP_DEST_CTRL_QPN;
			}
			if (p->rem_sports) {
				/* the source ports the peer picked for its engine's queue */
				memcpy(a.sports, p->rem_sports[i], sizeof(a.sports));
				a.num_sports = (uint8_t)p->nsports;
				mask |= UROCE_QP_SPORTS;
			}
			if (o->conn == UROCE_QPT_RC) {
				a.max_dest_rd_atomic = (uint8_t)o->out_reads;
				a.min_rnr_timer = 12;
				mask |= UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
			}
		}
		rc = uroce_qp_modify(p->qp[i], &a, mask);
		if (rc)
			return fail("cannot move a QP to RTR", rc);

		memset(&a, 0, sizeof(a));
		a.qp_state = UROCE_QPS_RTS;
		a.sq_psn = p->my[i].psn;
		mask = UROCE_QP_STATE | UROCE_QP_SQ_PSN;
		if (o->conn == UROCE_QPT_RC) {
			a.timeout = (uint8_t)o->qp_timeout;
			a.retry_cnt = 7;
			a.rnr_retry = 7;
			/* (an sr peer's field holds its control QPN: sr has no READ) */
			uint32_t mine = (uint32_t)o->out_reads, theirs = o->rel.attr.reliability == UROCE_REL_RC ? r->out_reads : 0;
			uint32_t outs = theirs && theirs < mine ? theirs : mine;
			a.max_rd_atomic = (uint8_t)outs;
			mask |= UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC;
		}
		rc = uroce_qp_modify(p->qp[i], &a, mask);
		if (rc)
			return fail("cannot move a QP to RTS", rc);

		if (o->conn == UROCE_QPT_UD) {
			rc = uroce_ah_create(p->pd, &ah, &p->ah[i]);
			if (rc)
				return fail("cannot create the address handle", rc);
		}
	}
	char rel[96];

	printf(" Transport: %s over uroce port %s, %d QP(s), MTU %u, %s\n", qpt_name(o->conn),
	       o->devs[o->ib_port - 1], o->num_qps, uroce_mtu_bytes(p->mtu),
	       rel_args_describe(&o->rel.attr, rel, sizeof(rel)));
	if (o->rel.path.npaths > 1 || o->rel.cc.algo != UROCE_CC_NONE)
		printf(" Paths: %u (%s), congestion control %s\n", o->rel.path.npaths ? o->rel.path.npaths : 1,
		       o->rel.path.npaths > 1 ? uroce_path_policy_str(o->rel.path.policy == UROCE_PATH_DEFAULT ?
		                                                      UROCE_PATH_P2C : o->rel.path.policy) : "single",
		       uroce_cc_str(o->rel.cc.algo));
	return 0;
}

void perf_teardown(struct perf_ctx *p)
{
	for (int i = 0; p->qp && p->ah && i < p->o->num_qps; i++) {
		if (p->ah[i])
			uroce_ah_destroy(p->ah[i]);
		if (p->qp[i])
			uroce_qp_destroy(p->qp[i]);
	}
	for (int k = 0; k < PERF_MAX_ENGINES; k++) {
		struct perf_engine *e = &p->eng[k];

		if (e->ctx && p->pcap[k][0])
			app_pcap_stop("uroce-perf", e->ctx, (uint8_t)p->o->ib_port, p->pcap[k], stdout);
		p->pcap[k][0] = 0;
		if (e->send_cq)
			uroce_cq_destroy(e->send_cq);
		if (e->recv_cq)
			uroce_cq_destroy(e->recv_cq);
		if (e->ch)
			uroce_comp_channel_destroy(e->ch);
		e->ch = NULL;
		if (e->mr)
			uroce_mr_dereg(e->mr);
		if (e->pd)
			uroce_pd_free(e->pd);
		if (e->ctx)
			uroce_context_destroy(e->ctx);
		memset(e, 0, sizeof(*e));
	}
	p->ctx = NULL;
	p->pd = NULL;
	p->mr = NULL;
	p->send_cq = p->recv_cq = NULL;
	free(p->rem_sports);
	p->rem_sports = NULL;
	free(p->buf);
	free(p->qp);
	free(p->ah);
	free(p->my);
	free(p->rem);
	p->qp = NULL;
	p->ah = NULL;
	p->my = p->rem = NULL;
	perf_comm_close(&p->comm);
}

/* -e: sleep until an engine's channel has an event (or ms pass); take
 * every event there is, acknowledge it and arm its CQ again. The caller
 * polls the CQs after: a completion that came before the arming is found
 * then. */
static int wait_events(struct perf_ctx *p, int ms)
{
	struct pollfd fds[PERF_MAX_ENGINES];
	int n;

	for (int k = 0; k < p->neng; k++)
		fds[k] = (struct pollfd){ .fd = uroce_comp_channel_fd(p->eng[k].ch), .events = POLLIN };
	n = poll(fds, (nfds_t)p->neng, ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int k = 0; k < p->neng && n; k++) {
		struct uroce_cq *cq;
		int rc;

		if (!(fds[k].revents & POLLIN))
			continue;
		rc = uroce_get_cq_event(p->eng[k].ch, &cq, NULL);
		if (rc)
			return fail("cannot read a completion event", rc);
		uroce_ack_cq_events(cq, 1);
		rc = uroce_req_notify_cq(cq, 0);
		if (rc)
			return fail("cannot arm a CQ", rc);
	}
	return 0;
}

static int poll_cqs(struct perf_ctx *p, struct uroce_cq *const *cqs, int ncq, int n, struct uroce_wc *wc)
{
	uint64_t deadline = 0;

	for (uint64_t spins = 0;; spins++) {
		for (int k = 0; k < ncq; k++) {
			/* start at another CQ each time: no engine waits behind a busy one */
			int got = uroce_poll_cq(cqs[(k + spins) % (uint64_t)ncq], n, wc);
			if (got)
				return got;
		}
		if (perf_progress(p) < 0)
			return -EIO;
		if (p->o->events) {
			/* asleep until an event; the timeout counts from the first wait */
			uint64_t t = perf_now_ns();
			int rc;

			if (!deadline)
				deadline = t + (uint64_t)(p->o->timeout * 1e9);
			else if (t >= deadline) {
				fprintf(stderr, "uroce-perf: no completion for %.0f s (see --timeout)\n", p->o->timeout);
				return -ETIMEDOUT;
			}
			if ((rc = wait_events(p, (int)((deadline - t) / 1000000 + 1))))
				return rc;
			continue;
		}
		/* Read the clock only now and then: the hot loop stays short. */
		if ((spins & 255) == 0) {
			uint64_t t = perf_now_ns();
			if (!deadline)
				deadline = t + (uint64_t)(p->o->timeout * 1e9);
			else if (t >= deadline) {
				fprintf(stderr, "uroce-perf: no completion for %.0f s (see --timeout)\n", p->o->timeout);
				return -ETIMEDOUT;
			}
		}
	}
}

int perf_poll(struct perf_ctx *p, struct uroce_cq *cq, int n, struct uroce_wc *wc)
{
	return poll_cqs(p, &cq, 1, n, wc);
}

int perf_poll_engines(struct perf_ctx *p, int recv, int n, struct uroce_wc *wc)
{
	struct uroce_cq *cqs[2 * PERF_MAX_ENGINES];
	int ncq = 0;

	for (int k = 0; k < p->neng; k++) {
		if (recv != 1)
			cqs[ncq++] = p->eng[k].send_cq;
		if (recv)
			cqs[ncq++] = p->eng[k].recv_cq;
	}
	return poll_cqs(p, cqs, ncq, n, wc);
}

int perf_wc_ok(const struct uroce_wc *wc, const char *what)
{
	if (wc->status == UROCE_WC_SUCCESS)
		return 0;
	fprintf(stderr, "uroce-perf: %s completion failed: %s (status %d, wr_id %llu, QPN 0x%06x)\n", what,
		uroce_wc_status_str(wc->status), (int)wc->status, (unsigned long long)wc->wr_id, wc->qp_num);
	return -EIO;
}

int perf_wc_partial(struct perf_ctx *p, const struct uroce_wc *wc, uint64_t expect)
{
	if (!(wc->wc_flags & (UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT | UROCE_WC_PREEMPTED)))
		return 0;
	p->part.n++;
	p->part.timeout += !!(wc->wc_flags & UROCE_WC_TIMEOUT);
	p->part.preempted += !!(wc->wc_flags & UROCE_WC_PREEMPTED);
	if (wc->byte_len < expect)
		p->part.missing += expect - wc->byte_len;
	return 1;
}

int perf_partial_verdict(struct perf_ctx *p)
{
	if (!p->part.n)
		return 0;
	fprintf(stderr,
		"uroce-perf: %llu message(s) ended before they were whole (%llu by their deadline, %llu preempted): "
		"%llu bytes %s\n",
		(unsigned long long)p->part.n, (unsigned long long)p->part.timeout, (unsigned long long)p->part.preempted,
		(unsigned long long)p->part.missing, p->o->server ? "not sent" : "not placed");
	if (p->o->allow_partial)
		return 0;
	fprintf(stderr, "uroce-perf: a failure: not every message arrived whole (be ends a message by its deadline; "
		"--allow-partial accepts that and reports the goodput)\n");
	return -EIO;
}

int perf_post_recvs(struct perf_ctx *p, int qp, int count)
{
	uint32_t len = (uint32_t)p->o->size + (p->o->conn == UROCE_QPT_UD ? PERF_UD_GRH : 0);
	struct uroce_sge sge = {
		.addr = (uint64_t)(uintptr_t)perf_recv_area(p, qp), .length = len, .lkey = perf_eng_of(p, qp)->mr->lkey};
	struct uroce_recv_wr wr = {.wr_id = (uint64_t)qp, .sg_list = &sge, .num_sge = 1}, *bad;

	for (int i = 0; i < count; i++) {
		int rc = uroce_post_recv(p->qp[qp], &wr, &bad);
		if (rc)
			return fail("cannot post a receive", rc);
	}
	return 0;
}
