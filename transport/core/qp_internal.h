/* SPDX-License-Identifier: MIT */
/* Internal state of the verbs-shaped transport: context, PD, MR, CQ, SRQ,
 * AH and QP objects, shared by the files that implement uroce.h. */
#ifndef UROCE_TRANSPORT_QP_INTERNAL_H
#define UROCE_TRANSPORT_QP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uroce/uroce.h>

#include "dataplane/engine.h"
#include "dataplane/nl_watch.h"
#include "dataplane/port.h"
#include "dataplane/spsc_ring.h"
#include "dataplane/timer_wheel.h"
#include "dataplane/wire.h"
#include "transport/core/qp_table.h"

#define QP_MAX_WR (1u << 15)
#define QP_MAX_SGE 32u
#define QP_MAX_INLINE 1024u
#define CTX_TX_PASS_PKTS 16u      /* packets one transmit pass stages: two passes an iteration, one receive burst's worth */
#define RC_MAX_RD_ATOMIC 16u      /* both directions: outstanding READ/atomic */
#define UROCE_MAX_MSG (1u << 31)
#define NEIGH_TIMEOUT_MS 3000
/* IPv4 + UDP + BTH + RETH + ImmDt + ICRC: the most a data packet adds to
 * its payload on the IP layer */
#define ROCE_PKT_HDR_MAX_V4 (IPV4_HDR_LEN + UDP_HDR_LEN + BTH_LEN + RETH_LEN + IMMDT_LEN + ICRC_LEN)
/* what rxe subtracts from the netdev MTU to pick its active MTU */
#define ROCE_ACTIVE_MTU_HDR 80u

/* --- errors ------------------------------------------------------------ */
int uroce_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- objects ----------------------------------------------------------- */
struct uroce_pd {
	struct uroce_context *ctx;
	unsigned refs; /* MRs, QPs, SRQs, AHs on it */
	void *nic;     /* on a NIC context (ctx->nic): the device's PD */
};

/* A slot of the key table (ctx->mrs): a registered region, or the slot of
 * a memory window (is_mw, inside a struct mw_int). */
struct mr_int {
	struct uroce_mr pub;
	uint32_t index;
	uint32_t nbound;        /* region: windows bound to it (uroce_mr_dereg is -EBUSY meanwhile) */
	bool is_mw;
	void *map;              /* a dmabuf region: its mapping, unmapped at dereg */
	size_t map_len;
};

/* A memory window (mw.c). Its slot's pub is the current bind: addr,
 * length, access, pd, and rkey (0 while invalid: no key of its index is
 * 0); its lkey stays 0, so no SGE ever names a window. Engine thread only,
 * but pub.rkey, which the poster of a BIND_MW sets. */
struct mw_int {
	struct mr_int slot;     /* first: ctx->mrs[slot.index] points here */
	struct uroce_mw pub;    /* pub.rkey: the key of the last BIND_MW posted */
	struct mr_int *mr;      /* the region under it while bound */
	struct uroce_qp *qp;    /* type 2: the QP it is bound to; dereferenced only while qpt_get(qpn) is it */
	uint32_t qpn;
	uint32_t key;           /* the key of its last bind, kept once it is invalidated */
};

struct uroce_cq {
	struct uroce_context *ctx;
	struct spsc_ring *ring; /* engine produces, app consumes */
	uint64_t overflows;     /* completions that found the ring full or the CQ in error */
	bool error;             /* overran: uroce_poll_cq fails once the ring is drained */
	unsigned refs;
	void *nic;              /* on a NIC context: the device's CQ (the ring holds sr QPs' completions) */
	/* completion events (comp_channel.c): set while no QP completes into
	 * it; armed by the app, disarmed by the engine that fires it */
	struct uroce_comp_channel *channel;
	void *cq_context;
	int armed, fired;
	unsigned events, acked;  /* events returned by uroce_get_cq_event, and acknowledged */
	/* be with rel.hd_block: one struct cq_hd per UROCE_WC_HADAMARD
	 * completion, in the same order, decoded by the poller; made by the
	 * first such QP */
	struct spsc_ring *hd;
};

