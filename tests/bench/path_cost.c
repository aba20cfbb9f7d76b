/* SPDX-License-Identifier: MIT */
/* The transport's own cost per packet, free of the kernel and of machine
 * noise: both ends of one RC QP pair in one process on the loop fabric
 * (perfect wire: no delay, no rate limit, no loss), one thread alternating
 * uroce_progress() on the two contexts. What the wall time covers is the
 * sender's and the receiver's transport (posting, building, ICRC, the
 * gather and placement copies, parsing, ACKs, completions, timers) plus the
 * loop fabric, which stands in for the NIC and the kernel (a few dozen
 * instructions a frame; tests/bench/path_cost.sh --callgrind counts it
 * apart).
 *
 * The simulated clock stands still while anything moves, so no timer fires
 * in the steady state; when nothing moved in two rounds it steps forward
 * (1 us, doubling while still idle, up to 100 ms) so that what waits on a
 * timer (a coalesced ACK, an RTO) goes on. A run that makes no progress in
 * 100 x msgs rounds, or completes nothing for 10 s of wall time, fails.
 *
 * Messages i = 0..msgs-1 go from slot i % nslots of the source buffer to
 * slot i % nslots of the target (nslots = min(depth, msgs, 16 MiB / size),
 * at least 1). Each source slot holds its own byte pattern; at the end
 * every target slot used must equal its source slot, the sender must have
 * seen exactly the signalled completions in order (one WR in --signal plus
 * the last), and for send and write_imm the receiver exactly msgs receive
 * completions, in order (wr_id for send, the immediate for write_imm),
 * and nothing more after a drain.
 *
 *   path_cost [--mode write|send|write_imm] [--size BYTES] [--msgs N]
 *             [--reliability rc|sr|ec] [--depth N] [--mtu 1024|4096]
 *             [--signal N]
 *
 * Prints one JSON line: mode, reliability, size, msgs, data_pkts (tx_packets
 * of the sender's QP), ctrl_pkts (tx_packets of the receiver's QP: ACKs,
 * SACKs), wall_ns (CLOCK_MONOTONIC around the whole loop), ns_per_data_pkt,
 * ns_per_msg and a few counters that tell whether the run was clean
 * (retransmits, clock steps).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"
#include "loop_pair.h"

/* Under callgrind (path_cost.sh --callgrind runs it with
 * --collect-atstart=no) only the timed loop is counted; elsewhere these are
 * a few instructions that do nothing. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define COLLECT_TOGGLE() CALLGRIND_TOGGLE_COLLECT
#endif
#endif
#ifndef COLLECT_TOGGLE
#define COLLECT_TOGGLE() ((void)0)
#endif

#define MIN_SIZE 64u
#define MAX_SIZE (4u << 20)
#define SLOT_BYTES_MAX (16u << 20) /* bytes of each buffer, at least one message */
#define MAX_DEPTH 32768u           /* QP_MAX_WR */
#define POLL_BATCH 32
#define STEP_FIRST_NS 1000ull            /* the engines' timer tick */
#define STEP_MAX_NS (100ull * 1000000ull) /* beyond rc's ACK timeout at timeout 14 (67 ms) */
#define STALL_WALL_NS (10ull * 1000000000ull)

enum mode { M_WRITE, M_SEND, M_WRITE_IMM };
static const char *const mode_name[] = { "write", "send", "write_imm" };

