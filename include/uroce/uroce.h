/* SPDX-License-Identifier: MIT */
/**
 * @file uroce.h
 * @brief uroce: a pure-userspace RDMA (RoCEv2) transport. The one public C API.
 *
 * A verbs-shaped API: names follow libibverbs with a uroce_ prefix and
 * every enum keeps its ibv_ twin's values. A context (uroce_context_create)
 * opens one or more ports, afxdp (AF_XDP), dpdk, loop (the in-process
 * fabric) or verbs (an RDMA NIC through rdma-core), driven by one engine:
 * EMBEDDED, where the application calls uroce_progress() from its own
 * loop, or DEDICATED, an engine thread of its own. On it: protection
 * domains, memory regions (host, dmabuf and GPU memory, staging buffers),
 * memory windows, completion queues and completion channels, shared
 * receive queues, address handles and RC, UC and UD queue pairs with the
 * IBTA state machine. An RC QP's reliability is chosen per QP
 * (uroce_rel_attr): rc (IBTA go-back-N, wire-compatible with NICs), sr
 * (selective repeat), ec (erasure coding) or be (best effort with
 * deadlines), with paths, congestion control and failover across ports;
 * partial completion, IMMCOUNTER, striping, paged writes and adaptive
 * timeouts build on them. Counters: per port (drops by reason), per QP,
 * per path, per engine; port captures into pcap files; asynchronous
 * events.
 *
 * Every call that can fail returns 0 (or a count) or a negative errno;
 * uroce_last_error() then says what was wrong and what is accepted.
 * Link with `pkg-config --cflags --libs uroce`. docs/api.md describes
 * the API as implemented.
 */
#ifndef UROCE_UROCE_H
#define UROCE_UROCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Major, minor and patch version of this header. */
#define UROCE_VERSION_MAJOR 0
#define UROCE_VERSION_MINOR 1
#define UROCE_VERSION_PATCH 0

/**
 * Why a received frame was not delivered. Every drop in uroce is counted
 * under exactly one of these. Values are stable; new ones are appended
 * before UROCE_DROP__COUNT.
 */
enum uroce_drop_reason {
	UROCE_DROP_NONE = 0,        /**< not a drop: delivered */
	UROCE_DROP_SHORT_FRAME,     /**< frame ends before a header it needs */
	UROCE_DROP_NOT_IP,          /**< EtherType is not IPv4/IPv6 (after 802.1Q) */
	UROCE_DROP_NOT_UDP,         /**< IP protocol / next header is not UDP */
	UROCE_DROP_BAD_IP_HEADER,   /**< IP version, IHL, options or fragment bits */
	UROCE_DROP_BAD_IP_CSUM,     /**< IPv4 header checksum wrong */
	UROCE_DROP_BAD_LENGTH,      /**< IP or UDP length disagrees with the frame */
	UROCE_DROP_WRONG_PORT,      /**< UDP destination port is not RoCEv2's */
	UROCE_DROP_BAD_BTH,         /**< BTH transport version not 0 */
	UROCE_DROP_UNKNOWN_OPCODE,  /**< opcode has no row in the opcode table */
	UROCE_DROP_BAD_PAD,         /**< pad count impossible for the opcode/length */
	UROCE_DROP_BAD_ICRC,        /**< invariant CRC mismatch */
	UROCE_DROP_NO_BUFFER,       /**< no frame/ring space to take the packet */
	UROCE_DROP_TX_RING_FULL,    /**< transmit ring full, frame not sent */
	UROCE_DROP_NO_QP,           /**< destination QPN names no QP */
	UROCE_DROP_QP_STATE,        /**< QP not in a state that takes this packet */
	UROCE_DROP_BAD_OPCODE,      /**< opcode of another transport, or out of sequence in a message */
	UROCE_DROP_PSN_OUT_OF_WINDOW, /**< PSN ahead of the expected one (or a stale response) */
	UROCE_DROP_DUPLICATE,       /**< duplicate request (answered, not placed again) */
	UROCE_DROP_BAD_RKEY,        /**< rkey names no registered region of the QP's PD */
	UROCE_DROP_OUT_OF_BOUNDS,   /**< [va, va+len) not inside the region */
	UROCE_DROP_ACCESS_DENIED,   /**< region or QP access flags forbid the operation */
	UROCE_DROP_BAD_QKEY,        /**< UD Q_Key does not match */
	UROCE_DROP_NO_RECV_BUFFER,  /**< no receive WQE (UC/UD drop, RC RNR NAK) */
	UROCE_DROP_BAD_LENGTH_MSG,  /**< message longer than the receive buffer or the RETH length */
	UROCE_DROP_UC_GAP,          /**< UC: rest of a message after a PSN gap */
	UROCE_DROP_BAD_SRC_ADDR,    /**< RC/UC: source address is not the QP's remote GID */
	UROCE_DROP_BAD_DST_ADDR,    /**< destination address is not one of the port's GIDs */
	UROCE_DROP_BAD_PKEY,        /**< BTH P_Key does not match the QP's P_Key */
	UROCE_DROP_STALE_RESPONSE,  /**< ACK, NAK, RNR NAK, READ response or credit whose PSN is outside the outstanding window (ghost or stale) */
	UROCE_DROP_RD_ATOMIC_LIMIT, /**< READ or atomic beyond max_dest_rd_atomic (NAKed: invalid request) */
	UROCE_DROP_MISALIGNED,      /**< atomic VA not 8-byte aligned (NAKed: invalid request) */
	UROCE_DROP_STALE_MSG,       /**< sr/ec: message number outside the receiver's window, or the message is finished (late packet) */
	UROCE_DROP_BAD_CTRL,        /**< sr/ec/be: control packet malformed, of another version, or not answering anything sent */
	UROCE_DROP_RKEY_REVOKED,    /**< rkey of a memory window that was invalidated (LOCAL_INV, SEND with Invalidate, a be timeout) or rebound under another key */
	UROCE_DROP_LATE,            /**< be: a packet of a message that already completed (normally, by timeout or by preemption) */
	UROCE_DROP_BAD_TOKEN,       /**< sr/ec/be/failover/timeout control packet without the connection's token */
	UROCE_DROP_CTRL_SEQ,        /**< control packet whose sequence is outside the window the receiver keeps */
	UROCE_DROP_CTRL_RATE,       /**< control packet past its bound per RTT (NACK, TRIM, a duplicate's SACK reply) */
	UROCE_DROP_BAD_VOTE,        /**< adaptive-timeout vote outside the sane range of the group's current value */
	UROCE_DROP_TABLE_FULL,      /**< a bounded table is full (IMMCOUNTER entries per context) */
	UROCE_DROP_NO_DESC,         /**< sr keyed by immediate: a packet of a message whose descriptor has not arrived (the sender resends it) */
	UROCE_DROP__COUNT
};

/**
 * Short, stable, lower-case name of a drop reason ("bad_icrc").
 * @param reason a drop reason
 * @return the name, or "unknown" for a value outside the enum
 */
const char *uroce_drop_reason_name(enum uroce_drop_reason reason);

/** Counters of one port. Bytes are whole Ethernet frames without FCS. */
struct uroce_port_stats {
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t drops[UROCE_DROP__COUNT]; /**< indexed by enum uroce_drop_reason */
};

/**
 * Text for a negative errno returned by any uroce call (strerror of its
 * absolute value).
 * @param err a negative (or positive) errno
 * @return the text, owned by the C library
 */
const char *uroce_strerror(int err);

/**
 * Version string of the library, "MAJOR.MINOR.PATCH" (meson's project
 * version; the tools' --version prints it too).
 * @return the version, a static string
 */
const char *uroce_version(void);


/* ======================================================================
 * Verbs-shaped API: contexts, protection domains, memory regions,
 * completion queues, shared receive queues, address handles, queue pairs.
 *
 * Names follow libibverbs with a uroce_ prefix, and every enum below uses
 * the same numeric values as its ibv_ twin, so code written for verbs maps
 * one to one. Every call that can fail returns 0 or a negative errno;
 * uroce_last_error() then says, in words, what was wrong and what is
 * accepted (thread-local, valid until the next failing call on the thread).
 * ====================================================================== */

#include <stddef.h>

/**
 * Text describing the last error on this thread ("" when none): what was
 * wrong and what is accepted. Thread-local, valid until the next failing
 * call on the thread.
 * @return the text, owned by the library
 */
const char *uroce_last_error(void);

/** How the transport is driven. */
enum uroce_engine_mode {
	/** The application calls uroce_progress() from its own loop. */
	UROCE_ENGINE_EMBEDDED = 0,
	/** A pinned engine thread runs the transport; verbs calls from app
	 * threads reach it through SPSC rings. */
	UROCE_ENGINE_DEDICATED = 1,
};

/** Most ports one context (one engine core) drives. */
#define UROCE_MAX_PORTS 8

/** Attributes of a context. Zero-initialise, then set what you need. */
struct uroce_context_attr {
	/** Port spec of a one-port context: "afxdp:IFACE[:QUEUE]",
	 * "dpdk[:PORTID]" or "loop:INDEX". Leave NULL when ports is used. */
	const char *port;
	/** DPDK EAL arguments (argv[0] included), for dpdk ports. */
	int eal_argc;
	char **eal_argv;
	/** For loop ports: the fabric (struct loop_fabric *, from
	 * dataplane/port_loop.h), which the caller created. */
	void *loop_fabric;
	/** Source IPv4 address (network byte order) of port 1 when it has
	 * none (dpdk); 0 = take the interface's address. */
	uint32_t ipv4_be;
	enum uroce_engine_mode mode;
	/** DEDICATED: CPU to pin the engine thread to, -1 = do not pin. */
	int engine_cpu;
	/** A context over several ports: nports (1..UROCE_MAX_PORTS) specs,
	 * port number i + 1 being ports[i]; port must then be NULL. Loop
	 * ports cannot share a context with afxdp or dpdk ports (they run
	 * on the fabric's clock). */
	const char *const *ports;
	unsigned nports;
	/** With ports: each port's source IPv4 address (network byte order,
	 * 0 = the interface's), or NULL; ipv4_be is not used then. */
	const uint32_t *ports_ipv4_be;
	/** The statistics endpoint (uroce-stat; docs/api.md): a read-only
	 * snapshot of the context's counters in /dev/shm/uroce-stat.PID.INDEX
	 * (mode 0600), refreshed by the engine every 100 ms and removed by
	 * uroce_context_destroy. 0 = on unless the environment has
	 * UROCE_STAT=0 (one that cannot be made is left out, silently);
	 * 1 = on (uroce_context_create fails if it cannot be made); -1 = off. */
	int stat_endpoint;
	/** QPs the endpoint lists (the others are counted, and the snapshot
	 * says it is truncated); 0 = 256, at most 65536. */
	unsigned stat_max_qps;
};

struct uroce_context;
struct uroce_pd;
struct uroce_mr;
struct uroce_cq;
struct uroce_srq;
struct uroce_ah;
struct uroce_qp;

/**
 * Open a context over one port (attr->port) or several (attr->ports),
 * with its engine (EMBEDDED or DEDICATED, attr->mode).
 * @param out the new context, on success
 * @param attr the ports and the engine mode (zero-initialise, then set)
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_context_create(struct uroce_context **out, const struct uroce_context_attr *attr);
/**
 * Close a context; every QP, CQ, MR and PD on it must be destroyed first.
 * @param ctx the context
 * @return 0, -EBUSY while objects remain, -EINVAL for a NULL ctx
 */
int uroce_context_destroy(struct uroce_context *ctx);

/**
 * Run the transport once: receive, process, fire timers, transmit.
 * EMBEDDED mode only. Once the context has found no work for
 * UROCE_IDLE_YIELD_US microseconds (environment, read at create: 0 to
 * 1000000 or "off"; default 20), each idle call yields the CPU.
 * @param ctx the context
 * @return the amount of work done (0 when idle), or a negative errno
 *         (-EINVAL for a DEDICATED context)
 */
int uroce_progress(struct uroce_context *ctx);

/** A context's engine, from its start: a DEDICATED context's thread, or
 * an EMBEDDED context's uroce_progress calls. */
