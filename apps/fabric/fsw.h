/* SPDX-License-Identifier: MIT */
/* The switch core of uroce-fabric: an L3 router for RoCEv2/UDP frames over
 * generic ports (dataplane/port.h), so the same core runs over AF_XDP veth
 * ports in the app and over loop ports in simulated time in the tests.
 *
 * A frame that arrives on any port is routed by its destination IP
 * (longest prefix, then an ECMP group picked by a seeded hash of the
 * addresses and UDP ports), its TTL decremented and MACs rewritten, and
 * copied into the egress port's own buffers:
 *
 *   data queue (drop-tail at queue_bytes, CE marks above ecn_kmin,
 *               trimming to headers when full)  --\
 *   priority queue (trimmed headers, CNPs; strict) --> serialisation at
 *   rate_bps --> delay line (delay_ns, FIFO) --> a port TX frame
 *
 * Time comes from a clock callback, randomness (RED-like marking) from
 * the seed: the same seed and the same arrivals give the same decisions.
 * Buffers are allocated at creation; nothing is allocated per packet. One
 * thread drives a switch.
 */
#ifndef UROCE_APPS_FABRIC_FSW_H
#define UROCE_APPS_FABRIC_FSW_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dataplane/port.h"

#define FSW_PORTS_MAX 32u
#define FSW_ROUTES_MAX 256u
#define FSW_ECMP_MAX 16u
/* About 170 full 1500-byte frames: a shallow switch buffer per port. */
#define FSW_QUEUE_BYTES_DEFAULT (256u * 1024u)
/* Holds some 500 trimmed headers: trimmed packets and CNPs are small. */
#define FSW_PRIO_BYTES_DEFAULT (32u * 1024u)
/* The largest queue a port accepts (its buffers are twice this). */
#define FSW_QUEUE_BYTES_MAX (64u * 1024u * 1024u)
/* Ultra Ethernet's default trimmed-packet DSCP. */
#define FSW_TRIM_DSCP_DEFAULT 63u
/* A delay longer than this is a test mistake, not a link. */
#define FSW_DELAY_NS_MAX (10ull * 1000000000ull)

/* Why the switch dropped a frame. Per-queue counters say more about the
 * queue drops (tail, trim); this is the switch-wide tally. */
enum fsw_drop {
	FSW_DROP_NONE = 0,
	FSW_DROP_NOT_IP,    /* EtherType is not IPv4/IPv6 (after one 802.1Q tag) */
	FSW_DROP_NOT_UDP,   /* IP protocol / next header is not UDP */
	FSW_DROP_PARSE,     /* truncated or malformed IP/UDP header, IPv4 fragment, bad IPv4 checksum */
	FSW_DROP_NO_ROUTE,  /* no route to the destination */
	FSW_DROP_TTL,       /* TTL / hop limit would reach 0 */
	FSW_DROP_TOO_BIG,   /* longer than the egress port's MTU (plus Ethernet and one tag) */
	FSW_DROP_QUEUE_FULL, /* data queue full and the frame not trimmed */
	FSW_DROP_PRIO_FULL, /* priority queue full (a CNP, or a trimmed frame) */
	FSW_DROP_TX_FULL,   /* the port refused frames for longer than the delay line could hold them */
	FSW_DROP__COUNT
};

/* One port: its egress link and queues. */
struct fsw_port_cfg {
	char name[IF_NAMESIZE]; /* interface the app opens (the spec's first field) */
	uint8_t peer_mac[6];    /* the one neighbour on this link: destination MAC written */
	uint8_t mac[6];         /* source MAC written; all zero = the port's own */
	uint64_t rate_bps;      /* serialisation rate of Ethernet frame bytes, 0 = unlimited */
	uint32_t queue_bytes;   /* data queue bound (drop-tail), 0 = FSW_QUEUE_BYTES_DEFAULT */
	uint32_t prio_bytes;    /* priority queue bound, 0 = FSW_PRIO_BYTES_DEFAULT */
	uint32_t ecn_kmin;      /* mark CE on ECT when the data queue holds >= this, 0 = off */
	uint32_t ecn_kmax;      /* > kmin: mark with probability rising to ecn_pmax at kmax
	                         * (RED-like, as DCQCN's switches), always above; 0 = step */
	double ecn_pmax;        /* 0..1, with ecn_kmax */
	bool trim;              /* data queue full: trim RoCEv2 to its headers into the priority queue */
	uint8_t trim_dscp;      /* DSCP of a trimmed packet (ECN bits kept) */
	uint64_t delay_ns;      /* propagation delay after serialisation */
};

/* A route: an IPv4 or IPv6 prefix to an ECMP group of egress ports. */
struct fsw_route {
	bool ipv6;
	uint8_t prefix[16]; /* network byte order; IPv4 in the first 4 bytes */
	uint8_t plen;
	uint8_t nports;     /* 1..FSW_ECMP_MAX */
	uint8_t ports[FSW_ECMP_MAX];
};

struct fsw_cfg {
	uint64_t seed;
	unsigned nports;
	struct fsw_port_cfg port[FSW_PORTS_MAX];
	unsigned nroutes;
	struct fsw_route route[FSW_ROUTES_MAX];
};

/* Counters of one queue. A frame leaves a queue ("sent") when its
 * serialisation starts. */
