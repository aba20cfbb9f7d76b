/* SPDX-License-Identifier: MIT */
/* uroce-impair: attaches the seeded RoCEv2 drop program (ebpf/xdp_impair.bpf.c)
 * to an interface, prints its counters and detaches it. The attachment is a
 * netlink XDP attach, so it outlives this tool.
 *
 *   uroce-impair IFACE --drop P [--burst N] [--seed S]
 *   uroce-impair IFACE --stats
 *   uroce-impair IFACE --off
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "xdp_impair.h"
#include "app_version.h"

extern const unsigned char uroce_xdp_impair_bpf[];
extern const size_t uroce_xdp_impair_bpf_len;

#define IMPAIR_BURST_MAX 1000000u /* a burst longer than this is a link down, not loss */
#define IMPAIR_DEFAULT_SEED 1u
#define IMPAIR_MAX_MAPS 8u        /* the program has one map; room for libbpf's own */

enum impair_action { IMPAIR_NONE, IMPAIR_ATTACH, IMPAIR_STATS, IMPAIR_OFF };

struct impair_opts {
	const char *ifname;
	unsigned ifindex;
	enum impair_action action;
	uint64_t threshold; /* probability * 2^32 */
	double prob;
	uint32_t burst;
	uint64_t seed;
};

/* The program attached to an interface, if any, and in which mode. */
struct impair_attached {
	uint32_t prog_id;
	uint32_t mode;      /* XDP_FLAGS_DRV_MODE / SKB_MODE / HW_MODE */
	int ours;           /* its name is XDP_IMPAIR_PROG_NAME */
	char name[BPF_OBJ_NAME_LEN];
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-impair IFACE --drop P [--burst N] [--seed S]\n"
		"       uroce-impair IFACE --stats\n"
		"       uroce-impair IFACE --off\n"
		"Drops RoCEv2 packets (UDP destination port 4791, IPv4/IPv6, with or without\n"
		"802.1Q) arriving on IFACE, at XDP; every other frame passes. Run as root.\n"
		"  --drop P    drop probability: a number 0..1 (0.01) or a percentage 0%%..100%% (1%%)\n"
		"  --burst N   once a drop starts, drop N consecutive RoCEv2 packets, 1..%u (default 1)\n"
		"  --seed S    seed of the drop pattern, 0..2^64-1 (default %u): the same seed drops\n"
		"              the same packets of the same RoCEv2 packet sequence\n"
		"  --stats     print the counters: packets seen, RoCEv2 seen, dropped\n"
		"  --off       detach the program\n"
		"  --help      this text\n"
		"  --version   the version\n"
		"The program stays attached after uroce-impair exits, until --off or the\n"
		"interface goes away. Exit 0 on success, 1 on a failure, 2 on bad arguments.\n",
		IMPAIR_BURST_MAX, IMPAIR_DEFAULT_SEED);
}

static void bad_arg(const char *fmt, const char *val, const char *accepted)
{
	fprintf(stderr, "uroce-impair: ");
	fprintf(stderr, fmt, val);
	fprintf(stderr, "; accepted: %s (see --help)\n", accepted);
	exit(2);
}

/* "0.01" is a probability, "1%" a percentage. */
static void parse_drop(const char *s, struct impair_opts *o)
{
	const char *accepted = "a probability 0..1 (e.g. 0.01) or a percentage 0%..100% (e.g. 1%)";
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || isnan(v))
		bad_arg("--drop '%s' is not a number", s, accepted);
	if (*end == '%') {
		if (end[1] || v < 0 || v > 100)
			bad_arg("--drop '%s' is not a percentage 0%%..100%%", s, accepted);
		v /= 100;
	} else if (*end) {
		bad_arg("--drop '%s' has trailing characters", s, accepted);
	} else if (v < 0 || v > 1) {
		bad_arg("--drop '%s' is outside 0..1 (write a percentage with %%, e.g. 1%%)", s, accepted);
	}
	o->prob = v;
	o->threshold = (uint64_t)llround(v * (double)XDP_IMPAIR_ONE);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, const char *accepted)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	/* decimal, or hex after 0x, as the help says: base 0 would read a
	 * leading 0 as octal ("010" = 8) */
	v = strtoull(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
	/* strtoull would take "-3" as 2^64-3 */
	if (*s == '-' || end == s || errno || *end || v < min || v > max) {
		fprintf(stderr, "uroce-impair: %s '%s' is not an integer in range; accepted: %s\n", opt, s, accepted);
		exit(2);
	}
	return v;
}

