/* SPDX-License-Identifier: MIT */
/* Next-hop MAC resolution over rtnetlink: RTM_GETROUTE for the next hop,
 * RTM_GETNEIGH for its MAC, and RTM_NEWNEIGH with NTF_USE (or a datagram)
 * to make the kernel resolve a missing entry. */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "dataplane/neigh.h"

/* Every netlink exchange here is one request and one short answer; a
 * kernel that does not answer within this is treated as an error rather
 * than waited on. */
#define NL_RECV_TIMEOUT_MS 1000
#define NL_BUF_LEN 8192
/* How often the neighbour table is re-read while the kernel resolves. */
#define NEIGH_POLL_US 2000
/* RFC 863 discard: a datagram there makes the kernel resolve the next hop
 * and is then ignored by the peer. */
#define DISCARD_PORT 9

struct nl_req {
	struct nlmsghdr nh;
	union {
		struct ndmsg nd;
		struct rtmsg rt;
	};
	char attrs[64];
};

bool neigh_addr_is_v4(const uint8_t addr[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(addr, prefix, sizeof(prefix));
}

static int addr_family(const uint8_t a[16])
{
	return neigh_addr_is_v4(a) ? AF_INET : AF_INET6;
}

static const uint8_t *addr_bytes(const uint8_t a[16], int *len)
{
	if (neigh_addr_is_v4(a)) {
		*len = 4;
		return a + 12;
	}
	*len = 16;
	return a;
}

static void addr_store(uint8_t out[16], int family, const void *raw)
{
	if (family == AF_INET) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, raw, 4);
	} else {
		memcpy(out, raw, 16);
	}
}

static void add_attr(struct nl_req *r, uint16_t type, const void *data, int len)
{
	struct rtattr *rta = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, (size_t)len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

static int nl_open(void)
{
	struct timeval tv = { .tv_sec = NL_RECV_TIMEOUT_MS / 1000,
			      .tv_usec = (NL_RECV_TIMEOUT_MS % 1000) * 1000 };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* Send one request and wait for its answer: the first message with our
 * sequence number. Returns its length in buf, or -errno (an NLMSG_ERROR
 * with a nonzero code included). A bare ACK returns 0. */
static int nl_call(int fd, struct nl_req *req, char *buf, size_t buflen)
{
	static __thread uint32_t seq;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	req->nh.nlmsg_seq = ++seq;
	if (sendto(fd, req, req->nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	/* Bounded: each recv waits at most NL_RECV_TIMEOUT_MS, and stale
	 * answers to earlier requests are few. */
	for (int tries = 0; tries < 16; tries++) {
		ssize_t n = recv(fd, buf, buflen, 0);
		struct nlmsghdr *nh;

		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_seq != req->nh.nlmsg_seq)
				continue;
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(nh);

				if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EPROTO;
				return e->error;
			}
			if ((char *)nh != buf)
				memmove(buf, nh, nh->nlmsg_len);
			return (int)nh->nlmsg_len;
		}
	}
	return -EPROTO;
}

static int route_get(int fd, int ifindex, const uint8_t dst[16], uint8_t nexthop[16], int *oif)
{
	char buf[NL_BUF_LEN];
	struct nl_req req;
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct rtmsg *rt;
	struct rtattr *a;
	int family = addr_family(dst), alen, len, rc, out_if = 0;
	const uint8_t *raw = addr_bytes(dst, &alen);

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.rt.rtm_family = (unsigned char)family;
	req.rt.rtm_dst_len = (unsigned char)(alen * 8);
	add_attr(&req, RTA_DST, raw, alen);
	if (ifindex > 0)
		add_attr(&req, RTA_OIF, &ifindex, sizeof(ifindex));

	rc = nl_call(fd, &req, buf, sizeof(buf));
	if (rc == -ENETUNREACH || rc == -EHOSTUNREACH || rc == -ENODEV)
		return -ENETUNREACH;
	if (rc < 0)
		return rc;
	if (nh->nlmsg_type != RTM_NEWROUTE || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*rt)))
		return -EPROTO;
	rt = NLMSG_DATA(nh);
	if (rt->rtm_type != RTN_UNICAST)
		return -EHOSTUNREACH;

	memcpy(nexthop, dst, 16);
	len = (int)RTM_PAYLOAD(nh);
	for (a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(int)) {
			memcpy(&out_if, RTA_DATA(a), sizeof(int));
		} else if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) == (unsigned)alen) {
			addr_store(nexthop, family, RTA_DATA(a));
		} else if (a->rta_type == RTA_VIA && RTA_PAYLOAD(a) >= sizeof(struct rtvia)) {
			/* IPv4 route via an IPv6 gateway (RFC 5549). */
			struct rtvia *via = RTA_DATA(a);
			unsigned need = via->rtvia_family == AF_INET ? 4 : 16;

			if (RTA_PAYLOAD(a) < sizeof(*via) + need)
				return -EPROTO;
			addr_store(nexthop, via->rtvia_family, via->rtvia_addr);
		}
	}
	if (ifindex > 0 && out_if && out_if != ifindex)
		return -ENETUNREACH;
	if (oif)
		*oif = out_if ? out_if : ifindex;
	return 0;
}

/* The kernel's own choice first: a lookup pinned to an interface that has
 * no route at all is answered with "on-link" (as for a socket bound to the
 * device), which would turn every unroutable address into an ARP timeout.
 * Only when the kernel's choice leaves through another interface is the
 * lookup repeated pinned to ours. */
static int route_lookup(int fd, int ifindex, const uint8_t dst[16], uint8_t nexthop[16], int *oif)
{
	int rc, out = 0;

	rc = route_get(fd, 0, dst, nexthop, &out);
	if (rc < 0 || ifindex <= 0 || out == ifindex) {
		if (rc == 0 && oif)
			*oif = out;
		return rc;
	}
	return route_get(fd, ifindex, dst, nexthop, oif);
}

