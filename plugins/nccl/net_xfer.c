/* SPDX-License-Identifier: MIT */
/* Memory registration and the data path, NCCL's IB transport's protocol
 * on uroce's verbs:
 *   irecv   zeroes the buffers (be, host memory), posts a receive WR per
 *           data WRITE it will take, and sends a CTS on the ctl QP naming
 *           each buffer (address, rkey, size, tag);
 *   isend   matches its tag in the oldest CTS not yet used up (none yet:
 *           request NULL, NCCL calls again), and writes the data into that
 *           buffer as RDMA WRITEs with immediate on the data QP, one per
 *           chunk of the RECEIVE's size (both ends count the same; a
 *           shorter send pads with empty WRITEs). The immediate names the
 *           receive (seq), the entry and the chunk;
 *   test    runs the engine (inline), takes completions, and says done
 *           once every WRITE of every entry arrived (recv) or completed
 *           (send), with the bytes each entry received.
 * be: the receiver cannot rely on an immediate (a message whose
 * descriptor was lost completes at its deadline without one), so the
 * sender first sends a SIZE note on the ctl QP (rc, in order) for each
 * send; be's data completions come in send order, and the notes say which
 * entry each belongs to and how many bytes it should have held. What a
 * deadline cut is counted (uroceNcclLostBytes) and stays zero. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "net_uroce.h"

enum { WR_CTL_RECV = 1, WR_CTL_SEND, WR_DATA_SEND, WR_DATA_RECV };
#define WR_ID(kind, idx) (((uint64_t)(kind) << 60) | (uint64_t)(idx))
#define WR_KIND(id) ((unsigned)((id) >> 60))
#define WR_IDX(id) ((uint32_t)((id) & 0xffffffffu))

#define IMM(seq, idx, chunk) htonl(((uint32_t)((seq) & 0xff) << 24) | ((uint32_t)(idx) << 16) | (uint32_t)(chunk))

uint32_t un_be_deadline(uint64_t size)
{
	uint64_t us = un_g.cfg.be_timeout_us + (size * un_g.cfg.be_us_per_mib >> 20);

	return us > 60000000 ? 60000000 : (uint32_t)us; /* be's longest deadline: 60 s */
}

static int is_be(void)
{
	return un_g.cfg.rel.reliability == UROCE_REL_BE;
}

/* Data WRITEs a receive of size bytes takes. */
static uint32_t nchunks(const struct un_comm *c, uint64_t size)
{
	uint64_t n = (size + c->chunk - 1) / c->chunk;

	return n ? (uint32_t)n : 1;
}

/* Bytes of [chunk j of a receive of rsize) a send of ssize fills. */
static uint64_t chunk_bytes(const struct un_comm *c, uint64_t rsize, uint64_t ssize, uint32_t j)
{
	uint64_t off = (uint64_t)j * c->chunk, end = off + c->chunk;

	if (end > rsize)
		end = rsize;
	if (end > ssize)
		end = ssize;
	return end > off ? end - off : 0;
}

static uint8_t *ctl_rbuf(struct un_comm *c, uint32_t i)
{
	return c->ctlbuf + (size_t)i * UN_CTL_MSG;
}

static int ctl_post_recv(struct un_comm *c, uint32_t i)
{
	struct uroce_sge sg = { (uint64_t)(uintptr_t)ctl_rbuf(c, i), UN_CTL_MSG, c->ctlmr->lkey };
	struct uroce_recv_wr rw = { .wr_id = WR_ID(WR_CTL_RECV, i), .sg_list = &sg, .num_sge = 1 };

	return uroce_post_recv(c->ctl, &rw, NULL);
}

int un_ctl_post_all(struct un_comm *c)
{
	for (uint32_t i = 0; i < UN_CTL_BUFS; i++)
		if (ctl_post_recv(c, i))
			return -1;
	return 0;
}

