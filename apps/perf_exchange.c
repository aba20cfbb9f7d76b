/* SPDX-License-Identifier: MIT */
/* perftest's out-of-band TCP exchange (the Ethernet one, without -R): in
 * every step the client writes first and the server reads, then answers
 * with the same kind of message. Integers travel big-endian, doubles
 * byte-swapped to big-endian, the QP data as perftest's ASCII key message.
 * The connection and its bounded waits, which keep the transport running,
 * are tcp_exchange.c's.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "rel_exchange.h"

int perf_xchg(struct perf_comm *c, const void *mine, void *theirs, size_t len)
{
	int rc;

	if (c->is_client) {
		rc = tcp_exchange_send(&c->tcp, mine, len);
		return rc ? rc : tcp_exchange_recv(&c->tcp, theirs, len);
	}
	rc = tcp_exchange_recv(&c->tcp, theirs, len);
	return rc ? rc : tcp_exchange_send(&c->tcp, mine, len);
}

int perf_xchg_rel(struct perf_comm *c, const void *mine, void *theirs, size_t len)
{
	static const struct uroce_rel_attr rc_attr;
	const struct uroce_rel_attr *rel = c->rel ? c->rel : &rc_attr;
	uint32_t token, ctrl; /* each QP's token travels in its key message's srqn field; perf sends no ctrl */
	int rc;

	if (c->is_client) {
		rc = rel_exchange_send(&c->tcp, rel, 0, 0, mine, len);
		if (!rc)
			rc = rel_exchange_recv(&c->tcp, rel, &token, &ctrl, theirs, len);
	} else {
		rc = rel_exchange_recv(&c->tcp, rel, &token, &ctrl, theirs, len);
		if (rc == REL_EXCHANGE_MISMATCH) {
			/* Answer anyway, so the client sees the difference
			 * and says so too, rather than a closed connection. */
			struct tcp_exchange q = c->tcp;

			q.quiet = true;
			rel_exchange_send(&q, rel, 0, 0, mine, len);
		} else if (!rc) {
			rc = rel_exchange_send(&c->tcp, rel, 0, 0, mine, len);
		}
	}
	return rc == REL_EXCHANGE_MISMATCH ? -EPROTO : rc;
}

int perf_comm_open(struct perf_comm *c, const char *server, int port, double timeout)
{
	int rc;

	c->tcp.prog = "uroce-perf";
	c->tcp.timeout_s = timeout;
	c->is_client = server != NULL;
	rc = server ? tcp_exchange_connect(&c->tcp, server, (unsigned)port) : tcp_exchange_accept(&c->tcp, (unsigned)port);
	if (rc)
		return rc;
	if (server)
		sleep(1); /* as perftest's client does before the version */
	return 0;
}

void perf_comm_close(struct perf_comm *c)
{
	tcp_exchange_close(&c->tcp);
}

/* Written after the NUL of a uroce-perf version message: this end can
 * trade the options both ends must agree on. perftest reads the version
 * with atof() and never past the NUL, and sends NULs there itself. */
#define PARAMS_MARK "uroce-p1"
#define PARAMS_LEN 128 /* the options message, NUL-padded text */

_Static_assert(sizeof(PERF_VERSION) + sizeof(PARAMS_MARK) - 1 <= PERF_VERSION_LEN, "the mark fits the version");

/* What the two ends must agree on, as one end announces it. */
struct perf_params {
	char test[32];
	char conn[8];
	int qps, all, timed;
	uint64_t size, iters;
	int duplex;
};

static const char *conn_name(enum uroce_qp_type t)
{
	return t == UROCE_QPT_RC ? "RC" : t == UROCE_QPT_UC ? "UC" : t == UROCE_QPT_UD ? "UD" : "?";
}

static void params_format(const struct perf_opts *o, char out[PARAMS_LEN])
{
	memset(out, 0, PARAMS_LEN);
	snprintf(out, PARAMS_LEN, "%s %s %d %d %d %" PRIu64 " %" PRIu64 " %d", o->name, conn_name(o->conn),
		 o->num_qps, o->all, o->duration > 0 || o->run_infinitely, o->size, o->iters, o->duplex);
}

static int params_parse(const char in[PARAMS_LEN], struct perf_params *p)
{
	char text[PARAMS_LEN + 1];
	int end = -1;

	memcpy(text, in, PARAMS_LEN);
	text[PARAMS_LEN] = 0;
	if (sscanf(text, "%31s %7s %d %d %d %" SCNu64 " %" SCNu64 " %d%n", p->test, p->conn, &p->qps, &p->all,
		   &p->timed, &p->size, &p->iters, &p->duplex, &end) != 8 || end < 0)
		return -EINVAL;
	return 0;
}

