/* SPDX-License-Identifier: MIT */
/* uroce-devinfo: rdma-core's `ibv_devinfo -v` and `show_gids` for uroce
 * ports. It opens the device of the -d specs as the other tools do, reads
 * every port through the public API (uroce_query_port, uroce_query_gid)
 * and prints ibv_devinfo's fields, uroce's own (kind, interface, MAC,
 * addresses, XDP mode, queues) and the GID table as show_gids does; or
 * all of it as one JSON object (docs/cli.md).
 *
 *   uroce-devinfo -d SPEC[,SPEC...] [-v] [--json] [-i PORT] [--ip A.B.C.D[,...]] [-- EAL args]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/uroce.h"
#include "dataplane/port.h"
#include "dataplane/port_loop.h"
#include "app_version.h"
#include "app_json.h"

#define PROG "uroce-devinfo"
/* ibv_devinfo's value columns: 40 for the device's lines, 48 for a port's */
#define DEV_COL 40
#define PORT_COL 48
/* uroce_query_gid's -EAGAIN: the engine rewrote the table while we read */
#define GID_READ_TRIES 100

struct di_opts {
	const char *dev;                    /* -d as given */
	char *spec_buf;                     /* holds specs[] */
	const char *specs[UROCE_MAX_PORTS];
	unsigned nports;
	unsigned only_port;                 /* -i, 0 = every port */
	bool verbose;
	bool json;
	uint32_t ipv4_be[UROCE_MAX_PORTS];  /* --ip, per port; 0 = the interface's */
	unsigned nips;
	int eal_argc;
	char **eal_argv;
};

/* One port as read: its attributes and its GID table. */
struct di_port {
	unsigned num;
	const char *spec;
	struct uroce_port_attr pa;
	uint8_t (*gid)[16];
	int ngid;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: " PROG " -d SPEC[,SPEC...] [options] [-- EAL args]\n"
	           "  ibv_devinfo -v and show_gids for uroce ports: ports, MTUs, addresses, XDP, queues, GID tables.\n"
	           "\nOptions:\n"
	           "  -d, --ib-dev=SPEC      the device: afxdp:IFACE[:QUEUE[:MODE]] (MODE generic, zc or copy),\n"
	           "                         dpdk[:PORTID] (EAL args after --), loop:INDEX, verbs:DEV[:PORT]; a bare\n"
	           "                         IFACE means afxdp:IFACE; SPEC,SPEC,... opens one device of several ports\n"
	           "                         (required)\n"
	           "  -i, --ib-port=PORT     only this port, 1..the number of -d specs (default: every port)\n"
	           "  -v, --verbose          ibv_devinfo -v's port fields too: phys_state, pkey_tbl_len,\n"
	           "                         gid_tbl_len and a GID[N] line per entry\n"
	           "      --json             every field as one JSON object instead of text\n"
	           "      --ip=A.B.C.D[,...] the ports' IPv4 addresses, in -d order, where a port has none of its\n"
	           "                         own (dpdk); 0.0.0.0 keeps a port's own\n"
	           "  -h, --help             this text\n"
	           "      --version          the version\n"
	           "Exit status: 0 printed; 1 the device would not open; 2 bad arguments.\n");
}

/* Exit status 2: the command line is wrong; say what is accepted. */
static void __attribute__((format(printf, 1, 2), noreturn)) bad_arg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (" PROG " --help for every option)\n");
	exit(2);
}

static unsigned parse_port_num(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > UROCE_MAX_PORTS)
		bad_arg("-i/--ib-port '%s': accepted: a port number 1-%u (one port per -d spec)", s, UROCE_MAX_PORTS);
	return (unsigned)v;
}

static void parse_ips(struct di_opts *o, const char *arg)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		bad_arg("--ip: too long; accepted: at most %u addresses A.B.C.D, comma-separated", UROCE_MAX_PORTS);
	snprintf(buf, sizeof(buf), "%s", arg);
	o->nips = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct in_addr a;

		if (o->nips == UROCE_MAX_PORTS)
			bad_arg("--ip %s: more than %u addresses; accepted: one per -d spec", arg, UROCE_MAX_PORTS);
		if (inet_pton(AF_INET, tok, &a) != 1)
			bad_arg("--ip: '%s' is not an IPv4 address; accepted: A.B.C.D[,A.B.C.D...]", tok);
		o->ipv4_be[o->nips++] = a.s_addr;
	}
	if (!o->nips)
		bad_arg("--ip '%s': no address; accepted: A.B.C.D[,A.B.C.D...]", arg);
}

