/* SPDX-License-Identifier: MIT */
/* A port's capture: every frame it receives and sends, written to a
 * classic pcap file as the frames pass port_rx_burst and port_tx_burst
 * (received before any check, ARP and frames later dropped included; sent
 * as the port took them). The only view of an AF_XDP port's traffic:
 * tcpdump on the interface sees none of it. Bounded in frames.
 */
#ifndef UROCE_DATAPLANE_PORT_CAPTURE_H
#define UROCE_DATAPLANE_PORT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "dataplane/pcap_file.h"

#define PORT_CAPTURE_MAX_DEFAULT 1000000u /* frames: about 4 GB at 4 KB MTU, a bound on the file */

struct port;
struct uroce_frame;

struct port_capture {
	struct pcap_writer w;
	uint64_t max_frames;
	uint64_t frames, bytes; /* written */
	uint64_t missed;        /* past max_frames, or after a write failed */
	int error;              /* the first failed write's -errno, 0 when none */
};

/* Start capturing port p into path (truncated), at most max_frames
 * (0 = PORT_CAPTURE_MAX_DEFAULT). 0, or -errno with a message in err
 * (a capture already running, the file cannot be created). */
int port_capture_start(struct port *p, const char *path, uint64_t max_frames, char *err, size_t errlen);
/* Stop: flush and close the file; *out gets the counts. -ENOENT when
 * none runs; else 0, or the first write's error. */
int port_capture_stop(struct port *p, struct port_capture *out);
/* The hook port_rx_burst and port_tx_burst call while one runs. */
void port_capture_burst(struct port *p, const struct uroce_frame *f, uint16_t n);

#endif
