/* SPDX-License-Identifier: MIT */
/* uroce: the launcher's command line, its engines and ports, and the order
 * of a run (the script, -a, the prompt, the end). testpmd's options where
 * it has them: -l CORES, -i, -a, --cmdline-file, --stats-period. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher.h"
#include "dataplane/port.h"
#include "dataplane/port_loop.h"
#include "apps/app_version.h"

struct launcher L;

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uroce -l CORES -p PORTSPEC[,PORTSPEC...] [-i] [-a] [--cmdline-file FILE [--no-interactive]]\n"
	        "             [--stats-period S] [--json] [-- EAL args]\n"
	        "\n"
	        "  -l CORES            engine cores: 2, 0-3, 1,3 (one engine per core, pinned, run to completion)\n"
	        "  -p PORTSPEC,...     ports, numbered from 0: afxdp:IFACE[:QUEUE[:generic|zc|copy]], dpdk[:PORTID],\n"
	        "                      verbs:DEV[:PORT], loop:INDEX (an in-process wire: loop:0 <-> loop:1, 2 <-> 3)\n"
	        "                      port i goes to the engine of core i mod (number of cores)\n"
	        "  -i, --interactive   the prompt (uroce> ), with history and tab completion\n"
	        "  -a, --auto-start    start traffic at once (after the script)\n"
	        "  --cmdline-file FILE run FILE's commands, then the prompt\n"
	        "  --no-interactive    ... or exit after FILE (status 1 when a command failed)\n"
	        "  --stats-period S    statistics every S seconds (0.1..3600)\n"
	        "  --json              show, stop and the periodic statistics print JSON, one object per line\n"
	        "  -h, --help          this text\n"
	        "  --version           the version\n"
	        "  -- EAL args         passed to DPDK for dpdk ports\n"
	        "\n"
	        "Without -i and --cmdline-file, commands are read from standard input without a prompt.\n"
	        "Type 'help' at the prompt for the commands (docs/launcher.md).\n");
}

static void vout(FILE *f, bool async, const char *fmt, va_list ap)
{
	if (L.interactive)
		l_cli_before_output();
	vfprintf(f, fmt, ap);
	fflush(f);
	if (L.interactive && async)
		l_cli_after_output();
}

void l_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vout(stdout, false, fmt, ap);
	va_end(ap);
	L.status_shown = false;
}

void l_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vout(stderr, false, fmt, ap);
	va_end(ap);
	L.status_shown = false;
}

void l_async(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vout(stdout, true, fmt, ap);
	va_end(ap);
	L.status_shown = false;
}

static void on_signal(int sig)
{
	(void)sig;
	L.quit = true; /* the loops that wait look at it; poll returns EINTR */
}

/* -l: "2", "0-3", "1,3,5-6"; every CPU once. */
static int parse_cores(const char *arg)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p || a < 0 || a >= CPU_SETSIZE)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a || b >= CPU_SETSIZE)
				goto bad;
		}
		for (long c = a; c <= b; c++) {
			if (L.nlcores == L_MAX_LCORES) {
				fprintf(stderr, "uroce: -l %s: more than %d cores\n", arg, L_MAX_LCORES);
				return -1;
			}
			for (int i = 0; i < L.nlcores; i++)
				if (L.lc[i].cpu == c) {
					fprintf(stderr, "uroce: -l %s: core %ld twice\n", arg, c);
					return -1;
				}
			L.lc[L.nlcores].idx = L.nlcores;
			L.lc[L.nlcores++].cpu = (int)c;
		}
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	if (L.nlcores)
		return 0;
bad:
	fprintf(stderr, "uroce: -l '%s' is not a core list; accepted: N, A-B, or a comma-separated list of them "
	        "(cores 0..%d)\n", arg, CPU_SETSIZE - 1);
	return -1;
}

static int parse_ports(const char *arg)
{
	char buf[2048], err[256];
	const char *specs[L_MAX_PORTS];
	int n = port_split_spec_list(arg, false, buf, sizeof(buf), specs, L_MAX_PORTS, err, sizeof(err));

	if (n < 0) {
		fprintf(stderr, "uroce: -p %s: %s\n", arg, err);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct port_config cfg;
		struct l_port *lp = &L.port[i];

		if (port_config_parse(specs[i], &cfg, err, sizeof(err))) {
			fprintf(stderr, "uroce: -p: port %d '%s': %s\n", i, specs[i], err);
			return -1;
		}
		snprintf(lp->spec, sizeof(lp->spec), "%s", specs[i]);
		lp->afxdp = cfg.kind == PORT_KIND_AFXDP;
		lp->loop = cfg.kind == PORT_KIND_LOOP;
		lp->dpdk = cfg.kind == PORT_KIND_DPDK;
		lp->verbs = cfg.kind == PORT_KIND_VERBS;
		snprintf(lp->ifname, sizeof(lp->ifname), "%s", cfg.ifname);
		lp->queue = cfg.queue;
		lp->loop_index = cfg.loop_index;
	}
	L.nports = n;
	return 0;
}

