/* SPDX-License-Identifier: MIT */
/* uroce-pingpong: rdma-core's ibv_rc_pingpong, ibv_uc_pingpong and
 * ibv_ud_pingpong on uroce's verbs-shaped API, with the same command line,
 * the same TCP address exchange and the same output, so either end of a run
 * can be uroce or the rdma-core program (docs/cli.md).
 *
 *   uroce-pingpong rc|uc|ud [options] [servername] [-- EAL args]
 *   uroce-rc-pingpong / uroce-uc-pingpong / uroce-ud-pingpong [options] [servername]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "uroce/uroce.h"
#include "dataplane/port.h"
#include "app_counters.h"
#include "app_error.h"
#include "app_pcap.h"
#include "app_rand.h"
#include "app_version.h"
#include "rel_args.h"
#include "rel_exchange.h"
#include "tcp_exchange.h"
#include "udmabuf.h"

enum {
	PINGPONG_RECV_WRID = 1,
	PINGPONG_SEND_WRID = 2,
};

/* What rdma-core's examples use; the peer expects exactly these. */
#define PP_DEFAULT_TCP_PORT 18515
#define PP_UD_QKEY 0x11111111u
#define PP_GRH_BYTES 40
#define PP_MAX_SIZE (1u << 30)     /* largest message we allocate for */
#define PP_MAX_RX_DEPTH 65536u     /* receives kept posted; CQ is one more */
#define PP_DEFAULT_TIMEOUT_S 60
/* After the last completion an RC end keeps the transport running until it
 * has been quiet this long (at most PP_RC_LINGER_MAX_NS), so that the ACK
 * of the peer's last message leaves before the QP is destroyed, and is
 * sent again when the peer retransmits because the first one was lost
 * (rdma-core's local ACK timeout 14 is 67 ms: several fit in the quiet). */
#define PP_RC_LINGER_QUIET_NS 300000000ull
#define PP_RC_LINGER_MAX_NS 3000000000ull

/* "LID:QPN:PSN:GID" as rdma-core writes it: 4+1+6+1+6+1+32 chars and a NUL. */
#define PP_MSG_LEN (sizeof "0000:000000:000000:00000000000000000000000000000000")
#define PP_DONE_LEN (sizeof "done")
/* be: a receive's deadline runs from when it becomes the QP's active one,
 * which is at RTR, in the middle of the exchange: so a be end posts its
 * receives only once the exchange is over, and the server says "go" once
 * its receives are up, before the client's first message leaves (uroce
 * peers only: rdma-core speaks no be) */
#define PP_GO_LEN (sizeof "go!")
#define PP_BE_RX_DEPTH 4

enum pp_mode { PP_RC, PP_UC, PP_UD };

static const char *const mode_names[] = { "rc", "uc", "ud" };

struct pp_opts {
	enum pp_mode mode;
	const char *prog;
	const char *port_spec;          /* -d as given */
	char *port_spec_buf;            /* holds port_specs[] */
	const char *port_specs[UROCE_MAX_PORTS];
	unsigned nports;
	unsigned ib_port;               /* -i: the QP's port, 1..nports */
	unsigned tcp_port;
	unsigned size;
	enum uroce_mtu mtu;
	unsigned rx_depth;
	unsigned iters;
	unsigned sl;
	int gidx;
	int use_event;
	int validate_buf;
	unsigned timeout_s;
	unsigned qp_timeout;    /* -u: the RC QP's local ACK timeout exponent */
	unsigned hop_limit;              /* --hop-limit: IP TTL / hop limit of our packets */
	int counters;                   /* --counters: QP and port counters at exit */
	const char *pcap_path;          /* --pcap FILE: the QP's port's frames */
	int dmabuf;                     /* --dmabuf: the buffer is a udmabuf, registered as a dmabuf */
	uint32_t ipv4_be[UROCE_MAX_PORTS]; /* --ip, per port; 0 = the interface's */
	unsigned nips;
	struct rel_args rel;            /* --reliability and the sr/ec options (rc mode only) */
	const char *servername;
	int eal_argc;
	char **eal_argv;
};

struct pp_dest {
	unsigned lid;
	unsigned qpn;
	unsigned psn;
	uint8_t gid[16];
	uint32_t token; /* sr/ec/be: in the mode prefix, not the rdma-core message */
	uint32_t ctrl;  /* and its control QPN (uroce_qp_ctrl_num) */
};

/* long-only options, above rel_args' values */
enum { PP_OPT_PCAP = REL_OPT__END + 1, PP_OPT_VERSION };

struct pp_ctx {
	struct uroce_context *ctx;
	int pcap_on;                    /* --pcap: the capture runs */
	struct uroce_pd *pd;
	struct uroce_mr *mr;
	struct uroce_cq *cq;
	struct uroce_qp *qp;
	struct uroce_ah *ah;
	char *buf;
	size_t buf_len;
	struct udmabuf ubuf;     /* --dmabuf: where buf lives */
	uint64_t sge_base;       /* the address SGEs name for buf[0]: mr->addr */
	int on_nic;              /* rc on a verbs port: the NIC runs the transport, nothing to progress */
	struct uroce_comp_channel *ch; /* -e: the CQ's channel; an engine thread runs the transport */
	unsigned size;
	unsigned send_flags;
	int rx_depth;
	int pending;
	enum pp_mode mode;
	uint32_t remote_qpn;
	int validate_buf;
	/* --chk with sr/ec (uroce at both ends): every byte of every message
	 * carries a pattern of its direction and number, checked on arrival */
	int full_chk, is_client;
	unsigned sent_msgs, recv_msgs;
	int sgid_index;          /* the entry of the GID table the QP/AH sends from */
};

static long page_size;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Deadline for a wait: 0 means none (--timeout 0). */
static uint64_t deadline_after(unsigned timeout_s)
{
	return timeout_s ? now_ns() + (uint64_t)timeout_s * 1000000000ull : 0;
}

