/* SPDX-License-Identifier: MIT */
/* One RC QP pair on the loop fabric for the benchmarks that drive both
 * ends in one process (path_cost, sdr_longhaul): open a side, take it to
 * RTS against its peer, close it. Any failure ends the program through
 * bench_die with the bench's name. */
#ifndef UROCE_TESTS_BENCH_LOOP_PAIR_H
#define UROCE_TESTS_BENCH_LOOP_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include <uroce/uroce.h>

#include "dataplane/port_loop.h"

extern const char *bench_name; /* the prefix of bench_die's message */

void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

struct loop_side {
	struct uroce_context *ctx;
	struct uroce_pd *pd;
	struct uroce_cq *scq, *rcq;
	struct uroce_qp *qp;
	struct uroce_mr *mr;
};

/* Context on "loop:PORT" of fab, PD, two CQs of cqe entries, buf registered
 * for local and remote access, and an RC QP of depth send and receive WRs
 * with the reliability rel. */
void loop_side_open(struct loop_fabric *fab, struct loop_side *s, unsigned port, void *buf, size_t len,
                    uint32_t depth, int cqe, const struct uroce_rel_attr *rel);
/* INIT, RTR (path MTU mtu, PSN 1000) and RTS against peer. */
void loop_side_connect(struct loop_side *s, const struct loop_side *peer, enum uroce_mtu mtu);
void loop_side_close(struct loop_side *s);

#endif /* UROCE_TESTS_BENCH_LOOP_PAIR_H */
