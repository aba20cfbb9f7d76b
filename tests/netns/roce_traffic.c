/* SPDX-License-Identifier: MIT */
/* Integration-test traffic tool: sends or receives RoCEv2 frames through any
 * uroce port (afxdp, dpdk, loop) and checks that every frame arrived once
 * and intact. Each frame carries its own sequence number and a hash of its
 * payload, so the receiver needs nothing but the frames to judge them.
 *
 *   roce_traffic send --port SPEC --count N --dst-ip A.B.C.D [options] [-- EAL args]
 *   roce_traffic recv --port SPEC --count N [options] [-- EAL args]
 *   roce_traffic hold --port SPEC [options]     (keep the port open until killed)
 * Run with --help for the options.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataplane/port.h"
#include "dataplane/wire.h"
#include "uroce_config.h"
#if UROCE_HAVE_AFXDP
#include "dataplane/neigh.h"
#include "dataplane/port_afxdp.h"
#endif
#if UROCE_HAVE_DPDK
#include "dataplane/port_dpdk.h"
#endif

#define BURST 32u
/* Payload head: sequence number (8), hash (8). */
#define HDR_SEQ 0u
#define HDR_HASH 8u
#define PAYLOAD_MIN 16u
#define PAYLOAD_MAX_DEFAULT 4000u
/* Headers in front of the payload for the largest mix member: IPv6 +
 * 802.1Q, BTH + RETH + ImmDt, then pad and ICRC. Used to cap the payload
 * by the port's MTU. */
#define L3_OVERHEAD_MAX (IPV6_HDR_LEN + UDP_HDR_LEN + BTH_LEN + RETH_LEN + IMMDT_LEN + 3u + ICRC_LEN)
#define ACK_QPN 0x5a5a5au /* destination QP of the receiver's credit ACKs */
#define VLAN_TCI 100u
/* A receiver with credit to report and no frame for this long sends it,
 * so the sender's last partial window is never held back. */
#define IDLE_ACK_US 200u

enum mode { MODE_SEND, MODE_RECV, MODE_HOLD };
enum l3mix { L3_V4, L3_V6, L3_MIX };

struct opts {
	enum mode mode;
	const char *port_spec;
	uint64_t count;
	uint64_t seed;
	uint32_t ip_be;
	uint32_t dst_ip_be;
	uint8_t dst_mac[6];
	bool have_dst_mac;
	uint32_t min_payload, max_payload;
	bool max_payload_set;
	enum l3mix l3;
	uint16_t dport;
	uint16_t extra_port;
	uint32_t window;
	long timeout_ms;
	long idle_ms;
	long linger_ms;
	const char *ready_file;
	uint32_t frame_size, nframes;
	bool force_copy, force_skb;
	bool quiet;
	int eal_argc;
	char **eal_argv;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("roce_traffic: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(roce_traffic --help lists the options)\n", stderr);
	exit(2);
}

static void usage(void)
{
	puts("usage: roce_traffic send|recv|hold --port SPEC [options] [-- EAL arguments]\n"
	     "  --port SPEC         afxdp:IFACE[:QUEUE], dpdk[:PORTID] or loop:INDEX\n"
	     "  --count N           frames to send / expect (1..1000000000, default 1000)\n"
	     "  --ip A.B.C.D        this port's IPv4 address (frames' source; DPDK answers ARP for it);\n"
	     "                      default: the interface's address\n"
	     "  --dst-ip A.B.C.D    send: the receiver's IPv4 address\n"
	     "  --dst-mac MAC       send: the receiver's MAC (default: the kernel's neighbour table;\n"
	     "                      a dpdk port asks by ARP)\n"
	     "  --seed S            send: PRNG seed for sizes, opcodes and payload (default 1)\n"
	     "  --min-payload B     send: smallest payload, >= 16 (default 16)\n"
	     "  --max-payload B     send: largest payload (default: 4000, capped by the MTU)\n"
	     "  --l3 v4|v6|mix      send: IPv4, IPv6, or both with and without an 802.1Q tag (default v4)\n"
	     "  --dport P           send: UDP destination port (default 4791)\n"
	     "  --extra-port P      second UDP port the port steers and the parser accepts (default none)\n"
	     "  --window W          credit window: at most W frames unacknowledged (default 0 = off);\n"
	     "                      the receiver must be given the same --window\n"
	     "  --timeout-ms T      hard limit on the whole run (default 60000)\n"
	     "  --idle-ms I         recv: stop I ms after the last frame; send: give up waiting for\n"
	     "                      credit after I ms (default 2000)\n"
	     "  --linger-ms L       send: keep polling L ms after the last frame (default 200)\n"
	     "  --ready-file F      create F once the port is open\n"
	     "  --frame-size B, --nframes N, --force-copy, --skb   afxdp port options\n"
	     "  --quiet             only the summary line\n"
	     "Exit status: 0 all frames intact (recv) / all sent (send), 1 failure, 2 usage.");
}

