/* SPDX-License-Identifier: MIT */
/* The reliability options of uroce-perf and uroce-pingpong, parsed in one
 * place: --reliability rc|sr|ec, --ordering ordered|unordered, and the
 * sr/ec tuning (--ec rs|xor, --ec-k, --ec-m, --ec-min-pkts, --rto-min-us, --rto-rtts,
 * --loss rack|rto, --window-pkts). They fill the struct uroce_rel_attr a
 * QP is created with (uroce_qp_init_attr.rel); all zero is rc.
 *
 * Use: REL_ARGS_LONGOPTS in the tool's getopt_long table; rel_args_option()
 * for every option getopt returns, before the tool's own switch; after the
 * loop rel_args_check() with what the tool's connection type is.
 */
#ifndef UROCE_APPS_REL_ARGS_H
#define UROCE_APPS_REL_ARGS_H

#include <stddef.h>
#include <stdio.h>

#include <uroce/uroce.h>

/* getopt_long values of the options, above any short option or the
 * tools' own long-only values. */
enum rel_opt {
	REL_OPT_RELIABILITY = 0x2000,
	REL_OPT_ORDERING,
	REL_OPT_EC,
	REL_OPT_EC_K,
	REL_OPT_EC_M,
	REL_OPT_RTO_MIN_US,
	REL_OPT_RTO_RTTS,
	REL_OPT_LOSS,
	REL_OPT_WINDOW_PKTS,
	REL_OPT_EC_FTO_US,
	REL_OPT_TIMEOUT_US,
	REL_OPT_PATHS,
	REL_OPT_PATH_POLICY,
	REL_OPT_SPRAY_MIN,
	REL_OPT_CC,
	REL_OPT_LINK_MBPS,
	REL_OPT_BASE_RTT_US,
	REL_OPT_ACK_EVERY,
	REL_OPT_IMM_KEYED,
	REL_OPT_NIC_RC,
	REL_OPT_EC_MIN_PKTS,
	REL_OPT__END,
};

/* Entries for a struct option table (getopt_long). */
#define REL_ARGS_LONGOPTS \
	{ "reliability", required_argument, NULL, REL_OPT_RELIABILITY }, \
	{ "ordering", required_argument, NULL, REL_OPT_ORDERING }, \
	{ "ec", required_argument, NULL, REL_OPT_EC }, \
	{ "ec-k", required_argument, NULL, REL_OPT_EC_K }, \
	{ "ec-m", required_argument, NULL, REL_OPT_EC_M }, \
	{ "rto-min-us", required_argument, NULL, REL_OPT_RTO_MIN_US }, \
	{ "rto-rtts", required_argument, NULL, REL_OPT_RTO_RTTS }, \
	{ "loss", required_argument, NULL, REL_OPT_LOSS }, \
	{ "window-pkts", required_argument, NULL, REL_OPT_WINDOW_PKTS }, \
	{ "ec-fto-us", required_argument, NULL, REL_OPT_EC_FTO_US }, \
	{ "timeout-us", required_argument, NULL, REL_OPT_TIMEOUT_US }, \
	{ "paths", required_argument, NULL, REL_OPT_PATHS }, \
	{ "path-policy", required_argument, NULL, REL_OPT_PATH_POLICY }, \
	{ "spray-min", required_argument, NULL, REL_OPT_SPRAY_MIN }, \
	{ "cc", required_argument, NULL, REL_OPT_CC }, \
	{ "link-mbps", required_argument, NULL, REL_OPT_LINK_MBPS }, \
	{ "base-rtt-us", required_argument, NULL, REL_OPT_BASE_RTT_US }, \
	{ "ack-every", required_argument, NULL, REL_OPT_ACK_EVERY }, \
	{ "imm-keyed", no_argument, NULL, REL_OPT_IMM_KEYED }, \
	{ "nic-rc", no_argument, NULL, REL_OPT_NIC_RC }, \
	{ "ec-min-pkts", required_argument, NULL, REL_OPT_EC_MIN_PKTS }

/* The option names, for a tool's list of what it accepts. */
#define REL_ARGS_NAMES "--reliability --ordering --ec --ec-k --ec-m --rto-min-us --rto-rtts --loss --window-pkts --ec-fto-us " \
	"--timeout-us --paths --path-policy --spray-min --cc --link-mbps --base-rtt-us --ack-every --imm-keyed --nic-rc --ec-min-pkts"

/* The defaults the library applies to a zero ec_k / ec_m (uroce.h). */
#define REL_EC_K_DEFAULT 32
#define REL_EC_M_DEFAULT 8

struct rel_args {
	struct uroce_rel_attr attr; /* what the QP is created with */
	struct uroce_path_attr path; /* ... its paths (uroce_qp_init_attr.path) */
	struct uroce_cc_attr cc;     /* ... and its congestion control */
	unsigned given;             /* bit (opt - REL_OPT_RELIABILITY) per option on the command line */
};

/* One option as getopt_long returned it. 1: it was one of these and VALUE
 * is good (stored); 0: not one of these (the tool's own); -1: a bad value,
 * ERR says what is wrong and what is accepted, e.g.
 * "--ec-k '0' is not a number in 1..64" (the tool puts its name in front
 * and exits 2). */
int rel_args_option(struct rel_args *ra, int opt, const char *value, char *err, size_t errlen);

/* After parsing: the combinations. NOT_RC: NULL when the tool's QP is RC,
 * else the words for its choice ("-c UD", "ud mode"), USE_RC what to give
 * instead ("-c RC"). 0, or -1 with ERR: sr/ec over another connection
 * type, the ec options without --reliability ec, the sr/ec tuning or
 * --ordering unordered with rc. */
int rel_args_check(const struct rel_args *ra, const char *not_rc, const char *use_rc, char *err, size_t errlen);

/* The options' lines of --help, the descriptions starting at column COL. */
void rel_args_usage(FILE *f, int col);

/* "reliability sr ordered", "reliability ec ordered, ec rs 32+8", for
 * the tools' summary lines. Returns BUF. */
const char *rel_args_describe(const struct uroce_rel_attr *rel, char *buf, size_t len);

/* Name of an ec code ("rs", "xor"), or NULL; parse one: 0 or -EINVAL. */
const char *rel_args_ec_str(enum uroce_ec_code code);
int rel_args_ec_parse(const char *s, enum uroce_ec_code *out);

#endif
