/* SPDX-License-Identifier: MIT */
/* The tables NCCL reads: ncclNetPlugin_v12 .. _v8, one implementation
 * (net_uroce.h) under each version's signatures. Every entry point takes
 * the plugin's lock: NCCL calls from its proxy thread and, for connect
 * and accept, from others. */
#include <string.h>

#include "net_uroce.h"

#define LOCKED(expr)                                                                                                   \
	do {                                                                                                           \
		ncclResult_t r_;                                                                                       \
		pthread_mutex_lock(&un_g.lock);                                                                        \
		r_ = (expr);                                                                                           \
		pthread_mutex_unlock(&un_g.lock);                                                                      \
		return r_;                                                                                             \
	} while (0)

#define EXPORT __attribute__((visibility("default")))

static ncclResult_t p_init8(ncclDebugLogger_t log) { LOCKED(un_init(log)); }
static ncclResult_t p_init10(ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
	(void)prof;
	LOCKED(un_init(log));
}
static ncclResult_t p_init11(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *cfg, ncclDebugLogger_t log,
                             ncclProfilerCallback_t prof)
{
	(void)comm_id, (void)cfg, (void)prof;
	*ctx = &un_g; /* one state for every communicator */
	LOCKED(un_init(log));
}
static ncclResult_t p_finalize(void *ctx)
{
	(void)ctx;
	LOCKED(un_finalize());
}
static ncclResult_t p_devices(int *ndev) { LOCKED(un_devices(ndev)); }

#define FILL_COMMON(props, u)                                                                                          \
	do {                                                                                                           \
		(props)->name = (u).name;                                                                              \
		(props)->pciPath = (u).pci_path;                                                                       \
		(props)->guid = (u).guid;                                                                              \
		(props)->ptrSupport = (u).ptr_support;                                                                 \
		(props)->regIsGlobal = 1;                                                                              \
		(props)->speed = (u).speed;                                                                            \
		(props)->port = (u).port;                                                                              \
		(props)->latency = (u).latency;                                                                        \
		(props)->maxComms = (u).max_comms;                                                                     \
		(props)->maxRecvs = (u).max_recvs;                                                                     \
		(props)->netDeviceType = NCCL_NET_DEVICE_HOST;                                                         \
		(props)->netDeviceVersion = 0;                                                                         \
	} while (0)
#define FILL_V9(props, dev)                                                                                            \
	do {                                                                                                           \
		(props)->forceFlush = 0;                                                                               \
		(props)->vProps.ndevs = 1;                                                                             \
		(props)->vProps.devs[0] = (dev);                                                                       \
		(props)->maxP2pBytes = MAX_NET_SIZE;                                                                   \
		(props)->maxCollBytes = MAX_NET_SIZE;                                                                  \
	} while (0)

static ncclResult_t get_props(int dev, struct un_props *u)
{
	LOCKED(un_props(dev, u));
}

/* getProperties of one version: the common fields, then EXTRA on p. */
#define PROPS_FN(fn, type, extra)                                                                                      \
	static ncclResult_t fn(int dev, type *p)                                                                       \
	{                                                                                                              \
		struct un_props u;                                                                                     \
		ncclResult_t r = get_props(dev, &u);                                                                   \
                                                                                                                       \
		if (r != ncclSuccess)                                                                                  \
			return r;                                                                                      \
		memset(p, 0, sizeof(*p));                                                                              \
		FILL_COMMON(p, u);                                                                                     \
		extra;                                                                                                 \
		return ncclSuccess;                                                                                    \
	}

PROPS_FN(p_props8, ncclNetProperties_v8_t, (void)0)
PROPS_FN(p_props9, ncclNetProperties_v9_t, FILL_V9(p, dev))
PROPS_FN(p_props11, ncclNetProperties_v11_t, FILL_V9(p, dev); p->maxMultiRequestSize = 1)
PROPS_FN(p_props12, ncclNetProperties_v12_t, FILL_V9(p, dev); p->maxMultiRequestSize = 1;
         p->railId = NCCL_NET_ID_UNDEF; p->planeId = NCCL_NET_ID_UNDEF)

