/* SPDX-License-Identifier: MIT */
/* The loop fabric: an in-process network of ports joined by point-to-point
 * links with seeded, replayable impairments, driven by simulated time.
 *
 * Tests create a fabric, wire ports with per-direction impairments, open
 * each port through port_open() (cfg.kind = PORT_KIND_LOOP, cfg.fabric,
 * cfg.loop_index) and move time forward explicitly. The same seed and the
 * same calls give exactly the same deliveries, so a failing case replays.
 *
 * A link direction models, in this order: a transmit queue drained at
 * rate_bps (bounded in bytes: frames over the bound are dropped, or
 * refused back to the sender with back-pressure); loss (uniform, then
 * Gilbert-Elliott bursts); corruption (one bit flipped); duplication; and
 * propagation delay (fixed + uniform jitter, FIFO), where a reordered
 * frame gets an extra bounded delay that lets later frames overtake it.
 *
 * Frames come from one pool allocated with the fabric; nothing is
 * allocated per packet. A fabric and its ports are used by one thread at a
 * time (the one driving the engine or the test).
 */
#ifndef UROCE_DATAPLANE_PORT_LOOP_H
#define UROCE_DATAPLANE_PORT_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/port.h"

#define LOOP_FABRIC_MAX_PORTS 1024u /* as port_config_parse accepts for loop:INDEX */

/* RoCE's largest MTU plus the biggest header stack a data packet carries
 * (IPv6 + UDP + BTH + RETH + ImmDt) and the ICRC: the L3 MTU of a loop
 * link unless the fabric is created with another. */
#define LOOP_MTU_DEFAULT (4096u + 40u + 8u + 12u + 16u + 4u + 4u)
/* Frames in the fabric's pool unless asked otherwise. */
#define LOOP_NFRAMES_DEFAULT 4096u
/* Receive ring of each port: arrivals beyond it are UROCE_DROP_NO_BUFFER
 * on that port, like a NIC whose RX ring the host does not drain. */
#define LOOP_RX_RING_DEFAULT 1024u
/* Bytes the rate limiter may queue when an impairment sets none: about
 * 64 full-size frames, a shallow switch buffer. */
#define LOOP_QUEUE_BYTES_DEFAULT (64u * 4224u)

/* Gilbert-Elliott two-state loss: each frame first moves the chain, then
 * is lost with loss_bad in the bad state (the good state loses only what
 * loop_impairment.loss says). Mean burst length is 1 / p_bad_good. */
struct loop_gilbert {
	double p_good_bad;
	double p_bad_good;
	double loss_bad;
};

/* One direction of a link. All zero is a perfect wire. Probabilities are
 * in [0, 1]. */
struct loop_impairment {
	double loss;               /* uniform loss per frame */
	struct loop_gilbert burst; /* bursty loss, off when p_good_bad == 0 */
	double corrupt;            /* flip one random bit of the frame */
	uint32_t corrupt_skip;     /* flip only at byte offsets >= this (clamped to the frame) */
	double duplicate;          /* deliver one extra copy right after the frame ... */
	uint64_t dup_delay_ns;     /* ... or this much later (a late duplicate, as a stale path delivers) */
	double reorder;            /* give the frame an extra delay of 1..reorder_max_ns */
	uint64_t reorder_max_ns;
	uint64_t delay_ns;         /* fixed one-way delay */
	uint64_t jitter_ns;        /* plus uniform 0..jitter_ns; frames stay in order */
	uint64_t rate_bps;         /* serialisation rate, 0 = infinite */
	uint32_t queue_bytes;      /* rate limiter's queue bound, 0 = LOOP_QUEUE_BYTES_DEFAULT */
	uint32_t ecn_bytes;        /* mark CE on an ECT IPv4/IPv6 frame that finds this many bytes queued (0 = off) */
	uint32_t ecn_max_bytes;    /* > ecn_bytes: RED-like, as DCQCN's switches: marked with a probability rising
	                            * linearly from 0 at ecn_bytes to ecn_pmax at ecn_max_bytes, always above */
	double ecn_pmax;
	bool backpressure;         /* queue full: tx_burst refuses instead of dropping */
};

/* Counters of one link direction (or the fabric total). */
struct loop_link_stats {
	uint64_t tx_frames;       /* admitted past the rate limiter's queue */
	uint64_t tx_bytes;
	uint64_t delivered;       /* placed in the receiver's RX ring */
	uint64_t delivered_bytes;
	uint64_t lost;            /* uniform loss */
	uint64_t lost_burst;      /* Gilbert-Elliott loss */
	uint64_t queue_drops;     /* rate limiter queue full */
	uint64_t refused;         /* back-pressure: left with the sender */
	uint64_t corrupted;       /* delivered with a flipped bit */
	uint64_t duplicated;      /* extra copies made */
	uint64_t dup_no_frame;    /* copy not made: the pool was empty */
	uint64_t reordered;       /* given the extra reorder delay */
	uint64_t ecn_marked;      /* ECT frames marked CE at the rate limiter's queue */
	uint64_t max_backlog;     /* the most bytes the rate limiter's queue held */
	uint64_t filtered;        /* dropped by a test's filter */
	uint64_t link_down;       /* sent while the link was down or unwired */
	uint64_t rx_no_port;      /* arrived at a port that is not open */
	uint64_t rx_ring_full;    /* arrived at a full RX ring (port NO_BUFFER) */
	uint64_t tx_invalid;      /* not a frame of this fabric, empty, or longer than the MTU */
	uint64_t free_invalid;    /* fabric total only: port_free of a frame nobody held */
};

