/* SPDX-License-Identifier: MIT */
/* perftest's result tables and the numbers in them: the dashed lines, the
 * bw header (#bytes #iterations BW peak BW average MsgRate) and the lat
 * header (t_min .. 99.9% percentile), MB/sec = 2^20 bytes/s, Gb/sec = 10^9 bit/s.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "app_json.h"

#define RESULT_LINE "---------------------------------------------------------------------------------------\n"

void perf_print_line(void)
{
	printf(RESULT_LINE);
}

static const char *test_title(enum perf_test t)
{
	switch (t) {
	case PERF_WRITE_BW: return "RDMA_Write BW Test";
	case PERF_READ_BW: return "RDMA_Read BW Test";
	case PERF_SEND_BW: return "Send BW Test";
	case PERF_WRITE_LAT: return "RDMA_Write Latency Test";
	case PERF_READ_LAT: return "RDMA_Read Latency Test";
	case PERF_SEND_LAT: return "Send Latency Test";
	case PERF_ATOMIC_BW: return "Atomic BW Test";
	case PERF_ATOMIC_LAT: return "Atomic Latency Test";
	}
	return "?";
}

void perf_print_test_info(const struct perf_ctx *p)
{
	const struct perf_opts *o = p->o;
	const char *ct = o->conn == UROCE_QPT_RC ? "RC" : o->conn == UROCE_QPT_UC ? "UC" : "UD";

	printf(RESULT_LINE);
	printf("                    %s%s\n", o->duplex ? "Bidirectional " : "", test_title(o->test));
	if (o->test == PERF_ATOMIC_BW || o->test == PERF_ATOMIC_LAT)
		printf(" Atomic type     : %s\n", o->atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
	if (o->events)
		printf(" Test with events: a completion channel per engine\n");
	printf(" Dual-port       : OFF\t\tDevice         : %s\n", o->dev);
	printf(" Number of qps   : %d\t\tTransport type : IB\n", o->num_qps);
	printf(" Connection type : %s\t\tUsing SRQ      : OFF\n", ct);
	printf(" TX depth        : %d\n", o->tx_depth);
	if (o->test == PERF_SEND_BW || o->test == PERF_SEND_LAT)
		printf(" RX depth        : %d\n", o->rx_depth);
	printf(" CQ Moderation   : %d\n", o->cq_mod);
	printf(" Mtu             : %u[B]\n", uroce_mtu_bytes(p->mtu));
	printf(" Link type       : Ethernet\n");
	printf(" GID index       : %d\n", o->gid_index);
	if (o->test == PERF_READ_BW || o->test == PERF_READ_LAT || o->test == PERF_ATOMIC_BW ||
	    o->test == PERF_ATOMIC_LAT)
		printf(" Outstand reads  : %d\n", o->out_reads);
	printf(" rdma_cm QPs\t : OFF\n");
	printf(" Data ex. method : Ethernet\n");
	printf(RESULT_LINE);
}

void perf_print_dest(const struct perf_ctx *p, const struct perf_dest *d, int remote)
{
	printf(" %s address: LID %#04x QPN %#06x PSN %#06x", remote ? "remote" : "local", d->lid, d->qpn, d->psn);
	if (p->o->test == PERF_READ_BW || p->o->test == PERF_READ_LAT || p->o->test == PERF_ATOMIC_BW ||
	    p->o->test == PERF_ATOMIC_LAT)
		printf(" OUT %#04x", d->out_reads);
	if (p->o->test != PERF_SEND_BW && p->o->test != PERF_SEND_LAT)
		printf(" RKey %#08x VAddr %#016llx", d->rkey, (unsigned long long)d->vaddr);
	printf("\n GID: ");
	for (int i = 0; i < 16; i++)
		printf("%02d%s", d->gid[i], i < 15 ? ":" : "\n");
}

void perf_print_bw_header(const struct perf_opts *o)
{
	if (o->output != PERF_OUT_FULL)
		return;
	printf(RESULT_LINE);
	printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n",
	       o->report_gbits ? "Gb/sec" : "MB/sec", o->report_gbits ? "Gb/sec" : "MB/sec");
}

void perf_print_bw_line(const struct perf_opts *o, const struct perf_bw_report *r)
{
	if (o->output == PERF_OUT_BW) {
		printf("%lf\n", r->bw_avg);
		fflush(stdout);
		return;
	}
	if (o->output == PERF_OUT_MSGRATE) {
		printf("%lf\n", r->msg_rate);
		fflush(stdout);
		return;
	}
	printf(" %-7llu    %-10llu       %-7.2f            %-7.2f\t\t   %-7.6f\n", (unsigned long long)r->size,
	       (unsigned long long)r->iters, r->bw_peak, r->bw_avg, r->msg_rate);
	fflush(stdout);
}

void perf_print_lat_header(const struct perf_opts *o)
{
	if (o->output != PERF_OUT_FULL)
		return;
	printf(RESULT_LINE);
	printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
	       "   99%% percentile[usec]   99.9%% percentile[usec] \n");
}

void perf_print_lat_line(const struct perf_opts *o, const struct perf_lat_result *r)
{
	if (o->output == PERF_OUT_LAT) {
		printf("%lf\n", r->t_avg);
		fflush(stdout);
		return;
	}
	printf(" %-7llu %llu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
	       (unsigned long long)r->size, (unsigned long long)r->iters, r->t_min, r->t_max, r->t_typical,
	       r->t_avg, r->t_stdev, r->p99, r->p999);
	fflush(stdout);
}

static double unit_bytes(const struct perf_opts *o)
{
	return o->report_gbits ? 125000000.0 : 1048576.0;
}

void perf_print_period(const struct perf_opts *o, double t_s, double secs, uint64_t msgs, uint64_t bytes)
{
	double unit = unit_bytes(o);

	/* a line per period, what completed in it: -D and --run_infinitely
	 * runs say how they go before their table */
	printf(" %8.1f s  %-10llu messages in %.2f s: %.2f %s, %.6f Mpps\n", t_s, (unsigned long long)msgs, secs,
	       secs > 0 ? (double)bytes / secs / unit : 0.0, o->report_gbits ? "Gb/sec" : "MB/sec",
	       secs > 0 ? (double)msgs / secs / 1e6 : 0.0);
	fflush(stdout);
}