struct uroce_engine_stats {
	uint64_t cpu_ns;       /**< CPU time the engine thread ran (a pinned engine spins: about its wall time when it
	                        * had its core); 0 for EMBEDDED, whose loops run on the application's thread */
	uint64_t passes;       /**< loops of the engine (receive, process, timers, transmit) */
	uint64_t idle_passes;  /**< of those, loops that found no work */
	int cpu;               /**< the CPU the thread is pinned to, -1 when not (and for EMBEDDED) */
	uint64_t timers;       /**< timers that fired (retransmission, deadlines, probes, pacing) and slow-path
	                        * events (a link or GID change, a failover step) */
};

/**
 * The engine's loops, and a DEDICATED engine thread's CPU time.
 * @param ctx the context
 * @param st filled with the counters since the engine started
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_engine_stats(struct uroce_context *ctx, struct uroce_engine_stats *st);

/** A port's attributes, as ibv_query_port/ibv_query_gid would give them. */
struct uroce_port_attr {
	uint8_t mac[6];
	uint32_t ipv4_be;       /**< the port's (first) IPv4 address */
	uint8_t gid[16];        /**< its IPv4-mapped GID `::ffff:a.b.c.d` (an entry of the GID table) */
	uint32_t l3_mtu;        /**< the link's IP MTU */
	int active_mtu;         /**< enum uroce_mtu the link carries */
	int link_up;
	int gid_tbl_len;        /**< entries in the port's GID table now: indices 0..gid_tbl_len-1 */
	/** A verbs port whose device stamps completions (1): the engine takes
	 * arrival times for RTT samples from those stamps; 0: from its own
	 * clock as it polls (frame ports, and NICs without, such as rxe). */
	int completion_ts;
	/** An afxdp port's XDP: UROCE_XDP_NATIVE (the driver's) or
	 * UROCE_XDP_GENERIC (the kernel's skb mode, taken only when the spec
	 * asks: afxdp:IFACE:QUEUE:generic); UROCE_XDP_NONE on other ports. */
	int xdp_mode;
	/** An afxdp port's socket is bound zero-copy (1) or in copy mode (0). */
	int zero_copy;
	/** What the port could not do as its spec asked, or as its driver
	 * wants it done, and what to change: zero-copy asked for
	 * (afxdp:IFACE:QUEUE:zc) and refused, a virtio_net device with too
	 * few queue pairs for XDP's own TX queues. "" when none. */
	char note[512];
	/** What carries the port: enum uroce_port_kind (the spec's prefix). */
	int kind;
	/** The kernel network interface behind the port: an afxdp port's, a
	 * verbs device's netdev, the one a dpdk driver names (net_af_packet);
	 * "" when there is none (loop, most dpdk ports). */
	char ifname[16];
	int ifindex;            /**< its index in the context's namespace, 0 when none */
	/** An afxdp port: the interface queue its socket is bound to, and
	 * the receive queues the interface has in use now (0 when the
	 * kernel does not say). 0 and 0 on other ports. */
	uint32_t queue;
	uint32_t nqueues;
	/** A verbs port's RDMA device (ibv_get_device_name), "" otherwise. */
	char ibdev[64];
	/** The device's own port number: a verbs device's port, a dpdk
	 * port's DPDK port id, a loop port's fabric index; 0 on afxdp. */
	uint32_t dev_port;
	/** enum uroce_mtu: the largest path MTU the port takes
	 * (ibv_port_attr.max_mtu): UROCE_MTU_4096 on frame ports, a verbs
	 * device's own on a verbs port. active_mtu is what the link carries. */
	int max_mtu;
};

/** uroce_port_attr.xdp_mode */
enum uroce_xdp_mode { UROCE_XDP_NONE = 0, UROCE_XDP_NATIVE = 1, UROCE_XDP_GENERIC = 2 };

/** uroce_port_attr.kind: the backend behind a port (docs/ports.md). */
enum uroce_port_kind {
	UROCE_PORT_LOOP = 0,   /**< loop:INDEX, the in-process fabric */
	UROCE_PORT_AFXDP = 1,  /**< afxdp:IFACE[:QUEUE[:MODE]] */
	UROCE_PORT_DPDK = 2,   /**< dpdk[:PORTID] */
	UROCE_PORT_VERBS = 3,  /**< verbs:DEV[:PORT], an RDMA NIC */
};

/**
 * Number of ports of the context (ibv_device_attr.phys_port_cnt); port
 * numbers run from 1 to this.
 * @param ctx the context
 * @return the number of ports (1..UROCE_MAX_PORTS), or -EINVAL for a NULL ctx
 */
int uroce_num_ports(const struct uroce_context *ctx);

/**
 * Query a port of the context (ibv_query_port).
 * @param ctx the context
 * @param port_num the port, 1..uroce_num_ports
 * @param attr filled with the port's attributes
 * @return 0, or -EINVAL (a NULL argument, a port_num out of range; the
 *         message gives the accepted range)
 */
int uroce_query_port(struct uroce_context *ctx, uint8_t port_num, struct uroce_port_attr *attr);

/**
 * Entry index of the GID table of port port_num (ibv_query_gid). The
 * table is laid out as rxe and ConnectX lay theirs (one entry per address,
 * RoCEv2 only): index 0 is the link-local fe80:: EUI-64 computed from the
 * port's MAC (not necessarily an address the kernel has), then every IPv4
 * address of the interface mapped (`::ffff:a.b.c.d`), then its other IPv6
 * addresses that are neither host-scope nor still in duplicate address
 * detection: global ones, and a kernel link-local that differs from the
 * EUI-64 one (as with addr_gen_mode stable_privacy). A loop port has
 * fe80:: EUI-64 of its MAC, `::ffff:10.0.H.L` and `fd00::HHLL` (port
 * HHLL - 1); a dpdk port only fe80:: EUI-64 of its MAC and its IPv4 GID.
 * The table follows the kernel's addresses as they come and go
 * (UROCE_EVENT_GID_CHANGE says it changed, and indices after the first may
 * then name other addresses); uroce_query_port's gid_tbl_len is its size.
 * @param ctx the context
 * @param port_num the port, 1..uroce_num_ports
 * @param index the entry, 0..gid_tbl_len - 1
 * @param gid filled with the entry's 16 bytes
 * @return 0; -EINVAL for a NULL ctx or gid, a negative index or a port_num
 *         outside 1..uroce_num_ports; -ENOENT for an index past the end (the
 *         message gives the accepted range); -EAGAIN when the engine thread
 *         kept rewriting the table while it was read (rare: try again)
 */
int uroce_query_gid(struct uroce_context *ctx, uint8_t port_num, int index, uint8_t gid[16]);

/**
 * Counters of a port (packets, bytes, drops by reason). Drops the
 * transport makes count on the port the packet arrived on.
 * @param ctx the context
 * @param port_num the port, 1..uroce_num_ports
 * @param stats filled with the counters
 * @return 0, or -EINVAL (a NULL argument, a port_num out of range)
 */
int uroce_port_stats(struct uroce_context *ctx, uint8_t port_num, struct uroce_port_stats *stats);

/** A capture's counts (uroce_port_capture_stop). */
struct uroce_capture_stats {
	uint64_t frames;   /**< frames written */
	uint64_t bytes;
	uint64_t missed;   /**< frames not written: past max_frames, or after a write failed */
	int error;         /**< the first failed write's negative errno, 0 when none */
};

/**
 * Capture every frame a port receives (before any check: ARP and
 * frames later dropped included) and sends, into a classic pcap file
 * (Ethernet, nanosecond timestamps: Wireshark and uroce-pcap read it). The
 * only view of an AF_XDP port's traffic: tcpdump on the interface sees none
 * of it. Frame ports only.
 * @param ctx the context
 * @param port_num the port, 1..uroce_num_ports
 * @param path the file to create (truncated if it exists)
 * @param max_frames the most frames written; 0 = 1000000
 * @return 0; -EOPNOTSUPP on a verbs port; -EBUSY when a capture already runs
 *         there; -EINVAL or the file's errno otherwise (uroce_last_error()
 *         says why)
 */
int uroce_port_capture_start(struct uroce_context *ctx, uint8_t port_num, const char *path, uint64_t max_frames);
/**
 * Stop a port's capture and close its file.
 * @param ctx the context
 * @param port_num the port, 1..uroce_num_ports
 * @param st gets the capture's counts; may be NULL
 * @return 0, -ENOENT when no capture runs there, or the first failed write's
 *         negative errno
 */
int uroce_port_capture_stop(struct uroce_context *ctx, uint8_t port_num, struct uroce_capture_stats *st);

/**
 * Allocate a protection domain.
 * @param ctx the context
 * @param out the new PD, on success
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_pd_alloc(struct uroce_context *ctx, struct uroce_pd **out);
/**
 * Free a protection domain; every MR, QP, SRQ and AH on it must be gone.
 * @param pd the PD
 * @return 0, -EBUSY while objects remain on it, -EINVAL for a NULL pd
 */
int uroce_pd_free(struct uroce_pd *pd);

/** Memory access rights (same values as enum ibv_access_flags). */
enum uroce_access_flags {
	UROCE_ACCESS_LOCAL_WRITE = 1,
	UROCE_ACCESS_REMOTE_WRITE = (1 << 1),
	UROCE_ACCESS_REMOTE_READ = (1 << 2),
	UROCE_ACCESS_REMOTE_ATOMIC = (1 << 3),
	UROCE_ACCESS_MW_BIND = (1 << 4), /**< memory windows may be bound to the region */
};

/** A registered memory region. */
struct uroce_mr {
	struct uroce_pd *pd;
	void *addr;      /**< first byte */
	size_t length;
	uint32_t lkey;   /**< for local SGEs */
	uint32_t rkey;   /**< for the peer's RETH / AtomicETH */
	int access;      /**< enum uroce_access_flags */
	unsigned flags;  /**< enum uroce_mr_flags: how a dmabuf region is reached */
};

/** How a region registered from a dmabuf is reached (uroce_mr.flags). */
enum uroce_mr_flags {
	/** The NIC reads and writes the dmabuf itself (ibv_reg_dmabuf_mr):
	 * GPU memory moves without a host copy. */
	UROCE_MR_DMABUF_DIRECT = 1 << 0,
	/** The dmabuf is mapped into this process and the region is that
	 * mapping: the engine (afxdp, dpdk) copies through it. */
	UROCE_MR_DMABUF_MAPPED = 1 << 1,
};

/**
 * Register [addr, addr+length) with the given access (ibv_reg_mr).
 * @param pd the PD
 * @param addr the first byte
 * @param length bytes, at least 1
 * @param access enum uroce_access_flags, ORed
 * @param out the new region (its lkey and rkey), on success
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_mr_reg(struct uroce_pd *pd, void *addr, size_t length, int access, struct uroce_mr **out);
/**
 * Register length bytes of a dmabuf (fd), from offset within it.
 *  - verbs port: ibv_reg_dmabuf_mr (flags DIRECT); the peer names
 *    iova..iova+length, as with any NIC. A device without dmabuf MRs
 *    (rxe) fails with -EOPNOTSUPP and says so: a dmabuf's mapping cannot
 *    be pinned for an MR, so register the buffer's host pages instead
 *    (uroce_mr_reg), as NCCL falls back.
 *  - afxdp / dpdk port: the dmabuf is mapped into this process and the
 *    engine copies through the mapping; the peer names the mapped address
 *    (mr->addr), so iova must be 0. A dmabuf that cannot be mapped (most
 *    GPU memory) is refused: stage it through host memory (gpu/).
 *
 * @param pd the PD
 * @param fd the dmabuf's file descriptor
 * @param offset where the region starts in the dmabuf
 * @param length bytes
 * @param iova the address the peer names (verbs port); 0 on other ports
 * @param access enum uroce_access_flags, ORed
 * @param out the new region (mr->flags says how it is reached), on success
 * @return 0; -EOPNOTSUPP (see above); -EINVAL for an fd that is not a
 *         dmabuf (the message says what it is) or bad arguments; another
 *         negative errno from the kernel or the NIC
 */
int uroce_mr_reg_dmabuf(struct uroce_pd *pd, int fd, uint64_t offset, size_t length, uint64_t iova, int access,
                        struct uroce_mr **out);
/* ----------------------------------------------------------------------
 * GPU memory (gpu/). CUDA is the driver loaded at run time
 * (libcuda.so.1); without it the same calls take host memory and copy
 * with memcpy (the CPU backend), so code written for GPUs runs anywhere.
 * ---------------------------------------------------------------------- */

