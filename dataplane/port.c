/* SPDX-License-Identifier: MIT */
/* Backend-independent port handling: parsing a port spec, opening and
 * closing a port through its backend's table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/errbuf.h"
#include "dataplane/port.h"
#include "dataplane/port_capture.h"


#define SPEC_ACCEPTED "accepted: afxdp:IFACE[:QUEUE[:generic|zc|copy]], dpdk[:PORTID], loop:INDEX, verbs:DEV[:PORT]"

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* "NAME[:NUMBER]" after a spec's prefix: NAME copied into dst (dstlen
 * bytes with its NUL), *num the text after the colon or NULL. what names
 * NAME in the messages; example shows one (with its "; " prefix). */
static int spec_name(const char *spec, const char *rest, char *dst, size_t dstlen, const char **num, const char *what,
                     const char *example, char *err, size_t errlen)
{
	const char *colon = strchr(rest, ':');
	size_t n = colon ? (size_t)(colon - rest) : strlen(rest);

	if (n == 0)
		return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': no %s%s; " SPEC_ACCEPTED, spec, what, example);
	if (n >= dstlen)
		return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': %s longer than %zu characters", spec, what,
		                   dstlen - 1);
	memcpy(dst, rest, n);
	dst[n] = '\0';
	*num = colon ? colon + 1 : NULL;
	return 0;
}

int port_config_parse(const char *spec, struct port_config *cfg, char *err, size_t errlen)
{
	uint32_t v;

	memset(cfg, 0, sizeof(*cfg));
	if (!spec || !*spec)
		return errbuf_fail(err, errlen, -EINVAL, "empty port spec; " SPEC_ACCEPTED);

	if (!strncmp(spec, "afxdp:", 6)) {
		const char *num;
		int rc = spec_name(spec, spec + 6, cfg->ifname, sizeof(cfg->ifname), &num, "interface name", "", err,
		                   errlen);

		if (rc)
			return rc;
		cfg->kind = PORT_KIND_AFXDP;
		if (num) {
			const char *opt = strchr(num, ':');
			size_t qlen = opt ? (size_t)(opt - num) : strlen(num);
			char q[16];

			if (qlen >= sizeof(q))
				return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': queue '%s' is not a number 0-1023",
					    spec, num);
			snprintf(q, sizeof(q), "%.*s", (int)qlen, num);
			if (parse_u32(q, 1023, &v))
				return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': queue '%s' is not a number 0-1023",
					    spec, q);
			cfg->queue = v;
			/* generic (skb) XDP costs an skb per frame: only when
			 * asked; zc asks for zero-copy and says so when the
			 * driver cannot (the default tries it quietly) */
			if (opt && !strcmp(opt + 1, "generic"))
				cfg->force_skb = true;
			else if (opt && !strcmp(opt + 1, "zc"))
				cfg->want_zc = true;
			else if (opt && !strcmp(opt + 1, "copy"))
				cfg->force_copy = true;
			else if (opt)
				return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': option '%s'; accepted: generic "
					    "(XDP in the kernel's generic, skb, mode where the driver has no native XDP), "
					    "zc (zero-copy asked for: copy mode with a note where the driver has none), "
					    "copy (copy mode, no zero-copy attempt)",
					    spec, opt + 1);
		}
		return 0;
	}
	if (!strcmp(spec, "dpdk") || !strncmp(spec, "dpdk:", 5)) {
		cfg->kind = PORT_KIND_DPDK;
		if (spec[4] == ':') {
			if (parse_u32(spec + 5, 65535, &v))
				return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': DPDK port id '%s' is not a number 0-65535",
					    spec, spec + 5);
			cfg->dpdk_port_id = (uint16_t)v;
		}
		return 0;
	}
	if (!strncmp(spec, "loop:", 5)) {
		if (parse_u32(spec + 5, 1023, &v))
			return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': loop index '%s' is not a number 0-1023",
				    spec, spec + 5);
		cfg->kind = PORT_KIND_LOOP;
		cfg->loop_index = v;
		return 0;
	}
	if (!strncmp(spec, "verbs:", 6)) {
		const char *num;
		int rc = spec_name(spec, spec + 6, cfg->ibdev, sizeof(cfg->ibdev), &num, "RDMA device name",
		                   " (e.g. verbs:rxe0, verbs:mlx5_0:1)", err, errlen);

		if (rc)
			return rc;
		cfg->kind = PORT_KIND_VERBS;
		cfg->ib_port = 1;
		if (num) {
			if (parse_u32(num, 255, &v) || v == 0)
				return errbuf_fail(err, errlen, -EINVAL, "port spec '%s': device port '%s' is not a number 1-255",
				                   spec, num);
			cfg->ib_port = (uint8_t)v;
		}
		return 0;
	}
	return errbuf_fail(err, errlen, -EINVAL, "unknown port spec '%s'; " SPEC_ACCEPTED, spec);
}

