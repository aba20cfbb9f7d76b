/* SPDX-License-Identifier: MIT */
/* One connected RC-type QP pair between two processes, each in its own
 * network namespace on a list of afxdp ports (ip netns exec runs them): the
 * QP on port 1, and with failover one backup member on each further port
 * towards the peer's port of the same rank. The ends meet
 * through a file both map shared (MAP_SHARED). The file carries the QP
 * numbers, GIDs, keys and addresses, and whatever the benchmark wants to
 * coordinate besides (its own part after struct ns_hdr): CLOCK_MONOTONIC is
 * one clock for every namespace, so timestamps written there by one end are
 * comparable with the other's (and with the engine's clock of afxdp ports).
 * Used by be_fct, paged_bench, fab_flows, stripe_bench, and through
 * fo_pair.h by fo_xfer and failover_bench.
 *
 * Every wait is bounded and calls uroce_progress meanwhile (the contexts
 * are embedded: the transport runs only when we call it). A failure on
 * either end sets hdr->failed, so that the other stops at once instead of
 * waiting out its bound. */
#ifndef UROCE_TESTS_BENCH_NS_PAIR_H
#define UROCE_TESTS_BENCH_NS_PAIR_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uroce/uroce.h>

#define NS_PAIR_MAGIC 0x75726e73u /* "urns" */
#define NS_MAX_PORTS 4

enum ns_role { NS_SENDER = 0, NS_RECEIVER = 1 };

/* What one end tells the other. */
struct ns_info {
	uint32_t qpn, psn;
	uint32_t token; /* the QP's uroce_qp_token() */
	uint32_t nports;
	uint8_t gid[NS_MAX_PORTS][16];       /* each port's IPv4 GID (index 1) */
	uint32_t active_mtu[NS_MAX_PORTS];   /* enum uroce_mtu of each port */
	uint32_t rkey;
	uint64_t addr, len; /* its registered buffer */
};

/* The start of the shared file. Each flag word on a cache line of its own. */
struct ns_hdr {
	uint32_t magic, size;
	uint32_t failed;
	uint32_t pad0[13];
	uint32_t ready[2] __attribute__((aligned(64)));   /* info[role] is published */
	uint32_t connected[2] __attribute__((aligned(64))); /* the QP of role is in RTS */
	struct ns_info info[2] __attribute__((aligned(64)));
} __attribute__((aligned(64)));

/* How the QP is made. */
struct ns_qp_opts {
	struct uroce_rel_attr rel;
	struct uroce_failover_attr fo; /* nbackups 0: a plain QP on port 1 */
	uint32_t sq, rq;
	int cqe;
	uint8_t rc_timeout; /* the local ACK timeout, 4.096 us x 2^t */
};

struct ns_end {
	struct ns_hdr *h;
	enum ns_role role;
	const char *name; /* "send" / "recv" in ns_die's messages once ns_tag_role ran */
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *scq, *rcq;
	struct uroce_qp *qp;
	struct uroce_mr *mr;
	enum uroce_mtu mtu; /* the path MTU both ends use */
	bool has_fo;
	uint64_t t_start; /* CLOCK_MONOTONIC at ns_open */
};

extern const char *ns_name; /* the prefix of ns_die's message: set by main */

/* Print "NAME: message" ("NAME[role]: t=S.SSS FAIL: message" after
 * ns_tag_role), mark the pair failed, exit 1. */