/* A buffer the poller decodes (cq->hd). */
struct cq_hd {
	float *buf;
	size_t count;
	uint32_t block, stride;
};
int cq_hd_attach(struct uroce_cq *cq);

struct uroce_precv;

struct rwqe {
	uint64_t wr_id;
	struct uroce_precv *precv; /* sr/ec partial-completion handle, or NULL */
	uint32_t num_sge;
	uint32_t length;
	uint32_t timeout_us;   /* be: its deadline (0 = the QP's) */
	struct uroce_sge *sge; /* max_sge entries, preallocated */
};

struct uroce_srq {
	struct uroce_pd *pd;
	uint32_t size, mask, max_sge;
	_Atomic uint32_t head; /* producer: poster */
	_Atomic uint32_t tail; /* consumer: engine */
	struct rwqe *q;
	struct uroce_sge *sges;
	unsigned refs;
	void *nic;     /* on a NIC context: the device's SRQ (no queue here) */
};

struct dest {
	uint32_t flow_label; /* first: the struct packs into 48 bytes */
	uint8_t dmac[6];
	uint8_t sip[16];     /* the source GID sgid_index named when the dest was resolved */
	uint8_t dip[16];
	bool ipv6;
	uint8_t tos;
	uint8_t ttl;
	uint8_t port;        /* index into ctx->ports the packets leave by */
};

struct uroce_ah {
	struct uroce_pd *pd;
	struct uroce_ah_attr attr;
	struct dest d;
	void *nic;     /* on a NIC context: the device's AH */
};

enum swqe_state { SWQE_POSTED = 0, SWQE_SENDING, SWQE_SENT };

struct swqe {
	uint64_t wr_id;
	uint8_t opcode;      /* enum uroce_wr_opcode */
	uint8_t state;
	uint8_t signaled;
	uint8_t is_inline;
	uint8_t done;        /* READ/atomic: response complete */
	uint8_t fence;
	uint32_t num_sge;
	uint32_t length;
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t first_psn, last_psn;
	uint32_t resp_psn;   /* READ: next response PSN expected */
	/* sr/ec: the message this WQE carries (or a part of, for a stream) */
	uint32_t msg_seq;    /* slot message number (SEND, WRITE_IMM, streams) */
	uint32_t msg_off;    /* offset of this WQE's bytes in the message */
	uint32_t msg_len;    /* the whole message's length */
	uint32_t unacked;    /* packets sent and not yet acknowledged */
	uint8_t sr_flags;    /* SRW_* in rel_sr.h */
	uint32_t timeout_us; /* be: the WR's deadline (0 = the QP's) */
	uint32_t tx_off;     /* be: bytes of it sent so far */
	uint64_t post_ns;    /* be: when it was posted (its deadline counts from there) */
	/* UD */
	struct dest ud;
	uint32_t ud_qpn, ud_qkey;
	struct uroce_sge *sge;   /* max_send_sge entries */
	uint8_t *inl;            /* max_inline bytes */
};

enum res_type { RES_NONE = 0, RES_READ, RES_ATOMIC };

/* A responder resource (IBTA "responder resources"): a READ being
 * answered or an atomic's saved result, kept for replay of duplicates. */
struct rd_res {
	uint8_t type;
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t len;
	uint32_t rkey;
	uint64_t orig;     /* atomic: value before the operation */
	uint32_t tx_off;   /* READ: next byte to send */
	bool tx_pending;
	bool replay;       /* sending again for a duplicate request: holds no resource */
};

struct rel_ops;
struct fo_state;

/* The QP: its first QP_HOT_BYTES are what rc's per-packet path reads and
 * writes (post, build, ACK, placement, completion), in four cache lines
 * of a 64-byte aligned object; configuration, rare paths and counters
 * other than the packet counts come after them (qp.c asserts the bound):
 * the common fields, then the start of rc's own state (QP_HOT_END).
 * state, dqpn and the CQs mirror attr/init, which stay the API's record. */
#define QP_HOT_BYTES 256u

/* rc's own state (rel/rc/: requester, responder, completer), as rxe keeps
 * qp->req, qp->resp and qp->comp; the other policies keep theirs behind
 * rel_state. Its per-packet fields come first and close the QP's hot part;
 * the rare ones (error NAKs, READ resources) follow. */