/* Ports to engines (port i on core i mod n), one context per engine. */
static int open_engines(void)
{
	struct loop_fabric *fab = NULL;
	int nloop = 0;
	unsigned maxloop = 0;

	for (int i = 0; i < L.nports; i++)
		if (L.port[i].loop) {
			nloop++;
			if (L.port[i].loop_index + 1 > maxloop)
				maxloop = L.port[i].loop_index + 1;
		}
	if (nloop && (nloop != L.nports || L.nlcores != 1)) {
		fprintf(stderr, "uroce: loop ports share one in-process fabric, driven by one engine on its own clock: "
		        "give only loop ports, and one core (-l N)\n");
		return -1;
	}
	if (L.nports < L.nlcores) {
		fprintf(stderr, "uroce: %d cores but %d port(s): every engine needs a port (give fewer cores)\n",
		        L.nlcores, L.nports);
		return -1;
	}
	if (L.nports > L.nlcores * UROCE_MAX_PORTS) {
		fprintf(stderr, "uroce: %d ports on %d engine(s): an engine polls at most %d\n", L.nports, L.nlcores,
		        UROCE_MAX_PORTS);
		return -1;
	}
	if (nloop) {
		struct loop_fabric_opts fo = { .nports = (maxloop + 1) & ~1u, .seed = (uint64_t)getpid(),
		                               .real_time = true };
		char err[256];

		fab = loop_fabric_create_opts(&fo, err, sizeof(err));
		if (!fab) {
			fprintf(stderr, "uroce: the loop fabric: %s\n", err);
			return -1;
		}
		for (unsigned a = 0; a + 1 < fo.nports; a += 2)
			loop_fabric_connect(fab, a, a + 1, NULL, NULL);
	}
	for (int i = 0; i < L.nports; i++) {
		struct l_lcore *lc = &L.lc[i % L.nlcores];

		L.port[i].lcore = lc->idx;
		L.port[i].num = (uint8_t)(lc->nports + 1);
		lc->ports[lc->nports++] = i;
	}
	for (int k = 0; k < L.nlcores; k++) {
		struct l_lcore *lc = &L.lc[k];
		const char *specs[UROCE_MAX_PORTS];
		struct uroce_context_attr ca = {0};
		int rc;

		for (int j = 0; j < lc->nports; j++)
			specs[j] = L.port[lc->ports[j]].spec;
		ca.ports = specs;
		ca.nports = (unsigned)lc->nports;
		ca.mode = UROCE_ENGINE_EMBEDDED; /* the lcore's own loop progresses it */
		ca.eal_argc = L.eal_argc;
		ca.eal_argv = L.eal_argv;
		ca.loop_fabric = fab;
		lc->fab = fab;
		rc = uroce_context_create(&lc->ctx, &ca);
		if (rc) {
			fprintf(stderr, "uroce: engine on core %d: %s\n", lc->cpu, uroce_last_error());
			return -1;
		}
		rc = uroce_pd_alloc(lc->ctx, &lc->pd);
		if (rc) {
			fprintf(stderr, "uroce: engine on core %d: %s\n", lc->cpu, uroce_last_error());
			return -1;
		}
	}
	return 0;
}

static void close_engines(void)
{
	struct loop_fabric *fab = NULL;

	for (int k = 0; k < L.nlcores; k++) {
		struct l_lcore *lc = &L.lc[k];

		if (lc->pd)
			uroce_pd_free(lc->pd);
		if (lc->ctx)
			uroce_context_destroy(lc->ctx);
		if (lc->fab)
			fab = lc->fab;
		lc->pd = NULL;
		lc->ctx = NULL;
	}
	if (fab)
		loop_fabric_destroy(fab);
}

