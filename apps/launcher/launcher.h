/* SPDX-License-Identifier: MIT */
/* uroce, the launcher: engines on the cores of -l, the ports of -p, and
 * commands from a prompt or a script (docs/launcher.md). The engines
 * (lcores) run uroce_progress, the traffic of their QPs and the calls the
 * main thread hands them; the main thread only reads commands and prints.
 * Every uroce call on an lcore's context runs on that lcore's thread.
 */
#ifndef UROCE_APPS_LAUNCHER_H
#define UROCE_APPS_LAUNCHER_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uroce/uroce.h>

#include "../perf.h"

#define L_MAX_LCORES 16
#define L_MAX_PORTS 16              /* -p: the launcher's ports, numbered from 0 as testpmd's */
#define L_MAX_QPS 64
#define L_MAX_SIZE (1u << 23)       /* set traffic size: perftest's largest */
#define L_MAX_DEPTH 1024
#define L_DEFAULT_TIMEOUT_S 60.0    /* connect, accept, wait */
#define L_CLOSE_TIMEOUT_S 10.0      /* each step of perftest's ending with a peer */
#define L_DRAIN_NS (5ull * 1000000000ull) /* stop: outstanding WRs get this long to complete */
#define L_QKEY 0x11111111u          /* perftest's UD Q_Key */
#define L_TCP_PORT 18515            /* perftest's */

struct l_lcore;

/* A port of -p. */
struct l_port {
	char spec[128];
	int lcore;                  /* the engine that polls it */
	uint8_t num;                /* its number in that engine's context (1..) */
	bool afxdp, loop, dpdk, verbs;
	char ifname[32];            /* afxdp */
	unsigned queue;             /* afxdp: its queue */
	unsigned loop_index;        /* loop */
	struct uroce_port_stats base; /* clear port stats: counts shown are from here */
	bool capturing;
	char cap_path[256];
	double loss_pct;            /* set loss (loop) */
	bool stopped;               /* port stop */
};

/* One run of traffic, as set traffic gives it. */
enum l_op { L_OP_WRITE, L_OP_SEND, L_OP_READ, L_OP_WRITE_IMM, L_OP__COUNT };

struct l_traffic {
	enum l_op op;
	uint32_t size;
	uint32_t depth;
	double rate_mbps;           /* payload Mbit/s per QP; 0 = as fast as it goes */
	bool verify;
};

enum l_qp_state { L_QP_CREATED, L_QP_CONNECTED, L_QP_CLOSED, L_QP_ERROR };
enum l_qp_kind { L_RC, L_UC, L_UD, L_SR, L_EC, L_BE, L_KIND__COUNT };

/* Counters an lcore writes and the main thread reads. */
struct l_counts {
	_Atomic uint64_t posted, completed, bytes, errors;
	_Atomic uint64_t recv_msgs, recv_bytes, verified, bad, partial;
	_Atomic uint64_t t_first_ns, t_last_ns;     /* first post, last completion of the run */
	_Atomic int last_status;                    /* the last failed completion's status */
};

struct l_qp {
	bool used;
	int id;
	int lcore;
	int port;                   /* launcher port */
	int backup;                 /* launcher port of the backup, -1 when none */
	enum l_qp_kind kind;
	struct uroce_qp_init_attr init;
	struct uroce_qp *qp;
	struct uroce_cq *scq, *rcq;
	struct uroce_mr *mr;
	struct uroce_ah *ah;        /* UD */
	uint8_t *buf;               /* [send slots: depth | receive slots: 2 x depth], each size bytes */
	size_t buf_len;
	struct l_traffic tr;        /* what the buffers were laid out for (at connect/accept) */
	enum l_qp_state state;
	bool passive;               /* accepted: the peer sends, this end serves */
	bool local;                 /* joined to a QP of this launcher (connect qp N local M) */
	char peer[80];
	struct perf_comm comm;      /* the exchange, kept open until the run ends */
	struct perf_dest my, rem;
	uint32_t rem_qkey;
	struct l_traffic run;       /* the run start began (fits tr) */
	bool live;                  /* set and cleared on the lcore: its traffic step serves the QP */
	bool run_open;              /* started, and the peer not yet told of its end */
	bool run_skip;              /* start left it idle (its layout does not fit the traffic) */
	/* traffic, written by the lcore */
	_Atomic bool running;       /* active end: post while set */
	_Atomic bool draining;      /* stop asked: no new posts */
	uint64_t seq;               /* next message's number */
	uint32_t outstanding;
	uint64_t t_start_ns;
	uint64_t allowance;         /* messages the rate allows from t_start_ns on */
	uint64_t rx_next;           /* passive: next message number expected */
	struct l_counts c;
};

/* A call the main thread hands an lcore; run between two progress passes. */
typedef int (*l_call_fn)(struct l_lcore *lc, void *arg);