/**
 * The GPU backend in use.
 * @return the string "cuda" when the CUDA driver is loaded and
 *         initialised, else "cpu"
 */
const char *uroce_gpu_backend(void);
/**
 * Why the backend is what it is (e.g. "no CUDA driver (dlopen ...)").
 * @return the reason, a string owned by the library
 */
const char *uroce_gpu_backend_why(void);
/**
 * Register length bytes at ptr, host or CUDA device memory. Host memory:
 * uroce_mr_reg. CUDA memory on a verbs port: a dmabuf of it
 * (cuMemGetHandleForAddressRange) given to the NIC, the peer naming ptr;
 * where the NIC has no dmabuf MRs, ibv_reg_mr of ptr if nvidia-peermem is
 * loaded (as NCCL does); else -EOPNOTSUPP. CUDA memory on an afxdp or dpdk
 * port: -EOPNOTSUPP (the engine copies with the CPU): use a stage.
 * @param pd the PD
 * @param ptr the first byte, host or device memory
 * @param length bytes
 * @param access enum uroce_access_flags, ORed
 * @param out the new region, on success
 * @return 0, -EOPNOTSUPP (see above), or another negative errno
 */
int uroce_mr_reg_gpu(struct uroce_pd *pd, void *ptr, size_t length, int access, struct uroce_mr **out);

/** A staging buffer: pinned host memory (cuMemHostAlloc; mlock'ed host
 * memory with the CPU backend), registered, that GPU data passes through
 * on ports where the NIC cannot reach GPU memory (UCCL's AF_XDP path). */
struct uroce_gpu_stage;
/**
 * Create a staging buffer of length bytes, pinned and registered on pd.
 * @param pd the PD its region is registered on
 * @param length bytes
 * @param access enum uroce_access_flags of its region
 * @param out the new stage, on success
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_gpu_stage_create(struct uroce_pd *pd, size_t length, int access, struct uroce_gpu_stage **out);
/**
 * Deregister and free a staging buffer.
 * @param s the stage
 * @return 0, or a negative errno (-EBUSY while its region is in use, as
 *         uroce_mr_dereg; -EINVAL for a NULL s)
 */
int uroce_gpu_stage_destroy(struct uroce_gpu_stage *s);
/**
 * The stage's region: SGEs and rkeys name mr->addr .. + length.
 * @param s the stage
 * @return its region, or NULL for a NULL s
 */
struct uroce_mr *uroce_gpu_stage_mr(const struct uroce_gpu_stage *s);
/**
 * Copy len bytes from src (device or host memory) to the stage at off,
 * before a send.
 * @param s the stage
 * @param off offset in the stage
 * @param src the source, device or host memory
 * @param len bytes
 * @return 0, -EINVAL (a range outside the stage, a NULL buffer), -EIO (the
 *         CUDA copy failed)
 */
int uroce_gpu_stage_in(struct uroce_gpu_stage *s, size_t off, const void *src, size_t len);
/**
 * Copy len bytes of the stage at off to dst (device or host memory),
 * after a receive.
 * @param s the stage
 * @param off offset in the stage
 * @param dst the destination, device or host memory
 * @param len bytes
 * @return 0, -EINVAL (a range outside the stage, a NULL buffer), -EIO (the
 *         CUDA copy failed)
 */
int uroce_gpu_stage_out(struct uroce_gpu_stage *s, size_t off, void *dst, size_t len);

/* ----------------------------------------------------------------------
 * OptiNIC's block-wise Hadamard coding (section 3.2): a lost packet of
 * encoded float32 data becomes small noise spread over its blocks instead
 * of a run of zeroed values. The buffer is cut into groups of block x
 * stride floats; block b (0 .. stride-1) of a group is its floats
 * b, b + stride, b + 2 stride, ... (block of them), so every packet of a
 * group carries packet/stride coefficients of each of its stride blocks
 * (OptiNIC's interleaving; stride 1: contiguous blocks, one block per
 * count: one transform over the message). Each block gets the orthonormal
 * fast Walsh-Hadamard transform (scaled by 1/sqrt(block)), which is its
 * own inverse: decode is encode. The butterflies run in a fixed order
 * (distance stride, 2 stride, ... within a group, the scale last), so the
 * CPU (AVX2 or scalar) and the CUDA kernels give the same bits.
 * ---------------------------------------------------------------------- */
/**
 * Encode count floats in place.
 * @param buf host memory (NULL only with count 0)
 * @param count floats, a multiple of block x stride
 * @param block a power of two, 2 .. 2^24
 * @param stride a power of two, 1 .. 65536, block x stride <= 2^28
 * @return 0, or -EINVAL (uroce_last_error() says which argument and what is accepted)
 */
int uroce_hadamard_encode(float *buf, size_t count, uint32_t block, uint32_t stride);
/**
 * Decode in place what uroce_hadamard_encode encoded (the same transform);
 * zeroed (lost) coefficients come out as noise spread over their blocks.
 * @param buf host memory (NULL only with count 0)
 * @param count floats, a multiple of block x stride
 * @param block as encoded
 * @param stride as encoded
 * @return as uroce_hadamard_encode
 */
int uroce_hadamard_decode(float *buf, size_t count, uint32_t block, uint32_t stride);
/**
 * uroce_hadamard_encode on CUDA device memory, queued on a stream (the
 * kernels are liburoce's own, loaded through the driver at run time; the
 * call returns once they are queued).
 * @param dbuf device memory of the calling thread's current context
 * @param count floats, a multiple of block x stride
 * @param block a power of two, 2 .. 2^24
 * @param stride a power of two, 1 .. 65536, block x stride <= 2^28
 * @param stream a CUstream / cudaStream_t, or NULL for the default stream
 * @return 0, -EINVAL (arguments, as uroce_hadamard_encode), -ENODEV (no
 *         CUDA driver), -ENOTSUP (liburoce was built without nvcc), -EIO
 *         (the driver refused the module or the launch; uroce_last_error())
 */
int uroce_hadamard_encode_cuda(float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream);
/**
 * uroce_hadamard_decode on device memory, queued on a stream.
 * @param dbuf device memory of the calling thread's current context
 * @param count floats, a multiple of block x stride
 * @param block as encoded
 * @param stride as encoded
 * @param stream a CUstream / cudaStream_t, or NULL for the default stream
 * @return as uroce_hadamard_encode_cuda
 */
int uroce_hadamard_decode_cuda(float *dbuf, size_t count, uint32_t block, uint32_t stride, void *stream);

/**
 * Deregister a region: the rkey is revoked at once, so late packets
 * cannot write.
 * @param mr the region
 * @return 0, -EBUSY while a memory window is bound to the region, -EINVAL
 */
int uroce_mr_dereg(struct uroce_mr *mr);

/* ----------------------------------------------------------------------
 * Memory windows (ibv_alloc_mw / IBV_WR_BIND_MW), type 2 only: a window
 * is bound to one QP by a BIND_MW work request on that QP, and its rkey
 * then opens [addr, addr+length) of a region (with UROCE_ACCESS_MW_BIND)
 * to that QP's peer alone. LOCAL_INV, a SEND with Invalidate from the peer
 * or a be receive that ends by timeout revokes it: from then on packets
 * carrying the key are dropped (UROCE_DROP_RKEY_REVOKED) and cannot write.
 * ---------------------------------------------------------------------- */

/** Window type (same values as enum ibv_mw_type). */
enum uroce_mw_type {
	UROCE_MW_TYPE_1 = 1, /**< not supported: bound by a verb call, not a WR */
	UROCE_MW_TYPE_2 = 2,
};

struct uroce_mw {
	struct uroce_pd *pd;
	uint32_t rkey;           /**< the key of its last bind (index << 8 | key byte) */
	enum uroce_mw_type type;
};

/** What a BIND_MW work request opens (ibv_mw_bind_info). */
struct uroce_mw_bind_info {
	struct uroce_mr *mr;     /**< the region under the window: same PD, UROCE_ACCESS_MW_BIND */
	uint64_t addr;
	uint64_t length;
	unsigned mw_access_flags; /**< REMOTE_WRITE / REMOTE_READ / REMOTE_ATOMIC, a subset the region allows */
};

/**
 * Allocate a memory window (type 2 only); it starts invalid.
 * @param pd the PD
 * @param type UROCE_MW_TYPE_2 (type 1 is refused)
 * @param out the new window, on success
 * @return 0, -EINVAL (type 1, a NULL argument), -EOPNOTSUPP on a verbs
 *         port, -ENOMEM (every key in use, or no memory)
 */
int uroce_mw_alloc(struct uroce_pd *pd, enum uroce_mw_type type, struct uroce_mw **out);
/**
 * Free a window (valid or not); its key is revoked at once.
 * @param mw the window
 * @return 0, or -EINVAL for a NULL mw
 */
int uroce_mw_dealloc(struct uroce_mw *mw);
/**
 * The next key of a window: the low 8 bits (the caller's part)
 * incremented (ibv_inc_rkey).
 * @param rkey the window's key
 * @return rkey with its low byte incremented (wrapping within the byte)
 */
static inline uint32_t uroce_inc_rkey(uint32_t rkey)
{
	return (rkey & 0xffffff00u) | ((rkey + 1u) & 0xffu);
}

/**
 * Create a completion queue of at least cqe entries (rounded up to a
 * power of two).
 * @param ctx the context
 * @param cqe entries wanted, at least 1
 * @param out the new CQ, on success
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_cq_create(struct uroce_context *ctx, int cqe, struct uroce_cq **out);
/**
 * Destroy a CQ; no QP may still use it.
 * @param cq the CQ
 * @return 0, -EBUSY while a QP uses it (or, with a completion channel,
 *         while some of its events are not acknowledged), -EINVAL
 */
int uroce_cq_destroy(struct uroce_cq *cq);

/** Completion status (same values as enum ibv_wc_status). */
enum uroce_wc_status {
	UROCE_WC_SUCCESS = 0,
	UROCE_WC_LOC_LEN_ERR,
	UROCE_WC_LOC_QP_OP_ERR,
	UROCE_WC_LOC_EEC_OP_ERR,
	UROCE_WC_LOC_PROT_ERR,
	UROCE_WC_WR_FLUSH_ERR,
	UROCE_WC_MW_BIND_ERR,
	UROCE_WC_BAD_RESP_ERR,
	UROCE_WC_LOC_ACCESS_ERR,
	UROCE_WC_REM_INV_REQ_ERR,
	UROCE_WC_REM_ACCESS_ERR,
	UROCE_WC_REM_OP_ERR,
	UROCE_WC_RETRY_EXC_ERR,
	UROCE_WC_RNR_RETRY_EXC_ERR,
	UROCE_WC_LOC_RDD_VIOL_ERR,
	UROCE_WC_REM_INV_RD_REQ_ERR,
	UROCE_WC_REM_ABORT_ERR,
	UROCE_WC_INV_EECN_ERR,
	UROCE_WC_INV_EEC_STATE_ERR,
	UROCE_WC_FATAL_ERR,
	UROCE_WC_RESP_TIMEOUT_ERR,
	UROCE_WC_GENERAL_ERR,
};

/**
 * Text of a completion status, as ibv_wc_status_str gives it.
 * @param status a completion status
 * @return the text, or "unknown" for a value outside the enum
 */
const char *uroce_wc_status_str(enum uroce_wc_status status);

/** Completion opcode (same values as enum ibv_wc_opcode). */
enum uroce_wc_opcode {
	UROCE_WC_SEND = 0,
	UROCE_WC_RDMA_WRITE,
	UROCE_WC_RDMA_READ,
	UROCE_WC_COMP_SWAP,
	UROCE_WC_FETCH_ADD,
	UROCE_WC_BIND_MW,
	UROCE_WC_LOCAL_INV,
	UROCE_WC_RECV = 128,
	UROCE_WC_RECV_RDMA_WITH_IMM,
};

