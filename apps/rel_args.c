/* SPDX-License-Identifier: MIT */
/* The reliability options shared by uroce-perf and uroce-pingpong; see
 * rel_args.h. Ranges are uroce.h's (struct uroce_rel_attr).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rel_args.h"

#define REL_RTO_MIN_US_MAX 10000000u /* 10 s: a floor above that is no floor */
#define REL_RTO_RTTS_MAX 1000u
#define REL_WINDOW_MIN 16u
#define REL_WINDOW_MAX 1024u
#define REL_EC_K_MAX 64u
#define REL_EC_M_MAX 32u
#define REL_EC_FTO_US_MAX 10000000u
#define REL_EC_MIN_PKTS_MAX 65535u
#define REL_TIMEOUT_US_MAX 60000000u /* be: a minute; longer is no bound */

static const char *const opt_names[REL_OPT__END - REL_OPT_RELIABILITY] = {
	[REL_OPT_RELIABILITY - REL_OPT_RELIABILITY] = "--reliability",
	[REL_OPT_ORDERING - REL_OPT_RELIABILITY] = "--ordering",
	[REL_OPT_EC - REL_OPT_RELIABILITY] = "--ec",
	[REL_OPT_EC_K - REL_OPT_RELIABILITY] = "--ec-k",
	[REL_OPT_EC_M - REL_OPT_RELIABILITY] = "--ec-m",
	[REL_OPT_RTO_MIN_US - REL_OPT_RELIABILITY] = "--rto-min-us",
	[REL_OPT_RTO_RTTS - REL_OPT_RELIABILITY] = "--rto-rtts",
	[REL_OPT_LOSS - REL_OPT_RELIABILITY] = "--loss",
	[REL_OPT_WINDOW_PKTS - REL_OPT_RELIABILITY] = "--window-pkts",
	[REL_OPT_EC_FTO_US - REL_OPT_RELIABILITY] = "--ec-fto-us",
	[REL_OPT_TIMEOUT_US - REL_OPT_RELIABILITY] = "--timeout-us",
	[REL_OPT_PATHS - REL_OPT_RELIABILITY] = "--paths",
	[REL_OPT_PATH_POLICY - REL_OPT_RELIABILITY] = "--path-policy",
	[REL_OPT_SPRAY_MIN - REL_OPT_RELIABILITY] = "--spray-min",
	[REL_OPT_CC - REL_OPT_RELIABILITY] = "--cc",
	[REL_OPT_LINK_MBPS - REL_OPT_RELIABILITY] = "--link-mbps",
	[REL_OPT_BASE_RTT_US - REL_OPT_RELIABILITY] = "--base-rtt-us",
	[REL_OPT_ACK_EVERY - REL_OPT_RELIABILITY] = "--ack-every",
	[REL_OPT_IMM_KEYED - REL_OPT_RELIABILITY] = "--imm-keyed",
	[REL_OPT_NIC_RC - REL_OPT_RELIABILITY] = "--nic-rc",
	[REL_OPT_EC_MIN_PKTS - REL_OPT_RELIABILITY] = "--ec-min-pkts",
};

#define BIT(opt) (1u << ((opt) - REL_OPT_RELIABILITY))
#define EC_OPTS (BIT(REL_OPT_EC) | BIT(REL_OPT_EC_K) | BIT(REL_OPT_EC_M) | BIT(REL_OPT_EC_FTO_US) | \
		 BIT(REL_OPT_EC_MIN_PKTS))
#define TUNING_OPTS (BIT(REL_OPT_RTO_MIN_US) | BIT(REL_OPT_RTO_RTTS) | BIT(REL_OPT_LOSS) | BIT(REL_OPT_WINDOW_PKTS) | \
		     BIT(REL_OPT_PATHS) | BIT(REL_OPT_PATH_POLICY) | BIT(REL_OPT_SPRAY_MIN) | BIT(REL_OPT_CC) | \
		     BIT(REL_OPT_LINK_MBPS) | BIT(REL_OPT_BASE_RTT_US) | BIT(REL_OPT_ACK_EVERY))
#define REL_LINK_MBPS_MAX 1600000u /* 1.6 Tb/s */
#define REL_BASE_RTT_US_MAX 1000000u

static const char *const ec_names[UROCE_EC__COUNT] = { [UROCE_EC_RS] = "rs", [UROCE_EC_XOR] = "xor" };
static const char *const loss_names[UROCE_LOSS__COUNT] = { [UROCE_LOSS_RACK] = "rack", [UROCE_LOSS_RTO] = "rto" };

