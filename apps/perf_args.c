/* SPDX-License-Identifier: MIT */
/* uroce-perf's perftest-compatible command line: perftest's flags where
 * they make sense for a uroce port, a clear refusal for the rest.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataplane/port.h"
#include "perf.h"
#include "app_version.h"

static const struct {
	const char *name;
	enum perf_test test;
	int is_lat;
} modes[] = {
	{"write_bw", PERF_WRITE_BW, 0}, {"read_bw", PERF_READ_BW, 0}, {"send_bw", PERF_SEND_BW, 0},
	{"write_lat", PERF_WRITE_LAT, 1}, {"read_lat", PERF_READ_LAT, 1}, {"send_lat", PERF_SEND_LAT, 1},
	{"atomic_bw", PERF_ATOMIC_BW, 0}, {"atomic_lat", PERF_ATOMIC_LAT, 1},
};

int perf_is_mode(const char *name)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(name, modes[i].name))
			return 1;
	return 0;
}

/* -d SPEC[,SPEC...]: one uroce port per spec; -i picks the QP's port. */
static int split_devs(struct perf_opts *o)
{
	char err[256];
	int n = port_tool_spec_list(o->dev, o->devs_buf, sizeof(o->devs_buf), o->devs, UROCE_MAX_PORTS, err,
				    sizeof(err));

	if (n < 0) {
		fprintf(stderr, "uroce-perf: -d/--ib-dev %s\n", err);
		return -1;
	}
	o->ndevs = n;
	if (o->ib_port > o->ndevs) {
		fprintf(stderr, "uroce-perf: -i/--ib-port %d: the device has %d port(s), one per -d spec; "
			"accepted: 1-%d\n", o->ib_port, o->ndevs, o->ndevs);
		return -1;
	}
	return 0;
}

static void usage(FILE *f, const char *mode)
{
	fprintf(f,
		"usage: uroce-perf %s -d SPEC [options] [SERVER]   (no SERVER: be the server)\n"
		"  -d, --ib-dev SPEC       uroce port: afxdp:IFACE[:QUEUE[:generic|zc|copy]] | dpdk[:PORTID] | verbs:DEV[:PORT]\n"
		"                          (EAL args after --); a bare IFACE means afxdp:IFACE; SPEC,SPEC,... opens\n"
		"                          a device of several ports;\n"
		"                          afxdp:IFACE:A-B runs one engine per queue A..B, each QP on one of them and\n"
		"                          steered there by its source ports (give both ends a range)\n"
		"      --cores C,C,...     pin the engines' threads, one CPU per engine (one CPU without a range:\n"
		"                          one engine thread instead of this thread running the transport)\n"
		"  -i, --ib-port N         the QP's port, 1..number of -d specs (default 1)\n"
		"  -x, --gid-index N       an entry of the port's GID table: 0 fe80:: link-local, then\n"
		"                          ::ffff:IPv4, then IPv6 (default 1, the first IPv4)\n"
		"  -s, --size BYTES        message size (default 65536 for _bw, 2 for _lat)\n"
		"  -n, --iters N           iterations (default 5000 for _bw, 1000 for _lat)\n"
		"  -D, --duration SEC      run for SEC seconds (write_bw, read_bw, atomic_bw)\n"
		"      --run_infinitely    run until ^C (SIGINT/SIGTERM), a line every --report-period seconds\n"
		"                          (write_bw, read_bw, atomic_bw)\n"
		"      --report-period SEC a line of what completed in each SEC seconds while the test runs\n"
		"                          (-D, --run_infinitely; default 5 with --run_infinitely)\n"
		"  -A, --atomic_type T     CMP_AND_SWAP or FETCH_AND_ADD (default; atomic_bw, atomic_lat)\n"
		"  -b, --bidirectional     both ends send (the _bw modes); each prints the sum of both directions\n"
		"  -e, --events            sleep on completion events (a completion channel; an engine thread\n"
		"                          runs the transport) instead of polling (not write_lat: it polls memory)\n"
		"  -a, --all               sizes 2..2^23 (UD: up to the MTU)\n"
		"  -q, --qp N              number of QPs, 1-%d (_bw modes)\n"
		"  -m, --mtu BYTES         256, 512, 1024, 2048 or 4096 (default: the port's)\n"
		"  -c, --connection T      RC, UC (not for read) or UD (send_bw, send_lat only)\n"
		"  -p, --port N            TCP port of the exchange (default %d)\n"
		"  -t, --tx-depth N        send queue depth (default 128 for _bw, 1 for _lat)\n"
		"  -r, --rx-depth N        receive queue depth (default 512)\n"
		"  -Q, --cq-mod N          signal one send in N (default 100)\n"
		"  -o, --outs N            outstanding READs, 1-128 (default 16)\n"
		"  -u, --qp-timeout N      RC QP timeout: 4.096 us x 2^N, 0-31 (default 14; 0 = wait forever);\n"
		"                          sr and ec give a packet up after retry_cnt + 1 (8) of these\n"
		"      --report_gbits      report Gb/sec instead of MB/sec\n"
		"  -F, --CPU-freq          accepted, no effect\n"
		"      --timeout SEC       longest wait for the peer or a completion (default 30)\n"
		"      --counters          print the QPs' and the port's counters at exit (retransmits, drops)\n"
		"      --idle-yield-us N   without a dedicated engine: after N us without work each idle pass of the\n"
		"                          transport yields the CPU (sched_yield) to whatever shares the core;\n"
		"                          0-1000000 or off (default 20; sets UROCE_IDLE_YIELD_US)\n"
		"      --pcap FILE         every frame of the QPs' port, sent and received, into a pcap file (with\n"
		"                          several engines one file each: FILE.0, FILE.1, ...); tcpdump on an AF_XDP\n"
		"                          port's interface sees none of them\n"
		"      --allow-partial     be: a message that ends before it is whole (deadline, preemption) is no\n"
		"                          failure; the result counts the bytes delivered, not posted\n",
		mode ? mode : "MODE", PERF_MAX_QPS, PERF_DEFAULT_TCP_PORT);
	rel_args_usage(f, 26);
	fprintf(f, "      --out_json          also write the results as JSON (perftest's field names) to\n"
		   "                          --out_json_file (default " PERF_JSON_DEFAULT ")\n"
		   "      --out_json_file FILE  the JSON file (implies --out_json)\n"
		   "      --output WHAT       print only one number: bandwidth or message_rate (_bw), latency (_lat)\n"
		   "  -h, --help              this text\n"
		   "      --version           the version\n");
}

