/* SPDX-License-Identifier: MIT */
/* Interface addresses and link state from rtnetlink: a non-blocking
 * multicast watcher for the engine's slow path, and one-shot dumps
 * (RTM_GETADDR, RTM_GETLINK) to read the current state. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "dataplane/nl_watch.h"

/* A dump of one host's addresses or one link fits in a few of these. */
#define NL_BUF_LEN 16384
/* One-shot requests wait this long for the kernel before giving up. */
#define NL_RECV_TIMEOUT_MS 1000
/* Bound on the datagrams read per dump or per poll: the kernel answers a
 * dump in a handful; a poll that finds more leaves them for the next one. */
#define NL_MAX_DATAGRAMS 64

struct nl_watch {
	int fd;
	char buf[NL_BUF_LEN];
};

static bool link_running(unsigned flags)
{
	return (flags & IFF_UP) && (flags & IFF_RUNNING);
}

struct nl_watch *nl_watch_open(char *err, size_t errlen)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	struct nl_watch *w = calloc(1, sizeof(*w));

	if (!w) {
		snprintf(err, errlen, "netlink watcher: out of memory");
		return NULL;
	}
	w->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (w->fd < 0 || bind(w->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(err, errlen, "netlink watcher: cannot open an rtnetlink socket for link and address "
			 "changes: %s", strerror(errno));
		if (w->fd >= 0)
			close(w->fd);
		free(w);
		return NULL;
	}
	return w;
}

void nl_watch_close(struct nl_watch *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}

static void dispatch(struct nlmsghdr *nh, nl_watch_fn fn, void *arg)
{
	switch (nh->nlmsg_type) {
	case RTM_NEWADDR:
	case RTM_DELADDR: {
		const struct ifaddrmsg *ifa = NLMSG_DATA(nh);

		if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*ifa)))
			fn(arg, (int)ifa->ifa_index, NL_WATCH_ADDR, false);
		break;
	}
	case RTM_NEWLINK:
	case RTM_DELLINK: {
		const struct ifinfomsg *ifi = NLMSG_DATA(nh);

		if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*ifi)))
			fn(arg, ifi->ifi_index, NL_WATCH_LINK,
			   nh->nlmsg_type == RTM_NEWLINK && link_running(ifi->ifi_flags));
		break;
	}
	default:
		break;
	}
}

int nl_watch_poll(struct nl_watch *w, nl_watch_fn fn, void *arg)
{
	int seen = 0;

	for (int d = 0; d < NL_MAX_DATAGRAMS; d++) {
		ssize_t n = recv(w->fd, w->buf, sizeof(w->buf), MSG_DONTWAIT);
		struct nlmsghdr *nh;

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return seen;
			if (errno == ENOBUFS) { /* the kernel dropped notifications */
				fn(arg, 0, NL_WATCH_RESYNC, false);
				seen++;
				continue;
			}
			return -errno;
		}
		for (nh = (struct nlmsghdr *)w->buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			dispatch(nh, fn, arg);
			seen++;
		}
	}
	return seen;
}

