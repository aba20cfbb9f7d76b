/* SPDX-License-Identifier: MIT */
/* uroce-fabric: a software switch for test fabrics. Opens each --port as
 * an AF_XDP port (the port layer's XDP program steers UDP 4791 to the
 * socket and passes ARP and everything else to the kernel) and runs the
 * switch core (apps/fabric/fsw.h) over them: routing with ECMP, rate
 * limits, drop-tail queues, ECN marking, packet trimming and delay. This
 * kernel has no netem, RED or fq_codel; this is the switch that marks and
 * trims.
 *
 *   uroce-fabric --port IFACE,peer=MAC[,...] [--port ...] --route PREFIX=PORTS [...]
 *                [--seed S] [--stats FILE] [--max-sec N] [--idle-us N] [--deep-idle-us N]
 *                [--ready-file F] [--check]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "apps/fabric/fsw.h"
#include "dataplane/port.h"
#include "app_version.h"

#define NS_PER_S 1000000000ull
#define FAB_SEED_DEFAULT 1u
#define FAB_IDLE_US_DEFAULT 50u
#define FAB_IDLE_US_MAX 100000u
#define FAB_DEEP_IDLE_US_DEFAULT 500u
/* Quiet for this long, the switch sleeps longer: idle switches then cost
 * little CPU, and traffic that resumes pays one longer sleep per hop. */
#define FAB_DEEP_IDLE_AFTER_NS (50ull * 1000000ull)
/* Idle passes before sleeping: a burst's next frames are often microseconds away. */
#define FAB_SPIN_POLLS 32u
#define FAB_STATS_PERIOD_NS NS_PER_S
/* Timer slack of the sleeps (the kernel's default is 50 us, as long as a
 * sleep itself). */
#define FAB_TIMER_SLACK_NS 1000ul