/* Both ends' options side by side; each difference said once, naming
 * both values. The test first: the rest means something else in another. */
static int params_compare(const struct perf_comm *c, const struct perf_params *peer)
{
	const struct perf_opts *o = c->opts;
	const char *me = c->is_client ? "this end (the client)" : "this end (the server)";
	const char *them = c->is_client ? "the server" : "the client";
	int differ = 0;

	if (strcmp(peer->test, o->name)) {
		fprintf(stderr, "uroce-perf: the two ends run different tests: %s %s, %s %s; start both ends with the "
			"same test\n", me, o->name, them, peer->test);
		return -EPROTO;
	}
	if (!peer->duplex != !o->duplex) {
		fprintf(stderr, "uroce-perf: one end sends both ways and the other does not: %s %s, %s %s; give both "
			"ends -b, or neither\n", me, o->duplex ? "-b" : "no -b", them, peer->duplex ? "-b" : "no -b");
		differ = 1;
	}
	if (strcmp(peer->conn, conn_name(o->conn))) {
		fprintf(stderr, "uroce-perf: the connection types differ: %s -c %s, %s -c %s; start both ends with the "
			"same -c\n", me, conn_name(o->conn), them, peer->conn);
		differ = 1;
	}
	if (peer->qps != o->num_qps) {
		fprintf(stderr, "uroce-perf: the QP counts differ: %s -q %d, %s -q %d; start both ends with the same -q\n",
			me, o->num_qps, them, peer->qps);
		differ = 1;
	}
	if (!peer->all != !o->all) {
		char mine[32], theirs[32];

		snprintf(mine, sizeof(mine), o->all ? "-a (every size)" : "-s %" PRIu64, o->size);
		snprintf(theirs, sizeof(theirs), peer->all ? "-a (every size)" : "-s %" PRIu64, peer->size);
		fprintf(stderr, "uroce-perf: the message sizes differ: %s %s, %s %s; start both ends with the same -a or "
			"-s\n", me, mine, them, theirs);
		differ = 1;
	} else if (!o->all && peer->size != o->size) {
		fprintf(stderr, "uroce-perf: the message sizes differ: %s -s %" PRIu64 ", %s -s %" PRIu64 "; start both "
			"ends with the same -s\n", me, o->size, them, peer->size);
		differ = 1;
	}
	/* Where the server counts messages too (it waits for each); a
	 * write_bw, read_bw or read_lat server only answers. */
	if ((o->test == PERF_SEND_BW || o->test == PERF_WRITE_LAT || o->test == PERF_SEND_LAT || o->duplex) &&
	    !peer->timed && !(o->duration > 0) && !o->run_infinitely && peer->iters != o->iters) {
		fprintf(stderr, "uroce-perf: the iteration counts differ: %s -n %" PRIu64 ", %s -n %" PRIu64 "; in %s "
			"both ends count them: start both ends with the same -n\n", me, o->iters, them, peer->iters,
			o->name);
		differ = 1;
	}
	return differ ? -EPROTO : 0;
}

/* Trade the options (client first, as every step) and compare them. */
static int xchg_params(struct perf_comm *c)
{
	char mine[PARAMS_LEN], theirs[PARAMS_LEN];
	struct perf_params peer;
	int rc;

	params_format(c->opts, mine);
	rc = perf_xchg(c, mine, theirs, PARAMS_LEN);
	if (rc)
		return rc;
	if (params_parse(theirs, &peer)) {
		fprintf(stderr, "uroce-perf: the peer's options message is malformed: '%.*s'; expected TEST CONN QPS "
			"ALL TIMED SIZE ITERS DUPLEX\n", PARAMS_LEN, theirs);
		return -EPROTO;
	}
	return params_compare(c, &peer);
}

static int marked(const char theirs[PERF_VERSION_LEN])
{
	size_t at = strnlen(theirs, PERF_VERSION_LEN) + 1;

	return at + sizeof(PARAMS_MARK) - 1 <= PERF_VERSION_LEN && !memcmp(theirs + at, PARAMS_MARK,
									    sizeof(PARAMS_MARK) - 1);
}

