/* SPDX-License-Identifier: MIT */
/* The verbs port backend: "verbs:DEV[:PORT]". Opens the device, checks that
 * the port is RoCE and has a RoCEv2 GID, keeps the device's RoCEv2 GIDs as
 * the port's table, and follows its link through the device's async
 * events. It carries no frames: the NIC builds the packets from the work
 * requests the transport posts (port_ops.nic). */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/errbuf.h"
#include "rdma/verbs_port.h"

/* Link and GID changes are rare: the async queue is read this often. */
#define EVENT_POLL_NS 1000000ull

extern const struct nic_ops verbs_nic_ops;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "a, b, c" of the devices present, or "none". */
static void device_names(struct ibv_device **list, int n, char *buf, size_t len)
{
	size_t used = 0;

	snprintf(buf, len, "none");
	for (int i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", ibv_get_device_name(list[i]));
}

static struct ibv_context *open_by_name(const char *name, char *err, size_t errlen, int *rc)
{
	struct ibv_device **list;
	struct ibv_context *ibctx = NULL;
	char names[256];
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list) {
		*rc = errbuf_fail(err, errlen, -ENODEV, "no RDMA device '%s': libibverbs lists none (%s); "
		                  "accepted: a device of `ibv_devices` (Soft-RoCE: rdma link add rxe0 type rxe netdev IFACE)",
		                  name, strerror(errno));
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ibctx = ibv_open_device(list[i]);
		if (!ibctx)
			*rc = errbuf_fail(err, errlen, -errno ? -errno : -EIO, "RDMA device '%s': cannot open it: %s", name,
			                  strerror(errno));
		ibv_free_device_list(list);
		return ibctx;
	}
	device_names(list, n, names, sizeof(names));
	ibv_free_device_list(list);
	*rc = errbuf_fail(err, errlen, -ENODEV, "no RDMA device '%s'; devices present: %s "
	                  "(Soft-RoCE: rdma link add rxe0 type rxe netdev IFACE)", name, names);
	return NULL;
}

/* The RoCEv2 entries of the port's GID table, in the device's order. */
static int read_gids(struct verbs_port *vp, unsigned tbl_len, int *ifindex)
{
	vp->ngid = 0;
	for (unsigned i = 0; i < tbl_len && vp->ngid < VERBS_GID_MAX; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(vp->ibctx, vp->ib_port, i, &e, 0))
			continue; /* an empty slot (ENODATA) */
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		memcpy(vp->gid[vp->ngid], e.gid.raw, 16);
		vp->dev_index[vp->ngid++] = (uint16_t)i;
		if (!*ifindex)
			*ifindex = (int)e.ndev_ifindex;
	}
	return (int)vp->ngid;
}

/* MAC and IP MTU of the device's netdev. */
static void read_netdev(struct port *p, int ifindex)
{
	char name[IF_NAMESIZE];
	struct ifreq ifr;
	int fd;

	if (!ifindex || !if_indextoname((unsigned)ifindex, name))
		return;
	p->ifindex = ifindex; /* reported only (uroce_query_port): the NIC owns the link */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr))
		memcpy(p->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		p->mtu = (uint32_t)ifr.ifr_mtu;
	close(fd);
}