/* -d: split and check every spec with the port layer's own parser, so a
 * bad spec is a usage error (2) before anything opens. */
static void parse_specs(struct di_opts *o)
{
	size_t len = strlen(o->dev) + 1 + UROCE_MAX_PORTS * sizeof("afxdp:");
	unsigned nloop = 0;
	char err[512];
	int n;

	o->spec_buf = malloc(len);
	if (!o->spec_buf) {
		fprintf(stderr, PROG ": out of memory\n");
		exit(1);
	}
	n = port_split_spec_list(o->dev, true, o->spec_buf, len, o->specs, UROCE_MAX_PORTS, err, sizeof(err));
	if (n < 0)
		bad_arg("-d/--ib-dev %s", err);
	o->nports = (unsigned)n;
	for (unsigned i = 0; i < o->nports; i++) {
		struct port_config cfg;

		if (port_config_parse(o->specs[i], &cfg, err, sizeof(err)))
			bad_arg("-d/--ib-dev: %s", err);
		nloop += cfg.kind == PORT_KIND_LOOP;
	}
	if (nloop && nloop != o->nports)
		bad_arg("-d/--ib-dev %s: loop ports run on the fabric's simulated clock and cannot share a device with "
		        "afxdp, dpdk or verbs ports; accepted: only loop:INDEX specs, or none", o->dev);
	if (o->only_port > o->nports)
		bad_arg("-i/--ib-port %u: the device has %u port(s), one per -d spec; accepted: 1-%u", o->only_port,
		        o->nports, o->nports);
	if (o->nips > o->nports)
		bad_arg("--ip gives %u addresses for %u port(s); accepted: at most one per -d spec", o->nips, o->nports);
}

