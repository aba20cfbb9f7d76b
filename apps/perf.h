/* SPDX-License-Identifier: MIT */
/* uroce-perf's perftest-compatible modes (write_bw, read_bw, send_bw,
 * write_lat, read_lat, send_lat): options, per-run state, and the pieces
 * each file provides (perf_args.c, perf_exchange.c, perf_setup.c,
 * perf_bw.c, perf_lat.c, perf_report.c).
 */
#ifndef UROCE_APPS_PERF_H
#define UROCE_APPS_PERF_H

#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

#include <uroce/uroce.h>

#include "rel_args.h"
#include "tcp_exchange.h"

/* Limits, each with its reason. */
#define PERF_MAX_QPS 16384             /* the per-QP arrays are sized by -q; sr's two QPNs per QP
                                        * (data, control) fit the transport's 65536-entry QP table */
#define PERF_WRID_QP_BITS 16           /* a send wr_id: QP index below, WRs it covers above */
#define PERF_MAX_SIZE (1u << 23)       /* -a goes up to 2^23, perftest's largest size */
#define PERF_UD_GRH 40                 /* a UD receive buffer starts with room for the GRH */
#define PERF_DEFAULT_TCP_PORT 18515    /* perftest's default */
#define PERF_VERSION "6.06"            /* the version perftest 4.5-0.17 announces */
#define PERF_VERSION_LEN 16            /* bytes of the version message */
#define PERF_KEY_MSG_LEN 108           /* the key message with GID and SRQN, NUL included */
#define PERF_KEY_BATCH 64              /* key messages a client writes ahead (7 KB: within any socket buffer) */
#define PERF_DEFAULT_QKEY 0x11111111u  /* perftest's DEFAULT_QKEY */
#define PERF_CYCLE_BUFFER 4096         /* perftest's cycle_buffer: the page size */
#define PERF_CACHE_LINE 64
#define PERF_MAX_LAT_ITERS 100000000u  /* timestamps are kept per iteration */
#define PERF_MAX_ENGINES 16            /* -d afxdp:IFACE:A-B: one engine per queue */

enum perf_test {
	PERF_WRITE_BW,
	PERF_READ_BW,
	PERF_SEND_BW,
	PERF_WRITE_LAT,
	PERF_READ_LAT,
	PERF_SEND_LAT,
	PERF_ATOMIC_BW,
	PERF_ATOMIC_LAT,
};

#define PERF_ATOMIC_SIZE 8             /* an atomic moves one 64-bit word */
#define PERF_JSON_DEFAULT "perftest_out.json" /* perftest's --out_json file */

enum perf_output { PERF_OUT_FULL, PERF_OUT_BW, PERF_OUT_MSGRATE, PERF_OUT_LAT }; /* --output */

struct perf_opts {
	enum perf_test test;
	const char *name;          /* "write_bw" */
	int is_lat;
	const char *dev;           /* -d as given: uroce port spec(s), comma-separated */
	const char *devs[UROCE_MAX_PORTS]; /* one spec per port, in devs_buf */
	int ndevs;
	char devs_buf[512];
	int eal_argc;
	char **eal_argv;
	const char *server;        /* NULL = we are the server */
	int tcp_port;
	int ib_port;
	int gid_index;
	uint64_t size;
	uint64_t iters;
	double duration;           /* 0 = iterations */
	int all;                   /* -a */
	int num_qps;
	int mtu;                   /* enum uroce_mtu, 0 = the port's */
	int report_gbits;
	enum uroce_qp_type conn;
	int tx_depth;
	int rx_depth;
	int cq_mod;
	int out_reads;
	int qp_timeout;            /* -u: the RC QP's timeout exponent */
	double timeout;            /* seconds, every wait */
	int counters;              /* --counters: QP and port counters at exit */
	const char *pcap_path;     /* --pcap FILE: the QPs' port's frames (one file per engine: FILE.k) */
	int allow_partial;         /* --allow-partial: be messages that end before they are whole are no failure */
	struct rel_args rel;       /* --reliability and the sr/ec options; .attr goes to the QPs */
	/* Engines (perf_engines.c): 0, one context the main thread
	 * progresses; else that many contexts with engine threads, on the
	 * queues of a range (-d afxdp:IFACE:A-B, steered) or one (--cores C) */
	int nengines;
	int steer;                 /* a queue range: each QP's source ports reach its engine's queue */
	char eng_spec[PERF_MAX_ENGINES][64];
	int cores[PERF_MAX_ENGINES]; /* --cores: each engine's CPU */
	int ncores;
	int atomic_cas;            /* -A CMP_AND_SWAP (else FETCH_AND_ADD) */
	int duplex;                /* -b: both ends send */
	int events;                /* -e: sleep on completion channels (an engine thread runs the transport) */
	int run_infinitely;        /* --run_infinitely: until SIGINT/SIGTERM, a line per report period */
	double report_period;      /* --report-period SEC: a line every SEC seconds while the test runs */
	int out_json;              /* --out_json */
	const char *out_json_file; /* --out_json_file FILE */
	enum perf_output output;   /* --output */
};

