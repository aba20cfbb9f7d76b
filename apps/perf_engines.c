/* SPDX-License-Identifier: MIT */
/* uroce-perf over several engines: -d afxdp:IFACE:A-B opens one context
 * per queue A..B, each with an engine thread of its own (pinned to the
 * CPUs --cores names), and spreads the QPs over them, QP i on engine
 * i mod N. The NIC's RSS decides which queue a packet reaches, so each end
 * picks, per QP, UDP source ports that reach the queue of the engine
 * owning that QP (uroce_steer_sports), and the two ends trade them after
 * the key messages: a QP's packets then arrive at its own engine and no
 * other. A queue range (even A-A) asks for this on both ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_counters.h"
#include "perf.h"

#define STEER_MAGIC "UROCE-STEER1"
#define STEER_HDR_LEN 32 /* "UROCE-STEER1 QPS SPORTS", spaces, '\n' */
#define STEER_PORT_LEN 5 /* "c0a1 " (the last of a QP's ends in '\n') */

/* "afxdp:IFACE:A-B[:OPT]": the engines' specs, one queue each. */
int perf_engines_parse(struct perf_opts *o)
{
	const char *spec = o->devs[0], *q, *dash, *opt;
	unsigned long a, b;
	char *end;

	if (!spec || strncmp(spec, "afxdp:", 6) || !(q = strchr(spec + 6, ':')) || !(dash = strchr(q + 1, '-')) ||
	    ((opt = strchr(q + 1, ':')) && opt < dash)) {
		if (o->ncores > 1) {
			fprintf(stderr, "uroce-perf: --cores names %d CPUs, one per engine, but -d %s has no queue range "
				"(afxdp:IFACE:A-B: one engine per queue)\n", o->ncores, o->dev);
			return -1;
		}
		o->nengines = o->ncores; /* --cores C alone: one dedicated engine */
		return 0;
	}
	if (o->ndevs > 1) {
		fprintf(stderr, "uroce-perf: -d %s: a queue range makes engines of one port; it cannot share -d with "
			"other ports\n", o->dev);
		return -1;
	}
	a = strtoul(q + 1, &end, 10);
	if (end != dash || dash == q + 1)
		goto bad;
	b = strtoul(dash + 1, &end, 10);
	if (end == dash + 1 || (*end && *end != ':') || b < a || b > 1023 || b - a + 1 > PERF_MAX_ENGINES)
		goto bad;
	o->nengines = (int)(b - a + 1);
	o->steer = 1;
	if (o->ncores && o->ncores != o->nengines) {
		fprintf(stderr, "uroce-perf: --cores names %d CPU(s) for %d engine(s) (queues %lu-%lu); give one CPU "
			"per engine\n", o->ncores, o->nengines, a, b);
		return -1;
	}
	for (int k = 0; k < o->nengines; k++)
		snprintf(o->eng_spec[k], sizeof(o->eng_spec[k]), "%.*s%lu%s", (int)(q + 1 - spec), spec, a + (unsigned long)k,
			 *end ? end : "");
	if (o->conn == UROCE_QPT_UD) {
		fprintf(stderr, "uroce-perf: -d %s: engines on a queue range steer RC and UC QPs; UD has no peer "
			"QP to steer (accepted: -c RC, -c UC)\n", o->dev);
		return -1;
	}
	return 0;
bad:
	fprintf(stderr, "uroce-perf: -d %s: queue range '%.*s'; accepted A-B with A <= B <= 1023, at most %d "
		"queues (afxdp:IFACE:A-B[:generic|zc|copy])\n", o->dev, (int)strcspn(q + 1, ":"), q + 1, PERF_MAX_ENGINES);
	return -1;
}

/* --cores 0,1,...: the engines' CPUs. */
int perf_cores_parse(struct perf_opts *o, const char *arg)
{
	const char *s = arg;

	o->ncores = 0;
	while (*s) {
		char *end;
		long c = strtol(s, &end, 10);

		if (end == s || c < 0 || c > 1023 || (*end && *end != ',') || o->ncores == PERF_MAX_ENGINES) {
			fprintf(stderr, "uroce-perf: --cores '%s': accepted a comma-separated list of up to %d CPU "
				"numbers (0-1023), one per engine\n", arg, PERF_MAX_ENGINES);
			return -1;
		}
		o->cores[o->ncores++] = (int)c;
		s = *end ? end + 1 : end;
	}
	if (!o->ncores) {
		fprintf(stderr, "uroce-perf: --cores '': name at least one CPU\n");
		return -1;
	}
	return 0;
}

/* Source ports per QP: one per path, up to UROCE_MAX_SPORTS. */
static int steer_nports(const struct perf_opts *o)
{
	int n = o->rel.path.npaths > 1 ? (int)o->rel.path.npaths : 1;

	return n > UROCE_MAX_SPORTS ? UROCE_MAX_SPORTS : n;
}

