/* SPDX-License-Identifier: MIT */
/* The order of a perftest-compatible run: open the device, the TCP
 * exchange (version, system data, MTU), the key-message handshakes in the
 * order each perftest program does them, the QPs to RTS, the traffic, the
 * tables, and the closing exchange. Sequences as read from perftest's
 * write_bw.c, read_bw.c, send_bw.c, write_lat.c, read_lat.c, send_lat.c
 * (Ethernet exchange, no -R); each step is one call below.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"
#include "app_counters.h"

#define PERF_LINGER_NS (200ull * 1000 * 1000) /* keep answering ACKs/READs after the end */
#define PERF_MAX_LINES 32                       /* table lines kept for --out_json: -a has 23 */

volatile int perf_stop;

static void on_stop(int sig)
{
	(void)sig;
	perf_stop = 1;
}

/* the table's lines, for --out_json at the end */
static struct perf_bw_report bw_lines[PERF_MAX_LINES];
static struct perf_lat_result lat_lines[PERF_MAX_LINES];
static int nbw, nlat;

static int hs0(struct perf_ctx *p)
{
	struct perf_dest scratch;
	return perf_handshake(&p->comm, &p->my[0], &scratch);
}

static int hs_qps(struct perf_ctx *p, int print)
{
	int rc = perf_handshake_qps(&p->comm, p->my, p->rem, p->o->num_qps);

	if (rc)
		return rc;
	for (int i = 0; print && i < p->o->num_qps; i++)
		perf_print_dest(p, &p->rem[i], 1);
	return 0;
}

/* engines on a queue range: the peer's source ports for each QP */
static int steer(struct perf_ctx *p)
{
	return p->o->steer ? perf_steer_exchange(p) : 0;
}

static int pre_traffic(struct perf_ctx *p)
{
	int rc;

	for (int i = 0; i < p->o->num_qps; i++)
		perf_print_dest(p, &p->my[i], 0);
	switch (p->o->test) {
	case PERF_WRITE_BW:
	case PERF_READ_BW:
	case PERF_ATOMIC_BW:
	case PERF_SEND_BW:
	case PERF_SEND_LAT:
		/* per QP: destinations; QPs to RTS; one barrier after RTR;
		 * per QP again (perftest prints the remote side then) */
		if ((rc = hs_qps(p, 1)) || (rc = steer(p)) || (rc = perf_connect_qps(p)) || (rc = hs0(p)) ||
		    (rc = hs_qps(p, 0)))
			return rc;
		return 0;
	case PERF_WRITE_LAT:
	case PERF_READ_LAT:
	case PERF_ATOMIC_LAT:
		/* one; per QP; QPs to RTS; per QP again; one barrier */
		if ((rc = hs0(p)) || (rc = hs_qps(p, 0)) || (rc = steer(p)) || (rc = perf_connect_qps(p)) ||
		    (rc = hs_qps(p, 1)) || (rc = hs0(p)))
			return rc;
		return 0;
	}
	return -EINVAL;
}

/* Sizes of the run: one, or 2..2^23 with -a (UD: up to the MTU). */
static int next_size(struct perf_ctx *p, int idx, uint64_t *size)
{
	const struct perf_opts *o = p->o;
	uint64_t max = o->conn == UROCE_QPT_UD ? uroce_mtu_bytes(p->mtu) : PERF_MAX_SIZE;

	if (!o->all) {
		*size = o->size;
		return idx == 0;
	}
	*size = 2ull << idx;
	return *size <= max;
}

static int run_bw(struct perf_ctx *p)
{
	struct perf_opts *o = p->o;
	struct perf_bw_report mine = {0}, theirs = {0};
	int client = o->server != NULL, rc;

	perf_print_bw_header(o);
	if (!client && o->test != PERF_SEND_BW && !o->duplex) {
		/* Half duplex: the server waits for the client's end, serving
		 * the traffic meanwhile, and prints the client's numbers. */
		if ((rc = hs0(p)) || (rc = perf_xchg_bw_report(&p->comm, &mine, &theirs)))
			return rc;
		perf_print_bw_line(o, &theirs);
		if (nbw < PERF_MAX_LINES)
			bw_lines[nbw++] = theirs;
		if ((rc = perf_close_connection(&p->comm, &p->my[0])))
			return rc;
		perf_print_line();
		return 0;
	}
	for (int idx = 0;; idx++) {
		if (!next_size(p, idx, &o->size))
			break;
		if (o->test == PERF_SEND_BW) {
			if (!client || o->duplex) {
				int n = (uint64_t)o->rx_depth < o->iters ? o->rx_depth : (int)o->iters;
				for (int q = 0; q < o->num_qps; q++)
					if ((rc = perf_post_recvs(p, q, n)))
						return rc;
			}
			if ((rc = hs0(p)))
				return rc;
			rc = client || o->duplex ? perf_run_bw(p, &mine) : perf_run_bw_server_send(p, &mine);
		} else {
			/* -b: both ends start together */
			if (o->duplex && (rc = hs0(p)))
				return rc;
			rc = perf_run_bw(p, &mine);
		}
		if (rc)
			return rc;
		if (o->duplex) {
			/* each end prints both directions' sum, as perftest's -b;
			 * write_bw and read_bw -a meet once more first (perftest 4.6+) */
			if (o->all && o->test != PERF_SEND_BW && (rc = hs0(p)))
				return rc;
			if ((rc = perf_xchg_bw_report(&p->comm, &mine, &theirs)))
				return rc;
			mine.bw_peak += theirs.bw_peak;
			mine.bw_avg += theirs.bw_avg;
			mine.msg_rate += theirs.msg_rate;
		}
		perf_print_bw_line(o, &mine);
		if (nbw < PERF_MAX_LINES)
			bw_lines[nbw++] = mine;
		if (o->test == PERF_SEND_BW && client && o->rel.attr.reliability == UROCE_REL_BE && idx == 0)
			printf(" (be: this line counts the bytes this end sent; the receiver's counts those placed)\n");
		if (o->test == PERF_SEND_BW && o->all && (rc = hs0(p)))
			return rc;
	}
	perf_print_line();
	if (o->test != PERF_SEND_BW && !o->duplex) {
		if ((rc = hs0(p)) || (rc = perf_xchg_bw_report(&p->comm, &mine, &theirs)))
			return rc;
	}
	return perf_close_connection(&p->comm, &p->my[0]);
}

