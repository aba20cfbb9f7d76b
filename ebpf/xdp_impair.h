/* SPDX-License-Identifier: MIT */
/* Shared between the impairment XDP program (ebpf/xdp_impair.bpf.c) and
 * its tool (apps/uroce_impair.c): the one map entry holding the drop
 * configuration, the random state and the counters. */
#ifndef UROCE_EBPF_XDP_IMPAIR_H
#define UROCE_EBPF_XDP_IMPAIR_H

#include <linux/bpf.h>
#include <linux/types.h>

#define XDP_IMPAIR_UDP_PORT 4791
/* Names the kernel reports, by which the tool finds its program again
 * after it has exited (at most 15 characters each). */
#define XDP_IMPAIR_PROG_NAME "xdp_impair"
#define XDP_IMPAIR_MAP_NAME "impair_state"
/* A draw is the top 32 bits of the generator; drop when it is below the
 * threshold, so a probability p is p * 2^32 (2^32: drop every packet). */
#define XDP_IMPAIR_ONE (1ull << 32)

struct xdp_impair_state {
	struct bpf_spin_lock lock; /* orders the draws: packets arrive on any CPU */
	__u32 burst_left;          /* drops still due in the current burst */
	__u64 rng;                 /* xorshift64 state, never 0 */
	__u64 threshold;           /* drop probability * 2^32 */
	__u64 seed;                /* as given, for --stats */
	__u32 burst;               /* packets dropped per drop event, >= 1 */
	__u32 reserved;
	__u64 packets;             /* every frame the program saw */
	__u64 roce;                /* RoCEv2 frames among them */
	__u64 dropped;             /* RoCEv2 frames dropped */
};

#endif /* UROCE_EBPF_XDP_IMPAIR_H */