static ncclResult_t p_listen(int dev, void *handle, void **lc) { LOCKED(un_listen(dev, handle, lc)); }
static ncclResult_t p_listen11(void *ctx, int dev, void *handle, void **lc)
{
	(void)ctx;
	LOCKED(un_listen(dev, handle, lc));
}
static ncclResult_t p_connect8(int dev, void *handle, void **sc, ncclNetDeviceHandle_t **dc)
{
	if (dc)
		*dc = NULL; /* no device offload: the proxy thread drives every transfer */
	LOCKED(un_connect(dev, handle, sc));
}
static ncclResult_t p_connect10(int dev, ncclNetCommConfig_t *cfg, void *handle, void **sc,
                                ncclNetDeviceHandle_t **dc)
{
	(void)cfg;
	return p_connect8(dev, handle, sc, dc);
}
static ncclResult_t p_connect11(void *ctx, int dev, void *handle, void **sc, ncclNetDeviceHandle_t **dc)
{
	(void)ctx;
	return p_connect8(dev, handle, sc, dc);
}
static ncclResult_t p_accept(void *lc, void **rc, ncclNetDeviceHandle_t **dc)
{
	if (dc)
		*dc = NULL;
	LOCKED(un_accept(lc, rc));
}
static ncclResult_t p_regmr(void *comm, void *data, size_t size, int type, void **mh)
{
	LOCKED(un_regmr(comm, data, size, type, mh));
}
static ncclResult_t p_regmr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mh)
{
	LOCKED(un_regmr_dmabuf(comm, data, size, type, offset, fd, mh));
}
static ncclResult_t p_deregmr(void *comm, void *mh) { LOCKED(un_deregmr(comm, mh)); }
static ncclResult_t p_isend8(void *sc, void *data, int size, int tag, void *mh, void **req)
{
	if (size < 0)
		return ncclInvalidArgument;
	LOCKED(un_isend(sc, data, (size_t)size, tag, mh, req));
}
static ncclResult_t p_isend9(void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	LOCKED(un_isend(sc, data, size, tag, mh, req));
}
static ncclResult_t p_isend10(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **req)
{
	(void)ph;
	return p_isend9(sc, data, size, tag, mh, req);
}
static ncclResult_t p_irecv8(void *rc, int n, void **data, int *sizes, int *tags, void **mhs, void **req)
{
	size_t sz[UN_MAX_RECVS];

	if (n < 1 || n > UN_MAX_RECVS)
		return ncclInvalidArgument;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ncclInvalidArgument;
		sz[i] = (size_t)sizes[i];
	}
	LOCKED(un_irecv(rc, n, data, sz, tags, mhs, req));
}
static ncclResult_t p_irecv9(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **req)
{
	LOCKED(un_irecv(rc, n, data, sizes, tags, mhs, req));
}
static ncclResult_t p_irecv10(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **phs,
                              void **req)
{
	(void)phs;
	return p_irecv9(rc, n, data, sizes, tags, mhs, req);
}
static ncclResult_t p_iflush(void *rc, int n, void **data, int *sizes, void **mhs, void **req)
{
	LOCKED(un_iflush(rc, n, data, sizes, mhs, req));
}
static ncclResult_t p_test(void *req, int *done, int *sizes) { LOCKED(un_test(req, done, sizes)); }
static ncclResult_t p_close_comm(void *c) { LOCKED(un_close_comm(c)); }
static ncclResult_t p_close_listen(void *lc) { LOCKED(un_close_listen(lc)); }
static ncclResult_t p_get_device_mr(void *comm, void *mh, void **dptr)
{
	(void)comm, (void)mh;
	*dptr = NULL; /* no device offload */
	return ncclSuccess;
}
static ncclResult_t p_irecv_consumed(void *rc, int n, void *req) { LOCKED(un_irecv_consumed(rc, n, req)); }
static ncclResult_t p_make_vdevice9(int *d, ncclNetVDeviceProps_v9_t *props)
{
	(void)d, (void)props;
	UN_WARN("makeVDevice: virtual NICs are not supported; use UROCE_NCCL_PATHS to spray over paths");
	return ncclInvalidUsage;
}
static ncclResult_t p_make_vdevice12(int *d, ncclNetVDeviceProps_v12_t *props)
{
	(void)d, (void)props;
	UN_WARN("makeVDevice: virtual NICs are not supported; use UROCE_NCCL_PATHS to spray over paths");
	return ncclInvalidUsage;
}
static ncclResult_t p_set_net_attr(void *ctx, ncclNetAttr_t *attr)
{
	(void)ctx, (void)attr;
	return ncclSuccess; /* hints only */
}

uint64_t uroceNcclLostBytes(void *recvComm);
EXPORT uint64_t uroceNcclLostBytes(void *recvComm)
{
	struct un_comm *c = recvComm;
	uint64_t v;

	pthread_mutex_lock(&un_g.lock);
	v = c && !c->is_send ? c->lost_bytes : 0;
	pthread_mutex_unlock(&un_g.lock);
	return v;
}

#define COMMON_TAIL                                                                                                    \
	.accept = p_accept, .regMr = p_regmr, .regMrDmaBuf = p_regmr_dmabuf, .deregMr = p_deregmr,                     \
	.iflush = p_iflush, .test = p_test, .closeSend = p_close_comm, .closeRecv = p_close_comm,                      \
	.closeListen = p_close_listen, .getDeviceMr = p_get_device_mr, .irecvConsumed = p_irecv_consumed

EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = "uroce", .init = p_init11, .devices = p_devices, .getProperties = p_props12, .listen = p_listen11,
	.connect = p_connect11, .isend = p_isend10, .irecv = p_irecv10, .makeVDevice = p_make_vdevice12,
	.finalize = p_finalize, .setNetAttr = p_set_net_attr, COMMON_TAIL,
};
EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
	.name = "uroce", .init = p_init11, .devices = p_devices, .getProperties = p_props11, .listen = p_listen11,
	.connect = p_connect11, .isend = p_isend10, .irecv = p_irecv10, .makeVDevice = p_make_vdevice9,
	.finalize = p_finalize, .setNetAttr = p_set_net_attr, COMMON_TAIL,
};
EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = "uroce", .init = p_init10, .devices = p_devices, .getProperties = p_props9, .listen = p_listen,
	.connect = p_connect10, .isend = p_isend10, .irecv = p_irecv10, .makeVDevice = p_make_vdevice9, COMMON_TAIL,
};
EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = "uroce", .init = p_init8, .devices = p_devices, .getProperties = p_props9, .listen = p_listen,
	.connect = p_connect8, .isend = p_isend9, .irecv = p_irecv9, .makeVDevice = p_make_vdevice9, COMMON_TAIL,
};
EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = "uroce", .init = p_init8, .devices = p_devices, .getProperties = p_props8, .listen = p_listen,
	.connect = p_connect8, .isend = p_isend8, .irecv = p_irecv8, COMMON_TAIL,
};
