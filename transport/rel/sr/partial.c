/* SPDX-License-Identifier: MIT */
/* Partial completion, SDR-RDMA's API on sr and ec QPs: receive handles
 * with a chunk bitmap (post, bitmap get, complete) and the streaming send
 * (start, continue at an offset, end). The engine fills the bitmap
 * (sr_rx.c); application threads read it with atomic loads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rel/rel.h"
#include "transport/rel/sr/rel_sr.h"

#define PRECV_MIN_MTU 256u /* bitmap room is sized before the path MTU is known */

struct uroce_pstream {
	struct uroce_qp *qp;
	uint32_t seq;       /* the message's number */
	uint32_t length;
	uint64_t wr_id;
	bool ending;
};

static bool is_sdr_qp(const struct uroce_qp *qp)
{
	return qp->rel == &rel_sr_ops || qp->rel == &rel_ec_ops;
}

int uroce_precv_post(struct uroce_qp *qp, const struct uroce_sge *sge, uint64_t wr_id, struct uroce_precv **out)
{
	struct uroce_recv_wr wr;
	struct uroce_precv *h;
	uint32_t cp, words;
	int rc;

	if (!qp || !sge || !out)
		return uroce_fail(-EINVAL, "uroce_precv_post: qp, sge and out are required");
	if (!is_sdr_qp(qp))
		return uroce_fail(-EINVAL, "uroce_precv_post: QP 0x%x has reliability %s; receive handles need sr or ec",
		                  qp->qpn, qp->rel->name);
	if (qp->init.srq)
		return uroce_fail(-EINVAL, "uroce_precv_post: QP 0x%x uses an SRQ; receive handles go to the QP's own "
		                           "receive queue", qp->qpn);
	if (qp->state == UROCE_QPS_RESET || qp->state == UROCE_QPS_ERR)
		return uroce_fail(-EINVAL, "uroce_precv_post: QP 0x%x is in %s; accepted INIT, RTR, RTS", qp->qpn,
		                  uroce_qp_state_str(qp->state));
	cp = sr_of(qp)->cfg.chunk_pkts;
	words = (uint32_t)(((uint64_t)sge->length / ((uint64_t)cp * PRECV_MIN_MTU) + 1 + 63) / 64);
	h = calloc(1, sizeof(*h) + (size_t)words * sizeof(uint64_t));
	if (!h)
		return uroce_fail(-ENOMEM, "uroce_precv_post: out of memory");
	h->qp = qp;
	h->chunk_pkts = cp;
	h->nchunks = words * 64; /* until bound: room, not the count */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = (struct uroce_sge *)sge;
	wr.num_sge = 1;
	rc = qp_post_recv_precv(qp, &wr, h);
	if (rc) {
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* Engine: the handle's receive WQE was taken for message m. */
void precv_bind(struct uroce_precv *h, struct uroce_qp *qp, struct sr_rmsg *m)
{
	uint32_t room = h->nchunks;

	h->m = m;
	h->chunk_bytes = h->chunk_pkts * qp->mtu;
	h->nchunks = m->wqe.length ? (m->wqe.length + h->chunk_bytes - 1) / h->chunk_bytes : 1;
	if (h->nchunks > room)
		h->nchunks = room;
	__atomic_store_n(&h->msg_chunks, h->nchunks, __ATOMIC_RELEASE);
}

void precv_note(struct uroce_precv *h, const struct sr_rmsg *m, uint32_t idx)
{
	uint32_t c = idx / h->chunk_pkts, from = c * h->chunk_pkts, to = from + h->chunk_pkts;

	if (m->have_npk) {
		uint32_t n = (m->npk + h->chunk_pkts - 1) / h->chunk_pkts;

		if (to > m->npk)
			to = m->npk;
		if (n != __atomic_load_n(&h->msg_chunks, __ATOMIC_RELAXED) && n <= h->nchunks)
			__atomic_store_n(&h->msg_chunks, n, __ATOMIC_RELEASE);
	}
	if (c >= h->nchunks)
		return;
	/* m->bits holds SR_MAX_MSG_PKTS bits: with chunk_pkts not dividing it
	 * the last chunk would read past them while the length is unknown */
	if (to > SR_MAX_MSG_PKTS)
		to = SR_MAX_MSG_PKTS;
	for (uint32_t i = from; i < to; i++)
		if (!bit_get(m->bits, i))
			return;
	__atomic_fetch_or(&h->bits[c / 64], 1ull << (c % 64), __ATOMIC_RELEASE);
}

unsigned precv_finish(struct uroce_precv *h, bool whole)
{
	h->m = NULL;
	if (h->release) {
		free(h);
	} else {
		__atomic_store_n(&h->done, true, __ATOMIC_RELEASE);
	}
	return whole ? 0 : UROCE_WC_PARTIAL;
}

int uroce_precv_bitmap(struct uroce_precv *h, uint64_t *bits, uint32_t nwords)
{
	uint32_t n;

	if (!h || (nwords && !bits))
		return uroce_fail(-EINVAL, "uroce_precv_bitmap: a handle, and bits for nwords > 0, are required");
	n = __atomic_load_n(&h->msg_chunks, __ATOMIC_ACQUIRE); /* 0 until bound */
	for (uint32_t i = 0; i < nwords; i++)
		bits[i] = i * 64 < n ? __atomic_load_n(&h->bits[i], __ATOMIC_ACQUIRE) : 0;
	return (int)n;
}

static int precv_complete_call(void *arg)
{
	struct uroce_precv *h = arg;
	struct uroce_qp *qp = h->qp;

	if (__atomic_load_n(&h->done, __ATOMIC_ACQUIRE)) {
		free(h);
		return 0;
	}
	/* bind it (and the receives posted before it) to its message, so it
	 * can complete before any packet of it came */
	while (!h->m && qp->state != UROCE_QPS_ERR && sr_rx_bind_next(qp))
		;
	if (!h->m) {
		if (qp->state == UROCE_QPS_ERR) {
			h->release = true; /* its flush completion frees it */
			ctx_kick(qp);
			return 0;
		}
		return uroce_fail(-EBUSY, "uroce_precv_complete: QP 0x%x: %u earlier messages are unfinished; complete "
		                          "them first", qp->qpn, SR_MSG_WIN);
	}
	h->release = true;
	sr_rx_finish(qp, h->m); /* frees h when its completion is queued */
	ctx_kick(qp);
	return 0;
}

int uroce_precv_complete(struct uroce_precv *h)
{
	if (!h)
		return uroce_fail(-EINVAL, "uroce_precv_complete: handle is NULL");
	return ctx_call(h->qp->ctx, precv_complete_call, h);
}

/* --- streaming send --------------------------------------------------------- */

int uroce_pstream_start(struct uroce_qp *qp, uint32_t length, uint64_t wr_id, struct uroce_pstream **out)
{
	struct uroce_pstream *s;

	if (!qp || !out)
		return uroce_fail(-EINVAL, "uroce_pstream_start: qp and out are required");
	if (!is_sdr_qp(qp))
		return uroce_fail(-EINVAL, "uroce_pstream_start: QP 0x%x has reliability %s; streams need sr or ec", qp->qpn,
		                  qp->rel->name);
	if (qp->init.rel.imm_keyed)
		return uroce_fail(-EINVAL, "uroce_pstream_start: QP 0x%x is keyed by immediate (rel.imm_keyed): its "
		                           "messages go whole, each behind its descriptor; post a SEND instead", qp->qpn);
	if (npkts(length, qp->mtu) > SR_MAX_MSG_PKTS)
		return uroce_fail(-EINVAL, "uroce_pstream_start: %u bytes is over %u packets of %u", length, SR_MAX_MSG_PKTS,
		                  qp->mtu);
	s = calloc(1, sizeof(*s));
	if (!s)
		return uroce_fail(-ENOMEM, "uroce_pstream_start: out of memory");
	s->qp = qp;
	s->seq = __atomic_fetch_add(&sr_of(qp)->tx.msg_post, 1, __ATOMIC_RELAXED);
	s->length = length;
	s->wr_id = wr_id;
	*out = s;
	return 0;
}

static int stream_post(struct uroce_pstream *s, struct uroce_send_wr *wr)
{
	struct sr_state *st = sr_of(s->qp);
	int rc;

	st->tx.posting = s; /* sr_post reads it on this thread: the piece's message */
	rc = uroce_post_send(s->qp, wr, NULL);
	st->tx.posting = NULL;
	return rc;
}

int uroce_pstream_continue(struct uroce_pstream *s, uint32_t offset, const struct uroce_sge *sge)
{
	struct uroce_send_wr wr;
	uint32_t mtu;

	if (!s || !sge)
		return uroce_fail(-EINVAL, "uroce_pstream_continue: stream and sge are required");
	mtu = s->qp->mtu;
	if (offset % mtu || offset > s->length || sge->length > s->length - offset ||
	    (sge->length % mtu && offset + sge->length != s->length) || (!sge->length && s->length))
		return uroce_fail(-EINVAL, "uroce_pstream_continue: %u bytes at offset %u of a %u-byte message; accepted: "
		                           "offsets that are multiples of the MTU (%u), pieces a multiple of the MTU long "
		                           "or ending the message, inside it", sge->length, offset, s->length, mtu);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = s->wr_id;
	wr.opcode = UROCE_WR_SEND;
	wr.sg_list = (struct uroce_sge *)sge;
	wr.num_sge = 1;
	wr.imm_data = offset; /* read back by sr_post, not sent */
	return stream_post(s, &wr);
}

int uroce_pstream_end(struct uroce_pstream *s)
{
	struct uroce_send_wr wr;
	int rc;

	if (!s)
		return uroce_fail(-EINVAL, "uroce_pstream_end: stream is NULL");
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = s->wr_id;
	wr.opcode = UROCE_WR_SEND;
	wr.send_flags = UROCE_SEND_SIGNALED;
	s->ending = true;
	rc = stream_post(s, &wr);
	if (!rc)
		free(s);
	else
		s->ending = false;
	return rc;
}

/* sr_post's view of a stream piece (sr_tx.c). */
void pstream_fill(const struct uroce_pstream *s, const struct uroce_send_wr *wr, struct swqe *w)
{
	w->msg_seq = s->seq;
	w->msg_len = s->length;
	w->sr_flags = SRW_F_SLOT;
	if (s->ending) {
		w->sr_flags |= SRW_F_STREAM_END;
		w->msg_off = 0;
		w->length = s->length; /* the completion reports the message */
		w->signaled = 1;
	} else {
		w->msg_off = wr->imm_data;
		w->signaled = 0;
	}
}