/* 0 sent, 1 no room now, -1 error. */
static int ctl_send(struct un_comm *c, const struct un_msg *m, size_t len)
{
	uint32_t i = c->ctl_send_next % UN_CTL_BUFS;
	uint8_t *buf = c->ctlbuf + (size_t)(UN_CTL_BUFS + i) * UN_CTL_MSG;
	struct uroce_sge sg = { (uint64_t)(uintptr_t)buf, (uint32_t)len, c->ctlmr->lkey };
	struct uroce_send_wr wr = { 0 };

	if (c->ctl_send_out >= UN_CTL_BUFS)
		return 1;
	memcpy(buf, m, len);
	wr.wr_id = WR_ID(WR_CTL_SEND, i);
	wr.opcode = UROCE_WR_SEND;
	wr.send_flags = UROCE_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	if (uroce_post_send(c->ctl, &wr, NULL)) {
		UN_WARN("ctl send: %s", uroce_last_error());
		return -1;
	}
	c->ctl_send_next++;
	c->ctl_send_out++;
	return 0;
}

static struct un_req *recv_req_by_seq(struct un_comm *c, uint32_t seq_lo)
{
	for (int i = 0; i < UN_MAX_REQS; i++) {
		struct un_req *r = &c->reqs[i];

		if (r->used && !r->done && (r->seq & 0xff) == seq_lo)
			return r;
	}
	return NULL;
}

/* Floats of a size-byte message the Hadamard coding covers: its whole
 * groups (a shorter tail goes as it is). */
static size_t hd_floats(uint64_t size)
{
	uint64_t group = (uint64_t)un_g.cfg.hd_block * un_g.cfg.hd_stride;

	return (size_t)(size / 4 / group * group);
}

static void recv_check_done(struct un_req *r)
{
	if (r->done)
		return;
	for (int i = 0; i < r->n; i++)
		if (r->got[i] < r->nchunks[i] || (is_be() && !r->have_size[i]))
			return;
	/* be with Hadamard: every buffer is in (what a deadline cut reads
	 * zero): decoded in place, on NCCL's proxy thread */
	for (int i = 0; i < r->n && un_g.cfg.hd_block; i++)
		if (hd_floats(r->sent[i]))
			uroce_hadamard_decode(r->addr[i], hd_floats(r->sent[i]), un_g.cfg.hd_block, un_g.cfg.hd_stride);
	r->done = 1;
}

/* be with Hadamard: request slot's encoded copy of data, registered. */
static const struct uroce_sge *hd_encode(struct un_comm *c, int slot, const void *data, size_t size,
                                         struct uroce_sge *sg)
{
	if (c->hd_cap[slot] < size) {
		size_t cap = size < 65536 ? 65536 : size;
		void *p = NULL;

		if (c->hd_mr[slot])
			uroce_mr_dereg(c->hd_mr[slot]);
		free(c->hd_buf[slot]);
		c->hd_mr[slot] = NULL;
		c->hd_buf[slot] = NULL;
		c->hd_cap[slot] = 0;
		if (posix_memalign(&p, 4096, cap))
			return NULL;
		c->hd_buf[slot] = p;
		if (uroce_mr_reg(c->dev->pd, p, cap, UROCE_ACCESS_LOCAL_WRITE, &c->hd_mr[slot])) {
			UN_WARN("isend: registering the Hadamard copy of %zu bytes: %s", cap, uroce_last_error());
			return NULL;
		}
		c->hd_cap[slot] = cap;
	}
	memcpy(c->hd_buf[slot], data, size);
	if (hd_floats(size))
		uroce_hadamard_encode(c->hd_buf[slot], hd_floats(size), un_g.cfg.hd_block, un_g.cfg.hd_stride);
	sg->addr = (uint64_t)(uintptr_t)c->hd_buf[slot];
	sg->lkey = c->hd_mr[slot]->lkey;
	return sg;
}

/* be: one data completion, the next message the SIZE notes announced. */
static void be_take(struct un_comm *c, const struct uroce_wc *wc)
{
	struct un_be_slot *s = &c->be_q[c->be_head % (UN_MAX_REQS * UN_MAX_RECVS)];
	struct un_req *r = recv_req_by_seq(c, s->seq & 0xff);
	uint32_t j;
	uint64_t want, placed;

	if (!r) {
		UN_WARN("be: a data completion for receive %u, which is not pending", s->seq);
		c->failed = 1;
		return;
	}
	j = r->nchunks[s->idx] - s->chunks_left;
	want = chunk_bytes(c, r->rsize[s->idx], r->sent[s->idx], j);
	placed = wc->status == UROCE_WC_SUCCESS ? wc->byte_len : 0;
	if (placed > want)
		placed = want;
	c->lost_bytes += want - placed;
	r->bytes[s->idx] += placed;
	r->got[s->idx]++;
	if (--s->chunks_left == 0)
		c->be_head++;
	recv_check_done(r);
}

