/* SPDX-License-Identifier: MIT */
/* libnccl-net-tcpbase.so: the baseline the NCCL collectives benchmark
 * runs against. An NCCL net plugin (ncclNetPlugin_v12 only) over the
 * kernel's TCP, the way NCCL's own socket transport carries a comm when
 * there is no RDMA NIC (non-RDMA cloud VMs): each message is an 8-byte
 * length then its bytes on one TCP connection per comm, in order,
 * progressed without blocking from isend/irecv/test. One socket per comm
 * (NCCL's socket transport may open several and use helper threads:
 * NCCL_NSOCKS_PERTHREAD, NCCL_SOCKET_NTHREADS).
 *
 * UROCE_TCPBASE_IFACE names the interface whose IPv4 address it listens
 * on. Grouped receives (n > 1) are not supported: the collectives post
 * one buffer per irecv. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../plugins/nccl/nccl_net.h"

#define MAXREQ NCCL_NET_MAX_REQUESTS

struct tb_handle {
	uint32_t magic, ip;
	uint16_t port;
	void *stage; /* connect's socket while it connects */
};

struct tb_req {
	struct tb_comm *c;
	int used, done;
	uint8_t *data;
	uint64_t size; /* send: bytes; recv: capacity, then the bytes received */
	uint64_t hdr;
	size_t off;    /* bytes of header + data moved */
};

struct tb_comm {
	int fd, is_send;
	struct tb_req q[MAXREQ];
	unsigned head, tail; /* FIFO of requests */
};

static pthread_mutex_t tb_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t tb_ip;
static ncclDebugLogger_t tb_log;
static char tb_name[] = "tcpbase";

#define TB_WARN(...)                                                                                                   \
	do {                                                                                                           \
		if (tb_log)                                                                                            \
			tb_log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "NET/tcpbase: " __VA_ARGS__);             \
	} while (0)

static ncclResult_t tb_init(void **ctx, uint64_t id, ncclNetCommConfig_t *cfg, ncclDebugLogger_t log,
                            ncclProfilerCallback_t prof)
{
	const char *ifn = getenv("UROCE_TCPBASE_IFACE");
	struct ifaddrs *ifa, *i;

	(void)id, (void)cfg, (void)prof;
	*ctx = &tb_ip;
	tb_log = log;
	if (!ifn || getifaddrs(&ifa)) {
		TB_WARN("set UROCE_TCPBASE_IFACE to the interface to listen on");
		return ncclInvalidUsage;
	}
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, ifn))
			tb_ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	freeifaddrs(ifa);
	if (!tb_ip) {
		TB_WARN("%s has no IPv4 address", ifn);
		return ncclInvalidUsage;
	}
	return ncclSuccess;
}

static ncclResult_t tb_devices(int *n)
{
	*n = 1;
	return ncclSuccess;
}

static ncclResult_t tb_props(int dev, ncclNetProperties_v12_t *p)
{
	if (dev != 0)
		return ncclInvalidArgument;
	memset(p, 0, sizeof(*p));
	p->name = tb_name;
	p->ptrSupport = NCCL_PTR_HOST;
	p->regIsGlobal = 1;
	p->speed = 10000;
	p->port = 0;
	p->maxComms = 65536;
	p->maxRecvs = 1;
	p->vProps.ndevs = 1;
	p->maxP2pBytes = p->maxCollBytes = MAX_NET_SIZE;
	p->maxMultiRequestSize = 1;
	p->railId = p->planeId = NCCL_NET_ID_UNDEF;
	return ncclSuccess;
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static ncclResult_t tb_listen(void *ctx, int dev, void *handle, void **lc)
{
	struct tb_handle *h = handle;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = tb_ip };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	(void)ctx, (void)dev;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 128) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		TB_WARN("listen: %s", strerror(errno));
		return ncclSystemError;
	}
	memset(h, 0, NCCL_NET_HANDLE_MAXSIZE);
	h->magic = 0x54435042;
	h->ip = tb_ip;
	h->port = sa.sin_port;
	*lc = (void *)(intptr_t)(fd + 1);
	return ncclSuccess;
}

