/* SPDX-License-Identifier: MIT */
/* Paths of a QP (UCCL section 4.1): a path is a UDP source port, the
 * entropy switches hash for ECMP, leaving by one of the context's ports.
 * Each keeps its RTT, bytes in flight, ECN marks and losses; a policy file
 * behind path_ops picks the path of each packet (path_p2c.c, path_rr.c,
 * path_random.c, path_single.c). A path that loses down_losses packets in
 * a row leaves use for a quarantine that doubles each time, then carries
 * one probe; the last usable path is never taken out. */
#ifndef UROCE_TRANSPORT_PATH_H
#define UROCE_TRANSPORT_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include <uroce/uroce.h>

#include "transport/cc/cc.h"

enum path_state {
	PATH_UP = 0,
	PATH_DOWN,   /* quarantined until down_until, then one probe may go */
	PATH_PROBE,  /* its probe is out: an acknowledgment brings it back */
};

struct qp_path {
	uint16_t sport;
	uint8_t port;           /* context port index it leaves by */
	uint8_t state;          /* enum path_state */
	uint32_t inflight;      /* bytes sent on it, not acknowledged or lost */
	uint32_t loss_run;      /* losses since its last acknowledgment */
	uint32_t downs;         /* quarantines in a row (the next one lasts 2^downs times longer) */
	uint64_t srtt_ns, min_rtt_ns;
	uint64_t last_ack_ns;   /* when it last delivered something */
	uint64_t down_until;
	uint64_t tx_pkts, acked_pkts, losses, ecn_marks, trims;
	uint64_t quarantines;   /* times taken out of use */
};

#define PATH_NONE 0xffffu
#define PATH_QUARANTINE_MIN_NS 1000000ull /* a blackholed path is tried again after 1 ms, then 2, 4, ... */
#define PATH_QUARANTINE_MAX_SHIFT 8u
#define PATH_DOWN_LOSSES_DEFAULT 8u

struct path_set;

struct path_ops {
	const char *name;
	/* a usable path for a packet of bytes (path_usable), avoiding avoid
	 * when another is usable; PATH_NONE when none is */
	unsigned (*select)(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid);
};

extern const struct path_ops path_single_ops;
extern const struct path_ops path_p2c_ops;
extern const struct path_ops path_rr_ops;
extern const struct path_ops path_random_ops;

struct path_set {
	const struct path_ops *ops;
	struct qp_path *p;
	struct cc_flow *cc;     /* per-path controllers (CC_PER_PATH), else NULL */
	uint16_t n;
	uint16_t nup;           /* paths not quarantined */
	uint16_t rr;            /* round robin's next */
	uint32_t down_losses;
	uint32_t spray_min;
	uint64_t rng;           /* xorshift64, seeded per QP */
	uint64_t base_quarantine_ns;
};

/* Allocate n paths with source ports around sport0 over the given ports
 * (context port indices, nports >= 1); 0 or -ENOMEM. */
int path_set_init(struct path_set *ps, const struct uroce_path_attr *a, uint16_t sport0, const uint8_t *ports,
                  unsigned nports, uint64_t seed);
void path_set_fini(struct path_set *ps);
const struct path_ops *path_ops_of(enum uroce_path_policy p, unsigned npaths);

static inline uint64_t path_rand(struct path_set *ps)
{
	uint64_t x = ps->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	ps->rng = x;
	return x;
}

/* May path i carry a packet of bytes now: up (or quarantine over and
 * nothing in flight on it: its probe), and its own controller allows. */
bool path_usable(const struct path_set *ps, unsigned i, uint64_t now, uint32_t bytes);
/* The first usable path at or after start (wrapping), avoiding avoid if
 * another is usable; PATH_NONE when none is. */
unsigned path_scan(const struct path_set *ps, unsigned start, uint64_t now, uint32_t bytes, unsigned avoid);
/* For a retransmission: the up, usable path (other than avoid when there
 * is another) that delivered most recently, preferring one that lost
 * nothing since; never a quarantined path's probe. PATH_NONE when no path
 * is up and usable (the policy chooses then). */
unsigned path_healthy(struct path_set *ps, uint64_t now, uint32_t bytes, unsigned avoid);
/* The earliest time a path's pacer opens (UINT64_MAX: they wait for
 * acknowledgments), for the QP's timer when no path was usable. */
uint64_t path_next_open(struct path_set *ps, uint64_t now, uint32_t bytes);

/* Feedback of a packet that went on path i. */
void path_sent(struct path_set *ps, unsigned i, uint64_t now, uint32_t bytes);
/* bytes sent on it are no longer in flight (acknowledged or lost) */
static inline void path_gone(struct path_set *ps, unsigned i, uint32_t bytes)
{
	struct qp_path *p = &ps->p[i];

	p->inflight = bytes > p->inflight ? 0 : p->inflight - bytes;
}
void path_acked(struct path_set *ps, unsigned i, uint64_t now, uint64_t rtt_ns, bool first_send);
void path_lost(struct path_set *ps, unsigned i, uint64_t now, bool count_run);
void path_ecn(struct path_set *ps, unsigned i);

#endif /* UROCE_TRANSPORT_PATH_H */