static void take_ctl(struct un_comm *c, const struct uroce_wc *wc)
{
	uint32_t bi = WR_IDX(wc->wr_id);
	struct un_msg m;

	memcpy(&m, ctl_rbuf(c, bi), sizeof(m));
	if (ctl_post_recv(c, bi)) {
		UN_WARN("ctl receive: %s", uroce_last_error());
		c->failed = 1;
	}
	if (m.type == UN_MSG_CTS && c->is_send && m.n >= 1 && m.n <= UN_MAX_RECVS) {
		uint32_t slot = m.seq % UN_MAX_REQS;

		if (c->cts_have[slot]) {
			UN_WARN("CTS %u arrived while CTS %u still waits in its slot", m.seq, c->cts[slot].seq);
			c->failed = 1;
			return;
		}
		c->cts[slot] = m;
		c->cts_have[slot] = 1;
		memset(c->cts_matched[slot], 0, sizeof(c->cts_matched[slot]));
	} else if (m.type == UN_MSG_SIZE && !c->is_send && is_be() && m.n < UN_MAX_RECVS) {
		struct un_req *r = recv_req_by_seq(c, m.seq & 0xff);
		struct un_be_slot *s;

		if (!r || m.n >= (uint32_t)r->n || r->have_size[m.n] || m.size > r->rsize[m.n]) {
			UN_WARN("be: a SIZE note for receive %u entry %u (%llu bytes), which is not pending, already noted "
			        "or larger than the receive",
			        m.seq, m.n, (unsigned long long)m.size);
			c->failed = 1;
			return;
		}
		r->sent[m.n] = m.size;
		r->have_size[m.n] = 1;
		s = &c->be_q[c->be_tail++ % (UN_MAX_REQS * UN_MAX_RECVS)];
		s->seq = m.seq;
		s->idx = m.n;
		s->chunks_left = r->nchunks[m.n];
		/* completions that came ahead of their note */
		uint32_t k = 0;
		while (k < c->be_early_n && c->be_head != c->be_tail)
			be_take(c, &c->be_early[k++]);
		memmove(c->be_early, c->be_early + k, (c->be_early_n - k) * sizeof(c->be_early[0]));
		c->be_early_n -= k;
		recv_check_done(r);
	} else {
		UN_WARN("ctl: unexpected message type %u on a %s comm", m.type, c->is_send ? "send" : "receive");
		c->failed = 1;
	}
}

static void take_data_recv(struct un_comm *c, const struct uroce_wc *wc)
{
	uint32_t imm, idx, chunk;
	struct un_req *r;

	c->data_recv_out--;
	if (is_be()) {
		if (c->be_head == c->be_tail) {
			if (c->be_early_n < UN_DATA_WRS)
				c->be_early[c->be_early_n++] = *wc;
			return;
		}
		be_take(c, wc);
		return;
	}
	if (wc->status != UROCE_WC_SUCCESS || !(wc->wc_flags & UROCE_WC_WITH_IMM)) {
		UN_WARN("data receive: %s", uroce_wc_status_str(wc->status));
		c->failed = 1;
		return;
	}
	imm = ntohl(wc->imm_data);
	idx = (imm >> 16) & 0xff;
	chunk = imm & 0xffff;
	r = recv_req_by_seq(c, imm >> 24);
	if (!r || idx >= (uint32_t)r->n || chunk >= r->nchunks[idx]) {
		UN_WARN("data: a WRITE for receive %u entry %u chunk %u, which is not pending", imm >> 24, idx, chunk);
		c->failed = 1;
		return;
	}
	r->bytes[idx] += wc->byte_len;
	r->got[idx]++;
	recv_check_done(r);
}

