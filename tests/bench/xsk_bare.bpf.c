/* SPDX-License-Identifier: MIT */
/* The bare baseline's XDP program for frames larger than a page: every
 * frame of the queue to the AF_XDP socket, nothing else (libxdp's own
 * default program has no frags support, and veth refuses it there). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

SEC("xdp.frags")
int xsk_bare_frags(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
