/* SPDX-License-Identifier: MIT */
/* Opening a net plugin by NCCL's rules and calling its tables (nccl_load.h). */
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_load.h"

static void netp_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	if (level > NCCL_LOG_WARN && !getenv("NETP_DEBUG"))
		return;
	fprintf(stderr, "NCCL %s %s:%d ", level == NCCL_LOG_WARN ? "WARN" : "INFO", file ? file : "-", line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *try_open(const char *name, char *err, size_t errlen)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		snprintf(err, errlen, "%s", dlerror());
	return h;
}

int netp_open(struct netp *p, const char *name, int version, char *err, size_t errlen)
{
	char lib[256];
	size_t nl;

	memset(p, 0, sizeof(*p));
	if (!name || !*name) {
		snprintf(lib, sizeof(lib), "libnccl-net.so");
		p->lib = try_open(lib, err, errlen);
	} else {
		snprintf(lib, sizeof(lib), "%s", name);
		p->lib = try_open(lib, err, errlen);
		nl = strlen(name);
		/* NCCL: a bare name (no '/', not lib*.so) also as libnccl-net-NAME.so */
		if (!p->lib && !strchr(name, '/') &&
		    (strncmp(name, "lib", 3) || nl < 3 || strcmp(name + nl - 3, ".so"))) {
			snprintf(lib, sizeof(lib), "libnccl-net-%s.so", name);
			p->lib = try_open(lib, err, errlen);
		}
	}
	if (!p->lib)
		return -1;
	snprintf(p->path, sizeof(p->path), "%s", lib);
	for (int v = version ? version : 12; v >= (version ? version : 8); v--) {
		char sym[32];

		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		p->table = dlsym(p->lib, sym);
		if (p->table) {
			p->version = v;
			break;
		}
	}
	if (!p->table) {
		snprintf(err, errlen, "%s exports no ncclNetPlugin_v%d%s", lib, version ? version : 12,
		         version ? "" : " .. v8");
		dlclose(p->lib);
		p->lib = NULL;
		return -1;
	}
	p->lost_bytes = (uroceNcclLostBytes_t)(uintptr_t)dlsym(p->lib, UROCE_NCCL_LOST_BYTES_SYMBOL);
	return 0;
}

void netp_close(struct netp *p)
{
	/* Not dlclose()d: a sanitizer's leak report could not name the
	 * plugin's frames once it is unmapped. */
	p->lib = NULL;
}

#define V8(p) ((ncclNet_v8_t *)(p)->table)
#define V9(p) ((ncclNet_v9_t *)(p)->table)
#define V10(p) ((ncclNet_v10_t *)(p)->table)
#define V11(p) ((ncclNet_v11_t *)(p)->table)
#define V12(p) ((ncclNet_v12_t *)(p)->table)
/* A call whose signature is the same in every version. */
#define SAME(p, fn, ...)                                                                                               \
	((p)->version == 8    ? V8(p)->fn(__VA_ARGS__)                                                              \
	 : (p)->version == 9  ? V9(p)->fn(__VA_ARGS__)                                                              \
	 : (p)->version == 10 ? V10(p)->fn(__VA_ARGS__)                                                             \
	 : (p)->version == 11 ? V11(p)->fn(__VA_ARGS__)                                                             \
	                      : V12(p)->fn(__VA_ARGS__))

ncclResult_t netp_init(struct netp *p, uint64_t comm_id)
{
	ncclNetCommConfig_t cfg = { .trafficClass = -1 };

	switch (p->version) {
	case 8: return V8(p)->init(netp_log);
	case 9: return V9(p)->init(netp_log);
	case 10: return V10(p)->init(netp_log, NULL);
	case 11: return V11(p)->init(&p->ctx, comm_id, &cfg, netp_log, NULL);
	default: return V12(p)->init(&p->ctx, comm_id, &cfg, netp_log, NULL);
	}
}

ncclResult_t netp_devices(struct netp *p, int *ndev)
{
	return SAME(p, devices, ndev);
}

