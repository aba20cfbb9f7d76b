/* SPDX-License-Identifier: MIT */
/* The failover parts of the pair (fo_pair.h) on ns_pair's. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fo_pair.h"

void fo_open(struct ns_end *e, struct ns_hdr *h, enum ns_role role, const char *devs, void *buf, size_t len,
             const struct ns_qp_opts *o)
{
	ns_open(e, h, role, devs, buf, len, o);
	ns_tag_role(e);
	if (h->info[role].nports != FO_NPORTS)
		ns_die("--dev names %u port(s); it needs %d (rail 1, rail 2)", h->info[role].nports, FO_NPORTS);
}

bool fo_info(struct ns_end *e, struct uroce_failover_info *fi)
{
	int rc;

	memset(fi, 0, sizeof(*fi));
	if (!e->has_fo)
		return false;
	if ((rc = uroce_qp_failover_info(e->qp, fi)) != 0)
		ns_die_rc(rc, "qp_failover_info");
	return true;
}

const char *fo_info_str(const struct uroce_failover_info *fi, bool has, char *buf, size_t len)
{
	const char *st = uroce_fo_state_str(fi->state), *ca = uroce_fo_cause_str(fi->last_cause);

	if (!has) {
		snprintf(buf, len, "failover=none");
		return buf;
	}
	snprintf(buf, len,
	         "state=%s active=%u up=0x%x failovers=%llu failbacks=%llu cause=%s rewound=%llu notices=%llu/%llu "
	         "probes=%llu/%llu",
	         st ? st : "?", fi->active, fi->up_mask, (unsigned long long)fi->failovers,
	         (unsigned long long)fi->failbacks, ca ? ca : "?", (unsigned long long)fi->rewound_pkts,
	         (unsigned long long)fi->notices_sent, (unsigned long long)fi->notices_rcvd,
	         (unsigned long long)fi->probes_sent, (unsigned long long)fi->probes_answered);
	return buf;
}

void fo_ifctl_open(struct fo_ifctl *c, const char *spec)
{
	char path[256];
	const char *colon = strrchr(spec, ':');
	int self, other;

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(path) || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= sizeof(c->ifname))
		ns_die("'%s': wanted NSPATH:IFNAME", spec);
	memcpy(path, spec, (size_t)(colon - spec));
	path[colon - spec] = 0;
	strcpy(c->ifname, colon + 1);
	/* a socket belongs to the namespace it was made in: make it there,
	 * then come back */
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	other = open(path, O_RDONLY | O_CLOEXEC);
	if (self < 0 || other < 0)
		ns_die("cannot open the namespaces (/proc/self/ns/net, %s): %s", path, strerror(errno));
	if (setns(other, CLONE_NEWNET))
		ns_die("cannot enter %s: %s", path, strerror(errno));
	c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (setns(self, CLONE_NEWNET))
		ns_die("cannot come back from %s: %s", path, strerror(errno));
	if (c->fd < 0)
		ns_die("cannot make a socket in %s: %s", path, strerror(errno));
	close(self);
	close(other);
	fo_ifctl_up(c); /* there, and readable */
}

bool fo_ifctl_up(const struct fo_ifctl *c)
{
	struct ifreq r;

	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, c->ifname);
	if (ioctl(c->fd, SIOCGIFFLAGS, &r))
		ns_die("SIOCGIFFLAGS %s: %s", c->ifname, strerror(errno));
	return r.ifr_flags & IFF_UP;
}

void fo_ifctl_set(const struct fo_ifctl *c, bool up)
{
	struct ifreq r;

	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, c->ifname);
	if (ioctl(c->fd, SIOCGIFFLAGS, &r))
		ns_die("SIOCGIFFLAGS %s: %s", c->ifname, strerror(errno));
	if (up)
		r.ifr_flags |= IFF_UP;
	else
		r.ifr_flags &= ~IFF_UP;
	if (ioctl(c->fd, SIOCSIFFLAGS, &r))
		ns_die("SIOCSIFFLAGS %s %s: %s", c->ifname, up ? "up" : "down", strerror(errno));
}

double fo_arg_secs(const char *opt, const char *s)
{
	return ns_parse_sec(opt, s, ns_bad);
}

enum uroce_reliability fo_arg_rel(const char *s)
{
	if (!strcmp(s, "rc"))
		return UROCE_REL_RC;
	if (!strcmp(s, "sr"))
		return UROCE_REL_SR;
	ns_bad("--rel", s, "rc or sr");
}

bool fo_qp_option(struct ns_qp_opts *q, int c, const char *arg, bool *rel_set)
{
	switch (c) {
	case 'm':
		q->rel.reliability = fo_arg_rel(arg);
		*rel_set = true;
		return true;
	case 'R': q->rel.rto_min_us = (uint32_t)ns_arg_u64("--rto-min-us", arg, 1, 10000000, "1 to 10000000 us"); return true;
	case 'F': q->fo.rto_fail = (uint8_t)ns_arg_u64("--rto-fail", arg, 1, 255, "1 to 255 timeouts"); return true;
	case 'P': q->fo.probe_us = (uint32_t)ns_arg_u64("--probe-us", arg, 1, 10000000, "1 to 10000000 us"); return true;
	case 'X': q->fo.down_timeout_ms = (uint32_t)ns_arg_u64("--down-timeout-ms", arg, 1, 3600000, "1 to 3600000 ms"); return true;
	case 'w': q->rel.window_pkts = (uint32_t)ns_arg_u64("--window-pkts", arg, 16, 1024, "16 to 1024 packets"); return true;
	default:
		return false;
	}
}
