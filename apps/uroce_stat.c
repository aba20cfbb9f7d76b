/* SPDX-License-Identifier: MIT */
/* uroce-stat: the counters of a running uroce process, as `rdma statistic`
 * or `ethtool -S` give a NIC's. It reads the statistics endpoints the
 * process's contexts publish (/dev/shm/uroce-stat.PID.INDEX, layout in
 * transport/core/stat_format.h) through read-only mappings: reading never
 * touches the process itself. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uroce/uroce.h>

#include "transport/core/stat_format.h"
#include "app_version.h"
#include "app_json.h"

#define MAX_EPS 64u /* contexts of one process read */

static const char *accepted = "uroce-stat PID|NAME [--json] [--watch S] [-c COUNT] (see --help)";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-stat PID|NAME [--json] [--watch S] [-c COUNT]\n"
		"Prints the counters of a running uroce process: per port and per QP, drops by\n"
		"reason, retransmits, paths and congestion control, the engine's loops. NAME is\n"
		"a process name (/proc/PID/comm); one that names several processes lists them.\n"
		"  --json             one JSON object per sample, one per line\n"
		"  --watch S          sample every S seconds (0.1..3600), with per-second rates\n"
		"  -c, --count COUNT  samples, 1..1000000 (default 1; --watch alone: until interrupted)\n"
		"  -h, --help         this help\n"
		"  --version          the version\n"
		"The process publishes its endpoints unless it turned them off (UROCE_STAT=0, or\n"
		"uroce_context_attr.stat_endpoint = -1); only its user (or root) can read them.\n"
		"Exit 0 on success, 1 when there is no such process or it has no endpoint,\n"
		"2 on bad arguments or a NAME of several processes.\n");
}

static void bad_arg(const char *what, const char *val)
{
	fprintf(stderr, "uroce-stat: %s '%s'; accepted: %s\n", what, val, accepted);
	exit(2);
}

/* --- finding the process ------------------------------------------------- */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static bool read_comm(int pid, char *out, size_t n)
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fgets(out, (int)n, f) != NULL;
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok;
}

/* A NAME to its one PID; several: the list and exit 2, none: exit 1. */
static int pid_of_name(const char *name)
{
	char comm[64], want[16];
	int pids[16], n = 0, self = getpid();
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d) {
		fprintf(stderr, "uroce-stat: cannot read /proc: %s\n", strerror(errno));
		exit(1);
	}
	snprintf(want, sizeof(want), "%s", name); /* the kernel keeps 15 characters of a name */
	while ((de = readdir(d))) {
		int pid;

		if (!all_digits(de->d_name))
			continue;
		pid = atoi(de->d_name);
		if (pid == self || !read_comm(pid, comm, sizeof(comm)) || strcmp(comm, want))
			continue;
		if (n < (int)(sizeof(pids) / sizeof(pids[0])))
			pids[n] = pid;
		n++;
	}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "uroce-stat: no process is named '%s' (/proc/*/comm); give its PID instead\n", name);
		exit(1);
	}
	if (n > 1) {
		fprintf(stderr, "uroce-stat: '%s' names %d processes; give one PID:\n", name, n);
		for (int i = 0; i < n && i < (int)(sizeof(pids) / sizeof(pids[0])); i++)
			fprintf(stderr, "  %d %s\n", pids[i], want);
		exit(2);
	}
	return pids[0];
}

/* --- the endpoints --------------------------------------------------------- */

struct ep {
	char path[128];
	const struct ustat_header *h;
	size_t map_bytes, body_bytes;
	dev_t dev;
	ino_t ino;
	struct ustat_snap *cur, *prev; /* the last two samples (prev->mono_ns 0: none yet) */
};

static struct ep eps[MAX_EPS];
static unsigned neps;

/* The file is the process's own endpoint: a regular file of the process's
 * user, of our layout, made by this incarnation of the PID. Else NULL and
 * why in err. */