static uint64_t parse_num(const char *opt, const char *v, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long n;

	if (!*v || *v == '-')
		die_usage("%s '%s': not a number (accepted: %" PRIu64 "-%" PRIu64 ")", opt, v, min, max);
	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || *end || n < min || n > max)
		die_usage("%s '%s': not a number in %" PRIu64 "-%" PRIu64, opt, v, min, max);
	return n;
}

static uint32_t parse_ipv4(const char *opt, const char *v)
{
	struct in_addr a;

	if (inet_pton(AF_INET, v, &a) != 1 || !a.s_addr)
		die_usage("%s '%s': not an IPv4 address A.B.C.D", opt, v);
	return a.s_addr;
}

static void parse_mac(const char *v, uint8_t mac[6])
{
	unsigned m[6];
	char tail;

	if (sscanf(v, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) != 6)
		die_usage("--dst-mac '%s': not a MAC address xx:xx:xx:xx:xx:xx", v);
	for (int i = 0; i < 6; i++) {
		if (m[i] > 255)
			die_usage("--dst-mac '%s': byte %d out of range", v, i + 1);
		mac[i] = (uint8_t)m[i];
	}
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_PORT = 256, O_COUNT, O_IP, O_DST_IP, O_DST_MAC, O_SEED, O_MINP, O_MAXP, O_L3, O_DPORT,
	       O_EXTRA, O_WINDOW, O_TIMEOUT, O_IDLE, O_LINGER, O_READY, O_FRAME, O_NFRAMES, O_COPY, O_SKB,
	       O_QUIET, O_HELP };
	static const struct option lo[] = {
		{ "port", required_argument, 0, O_PORT },
		{ "count", required_argument, 0, O_COUNT },
		{ "ip", required_argument, 0, O_IP },
		{ "dst-ip", required_argument, 0, O_DST_IP },
		{ "dst-mac", required_argument, 0, O_DST_MAC },
		{ "seed", required_argument, 0, O_SEED },
		{ "min-payload", required_argument, 0, O_MINP },
		{ "max-payload", required_argument, 0, O_MAXP },
		{ "l3", required_argument, 0, O_L3 },
		{ "dport", required_argument, 0, O_DPORT },
		{ "extra-port", required_argument, 0, O_EXTRA },
		{ "window", required_argument, 0, O_WINDOW },
		{ "timeout-ms", required_argument, 0, O_TIMEOUT },
		{ "idle-ms", required_argument, 0, O_IDLE },
		{ "linger-ms", required_argument, 0, O_LINGER },
		{ "ready-file", required_argument, 0, O_READY },
		{ "frame-size", required_argument, 0, O_FRAME },
		{ "nframes", required_argument, 0, O_NFRAMES },
		{ "force-copy", no_argument, 0, O_COPY },
		{ "skb", no_argument, 0, O_SKB },
		{ "quiet", no_argument, 0, O_QUIET },
		{ "help", no_argument, 0, O_HELP },
		{ 0, 0, 0, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->count = 1000;
	o->seed = 1;
	o->min_payload = PAYLOAD_MIN;
	o->max_payload = PAYLOAD_MAX_DEFAULT;
	o->dport = ROCE_UDP_PORT;
	o->timeout_ms = 60000;
	o->idle_ms = 2000;
	o->linger_ms = 200;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage();
		exit(0);
	}
	if (argc < 2)
		die_usage("missing mode: send, recv or hold");
	if (!strcmp(argv[1], "send"))
		o->mode = MODE_SEND;
	else if (!strcmp(argv[1], "recv"))
		o->mode = MODE_RECV;
	else if (!strcmp(argv[1], "hold"))
		o->mode = MODE_HOLD;
	else
		die_usage("unknown mode '%s'; accepted: send, recv, hold", argv[1]);

	optind = 2;
	while ((c = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		switch (c) {
		case O_PORT: o->port_spec = optarg; break;
		case O_COUNT: o->count = parse_num("--count", optarg, 1, 1000000000); break;
		case O_IP: o->ip_be = parse_ipv4("--ip", optarg); break;
		case O_DST_IP: o->dst_ip_be = parse_ipv4("--dst-ip", optarg); break;
		case O_DST_MAC: parse_mac(optarg, o->dst_mac); o->have_dst_mac = true; break;
		case O_SEED: o->seed = parse_num("--seed", optarg, 0, UINT64_MAX); break;
		case O_MINP: o->min_payload = (uint32_t)parse_num("--min-payload", optarg, PAYLOAD_MIN, 65000); break;
		case O_MAXP:
			o->max_payload = (uint32_t)parse_num("--max-payload", optarg, PAYLOAD_MIN, 65000);
			o->max_payload_set = true;
			break;
		case O_L3:
			if (!strcmp(optarg, "v4"))
				o->l3 = L3_V4;
			else if (!strcmp(optarg, "v6"))
				o->l3 = L3_V6;
			else if (!strcmp(optarg, "mix"))
				o->l3 = L3_MIX;
			else
				die_usage("--l3 '%s': accepted: v4, v6, mix", optarg);
			break;
		case O_DPORT: o->dport = (uint16_t)parse_num("--dport", optarg, 1, 65535); break;
		case O_EXTRA: o->extra_port = (uint16_t)parse_num("--extra-port", optarg, 1, 65535); break;
		case O_WINDOW: o->window = (uint32_t)parse_num("--window", optarg, 0, 1u << 20); break;
		case O_TIMEOUT: o->timeout_ms = (long)parse_num("--timeout-ms", optarg, 1, 3600000); break;
		case O_IDLE: o->idle_ms = (long)parse_num("--idle-ms", optarg, 1, 3600000); break;
		case O_LINGER: o->linger_ms = (long)parse_num("--linger-ms", optarg, 0, 60000); break;
		case O_READY: o->ready_file = optarg; break;
		case O_FRAME: o->frame_size = (uint32_t)parse_num("--frame-size", optarg, 1, 1u << 20); break;
		case O_NFRAMES: o->nframes = (uint32_t)parse_num("--nframes", optarg, 1, 1u << 24); break;
		case O_COPY: o->force_copy = true; break;
		case O_SKB: o->force_skb = true; break;
		case O_QUIET: o->quiet = true; break;
		case 'h':
		case O_HELP: usage(); exit(0);
		default: die_usage("bad option");
		}
	}
	/* Everything after "--" goes to the DPDK EAL, behind our argv[0]. */
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			die_usage("unexpected argument '%s' (EAL arguments go after --)", argv[optind]);
		o->eal_argc = argc - optind + 1;
		o->eal_argv = calloc((size_t)o->eal_argc + 1, sizeof(char *));
		if (!o->eal_argv)
			die_usage("out of memory");
		o->eal_argv[0] = argv[0];
		for (int i = 1; i < o->eal_argc; i++)
			o->eal_argv[i] = argv[optind + i - 1];
	}
	if (!o->port_spec)
		die_usage("--port is required (e.g. --port afxdp:veth0)");
	if (o->min_payload > o->max_payload)
		die_usage("--min-payload %u is larger than --max-payload %u", o->min_payload, o->max_payload);
	if (o->mode == MODE_SEND && !o->dst_ip_be)
		die_usage("send needs --dst-ip");
}