static const char *json_test_name(const struct perf_opts *o, char *b, size_t n)
{
	static const char *verb[] = { [PERF_WRITE_BW] = "RDMA_Write", [PERF_READ_BW] = "RDMA_Read",
		                      [PERF_SEND_BW] = "Send", [PERF_WRITE_LAT] = "RDMA_Write",
		                      [PERF_READ_LAT] = "RDMA_Read", [PERF_SEND_LAT] = "Send",
		                      [PERF_ATOMIC_BW] = "Atomic", [PERF_ATOMIC_LAT] = "Atomic" };
	int atomic = o->test == PERF_ATOMIC_BW || o->test == PERF_ATOMIC_LAT;

	/* perftest's write_test_info_to_file: "<verb>_[<atomic>_][Bidirectional_]BW_Test" */
	snprintf(b, n, "%s_%s%s%s_Test", verb[o->test], atomic ? (o->atomic_cas ? "CMP_AND_SWAP_" : "FETCH_AND_ADD_") : "",
		 o->duplex ? "Bidirectional_" : "", o->is_lat ? "Latency" : "BW");
	return b;
}


static void json_bw(FILE *f, const struct perf_bw_report *r)
{
	fprintf(f, "{\"MsgSize\": %llu, \"n_iterations\": %llu, \"BW_peak\": %.6f, \"BW_average\": %.6f, "
		   "\"MsgRate\": %.6f}", (unsigned long long)r->size, (unsigned long long)r->iters, r->bw_peak,
		r->bw_avg, r->msg_rate);
}

static void json_lat(FILE *f, const struct perf_lat_result *r)
{
	fprintf(f, "{\"MsgSize\": %llu, \"n_iterations\": %llu, \"t_min\": %.2f, \"t_max\": %.2f, "
		   "\"t_typical\": %.2f, \"t_avg\": %.2f, \"t_stdev\": %.2f, \"percentile_99\": %.2f, "
		   "\"percentile_99.9\": %.2f}", (unsigned long long)r->size, (unsigned long long)r->iters, r->t_min,
		r->t_max, r->t_typical, r->t_avg, r->t_stdev, r->p99, r->p999);
}