int un_poll(struct un_comm *c)
{
	struct uroce_wc wc[32];
	int n, total = 0;

	if (un_g.cfg.inline_engine)
		uroce_progress(c->dev->ctx);
	while ((n = uroce_poll_cq(c->cq, 32, wc)) > 0) {
		total += n;
		for (int i = 0; i < n; i++) {
			struct uroce_wc *w = &wc[i];

			switch (WR_KIND(w->wr_id)) {
			case WR_CTL_RECV:
				if (w->status != UROCE_WC_SUCCESS) {
					UN_WARN("ctl receive: %s", uroce_wc_status_str(w->status));
					c->failed = 1;
					break;
				}
				take_ctl(c, w);
				break;
			case WR_CTL_SEND:
				c->ctl_send_out--;
				if (w->status != UROCE_WC_SUCCESS) {
					UN_WARN("ctl send: %s", uroce_wc_status_str(w->status));
					c->failed = 1;
				}
				break;
			case WR_DATA_SEND: {
				struct un_req *r = &c->reqs[WR_IDX(w->wr_id) % UN_MAX_REQS];

				c->data_send_out--;
				/* be: a send its deadline cut is still done (TIMEOUT|PARTIAL) */
				if (w->status != UROCE_WC_SUCCESS) {
					UN_WARN("data send: %s", uroce_wc_status_str(w->status));
					r->error = 1;
				}
				if (r->used && r->pending && --r->pending == 0)
					r->done = 1;
				break;
			}
			case WR_DATA_RECV:
				take_data_recv(c, w);
				break;
			default:
				break;
			}
		}
	}
	if (n < 0) {
		UN_WARN("poll: %s", uroce_last_error());
		c->failed = 1;
	}
	return total;
}

ncclResult_t un_isend(void *scomm, void *data, size_t size, int tag, void *mh, void **request)
{
	struct un_comm *c = scomm;
	struct un_mr *m = mh;
	uint32_t slot = c->cts_next % UN_MAX_REQS, nch;
	struct un_msg *cts = &c->cts[slot];
	struct un_req *r = NULL;
	int e = -1;

	*request = NULL;
	un_poll(c);
	if (c->failed)
		return ncclRemoteError;
	if (!c->cts_have[slot] || cts->seq != c->cts_next)
		return ncclSuccess; /* the receiver has not posted it yet */
	for (uint32_t i = 0; i < cts->n; i++)
		if (cts->e[i].tag == tag && !c->cts_matched[slot][i]) {
			e = (int)i;
			break;
		}
	if (e < 0)
		return ncclSuccess;
	if (size > cts->e[e].size) {
		UN_WARN("isend: %zu bytes with tag %d into a receive of %llu: the receive must be at least as large", size,
		        tag, (unsigned long long)cts->e[e].size);
		return ncclInvalidUsage;
	}
	if (size && (!m || (uintptr_t)data < (uintptr_t)m->mr->addr ||
	             (uintptr_t)data + size > (uintptr_t)m->mr->addr + m->mr->length)) {
		UN_WARN("isend: the buffer is not inside the registered region given");
		return ncclInvalidArgument;
	}
	nch = nchunks(c, cts->e[e].size);
	if (c->data_send_out + nch > UN_DATA_WRS || (is_be() && c->ctl_send_out >= UN_CTL_BUFS))
		return ncclSuccess;
	for (int i = 0; i < UN_MAX_REQS; i++)
		if (!c->reqs[i].used) {
			r = &c->reqs[i];
			break;
		}
	if (!r)
		return ncclSuccess;
	if (un_g.cfg.hd_block && size && !m->host) {
		UN_WARN("isend: UROCE_NCCL_HADAMARD codes host buffers only (this one is device memory)");
		return ncclInvalidUsage;
	}
	struct uroce_sge hsg = { 0 };

	if (un_g.cfg.hd_block && size && !hd_encode(c, (int)(r - c->reqs), data, size, &hsg)) {
		c->failed = 1;
		return ncclSystemError;
	}
	if (is_be()) {
		struct un_msg note = { .type = UN_MSG_SIZE, .seq = cts->seq, .n = (uint32_t)e, .size = size };

		if (ctl_send(c, &note, offsetof(struct un_msg, e)))
			return ncclSystemError;
	}
	memset(r, 0, sizeof(*r));
	r->used = 1;
	r->is_send = 1;
	r->comm = c;
	r->seq = cts->seq;
	r->size = size;
	r->pending = nch;
	for (uint32_t j = 0; j < nch; j++) {
		uint64_t off = (uint64_t)j * c->chunk, len = chunk_bytes(c, cts->e[e].size, size, j);
		struct uroce_sge sg = { (uint64_t)(uintptr_t)data + off, (uint32_t)len, len ? m->mr->lkey : 0 };

		if (un_g.cfg.hd_block && size) {
			sg.addr = hsg.addr + off;
			sg.lkey = hsg.lkey;
		}
		struct uroce_send_wr wr = { 0 };

		wr.wr_id = WR_ID(WR_DATA_SEND, r - c->reqs);
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.send_flags = UROCE_SEND_SIGNALED;
		wr.sg_list = len ? &sg : NULL;
		wr.num_sge = len ? 1 : 0;
		wr.imm_data = IMM(cts->seq, e, j);
		wr.wr.rdma.remote_addr = cts->e[e].addr + off;
		wr.wr.rdma.rkey = cts->e[e].rkey;
		if (is_be())
			wr.timeout_us = un_be_deadline(len);
		if (uroce_post_send(c->data, &wr, NULL)) {
			UN_WARN("isend: %s", uroce_last_error());
			c->failed = 1;
			return ncclSystemError;
		}
		c->data_send_out++;
	}
	c->cts_matched[slot][e] = 1;
	int all = 1;
	for (uint32_t i = 0; i < cts->n; i++)
		all &= c->cts_matched[slot][i];
	if (all) {
		c->cts_have[slot] = 0;
		c->cts_next++;
	}
	*request = r;
	return ncclSuccess;
}