struct loop_fabric_opts {
	unsigned nports;     /* 1..LOOP_FABRIC_MAX_PORTS */
	uint64_t seed;
	uint32_t nframes;    /* frames in the pool, 0 = LOOP_NFRAMES_DEFAULT */
	uint32_t mtu;        /* L3 MTU of every port, 0 = LOOP_MTU_DEFAULT */
	uint32_t rx_ring;    /* per-port RX ring, power of two, 0 = LOOP_RX_RING_DEFAULT */
	bool real_time;      /* CLOCK_MONOTONIC instead of simulated time */
};

struct loop_fabric;

/* Create a fabric of nports unwired ports with default options. Returns
 * NULL with errno set (EINVAL for nports out of range, ENOMEM). */
struct loop_fabric *loop_fabric_create(unsigned nports, uint64_t seed);

/* Create with options. On error returns NULL and, when err is given, a
 * message saying what is wrong and what is accepted. */
struct loop_fabric *loop_fabric_create_opts(const struct loop_fabric_opts *opts, char *err, size_t errlen);

/* Destroy the fabric. Its ports must have been closed. */
void loop_fabric_destroy(struct loop_fabric *fab);

/*
 * Wire port a to port b (a == b makes a loopback). ab impairs a -> b and
 * ba impairs b -> a; NULL is a perfect wire. A port that was wired
 * elsewhere is unwired from its old peer first. Returns 0 or -EINVAL
 * (reason in loop_fabric_last_error()).
 */
int loop_fabric_connect(struct loop_fabric *fab, unsigned a, unsigned b,
                        const struct loop_impairment *ab, const struct loop_impairment *ba);

/* Change the impairment of the direction from -> (from's peer) at any
 * time; frames already on the wire keep their fate. Returns 0 or -EINVAL
 * (from is not wired, or a bad impairment). */
int loop_fabric_set_impairment(struct loop_fabric *fab, unsigned from, const struct loop_impairment *imp);
/* Tests: fn sees every frame port from sends (after the rate limiter) and
 * returns true to drop it (counted as filtered); NULL removes it. */
typedef bool (*loop_filter_fn)(void *arg, const uint8_t *frame, uint32_t len);
int loop_fabric_set_filter(struct loop_fabric *fab, unsigned from, loop_filter_fn fn, void *arg);

/* Tests: send a copy of frame (len bytes, Ethernet on) from port from, as
 * if the port had sent it now: it meets the link's impairments and filter.
 * 0, or -EINVAL (port not wired, length) / -ENOMEM (the pool is empty) /
 * -EAGAIN (back-pressure: the link's queue is full). */
int loop_fabric_inject(struct loop_fabric *fab, unsigned from, const uint8_t *frame, uint32_t len);

/* Take the link of port a (both directions) down or up. A down link drops
 * what is sent into it (counted as link_down) and port_link_up() says
 * false on both ends. */
int loop_fabric_set_link(struct loop_fabric *fab, unsigned a, bool up);

/* Why the last call on this fabric failed. */
const char *loop_fabric_last_error(const struct loop_fabric *fab);

/* Simulated time (ns since creation), or monotonic ns since creation in
 * real-time mode. */
uint64_t loop_fabric_now(const struct loop_fabric *fab);

/* Move simulated time forward by ns and deliver every frame due by then
 * into the RX rings. In real-time mode ns is ignored and only due frames
 * are delivered. Returns the number delivered. */
unsigned loop_fabric_advance(struct loop_fabric *fab, uint64_t ns);

/* Arrival time of the earliest frame still on a wire, or UINT64_MAX. */
uint64_t loop_fabric_next_event(const struct loop_fabric *fab);

/* Frames on wires (sent, not yet delivered or dropped). */
unsigned loop_fabric_in_flight(const struct loop_fabric *fab);

/* Frames in the pool not owned by anyone (all of them when idle: a test
 * checks this to prove nothing leaked). */
unsigned loop_fabric_free_frames(const struct loop_fabric *fab);

/* Counters of the direction from -> (its peer) and of the whole fabric.
 * Return 0 or -EINVAL. */
int loop_fabric_link_stats(const struct loop_fabric *fab, unsigned from, struct loop_link_stats *st);
void loop_fabric_stats(const struct loop_fabric *fab, struct loop_link_stats *st);

/* A time source for the engine: (uint64_t (*)(void *)) with the fabric as
 * the context, so an engine over loop ports runs on the fabric's clock. */
uint64_t loop_fabric_clock(void *fab);

/* MAC and IPv4 address a loop port gets: 02:00:00:00:HH:LL and 10.0.H.L
 * where HHLL = index + 1 (so port 0 is 02:00:00:00:00:01, 10.0.0.1). */
void loop_port_mac(unsigned index, uint8_t mac[6]);
uint32_t loop_port_ipv4_be(unsigned index);

#endif /* UROCE_DATAPLANE_PORT_LOOP_H */
