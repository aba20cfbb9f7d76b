/* SPDX-License-Identifier: MIT */
/* uroce-perf: transport benchmarks. Mode `raw` measures the port layer:
 * RoCEv2 frames built (headers + ICRC per frame) and sent as fast as the
 * port takes them, and received, parsed and ICRC-checked on the far end.
 *
 *   uroce-perf raw send --port SPEC --dst-ip A.B.C.D [--dst-mac MAC]
 *                       --size BYTES --duration SEC [-- EAL args]
 *   uroce-perf raw recv --port SPEC [--duration SEC] [--idle-ms MS]
 *                       [--pcap FILE [--pcap-count N]] [-- EAL args]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apps/perf.h"
#include "apps/app_version.h"
#include "dataplane/errbuf.h"
#include "dataplane/pcap_file.h"
#include "dataplane/port.h"
#include "dataplane/wire.h"
#if UROCE_HAVE_AFXDP
#include "dataplane/neigh.h"
#endif

#define RAW_MAX_PAYLOAD 8192u
#define RAW_DEFAULT_IDLE_MS 1000u

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct raw_opts {
	const char *port_spec;
	struct port_config cfg;
	uint32_t dst_ip_be;
	uint8_t dst_mac[6];
	int have_dst_mac;
	uint32_t size;
	double duration;
	uint32_t idle_ms;
	uint32_t burst;
	int json;
	const char *pcap_path;
	uint32_t pcap_count;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-perf raw send --port SPEC --dst-ip A.B.C.D [--dst-mac MAC] --size BYTES\n"
		"                           [--duration SEC] [--burst N] [--json] [-- EAL args]\n"
		"       uroce-perf raw recv --port SPEC [--duration SEC] [--idle-ms MS] [--json]\n"
		"                           [--pcap FILE [--pcap-count N]] [-- EAL args]\n"
		"  SPEC: afxdp:IFACE[:QUEUE[:generic]] | dpdk[:PORTID] (EAL args after --)\n"
		"  --size: RDMA payload bytes per frame, 0-%u (RC WRITE ONLY frames)\n"
		"  --duration: seconds to send (default 3); for recv, the longest to wait (default 30)\n"
		"  --burst: frames per burst, 1-%u (default 32)\n"
		"  --pcap: write the first --pcap-count (default 16) received frames to FILE\n"
		"  --json: one JSON object instead of the line of results\n"
		"  --help, --version: this text, the version\n"
		"       uroce-perf write_bw|read_bw|send_bw|write_lat|read_lat|send_lat -d SPEC [options] [SERVER]\n"
		"  perftest-compatible tests; see uroce-perf write_bw --help\n",
		RAW_MAX_PAYLOAD, PORT_BURST_MAX);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -EINVAL;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "uroce-perf: %s '%s' is not a number in %g..%g\n", opt, s, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_raw_args(int argc, char **argv, int sending, struct raw_opts *o)
{
	static const struct option longopts[] = {
		{"port", required_argument, NULL, 'p'},
		{"dst-ip", required_argument, NULL, 'i'},
		{"dst-mac", required_argument, NULL, 'm'},
		{"size", required_argument, NULL, 's'},
		{"duration", required_argument, NULL, 'D'},
		{"idle-ms", required_argument, NULL, 'I'},
		{"burst", required_argument, NULL, 'b'},
		{"json", no_argument, NULL, 'j'},
		{"pcap", required_argument, NULL, 'w'},
		{"pcap-count", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	char err[256];
	double v;
	int c;

	memset(o, 0, sizeof(*o));
	o->duration = sending ? 3.0 : 30.0;
	o->idle_ms = RAW_DEFAULT_IDLE_MS;
	o->burst = 32;
	o->size = UINT32_MAX;
	o->pcap_count = 16;

	int eal_argc = 0;
	char **eal_argv = NULL;
	int nargs = port_split_eal_args(argc, argv, &eal_argc, &eal_argv);

	optind = 1;
	while ((c = getopt_long(nargs, argv, "p:i:m:s:D:I:b:jw:c:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->port_spec = optarg;
			break;
		case 'i': {
			struct in_addr a;
			if (inet_pton(AF_INET, optarg, &a) != 1) {
				fprintf(stderr, "uroce-perf: --dst-ip '%s' is not an IPv4 address (A.B.C.D)\n", optarg);
				return -EINVAL;
			}
			o->dst_ip_be = a.s_addr;
			break;
		}
		case 'm':
			if (parse_mac(optarg, o->dst_mac)) {
				fprintf(stderr, "uroce-perf: --dst-mac '%s' is not a MAC address (aa:bb:cc:dd:ee:ff)\n",
					optarg);
				return -EINVAL;
			}
			o->have_dst_mac = 1;
			break;
		case 's':
			if (parse_num("--size", optarg, 0, RAW_MAX_PAYLOAD, &v))
				return -EINVAL;
			o->size = (uint32_t)v;
			break;
		case 'D':
			if (parse_num("--duration", optarg, 0.1, 3600, &v))
				return -EINVAL;
			o->duration = v;
			break;
		case 'I':
			if (parse_num("--idle-ms", optarg, 10, 600000, &v))
				return -EINVAL;
			o->idle_ms = (uint32_t)v;
			break;
		case 'b':
			if (parse_num("--burst", optarg, 1, PORT_BURST_MAX, &v))
				return -EINVAL;
			o->burst = (uint32_t)v;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'w':
			o->pcap_path = optarg;
			break;
		case 'c':
			if (parse_num("--pcap-count", optarg, 1, 1e9, &v))
				return -EINVAL;
			o->pcap_count = (uint32_t)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			app_print_version("uroce-perf");
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != nargs) {
		fprintf(stderr, "uroce-perf: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->port_spec) {
		fprintf(stderr, "uroce-perf: --port is required (afxdp:IFACE[:QUEUE[:generic]] or dpdk[:PORTID])\n");
		return -EINVAL;
	}
	if (port_config_parse(o->port_spec, &o->cfg, err, sizeof(err))) {
		fprintf(stderr, "uroce-perf: %s\n", err);
		return -EINVAL;
	}
	if (o->cfg.kind == PORT_KIND_LOOP) {
		fprintf(stderr, "uroce-perf: a loop port has no peer outside this process; use afxdp: or dpdk\n");
		return -EINVAL;
	}
	if (o->cfg.kind == PORT_KIND_VERBS) {
		fprintf(stderr, "uroce-perf: raw mode sends and counts frames, and on a verbs port the NIC builds "
		                "them; use afxdp: or dpdk (the perftest modes take verbs:DEV)\n");
		return -EINVAL;
	}
	o->cfg.eal_argc = eal_argc;
	o->cfg.eal_argv = eal_argv;
	if (sending) {
		if (!o->dst_ip_be) {
			fprintf(stderr, "uroce-perf: raw send needs --dst-ip A.B.C.D\n");
			return -EINVAL;
		}
		if (o->size == UINT32_MAX) {
			fprintf(stderr, "uroce-perf: raw send needs --size BYTES (0-%u)\n", RAW_MAX_PAYLOAD);
			return -EINVAL;
		}
	}
	return 0;
}

static int resolve_dst_mac(struct port *p, struct raw_opts *o)
{
	if (o->have_dst_mac)
		return 0;
#if UROCE_HAVE_AFXDP
	if (p->ifindex > 0) {
		uint8_t ip[16];
		roce_ipv4_mapped(ip, o->dst_ip_be);
		int rc = neigh_resolve(p->ifindex, ip, o->dst_mac, 2000);
		if (rc == 0)
			return 0;
		fprintf(stderr, "uroce-perf: cannot resolve the MAC of the destination: %s\n", uroce_strerror(rc));
		return rc;
	}
#endif
	fprintf(stderr, "uroce-perf: this port cannot resolve neighbours; give --dst-mac\n");
	return -EINVAL;
}

static void print_drops(FILE *f, const struct uroce_port_stats *s, int json)
{
	int first = 1;

	for (int r = 1; r < UROCE_DROP__COUNT; r++) {
		if (!s->drops[r])
			continue;
		if (json)
			fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", uroce_drop_reason_name(r), s->drops[r]);
		else
			fprintf(f, " %s=%" PRIu64, uroce_drop_reason_name(r), s->drops[r]);
		first = 0;
	}
	if (first && !json)
		fprintf(f, " none");
}

static int raw_send(struct raw_opts *o)
{
	struct uroce_frame f[PORT_BURST_MAX];
	struct roce_pkt pkt;
	char err[ERRBUF_LEN];
	struct port *p;
	uint64_t sent = 0, t0, t1, deadline;
	uint32_t psn = 0;
	int rc;

	rc = port_open(&p, &o->cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "uroce-perf: cannot open port %s: %s\n", o->port_spec, err);
		return 1;
	}
	if (resolve_dst_mac(p, o)) {
		port_close(p);
		return 1;
	}

	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.smac, p->mac, 6);
	memcpy(pkt.dmac, o->dst_mac, 6);
	roce_ipv4_mapped(pkt.sip, p->ipv4_be);
	roce_ipv4_mapped(pkt.dip, o->dst_ip_be);
	pkt.ttl = 64;
	pkt.dont_fragment = true;
	pkt.sport = 0xc000;
	pkt.dport = ROCE_UDP_PORT;
	pkt.opcode = ROCE_OP_WRITE_ONLY;
	pkt.pkey = ROCE_PKEY_DEFAULT;
	pkt.dqpn = 0x11;
	pkt.reth.rkey = 0x1234;
	pkt.reth.dma_len = o->size;
	pkt.payload = NULL; /* payload bytes are whatever the frame holds */
	pkt.payload_len = o->size;
	uint32_t flen = roce_frame_len(&pkt);

	t0 = now_ns();
	deadline = t0 + (uint64_t)(o->duration * 1e9);
	while (!stop_flag) {
		uint64_t t = now_ns();
		if (t >= deadline)
			break;
		port_poll(p);
		uint16_t n = port_alloc(p, f, (uint16_t)o->burst);
		for (uint16_t i = 0; i < n; i++) {
			pkt.psn = psn;
			pkt.ip_id = (uint16_t)psn;
			pkt.reth.va = (uint64_t)psn * o->size;
			psn = (psn + 1) & ROCE_PSN_MASK;
			if (f[i].room < flen || roce_build(f[i].data, f[i].room, &pkt) < 0) {
				fprintf(stderr, "uroce-perf: frame of %u bytes does not fit the port's %u-byte buffers\n",
					flen, f[i].room);
				port_free(p, f, n);
				port_close(p);
				return 1;
			}
			f[i].len = flen;
		}
		uint16_t done = port_tx_burst(p, f, n);
		if (done < n)
			port_free(p, f + done, n - done);
		sent += done;
	}
	t1 = now_ns();
	/* Let the last frames leave the ring before the port goes away. */
	for (int i = 0; i < 100; i++)
		port_poll(p);

	double secs = (double)(t1 - t0) / 1e9;
	double mpps = (double)sent / secs / 1e6;
	double gbps = (double)sent * flen * 8 / secs / 1e9;
	if (o->json) {
		printf("{\"mode\":\"raw_send\",\"port\":\"%s\",\"payload\":%u,\"frame\":%u,\"frames\":%" PRIu64
		       ",\"seconds\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f,\"drops\":{",
		       o->port_spec, o->size, flen, sent, secs, mpps, gbps);
		print_drops(stdout, &p->stats, 1);
		printf("}}\n");
	} else {
		printf("raw send %s: %" PRIu64 " frames of %u bytes (payload %u) in %.2f s = %.3f Mpps, %.2f Gbit/s; drops:",
		       o->port_spec, sent, flen, o->size, secs, mpps, gbps);
		print_drops(stdout, &p->stats, 0);
		printf("\n");
	}
	port_close(p);
	return 0;
}

