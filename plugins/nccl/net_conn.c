/* SPDX-License-Identifier: MIT */
/* listen, connect and accept without blocking, as NCCL requires: the
 * listener's TCP socket is named in the handle; connector and acceptor
 * trade their QP numbers (struct un_wire) over it, take both QPs to RTS,
 * and the connector says 'R' once its QPs can receive, so the acceptor's
 * first CTS is not sent into a QP still in INIT. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_uroce.h"

struct un_listen {
	struct un_dev *dev;
	int fd;
	uint32_t nonce;
	struct un_comm *pending; /* an accept in progress */
};

static uint32_t rand32(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)rand();
	return v;
}

ncclResult_t un_listen(int dev, void *handle, void **lcomm)
{
	struct un_handle hb, *h = &hb;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct un_listen *l;
	struct un_dev *d;

	*lcomm = NULL;
	if (un_g.inits <= 0 || dev < 0 || dev >= un_g.ndev) {
		UN_WARN("listen: device %d does not exist (0..%d)", dev, un_g.ndev - 1);
		return ncclInvalidArgument;
	}
	d = &un_g.dev[dev];
	l = calloc(1, sizeof(*l));
	if (!l)
		return ncclSystemError;
	l->dev = d;
	l->nonce = rand32();
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = d->ipv4_be;
	if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(l->fd, 128) ||
	    getsockname(l->fd, (struct sockaddr *)&sa, &sl)) {
		UN_WARN("listen on %s: %s", d->name, strerror(errno));
		if (l->fd >= 0)
			close(l->fd);
		free(l);
		return ncclSystemError;
	}
	memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
	memset(h, 0, sizeof(*h));
	h->magic = UN_HANDLE_MAGIC;
	h->proto = UN_PROTO;
	h->rel = (uint8_t)un_g.cfg.rel.reliability;
	h->tcp_port = sa.sin_port;
	h->ipv4_be = d->ipv4_be;
	h->nonce = l->nonce;
	memcpy(h->gid, d->gid, 16);
	h->stage = NULL;
	memcpy(handle, h, sizeof(*h));
	*lcomm = l;
	return ncclSuccess;
}

/* A comm's CQ, registered ctl buffers and QPs, in INIT, with the ctl
 * receives posted; fills c->me. */
static int comm_make(struct un_comm *c)
{
	struct un_dev *d = c->dev;
	struct uroce_qp_init_attr ia = { 0 };
	struct uroce_qp_attr a = { 0 };
	int mask = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT | UROCE_QP_ACCESS_FLAGS;
	size_t bytes = 2u * UN_CTL_BUFS * UN_CTL_MSG;

	if (d->comms >= UN_MAX_COMMS) {
		UN_WARN("%s has %u comms open, the most it reports (maxComms)", d->name, d->comms);
		return -1;
	}
	if (uroce_cq_create(d->ctx, 4 * UN_DATA_WRS, &c->cq))
		return -1;
	d->comms++;
	c->counted = 1;
	c->ctlbuf = aligned_alloc(4096, bytes);
	if (!c->ctlbuf || uroce_mr_reg(d->pd, c->ctlbuf, bytes, UROCE_ACCESS_LOCAL_WRITE, &c->ctlmr))
		return -1;
	ia.qp_type = UROCE_QPT_RC;
	ia.send_cq = ia.recv_cq = c->cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = UN_CTL_BUFS;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	/* ctl is reliable and in order: rc beside an rc data QP; beside sr,
	 * ec or be it is sr, whose loss recovery takes an RTO of hundreds of
	 * microseconds, not rc's ACK timeout, so a lost CTS or SIZE note does
	 * not undo what the data QP's mode bounds */
	if (un_g.cfg.rel.reliability != UROCE_REL_RC)
		ia.rel.reliability = UROCE_REL_SR;
	if (uroce_qp_create(d->pd, &ia, &c->ctl))
		return -1;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = UN_DATA_WRS;
	ia.rel = un_g.cfg.rel;
	if (ia.rel.reliability != UROCE_REL_RC) {
		ia.path = un_g.cfg.path;
		ia.cc = un_g.cfg.cc;
	}
	if (uroce_qp_create(d->pd, &ia, &c->data))
		return -1;
	a.qp_state = UROCE_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = UROCE_ACCESS_LOCAL_WRITE | UROCE_ACCESS_REMOTE_WRITE;
	if (uroce_qp_modify(c->ctl, &a, mask) || uroce_qp_modify(c->data, &a, mask))
		return -1;
	if (un_ctl_post_all(c))
		return -1;
	memset(&c->me, 0, sizeof(c->me));
	c->me.magic = UN_HANDLE_MAGIC;
	c->me.nonce = c->nonce;
	c->me.proto = UN_PROTO;
	c->me.rel = (uint8_t)un_g.cfg.rel.reliability;
	c->me.hd_block = un_g.cfg.hd_block;
	c->me.hd_stride = un_g.cfg.hd_stride;
	c->me.mtu = (uint8_t)d->mtu;
	c->me.is_send = (uint8_t)c->is_send;
	memcpy(c->me.gid, d->gid, 16);
	c->me.ctl_qpn = uroce_qp_num(c->ctl);
	c->me.ctl_psn = rand32() & 0xffffff;
	if (ia.rel.reliability != UROCE_REL_RC) {
		c->me.ctl_token = uroce_qp_token(c->ctl);
		c->me.ctl_ctrl_qpn = uroce_qp_ctrl_num(c->ctl);
	}
	c->me.data_qpn = uroce_qp_num(c->data);
	c->me.data_psn = rand32() & 0xffffff;
	if (ia.rel.reliability != UROCE_REL_RC) {
		c->me.data_token = uroce_qp_token(c->data);
		c->me.data_ctrl_qpn = uroce_qp_ctrl_num(c->data);
	}
	c->me.ec_k = ia.rel.ec_k;
	c->me.ec_m = ia.rel.ec_m;
	c->me.ec_code = ia.rel.ec_code;
	return 0;
}

