/* SPDX-License-Identifier: MIT */
/* Receive-side scaling as a NIC computes it: the Toeplitz hash of a
 * packet's addresses and ports under the NIC's key, and the queue its
 * indirection table gives that hash. */
#ifndef UROCE_DATAPLANE_RSS_H
#define UROCE_DATAPLANE_RSS_H

#include <stdint.h>

#include "dataplane/nic_ethtool.h"

/* Toeplitz hash of n input bytes (key_len >= n + 4). */
uint32_t rss_toeplitz(const uint8_t *key, uint32_t key_len, const uint8_t *in, uint32_t n);

/* The queue a UDP/IPv4 packet from saddr:sport to daddr:dport arrives on
 * (addresses in network byte order, ports in host order). */
uint32_t rss_queue_udp4(const struct nic_rss *r, uint32_t saddr_be, uint32_t daddr_be, uint16_t sport, uint16_t dport);

#endif