/* ----------------------------------------------------------- frame content */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Hash of a frame's identity and payload (past the hash field itself),
 * word by word: independent of the ICRC, so a frame whose ICRC was
 * recomputed over damaged data is still caught. */
static uint64_t payload_hash(uint64_t seq, uint8_t opcode, const uint8_t *pl, uint32_t len)
{
	uint64_t h = mix64(seq ^ ((uint64_t)opcode << 56) ^ ((uint64_t)len << 32));
	uint32_t i = HDR_HASH + 8;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, pl + i, 8);
		h = mix64(h ^ w);
	}
	for (; i < len; i++)
		h = mix64(h ^ pl[i]);
	return h;
}

/* Self-contained opcodes that carry payload, across RC, UC and UD and
 * every extension header that can come with one. */
static const uint8_t op_mix[] = {
	ROCE_TR_RC | ROCE_OP_SEND_ONLY,      ROCE_TR_RC | ROCE_OP_SEND_ONLY_IMM,
	ROCE_TR_RC | ROCE_OP_WRITE_ONLY,     ROCE_TR_RC | ROCE_OP_WRITE_ONLY_IMM,
	ROCE_TR_RC | ROCE_OP_READ_RESP_ONLY, ROCE_TR_RC | ROCE_OP_SEND_ONLY_INV,
	ROCE_TR_UC | ROCE_OP_SEND_ONLY,      ROCE_TR_UC | ROCE_OP_WRITE_ONLY_IMM,
	ROCE_TR_UD | ROCE_OP_SEND_ONLY,      ROCE_TR_UD | ROCE_OP_SEND_ONLY_IMM,
};

struct peer {
	uint8_t smac[6], dmac[6];
	uint32_t sip_be, dip_be;
};

