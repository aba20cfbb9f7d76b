/* SPDX-License-Identifier: MIT */
/* Shared between the XDP program (ebpf/xdp_roce.bpf.c) and its loader
 * (dataplane/port_afxdp.c): the program's .rodata configuration. */
#ifndef UROCE_EBPF_XDP_ROCE_H
#define UROCE_EBPF_XDP_ROCE_H

#include <linux/types.h>

#define XDP_ROCE_UDP_PORT 4791
#define XDP_ROCE_CFG_VERSION 1

/* The program's names, as the kernel reports them: a loader recognises
 * a copy that another process attached by these. */
#define XDP_ROCE_PROG_NAME "xdp_roce"
#define XDP_ROCE_PROG_FRAGS_NAME "xdp_roce_frags"

struct xdp_roce_cfg {
	__u32 version;
	__be16 extra_port_be; /* second steered UDP port, network order; 0 = none */
	__u16 reserved;
};

#endif /* UROCE_EBPF_XDP_ROCE_H */