static int raw_recv(struct raw_opts *o)
{
	struct uroce_frame f[PORT_BURST_MAX];
	struct roce_pkt pkt;
	struct roce_parse_opts popts = {0};
	char err[ERRBUF_LEN];
	struct pcap_writer pw;
	struct port *p;
	uint64_t good = 0, good_bytes = 0, first = 0, last = 0, start, deadline;
	uint32_t dumped = 0;
	int rc;

	if (o->pcap_path && pcap_writer_open(&pw, o->pcap_path, true, err, sizeof(err))) {
		fprintf(stderr, "uroce-perf: --pcap %s: %s\n", o->pcap_path, err);
		return 1;
	}
	rc = port_open(&p, &o->cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "uroce-perf: cannot open port %s: %s\n", o->port_spec, err);
		if (o->pcap_path)
			pcap_writer_close(&pw);
		return 1;
	}
	/* Tell a waiting script we can receive now. */
	fprintf(stderr, "uroce-perf: receiving on %s\n", o->port_spec);
	fflush(stderr);

	start = now_ns();
	deadline = start + (uint64_t)(o->duration * 1e9);
	uint64_t idle_ns = (uint64_t)o->idle_ms * 1000000ull;
	while (!stop_flag) {
		port_poll(p);
		uint16_t n = port_rx_burst(p, f, (uint16_t)o->burst);
		uint64_t t = now_ns();
		if (n) {
			if (!first)
				first = t;
			last = t;
			for (uint16_t i = 0; o->pcap_path && dumped < o->pcap_count && i < n; i++, dumped++)
				pcap_writer_write(&pw, (uint64_t)time(NULL) * 1000000000ull, f[i].data, f[i].len);
			for (uint16_t i = 0; i < n; i++) {
				enum uroce_drop_reason r = roce_parse(f[i].data, f[i].len, &pkt, &popts);
				if (r == UROCE_DROP_NONE) {
					good++;
					good_bytes += f[i].len;
				} else {
					port_count_drop(p, r);
				}
			}
			port_free(p, f, n);
			continue;
		}
		if (t >= deadline || (first && t - last >= idle_ns))
			break;
	}

	double secs = first && last > first ? (double)(last - first) / 1e9 : 0;
	double mpps = secs > 0 ? (double)good / secs / 1e6 : 0;
	double gbps = secs > 0 ? (double)good_bytes * 8 / secs / 1e9 : 0;
	if (o->json) {
		printf("{\"mode\":\"raw_recv\",\"port\":\"%s\",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
		       ",\"seconds\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f,\"drops\":{",
		       o->port_spec, good, good_bytes, secs, mpps, gbps);
		print_drops(stdout, &p->stats, 1);
		printf("}}\n");
	} else {
		printf("raw recv %s: %" PRIu64 " good RoCEv2 frames (ICRC checked), %" PRIu64
		       " bytes in %.2f s = %.3f Mpps, %.2f Gbit/s; drops by reason:",
		       o->port_spec, good, good_bytes, secs, mpps, gbps);
		print_drops(stdout, &p->stats, 0);
		printf("\n");
	}
	port_close(p);
	if (o->pcap_path && pcap_writer_close(&pw))
		fprintf(stderr, "uroce-perf: writing %s failed\n", o->pcap_path);
	return good ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct raw_opts o;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		if (argc >= 2) {
			fputc('\n', stdout);
			perf_usage(stdout, NULL);
		}
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		app_print_version("uroce-perf");
		return 0;
	}
	if (perf_is_mode(argv[1]))
		return perf_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "raw")) {
		fprintf(stderr, "uroce-perf: unknown mode '%s'; accepted: raw, write_bw, read_bw, send_bw, "
			"write_lat, read_lat, send_lat\n", argv[1]);
		return 2;
	}
	if (argc < 3 || (strcmp(argv[2], "send") && strcmp(argv[2], "recv"))) {
		fprintf(stderr, "uroce-perf: raw needs 'send' or 'recv'\n");
		usage(stderr);
		return 2;
	}
	int sending = !strcmp(argv[2], "send");
	if (parse_raw_args(argc - 2, argv + 2, sending, &o))
		return 2;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return sending ? raw_send(&o) : raw_recv(&o);
}
