/* SPDX-License-Identifier: MIT */
/* NCCL's network plugin interface, versions 8 to 12, declared from its
 * documented layout (NCCL 2.30: src/include/plugin/nccl_net.h and
 * net/net_v*.h); NCCL is not a build dependency. Only what a net plugin
 * (not a CollNet one) touches is here. The tables are ABI: field order
 * and types follow NCCL's exactly.
 *
 * What changed between versions, as far as a plugin sees it:
 *   v8   isend takes an int size, irecv int sizes; no forceFlush, vProps
 *   v9   size_t sizes, properties gain forceFlush, vProps (4 devices),
 *        maxP2pBytes, maxCollBytes; makeVDevice
 *   v10  init takes a profiler callback, connect a comm config, isend and
 *        irecv a profiler handle each
 *   v11  init takes and returns a per-communicator ctx (listen and
 *        connect take it), properties gain maxMultiRequestSize; finalize,
 *        setNetAttr
 *   v12  vProps of 8 devices, properties gain railId and planeId */
#ifndef UROCE_NCCL_NET_H
#define UROCE_NCCL_NET_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
} ncclResult_t;

typedef enum {
	NCCL_LOG_NONE = 0,
	NCCL_LOG_VERSION = 1,
	NCCL_LOG_WARN = 2,
	NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4,
	NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

#define NCCL_INIT 0x1
#define NCCL_NET 0x10

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                                  const char *fmt, ...);
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle, int64_t pluginId,
                                               void *extData);

#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_NET_MAX_REQUESTS 32
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
#define MAX_NET_SIZE (1024L * 1024L * 1024L) /* NCCL's largest transfer: 1 GiB */
#define NCCL_NET_ID_UNDEF -1

typedef enum {
	NCCL_NET_DEVICE_HOST = 0,
	NCCL_NET_DEVICE_UNPACK = 1,
} ncclNetDeviceType;

typedef struct {
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
} ncclNetDeviceHandle_t; /* the same for v7 .. v12 */

#define NCCL_NET_MAX_DEVS_PER_NIC_V9 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V9];
} ncclNetVDeviceProps_v9_t; /* also v10 and v11 */

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

typedef struct {
	int trafficClass;
} ncclNetCommConfig_t; /* v10 .. v12 */

typedef struct {
	int32_t maxConcurrentPeers, minConcurrentPeers, maxFlowsPerPeer, minFlowsPerPeer;
} ncclNetCommAttr_t;

typedef struct {
	ncclNetCommAttr_t sendCommAttr, recvCommAttr;
	uint32_t op, algo, proto;
} ncclNetAttr_t; /* v11, v12 */

/* Properties: every version starts with the v8 fields in this order. */
#define NCCL_NET_PROPS_V8_FIELDS                                                                                       \
	char *name;                                                                                                    \
	char *pciPath;                                                                                                 \
	uint64_t guid;                                                                                                 \
	int ptrSupport;                                                                                                \
	int regIsGlobal;

#define NCCL_NET_PROPS_V8_TAIL                                                                                         \
	int speed;                                                                                                     \
	int port;                                                                                                      \
	float latency;                                                                                                 \
	int maxComms;                                                                                                  \
	int maxRecvs;                                                                                                  \
	ncclNetDeviceType netDeviceType;                                                                               \
	int netDeviceVersion;

typedef struct {
	NCCL_NET_PROPS_V8_FIELDS
	NCCL_NET_PROPS_V8_TAIL
} ncclNetProperties_v8_t;

typedef struct {
	NCCL_NET_PROPS_V8_FIELDS
	int forceFlush;
	NCCL_NET_PROPS_V8_TAIL
	ncclNetVDeviceProps_v9_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
} ncclNetProperties_v9_t; /* also v10 */

typedef struct {
	NCCL_NET_PROPS_V8_FIELDS
	int forceFlush;
	NCCL_NET_PROPS_V8_TAIL
	ncclNetVDeviceProps_v9_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
} ncclNetProperties_v11_t;

typedef struct {
	NCCL_NET_PROPS_V8_FIELDS
	int forceFlush;
	NCCL_NET_PROPS_V8_TAIL
	ncclNetVDeviceProps_v12_t vProps;
	size_t maxP2pBytes;
	size_t maxCollBytes;
	int maxMultiRequestSize;
	int16_t railId;
	int16_t planeId;
} ncclNetProperties_v12_t;

typedef ncclNetProperties_v9_t ncclNetProperties_v10_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm, ncclNetDeviceHandle_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
	                            void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
	                      void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v8_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm, ncclNetDeviceHandle_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
	                            void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
	                      void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v9_t *props);
} ncclNet_v9_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, ncclNetCommConfig_t *config, void *handle, void **sendComm,
	                        ncclNetDeviceHandle_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
	                            void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
	                      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
	                      void **phandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v9_t *props);
} ncclNet_v10_t;

/* v11 and v12 differ in their properties and vProps only. */
#define NCCL_NET_V11_TABLE(PROPS, VPROPS)                                                                              \
	struct {                                                                                                       \
		const char *name;                                                                                      \
		ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_t *config,                        \
		                     ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);             \
		ncclResult_t (*devices)(int *ndev);                                                                    \
		ncclResult_t (*getProperties)(int dev, PROPS *props);                                                  \
		ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);                           \
		ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,                             \
		                        ncclNetDeviceHandle_t **sendDevComm);                                          \
		ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_t **recvDevComm);        \
		ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);                  \
		ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,   \
		                            void **mhandle);                                                           \
		ncclResult_t (*deregMr)(void *comm, void *mhandle);                                                    \
		ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle, \
		                      void **request);                                                                 \
		ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,  \
		                      void **phandles, void **request);                                                \
		ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,               \
		                       void **request);                                                                \
		ncclResult_t (*test)(void *request, int *done, int *sizes);                                            \
		ncclResult_t (*closeSend)(void *sendComm);                                                             \
		ncclResult_t (*closeRecv)(void *recvComm);                                                             \
		ncclResult_t (*closeListen)(void *listenComm);                                                         \
		ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);                           \
		ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);                                   \
		ncclResult_t (*makeVDevice)(int *d, VPROPS *props);                                                    \
		ncclResult_t (*finalize)(void *ctx);                                                                   \
		ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_t *netAttr);                                         \
	}

typedef NCCL_NET_V11_TABLE(ncclNetProperties_v11_t, ncclNetVDeviceProps_v9_t) ncclNet_v11_t;
typedef NCCL_NET_V11_TABLE(ncclNetProperties_v12_t, ncclNetVDeviceProps_v12_t) ncclNet_v12_t;

/* uroce's own addition, outside NCCL's tables (found with dlsym): bytes
 * that a be receive comm's completed receives lacked when their deadline
 * cut them (left zero in the buffer), since the comm was opened. */
typedef uint64_t (*uroceNcclLostBytes_t)(void *recvComm);
#define UROCE_NCCL_LOST_BYTES_SYMBOL "uroceNcclLostBytes"

#endif
