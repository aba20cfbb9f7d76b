/* SPDX-License-Identifier: MIT */
/* What a kernel network interface says about itself through ethtool: its
 * driver, its queues (channels), and its receive-side scaling (the hash
 * key, the indirection table, the fields a UDP/IPv4 flow hashes on). The
 * afxdp port checks a driver's XDP needs with these, and uroce_steer_sports
 * picks UDP source ports by the RSS they describe. */
#ifndef UROCE_DATAPLANE_NIC_ETHTOOL_H
#define UROCE_DATAPLANE_NIC_ETHTOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nic_channels {
	uint32_t rx, tx, combined;             /* in use now */
	uint32_t max_rx, max_tx, max_combined; /* the most the device has */
};

#define NIC_RSS_KEY_MAX 64u
#define NIC_RSS_INDIR_MAX 512u
#define NIC_RSS_HASH_TOP (1u << 0) /* ETH_RSS_HASH_TOP_BIT; the mask itself is kernel-internal */

struct nic_rss {
	uint8_t key[NIC_RSS_KEY_MAX];
	uint32_t key_len;
	uint32_t indir[NIC_RSS_INDIR_MAX]; /* hash % indir_n -> queue */
	uint32_t indir_n;
	uint8_t hfunc;     /* NIC_RSS_HASH_TOP is Toeplitz (0: the driver does not say) */
	bool udp4_ports;   /* UDP/IPv4 hashes its ports too (not only the addresses) */
};

/* The driver's name ("virtio_net", "veth", ...): 0, or a negative errno. */
int nic_driver(const char *ifname, char *buf, size_t len);
/* Queues in use and at most: 0, or a negative errno (-EOPNOTSUPP: the
 * driver does not say). */
int nic_channels(const char *ifname, struct nic_channels *c);
/* Receive queues in use now (from sysfs), 0 when unknown. */
uint32_t nic_rx_queues(const char *ifname);
/* The RSS configuration: 0, or a negative errno (-EOPNOTSUPP: the driver
 * has no RSS to read, or its key or table is larger than we keep). */
int nic_rss_read(const char *ifname, struct nic_rss *r);

/* Write the indirection table (n entries, as read), key and hash
 * function left as they are: 0, or a negative errno. */
int nic_rss_write_indir(const char *ifname, const uint32_t *indir, uint32_t n);

#endif