static int verbs_open(struct port *p, char *err, size_t errlen)
{
	const struct port_config *cfg = &p->cfg;
	uint8_t ib_port = cfg->ib_port ? cfg->ib_port : 1;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	struct verbs_port *vp;
	int rc = 0, ifindex = 0, flags;

	vp = calloc(1, sizeof(*vp));
	if (!vp)
		return errbuf_fail(err, errlen, -ENOMEM, "out of memory");
	vp->ibctx = open_by_name(cfg->ibdev, err, errlen, &rc);
	if (!vp->ibctx)
		goto fail;
	if (ibv_query_device(vp->ibctx, &dattr)) {
		rc = errbuf_fail(err, errlen, -EIO, "RDMA device '%s': ibv_query_device failed: %s", cfg->ibdev,
		                 strerror(errno));
		goto fail_close;
	}
	if (ib_port > dattr.phys_port_cnt) {
		rc = errbuf_fail(err, errlen, -EINVAL, "RDMA device '%s' has no port %u; accepted: 1-%u", cfg->ibdev,
		                 ib_port, dattr.phys_port_cnt);
		goto fail_close;
	}
	if (ibv_query_port(vp->ibctx, ib_port, &pattr)) {
		rc = errbuf_fail(err, errlen, -EIO, "RDMA device '%s' port %u: ibv_query_port failed: %s", cfg->ibdev,
		                 ib_port, strerror(errno));
		goto fail_close;
	}
	if (pattr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		rc = errbuf_fail(err, errlen, -EINVAL, "RDMA device '%s' port %u is InfiniBand, not RoCE; accepted: a "
		                 "port whose link layer is Ethernet", cfg->ibdev, ib_port);
		goto fail_close;
	}
	vp->ib_port = ib_port;
	if (read_gids(vp, (unsigned)pattr.gid_tbl_len, &ifindex) == 0) {
		rc = errbuf_fail(err, errlen, -EADDRNOTAVAIL, "RDMA device '%s' port %u has no RoCEv2 GID (uroce speaks "
		                 "RoCEv2 only); give its network interface an IP address", cfg->ibdev, ib_port);
		goto fail_close;
	}
	vp->link_up = pattr.state == IBV_PORT_ACTIVE;
	{
		/* completion timestamps: a clock of known rate that stamps CQEs */
		struct ibv_device_attr_ex dx;

		if (!ibv_query_device_ex(vp->ibctx, NULL, &dx) && dx.completion_timestamp_mask && dx.hca_core_clock) {
			vp->ts.mask = dx.completion_timestamp_mask;
			vp->ts.khz = dx.hca_core_clock;
			vp->ts.on = true;
		}
	}
	vp->port = p;
	/* the async queue is read from poll(), never blocking the engine */
	flags = fcntl(vp->ibctx->async_fd, F_GETFL);
	if (flags < 0 || fcntl(vp->ibctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		rc = errbuf_fail(err, errlen, -errno, "RDMA device '%s': cannot make its event queue non-blocking: %s",
		                 cfg->ibdev, strerror(errno));
		goto fail_close;
	}
	p->priv = vp;
	p->completion_ts = vp->ts.on;
	p->max_mtu = (uint8_t)pattr.max_mtu; /* enum ibv_mtu, the same numbers as enum uroce_mtu */
	p->mtu = 1500;
	read_netdev(p, ifindex);
	for (unsigned i = 0; i < vp->ngid; i++) {
		static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (!memcmp(vp->gid[i], v4_prefix, 12)) {
			memcpy(&p->ipv4_be, vp->gid[i] + 12, 4);
			break;
		}
	}
	return 0;

fail_close:
	ibv_close_device(vp->ibctx);
fail:
	free(vp);
	return rc;
}

static void verbs_close(struct port *p)
{
	struct verbs_port *vp = p->priv;

	if (!vp)
		return;
	ibv_close_device(vp->ibctx);
	free(vp);
	p->priv = NULL;
}

/* No frames: the NIC sends and receives. */
static uint16_t verbs_no_frames(struct port *p, struct uroce_frame *f, uint16_t n)
{
	(void)p, (void)f, (void)n;
	return 0;
}

static void verbs_free(struct port *p, struct uroce_frame *f, uint16_t n)
{
	(void)p, (void)f, (void)n;
}

static bool verbs_link_up(struct port *p)
{
	return verbs_port_of(p)->link_up;
}

static void verbs_link_refresh(struct port *p)
{
	struct verbs_port *vp = verbs_port_of(p);
	struct ibv_port_attr a;

	if (!ibv_query_port(vp->ibctx, vp->ib_port, &a))
		vp->link_up = a.state == IBV_PORT_ACTIVE;
}

/* The device's GID table changed (an address came or went): the port's
 * table follows; the transport's slow path publishes it and raises
 * GID_CHANGE (gid.c). When the port cannot be queried the table stays. */
static void reread_gids(struct verbs_port *vp)
{
	struct ibv_port_attr a;
	int ifindex = 0;

	if (!ibv_query_port(vp->ibctx, vp->ib_port, &a))
		read_gids(vp, (unsigned)a.gid_tbl_len, &ifindex);
}

/* The device's events: PORT_ACTIVE / PORT_ERR move the link, GID_CHANGE
 * rereads the table; the rest (a QP's or CQ's fatal error) is only
 * acknowledged: the QP's own completions carry it to the application. */
static void verbs_poll(struct port *p)
{
	struct verbs_port *vp = verbs_port_of(p);
	struct ibv_async_event ev;
	uint64_t now = mono_ns();

	if (now < vp->next_event_ns)
		return;
	vp->next_event_ns = now + EVENT_POLL_NS;
	while (!ibv_get_async_event(vp->ibctx, &ev)) {
		if (ev.event_type == IBV_EVENT_PORT_ACTIVE && ev.element.port_num == vp->ib_port)
			vp->link_up = true;
		else if (ev.event_type == IBV_EVENT_PORT_ERR && ev.element.port_num == vp->ib_port)
			vp->link_up = false;
		else if (ev.event_type == IBV_EVENT_GID_CHANGE && ev.element.port_num == vp->ib_port)
			reread_gids(vp);
		ibv_ack_async_event(&ev);
	}
}

static unsigned verbs_gids(struct port *p, uint8_t (*gid)[16], unsigned max)
{
	struct verbs_port *vp = verbs_port_of(p);
	unsigned n = vp->ngid < max ? vp->ngid : max;

	memcpy(gid, vp->gid, 16u * n);
	return n;
}

const struct port_ops port_verbs_ops = {
	.name = "verbs",
	.open = verbs_open,
	.close = verbs_close,
	.rx_burst = verbs_no_frames,
	.tx_burst = verbs_no_frames,
	.alloc = verbs_no_frames,
	.free = verbs_free,
	.link_up = verbs_link_up,
	.link_refresh = verbs_link_refresh,
	.poll = verbs_poll,
	.gids = verbs_gids,
	.nic = &verbs_nic_ops,
};