static int nl_open_oneshot(void)
{
	struct timeval tv = { .tv_sec = NL_RECV_TIMEOUT_MS / 1000, .tv_usec = (NL_RECV_TIMEOUT_MS % 1000) * 1000 };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* Send req and hand every message of the answer (a dump, or one reply) to
 * fn until NLMSG_DONE or the reply itself. Returns 0 or -errno. */
static int nl_request(struct nlmsghdr *req, void (*fn)(struct nlmsghdr *nh, void *arg), void *arg)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char *buf = malloc(NL_BUF_LEN);
	int fd = nl_open_oneshot(), rc = -EPROTO;

	if (fd < 0 || !buf) {
		rc = fd < 0 ? fd : -ENOMEM;
		goto out;
	}
	req->nlmsg_seq = 1;
	if (sendto(fd, req, req->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		rc = -errno;
		goto out;
	}
	for (int d = 0; d < NL_MAX_DATAGRAMS; d++) {
		ssize_t n = recv(fd, buf, NL_BUF_LEN, 0);
		struct nlmsghdr *nh;

		if (n < 0) {
			rc = errno == EAGAIN ? -ETIMEDOUT : -errno;
			goto out;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_seq != req->nlmsg_seq)
				continue;
			if (nh->nlmsg_type == NLMSG_DONE) {
				rc = 0;
				goto out;
			}
			if (nh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(nh);

				rc = e->error;
				goto out;
			}
			fn(nh, arg);
			if (!(nh->nlmsg_flags & NLM_F_MULTI)) {
				rc = 0;
				goto out;
			}
		}
	}
	rc = -EMSGSIZE; /* a dump longer than the bound: not a host uroce expects */
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

struct addr_dump {
	int ifindex;
	struct nl_if_addrs *out;
};

static void addr_msg(struct nlmsghdr *nh, void *arg)
{
	struct addr_dump *a = arg;
	const struct ifaddrmsg *ifa = NLMSG_DATA(nh);
	struct rtattr *rta;
	const void *addr = NULL, *local = NULL;
	uint32_t flags;
	int len;

	if (nh->nlmsg_type != RTM_NEWADDR || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)) ||
	    (int)ifa->ifa_index != a->ifindex)
		return;
	flags = ifa->ifa_flags;
	len = (int)IFA_PAYLOAD(nh);
	for (rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == IFA_ADDRESS)
			addr = RTA_DATA(rta);
		else if (rta->rta_type == IFA_LOCAL)
			local = RTA_DATA(rta);
		else if (rta->rta_type == IFA_FLAGS && RTA_PAYLOAD(rta) >= 4)
			memcpy(&flags, RTA_DATA(rta), 4);
	}
	/* IFA_LOCAL is the interface's own address (IFA_ADDRESS is the peer's
	 * on a point-to-point link); IPv6 sends only IFA_ADDRESS. */
	if (local)
		addr = local;
	if (!addr)
		return;
	if (ifa->ifa_family == AF_INET && a->out->n4 < NL_ADDRS_MAX) {
		memcpy(&a->out->v4_be[a->out->n4++], addr, 4);
	} else if (ifa->ifa_family == AF_INET6 && a->out->n6 < NL_ADDRS_MAX) {
		if (flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED) || ifa->ifa_scope == RT_SCOPE_HOST)
			return;
		memcpy(a->out->v6[a->out->n6], addr, 16);
		a->out->v6_scope[a->out->n6++] = ifa->ifa_scope;
	}
}

int nl_if_addrs(int ifindex, struct nl_if_addrs *out)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req = { .nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)), .nlmsg_type = RTM_GETADDR,
			  .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		  .ifa = { .ifa_family = AF_UNSPEC } };
	struct addr_dump a = { ifindex, out };

	memset(out, 0, sizeof(*out));
	if (ifindex <= 0)
		return -EINVAL;
	return nl_request(&req.nh, addr_msg, &a);
}

struct link_get {
	bool found, running;
};

static void link_msg(struct nlmsghdr *nh, void *arg)
{
	struct link_get *l = arg;
	const struct ifinfomsg *ifi = NLMSG_DATA(nh);

	if (nh->nlmsg_type != RTM_NEWLINK || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return;
	l->found = true;
	l->running = link_running(ifi->ifi_flags);
}

int nl_link_running(int ifindex, bool *running)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
	} req = { .nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)), .nlmsg_type = RTM_GETLINK,
			  .nlmsg_flags = NLM_F_REQUEST },
		  .ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex } };
	struct link_get l = { false, false };
	int rc;

	if (ifindex <= 0)
		return -EINVAL;
	rc = nl_request(&req.nh, link_msg, &l);
	if (rc)
		return rc;
	if (!l.found)
		return -ENODEV;
	*running = l.running;
	return 0;
}

void nl_link_local_from_mac(const uint8_t mac[6], uint8_t out[16])
{
	memset(out, 0, 16);
	out[0] = 0xfe;
	out[1] = 0x80;
	out[8] = mac[0] ^ 0x02; /* the universal/local bit is inverted in EUI-64 */
	out[9] = mac[1];
	out[10] = mac[2];
	out[11] = 0xff;
	out[12] = 0xfe;
	out[13] = mac[3];
	out[14] = mac[4];
	out[15] = mac[5];
}

bool nl_mac_from_link_local(const uint8_t addr[16], uint8_t mac[6])
{
	static const uint8_t prefix[8] = { 0xfe, 0x80 };

	if (memcmp(addr, prefix, 8) || addr[11] != 0xff || addr[12] != 0xfe)
		return false;
	mac[0] = addr[8] ^ 0x02;
	mac[1] = addr[9];
	mac[2] = addr[10];
	mac[3] = addr[13];
	mac[4] = addr[14];
	mac[5] = addr[15];
	return true;
}