/* Parse "MODE [options] [server]"; argv[0] is the mode. Returns 0, or 2
 * after printing what is wrong and what is accepted (1 for --help). */
int perf_parse_args(int argc, char **argv, struct perf_opts *o);
/* The mode names, for main()'s dispatch. */
int perf_is_mode(const char *name);
/* The perftest modes' --help text (mode NULL: "MODE"), which uroce-perf's
 * own --help prints too, so its man page has every option. */
void perf_usage(FILE *f, const char *mode);
/* Run a parsed test; the process exit status (0 only if every iteration completed). */
int perf_main(int argc, char **argv);

/* ---- perftest's TCP exchange (perf_exchange.c) ---- */

/* One QP's half of the key message. */
struct perf_dest {
	uint32_t lid;
	uint32_t out_reads;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t vaddr;
	uint8_t gid[16];
	uint32_t srqn;
};

struct perf_comm {
	/* The connection; its progress callback keeps the transport running
	 * while a read waits (the server of a write_bw test receives all its
	 * data then), its activity counter (packets received) keeps a long
	 * test from timing out while it runs. */
	struct tcp_exchange tcp;
	int is_client;
	char rem_version[PERF_VERSION_LEN + 1];
	double rem_version_num;
	/* This end's reliability modes: the first key message carries them
	 * (rel_exchange.h; rc: perftest's bytes), both ends must agree. */
	const struct uroce_rel_attr *rel;
	int rel_checked;
	/* This end's test and the options both ends must agree on: set, two
	 * uroce-perf ends trade them after the version (perf_xchg_versions)
	 * and both refuse a difference; NULL (the launcher): perftest's bytes. */
	const struct perf_opts *opts;
};

int perf_comm_open(struct perf_comm *c, const char *server, int port, double timeout);
void perf_comm_close(struct perf_comm *c);
/* Client writes then reads, server reads then writes, as perftest does. */
int perf_xchg(struct perf_comm *c, const void *mine, void *theirs, size_t len);
/* The same with the reliability modes (rel_exchange.h): -EPROTO when the
 * two ends' modes differ (each end says how). */
int perf_xchg_rel(struct perf_comm *c, const void *mine, void *theirs, size_t len);
/* The version; when both ends are uroce-perf with opts set, then the test,
 * -c, -q, -a, -s and (where both ends count) -n: -EPROTO when they
 * differ, each end naming both values. */
int perf_xchg_versions(struct perf_comm *c);
int perf_xchg_sys(struct perf_comm *c);
/* Both MTUs as enum uroce_mtu; the agreed one (the smaller) is returned in *out. */
int perf_xchg_mtu(struct perf_comm *c, int mine, int *out);
int perf_handshake(struct perf_comm *c, const struct perf_dest *mine, struct perf_dest *theirs);
/* One handshake per QP, n of them (mine[i] for theirs[i]); the client
 * writes PERF_KEY_BATCH messages ahead of their answers. */
