/* SPDX-License-Identifier: MIT */
/* The launcher's commands: one table (words, usage, what it does), the
 * dispatch, help, scripts (load, --cmdline-file) and tab completion drawn
 * from the usage lines. A command that is wrong prints its usage; nothing
 * typed ends the prompt but quit and end of input. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <editline/readline.h>

#include "launcher.h"

#define L_MAX_ARGS 32
#define L_MAX_LOAD_DEPTH 8

static int cmd_help(int argc, char **argv);
static int cmd_quit(int argc, char **argv);
static int cmd_load(int argc, char **argv);
static int cmd_sleep(int argc, char **argv);

struct l_cmd {
	const char *words;   /* the leading keywords that select it */
	const char *usage;   /* one line per form */
	const char *help;
	int (*fn)(int argc, char **argv);
};

static const struct l_cmd cmds[] = {
	{ "show port", "show port info|stats|xstats all|N\nshow port gids N",
	  "a port's addresses, link, XDP mode and queue (info), its counters and drops by reason since the last "
	  "clear (stats), every counter by name (xstats), its GID table (gids)", l_cmd_show_port },
	{ "clear port", "clear port stats all|N", "counts shown from now on", l_cmd_clear_port },
	{ "port", "port stop|start N",
	  "take a port's link down or up (afxdp: the interface, as ip link set; loop: the wire), so failover can be "
	  "watched", l_cmd_port_stopstart },
	{ "show engine", "show engine", "each engine's core, loops, idle share, frames, timers and CPU time",
	  l_cmd_show_engine },
	{ "create qp", "create qp rc|uc|ud|sr|ec|be [port N] [paths N] [policy single|p2c|rr|random] "
	  "[cc none|dcqcn|swift|cubic|eqds] [backup PORT] [timeout US]",
	  "a QP on port N (default 0); paths, policy and cc for sr/ec/be; a backup port for rc/sr failover; "
	  "timeout: be's deadline per message", l_cmd_create_qp },
	{ "connect qp", "connect qp N IP [tcp-port P] [timeout S]\nconnect qp N local M",
	  "the active side: perftest's exchange with IP (a launcher's accept, uroce-perf or ib_write_bw/ib_read_bw "
	  "as the server), or QP M of this launcher", l_cmd_connect_qp },
	{ "accept qp", "accept qp N [tcp-port P] [timeout S]",
	  "the passive side: wait for the peer's connect (a launcher, or a uroce-perf/perftest client); set the "
	  "same traffic first, as both ends of perftest do", l_cmd_accept_qp },
	{ "show qp", "show qp N|all", "state, policies, PSNs, paths with RTTs, controller, failover, counters",
	  l_cmd_show_qp },
	{ "destroy qp", "destroy qp N|all", "end its exchange and destroy it", l_cmd_destroy_qp },
	{ "wait qp", "wait qp N|all [timeout S]", "until the peer of an accepted QP ends its run",
	  l_cmd_wait_qp },
	{ "show stats", "show stats json", "every port, engine and QP as one JSON object", NULL },
	{ "set traffic", "set traffic write|send|read|write_imm size S depth D [rate MBPS] [verify on|off]",
	  "what start sends on each connected QP: message size (1..8388608), messages in flight (1..1024), "
	  "a payload rate per QP in Mbit/s (0 = as fast as it goes), data checked at the receiver", l_cmd_set_traffic },
	{ "set loss", "set loss N PCT", "drop PCT percent of what loop port N sends (0..100)", l_cmd_set_loss },
	{ "start", "start [tx_first]",
	  "traffic on every QP this end connected; tx_first: the first burst (depth messages) goes before the rate "
	  "applies", l_cmd_start },
	{ "stop", "stop", "end the traffic, wait for what is in flight, print the summary per QP", l_cmd_stop },
	{ "pcap", "pcap start N FILE [max FRAMES]\npcap stop N",
	  "capture port N's frames into a pcap file (Wireshark, uroce-pcap): the only view of AF_XDP traffic",
	  l_cmd_pcap },
	{ "load", "load FILE", "run the commands of FILE", cmd_load },
	{ "sleep", "sleep S", "wait S seconds (0..3600), the engines running (scripts)", cmd_sleep },
	{ "help", "help [CMD]", "the commands, or one command's usage", cmd_help },
	{ "quit", "quit", "stop the traffic, destroy the QPs, exit", cmd_quit },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void print_usage(const struct l_cmd *c)
{
	const char *p = c->usage;

	while (*p) {
		size_t n = strcspn(p, "\n");
		l_out("%s %.*s\n", p == c->usage ? "usage:" : "      ", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* The command whose keywords start argv, the longest. */
static const struct l_cmd *find_cmd(int argc, char **argv)
{
	const struct l_cmd *best = NULL;
	int best_n = 0;

	for (size_t i = 0; i < NCMDS; i++) {
		char w[64], *save, *tok;
		int n = 0, ok = 1;

		snprintf(w, sizeof(w), "%s", cmds[i].words);
		for (tok = strtok_r(w, " ", &save); tok; tok = strtok_r(NULL, " ", &save), n++)
			if (n >= argc || strcmp(tok, argv[n])) {
				ok = 0;
				break;
			}
		if (ok && n > best_n) {
			best = &cmds[i];
			best_n = n;
		}
	}
	return best;
}

static int cmd_show_stats(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[2], "json"))
		return -EINVAL;
	l_json_stats(stdout);
	fflush(stdout);
	return 0;
}

int l_exec_line(char *line)
{
	char *argv[L_MAX_ARGS + 1], *save, *tok;
	int argc = 0, rc;
	const struct l_cmd *c;

	char *hash = strchr(line, '#');
	if (hash)
		*hash = 0; /* a comment */
	for (tok = strtok_r(line, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (argc == L_MAX_ARGS) {
			l_err("too many words (at most %d)\n", L_MAX_ARGS);
			L.errors++;
			return -1;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	if (!argc)
		return 0;
	c = find_cmd(argc, argv);
	if (!c) {
		l_err("unknown command '%s': type help for the commands\n", argv[0]);
		L.errors++;
		return -1;
	}
	rc = c->fn ? c->fn(argc, argv) : cmd_show_stats(argc, argv);
	if (rc == -EINVAL)
		print_usage(c);
	if (rc) {
		L.errors++;
		return -1;
	}
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	if (argc == 1) {
		l_out("commands (help CMD for one):\n");
		for (size_t i = 0; i < NCMDS; i++) {
			const char *p = cmds[i].usage;
			while (*p) {
				size_t n = strcspn(p, "\n");
				l_out("  %.*s\n", (int)n, p);
				p += n + (p[n] == '\n');
			}
		}
		return 0;
	}
	const struct l_cmd *c = find_cmd(argc - 1, argv + 1);
	if (!c) {
		/* "help show": every command that starts so */
		int shown = 0;
		for (size_t i = 0; i < NCMDS; i++)
			if (!strncmp(cmds[i].words, argv[1], strlen(argv[1]))) {
				print_usage(&cmds[i]);
				shown++;
			}
		if (shown)
			return 0;
		l_err("help: no command '%s'; type help for the commands\n", argv[1]);
		return -1;
	}
	print_usage(c);
	l_out("  %s\n", c->help);
	return 0;
}

static int cmd_quit(int argc, char **argv)
{
	if (argc != 1)
		return -EINVAL;
	L.quit = true;
	return 0;
}

static int cmd_sleep(int argc, char **argv)
{
	char *end;
	double s;

	if (argc != 2)
		return -EINVAL;
	s = strtod(argv[1], &end);
	if (end == argv[1] || *end || !(s >= 0 && s <= 3600)) {
		l_err("sleep: '%s' is not a number of seconds in 0..3600\n", argv[1]);
		return -EINVAL;
	}
	uint64_t end_ns = l_now_ns() + (uint64_t)(s * 1e9);
	while (l_now_ns() < end_ns && !L.quit) {
		nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
		l_tick();
	}
	return 0;
}

int l_load(const char *path)
{
	FILE *f;
	char line[1024];
	int failed = 0, lineno = 0;

	if (L.depth >= L_MAX_LOAD_DEPTH) {
		l_err("load %s: scripts nest deeper than %d\n", path, L_MAX_LOAD_DEPTH);
		return -1;
	}
	f = fopen(path, "r");
	if (!f) {
		l_err("load %s: %s\n", path, strerror(errno));
		return -1;
	}
	L.depth++;
	while (!L.quit && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		lineno++;
		if (n && line[n - 1] == '\n')
			line[--n] = 0;
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			continue;
		l_out("uroce> %s\n", p);
		if (l_exec_line(p)) {
			l_err("%s:%d: the command above failed\n", path, lineno);
			failed = 1;
		}
	}
	L.depth--;
	fclose(f);
	return failed ? -1 : 0;
}

static int cmd_load(int argc, char **argv)
{
	if (argc != 2)
		return -EINVAL;
	return l_load(argv[1]) ? -EIO : 0;
}

/* ---- helpers the commands share ---- */

int l_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

int l_parse_port(const char *s, bool all_ok, int *out)
{
	uint64_t v;

	if (all_ok && !strcmp(s, "all")) {
		*out = -1;
		return 0;
	}
	if (l_parse_uint(s, (uint64_t)L.nports - 1, &v)) {
		l_err("'%s' is not a port: ports are 0..%d%s\n", s, L.nports - 1, all_ok ? " or all" : "");
		return -1;
	}
	*out = (int)v;
	return 0;
}

int l_parse_qp(const char *s, bool all_ok, int *out)
{
	uint64_t v;

	if (all_ok && !strcmp(s, "all")) {
		*out = -1;
		return 0;
	}
	if (l_parse_uint(s, L_MAX_QPS - 1, &v)) {
		l_err("'%s' is not a QP number: 0..%d%s\n", s, L_MAX_QPS - 1, all_ok ? " or all" : "");
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* ---- completion: the words each usage line allows where the cursor is ---- */

static char *cands[256];
static int ncands, cand_next;

static void add_cand(const char *w, size_t n)
{
	if (!n || ncands == (int)(sizeof(cands) / sizeof(cands[0])))
		return;
	for (size_t i = 0; i < n; i++)
		if (isupper((unsigned char)w[i]))
			return; /* a placeholder (N, FILE) */
	for (int i = 0; i < ncands; i++)
		if (strlen(cands[i]) == n && !strncmp(cands[i], w, n))
			return;
	cands[ncands++] = strndup(w, n);
}

/* The alternatives of one usage word ("info|stats", "[port"). */
static void add_alternatives(const char *w)
{
	while (*w == '[')
		w++;
	while (*w) {
		size_t n = strcspn(w, "|]");
		add_cand(w, n);
		w += n;
		if (*w == ']')
			break;
		if (*w)
			w++;
	}
}

static bool word_matches(const char *typed, const char *pat)
{
	while (*pat == '[')
		pat++;
	while (*pat) {
		size_t n = strcspn(pat, "|]");
		bool ph = false;
		for (size_t i = 0; i < n; i++)
			ph |= isupper((unsigned char)pat[i]) != 0;
		if (ph || (strlen(typed) == n && !strncmp(typed, pat, n)))
			return true;
		pat += n;
		if (*pat == ']')
			break;
		if (*pat)
			pat++;
	}
	return false;
}

static void gather(char **typed, int k)
{
	for (size_t i = 0; i < NCMDS; i++) {
		const char *u = cmds[i].usage;
		while (*u) {
			char line[256], *w[40], *save;
			size_t n = strcspn(u, "\n");
			int nw = 0, ok = 1, first_opt = -1;

			snprintf(line, sizeof(line), "%.*s", (int)n, u);
			u += n + (u[n] == '\n');
			for (char *t = strtok_r(line, " ", &save); t && nw < 40; t = strtok_r(NULL, " ", &save))
				w[nw++] = t;
			for (int j = 0; j < nw; j++)
				if (w[j][0] == '[') {
					first_opt = j;
					break;
				}
			for (int j = 0; j < k && ok; j++) {
				if (first_opt >= 0 && j >= first_opt)
					break;
				if (j >= nw || !word_matches(typed[j], w[j]))
					ok = 0;
			}
			if (!ok)
				continue;
			if (k < nw && (first_opt < 0 || k < first_opt))
				add_alternatives(w[k]);
			else if (first_opt >= 0 && k >= first_opt)
				for (int j = first_opt; j < nw; j++)
					if (w[j][0] == '[')
						add_alternatives(w[j]);
		}
	}
}

static char *gen(const char *text, int state)
{
	if (!state)
		cand_next = 0;
	while (cand_next < ncands) {
		const char *c = cands[cand_next++];
		if (!strncmp(c, text, strlen(text)))
			return strdup(c);
	}
	return NULL;
}

void l_complete_init(void)
{
	rl_completion_append_character = ' ';
}

char **l_complete(const char *text, int start, int end)
{
	char buf[512], *typed[L_MAX_ARGS], *save;
	int k = 0;

	(void)end;
	for (int i = 0; i < ncands; i++)
		free(cands[i]);
	ncands = 0;
	snprintf(buf, sizeof(buf), "%.*s", start, rl_line_buffer);
	for (char *t = strtok_r(buf, " \t", &save); t && k < L_MAX_ARGS; t = strtok_r(NULL, " \t", &save))
		typed[k++] = t;
	gather(typed, k);
	rl_attempted_completion_over = 1; /* never file names */
	return rl_completion_matches(text, gen);
}
