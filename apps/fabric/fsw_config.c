/* SPDX-License-Identifier: MIT */
/* The switch's configuration from strings (the app's --port and --route),
 * and the checks of a whole configuration. Every error says what is
 * wrong and what is accepted. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "apps/fabric/fsw.h"
#include "dataplane/errbuf.h"

#define PORT_ACCEPTED                                                                                        \
	"IFACE,peer=MAC[,mac=MAC][,rate=N[k|m|g|t]][,queue=BYTES][,prio=BYTES][,ecn=KMIN[:KMAX:PMAX]]" \
	"[,trim=0|1][,dscp=0..63][,delay=N{ns|us|ms|s}]"
#define ROUTE_ACCEPTED "PREFIX[/LEN]=PORT[+PORT...] (IPv4 or IPv6, e.g. 10.1.0.0/24=0+1)"
#define BYTES_ACCEPTED "a byte count N[k|m] (1024-based), 64..64m"
/* Faster than any link a test builds; keeps rate x delay far from overflow. */
#define FSW_RATE_MAX 10000000000000ull
#define FSW_QUEUE_BYTES_MIN 64u

void fsw_cfg_init(struct fsw_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
}

void fsw_port_cfg_init(struct fsw_port_cfg *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->queue_bytes = FSW_QUEUE_BYTES_DEFAULT;
	pc->prio_bytes = FSW_PRIO_BYTES_DEFAULT;
	pc->trim_dscp = FSW_TRIM_DSCP_DEFAULT;
}

/* ---- values ---- */

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned m[6];
	int used = 0;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &used) != 6 ||
	    s[used] || used != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
	return 0;
}

/* A non-negative decimal number (fraction allowed) and what follows it. */
static int parse_number(const char *s, double *v, const char **rest)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || errno || !isfinite(*v) || *v < 0)
		return -EINVAL;
	*rest = end;
	return 0;
}

/* "1g", "100m", "2.5G", "10gbit", "25000000": bits per second. */
static int parse_rate(const char *s, uint64_t *out)
{
	static const struct { const char *sfx; double mult; } units[] = {
		{ "", 1 }, { "k", 1e3 }, { "m", 1e6 }, { "g", 1e9 }, { "t", 1e12 },
	};
	const char *rest;
	double v;

	if (parse_number(s, &v, &rest))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t n = strlen(units[i].sfx);

		if (strncasecmp(rest, units[i].sfx, n))
			continue;
		if (rest[n] && strcasecmp(rest + n, "bit") && strcasecmp(rest + n, "bps"))
			continue;
		v *= units[i].mult;
		if (v > (double)FSW_RATE_MAX || (v > 0 && v < 1))
			return -EINVAL;
		*out = (uint64_t)llround(v);
		return 0;
	}
	return -EINVAL;
}