static const struct ustat_header *ep_map(int fd, uid_t owner, uint64_t ticks, size_t *bytes, char *err, size_t en)
{
	struct ustat_header h;
	struct stat sb;
	void *m;

	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != owner) {
		snprintf(err, en, "not the process's own file");
		return NULL;
	}
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != USTAT_MAGIC) {
		snprintf(err, en, "not a uroce statistics endpoint");
		return NULL;
	}
	if (h.version != USTAT_VERSION || h.header_bytes != sizeof(struct ustat_header) ||
	    h.snap_bytes != sizeof(struct ustat_snap) || h.qp_bytes != sizeof(struct ustat_qp) ||
	    h.port_bytes != sizeof(struct ustat_port) || h.path_bytes != sizeof(struct uroce_path_stats) ||
	    h.qp_stats_bytes != sizeof(struct uroce_qp_stats) || h.port_stats_bytes != sizeof(struct uroce_port_stats) ||
	    h.ndrop_reasons != UROCE_DROP__COUNT) {
		snprintf(err, en, "endpoint format version %u (its records differ); this uroce-stat reads version %u: "
		         "use the uroce-stat of the process's uroce", h.version, USTAT_VERSION);
		return NULL;
	}
	if (h.start_ticks != ticks) {
		snprintf(err, en, "stale: left by an earlier process with this PID");
		return NULL;
	}
	if (h.max_qps > USTAT_MAX_QPS_LIMIT || h.file_bytes != sizeof(h) + ustat_body_bytes(h.max_qps) ||
	    (off_t)h.file_bytes > sb.st_size) {
		snprintf(err, en, "endpoint of an impossible size");
		return NULL;
	}
	m = mmap(NULL, h.file_bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		snprintf(err, en, "mmap: %s", strerror(errno));
		return NULL;
	}
	*bytes = h.file_bytes;
	return m;
}

static int ep_cmp(const void *a, const void *b)
{
	const struct ep *x = a, *y = b;

	return (x->h->ctx_index > y->h->ctx_index) - (x->h->ctx_index < y->h->ctx_index);
}

/* Map every endpoint of pid; the number found. A denied or foreign one is
 * said on stderr. */
static unsigned find_endpoints(int pid)
{
	char procpath[64], err[256];
	uint64_t ticks = ustat_proc_start_ticks(pid);
	struct stat ps;
	struct dirent *de;
	DIR *d;

	snprintf(procpath, sizeof(procpath), "/proc/%d", pid);
	if (stat(procpath, &ps))
		return 0;
	d = opendir(USTAT_DIR);
	if (!d)
		return 0;
	while ((de = readdir(d)) && neps < MAX_EPS) {
		struct ep *e = &eps[neps];
		unsigned idx;
		struct stat sb;
		int p, fd;
		char tail;

		if (sscanf(de->d_name, USTAT_PREFIX "%d.%u%c", &p, &idx, &tail) != 2 || p != pid)
			continue;
		snprintf(e->path, sizeof(e->path), USTAT_DIR "/" USTAT_PREFIX "%d.%u", p, idx);
		fd = open(e->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "uroce-stat: %s: %s%s\n", e->path, strerror(errno),
			        errno == EACCES ? " (an endpoint is readable by its process's user and root only)" : "");
			continue;
		}
		e->h = ep_map(fd, ps.st_uid, ticks, &e->map_bytes, err, sizeof(err));
		if (!e->h) {
			fprintf(stderr, "uroce-stat: %s: %s; ignored\n", e->path, err);
			close(fd);
			continue;
		}
		fstat(fd, &sb);
		close(fd);
		e->dev = sb.st_dev;
		e->ino = sb.st_ino;
		e->body_bytes = ustat_body_bytes(e->h->max_qps);
		e->cur = calloc(1, e->body_bytes);
		e->prev = calloc(1, e->body_bytes);
		if (!e->cur || !e->prev) {
			fprintf(stderr, "uroce-stat: out of memory\n");
			exit(1);
		}
		neps++;
	}
	closedir(d);
	qsort(eps, neps, sizeof(eps[0]), ep_cmp);
	return neps;
}

/* Still the file the process publishes (it unlinks it when the context
 * goes), and the process still there (one killed leaves its file)? */
static bool ep_alive(const struct ep *e)
{
	struct stat sb;

	return !stat(e->path, &sb) && sb.st_dev == e->dev && sb.st_ino == e->ino &&
	       ustat_proc_start_ticks(e->h->pid) == e->h->start_ticks;
}

/* A consistent copy into e->cur (the old one into e->prev): 0, or -1. */
static int ep_sample(struct ep *e)
{
	struct ustat_snap *t = e->prev;

	e->prev = e->cur;
	e->cur = t;
	for (int i = 0; i < 1000; i++) {
		if (ustat_read(e->h, e->cur, e->body_bytes, 16))
			return 0;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL); /* the engine is mid-write: after it */
	}
	return -1;
}

