/* SPDX-License-Identifier: MIT */
/* The prompt: libedit's readline interface in its callback form. The main
 * thread waits on the terminal in poll() for a tenth of a second at most,
 * reads the keys itself and hands them to libedit one at a time; between
 * keys it answers accepted QPs whose peer ends its run, prints the periodic
 * statistics and redraws the live status, the typed line kept. libedit
 * (BSD licensed, in every distribution) rather than DPDK's cmdline: the
 * launcher builds and runs without DPDK, and libedit brings history and
 * completion as readline users know them. Without a terminal, lines are
 * read as they come.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <editline/readline.h>

#include "launcher.h"

#define L_PROMPT "uroce> "
#define L_HISTORY_MAX 1000
#define L_TICK_MS 100

static bool in_command;    /* a command runs: its output follows the line typed */
static bool prompt_up;     /* libedit's prompt is on the screen */

void l_cli_before_output(void)
{
	if (prompt_up && !in_command && L.tty) {
		fputs("\r\033[K", stdout); /* the prompt's line is taken; it is drawn again below */
		fflush(stdout);
	}
	fflush(stdout); /* stdout's lines before stderr's */
}

void l_cli_after_output(void)
{
	if (!prompt_up || in_command || !L.tty)
		return;
	rl_forced_update_display(); /* the prompt and what is typed so far */
}

static void run_line(char *line)
{
	char *p = line;

	while (*p == ' ' || *p == '\t')
		p++;
	in_command = true;
	l_exec_line(p);
	in_command = false;
}

static char *pending; /* a line libedit handed over, run once it returns */

/* The keys read from the terminal, handed to libedit one call at a time:
 * its reads never wait (an empty queue reads as nothing yet), so the loop
 * keeps drawing the status and answering peers while a line is typed. */
static unsigned char inq[256];
static int inq_head, inq_len;

static int getc_queued(FILE *f)
{
	(void)f;
	if (inq_head == inq_len) {
		/* libedit reads on while the terminal has more (its typeahead
		 * check): take it, but never wait */
		struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 0) > 0 && (n = read(STDIN_FILENO, inq, sizeof(inq))) > 0) {
			inq_head = 0;
			inq_len = (int)n;
		}
	}
	return inq_head < inq_len ? inq[inq_head++] : -1;
}

static void on_line(char *line)
{
	if (!line) { /* end of input (^D) */
		L.quit = true;
		fputc('\n', stdout);
		return;
	}
	if (*line)
		add_history(line);
	free(pending);
	pending = line;
}

/* Between libedit's reads the terminal neither echoes nor waits for a
 * whole line: keys that arrive while a command runs stay unseen until
 * libedit reads and draws them. */
static struct termios tio_saved;
static bool tio_ok;

static void tty_quiet(void)
{
	struct termios t;

	if (!tio_ok || tcgetattr(STDIN_FILENO, &t))
		return;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

static void history_path(char *buf, size_t len)
{
	const char *home = getenv("HOME");

	snprintf(buf, len, "%s/.uroce_history", home && *home ? home : ".");
}

static uint64_t next_stats, next_status;

/* Between commands, and while sleep and wait qp wait: accepted QPs whose
 * peer ends its run, the periodic statistics, the live status. */
void l_tick(void)
{
	uint64_t now = l_now_ns();

	if (!next_stats)
		next_stats = now + (uint64_t)(L.stats_period * 1e9);
	l_qps_poll_peers();
	if (L.stats_period > 0 && now >= next_stats) {
		next_stats = now + (uint64_t)(L.stats_period * 1e9);
		if (L.json) {
			l_cli_before_output();
			l_json_stats(stdout);
			fflush(stdout);
			l_cli_after_output();
			L.status_shown = false;
		} else {
			bool was = in_command;

			l_cli_before_output();
			in_command = true; /* the lines below go where the prompt was */
			l_out("---- statistics every %.1f s ----\n", L.stats_period);
			l_cmd_show_port(4, (char *[]){ "show", "port", "stats", "all", NULL });
			in_command = was;
			l_cli_after_output();
		}
	}
	if (L.traffic_on && L.tty && now >= next_status && now - L.t_traffic_ns >= 1000000000ull) {
		next_status = now + 1000000000ull;
		l_traffic_status(false);
	}
}

/* Lines from a pipe or a file given as standard input, no prompt. */
static int run_plain(void)
{
	char *line = NULL;
	size_t cap = 0;
	while (!L.quit) {
		struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
		int n = poll(&pfd, 1, L_TICK_MS);

		if (n > 0) {
			ssize_t len = getline(&line, &cap, stdin);
			if (len < 0)
				break;
			if (len && line[len - 1] == '\n')
				line[len - 1] = 0;
			run_line(line);
		}
		l_tick();
	}
	free(line);
	return L.errors ? 1 : 0;
}

int l_cli_run(void)
{
	char hist[512];

	if (!L.interactive)
		return run_plain();
	rl_getc_function = getc_queued; /* before any libedit call: its first one sets up the reads */
	l_complete_init();
	rl_attempted_completion_function = l_complete;
	history_path(hist, sizeof(hist));
	read_history(hist);
	stifle_history(L_HISTORY_MAX);
	tio_ok = L.tty && !tcgetattr(STDIN_FILENO, &tio_saved);
	rl_callback_handler_install(L_PROMPT, on_line);
	prompt_up = true;
	tty_quiet();
	while (!L.quit) {
		struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
		int n = poll(&pfd, 1, L_TICK_MS);

		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (pfd.revents & (POLLIN | POLLHUP))) {
			ssize_t got = read(STDIN_FILENO, inq, sizeof(inq));

			if (got <= 0) { /* the terminal went away */
				L.quit = true;
				break;
			}
			inq_head = 0;
			inq_len = (int)got;
		}
		while (inq_head < inq_len && !pending && !L.quit) {
			rl_callback_read_char();
		}
		if (pending) {
			/* the answer starts on the line libedit left */
			if (L.tty) {
				fputs("\r\033[K", stdout);
				fflush(stdout); /* before anything on stderr */
			}
			run_line(pending);
			free(pending);
			pending = NULL;
			/* libedit leaves its one-key-at-a-time mode with each
			 * line: install again, which draws a fresh prompt */
			if (!L.quit)
				rl_callback_handler_install(L_PROMPT, on_line);
		}
		tty_quiet();
		if (!L.quit)
			l_tick();
	}
	prompt_up = false;
	rl_callback_handler_remove();
	if (tio_ok)
		tcsetattr(STDIN_FILENO, TCSANOW, &tio_saved);
	write_history(hist);
	return 0;
}