static void ipv6_of(uint8_t out[16], uint32_t v4_be)
{
	/* fd00::/8 unique-local, carrying the IPv4 address: enough for a
	 * test frame, which no IPv6 stack ever sees (XDP takes it). */
	static const uint8_t pfx[12] = { 0xfd, 0x75, 0x72, 0x6f, 0x63, 0x65 };
	memcpy(out, pfx, 12);
	memcpy(out + 12, &v4_be, 4);
}

/* Build frame seq into buf (room bytes). Returns the frame length or a
 * negative errno. */
static int build_frame(const struct opts *o, const struct peer *pe, uint64_t seq, uint8_t *buf, uint32_t room)
{
	uint64_t r = mix64(o->seed * 0x9e3779b97f4a7c15ull + seq);
	struct roce_pkt pkt;
	uint32_t span = o->max_payload - o->min_payload + 1, hdr;
	uint8_t *pl;
	int len;

	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.dmac, pe->dmac, 6);
	memcpy(pkt.smac, pe->smac, 6);
	switch (o->l3) {
	case L3_V4: pkt.ipv6 = false; break;
	case L3_V6: pkt.ipv6 = true; break;
	case L3_MIX:
		pkt.ipv6 = (r >> 8) & 1;
		pkt.has_vlan = ((r >> 9) & 3) == 0;
		break;
	}
	if (pkt.has_vlan)
		pkt.vlan_tci = VLAN_TCI;
	if (pkt.ipv6) {
		ipv6_of(pkt.sip, pe->sip_be);
		ipv6_of(pkt.dip, pe->dip_be);
		pkt.flow_label = (uint32_t)(r >> 40) & 0xfffff;
	} else {
		roce_ipv4_mapped(pkt.sip, pe->sip_be);
		roce_ipv4_mapped(pkt.dip, pe->dip_be);
		pkt.dont_fragment = true;
		pkt.ip_id = (uint16_t)seq;
	}
	pkt.ttl = 64;
	pkt.sport = (uint16_t)(0xc000 | (seq & 0x3fff));
	pkt.dport = o->dport;
	pkt.opcode = op_mix[(r >> 16) % sizeof(op_mix)];
	pkt.pkey = ROCE_PKEY_DEFAULT;
	pkt.dqpn = 0x000100 + (uint32_t)(seq % 7);
	pkt.psn = (uint32_t)seq & ROCE_PSN_MASK;
	pkt.ackreq = (seq & 15) == 0;
	pkt.reth.va = 0x10000000ull + seq * 64;
	pkt.reth.rkey = 0xabcd;
	pkt.imm = (uint32_t)seq;
	pkt.deth.qkey = 0x11111111;
	pkt.deth.src_qp = 0x22;
	pkt.ieth_rkey = 0x3333;
	pkt.aeth.syndrome = AETH_ACK_UNLIMITED;
	pkt.aeth.msn = (uint32_t)seq & 0xffffff;
	pkt.payload_len = o->min_payload + (uint32_t)((r >> 24) % span);
	pkt.reth.dma_len = pkt.payload_len;
	pkt.payload = NULL; /* written in place below */

	hdr = roce_hdr_len(&pkt);
	if (!hdr || hdr + pkt.payload_len + 3 + ICRC_LEN > room)
		return -ENOSPC;
	pl = buf + hdr;
	roce_put_be64(pl + HDR_SEQ, seq);
	{
		uint64_t s = r;
		uint32_t i = HDR_HASH + 8;

		for (; i + 8 <= pkt.payload_len; i += 8) {
			s = mix64(s + 0x9e3779b97f4a7c15ull);
			memcpy(pl + i, &s, 8);
		}
		for (; i < pkt.payload_len; i++)
			pl[i] = (uint8_t)(s >> (8 * (i & 7)));
	}
	uint64_t h = payload_hash(seq, pkt.opcode, pl, pkt.payload_len);
	memcpy(pl + HDR_HASH, &h, 8);
	len = roce_build(buf, room, &pkt);
	return len;
}

static int build_ack(const struct peer *pe, bool ipv6, uint64_t delivered, uint8_t *buf, uint32_t room)
{
	struct roce_pkt pkt;

	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.dmac, pe->dmac, 6);
	memcpy(pkt.smac, pe->smac, 6);
	pkt.ipv6 = ipv6;
	if (ipv6) {
		ipv6_of(pkt.sip, pe->sip_be);
		ipv6_of(pkt.dip, pe->dip_be);
	} else {
		roce_ipv4_mapped(pkt.sip, pe->sip_be);
		roce_ipv4_mapped(pkt.dip, pe->dip_be);
		pkt.dont_fragment = true;
	}
	pkt.ttl = 64;
	pkt.sport = 0xc000;
	pkt.dport = ROCE_UDP_PORT;
	pkt.opcode = ROCE_TR_RC | ROCE_OP_ACK;
	pkt.pkey = ROCE_PKEY_DEFAULT;
	pkt.dqpn = ACK_QPN;
	pkt.psn = (uint32_t)delivered & ROCE_PSN_MASK;
	pkt.aeth.syndrome = AETH_ACK_UNLIMITED;
	pkt.aeth.msn = (uint32_t)delivered & 0xffffff;
	return roce_build(buf, room, &pkt);
}