/* --- printing ---------------------------------------------------------------- */

/* The QP counters, by name, in uroce_qp_stats's order. */
#define QP_FIELDS(X)                                                                                                   \
	X(tx_packets) X(rx_packets) X(retransmits) X(timeouts) X(seq_naks_sent) X(seq_naks_rcvd) X(rnr_naks_sent)      \
	X(rnr_naks_rcvd) X(duplicates) X(out_of_sequence) X(access_errors) X(credit_waits) X(sacks_sent)               \
	X(sacks_rcvd) X(rack_losses) X(tlp_probes) X(rto_losses) X(spurious_retx) X(parity_sent) X(ec_recovered)       \
	X(ec_nacks_sent) X(ec_nacks_rcvd) X(srtt_ns) X(rto_ns) X(be_timeouts) X(be_preempted) X(late_drops) X(op_ns)   \
	X(op_bytes) X(imm_counted) X(cnps_sent) X(cnps_rcvd) X(ecn_ce_rcvd) X(trims_rcvd) X(trim_nacks_rcvd)           \
	X(cc_blocked) X(cc_losses) X(cc_rts_sent) X(cc_rts_rcvd) X(cc_pulls_sent) X(cc_pulls_rcvd) X(paths_down)       \
	X(cc_rate_bps) X(cc_window_bytes) X(dup_sacks_held) X(ec_nacks_early) X(ec_decode_tables)

struct field {
	const char *name;
	size_t off;
};
#define FIELD_ROW(f) { #f, offsetof(struct uroce_qp_stats, f) },
static const struct field qp_fields[] = { QP_FIELDS(FIELD_ROW) };
#define NQP_FIELDS (sizeof(qp_fields) / sizeof(qp_fields[0]))

static uint64_t qp_field(const struct uroce_qp_stats *s, unsigned i)
{
	uint64_t v;

	memcpy(&v, (const char *)s + qp_fields[i].off, sizeof(v));
	return v;
}

/* Counters that are a level now, not a running count: no rate. */
static bool qp_field_is_level(unsigned i)
{
	const char *n = qp_fields[i].name;

	return !strcmp(n, "srtt_ns") || !strcmp(n, "rto_ns") || !strcmp(n, "cc_rate_bps") ||
	       !strcmp(n, "cc_window_bytes");
}

static const char *qp_type_name(unsigned t)
{
	return t == UROCE_QPT_RC ? "rc" : t == UROCE_QPT_UC ? "uc" : t == UROCE_QPT_UD ? "ud" : "?";
}

/* rc-type QPs by their reliability, uc and ud by their type */
static const char *qp_mode(const struct ustat_qp *q)
{
	const char *r = uroce_reliability_str((enum uroce_reliability)q->rel);

	return q->type == UROCE_QPT_RC ? (r ? r : "?") : qp_type_name(q->type);
}

static const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

/* The previous sample's record of qpn, or NULL. */
static const struct ustat_qp *prev_qp(struct ep *e, uint32_t qpn)
{
	if (!e->prev->mono_ns)
		return NULL;
	for (uint32_t i = 0; i < e->prev->nqps_listed; i++)
		if (ustat_qp_at(e->prev, i)->qpn == qpn)
			return ustat_qp_at(e->prev, i);
	return NULL;
}

/* (now - before) per second over dt seconds; counters never go back, but
 * a restarted context could: then 0. */
static double rate(uint64_t now, uint64_t before, double dt)
{
	return now >= before && dt > 0 ? (double)(now - before) / dt : 0;
}

static double sample_dt(const struct ep *e)
{
	return e->prev->mono_ns && e->cur->mono_ns > e->prev->mono_ns ? (double)(e->cur->mono_ns - e->prev->mono_ns) / 1e9
	                                                               : 0;
}

static uint64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double idle_share(uint64_t idle, uint64_t passes)
{
	return passes ? (double)idle / (double)passes : 0;
}