struct l_lcore {
	int idx;
	int cpu;
	pthread_t th;
	bool started;
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct loop_fabric *fab;    /* its loop ports' fabric, else NULL */
	int ports[UROCE_MAX_PORTS]; /* launcher ports, by context port number - 1 */
	int nports;
	_Atomic bool stop;
	/* the mailbox: one call at a time, from the main thread */
	l_call_fn call_fn;
	void *call_arg;
	int call_ret;
	_Atomic int call_pending;
	_Atomic uint64_t traffic_work; /* messages posted and completions taken */
};

struct launcher {
	struct l_lcore lc[L_MAX_LCORES];
	int nlcores;
	struct l_port port[L_MAX_PORTS];
	int nports;
	struct l_qp qp[L_MAX_QPS];
	struct l_traffic tr;        /* set traffic */
	bool traffic_on;            /* start .. stop */
	bool tx_first;
	bool json;
	bool interactive;
	bool tty;                   /* the prompt is on a terminal: the live status is drawn */
	double stats_period;
	int eal_argc;
	char **eal_argv;
	volatile bool quit;         /* quit, end of input, or a signal */
	int depth;                  /* load nesting */
	uint64_t t_traffic_ns;
	/* the live status: the last sample */
	uint64_t st_bytes, st_ns;
	bool status_shown;
	int errors;                 /* commands that failed (the exit status of a script) */
};

extern struct launcher L;

/* Output: every line the launcher prints goes through here, so the prompt
 * and the live status are redrawn around it. */
void l_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void l_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An asynchronous line (not the answer to a command): the prompt is moved. */
void l_async(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* lcores (launcher_lcore.c) */
int l_lcores_start(void);
void l_lcores_stop(void);
int l_call(int lcore, l_call_fn fn, void *arg);
uint64_t l_now_ns(void);

/* commands (launcher_cmd.c) */
int l_exec_line(char *line);       /* 0, or -1 when it failed (the message said why) */
int l_load(const char *path);
void l_complete_init(void);
char **l_complete(const char *text, int start, int end);
int l_parse_uint(const char *s, uint64_t max, uint64_t *out);
int l_parse_port(const char *s, bool all_ok, int *out); /* -1 = all */
int l_parse_qp(const char *s, bool all_ok, int *out);

/* ports (launcher_port.c) */
int l_cmd_show_port(int argc, char **argv);
int l_cmd_clear_port(int argc, char **argv);
int l_cmd_port_stopstart(int argc, char **argv);
int l_cmd_set_loss(int argc, char **argv);
int l_cmd_pcap(int argc, char **argv);
int l_cmd_show_engine(int argc, char **argv);
int l_port_stats(int port, struct uroce_port_stats *st); /* since the last clear */
int l_engine_stats(int k, struct uroce_engine_stats *es, uint64_t *rx, uint64_t *tx, uint64_t *cpu_ns);
void l_ports_close_captures(void);

/* QPs (launcher_qp.c) */
int l_cmd_create_qp(int argc, char **argv);
int l_cmd_connect_qp(int argc, char **argv);
int l_cmd_accept_qp(int argc, char **argv);
int l_cmd_show_qp(int argc, char **argv);
int l_cmd_destroy_qp(int argc, char **argv);
int l_cmd_wait_qp(int argc, char **argv);
void l_qp_destroy_all(void);
const char *l_kind_str(enum l_qp_kind k);
/* Check the exchanges of accepted QPs: a peer that ends its run is answered. */
void l_qps_poll_peers(void);
int l_qp_finish_passive(struct l_qp *q);
int l_qp_close_active(struct l_qp *q);
int l_qp_show_data(struct l_qp *q, struct uroce_qp_attr *attr, struct uroce_qp_stats *st,
                   struct uroce_failover_info *fo, bool *has_fo);

/* traffic (launcher_traffic.c) */
int l_cmd_set_traffic(int argc, char **argv);
int l_cmd_start(int argc, char **argv);
int l_cmd_stop(int argc, char **argv);
unsigned l_traffic_step(struct l_lcore *lc); /* on the lcore: every QP of it */
int l_traffic_prepare(struct l_qp *q);       /* on the lcore: the passive end's receives and read data */
void l_traffic_status(bool final);           /* the live status line */
void l_traffic_stop_qp(struct l_qp *q);      /* stop one active QP and wait for what it has in flight */
void l_traffic_scan_writes(struct l_qp *q);  /* passive, write: check the slots the peer wrote */
const char *l_op_str(enum l_op op);
void l_fill_pattern(uint8_t *p, uint32_t len, uint64_t seq);
bool l_check_pattern(const uint8_t *p, uint32_t len, uint64_t *seq_out);

/* JSON (launcher_json.c) */
void l_json_stats(FILE *f);
void l_json_qp(FILE *f, struct l_qp *q);

/* the prompt (launcher_cli.c) */
int l_cli_run(void);
void l_cli_before_output(void);
void l_cli_after_output(void);
void l_tick(void);                 /* peers, periodic statistics, the live status */

#endif