static void parse_args(int argc, char **argv, struct impair_opts *o)
{
	enum { OPT_DROP = 1000, OPT_BURST, OPT_SEED, OPT_STATS, OPT_OFF };
	static const struct option longopts[] = {
		{"drop", required_argument, NULL, OPT_DROP},
		{"burst", required_argument, NULL, OPT_BURST},
		{"seed", required_argument, NULL, OPT_SEED},
		{"stats", no_argument, NULL, OPT_STATS},
		{"off", no_argument, NULL, OPT_OFF},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c, burst_set = 0, seed_set = 0, nactions = 0;
	char burst_range[64];

	memset(o, 0, sizeof(*o));
	o->burst = 1;
	o->seed = IMPAIR_DEFAULT_SEED;
	snprintf(burst_range, sizeof(burst_range), "1..%u", IMPAIR_BURST_MAX);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DROP:
			parse_drop(optarg, o);
			o->action = IMPAIR_ATTACH;
			nactions++;
			break;
		case OPT_BURST:
			o->burst = (uint32_t)parse_u64("--burst", optarg, 1, IMPAIR_BURST_MAX, burst_range);
			burst_set = 1;
			break;
		case OPT_SEED:
			o->seed = parse_u64("--seed", optarg, 0, UINT64_MAX, "0..2^64-1, decimal or 0x hex");
			seed_set = 1;
			break;
		case OPT_STATS:
			o->action = IMPAIR_STATS;
			nactions++;
			break;
		case OPT_OFF:
			o->action = IMPAIR_OFF;
			nactions++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			app_print_version("uroce-impair");
			exit(0);
		default:
			fprintf(stderr, "uroce-impair: accepted options: --drop P [--burst N] [--seed S], --stats, --off, --help, --version\n");
			exit(2);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "uroce-impair: %s; usage: uroce-impair IFACE --drop P [--burst N] [--seed S] | --stats | --off\n",
			optind >= argc ? "no interface given" : "one interface only");
		exit(2);
	}
	o->ifname = argv[optind];
	if (nactions != 1) {
		fprintf(stderr, "uroce-impair: %s; accepted: exactly one of --drop P, --stats, --off\n",
			nactions ? "more than one of --drop, --stats, --off" : "nothing to do");
		exit(2);
	}
	if (o->action != IMPAIR_ATTACH && (burst_set || seed_set)) {
		fprintf(stderr, "uroce-impair: --burst and --seed go with --drop only; accepted: "
			"IFACE --drop P [--burst N] [--seed S] | IFACE --stats | IFACE --off\n");
		exit(2);
	}
	if (strlen(o->ifname) >= IF_NAMESIZE) {
		fprintf(stderr, "uroce-impair: interface name '%s' is too long; accepted: at most %d characters\n",
			o->ifname, IF_NAMESIZE - 1);
		exit(2);
	}
	o->ifindex = if_nametoindex(o->ifname);
	if (!o->ifindex) {
		fprintf(stderr, "uroce-impair: no interface '%s' in this network namespace (%s)\n", o->ifname,
			strerror(errno));
		exit(1);
	}
}

/* Which XDP program, if any, is attached to the interface. */
static int query_attached(const struct impair_opts *o, struct impair_attached *a)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int rc, fd;

	memset(a, 0, sizeof(*a));
	rc = bpf_xdp_query(o->ifindex, 0, &q);
	if (rc) {
		fprintf(stderr, "uroce-impair: %s: cannot query its XDP program: %s\n", o->ifname, strerror(-rc));
		return rc;
	}
	if (q.drv_prog_id) {
		a->prog_id = q.drv_prog_id;
		a->mode = XDP_FLAGS_DRV_MODE;
	} else if (q.skb_prog_id) {
		a->prog_id = q.skb_prog_id;
		a->mode = XDP_FLAGS_SKB_MODE;
	} else if (q.hw_prog_id) {
		a->prog_id = q.hw_prog_id;
		a->mode = XDP_FLAGS_HW_MODE;
	} else {
		return 0;
	}
	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0) {
		rc = -errno;
		fprintf(stderr, "uroce-impair: %s: cannot open XDP program %u: %s\n", o->ifname, a->prog_id, strerror(-rc));
		return rc;
	}
	memset(&info, 0, sizeof(info));
	rc = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	if (rc) {
		fprintf(stderr, "uroce-impair: %s: cannot read XDP program %u: %s\n", o->ifname, a->prog_id, strerror(-rc));
		return rc;
	}
	memcpy(a->name, info.name, sizeof(a->name));
	a->name[sizeof(a->name) - 1] = '\0';
	a->ours = !strcmp(a->name, XDP_IMPAIR_PROG_NAME);
	return 0;
}

