/* SPDX-License-Identifier: MIT */
/* One rc/sr QP with failover between two processes in two namespaces,
 * each over a context of two afxdp ports (tests/netns/fo_topo.sh's two
 * rails): member 0 is port 1 (rail 1), member 1 port 2 (rail 2) with the
 * peer's port-2 GID. The pair itself is tests/bench/ns_pair.h's (a shared
 * file, bounded waits, ns_die marking the pair failed); this adds what the
 * failover programs share: exactly two rails, the failover state in words,
 * taking another namespace's interface down and up, and option parsing.
 * Used by fo_xfer (tests/netns/failover.sh) and failover_bench
 * (tests/bench/failover_bench.sh). */
#ifndef UROCE_TESTS_NETNS_FO_PAIR_H
#define UROCE_TESTS_NETNS_FO_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <uroce/uroce.h>

#include "../bench/ns_pair.h"

#define FO_NPORTS 2 /* the two rails */

/* ns_open over exactly the two rails of devs ("afxdp:va1,afxdp:va2"),
 * messages tagged with the role. */
void fo_open(struct ns_end *e, struct ns_hdr *h, enum ns_role role, const char *devs, void *buf, size_t len,
             const struct ns_qp_opts *o);

/* The QP's failover state (zeroed, false, when it has no backups). */
bool fo_info(struct ns_end *e, struct uroce_failover_info *fi);
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

/* Command-line values (ns_args_init names the program; a bad one:
 * ns_bad). */
double fo_arg_secs(const char *opt, const char *s);
/* --rel rc|sr */
enum uroce_reliability fo_arg_rel(const char *s);
/* getopt code c of an option of the failover QP, arg stored in q: --rel
 * (m, sets *rel_set), --rto-min-us (R), --rto-fail (F), --probe-us (P),
 * --down-timeout-ms (X), --window-pkts (w); true when c was one (a
 * program's option table says which it takes). */
bool fo_qp_option(struct ns_qp_opts *q, int c, const char *arg, bool *rel_set);

#endif /* UROCE_TESTS_NETNS_FO_PAIR_H */