static int name_index(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* A decimal number in lo..hi: digits only, no sign, no suffix. */
static int number(const char *s, unsigned long lo, unsigned long hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int rel_args_option(struct rel_args *ra, int opt, const char *value, char *err, size_t errlen)
{
	struct uroce_rel_attr *a = &ra->attr;
	const char *name;
	uint32_t v;
	int i;

	if (opt < REL_OPT_RELIABILITY || opt >= REL_OPT__END)
		return 0;
	name = opt_names[opt - REL_OPT_RELIABILITY];
	switch ((enum rel_opt)opt) {
	case REL_OPT_RELIABILITY: {
		enum uroce_reliability r;

		if (uroce_reliability_parse(value, &r)) {
			snprintf(err, errlen, "%s '%s': accepted: rc, sr, ec, be", name, value);
			return -1;
		}
		a->reliability = r;
		break;
	}
	case REL_OPT_ORDERING: {
		enum uroce_ordering o;

		if (uroce_ordering_parse(value, &o)) {
			snprintf(err, errlen, "%s '%s': accepted: ordered, unordered", name, value);
			return -1;
		}
		a->ordering = o;
		break;
	}
	case REL_OPT_EC:
		i = name_index(value, ec_names, UROCE_EC__COUNT);
		if (i < 0) {
			snprintf(err, errlen, "%s '%s': accepted: rs, xor", name, value);
			return -1;
		}
		a->ec_code = (enum uroce_ec_code)i;
		break;
	case REL_OPT_PATH_POLICY: {
		enum uroce_path_policy pp;

		if (uroce_path_policy_parse(value, &pp)) {
			snprintf(err, errlen, "%s '%s': accepted: p2c, rr, random, single (default: p2c with --paths > 1)",
				 name, value);
			return -1;
		}
		ra->path.policy = pp;
		break;
	}
	case REL_OPT_CC: {
		enum uroce_cc c;

		if (uroce_cc_parse(value, &c)) {
			snprintf(err, errlen, "%s '%s': accepted: none, dcqcn, swift, cubic, eqds", name, value);
			return -1;
		}
		ra->cc.algo = c;
		break;
	}
	case REL_OPT_PATHS:
	case REL_OPT_SPRAY_MIN:
	case REL_OPT_LINK_MBPS:
	case REL_OPT_BASE_RTT_US:
	case REL_OPT_ACK_EVERY: {
		static const uint32_t lo[] = { 1, 0, 1, 1, 1 };
		static const uint32_t hi[] = { UROCE_MAX_PATHS, UINT32_MAX, REL_LINK_MBPS_MAX, REL_BASE_RTT_US_MAX,
					       REL_WINDOW_MAX };
		int k = opt == REL_OPT_PATHS ? 0 : opt == REL_OPT_SPRAY_MIN ? 1 : opt == REL_OPT_LINK_MBPS ? 2
			: opt == REL_OPT_BASE_RTT_US ? 3 : 4;

		if (number(value, lo[k], hi[k], &v)) {
			snprintf(err, errlen, "%s '%s' is not a number in %u..%u", name, value, lo[k], hi[k]);
			return -1;
		}
		if (opt == REL_OPT_PATHS)
			ra->path.npaths = (uint16_t)v;
		else if (opt == REL_OPT_SPRAY_MIN)
			ra->path.spray_min_bytes = v ? v : 1; /* 0 would mean the default: spray everything */
		else if (opt == REL_OPT_LINK_MBPS)
			ra->cc.link_mbps = v;
		else if (opt == REL_OPT_BASE_RTT_US)
			ra->cc.base_rtt_us = v;
		else
			ra->cc.ack_every_pkts = v;
		break;
	}
	case REL_OPT_IMM_KEYED:
		a->imm_keyed = 1;
		break;
	case REL_OPT_NIC_RC:
		a->nic_rc = 1;
		break;
	case REL_OPT_LOSS:
		i = name_index(value, loss_names, UROCE_LOSS__COUNT);
		if (i < 0) {
			snprintf(err, errlen, "%s '%s': accepted: rack, rto", name, value);
			return -1;
		}
		a->loss = (enum uroce_loss_detect)i;
		break;
	case REL_OPT_EC_K:
	case REL_OPT_EC_M:
	case REL_OPT_RTO_MIN_US:
	case REL_OPT_RTO_RTTS:
	case REL_OPT_WINDOW_PKTS:
	case REL_OPT_EC_FTO_US:
	case REL_OPT_EC_MIN_PKTS:
	case REL_OPT_TIMEOUT_US: {
		static const uint32_t lo[] = { 1, 1, 1, 1, REL_WINDOW_MIN, 1, 1, 1 };
		static const uint32_t hi[] = { REL_EC_K_MAX, REL_EC_M_MAX, REL_RTO_MIN_US_MAX, REL_RTO_RTTS_MAX,
					       REL_WINDOW_MAX, REL_EC_FTO_US_MAX, REL_TIMEOUT_US_MAX, REL_EC_MIN_PKTS_MAX };
		int k = opt == REL_OPT_EC_K ? 0 : opt == REL_OPT_EC_M ? 1 : opt == REL_OPT_RTO_MIN_US ? 2
			: opt == REL_OPT_RTO_RTTS ? 3 : opt == REL_OPT_WINDOW_PKTS ? 4 : opt == REL_OPT_EC_FTO_US ? 5
			: opt == REL_OPT_TIMEOUT_US ? 6 : 7;

		if (number(value, lo[k], hi[k], &v)) {
			snprintf(err, errlen, "%s '%s' is not a number in %u..%u", name, value, lo[k], hi[k]);
			return -1;
		}
		if (opt == REL_OPT_EC_K)
			a->ec_k = (uint8_t)v;
		else if (opt == REL_OPT_EC_M)
			a->ec_m = (uint8_t)v;
		else if (opt == REL_OPT_RTO_MIN_US)
			a->rto_min_us = v;
		else if (opt == REL_OPT_RTO_RTTS)
			a->rto_rtts = v;
		else if (opt == REL_OPT_WINDOW_PKTS)
			a->window_pkts = v;
		else if (opt == REL_OPT_EC_FTO_US)
			a->ec_fto_us = v;
		else if (opt == REL_OPT_EC_MIN_PKTS)
			a->ec_min_pkts = (uint16_t)v;
		else
			a->timeout_us = v;
		break;
	}
	case REL_OPT__END:
		return 0;
	}
	ra->given |= BIT(opt);
	return 1;
}

/* The first option of MASK on the command line, for a message. */
static const char *first_given(const struct rel_args *ra, unsigned mask)
{
	for (int i = 0; i < REL_OPT__END - REL_OPT_RELIABILITY; i++)
		if (ra->given & mask & (1u << i))
			return opt_names[i];
	return "?";
}

int rel_args_check(const struct rel_args *ra, const char *not_rc, const char *use_rc, char *err, size_t errlen)
{
	const struct uroce_rel_attr *a = &ra->attr;
	const char *rel = uroce_reliability_str(a->reliability);

	if (a->reliability != UROCE_REL_RC && not_rc) {
		snprintf(err, errlen, "--reliability %s works over RC only (sr and ec are RC's loss recovery), "
			 "not %s; accepted: %s, or --reliability rc", rel, not_rc, use_rc);
		return -1;
	}
	if (a->reliability != UROCE_REL_EC && (ra->given & EC_OPTS)) {
		snprintf(err, errlen, "%s applies to --reliability ec only (this end: %s)",
			 first_given(ra, EC_OPTS), rel);
		return -1;
	}
	if ((a->reliability == UROCE_REL_RC || a->reliability == UROCE_REL_BE) && (ra->given & TUNING_OPTS)) {
		snprintf(err, errlen, "%s applies to --reliability sr or ec only (%s)", first_given(ra, TUNING_OPTS),
			 a->reliability == UROCE_REL_RC ? "rc recovers by go-back-N with the QP's timeout and retry count" :
			 "be sends nothing twice");
		return -1;
	}
	if (a->reliability == UROCE_REL_RC && a->imm_keyed) {
		snprintf(err, errlen, "--imm-keyed applies to --reliability sr, ec and be only (this end: %s)", rel);
		return -1;
	}
	if (a->reliability == UROCE_REL_RC && a->nic_rc) {
		snprintf(err, errlen, "--nic-rc applies to --reliability sr, ec and be on a verbs port (rc there is the "
			 "NIC's own RC QP)");
		return -1;
	}
	if (a->reliability != UROCE_REL_BE && (ra->given & BIT(REL_OPT_TIMEOUT_US))) {
		snprintf(err, errlen, "--timeout-us applies to --reliability be only (this end: %s)", rel);
		return -1;
	}
	if ((a->reliability == UROCE_REL_RC || a->reliability == UROCE_REL_BE) && a->ordering != UROCE_ORDER_ORDERED) {
		snprintf(err, errlen, "--ordering %s needs --reliability sr or ec (%s)", uroce_ordering_str(a->ordering),
			 a->reliability == UROCE_REL_RC ? "rc always completes in order" :
			 "be completes each message when it ends, in order");
		return -1;
	}
	return 0;
}

void rel_args_usage(FILE *f, int col)
{
	static const char *const lines[][2] = {
		{ "--reliability rc|sr|ec|be", "loss recovery: rc go-back-N (default; with rdma-core and NICs),\n"
					       "sr selective repeat, ec erasure coding, be best effort (none:\n"
					       "each message ends whole, at its deadline or preempted; sr/ec/be:\n"
					       "uroce at both ends, RC only, SEND and WRITE only; both ends\n"
					       "must agree)" },
		{ "--ordering ordered|unordered", "sr/ec: complete messages in the order posted (default), or each\n"
						  "as soon as it is whole (unordered)" },
		{ "--ec rs|xor", "ec's code: Reed-Solomon (default) or XOR parity" },
		{ "--ec-k N", "ec data chunks per submessage, 1-64 (default 32)" },
		{ "--ec-m N", "ec parity chunks per submessage, 1-32 (default 8)" },
		{ "--rto-min-us N", "sr/ec: floor of the retransmission timeout in us (default 200)" },
		{ "--rto-rtts N", "sr/ec: RTO = N x the smoothed RTT instead of srtt + 4 rttvar" },
		{ "--loss rack|rto", "sr/ec loss detection: rack (default) or the RTO alone" },
		{ "--window-pkts N", "sr/ec: packets in flight, 16-1024 (default 256)" },
		{ "--ec-fto-us N", "ec: the receiver NACKs a message silent this long (default 1000)" },
		{ "--ec-min-pkts N", "ec: messages of fewer packets go as sr, without parity (default: --ec-k;\n"
				     "1 = parity on every message)" },
		{ "--timeout-us N", "be: every WR's deadline in us (default 1000)" },
		{ "--paths N", "sr/ec: spray over N paths (UDP source ports), 1-256 (default 1)" },
		{ "--path-policy NAME", "sr/ec: p2c (default with --paths > 1), rr, random or single" },
		{ "--spray-min BYTES", "sr/ec: shorter messages keep one path (default 8192)" },
		{ "--cc NAME", "sr/ec congestion control: none (default), dcqcn, swift, cubic, eqds" },
		{ "--link-mbps N", "sr/ec: the link rate controllers start from (default 10000)" },
		{ "--base-rtt-us N", "sr/ec: the unloaded RTT (Swift's base target, EQDS's BDP;\n"
				     "default 20)" },
		{ "--ack-every N", "sr/ec: ask for a SACK at least every N packets (default 16)" },
		{ "--imm-keyed", "sr/ec/be: key packets by their immediate, not the BTH PSN: needed\n"
				 "at both ends when one is on a verbs port (set there by itself)" },
		{ "--nic-rc", "sr/ec/be on a verbs port: a pool of the NIC's RC QPs, not UC\n"
			      "(a NIC without UC); both ends, both on verbs" },
	};
	int w = col > 8 ? col - 6 : 2;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const char *d = lines[i][1];
		int first = 1;

		/* a name too long for its column gets a line of its own */
		if ((int)strlen(lines[i][0]) >= w) {
			fprintf(f, "      %s\n", lines[i][0]);
			first = 0;
		}
		/* descriptions of several lines continue at the same column */
		while (*d) {
			size_t n = strcspn(d, "\n");

			fprintf(f, "      %-*s%.*s\n", w, first ? lines[i][0] : "", (int)n, d);
			d += n + (d[n] == '\n');
			first = 0;
		}
	}
}

const char *rel_args_describe(const struct uroce_rel_attr *rel, char *buf, size_t len)
{
	const char *r = uroce_reliability_str(rel->reliability), *o = uroce_ordering_str(rel->ordering);

	if (rel->reliability == UROCE_REL_EC)
		snprintf(buf, len, "reliability %s %s, ec %s %u+%u", r ? r : "?", o ? o : "?",
			 (unsigned)rel->ec_code < UROCE_EC__COUNT ? ec_names[rel->ec_code] : "?",
			 rel->ec_k ? rel->ec_k : REL_EC_K_DEFAULT, rel->ec_m ? rel->ec_m : REL_EC_M_DEFAULT);
	else
		snprintf(buf, len, "reliability %s %s", r ? r : "?", o ? o : "?");
	return buf;
}

/* For rel_exchange.c: the names of the ec codes. */
const char *rel_args_ec_str(enum uroce_ec_code code)
{
	return (unsigned)code < UROCE_EC__COUNT ? ec_names[code] : NULL;
}

int rel_args_ec_parse(const char *s, enum uroce_ec_code *out)
{
	int i = name_index(s, ec_names, UROCE_EC__COUNT);

	if (i < 0)
		return -EINVAL;
	*out = (enum uroce_ec_code)i;
	return 0;
}
