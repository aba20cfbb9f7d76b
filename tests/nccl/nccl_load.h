/* SPDX-License-Identifier: MIT */
/* Opening an NCCL net plugin as NCCL does, and calling any of its exported
 * versions (v8 .. v12) through one set of calls, as NCCL's own adaptors
 * (src/plugin/net/net_v*.cc) do. Shared by the plugin harness and the
 * collectives.
 *
 * Resolution (NCCL's rules, src/plugin/plugin_open.cc): NAME is first
 * dlopen()ed as given, then, when it has no '/' and is not already
 * lib*.so, as "libnccl-net-NAME.so"; an empty NAME means
 * "libnccl-net.so". dlopen() searches LD_LIBRARY_PATH as for NCCL. */
#ifndef UROCE_TESTS_NCCL_LOAD_H
#define UROCE_TESTS_NCCL_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "../../plugins/nccl/nccl_net.h"

struct netp {
	int version;           /* 8 .. 12: the table in use */
	void *lib;             /* the dlopen handle */
	char path[256];        /* the name that opened */
	void *table;           /* ncclNet_vN_t * */
	void *ctx;             /* v11+: init's per-communicator context */
	uroceNcclLostBytes_t lost_bytes; /* uroce's extension, or NULL */
};

/* Version-neutral properties: the fields every version has, plus the
 * later ones (0 where the version lacks them). */
struct netp_props {
	char name[128];
	int ptr_support, reg_is_global, force_flush, speed, port, max_comms, max_recvs;
	float latency;
	uint64_t guid;
	size_t max_p2p_bytes, max_coll_bytes;
	int max_multi_request, rail_id, plane_id;
};

/* Open the plugin NAME and read the symbol ncclNetPlugin_v<version>;
 * version 0 takes the newest the plugin has, as NCCL does (v12 down to
 * v8). Returns 0, or -1 with the reason in err. */
int netp_open(struct netp *p, const char *name, int version, char *err, size_t errlen);
/* init (v11+: with commId), logging through a printer to stderr when
 * NETP_DEBUG is set in the environment. */
ncclResult_t netp_init(struct netp *p, uint64_t comm_id);
ncclResult_t netp_devices(struct netp *p, int *ndev);
ncclResult_t netp_props(struct netp *p, int dev, struct netp_props *out);
ncclResult_t netp_listen(struct netp *p, int dev, void *handle, void **lcomm);
ncclResult_t netp_connect(struct netp *p, int dev, void *handle, void **scomm);
ncclResult_t netp_accept(struct netp *p, void *lcomm, void **rcomm);
ncclResult_t netp_regmr(struct netp *p, void *comm, void *data, size_t size, int type, void **mh);
ncclResult_t netp_regmr_dmabuf(struct netp *p, void *comm, void *data, size_t size, int type, uint64_t offset,
                               int fd, void **mh);
ncclResult_t netp_deregmr(struct netp *p, void *comm, void *mh);
/* v8 takes int sizes: a size above INT_MAX is refused here, as NCCL's
 * v8 adaptor does. */
ncclResult_t netp_isend(struct netp *p, void *scomm, void *data, size_t size, int tag, void *mh, void **req);
ncclResult_t netp_irecv(struct netp *p, void *rcomm, int n, void **data, size_t *sizes, int *tags, void **mhs,
                        void **req);
ncclResult_t netp_iflush(struct netp *p, void *rcomm, int n, void **data, int *sizes, void **mhs, void **req);
ncclResult_t netp_test(struct netp *p, void *req, int *done, int *sizes);
ncclResult_t netp_irecv_consumed(struct netp *p, void *rcomm, int n, void *req);
ncclResult_t netp_close_send(struct netp *p, void *scomm);
ncclResult_t netp_close_recv(struct netp *p, void *rcomm);
ncclResult_t netp_close_listen(struct netp *p, void *lcomm);
/* v11+: finalize(ctx); earlier versions have none (returns ncclSuccess). */
ncclResult_t netp_finalize(struct netp *p);
void netp_close(struct netp *p);

#endif