int perf_handshake_qps(struct perf_comm *c, const struct perf_dest *mine, struct perf_dest *theirs, int n);
/* Format / parse one key message (exposed for tests). */
void perf_key_format(const struct perf_dest *d, char msg[PERF_KEY_MSG_LEN]);
int perf_key_parse(const char *msg, size_t len, struct perf_dest *d);

struct perf_bw_report {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate;
};
int perf_xchg_bw_report(struct perf_comm *c, const struct perf_bw_report *mine, struct perf_bw_report *theirs);
/* Last handshake then "done"; the peer's "done" is read if it comes. */
int perf_close_connection(struct perf_comm *c, const struct perf_dest *mine);

/* ---- verbs resources (perf_setup.c) ---- */

/* One engine's context and what hangs off it; QP i is on engine i mod n. */
struct perf_engine {
	struct uroce_comp_channel *ch; /* -e: the channel of its two CQs */
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_mr *mr;
	struct uroce_cq *send_cq;
	struct uroce_cq *recv_cq;
};

struct perf_ctx {
	struct perf_opts *o;
	struct perf_engine eng[PERF_MAX_ENGINES];
	char pcap[PERF_MAX_ENGINES][512]; /* --pcap: engine k's file while its capture runs, else "" */
	int neng;                   /* at least 1 */
	int dedicated;              /* engine threads run the transport: nothing to progress */
	uint64_t t_open_ns;
	uint16_t (*rem_sports)[UROCE_MAX_SPORTS]; /* per QP: the ports the peer chose for its engine's queue */
	int nsports;
	/* engine 0's, for the code that runs one QP */
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *send_cq;
	struct uroce_cq *recv_cq;
	/* Per QP, num_qps entries each, allocated by perf_setup. */
	struct uroce_qp **qp;
	struct uroce_ah **ah;
	struct uroce_mr *mr;
	uint8_t *buf;               /* all QPs' buffers, one region */
	size_t buf_size;
	size_t qp_buf;              /* bytes per QP: [send half | receive half] */
	struct uroce_port_attr port;
	int mtu;                    /* agreed enum uroce_mtu */
	struct perf_dest *my;
	struct perf_dest *rem;
	struct perf_comm comm;
	int failed;
	int nic;                    /* the ports are a NIC's (perf_nic_port): nothing to progress */
	/* be: completions of messages that ended before they were whole */
	struct {
		uint64_t n, timeout, preempted;
		uint64_t missing;       /* bytes not sent (sender) or not placed (receiver) */
	} part;
};

int perf_setup(struct perf_ctx *p);
int perf_connect_qps(struct perf_ctx *p);
void perf_teardown(struct perf_ctx *p);
/* The ports are a NIC's (verbs): the transport needs no progress calls. */
int perf_nic_port(const struct perf_opts *o);
int perf_progress(void *arg);
uint64_t perf_activity(void *arg);
/* Send and receive areas of one QP's buffer. */
uint8_t *perf_send_area(struct perf_ctx *p, int qp);
uint8_t *perf_recv_area(struct perf_ctx *p, int qp);
/* Poll a CQ with progress; bounded by the timeout while nothing completes.
 * Returns completions (>0), or -ETIMEDOUT / a negative errno. */
int perf_poll(struct perf_ctx *p, struct uroce_cq *cq, int n, struct uroce_wc *wc);
/* Check a completion; prints and returns -EIO when it failed. */
int perf_wc_ok(const struct uroce_wc *wc, const char *what);
/* A successful completion that ended before its message was whole (be:
 * PARTIAL, TIMEOUT, PREEMPTED): counted in p->part (expect: the message's
 * bytes), 1; else 0. */
int perf_wc_partial(struct perf_ctx *p, const struct uroce_wc *wc, uint64_t expect);
/* Say how many messages ended partial; -EIO unless --allow-partial. */
int perf_partial_verdict(struct perf_ctx *p);
int perf_post_recvs(struct perf_ctx *p, int qp, int count);
uint64_t perf_now_ns(void);