int perf_json_write(const struct perf_ctx *p, const struct perf_bw_report *bw, int nbw,
		    const struct perf_lat_result *lat, int nlat)
{
	const struct perf_opts *o = p->o;
	const char *ct = o->conn == UROCE_QPT_RC ? "RC" : o->conn == UROCE_QPT_UC ? "UC" : "UD";
	char name[96], rel[96];
	FILE *f = fopen(o->out_json_file, "w");
	int n = o->is_lat ? nlat : nbw;

	if (!f) {
		int e = errno;

		fprintf(stderr, "uroce-perf: --out_json_file %s: %s\n", o->out_json_file, strerror(e));
		return -e;
	}
	fprintf(f, "{\n\"test_info\": {\n\"test\": ");
	app_json_str(f, json_test_name(o, name, sizeof(name)));
	fprintf(f, ",\n");
	if (o->events)
		fprintf(f, "\"Test with events\": \"completion channel\",\n");
	fprintf(f, "\"Dual_port\": \"OFF\",\n\"Device\": ");
	app_json_str(f, o->dev);
	fprintf(f, ",\n\"Number_of_qps\": %d,\n\"Transport_type\": \"IB\",\n\"Connection_type\": \"%s\",\n"
		   "\"Using_SRQ\": \"OFF\",\n\"TX_depth\": %d,\n", o->num_qps, ct, o->tx_depth);
	if (o->test == PERF_SEND_BW || o->test == PERF_SEND_LAT)
		fprintf(f, "\"RX_depth\": %d,\n", o->rx_depth);
	if (!o->is_lat)
		fprintf(f, "\"CQ_Moderation\": %d,\n", o->cq_mod);
	fprintf(f, "\"Mtu\": %u,\n\"Link_type\": \"Ethernet\",\n\"GID_index\": %d,\n", uroce_mtu_bytes(p->mtu),
		o->gid_index);
	if (o->test == PERF_READ_BW || o->test == PERF_READ_LAT || o->test == PERF_ATOMIC_BW || o->test == PERF_ATOMIC_LAT)
		fprintf(f, "\"Outstand_reads\": %d,\n", o->out_reads);
	fprintf(f, "\"rdma_cm_QPs\": \"OFF\",\n\"Data_ex_method\": \"Ethernet\",\n\"uroce_reliability\": ");
	app_json_str(f, rel_args_describe(&o->rel.attr, rel, sizeof(rel)));
	fprintf(f, "\n},\n\"results\": ");
	/* perftest's "results" holds the last line; every line (-a) is in results_all */
	if (!n)
		fprintf(f, "{}");
	else if (o->is_lat)
		json_lat(f, &lat[n - 1]);
	else
		json_bw(f, &bw[n - 1]);
	fprintf(f, ",\n\"results_all\": [");
	for (int i = 0; i < n; i++) {
		fprintf(f, "%s\n", i ? "," : "");
		if (o->is_lat)
			json_lat(f, &lat[i]);
		else
			json_bw(f, &bw[i]);
	}
	fprintf(f, "\n]\n}\n");
	if (fclose(f)) {
		int e = errno;

		fprintf(stderr, "uroce-perf: --out_json_file %s: %s\n", o->out_json_file, strerror(e));
		return -e;
	}
	return 0;
}

void perf_bw_goodput(struct perf_bw_report *r, uint64_t posted, uint64_t missing)
{
	double f;

	if (!missing || !posted)
		return;
	f = missing >= posted ? 0.0 : (double)(posted - missing) / (double)posted;
	r->bw_avg *= f;
	r->bw_peak *= f;
}

void perf_bw_compute(const struct perf_opts *o, uint64_t size, uint64_t iters_total,
		     const uint64_t *tposted, const uint64_t *tcompleted, uint64_t n, int cq_mod,
		     uint64_t t_start, uint64_t t_end, struct perf_bw_report *r)
{
	double secs = t_end > t_start ? (double)(t_end - t_start) / 1e9 : 1e-9;
	double unit = unit_bytes(o);

	r->size = size;
	r->iters = iters_total;
	r->bw_avg = (double)size * (double)iters_total / secs / unit;
	r->msg_rate = (double)iters_total / secs / 1e6;

	/* Peak, as perftest finds it: the best rate over any run of
	 * messages from a post that starts a signalled group to a signalled
	 * completion after it. Groups are subsampled so this stays cheap for
	 * long runs. */
	double best = 0;
	if (tposted && tcompleted && n >= (uint64_t)cq_mod && cq_mod > 0) {
		uint64_t groups = n / (uint64_t)cq_mod;
		uint64_t step = groups > 2000 ? groups / 2000 : 1;
		for (uint64_t gi = 0; gi < groups; gi += step) {
			uint64_t i = gi * (uint64_t)cq_mod;
			for (uint64_t gj = gi; gj < groups; gj += step) {
				uint64_t j = (gj + 1) * (uint64_t)cq_mod - 1;
				if (!tcompleted[j] || tcompleted[j] <= tposted[i])
					continue;
				double t = (double)(tcompleted[j] - tposted[i]) / 1e9;
				double bw = (double)size * (double)(j - i + 1) / t / unit;
				if (bw > best)
					best = bw;
			}
		}
	}
	r->bw_peak = best > 0 ? best : r->bw_avg;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void perf_lat_compute(uint64_t size, uint64_t *delta_ns, uint64_t n, double factor, struct perf_lat_result *r)
{
	memset(r, 0, sizeof(*r));
	r->size = size;
	r->iters = n + 1;
	if (!n)
		return;
	qsort(delta_ns, n, sizeof(delta_ns[0]), cmp_u64);
	double sum = 0, sq = 0, k = factor * 1000.0; /* ns -> usec, halved for ping-pong */
	for (uint64_t i = 0; i < n; i++)
		sum += (double)delta_ns[i] / k;
	double avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++) {
		double d = (double)delta_ns[i] / k - avg;
		sq += d * d;
	}
	r->t_min = (double)delta_ns[0] / k;
	r->t_max = (double)delta_ns[n - 1] / k;
	r->t_typical = (double)delta_ns[n / 2] / k;
	r->t_avg = avg;
	r->t_stdev = sqrt(sq / (double)n);
	uint64_t i99 = (uint64_t)ceil((double)n * 0.99) - 1, i999 = (uint64_t)ceil((double)n * 0.999) - 1;
	r->p99 = (double)delta_ns[i99 < n ? i99 : n - 1] / k;
	r->p999 = (double)delta_ns[i999 < n ? i999 : n - 1] / k;
}