struct fab_opts {
	struct fsw_cfg cfg;
	const char *stats_file;
	const char *ready_file;
	uint64_t max_sec;
	uint32_t idle_us;
	uint32_t deep_idle_us;
	uint32_t nframes;
	bool quiet;
	bool check;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-fabric --port SPEC [--port SPEC...] --route ROUTE [--route ROUTE...] [options]\n"
		"A software switch over AF_XDP ports: routes RoCEv2 (UDP 4791) between its ports, with a\n"
		"rate limit, a drop-tail queue, ECN marking, packet trimming and a delay on every egress\n"
		"port. ARP and all other traffic stay with the kernel. Run as root.\n"
		"  --port SPEC     IFACE,peer=MAC[,key=value...]: one port, numbered from 0 in the order given\n"
		"                  peer=MAC       MAC of the one neighbour on this link (required)\n"
		"                  mac=MAC        source MAC written (default: the interface's)\n"
		"                  rate=N[k|m|g|t] egress rate in bit/s of Ethernet frame bytes (default 0 = unlimited)\n"
		"                  queue=BYTES    data queue bound, drop-tail (default 256k; k, m are 1024-based)\n"
		"                  prio=BYTES     priority queue bound, trimmed packets and CNPs (default 32k)\n"
		"                  ecn=KMIN[:KMAX:PMAX]  mark CE on ECT packets that find >= KMIN bytes queued;\n"
		"                                 with KMAX, with probability rising to PMAX (0..1 or N%%) at KMAX\n"
		"                                 and always above (RED-like, as DCQCN's switches) (default off)\n"
		"                  trim=0|1       queue full: cut RoCEv2 packets to their headers and send them\n"
		"                                 at strict priority instead of dropping them (default 0)\n"
		"                  dscp=0..63     DSCP of trimmed packets, ECN bits kept (default %u)\n"
		"                  delay=N{ns|us|ms|s}  propagation delay after serialisation (default 0)\n"
		"  --route ROUTE   PREFIX[/LEN]=P[+P...]: IPv4 or IPv6 prefix to port P, or to an ECMP group\n"
		"                  (P+P...) picked by a hash of addresses and UDP ports; longest prefix wins\n"
		"  --seed S        seed of the ECMP hash and of RED marking, 0..2^64-1 (default %u)\n"
		"  --stats FILE    write every counter as JSON to FILE every second and at exit\n"
		"  --max-sec N     exit after N seconds (default 0 = until SIGINT or SIGTERM)\n"
		"  --idle-us N     longest sleep when idle, 1..%u us (default %u); the switch sleeps until\n"
		"                  its next queued frame is due, so several share a CPU\n"
		"  --deep-idle-us N  longest sleep once nothing has arrived for 50 ms, --idle-us..%u us\n"
		"                  (default %u)\n"
		"  --ready-file F  create F once every port is open\n"
		"  --nframes N     UMEM frames of each port (default: the port's)\n"
		"  --quiet         no start-up lines\n"
		"  --check         check the options and exit 0 (2 when they are bad), opening nothing\n"
		"  -h, --help      this text\n"
		"  --version       the version\n"
		"Exit status: 0 stopped by a signal or --max-sec (final counters written), 1 a port\n"
		"would not open, 2 bad arguments.\n",
		FSW_TRIM_DSCP_DEFAULT, FAB_SEED_DEFAULT, FAB_IDLE_US_MAX, FAB_IDLE_US_DEFAULT, FAB_IDLE_US_MAX,
		FAB_DEEP_IDLE_US_DEFAULT);
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("uroce-fabric: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	/* decimal, or hex after 0x (never octal) */
	v = strtoull(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
	if (!*s || *s == '-' || *s == '+' || errno || *end || v < min || v > max)
		die_usage("%s '%s': accepted: an integer %" PRIu64 "..%" PRIu64, opt, s, min, max);
	return v;
}

static void parse_args(int argc, char **argv, struct fab_opts *o)
{
	enum { O_PORT = 256, O_ROUTE, O_SEED, O_STATS, O_MAXSEC, O_IDLE, O_DEEP_IDLE, O_READY, O_NFRAMES, O_QUIET,
	       O_CHECK, O_HELP, O_VERSION };
	static const struct option lo[] = {
		{ "port", required_argument, 0, O_PORT },
		{ "route", required_argument, 0, O_ROUTE },
		{ "seed", required_argument, 0, O_SEED },
		{ "stats", required_argument, 0, O_STATS },
		{ "max-sec", required_argument, 0, O_MAXSEC },
		{ "idle-us", required_argument, 0, O_IDLE },
		{ "deep-idle-us", required_argument, 0, O_DEEP_IDLE },
		{ "ready-file", required_argument, 0, O_READY },
		{ "nframes", required_argument, 0, O_NFRAMES },
		{ "quiet", no_argument, 0, O_QUIET },
		{ "check", no_argument, 0, O_CHECK },
		{ "help", no_argument, 0, O_HELP },
		{ "version", no_argument, 0, O_VERSION },
		{ 0, 0, 0, 0 },
	};
	bool deep_set = false;
	char err[512];
	int c;

	memset(o, 0, sizeof(*o));
	fsw_cfg_init(&o->cfg);
	o->cfg.seed = FAB_SEED_DEFAULT;
	o->idle_us = FAB_IDLE_US_DEFAULT;
	o->deep_idle_us = FAB_DEEP_IDLE_US_DEFAULT;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_PORT:
			if (fsw_cfg_add_port(&o->cfg, optarg, err, sizeof(err)))
				die_usage("--port: %s", err);
			break;
		case O_ROUTE:
			if (fsw_cfg_add_route(&o->cfg, optarg, err, sizeof(err)))
				die_usage("--route: %s", err);
			break;
		case O_SEED: o->cfg.seed = parse_u64("--seed", optarg, 0, UINT64_MAX); break;
		case O_STATS: o->stats_file = optarg; break;
		case O_MAXSEC: o->max_sec = parse_u64("--max-sec", optarg, 0, 365ull * 86400); break;
		case O_IDLE: o->idle_us = (uint32_t)parse_u64("--idle-us", optarg, 1, FAB_IDLE_US_MAX); break;
		case O_DEEP_IDLE:
			o->deep_idle_us = (uint32_t)parse_u64("--deep-idle-us", optarg, 1, FAB_IDLE_US_MAX);
			deep_set = true;
			break;
		case O_READY: o->ready_file = optarg; break;
		case O_NFRAMES: o->nframes = (uint32_t)parse_u64("--nframes", optarg, 64, 1u << 20); break;
		case O_QUIET: o->quiet = true; break;
		case O_CHECK: o->check = true; break;
		case 'h':
		case O_HELP: usage(stdout); exit(0);
		case O_VERSION: app_print_version("uroce-fabric"); exit(0);
		default:
			die_usage("accepted options: --port, --route, --seed, --stats, --max-sec, --idle-us, "
				  "--deep-idle-us, --ready-file, --nframes, --quiet, --check, --help, --version");
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'; every setting is an option", argv[optind]);
	if (!o->cfg.nports)
		die_usage("no --port given; accepted: --port IFACE,peer=MAC[,...], once per port");
	if (!o->cfg.nroutes)
		die_usage("no --route given; accepted: --route PREFIX[/LEN]=P[+P...], e.g. 10.1.0.0/24=0");
	if (fsw_cfg_check(&o->cfg, err, sizeof(err)))
		die_usage("%s", err);
	if (!deep_set && o->deep_idle_us < o->idle_us)
		o->deep_idle_us = o->idle_us;
	if (o->deep_idle_us < o->idle_us)
		die_usage("--deep-idle-us %u is below --idle-us %u; accepted: --idle-us..%u", o->deep_idle_us, o->idle_us,
			  FAB_IDLE_US_MAX);
	if (o->check) {
		printf("uroce-fabric: %u ports, %u routes: the options are good\n", o->cfg.nports, o->cfg.nroutes);
		exit(0);
	}
}

static uint64_t mono_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static int open_ports(const struct fab_opts *o, struct port **ports)
{
	char err[512];

	for (unsigned i = 0; i < o->cfg.nports; i++) {
		struct port_config pc;

		memset(&pc, 0, sizeof(pc));
		pc.kind = PORT_KIND_AFXDP;
		snprintf(pc.ifname, sizeof(pc.ifname), "%s", o->cfg.port[i].name);
		pc.nframes = o->nframes;
		if (port_open(&ports[i], &pc, err, sizeof(err))) {
			fprintf(stderr, "uroce-fabric: port %u (%s): %s\n", i, o->cfg.port[i].name, err);
			return -1;
		}
	}
	return 0;
}

static void print_setup(const struct fab_opts *o, struct port *const *ports)
{
	fprintf(stderr, "uroce-fabric: %u ports, %u routes, seed %" PRIu64 "\n", o->cfg.nports, o->cfg.nroutes,
		o->cfg.seed);
	for (unsigned i = 0; i < o->cfg.nports; i++) {
		const struct fsw_port_cfg *c = &o->cfg.port[i];
		const uint8_t *m = ports[i]->mac, *pm = c->peer_mac;

		fprintf(stderr,
			"  port %u %s: mac %02x:%02x:%02x:%02x:%02x:%02x peer %02x:%02x:%02x:%02x:%02x:%02x mtu %u "
			"rate %" PRIu64 " bit/s queue %u prio %u ecn %u",
			i, c->name, m[0], m[1], m[2], m[3], m[4], m[5], pm[0], pm[1], pm[2], pm[3], pm[4], pm[5],
			ports[i]->mtu, c->rate_bps, c->queue_bytes, c->prio_bytes, c->ecn_kmin);
		if (c->ecn_kmax)
			fprintf(stderr, ":%u:%g", c->ecn_kmax, c->ecn_pmax);
		fprintf(stderr, " trim %d dscp %u delay %" PRIu64 " ns\n", c->trim, c->trim_dscp, c->delay_ns);
	}
}

/* Written whole to FILE.tmp, then renamed: a reader never sees half. */
static void write_stats(const struct fsw *s, const char *path)
{
	char tmp[4096];
	bool bad;
	FILE *f;

	if (!path)
		return;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "uroce-fabric: cannot write %s: %s\n", tmp, strerror(errno));
		return;
	}
	bad = fsw_stats_json(s, f) != 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path))
		fprintf(stderr, "uroce-fabric: cannot write %s: %s\n", path, strerror(errno));
}

