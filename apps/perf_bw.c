/* SPDX-License-Identifier: MIT */
/* Bandwidth traffic as perftest's run_iter_bw and run_iter_bw_server do
 * it: the client keeps up to tx_depth WRs outstanding per QP, signals one
 * in cq_mod (and the last), and counts a signalled completion for the
 * whole group before it; the send_bw server keeps rx_depth receives
 * posted and reposts while more are due.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define PERF_PEAK_MAX_SAMPLES (50u * 1000 * 1000) /* beyond this, peak = average (memory) */
#define PERF_POLL_BATCH 16

#define WRID_QP_MASK ((1ull << PERF_WRID_QP_BITS) - 1)
_Static_assert(PERF_MAX_QPS <= (1 << PERF_WRID_QP_BITS), "the QP index fits the wr_id's low bits");

/* The QPs with room for another WR, in the order they got it: a ring
 * where each QP is at most once, so num_qps entries hold them all. Posting
 * takes them in that order and fills each to tx_depth, round robin as
 * perftest's loop over the QPs is, without a pass over every QP per
 * completion when there are thousands. */
struct ready_ring {
	int *q;
	uint8_t *in;
	unsigned head, count, size;
};

static void ready_push(struct ready_ring *r, int q)
{
	unsigned at = r->head + r->count;

	if (r->in[q])
		return;
	r->in[q] = 1;
	r->q[at >= r->size ? at - r->size : at] = q;
	r->count++;
}

static int ready_pop(struct ready_ring *r)
{
	int q = r->q[r->head];

	r->head = r->head + 1 == r->size ? 0 : r->head + 1;
	r->count--;
	r->in[q] = 0;
	return q;
}

/* One receive completion of send_bw (the server's, or either end's with
 * -b): checked, counted in *got, and its receive posted again while the
 * peer still has messages to send. */
static int take_recv(struct perf_ctx *p, const struct uroce_wc *wc, uint64_t *posted, uint64_t *got)
{
	const struct perf_opts *o = p->o;
	uint64_t expect = o->size + (o->conn == UROCE_QPT_UD ? PERF_UD_GRH : 0);
	int q, rc;

	if (perf_wc_ok(wc, "receive"))
		return -EIO;
	if (wc->wr_id >= (uint64_t)o->num_qps) {
		fprintf(stderr, "uroce-perf: receive completion with an unknown wr_id\n");
		return -EIO;
	}
	q = (int)wc->wr_id;
	/* a be message that ended before it was whole: byte_len is what was placed */
	if (!perf_wc_partial(p, wc, o->size) && wc->byte_len != o->size && wc->byte_len != expect) {
		fprintf(stderr, "uroce-perf: received %u bytes, expected %llu\n", wc->byte_len, (unsigned long long)o->size);
		return -EIO;
	}
	(*got)++;
	if (posted[q] < o->iters) {
		if ((rc = perf_post_recvs(p, q, 1)))
			return rc;
		posted[q]++;
	}
	return 0;
}