struct fsw_queue_stats {
	uint64_t enqueued;
	uint64_t enqueued_bytes;
	uint64_t tail_drops;  /* found the queue full (data: and was not trimmed) */
	uint64_t ecn_marked;  /* data: CE written at enqueue */
	uint64_t trimmed;     /* data: found it full and was trimmed into the priority queue */
	uint64_t trim_drops;  /* data: trimmed, then found the priority queue full too */
	uint64_t sent;
	uint64_t sent_bytes;
	uint32_t depth_bytes;
	uint32_t max_depth_bytes;
	uint32_t depth_frames;
};

struct fsw_port_stats {
	uint64_t rx_frames;   /* arrived on this port */
	uint64_t rx_bytes;
	uint64_t tx_frames;   /* handed to the port's TX ring */
	uint64_t tx_bytes;
	uint64_t tx_full;     /* dropped: the delay line was full because the port refused frames */
	uint32_t delay_depth_bytes; /* serialised, waiting for the delay or the TX ring */
	struct fsw_queue_stats data;
	struct fsw_queue_stats prio;
};

/* Switch-wide totals. Every received frame is either enqueued (data or
 * priority queue) or counted in exactly one drops[] reason. */
struct fsw_stats {
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t tx_frames;
	uint64_t tx_bytes;
	uint64_t drops[FSW_DROP__COUNT];
	uint64_t drops_total;
};

struct fsw;

typedef uint64_t (*fsw_clock_fn)(void *ctx);

/*
 * Create a switch over n open ports (ports[i] is cfg->port[i]; n must be
 * cfg->nports). clock returns nanoseconds (CLOCK_MONOTONIC, or
 * loop_fabric_clock with the fabric as ctx). Returns NULL with a message in
 * err (a bad configuration, out of memory).
 */
struct fsw *fsw_create(const struct fsw_cfg *cfg, struct port *const *ports, unsigned n, fsw_clock_fn clock,
                       void *clock_ctx, char *err, size_t errlen);

/* Free the switch's buffers (frames still queued are lost). The ports stay
 * open: they are the caller's. */
void fsw_destroy(struct fsw *s);

/*
 * One pass: a receive burst from every port (classify, route, enqueue),
 * then on every port the frames whose serialisation may start move to the
 * delay line and the frames due leave to the port. Returns the frames
 * handled (received + serialised + sent): 0 means idle.
 */
unsigned fsw_poll(struct fsw *s);

/* The earliest time (clock ns) at which a queued frame's serialisation
 * can start or a delayed frame is due, or UINT64_MAX when every queue is
 * empty. A simulated-time driver steps to it; the app sleeps until it. */
uint64_t fsw_next_event(const struct fsw *s);

/* Frames held anywhere in the switch (queues and delay lines). */
unsigned fsw_frames_held(const struct fsw *s);

unsigned fsw_nports(const struct fsw *s);
/* The port's name as configured (its interface; may be empty). */
const char *fsw_port_name(const struct fsw *s, unsigned port);
/* The clock's time at the last fsw_poll. */
uint64_t fsw_now(const struct fsw *s);

void fsw_stats(const struct fsw *s, struct fsw_stats *st);
/* 0, or -EINVAL for a port that does not exist. */
int fsw_port_stats(const struct fsw *s, unsigned port, struct fsw_port_stats *st);
/* Every counter as one JSON object (one line and a newline). 0 or -EIO. */
int fsw_stats_json(const struct fsw *s, FILE *f);

const char *fsw_drop_name(enum fsw_drop d);

/* ---- configuration (fsw_config.c) ---- */

/* Zero the configuration, seed 1. */
void fsw_cfg_init(struct fsw_cfg *cfg);
/* Defaults of one port: queue, priority queue and trim DSCP. */
void fsw_port_cfg_init(struct fsw_port_cfg *pc);

/*
 * Parse a port spec "IFACE,peer=MAC[,key=value...]" into pc (defaults
 * first). Keys: peer=MAC, mac=MAC, rate=N[k|m|g|t] (bit/s), queue=BYTES,
 * prio=BYTES (BYTES: N[k|m], 1024-based), ecn=KMIN[:KMAX:PMAX] (bytes;
 * PMAX 0..1 or N%), trim=0|1, dscp=0..63 (trimmed packets'),
 * delay=N{ns|us|ms|s}. Returns 0, or -EINVAL with a message saying what
 * is wrong and what is accepted.
 */
int fsw_port_parse(const char *spec, struct fsw_port_cfg *pc, char *err, size_t errlen);

/* Parse a route "PREFIX[/LEN]=P[+P...]" (IPv4 or IPv6; no /LEN is a host
 * route; P are port indices, the ECMP group). Port indices are checked
 * against the ports by fsw_cfg_check. 0 or -EINVAL with a message. */
int fsw_route_parse(const char *spec, struct fsw_route *r, char *err, size_t errlen);

/* Parse and append; -EINVAL also when the table is full. */
int fsw_cfg_add_port(struct fsw_cfg *cfg, const char *spec, char *err, size_t errlen);
int fsw_cfg_add_route(struct fsw_cfg *cfg, const char *spec, char *err, size_t errlen);

/* Whole-configuration checks (fsw_create runs them): at least one port,
 * every port with a peer MAC and sane bounds, every route's ports
 * existing, no prefix given twice. 0 or -EINVAL with a message. */
int fsw_cfg_check(const struct fsw_cfg *cfg, char *err, size_t errlen);

#endif /* UROCE_APPS_FABRIC_FSW_H */
