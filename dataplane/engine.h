/* SPDX-License-Identifier: MIT */
/* The per-core run-to-completion engine: one loop that receives bursts
 * from its ports, parses and dispatches them, runs its timers, drains the
 * command rings of app threads and flushes batched transmits.
 *
 * An engine and everything it owns (its ports, timers, staged frames) is
 * driven by exactly one thread: the app's own (engine_poll_once, the
 * embedded mode) or a thread the engine starts (engine_start). Other
 * threads reach it only through its SPSC command rings, one producer per
 * ring.
 */
#ifndef UROCE_DATAPLANE_ENGINE_H
#define UROCE_DATAPLANE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataplane/port.h"
#include "dataplane/spsc_ring.h"
#include "dataplane/timer_wheel.h"
#include "dataplane/wire.h"

#define ENGINE_MAX_PORTS 8u        /* ports one core polls; more belong on another core */
#define ENGINE_MAX_CMD_RINGS 16u   /* app threads feeding one engine */
#define ENGINE_BURST_DEFAULT 32u   /* DPDK's classic burst: amortises the calls, fits L1 */
#define ENGINE_TICK_NS_DEFAULT 1000u /* 1 us: finer than any RoCE timeout */
#define ENGINE_CMD_RING_DEFAULT 1024u
/* Frames staged per port: two full bursts, so a partially sent burst can
 * wait for the next flush while new frames keep being staged. */
#define ENGINE_TX_STAGE (2u * PORT_BURST_MAX)

struct engine;

/* A received, parsed packet. Return true to keep the frame (the handler
 * then owns it: engine_tx it, or port_free it later); false gives it back
 * and the engine frees it. */
typedef bool (*engine_rx_fn)(struct engine *eng, unsigned port, struct uroce_frame *f,
                             const struct roce_pkt *pkt, void *ctx);

/* A command from an app thread, run on the engine's thread. */
typedef void (*engine_cmd_fn)(struct engine *eng, void *arg, uint64_t data);

/* Time source in ns; called once per iteration. */
typedef uint64_t (*engine_clock_fn)(void *ctx);

struct engine_cmd {
	engine_cmd_fn fn;
	void *arg;
	uint64_t data;
};

struct engine_config {
	struct port **ports;       /* polled in this order; indices are engine port numbers */
	unsigned nports;           /* 0..ENGINE_MAX_PORTS */
	uint16_t burst;            /* RX burst and TX flush size, 1..PORT_BURST_MAX, 0 = default */
	uint64_t tick_ns;          /* timer wheel tick, 0 = ENGINE_TICK_NS_DEFAULT */
	unsigned ncmd_rings;       /* 0..ENGINE_MAX_CMD_RINGS */
	uint32_t cmd_ring_size;    /* power of two, 0 = ENGINE_CMD_RING_DEFAULT */
	engine_clock_fn clock;     /* NULL = CLOCK_MONOTONIC */
	void *clock_ctx;
	struct roce_parse_opts parse;
	bool pin;                  /* engine_start pins its thread to cpu */
	unsigned cpu;
	bool idle_yield;           /* engine_run yields the CPU after an iteration with no work */
};

struct engine_stats {
	uint64_t iterations;
	uint64_t rx_frames;
	uint64_t rx_dropped;   /* rejected by the parser, counted by reason on the port */
	uint64_t rx_unhandled; /* parsed but no handler was set */
	uint64_t tx_staged;
	uint64_t tx_sent;
	uint64_t tx_partial;   /* flushes the port took only part of (rest retried) */
	uint64_t tx_full;      /* engine_tx refused: the stage stayed full */
	uint64_t cmds;
	uint64_t timers;
};

/* Create an engine. Returns NULL and a message in err saying what is wrong
 * and what is accepted. */
struct engine *engine_create(const struct engine_config *cfg, char *err, size_t errlen);

/* Destroy a stopped engine: staged frames go back to their ports, pending
 * timers are disarmed without running, queued commands are not run. */
void engine_destroy(struct engine *eng);

void engine_set_rx_handler(struct engine *eng, engine_rx_fn fn, void *ctx);

/* One iteration: RX, parse, dispatch, timers, commands, TX flush, port
 * housekeeping. Returns the work done (frames received and sent, timers
 * fired, commands run); 0 means idle. */
unsigned engine_poll_once(struct engine *eng);

/* Poll until engine_request_stop(); on the calling thread. */
void engine_run(struct engine *eng);

/* Ask engine_run to return after its current iteration; any thread. */
void engine_request_stop(struct engine *eng);

/* Run engine_run on a new thread, pinned when cfg.pin. Returns 0 or
 * -errno with a message in err. */
int engine_start(struct engine *eng, char *err, size_t errlen);

/* Stop and join the thread engine_start made. */
void engine_stop(struct engine *eng);

/*
 * Stage f for transmission on engine port `port`. Flushed when a burst is
 * staged and at the end of every iteration; frames the port does not take
 * stay staged and are retried. Returns 0 (the engine owns f now), or
 * -ENOBUFS when the stage is full even after a flush (the caller still
 * owns f), or -EINVAL for a bad port number.
 */
int engine_tx(struct engine *eng, unsigned port, const struct uroce_frame *f);

/* True when engine_tx on port would take a frame now (the stage has
 * room, after a flush if it was full): callers check before they build a
 * frame, so a full port costs no build, copy or ICRC. */
bool engine_tx_room(struct engine *eng, unsigned port);

/* Frames staged by engine_tx since the engine was created. */
uint64_t engine_tx_staged(const struct engine *eng);

/* Empty TX frames from engine port `port`; like port_alloc. */
uint16_t engine_alloc(struct engine *eng, unsigned port, struct uroce_frame *f, uint16_t n);

/* Time read at the start of the current iteration (or at creation). */
uint64_t engine_now(const struct engine *eng);

/* Timers on the engine's wheel; callbacks run on the engine's thread. */
void engine_timer_arm(struct engine *eng, struct wheel_timer *t, uint64_t deadline_ns);
void engine_timer_arm_in(struct engine *eng, struct wheel_timer *t, uint64_t delay_ns);
bool engine_timer_cancel(struct engine *eng, struct wheel_timer *t);

/* Post a command on ring `ring` from that ring's one producer thread.
 * Returns 0, -EAGAIN when the ring is full, -EINVAL for a bad ring. */
int engine_post(struct engine *eng, unsigned ring, engine_cmd_fn fn, void *arg, uint64_t data);

/* The ring itself, for posting bursts of struct engine_cmd. */
struct spsc_ring *engine_cmd_ring(struct engine *eng, unsigned ring);

struct port *engine_port(const struct engine *eng, unsigned port);
unsigned engine_nports(const struct engine *eng);
void engine_get_stats(const struct engine *eng, struct engine_stats *st);

/* CLOCK_MONOTONIC in ns, the default engine clock. */
uint64_t engine_clock_monotonic(void *ctx);

#endif /* UROCE_DATAPLANE_ENGINE_H */
