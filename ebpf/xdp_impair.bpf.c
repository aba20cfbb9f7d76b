/* SPDX-License-Identifier: MIT */
/* Impairment XDP program for test links: drops RoCEv2 packets (UDP
 * destination port 4791, IPv4 or IPv6, with or without one 802.1Q tag) with
 * a seeded probability, in bursts, and passes every other frame. Loaded and
 * read by apps/uroce_impair.c; the drop pattern depends only on the seed
 * and the order of the RoCEv2 packets. */
#include "xdp_udp.h"

#include "xdp_impair.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_impair_state);
} impair_state SEC(".maps");

/* Nonzero when the frame is UDP to port 4791. */
static __always_inline int is_roce(struct xdp_md *ctx)
{
	struct udphdr *udp = xdp_udp_hdr(ctx);

	return udp && udp->dest == bpf_htons(XDP_IMPAIR_UDP_PORT);
}

static __always_inline __u64 xorshift64(__u64 x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* "frags": also attachable where the MTU needs multi-buffer frames. */
SEC("xdp.frags")
int xdp_impair(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct xdp_impair_state *st = bpf_map_lookup_elem(&impair_state, &key);
	int drop = 0;

	if (!st)
		return XDP_PASS;
	__sync_fetch_and_add(&st->packets, 1);
	if (!is_roce(ctx))
		return XDP_PASS;

	bpf_spin_lock(&st->lock);
	st->roce++;
	if (st->burst_left) {
		st->burst_left--;
		drop = 1;
	} else {
		st->rng = xorshift64(st->rng);
		if ((st->rng >> 32) < st->threshold) {
			st->burst_left = st->burst ? st->burst - 1 : 0;
			drop = 1;
		}
	}
	if (drop)
		st->dropped++;
	bpf_spin_unlock(&st->lock);
	return drop ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