static void parse_args(int argc, char **argv, struct di_opts *o)
{
	enum { OPT_JSON = 256, OPT_IP, OPT_VERSION };
	static const struct option longopts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "list", no_argument, NULL, 'l' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "ip", required_argument, NULL, OPT_IP },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int nargs, c;

	memset(o, 0, sizeof(*o));
	nargs = port_split_eal_args(argc, argv, &o->eal_argc, &o->eal_argv);
	opterr = 0; /* our own messages, which say what is accepted */
	optind = 1;
	while ((c = getopt_long(nargs, argv, ":d:i:vlh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'i':
			o->only_port = parse_port_num(optarg);
			break;
		case 'v':
			o->verbose = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_IP:
			parse_ips(o, optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			app_print_version(PROG);
			exit(0);
		case 'l':
			/* ibv_devinfo -l lists the host's RDMA devices */
			bad_arg("-l/--list: uroce has no device list to print (a device is what -d opens); "
			        "accepted: -d SPEC[,SPEC...] (ibv_devinfo -l lists the host's RDMA NICs)");
		case ':':
			bad_arg("%s needs a value", argv[optind - 1]);
		default:
			if (optopt)
				bad_arg("unknown option '-%c'; accepted: -d, -i, -v, --json, --ip, -h", optopt);
			bad_arg("unknown option '%s'; accepted: -d, -i, -v, --json, --ip, -h", argv[optind - 1]);
		}
	}
	if (optind < nargs)
		bad_arg("unexpected argument '%s'; accepted: options only (EAL arguments go after --)", argv[optind]);
	if (!o->dev)
		bad_arg("-d/--ib-dev is required (there is no device list to take the first of); accepted: "
		        "afxdp:IFACE[:QUEUE[:generic|zc|copy]], dpdk[:PORTID], loop:INDEX, verbs:DEV[:PORT], or a "
		        "comma-separated list of them");
	parse_specs(o);
}

/* loop:INDEX ports need the caller's fabric: one with room for the
 * highest index, wired in pairs (0-1, 2-3, ...) as the launcher wires
 * them, so a loop port has a link. */
static struct loop_fabric *loop_fabric_for(const struct di_opts *o)
{
	struct loop_fabric_opts fo = { .seed = 1, .real_time = true };
	struct loop_fabric *fab;
	unsigned maxidx = 0;
	char err[256];

	for (unsigned i = 0; i < o->nports; i++) {
		struct port_config cfg;

		if (port_config_parse(o->specs[i], &cfg, err, sizeof(err)) || cfg.kind != PORT_KIND_LOOP)
			return NULL;
		if (cfg.loop_index > maxidx)
			maxidx = cfg.loop_index;
	}
	fo.nports = (maxidx + 2) & ~1u;
	fab = loop_fabric_create_opts(&fo, err, sizeof(err));
	if (!fab) {
		fprintf(stderr, PROG ": the loop fabric: %s\n", err);
		exit(1);
	}
	for (unsigned a = 0; a + 1 < fo.nports; a += 2)
		loop_fabric_connect(fab, a, a + 1, NULL, NULL);
	return fab;
}

static const char *kind_name(int kind)
{
	switch (kind) {
	case UROCE_PORT_LOOP: return "loop";
	case UROCE_PORT_AFXDP: return "afxdp";
	case UROCE_PORT_DPDK: return "dpdk";
	case UROCE_PORT_VERBS: return "verbs";
	default: return "unknown";
	}
}

static const char *xdp_name(int mode)
{
	return mode == UROCE_XDP_NATIVE ? "native" : mode == UROCE_XDP_GENERIC ? "generic" : "none";
}

static bool gid_is_v4(const uint8_t g[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g, prefix, 12);
}

/* "fe80::..." / "::ffff:10.0.0.1", as ibv_devinfo -v prints a RoCE v2 GID */
static void gid_text(const uint8_t g[16], char *buf, size_t len)
{
	inet_ntop(AF_INET6, g, buf, (socklen_t)len);
}

/* "fe80:0000:...", every group four digits, as show_gids prints a GID */
static void gid_full(const uint8_t g[16], char *buf, size_t len)
{
	size_t used = 0;

	for (int i = 0; i < 16; i += 2)
		used += (size_t)snprintf(buf + used, len - used, "%s%02x%02x", i ? ":" : "", g[i], g[i + 1]);
}

static void gid_v4(const uint8_t g[16], char *buf, size_t len)
{
	inet_ntop(AF_INET, g + 12, buf, (socklen_t)len);
}

static void mac_text(const uint8_t m[6], char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* The node GUID rxe gives itself: the modified EUI-64 of the MAC. */
static void node_guid(const uint8_t m[6], char *buf, size_t len)
{
	snprintf(buf, len, "%02x%02x:%02xff:fe%02x:%02x%02x", m[0] ^ 2, m[1], m[2], m[3], m[4], m[5]);
}

static const char *state_name(const struct uroce_port_attr *pa)
{
	return pa->link_up ? "PORT_ACTIVE" : "PORT_DOWN";
}

/* enum ibv_port_state and enum ibv_port_phys_state, as rxe reports a RoCE port */
static int state_num(const struct uroce_port_attr *pa)
{
	return pa->link_up ? 4 : 1;
}

static int phys_state_num(const struct uroce_port_attr *pa)
{
	return pa->link_up ? 5 : 3;
}

static const char *phys_state_name(const struct uroce_port_attr *pa)
{
	return pa->link_up ? "LINK_UP" : "DISABLED";
}

/* Read port num's attributes and its whole GID table. 0, or 1 with the
 * reason on stderr. */
static int read_port(struct uroce_context *ctx, unsigned num, const char *spec, struct di_port *dp)
{
	int rc;

	memset(dp, 0, sizeof(*dp));
	dp->num = num;
	dp->spec = spec;
	rc = uroce_query_port(ctx, (uint8_t)num, &dp->pa);
	if (rc) {
		fprintf(stderr, PROG ": port %u (%s): uroce_query_port: %s: %s\n", num, spec, uroce_strerror(rc),
		        uroce_last_error());
		return 1;
	}
	if (dp->pa.gid_tbl_len <= 0)
		return 0;
	dp->gid = calloc((size_t)dp->pa.gid_tbl_len, sizeof(*dp->gid));
	if (!dp->gid) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	for (int i = 0; i < dp->pa.gid_tbl_len; i++) {
		int tries = 0;

		do
			rc = uroce_query_gid(ctx, (uint8_t)num, i, dp->gid[i]);
		while (rc == -EAGAIN && ++tries < GID_READ_TRIES);
		if (rc == -ENOENT)
			break; /* the table shrank since uroce_query_port: the kernel took an address away */
		if (rc) {
			fprintf(stderr, PROG ": port %u (%s): uroce_query_gid %d: %s: %s\n", num, spec, i,
			        uroce_strerror(rc), uroce_last_error());
			return 1;
		}
		dp->ngid = i + 1;
	}
	return 0;
}

/* ---- text ---- */

/* "KEY:" then tabs up to column col, starting at column start */
static void key(unsigned start, const char *k, unsigned col)
{
	unsigned at = start + (unsigned)strlen(k) + 1;

	printf("%s:", k);
	do {
		putchar('\t');
		at = (at / 8 + 1) * 8;
	} while (at < col);
}

/* one "key: value" line at an indent, its value at column col */
static void vline(const char *indent, unsigned at, unsigned col, const char *k, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
static void vline(const char *indent, unsigned at, unsigned col, const char *k, const char *fmt, va_list ap)
{
	fputs(indent, stdout);
	key(at, k, col);
	vprintf(fmt, ap);
	putchar('\n');
}

static void dev_line(const char *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dev_line(const char *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("\t", 8, DEV_COL, k, fmt, ap);
	va_end(ap);
}

static void port_line(const char *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void port_line(const char *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("\t\t\t", 24, PORT_COL, k, fmt, ap);
	va_end(ap);
}

/* The port's addresses of one family from its GID table (the addresses
 * it sends from and answers to), comma-separated, "" when none: IPv4 from
 * the mapped entries, IPv6 from the others, entry 0's EUI-64 link-local
 * included. */
static void addr_list(const struct di_port *dp, bool v4, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < dp->ngid && used < len; i++) {
		char a[INET6_ADDRSTRLEN];

		if (gid_is_v4(dp->gid[i]) != v4)
			continue;
		if (v4)
			gid_v4(dp->gid[i], a, sizeof(a));
		else
			gid_text(dp->gid[i], a, sizeof(a));
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", a);
	}
}

static void text_port(const struct di_opts *o, const struct di_port *dp)
{
	const struct uroce_port_attr *pa = &dp->pa;
	char buf[1024];

	printf("\t\tport:\t%u\n", dp->num);
	port_line("state", "%s (%d)", state_name(pa), state_num(pa));
	port_line("max_mtu", "%u (%d)", uroce_mtu_bytes(pa->max_mtu), pa->max_mtu);
	port_line("active_mtu", "%u (%d)", uroce_mtu_bytes(pa->active_mtu), pa->active_mtu);
	port_line("sm_lid", "0");
	port_line("port_lid", "0");
	port_line("port_lmc", "0x00");
	port_line("link_layer", "Ethernet");
	if (o->verbose) {
		port_line("pkey_tbl_len", "1");
		port_line("gid_tbl_len", "%d", dp->ngid);
		port_line("phys_state", "%s (%d)", phys_state_name(pa), phys_state_num(pa));
	}
	/* uroce's own */
	port_line("spec", "%s", dp->spec);
	port_line("kind", "%s", kind_name(pa->kind));
	if (pa->ifname[0])
		port_line("interface", "%s (ifindex %d)", pa->ifname, pa->ifindex);
	if (pa->kind == UROCE_PORT_VERBS)
		port_line("rdma_device", "%s port %u", pa->ibdev, pa->dev_port);
	else if (pa->kind == UROCE_PORT_DPDK)
		port_line("dpdk_port", "%u", pa->dev_port);
	else if (pa->kind == UROCE_PORT_LOOP)
		port_line("loop_index", "%u", pa->dev_port);
	mac_text(pa->mac, buf, sizeof(buf));
	port_line("mac", "%s", buf);
	addr_list(dp, true, buf, sizeof(buf));
	port_line("ipv4", "%s", buf[0] ? buf : "none");
	addr_list(dp, false, buf, sizeof(buf));
	port_line("ipv6", "%s", buf[0] ? buf : "none");
	port_line("link_mtu", "%u", pa->l3_mtu);
	if (pa->kind == UROCE_PORT_AFXDP) {
		port_line("xdp_mode", "%s", xdp_name(pa->xdp_mode));
		port_line("zero_copy", "%s", pa->zero_copy ? "yes" : "no (copy mode)");
		port_line("queue", "%u", pa->queue);
		if (pa->nqueues)
			port_line("queues", "%u", pa->nqueues);
		else
			port_line("queues", "unknown");
	}
	if (pa->kind == UROCE_PORT_VERBS)
		port_line("completion_ts", "%s", pa->completion_ts ? "yes" : "no");
	if (pa->note[0])
		port_line("note", "%s", pa->note);
	if (o->verbose)
		for (int i = 0; i < dp->ngid; i++) {
			gid_text(dp->gid[i], buf, sizeof(buf));
			printf("\t\t\tGID[%3d]:\t\t%s, RoCE v2\n", i, buf);
		}
	putchar('\n');
}

/* show_gids' table: DEV PORT INDEX GID IPv4 VER DEV */
static void text_gids(const char *hca, const struct di_port *ports, unsigned n)
{
	int found = 0;

	printf("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n");
	printf("---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n");
	for (unsigned p = 0; p < n; p++) {
		const struct di_port *dp = &ports[p];

		for (int i = 0; i < dp->ngid; i++) {
			char g[64], v4[INET_ADDRSTRLEN] = "";

			gid_full(dp->gid[i], g, sizeof(g));
			if (gid_is_v4(dp->gid[i]))
				gid_v4(dp->gid[i], v4, sizeof(v4));
			printf("%s\t%u\t%d\t%s\t%-15s\tv2\t%s\n", hca, dp->num, i, g, v4,
			       dp->pa.ifname[0] ? dp->pa.ifname : "-");
			found++;
		}
	}
	printf("n_gids_found=%d\n", found);
}

static void text_out(const struct di_opts *o, const char *hca, const struct di_port *ports, unsigned n,
                     const struct uroce_port_attr *first)
{
	char buf[64];

	printf("hca_id:\t%s\n", hca);
	dev_line("transport", "InfiniBand (0)");
	if (first->kind != UROCE_PORT_VERBS) {
		/* a verbs NIC has a GUID of its own: ibv_devinfo shows it */
		node_guid(first->mac, buf, sizeof(buf));
		dev_line("node_guid", "%s", buf);
	}
	dev_line("phys_port_cnt", "%u", o->nports);
	dev_line("uroce_version", "%s", uroce_version());
	for (unsigned p = 0; p < n; p++)
		text_port(o, &ports[p]);
	text_gids(hca, ports, n);
}


static void json_addrs(const struct di_port *dp, bool v4)
{
	bool first = true;

	putchar('[');
	for (int i = 0; i < dp->ngid; i++) {
		char a[INET6_ADDRSTRLEN];

		if (gid_is_v4(dp->gid[i]) != v4)
			continue;
		if (v4)
			gid_v4(dp->gid[i], a, sizeof(a));
		else
			gid_text(dp->gid[i], a, sizeof(a));
		printf("%s\"%s\"", first ? "" : ", ", a);
		first = false;
	}
	putchar(']');
}

static void json_port(const struct di_port *dp)
{
	const struct uroce_port_attr *pa = &dp->pa;
	char buf[64];

	printf("    {\"port\": %u, \"spec\": ", dp->num);
	app_json_str(stdout, dp->spec);
	printf(", \"state\": \"%s\", \"state_num\": %d, \"phys_state\": \"%s\", \"phys_state_num\": %d,\n",
	       state_name(pa), state_num(pa), phys_state_name(pa), phys_state_num(pa));
	printf("     \"max_mtu\": %u, \"active_mtu\": %u, \"sm_lid\": 0, \"port_lid\": 0, \"port_lmc\": 0, "
	       "\"link_layer\": \"Ethernet\", \"pkey_tbl_len\": 1, \"gid_tbl_len\": %d,\n",
	       uroce_mtu_bytes(pa->max_mtu), uroce_mtu_bytes(pa->active_mtu), dp->ngid);
	printf("     \"kind\": \"%s\", \"interface\": ", kind_name(pa->kind));
	app_json_str(stdout, pa->ifname);
	printf(", \"ifindex\": %d, \"rdma_device\": ", pa->ifindex);
	app_json_str(stdout, pa->ibdev);
	mac_text(pa->mac, buf, sizeof(buf));
	printf(", \"dev_port\": %u, \"mac\": \"%s\", \"ipv4\": ", pa->dev_port, buf);
	json_addrs(dp, true);
	printf(", \"ipv6\": ");
	json_addrs(dp, false);
	printf(",\n     \"link_mtu\": %u, \"xdp_mode\": \"%s\", \"zero_copy\": %s, \"queue\": %u, \"queues\": %u, "
	       "\"completion_ts\": %s, \"note\": ", pa->l3_mtu, xdp_name(pa->xdp_mode),
	       pa->zero_copy ? "true" : "false", pa->queue, pa->nqueues, pa->completion_ts ? "true" : "false");
	app_json_str(stdout, pa->note);
	printf(",\n     \"gids\": [");
	for (int i = 0; i < dp->ngid; i++) {
		char g[INET6_ADDRSTRLEN];

		gid_text(dp->gid[i], g, sizeof(g));
		printf("%s\n       {\"index\": %d, \"gid\": \"%s\", \"type\": \"RoCE v2\", \"ipv4\": ", i ? "," : "", i,
		       g);
		if (gid_is_v4(dp->gid[i])) {
			gid_v4(dp->gid[i], g, sizeof(g));
			printf("\"%s\"}", g);
		} else {
			printf("null}");
		}
	}
	printf("]}");
}

static void json_out(const struct di_opts *o, const char *hca, const struct di_port *ports, unsigned n,
                     const struct uroce_port_attr *first)
{
	char buf[64];

	printf("{\"hca_id\": ");
	app_json_str(stdout, hca);
	printf(", \"transport\": \"InfiniBand\", \"node_guid\": ");
	if (first->kind != UROCE_PORT_VERBS) {
		node_guid(first->mac, buf, sizeof(buf));
		printf("\"%s\"", buf);
	} else {
		printf("null");
	}
	printf(", \"phys_port_cnt\": %u, \"uroce_version\": \"%s\",\n  \"ports\": [\n", o->nports, uroce_version());
	for (unsigned p = 0; p < n; p++) {
		json_port(&ports[p]);
		printf("%s\n", p + 1 < n ? "," : "");
	}
	printf("  ]\n}\n");
}

int main(int argc, char **argv)
{
	struct uroce_context_attr ca = { .mode = UROCE_ENGINE_EMBEDDED, .engine_cpu = -1 };
	struct di_port ports[UROCE_MAX_PORTS];
	struct uroce_port_attr first;
	struct loop_fabric *fab = NULL;
	struct uroce_context *ctx;
	struct di_opts o;
	unsigned lo, hi, n = 0;
	char hca[512];
	int rc, status = 0;

	parse_args(argc, argv, &o);
	/* hca_id: the device's name is the specs it was opened from */
	snprintf(hca, sizeof(hca), "%s", o.specs[0]);
	for (unsigned i = 1; i < o.nports; i++)
		snprintf(hca + strlen(hca), sizeof(hca) - strlen(hca), ",%s", o.specs[i]);
	if (!strncmp(o.specs[0], "loop:", 5))
		fab = loop_fabric_for(&o);
	ca.ports = o.specs;
	ca.nports = o.nports;
	ca.ports_ipv4_be = o.ipv4_be;
	ca.eal_argc = o.eal_argc;
	ca.eal_argv = o.eal_argv;
	ca.loop_fabric = fab;
	rc = uroce_context_create(&ctx, &ca);
	if (rc) {
		fprintf(stderr, PROG ": cannot open %s: %s: %s\n", hca, uroce_strerror(rc), uroce_last_error());
		if (fab)
			loop_fabric_destroy(fab);
		free(o.spec_buf);
		return 1;
	}
	/* port 1 names the device (node_guid), also under -i */
	rc = uroce_query_port(ctx, 1, &first);
	lo = o.only_port ? o.only_port : 1;
	hi = o.only_port ? o.only_port : o.nports;
	if (rc) {
		fprintf(stderr, PROG ": port 1: uroce_query_port: %s: %s\n", uroce_strerror(rc), uroce_last_error());
		status = 1;
	}
	for (unsigned p = lo; !status && p <= hi; p++)
		status = read_port(ctx, p, o.specs[p - 1], &ports[n++]);
	if (!status) {
		if (o.json)
			json_out(&o, hca, ports, n, &first);
		else
			text_out(&o, hca, ports, n, &first);
	}
	for (unsigned p = 0; p < n; p++)
		free(ports[p].gid);
	uroce_context_destroy(ctx);
	if (fab)
		loop_fabric_destroy(fab);
	free(o.spec_buf);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, PROG ": cannot write the output: %s\n", strerror(errno));
		return 1;
	}
	return status;
}