static int run_lat(struct perf_ctx *p)
{
	struct perf_opts *o = p->o;
	struct perf_lat_result res;
	int client = o->server != NULL, rc;

	if ((o->test == PERF_READ_LAT || o->test == PERF_ATOMIC_LAT) && !client) {
		/* Only the client reads; the server answers until it is done. */
		if ((rc = perf_close_connection(&p->comm, &p->my[0])))
			return rc;
		perf_print_line();
		return 0;
	}
	perf_print_lat_header(o);
	for (int idx = 0;; idx++) {
		if (!next_size(p, idx, &o->size))
			break;
		if (o->test == PERF_SEND_LAT) {
			int n = (uint64_t)o->rx_depth < o->iters ? o->rx_depth : (int)o->iters;
			if ((rc = perf_post_recvs(p, 0, n)) || (rc = hs0(p)))
				return rc;
		}
		if ((rc = perf_run_lat(p, &res)))
			return rc;
		perf_print_lat_line(o, &res);
		if (nlat < PERF_MAX_LINES)
			lat_lines[nlat++] = res;
	}
	perf_print_line();
	if (o->test == PERF_WRITE_LAT)
		return 0; /* perftest's write_lat ends without a closing exchange */
	return perf_close_connection(&p->comm, &p->my[0]);
}

int perf_main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_ctx p;
	int rc = perf_parse_args(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : 2;
	memset(&p, 0, sizeof(p));
	p.o = &o;
	p.nic = perf_nic_port(&o);
	p.comm.tcp.fd = -1;
	p.comm.rel = &o.rel.attr;
	p.comm.opts = &o;

	rc = perf_setup(&p);
	if (rc)
		goto out;
	if (!o.server) {
		printf("\n************************************\n");
		printf("* Waiting for client to connect... *\n");
		printf("************************************\n");
		fflush(stdout);
	}
	rc = perf_comm_open(&p.comm, o.server, o.tcp_port, o.timeout);
	if (rc)
		goto out;
	p.comm.tcp.progress = p.nic ? NULL : perf_progress;
	p.comm.tcp.activity = perf_activity;
	p.comm.tcp.arg = &p;
	int agreed;
	if ((rc = perf_xchg_versions(&p.comm)) || (rc = perf_xchg_sys(&p.comm)) ||
	    (rc = perf_xchg_mtu(&p.comm, p.mtu, &agreed)))
		goto out;
	p.mtu = agreed;
	if (o.conn == UROCE_QPT_UD && !o.all && o.size > uroce_mtu_bytes(p.mtu)) {
		fprintf(stderr, " Max msg size in UD is MTU %u; changing to this size\n", uroce_mtu_bytes(p.mtu));
		o.size = uroce_mtu_bytes(p.mtu);
	}
	perf_print_test_info(&p);
	rc = pre_traffic(&p);
	if (rc)
		goto out;
	if (o.run_infinitely) {
		/* ^C ends the run as -D's end does: the table, then the peer's */
		signal(SIGINT, on_stop);
		signal(SIGTERM, on_stop);
	}
	rc = o.is_lat ? run_lat(&p) : run_bw(&p);
	if (!rc && o.out_json && (nbw || nlat))
		rc = perf_json_write(&p, bw_lines, nbw, lat_lines, nlat);
out:
	if (p.ctx) {
		/* The peer may still wait for our ACKs or READ responses. */
		uint64_t end = perf_now_ns() + PERF_LINGER_NS;
		if (p.dedicated)
			nanosleep(&(struct timespec){ 0, (long)PERF_LINGER_NS }, NULL); /* the engines answer */
		while (!p.dedicated && perf_now_ns() < end && uroce_progress(p.ctx) >= 0)
			;
		if (o.counters)
			perf_engines_counters(&p, stdout);
		if (p.dedicated)
			perf_engines_report(&p, stdout);
	}
	perf_teardown(&p);
	if (rc || p.failed) {
		fprintf(stderr, "uroce-perf: %s failed%s\n", o.name, p.failed ? " (transport error)" : "");
		return 1;
	}
	return 0;
}
