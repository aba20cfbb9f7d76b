/* SPDX-License-Identifier: MIT */
/* The header walk both XDP programs share: Ethernet, at most one 802.1Q
 * tag, IPv4 or IPv6, then the UDP header, checked against the frame's end
 * so the verifier accepts every read. Only the first buffer is read: the
 * headers always sit in it, also in multi-buffer frames. */
#ifndef UROCE_EBPF_XDP_UDP_H
#define UROCE_EBPF_XDP_UDP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct xdp_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* The frame's UDP header, or NULL when it is no unfragmented UDP over
 * IPv4 or IPv6. Fragments go to the kernel, which reassembles them;
 * RoCEv2 sets DF and never fragments. On IPv6 RoCEv2 puts UDP right after
 * the fixed header: extension headers mean it is not ours. */
static __always_inline struct udphdr *xdp_udp_hdr(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u16 proto;
	void *l3;

	if ((void *)(eth + 1) > data_end)
		return NULL;
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q)) {
		struct xdp_vlan_hdr *vh = l3;

		if ((void *)(vh + 1) > data_end)
			return NULL;
		proto = vh->proto;
		l3 = vh + 1;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;

		if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
			return NULL;
		if (ip->frag_off & bpf_htons(0x3fff))
			return NULL;
		udp = l3 + ip->ihl * 4u;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		udp = (void *)(ip6 + 1);
	} else {
		return NULL;
	}
	if ((void *)(udp + 1) > data_end)
		return NULL;
	return udp;
}

#endif /* UROCE_EBPF_XDP_UDP_H */