static int qp_rts(struct un_comm *c, struct uroce_qp *qp, uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn,
                  int mtu, int rel_qp, uint32_t token, uint32_t ctrl_qpn)
{
	struct uroce_qp_attr a = { 0 };
	int mask = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
	           UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;

	a.qp_state = UROCE_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	memcpy(a.ah_attr.dgid, c->peer.gid, 16);
	a.ah_attr.sgid_index = (uint8_t)c->dev->gid_index;
	if (rel_qp) {
		a.dest_token = token;
		a.dest_ctrl_qpn = ctrl_qpn;
		mask |= UROCE_QP_DEST_TOKEN | UROCE_QP_DEST_CTRL_QPN;
	}
	if (uroce_qp_modify(qp, &a, mask))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = UROCE_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = un_g.cfg.rc_timeout; /* UROCE_NCCL_RC_TIMEOUT */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return uroce_qp_modify(qp, &a, UROCE_QP_STATE | UROCE_QP_SQ_PSN | UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT |
	                                       UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC);
}

/* Both QPs to RTS with the peer's numbers, once they are known. */
static int comm_connect_qps(struct un_comm *c)
{
	struct un_wire *p = &c->peer;
	int mtu = p->mtu < c->me.mtu ? p->mtu : c->me.mtu;
	int rel = un_g.cfg.rel.reliability != UROCE_REL_RC;

	if (p->magic != UN_HANDLE_MAGIC || p->proto != UN_PROTO || p->nonce != c->nonce || p->is_send == c->is_send) {
		UN_WARN("connect: the peer's exchange is not a uroce plugin's of this connection (magic %#x, proto %u)",
		        p->magic, p->proto);
		return -1;
	}
	if (p->rel != c->me.rel || p->ec_k != c->me.ec_k || p->ec_m != c->me.ec_m || p->ec_code != c->me.ec_code) {
		UN_WARN("connect: this end runs reliability %s, the peer %s: set UROCE_NCCL_RELIABILITY the same on "
		        "every rank",
		        uroce_reliability_str(c->me.rel), uroce_reliability_str(p->rel) ? uroce_reliability_str(p->rel) : "?");
		return -1;
	}
	if (p->hd_block != c->me.hd_block || p->hd_stride != c->me.hd_stride) {
		UN_WARN("connect: this end codes with UROCE_NCCL_HADAMARD %u:%u, the peer %u:%u (0: off): set it the "
		        "same on every rank", c->me.hd_block, c->me.hd_stride, p->hd_block, p->hd_stride);
		return -1;
	}
	if (mtu < UROCE_MTU_256 || mtu > UROCE_MTU_4096)
		return -1;
	if (qp_rts(c, c->ctl, p->ctl_qpn, p->ctl_psn, c->me.ctl_psn, mtu, rel, p->ctl_token, p->ctl_ctrl_qpn) ||
	    qp_rts(c, c->data, p->data_qpn, p->data_psn, c->me.data_psn, mtu, rel, p->data_token, p->data_ctrl_qpn)) {
		UN_WARN("connect: %s", uroce_last_error());
		return -1;
	}
	/* sr, ec and be carry at most 2^17 packets a message; both ends
	 * compute the same chunk from the agreed MTU */
	c->chunk = rel ? (uint64_t)65536 << (7 + mtu) : (uint64_t)MAX_NET_SIZE;
	if (c->chunk > (uint64_t)MAX_NET_SIZE)
		c->chunk = MAX_NET_SIZE;
	return 0;
}