int perf_xchg_versions(struct perf_comm *c)
{
	char mine[PERF_VERSION_LEN] = {0}, theirs[PERF_VERSION_LEN];
	int rc;

	memcpy(mine, PERF_VERSION, sizeof(PERF_VERSION));
	/* The client marks its version; a server marks its answer only to a
	 * marked client, so a perftest client gets perftest's bytes. */
	if (c->is_client) {
		if (c->opts)
			memcpy(mine + sizeof(PERF_VERSION), PARAMS_MARK, sizeof(PARAMS_MARK) - 1);
		rc = tcp_exchange_send(&c->tcp, mine, sizeof(mine));
		if (!rc)
			rc = tcp_exchange_recv(&c->tcp, theirs, sizeof(theirs));
	} else {
		rc = tcp_exchange_recv(&c->tcp, theirs, sizeof(theirs));
		if (!rc && c->opts && marked(theirs))
			memcpy(mine + sizeof(PERF_VERSION), PARAMS_MARK, sizeof(PARAMS_MARK) - 1);
		if (!rc)
			rc = tcp_exchange_send(&c->tcp, mine, sizeof(mine));
	}
	if (rc)
		return rc;
	memcpy(c->rem_version, theirs, PERF_VERSION_LEN);
	c->rem_version[PERF_VERSION_LEN] = 0;
	c->rem_version_num = atof(c->rem_version);
	if (c->rem_version_num < 5.0) {
		fprintf(stderr, "uroce-perf: the peer announced version '%s'; accepted: perftest 5.x/6.x (4.5-0.x packages)\n",
			c->rem_version);
		return -EPROTO;
	}
	return c->opts && marked(theirs) ? xchg_params(c) : 0;
}

int perf_xchg_sys(struct perf_comm *c)
{
	uint32_t mine, theirs;
	int rc;

	if (c->rem_version_num < 5.32) /* older perftest skips this step */
		return 0;
	mine = htonl(PERF_CYCLE_BUFFER);
	rc = perf_xchg(c, &mine, &theirs, 4);
	if (rc)
		return rc;
	mine = htonl(PERF_CACHE_LINE);
	return perf_xchg(c, &mine, &theirs, 4);
}

int perf_xchg_mtu(struct perf_comm *c, int mine, int *out)
{
	char m[4] = {0}, t[5] = {0};
	size_t len = c->rem_version_num >= 5.31 ? 2 : 4;
	int rc;

	m[0] = (char)('0' + mine);
	rc = perf_xchg(c, m, t, len);
	if (rc)
		return rc;
	int rem = atoi(t);
	*out = (rem >= UROCE_MTU_256 && rem <= UROCE_MTU_4096 && rem < mine) ? rem : mine;
	return 0;
}

void perf_key_format(const struct perf_dest *d, char msg[PERF_KEY_MSG_LEN])
{
	int n = snprintf(msg, PERF_KEY_MSG_LEN, "%04x:%04x:%06x:%06x:%08x:%016llx:",
			 d->lid & 0xffff, d->out_reads & 0xffff, d->qpn & 0xffffff, d->psn & 0xffffff,
			 d->rkey, (unsigned long long)d->vaddr);
	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, (size_t)(PERF_KEY_MSG_LEN - n), "%02x:", d->gid[i]);
	snprintf(msg + n, (size_t)(PERF_KEY_MSG_LEN - n), "%08x:", d->srqn);
}

/* One hex field ending in ':' of at most maxdig digits. */
static int key_field(const char **p, const char *end, int maxdig, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;

	while (s < end && *s != ':') {
		int h;
		if (*s >= '0' && *s <= '9')
			h = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			h = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			h = *s - 'A' + 10;
		else
			return -EINVAL;
		x = x << 4 | (uint64_t)h;
		if (++nd > maxdig)
			return -EINVAL;
		s++;
	}
	if (s >= end || nd == 0)
		return -EINVAL;
	*v = x;
	*p = s + 1;
	return 0;
}

int perf_key_parse(const char *msg, size_t len, struct perf_dest *d)
{
	static const int digits[6] = {4, 4, 6, 6, 8, 16};
	const char *p = msg, *end = msg + len;
	uint64_t v[6], g, srqn = 0;

	for (int i = 0; i < 6; i++)
		if (key_field(&p, end, digits[i], &v[i]))
			return -EINVAL;
	d->lid = (uint32_t)v[0];
	d->out_reads = (uint32_t)v[1];
	d->qpn = (uint32_t)v[2];
	d->psn = (uint32_t)v[3];
	d->rkey = (uint32_t)v[4];
	d->vaddr = v[5];
	for (int i = 0; i < 16; i++) {
		if (key_field(&p, end, 2, &g))
			return -EINVAL;
		d->gid[i] = (uint8_t)g;
	}
	/* SRQN is optional in older perftest */
	if (p < end && *p && key_field(&p, end, 8, &srqn))
		return -EINVAL;
	d->srqn = (uint32_t)srqn;
	return 0;
}

static int parse_theirs(const char *t, struct perf_dest *d)
{
	if (perf_key_parse(t, PERF_KEY_MSG_LEN, d)) {
		fprintf(stderr, "uroce-perf: the peer's key message is malformed: '%.*s'; expected "
			"LID:OUT_READS:QPN:PSN:RKEY:VADDR:16 GID bytes:SRQN: in hex\n", PERF_KEY_MSG_LEN - 1, t);
		return -EPROTO;
	}
	return 0;
}