/* ---- engines (perf_engines.c) ---- */
int perf_engines_parse(struct perf_opts *o);
int perf_cores_parse(struct perf_opts *o, const char *arg);
/* Trade each QP's steered source ports with the peer (after the key
 * messages, before RTR). */
int perf_steer_exchange(struct perf_ctx *p);
/* One line per engine: its queue, CPU, QPs, packets, no_qp drops, CPU time. */
void perf_engines_report(struct perf_ctx *p, FILE *f);
/* --counters per engine. */
void perf_engines_counters(struct perf_ctx *p, FILE *f);
static inline struct perf_engine *perf_eng_of(struct perf_ctx *p, int qp)
{
	return &p->eng[qp % p->neng];
}
/* Poll every engine's send (recv 0), receive (recv 1) or both (recv 2)
 * CQs, as perf_poll. */
int perf_poll_engines(struct perf_ctx *p, int recv, int n, struct uroce_wc *wc);

/* ---- traffic (perf_bw.c, perf_lat.c) ---- */
/* An atomic_bw / atomic_lat WR on the peer's first word: add 1, or swap
 * 0 for 1 (perftest's values) */
static inline void perf_wr_atomic(const struct perf_opts *o, const struct perf_dest *rem, struct uroce_send_wr *wr)
{
	wr->opcode = o->atomic_cas ? UROCE_WR_ATOMIC_CMP_AND_SWP : UROCE_WR_ATOMIC_FETCH_AND_ADD;
	wr->wr.atomic.remote_addr = rem->vaddr;
	wr->wr.atomic.rkey = rem->rkey;
	wr->wr.atomic.compare_add = o->atomic_cas ? 0 : 1;
	wr->wr.atomic.swap = 1;
}
int perf_run_bw(struct perf_ctx *p, struct perf_bw_report *rep);
int perf_run_bw_server_send(struct perf_ctx *p, struct perf_bw_report *rep);
struct perf_lat_result {
	uint64_t size;
	uint64_t iters;
	double t_min, t_max, t_typical, t_avg, t_stdev, p99, p999; /* usec */
	double dur_t_avg, dur_tps;
};
int perf_run_lat(struct perf_ctx *p, struct perf_lat_result *res);

/* perftest's --out_json file: test_info and results (the last line's;
 * with -a every line's in results_all); 0 or -errno, said on stderr. */
int perf_json_write(const struct perf_ctx *p, const struct perf_bw_report *bw, int nbw,
		    const struct perf_lat_result *lat, int nlat);
/* Set by SIGINT/SIGTERM in --run_infinitely: the run ends as a -D run does. */
extern volatile int perf_stop;

/* ---- tables (perf_report.c) ---- */
void perf_print_bw_header(const struct perf_opts *o);
void perf_print_bw_line(const struct perf_opts *o, const struct perf_bw_report *r);
void perf_print_lat_header(const struct perf_opts *o);
void perf_print_lat_line(const struct perf_opts *o, const struct perf_lat_result *r);
void perf_print_line(void);
/* --report-period: what completed in the last period (t_s: since the start) */
void perf_print_period(const struct perf_opts *o, double t_s, double secs, uint64_t msgs, uint64_t bytes);
void perf_print_test_info(const struct perf_ctx *p);
void perf_print_dest(const struct perf_ctx *p, const struct perf_dest *d, int remote);
/* perftest's numbers from timestamps (ns): average, peak, message rate. */
void perf_bw_compute(const struct perf_opts *o, uint64_t size, uint64_t iters_total,
		     const uint64_t *tposted, const uint64_t *tcompleted, uint64_t n, int cq_mod,
		     uint64_t t_start, uint64_t t_end, struct perf_bw_report *r);
/* Count only what was delivered: of posted bytes, missing never went
 * (sender) or never landed (receiver); the bandwidths scale down. */
void perf_bw_goodput(struct perf_bw_report *r, uint64_t posted, uint64_t missing);
/* Latency statistics from per-iteration deltas (ns, sorted in place). */
void perf_lat_compute(uint64_t size, uint64_t *delta_ns, uint64_t n, double factor, struct perf_lat_result *r);

#endif
