/* SPDX-License-Identifier: MIT */
/* XDP program of the afxdp port: steers RoCEv2 (UDP dport 4791, IPv4 or
 * IPv6, with or without one 802.1Q tag) and an optional second UDP port to
 * the AF_XDP socket of the receive queue; everything else goes to the kernel,
 * so ARP, ICMP, TCP and other UDP keep working on the interface. */
#include "xdp_udp.h"

#include "xdp_roce.h"

/* One socket per receive queue, keyed by rx_queue_index; the loader sizes
 * it to the interface's queue count before load. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

/* Written by the loader into .rodata before load, so the verifier folds it
 * into constants: no map lookup per packet. */
const volatile struct xdp_roce_cfg roce_cfg = {
	.version = XDP_ROCE_CFG_VERSION,
	.extra_port_be = 0,
};

/* Nonzero when the frame is UDP to one of our ports. */
static __always_inline int is_roce(struct xdp_md *ctx)
{
	struct udphdr *udp = xdp_udp_hdr(ctx);

	if (!udp)
		return 0;
	if (udp->dest == bpf_htons(XDP_ROCE_UDP_PORT))
		return 1;
	return roce_cfg.extra_port_be && udp->dest == roce_cfg.extra_port_be;
}

/* With no socket on this queue the frame falls back to the kernel
 * (the XDP_PASS in the flags), rather than being dropped. */
SEC("xdp")
int xdp_roce(struct xdp_md *ctx)
{
	if (!is_roce(ctx))
		return XDP_PASS;
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

/* The same program for frames larger than one page: attached instead of
 * the one above when the MTU needs multi-buffer XDP (veth refuses a
 * program without frags support on such an MTU). */
SEC("xdp.frags")
int xdp_roce_frags(struct xdp_md *ctx)
{
	if (!is_roce(ctx))
		return XDP_PASS;
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