struct rc_state {
	/* ---- hot ---- */
	uint32_t cur_off;       /* bytes of wqe sq_cur already sent */
	uint32_t snd_max;       /* highest snd_nxt reached (go-back lowers snd_nxt) */
	uint32_t acked_psn;     /* last PSN acknowledged (snd_una - 1) */
	uint32_t rd_outstanding;
	uint32_t lsn;           /* credit limit: highest message number the peer has a receive WQE for */
	uint32_t msn;
	uint32_t recv_off;
	uint32_t write_left;
	uint32_t ack_psn;
	uint8_t retry_left, rnr_left;
	bool gb_blocked;        /* a go-back is in flight: wait for progress */
	bool rnr_wait;
	bool credit_unlimited;  /* the peer sent the invalid credit code: no flow control */
	bool nak_sent;          /* one sequence NAK per gap */
	bool uc_discard;        /* UC: drop until the next FIRST/ONLY */
	bool in_send;           /* a multi-packet SEND is being placed */
	bool in_write;
	bool ack_pending;
	bool nak_pending;
	/* ---- rare (the QP's hot part ends here: QP_HOT_END) ---- */
	uint32_t rd_resp_pkts;  /* READ responses the READs started and not completed ask for (RC_READ_RESP_PKTS) */
	uint8_t nak_syn;
	uint32_t nak_psn;
	struct rd_res *res;     /* max_dest_rd_atomic entries */
	uint32_t nres, res_head, res_tx;
	bool fatal_nak;         /* a class B/C responder error waits for owed responses, then NAKs */
	uint8_t fatal_syn;
	uint32_t fatal_psn;
};

struct uroce_qp {
	/* ---- hot ---- */
	struct uroce_context *ctx;
	const struct rel_ops *rel; /* reliability policy (rel.h) */
	void *rel_state;        /* the policy's own state (sr/ec/be) */
	struct swqe *sq;
	struct rwqe *rq;
	struct uroce_cq *scq, *rcq; /* init.send_cq, init.recv_cq */
	struct uroce_pd *pd;    /* every rkey and lkey check compares it */
	struct uroce_qp *next_active; /* active list: QPs with transmit work */
	uint64_t tx_packets, rx_packets; /* stats.tx_packets/rx_packets live here */
	/* the region a multi-packet WRITE places into: the core revokes it
	 * when the MR is deregistered or the window invalidated */
	uint64_t write_va;
	struct mr_int *write_mr;
	uint32_t qpn;
	uint32_t dqpn;          /* attr.dest_qp_num */
	uint32_t mtu;           /* bytes */

	/* send queue: app posts at head, engine sends at cur, retires at tail */
	uint32_t sq_mask;
	_Atomic uint32_t sq_head;
	uint32_t sq_cur, sq_tail;
	uint32_t snd_nxt;       /* next PSN to send */

	/* receive queue */
	uint32_t rq_mask;
	_Atomic uint32_t rq_head;
	uint32_t rq_tail;
	uint32_t epsn;          /* next PSN expected */

	uint8_t state;          /* attr.qp_state */
	uint8_t type;           /* enum uroce_qp_type */
	uint8_t port;           /* index into ctx->ports (attr.port_num - 1) */
	bool have_rwqe;         /* cur_rwqe holds a receive WQE being filled */
	bool active;
	bool fatal_pending;     /* its CQ overran: go to ERR and raise QP_FATAL in the next TX pass */
	uint16_t sport;
	struct dest d;          /* RC/UC destination */
	struct rc_state rc;     /* hot at its start: see QP_HOT_END */