/* "256k", "1m", "9000": bytes, k and m 1024-based. */
static int parse_bytes(const char *s, uint32_t *out)
{
	const char *rest;
	double v, mult = 1;

	if (parse_number(s, &v, &rest))
		return -EINVAL;
	if (!strcasecmp(rest, "k") || !strcasecmp(rest, "kb") || !strcasecmp(rest, "kib"))
		mult = 1024;
	else if (!strcasecmp(rest, "m") || !strcasecmp(rest, "mb") || !strcasecmp(rest, "mib"))
		mult = 1024 * 1024;
	else if (*rest && strcasecmp(rest, "b"))
		return -EINVAL;
	v *= mult;
	if (v != floor(v) || v < FSW_QUEUE_BYTES_MIN || v > FSW_QUEUE_BYTES_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* "10us", "1.5ms", "0": nanoseconds; a unit unless 0. */
static int parse_time(const char *s, uint64_t *out)
{
	static const struct { const char *sfx; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	const char *rest;
	double v;

	if (parse_number(s, &v, &rest))
		return -EINVAL;
	if (!*rest && v == 0) {
		*out = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(rest, units[i].sfx))
			continue;
		v *= units[i].mult;
		if (v > (double)FSW_DELAY_NS_MAX)
			return -EINVAL;
		*out = (uint64_t)llround(v);
		return 0;
	}
	return -EINVAL;
}

/* "0.01" or "1%". */
static int parse_prob(const char *s, double *out)
{
	const char *rest;
	double v;

	if (parse_number(s, &v, &rest))
		return -EINVAL;
	if (!strcmp(rest, "%"))
		v /= 100;
	else if (*rest)
		return -EINVAL;
	if (v > 1)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "KMIN" or "KMIN:KMAX:PMAX". */
static int parse_ecn(const char *s, struct fsw_port_cfg *pc)
{
	char buf[64], *c1, *c2;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	pc->ecn_kmin = 0;
	pc->ecn_kmax = 0;
	pc->ecn_pmax = 0;
	c1 = strchr(buf, ':');
	if (!c1)
		return strcmp(buf, "0") ? parse_bytes(buf, &pc->ecn_kmin) : 0;
	*c1++ = '\0';
	c2 = strchr(c1, ':');
	if (!c2)
		return -EINVAL;
	*c2++ = '\0';
	if (parse_bytes(buf, &pc->ecn_kmin) || parse_bytes(c1, &pc->ecn_kmax) || parse_prob(c2, &pc->ecn_pmax))
		return -EINVAL;
	return pc->ecn_kmax > pc->ecn_kmin && pc->ecn_pmax > 0 ? 0 : -EINVAL;
}

/* ---- a port ---- */

static int port_key(struct fsw_port_cfg *pc, const char *spec, const char *key, const char *val, char *err,
		    size_t errlen)
{
	uint32_t u;

	if (!strcmp(key, "peer")) {
		if (parse_mac(val, pc->peer_mac))
			goto bad;
		return 0;
	}
	if (!strcmp(key, "mac")) {
		if (parse_mac(val, pc->mac))
			goto bad;
		return 0;
	}
	if (!strcmp(key, "rate")) {
		if (parse_rate(val, &pc->rate_bps))
			return errbuf_fail(err, errlen, -EINVAL,
					   "port '%s': rate=%s: accepted: bits per second N[k|m|g|t][bit] "
					   "(decimal units, e.g. 1g, 2.5g, 100m), 0 = unlimited, at most 10t",
					   spec, val);
		return 0;
	}
	if (!strcmp(key, "queue") || !strcmp(key, "prio")) {
		if (parse_bytes(val, &u))
			return errbuf_fail(err, errlen, -EINVAL, "port '%s': %s=%s: accepted: %s", spec, key, val,
					   BYTES_ACCEPTED);
		*(!strcmp(key, "queue") ? &pc->queue_bytes : &pc->prio_bytes) = u;
		return 0;
	}
	if (!strcmp(key, "ecn")) {
		if (parse_ecn(val, pc))
			return errbuf_fail(err, errlen, -EINVAL,
					   "port '%s': ecn=%s: accepted: 0 (off), KMIN (mark every ECT packet that "
					   "finds at least KMIN bytes queued) or KMIN:KMAX:PMAX (RED-like: probability "
					   "rising to PMAX, 0..1 or N%%, at KMAX > KMIN, always above); KMIN and KMAX %s",
					   spec, val, BYTES_ACCEPTED);
		return 0;
	}
	if (!strcmp(key, "trim")) {
		if (strcmp(val, "0") && strcmp(val, "1"))
			goto bad;
		pc->trim = val[0] == '1';
		return 0;
	}
	if (!strcmp(key, "dscp")) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(val, &end, 10);
		if (!*val || *val == '-' || *val == '+' || errno || *end || v > 63)
			return errbuf_fail(err, errlen, -EINVAL, "port '%s': dscp=%s: accepted: 0..63 (the DSCP of "
					   "trimmed packets, default %u)", spec, val, FSW_TRIM_DSCP_DEFAULT);
		pc->trim_dscp = (uint8_t)v;
		return 0;
	}
	if (!strcmp(key, "delay")) {
		if (parse_time(val, &pc->delay_ns))
			return errbuf_fail(err, errlen, -EINVAL,
					   "port '%s': delay=%s: accepted: N{ns|us|ms|s} up to 10s (e.g. 10us), or 0",
					   spec, val);
		return 0;
	}
	return errbuf_fail(err, errlen, -EINVAL,
			   "port '%s': unknown key '%s'; accepted keys: peer, mac, rate, queue, prio, ecn, trim, dscp, "
			   "delay (" PORT_ACCEPTED ")", spec, key);
bad:
	return errbuf_fail(err, errlen, -EINVAL, "port '%s': %s=%s: accepted: %s", spec, key, val,
			   !strcmp(key, "trim") ? "0 or 1" : "a MAC address xx:xx:xx:xx:xx:xx");
}

int fsw_port_parse(const char *spec, struct fsw_port_cfg *pc, char *err, size_t errlen)
{
	char buf[512], *tok, *save = NULL;
	size_t n;
	int rc;

	fsw_port_cfg_init(pc);
	if (!spec || !*spec)
		return errbuf_fail(err, errlen, -EINVAL, "empty port spec; accepted: " PORT_ACCEPTED);
	if (strlen(spec) >= sizeof(buf))
		return errbuf_fail(err, errlen, -EINVAL, "port spec longer than %zu characters", sizeof(buf) - 1);
	strcpy(buf, spec);
	n = strcspn(buf, ",");
	if (!n || memchr(buf, '=', n))
		return errbuf_fail(err, errlen, -EINVAL,
				   "port '%s': the first field is the interface name; accepted: " PORT_ACCEPTED, spec);
	if (n >= IF_NAMESIZE)
		return errbuf_fail(err, errlen, -EINVAL, "port '%s': interface name longer than %d characters", spec,
				   IF_NAMESIZE - 1);
	memcpy(pc->name, buf, n);
	pc->name[n] = '\0';
	if (!buf[n])
		return 0;
	for (tok = strtok_r(buf + n + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok || !eq[1])
			return errbuf_fail(err, errlen, -EINVAL,
					   "port '%s': '%s' is not key=value; accepted: " PORT_ACCEPTED, spec, tok);
		*eq = '\0';
		rc = port_key(pc, spec, tok, eq + 1, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- a route ---- */

static bool host_bits_clear(const uint8_t *a, unsigned plen, unsigned bits)
{
	for (unsigned b = plen; b < bits; b++)
		if (a[b / 8] & (0x80u >> (b % 8)))
			return false;
	return true;
}

int fsw_route_parse(const char *spec, struct fsw_route *r, char *err, size_t errlen)
{
	char buf[128], *eq, *slash, *p;
	unsigned bits;

	memset(r, 0, sizeof(*r));
	if (!spec || strlen(spec) >= sizeof(buf))
		return errbuf_fail(err, errlen, -EINVAL, "route '%s': accepted: " ROUTE_ACCEPTED, spec ? spec : "");
	strcpy(buf, spec);
	eq = strchr(buf, '=');
	if (!eq)
		return errbuf_fail(err, errlen, -EINVAL, "route '%s': no '=PORTS'; accepted: " ROUTE_ACCEPTED, spec);
	*eq = '\0';
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	r->ipv6 = strchr(buf, ':') != NULL;
	bits = r->ipv6 ? 128 : 32;
	if (inet_pton(r->ipv6 ? AF_INET6 : AF_INET, buf, r->prefix) != 1)
		return errbuf_fail(err, errlen, -EINVAL, "route '%s': '%s' is not an IPv4 or IPv6 address; accepted: "
				   ROUTE_ACCEPTED, spec, buf);
	if (slash) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(slash + 1, &end, 10);
		if (!slash[1] || slash[1] == '-' || slash[1] == '+' || errno || *end || v > bits)
			return errbuf_fail(err, errlen, -EINVAL, "route '%s': prefix length '%s': accepted: 0..%u", spec,
					   slash + 1, bits);
		r->plen = (uint8_t)v;
	} else {
		r->plen = (uint8_t)bits;
	}
	if (!host_bits_clear(r->prefix, r->plen, bits))
		return errbuf_fail(err, errlen, -EINVAL,
				   "route '%s': %s has bits set past /%u; accepted: the network address of the prefix",
				   spec, buf, r->plen);
	for (p = eq + 1;;) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(p, &end, 10);
		if (!*p || *p == '-' || *p == '+' || errno || end == p || (*end && *end != '+') ||
		    v >= FSW_PORTS_MAX)
			return errbuf_fail(err, errlen, -EINVAL,
					   "route '%s': ports '%s': accepted: port indices 0..%u joined by '+' "
					   "(an ECMP group, at most %u)", spec, eq + 1, FSW_PORTS_MAX - 1, FSW_ECMP_MAX);
		if (r->nports == FSW_ECMP_MAX)
			return errbuf_fail(err, errlen, -EINVAL, "route '%s': more than %u ports in the group", spec,
					   FSW_ECMP_MAX);
		r->ports[r->nports++] = (uint8_t)v;
		if (!*end)
			break;
		p = end + 1;
	}
	return 0;
}

int fsw_cfg_add_port(struct fsw_cfg *cfg, const char *spec, char *err, size_t errlen)
{
	struct fsw_port_cfg pc;
	int rc;

	if (cfg->nports >= FSW_PORTS_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "more than %u ports", FSW_PORTS_MAX);
	rc = fsw_port_parse(spec, &pc, err, errlen);
	if (rc)
		return rc;
	cfg->port[cfg->nports++] = pc;
	return 0;
}

int fsw_cfg_add_route(struct fsw_cfg *cfg, const char *spec, char *err, size_t errlen)
{
	struct fsw_route r;
	int rc;

	if (cfg->nroutes >= FSW_ROUTES_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "more than %u routes", FSW_ROUTES_MAX);
	rc = fsw_route_parse(spec, &r, err, errlen);
	if (rc)
		return rc;
	cfg->route[cfg->nroutes++] = r;
	return 0;
}

/* ---- the whole configuration ---- */

static int check_port(const struct fsw_cfg *cfg, unsigned i, char *err, size_t errlen)
{
	static const uint8_t zero[6];
	const struct fsw_port_cfg *pc = &cfg->port[i];
	uint32_t q = pc->queue_bytes ? pc->queue_bytes : FSW_QUEUE_BYTES_DEFAULT;
	uint32_t pq = pc->prio_bytes ? pc->prio_bytes : FSW_PRIO_BYTES_DEFAULT;

	if (!memcmp(pc->peer_mac, zero, 6))
		return errbuf_fail(err, errlen, -EINVAL,
				   "port %u (%s): no peer MAC; accepted: peer=xx:xx:xx:xx:xx:xx, the MAC of the one "
				   "neighbour on this link", i, pc->name);
	if (q < FSW_QUEUE_BYTES_MIN || q > FSW_QUEUE_BYTES_MAX || pq < FSW_QUEUE_BYTES_MIN || pq > FSW_QUEUE_BYTES_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "port %u (%s): queue %u / prio %u bytes; accepted: %u..%u", i,
				   pc->name, q, pq, FSW_QUEUE_BYTES_MIN, FSW_QUEUE_BYTES_MAX);
	if (pc->ecn_kmin && pc->ecn_kmin > q)
		return errbuf_fail(err, errlen, -EINVAL,
				   "port %u (%s): ecn threshold %u is above the queue bound %u and would never mark; "
				   "accepted: 0 < KMIN <= queue", i, pc->name, pc->ecn_kmin, q);
	if (pc->ecn_kmax && (pc->ecn_kmax <= pc->ecn_kmin || !(pc->ecn_pmax > 0 && pc->ecn_pmax <= 1)))
		return errbuf_fail(err, errlen, -EINVAL, "port %u (%s): ecn KMAX %u must exceed KMIN %u, PMAX %g in (0, 1]",
				   i, pc->name, pc->ecn_kmax, pc->ecn_kmin, pc->ecn_pmax);
	if (pc->trim_dscp > 63)
		return errbuf_fail(err, errlen, -EINVAL, "port %u (%s): trim DSCP %u; accepted: 0..63", i, pc->name,
				   pc->trim_dscp);
	if (pc->rate_bps > FSW_RATE_MAX || pc->delay_ns > FSW_DELAY_NS_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "port %u (%s): rate at most 10 Tbit/s, delay at most 10 s", i,
				   pc->name);
	if ((double)pc->rate_bps * (double)pc->delay_ns / 8e9 > FSW_QUEUE_BYTES_MAX)
		return errbuf_fail(err, errlen, -EINVAL,
				   "port %u (%s): rate x delay is %.0f bytes in flight; accepted: at most %u", i,
				   pc->name, (double)pc->rate_bps * (double)pc->delay_ns / 8e9, FSW_QUEUE_BYTES_MAX);
	for (unsigned j = 0; j < i; j++)
		if (pc->name[0] && !strcmp(pc->name, cfg->port[j].name))
			return errbuf_fail(err, errlen, -EINVAL, "ports %u and %u are both '%s'; accepted: each "
					   "interface once", j, i, pc->name);
	return 0;
}

static int check_route(const struct fsw_cfg *cfg, unsigned i, char *err, size_t errlen)
{
	const struct fsw_route *r = &cfg->route[i];
	char a[INET6_ADDRSTRLEN];

	inet_ntop(r->ipv6 ? AF_INET6 : AF_INET, r->prefix, a, sizeof(a));
	if (!r->nports || r->nports > FSW_ECMP_MAX || r->plen > (r->ipv6 ? 128 : 32))
		return errbuf_fail(err, errlen, -EINVAL, "route %u (%s/%u): %u ports; accepted: 1..%u", i, a, r->plen,
				   r->nports, FSW_ECMP_MAX);
	for (unsigned k = 0; k < r->nports; k++)
		if (r->ports[k] >= cfg->nports)
			return errbuf_fail(err, errlen, -EINVAL, "route %u (%s/%u): port %u does not exist; accepted: "
					   "0..%u", i, a, r->plen, r->ports[k], cfg->nports - 1);
	for (unsigned j = 0; j < i; j++) {
		const struct fsw_route *o = &cfg->route[j];

		if (o->ipv6 == r->ipv6 && o->plen == r->plen && !memcmp(o->prefix, r->prefix, 16))
			return errbuf_fail(err, errlen, -EINVAL, "routes %u and %u are both %s/%u; accepted: each "
					   "prefix once", j, i, a, r->plen);
	}
	return 0;
}

int fsw_cfg_check(const struct fsw_cfg *cfg, char *err, size_t errlen)
{
	int rc;

	if (!cfg->nports || cfg->nports > FSW_PORTS_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "%u ports; accepted: 1..%u", cfg->nports, FSW_PORTS_MAX);
	if (cfg->nroutes > FSW_ROUTES_MAX)
		return errbuf_fail(err, errlen, -EINVAL, "%u routes; accepted: at most %u", cfg->nroutes,
				   FSW_ROUTES_MAX);
	for (unsigned i = 0; i < cfg->nports; i++)
		if ((rc = check_port(cfg, i, err, errlen)))
			return rc;
	for (unsigned i = 0; i < cfg->nroutes; i++)
		if ((rc = check_route(cfg, i, err, errlen)))
			return rc;
	return 0;
}