/* Move a buffer over the non-blocking socket: 1 when all of it went, 0
 * to call again, -1 on an error. */
static int sock_io(struct un_comm *c, void *buf, size_t len, int writing)
{
	while (c->io_done < len) {
		ssize_t r = writing ? send(c->fd, (char *)buf + c->io_done, len - c->io_done, MSG_NOSIGNAL)
		                    : recv(c->fd, (char *)buf + c->io_done, len - c->io_done, 0);

		if (r > 0) {
			c->io_done += (size_t)r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		UN_WARN("connect: the peer's TCP connection %s", r == 0 ? "closed" : strerror(errno));
		return -1;
	}
	c->io_done = 0;
	return 1;
}

static struct un_comm *comm_new(struct un_dev *d, int is_send, uint32_t nonce)
{
	struct un_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->dev = d;
	c->is_send = is_send;
	c->nonce = nonce;
	c->fd = -1;
	return c;
}

enum { ST_TCP, ST_SEND_ME, ST_READ_PEER, ST_READY, ST_DONE };

/* The connect proper, on an aligned copy of the handle (NCCL's buffer
 * need not be aligned); un_connect writes `stage` back. */
static ncclResult_t connect_step(int dev, struct un_handle *h, void **scomm)
{
	struct un_comm *c = h->stage;
	int r;

	*scomm = NULL;
	if (un_g.inits <= 0 || dev < 0 || dev >= un_g.ndev) {
		UN_WARN("connect: device %d does not exist (0..%d)", dev, un_g.ndev - 1);
		return ncclInvalidArgument;
	}
	if (!c) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = h->tcp_port, .sin_addr.s_addr = h->ipv4_be };
		int one = 1;

		if (h->magic != UN_HANDLE_MAGIC || h->proto != UN_PROTO) {
			UN_WARN("connect: the handle is not a uroce plugin's (magic %#x, protocol %u; want %#x, %u)",
			        h->magic, h->proto, UN_HANDLE_MAGIC, UN_PROTO);
			return ncclInvalidArgument;
		}
		if (h->rel != (uint8_t)un_g.cfg.rel.reliability) {
			UN_WARN("connect: this rank runs reliability %s, the listener %s: set UROCE_NCCL_RELIABILITY the "
			        "same on every rank",
			        uroce_reliability_str(un_g.cfg.rel.reliability),
			        uroce_reliability_str(h->rel) ? uroce_reliability_str(h->rel) : "?");
			return ncclInvalidUsage;
		}
		c = comm_new(&un_g.dev[dev], 1, h->nonce);
		if (!c)
			return ncclSystemError;
		c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd < 0 || (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS)) {
			UN_WARN("connect: TCP to the listener: %s", strerror(errno));
			goto fail;
		}
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (comm_make(c)) {
			UN_WARN("connect: %s", uroce_last_error());
			goto fail;
		}
		c->stage = ST_TCP;
		h->stage = c;
		return ncclSuccess;
	}
	un_poll(c);
	if (c->stage == ST_TCP) {
		struct pollfd pf = { .fd = c->fd, .events = POLLOUT };
		int err = 0;
		socklen_t el = sizeof(err);

		if (poll(&pf, 1, 0) <= 0)
			return ncclSuccess;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
			UN_WARN("connect: TCP to the listener: %s", strerror(err ? err : errno));
			goto fail;
		}
		c->stage = ST_SEND_ME;
	}
	if (c->stage == ST_SEND_ME) {
		if ((r = sock_io(c, &c->me, sizeof(c->me), 1)) <= 0)
			goto again;
		c->stage = ST_READ_PEER;
	}
	if (c->stage == ST_READ_PEER) {
		if ((r = sock_io(c, &c->peer, sizeof(c->peer), 0)) <= 0)
			goto again;
		if (comm_connect_qps(c))
			goto fail;
		c->stage = ST_READY;
	}
	if (c->stage == ST_READY) {
		char rdy = 'R';

		if ((r = sock_io(c, &rdy, 1, 1)) <= 0)
			goto again;
	}
	close(c->fd);
	c->fd = -1;
	c->stage = ST_DONE;
	h->stage = NULL;
	*scomm = c;
	return ncclSuccess;