ncclResult_t un_irecv(void *rcomm, int n, void **data, const size_t *sizes, const int *tags, void **mhs,
                      void **request)
{
	struct un_comm *c = rcomm;
	struct un_req *r = &c->reqs[c->recv_seq % UN_MAX_REQS];
	struct un_msg cts = { .type = UN_MSG_CTS };
	uint32_t total = 0;

	*request = NULL;
	if (n < 1 || n > UN_MAX_RECVS) {
		UN_WARN("irecv: %d grouped receives; accepted are 1..%d (maxRecvs)", n, UN_MAX_RECVS);
		return ncclInvalidArgument;
	}
	un_poll(c);
	if (c->failed)
		return ncclRemoteError;
	if (r->used)
		return ncclSuccess;
	for (int i = 0; i < n; i++) {
		struct un_mr *m = mhs ? mhs[i] : NULL;

		if (un_g.cfg.hd_block && sizes[i] && ((m && !m->host) || ((uintptr_t)data[i] & 3))) {
			UN_WARN("irecv: UROCE_NCCL_HADAMARD decodes float32 in host buffers only (buffer %d is %s)", i,
			        (uintptr_t)data[i] & 3 ? "not 4-byte aligned" : "device memory");
			return ncclInvalidUsage;
		}
		if (sizes[i] && (!m || (uintptr_t)data[i] < (uintptr_t)m->mr->addr ||
		                 (uintptr_t)data[i] + sizes[i] > (uintptr_t)m->mr->addr + m->mr->length)) {
			UN_WARN("irecv: buffer %d is not inside the registered region given", i);
			return ncclInvalidArgument;
		}
		total += nchunks(c, sizes[i]);
	}
	if (c->data_recv_out + total > UN_DATA_WRS || c->ctl_send_out >= UN_CTL_BUFS)
		return ncclSuccess;
	memset(r, 0, sizeof(*r));
	r->used = 1;
	r->comm = c;
	r->seq = c->recv_seq;
	r->n = n;
	cts.seq = c->recv_seq;
	cts.n = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		struct un_mr *m = mhs ? mhs[i] : NULL;

		r->nchunks[i] = nchunks(c, sizes[i]);
		r->rsize[i] = sizes[i];
		r->addr[i] = data[i];
		if (is_be() && sizes[i] && m->host)
			memset(data[i], 0, sizes[i]); /* what a deadline cuts reads as zero */
		cts.e[i].addr = (uint64_t)(uintptr_t)data[i];
		cts.e[i].size = sizes[i];
		cts.e[i].rkey = m ? m->mr->rkey : 0;
		cts.e[i].tag = tags ? tags[i] : 0;
	}
	for (int i = 0; i < n; i++)
		for (uint32_t k = 0; k < r->nchunks[i]; k++) {
			struct uroce_recv_wr rw = { .wr_id = WR_ID(WR_DATA_RECV, r - c->reqs) };

			/* be: a WR's deadline counts once it is the oldest, i.e.
			 * once the message before it ended: one chunk's worth */
			if (is_be())
				rw.timeout_us = un_be_deadline(c->chunk < sizes[i] ? c->chunk : sizes[i]);
			if (uroce_post_recv(c->data, &rw, NULL)) {
				UN_WARN("irecv: %s", uroce_last_error());
				c->failed = 1;
				return ncclSystemError;
			}
			c->data_recv_out++;
		}
	if (ctl_send(c, &cts, offsetof(struct un_msg, e) + (size_t)n * sizeof(cts.e[0]))) {
		c->failed = 1;
		return ncclSystemError;
	}
	c->recv_seq++;
	*request = r;
	return ncclSuccess;
}