/* The state map of our attached program, or a negative errno. */
static int open_state_map(const struct impair_opts *o, const struct impair_attached *a)
{
	uint32_t map_ids[IMPAIR_MAX_MAPS];
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int fd, rc;

	fd = bpf_prog_get_fd_by_id(a->prog_id);
	if (fd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = IMPAIR_MAX_MAPS;
	info.map_ids = (uint64_t)(uintptr_t)map_ids;
	rc = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < info.nr_map_ids && i < IMPAIR_MAX_MAPS; i++) {
		struct bpf_map_info minfo;
		uint32_t mlen = sizeof(minfo);
		int mfd = bpf_map_get_fd_by_id(map_ids[i]);

		if (mfd < 0)
			continue;
		memset(&minfo, 0, sizeof(minfo));
		if (!bpf_obj_get_info_by_fd(mfd, &minfo, &mlen) && !strcmp(minfo.name, XDP_IMPAIR_MAP_NAME) &&
		    minfo.value_size == sizeof(struct xdp_impair_state))
			return mfd;
		close(mfd);
	}
	fprintf(stderr, "uroce-impair: %s: program %u has no %s map of this version (rebuild or --off and attach again)\n",
		o->ifname, a->prog_id, XDP_IMPAIR_MAP_NAME);
	return -ENOENT;
}

static const char *mode_name(uint32_t mode)
{
	return mode == XDP_FLAGS_DRV_MODE ? "native" : mode == XDP_FLAGS_SKB_MODE ? "generic" : "offloaded";
}

static int refuse_other(const struct impair_opts *o, const struct impair_attached *a)
{
	fprintf(stderr, "uroce-impair: %s carries another XDP program ('%s', id %u); uroce-impair only replaces or "
		"detaches its own. Put it on an interface without XDP (e.g. a routing namespace's ingress).\n",
		o->ifname, a->name, a->prog_id);
	return 1;
}

static int do_attach(const struct impair_opts *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts, .object_name = "xdp_impair");
	struct xdp_impair_state st;
	struct impair_attached a;
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map;
	uint32_t key = 0, mode;
	int rc, ret = 1;

	if (query_attached(o, &a))
		return 1;
	if (a.prog_id && !a.ours)
		return refuse_other(o, &a);

	obj = bpf_object__open_mem(uroce_xdp_impair_bpf, uroce_xdp_impair_bpf_len, &oopts);
	if (!obj) {
		fprintf(stderr, "uroce-impair: cannot open the embedded XDP program: %s\n", strerror(errno));
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, XDP_IMPAIR_PROG_NAME);
	map = bpf_object__find_map_by_name(obj, XDP_IMPAIR_MAP_NAME);
	if (!prog || !map) {
		fprintf(stderr, "uroce-impair: the embedded XDP program lacks its program or map (build problem)\n");
		goto out;
	}
	rc = bpf_object__load(obj);
	if (rc) {
		fprintf(stderr, "uroce-impair: the kernel refused the XDP program: %s (run as root)\n", strerror(-rc));
		goto out;
	}
	memset(&st, 0, sizeof(st));
	st.threshold = o->threshold;
	st.burst = o->burst;
	st.seed = o->seed;
	/* xorshift64 needs a nonzero state; mixing the seed (splitmix64's
	 * finaliser) keeps neighbouring seeds from giving similar patterns. */
	st.rng = o->seed + 0x9e3779b97f4a7c15ull;
	st.rng = (st.rng ^ (st.rng >> 30)) * 0xbf58476d1ce4e5b9ull;
	st.rng = (st.rng ^ (st.rng >> 27)) * 0x94d049bb133111ebull;
	st.rng ^= st.rng >> 31;
	if (!st.rng)
		st.rng = 0x9e3779b97f4a7c15ull;
	rc = bpf_map_update_elem(bpf_map__fd(map), &key, &st, 0);
	if (rc) {
		fprintf(stderr, "uroce-impair: cannot set the program's configuration: %s\n", strerror(-rc));
		goto out;
	}

	/* A netlink attach, not a bpf_link: the interface holds the program
	 * (and through it the map) after this process exits. Our own earlier
	 * copy is replaced in its mode; otherwise native XDP, generic where
	 * the driver has none. */
	if (a.prog_id) {
		mode = a.mode;
		rc = bpf_xdp_attach((int)o->ifindex, bpf_program__fd(prog), mode, NULL);
	} else {
		mode = XDP_FLAGS_DRV_MODE;
		rc = bpf_xdp_attach((int)o->ifindex, bpf_program__fd(prog), mode | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		if (rc == -EOPNOTSUPP || rc == -EINVAL) {
			mode = XDP_FLAGS_SKB_MODE;
			rc = bpf_xdp_attach((int)o->ifindex, bpf_program__fd(prog), mode | XDP_FLAGS_UPDATE_IF_NOEXIST,
					    NULL);
		}
	}
	if (rc) {
		fprintf(stderr, "uroce-impair: %s: cannot attach the XDP program: %s\n", o->ifname, strerror(-rc));
		goto out;
	}
	printf("uroce-impair: %s: dropping RoCEv2 packets with probability %g (%g%%), bursts of %u, seed %" PRIu64
	       " (%s XDP%s)\n",
	       o->ifname, o->prob, o->prob * 100, o->burst, o->seed, mode_name(mode),
	       a.prog_id ? ", replacing the previous one" : "");
	ret = 0;
out:
	bpf_object__close(obj); /* the attachment keeps the program and map alive */
	return ret;
}