/* ------------------------------------------------------------------ common */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static const char *mode_name(enum mode m)
{
	return m == MODE_SEND ? "send" : m == MODE_RECV ? "recv" : "hold";
}

static int open_port(const struct opts *o, struct port **pp)
{
	struct port_config cfg;
	char err[512];
	int rc;

	rc = port_config_parse(o->port_spec, &cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "roce_traffic: %s\n", err);
		return rc;
	}
	cfg.frame_size = o->frame_size;
	cfg.nframes = o->nframes;
	cfg.extra_udp_port = o->extra_port;
	cfg.force_copy = o->force_copy;
	cfg.force_skb = cfg.force_skb || o->force_skb; /* the spec's :generic, or --skb */
	cfg.ipv4_be = o->ip_be;
	cfg.eal_argc = o->eal_argc;
	cfg.eal_argv = o->eal_argv;
	rc = port_open(pp, &cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "roce_traffic: cannot open port %s: %s\n", o->port_spec, err);
		return rc;
	}
	if (!o->quiet) {
		struct port *p = *pp;
		char ip[INET_ADDRSTRLEN] = "-";

		if (p->ipv4_be)
			inet_ntop(AF_INET, &p->ipv4_be, ip, sizeof(ip));
		fprintf(stderr,
			"roce_traffic: %s: port %s open: mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u ip %s link %s",
			mode_name(o->mode), o->port_spec, p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4],
			p->mac[5], p->mtu, ip, port_link_up(p) ? "up" : "down");
#if UROCE_HAVE_AFXDP
		struct port_afxdp_info ai;
		if (port_afxdp_info(p, &ai) == 0)
			fprintf(stderr, " (afxdp: %s, %s%s, XDP prog %u %s%s, %u frames of %u B)",
				ai.zero_copy ? "zero-copy" : "copy mode", ai.multi_buffer ? "multi-buffer, " : "",
				ai.skb_mode ? "skb XDP" : "native XDP", ai.prog_id,
				ai.prog_owner ? "attached by us" : "shared", "", ai.nframes, ai.frame_room);
#endif
		fputc('\n', stderr);
		if (p->note[0])
			fprintf(stderr, "roce_traffic: port %s: %s\n", o->port_spec, p->note);
	}
	if (o->ready_file) {
		FILE *f = fopen(o->ready_file, "w");

		if (!f || fclose(f)) {
			fprintf(stderr, "roce_traffic: cannot create %s: %s\n", o->ready_file, strerror(errno));
			port_close(*pp);
			return -errno;
		}
	}
	return 0;
}

static void print_drops(const struct port *p)
{
	bool any = false;

	for (int r = 1; r < UROCE_DROP__COUNT; r++) {
		if (!p->stats.drops[r])
			continue;
		printf("%s%s=%" PRIu64, any ? "," : " port_drops=", uroce_drop_reason_name((enum uroce_drop_reason)r),
		       p->stats.drops[r]);
		any = true;
	}
}

/* -------------------------------------------------------------------- send */

struct send_state {
	uint64_t built, sent;
	uint64_t acked;      /* frames counted as delivered: reported + written off */
	uint64_t reported;   /* frames the receiver said it has taken */
	uint64_t written_off; /* frames given up on at credit stalls (lost) */
	uint64_t credit_stalls;
	uint64_t last_ack_ms;
};

/* Credit ACKs from the receiver: AETH MSN = frames it has taken, mod 2^24. */
static void send_drain_rx(struct port *p, struct send_state *s, const struct roce_parse_opts *popts)
{
	struct uroce_frame f[BURST];
	uint16_t n = port_rx_burst(p, f, BURST);

	for (uint16_t i = 0; i < n; i++) {
		struct roce_pkt pkt;

		if (roce_parse(f[i].data, f[i].len, &pkt, popts) == UROCE_DROP_NONE &&
		    pkt.opcode == (ROCE_TR_RC | ROCE_OP_ACK) && pkt.dqpn == ACK_QPN) {
			/* The largest count <= what could have arrived that
			 * matches the 24 bits on the wire. */
			uint64_t top = s->built - s->written_off;
			uint64_t rep = top - ((top - pkt.aeth.msn) & 0xffffff);

			if (rep > s->reported && rep <= top) {
				s->reported = rep;
				s->acked = rep + s->written_off;
				s->last_ack_ms = now_ms();
			}
		}
	}
	if (n)
		port_free(p, f, n);
}

