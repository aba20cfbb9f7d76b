/* SPDX-License-Identifier: MIT */
/* The tools' --counters output: QP counters summed over the run's QPs and
 * one port's counters with its drops by reason. */
#include "app_counters.h"

void app_counters_print(FILE *f, struct uroce_qp *const *qps, int nqps, struct uroce_context *ctx,
			uint8_t port_num)
{
	struct uroce_qp_stats sum = {0};
	struct uroce_port_stats ps;
	struct uroce_port_attr pa;
	unsigned long long drops = 0;

	for (int i = 0; i < nqps; i++) {
		struct uroce_qp_stats s;

		if (!qps[i] || uroce_qp_stats(qps[i], &s))
			continue;
		sum.tx_packets += s.tx_packets;
		sum.rx_packets += s.rx_packets;
		sum.retransmits += s.retransmits;
		sum.timeouts += s.timeouts;
		sum.seq_naks_sent += s.seq_naks_sent;
		sum.seq_naks_rcvd += s.seq_naks_rcvd;
		sum.rnr_naks_sent += s.rnr_naks_sent;
		sum.rnr_naks_rcvd += s.rnr_naks_rcvd;
		sum.duplicates += s.duplicates;
		sum.out_of_sequence += s.out_of_sequence;
		sum.access_errors += s.access_errors;
		sum.credit_waits += s.credit_waits;
		sum.sacks_sent += s.sacks_sent;
		sum.sacks_rcvd += s.sacks_rcvd;
		sum.rack_losses += s.rack_losses;
		sum.tlp_probes += s.tlp_probes;
		sum.rto_losses += s.rto_losses;
		sum.spurious_retx += s.spurious_retx;
		sum.parity_sent += s.parity_sent;
		sum.ec_recovered += s.ec_recovered;
		sum.ec_nacks_sent += s.ec_nacks_sent;
		sum.ec_nacks_rcvd += s.ec_nacks_rcvd;
		sum.ec_nacks_early += s.ec_nacks_early;
		sum.ec_decode_tables += s.ec_decode_tables;
		sum.cnps_sent += s.cnps_sent;
		sum.cnps_rcvd += s.cnps_rcvd;
		sum.ecn_ce_rcvd += s.ecn_ce_rcvd;
		sum.trims_rcvd += s.trims_rcvd;
		sum.trim_nacks_rcvd += s.trim_nacks_rcvd;
		sum.cc_blocked += s.cc_blocked;
		sum.cc_losses += s.cc_losses;
		sum.cc_rts_sent += s.cc_rts_sent;
		sum.cc_rts_rcvd += s.cc_rts_rcvd;
		sum.cc_pulls_sent += s.cc_pulls_sent;
		sum.cc_pulls_rcvd += s.cc_pulls_rcvd;
		sum.paths_down += s.paths_down;
		if (s.srtt_ns > sum.srtt_ns) /* the largest: the QP that waited most */
			sum.srtt_ns = s.srtt_ns;
		if (s.rto_ns > sum.rto_ns)
			sum.rto_ns = s.rto_ns;
	}
	fprintf(f, "uroce counters: qp tx_packets=%llu rx_packets=%llu retransmits=%llu timeouts=%llu "
		"seq_naks_sent=%llu seq_naks_rcvd=%llu rnr_naks_sent=%llu rnr_naks_rcvd=%llu duplicates=%llu "
		"out_of_sequence=%llu access_errors=%llu credit_waits=%llu\n",
		(unsigned long long)sum.tx_packets, (unsigned long long)sum.rx_packets,
		(unsigned long long)sum.retransmits, (unsigned long long)sum.timeouts,
		(unsigned long long)sum.seq_naks_sent, (unsigned long long)sum.seq_naks_rcvd,
		(unsigned long long)sum.rnr_naks_sent, (unsigned long long)sum.rnr_naks_rcvd,
		(unsigned long long)sum.duplicates, (unsigned long long)sum.out_of_sequence,
		(unsigned long long)sum.access_errors, (unsigned long long)sum.credit_waits);
	if (sum.sacks_sent || sum.sacks_rcvd) /* sr / ec */
		fprintf(f, "uroce counters: rel sacks_sent=%llu sacks_rcvd=%llu rack_losses=%llu tlp_probes=%llu "
			"rto_losses=%llu spurious_retx=%llu parity_sent=%llu ec_recovered=%llu ec_nacks_sent=%llu "
			"ec_nacks_rcvd=%llu srtt_us=%llu rto_us=%llu ec_nacks_early=%llu ec_decode_tables=%llu\n",
			(unsigned long long)sum.sacks_sent, (unsigned long long)sum.sacks_rcvd,
			(unsigned long long)sum.rack_losses, (unsigned long long)sum.tlp_probes,
			(unsigned long long)sum.rto_losses, (unsigned long long)sum.spurious_retx,
			(unsigned long long)sum.parity_sent, (unsigned long long)sum.ec_recovered,
			(unsigned long long)sum.ec_nacks_sent, (unsigned long long)sum.ec_nacks_rcvd,
			(unsigned long long)(sum.srtt_ns / 1000), (unsigned long long)(sum.rto_ns / 1000),
			(unsigned long long)sum.ec_nacks_early, (unsigned long long)sum.ec_decode_tables);
	if (sum.cnps_sent || sum.cnps_rcvd || sum.ecn_ce_rcvd || sum.trims_rcvd || sum.trim_nacks_rcvd ||
	    sum.cc_blocked || sum.cc_rts_rcvd || sum.cc_pulls_rcvd || sum.paths_down)
		fprintf(f, "uroce counters: cc cnps_sent=%llu cnps_rcvd=%llu ecn_ce_rcvd=%llu trims_rcvd=%llu "
			"trim_nacks_rcvd=%llu cc_blocked=%llu cc_losses=%llu rts_sent=%llu rts_rcvd=%llu pulls_sent=%llu "
			"pulls_rcvd=%llu paths_down=%llu\n",
			(unsigned long long)sum.cnps_sent, (unsigned long long)sum.cnps_rcvd,
			(unsigned long long)sum.ecn_ce_rcvd, (unsigned long long)sum.trims_rcvd,
			(unsigned long long)sum.trim_nacks_rcvd, (unsigned long long)sum.cc_blocked,
			(unsigned long long)sum.cc_losses, (unsigned long long)sum.cc_rts_sent,
			(unsigned long long)sum.cc_rts_rcvd, (unsigned long long)sum.cc_pulls_sent,
			(unsigned long long)sum.cc_pulls_rcvd, (unsigned long long)sum.paths_down);
	if (!ctx || uroce_port_stats(ctx, port_num, &ps))
		return;
	for (int i = 1; i < UROCE_DROP__COUNT; i++)
		drops += ps.drops[i];
	fprintf(f, "uroce counters: port %u rx_packets=%llu tx_packets=%llu drops=%llu", port_num,
		(unsigned long long)ps.rx_packets, (unsigned long long)ps.tx_packets, drops);
	for (int i = 1; i < UROCE_DROP__COUNT; i++)
		if (ps.drops[i])
			fprintf(f, " %s=%llu", uroce_drop_reason_name((enum uroce_drop_reason)i),
				(unsigned long long)ps.drops[i]);
	fputc('\n', f);
	/* how an afxdp port's XDP runs, on a line of its own (scripts read
	 * every other field of the counters line as a drop reason) */
	if (!uroce_query_port(ctx, port_num, &pa) && pa.xdp_mode != UROCE_XDP_NONE)
		fprintf(f, "uroce port %u: XDP %s, %s\n", port_num, pa.xdp_mode == UROCE_XDP_NATIVE ? "native" : "generic",
			pa.zero_copy ? "zero-copy" : "copy mode");
}

void app_port_notes(FILE *f, struct uroce_context *ctx)
{
	struct uroce_port_attr pa;
	int n = uroce_num_ports(ctx);

	for (int i = 1; i <= n; i++)
		if (!uroce_query_port(ctx, (uint8_t)i, &pa) && pa.note[0])
			fprintf(f, "uroce port %d: %s\n", i, pa.note);
}
