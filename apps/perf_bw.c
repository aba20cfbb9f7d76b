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

int perf_run_bw(struct perf_ctx *p, struct perf_bw_report *rep)
{
	struct perf_opts *o = p->o;
	uint64_t scnt[PERF_MAX_QPS] = {0}, ccnt[PERF_MAX_QPS] = {0}, last_sig[PERF_MAX_QPS] = {0};
	uint64_t iters = o->duration ? UINT64_MAX : o->iters;
	uint64_t total = o->duration ? 0 : o->iters * (uint64_t)o->num_qps;
	uint64_t *tposted = NULL, *tcompleted = NULL;
	uint64_t totscnt = 0, totccnt = 0, t_start = 0, t_end = 0, deadline = 0;
	struct uroce_sge sge[PERF_MAX_QPS];
	struct uroce_send_wr wr[PERF_MAX_QPS];
	struct uroce_wc wc[PERF_POLL_BATCH];
	int stop = 0, rc = 0;

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
		memset(&wr[q], 0, sizeof(wr[q]));
		sge[q].addr = (uint64_t)(uintptr_t)perf_send_area(p, q);
		sge[q].length = (uint32_t)o->size;
		sge[q].lkey = p->mr->lkey;
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
		if (o->conn == UROCE_QPT_UD) {
			wr[q].wr.ud.ah = p->ah[q];
			wr[q].wr.ud.remote_qpn = p->rem[q].qpn;
			wr[q].wr.ud.remote_qkey = PERF_DEFAULT_QKEY;
		}
	}

	t_start = perf_now_ns();
	if (o->duration)
		deadline = t_start + (uint64_t)(o->duration * 1e9);
	for (;;) {
		int pending = 0;
		for (int q = 0; q < o->num_qps; q++) {
			while (!stop && scnt[q] < iters && scnt[q] - ccnt[q] < (uint64_t)o->tx_depth) {
				struct uroce_send_wr *bad;
				int last = scnt[q] + 1 == iters;
				int sig = (scnt[q] % (uint64_t)o->cq_mod) == (uint64_t)(o->cq_mod - 1) || last;
				wr[q].send_flags = sig ? UROCE_SEND_SIGNALED : 0;
				wr[q].wr_id = ((scnt[q] + 1 - last_sig[q]) << 8) | (uint64_t)q;
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
			if (scnt[q] > ccnt[q])
				pending = 1;
		}
		if (o->duration && !stop && perf_now_ns() >= deadline) {
			stop = 1;
			/* Only signalled groups are counted: WRs posted after
			 * a QP's last signalled one complete unseen and are
			 * left out of the result. */
			for (int q = 0; q < o->num_qps; q++)
				scnt[q] = last_sig[q];
			totscnt = 0;
			for (int q = 0; q < o->num_qps; q++)
				totscnt += scnt[q];
			pending = 0;
			for (int q = 0; q < o->num_qps; q++)
				if (scnt[q] > ccnt[q])
					pending = 1;
		}
		if (!pending && (stop || !o->duration)) {
			int all = 1;
			for (int q = 0; q < o->num_qps; q++)
				if (!stop && scnt[q] < iters)
					all = 0;
			if (all)
				break;
		}
		if (!pending)
			continue;
		int n = perf_poll(p, p->send_cq, PERF_POLL_BATCH, wc);
		if (n < 0) {
			rc = n;
			goto out;
		}
		uint64_t now = perf_now_ns();
		for (int i = 0; i < n; i++) {
			if (perf_wc_ok(&wc[i], o->test == PERF_READ_BW ? "RDMA READ" :
					       o->test == PERF_WRITE_BW ? "RDMA WRITE" : "SEND")) {
				rc = -EIO;
				goto out;
			}
			int q = (int)(wc[i].wr_id & 0xff);
			uint64_t covered = wc[i].wr_id >> 8;
			if (q >= o->num_qps || !covered) {
				fprintf(stderr, "uroce-perf: completion with an unknown wr_id %llu\n",
					(unsigned long long)wc[i].wr_id);
				rc = -EIO;
				goto out;
			}
			ccnt[q] += covered;
			totccnt += covered;
			if (tcompleted && totccnt && totccnt <= total)
				tcompleted[totccnt - 1] = now;
			t_end = now;
		}
	}
	if (!t_end)
		t_end = perf_now_ns();
	perf_bw_compute(o, o->size, totccnt, o->duration ? NULL : tposted, tcompleted, totccnt, o->cq_mod,
			t_start, t_end, rep);
	/* #iterations counts every QP's messages, as perftest's does */
	if (!o->duration && totccnt != total) {
		fprintf(stderr, "uroce-perf: %llu of %llu messages completed\n", (unsigned long long)totccnt,
			(unsigned long long)total);
		rc = -EIO;
	}
out:
	free(tposted);
	free(tcompleted);
	return rc;
}

int perf_run_bw_server_send(struct perf_ctx *p, struct perf_bw_report *rep)
{
	struct perf_opts *o = p->o;
	uint64_t rcnt[PERF_MAX_QPS] = {0}, posted[PERF_MAX_QPS], tot = 0;
	uint64_t total = o->iters * (uint64_t)o->num_qps, t_start = 0, t_end = 0;
	struct uroce_wc wc[PERF_POLL_BATCH];
	uint64_t expect = o->size + (o->conn == UROCE_QPT_UD ? PERF_UD_GRH : 0);

	for (int q = 0; q < o->num_qps; q++)
		posted[q] = (uint64_t)o->rx_depth < o->iters ? (uint64_t)o->rx_depth : o->iters;
	while (tot < total) {
		int n = perf_poll(p, p->recv_cq, PERF_POLL_BATCH, wc);
		if (n < 0)
			return n;
		uint64_t now = perf_now_ns();
		if (!t_start)
			t_start = now;
		t_end = now;
		for (int i = 0; i < n; i++) {
			if (perf_wc_ok(&wc[i], "receive"))
				return -EIO;
			int q = (int)wc[i].wr_id;
			if (q < 0 || q >= o->num_qps) {
				fprintf(stderr, "uroce-perf: receive completion with an unknown wr_id\n");
				return -EIO;
			}
			if (wc[i].byte_len != o->size && wc[i].byte_len != expect) {
				fprintf(stderr, "uroce-perf: received %u bytes, expected %llu\n", wc[i].byte_len,
					(unsigned long long)o->size);
				return -EIO;
			}
			rcnt[q]++;
			tot++;
			if (posted[q] < o->iters) {
				int rc = perf_post_recvs(p, q, 1);
				if (rc)
					return rc;
				posted[q]++;
			}
		}
	}
	perf_bw_compute(o, o->size, tot, NULL, NULL, 0, o->cq_mod, t_start, t_end, rep);
	return 0;
}