int perf_run_bw(struct perf_ctx *p, struct perf_bw_report *rep)
{
	struct perf_opts *o = p->o;
	size_t nq = (size_t)o->num_qps;
	/* -D or --run_infinitely: time (or a signal) ends the run, not -n */
	int timed = o->duration || o->run_infinitely;
	/* -b send_bw: the peer's messages arrive here meanwhile */
	int dsend = o->duplex && o->test == PERF_SEND_BW;
	uint64_t *rposted = dsend ? calloc(nq, sizeof(uint64_t)) : NULL, rgot = 0, rtotal = dsend ? o->iters * nq : 0;
	uint64_t period_ns = (uint64_t)(o->report_period * 1e9), next_report = 0, rep_msgs = 0, rep_t = 0;
	/* per QP: WRs posted, WRs completed, the count up to its last signalled WR */
	uint64_t *scnt = calloc(nq, sizeof(uint64_t)), *ccnt = calloc(nq, sizeof(uint64_t));
	uint64_t *last_sig = calloc(nq, sizeof(uint64_t));
	uint64_t iters = timed ? UINT64_MAX : o->iters;
	uint64_t total = timed ? 0 : o->iters * (uint64_t)o->num_qps;
	uint64_t *tposted = NULL, *tcompleted = NULL;
	uint64_t totscnt = 0, totccnt = 0, t_start = 0, t_end = 0, deadline = 0;
	uint64_t depth = (uint64_t)o->tx_depth;
	struct uroce_sge *sge = calloc(nq, sizeof(*sge));
	struct uroce_send_wr *wr = calloc(nq, sizeof(*wr));
	struct ready_ring ready = {.q = calloc(nq, sizeof(int)), .in = calloc(nq, 1), .size = (unsigned)nq};
	struct uroce_wc wc[PERF_POLL_BATCH];
	/* be: every WR signalled, since only a completion tells that its
	 * message ended before it was whole (and how much of it went) */
	int be = o->rel.attr.reliability == UROCE_REL_BE;
	uint64_t missing0;
	int stop = 0, rc = 0;

	memset(&p->part, 0, sizeof(p->part)); /* each size on its own */
	missing0 = p->part.missing;

	if (!scnt || !ccnt || !last_sig || !sge || !wr || !ready.q || !ready.in || (dsend && !rposted)) {
		fprintf(stderr, "uroce-perf: cannot allocate the traffic state of %d QPs\n", o->num_qps);
		rc = -ENOMEM;
		goto out;
	}
	if (total && total <= PERF_PEAK_MAX_SAMPLES) {
		tposted = calloc(total, sizeof(uint64_t));
		tcompleted = calloc(total, sizeof(uint64_t));
		if (!tposted || !tcompleted) {
			free(tposted);
			free(tcompleted);
			tposted = tcompleted = NULL;
		}
	}
	for (int q = 0; q < o->num_qps; q++) {
		sge[q].addr = (uint64_t)(uintptr_t)perf_send_area(p, q);
		sge[q].length = (uint32_t)o->size;
		sge[q].lkey = perf_eng_of(p, q)->mr->lkey;
		wr[q].sg_list = &sge[q];
		wr[q].num_sge = 1;
		switch (o->test) {
		case PERF_WRITE_BW:
			wr[q].opcode = UROCE_WR_RDMA_WRITE;
			break;
		case PERF_READ_BW:
			wr[q].opcode = UROCE_WR_RDMA_READ;
			break;
		default:
			wr[q].opcode = UROCE_WR_SEND;
			break;
		}
		wr[q].wr.rdma.remote_addr = p->rem[q].vaddr;
		wr[q].wr.rdma.rkey = p->rem[q].rkey;
		if (o->test == PERF_ATOMIC_BW)
			perf_wr_atomic(o, &p->rem[q], &wr[q]);
		if (dsend)
			rposted[q] = (uint64_t)o->rx_depth < o->iters ? (uint64_t)o->rx_depth : o->iters;
		if (o->conn == UROCE_QPT_UD) {
			wr[q].wr.ud.ah = p->ah[q];
			wr[q].wr.ud.remote_qpn = p->rem[q].qpn;
			wr[q].wr.ud.remote_qkey = PERF_DEFAULT_QKEY;
		}
		ready_push(&ready, q);
	}

	t_start = perf_now_ns();
	if (o->duration)
		deadline = t_start + (uint64_t)(o->duration * 1e9);
	if (period_ns) {
		next_report = t_start + period_ns;
		rep_t = t_start;
	}
	for (;;) {
		while (!stop && ready.count) {
			int q = ready_pop(&ready);

			while (scnt[q] < iters && scnt[q] - ccnt[q] < depth) {
				struct uroce_send_wr *bad;
				int last = scnt[q] + 1 == iters;
				int sig = (scnt[q] % (uint64_t)o->cq_mod) == (uint64_t)(o->cq_mod - 1) || last || be;
				wr[q].send_flags = sig ? UROCE_SEND_SIGNALED : 0;
				wr[q].wr_id = ((scnt[q] + 1 - last_sig[q]) << PERF_WRID_QP_BITS) | (uint64_t)q;
				if (tposted)
					tposted[totscnt] = perf_now_ns();
				rc = uroce_post_send(p->qp[q], &wr[q], &bad);
				if (rc) {
					fprintf(stderr, "uroce-perf: post_send: %s (%s)\n", uroce_strerror(rc),
						uroce_last_error());
					goto out;
				}
				if (sig)
					last_sig[q] = scnt[q] + 1;
				scnt[q]++;
				totscnt++;
			}
		}
		if (period_ns && !stop) {
			uint64_t t = perf_now_ns();

			if (t >= next_report) {
				perf_print_period(o, (double)(t - t_start) / 1e9, (double)(t - rep_t) / 1e9,
						  totccnt - rep_msgs, (totccnt - rep_msgs) * o->size);
				rep_msgs = totccnt;
				rep_t = t;
				next_report = t + period_ns;
			}
		}
		if (timed && !stop && ((o->duration && perf_now_ns() >= deadline) || perf_stop)) {
			stop = 1;
			/* Only signalled groups are counted: WRs posted after
			 * a QP's last signalled one complete unseen and are
			 * left out of the result. */
			totscnt = 0;
			for (int q = 0; q < o->num_qps; q++) {
				scnt[q] = last_sig[q];
				totscnt += scnt[q];
			}
		}
		/* Nothing outstanding (completions never pass the posts:
		 * ccnt[q] <= scnt[q] for every QP) */
		if (totscnt == totccnt && rgot == rtotal) {
			if (stop || (!timed && totscnt == total))
				break;
			continue;
		}
		int n = dsend ? perf_poll_engines(p, 2, PERF_POLL_BATCH, wc) : perf_poll_engines(p, 0, PERF_POLL_BATCH, wc);
		if (n < 0) {
			rc = n;
			goto out;
		}
		uint64_t now = perf_now_ns();
		for (int i = 0; i < n; i++) {
			if (dsend && (wc[i].opcode & UROCE_WC_RECV)) {
				if ((rc = take_recv(p, &wc[i], rposted, &rgot)))
					goto out;
				continue;
			}
			if (perf_wc_ok(&wc[i], o->test == PERF_READ_BW ? "RDMA READ" :
					       o->test == PERF_WRITE_BW ? "RDMA WRITE" :
					       o->test == PERF_ATOMIC_BW ? "atomic" : "SEND")) {
				rc = -EIO;
				goto out;
			}
			perf_wc_partial(p, &wc[i], o->size);
			uint64_t qi = wc[i].wr_id & WRID_QP_MASK;
			uint64_t covered = wc[i].wr_id >> PERF_WRID_QP_BITS;
			if (qi >= nq || !covered || covered > scnt[qi] - ccnt[qi]) {
				fprintf(stderr, "uroce-perf: completion with an unknown wr_id %llu\n",
					(unsigned long long)wc[i].wr_id);
				rc = -EIO;
				goto out;
			}
			int q = (int)qi;
			ccnt[q] += covered;
			totccnt += covered;
			if (tcompleted && totccnt && totccnt <= total)
				tcompleted[totccnt - 1] = now;
			t_end = now;
			if (!stop && scnt[q] < iters)
				ready_push(&ready, q);
		}
	}
	if (!t_end)
		t_end = perf_now_ns();
	perf_bw_compute(o, o->size, totccnt, timed ? NULL : tposted, tcompleted, totccnt, o->cq_mod,
			t_start, t_end, rep);
	perf_bw_goodput(rep, o->size * totccnt, p->part.missing - missing0);
	/* #iterations counts every QP's messages, as perftest's does */
	if (!timed && totccnt != total) {
		fprintf(stderr, "uroce-perf: %llu of %llu messages completed\n", (unsigned long long)totccnt,
			(unsigned long long)total);
		rc = -EIO;
	}
	if (!rc)
		rc = perf_partial_verdict(p);
out:
	free(rposted);
	free(tposted);
	free(tcompleted);
	free(scnt);
	free(ccnt);
	free(last_sig);
	free(sge);
	free(wr);
	free(ready.q);
	free(ready.in);
	return rc;
}