#define PROPS_COMMON(out, pr)                                                                                          \
	do {                                                                                                           \
		snprintf((out)->name, sizeof((out)->name), "%s", (pr).name ? (pr).name : "");                         \
		(out)->guid = (pr).guid;                                                                               \
		(out)->ptr_support = (pr).ptrSupport;                                                                  \
		(out)->reg_is_global = (pr).regIsGlobal;                                                               \
		(out)->speed = (pr).speed;                                                                             \
		(out)->port = (pr).port;                                                                               \
		(out)->latency = (pr).latency;                                                                         \
		(out)->max_comms = (pr).maxComms;                                                                      \
		(out)->max_recvs = (pr).maxRecvs;                                                                      \
	} while (0)
/* The fields v9 added, in v9 .. v12. */
#define PROPS_V9(out, pr)                                                                                              \
	do {                                                                                                           \
		(out)->force_flush = (pr).forceFlush;                                                                  \
		(out)->max_p2p_bytes = (pr).maxP2pBytes;                                                               \
		(out)->max_coll_bytes = (pr).maxCollBytes;                                                             \
	} while (0)

ncclResult_t netp_props(struct netp *p, int dev, struct netp_props *out)
{
	ncclResult_t r;

	memset(out, 0, sizeof(*out));
	out->rail_id = out->plane_id = NCCL_NET_ID_UNDEF;
	if (p->version == 8) {
		ncclNetProperties_v8_t pr;

		memset(&pr, 0, sizeof(pr));
		if ((r = V8(p)->getProperties(dev, &pr)) != ncclSuccess)
			return r;
		PROPS_COMMON(out, pr);
		out->max_p2p_bytes = out->max_coll_bytes = MAX_NET_SIZE; /* v8 has no field: NCCL assumes this */
	} else if (p->version <= 10) {
		ncclNetProperties_v9_t pr;

		memset(&pr, 0, sizeof(pr));
		r = p->version == 9 ? V9(p)->getProperties(dev, &pr) : V10(p)->getProperties(dev, &pr);
		if (r != ncclSuccess)
			return r;
		PROPS_COMMON(out, pr);
		PROPS_V9(out, pr);
	} else if (p->version == 11) {
		ncclNetProperties_v11_t pr;

		memset(&pr, 0, sizeof(pr));
		if ((r = V11(p)->getProperties(dev, &pr)) != ncclSuccess)
			return r;
		PROPS_COMMON(out, pr);
		PROPS_V9(out, pr);
		out->max_multi_request = pr.maxMultiRequestSize;
	} else {
		ncclNetProperties_v12_t pr;

		memset(&pr, 0, sizeof(pr));
		if ((r = V12(p)->getProperties(dev, &pr)) != ncclSuccess)
			return r;
		PROPS_COMMON(out, pr);
		PROPS_V9(out, pr);
		out->max_multi_request = pr.maxMultiRequestSize;
		out->rail_id = pr.railId;
		out->plane_id = pr.planeId;
	}
	return ncclSuccess;
}

ncclResult_t netp_listen(struct netp *p, int dev, void *handle, void **lcomm)
{
	switch (p->version) {
	case 8: return V8(p)->listen(dev, handle, lcomm);
	case 9: return V9(p)->listen(dev, handle, lcomm);
	case 10: return V10(p)->listen(dev, handle, lcomm);
	case 11: return V11(p)->listen(p->ctx, dev, handle, lcomm);
	default: return V12(p)->listen(p->ctx, dev, handle, lcomm);
	}
}

ncclResult_t netp_connect(struct netp *p, int dev, void *handle, void **scomm)
{
	ncclNetCommConfig_t cfg = { .trafficClass = -1 };
	ncclNetDeviceHandle_t *dh = NULL;

	switch (p->version) {
	case 8: return V8(p)->connect(dev, handle, scomm, &dh);
	case 9: return V9(p)->connect(dev, handle, scomm, &dh);
	case 10: return V10(p)->connect(dev, &cfg, handle, scomm, &dh);
	case 11: return V11(p)->connect(p->ctx, dev, handle, scomm, &dh);
	default: return V12(p)->connect(p->ctx, dev, handle, scomm, &dh);
	}
}

