/* SPDX-License-Identifier: MIT */
/* The launcher's JSON: show stats json (every port, engine and QP in one
 * object on one line), the QPs of show qp under --json. */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "launcher.h"
#include "app_json.h"


void l_json_qp(FILE *f, struct l_qp *q)
{
	struct uroce_qp_attr attr = {0};
	struct uroce_qp_stats st = {0};
	struct uroce_failover_info fo = {0};
	bool has_fo = false;
	const struct l_traffic *t = q->run.size ? &q->run : &q->tr; /* the last run, else the layout */

	l_qp_show_data(q, &attr, &st, &fo, &has_fo);
	fprintf(f, "{\"qp\":%d,\"kind\":\"%s\",\"port\":%d,\"backup\":%d,\"qpn\":%u,\"state\":\"%s\",\"connected\":%s,"
	        "\"passive\":%s,\"peer\":", q->id, l_kind_str(q->kind), q->port, q->backup, uroce_qp_num(q->qp),
	        uroce_qp_state_str(attr.qp_state), q->state == L_QP_CONNECTED ? "true" : "false",
	        q->passive ? "true" : "false");
	app_json_str(f, q->peer);
	fprintf(f, ",\"sq_psn\":%u,\"rq_psn\":%u", attr.sq_psn, attr.rq_psn);
	fprintf(f, ",\"traffic\":{\"op\":\"%s\",\"size\":%u,\"depth\":%u,\"posted\":%" PRIu64 ",\"completed\":%" PRIu64
	        ",\"bytes\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"recv_msgs\":%" PRIu64 ",\"recv_bytes\":%" PRIu64
	        ",\"verified\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"partial\":%" PRIu64 "}", l_op_str(t->op), t->size,
	        t->depth, atomic_load(&q->c.posted), atomic_load(&q->c.completed), atomic_load(&q->c.bytes),
	        atomic_load(&q->c.errors), atomic_load(&q->c.recv_msgs), atomic_load(&q->c.recv_bytes),
	        atomic_load(&q->c.verified), atomic_load(&q->c.bad), atomic_load(&q->c.partial));
	fprintf(f, ",\"counters\":{\"tx_packets\":%" PRIu64 ",\"rx_packets\":%" PRIu64 ",\"retransmits\":%" PRIu64
	        ",\"timeouts\":%" PRIu64 ",\"seq_naks_sent\":%" PRIu64 ",\"seq_naks_rcvd\":%" PRIu64 ",\"duplicates\":%"
	        PRIu64 ",\"sacks_sent\":%" PRIu64 ",\"sacks_rcvd\":%" PRIu64 ",\"srtt_ns\":%" PRIu64 ",\"cc_rate_bps\":%"
	        PRIu64 "}", st.tx_packets, st.rx_packets, st.retransmits, st.timeouts, st.seq_naks_sent,
	        st.seq_naks_rcvd, st.duplicates, st.sacks_sent, st.sacks_rcvd, st.srtt_ns, st.cc_rate_bps);
	if (has_fo)
		fprintf(f, ",\"failover\":{\"state\":\"%s\",\"active\":%u,\"up_mask\":%u,\"failovers\":%" PRIu64
		        ",\"failbacks\":%" PRIu64 ",\"last_cause\":\"%s\"}", uroce_fo_state_str(fo.state), fo.active,
		        fo.up_mask, fo.failovers, fo.failbacks, uroce_fo_cause_str(fo.last_cause));
	fprintf(f, "}\n");
}

void l_json_stats(FILE *f)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(f, "{\"time\":%.3f,\"traffic\":%s,\"ports\":[", (double)ts.tv_sec + ts.tv_nsec / 1e9,
	        L.traffic_on ? "true" : "false");
	for (int p = 0; p < L.nports; p++) {
		struct uroce_port_stats st = {0};
		bool first = true;

		l_port_stats(p, &st);
		fprintf(f, "%s{\"port\":%d,\"spec\":", p ? "," : "", p);
		app_json_str(f, L.port[p].spec);
		fprintf(f, ",\"rx_packets\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 ",\"tx_packets\":%" PRIu64 ",\"tx_bytes\":%"
		        PRIu64 ",\"drops\":{", st.rx_packets, st.rx_bytes, st.tx_packets, st.tx_bytes);
		for (int r = 1; r < UROCE_DROP__COUNT; r++)
			if (st.drops[r]) {
				fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", uroce_drop_reason_name(r), st.drops[r]);
				first = false;
			}
		fprintf(f, "}}");
	}
	fprintf(f, "],\"engines\":[");
	for (int k = 0; k < L.nlcores; k++) {
		struct uroce_engine_stats es = {0};
		uint64_t rx, tx, cpu_ns;

		l_engine_stats(k, &es, &rx, &tx, &cpu_ns);
		fprintf(f, "%s{\"engine\":%d,\"core\":%d,\"loops\":%" PRIu64 ",\"idle_loops\":%" PRIu64 ",\"timers\":%"
		        PRIu64 ",\"rx_frames\":%" PRIu64 ",\"tx_frames\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 "}", k ? "," : "",
		        k, L.lc[k].cpu, es.passes, es.idle_passes, es.timers, rx, tx, cpu_ns);
	}
	fprintf(f, "],\"qps\":[");
	bool first = true;
	for (int i = 0; i < L_MAX_QPS; i++)
		if (L.qp[i].used) {
			char buf[4096];
			FILE *m = fmemopen(buf, sizeof(buf), "w");
			if (!m)
				continue;
			l_json_qp(m, &L.qp[i]);
			fclose(m);
			buf[sizeof(buf) - 1] = 0;
			char *nl = strchr(buf, '\n');
			if (nl)
				*nl = 0;
			fprintf(f, "%s%s", first ? "" : ",", buf);
			first = false;
		}
	fprintf(f, "]}\n");
}
