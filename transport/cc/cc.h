/* SPDX-License-Identifier: MIT */
/* Congestion control: one file per controller behind this table
 * (cc_none.c, cc_dcqcn.c, cc_swift.c, cc_cubic.c, cc_eqds.c), modelled on
 * UCCL's hooks. A controller owns an opaque state of state_bytes; the
 * transport (cc.c, rel_sr.c) calls the hooks and gates transmission on
 * what window() and rate_bps() say. Every hook runs on the engine thread,
 * is O(1), and takes its time from the engine's clock (ns) as an argument:
 * controllers never read a clock, so a simulated-time run replays. */
#ifndef UROCE_TRANSPORT_CC_H
#define UROCE_TRANSPORT_CC_H

#include <stdbool.h>
#include <stdint.h>

#include <uroce/uroce.h>

/* What a controller knows of its flow's world at init. */
struct cc_env {
	uint32_t mtu;           /* payload bytes of a full packet */
	uint64_t line_bps;      /* link rate (bits/s): DCQCN's start and ceiling, pacing caps */
	uint64_t base_rtt_ns;   /* unloaded RTT: Swift's base target, EQDS's speculative BDP */
	uint32_t max_window;    /* bytes the reliability window allows in flight (the cap of any cwnd) */
};

/* One acknowledgment, as the sender sees it. */
struct cc_ack {
	uint64_t now;
	uint64_t rtt_ns;        /* now - send time of the newest packet it acknowledges (sent once) */
	uint64_t remote_ns;     /* of which the receiver held it before answering (endpoint delay) */
	uint32_t bytes;         /* newly acknowledged payload bytes */
	uint32_t pkts;          /* newly acknowledged packets */
	uint32_t inflight;      /* bytes still in flight after it */
	uint8_t hops;           /* switches on the path (from the TTL of the acknowledgment) */
	bool ce;                /* the receiver saw CE on what this acknowledges (not used by DCQCN: CNPs) */
};

enum cc_flag {
	CC_PER_PATH = 1,  /* one state per path (CUBIC); else one per QP */
	CC_ECN = 2,       /* data goes out ECT(0): CE marks come back as CNPs */
	CC_CREDIT = 4,    /* receiver-driven: credit() gates, PULLs feed on_credit */
};

struct cc_ops {
	const char *name;
	enum uroce_cc id;
	uint16_t state_bytes;   /* <= CC_STATE_MAX */
	uint8_t flags;          /* enum cc_flag */
	void (*init)(void *s, const struct cc_env *env, uint64_t now);
	void (*on_ack)(void *s, const struct cc_ack *a);
	/* a packet was declared lost: rto = by the retransmission timeout
	 * (else RACK, a trimmed packet or a NACK) */
	void (*on_loss)(void *s, uint64_t now, bool rto);
	/* a CNP arrived (DCQCN); NULL = ignored */
	void (*on_cnp)(void *s, uint64_t now);
	/* bytes left on the wire (first sends and retransmissions) */
	void (*on_sent)(void *s, uint64_t now, uint32_t bytes);
	/* bytes allowed in flight; UINT64_MAX = no window */
	uint64_t (*window)(const void *s);
	/* pacing rate in bits/s now (may advance the controller's timers to
	 * now); 0 = not paced */
	uint64_t (*rate_bps)(void *s, uint64_t now);
	/* CC_CREDIT: bytes it may send beyond what is sent (credit), and a
	 * credit grant arrived (the receiver's cumulative count) */
	int64_t (*credit)(const void *s);
	void (*on_credit)(void *s, uint64_t now, uint64_t credit_cum);
	/* CC_CREDIT, the sender's requests to send (RTS). speculate: nothing
	 * in flight and no credit left, allow one BDP on speculation (the
	 * burst's first RTT), true if it did (an RTS follows). rts_due: should
	 * a sender that wants *want bytes in all ask now? (*want is raised to
	 * what it asked before; a true answer counts the RTS as sent.)
	 * rts_counts: what an RTS carries, and what the last one asked. */
	bool (*speculate)(void *s);
	bool (*rts_due)(void *s, uint64_t *want, uint64_t now, uint64_t retry_ns);
	void (*rts_counts)(const void *s, uint64_t *sent, uint64_t *spec, uint64_t *asked);
};

#define CC_STATE_MAX 128u
#define CC_PACE_SLACK_NS 2000u
/* Ethernet + IPv4 + UDP + BTH + RETH + ImmDt + ICRC: what a data packet
 * adds to its payload on the link (rates are link rates) */
#define CC_PKT_OVERHEAD 78u

extern const struct cc_ops cc_none_ops;
extern const struct cc_ops cc_dcqcn_ops;
extern const struct cc_ops cc_swift_ops;
extern const struct cc_ops cc_cubic_ops;
extern const struct cc_ops cc_eqds_ops;

const struct cc_ops *cc_ops_of(enum uroce_cc id);

/* on_ack / on_loss of a controller that does not react to them. */
void cc_ignore_ack(void *s, const struct cc_ack *a);
void cc_ignore_loss(void *s, uint64_t now, bool rto);

/* A flow the transport gates: the controller's state and its pacer. */
struct cc_flow {
	const struct cc_ops *ops;
	uint64_t next_tx_ns;    /* the pacer: the earliest time the next packet may leave */
	/* the pacer spaces packets at most this far apart, whatever the
	 * controller's rate (the QP's RTO, set by the transport; 0 = no
	 * floor): a QP always sends at least one packet per RTO, so a rate
	 * collapsed by repeated timeouts cannot stall it, and its retries
	 * still run out in bounded time */
	uint64_t max_gap_ns;
	uint32_t inflight;      /* bytes sent and not acknowledged or lost */
	_Alignas(8) uint8_t st[CC_STATE_MAX];
};

void cc_flow_init(struct cc_flow *f, const struct cc_ops *ops, const struct cc_env *env, uint64_t now);
/* 0 = a packet of bytes may leave now; else the time it may (the pacer),
 * or UINT64_MAX when it waits for an acknowledgment or a credit. */
uint64_t cc_flow_gate(struct cc_flow *f, uint64_t now, uint32_t bytes);
/* It left: account it and move the pacer. */
void cc_flow_sent(struct cc_flow *f, uint64_t now, uint32_t bytes);
/* bytes it carried are no longer in flight (acknowledged or lost) */
static inline void cc_flow_gone(struct cc_flow *f, uint32_t bytes)
{
	f->inflight = bytes > f->inflight ? 0 : f->inflight - bytes;
}

#endif /* UROCE_TRANSPORT_CC_H */