static int do_send(const struct opts *o, struct port *p)
{
	struct roce_parse_opts popts = { .extra_port = o->extra_port };
	struct uroce_frame pend[BURST];
	struct send_state s = { 0 };
	struct peer pe;
	uint16_t npend = 0;
	uint64_t t0 = now_ms(), deadline = t0 + (uint64_t)o->timeout_ms, t = t0, tx_start;
	struct opts eff = *o;
	int rc = 0;

	memcpy(pe.smac, p->mac, 6);
	pe.sip_be = o->ip_be ? o->ip_be : p->ipv4_be;
	pe.dip_be = o->dst_ip_be;
	if (!pe.sip_be) {
		fprintf(stderr, "roce_traffic: %s has no IPv4 address; give one with --ip\n", o->port_spec);
		return 1;
	}
	if (o->have_dst_mac) {
		memcpy(pe.dmac, o->dst_mac, 6);
#if UROCE_HAVE_DPDK
	} else if (p->cfg.kind == PORT_KIND_DPDK) {
		/* No kernel stack on a DPDK link: the port asks by ARP itself. */
		rc = port_dpdk_resolve(p, pe.dip_be, pe.dmac, 3000);
		if (rc) {
			char ip[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &pe.dip_be, ip, sizeof(ip));
			fprintf(stderr, "roce_traffic: no ARP reply from %s: %s\n", ip, strerror(-rc));
			return 1;
		}
#endif
	} else {
#if UROCE_HAVE_AFXDP
		uint8_t ip16[16];

		if (!p->ifindex) {
			fprintf(stderr, "roce_traffic: port %s has no kernel interface to resolve --dst-ip with; "
					"give --dst-mac\n", o->port_spec);
			return 1;
		}
		roce_ipv4_mapped(ip16, pe.dip_be);
		rc = neigh_resolve(p->ifindex, ip16, pe.dmac, 3000);
		if (rc) {
			char ip[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &pe.dip_be, ip, sizeof(ip));
			fprintf(stderr, "roce_traffic: cannot resolve the MAC of %s: %s\n", ip, strerror(-rc));
			return 1;
		}
#else
		fprintf(stderr, "roce_traffic: give --dst-mac (no neighbour lookup without the afxdp backend)\n");
		return 1;
#endif
	}
	/* Frames must fit the link: cap the payload unless it was asked for
	 * explicitly, in which case an oversize frame is the user's test. */
	if (!o->max_payload_set && p->mtu && p->mtu > L3_OVERHEAD_MAX + PAYLOAD_MIN &&
	    eff.max_payload > p->mtu - L3_OVERHEAD_MAX)
		eff.max_payload = p->mtu - L3_OVERHEAD_MAX;
	if (eff.min_payload > eff.max_payload)
		eff.min_payload = eff.max_payload;
	if (!o->quiet)
		fprintf(stderr, "roce_traffic: send: %" PRIu64 " frames, payload %u-%u, dst %02x:%02x:%02x:%02x:%02x:%02x\n",
			o->count, eff.min_payload, eff.max_payload, pe.dmac[0], pe.dmac[1], pe.dmac[2], pe.dmac[3],
			pe.dmac[4], pe.dmac[5]);

	tx_start = now_ms();
	s.last_ack_ms = tx_start;
	while (s.sent < o->count && !stop_flag) {
		port_poll(p);
		send_drain_rx(p, &s, &popts);
		t = now_ms();
		if (t >= deadline) {
			fprintf(stderr, "roce_traffic: send: time limit (%ld ms) reached\n", o->timeout_ms);
			rc = 1;
			break;
		}
		if (!npend && s.built < o->count) {
			uint64_t want = o->count - s.built;

			if (want > BURST)
				want = BURST;
			if (o->window) {
				uint64_t inflight = s.built - s.acked;

				/* The receiver cannot report frames that were
				 * lost: after idle-ms without credit, count
				 * them as gone and carry on. */
				if (inflight >= o->window && t - s.last_ack_ms >= (uint64_t)o->idle_ms) {
					s.credit_stalls++;
					s.written_off = s.built - s.reported;
					s.acked = s.built;
					s.last_ack_ms = t;
					inflight = 0;
				}
				want = inflight >= o->window ? 0 : want < o->window - inflight ? want : o->window - inflight;
			}
			npend = want ? port_alloc(p, pend, (uint16_t)want) : 0;
			for (uint16_t i = 0; i < npend; i++) {
				int len = build_frame(&eff, &pe, s.built + i, pend[i].data, pend[i].room);

				if (len < 0) {
					fprintf(stderr, "roce_traffic: frame %" PRIu64 " does not fit a %u-byte port frame\n",
						s.built + i, pend[i].room);
					port_free(p, pend, npend);
					rc = 1;
					goto out;
				}
				pend[i].len = (uint32_t)len;
			}
			s.built += npend;
		}
		if (npend) {
			/* Pacing by ring space: what the ring refuses stays
			 * here and goes first next time. */
			uint16_t k = port_tx_burst(p, pend, npend);

			if (k && k < npend)
				memmove(pend, pend + k, (size_t)(npend - k) * sizeof(pend[0]));
			npend = (uint16_t)(npend - k);
			s.sent += k;
		}
	}
	if (npend)
		port_free(p, pend, npend);

	/* Let the port finish the ring (and, with credit, hear the last ACK). */
	{
		uint64_t end = now_ms() + (uint64_t)o->linger_ms;

		for (;;) {
			port_poll(p);
			send_drain_rx(p, &s, &popts);
			t = now_ms();
			if (t >= deadline || stop_flag)
				break;
			if (!o->window && t >= end)
				break;
			if (o->window && ((s.acked >= s.built && t >= end) || t - s.last_ack_ms >= (uint64_t)o->idle_ms))
				break;
		}
	}
out:
	{
		double secs = (double)(t - tx_start) / 1000.0;

		printf("send: sent=%" PRIu64 "/%" PRIu64 " acked=%" PRIu64 " credit_stalls=%" PRIu64
		       " acks_in=%" PRIu64 " bytes=%" PRIu64 " seconds=%.3f mpps=%.3f",
		       s.sent, o->count, s.acked, s.credit_stalls, p->stats.rx_packets, p->stats.tx_bytes, secs,
		       secs > 0 ? (double)s.sent / secs / 1e6 : 0.0);
		print_drops(p);
		putchar('\n');
	}
	if (s.sent < o->count)
		rc = 1;
	return rc;
}

