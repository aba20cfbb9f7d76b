/* SPDX-License-Identifier: MIT */
/* ethtool queries over SIOCETHTOOL (see nic_ethtool.h). */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "dataplane/nic_ethtool.h"

static int ethtool(const char *ifname, void *cmd)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = cmd;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		rc = -errno;
	close(fd);
	return rc;
}

int nic_driver(const char *ifname, char *buf, size_t len)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	int rc = ethtool(ifname, &di);

	if (rc)
		return rc;
	snprintf(buf, len, "%.*s", (int)sizeof(di.driver), di.driver);
	return 0;
}

int nic_channels(const char *ifname, struct nic_channels *c)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	int rc = ethtool(ifname, &ch);

	memset(c, 0, sizeof(*c));
	if (rc)
		return rc;
	c->rx = ch.rx_count;
	c->tx = ch.tx_count;
	c->combined = ch.combined_count;
	c->max_rx = ch.max_rx;
	c->max_tx = ch.max_tx;
	c->max_combined = ch.max_combined;
	return 0;
}

uint32_t nic_rx_queues(const char *ifname)
{
	char path[96];
	struct dirent *de;
	uint32_t n = 0;
	DIR *d;

	/* the kernel keeps one rx-N entry per queue in use; ethtool's
	 * counts differ by driver (veth reports its queues as both rx and
	 * combined channels) */
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, "rx-", 3);
	closedir(d);
	return n;
}

int nic_rss_read(const char *ifname, struct nic_rss *r)
{
	struct ethtool_rxfh sizes = { .cmd = ETHTOOL_GRSSH };
	struct ethtool_rxfh *fh;
	struct ethtool_rxnfc fl = { .cmd = ETHTOOL_GRXFH, .flow_type = UDP_V4_FLOW };
	int rc;

	memset(r, 0, sizeof(*r));
	/* first the sizes, then the key and table */
	rc = ethtool(ifname, &sizes);
	if (rc)
		return rc;
	if (!sizes.indir_size || !sizes.key_size || sizes.key_size > NIC_RSS_KEY_MAX ||
	    sizes.indir_size > NIC_RSS_INDIR_MAX)
		return -EOPNOTSUPP;
	fh = calloc(1, sizeof(*fh) + sizes.indir_size * sizeof(uint32_t) + sizes.key_size);
	if (!fh)
		return -ENOMEM;
	fh->cmd = ETHTOOL_GRSSH;
	fh->indir_size = sizes.indir_size;
	fh->key_size = sizes.key_size;
	rc = ethtool(ifname, fh);
	if (!rc) {
		r->indir_n = fh->indir_size;
		memcpy(r->indir, fh->rss_config, fh->indir_size * sizeof(uint32_t));
		r->key_len = fh->key_size;
		memcpy(r->key, (uint8_t *)fh->rss_config + fh->indir_size * sizeof(uint32_t), fh->key_size);
		r->hfunc = fh->hfunc;
	}
	free(fh);
	if (rc)
		return rc;
	/* a driver that does not say hashes the usual 4-tuple */
	r->udp4_ports = ethtool(ifname, &fl) ||
			(fl.data & (RXH_L4_B_0_1 | RXH_L4_B_2_3)) == (RXH_L4_B_0_1 | RXH_L4_B_2_3);
	return 0;
}

int nic_rss_write_indir(const char *ifname, const uint32_t *indir, uint32_t n)
{
	struct ethtool_rxfh *fh = calloc(1, sizeof(*fh) + n * sizeof(uint32_t));
	int rc;

	if (!fh)
		return -ENOMEM;
	fh->cmd = ETHTOOL_SRSSH;
	fh->indir_size = n;
	fh->key_size = 0; /* the key stays */
	fh->hfunc = 0;    /* and the function */
	memcpy(fh->rss_config, indir, n * sizeof(uint32_t));
	rc = ethtool(ifname, fh);
	free(fh);
	return rc;
}