void perf_usage(FILE *f, const char *mode)
{
	usage(f, mode);
}

static int num(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "uroce-perf: %s '%s' is not a number in %.0f..%.0f\n", opt, s, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* perftest options we do not carry, named so the refusal says which. */
static const char *unsupported[] = {
	"-R/--rdma_cm", "-l/--post_list", "-I/--inline_size",
	"-z/--comm_rdma_cm", "-g/--mcg", "-M/--MGID", "-w/--limit_bw",
	"-y/--limit_msgrate", "-N/--noPeak", "-C/--report-cycles", "-H/--report-histogram",
	"-U/--report-unsorted", "-S/--sl", "-T/--tos", "-V", "-O/--dualport",
	"-k/--ah_port", "-X/--use-srq", "--use_cuda", "--odp", "--mmap",
	"--mr_per_qp", "--dont_xchg_versions", "--ipv6", "--source_ip", "--cpu_util",
};

int perf_parse_args(int argc, char **argv, struct perf_opts *o)
{
	enum { OPT_GBITS = 1000, OPT_TIMEOUT, OPT_COUNTERS, OPT_ALLOW_PARTIAL, OPT_CORES, OPT_PCAP, OPT_VERSION,
	       OPT_INFINITE, OPT_PERIOD, OPT_JSON, OPT_JSON_FILE, OPT_OUTPUT, OPT_IDLE_YIELD };
	static const struct option longopts[] = {
		{"ib-dev", required_argument, NULL, 'd'},
		{"ib-port", required_argument, NULL, 'i'},
		{"gid-index", required_argument, NULL, 'x'},
		{"size", required_argument, NULL, 's'},
		{"iters", required_argument, NULL, 'n'},
		{"duration", required_argument, NULL, 'D'},
		{"all", no_argument, NULL, 'a'},
		{"qp", required_argument, NULL, 'q'},
		{"mtu", required_argument, NULL, 'm'},
		{"connection", required_argument, NULL, 'c'},
		{"port", required_argument, NULL, 'p'},
		{"tx-depth", required_argument, NULL, 't'},
		{"rx-depth", required_argument, NULL, 'r'},
		{"cq-mod", required_argument, NULL, 'Q'},
		{"outs", required_argument, NULL, 'o'},
		{"qp-timeout", required_argument, NULL, 'u'},
		{"report_gbits", no_argument, NULL, OPT_GBITS},
		{"CPU-freq", no_argument, NULL, 'F'},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"counters", no_argument, NULL, OPT_COUNTERS},
		{"idle-yield-us", required_argument, NULL, OPT_IDLE_YIELD},
		{"allow-partial", no_argument, NULL, OPT_ALLOW_PARTIAL},
		{"cores", required_argument, NULL, OPT_CORES},
		{"pcap", required_argument, NULL, OPT_PCAP},
		{"atomic_type", required_argument, NULL, 'A'},
		{"bidirectional", no_argument, NULL, 'b'},
		{"events", no_argument, NULL, 'e'},
		{"run_infinitely", no_argument, NULL, OPT_INFINITE},
		{"report-period", required_argument, NULL, OPT_PERIOD},
		{"out_json", no_argument, NULL, OPT_JSON},
		{"out_json_file", required_argument, NULL, OPT_JSON_FILE},
		{"output", required_argument, NULL, OPT_OUTPUT},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		REL_ARGS_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	const char *mode = argv[0];
	int size_set = 0, iters_set = 0, tx_set = 0, atype_set = 0, c, r;
	char err[256];
	double v;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(mode, modes[i].name)) {
			o->test = modes[i].test;
			o->is_lat = modes[i].is_lat;
			o->name = modes[i].name;
		}
	}
	if (!o->name) {
		fprintf(stderr, "uroce-perf: unknown mode '%s'\n", mode);
		return 2;
	}
	o->tcp_port = PERF_DEFAULT_TCP_PORT;
	o->ib_port = 1;
	o->gid_index = 1;
	o->num_qps = 1;
	o->conn = UROCE_QPT_RC;
	o->rx_depth = 512;
	o->cq_mod = 100;
	o->qp_timeout = 14; /* perftest's default */
	o->out_reads = 16;
	o->timeout = 30;

	int nargs = port_split_eal_args(argc, argv, &o->eal_argc, &o->eal_argv);

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(nargs, argv, ":d:i:x:s:n:D:aq:m:c:p:t:r:Q:o:u:FhA:be", longopts, NULL)) != -1) {
		r = rel_args_option(&o->rel, c, optarg, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "uroce-perf: %s\n", err);
			return 2;
		}
		if (r)
			continue;
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'i':
			if (num("-i/--ib-port", optarg, 1, UROCE_MAX_PORTS, &v))
				return 2;
			o->ib_port = (int)v;
			break;
		case 'x':
			if (num("-x/--gid-index", optarg, 0, 255, &v))
				return 2;
			o->gid_index = (int)v;
			break;
		case 's':
			if (num("-s/--size", optarg, 1, PERF_MAX_SIZE, &v))
				return 2;
			o->size = (uint64_t)v;
			size_set = 1;
			break;
		case 'n':
			if (num("-n/--iters", optarg, 5, 1e9, &v))
				return 2;
			o->iters = (uint64_t)v;
			iters_set = 1;
			break;
		case 'D':
			if (num("-D/--duration", optarg, 1, 3600, &v))
				return 2;
			o->duration = v;
			break;
		case 'a':
			o->all = 1;
			break;
		case 'q':
			if (num("-q/--qp", optarg, 1, PERF_MAX_QPS, &v))
				return 2;
			o->num_qps = (int)v;
			break;
		case 'm': {
			static const int mtus[] = {256, 512, 1024, 2048, 4096};
			char *end;
			long m = strtol(optarg, &end, 10);
			for (int k = 0; k < 5 && !*end; k++)
				if (m == mtus[k])
					o->mtu = UROCE_MTU_256 + k;
			if (!o->mtu) {
				fprintf(stderr, "uroce-perf: -m/--mtu '%s': accepted 256, 512, 1024, 2048, 4096\n", optarg);
				return 2;
			}
			break;
		}
		case 'c':
			if (!strcmp(optarg, "RC"))
				o->conn = UROCE_QPT_RC;
			else if (!strcmp(optarg, "UC"))
				o->conn = UROCE_QPT_UC;
			else if (!strcmp(optarg, "UD"))
				o->conn = UROCE_QPT_UD;
			else {
				fprintf(stderr, "uroce-perf: -c/--connection '%s': accepted RC, UC, UD\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (num("-p/--port", optarg, 1, 65535, &v))
				return 2;
			o->tcp_port = (int)v;
			break;
		case 't':
			if (num("-t/--tx-depth", optarg, 1, 8192, &v))
				return 2;
			o->tx_depth = (int)v;
			tx_set = 1;
			break;
		case 'r':
			if (num("-r/--rx-depth", optarg, 1, 8192, &v))
				return 2;
			o->rx_depth = (int)v;
			break;
		case 'Q':
			if (num("-Q/--cq-mod", optarg, 1, 1024, &v))
				return 2;
			o->cq_mod = (int)v;
			break;
		case 'o':
			if (num("-o/--outs", optarg, 1, 128, &v))
				return 2;
			o->out_reads = (int)v;
			break;
		case 'u':
			if (num("-u/--qp-timeout", optarg, 0, 31, &v))
				return 2;
			o->qp_timeout = (int)v;
			break;
		case OPT_GBITS:
			o->report_gbits = 1;
			break;
		case 'F':
			break;
		case OPT_TIMEOUT:
			if (num("--timeout", optarg, 1, 86400, &v))
				return 2;
			o->timeout = v;
			break;
		case OPT_COUNTERS:
			o->counters = 1;
			break;
		case OPT_IDLE_YIELD: {
			/* the library reads it when the contexts are created */
			char *end;
			unsigned long us;

			errno = 0;
			us = strtoul(optarg, &end, 10);
			if (strcmp(optarg, "off") && (errno || end == optarg || *end || optarg[0] == '-' || us > 1000000)) {
				fprintf(stderr, "uroce-perf: --idle-yield-us '%s': accepted 0..1000000 (microseconds "
					"without work before the transport yields the CPU) or off\n", optarg);
				return 2;
			}
			setenv("UROCE_IDLE_YIELD_US", optarg, 1);
			break;
		}
		case OPT_ALLOW_PARTIAL:
			o->allow_partial = 1;
			break;
		case OPT_PCAP:
			o->pcap_path = optarg;
			break;
		case OPT_CORES:
			if (perf_cores_parse(o, optarg))
				return 2;
			break;
		case 'A':
			if (!strcmp(optarg, "CMP_AND_SWAP"))
				o->atomic_cas = 1;
			else if (strcmp(optarg, "FETCH_AND_ADD")) {
				fprintf(stderr, "uroce-perf: -A/--atomic_type '%s': accepted CMP_AND_SWAP, FETCH_AND_ADD\n",
					optarg);
				return 2;
			}
			atype_set = 1;
			break;
		case 'b':
			o->duplex = 1;
			break;
		case 'e':
			o->events = 1;
			break;
		case OPT_INFINITE:
			o->run_infinitely = 1;
			break;
		case OPT_PERIOD:
			if (num("--report-period", optarg, 1, 3600, &v))
				return 2;
			o->report_period = v;
			break;
		case OPT_JSON:
			o->out_json = 1;
			break;
		case OPT_JSON_FILE:
			o->out_json = 1;
			o->out_json_file = optarg;
			break;
		case OPT_OUTPUT:
			if (!strcmp(optarg, "bandwidth"))
				o->output = PERF_OUT_BW;
			else if (!strcmp(optarg, "message_rate"))
				o->output = PERF_OUT_MSGRATE;
			else if (!strcmp(optarg, "latency"))
				o->output = PERF_OUT_LAT;
			else {
				fprintf(stderr, "uroce-perf: --output '%s': accepted bandwidth, message_rate, latency\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout, mode);
			return 1;
		case OPT_VERSION:
			app_print_version("uroce-perf");
			return 1;
		case ':':
			fprintf(stderr, "uroce-perf: option %s needs a value\n", argv[optind - 1]);
			return 2;
		default: {
			const char *bad = argv[optind - 1];
			char name[64];
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(bad, "="), bad);
			fprintf(stderr, "uroce-perf: %s: option '%s' is not supported by uroce-perf", mode, name);
			for (size_t k = 0; k < sizeof(unsupported) / sizeof(unsupported[0]); k++)
				if (name[0] == '-' && name[1] && strstr(unsupported[k], name))
					fprintf(stderr, " (perftest's %s)", unsupported[k]);
			fprintf(stderr, "; accepted: -d -i -x -s -n -D -a -q -m -c -p -t -r -Q -o -A -b -e "
				"--run_infinitely --report-period --out_json --out_json_file --output "
				"--report_gbits -F --timeout --counters --idle-yield-us --pcap --allow-partial --cores " REL_ARGS_NAMES " -h --version (see --help)\n");
			return 2;
		}
		}
	}
	if (optind < nargs)
		o->server = argv[optind++];
	if (optind < nargs) {
		fprintf(stderr, "uroce-perf: unexpected argument '%s' (one SERVER at most)\n", argv[optind]);
		return 2;
	}
	if (!o->dev) {
		fprintf(stderr, "uroce-perf: -d SPEC is required (afxdp:IFACE[:QUEUE[:generic|zc|copy]], dpdk[:PORTID] or verbs:DEV[:PORT])\n");
		return 2;
	}
	if (split_devs(o))
		return 2;
	if (o->ncores && !strncmp(o->devs[0], "verbs:", 6)) {
		fprintf(stderr, "uroce-perf: --cores runs uroce's engines on CPUs; on a verbs port the NIC runs "
			"the transport\n");
		return 2;
	}
	if (o->conn == UROCE_QPT_UD && o->test != PERF_SEND_BW && o->test != PERF_SEND_LAT) {
		fprintf(stderr, "uroce-perf: %s: -c UD is accepted for send_bw and send_lat only\n", mode);
		return 2;
	}
	if (o->conn == UROCE_QPT_UC && (o->test == PERF_READ_BW || o->test == PERF_READ_LAT)) {
		fprintf(stderr, "uroce-perf: %s: UC has no RDMA READ; accepted: -c RC\n", mode);
		return 2;
	}
	if (o->rel.attr.reliability != UROCE_REL_RC && o->devs[0] &&
	    !strncmp(o->devs[0], "verbs:", 6))
		o->rel.attr.imm_keyed = 1; /* the NIC numbers its own PSNs (the peer gives --imm-keyed) */
	if (rel_args_check(&o->rel, o->conn == UROCE_QPT_RC ? NULL : o->conn == UROCE_QPT_UC ? "-c UC" : "-c UD",
			   "-c RC", err, sizeof(err))) {
		fprintf(stderr, "uroce-perf: %s: %s\n", mode, err);
		return 2;
	}
	if (perf_engines_parse(o))
		return 2;
	if (o->allow_partial && o->rel.attr.reliability != UROCE_REL_BE) {
		fprintf(stderr, "uroce-perf: %s: --allow-partial is for --reliability be (its messages may end before "
			"they are whole); this run uses %s, whose messages always arrive whole or fail\n", mode,
			uroce_reliability_str(o->rel.attr.reliability));
		return 2;
	}
	if (o->rel.attr.reliability != UROCE_REL_RC && (o->test == PERF_READ_BW || o->test == PERF_READ_LAT)) {
		fprintf(stderr, "uroce-perf: %s: read needs --reliability rc (sr and ec carry SEND and WRITE only); "
			"accepted with --reliability %s: write_bw, send_bw, write_lat, send_lat\n", mode,
			uroce_reliability_str(o->rel.attr.reliability));
		return 2;
	}
	int atomic = o->test == PERF_ATOMIC_BW || o->test == PERF_ATOMIC_LAT;
	if (atype_set && !atomic) {
		fprintf(stderr, "uroce-perf: %s: -A/--atomic_type is for atomic_bw and atomic_lat\n", mode);
		return 2;
	}
	if (atomic && (o->conn != UROCE_QPT_RC || o->rel.attr.reliability != UROCE_REL_RC)) {
		fprintf(stderr, "uroce-perf: %s: atomics need -c RC and --reliability rc (UC has none; sr, ec and be "
			"carry SEND and WRITE only)\n", mode);
		return 2;
	}
	if (atomic && ((size_set && o->size != PERF_ATOMIC_SIZE) || o->all)) {
		fprintf(stderr, "uroce-perf: %s: an atomic is %d bytes; -s and -a are not accepted\n", mode,
			PERF_ATOMIC_SIZE);
		return 2;
	}
	if (atomic) {
		o->size = PERF_ATOMIC_SIZE;
		size_set = 1;
	}
	if (o->duplex && o->is_lat) {
		fprintf(stderr, "uroce-perf: %s: -b/--bidirectional is for the _bw modes (a latency test already "
			"goes both ways)\n", mode);
		return 2;
	}
	if (o->events && o->test == PERF_WRITE_LAT) {
		fprintf(stderr, "uroce-perf: write_lat: -e/--events is not accepted (as in perftest: write_lat "
			"polls memory for the peer's writes)\n");
		return 2;
	}
	if (o->events && o->ndevs && !strncmp(o->devs[0], "verbs:", 6)) {
		fprintf(stderr, "uroce-perf: %s: -e/--events on a verbs port is not supported (uroce's completion "
			"channels serve its own engines); poll\n", mode);
		return 2;
	}
	if (o->events && !o->nengines)
		o->nengines = 1; /* the transport on an engine thread while this one sleeps */
	if ((o->duration || o->run_infinitely) && o->test != PERF_WRITE_BW && o->test != PERF_READ_BW &&
	    o->test != PERF_ATOMIC_BW) {
		fprintf(stderr, "uroce-perf: %s: -D/--duration and --run_infinitely are accepted for write_bw, read_bw "
			"and atomic_bw only; use -n\n", mode);
		return 2;
	}
	if (o->run_infinitely && o->duration) {
		fprintf(stderr, "uroce-perf: -D and --run_infinitely cannot be combined (--report-period sets the "
			"lines' interval)\n");
		return 2;
	}
	if (o->run_infinitely && o->all) {
		fprintf(stderr, "uroce-perf: --run_infinitely and -a cannot be combined\n");
		return 2;
	}
	if (o->report_period && !o->duration && !o->run_infinitely) {
		fprintf(stderr, "uroce-perf: --report-period needs -D or --run_infinitely (a run of -n iterations "
			"prints its table at the end)\n");
		return 2;
	}
	if (o->run_infinitely && !o->report_period)
		o->report_period = 5;
	if ((o->output == PERF_OUT_LAT && !o->is_lat) || ((o->output == PERF_OUT_BW || o->output == PERF_OUT_MSGRATE) &&
							   o->is_lat)) {
		fprintf(stderr, "uroce-perf: %s: --output %s does not apply; accepted: %s\n", mode,
			o->output == PERF_OUT_LAT ? "latency" : o->output == PERF_OUT_BW ? "bandwidth" : "message_rate",
			o->is_lat ? "latency" : "bandwidth, message_rate");
		return 2;
	}
	if (o->out_json && !o->out_json_file)
		o->out_json_file = PERF_JSON_DEFAULT;
	if (o->duration && o->all) {
		fprintf(stderr, "uroce-perf: -D and -a cannot be combined (as in perftest)\n");
		return 2;
	}
	if (o->is_lat && o->num_qps != 1) {
		fprintf(stderr, "uroce-perf: %s: latency tests use one QP; accepted: -q 1\n", mode);
		return 2;
	}
	if (size_set && o->all) {
		fprintf(stderr, "uroce-perf: -s and -a cannot be combined\n");
		return 2;
	}
	if (!size_set)
		o->size = o->is_lat ? 2 : 65536;
	if (!iters_set)
		o->iters = o->is_lat ? 1000 : 5000;
	if (o->is_lat && o->iters > PERF_MAX_LAT_ITERS) {
		fprintf(stderr, "uroce-perf: -n %llu: latency tests keep one timestamp per iteration; accepted up to %u\n",
			(unsigned long long)o->iters, PERF_MAX_LAT_ITERS);
		return 2;
	}
	if (!tx_set)
		o->tx_depth = o->is_lat ? 1 : 128;
	if (o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth; /* perftest does the same */
	if (o->is_lat)
		o->cq_mod = 1;
	return 0;
}
