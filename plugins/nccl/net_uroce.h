/* SPDX-License-Identifier: MIT */
/* The NCCL net plugin's one implementation, under the version tables of
 * net_versions.c. Files:
 *   net_env.c    init/finalize, UROCE_NCCL_* from the environment, devices
 *                and their properties, the logger
 *   net_conn.c   listen/connect/accept: the handle, the TCP exchange of QP
 *                numbers, the two QPs of a comm, closing
 *   net_xfer.c   regMr/deregMr, isend/irecv/test/iflush: the CTS protocol
 *
 * A comm is one direction to one peer with two QPs: ctl, reliable (rc beside
 * rc, else sr), carries
 * the receiver's CTS (where its posted buffers are) and, in be, the sender's
 * SIZE notes; data, of the chosen reliability, carries the payload as RDMA
 * WRITE with immediate into the buffers the CTS named. See docs/nccl.md. */
#ifndef UROCE_PLUGINS_NCCL_NET_UROCE_H
#define UROCE_PLUGINS_NCCL_NET_UROCE_H

#include <pthread.h>
#include <stdint.h>

#include <uroce/uroce.h>

#include "nccl_net.h"

#define UN_MAX_DEVS 8
#define UN_MAX_RECVS 8        /* grouped receives per irecv (maxRecvs) */
#define UN_MAX_REQS NCCL_NET_MAX_REQUESTS
#define UN_CTL_MSG 256        /* bytes per ctl buffer */
#define UN_CTL_BUFS 256       /* ctl receives posted per comm (and ctl sends in flight) */
#define UN_DATA_WRS 1024      /* data WRs per direction per comm */
#define UN_MAX_COMMS 4096     /* per device (maxComms) */
#define UN_HANDLE_MAGIC 0x55524e43u /* "URNC" */
#define UN_PROTO 1

struct un_dev {
	char spec[64];       /* UROCE_NCCL_DEVICES entry, e.g. afxdp:eth0 */
	char name[96];       /* "uroce_N:spec", NCCL's log name */
	char *pci_path;      /* realpath of /sys/class/net/IF/device, or NULL */
	char ifname[16];
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	int gid_index;       /* the port's IPv4-mapped GID */
	uint8_t gid[16];
	uint32_t ipv4_be;
	int mtu;             /* enum uroce_mtu */
	int speed_mbps;
	uint64_t guid;
	int engine_cpu;      /* -1 unpinned; with inline, unused */
	unsigned comms;      /* open comms (maxComms) */
};

struct un_config {
	struct uroce_rel_attr rel;
	struct uroce_path_attr path;
	struct uroce_cc_attr cc;
	int inline_engine;   /* UROCE_NCCL_CORES=inline: the engine runs in the plugin's calls */
	uint32_t be_timeout_us;
	uint8_t rc_timeout;     /* IBTA local ACK timeout exponent of rc QPs */
	uint32_t be_us_per_mib; /* be: deadline = be_timeout_us + size x this / MiB */
	uint32_t hd_block, hd_stride; /* be: UROCE_NCCL_HADAMARD (0: off) */
};

struct un_global {
	pthread_mutex_t lock; /* every entry point holds it: NCCL may call from several threads */
	int inits;            /* init minus finalize */
	int ndev;
	struct un_dev dev[UN_MAX_DEVS];
	struct un_config cfg;
	ncclDebugLogger_t log;
};

extern struct un_global un_g;

#define UN_LOG(level, ...)                                                                                            \
	do {                                                                                                           \
		if (un_g.log)                                                                                          \
			un_g.log(level, NCCL_NET | NCCL_INIT, __FILE__, __LINE__, __VA_ARGS__);                       \
	} while (0)
#define UN_WARN(...) UN_LOG(NCCL_LOG_WARN, "NET/uroce: " __VA_ARGS__)
#define UN_INFO(...) UN_LOG(NCCL_LOG_INFO, "NET/uroce: " __VA_ARGS__)

/* The 128-byte handle listen fills and connect reads. NCCL passes the same
 * handle to every connect call of one connection, so connect keeps its
 * progress in `stage` (NCCL's IB transport does the same); listen sets it
 * to NULL. */
