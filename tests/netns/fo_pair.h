/* One rc/sr QP with failover between two processes in two namespaces,
 * each over a context of two afxdp ports (tests/netns/fo_topo.sh's two
 * rails): member 0 is port 1 (rail 1), member 1 port 2 (rail 2) with the
 * peer's port-2 GID. The ends meet through a file both map shared, as
 * tests/bench/ns_pair.h does: it carries the QP numbers, both GIDs, keys
 * and addresses, then whatever the program coordinates besides (its own
 * part after struct fo_hdr). CLOCK_MONOTONIC is one clock for every
 * namespace and the engine's clock of afxdp ports, so times written by one
 * end compare with the other's and with uroce_failover_info's.
 *
 * Every wait is bounded and calls uroce_progress meanwhile (embedded
 * contexts). A failure on either end sets hdr->failed, so that the other
 * stops at once. Used by fo_xfer (tests/netns/failover.sh) and
 * failover_bench (tests/bench/failover_bench.sh). */
#ifndef UROCE_TESTS_NETNS_FO_PAIR_H
#define UROCE_TESTS_NETNS_FO_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uroce/uroce.h>

#define FO_MAGIC 0x75726f66u /* "urof" */
#define FO_NPORTS 2          /* the two rails */

enum fo_role { FO_SENDER = 0, FO_RECEIVER = 1 };

/* What one end tells the other. */
struct fo_info {
	uint32_t qpn, psn;
	uint32_t token; /* the QP's uroce_qp_token() */
	uint8_t gid[FO_NPORTS][16]; /* each port's IPv4 GID (index 1) */
	uint32_t active_mtu[FO_NPORTS];
	uint32_t rkey;
	uint64_t addr, len; /* its registered buffer */
};

/* The start of the shared file; each flag word on a cache line of its own. */
struct fo_hdr {
	uint32_t magic;
	uint32_t failed;
	uint32_t pad0[14];
	uint32_t ready[2] __attribute__((aligned(64)));     /* info[role] is published */
	uint32_t connected[2] __attribute__((aligned(64))); /* the QP of role is in RTS */
	struct fo_info info[2] __attribute__((aligned(64)));
} __attribute__((aligned(64)));

/* How the QP is made. */
struct fo_qp_opts {
	struct uroce_rel_attr rel;
	struct uroce_failover_attr fo; /* nbackups 0: a plain QP on port 1 */
	uint32_t sq, rq;
	int cqe;
	uint8_t rc_timeout; /* 4.096 us x 2^t */
};

struct fo_end {
	struct fo_hdr *h;
	enum fo_role role;
	const char *name; /* "send" / "recv", in messages */
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *scq, *rcq;
	struct uroce_qp *qp;
	struct uroce_mr *mr;
	enum uroce_mtu mtu; /* the path MTU both ends use */
	bool has_fo;
	uint64_t t_start; /* CLOCK_MONOTONIC at fo_open */
};

extern const char *fo_prog; /* the prefix of fo_die's message: set by main */

/* Print "PROG[role]: message", mark the pair failed, exit 1. */
void fo_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fo_die_rc(int rc, const char *what) __attribute__((noreturn));
/* Print "PROG[role]: t=S.SSS message" to stdout and flush it. */
void fo_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

uint64_t fo_now_ns(void);
void fo_put(uint32_t *w, uint32_t v);
uint32_t fo_get(const uint32_t *w);

/* Map path (created when missing) with size bytes, zero-filled when new. */
void *fo_map(const char *path, size_t size);

/* Context over the ports of devs ("afxdp:va1,afxdp:va2": port 1 first),
 * PD, buf registered for local and remote write, CQs and the QP in INIT on
 * port 1; this end's part of the shared file filled in. */
void fo_open(struct fo_end *e, struct fo_hdr *h, enum fo_role role, const char *devs, void *buf, size_t len,
             const struct fo_qp_opts *o);
/* Publish, wait (bounded) for the peer, take the QP to RTS with the
 * backup on port 2 when o->fo.nbackups, wait until both are in RTS. */
void fo_connect(struct fo_end *e, const struct fo_qp_opts *o, double wait_s);
void fo_close(struct fo_end *e);

/* One uroce_progress; a transport error ends the program. */
void fo_progress(struct fo_end *e);
/* The peer marked the pair failed: end the program. */
void fo_check_peer(const struct fo_end *e);
/* Wait until *w >= v, progressing meanwhile; 0, or -ETIMEDOUT. */
int fo_wait_ge(struct fo_end *e, const uint32_t *w, uint32_t v, uint64_t timeout_ns);

/* The QP's failover state (zeroed, false, when it has no backups). */
bool fo_info(struct fo_end *e, struct uroce_failover_info *fi);
/* "state=S active=A up=0xM failovers=F failbacks=B cause=C rewound=R
 * notices=s/r probes=s/a" into buf ("failover=none" without backups). */
const char *fo_info_str(const struct uroce_failover_info *fi, bool has, char *buf, size_t len);

/* An interface of another namespace, to take down and up from this
 * process (a socket made in that namespace carries the ioctls). */
struct fo_ifctl {
	int fd;
	char ifname[16];
};
/* "NSPATH:IFNAME" (NSPATH: /var/run/netns/NAME); dies when it cannot. */
void fo_ifctl_open(struct fo_ifctl *c, const char *spec);
/* Whether the interface is administratively up. */
bool fo_ifctl_up(const struct fo_ifctl *c);
/* IFF_UP on or off (SIOCSIFFLAGS); dies when it cannot. */
void fo_ifctl_set(const struct fo_ifctl *c, bool up);

/* Parse an unsigned number with an optional k/m/g (x1024) suffix within
 * [lo, hi]; -1 when it is not one. */
int fo_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* Command-line values of the program fo_args_init named: a bad one prints
 * "PROG: OPT 'VAL': accepted ...", then the usage, and exits 2. */
void fo_args_init(const char *prog, void (*usage)(FILE *f));
void fo_arg_bad(const char *opt, const char *val, const char *accepted) __attribute__((noreturn));
uint64_t fo_arg_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, const char *accepted);
double fo_arg_secs(const char *opt, const char *s);
/* --role send|recv and --rel rc|sr */
enum fo_role fo_arg_role(const char *s);
enum uroce_reliability fo_arg_rel(const char *s);

#endif /* UROCE_TESTS_NETNS_FO_PAIR_H */