static void usage(FILE *f, const char *prog, enum pp_mode mode, int mode_known)
{
	fprintf(f, "Usage:\n");
	if (mode_known) {
		fprintf(f, "  %s            start a server and wait for connection\n", prog);
		fprintf(f, "  %s <host>     connect to server at <host>\n", prog);
	} else {
		fprintf(f, "  %s rc|uc|ud            start a server and wait for connection\n", prog);
		fprintf(f, "  %s rc|uc|ud <host>     connect to server at <host>\n", prog);
		fprintf(f, "  (or run it as uroce-rc-pingpong, uroce-uc-pingpong, uroce-ud-pingpong)\n");
	}
	fprintf(f, "\nOptions:\n");
	fprintf(f, "  -p, --port=<port>      listen on/connect to port <port> (default %d)\n", PP_DEFAULT_TCP_PORT);
	fprintf(f, "  -d, --ib-dev=<dev>     uroce port spec: afxdp:IFACE[:QUEUE[:generic]], dpdk[:PORTID] or verbs:DEV[:PORT]\n"
		   "                         (EAL args after --); a bare IFACE means afxdp:IFACE (required);\n"
		   "                         a comma-separated list opens a device of several ports\n");
	fprintf(f, "  -i, --ib-port=<port>   port of the device, 1..the number of -d specs (default 1)\n");
	fprintf(f, "  -s, --size=<size>      size of message to exchange (default %s)\n",
		mode_known && mode == PP_UD ? "1024" : "4096; ud 1024");
	if (!mode_known || mode != PP_UD)
		fprintf(f, "  -m, --mtu=<size>       path MTU: 256, 512, 1024, 2048, 4096 (default 1024; not ud)\n");
	fprintf(f, "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	fprintf(f, "  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	fprintf(f, "  -l, --sl=<sl>          service level value, 0-15 (default 0)\n");
	fprintf(f, "  -e, --events           sleep on CQ events (a completion channel; an engine thread runs the\n"
		   "                         transport); not on a verbs port\n");
	fprintf(f, "  -g, --gid-idx=<gid index> local port gid index: an entry of the port's GID table\n"
		"                            (0 fe80:: link-local, then ::ffff:IPv4, then IPv6; default: its IPv4)\n");
	fprintf(f, "  -c, --chk              validate received buffer\n");
	fprintf(f, "      --timeout=<sec>    give up when nothing progresses for <sec> seconds\n"
		   "                         (TCP exchange or completions; default %d, 0 = never)\n",
		PP_DEFAULT_TIMEOUT_S);
	fprintf(f, "  -u, --qp-timeout=<n>   RC QP timeout: 4.096 us x 2^n, 0-31 (default 14, ibv_rc_pingpong's;\n"
		   "                         0 = wait forever); sr and ec give a packet up after 8 of these\n");
	fprintf(f, "      --ip=<a.b.c.d>[,...] the ports' IPv4 addresses where they have none of their own (dpdk)\n");
	fprintf(f, "      --hop-limit=<n>    IP TTL / hop limit, 1-255 (default 64: what the kernel sends for rdma-core's 1)\n");
	fprintf(f, "      --counters         print the QP's and the port's counters at exit (retransmits, drops)\n");
	fprintf(f, "      --pcap FILE        every frame of the QP's port, sent and received, into a pcap file\n"
	           "                         (tcpdump on an AF_XDP port's interface sees none of them)\n");
	fprintf(f, "      --dmabuf           the buffer is a udmabuf (/dev/udmabuf), registered with uroce_mr_reg_dmabuf\n");
	rel_args_usage(f, 25);
	fprintf(f, "  -h, --help             this text\n");
	fprintf(f, "      --version          the version\n");
	fprintf(f, "Not supported (refused): -o/--odp, -O/--iodp, -P/--prefetch, -t/--ts, -j/--dm, -N/--new_send\n");
}

/* Exit status 2: the command line is wrong. */
static void bad_arg(const struct pp_opts *o, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "%s: ", o->prog);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	exit(2);
}

static unsigned parse_uint(const struct pp_opts *o, const char *opt, const char *s,
			   unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;
	char range[64];

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		snprintf(range, sizeof(range), "%lu..%lu", lo, hi);
		fprintf(stderr, "%s: %s: '%s' is not a number in %s\n", o->prog, opt, s, range);
		exit(2);
	}
	return (unsigned)v;
}

static enum uroce_mtu mtu_to_enum(unsigned mtu)
{
	switch (mtu) {
	case 256: return UROCE_MTU_256;
	case 512: return UROCE_MTU_512;
	case 1024: return UROCE_MTU_1024;
	case 2048: return UROCE_MTU_2048;
	case 4096: return UROCE_MTU_4096;
	default: return 0;
	}
}

static int mode_from_name(const char *s, enum pp_mode *mode)
{
	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, mode_names[i])) {
			*mode = (enum pp_mode)i;
			return 0;
		}
	}
	return -1;
}

/* -d SPEC[,SPEC...]: one uroce port per spec, a bare IFACE meaning
 * afxdp:IFACE; -i picks the QP's port among them. */
static void split_port_specs(struct pp_opts *o, const char *base)
{
	/* room for an "afxdp:" in front of each spec */
	size_t len = strlen(o->port_spec) + 1 + UROCE_MAX_PORTS * sizeof("afxdp:");
	char err[256];
	int n;

	o->port_spec_buf = malloc(len);
	if (!o->port_spec_buf) {
		fprintf(stderr, "%s: out of memory\n", base);
		exit(1);
	}
	n = port_tool_spec_list(o->port_spec, o->port_spec_buf, len, o->port_specs, UROCE_MAX_PORTS, err,
				sizeof(err));
	if (n < 0) {
		fprintf(stderr, "%s: -d/--ib-dev %s\n", base, err);
		exit(2);
	}
	o->nports = (unsigned)n;
	if (o->nips > o->nports) {
		fprintf(stderr, "%s: --ip gives %u addresses for %u port(s); accepted: at most one per -d spec\n", base,
			o->nips, o->nports);
		exit(2);
	}
	if (o->ib_port > o->nports) {
		fprintf(stderr, "%s: -i/--ib-port %u: the device has %u port(s), one per -d spec; accepted: 1-%u\n",
			base, o->ib_port, o->nports, o->nports);
		exit(2);
	}
}