int port_split_eal_args(int argc, char **argv, int *eal_argc, char ***eal_argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			*eal_argc = argc - i;
			*eal_argv = argv + i;
			return i;
		}
	}
	return argc;
}

int port_split_spec_list(const char *list, bool bare_is_afxdp, char *buf, size_t buflen, const char **specs,
                         unsigned max, char *err, size_t errlen)
{
	const char *p = list;
	unsigned n = 0;
	size_t used = 0;

	while (*p) {
		size_t len = strcspn(p, ",");
		bool bare = bare_is_afxdp && len && !memchr(p, ':', len) && !(len == 4 && !memcmp(p, "dpdk", 4));
		size_t need = len + 1 + (bare ? sizeof("afxdp:") - 1 : 0);

		if (len) { /* empty entries (",,") name nothing */
			if (n == max)
				return errbuf_fail(err, errlen, -EINVAL, "%s: more than %u ports; accepted: 1-%u specs",
				                   list, max, max);
			if (need > buflen - used)
				return errbuf_fail(err, errlen, -EINVAL, "is %zu characters; accepted: fewer than %zu",
				                   strlen(list), buflen);
			specs[n++] = buf + used;
			used += (size_t)snprintf(buf + used, buflen - used, "%s%.*s", bare ? "afxdp:" : "", (int)len, p) + 1;
		}
		p += len + (p[len] == ',');
	}
	if (!n)
		return errbuf_fail(err, errlen, -EINVAL, "'%s' names no port; accepted: SPEC[,SPEC...]", list);
	return (int)n;
}

/* What the tools' -d takes: a loop port is no choice outside one process. */
#define TOOL_ACCEPTED "accepted: IFACE (meaning afxdp:IFACE), afxdp:IFACE[:QUEUE[:generic|zc|copy]], dpdk[:PORTID], " \
                      "verbs:DEV[:PORT]"

int port_tool_spec_list(const char *list, char *buf, size_t buflen, const char **specs, unsigned max, char *err,
                        size_t errlen)
{
	int n = port_split_spec_list(list, true, buf, buflen, specs, max, err, errlen);

	for (int i = 0; i < n; i++) {
		const char *s = specs[i];

		if (!strncmp(s, "loop:", 5))
			return errbuf_fail(err, errlen, -EINVAL,
			                   "%s: loop ports exist only inside one process (the launcher `uroce`, or the "
			                   "API's loop fabric); use afxdp:IFACE, dpdk or verbs:DEV", s);
		/* the rest of each spec is checked when the port opens */
		if (strncmp(s, "afxdp:", 6) && strcmp(s, "dpdk") && strncmp(s, "dpdk:", 5) && strncmp(s, "verbs:", 6))
			return errbuf_fail(err, errlen, -EINVAL, "unknown port spec '%s'; " TOOL_ACCEPTED, s);
	}
	return n;
}

static const struct port_ops *ops_for(enum port_kind kind)
{
	switch (kind) {
	case PORT_KIND_LOOP:
		return &port_loop_ops;
	case PORT_KIND_AFXDP:
#if UROCE_HAVE_AFXDP
		return &port_afxdp_ops;
#else
		return NULL;
#endif
	case PORT_KIND_DPDK:
#if UROCE_HAVE_DPDK
		return &port_dpdk_ops;
#else
		return NULL;
#endif
	case PORT_KIND_VERBS:
#if UROCE_HAVE_VERBS
		return &port_verbs_ops;
#else
		return NULL;
#endif
	}
	return NULL;
}

static const char *const kind_names[] = {
	[PORT_KIND_LOOP] = "loop",
	[PORT_KIND_AFXDP] = "afxdp",
	[PORT_KIND_DPDK] = "dpdk",
	[PORT_KIND_VERBS] = "verbs",
};

int port_open(struct port **out, const struct port_config *cfg, char *err, size_t errlen)
{
	const struct port_ops *ops;
	struct port *p;
	int rc;

	*out = NULL;
	if ((unsigned)cfg->kind > PORT_KIND_VERBS)
		return errbuf_fail(err, errlen, -EINVAL, "unknown port kind %d", (int)cfg->kind);
	ops = ops_for(cfg->kind);
	if (!ops)
		return errbuf_fail(err, errlen, -ENOTSUP, "the %s backend was not built in (meson -D%s=enabled)",
			    kind_names[cfg->kind], kind_names[cfg->kind]);
	p = calloc(1, sizeof(*p));
	if (!p)
		return errbuf_fail(err, errlen, -ENOMEM, "out of memory");
	p->ops = ops;
	p->cfg = *cfg;
	rc = ops->open(p, err, errlen);
	if (rc < 0) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void port_close(struct port *p)
{
	if (!p)
		return;
	port_capture_stop(p, NULL); /* a capture still running keeps what it wrote */
	p->ops->close(p);
	free(p);
}