static int do_stats(const struct impair_opts *o)
{
	struct xdp_impair_state st;
	struct impair_attached a;
	uint32_t key = 0;
	int fd, rc;

	if (query_attached(o, &a))
		return 1;
	if (!a.prog_id || !a.ours) {
		fprintf(stderr, "uroce-impair: %s: no uroce-impair program attached%s%s%s\n", o->ifname,
			a.prog_id ? " (it carries '" : "", a.prog_id ? a.name : "", a.prog_id ? "')" : "");
		return 1;
	}
	fd = open_state_map(o, &a);
	if (fd < 0)
		return 1;
	/* BPF_F_LOCK: a snapshot taken under the program's lock. */
	rc = bpf_map_lookup_elem_flags(fd, &key, &st, BPF_F_LOCK);
	close(fd);
	if (rc) {
		fprintf(stderr, "uroce-impair: %s: cannot read the counters: %s\n", o->ifname, strerror(-rc));
		return 1;
	}
	printf("uroce-impair %s: drop=%g burst=%u seed=%" PRIu64 " packets=%llu roce=%llu dropped=%llu\n", o->ifname,
	       (double)st.threshold / (double)XDP_IMPAIR_ONE, st.burst, (uint64_t)st.seed,
	       (unsigned long long)st.packets, (unsigned long long)st.roce, (unsigned long long)st.dropped);
	return 0;
}

static int do_off(const struct impair_opts *o)
{
	struct impair_attached a;
	int rc;

	if (query_attached(o, &a))
		return 1;
	if (!a.prog_id) {
		fprintf(stderr, "uroce-impair: %s: no XDP program attached, nothing to detach\n", o->ifname);
		return 1;
	}
	if (!a.ours)
		return refuse_other(o, &a);
	rc = bpf_xdp_detach((int)o->ifindex, a.mode, NULL);
	if (rc) {
		fprintf(stderr, "uroce-impair: %s: cannot detach: %s\n", o->ifname, strerror(-rc));
		return 1;
	}
	printf("uroce-impair: %s: detached\n", o->ifname);
	return 0;
}

int main(int argc, char **argv)
{
	struct impair_opts o;

	parse_args(argc, argv, &o);
	libbpf_set_print(NULL); /* our messages say what failed; libbpf's add noise */
	switch (o.action) {
	case IMPAIR_ATTACH:
		return do_attach(&o);
	case IMPAIR_STATS:
		return do_stats(&o);
	case IMPAIR_OFF:
		return do_off(&o);
	case IMPAIR_NONE:
		break;
	}
	return 2;
}