again:
	if (r == 0)
		return ncclSuccess;
fail:
	h->stage = NULL;
	un_comm_free(c);
	return ncclSystemError;
}

ncclResult_t un_connect(int dev, void *handle, void **scomm)
{
	struct un_handle h;
	ncclResult_t r;

	memcpy(&h, handle, sizeof(h));
	r = connect_step(dev, &h, scomm);
	memcpy(handle, &h, sizeof(h));
	return r;
}

ncclResult_t un_accept(void *lcomm, void **rcomm)
{
	struct un_listen *l = lcomm;
	struct un_comm *c = l->pending;
	int r;

	*rcomm = NULL;
	if (!c) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;

		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return ncclSuccess;
			UN_WARN("accept: %s", strerror(errno));
			return ncclSystemError;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = comm_new(l->dev, 0, l->nonce);
		if (!c) {
			close(fd);
			return ncclSystemError;
		}
		c->fd = fd;
		if (comm_make(c)) {
			UN_WARN("accept: %s", uroce_last_error());
			goto fail;
		}
		c->stage = ST_READ_PEER;
		l->pending = c;
	}
	un_poll(c);
	if (c->stage == ST_READ_PEER) {
		if ((r = sock_io(c, &c->peer, sizeof(c->peer), 0)) <= 0)
			goto again;
		if (comm_connect_qps(c))
			goto fail;
		c->stage = ST_SEND_ME;
	}
	if (c->stage == ST_SEND_ME) {
		if ((r = sock_io(c, &c->me, sizeof(c->me), 1)) <= 0)
			goto again;
		c->stage = ST_READY;
	}
	if (c->stage == ST_READY) {
		char rdy = 0;

		if ((r = sock_io(c, &rdy, 1, 0)) <= 0)
			goto again;
		if (rdy != 'R') {
			UN_WARN("accept: the connector's ready byte is %#x", (unsigned)(uint8_t)rdy);
			goto fail;
		}
	}
	close(c->fd);
	c->fd = -1;
	c->stage = ST_DONE;
	l->pending = NULL;
	*rcomm = c;
	return ncclSuccess;
again:
	if (r == 0)
		return ncclSuccess;
fail:
	l->pending = NULL;
	un_comm_free(c);
	return ncclSystemError;
}

void un_comm_free(struct un_comm *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	if (c->data && uroce_qp_destroy(c->data))
		UN_WARN("close: %s", uroce_last_error());
	if (c->ctl && uroce_qp_destroy(c->ctl))
		UN_WARN("close: %s", uroce_last_error());
	if (c->ctlmr)
		uroce_mr_dereg(c->ctlmr);
	if (c->cq)
		uroce_cq_destroy(c->cq);
	if (c->counted)
		c->dev->comms--;
	for (int i = 0; i < UN_MAX_REQS; i++) {
		if (c->hd_mr[i])
			uroce_mr_dereg(c->hd_mr[i]);
		free(c->hd_buf[i]);
	}
	free(c->ctlbuf);
	free(c);
}

ncclResult_t un_close_comm(void *comm)
{
	un_comm_free(comm);
	return ncclSuccess;
}

ncclResult_t un_close_listen(void *lcomm)
{
	struct un_listen *l = lcomm;

	if (!l)
		return ncclSuccess;
	un_comm_free(l->pending);
	close(l->fd);
	free(l);
	return ncclSuccess;
}
