/* XDP program of the afxdp port: steers RoCEv2 (UDP dport 4791, IPv4 or
 * IPv6, with or without one 802.1Q tag) and an optional second UDP port to
 * the AF_XDP socket of the receive queue; everything else goes to the kernel,
 * so ARP, ICMP, TCP and other UDP keep working on the interface. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

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

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Returns nonzero when the frame is UDP to one of our ports. Only the
 * first buffer is read: every header we look at sits in it, also for
 * multi-buffer frames. */
static __always_inline int is_roce(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u16 proto;
	void *l3;

	if ((void *)(eth + 1) > data_end)
		return 0;
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q)) {
		struct vlan_hdr *vh = l3;

		if ((void *)(vh + 1) > data_end)
			return 0;
		proto = vh->proto;
		l3 = vh + 1;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		__u32 ihl;

		if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP)
			return 0;
		/* Fragments go to the kernel, which reassembles them; RoCEv2
		 * sets DF and never fragments. */
		if (ip->frag_off & bpf_htons(0x3fff))
			return 0;
		ihl = ip->ihl * 4u;
		if (ihl < sizeof(*ip))
			return 0;
		udp = (void *)ip + ihl;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		/* RoCEv2 puts UDP right after the fixed header; extension
		 * headers mean it is not ours. */
		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			return 0;
		udp = (void *)(ip6 + 1);
	} else {
		return 0;
	}

	if ((void *)(udp + 1) > data_end)
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