static int make_ready_file(const char *path)
{
	FILE *f;

	if (!path)
		return 0;
	f = fopen(path, "w");
	if (!f || fclose(f)) {
		fprintf(stderr, "uroce-fabric: cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static void idle_sleep(const struct fsw *s, uint64_t now, uint64_t idle_ns)
{
	uint64_t next = fsw_next_event(s), wait = idle_ns;
	struct timespec ts;

	if (next != UINT64_MAX)
		wait = next <= now ? 0 : next - now < wait ? next - now : wait;
	if (!wait)
		return;
	ts.tv_sec = (time_t)(wait / NS_PER_S);
	ts.tv_nsec = (long)(wait % NS_PER_S);
	nanosleep(&ts, NULL);
}

static void run(struct fsw *s, const struct fab_opts *o)
{
	uint64_t start = mono_ns(NULL), next_stats = start + FAB_STATS_PERIOD_NS;
	uint64_t end = o->max_sec ? start + o->max_sec * NS_PER_S : UINT64_MAX, last_work = start;
	unsigned idle = 0;

	while (!stop_flag) {
		unsigned work = fsw_poll(s);
		uint64_t now = fsw_now(s);

		if (now >= next_stats) {
			write_stats(s, o->stats_file);
			next_stats = now + FAB_STATS_PERIOD_NS;
		}
		if (now >= end)
			break;
		if (work) {
			idle = 0;
			last_work = now;
			continue;
		}
		if (++idle < FAB_SPIN_POLLS)
			continue;
		idle_sleep(s, now,
			   (uint64_t)(now - last_work < FAB_DEEP_IDLE_AFTER_NS ? o->idle_us : o->deep_idle_us) * 1000u);
	}
}

int main(int argc, char **argv)
{
	struct port *ports[FSW_PORTS_MAX] = { 0 };
	static struct fab_opts o;
	struct sigaction sa;
	struct fsw_stats st;
	struct fsw *s = NULL;
	char err[512];
	int rc = 1;

	parse_args(argc, argv, &o);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	prctl(PR_SET_TIMERSLACK, FAB_TIMER_SLACK_NS, 0, 0, 0);

	if (open_ports(&o, ports))
		goto out;
	s = fsw_create(&o.cfg, ports, o.cfg.nports, mono_ns, NULL, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "uroce-fabric: %s\n", err);
		goto out;
	}
	if (!o.quiet)
		print_setup(&o, ports);
	write_stats(s, o.stats_file);
	if (make_ready_file(o.ready_file))
		goto out;
	run(s, &o);
	write_stats(s, o.stats_file);
	fsw_stats(s, &st);
	printf("uroce-fabric: rx=%" PRIu64 " tx=%" PRIu64 " dropped=%" PRIu64, st.rx_frames, st.tx_frames,
	       st.drops_total);
	for (unsigned d = FSW_DROP_NONE + 1; d < FSW_DROP__COUNT; d++)
		if (st.drops[d])
			printf(" %s=%" PRIu64, fsw_drop_name((enum fsw_drop)d), st.drops[d]);
	putchar('\n');
	rc = 0;
out:
	fsw_destroy(s);
	for (unsigned i = 0; i < o.cfg.nports; i++)
		if (ports[i])
			port_close(ports[i]);
	return rc;
}