static void parse_args(int argc, char **argv, struct pp_opts *o)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'n' },
		{ "sl", required_argument, NULL, 'l' },
		{ "events", no_argument, NULL, 'e' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "chk", no_argument, NULL, 'c' },
		{ "odp", no_argument, NULL, 'o' },
		{ "iodp", no_argument, NULL, 'O' },
		{ "prefetch", no_argument, NULL, 'P' },
		{ "ts", no_argument, NULL, 't' },
		{ "dm", no_argument, NULL, 'j' },
		{ "new_send", no_argument, NULL, 'N' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "qp-timeout", required_argument, NULL, 'u' },
		{ "ip", required_argument, NULL, 'I' },
		{ "hop-limit", required_argument, NULL, 'H' },
		{ "counters", no_argument, NULL, 'K' },
		{ "pcap", required_argument, NULL, PP_OPT_PCAP },
		{ "dmabuf", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, PP_OPT_VERSION },
		REL_ARGS_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	const char *base = strrchr(argv[0], '/');
	int mode_known = 0, size_set = 0, nargs = argc, c, r;
	char err[256];

	base = base ? base + 1 : argv[0];
	memset(o, 0, sizeof(*o));
	o->prog = base;
	o->tcp_port = PP_DEFAULT_TCP_PORT;
	o->mtu = UROCE_MTU_1024;
	o->rx_depth = 500;
	o->iters = 1000;
	o->gidx = -1;
	o->ib_port = 1;
	o->timeout_s = PP_DEFAULT_TIMEOUT_S;
	o->qp_timeout = 14;
	/* rdma-core's examples put 1 in the AV, but the kernel's RDMA core
	 * replaces it with the route's hop limit (64) before rxe or a NIC
	 * sends: 64 is what ibv_rc_pingpong puts on the wire */
	o->hop_limit = 64;

	/* The mode: from the name we were run as, else the first argument. */
	if (!strncmp(base, "uroce-", 6) && strlen(base) == strlen("uroce-rc-pingpong") &&
	    !strcmp(base + 8, "-pingpong")) {
		char m[3] = { base[6], base[7], 0 };
		if (!mode_from_name(m, &o->mode))
			mode_known = 1;
	}
	if (!mode_known) {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			usage(stdout, base, PP_RC, 0);
			exit(0);
		}
		if (argc >= 2 && !strcmp(argv[1], "--version")) {
			app_print_version(base);
			exit(0);
		}
		if (argc < 2 || mode_from_name(argv[1], &o->mode)) {
			fprintf(stderr, "%s: the first argument must be the mode: rc, uc or ud "
				"(or run as uroce-rc-pingpong, uroce-uc-pingpong, uroce-ud-pingpong)\n", base);
			usage(stderr, base, PP_RC, 0);
			exit(2);
		}
		/* Drop the mode word; getopt sees the rest as usual. */
		argv[1] = argv[0];
		argv++;
		argc--;
		nargs = argc;
	}

	/* Everything after "--" is for DPDK's EAL (argv[0] included). */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			nargs = i;
			o->eal_argc = argc - i;
			o->eal_argv = &argv[i];
			argv[i] = (char *)base;
			break;
		}
	}

	optind = 1;
	while ((c = getopt_long(nargs, argv, "p:d:i:s:m:r:n:l:eg:coOPtjNu:h", longopts, NULL)) != -1) {
		r = rel_args_option(&o->rel, c, optarg, err, sizeof(err));
		if (r < 0)
			bad_arg(o, "%s%s", err, "");
		if (r)
			continue;
		switch (c) {
		case 'p':
			o->tcp_port = parse_uint(o, "-p/--port", optarg, 1, 65535);
			break;
		case 'd':
			o->port_spec = optarg;
			break;
		case 'i':
			o->ib_port = parse_uint(o, "-i/--ib-port", optarg, 1, UROCE_MAX_PORTS);
			break;
		case 's':
			o->size = parse_uint(o, "-s/--size", optarg, 1, PP_MAX_SIZE);
			size_set = 1;
			break;
		case 'm':
			if (o->mode == PP_UD)
				bad_arg(o, "-m/--mtu: not an option of %s (the UD "
					"message must fit the port's MTU, as in rdma-core)%s", "ud_pingpong", "");
			o->mtu = mtu_to_enum(parse_uint(o, "-m/--mtu", optarg, 256, 4096));
			if (!o->mtu)
				bad_arg(o, "-m/--mtu %s: accepted: 256, 512, 1024, 2048, 4096%s", optarg, "");
			break;
		case 'r':
			o->rx_depth = parse_uint(o, "-r/--rx-depth", optarg, 1, PP_MAX_RX_DEPTH);
			break;
		case 'n':
			o->iters = parse_uint(o, "-n/--iters", optarg, 1, INT32_MAX);
			break;
		case 'l':
			o->sl = parse_uint(o, "-l/--sl", optarg, 0, 15);
			break;
		case 'e':
			o->use_event = 1;
			break;
		case 'g': {
			/* an index of the port's GID table, checked against
			 * it once the port is open */
			unsigned g = parse_uint(o, "-g/--gid-idx", optarg, 0, 255);
			o->gidx = (int)g;
			break;
		}
		case 'c':
			o->validate_buf = 1;
			break;
		case 'D':
			o->dmabuf = 1;
			break;
		case 'o':
		case 'O':
		case 'P':
			bad_arg(o, "-%s: on-demand paging is not supported by uroce (memory is registered "
				"as it is)%s", c == 'o' ? "o/--odp" : c == 'O' ? "O/--iodp" : "P/--prefetch", "");
			break;
		case 't':
			bad_arg(o, "-t/--ts: completion timestamps are not supported by uroce%s%s", "", "");
			break;
		case 'j':
			bad_arg(o, "-j/--dm: device memory is not supported by uroce%s%s", "", "");
			break;
		case 'N':
			bad_arg(o, "-N/--new_send: the ibv_wr_* send API is not supported; "
				"uroce has post_send only%s%s", "", "");
			break;
		case 'T':
			o->timeout_s = parse_uint(o, "--timeout", optarg, 0, 86400);
			break;
		case 'u':
			o->qp_timeout = parse_uint(o, "-u/--qp-timeout", optarg, 0, 31);
			break;
		case 'H':
			o->hop_limit = parse_uint(o, "--hop-limit", optarg, 1, 255);
			break;
		case 'K':
			o->counters = 1;
			break;
		case PP_OPT_PCAP:
			o->pcap_path = optarg;
			break;
		case 'I': {
			/* A.B.C.D[,A.B.C.D...]: one per port, 0.0.0.0 = the interface's */
			char buf[INET_ADDRSTRLEN];
			const char *p = optarg;

			o->nips = 0;
			for (;;) {
				size_t n = strcspn(p, ",");
				struct in_addr a;

				if (o->nips == UROCE_MAX_PORTS || n >= sizeof(buf))
					bad_arg(o, "--ip '%s': accepted: up to 8 IPv4 addresses A.B.C.D, comma-separated, "
						"one per port%s", optarg, "");
				memcpy(buf, p, n);
				buf[n] = 0;
				if (inet_pton(AF_INET, buf, &a) != 1)
					bad_arg(o, "--ip '%s' is not an IPv4 address (A.B.C.D[,A.B.C.D...])%s", optarg, "");
				o->ipv4_be[o->nips++] = a.s_addr;
				if (!p[n])
					break;
				p += n + 1;
			}
			break;
		}
		case 'h':
			usage(stdout, base, o->mode, 1);
			exit(0);
		case PP_OPT_VERSION:
			app_print_version(base);
			exit(0);
		default:
			usage(stderr, base, o->mode, 1);
			exit(2);
		}
	}

	if (optind == nargs - 1)
		o->servername = argv[optind];
	else if (optind < nargs) {
		fprintf(stderr, "%s: one server name at most, got '%s' and '%s'\n", base, argv[optind],
			argv[optind + 1]);
		exit(2);
	}
	if (rel_args_check(&o->rel, o->mode == PP_UC ? "uc mode" : o->mode == PP_UD ? "ud mode" : NULL,
			   "rc mode (uroce-pingpong rc, uroce-rc-pingpong)", err, sizeof(err)))
		bad_arg(o, "%s%s", err, "");
	if (!size_set)
		o->size = o->mode == PP_UD ? 1024 : 4096;
	if (!o->port_spec)
		bad_arg(o, "-d/--ib-dev is required: the uroce port, e.g. afxdp:eth0, verbs:mlx5_0, or dpdk:0 "
			"with EAL args after --%s%s", "", "");
	split_port_specs(o, base);
	if (o->rel.attr.reliability != UROCE_REL_RC &&
	    !strncmp(o->port_specs[0], "verbs:", 6))
		o->rel.attr.imm_keyed = 1; /* the NIC numbers its own PSNs (the peer gives --imm-keyed) */
	if (o->use_event && !strncmp(o->port_specs[0], "verbs:", 6))
		bad_arg(o, "-e/--events on a verbs port is not supported (uroce's completion channels serve its own "
			"engine%s%s); poll, without -e", "", "");
}