int perf_run_bw_server_send(struct perf_ctx *p, struct perf_bw_report *rep)
{
	struct perf_opts *o = p->o;
	uint64_t *posted = calloc((size_t)o->num_qps, sizeof(uint64_t)), tot = 0;
	uint64_t total = o->iters * (uint64_t)o->num_qps, t_start = 0, t_end = 0;
	struct uroce_wc wc[PERF_POLL_BATCH];
	uint64_t missing0 = 0;
	int rc = 0;

	memset(&p->part, 0, sizeof(p->part)); /* each size on its own */

	if (!posted) {
		fprintf(stderr, "uroce-perf: cannot allocate the receive state of %d QPs\n", o->num_qps);
		return -ENOMEM;
	}
	for (int q = 0; q < o->num_qps; q++)
		posted[q] = (uint64_t)o->rx_depth < o->iters ? (uint64_t)o->rx_depth : o->iters;
	while (tot < total) {
		int n = perf_poll_engines(p, 1, PERF_POLL_BATCH, wc);
		if (n < 0) {
			rc = n;
			goto out;
		}
		uint64_t now = perf_now_ns();
		if (!t_start)
			t_start = now;
		t_end = now;
		for (int i = 0; i < n; i++)
			if ((rc = take_recv(p, &wc[i], posted, &tot)))
				goto out;
	}
	perf_bw_compute(o, o->size, tot, NULL, NULL, 0, o->cq_mod, t_start, t_end, rep);
	perf_bw_goodput(rep, o->size * tot, p->part.missing - missing0);
	rc = perf_partial_verdict(p);
out:
	free(posted);
	return rc;
}