void ns_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The word ns_die sets to tell the peer (ns_open: the header's failed),
 * for a program with a shared file of its own. */
void ns_fail_word(uint32_t *failed);
/* Like ns_die, with the text of a uroce error. */
void ns_die_rc(int rc, const char *what) __attribute__((noreturn));

/* Print "NAME[role]: t=S.SSS message" to stdout and flush it. */
void ns_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Name e's role in every later message (ns_die, ns_say). */
void ns_tag_role(const struct ns_end *e);

uint64_t ns_now_ns(void);
/* An initial PSN nobody off-path can predict, as a real peer's. */
uint32_t ns_rand_psn(void);

/* Map path (created when missing) with size bytes, zero-filled when new. */
void *ns_map(const char *path, size_t size);

/* Context over the ports of devs ("afxdp:IF[,afxdp:IF...]": port 1
 * first), PD, CQs, buf registered for local and remote write, and the QP in
 * INIT on port 1; this end's part of the shared file filled in. */
void ns_open(struct ns_end *e, struct ns_hdr *h, enum ns_role role, const char *devs, void *buf, size_t len,
             const struct ns_qp_opts *o);
/* qp (RC-type, not yet in INIT) to INIT on port 1 with local and remote
 * write, or the program ends. */
void ns_qp_init(struct uroce_qp *qp);
/* Publish this end, wait (bounded by wait_s) for the peer's, take the QP to
 * RTS at the smallest MTU of both ends' ports, with backup member i on port
 * i + 2 towards the peer's port i + 2 when o->fo.nbackups. Returns once both
 * ends are in RTS. */
void ns_connect(struct ns_end *e, const struct ns_qp_opts *o, double wait_s);
/* Take qp to RTR then RTS towards peer's port 1 (GID index 1, the smaller
 * MTU of both port 1s, rc's retries at 7): 0, or the error with *stage
 * naming the step that failed. */
int ns_qp_to_rts(struct uroce_qp *qp, const struct ns_info *me, const struct ns_info *peer, uint8_t rc_timeout,
                 const char **stage);
void ns_close(struct ns_end *e);

/* One uroce_progress; a transport error ends the program. */
void ns_progress(struct ns_end *e);
/* The peer marked the pair failed: end the program. */
void ns_check_peer(const struct ns_end *e);

/* How long this thread has waited, runnable, for a CPU so far
 * (/proc/thread-self/schedstat): another task ran on its CPU meanwhile,
 * which explains outliers on a shared machine. 0 when unknown. */
uint64_t ns_run_delay_ns(void);

/* Release store / acquire load of a shared word. */
void ns_put(uint32_t *w, uint32_t v);
uint32_t ns_get(const uint32_t *w);

/* Wait until *w >= v, progressing meanwhile; 0, or -ETIMEDOUT after
 * timeout_ns. The peer's failure ends the program. */
int ns_wait_ge(struct ns_end *e, const uint32_t *w, uint32_t v, uint64_t timeout_ns);

/* Poll cq once after a progress: a completion in *wc (1) or none (0). A
 * failed poll ends the program. */
int ns_poll(struct ns_end *e, struct uroce_cq *cq, struct uroce_wc *wc);

/* v sorted ascending. */
void ns_sort_u64(uint64_t *v, size_t n);
/* The median of v's n values (v is sorted on the way). */
double ns_median(double *v, unsigned n);

/* Parse an unsigned number with an optional k/m/g (x1024) suffix; -1 with
 * nothing stored when s is not one within [lo, hi]. */
int ns_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* A bad option value: the benchmark says what it accepts and exits 2. */
typedef void (*ns_bad_fn)(const char *opt, const char *val, const char *accepted);
/* Seconds in (0, 3600], or bad(). */
double ns_parse_sec(const char *opt, const char *s, ns_bad_fn bad);

/* Command-line values of the program ns_args_init names (ns_name too): a
 * bad one prints "PROG: OPT 'VAL': accepted ...", then the usage, and
 * exits 2. */
void ns_args_init(const char *prog, void (*usage)(FILE *f));
void ns_bad(const char *opt, const char *val, const char *accepted) __attribute__((noreturn));
/* A getopt code no case took: --help (h) prints the usage and exits 0,
 * any other the usage to stderr and exits 2. */
void ns_help_or_bad(int c) __attribute__((noreturn));
/* After getopt: operands are refused; missing says "PROG: REQUIRED are
 * required" and the usage, and exits 2. */
void ns_args_end(int argc, char **argv, bool missing, const char *required);
/* s as ns_parse_u64 reads it within [lo, hi], or ns_bad(opt, s, accepted). */
uint64_t ns_arg_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, const char *accepted);

/* The options every ns_pair benchmark takes. */
struct ns_args {
	enum ns_role role;
	bool role_set;         /* --role was given */
	const char *dev, *shm;
	double max_sec;
	uint64_t rc_timeout;
};
/* The getopt_long entries of those options (--rc-timeout on its own: not
 * every benchmark takes it). */
#define NS_ARGS_OPTIONS \
	{ "role", required_argument, NULL, 'r' }, { "dev", required_argument, NULL, 'd' }, \
	{ "shm", required_argument, NULL, 'f' }, { "max-sec", required_argument, NULL, 'D' }
#define NS_ARGS_RC_TIMEOUT_OPTION { "rc-timeout", required_argument, NULL, 'T' }
/* getopt code c of --role (r), --dev (d), --shm (f), --max-sec (D) or
 * --rc-timeout (T): arg stored in a, 1; any other code: 0. */
int ns_common_option(struct ns_args *a, int c, const char *arg, ns_bad_fn bad);
/* getopt_long over lo with the common options stored in a: the next code
 * the program handles itself, or -1 at the end. */
int ns_getopt(int argc, char **argv, const struct option *lo, struct ns_args *a);
/* !a's --role, --dev or --shm: the required options every program has. */
static inline bool ns_args_missing(const struct ns_args *a)
{
	return !a->role_set || !a->dev || !a->shm;
}

#endif /* UROCE_TESTS_BENCH_NS_PAIR_H */