/* ---- TCP address exchange, byte for byte as rdma-core's examples ---- */

/* rdma-core's gid_to_wire_gid: four %08x of htonl(word), which is the 16 raw
 * GID bytes in order, as hex. */
static void gid_to_wire(const uint8_t gid[16], char wire[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(&wire[i * 2], 3, "%02x", gid[i]);
}

static int hex_val(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
		return (ch | 0x20) - 'a' + 10;
	return -1;
}

static int wire_to_gid(const char *wire, uint8_t gid[16])
{
	if (strlen(wire) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		int hi = hex_val(wire[i * 2]), lo = hex_val(wire[i * 2 + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		gid[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static void format_dest(const struct pp_dest *d, char msg[PP_MSG_LEN])
{
	char gid[33];

	gid_to_wire(d->gid, gid);
	snprintf(msg, PP_MSG_LEN, "%04x:%06x:%06x:%s", d->lid, d->qpn, d->psn, gid);
}

static int parse_dest(const char *prog, const char msg[PP_MSG_LEN], struct pp_dest *d)
{
	char gid[33], copy[PP_MSG_LEN];
	unsigned lid, qpn, psn;

	memcpy(copy, msg, PP_MSG_LEN);
	copy[PP_MSG_LEN - 1] = 0;
	if (sscanf(copy, "%x:%x:%x:%32s", &lid, &qpn, &psn, gid) != 4 || lid > 0xffff ||
	    qpn > 0xffffff || psn > 0xffffff || wire_to_gid(gid, d->gid)) {
		fprintf(stderr, "%s: malformed address from the peer: '%.*s' (expected "
			"LID:QPN:PSN:GID as %%04x:%%06x:%%06x:32 hex digits)\n",
			prog, (int)(PP_MSG_LEN - 1), copy);
		return -1;
	}
	d->lid = lid;
	d->qpn = qpn;
	d->psn = psn;
	return 0;
}

/* ---- the verbs part ---- */

static void fail_call(const char *what, int err)
{
	const char *detail = app_last_error();

	fprintf(stderr, "%s: %s%s%s\n", what, uroce_strerror(err), detail && *detail ? ": " : "",
		detail ? detail : "");
}

static int pp_init_ctx(struct pp_ctx *c, const struct pp_opts *o)
{
	struct uroce_context_attr cattr = {
		.ports = o->port_specs,
		.nports = o->nports,
		.ports_ipv4_be = o->ipv4_be,
		.eal_argc = o->eal_argc,
		.eal_argv = o->eal_argv,
		/* -e: an engine thread runs the transport while this one sleeps */
		.mode = o->use_event ? UROCE_ENGINE_DEDICATED : UROCE_ENGINE_EMBEDDED,
		.engine_cpu = -1,
	};
	struct uroce_qp_init_attr init = {
		.qp_type = o->mode == PP_RC ? UROCE_QPT_RC : o->mode == PP_UC ? UROCE_QPT_UC : UROCE_QPT_UD,
		.cap = {
			.max_send_wr = 1,
			.max_recv_wr = o->rx_depth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.rel = o->rel.attr,
		.path = o->rel.path,
		.cc = o->rel.cc,
	};
	struct uroce_qp_attr attr;
	int err, mask;

	memset(c, 0, sizeof(*c));
	c->mode = o->mode;
	c->size = o->size;
	c->on_nic = !strncmp(o->port_specs[0], "verbs:", 6) && o->rel.attr.reliability == UROCE_REL_RC;
	c->validate_buf = o->validate_buf;
	c->full_chk = o->validate_buf && o->rel.attr.reliability != UROCE_REL_RC;
	c->is_client = o->servername != NULL;
	c->rx_depth = (int)o->rx_depth;
	/* be: only the oldest receive waits for a message, its deadline
	 * running; a ping-pong has one in flight, and posting hundreds at
	 * once (then refilling them) would hold the first ping past it */
	if (o->rel.attr.reliability == UROCE_REL_BE && c->rx_depth > PP_BE_RX_DEPTH)
		c->rx_depth = PP_BE_RX_DEPTH;
	c->send_flags = UROCE_SEND_SIGNALED;
	c->buf_len = o->size + (o->mode == PP_UD ? PP_GRH_BYTES : 0);
	/* Both ends start from the same filler, as rdma-core does. */
	if (o->dmabuf) {
		char why[256];

		if (udmabuf_alloc(&c->ubuf, c->buf_len, why, sizeof(why))) {
			fprintf(stderr, "Couldn't allocate a udmabuf: %s\n", why);
			return -1;
		}
		c->buf = c->ubuf.buf;
	} else if (posix_memalign((void **)&c->buf, (size_t)page_size, c->buf_len)) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		return -1;
	}
	memset(c->buf, 0x7b, c->buf_len);

	err = uroce_context_create(&c->ctx, &cattr);
	if (err) {
		char what[300];
		snprintf(what, sizeof(what), "Couldn't get context for %s", o->port_spec);
		fail_call(what, err);
		return -1;
	}
	app_port_notes(stderr, c->ctx);
	if (o->pcap_path) {
		if (app_pcap_start("uroce-pingpong", c->ctx, (uint8_t)o->ib_port, o->pcap_path))
			return -1;
		c->pcap_on = 1;
	}
	if (o->mode == PP_UD) {
		struct uroce_port_attr pa;
		uint32_t mtu;

		err = uroce_query_port(c->ctx, (uint8_t)o->ib_port, &pa);
		if (err) {
			char what[64];

			snprintf(what, sizeof(what), "Unable to query port info for port %u", o->ib_port);
			fail_call(what, err);
			return -1;
		}
		mtu = uroce_mtu_bytes(pa.active_mtu);
		if (o->size > mtu) {
			fprintf(stderr, "Requested size larger than port MTU (%u)\n", mtu);
			return -1;
		}
	}
	err = uroce_pd_alloc(c->ctx, &c->pd);
	if (err) {
		fail_call("Couldn't allocate PD", err);
		return -1;
	}
	if (o->dmabuf) {
		/* a verbs port's NIC names the region by iova: the tool's own
		 * address of it, so that both views agree; an afxdp/dpdk port
		 * maps the dmabuf itself (iova 0) */
		int on_nic = !strncmp(o->port_specs[0], "verbs:", 6);

		err = uroce_mr_reg_dmabuf(c->pd, c->ubuf.fd, 0, c->buf_len, on_nic ? (uintptr_t)c->buf : 0,
		                          UROCE_ACCESS_LOCAL_WRITE, &c->mr);
		if (!err) {
			printf("  dmabuf: %zu bytes of a udmabuf, %s\n", c->buf_len,
			       (c->mr->flags & UROCE_MR_DMABUF_DIRECT) ? "registered with the NIC (direct)" :
			                                                 "mapped: the engine copies through it");
		} else if (err == -EOPNOTSUPP) {
			/* NCCL's fallback: the same pages, registered as host memory */
			printf("  dmabuf: %s\n  dmabuf: registering the udmabuf's pages as host memory instead\n",
			       uroce_last_error());
			err = uroce_mr_reg(c->pd, c->buf, c->buf_len, UROCE_ACCESS_LOCAL_WRITE, &c->mr);
		}
	} else {
		err = uroce_mr_reg(c->pd, c->buf, c->buf_len, UROCE_ACCESS_LOCAL_WRITE, &c->mr);
	}
	if (err) {
		fail_call("Couldn't register MR", err);
		return -1;
	}
	c->sge_base = (uintptr_t)c->mr->addr;
	err = uroce_cq_create(c->ctx, (int)o->rx_depth + 1, &c->cq);
	if (err) {
		fail_call("Couldn't create CQ", err);
		return -1;
	}
	if (o->use_event) {
		/* as rdma-core's -e: a channel, the CQ on it, armed */
		if ((err = uroce_comp_channel_create(c->ctx, &c->ch)) || (err = uroce_cq_set_channel(c->cq, c->ch, NULL)) ||
		    (err = uroce_req_notify_cq(c->cq, 0))) {
			fail_call("Couldn't set up the completion channel", err);
			return -1;
		}
	}
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	err = uroce_qp_create(c->pd, &init, &c->qp);
	if (err) {
		fail_call("Couldn't create QP", err);
		return -1;
	}
	if (init.cap.max_inline_data >= o->size)
		c->send_flags |= UROCE_SEND_INLINE;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = UROCE_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = (uint8_t)o->ib_port;
	mask = UROCE_QP_STATE | UROCE_QP_PKEY_INDEX | UROCE_QP_PORT;
	if (o->mode == PP_UD) {
		attr.qkey = PP_UD_QKEY;
		mask |= UROCE_QP_QKEY;
	} else {
		attr.qp_access_flags = 0;
		mask |= UROCE_QP_ACCESS_FLAGS;
	}
	err = uroce_qp_modify(c->qp, &attr, mask);
	if (err) {
		fail_call("Failed to modify QP to INIT", err);
		return -1;
	}
	return 0;
}

static void pp_close_ctx(struct pp_ctx *c)
{
	int err;

	if (c->qp && (err = uroce_qp_destroy(c->qp)))
		fail_call("Couldn't destroy QP", err);
	if (c->ah && (err = uroce_ah_destroy(c->ah)))
		fail_call("Couldn't destroy AH", err);
	if (c->cq && (err = uroce_cq_destroy(c->cq)))
		fail_call("Couldn't destroy CQ", err);
	if (c->ch && (err = uroce_comp_channel_destroy(c->ch)))
		fail_call("Couldn't destroy completion channel", err);
	if (c->mr && (err = uroce_mr_dereg(c->mr)))
		fail_call("Couldn't deregister MR", err);
	if (c->pd && (err = uroce_pd_free(c->pd)))
		fail_call("Couldn't deallocate PD", err);
	if (c->ctx && (err = uroce_context_destroy(c->ctx)))
		fail_call("Couldn't release context", err);
	if (c->ubuf.buf)
		udmabuf_free(&c->ubuf);
	else
		free(c->buf);
}

static void fill_ah(struct uroce_ah_attr *ah, const struct pp_ctx *c, const struct pp_dest *dest,
		    const struct pp_opts *o)
{
	memcpy(ah->dgid, dest->gid, 16);
	ah->sgid_index = (uint8_t)c->sgid_index;
	ah->hop_limit = (uint8_t)o->hop_limit;
	ah->sl = (uint8_t)o->sl;
	ah->port_num = (uint8_t)o->ib_port;
}

/* RESET->INIT happened in pp_init_ctx; here INIT->RTR->RTS with the peer's
 * address, with the attributes rdma-core's examples use. */
static int pp_connect_ctx(struct pp_ctx *c, const struct pp_opts *o, unsigned my_psn,
			  const struct pp_dest *dest)
{
	struct uroce_qp_attr attr;
	int err, mask;
	static const uint8_t zero[16];

	if (!memcmp(dest->gid + 8, zero, 8)) {
		fprintf(stderr, "%s: the peer sent no GID (its interface id is zero); RoCE needs one: "
			"run the rdma-core end with -g <gid index>\n", o->prog);
		return -1;
	}
	c->remote_qpn = dest->qpn;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = UROCE_QPS_RTR;
	if (o->mode == PP_UD) {
		mask = UROCE_QP_STATE;
	} else {
		attr.path_mtu = o->mtu;
		attr.dest_qp_num = dest->qpn;
		attr.rq_psn = dest->psn;
		attr.dest_token = dest->token;
		fill_ah(&attr.ah_attr, c, dest, o);
		mask = UROCE_QP_STATE | UROCE_QP_AV | UROCE_QP_PATH_MTU | UROCE_QP_DEST_QPN | UROCE_QP_RQ_PSN |
		       UROCE_QP_DEST_TOKEN;
		if (dest->ctrl && o->rel.attr.reliability != UROCE_REL_RC) {
			attr.dest_ctrl_qpn = dest->ctrl; /* a verbs end's is the NIC's number */
			mask |= UROCE_QP_DEST_CTRL_QPN;
		}
		if (o->mode == PP_RC) {
			attr.max_dest_rd_atomic = 1;
			attr.min_rnr_timer = 12;
			mask |= UROCE_QP_MAX_DEST_RD_ATOMIC | UROCE_QP_MIN_RNR_TIMER;
		}
	}
	err = uroce_qp_modify(c->qp, &attr, mask);
	if (err) {
		fail_call("Failed to modify QP to RTR", err);
		return -1;
	}

	attr.qp_state = UROCE_QPS_RTS;
	attr.sq_psn = my_psn;
	mask = UROCE_QP_STATE | UROCE_QP_SQ_PSN;
	if (o->mode == PP_RC) {
		attr.timeout = (uint8_t)o->qp_timeout;
		attr.retry_cnt = 7;
		attr.rnr_retry = 7;
		attr.max_rd_atomic = 1;
		mask |= UROCE_QP_TIMEOUT | UROCE_QP_RETRY_CNT | UROCE_QP_RNR_RETRY | UROCE_QP_MAX_QP_RD_ATOMIC;
	}
	err = uroce_qp_modify(c->qp, &attr, mask);
	if (err) {
		fail_call("Failed to modify QP to RTS", err);
		return -1;
	}

	if (o->mode == PP_UD) {
		struct uroce_ah_attr ah;

		memset(&ah, 0, sizeof(ah));
		fill_ah(&ah, c, dest, o);
		err = uroce_ah_create(c->pd, &ah, &c->ah);
		if (err) {
			fail_call("Failed to create AH", err);
			return -1;
		}
	}
	return 0;
}

static int pp_post_recv_all(struct pp_ctx *c);

/* The connection to the peer, every wait bounded by --timeout. */
static struct tcp_exchange pp_tcp(const struct pp_opts *o)
{
	return (struct tcp_exchange){ .fd = -1, .prog = o->prog, .timeout_s = o->timeout_s };
}

static int pp_client_exch_dest(const struct pp_opts *o, struct pp_ctx *c, const struct pp_dest *my,
			       struct pp_dest *rem)
{
	struct tcp_exchange x = pp_tcp(o);
	char msg[PP_MSG_LEN];
	uint32_t token = 0, ctrl = 0;
	int ret = -1, rc;

	if (tcp_exchange_connect(&x, o->servername, o->tcp_port))
		return -1;
	format_dest(my, msg);
	/* rc: rdma-core's bytes; sr/ec: the mode prefix in front (rel_exchange.h) */
	if (rel_exchange_send(&x, &o->rel.attr, my->token, my->ctrl, msg, sizeof(msg))) {
		fprintf(stderr, "Couldn't send local address\n");
		goto out;
	}
	rc = rel_exchange_recv(&x, &o->rel.attr, &token, &ctrl, msg, sizeof(msg));
	if (rc) {
		if (rc != REL_EXCHANGE_MISMATCH)
			fprintf(stderr, "Couldn't read/write remote address\n");
		goto out;
	}
	if (parse_dest(o->prog, msg, rem))
		goto out;
	rem->token = token;
	rem->ctrl = ctrl;
	/* Ready to receive before saying "done": the server never sends first,
	 * but this way nothing of the peer's can arrive at a QP not in RTR. */
	if (pp_connect_ctx(c, o, my->psn, rem))
		goto out;
	if (tcp_exchange_send(&x, "done", PP_DONE_LEN)) {
		fprintf(stderr, "Couldn't read/write remote address\n");
		goto out;
	}
	if (o->rel.attr.reliability == UROCE_REL_BE) {
		if (tcp_exchange_recv(&x, msg, PP_GO_LEN) || memcmp(msg, "go!", PP_GO_LEN)) {
			fprintf(stderr, "Couldn't read the server's go (be: it posts its receives first)\n");
			goto out;
		}
		if (pp_post_recv_all(c))
			goto out;
	}
	ret = 0;
out:
	tcp_exchange_close(&x);
	return ret;
}

static int pp_server_exch_dest(const struct pp_opts *o, struct pp_ctx *c, const struct pp_dest *my,
			       struct pp_dest *rem)
{
	struct tcp_exchange x = pp_tcp(o);
	char msg[PP_MSG_LEN];
	uint32_t token = 0, ctrl = 0;
	int ret = -1, rc;

	if (tcp_exchange_accept(&x, o->tcp_port))
		return -1;
	rc = rel_exchange_recv(&x, &o->rel.attr, &token, &ctrl, msg, sizeof(msg));
	if (rc == REL_EXCHANGE_MISMATCH) {
		/* Answer anyway, so the client sees the difference and says
		 * so too, rather than a closed connection. */
		struct tcp_exchange q = x;

		q.quiet = true;
		format_dest(my, msg);
		rel_exchange_send(&q, &o->rel.attr, my->token, my->ctrl, msg, sizeof(msg));
		goto out;
	}
	if (rc) {
		fprintf(stderr, "Couldn't read remote address\n");
		goto out;
	}
	if (parse_dest(o->prog, msg, rem))
		goto out;
	rem->token = token;
	rem->ctrl = ctrl;
	if (pp_connect_ctx(c, o, my->psn, rem)) {
		fprintf(stderr, "Couldn't connect to remote QP\n");
		goto out;
	}
	format_dest(my, msg);
	if (rel_exchange_send(&x, &o->rel.attr, my->token, my->ctrl, msg, sizeof(msg))) {
		fprintf(stderr, "Couldn't send/recv local address\n");
		goto out;
	}
	if (tcp_exchange_recv(&x, msg, PP_DONE_LEN)) {
		fprintf(stderr, "Couldn't send/recv local address\n");
		goto out;
	}
	if (memcmp(msg, "done", PP_DONE_LEN)) {
		fprintf(stderr, "Couldn't send/recv local address: the peer did not answer \"done\"\n");
		goto out;
	}
	if (o->rel.attr.reliability == UROCE_REL_BE &&
	    (pp_post_recv_all(c) || tcp_exchange_send(&x, "go!", PP_GO_LEN))) {
		fprintf(stderr, "Couldn't post the receives or say go\n");
		goto out;
	}
	ret = 0;
out:
	tcp_exchange_close(&x);
	return ret;
}

static int pp_post_recv(struct pp_ctx *c, int n)
{
	struct uroce_sge sge = {
		.addr = c->sge_base,
		.length = (uint32_t)c->buf_len,
		.lkey = c->mr->lkey,
	};
	struct uroce_recv_wr wr = {
		.wr_id = PINGPONG_RECV_WRID,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct uroce_recv_wr *bad;
	int i;

	for (i = 0; i < n; i++)
		if (uroce_post_recv(c->qp, &wr, &bad))
			break;
	return i;
}

/* rx_depth receives, the whole queue; 0 or -1 (said) */
static int pp_post_recv_all(struct pp_ctx *c)
{
	int n = pp_post_recv(c, c->rx_depth);

	if (n < c->rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d): %s\n", n, uroce_last_error());
		return -1;
	}
	return 0;
}

/* Byte j of message k sent by the client (dir 0) or the server (dir 1). */
static uint8_t full_chk_byte(int dir, unsigned k, unsigned j)
{
	return (uint8_t)((k * 167u) ^ (j * 31u) ^ (j >> 9) ^ (dir ? 0x5au : 0xa5u));
}

static int pp_post_send(struct pp_ctx *c)
{
	struct uroce_sge sge = {
		.addr = c->sge_base + (c->mode == PP_UD ? PP_GRH_BYTES : 0),
		.length = c->size,
		.lkey = c->mr->lkey,
	};
	struct uroce_send_wr wr = {
		.wr_id = PINGPONG_SEND_WRID,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = UROCE_WR_SEND,
		.send_flags = c->send_flags,
	};
	struct uroce_send_wr *bad;
	int err;

	if (c->full_chk) {
		uint8_t *p = (uint8_t *)(uintptr_t)sge.addr;

		for (unsigned j = 0; j < c->size; j++)
			p[j] = full_chk_byte(!c->is_client, c->sent_msgs, j);
		c->sent_msgs++;
	}
	if (c->mode == PP_UD) {
		wr.wr.ud.ah = c->ah;
		wr.wr.ud.remote_qpn = c->remote_qpn;
		wr.wr.ud.remote_qkey = PP_UD_QKEY;
	}
	err = uroce_post_send(c->qp, &wr, &bad);
	if (err)
		fail_call("post_send", err);
	return err;
}

/* One completion, with rdma-core's bookkeeping: keep rx_depth receives
 * posted, and post the next send only when the previous send completed AND
 * a message arrived, so the peer always has a receive waiting. */
static int parse_single_wc(struct pp_ctx *c, const struct uroce_wc *wc, int *scnt, int *rcnt,
			   int *routs, int iters)
{
	if (wc->status != UROCE_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", uroce_wc_status_str(wc->status),
			wc->status, (int)wc->wr_id);
		return 1;
	}
	if (wc->wc_flags & (UROCE_WC_PARTIAL | UROCE_WC_TIMEOUT | UROCE_WC_PREEMPTED)) {
		/* be: said as it is, never counted as a message that arrived */
		fprintf(stderr, "%s %d ended before its message was whole (%s): %u of %u bytes %s\n",
			wc->wr_id == PINGPONG_RECV_WRID ? "receive" : "send", *(wc->wr_id == PINGPONG_RECV_WRID ? rcnt : scnt) + 1,
			(wc->wc_flags & UROCE_WC_PREEMPTED) ? "preempted by a newer one" :
			(wc->wc_flags & UROCE_WC_TIMEOUT) ? "its deadline passed; --timeout-us sets it" : "partial",
			wc->byte_len, c->size, wc->wr_id == PINGPONG_RECV_WRID ? "placed" : "sent");
		return 1;
	}
	/* uroce's own addition under --chk: the completion says what arrived. */
	if (c->validate_buf && wc->wr_id == PINGPONG_RECV_WRID &&
	    (wc->opcode != UROCE_WC_RECV || wc->byte_len != c->size + (c->mode == PP_UD ? PP_GRH_BYTES : 0))) {
		fprintf(stderr, "receive completion with opcode %d and byte_len %u; expected %d and %u%s\n",
			wc->opcode, wc->byte_len, UROCE_WC_RECV,
			c->size + (c->mode == PP_UD ? PP_GRH_BYTES : 0),
			c->mode == PP_UD ? " (the message after the 40-byte GRH)" : "");
		return 1;
	}
	switch ((int)wc->wr_id) {
	case PINGPONG_SEND_WRID:
		++*scnt;
		break;
	case PINGPONG_RECV_WRID:
		if (c->full_chk) {
			const uint8_t *p = (const uint8_t *)c->buf;

			for (unsigned j = 0; j < c->size; j++)
				if (p[j] != full_chk_byte(c->is_client, c->recv_msgs, j)) {
					fprintf(stderr, "message %u received: byte %u is 0x%02x, expected 0x%02x (--chk)\n",
						c->recv_msgs, j, p[j], full_chk_byte(c->is_client, c->recv_msgs, j));
					return 1;
				}
			c->recv_msgs++;
		}
		if (--*routs <= 1) {
			*routs += pp_post_recv(c, c->rx_depth - *routs);
			if (*routs < c->rx_depth) {
				fprintf(stderr, "Couldn't post receive (%d)\n", *routs);
				return 1;
			}
		}
		++*rcnt;
		break;
	default:
		fprintf(stderr, "Completion for unknown wr_id %d\n", (int)wc->wr_id);
		return 1;
	}
	c->pending &= ~(int)wc->wr_id;
	if (*scnt < iters && !c->pending) {
		if (pp_post_send(c)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		c->pending = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
	}
	return 0;
}

static void report_stall(const struct pp_opts *o, struct pp_ctx *c, int scnt, int rcnt)
{
	struct uroce_qp_stats qs;
	struct uroce_port_stats ps;

	fprintf(stderr, "%s: timed out: no completion for %u s (--timeout); sent %d/%u, received %d/%u\n",
		o->prog, o->timeout_s, scnt, o->iters, rcnt, o->iters);
	if (!uroce_qp_stats(c->qp, &qs))
		fprintf(stderr, "  qp: tx %llu rx %llu retransmits %llu timeouts %llu seq_naks %llu/%llu "
			"rnr_naks %llu/%llu duplicates %llu out_of_sequence %llu access_errors %llu\n",
			(unsigned long long)qs.tx_packets, (unsigned long long)qs.rx_packets,
			(unsigned long long)qs.retransmits, (unsigned long long)qs.timeouts,
			(unsigned long long)qs.seq_naks_sent, (unsigned long long)qs.seq_naks_rcvd,
			(unsigned long long)qs.rnr_naks_sent, (unsigned long long)qs.rnr_naks_rcvd,
			(unsigned long long)qs.duplicates, (unsigned long long)qs.out_of_sequence,
			(unsigned long long)qs.access_errors);
	if (!uroce_port_stats(c->ctx, (uint8_t)o->ib_port, &ps)) {
		fprintf(stderr, "  port: rx %llu tx %llu", (unsigned long long)ps.rx_packets,
			(unsigned long long)ps.tx_packets);
		for (int i = 1; i < UROCE_DROP__COUNT; i++)
			if (ps.drops[i])
				fprintf(stderr, " %s=%llu", uroce_drop_reason_name((enum uroce_drop_reason)i),
					(unsigned long long)ps.drops[i]);
		fputc('\n', stderr);
	}
}

/* The GID this end announces and sends from: entry -g N of the port's
 * table, as ibv_*_pingpong reads it; without -g the port's IPv4-mapped GID
 * (RoCEv2 needs one, where rdma-core would send zeros). */
static int pp_pick_gid(struct pp_ctx *c, const struct pp_opts *o, const struct uroce_port_attr *pa, uint8_t gid[16])
{
	int err;

	if (o->gidx >= 0) {
		err = uroce_query_gid(c->ctx, (uint8_t)o->ib_port, o->gidx, gid);
		if (err) {
			fprintf(stderr, "can't read sgid of index %d: %s\n", o->gidx, uroce_last_error());
			return 1;
		}
		c->sgid_index = o->gidx;
		return 0;
	}
	for (int i = 0; i < pa->gid_tbl_len; i++)
		if (!uroce_query_gid(c->ctx, (uint8_t)o->ib_port, i, gid) && !memcmp(gid, pa->gid, 16)) {
			c->sgid_index = i;
			return 0;
		}
	fprintf(stderr, "port %d has no IPv4 address: pick an IPv6 GID with -g N\n", o->ib_port);
	return 1;
}

static int run(const struct pp_opts *o, struct pp_ctx *c)
{
	struct pp_dest my, rem;
	struct timeval start, end;
	char gid[INET6_ADDRSTRLEN];
	struct uroce_port_attr pa;
	int routs, rcnt, scnt, err, iters = (int)o->iters;
	unsigned idle = 0;
	uint64_t deadline;

	if (pp_init_ctx(c, o))
		return 1;
	/* be posts them after the exchange (PP_GO_LEN) */
	if (o->rel.attr.reliability != UROCE_REL_BE && pp_post_recv_all(c))
		return 1;
	routs = c->rx_depth;
	err = uroce_query_port(c->ctx, (uint8_t)o->ib_port, &pa);
	if (err) {
		fail_call("Couldn't get port info", err);
		return 1;
	}
	/* RoCEv2 always needs the GID, so it is sent even without -g (rdma-core
	 * sends zeros then, which only works on InfiniBand). */
	memset(&my, 0, sizeof(my));
	if (pp_pick_gid(c, o, &pa, my.gid))
		return 1;
	my.lid = 0;
	my.qpn = uroce_qp_num(c->qp);
	my.token = uroce_qp_token(c->qp);
	my.ctrl = uroce_qp_ctrl_num(c->qp);
	my.psn = app_rand_psn();
	inet_ntop(AF_INET6, my.gid, gid, sizeof(gid));
	/* ud_pingpong really prints "PSN 0x%06x: GID"; kept for parsers. */
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n", my.lid, my.qpn, my.psn,
	       o->mode == PP_UD ? ":" : ",", gid);

	if (o->servername)
		err = pp_client_exch_dest(o, c, &my, &rem);
	else
		err = pp_server_exch_dest(o, c, &my, &rem);
	if (err)
		return 1;
	inet_ntop(AF_INET6, rem.gid, gid, sizeof(gid));
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", rem.lid, rem.qpn, rem.psn,
	       gid);

	c->pending = PINGPONG_RECV_WRID;
	if (o->servername) {
		char *payload = c->buf + (o->mode == PP_UD ? PP_GRH_BYTES : 0);

		/* rdma-core's --chk: the client writes i / page_size % sizeof(char),
		 * which is 0, at the start of every page; the server checks it. */
		if (o->validate_buf)
			for (unsigned i = 0; i < o->size; i += (unsigned)page_size)
				payload[i] = (char)(i / (unsigned)page_size % sizeof(char));
		if (pp_post_send(c)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		c->pending |= PINGPONG_SEND_WRID;
	}

	if (gettimeofday(&start, NULL)) {
		perror("gettimeofday");
		return 1;
	}
	deadline = deadline_after(o->timeout_s);
	rcnt = scnt = 0;
	while (rcnt < iters || scnt < iters) {
		struct uroce_wc wc[2];
		int ne;

		err = c->on_nic || c->ch ? 0 : uroce_progress(c->ctx);
		if (err < 0) {
			fail_call("uroce_progress", err);
			return 1;
		}
		ne = uroce_poll_cq(c->cq, 2, wc);
		if (ne < 0) {
			fprintf(stderr, "poll CQ failed %d\n", ne);
			return 1;
		}
		if (ne == 0 && c->ch) {
			/* -e: sleep until the CQ's event (bounded by --timeout), take
			 * it, arm again, and poll: what came before the arming is
			 * found then */
			struct pollfd pf = { .fd = uroce_comp_channel_fd(c->ch), .events = POLLIN };
			uint64_t t = now_ns();
			struct uroce_cq *ev_cq;

			if (deadline && t >= deadline) {
				report_stall(o, c, scnt, rcnt);
				return 1;
			}
			if (poll(&pf, 1, deadline ? (int)((deadline - t) / 1000000 + 1) : -1) == 1) {
				if ((err = uroce_get_cq_event(c->ch, &ev_cq, NULL))) {
					fail_call("Failed to get cq_event", err);
					return 1;
				}
				uroce_ack_cq_events(ev_cq, 1);
				if ((err = uroce_req_notify_cq(ev_cq, 0))) {
					fail_call("Couldn't request CQ notification", err);
					return 1;
				}
			}
			continue;
		}
		if (ne == 0) {
			if (deadline && !(++idle & 1023) && now_ns() >= deadline) {
				report_stall(o, c, scnt, rcnt);
				return 1;
			}
			continue;
		}
		for (int i = 0; i < ne; i++) {
			if (parse_single_wc(c, &wc[i], &scnt, &rcnt, &routs, iters)) {
				fprintf(stderr, "parse WC failed %d\n", ne);
				return 1;
			}
		}
		deadline = deadline_after(o->timeout_s);
	}
	if (gettimeofday(&end, NULL)) {
		perror("gettimeofday");
		return 1;
	}

	{
		float usec = (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec);
		long long bytes = (long long)o->size * iters * 2;
		char rel[96] = "", desc[80];

		/* rc: rdma-core's lines as they are; sr/ec name the mode */
		if (o->rel.attr.reliability != UROCE_REL_RC)
			snprintf(rel, sizeof(rel), " (%s)", rel_args_describe(&o->rel.attr, desc, sizeof(desc)));
		printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1000000., bytes * 8. / usec);
		printf("%d iters in %.2f seconds = %.2f usec/iter%s\n", iters, usec / 1000000., usec / iters, rel);
	}

	if (c->full_chk) {
		/* every message was checked on arrival; and exactly iters came */
		if (c->recv_msgs != (unsigned)iters) {
			fprintf(stderr, "%u messages received and checked, expected %d\n", c->recv_msgs, iters);
			return 1;
		}
	} else if (!o->servername && o->validate_buf) {
		const char *payload = c->buf + (o->mode == PP_UD ? PP_GRH_BYTES : 0);
		int bad = 0;

		for (unsigned i = 0; i < o->size; i += (unsigned)page_size)
			if (payload[i] != (char)(i / (unsigned)page_size % sizeof(char))) {
				printf("invalid data in page %u\n", i / (unsigned)page_size);
				bad = 1;
			}
		/* rdma-core only prints; a script wants the exit status too. */
		if (bad)
			return 1;
	}

	if (o->mode == PP_RC && c->ch) {
		/* the engine thread answers the peer's retransmissions meanwhile */
		nanosleep(&(struct timespec){ 0, (long)PP_RC_LINGER_QUIET_NS }, NULL);
	} else if (o->mode == PP_RC && !c->on_nic) { /* on a NIC, the NIC answers the peer's retransmissions */
		uint64_t t = now_ns(), quiet_until = t + PP_RC_LINGER_QUIET_NS, stop = t + PP_RC_LINGER_MAX_NS;

		while ((t = now_ns()) < quiet_until && t < stop) {
			int n = uroce_progress(c->ctx);

			if (n < 0)
				break;
			if (n > 0) /* the peer still sends: it has not had our last ACK */
				quiet_until = t + PP_RC_LINGER_QUIET_NS;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct pp_ctx c;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	page_size = sysconf(_SC_PAGESIZE);
	if (page_size <= 0)
		page_size = 4096;
	parse_args(argc, argv, &o);
	srand48((long)getpid() * (long)time(NULL));

	memset(&c, 0, sizeof(c));
	rc = run(&o, &c);
	if (o.counters && c.qp)
		app_counters_print(stdout, &c.qp, 1, c.ctx, (uint8_t)o.ib_port);
	if (c.pcap_on)
		app_pcap_stop("uroce-pingpong", c.ctx, (uint8_t)o.ib_port, o.pcap_path, stdout);
	pp_close_ctx(&c);
	free(o.port_spec_buf);
	return rc;
}