static void print_text(struct ep *e, int pid)
{
	const struct ustat_header *h = e->h;
	const struct ustat_snap *s = e->cur, *p = e->prev;
	double dt = sample_dt(e);
	double age = (double)(now_mono_ns() - s->mono_ns) / 1e9;

	printf("pid %d (%s) context %u: engine %s", pid, h->comm, h->ctx_index,
	       h->mode == UROCE_ENGINE_DEDICATED ? "dedicated" : "embedded");
	if (h->engine_cpu >= 0)
		printf(" on cpu %d", h->engine_cpu);
	printf(", snapshot %.2f s old%s\n", age,
	       age > 2.0 && h->mode == UROCE_ENGINE_EMBEDDED ? " (the application has not called uroce_progress since)"
	                                                     : "");
	printf("  engine: loops %" PRIu64 ", idle %.1f%%, timers %" PRIu64, s->eng.passes,
	       100 * idle_share(s->eng.idle_passes, s->eng.passes), s->eng.timers);
	if (s->eng.cpu_ns)
		printf(", cpu %.3f s", (double)s->eng.cpu_ns / 1e9);
	if (dt > 0)
		printf("  [%.0f loops/s, idle %.1f%%]", rate(s->eng.passes, p->eng.passes, dt),
		       100 * idle_share(s->eng.idle_passes - p->eng.idle_passes, s->eng.passes - p->eng.passes));
	printf("\n");
	for (uint32_t i = 0; i < s->nports && i < UROCE_MAX_PORTS; i++) {
		const struct ustat_port *pt = &s->ports[i], *pp = &p->ports[i];
		bool any = false;

		printf("  port %u %s (link %s): rx %" PRIu64 " pkts %" PRIu64 " bytes, tx %" PRIu64 " pkts %" PRIu64
		       " bytes",
		       pt->port_num, pt->spec, pt->link_up ? "up" : "down", pt->st.rx_packets, pt->st.rx_bytes,
		       pt->st.tx_packets, pt->st.tx_bytes);
		if (dt > 0)
			printf("  [rx %.0f pkt/s %.3f Gb/s, tx %.0f pkt/s %.3f Gb/s]",
			       rate(pt->st.rx_packets, pp->st.rx_packets, dt),
			       8 * rate(pt->st.rx_bytes, pp->st.rx_bytes, dt) / 1e9,
			       rate(pt->st.tx_packets, pp->st.tx_packets, dt),
			       8 * rate(pt->st.tx_bytes, pp->st.tx_bytes, dt) / 1e9);
		printf("\n    drops:");
		for (unsigned r = 1; r < UROCE_DROP__COUNT; r++)
			if (pt->st.drops[r]) {
				printf(" %s %" PRIu64, uroce_drop_reason_name((enum uroce_drop_reason)r), pt->st.drops[r]);
				if (dt > 0)
					printf(" (%.0f/s)", rate(pt->st.drops[r], pp->st.drops[r], dt));
				any = true;
			}
		printf("%s\n", any ? "" : " none");
	}
	printf("  qps: %u%s\n", s->nqps,
	       s->flags & USTAT_F_QPS_TRUNCATED ? " (truncated: the endpoint lists the first ones only)" : "");
	if (s->flags & USTAT_F_QPS_TRUNCATED)
		printf("  listing %u of %u QPs (stat_max_qps)\n", s->nqps_listed, s->nqps);
	for (uint32_t i = 0; i < s->nqps_listed; i++) {
		const struct ustat_qp *q = ustat_qp_at(e->cur, i), *pq = prev_qp(e, q->qpn);
		const struct uroce_qp_stats *st = &q->st;

		printf("  qp 0x%06x -> 0x%06x %s %s port %u", q->qpn, q->dqpn, qp_mode(q),
		       uroce_qp_state_str((enum uroce_qp_state)q->state), q->port_num);
		if (q->flags & USTAT_QP_ON_NIC) {
			printf(": runs on the NIC (its counters: rdma statistic)\n");
			continue;
		}
		printf(" cc %s\n", str_or(uroce_cc_str((enum uroce_cc)q->cc), "?"));
		printf("    tx %" PRIu64 " pkts, rx %" PRIu64 " pkts, retransmits %" PRIu64 ", timeouts %" PRIu64,
		       st->tx_packets, st->rx_packets, st->retransmits, st->timeouts);
		if (dt > 0 && pq)
			printf("  [tx %.0f pkt/s, rx %.0f pkt/s, retx %.0f/s]", rate(st->tx_packets, pq->st.tx_packets, dt),
			       rate(st->rx_packets, pq->st.rx_packets, dt), rate(st->retransmits, pq->st.retransmits, dt));
		printf("\n    sacks sent %" PRIu64 " rcvd %" PRIu64 ", rto losses %" PRIu64 ", tlp probes %" PRIu64
		       ", rack losses %" PRIu64 ", srtt %.1f us, rto %.1f us\n",
		       st->sacks_sent, st->sacks_rcvd, st->rto_losses, st->tlp_probes, st->rack_losses,
		       (double)st->srtt_ns / 1e3, (double)st->rto_ns / 1e3);
		printf("    cc: window ");
		if (st->cc_window_bytes == UINT64_MAX)
			printf("none");
		else
			printf("%" PRIu64 " B", st->cc_window_bytes);
		printf(", rate %s", st->cc_rate_bps ? "" : "not paced");
		if (st->cc_rate_bps)
			printf("%.3f Gb/s", (double)st->cc_rate_bps / 1e9);
		printf(", blocked %" PRIu64 ", losses %" PRIu64 ", cnps rcvd %" PRIu64 ", ecn ce %" PRIu64 "\n",
		       st->cc_blocked, st->cc_losses, st->cnps_rcvd, st->ecn_ce_rcvd);
		/* the rest, where nonzero */
		{
			bool any = false;

			for (unsigned f = 0; f < NQP_FIELDS; f++) {
				const char *n = qp_fields[f].name;
				uint64_t v = qp_field(st, f);

				if (!v || strstr("tx_packets rx_packets retransmits timeouts sacks_sent sacks_rcvd rto_losses "
				                 "tlp_probes rack_losses srtt_ns rto_ns cc_window_bytes cc_rate_bps cc_blocked "
				                 "cc_losses cnps_rcvd ecn_ce_rcvd", n))
					continue;
				printf("%s %s %" PRIu64, any ? "," : "    other:", n, v);
				any = true;
			}
			if (any)
				printf("\n");
		}
		if (q->npaths)
			printf("    paths: %u%s\n", q->npaths,
			       q->flags & USTAT_QP_PATHS_TRUNCATED ? " (truncated: the first ones listed)"
			       : q->npaths_listed ? "" : " (none set up yet: before RTR)");
		for (unsigned k = 0; k < q->npaths_listed && k < USTAT_MAX_PATHS; k++) {
			const struct uroce_path_stats *ps = &q->paths[k];

			printf("      path %u sport %u port %u %s: srtt %.1f us, min rtt %.1f us, inflight %u B, tx %" PRIu64
			       ", acked %" PRIu64 ", losses %" PRIu64 ", ecn %" PRIu64 ", trims %" PRIu64,
			       k, ps->sport, ps->port_num, ps->up ? "up" : "DOWN", (double)ps->srtt_ns / 1e3,
			       (double)ps->min_rtt_ns / 1e3, ps->inflight_bytes, ps->tx_pkts, ps->acked_pkts, ps->losses,
			       ps->ecn_marks, ps->trims);
			if (ps->cc_window_bytes)
				printf(", cc window %" PRIu64 " B", ps->cc_window_bytes);
			printf("\n");
		}
	}
}