ncclResult_t un_test(void *request, int *done, int *sizes)
{
	struct un_req *r = request;
	struct un_comm *c;

	*done = 0;
	if (!r || !r->used) {
		UN_WARN("test: not a pending request");
		return ncclInvalidArgument;
	}
	c = r->comm;
	un_poll(c);
	if (r->error || c->failed) {
		r->used = 0;
		return ncclRemoteError;
	}
	if (!r->done)
		return ncclSuccess;
	/* inline: the ACK of what just arrived leaves on the engine's next
	 * pass; NCCL's proxy may not call again for a long while */
	if (un_g.cfg.inline_engine)
		uroce_progress(c->dev->ctx);
	*done = 1;
	if (sizes) {
		if (r->is_send)
			sizes[0] = (int)r->size;
		else
			for (int i = 0; i < r->n; i++)
				sizes[i] = (int)(is_be() ? r->sent[i] : r->bytes[i]);
	}
	r->used = 0;
	return ncclSuccess;
}

ncclResult_t un_iflush(void *rcomm, int n, void **data, int *sizes, void **mhs, void **request)
{
	(void)rcomm, (void)n, (void)data, (void)sizes, (void)mhs;
	/* Host memory is written by the engine's CPU: nothing to flush. */
	*request = NULL;
	return ncclSuccess;
}

ncclResult_t un_irecv_consumed(void *rcomm, int n, void *request)
{
	(void)rcomm, (void)n, (void)request;
	return ncclSuccess;
}

static ncclResult_t reg_done(struct un_comm *c, struct uroce_mr *mr, int host, void **mh)
{
	struct un_mr *m = calloc(1, sizeof(*m));

	if (!m) {
		uroce_mr_dereg(mr);
		return ncclSystemError;
	}
	m->mr = mr;
	m->dev = c->dev;
	m->host = host;
	*mh = m;
	return ncclSuccess;
}

ncclResult_t un_regmr(void *comm, void *data, size_t size, int type, void **mh)
{
	struct un_comm *c = comm;
	struct uroce_mr *mr;
	int access = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, rc;

	*mh = NULL;
	if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA) {
		UN_WARN("regMr: type %d; accepted are NCCL_PTR_HOST (1) and NCCL_PTR_CUDA (2)", type);
		return ncclInvalidArgument;
	}
	rc = type == NCCL_PTR_HOST ? uroce_mr_reg(c->dev->pd, data, size, access, &mr)
	                           : uroce_mr_reg_gpu(c->dev->pd, data, size, access, &mr);
	if (rc) {
		UN_WARN("regMr of %zu bytes at %p: %s", size, data, uroce_last_error());
		return ncclSystemError;
	}
	return reg_done(c, mr, type == NCCL_PTR_HOST, mh);
}

ncclResult_t un_regmr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mh)
{
	struct un_comm *c = comm;
	struct uroce_mr *mr;

	*mh = NULL;
	if (fd < 0)
		return un_regmr(comm, data, size, type, mh);
	if (uroce_mr_reg_dmabuf(c->dev->pd, fd, offset, size, (uint64_t)(uintptr_t)data,
	                        UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE, &mr)) {
		UN_WARN("regMrDmaBuf of %zu bytes (fd %d, offset %llu): %s", size, fd, (unsigned long long)offset,
		        uroce_last_error());
		return ncclSystemError;
	}
	return reg_done(c, mr, type == NCCL_PTR_HOST, mh);
}

ncclResult_t un_deregmr(void *comm, void *mh)
{
	struct un_mr *m = mh;

	(void)comm;
	if (!m)
		return ncclSuccess;
	if (uroce_mr_dereg(m->mr)) {
		UN_WARN("deregMr: %s", uroce_last_error());
		return ncclSystemError;
	}
	free(m);
	return ncclSuccess;
}