/** Completion flags (same values as enum ibv_wc_flags). */
enum uroce_wc_flags {
	UROCE_WC_GRH = 1 << 0,
	UROCE_WC_WITH_IMM = 1 << 1,
	UROCE_WC_WITH_INV = 1 << 3,  /**< a SEND with Invalidate: invalidated_rkey was revoked */
	/** sr/ec partial-completion receive, or a be WR that ended before its
	 * message was whole: byte_len is the bytes placed (be: sent). */
	UROCE_WC_PARTIAL = 1 << 8,
	/** be: the WR's deadline ended it. */
	UROCE_WC_TIMEOUT = 1 << 9,
	/** be: a packet of a newer message ended it (OptiNIC's preemption). */
	UROCE_WC_PREEMPTED = 1 << 10,
	/** be with rel.hd_block: the buffer was decoded (zeros where packets were lost, then the transform). */
	UROCE_WC_HADAMARD = 1 << 11,
};

/** One work completion. */
struct uroce_wc {
	uint64_t wr_id;
	enum uroce_wc_status status;
	enum uroce_wc_opcode opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	union {
		uint32_t imm_data;        /**< network byte order, as in ibv_wc */
		uint32_t invalidated_rkey; /**< with UROCE_WC_WITH_INV */
	};
	uint32_t qp_num;
	uint32_t src_qp;     /**< UD: the sender's QPN */
	unsigned wc_flags;   /**< enum uroce_wc_flags */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/**
 * Poll up to n completions (ibv_poll_cq); one thread per CQ.
 * @param cq the CQ
 * @param n the most completions to take
 * @param wc an array of n entries, filled from the first
 * @return how many completions were taken (0..n), or a negative errno
 *         (-EINVAL, -EIO once the CQ overran and is in error)
 */
int uroce_poll_cq(struct uroce_cq *cq, int n, struct uroce_wc *wc);

/* ---- Completion events (ibv_comp_channel) ------------------------------
 * An fd that becomes readable when an armed CQ gets a completion, so an
 * application can sleep in poll() while the engine works: for DEDICATED
 * contexts (an EMBEDDED context completes work only inside
 * uroce_progress). Arming is one-shot, as in verbs; the loop is: wait,
 * uroce_get_cq_event, uroce_ack_cq_events, uroce_req_notify_cq, then poll
 * the CQ empty. Not on a verbs port's context (-EOPNOTSUPP). */
struct uroce_comp_channel;

/**
 * Create a completion channel.
 * @param ctx the context whose CQs it serves
 * @param out the channel
 * @return 0, or a negative errno (-EOPNOTSUPP on a verbs port's context)
 */
int uroce_comp_channel_create(struct uroce_context *ctx, struct uroce_comp_channel **out);
/**
 * Destroy a channel that no CQ uses any more.
 * @param ch the channel
 * @return 0, -EBUSY while a CQ still uses it, -EINVAL
 */
int uroce_comp_channel_destroy(struct uroce_comp_channel *ch);
/**
 * The channel's file descriptor, for poll()/epoll; readable when an event
 * waits. Make it O_NONBLOCK (fcntl) for uroce_get_cq_event to return
 * -EAGAIN instead of blocking.
 * @param ch the channel
 * @return the fd, or -EINVAL
 */
int uroce_comp_channel_fd(const struct uroce_comp_channel *ch);
/**
 * Give a CQ its channel (ibv_create_cq's channel and cq_context), before
 * any QP uses the CQ; once per CQ.
 * @param cq the CQ
 * @param ch the channel (of the CQ's context)
 * @param cq_context returned with each of its events
 * @return 0, -EBUSY (a QP uses it, or it has a channel), -ENOSPC (the
 *         channel serves 256 CQs), -EINVAL
 */
int uroce_cq_set_channel(struct uroce_cq *cq, struct uroce_comp_channel *ch, void *cq_context);
/**
 * Arm a CQ: its next completion makes one event on its channel.
 * @param cq the CQ, with a channel
 * @param solicited_only must be 0 (solicited-only arming is not supported)
 * @return 0, -EOPNOTSUPP for solicited_only, -EINVAL without a channel
 */
int uroce_req_notify_cq(struct uroce_cq *cq, int solicited_only);
/**
 * Wait for the next event of the channel (blocks unless its fd is
 * O_NONBLOCK); the CQ is disarmed by it.
 * @param ch the channel
 * @param cq the CQ that had a completion
 * @param cq_context its cq_context (may be NULL)
 * @return 0, -EAGAIN (non-blocking fd, no event), or a negative errno
 */
int uroce_get_cq_event(struct uroce_comp_channel *ch, struct uroce_cq **cq, void **cq_context);
/**
 * Acknowledge events of a CQ; uroce_cq_destroy refuses while some are not.
 * @param cq the CQ
 * @param nevents how many of its events
 */
void uroce_ack_cq_events(struct uroce_cq *cq, unsigned nevents);

/** Shared receive queue. */
struct uroce_srq_init_attr {
	uint32_t max_wr;
	uint32_t max_sge;
};
/**
 * Create a shared receive queue of attr->max_wr entries of
 * attr->max_sge SGEs.
 * @param pd the PD
 * @param attr its size
 * @param out the new SRQ, on success
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_srq_create(struct uroce_pd *pd, const struct uroce_srq_init_attr *attr, struct uroce_srq **out);
/**
 * Destroy an SRQ; no QP may still use it.
 * @param srq the SRQ
 * @return 0, -EBUSY while a QP uses it, -EINVAL
 */
int uroce_srq_destroy(struct uroce_srq *srq);

/** Path MTU (same values as enum ibv_mtu). */
enum uroce_mtu {
	UROCE_MTU_256 = 1,
	UROCE_MTU_512 = 2,
	UROCE_MTU_1024 = 3,
	UROCE_MTU_2048 = 4,
	UROCE_MTU_4096 = 5,
};

/**
 * Bytes of a path MTU.
 * @param mtu an enum uroce_mtu
 * @return 256..4096, or 0 for a value outside the enum
 */
uint32_t uroce_mtu_bytes(enum uroce_mtu mtu);

/** Where packets of a QP or AH go (ibv_ah_attr with a GRH, for RoCEv2). */
struct uroce_ah_attr {
	uint8_t dgid[16];        /**< peer GID: `::ffff:a.b.c.d` or an IPv6 address */
	uint8_t sgid_index;      /**< source GID: an index of the port's table (uroce_query_gid), of the dgid's family */
	uint8_t traffic_class;   /**< DSCP << 2 | ECN */
	uint8_t hop_limit;       /**< 0 = 64 */
	uint32_t flow_label;
	uint8_t sl;
	uint8_t dmac[6];         /**< optional: all zero = resolve from the dgid */
	/** Port the packets leave by: 1..uroce_num_ports. 0 = port 1 for an
	 * AH, the QP's own port in a QP's ah_attr (which must not name
	 * another). */
	uint8_t port_num;
};

/**
 * Create an address handle for UD sends; a UD QP sends only through AHs
 * of its own port. The destination MAC is resolved here, not per packet.
 * @param pd the PD
 * @param attr where the packets go
 * @param out the new AH, on success
 * @return 0, or a negative errno (uroce_last_error() says why)
 */
int uroce_ah_create(struct uroce_pd *pd, const struct uroce_ah_attr *attr, struct uroce_ah **out);
/**
 * Destroy an address handle.
 * @param ah the AH
 * @return 0, or -EINVAL for a NULL ah
 */
int uroce_ah_destroy(struct uroce_ah *ah);

/** Queue pair transport (same values as enum ibv_qp_type). */
enum uroce_qp_type {
	UROCE_QPT_RC = 2,
	UROCE_QPT_UC = 3,
	UROCE_QPT_UD = 4,
};

/** QP state (same values as enum ibv_qp_state). */
enum uroce_qp_state {
	UROCE_QPS_RESET = 0,
	UROCE_QPS_INIT,
	UROCE_QPS_RTR,
	UROCE_QPS_RTS,
	UROCE_QPS_SQD,
	UROCE_QPS_SQE,
	UROCE_QPS_ERR,
};

/**
 * Name of a QP state ("RTS").
 * @param state a QP state
 * @return the name, or "unknown" for a value outside the enum
 */
const char *uroce_qp_state_str(enum uroce_qp_state state);

struct uroce_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/** How a connected QP recovers from loss; both ends must choose the same
 * (docs/reliability.md). */
enum uroce_reliability {
	UROCE_REL_RC = 0, /**< IBTA go-back-N: wire-compatible with rdma-core and RoCE NICs */
	UROCE_REL_SR,     /**< selective repeat: SACK bitmaps, time-based loss detection (uroce at both ends) */
	UROCE_REL_EC,     /**< erasure coding (k data + m parity chunks), repaired by sr when decoding fails */
	UROCE_REL_BE,     /**< best effort (OptiNIC): nothing is retransmitted; a WR completes when its message is
	                   * whole, at its deadline or when a newer message arrives, with the bytes placed */
	UROCE_REL__COUNT
};

/** When the receiver completes messages (sr/ec; rc is always ordered). */
enum uroce_ordering {
	UROCE_ORDER_ORDERED = 0, /**< in the order the peer posted them */
	UROCE_ORDER_UNORDERED,   /**< each as soon as it is whole */
	UROCE_ORDER__COUNT
};

/** Erasure code of an ec QP. */
enum uroce_ec_code {
	UROCE_EC_RS = 0, /**< Reed-Solomon (ISA-L): any k of the k+m chunks decode */
	UROCE_EC_XOR,    /**< parity i = XOR of the data chunks j with j % m == i */
	UROCE_EC__COUNT
};

/** How an sr sender decides a packet is lost. */
enum uroce_loss_detect {
	UROCE_LOSS_RACK = 0, /**< a later packet was acknowledged and a reordering window passed; tail-loss probe; RTO */
	UROCE_LOSS_RTO,      /**< only the retransmission timeout (SDR's "SR RTO") */
	UROCE_LOSS__COUNT
};

/** Reliability attributes of a QP; all zero = rc. Zero fields take the
 * defaults named. */
struct uroce_rel_attr {
	enum uroce_reliability reliability;
	enum uroce_ordering ordering;
	enum uroce_loss_detect loss;
	uint32_t rto_min_us;     /**< floor of the RTO (srtt + 4 rttvar); 0 = 200 us */
	uint32_t rto_rtts;       /**< nonzero: RTO = rto_rtts x srtt instead (still >= the floor) */
	uint32_t window_pkts;    /**< packets in flight, 16..1024; 0 = 256 */
	uint32_t window_bytes;   /**< bytes in flight; 0 = window_pkts x MTU */
	enum uroce_ec_code ec_code;
	uint8_t ec_k, ec_m;      /**< chunks per submessage: 1 <= k <= 64, 1 <= m <= 32; 0 = 32 and 8 */
	uint32_t ec_fto_us;      /**< the receiver NACKs a message silent this long (fallback to sr); 0 = 1 ms */
	uint32_t chunk_pkts;     /**< partial-completion bitmap: MTUs per chunk; 0 = 1 */
	uint32_t timeout_us;     /**< be: deadline of every WR that names none (uroce_qp_set_timeout
	                          * changes it); 0 = 1000 us */
	/** rc/sr/ec/be: WRITE_WITH_IMM messages this QP receives take no
	 * receive WR and make no completion: they count in the context's
	 * IMMCOUNTER (uroce_expect_imm_count). Such a QP carries WRITE and
	 * WRITE_WITH_IMM only (TransferEngine keeps SENDs on another QP). */
	uint8_t imm_counter;
	/** sr/ec/be: the peer's packets are keyed by their immediate, not by
	 * the BTH PSN, which a NIC's UC QPs number on their own (one PSN space
	 * per QP: the verbs data path, or uroce talking to it). Every message
	 * opens with a descriptor carrying the receiver's token (sr/ec: and
	 * its first PSN); a data packet counts only once its descriptor
	 * arrived. Both ends set it. Such a QP carries SEND, SEND_WITH_IMM
	 * and RDMA_WRITE_WITH_IMM (a NIC reports no completion for a plain
	 * WRITE, so none could be keyed), whole messages (no streams). */
	uint8_t imm_keyed;
	/** sr/ec/be on a verbs port: the segments go on a pool of the NIC's
	 * RC QPs instead of UC QPs (a NIC without UC; UCCL's fallback). The
	 * peer is on a verbs port and sets it too: RC QPs are paired one to
	 * one, the pool's numbers exchanged in-band at connect. */
	uint8_t nic_rc;
	/** ec: a message of fewer data packets than this goes as sr (no
	 * parity, no descriptors): below one submessage, parity and the two
	 * descriptors cost more packets than sr's repair of a loss (a 4-packet
	 * SEND at RS(32,8) takes 7 PSNs, sr's 4). 0 = ec_k; 1 = every message
	 * carries parity. The receiver needs no setting. */
	uint16_t ec_min_pkts;
	/** be: the peer's SENDs carry float32 data it encoded with
	 * uroce_hadamard_encode(buf, n, hd_block, hd_stride) (OptiNIC 3.2).
	 * The bytes of a receive's packets that never arrived are set to zero
	 * and, when uroce_poll_cq takes its completion (UROCE_WC_HADAMARD),
	 * the receive's buffer is decoded in place, on the polling thread:
	 * what was lost reads as noise spread over its blocks. Decoded are the
	 * message's whole groups (4 x hd_block x hd_stride bytes each; the
	 * message's length, or the buffer's where no packet said it); a tail
	 * shorter than a group is left as it arrived. Receive WRs of such a QP
	 * take one SGE, 4-byte aligned. 0 = off; else a power of two, 2..2^24. */
	uint32_t hd_block;
	uint32_t hd_stride;      /**< with hd_block: a power of two, 1..65536; 0 = 1 */
};

/** How a QP spreads its packets over its paths (UCCL section 4.1). */
enum uroce_path_policy {
	UROCE_PATH_DEFAULT = 0, /**< p2c with more than one path, else single */
	UROCE_PATH_SINGLE,      /**< every packet on one path (the first usable one) */
	UROCE_PATH_P2C,         /**< power of two choices: the lower RTT of two random usable paths */
	UROCE_PATH_RR,          /**< round robin over the usable paths */
	UROCE_PATH_RANDOM,      /**< a uniformly random usable path */
	UROCE_PATH__COUNT
};

#define UROCE_MAX_PATHS 256u
#define UROCE_SPRAY_MIN_DEFAULT 8192u

/** Paths of an sr, ec or be QP. A path is a UDP source port (RoCEv2's
 * entropy field, which switches hash for ECMP), leaving by one of the
 * context's ports; the addresses stay the QP's. Paths are the sender's
 * choice alone: the peer needs no setting. rc, uc and ud keep one path. */
struct uroce_path_attr {
	uint16_t npaths;          /**< 1..UROCE_MAX_PATHS; 0 = 1 */
	enum uroce_path_policy policy;
	uint32_t spray_min_bytes; /**< shorter messages take one path (the policy's first choice, kept per
	                           * message); 0 = UROCE_SPRAY_MIN_DEFAULT; UINT32_MAX = never spray */
	uint8_t nports;           /**< egress ports path i rotates over (i % nports); 0 = the QP's port */
	uint8_t ports[UROCE_MAX_PORTS]; /**< port numbers, 1..uroce_num_ports */
	uint32_t down_losses;     /**< losses in a row that take a path out of use; 0 = 8 */
};

/** Congestion control of an sr or ec QP (be: none or dcqcn). */
enum uroce_cc {
	UROCE_CC_NONE = 0,  /**< the reliability window alone */
	UROCE_CC_DCQCN,     /**< rate-based on ECN: CNPs from the receiver (NVIDIA's defaults) */
	UROCE_CC_SWIFT,     /**< delay-based window (Swift): fabric and endpoint delay targets */
	UROCE_CC_CUBIC,     /**< loss-based window, one per path (C 0.4, beta 0.7) */
	UROCE_CC_EQDS,      /**< receiver-driven: the receiver's pacer pulls data with credits */
	UROCE_CC__COUNT
};

struct uroce_cc_attr {
	enum uroce_cc algo;
	uint32_t link_mbps;       /**< the link rate: DCQCN's line rate, pacing caps, EQDS's pull pacer of the
	                           * receiving port (the last QP that names one sets it); 0 = 10000 */
	uint32_t base_rtt_us;     /**< the unloaded RTT: Swift's base target, one BDP of speculative EQDS
	                           * data; 0 = 20 */
	uint32_t ack_every_pkts;  /**< sr/ec: the sender asks for a SACK at least every this many PSNs
	                           * (ACK coalescing); 0 = 16 */
};

/**
 * Name of a path policy ("p2c").
 * @param p a path policy
 * @return the name, or NULL for a value outside the enum
 */
const char *uroce_path_policy_str(enum uroce_path_policy p);
/**
 * Parse a path policy's name: "default", "single", "p2c", "rr" or
 * "random".
 * @param s the name
 * @param out set to the policy on success
 * @return 0, or -EINVAL for an unknown name (out untouched)
 */
int uroce_path_policy_parse(const char *s, enum uroce_path_policy *out);
/**
 * Name of a congestion controller ("dcqcn").
 * @param cc a controller
 * @return the name, or NULL for a value outside the enum
 */
const char *uroce_cc_str(enum uroce_cc cc);
/**
 * Parse a congestion controller's name: "none", "dcqcn", "swift",
 * "cubic" or "eqds".
 * @param s the name
 * @param out set to the controller on success
 * @return 0, or -EINVAL for an unknown name (out untouched)
 */
int uroce_cc_parse(const char *s, enum uroce_cc *out);

/** Most members of a QP's failover group: the primary and its backups. */
#define UROCE_FO_MAX_MEMBERS 4

/**
 * Failover (SHIFT, docs/failover.md): an rc or sr QP with backups survives
 * losing its port. Member 0 is the QP's own port and ah_attr (the
 * primary); member i (1..nbackups) is uroce_qp_attr.backup_ah[i - 1],
 * given with UROCE_QP_ALT_PATH at INIT -> RTR: a port of this context and
 * the peer's GID behind it. Both sides list the members in the same order
 * (member i joins the same pair of ports seen from either end). A member
 * fails on its port's link going down (the carrier, read every 100 us), on rto_fail
 * retransmission timeouts in a row, or on err_threshold receive errors
 * (bad ICRC, bad length) on its port within 1 ms; the QP rewinds what is
 * outstanding from the last acknowledged PSN onto the next member that is
 * up, tells the peer over it, probes the failed member every probe_us and
 * fails back when it answers (WaitSignaled, WaitSinked: the backup drains
 * first, so order holds). Like an sr/ec QP, a QP with backups takes two QP
 * numbers (data, then control for notices and probes); its peer must be
 * uroce with the same members. All zero = no failover.
 */
struct uroce_failover_attr {
	uint8_t nbackups;         /**< 0 = no failover; 1..UROCE_FO_MAX_MEMBERS - 1 */
	uint8_t rto_fail;         /**< retransmission timeouts in a row that fail the active member; 0 = 3 */
	uint8_t no_fail_back;     /**< 1 = stay on the backup when the primary comes back */
	uint32_t err_threshold;   /**< receive errors on a port within 1 ms that fail its members; 0 = 64 */
	uint32_t probe_us;        /**< a failed member is probed this often; 0 = 500 */
	uint32_t down_timeout_ms; /**< every member failed this long: outstanding WRs complete with
	                           * UROCE_WC_RETRY_EXC_ERR and the QP goes to ERR; 0 = 10000 */
};

/** SHIFT's send-side states (section 4.2), one QP's. */
enum uroce_fo_state {
	UROCE_FO_DEFAULT = 0,       /**< on the primary */
	UROCE_FO_FALLBACK,          /**< on a backup; the primary is probed */
	UROCE_FO_WAIT_SIGNALED,     /**< the primary answered: the backup finishes the message it is sending */
	UROCE_FO_WAIT_SINKED,       /**< nothing new is sent until everything sent on the backup is acknowledged */
	UROCE_FO__COUNT
};
/**
 * Name of a failover state.
 * @param s a failover state
 * @return the name: "Default", "Fallback", "WaitSignaled" or
 *         "WaitSinked"; NULL for a value outside the enum
 */
const char *uroce_fo_state_str(enum uroce_fo_state s);

/** Why a member was failed. */
enum uroce_fo_cause {
	UROCE_FO_CAUSE_NONE = 0,
	UROCE_FO_CAUSE_LINK,        /**< its port's link went down */
	UROCE_FO_CAUSE_RTO,         /**< retransmission timeouts */
	UROCE_FO_CAUSE_ERRORS,      /**< receive errors on its port crossed err_threshold */
	UROCE_FO_CAUSE_PEER,        /**< the peer said so (it lost its side of the member) */
	UROCE_FO_CAUSE__COUNT
};
/**
 * Name of the cause a failover member was failed for.
 * @param c a cause
 * @return the name, or NULL for a value outside the enum
 */
const char *uroce_fo_cause_str(enum uroce_fo_cause c);

/** A QP's failover state (uroce_qp_failover_info). Times are the
 * engine's clock (CLOCK_MONOTONIC for afxdp and dpdk ports). */
struct uroce_failover_info {
	enum uroce_fo_state state;
	enum uroce_fo_cause last_cause;
	uint8_t nmembers;
	uint8_t active;               /**< member carrying traffic: 0 = primary */
	uint8_t up_mask;              /**< bit i: member i is usable */
	uint64_t failovers;           /**< switches away from a failed member */
	uint64_t failbacks;           /**< returns to the primary */
	uint64_t last_fail_ns;        /**< when the last failure was detected */
	uint64_t last_switch_tx_ns;   /**< when the first packet left by the member switched to then */
	uint64_t rewound_pkts;        /**< packets sent again because their member failed */
	uint64_t notices_sent, notices_rcvd;
	uint64_t probes_sent, probes_answered;
};
/**
 * Read a QP's failover state.
 * @param qp a QP with backups
 * @param info filled with its members, state and counters
 * @return 0, or -EINVAL (NULL arguments, a QP without backups)
 */
int uroce_qp_failover_info(struct uroce_qp *qp, struct uroce_failover_info *info);

struct uroce_qp_init_attr {
	enum uroce_qp_type qp_type;
	struct uroce_cq *send_cq;
	struct uroce_cq *recv_cq;
	struct uroce_srq *srq;   /**< NULL = the QP has its own receive queue */
	struct uroce_qp_cap cap; /**< in: wanted; out: granted */
	int sq_sig_all;          /**< every send WR is signaled */
	void *qp_context;
	/** RC only: rc, sr or ec. An sr/ec QP takes two QP numbers: its own
	 * for data and the next one for control (SACK/NACK). */
	struct uroce_rel_attr rel;
	struct uroce_path_attr path; /**< sr/ec/be: spraying; all zero = one path */
	struct uroce_cc_attr cc;     /**< sr/ec/be: congestion control; all zero = none */
	struct uroce_failover_attr failover; /**< rc/sr: backups in a port group; all zero = none */
};

/**
 * Name of a reliability mode ("sr").
 * @param rel a reliability mode
 * @return the name, or NULL for a value outside the enum
 */
const char *uroce_reliability_str(enum uroce_reliability rel);
/**
 * Parse a reliability mode's name: "rc", "sr", "ec" or "be".
 * @param s the name
 * @param out set to the mode on success
 * @return 0, or -EINVAL for an unknown name (out untouched)
 */
int uroce_reliability_parse(const char *s, enum uroce_reliability *out);
/**
 * Name of an ordering ("ordered" or "unordered").
 * @param ord an ordering
 * @return the name, or NULL for a value outside the enum
 */
const char *uroce_ordering_str(enum uroce_ordering ord);
/**
 * Parse "ordered" or "unordered".
 * @param s the name
 * @param out set to the ordering on success
 * @return 0, or -EINVAL for an unknown name (out untouched)
 */
int uroce_ordering_parse(const char *s, enum uroce_ordering *out);

/** Attribute mask for uroce_qp_modify (same values as enum ibv_qp_attr_mask). */
enum uroce_qp_attr_mask {
	UROCE_QP_STATE = 1 << 0,
	UROCE_QP_CUR_STATE = 1 << 1,
	UROCE_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	UROCE_QP_ACCESS_FLAGS = 1 << 3,
	UROCE_QP_PKEY_INDEX = 1 << 4,
	UROCE_QP_PORT = 1 << 5,
	UROCE_QP_QKEY = 1 << 6,
	UROCE_QP_AV = 1 << 7,
	UROCE_QP_PATH_MTU = 1 << 8,
	UROCE_QP_TIMEOUT = 1 << 9,
	UROCE_QP_RETRY_CNT = 1 << 10,
	UROCE_QP_RNR_RETRY = 1 << 11,
	UROCE_QP_RQ_PSN = 1 << 12,
	UROCE_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	UROCE_QP_ALT_PATH = 1 << 14,
	UROCE_QP_MIN_RNR_TIMER = 1 << 15,
	UROCE_QP_SQ_PSN = 1 << 16,
	UROCE_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	UROCE_QP_PATH_MIG_STATE = 1 << 18,
	UROCE_QP_CAP = 1 << 19,
	UROCE_QP_DEST_QPN = 1 << 20,
	/** dest_token: the peer's uroce_qp_token(); required at INIT -> RTR by a QP
	 * with a control QPN (sr, ec, be, or failover backups) */
	UROCE_QP_DEST_TOKEN = 1 << 21,
	/** dest_ctrl_qpn: the peer's uroce_qp_ctrl_num(), optional at INIT ->
	 * RTR; without it the peer's control QPN is dest_qp_num + 1 (what a
	 * uroce QP on a frame port has). A peer on a verbs port has the NIC's
	 * numbers, so exchange it there. */
	UROCE_QP_DEST_CTRL_QPN = 1 << 22,
	/** attr.sports / num_sports (RC and UC, INIT -> RTR): the UDP source
	 * ports this QP sends from, chosen by the peer so that its NIC's RSS
	 * brings them to the queue of the engine that owns the peer QP (the
	 * peer's uroce_steer_sports()). Without it the ports follow from the
	 * QPNs. */
	UROCE_QP_SPORTS = 1 << 23,
};

/** Most source ports one QP takes (attr.sports). */
#define UROCE_MAX_SPORTS 16

/** QP attributes (the fields of ibv_qp_attr that RoCE uses). */
struct uroce_qp_attr {
	enum uroce_qp_state qp_state;
	enum uroce_qp_state cur_qp_state;
	enum uroce_mtu path_mtu;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	int qp_access_flags;     /**< enum uroce_access_flags the responder allows */
	struct uroce_qp_cap cap;
	struct uroce_ah_attr ah_attr;
	uint16_t pkey_index;
	uint8_t port_num;        /**< the QP's port, 1..uroce_num_ports (set in RESET -> INIT) */
	uint8_t max_rd_atomic;   /**< outstanding READ/atomic as requester */
	uint8_t max_dest_rd_atomic; /**< responder resources */
	uint8_t min_rnr_timer;   /**< IBTA encoding 0-31 */
	uint8_t timeout;         /**< local ACK timeout: 4.096 us * 2^timeout, 0 = infinite */
	uint8_t retry_cnt;       /**< 0-7 */
	uint8_t rnr_retry;       /**< 0-7, 7 = infinite */
	/** failover.nbackups > 0: the backups (UROCE_QP_ALT_PATH at INIT ->
	 * RTR), each with its port_num (1..uroce_num_ports) and the peer's
	 * GID behind that port. */
	struct uroce_ah_attr backup_ah[UROCE_FO_MAX_MEMBERS - 1];
	/** The peer QP's token (its uroce_qp_token()), exchanged at connect as
	 * the QPN and PSN are (UROCE_QP_DEST_TOKEN at INIT -> RTR). Every
	 * control packet this QP sends carries it; the peer drops one without
	 * it (UROCE_DROP_BAD_TOKEN). 0 names a peer without one (a NIC's UC
	 * QP that sends no control). */
	uint32_t dest_token;
	/** The peer's control QPN (UROCE_QP_DEST_CTRL_QPN), from its uroce_qp_ctrl_num(). */
	uint32_t dest_ctrl_qpn;
	/** On a verbs context, with backup_ah (UROCE_QP_ALT_PATH): the peer's
	 * numbers behind backup i, from its uroce_qp_port_nums() for the port
	 * of that member. Each device numbers its own QPs, so every member
	 * has its own. Zero on a frame context (one number on every port). */
	uint32_t backup_dest_qpn[UROCE_FO_MAX_MEMBERS - 1];
	uint32_t backup_dest_ctrl_qpn[UROCE_FO_MAX_MEMBERS - 1];
	/** UROCE_QP_SPORTS: path i (of the QP's paths) sends from
	 * sports[i % num_sports], and so does everything else the QP sends
	 * (ACKs, control) on that path; num_sports 1..UROCE_MAX_SPORTS, every
	 * port nonzero. Give one per path for paths of their own. */
	uint16_t sports[UROCE_MAX_SPORTS];
	uint8_t num_sports;
};

/**
 * Several engines on one NIC, each context on a queue of its own
 * (afxdp:IFACE:QUEUE): UDP source ports that the NIC's RSS (its Toeplitz
 * key and indirection table, as ethtool -x shows them) sends to the
 * port's queue when a packet comes from peer_gid to local_gid. The peer
 * gives them to its QP as attr.sports. IPv4-mapped GIDs only. The ports
 * hold while the NIC's key and table stay as they were.
 * @param ctx the context (one queue of an afxdp port)
 * @param port_num the port, 1..uroce_num_ports
 * @param local_gid the GID packets arrive at; NULL: the port's IPv4 address
 * @param peer_gid the GID packets come from
 * @param sports filled with n source ports
 * @param n how many, 1..UROCE_MAX_SPORTS
 * @return 0; -EINVAL (arguments); -EOPNOTSUPP, with the reason, for a port
 *         that is not afxdp, IPv6 GIDs, a NIC without readable RSS, one that
 *         does not hash UDP ports or sends nothing to the queue
 */
int uroce_steer_sports(struct uroce_context *ctx, uint8_t port_num, const uint8_t local_gid[16],
                       const uint8_t peer_gid[16], uint16_t *sports, unsigned n);

/**
 * Create a QP in RESET. Its number is uroce_qp_num(qp).
 * @param pd the PD
 * @param attr its type, CQs, SRQ, capacities (rounded up and written
 *        back) and reliability, path, congestion and failover attributes
 * @param out the new QP, on success
 * @return 0, or a negative errno (-EINVAL, -EOPNOTSUPP, -ENOMEM when no
 *         memory or QP number is left, -EIO; uroce_last_error() says why)
 */
int uroce_qp_create(struct uroce_pd *pd, struct uroce_qp_init_attr *attr, struct uroce_qp **out);
/**
 * Destroy a QP in any state; its outstanding work is dropped without
 * completions.
 * @param qp the QP
 * @return 0, or -EINVAL for a NULL qp
 */
int uroce_qp_destroy(struct uroce_qp *qp);
/**
 * Move the QP through the IBTA state machine (ibv_modify_qp).
 * @param qp the QP
 * @param attr the attributes
 * @param mask enum uroce_qp_attr_mask: which fields of attr count
 * @return 0, or -EINVAL for a transition not allowed, a required attribute
 *         missing or one not taken, a value out of range (uroce_last_error()
 *         names it and what is accepted)
 */
int uroce_qp_modify(struct uroce_qp *qp, const struct uroce_qp_attr *attr, int mask);
/**
 * Read back the QP's attributes (ibv_query_qp).
 * @param qp the QP
 * @param attr filled with its attributes
 * @param init filled with its creation attributes; may be NULL
 * @return 0, or -EINVAL for a NULL qp or attr
 */
int uroce_qp_query(struct uroce_qp *qp, struct uroce_qp_attr *attr, struct uroce_qp_init_attr *init);
/**
 * The QP number (24 bits; 0x11 and up) the peer puts in its BTH.
 * @param qp the QP
 * @return the number, or 0 for a NULL qp
 */
uint32_t uroce_qp_num(const struct uroce_qp *qp);
/**
 * The QP's random token (never 0), drawn at creation: the peer gives it
 * as attr.dest_token at INIT -> RTR, and every sr/ec/be/failover/timeout
 * control packet to this QP must carry it. Exchange it with the QPN and
 * PSN; it is a secret between the two ends.
 * @param qp the QP
 * @return the token, or 0 for a NULL qp
 */
uint32_t uroce_qp_token(const struct uroce_qp *qp);
/**
 * The QPN the QP's control packets (SACKs, NACKs, notices) arrive at,
 * for the peer's attr.dest_ctrl_qpn: its QPN + 1 on a frame port, the
 * NIC's control QP on a verbs port.
 * @param qp the QP
 * @return the QPN, or 0 for a QP without one (rc, uc, ud without backups)
 *         or a NULL qp
 */
uint32_t uroce_qp_ctrl_num(const struct uroce_qp *qp);
/**
 * The numbers the peer names for this QP on one of its context's ports:
 * on a verbs context a QP with backups has NIC QPs on every port, each
 * device numbering its own, and the peer gives port p's as
 * attr.backup_dest_qpn / backup_dest_ctrl_qpn of the member on p;
 * elsewhere (or port 1) they are uroce_qp_num() and uroce_qp_ctrl_num().
 * @param qp the QP
 * @param port_num the port, 1..uroce_num_ports
 * @param qpn set to the QPN on that port
 * @param ctrl_qpn set to the control QPN on that port (0 when none)
 * @return 0, or -EINVAL (NULL arguments, a port the QP has no numbers on)
 */
int uroce_qp_port_nums(const struct uroce_qp *qp, uint8_t port_num, uint32_t *qpn, uint32_t *ctrl_qpn);

/** A scatter/gather element (ibv_sge). */
struct uroce_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/** Send work request opcodes (same values as enum ibv_wr_opcode). */
enum uroce_wr_opcode {
	UROCE_WR_RDMA_WRITE = 0,
	UROCE_WR_RDMA_WRITE_WITH_IMM,
	UROCE_WR_SEND,
	UROCE_WR_SEND_WITH_IMM,
	UROCE_WR_RDMA_READ,
	UROCE_WR_ATOMIC_CMP_AND_SWP,
	UROCE_WR_ATOMIC_FETCH_AND_ADD,
	UROCE_WR_LOCAL_INV,      /**< revoke the window whose key is invalidate_rkey */
	UROCE_WR_BIND_MW,        /**< bind bind_mw.mw under key bind_mw.rkey */
	UROCE_WR_SEND_WITH_INV,  /**< SEND that revokes the peer's window invalidate_rkey on arrival */
};

/** Send flags (same values as enum ibv_send_flags). */
enum uroce_send_flags {
	UROCE_SEND_FENCE = 1 << 0,
	UROCE_SEND_SIGNALED = 1 << 1,
	UROCE_SEND_SOLICITED = 1 << 2,
	UROCE_SEND_INLINE = 1 << 3,
};

struct uroce_send_wr {
	uint64_t wr_id;
	struct uroce_send_wr *next;
	struct uroce_sge *sg_list;
	int num_sge;
	enum uroce_wr_opcode opcode;
	unsigned send_flags;   /**< enum uroce_send_flags */
	union {
		uint32_t imm_data;        /**< network byte order, as in ibv_send_wr */
		uint32_t invalidate_rkey; /**< LOCAL_INV, SEND_WITH_INV */
	};
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct uroce_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
	struct {
		struct uroce_mw *mw;
		uint32_t rkey;     /**< the window's new key: uroce_inc_rkey(mw->rkey) */
		struct uroce_mw_bind_info bind_info;
	} bind_mw;
	uint32_t timeout_us;   /**< be: this WR's deadline from its post; 0 = the QP's */
};

struct uroce_recv_wr {
	uint64_t wr_id;
	struct uroce_recv_wr *next;
	struct uroce_sge *sg_list;
	int num_sge;
	uint32_t timeout_us;   /**< be: this WR's deadline, counted from when it is the oldest receive; 0 = the QP's */
};

/**
 * Post a chain of send WRs (ibv_post_send).
 * @param qp the QP
 * @param wr the first WR; each next one follows wr->next
 * @param bad_wr on error, set to the first WR not posted
 * @return 0, -EINVAL (a WR the QP cannot take; uroce_last_error() says
 *         why), -ENOMEM (the send queue is full)
 */
int uroce_post_send(struct uroce_qp *qp, struct uroce_send_wr *wr, struct uroce_send_wr **bad_wr);
/**
 * Post a chain of receive WRs to the QP's own receive queue
 * (ibv_post_recv).
 * @param qp the QP
 * @param wr the first WR; each next one follows wr->next
 * @param bad_wr on error, set to the first WR not posted
 * @return 0, -EINVAL (a QP with an SRQ, a bad SGE), -ENOMEM (the receive
 *         queue is full)
 */
int uroce_post_recv(struct uroce_qp *qp, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr);
/**
 * Post a chain of receive WRs to a shared receive queue
 * (ibv_post_srq_recv).
 * @param srq the SRQ
 * @param wr the first WR; each next one follows wr->next
 * @param bad_wr on error, set to the first WR not posted
 * @return 0, -EINVAL (a bad SGE), -ENOMEM (the SRQ is full)
 */
int uroce_post_srq_recv(struct uroce_srq *srq, struct uroce_recv_wr *wr, struct uroce_recv_wr **bad_wr);

/* ----------------------------------------------------------------------
 * Asynchronous events (ibv_get_async_event). uroce is poll-mode, so
 * uroce_get_async_event never blocks: it returns -EAGAIN when no event is
 * waiting. Events are kept in a ring of UROCE_ASYNC_EVENT_MAX entries per
 * context; when it is full the oldest are kept and the newest counted as
 * lost (uroce_async_events_lost).
 * ---------------------------------------------------------------------- */

/** Most events waiting in a context at once. */
#define UROCE_ASYNC_EVENT_MAX 256

/** Event type (same values as enum ibv_event_type). */
enum uroce_event_type {
	UROCE_EVENT_CQ_ERR = 0,          /**< a CQ overran: it is in error, its QPs are fatal */
	UROCE_EVENT_QP_FATAL = 1,        /**< a QP moves to ERR after a CQ overrun, or its RC responder
	                                  * NAKed a syndrome other than invalid request or remote
	                                  * access error; a requester whose WRs complete in error
	                                  * (retries exceeded, NAKs received) raises no event */
	UROCE_EVENT_QP_REQ_ERR = 2,      /**< a QP's RC responder NAKed invalid request; the QP moves to ERR */
	UROCE_EVENT_QP_ACCESS_ERR = 3,   /**< a QP's RC responder NAKed remote access error; the QP moves to ERR */
	UROCE_EVENT_COMM_EST = 4,
	UROCE_EVENT_SQ_DRAINED = 5,
	UROCE_EVENT_PATH_MIG = 6,
	UROCE_EVENT_PATH_MIG_ERR = 7,
	UROCE_EVENT_DEVICE_FATAL = 8,
	UROCE_EVENT_PORT_ACTIVE = 9,     /**< a port's link came up */
	UROCE_EVENT_PORT_ERR = 10,       /**< a port's link went down */
	UROCE_EVENT_LID_CHANGE = 11,
	UROCE_EVENT_PKEY_CHANGE = 12,
	UROCE_EVENT_SM_CHANGE = 13,
	UROCE_EVENT_SRQ_ERR = 14,
	UROCE_EVENT_SRQ_LIMIT_REACHED = 15,
	UROCE_EVENT_QP_LAST_WQE_REACHED = 16,
	UROCE_EVENT_CLIENT_REREGISTER = 17,
	UROCE_EVENT_GID_CHANGE = 18,     /**< a port's GID table changed */
};

/**
 * Name of an event type ("local catastrophic error" style text, as
 * ibv_event_type_str gives it).
 * @param type an event type
 * @return the name, or "unknown" for a value outside the enum
 */
const char *uroce_event_type_str(enum uroce_event_type type);

/** One asynchronous event (ibv_async_event). */
struct uroce_async_event {
	union {
		struct uroce_cq *cq;
		struct uroce_qp *qp;
		struct uroce_srq *srq;
		int port_num;
	} element;
	enum uroce_event_type event_type;
};

/**
 * Take the oldest waiting asynchronous event (ibv_get_async_event,
 * without blocking). One thread at a time may call it: the ring has a
 * single consumer. An event names its object: take and handle the events
 * of a QP or CQ before destroying it (as ibverbs requires), since an event
 * still waiting after the destroy names a freed object.
 * @param ctx the context
 * @param event filled with the event
 * @return 0, -EAGAIN when none waits, -EINVAL for NULL arguments
 */
int uroce_get_async_event(struct uroce_context *ctx, struct uroce_async_event *event);
/**
 * Acknowledge an event (ibv_ack_async_event); kept for verbs symmetry.
 * It does nothing: destroying a QP or CQ does not wait for its events to be
 * acknowledged, so take and handle them before the destroy (an event still
 * waiting after it names a freed object). Events are taken by one thread at
 * a time.
 * @param event the event uroce_get_async_event gave
 */
void uroce_ack_async_event(struct uroce_async_event *event);
/**
 * Events lost because the context's event ring was full.
 * @param ctx the context
 * @return how many, since the context was created (0 for a NULL ctx)
 */
uint64_t uroce_async_events_lost(struct uroce_context *ctx);

/** Partial completion (SDR-RDMA's API) on sr and ec QPs; docs/api.md.
 *
 * A receive handle is a receive WR with a chunk bitmap: bit i says chunk i
 * (rel.chunk_pkts x path MTU bytes of the buffer) has arrived whole. The
 * application can watch the bitmap while the message arrives and complete
 * the receive before it is whole; later packets of the message are then
 * dropped (they cannot write into the buffer any more). Either way exactly
 * one completion comes for the handle on the receive CQ, with
 * UROCE_WC_PARTIAL when chunks were missing. Every handle is given back
 * with uroce_precv_complete, before the QP is destroyed. */
struct uroce_precv;
/**
 * Post a receive of one buffer with a chunk bitmap (own receive queue,
 * not an SRQ). The handle is valid until uroce_precv_complete.
 * @param qp an sr or ec QP
 * @param sge the buffer
 * @param wr_id the completion's wr_id
 * @param out the handle, on success
 * @return 0, -EINVAL (not an sr/ec QP, a QP with an SRQ, a bad SGE),
 *         -ENOMEM
 */
int uroce_precv_post(struct uroce_qp *qp, const struct uroce_sge *sge, uint64_t wr_id, struct uroce_precv **out);
/**
 * Copy up to nwords 64-bit words of the chunk bitmap into bits. Any
 * thread.
 * @param h the handle
 * @param bits filled with the bitmap, bit i for chunk i
 * @param nwords words bits has room for
 * @return the message's chunk count (of the posted buffer until the
 *         message's length is known), or a negative errno
 */
int uroce_precv_bitmap(struct uroce_precv *h, uint64_t *bits, uint32_t nwords);
/**
 * Give the handle back. If its message is not complete yet it completes
 * now, as it is (UROCE_WC_PARTIAL).
 * @param h the handle (invalid after a 0 return)
 * @return 0, or -EBUSY when the receive cannot be completed yet because
 *         SR_MSG_WIN (64) earlier messages are unfinished (try again)
 */
int uroce_precv_complete(struct uroce_precv *h);

/** Streaming send on sr and ec QPs: one message of length bytes, sent in
 * pieces at any offsets (a retransmission of a chunk is a piece sent
 * again); the receiver sees one message. The one-shot send is an ordinary
 * SEND. Offsets are multiples of the path MTU; a piece is a multiple of the
 * MTU long unless it ends the message. wr_id completes on the send CQ once
 * uroce_pstream_end was called and every piece is acknowledged; the handle
 * is freed by uroce_pstream_end. */
struct uroce_pstream;
/**
 * Start a streamed message of length bytes.
 * @param qp an sr or ec QP in RTS
 * @param length the message's bytes
 * @param wr_id the send completion's wr_id
 * @param out the stream, on success
 * @return 0, -EINVAL (not an sr/ec QP, a length out of range), -ENOMEM
 */
int uroce_pstream_start(struct uroce_qp *qp, uint32_t length, uint64_t wr_id, struct uroce_pstream **out);
/**
 * Send one piece of a streamed message: sge's bytes at offset.
 * @param s the stream
 * @param offset a multiple of the path MTU
 * @param sge the piece: a multiple of the MTU long unless it ends the message
 * @return 0, or a negative errno (-EINVAL for a piece out of range or
 *         misaligned)
 */
int uroce_pstream_continue(struct uroce_pstream *s, uint32_t offset, const struct uroce_sge *sge);
/**
 * End a streamed message: every piece was given; frees the stream.
 * @param s the stream (invalid afterwards)
 * @return 0, or a negative errno (-EINVAL for a NULL s)
 */
int uroce_pstream_end(struct uroce_pstream *s);

/** Per-QP counters. */
struct uroce_qp_stats {
	uint64_t tx_packets, rx_packets;
	uint64_t retransmits;        /**< packets sent again (timeout, NAK) */
	uint64_t timeouts;           /**< local ACK timeouts */
	uint64_t seq_naks_sent, seq_naks_rcvd;
	uint64_t rnr_naks_sent, rnr_naks_rcvd;
	uint64_t duplicates;         /**< duplicate requests seen by the responder */
	uint64_t out_of_sequence;    /**< packets ahead of the expected PSN */
	uint64_t access_errors;      /**< requests refused for rkey/bounds/access */
	uint64_t credit_waits;       /**< RC: a SEND/WRITE_IMM held back for lack of the peer's credits */
	/* sr / ec */
	uint64_t sacks_sent, sacks_rcvd;
	uint64_t rack_losses;        /**< packets declared lost by RACK (a later one was acknowledged) */
	uint64_t tlp_probes;         /**< tail-loss probes sent */
	uint64_t rto_losses;         /**< packets declared lost by the retransmission timeout */
	uint64_t spurious_retx;      /**< retransmitted packets whose first copy had arrived (seen as duplicates) */
	uint64_t parity_sent;        /**< ec parity packets sent */
	uint64_t ec_recovered;       /**< ec data packets rebuilt by decoding */
	uint64_t ec_nacks_sent, ec_nacks_rcvd;
	uint64_t srtt_ns, rto_ns;    /**< the sr sender's smoothed RTT and RTO now */
	/* be */
	uint64_t be_timeouts;        /**< WRs ended by their deadline */
	uint64_t be_preempted;       /**< receives ended by a newer message */
	uint64_t late_drops;         /**< packets of finished messages dropped (UROCE_DROP_LATE) */
	uint64_t op_ns, op_bytes;    /**< every be receive WR that completed: time it was active and bytes placed
	                              * (their ratio is the per-byte cost adaptive timeouts use) */
	uint64_t imm_counted;        /**< WRITE_WITH_IMM messages counted in the IMMCOUNTER */
	/* congestion control and paths (sr/ec; CNPs on every connected QP) */
	uint64_t cnps_sent;          /**< CNPs sent for packets that arrived marked CE */
	uint64_t cnps_rcvd;
	uint64_t ecn_ce_rcvd;        /**< packets that arrived marked CE */
	uint64_t trims_rcvd;         /**< receiver: packets that arrived trimmed by a switch (NACKed at once) */
	uint64_t trim_nacks_rcvd;    /**< sender: packets the receiver said arrived trimmed */
	uint64_t cc_blocked;         /**< transmit attempts a controller, a pacer or the paths held back */
	uint64_t cc_losses;          /**< losses the controllers were told of */
	uint64_t cc_rts_sent, cc_rts_rcvd;     /**< EQDS requests to send */
	uint64_t cc_pulls_sent, cc_pulls_rcvd; /**< EQDS credit grants */
	uint64_t paths_down;         /**< times a path was taken out of use (losses in a row) */
	uint64_t cc_rate_bps;        /**< the controller's pacing rate now (0 = not paced) */
	uint64_t cc_window_bytes;    /**< its window now (UINT64_MAX = none; CUBIC: the sum over paths) */
	uint64_t dup_sacks_held;     /**< sr/ec receiver: duplicates not answered with a SACK of their own
	                              * (one SACK for duplicates per RTT, or per RTO floor before a sample) */
	uint64_t ec_nacks_early;     /**< ec NACKs (of ec_nacks_sent) sent because later packets showed a
	                              * submessage undecodable, before the fallback timeout */
	uint64_t ec_decode_tables;   /**< ec decodes that built tables for a loss pattern not cached */
};

/** One path of an sr/ec/be QP (uroce_qp_path_stats). */
struct uroce_path_stats {
	uint16_t sport;              /**< its UDP source port */
	uint8_t port_num;            /**< the port it leaves by */
	uint8_t up;                  /**< 1 = in use; 0 = taken out after losses in a row (probed later) */
	uint32_t inflight_bytes;
	uint64_t srtt_ns, min_rtt_ns;
	uint64_t tx_pkts, acked_pkts, losses, ecn_marks, trims;
	uint64_t cc_window_bytes;    /**< its own controller's window (CUBIC), else 0 */
};
/**
 * Counters of one path of an sr/ec/be QP.
 * @param qp the QP
 * @param i the path, 0..npaths-1
 * @param stats filled with the path's counters
 * @return 0, -EINVAL (not a sprayed mode, i out of range, before RTR),
 *         -EOPNOTSUPP (a QP on the NIC of a verbs port)
 */
int uroce_qp_path_stats(struct uroce_qp *qp, unsigned i, struct uroce_path_stats *stats);
/**
 * Read a QP's counters.
 * @param qp the QP
 * @param stats filled with the counters
 * @return 0, -EINVAL for NULL arguments, -EOPNOTSUPP for a QP on the NIC of
 *         a verbs port (read the NIC's counters)
 */
int uroce_qp_stats(struct uroce_qp *qp, struct uroce_qp_stats *stats);

/**
 * be: the deadline of every later WR of qp that names none (adaptive
 * timeouts call it).
 * @param qp a be QP
 * @param timeout_us the deadline, microseconds, at least 1
 * @return 0, or -EINVAL (not a be QP, or timeout_us 0)
 */
int uroce_qp_set_timeout(struct uroce_qp *qp, uint32_t timeout_us);

/* ----------------------------------------------------------------------
 * IMMCOUNTER (TransferEngine): completion by counting immediates, not by
 * order. Every WRITE_WITH_IMM message a QP created with rel.imm_counter
 * receives adds one to the context's counter for its immediate, whatever
 * QP or port it came by. An expectation fires once its immediate has
 * been counted count times since the expectations before it on that
 * immediate took theirs: the count is taken off, then *flag is set to 1
 * and cb runs (on the engine's thread: inside uroce_progress for an
 * embedded context). Counts that arrive first wait for their expectation.
 * An entry goes once its counts are taken; at most 16384 immediates with
 * counts nobody expects are kept (a count beyond that is dropped as
 * UROCE_DROP_TABLE_FULL, its message placed and acknowledged), and room
 * stays for expectations (docs/api.md).
 * ---------------------------------------------------------------------- */
typedef void (*uroce_imm_cb)(void *arg, uint32_t imm_data);
/**
 * Expect count arrivals of imm_data; when they are in, *flag is set to 1
 * and cb runs (on the engine's thread: inside uroce_progress for an
 * embedded context).
 * @param ctx the context
 * @param imm_data the immediate, network order, as posted
 * @param count arrivals to wait for, at least 1
 * @param cb called once when they are in; may be NULL
 * @param arg cb's first argument
 * @param flag set to 1 when they are in; may be NULL
 * @return 0, -EINVAL (count 0), -ENOMEM
 */
int uroce_expect_imm_count(struct uroce_context *ctx, uint32_t imm_data, uint32_t count, uroce_imm_cb cb, void *arg,
                           int *flag);
/**
 * Arrivals of imm_data counted and not yet taken by an expectation.
 * @param ctx the context
 * @param imm_data the immediate, network order
 * @return the count (0 for a NULL ctx)
 */
uint64_t uroce_imm_count(struct uroce_context *ctx, uint32_t imm_data);

/* ----------------------------------------------------------------------
 * Striping (TransferEngine's DomainGroup): one transfer split over the
 * QPs of a stripe, one QP per pair of ports. The two sides may have
 * different numbers of ports: with n_local and n_remote ports each side
 * makes max(n_local, n_remote) QPs, and QP i joins local port
 * i % n_local + 1 to remote port i % n_remote + 1 (a port that serves two
 * QPs carries two shares: shards are equal in size). Each shard is one
 * WRITE_WITH_IMM carrying the transfer's immediate, so the receiver
 * completes the transfer with IMMCOUNTER, whatever order the ports deliver
 * in (its QPs need rel.imm_counter):
 * uroce_expect_imm_count(ctx, imm, uroce_stripe_shards(...)). A stripe
 * only lists its QPs: destroy it before them; posting runs on the
 * caller's thread like uroce_post_send (embedded or dedicated). docs/api.md.
 * ---------------------------------------------------------------------- */
struct uroce_stripe;
/**
 * A stripe over nqps distinct connected (RTS) QPs of one context and
 * one PD, RC-type with reliability rc, sr or ec.
 * @param qps the QPs; shard i goes on qps[i]
 * @param nqps 1..UROCE_MAX_PORTS
 * @param min_shard the shortest shard in bytes; 0 = 64 KiB
 * @param out the stripe, on success
 * @return 0, -EINVAL (the reason in uroce_last_error), -ENOMEM
 */
int uroce_stripe_create(struct uroce_qp *const *qps, unsigned nqps, uint32_t min_shard, struct uroce_stripe **out);
/**
 * Free a stripe (before its QPs are destroyed).
 * @param s the stripe
 * @return 0, or -EINVAL for a NULL s
 */
int uroce_stripe_destroy(struct uroce_stripe *s);
/**
 * How many shards a transfer of len bytes takes over nqps QPs (both
 * sides compute it).
 * @param len the transfer's bytes
 * @param nqps the stripe's QPs
 * @param min_shard the stripe's min_shard; 0 = 64 KiB
 * @return min(nqps, ceil(len / min_shard)), at least 1 (len 0 is one shard
 *         of 0 bytes); shard i goes on QP i
 */
unsigned uroce_stripe_shards(uint64_t len, unsigned nqps, uint32_t min_shard);
/** One striped write: [addr, addr + len) of lkey to remote_addr under rkey
 * (the peer's rkey serves all its QPs: one context, one PD). Shard i is
 * [i len / n, (i + 1) len / n), its inner boundaries rounded down to 4 KiB
 * when every shard is at least 8 KiB. */
struct uroce_stripe_write {
	uint64_t wr_id;          /**< each shard's completion carries it (with UROCE_SEND_SIGNALED) */
	uint64_t addr;
	uint64_t len;
	uint32_t lkey;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t imm_data;       /**< network order; the receiver counts it once per shard */
	unsigned send_flags;     /**< UROCE_SEND_SIGNALED, UROCE_SEND_FENCE (on every shard) */
};
/**
 * Post the shards of one striped write (one WRITE_WITH_IMM per QP used).
 * Every shard is checked first, so on error nothing is posted.
 * @param s the stripe
 * @param w the write
 * @param nshards set to the number of shards on success; may be NULL
 * @return 0, -EINVAL (flags, keys, range, a QP's state or message limit),
 *         -ENOMEM (a send queue is full)
 */
int uroce_stripe_post_write(struct uroce_stripe *s, const struct uroce_stripe_write *w, unsigned *nshards);

/** Paged writes (TransferEngine's submit_paged_writes): page i of the
 * source, src_base + src_pages[i] x src_stride, goes to dst_base +
 * dst_pages[i] x dst_stride of the peer; the transfer ends with one
 * WRITE_WITH_IMM of imm_data, which the peer counts (rel.imm_counter) only
 * once every page has landed. Adjacent pages go as one WRITE. */
struct uroce_paged_write {
	uint64_t wr_id;          /**< the completion, with UROCE_SEND_SIGNALED, once everything is acknowledged */
	uint32_t page_len;
	uint32_t npages;
	const uint32_t *src_pages;
	uint64_t src_base;
	uint32_t src_stride;     /**< 0 = page_len */
	uint32_t lkey;
	const uint32_t *dst_pages;
	uint64_t dst_base;
	uint32_t dst_stride;     /**< 0 = page_len */
	uint32_t rkey;
	uint32_t imm_data;       /**< network order */
	unsigned send_flags;     /**< UROCE_SEND_SIGNALED */
};
/**
 * Post a paged write; it takes one send WR per run of adjacent pages.
 * @param qp the QP
 * @param pw the pages, their keys and the closing immediate
 * @return 0, -EINVAL (with the reason), -ENOMEM (send queue too short)
 */
int uroce_post_paged_write(struct uroce_qp *qp, const struct uroce_paged_write *pw);

/* ----------------------------------------------------------------------
 * Adaptive timeouts (OptiNIC 3.1.2). A group is this member's view of one
 * collective: the be QPs to its peers and the collective's message size.
 * Its timeout starts at (1 + gamma) x warm-up + delta. After each run,
 * uroce_tmo_exchange sends this member's proposal (the per-byte cost its
 * QPs measured since the last exchange, times the message size, with the
 * same margin) to every peer over the QPs' control channel, and once every
 * peer's proposal for that round is in, takes their median m and sets
 * T = alpha m + (1 - alpha) T, then applies T to the QPs
 * (uroce_qp_set_timeout). docs/api.md has an example.
 * ---------------------------------------------------------------------- */
struct uroce_tmo_attr {
	uint32_t group_id;       /**< the same on every member */
	uint64_t msg_bytes;      /**< bytes one run of the collective moves per QP */
	double alpha;            /**< EWMA weight; 0 = 0.2 */
	double gamma;            /**< safety margin; 0 = 0.25 */
	uint32_t delta_us;       /**< additive slack; 0 = 50 */
};
struct uroce_tmo;
/**
 * A group over nqps connected be QPs of one context.
 * @param attr the group's id, message size and rule's parameters
 * @param qps its QPs, one per peer
 * @param nqps 1..1024
 * @param out the group, on success
 * @return 0, -EINVAL, -EEXIST (the context has a group of that id),
 *         -ENOSPC, -ENOMEM
 */
int uroce_tmo_create(const struct uroce_tmo_attr *attr, struct uroce_qp *const *qps, unsigned nqps,
                     struct uroce_tmo **out);
/**
 * Free a group (its QPs stay).
 * @param g the group
 * @return 0, or -EINVAL for a NULL g
 */
int uroce_tmo_destroy(struct uroce_tmo *g);
/**
 * The warm-up run took warmup_ns: T = (1 + gamma) warmup + delta,
 * applied to the QPs.
 * @param g the group
 * @param warmup_ns the warm-up run's duration
 * @return 0, or -EINVAL
 */
int uroce_tmo_warmup(struct uroce_tmo *g, uint64_t warmup_ns);
/**
 * This member's proposal now, from what its QPs measured.
 * @param g the group
 * @return the proposal in ns (0 for a NULL g)
 */
uint64_t uroce_tmo_proposal_ns(struct uroce_tmo *g);
/**
 * Send this member's proposal for round (once; call again to poll).
 * @param g the group
 * @param round the run's number, the same on every member
 * @return 0 once every peer's proposal for round arrived and T was
 *         updated, -EAGAIN while some are missing (lost ones are asked for
 *         again), or another negative errno
 */
int uroce_tmo_exchange(struct uroce_tmo *g, uint32_t round);
/**
 * The group's timeout now.
 * @param g the group
 * @return T in ns (0 for a NULL g)
 */
uint64_t uroce_tmo_timeout_ns(const struct uroce_tmo *g);
/**
 * The rule alone, for callers with their own exchange: median of n
 * proposals, then the EWMA, applied to the QPs.
 * @param g the group
 * @param proposals_ns the proposals, ns
 * @param n how many, at least 1
 * @return the new T in ns (T unchanged when the arguments are wrong or
 *         memory ran out; 0 for a NULL g)
 */
uint64_t uroce_tmo_update(struct uroce_tmo *g, const uint64_t *proposals_ns, unsigned n);

/**
 * Bytes of transport state one QP takes (for the scale benchmark).
 * @param type the QP type
 * @return the bytes
 */
size_t uroce_qp_state_bytes(enum uroce_qp_type type);
/**
 * Of those, the bytes the per-packet path of an RC QP reads and writes
 * (its first cache lines; the rest is configuration and rare paths).
 * @param type the QP type
 * @return the bytes
 */
size_t uroce_qp_hot_bytes(enum uroce_qp_type type);
/**
 * Bytes of its reliability policy's own state (after RTR at MTU 4096,
 * for sr/ec whose windows grow with it); be is OptiNIC's figure.
 * @param rel the reliability mode
 * @return the bytes
 */
size_t uroce_rel_state_bytes(enum uroce_reliability rel);

#ifdef __cplusplus
}
#endif
#endif /* UROCE_UROCE_H */