static struct tb_comm *comm_new(int fd, int is_send)
{
	struct tb_comm *c = calloc(1, sizeof(*c));

	if (c) {
		c->fd = fd;
		c->is_send = is_send;
		tune(fd);
	}
	return c;
}

static ncclResult_t tb_connect(void *ctx, int dev, void *handle, void **sc, ncclNetDeviceHandle_t **dc)
{
	struct tb_handle *h = handle;

	(void)ctx, (void)dev;
	if (dc)
		*dc = NULL;
	*sc = NULL;
	if (!h->stage) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = h->port, .sin_addr.s_addr = h->ip };
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0 || (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS)) {
			TB_WARN("connect: %s", strerror(errno));
			return ncclSystemError;
		}
		h->stage = (void *)(intptr_t)(fd + 1);
		return ncclSuccess;
	} else {
		int fd = (int)(intptr_t)h->stage - 1, err = 0;
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		socklen_t el = sizeof(err);

		if (poll(&pf, 1, 0) <= 0)
			return ncclSuccess;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) {
			TB_WARN("connect: %s", strerror(err));
			return ncclSystemError;
		}
		h->stage = NULL;
		*sc = comm_new(fd, 1);
		return *sc ? ncclSuccess : ncclSystemError;
	}
}

static ncclResult_t tb_accept(void *lc, void **rc, ncclNetDeviceHandle_t **dc)
{
	int fd = accept4((int)(intptr_t)lc - 1, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (dc)
		*dc = NULL;
	*rc = NULL;
	if (fd < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ncclSuccess : ncclSystemError;
	*rc = comm_new(fd, 0);
	return *rc ? ncclSuccess : ncclSystemError;
}

static ncclResult_t tb_regmr(void *comm, void *data, size_t size, int type, void **mh)
{
	(void)comm, (void)data, (void)size;
	*mh = (void *)1; /* the kernel copies: nothing to register */
	return type == NCCL_PTR_HOST ? ncclSuccess : ncclInvalidArgument;
}

static ncclResult_t tb_regmr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t off, int fd, void **mh)
{
	(void)off, (void)fd;
	return tb_regmr(comm, data, size, type, mh);
}

static ncclResult_t tb_deregmr(void *comm, void *mh)
{
	(void)comm, (void)mh;
	return ncclSuccess;
}

/* Move the oldest requests' bytes as far as the socket allows. */
static int progress(struct tb_comm *c)
{
	while (c->head != c->tail) {
		struct tb_req *r = &c->q[c->head % MAXREQ];
		size_t total = 8 + (size_t)r->size;

		while (r->off < total) {
			ssize_t n;

			if (r->off < 8)
				n = c->is_send ? send(c->fd, (uint8_t *)&r->hdr + r->off, 8 - r->off, MSG_NOSIGNAL)
				               : recv(c->fd, (uint8_t *)&r->hdr + r->off, 8 - r->off, 0);
			else
				n = c->is_send ? send(c->fd, r->data + r->off - 8, total - r->off, MSG_NOSIGNAL)
				               : recv(c->fd, r->data + r->off - 8, total - r->off, 0);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				return 0;
			if (n <= 0) {
				TB_WARN("%s: %s", c->is_send ? "send" : "recv", n ? strerror(errno) : "peer closed");
				return -1;
			}
			r->off += (size_t)n;
			if (!c->is_send && r->off == 8) {
				if (r->hdr > r->size) {
					TB_WARN("a message of %llu bytes into a receive of %llu", (unsigned long long)r->hdr,
					        (unsigned long long)r->size);
					return -1;
				}
				r->size = r->hdr;
				total = 8 + (size_t)r->size;
			}
		}
		r->done = 1;
		c->head++;
	}
	return 0;
}

static ncclResult_t enqueue(struct tb_comm *c, void *data, uint64_t size, void **req)
{
	struct tb_req *r;

	*req = NULL;
	if (c->tail - c->head >= MAXREQ)
		return ncclSuccess;
	r = &c->q[c->tail++ % MAXREQ];
	memset(r, 0, sizeof(*r));
	r->c = c;
	r->used = 1;
	r->data = data;
	r->size = size;
	r->hdr = size;
	*req = r;
	return progress(c) ? ncclSystemError : ncclSuccess;
}

static ncclResult_t tb_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **req)
{
	ncclResult_t r;

	(void)tag, (void)mh, (void)ph;
	pthread_mutex_lock(&tb_lock);
	r = enqueue(sc, data, size, req);
	pthread_mutex_unlock(&tb_lock);
	return r;
}

