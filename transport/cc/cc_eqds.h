/* SPDX-License-Identifier: MIT */
/* EQDS (receiver-driven credits): the constants both ends share, and the
 * sender's counts for tests. The receiver's pacer is sr's (sr_pull.h). */
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

/* The controller's counts in a cc_flow's state, for tests and tools (the
 * transport reads them through cc_ops.rts_counts). */
uint64_t eqds_tx_sent(const void *s);
uint64_t eqds_tx_spec(const void *s);
uint64_t eqds_tx_credit_cum(const void *s);
uint64_t eqds_tx_asked(const void *s);

#endif /* UROCE_TRANSPORT_CC_EQDS_H */