ncclResult_t netp_accept(struct netp *p, void *lcomm, void **rcomm)
{
	ncclNetDeviceHandle_t *dh = NULL;

	return SAME(p, accept, lcomm, rcomm, &dh);
}

ncclResult_t netp_regmr(struct netp *p, void *comm, void *data, size_t size, int type, void **mh)
{
	return SAME(p, regMr, comm, data, size, type, mh);
}

ncclResult_t netp_regmr_dmabuf(struct netp *p, void *comm, void *data, size_t size, int type, uint64_t offset,
                               int fd, void **mh)
{
	return SAME(p, regMrDmaBuf, comm, data, size, type, offset, fd, mh);
}

ncclResult_t netp_deregmr(struct netp *p, void *comm, void *mh)
{
	return SAME(p, deregMr, comm, mh);
}

ncclResult_t netp_isend(struct netp *p, void *scomm, void *data, size_t size, int tag, void *mh, void **req)
{
	switch (p->version) {
	case 8:
		if (size > INT_MAX)
			return ncclInvalidArgument;
		return V8(p)->isend(scomm, data, (int)size, tag, mh, req);
	case 9: return V9(p)->isend(scomm, data, size, tag, mh, req);
	case 10: return V10(p)->isend(scomm, data, size, tag, mh, NULL, req);
	case 11: return V11(p)->isend(scomm, data, size, tag, mh, NULL, req);
	default: return V12(p)->isend(scomm, data, size, tag, mh, NULL, req);
	}
}

ncclResult_t netp_irecv(struct netp *p, void *rcomm, int n, void **data, size_t *sizes, int *tags, void **mhs,
                        void **req)
{
	void *ph[NCCL_NET_MAX_REQUESTS] = { 0 };

	switch (p->version) {
	case 8: {
		int isz[NCCL_NET_MAX_REQUESTS];

		if (n > NCCL_NET_MAX_REQUESTS)
			return ncclInvalidArgument;
		for (int i = 0; i < n; i++) {
			if (sizes[i] > INT_MAX)
				return ncclInvalidArgument;
			isz[i] = (int)sizes[i];
		}
		return V8(p)->irecv(rcomm, n, data, isz, tags, mhs, req);
	}
	case 9: return V9(p)->irecv(rcomm, n, data, sizes, tags, mhs, req);
	case 10: return V10(p)->irecv(rcomm, n, data, sizes, tags, mhs, ph, req);
	case 11: return V11(p)->irecv(rcomm, n, data, sizes, tags, mhs, ph, req);
	default: return V12(p)->irecv(rcomm, n, data, sizes, tags, mhs, ph, req);
	}
}

ncclResult_t netp_iflush(struct netp *p, void *rcomm, int n, void **data, int *sizes, void **mhs, void **req)
{
	return SAME(p, iflush, rcomm, n, data, sizes, mhs, req);
}

ncclResult_t netp_test(struct netp *p, void *req, int *done, int *sizes)
{
	return SAME(p, test, req, done, sizes);
}

ncclResult_t netp_irecv_consumed(struct netp *p, void *rcomm, int n, void *req)
{
	return SAME(p, irecvConsumed, rcomm, n, req);
}

ncclResult_t netp_close_send(struct netp *p, void *scomm)
{
	return SAME(p, closeSend, scomm);
}

ncclResult_t netp_close_recv(struct netp *p, void *rcomm)
{
	return SAME(p, closeRecv, rcomm);
}

ncclResult_t netp_close_listen(struct netp *p, void *lcomm)
{
	return SAME(p, closeListen, lcomm);
}

ncclResult_t netp_finalize(struct netp *p)
{
	if (p->version == 11)
		return V11(p)->finalize(p->ctx);
	if (p->version == 12)
		return V12(p)->finalize(p->ctx);
	return ncclSuccess;
}
