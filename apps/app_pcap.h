/* SPDX-License-Identifier: MIT */
/* --pcap FILE of uroce-perf and uroce-pingpong: the frames of the port the
 * QPs use, sent and received, into a pcap file (uroce_port_capture_*),
 * since tcpdump on an AF_XDP port's interface sees none of them. */
#ifndef UROCE_APPS_APP_PCAP_H
#define UROCE_APPS_APP_PCAP_H

#include <stdint.h>
#include <stdio.h>

#include <uroce/uroce.h>

/* Start; on failure a line on stderr names PROG, the file and the reason. */
int app_pcap_start(const char *prog, struct uroce_context *ctx, uint8_t port, const char *path);
/* Stop and say on f how many frames the file holds, and how many it does not. */
int app_pcap_stop(const char *prog, struct uroce_context *ctx, uint8_t port, const char *path, FILE *f);

#endif