static void print_json_ctx(struct ep *e)
{
	const struct ustat_header *h = e->h;
	const struct ustat_snap *s = e->cur, *p = e->prev;
	double dt = sample_dt(e);

	printf("{\"index\":%u,\"version\":%u,\"mode\":\"%s\",\"engine_cpu\":%d,\"snapshot_age_s\":%.3f,"
	       "\"snapshots\":%" PRIu64 ",\"interval_s\":%.3f,",
	       h->ctx_index, h->version, h->mode == UROCE_ENGINE_DEDICATED ? "dedicated" : "embedded", h->engine_cpu,
	       (double)(now_mono_ns() - s->mono_ns) / 1e9, s->snapshots, dt);
	printf("\"engine\":{\"loops\":%" PRIu64 ",\"idle_loops\":%" PRIu64 ",\"idle_share\":%.4f,\"timers\":%" PRIu64
	       ",\"cpu_ns\":%" PRIu64 ",\"async_events_lost\":%" PRIu64,
	       s->eng.passes, s->eng.idle_passes, idle_share(s->eng.idle_passes, s->eng.passes), s->eng.timers,
	       s->eng.cpu_ns, s->async_lost);
	if (dt > 0)
		printf(",\"rates\":{\"loops\":%.1f,\"idle_share\":%.4f}", rate(s->eng.passes, p->eng.passes, dt),
		       idle_share(s->eng.idle_passes - p->eng.idle_passes, s->eng.passes - p->eng.passes));
	printf("},\"ports\":[");
	for (uint32_t i = 0; i < s->nports && i < UROCE_MAX_PORTS; i++) {
		const struct ustat_port *pt = &s->ports[i], *pp = &p->ports[i];
		bool first = true;

		printf("%s{\"port\":%u,\"spec\":", i ? "," : "", pt->port_num);
		app_json_str(stdout, pt->spec);
		printf(",\"link_up\":%s,\"rx_packets\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"tx_packets\":%" PRIu64
		       ",\"tx_bytes\":%" PRIu64 ",\"drops\":{",
		       pt->link_up ? "true" : "false", pt->st.rx_packets, pt->st.rx_bytes, pt->st.tx_packets,
		       pt->st.tx_bytes);
		for (unsigned r = 1; r < UROCE_DROP__COUNT; r++)
			if (pt->st.drops[r]) {
				printf("%s\"%s\":%" PRIu64, first ? "" : ",", uroce_drop_reason_name((enum uroce_drop_reason)r),
				       pt->st.drops[r]);
				first = false;
			}
		printf("}");
		if (dt > 0)
			printf(",\"rates\":{\"rx_packets\":%.1f,\"rx_bytes\":%.1f,\"tx_packets\":%.1f,\"tx_bytes\":%.1f}",
			       rate(pt->st.rx_packets, pp->st.rx_packets, dt), rate(pt->st.rx_bytes, pp->st.rx_bytes, dt),
			       rate(pt->st.tx_packets, pp->st.tx_packets, dt), rate(pt->st.tx_bytes, pp->st.tx_bytes, dt));
		printf("}");
	}
	printf("],\"qps_total\":%u,\"qps_listed\":%u,\"qps_truncated\":%s,\"qps\":[", s->nqps, s->nqps_listed,
	       s->flags & USTAT_F_QPS_TRUNCATED ? "true" : "false");
	for (uint32_t i = 0; i < s->nqps_listed; i++) {
		const struct ustat_qp *q = ustat_qp_at(e->cur, i), *pq = prev_qp(e, q->qpn);

		printf("%s{\"qpn\":%u,\"dest_qpn\":%u,\"type\":\"%s\",\"reliability\":\"%s\",\"mode\":\"%s\","
		       "\"state\":\"%s\",\"port\":%u,\"cc\":\"%s\",\"on_nic\":%s",
		       i ? "," : "", q->qpn, q->dqpn, qp_type_name(q->type),
		       str_or(uroce_reliability_str((enum uroce_reliability)q->rel), "?"), qp_mode(q),
		       uroce_qp_state_str((enum uroce_qp_state)q->state), q->port_num,
		       str_or(uroce_cc_str((enum uroce_cc)q->cc), "?"), q->flags & USTAT_QP_ON_NIC ? "true" : "false");
		printf(",\"stats\":{");
		for (unsigned f = 0; f < NQP_FIELDS; f++)
			printf("%s\"%s\":%" PRIu64, f ? "," : "", qp_fields[f].name, qp_field(&q->st, f));
		printf("}");
		if (dt > 0 && pq) {
			bool first = true;

			printf(",\"rates\":{");
			for (unsigned f = 0; f < NQP_FIELDS; f++)
				if (!qp_field_is_level(f)) {
					printf("%s\"%s\":%.1f", first ? "" : ",", qp_fields[f].name,
					       rate(qp_field(&q->st, f), qp_field(&pq->st, f), dt));
					first = false;
				}
			printf("}");
		}
		printf(",\"paths_total\":%u,\"paths_truncated\":%s,\"paths\":[", q->npaths,
		       q->flags & USTAT_QP_PATHS_TRUNCATED ? "true" : "false");
		for (unsigned k = 0; k < q->npaths_listed && k < USTAT_MAX_PATHS; k++) {
			const struct uroce_path_stats *ps = &q->paths[k];

			printf("%s{\"path\":%u,\"sport\":%u,\"port\":%u,\"up\":%s,\"inflight_bytes\":%u,\"srtt_ns\":%" PRIu64
			       ",\"min_rtt_ns\":%" PRIu64 ",\"tx_pkts\":%" PRIu64 ",\"acked_pkts\":%" PRIu64
			       ",\"losses\":%" PRIu64 ",\"ecn_marks\":%" PRIu64 ",\"trims\":%" PRIu64
			       ",\"cc_window_bytes\":%" PRIu64 "}",
			       k ? "," : "", k, ps->sport, ps->port_num, ps->up ? "true" : "false", ps->inflight_bytes,
			       ps->srtt_ns, ps->min_rtt_ns, ps->tx_pkts, ps->acked_pkts, ps->losses, ps->ecn_marks,
			       ps->trims, ps->cc_window_bytes);
		}
		printf("]}");
	}
	printf("]}");
}

