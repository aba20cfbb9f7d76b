/* SPDX-License-Identifier: MIT */
/* afxdp backend specifics that callers may want to report (the port itself
 * is used through dataplane/port.h like every other backend). */
#ifndef UROCE_DATAPLANE_PORT_AFXDP_H
#define UROCE_DATAPLANE_PORT_AFXDP_H

#include <stdbool.h>
#include <stdint.h>

#include "dataplane/port.h"

/* How an afxdp port ended up configured, after its fallbacks. */
struct port_afxdp_info {
	bool zero_copy;      /* bound XDP_ZEROCOPY (else copy mode) */
	bool multi_buffer;   /* XDP_USE_SG: frames span several UMEM chunks */
	bool skb_mode;       /* XDP program in generic (skb) mode */
	bool prog_owner;     /* this process attached the XDP program */
	uint32_t prog_id;    /* kernel id of the XDP program */
	uint32_t queue;
	uint32_t chunk_size; /* UMEM chunk (XDP frame) size */
	uint32_t frame_room; /* bytes one frame (slot of chunks) holds */
	uint32_t nframes;    /* frames in the UMEM */
	uint32_t ring_size;  /* rx, tx, fill and completion ring entries */
	uint64_t kick_errors; /* TX wakeups that failed with an unexpected errno */
};

/* Fill info for an open afxdp port; -EINVAL for any other port. */
int port_afxdp_info(const struct port *p, struct port_afxdp_info *info);

#endif /* UROCE_DATAPLANE_PORT_AFXDP_H */