struct opts {
	enum mode mode;
	uint32_t size;
	uint64_t msgs;
	enum uroce_reliability rel;
	uint32_t depth;
	uint32_t mtu;
	uint32_t signal;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: path_cost [options]\n"
	        "The transport's own cost per packet: one RC QP pair on the loop fabric (perfect wire),\n"
	        "both ends progressed by one thread. Prints one JSON line.\n"
	        "  --mode M          write, send or write_imm (default write)\n"
	        "  --size BYTES      message size, 64 .. 4 MiB; a number with an optional K, KiB, M or\n"
	        "                    MiB suffix (binary). Default 4096\n"
	        "  --msgs N          messages, 1 .. 1e9 (default 100000)\n"
	        "  --reliability R   rc, sr or ec (default rc)\n"
	        "  --depth N         outstanding send WRs, 1 .. %u (default 64)\n"
	        "  --mtu M           path MTU, 1024 or 4096 (default 4096)\n"
	        "  --signal N        one signalled WR in N, plus the last, 1 .. depth (default 16)\n"
	        "  -h, --help        this text\n",
	        MAX_DEPTH);
}

static uint64_t parse_u64(const char *opt, const char *t, uint64_t lo, uint64_t hi, bool units)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(t, &end, 10);
	if (errno || end == t || t[0] == '-' || t[0] == '+')
		bench_die("%s: '%s' is not a number; accepted: an integer %" PRIu64 " .. %" PRIu64 "%s", opt, t, lo, hi,
		    units ? " with an optional K, KiB, M or MiB suffix" : "");
	if (units && (!strcmp(end, "K") || !strcmp(end, "k") || !strcmp(end, "KiB")))
		mul = 1024;
	else if (units && (!strcmp(end, "M") || !strcmp(end, "MiB")))
		mul = 1024 * 1024;
	else if (*end)
		bench_die("%s: '%s' has trailing text '%s'; accepted: an integer %" PRIu64 " .. %" PRIu64 "%s", opt, t, end, lo,
		    hi, units ? " with an optional K, KiB, M or MiB suffix" : "");
	if (v > hi / mul || v * mul < lo || v * mul > hi)
		bench_die("%s: %s is out of range; accepted: %" PRIu64 " .. %" PRIu64 "%s", opt, t, lo, hi,
		    units ? " bytes" : "");
	return v * mul;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	bool signal_set = false;

	o->mode = M_WRITE;
	o->size = 4096;
	o->msgs = 100000;
	o->rel = UROCE_REL_RC;
	o->depth = 64;
	o->mtu = 4096;
	o->signal = 16;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val;
		char name[32];
		const char *eq;
		size_t nl;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (strncmp(a, "--", 2)) {
			usage(stderr);
			bench_die("unexpected argument '%s'; accepted: the options above", a);
		}
		eq = strchr(a, '=');
		nl = eq ? (size_t)(eq - a) : strlen(a);
		if (nl >= sizeof(name))
			nl = sizeof(name) - 1;
		memcpy(name, a, nl);
		name[nl] = 0;
		if (strcmp(name, "--mode") && strcmp(name, "--size") && strcmp(name, "--msgs") &&
		    strcmp(name, "--reliability") && strcmp(name, "--depth") && strcmp(name, "--mtu") &&
		    strcmp(name, "--signal")) {
			usage(stderr);
			bench_die("unknown option '%s'; accepted: --mode, --size, --msgs, --reliability, --depth, --mtu, "
			    "--signal, -h",
			    name);
		}
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			bench_die("%s needs a value (see --help)", name);
		if (!strcmp(name, "--mode")) {
			int m;

			for (m = 0; m < 3 && strcmp(val, mode_name[m]); m++)
				;
			if (m == 3)
				bench_die("--mode: '%s'; accepted: write, send, write_imm", val);
			o->mode = (enum mode)m;
		} else if (!strcmp(name, "--size")) {
			o->size = (uint32_t)parse_u64(name, val, MIN_SIZE, MAX_SIZE, true);
		} else if (!strcmp(name, "--msgs")) {
			o->msgs = parse_u64(name, val, 1, 1000000000ull, false);
		} else if (!strcmp(name, "--reliability")) {
			if (uroce_reliability_parse(val, &o->rel))
				bench_die("--reliability: '%s'; accepted: rc, sr, ec", val);
		} else if (!strcmp(name, "--depth")) {
			o->depth = (uint32_t)parse_u64(name, val, 1, MAX_DEPTH, false);
		} else if (!strcmp(name, "--mtu")) {
			o->mtu = (uint32_t)parse_u64(name, val, 1024, 4096, false);
			if (o->mtu != 1024 && o->mtu != 4096)
				bench_die("--mtu: %s; accepted: 1024 or 4096", val);
		} else if (!strcmp(name, "--signal")) {
			o->signal = (uint32_t)parse_u64(name, val, 1, MAX_DEPTH, false);
			signal_set = true;
		}
	}
	if (o->signal > o->depth) {
		if (signal_set)
			bench_die("--signal %u is more than --depth %u; accepted: 1 .. depth (a full send queue needs a "
			    "signalled WR in it)",
			    o->signal, o->depth);
		o->signal = o->depth; /* the default 16 with a shallower depth */
	}
}