	/* ---- cold ---- */
	struct uroce_qp_init_attr init;
	struct uroce_qp_attr attr;
	uint32_t ctrl_qpn;      /* sr/ec: the QP's control QPN (qpn + 1); 0 for rc */
	uint32_t qpt_idx;       /* its place in ctx->qpt.live */
	uint32_t tok_local;     /* random, never 0: control packets to this QP carry it */
	uint32_t tok_remote;    /* attr.dest_token: control packets to the peer carry it */
	uint32_t ctrl_dqpn;     /* attr.dest_ctrl_qpn; 0 = the peer's data QPN + 1 */
	uint32_t sq_size, rq_size;
	/* BIND_MW and LOCAL_INV started: they take an SQ slot but no message
	 * number, so the credit limit, counted in SQ slots, runs this far
	 * ahead of the peer's MSN (read with every ACK: beside attr.retry_cnt) */
	uint32_t local_wrs;
	struct wheel_timer retry_timer;
	struct rwqe cur_rwqe;   /* copy of the WQE taken for the current SEND (its SGEs in sge_pool) */
	struct uroce_qp_stats stats; /* but tx_packets/rx_packets: see above */
	struct uroce_sge *sge_pool;
	uint8_t *inl_pool;
	/* poster: sq_head after its last post; only a RESET moves sq_head
	 * elsewhere, and then the next post zeroes local_wrs */
	uint32_t local_post_mark;
	/* the notification point of DCQCN: a CE-marked arrival owes the
	 * sender a CNP, at most one per CNP_MIN_GAP_NS (qp_dispatch.c) */
	bool cnp_pending;
	uint32_t cnp_psn;
	uint64_t cnp_last_ns;
	struct fo_state *fo;    /* failover across a port group (failover.c); NULL without backups */
	void *nic;              /* on a NIC context: the device's QP, which runs the transport itself */
	void *segq;             /* sr on a NIC context: the NIC's QPs its segments go by (nic_ops.seg_*) */
	uint32_t nic_qpn;       /* and their numbers, which the peer names: data, control */
	uint32_t nic_ctrl_qpn;
};
/* The per-packet part of a QP: its first bytes, up to rc's rare fields. */
#define QP_HOT_END offsetof(struct uroce_qp, rc.rd_resp_pkts)
#define CNP_MIN_GAP_NS 4000u /* NVIDIA's min_time_between_cnps default, 4 us */

/* A port's GID table (gid.c): fe80:: EUI-64 of the MAC, the IPv4
 * addresses mapped, then the other IPv6 addresses. Only the engine thread
 * writes it; other threads copy entries out under the sequence count. */
#define GID_TABLE_MAX 32u
struct gid_table {
	_Atomic uint32_t seq;   /* odd while the engine thread rewrites the table */
	uint32_t n;
	uint8_t gid[GID_TABLE_MAX][16];
};

/* One port of a context: its engine port index is its place in ctx->ports. */
struct ctx_port {
	struct port *port;
	struct gid_table gids;
	bool gid_dirty;         /* the last read of the kernel's addresses failed: read again */
	bool link_up;           /* as last reported by PORT_ACTIVE / PORT_ERR */
	uint16_t ip_id;
	uint64_t drops[UROCE_DROP__COUNT]; /* transport drops of packets that arrived here */
};

/* A part of the library that keeps per-context state outside the core
 * (failover, EQDS's pull pacers, timeout groups) registers these once
 * (ctx_hook_add); the context runs them and names none of those parts. */
struct ctx_hook {
	unsigned (*slow)(struct uroce_context *ctx);                    /* the slow path: events raised */
	void (*link)(struct uroce_context *ctx, unsigned port, bool up); /* a port's link changed */
	void (*fini)(struct uroce_context *ctx);                         /* teardown, the engine still there */
};
#define CTX_MAX_HOOKS 4u