struct un_handle {
	uint32_t magic;
	uint8_t proto;
	uint8_t rel;          /* the listener's reliability */
	uint16_t tcp_port;    /* network order */
	uint32_t ipv4_be;
	uint32_t nonce;       /* the listen comm's, echoed back by the connector */
	uint8_t gid[16];
	void *stage;          /* connect's progress (struct un_comm *) */
};
_Static_assert(sizeof(struct un_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");

/* What each end tells the other over TCP at connect. */
struct un_wire {
	uint32_t magic, nonce;
	uint8_t proto, rel, mtu, is_send;
	uint8_t gid[16];
	uint32_t ctl_qpn, ctl_psn, ctl_token, ctl_ctrl_qpn;
	uint32_t data_qpn, data_ctrl_qpn, data_token, data_psn;
	uint32_t ec_k, ec_m, ec_code;
	uint32_t hd_block, hd_stride;
};

/* A receiver's CTS: the buffers of one irecv (ctl message, receiver to
 * sender). */
struct un_cts_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t rkey;
	int32_t tag;
};
enum { UN_MSG_CTS = 1, UN_MSG_SIZE = 2 };
struct un_msg {
	uint32_t type;
	uint32_t seq;  /* the irecv's number on this comm */
	uint32_t n;    /* CTS: entries; SIZE: the entry index */
	uint32_t pad;
	uint64_t size; /* SIZE: the bytes the send carries */
	struct un_cts_entry e[UN_MAX_RECVS];
};
_Static_assert(sizeof(struct un_msg) <= UN_CTL_MSG, "ctl message too large");

struct un_comm;

struct un_req {
	struct un_comm *comm;
	int used, is_send, done;
	uint32_t seq;                   /* recv: its CTS number; send: the CTS it answers */
	int n;                          /* recv: grouped receives */
	uint32_t nchunks[UN_MAX_RECVS]; /* data WRITEs each receive takes */
	uint32_t got[UN_MAX_RECVS];     /* of them completed */
	uint64_t bytes[UN_MAX_RECVS];   /* bytes placed */
	uint64_t rsize[UN_MAX_RECVS];   /* recv: each buffer's size */
	uint64_t sent[UN_MAX_RECVS];    /* be: the sender's size (SIZE note); else unused */
	void *addr[UN_MAX_RECVS];       /* recv: each buffer (be with Hadamard: decoded once done) */
	uint8_t have_size[UN_MAX_RECVS];
	uint32_t pending;               /* send: data WRs not yet completed */
	uint64_t size;                  /* send: bytes */
	int error;
};

/* be: which (receive, entry) each incoming data message belongs to, in
 * the order the sender's SIZE notes say it sends them. */
struct un_be_slot {
	uint32_t seq, idx, chunks_left;
};

struct un_comm {
	int is_send;
	struct un_dev *dev;
	int fd;                 /* TCP to the peer while connecting */
	int stage;              /* connect/accept progress */
	size_t io_done;         /* bytes of the wire struct read or written */
	struct un_wire me, peer;
	int wrote_me;
	uint32_t nonce;
	struct uroce_cq *cq;
	struct uroce_qp *ctl, *data;
	uint8_t *ctlbuf;        /* UN_CTL_BUFS receive + UN_CTL_BUFS send buffers */
	struct uroce_mr *ctlmr;
	uint32_t ctl_send_next; /* send buffer index */
	uint32_t ctl_send_out;  /* ctl sends not completed */
	uint32_t data_send_out, data_recv_out;
	uint64_t chunk;         /* bytes per data WRITE (both ends compute the same) */
	struct un_req reqs[UN_MAX_REQS];
	/* send side: CTS messages in order */
	struct un_msg cts[UN_MAX_REQS];
	uint8_t cts_have[UN_MAX_REQS];
	uint8_t cts_matched[UN_MAX_REQS][UN_MAX_RECVS];
	uint32_t cts_next;      /* the CTS isend matches against */
	/* recv side */
	uint32_t recv_seq;      /* the next irecv's number */
	uint64_t lost_bytes;
	struct un_be_slot be_q[UN_MAX_REQS * UN_MAX_RECVS];
	uint32_t be_head, be_tail;
	struct uroce_wc be_early[UN_DATA_WRS]; /* be data completions ahead of their SIZE note */
	uint32_t be_early_n;
	int failed;
	int counted;           /* in dev->comms */
	/* send side, be with Hadamard: each request's encoded copy (NCCL's
	 * buffer is not written), registered, grown as needed */
	float *hd_buf[UN_MAX_REQS];
	struct uroce_mr *hd_mr[UN_MAX_REQS];
	size_t hd_cap[UN_MAX_REQS];
};

struct un_mr {
	struct uroce_mr *mr;
	struct un_dev *dev;
	int host;               /* host memory: be zeroes a receive buffer before it is named */
};

/* net_env.c */
ncclResult_t un_init(ncclDebugLogger_t log);
ncclResult_t un_finalize(void);
ncclResult_t un_devices(int *ndev);
/* Fills the fields every version has; the version tables copy them. */
struct un_props {
	char *name, *pci_path;
	uint64_t guid;
	int ptr_support, speed, port, max_comms, max_recvs;
	float latency;
};
ncclResult_t un_props(int dev, struct un_props *p);

/* net_conn.c */
ncclResult_t un_listen(int dev, void *handle, void **lcomm);
ncclResult_t un_connect(int dev, void *handle, void **scomm);
ncclResult_t un_accept(void *lcomm, void **rcomm);
ncclResult_t un_close_comm(void *comm);
ncclResult_t un_close_listen(void *lcomm);
void un_comm_free(struct un_comm *c);

/* net_xfer.c */
/* be: a message's deadline, microseconds, for size bytes. */
uint32_t un_be_deadline(uint64_t size);
ncclResult_t un_regmr(void *comm, void *data, size_t size, int type, void **mh);
ncclResult_t un_regmr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mh);
ncclResult_t un_deregmr(void *comm, void *mh);
ncclResult_t un_isend(void *scomm, void *data, size_t size, int tag, void *mh, void **req);
ncclResult_t un_irecv(void *rcomm, int n, void **data, const size_t *sizes, const int *tags, void **mhs, void **req);
ncclResult_t un_iflush(void *rcomm, int n, void **data, int *sizes, void **mhs, void **req);
ncclResult_t un_test(void *req, int *done, int *sizes);
ncclResult_t un_irecv_consumed(void *rcomm, int n, void *req);
/* Post the ctl receives of a new comm (before its QP can receive). */
int un_ctl_post_all(struct un_comm *c);
/* Run the engine where it is inline, then take the comm's completions. */
int un_poll(struct un_comm *c);

#endif