static void banner(void)
{
	l_out("uroce %s: %d engine(s), %d port(s)\n", uroce_version(), L.nlcores, L.nports);
	for (int k = 0; k < L.nlcores; k++) {
		char list[128] = "";
		size_t len = 0;

		for (int j = 0; j < L.lc[k].nports; j++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", j ? "," : "", L.lc[k].ports[j]);
		l_out("  engine %d: core %d, ports %s\n", k, L.lc[k].cpu, list);
	}
	for (int i = 0; i < L.nports; i++) {
		struct uroce_port_attr pa;
		struct l_port *lp = &L.port[i];

		if (uroce_query_port(L.lc[lp->lcore].ctx, lp->num, &pa))
			continue;
		if (pa.note[0])
			l_out("uroce port %d: %s\n", i, pa.note);
	}
}

int main(int argc, char **argv)
{
	enum { OPT_FILE = 0x100, OPT_PERIOD, OPT_JSON, OPT_NOINT, OPT_HELP, OPT_VERSION };
	static const struct option opts[] = {
		{ "interactive", no_argument, NULL, 'i' },
		{ "auto-start", no_argument, NULL, 'a' },
		{ "cmdline-file", required_argument, NULL, OPT_FILE },
		{ "stats-period", required_argument, NULL, OPT_PERIOD },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "no-interactive", no_argument, NULL, OPT_NOINT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *cores = NULL, *ports = NULL;
	bool want_i = false, autostart = false, noint = false;
	int nargs, c, rc = 0;

	nargs = port_split_eal_args(argc, argv, &L.eal_argc, &L.eal_argv);
	opterr = 0;
	while ((c = getopt_long(nargs, argv, ":l:p:iah", opts, NULL)) != -1) {
		switch (c) {
		case 'l': cores = optarg; break;
		case 'p': ports = optarg; break;
		case 'i': want_i = true; break;
		case 'a': autostart = true; break;
		case OPT_FILE: file = optarg; break;
		case OPT_JSON: L.json = true; break;
		case OPT_NOINT: noint = true; break;
		case OPT_PERIOD: {
			char *end;
			double s = strtod(optarg, &end);
			if (end == optarg || *end || !(s >= 0.1 && s <= 3600)) {
				fprintf(stderr, "uroce: --stats-period '%s' is not a number of seconds in 0.1..3600\n", optarg);
				return 2;
			}
			L.stats_period = s;
			break;
		}
		case 'h':
		case OPT_HELP: usage(stdout); return 0;
		case OPT_VERSION: app_print_version("uroce"); return 0;
		case ':':
			fprintf(stderr, "uroce: %s needs a value\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		default:
			fprintf(stderr, "uroce: unknown option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < nargs) {
		fprintf(stderr, "uroce: unexpected argument '%s' (EAL arguments go after --)\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!cores || !ports) {
		fprintf(stderr, "uroce: %s is required\n", !cores ? "-l CORES" : "-p PORTSPEC");
		usage(stderr);
		return 2;
	}
	if (noint && !file) {
		fprintf(stderr, "uroce: --no-interactive goes with --cmdline-file FILE\n");
		return 2;
	}
	if (noint && want_i) {
		fprintf(stderr, "uroce: -i and --no-interactive contradict each other\n");
		return 2;
	}
	if (parse_cores(cores) || parse_ports(ports))
		return 2;
	for (int k = 0; k < L.nlcores; k++)
		if (L.lc[k].cpu >= sysconf(_SC_NPROCESSORS_ONLN)) {
			fprintf(stderr, "uroce: -l: core %d is not online (this machine has cores 0..%ld)\n", L.lc[k].cpu,
			        sysconf(_SC_NPROCESSORS_ONLN) - 1);
			return 2;
		}
	signal(SIGPIPE, SIG_IGN);
	/* ^C and SIGTERM end the run as quit does: traffic stopped, QPs
	 * destroyed, captures closed, the ports' XDP programs detached */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	L.tr = (struct l_traffic){ .op = L_OP_WRITE, .size = 65536, .depth = 16, .verify = true };
	for (int i = 0; i < L_MAX_QPS; i++)
		L.qp[i].comm.tcp.fd = -1;
	if (open_engines()) {
		close_engines();
		return 1;
	}
	L.interactive = want_i || (!file && isatty(STDIN_FILENO));
	L.interactive = L.interactive && !noint;
	L.tty = L.interactive && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (l_lcores_start()) {
		rc = 1;
		goto out;
	}
	bool saved = L.interactive;
	L.interactive = false; /* the prompt is not up yet */
	banner();
	if (file && l_load(file))
		rc = 1;
	if (autostart && l_exec_line((char[]){ "start" }))
		rc = 1;
	L.interactive = saved;
	if (!noint && !L.quit)
		rc = l_cli_run() || rc;
	if (L.traffic_on)
		l_exec_line((char[]){ "stop" });
out:
	l_qp_destroy_all();
	l_ports_close_captures();
	l_lcores_stop();
	close_engines();
	return rc;
}