int neigh_route(int ifindex, const uint8_t dst[16], uint8_t nexthop[16], int *oif)
{
	int fd = nl_open(), rc;

	if (fd < 0)
		return fd;
	rc = route_lookup(fd, ifindex, dst, nexthop, oif);
	close(fd);
	return rc;
}

#define NUD_USABLE (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP)

/* 0 with mac, -ENOENT (missing or still resolving), -EHOSTUNREACH (failed). */
static int neigh_get(int fd, int ifindex, const uint8_t ip[16], uint8_t mac[6])
{
	char buf[NL_BUF_LEN];
	struct nl_req req;
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct ndmsg *nd;
	struct rtattr *a;
	int alen, len, rc;
	const uint8_t *raw = addr_bytes(ip, &alen);
	bool have_mac = false;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	req.nh.nlmsg_type = RTM_GETNEIGH;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nd.ndm_family = (unsigned char)addr_family(ip);
	req.nd.ndm_ifindex = ifindex;
	add_attr(&req, NDA_DST, raw, alen);

	rc = nl_call(fd, &req, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	if (nh->nlmsg_type != RTM_NEWNEIGH || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)))
		return -EPROTO;
	nd = NLMSG_DATA(nh);
	if (nd->ndm_state & NUD_FAILED)
		return -EHOSTUNREACH;
	if (!(nd->ndm_state & NUD_USABLE))
		return -ENOENT;
	len = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof(*nd)));
	for (a = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd))); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6) {
			memcpy(mac, RTA_DATA(a), 6);
			have_mac = true;
		}
	}
	/* NOARP devices (e.g. a tun) have no MAC to put in a frame. */
	return have_mac ? 0 : -ENOENT;
}

int neigh_lookup(int ifindex, const uint8_t ip[16], uint8_t mac[6])
{
	int fd, rc;

	if (ifindex <= 0)
		return -EINVAL;
	fd = nl_open();
	if (fd < 0)
		return fd;
	rc = neigh_get(fd, ifindex, ip, mac);
	close(fd);
	return rc;
}

/* Ask the kernel to resolve ip on ifindex: create the entry if needed and
 * start ARP/ND on it (NTF_USE), exactly as if a packet were waiting. */
static int neigh_kick_netlink(int fd, int ifindex, const uint8_t ip[16])
{
	char buf[NL_BUF_LEN];
	struct nl_req req;
	int alen;
	const uint8_t *raw = addr_bytes(ip, &alen);

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg));
	req.nh.nlmsg_type = RTM_NEWNEIGH;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
	req.nd.ndm_family = (unsigned char)addr_family(ip);
	req.nd.ndm_ifindex = ifindex;
	req.nd.ndm_state = NUD_NONE;
	req.nd.ndm_flags = NTF_USE;
	add_attr(&req, NDA_DST, raw, alen);
	return nl_call(fd, &req, buf, sizeof(buf));
}

/* Without CAP_NET_ADMIN: a datagram to the discard port, out of ifindex,
 * which the kernel holds until it has resolved the next hop. */
static int neigh_kick_datagram(int ifindex, const uint8_t ip[16])
{
	int family = addr_family(ip), fd, rc = 0;
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(DISCARD_PORT) };
	struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons(DISCARD_PORT) };
	const struct sockaddr *sa;
	socklen_t salen;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		memcpy(&s4.sin_addr, ip + 12, 4);
		sa = (const struct sockaddr *)&s4;
		salen = sizeof(s4);
	} else {
		memcpy(&s6.sin6_addr, ip, 16);
		/* A link-local address needs its interface as the scope. */
		s6.sin6_scope_id = (uint32_t)ifindex;
		sa = (const struct sockaddr *)&s6;
		salen = sizeof(s6);
	}
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX, &ifindex, sizeof(ifindex)) ||
	    sendto(fd, "", 0, MSG_DONTWAIT, sa, salen) < 0)
		rc = -errno;
	close(fd);
	/* EAGAIN: queued behind the resolution, which is what we wanted. */
	return rc == -EAGAIN ? 0 : rc;
}

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int neigh_resolve(int ifindex, const uint8_t ip[16], uint8_t mac[6], int timeout_ms)
{
	uint8_t nexthop[16];
	int64_t deadline;
	int fd, rc, oif = 0;
	bool kicked = false;

	if (timeout_ms < 0 || timeout_ms > NEIGH_TIMEOUT_MAX_MS || ifindex < 0)
		return -EINVAL;
	fd = nl_open();
	if (fd < 0)
		return fd;
	rc = route_lookup(fd, ifindex, ip, nexthop, &oif);
	if (rc < 0)
		goto out;
	if (oif <= 0) {
		rc = -ENETUNREACH;
		goto out;
	}

	deadline = mono_us() + (int64_t)timeout_ms * 1000;
	for (;;) {
		rc = neigh_get(fd, oif, nexthop, mac);
		if (rc != -ENOENT && !(rc == -EHOSTUNREACH && !kicked))
			break;
		if (mono_us() >= deadline) {
			rc = -ETIMEDOUT;
			break;
		}
		/* Kick once; a FAILED entry found before our kick is an old
		 * verdict, so it gets one fresh try too. */
		if (!kicked) {
			kicked = true;
			if (neigh_kick_netlink(fd, oif, nexthop) < 0) {
				rc = neigh_kick_datagram(oif, nexthop);
				if (rc < 0)
					break;
			}
		}
		usleep(NEIGH_POLL_US);
	}
out:
	close(fd);
	return rc;
}