static ncclResult_t tb_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **phs,
                             void **req)
{
	ncclResult_t r;

	(void)tags, (void)mhs, (void)phs;
	if (n != 1) {
		TB_WARN("grouped receives (n = %d) are not supported", n);
		return ncclInvalidUsage;
	}
	pthread_mutex_lock(&tb_lock);
	r = enqueue(rc, data[0], sizes[0], req);
	pthread_mutex_unlock(&tb_lock);
	return r;
}

static ncclResult_t tb_iflush(void *rc, int n, void **data, int *sizes, void **mhs, void **req)
{
	(void)rc, (void)n, (void)data, (void)sizes, (void)mhs;
	*req = NULL;
	return ncclSuccess;
}

static ncclResult_t tb_test(void *req, int *done, int *sizes)
{
	struct tb_req *r = req;
	int bad;

	pthread_mutex_lock(&tb_lock);
	bad = progress(r->c);
	*done = r->done;
	if (r->done) {
		if (sizes)
			sizes[0] = (int)r->size;
		r->used = 0;
	}
	pthread_mutex_unlock(&tb_lock);
	return bad ? ncclSystemError : ncclSuccess;
}

static ncclResult_t tb_close(void *comm)
{
	struct tb_comm *c = comm;

	if (c) {
		close(c->fd);
		free(c);
	}
	return ncclSuccess;
}

static ncclResult_t tb_close_listen(void *lc)
{
	close((int)(intptr_t)lc - 1);
	return ncclSuccess;
}

static ncclResult_t tb_get_device_mr(void *comm, void *mh, void **d)
{
	(void)comm, (void)mh;
	*d = NULL;
	return ncclSuccess;
}

static ncclResult_t tb_consumed(void *rc, int n, void *req)
{
	(void)rc, (void)n, (void)req;
	return ncclSuccess;
}

static ncclResult_t tb_vdev(int *d, ncclNetVDeviceProps_v12_t *p)
{
	(void)d, (void)p;
	return ncclInvalidUsage;
}

static ncclResult_t tb_finalize(void *ctx)
{
	(void)ctx;
	return ncclSuccess;
}

static ncclResult_t tb_set_attr(void *ctx, ncclNetAttr_t *a)
{
	(void)ctx, (void)a;
	return ncclSuccess;
}

__attribute__((visibility("default"))) const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = "tcpbase", .init = tb_init, .devices = tb_devices, .getProperties = tb_props, .listen = tb_listen,
	.connect = tb_connect, .accept = tb_accept, .regMr = tb_regmr, .regMrDmaBuf = tb_regmr_dmabuf,
	.deregMr = tb_deregmr, .isend = tb_isend, .irecv = tb_irecv, .iflush = tb_iflush, .test = tb_test,
	.closeSend = tb_close, .closeRecv = tb_close, .closeListen = tb_close_listen, .getDeviceMr = tb_get_device_mr,
	.irecvConsumed = tb_consumed, .makeVDevice = tb_vdev, .finalize = tb_finalize, .setNetAttr = tb_set_attr,
};