int perf_steer_exchange(struct perf_ctx *p)
{
	const struct perf_opts *o = p->o;
	int nq = o->num_qps, ns = steer_nports(o), rc = 0;
	size_t body = (size_t)nq * (size_t)ns * STEER_PORT_LEN, len = STEER_HDR_LEN + body;
	char *mine = malloc(len + 1), *theirs = malloc(len + 1);

	if (!mine || !theirs) {
		rc = -ENOMEM;
		goto out;
	}
	p->nsports = ns;
	p->rem_sports = calloc((size_t)nq, sizeof(*p->rem_sports));
	if (!p->rem_sports) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(mine, STEER_HDR_LEN + 1, "%s %d %d", STEER_MAGIC, nq, ns);
	memset(mine + strlen(mine), ' ', STEER_HDR_LEN - strlen(mine));
	mine[STEER_HDR_LEN - 1] = '\n';
	for (int i = 0; i < nq; i++) {
		const struct perf_engine *e = &p->eng[i % p->neng];
		uint16_t sp[UROCE_MAX_SPORTS];

		rc = uroce_steer_sports(e->ctx, (uint8_t)o->ib_port, p->port.gid, p->rem[i].gid, sp, (unsigned)ns);
		if (rc) {
			fprintf(stderr, "uroce-perf: cannot steer QP %d to its engine's queue: %s\n", i + 1,
				uroce_last_error());
			goto out;
		}
		for (int k = 0; k < ns; k++)
			snprintf(mine + STEER_HDR_LEN + ((size_t)i * ns + k) * STEER_PORT_LEN, STEER_PORT_LEN + 1, "%04x%c",
				 sp[k], k + 1 == ns ? '\n' : ' ');
	}
	/* the header first: a peer without a queue range sends something else */
	if (p->comm.is_client) {
		rc = tcp_exchange_send(&p->comm.tcp, mine, len);
		if (!rc)
			rc = tcp_exchange_recv(&p->comm.tcp, theirs, STEER_HDR_LEN);
	} else {
		rc = tcp_exchange_recv(&p->comm.tcp, theirs, STEER_HDR_LEN);
	}
	if (rc)
		goto out;
	theirs[STEER_HDR_LEN] = 0;
	int tq = -1, tn = -1;
	if (strncmp(theirs, STEER_MAGIC " ", sizeof(STEER_MAGIC)) || sscanf(theirs + sizeof(STEER_MAGIC), "%d %d", &tq, &tn) != 2) {
		fprintf(stderr, "uroce-perf: the peer sent no source ports for its engines' queues: give both ends a "
			"queue range (-d afxdp:IFACE:A-B), or neither\n");
		rc = -EPROTO;
		goto out;
	}
	if (tq != nq || tn != ns) {
		fprintf(stderr, "uroce-perf: the peer steers %d QP(s) with %d port(s) each, this end %d with %d: give "
			"both ends the same -q and --paths\n", tq, tn, nq, ns);
		rc = -EPROTO;
		goto out;
	}
	rc = tcp_exchange_recv(&p->comm.tcp, theirs + STEER_HDR_LEN, body);
	if (!rc && !p->comm.is_client)
		rc = tcp_exchange_send(&p->comm.tcp, mine, len);
	if (rc)
		goto out;
	theirs[len] = 0;
	for (int i = 0; i < nq; i++)
		for (int k = 0; k < ns; k++) {
			const char *f = theirs + STEER_HDR_LEN + ((size_t)i * ns + k) * STEER_PORT_LEN;
			char *end;
			unsigned long v = strtoul(f, &end, 16);

			if (end != f + 4 || !v || v > 0xffff) {
				fprintf(stderr, "uroce-perf: the peer's source port %d of QP %d is unreadable\n", k + 1, i + 1);
				rc = -EPROTO;
				goto out;
			}
			p->rem_sports[i][k] = (uint16_t)v;
		}
out:
	free(mine);
	free(theirs);
	return rc;
}

/* Engine k's QPs (k, k + n, k + 2n, ...) into qps; how many. */
static int engine_qps(struct perf_ctx *p, int k, struct uroce_qp **qps)
{
	int n = 0;

	for (int i = k; i < p->o->num_qps; i += p->neng)
		if (qps)
			qps[n++] = p->qp[i];
		else
			n++;
	return n;
}

void perf_engines_report(struct perf_ctx *p, FILE *f)
{
	const struct perf_opts *o = p->o;
	uint64_t wall = perf_now_ns() - p->t_open_ns;

	for (int k = 0; k < p->neng; k++) {
		const struct perf_engine *e = &p->eng[k];
		struct uroce_port_stats ps;
		struct uroce_engine_stats es;
		int nqps = engine_qps(p, k, NULL);

		if (uroce_port_stats(e->ctx, (uint8_t)o->ib_port, &ps) || uroce_engine_stats(e->ctx, &es))
			continue;
		fprintf(f, "uroce engine %d: %s on CPU %d: %d QP(s), rx_packets=%llu tx_packets=%llu no_qp=%llu, engine "
			"CPU %.2f s of %.2f s (%.0f%%), %llu passes, %llu with work\n", k,
			o->steer ? o->eng_spec[k] : o->dev, es.cpu, nqps, (unsigned long long)ps.rx_packets,
			(unsigned long long)ps.tx_packets, (unsigned long long)ps.drops[UROCE_DROP_NO_QP],
			(double)es.cpu_ns / 1e9, (double)wall / 1e9, wall ? 100.0 * (double)es.cpu_ns / (double)wall : 0.0,
			(unsigned long long)es.passes, (unsigned long long)(es.passes - es.idle_passes));
	}
}

void perf_engines_counters(struct perf_ctx *p, FILE *f)
{
	const struct perf_opts *o = p->o;
	struct uroce_qp **qps = calloc((size_t)o->num_qps, sizeof(*qps));

	if (!qps)
		return;
	for (int k = 0; k < p->neng; k++) {
		int n = engine_qps(p, k, qps);

		if (p->neng > 1)
			fprintf(f, "uroce engine %d:\n", k);
		app_counters_print(f, qps, n, p->eng[k].ctx, (uint8_t)o->ib_port);
	}
	free(qps);
}