struct uroce_context {
	struct ctx_port ports[UROCE_MAX_PORTS];
	unsigned nports;
	/* ports on an RDMA NIC (verbs): the objects live on the device and
	 * every call goes through this table (nic.h); NULL: frame ports */
	const struct nic_ops *nic;
	unsigned nsegq;         /* sr QPs on the NIC: the engine polls their CQs */
	unsigned rx_port;       /* port of the packet being processed: where its drops count */
	uint64_t nic_rx_ns;     /* and, from a NIC that stamps completions, when it arrived (0: unknown) */
	struct engine *eng;
	struct loop_fabric *fabric;
	engine_clock_fn clock;  /* the engine's time source, read fresh when arming timers */
	void *clock_ctx;
	enum uroce_engine_mode mode;
	struct qp_table qpt;        /* QPs by (random) QPN, and the live list for walks */
	struct mr_int **mrs;
	uint32_t next_mr;
	uint64_t mr_rng;            /* xorshift state for key bytes, seeded from getrandom */
	uint8_t *mr_last_keys;      /* per MR index: the key bytes of its last lkey and rkey */
	struct uroce_qp *active_head, *active_tail;
	struct uroce_tmo *tmo_head;  /* adaptive-timeout groups (tmo.c): arriving votes find theirs here */
	struct imm_table *imm;       /* IMMCOUNTER (immcounter.c) */
	struct eqds_ctx *eqds;       /* EQDS pull pacers, one per port (cc_eqds.c), made at the first RTS */
	uint64_t imm_lost;           /* counts lost because the table was full */
	unsigned npd, ncq, nqp, nmr;
	struct spsc_ring *async;    /* struct uroce_async_event: engine raises, app takes */
	uint64_t async_lost;
	struct nl_watch *nlw;       /* kernel address/link changes of afxdp ports (NULL without any) */
	uint64_t gid_poll_ns;       /* CLOCK_MONOTONIC of the last slow-path look at them */
	struct fo_state *fo_head;   /* QPs with backups (failover.c) */
	uint64_t link_poll_ns;      /* read the ports' carrier this often (0: at the GID poll's pace) */
	const struct ctx_hook *hooks[CTX_MAX_HOOKS];
	unsigned nhooks;
	uint64_t fo_tick_ns, fo_err_ns;
	uint64_t fo_err_base[UROCE_MAX_PORTS];  /* each port's receive errors at the last window */
	uint64_t fo_err_delta[UROCE_MAX_PORTS]; /* and in that window */

	/* DEDICATED: the engine thread, and the lock that makes app threads
	 * one producer of its command ring */
	pthread_t thread;
	bool thread_running;
	_Atomic bool stop;
	int cpu;
	pthread_mutex_t post_lock;
	_Atomic uint64_t eng_passes, eng_idle; /* the engine's loops (thread or uroce_progress), and those that found no work */
	_Atomic uint64_t eng_timers;           /* work the slow path did: timers fired, probes, link and GID checks */
	/* EMBEDDED idle backoff (context.c): uroce_progress yields the CPU
	 * once it has found no work for idle_yield_ns (UINT64_MAX: never);
	 * idle_since_ns is when the current run of idle calls began */
	uint64_t idle_yield_ns, idle_since_ns;
	bool idle_run;
	uint64_t last_pass_ns; /* engine_now() of the previous receive pass (ctx_stall_ns) */
	struct stat_ep *stat;                  /* the statistics endpoint (stat_endpoint.c), NULL when off */
};

/* DEDICATED mode, called from a thread other than the engine's: the call
 * has to travel to the engine thread. */
static inline bool ctx_remote(const struct uroce_context *ctx)
{
	return ctx->mode == UROCE_ENGINE_DEDICATED && ctx->thread_running && !pthread_equal(pthread_self(), ctx->thread);
}

/* Run fn(arg) on the engine thread (directly when already there) and
 * return its result; its uroce_last_error text comes back too. */
int ctx_call(struct uroce_context *ctx, int (*fn)(void *), void *arg);

/* Register h once per context (again: nothing); 0 or -ENOSPC. */
int ctx_hook_add(struct uroce_context *ctx, const struct ctx_hook *h);

/* --- helpers (context.c) ------------------------------------------------- */
void ctx_kick(struct uroce_qp *qp);
/* Resolve ah into d for the port with index port (d->port = port). */
int ctx_resolve_dest(struct uroce_context *ctx, unsigned port, const struct uroce_ah_attr *ah, struct dest *d);
/* Index into ctx->ports of port number port_num, or -EINVAL with the
 * reason (prefixed by fn) in uroce_last_error. */
int ctx_port_index(const struct uroce_context *ctx, unsigned port_num, const char *fn);
void ctx_count_drop(struct uroce_context *ctx, enum uroce_drop_reason r);
uint64_t ctx_now(const struct uroce_context *ctx);
/* The clock itself: engine_now() is the start of the iteration, which can
 * be long ago when the app posts after a pause (a timer armed from it
 * would fire at once). */
