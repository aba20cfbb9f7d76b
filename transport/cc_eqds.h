/* EQDS (receiver-driven credits) beyond the cc_ops table: the receiver's
 * per-port pull pacer and the sender's requests to send (cc_eqds.c). */
#ifndef UROCE_TRANSPORT_CC_EQDS_H
#define UROCE_TRANSPORT_CC_EQDS_H

#include <stdbool.h>
#include <stdint.h>

struct uroce_qp;
struct uroce_context;

#define EQDS_QUANTUM 16384u       /* bytes one PULL grants (UCCL's pull quantum) */
/* credit owed at most this far past the grants (1024 PULLs): above any
 * window a sender keeps in flight, so a real sender never waits on it */
#define EQDS_ASK_AHEAD (1024ull * EQDS_QUANTUM)
/* the speculative count grows by one BDP per speculation (at most this:
 * a sender's BDP is capped here), and an RTS follows each: a receiver
 * refuses a larger step, which would leave every real RTS behind it */
#define EQDS_SPEC_STEP EQDS_ASK_AHEAD

#define EQDS_RTS_RETRY_MIN_NS 100000ull /* a blocked sender asks again after max(2 srtt, this) */

/* The receiver's side of one QP: what its peer asked for, what it granted. */
struct eqds_rx {
	uint64_t want, spec;     /* the peer's last RTS (cumulative bytes) */
	uint64_t granted;        /* credit granted so far (cumulative) */
	struct uroce_qp *next;   /* the pacer's queue of QPs still owed credit */
	bool queued;
	bool pull_due;           /* the pacer granted: a PULL leaves in the next transmit pass */
	bool pull_fan;           /* the sender asked again for what it was granted: PULLs are being lost */
	uint32_t port;
	uint64_t rate_bps;       /* the QP's link rate: its port's pacer runs at it */
	uint32_t mtu;            /* payload of a full packet: the pacer counts headers too */
};

/* Receiver: an RTS arrived (the peer wants credit up to want - spec). */
void eqds_rx_rts(struct uroce_qp *qp, struct eqds_rx *e, uint64_t want, uint64_t spec);
/* The QP leaves its port's pacer (reset, destroy). */
void eqds_rx_detach(struct uroce_qp *qp, struct eqds_rx *e);

/* Sender, over the cc_eqds state in a cc_flow: counters for an RTS. */
uint64_t eqds_tx_sent(const void *s);
uint64_t eqds_tx_spec(const void *s);
uint64_t eqds_tx_credit_cum(const void *s);
uint64_t eqds_tx_asked(const void *s);
/* Nothing in flight and no credit left: allow one BDP of speculative
 * bytes (EQDS's first RTT); true if it did (an RTS should follow). */
bool eqds_tx_speculate(void *s);
/* Should a blocked sender that wants want bytes in all ask now? (it
 * records the RTS as sent when so) */
bool eqds_tx_rts_due(void *s, uint64_t *want, uint64_t now, uint64_t retry_ns);

#endif /* UROCE_TRANSPORT_CC_EQDS_H */