/* --- main ---------------------------------------------------------------------- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", required_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0, 0, 0, 0 },
	};
	double watch = 0;
	long count = 1;
	bool json = false, count_set = false, watch_set = false;
	char comm[64] = "?", *end;
	int pid, c, rc = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'w':
			errno = 0;
			watch = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(watch) || watch < 0.1 || watch > 3600)
				bad_arg("--watch: seconds (0.1..3600), not", optarg);
			watch_set = true;
			break;
		case 'c':
			errno = 0;
			count = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || count < 1 || count > 1000000)
				bad_arg("-c: a count of samples (1..1000000), not", optarg);
			count_set = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			app_print_version("uroce-stat");
			return 0;
		case ':':
			fprintf(stderr, "uroce-stat: %s needs a value; accepted: %s\n", argv[optind - 1], accepted);
			return 2;
		default:
			bad_arg("unknown option", argv[optind - 1]);
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "uroce-stat: %s; accepted: %s\n",
		        argc == optind ? "which process? give a PID or a process name" : "one process at a time", accepted);
		return 2;
	}
	if (all_digits(argv[optind])) {
		long v = strtol(argv[optind], &end, 10);

		if (v < 1 || v > 4194304)
			bad_arg("PID", argv[optind]);
		pid = (int)v;
	} else {
		pid = pid_of_name(argv[optind]);
	}
	if (!watch_set)
		watch = 1; /* -c without --watch: samples a second apart */
	else if (!count_set)
		count = -1; /* --watch without -c: until interrupted */
	if (!read_comm(pid, comm, sizeof(comm))) {
		fprintf(stderr, "uroce-stat: no process %d\n", pid);
		return 1;
	}
	if (!find_endpoints(pid)) {
		fprintf(stderr,
		        "uroce-stat: process %d (%s) has no uroce statistics endpoint in " USTAT_DIR ": it opened no uroce "
		        "context, turned the endpoint off (UROCE_STAT=0, stat_endpoint = -1), or runs as another user\n",
		        pid, comm);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long n = 0; (count < 0 || n < count) && !stop; n++) {
		unsigned alive = 0;

		if (n) {
			struct timespec ts = { (time_t)watch, (long)((watch - (double)(time_t)watch) * 1e9) };

			while (nanosleep(&ts, &ts) && errno == EINTR && !stop)
				;
			if (stop)
				break;
		}
		for (unsigned i = 0; i < neps; i++)
			if (eps[i].h && ep_alive(&eps[i])) {
				if (ep_sample(&eps[i])) {
					fprintf(stderr, "uroce-stat: %s: the engine kept rewriting the snapshot; try again\n",
					        eps[i].path);
					return 1;
				}
				alive++;
			} else if (eps[i].h) {
				munmap((void *)eps[i].h, eps[i].map_bytes);
				eps[i].h = NULL;
			}
		if (!alive) {
			fprintf(stderr, "uroce-stat: process %d (%s): its statistics endpoint is gone (the process exited "
			        "or destroyed its contexts)\n", pid, comm);
			return 1;
		}
		if (json) {
			struct timespec rt;
			bool first = true;

			clock_gettime(CLOCK_REALTIME, &rt);
			printf("{\"pid\":%d,\"comm\":", pid);
			app_json_str(stdout, comm);
			printf(",\"sample\":%ld,\"time\":%.3f,\"contexts\":[", n, (double)rt.tv_sec + rt.tv_nsec / 1e9);
			for (unsigned i = 0; i < neps; i++)
				if (eps[i].h) {
					if (!first)
						printf(",");
					print_json_ctx(&eps[i]);
					first = false;
				}
			printf("]}\n");
		} else {
			if (n)
				printf("\n");
			for (unsigned i = 0; i < neps; i++)
				if (eps[i].h)
					print_text(&eps[i], pid);
		}
	}
	if (fflush(stdout))
		rc = 1;
	return rc;
}
