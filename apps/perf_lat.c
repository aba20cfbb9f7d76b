/* SPDX-License-Identifier: MIT */
/* Latency traffic as perftest's run_iter_lat_write, run_iter_lat and
 * run_iter_lat_send do it. write_lat: each side RDMA-writes its message
 * to the other and spins on the last byte of its own receive area until
 * the peer's counter shows up there (the server writes first, as in
 * perftest's run_iter_lat_write; send_lat's client sends first). read_lat: the
 * client reads, one at a time. send_lat: SEND/RECV ping-pong. A sample
 * is the time between two consecutive posts; ping-pong samples are halved.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

static int wait_one(struct perf_ctx *p, struct uroce_cq *cq, const char *what, struct uroce_wc *wc)
{
	int n = perf_poll(p, cq, 1, wc);
	if (n < 0)
		return n;
	if (perf_wc_ok(wc, what))
		return -EIO;
	/* a be message that ended before it was whole is no sample */
	if (perf_wc_partial(p, wc, p->o->size) && !p->o->allow_partial)
		return perf_partial_verdict(p);
	return 0;
}

static int post_one(struct perf_ctx *p, struct uroce_send_wr *wr)
{
	struct uroce_send_wr *bad;
	int rc = uroce_post_send(p->qp[0], wr, &bad);
	if (rc)
		fprintf(stderr, "uroce-perf: post_send: %s (%s)\n", uroce_strerror(rc), uroce_last_error());
	return rc;
}

/* Spin until the peer's write puts the counter into our last byte. */
static int wait_byte(struct perf_ctx *p, volatile uint8_t *b, uint8_t want)
{
	uint64_t deadline = 0;

	for (uint64_t spins = 0; *b != want; spins++) {
		if (perf_progress(p) < 0)
			return -EIO;
		if ((spins & 255) == 0) {
			uint64_t t = perf_now_ns();
			if (!deadline)
				deadline = t + (uint64_t)(p->o->timeout * 1e9);
			else if (t >= deadline) {
				fprintf(stderr, "uroce-perf: the peer's write did not arrive within %.0f s (see --timeout)\n",
					p->o->timeout);
				return -ETIMEDOUT;
			}
		}
	}
	return 0;
}

int perf_run_lat(struct perf_ctx *p, struct perf_lat_result *res)
{
	struct perf_opts *o = p->o;
	int client = o->server != NULL;
	uint64_t iters = o->iters, scnt = 0, rcnt = 0, ccnt = 0;
	uint64_t *timer = calloc(iters, sizeof(uint64_t));
	struct uroce_sge sge = {
		.addr = (uint64_t)(uintptr_t)perf_send_area(p, 0), .length = (uint32_t)o->size, .lkey = p->mr->lkey};
	struct uroce_send_wr wr = {.sg_list = &sge, .num_sge = 1, .send_flags = UROCE_SEND_SIGNALED};
	struct uroce_wc wc;
	double factor = 2;
	int rc = 0;

	if (!timer) {
		fprintf(stderr, "uroce-perf: cannot allocate %llu timestamps\n", (unsigned long long)iters);
		return -ENOMEM;
	}
	wr.wr.rdma.remote_addr = p->rem[0].vaddr;
	wr.wr.rdma.rkey = p->rem[0].rkey;

	switch (o->test) {
	case PERF_WRITE_LAT: {
		volatile uint8_t *post_buf = perf_send_area(p, 0) + o->size - 1;
		volatile uint8_t *poll_buf = perf_recv_area(p, 0) + o->size - 1;
		wr.opcode = UROCE_WR_RDMA_WRITE;
		while (scnt < iters || rcnt < iters || ccnt < iters) {
			if (rcnt < iters && !(scnt < 1 && !client)) {
				rcnt++;
				if ((rc = wait_byte(p, poll_buf, (uint8_t)rcnt)))
					goto out;
			}
			if (scnt < iters) {
				timer[scnt] = perf_now_ns();
				*post_buf = (uint8_t)++scnt;
				if ((rc = post_one(p, &wr)))
					goto out;
			}
			if (ccnt < iters) {
				if ((rc = wait_one(p, p->send_cq, "RDMA WRITE", &wc)))
					goto out;
				ccnt++;
			}
		}
		break;
	}
	case PERF_READ_LAT:
	case PERF_ATOMIC_LAT:
		/* one at a time, as read_lat; atomic_lat adds 1 to (or swaps)
		 * the peer's first word */
		factor = 1;
		wr.opcode = UROCE_WR_RDMA_READ;
		if (o->test == PERF_ATOMIC_LAT)
			perf_wr_atomic(o, &p->rem[0], &wr);
		for (scnt = 0; scnt < iters; scnt++) {
			timer[scnt] = perf_now_ns();
			if ((rc = post_one(p, &wr)) ||
			    (rc = wait_one(p, p->send_cq, o->test == PERF_READ_LAT ? "RDMA READ" : "atomic", &wc)))
				goto out;
		}
		break;
	case PERF_SEND_LAT: {
		uint64_t posted = (uint64_t)o->rx_depth < iters ? (uint64_t)o->rx_depth : iters;
		wr.opcode = UROCE_WR_SEND;
		if (o->conn == UROCE_QPT_UD) {
			wr.wr.ud.ah = p->ah[0];
			wr.wr.ud.remote_qpn = p->rem[0].qpn;
			wr.wr.ud.remote_qkey = PERF_DEFAULT_QKEY;
		}
		while (scnt < iters || rcnt < iters) {
			if (rcnt < iters && !(scnt < 1 && client)) {
				if ((rc = wait_one(p, p->recv_cq, "receive", &wc)))
					goto out;
				rcnt++;
				if (posted < iters) {
					if ((rc = perf_post_recvs(p, 0, 1)))
						goto out;
					posted++;
				}
			}
			if (scnt < iters) {
				timer[scnt] = perf_now_ns();
				if ((rc = post_one(p, &wr)) || (rc = wait_one(p, p->send_cq, "SEND", &wc)))
					goto out;
				scnt++;
			}
		}
		break;
	}
	default:
		rc = -EINVAL;
		goto out;
	}
	for (uint64_t i = 0; i + 1 < iters; i++)
		timer[i] = timer[i + 1] - timer[i];
	perf_lat_compute(o->size, timer, iters - 1, factor, res);
out:
	free(timer);
	return rc;
}