/* -------------------------------------------------------------------- recv */

struct recv_state {
	uint8_t *seen; /* one bit per sequence number */
	uint64_t intact, dup, corrupt, ooo, other;
	uint64_t next_expected; /* one past the highest sequence number seen */
	uint64_t acked_sent;
	bool have_peer, peer_v6;
	struct peer pe; /* towards the sender, for credit ACKs */
};

static void recv_send_ack(struct port *p, struct recv_state *r)
{
	struct uroce_frame f;

	if (!r->have_peer || port_alloc(p, &f, 1) != 1)
		return;
	int len = build_ack(&r->pe, r->peer_v6, r->intact + r->dup + r->corrupt, f.data, f.room);
	if (len < 0) {
		port_free(p, &f, 1);
		return;
	}
	f.len = (uint32_t)len;
	if (port_tx_burst(p, &f, 1) != 1) {
		port_free(p, &f, 1);
		return;
	}
	r->acked_sent = r->intact + r->dup + r->corrupt;
}

static void recv_one(const struct opts *o, struct port *p, struct recv_state *r, const struct uroce_frame *f,
		     const struct roce_parse_opts *popts)
{
	struct roce_pkt pkt;
	enum uroce_drop_reason why = roce_parse(f->data, f->len, &pkt, popts);
	uint64_t seq, h;

	switch (why) {
	case UROCE_DROP_NONE:
		break;
	case UROCE_DROP_NOT_IP:
	case UROCE_DROP_NOT_UDP:
	case UROCE_DROP_WRONG_PORT:
		/* Not RoCE at all (a DPDK port sees ARP, IPv6 ND...). */
		r->other++;
		return;
	default:
		r->corrupt++;
		return;
	}
	if (pkt.opcode == (ROCE_TR_RC | ROCE_OP_ACK) && pkt.dqpn == ACK_QPN) {
		r->other++;
		return;
	}
	if (pkt.payload_len < PAYLOAD_MIN) {
		r->corrupt++;
		return;
	}
	seq = roce_get_be64(pkt.payload + HDR_SEQ);
	memcpy(&h, pkt.payload + HDR_HASH, 8);
	if (seq >= o->count || h != payload_hash(seq, pkt.opcode, pkt.payload, pkt.payload_len) ||
	    pkt.psn != (seq & ROCE_PSN_MASK)) {
		r->corrupt++;
		return;
	}
	if (r->seen[seq / 8] & (1u << (seq % 8))) {
		r->dup++;
		return;
	}
	r->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
	/* Behind a frame already seen: reordered (a gap alone is loss). */
	if (seq < r->next_expected)
		r->ooo++;
	else
		r->next_expected = seq + 1;
	r->intact++;
	if (!r->have_peer) {
		r->have_peer = true;
		memcpy(r->pe.dmac, pkt.smac, 6);
		memcpy(r->pe.smac, p->mac, 6);
		r->peer_v6 = pkt.ipv6;
		/* ACKs carry the reverse of the addresses the frame came
		 * with; both forms keep the IPv4 address in the last 4 bytes. */
		memcpy(&r->pe.sip_be, pkt.dip + 12, 4);
		memcpy(&r->pe.dip_be, pkt.sip + 12, 4);
	}
}