int perf_handshake(struct perf_comm *c, const struct perf_dest *mine, struct perf_dest *theirs)
{
	char m[PERF_KEY_MSG_LEN] = {0}, t[PERF_KEY_MSG_LEN];
	struct perf_dest scratch;
	int rc;

	perf_key_format(mine, m);
	/* The first key message carries the reliability modes. */
	if (!c->rel_checked) {
		c->rel_checked = 1;
		rc = perf_xchg_rel(c, m, t, sizeof(m));
	} else {
		rc = perf_xchg(c, m, t, sizeof(m));
	}
	if (rc)
		return rc;
	return parse_theirs(t, theirs ? theirs : &scratch);
}

int perf_handshake_qps(struct perf_comm *c, const struct perf_dest *mine, struct perf_dest *theirs, int n)
{
	char *buf;
	int i = 0, rc = 0;

	/* The server answers each message as it reads it, perftest's way,
	 * so a perftest client (one message, then its answer) is served as
	 * before. */
	if (!c->is_client) {
		for (; !rc && i < n; i++)
			rc = perf_handshake(c, &mine[i], &theirs[i]);
		return rc;
	}
	/* The first message alone: it carries the reliability modes. */
	if (n > 0 && !c->rel_checked) {
		rc = perf_handshake(c, &mine[0], &theirs[0]);
		i = 1;
	}
	if (rc || i >= n)
		return rc;
	/* The client writes up to PERF_KEY_BATCH messages ahead, then reads
	 * their answers: the bytes on the wire are perftest's, in perftest's
	 * order, but 10 000 QPs cost 157 round trips, not 10 000. */
	buf = malloc((size_t)PERF_KEY_BATCH * PERF_KEY_MSG_LEN);
	if (!buf)
		return -ENOMEM;
	while (!rc && i < n) {
		int k = n - i < PERF_KEY_BATCH ? n - i : PERF_KEY_BATCH;
		size_t len = (size_t)k * PERF_KEY_MSG_LEN;

		memset(buf, 0, len);
		for (int j = 0; j < k; j++)
			perf_key_format(&mine[i + j], buf + (size_t)j * PERF_KEY_MSG_LEN);
		rc = tcp_exchange_send(&c->tcp, buf, len);
		if (!rc)
			rc = tcp_exchange_recv(&c->tcp, buf, len);
		for (int j = 0; !rc && j < k; j++)
			rc = parse_theirs(buf + (size_t)j * PERF_KEY_MSG_LEN, &theirs[i + j]);
		i += k;
	}
	free(buf);
	return rc;
}

static uint64_t dbl_be(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return htobe64(u);
}

static double be_dbl(uint64_t u)
{
	double d;
	u = be64toh(u);
	memcpy(&d, &u, 8);
	return d;
}

int perf_xchg_bw_report(struct perf_comm *c, const struct perf_bw_report *mine, struct perf_bw_report *theirs)
{
	uint64_t m, t = 0;
	int rc;

	m = htobe64(mine->size);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->size = be64toh(t);
	if (c->rem_version_num >= 5.33) {
		m = htobe64(mine->iters);
		if ((rc = perf_xchg(c, &m, &t, 8)))
			return rc;
		theirs->iters = be64toh(t);
	} else {
		uint32_t m4 = htonl((uint32_t)mine->iters), t4 = 0;
		if ((rc = perf_xchg(c, &m4, &t4, 4)))
			return rc;
		theirs->iters = ntohl(t4);
	}
	m = dbl_be(mine->bw_peak);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->bw_peak = be_dbl(t);
	m = dbl_be(mine->bw_avg);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->bw_avg = be_dbl(t);
	m = dbl_be(mine->msg_rate);
	if ((rc = perf_xchg(c, &m, &t, 8)))
		return rc;
	theirs->msg_rate = be_dbl(t);
	return 0;
}

int perf_close_connection(struct perf_comm *c, const struct perf_dest *mine)
{
	char done[5];
	int rc = perf_handshake(c, mine, NULL);

	if (rc)
		return rc;
	rc = tcp_exchange_send(&c->tcp, "done", 5);
	if (rc)
		return rc;
	/* perftest writes its "done" and closes without reading ours; read
	 * the peer's briefly so its close is not a reset, but do not need it. */
	struct tcp_exchange brief = c->tcp;

	brief.timeout_s = c->tcp.timeout_s < 2 ? c->tcp.timeout_s : 2;
	brief.progress = NULL;
	brief.activity = NULL;
	brief.quiet = true;
	tcp_exchange_recv(&brief, done, sizeof(done));
	return 0;
}