/* --- the two ends ------------------------------------------------------------ */

/* The pair's reliability: sr and ec as sdr_longhaul sets them, but with the
 * normal RTO floor (nothing is lost here). */
static struct uroce_rel_attr rel_of(const struct opts *o)
{
	struct uroce_rel_attr rel = { .reliability = o->rel };

	if (o->rel != UROCE_REL_RC) {
		rel.ordering = UROCE_ORDER_ORDERED;
		rel.loss = UROCE_LOSS_RACK;
		rel.rto_min_us = 200;
	}
	return rel;
}

/* --- the run -------------------------------------------------------------------- */

struct run {
	const struct opts *o;
	struct loop_fabric *fab;
	struct loop_side s[2]; /* 0 sends, 1 receives */
	uint8_t *src, *dst;
	uint32_t nslots;
	uint64_t posted;      /* send WRs posted */
	uint64_t completed;   /* send WRs known complete (through the last signalled CQE) */
	uint64_t recv_posted; /* receive WRs posted (send, write_imm) */
	uint64_t recv_done;   /* receive completions */
	uint64_t steps;       /* clock steps taken */
	uint64_t iters;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool signalled(const struct run *r, uint64_t i)
{
	return (i + 1) % r->o->signal == 0 || i + 1 == r->o->msgs;
}

static inline uint64_t slot_off(const struct run *r, uint64_t i)
{
	return (i % r->nslots) * (uint64_t)r->o->size;
}

static void post_recv(struct run *r)
{
	const struct opts *o = r->o;
	struct uroce_sge sg = { (uint64_t)(uintptr_t)(r->dst + slot_off(r, r->recv_posted)), o->size,
		                r->s[1].mr->lkey };
	struct uroce_recv_wr wr = { .wr_id = r->recv_posted, .sg_list = &sg, .num_sge = 1 };

	/* write_imm places by its RETH; the receive only carries the immediate */
	if (o->mode == M_WRITE_IMM)
		wr.num_sge = 0;
	if (uroce_post_recv(r->s[1].qp, &wr, NULL))
		bench_die("post_recv #%" PRIu64 ": %s", r->recv_posted, uroce_last_error());
	r->recv_posted++;
}

static void post_send(struct run *r)
{
	const struct opts *o = r->o;
	uint64_t i = r->posted, off = slot_off(r, i);
	struct uroce_sge sg = { (uint64_t)(uintptr_t)(r->src + off), o->size, r->s[0].mr->lkey };
	struct uroce_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.send_flags = signalled(r, i) ? UROCE_SEND_SIGNALED : 0;
	switch (o->mode) {
	case M_WRITE:
		wr.opcode = UROCE_WR_RDMA_WRITE;
		break;
	case M_WRITE_IMM:
		wr.opcode = UROCE_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32((uint32_t)i);
		break;
	case M_SEND:
		wr.opcode = UROCE_WR_SEND;
		break;
	}
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(r->dst + off);
	wr.wr.rdma.rkey = r->s[1].mr->rkey;
	if (uroce_post_send(r->s[0].qp, &wr, NULL))
		bench_die("post_send #%" PRIu64 ": %s", i, uroce_last_error());
	r->posted++;
}

/* Send completions: the signalled WRs, in order. */
static unsigned poll_send(struct run *r)
{
	struct uroce_wc wc[POLL_BATCH];
	int n = uroce_poll_cq(r->s[0].scq, POLL_BATCH, wc);

	if (n < 0)
		bench_die("poll_cq (send): %s", uroce_last_error());
	for (int k = 0; k < n; k++) {
		uint64_t want = r->completed;

		while (want < r->o->msgs && !signalled(r, want))
			want++;
		if (wc[k].status != UROCE_WC_SUCCESS)
			bench_die("send completion of WR %" PRIu64 ": %s", wc[k].wr_id, uroce_wc_status_str(wc[k].status));
		if (want >= r->o->msgs || wc[k].wr_id != want)
			bench_die("send completion of WR %" PRIu64 " where WR %" PRIu64 " was expected (duplicate or out of order)",
			    wc[k].wr_id, want);
		r->completed = want + 1;
	}
	return (unsigned)n;
}

/* Receive completions (send, write_imm): one per message, in order; the
 * receive queue is refilled at once. */
static unsigned poll_recv(struct run *r)
{
	const struct opts *o = r->o;
	struct uroce_wc wc[POLL_BATCH];
	int n = uroce_poll_cq(r->s[1].rcq, POLL_BATCH, wc);

	if (n < 0)
		bench_die("poll_cq (receive): %s", uroce_last_error());
	for (int k = 0; k < n; k++) {
		uint64_t j = r->recv_done;

		if (wc[k].status != UROCE_WC_SUCCESS)
			bench_die("receive completion %" PRIu64 ": %s", j, uroce_wc_status_str(wc[k].status));
		if (j >= o->msgs || wc[k].wr_id != j)
			bench_die("receive completion of WR %" PRIu64 " where %" PRIu64 " was expected (duplicate or out of order)",
			    wc[k].wr_id, j);
		if (o->mode == M_SEND && (wc[k].opcode != UROCE_WC_RECV || wc[k].byte_len != o->size))
			bench_die("receive completion %" PRIu64 ": opcode %d, %u bytes; expected a RECV of %u", j, wc[k].opcode,
			    wc[k].byte_len, o->size);
		if (o->mode == M_WRITE_IMM &&
		    (wc[k].opcode != UROCE_WC_RECV_RDMA_WITH_IMM || !(wc[k].wc_flags & UROCE_WC_WITH_IMM) ||
		     be32toh(wc[k].imm_data) != (uint32_t)j || wc[k].byte_len != o->size))
			bench_die("receive completion %" PRIu64 ": opcode %d, flags 0x%x, imm %u, %u bytes; expected "
			    "RECV_RDMA_WITH_IMM, imm %" PRIu64 ", %u bytes",
			    j, wc[k].opcode, wc[k].wc_flags, be32toh(wc[k].imm_data), wc[k].byte_len, j, o->size);
		r->recv_done++;
		if (r->recv_posted < o->msgs)
			post_recv(r);
	}
	return (unsigned)n;
}

/* Each source slot its own bytes: a 64-bit xorshift stream seeded by the slot. */
static void fill_pattern(uint8_t *buf, uint32_t nslots, uint32_t size)
{
	for (uint32_t s = 0; s < nslots; s++) {
		uint64_t x = 0x9e3779b97f4a7c15ull * (s + 1) | 1;
		uint8_t *p = buf + (uint64_t)s * size;

		for (uint32_t off = 0; off < size; off += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(p + off, &x, size - off < 8 ? size - off : 8);
		}
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	struct run r;
	struct loop_fabric_opts fo = { 0 };
	struct uroce_qp_stats ss, rs;
	struct loop_link_stats fst;
	char err[256];
	uint64_t buf_bytes, t0, wall, stall_limit, idle = 0, step = STEP_FIRST_NS;
	uint64_t mark_t, mark_done = 0, sim0, sim_end;
	bool needs_recv;

	bench_name = "path_cost";

	memset(&o, 0, sizeof(o));
	parse_args(argc, argv, &o);
	memset(&r, 0, sizeof(r));
	r.o = &o;
	needs_recv = o.mode != M_WRITE;

	r.nslots = SLOT_BYTES_MAX / o.size;
	if (r.nslots > o.depth)
		r.nslots = o.depth;
	if (r.nslots > o.msgs)
		r.nslots = (uint32_t)o.msgs;
	if (r.nslots < 1)
		r.nslots = 1;
	buf_bytes = (uint64_t)r.nslots * o.size;
	r.src = aligned_alloc(4096, (buf_bytes + 4095) & ~4095ull);
	r.dst = aligned_alloc(4096, (buf_bytes + 4095) & ~4095ull);
	if (!r.src || !r.dst)
		bench_die("cannot allocate 2 x %" PRIu64 " bytes", buf_bytes);
	fill_pattern(r.src, r.nslots, o.size);
	memset(r.dst, 0, buf_bytes); /* touched: no page faults in the timed loop */

	/* enough frames and receive ring that nothing is ever dropped: the
	 * sender is held by its window (sr/ec) or by the pool (rc) */
	fo.nports = 2;
	fo.seed = 1;
	fo.nframes = 16384;
	fo.rx_ring = 16384;
	r.fab = loop_fabric_create_opts(&fo, err, sizeof(err));
	if (!r.fab)
		bench_die("fabric: %s", err);
	if (loop_fabric_connect(r.fab, 0, 1, NULL, NULL))
		bench_die("fabric connect: %s", loop_fabric_last_error(r.fab));
	struct uroce_rel_attr rel = rel_of(&o);
	enum uroce_mtu mtu = o.mtu == 1024 ? UROCE_MTU_1024 : UROCE_MTU_4096;

	loop_side_open(r.fab, &r.s[0], 0, r.src, buf_bytes, o.depth, (int)o.depth + 64, &rel);
	loop_side_open(r.fab, &r.s[1], 1, r.dst, buf_bytes, o.depth, (int)o.depth + 64, &rel);
	loop_side_connect(&r.s[0], &r.s[1], mtu);
	loop_side_connect(&r.s[1], &r.s[0], mtu);
	if (needs_recv)
		while (r.recv_posted < o.msgs && r.recv_posted < o.depth)
			post_recv(&r);

	stall_limit = 100 * o.msgs;
	sim0 = loop_fabric_now(r.fab);
	t0 = mono_ns();
	mark_t = t0;
	COLLECT_TOGGLE();
	for (;;) {
		unsigned work = 0;
		int n0, n1;

		while (r.posted < o.msgs && r.posted - r.completed < o.depth) {
			post_send(&r);
			work++;
		}
		n0 = uroce_progress(r.s[0].ctx);
		n1 = uroce_progress(r.s[1].ctx);
		if (n0 < 0 || n1 < 0)
			bench_die("progress: %s", uroce_last_error());
		work += (unsigned)n0 + (unsigned)n1;
		work += poll_send(&r);
		if (needs_recv)
			work += poll_recv(&r);
		r.iters++;
		if (r.completed == o.msgs && (!needs_recv || r.recv_done == o.msgs))
			break;
		if (work) {
			idle = 0;
			step = STEP_FIRST_NS;
		} else if (++idle >= 2) {
			/* quiet at this instant: let time reach the next frame or timer */
			uint64_t now = loop_fabric_now(r.fab), next = loop_fabric_next_event(r.fab);

			if (next == UINT64_MAX || next <= now) {
				next = now + step;
				if (step < STEP_MAX_NS)
					step *= 2;
			}
			loop_fabric_advance(r.fab, next - now);
			r.steps++;
			if (idle > stall_limit)
				bench_die("no progress in %" PRIu64 " rounds (100 x msgs): %" PRIu64 "/%" PRIu64
				    " sends complete, %" PRIu64 " receives, simulated time %" PRIu64 " ns",
				    idle, r.completed, o.msgs, r.recv_done, loop_fabric_now(r.fab) - sim0);
		}
		/* a livelock guard that costs one clock read every 4096 rounds */
		if ((r.iters & 4095) == 0 || idle) {
			uint64_t now = mono_ns(), done = r.completed + r.recv_done;

			if (done != mark_done) {
				mark_done = done;
				mark_t = now;
			} else if (now - mark_t > STALL_WALL_NS) {
				bench_die("nothing completed in 10 s of wall time: %" PRIu64 "/%" PRIu64 " sends complete, %" PRIu64
				    " receives, %" PRIu64 " rounds",
				    r.completed, o.msgs, r.recv_done, r.iters);
			}
		}
	}
	COLLECT_TOGGLE();
	wall = mono_ns() - t0;
	sim_end = loop_fabric_now(r.fab);

	/* drain: nothing more may complete */
	for (int i = 0; i < 64; i++) {
		uroce_progress(r.s[0].ctx);
		uroce_progress(r.s[1].ctx);
		if (i == 32)
			loop_fabric_advance(r.fab, 1000000);
		if (poll_send(&r))
			bench_die("a send completion after all %" PRIu64 " messages completed", o.msgs);
		if (needs_recv && poll_recv(&r))
			bench_die("a receive completion after all %" PRIu64 " messages completed", o.msgs);
	}
	for (uint32_t s = 0; s < r.nslots; s++) {
		uint64_t off = (uint64_t)s * o.size;

		if (memcmp(r.dst + off, r.src + off, o.size)) {
			uint32_t b = 0;

			while (r.dst[off + b] == r.src[off + b])
				b++;
			bench_die("target slot %u differs from its source at byte %u", s, b);
		}
	}
	if (uroce_qp_stats(r.s[0].qp, &ss) || uroce_qp_stats(r.s[1].qp, &rs))
		bench_die("qp_stats: %s", uroce_last_error());
	loop_fabric_stats(r.fab, &fst);
	if (fst.rx_ring_full || fst.lost || fst.queue_drops || fst.link_down || fst.tx_invalid)
		bench_die("the fabric dropped frames (rx_ring_full %" PRIu64 ", tx_invalid %" PRIu64 "): not a clean run",
		    fst.rx_ring_full, fst.tx_invalid);
	if (!ss.tx_packets)
		bench_die("the sender's QP counted no packets");

	printf("{\"mode\":\"%s\",\"reliability\":\"%s\",\"size\":%u,\"msgs\":%" PRIu64 ",\"mtu\":%u,\"depth\":%u,"
	       "\"signal\":%u,\"data_pkts\":%" PRIu64 ",\"ctrl_pkts\":%" PRIu64 ",\"retransmits\":%" PRIu64
	       ",\"wall_ns\":%" PRIu64 ",\"ns_per_data_pkt\":%.1f,\"ns_per_msg\":%.1f,\"rounds\":%" PRIu64
	       ",\"clock_steps\":%" PRIu64 ",\"sim_ns\":%" PRIu64 "}\n",
	       mode_name[o.mode], uroce_reliability_str(o.rel), o.size, o.msgs, o.mtu, o.depth, o.signal, ss.tx_packets,
	       rs.tx_packets, ss.retransmits, wall, (double)wall / (double)ss.tx_packets, (double)wall / (double)o.msgs,
	       r.iters, r.steps, sim_end - sim0);
	fflush(stdout);

	loop_side_close(&r.s[0]);
	loop_side_close(&r.s[1]);
	loop_fabric_destroy(r.fab);
	free(r.src);
	free(r.dst);
	return 0;
}