static int do_recv(const struct opts *o, struct port *p)
{
	struct roce_parse_opts popts = { .extra_port = o->extra_port };
	struct recv_state r = { 0 };
	struct uroce_frame f[BURST];
	uint64_t t0 = now_ms(), deadline = t0 + (uint64_t)o->timeout_ms, t = t0, first = 0, last = 0;
	uint64_t bytes = 0, last_rx_us = 0;
	int rc;

	r.seen = calloc((size_t)(o->count + 7) / 8, 1);
	if (!r.seen) {
		fprintf(stderr, "roce_traffic: out of memory for %" PRIu64 " sequence numbers\n", o->count);
		return 1;
	}
	while (!stop_flag) {
		uint16_t n;

		port_poll(p);
		n = port_rx_burst(p, f, BURST);
		t = now_ms();
		if (n) {
			if (!first)
				first = t;
			last = t;
			last_rx_us = now_us();
			for (uint16_t i = 0; i < n; i++) {
				bytes += f[i].len;
				recv_one(o, p, &r, &f[i], &popts);
			}
			port_free(p, f, n);
			if (o->window && r.intact + r.dup + r.corrupt - r.acked_sent >= (o->window + 3) / 4)
				recv_send_ack(p, &r);
		} else if (o->window && r.intact + r.dup + r.corrupt != r.acked_sent &&
			   now_us() - last_rx_us >= IDLE_ACK_US) {
			/* Quiet now: report the tail so the sender never waits
			 * on credit we hold. */
			recv_send_ack(p, &r);
		}
		if (r.intact >= o->count)
			break;
		if (t >= deadline)
			break;
		if (first && t - last >= (uint64_t)o->idle_ms)
			break;
	}
	/* The last ACK has to leave the ring before the port closes. */
	if (o->window) {
		recv_send_ack(p, &r);
		for (uint64_t end = now_ms() + 50; now_ms() < end;)
			port_poll(p);
	}

	uint64_t lost = o->count - r.intact;
	double secs = last > first ? (double)(last - first) / 1000.0 : 0.0;

	rc = (lost || r.dup || r.corrupt) ? 1 : 0;
	printf("recv: %s intact=%" PRIu64 "/%" PRIu64 " lost=%" PRIu64 " dup=%" PRIu64 " corrupt=%" PRIu64
	       " out_of_order=%" PRIu64 " other=%" PRIu64 " bytes=%" PRIu64 " seconds=%.3f mpps=%.3f",
	       rc ? "FAIL" : "OK", r.intact, o->count, lost, r.dup, r.corrupt, r.ooo, r.other, bytes, secs,
	       secs > 0 ? (double)r.intact / secs / 1e6 : 0.0);
	print_drops(p);
	if (t >= deadline && r.intact < o->count)
		printf(" (time limit %ld ms)", o->timeout_ms);
	else if (!first)
		printf(" (no frame arrived)");
	putchar('\n');
	free(r.seen);
	return rc;
}

/* -------------------------------------------------------------------- hold */

/* Keep the port (and its XDP program) in place, returning whatever arrives,
 * until a signal or the time limit: for checks of the kernel's own traffic
 * next to ours. */
static int do_hold(const struct opts *o, struct port *p)
{
	uint64_t deadline = now_ms() + (uint64_t)o->timeout_ms, got = 0;
	struct uroce_frame f[BURST];

	while (!stop_flag && now_ms() < deadline) {
		uint16_t n;

		port_poll(p);
		n = port_rx_burst(p, f, BURST);
		if (n) {
			got += n;
			port_free(p, f, n);
		} else {
			usleep(1000);
		}
	}
	printf("hold: frames=%" PRIu64, got);
	print_drops(p);
	putchar('\n');
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct port *p;
	struct sigaction sa;
	int rc;

	parse_args(argc, argv, &o);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (open_port(&o, &p))
		return 1;
	switch (o.mode) {
	case MODE_SEND: rc = do_send(&o, p); break;
	case MODE_RECV: rc = do_recv(&o, p); break;
	default: rc = do_hold(&o, p); break;
	}
	port_close(p);
	free(o.eal_argv);
	return rc;
}