uint64_t ctx_clock(const struct uroce_context *ctx);
/* Inside a pass (a timer, a receive handler): how long before this pass
 * the previous one began. Far above a pass's own length it means the
 * engine did not run (descheduled, a busy core): a timer then fires late,
 * before the receive ring, which this pass has read one burst of, shows
 * what arrived meanwhile. 0 on the loop fabric (its clock jumps). */
uint64_t ctx_stall_ns(const struct uroce_context *ctx);
/* Fill the common headers of pkt for the destination (from d->port). */
void ctx_pkt_init(struct uroce_context *ctx, struct roce_pkt *pkt, const struct dest *d, uint16_t sport);
/* Allocate a frame on port index port, build pkt into it and stage it.
 * gather: copy payload from it before building (NULL = p->payload). */
typedef void (*gather_fn)(void *arg, uint8_t *dst, uint32_t len);
int ctx_send_pkt(struct uroce_context *ctx, unsigned port, struct roce_pkt *pkt, gather_fn g, void *garg);

/* A NIC's data path hands what its CQ reports for qp as the packet it
 * stands for (no frame: what the NIC placed has no payload here), with
 * the time the device stamped it (engine clock; 0 = none: the policies
 * take their clock). */
void ctx_nic_arrival(struct uroce_qp *qp, unsigned port, const struct roce_pkt *pkt, uint64_t rx_ns);

/* --- CQ -------------------------------------------------------------------- */
void cq_push(struct uroce_cq *cq, const struct uroce_wc *wc);
/* an armed CQ with a channel: wake its waiter (comp_channel.c) */
void cq_notify(struct uroce_cq *cq);
/* uroce_cq_destroy: off its channel; -EBUSY while events are unacknowledged */
int cq_channel_detach(struct uroce_cq *cq);

/* --- QP internals ------------------------------------------------------- */
void qp_to_error(struct uroce_qp *qp);
/* Out of retries: the oldest send WR completes with st (as rc's retry
 * counter does), the QP goes to ERR and the others flush. */
void qp_fail_oldest(struct uroce_qp *qp, enum uroce_wc_status st);
/* A send WQE completes with st: its CQE, unless it succeeded unsignaled. */
void qp_complete_swqe(struct uroce_qp *qp, struct swqe *w, enum uroce_wc_status st);
/* Everything the QP sends goes to d from now on (failover's member switch). */
static inline void qp_set_dest(struct uroce_qp *qp, const struct dest *d)
{
	qp->d = *d;
	qp->port = d->port;
}
/* A QP that failed on its own (CQ overrun): ERR, flush, QP_FATAL event. */
void qp_fatal(struct uroce_qp *qp);
void qp_flush(struct uroce_qp *qp);
bool qp_take_rwqe(struct uroce_qp *qp, struct rwqe *out);
/* Post one receive WR carrying a partial-completion handle (partial.c). */
int qp_post_recv_precv(struct uroce_qp *qp, const struct uroce_recv_wr *wr, struct uroce_precv *h);
void sge_copy_out(const struct uroce_sge *sge, uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len);
void sge_copy_in(const struct uroce_sge *sge, uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len);
/* Zero [off, off + len) of the SGEs' bytes (as far as they reach). */
void sge_zero(const struct uroce_sge *sge, uint32_t nsge, uint32_t off, uint32_t len);
static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & ROCE_PSN_MASK;
}
/* The peer's control QPN (sr, ec, be, failover's notices): as exchanged
 * (attr.dest_ctrl_qpn), else its data QPN + 1, as a uroce end on a frame
 * port allocates them in pairs (docs/wire.md). */
static inline uint32_t qp_ctrl_dqpn(const struct uroce_qp *qp)
{
	return qp->ctrl_dqpn ? qp->ctrl_dqpn : (psn_add(qp->dqpn, 1) & ROCE_QPN_MASK);
}

static inline uint32_t npkts(uint32_t len, uint32_t mtu)
{
	return len ? (len + mtu - 1) / mtu : 1;
}

#endif /* UROCE_TRANSPORT_QP_INTERNAL_H */
