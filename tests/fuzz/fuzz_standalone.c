/* SPDX-License-Identifier: MIT */
/* The responder fuzz target's own main(), in every build: it replays a
 * corpus and seeded random inputs and fails when a path the target must
 * reach was never reached; --only replays one input or folder and prints
 * what it reached; --write-corpus DIR writes the seeds (fuzz_seeds.c). */
#include <dirent.h>
#include <errno.h>

#include "fuzz_responder.h"
#include "fuzz_rng.h"

/* Random inputs after the corpus: a few seconds under the sanitizers. */
#define RANDOM_INPUTS 10000u
#define RANDOM_MAX_LEN 400u

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	return fuzz_rng_next(&rng);
}

static void feed_file(const char *path)
{
	static uint8_t buf[1 << 16];
	FILE *f = fopen(path, "rb");
	size_t len;

	if (!f) {
		fprintf(stderr, "fuzz_responder: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
}

/* A corpus folder, or one input file (a reproducer). */
static unsigned feed_path(const char *path)
{
	char file[4096];
	unsigned n = 0;
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d && errno == ENOTDIR) {
		feed_file(path);
		return 1;
	}
	if (!d) {
		fprintf(stderr, "fuzz_responder: corpus %s: %s\n", path, strerror(errno));
		exit(1);
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		feed_file(file);
		n++;
	}
	closedir(d);
	return n;
}

/* QP i's counters over every QP that has been it: the current one, QP_SR's
 * other twin, the ones destroyed (the counters are all uint64_t; gauges
 * such as srtt_ns add up to nothing meaningful) */
static void qp_stats_all(unsigned i, struct uroce_qp_stats *q)
{
	struct uroce_qp_stats o;
	uint64_t *a = (uint64_t *)q, *b = (uint64_t *)&o, *g = (uint64_t *)&fz.gone[i];

	_Static_assert(sizeof(o) % sizeof(uint64_t) == 0, "uroce_qp_stats: uint64_t fields");
	if (uroce_qp_stats(fz.qp[i], q))
		die("qp_stats");
	if (i == QP_SR && uroce_qp_stats(fz.qp[QP_SR] == fz.sr_twin[0] ? fz.sr_twin[1] : fz.sr_twin[0], &o) == 0)
		for (size_t k = 0; k < sizeof(o) / sizeof(uint64_t); k++)
			a[k] += b[k];
	for (size_t k = 0; k < sizeof(o) / sizeof(uint64_t); k++)
		a[k] += g[k];
}

/* congestion counters summed over every QP */
enum { CCT_CNPS_SENT, CCT_CNPS_RCVD, CCT_CE, CCT_TRIMMED, CCT_TRIM_NACKS, CCT_RTS_SENT, CCT_RTS_RCVD, CCT_PULLS_SENT,
       CCT_PULLS_RCVD, CCT__COUNT };

static void cc_totals(uint64_t t[CCT__COUNT])
{
	memset(t, 0, CCT__COUNT * sizeof(t[0]));
	for (unsigned i = 0; i < NQP; i++) {
		struct uroce_qp_stats q;

		qp_stats_all(i, &q);
		t[CCT_CNPS_SENT] += q.cnps_sent;
		t[CCT_CNPS_RCVD] += q.cnps_rcvd;
		t[CCT_CE] += q.ecn_ce_rcvd;
		t[CCT_TRIMMED] += q.trims_rcvd;
		t[CCT_TRIM_NACKS] += q.trim_nacks_rcvd;
		t[CCT_RTS_SENT] += q.cc_rts_sent;
		t[CCT_RTS_RCVD] += q.cc_rts_rcvd;
		t[CCT_PULLS_SENT] += q.cc_pulls_sent;
		t[CCT_PULLS_RCVD] += q.cc_pulls_rcvd;
	}
}

static void print_stats(void)
{
	struct uroce_port_stats ps;

	uroce_port_stats(fz.ctx, 1, &ps);
	printf("fuzz_responder: %llu inputs, %llu commands, %llu packets; placed: %llu receives (%llu multi-packet), "
	       "%llu multi-packet WRITE_IMM, region A written in %llu inputs, %llu READ response bytes sent, "
	       "%llu local READs/atomics completed by forged responses; %llu QPs recovered from ERR\n",
	       (unsigned long long)fz.st.inputs, (unsigned long long)fz.st.cmds, (unsigned long long)fz.st.pkts,
	       (unsigned long long)fz.st.recv_ok, (unsigned long long)fz.st.recv_multi,
	       (unsigned long long)fz.st.write_imm_multi, (unsigned long long)fz.st.a_changed,
	       (unsigned long long)fz.st.read_resp_bytes, (unsigned long long)fz.st.local_reads_done,
	       (unsigned long long)fz.st.qp_errs);
	for (unsigned i = QP_SR; i <= QP_EC; i++) {
		struct uroce_qp_stats q;
		unsigned j = i - QP_SR;

		qp_stats_all(i, &q);
		printf("fuzz_responder: %s: %llu commands; receive side: %llu messages completed (%llu multi-packet, "
		       "%llu bytes checked, %llu partial of %llu handles given back), %llu failed, %llu SACKs sent, "
		       "%llu rebuilt by ec, %llu NACKs sent; "
		       "send side: %llu WRs completed (%llu streams), %llu SACKs accepted, %llu retransmits (%llu RACK, "
		       "%llu probes, %llu RTO, %llu spurious), %llu parity sent, %llu NACKs taken, %llu credit waits; "
		       "%llu recovered from ERR\n",
		       i == QP_SR ? "sr" : "ec", (unsigned long long)fz.st.sr_cmds[j],
		       (unsigned long long)fz.st.sr_recv_ok[j], (unsigned long long)fz.st.sr_recv_multi[j],
		       (unsigned long long)fz.st.sr_verified[j], (unsigned long long)fz.st.sr_partial[j],
		       (unsigned long long)fz.st.sr_precv_given[j], (unsigned long long)fz.st.sr_recv_err[j],
		       (unsigned long long)q.sacks_sent, (unsigned long long)q.ec_recovered,
		       (unsigned long long)q.ec_nacks_sent, (unsigned long long)fz.st.sr_send_ok[j],
		       (unsigned long long)fz.st.sr_streams[j],
		       (unsigned long long)q.sacks_rcvd, (unsigned long long)q.retransmits,
		       (unsigned long long)q.rack_losses, (unsigned long long)q.tlp_probes,
		       (unsigned long long)q.rto_losses, (unsigned long long)q.spurious_retx,
		       (unsigned long long)q.parity_sent, (unsigned long long)q.ec_nacks_rcvd,
		       (unsigned long long)q.credit_waits, (unsigned long long)fz.st.sr_qp_errs[j]);
	}
	printf("fuzz_responder: ec messages with rebuilt packets whose bytes were checked: %llu\n",
	       (unsigned long long)fz.st.ec_rebuilt_verified);
	{
		struct uroce_qp_stats q;

		if (uroce_qp_stats(fz.qp[QP_BE], &q))
			die("qp_stats");
		printf("fuzz_responder: be: %llu commands; receive side: %llu completed (%llu WRITE with immediate, "
		       "%llu partial, %llu by deadline, %llu preempted, %llu bytes checked), %llu failed, %llu late "
		       "drops, %llu duplicates, %llu VOTEs taken; send side: %llu WRs completed, %llu ended by their "
		       "deadline; QP counters: %llu timeouts, %llu preempted; %llu recovered from ERR\n",
		       (unsigned long long)fz.st.be_cmds, (unsigned long long)fz.st.be_recv_ok,
		       (unsigned long long)fz.st.be_recv_imm, (unsigned long long)fz.st.be_recv_partial,
		       (unsigned long long)fz.st.be_recv_timeout, (unsigned long long)fz.st.be_recv_preempted,
		       (unsigned long long)fz.st.be_verified, (unsigned long long)fz.st.be_recv_err,
		       (unsigned long long)q.late_drops, (unsigned long long)q.duplicates,
		       (unsigned long long)fz.st.be_votes_ok, (unsigned long long)fz.st.be_send_ok,
		       (unsigned long long)fz.st.be_send_timeout, (unsigned long long)q.be_timeouts,
		       (unsigned long long)q.be_preempted, (unsigned long long)fz.st.be_qp_errs);
	}
	{
		uint64_t sum[CCT__COUNT];

		cc_totals(sum);
		printf("fuzz_responder: congestion: %llu commands, %llu inputs with the EQDS sr QP, %llu QPs re-created; "
		       "CNPs: %llu sent (%llu checked 4 us apart), %llu taken, %llu CE marks; %llu trimmed arrivals, %llu "
		       "packets resent on a TRIM; EQDS: %llu RTS sent, %llu taken, %llu PULLs sent, %llu taken, credit "
		       "checked %llu times\n",
		       (unsigned long long)fz.st.cc_cmds, (unsigned long long)fz.st.eqds_inputs,
		       (unsigned long long)fz.st.qp_recreated, (unsigned long long)sum[CCT_CNPS_SENT],
		       (unsigned long long)fz.st.cnps_checked, (unsigned long long)sum[CCT_CNPS_RCVD],
		       (unsigned long long)sum[CCT_CE], (unsigned long long)sum[CCT_TRIMMED],
		       (unsigned long long)sum[CCT_TRIM_NACKS], (unsigned long long)sum[CCT_RTS_SENT],
		       (unsigned long long)sum[CCT_RTS_RCVD], (unsigned long long)sum[CCT_PULLS_SENT],
		       (unsigned long long)sum[CCT_PULLS_RCVD],
		       (unsigned long long)fz.st.eqds_checked);
	}
	for (unsigned i = UROCE_DROP_SHORT_FRAME; i < UROCE_DROP__COUNT; i++)
		if (ps.drops[i])
			printf("  %-18s %llu\n", uroce_drop_reason_name(i), (unsigned long long)ps.drops[i]);
}

int main(int argc, char **argv)
{
	static uint8_t buf[RANDOM_MAX_LEN];
	unsigned corpus = 0;
	struct uroce_port_stats ps;
	struct uroce_qp_stats srs, ecs;
	int fails = 0;

	if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
		return write_corpus(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--only") == 0) {
		/* replay one input or folder, print what it reached, check nothing */
		feed_path(argv[2]);
		print_stats();
		fflush(stdout); /* LeakSanitizer's report at exit ends the process without flushing */
		return 0;
	}
	for (int i = 1; i < argc; i++)
		corpus += feed_path(argv[i]);
	for (unsigned i = 0; i < RANDOM_INPUTS; i++) {
		uint32_t len = 1 + (uint32_t)(next() % RANDOM_MAX_LEN);

		for (uint32_t k = 0; k < len; k++)
			buf[k] = (uint8_t)next();
		LLVMFuzzerTestOneInput(buf, len);
	}
	print_stats();
	/* the target must keep reaching placement and every kind of refusal,
	 * or it has quietly stopped testing the responder */
	uroce_port_stats(fz.ctx, 1, &ps);
	qp_stats_all(QP_SR, &srs);
	qp_stats_all(QP_EC, &ecs);
#define MUST(cond)                                                              \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "fuzz_responder: never reached: %s\n", #cond); \
			fails++;                                                \
		}                                                               \
	} while (0)
	MUST(fz.st.recv_multi > 0);
	MUST(fz.st.write_imm_multi > 0);
	MUST(fz.st.a_changed > 0);
	MUST(fz.st.read_resp_bytes > 0);
	MUST(fz.st.local_reads_done > 0);
	MUST(fz.st.qp_errs > 0);
	MUST(ps.drops[UROCE_DROP_BAD_RKEY] > 0);
	MUST(ps.drops[UROCE_DROP_OUT_OF_BOUNDS] > 0);
	MUST(ps.drops[UROCE_DROP_ACCESS_DENIED] > 0);
	MUST(ps.drops[UROCE_DROP_PSN_OUT_OF_WINDOW] > 0);
	MUST(ps.drops[UROCE_DROP_DUPLICATE] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_OPCODE] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_QKEY] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_LENGTH_MSG] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_ICRC] > 0);
	MUST(ps.drops[UROCE_DROP_UNKNOWN_OPCODE] > 0);
	/* sr and ec: messages complete (and hold what was sent), ec rebuilds,
	 * the sender takes SACKs, late and malformed packets are refused */
	MUST(fz.st.sr_recv_ok[0] > 0);
	MUST(fz.st.sr_recv_ok[1] > 0);
	MUST(fz.st.sr_verified[0] > 0);
	MUST(fz.st.sr_top_chunks > 0);
	MUST(ecs.ec_recovered > 0);
	MUST(fz.st.ec_rebuilt_verified > 0);
	MUST(srs.sacks_rcvd + ecs.sacks_rcvd > 0);
	MUST(ps.drops[UROCE_DROP_STALE_MSG] > 0);
	MUST(ps.drops[UROCE_DROP_BAD_CTRL] > 0);
	/* be: messages complete whole (and hold what was sent), by deadline
	 * and preempted; late packets are refused; VOTEs are taken; WRs sent */
	MUST(fz.st.be_recv_ok > 0);
	MUST(fz.st.be_verified > 0);
	MUST(fz.st.be_recv_timeout > 0);
	MUST(fz.st.be_recv_preempted > 0);
	MUST(fz.st.be_votes_ok > 0);
	MUST(fz.st.be_send_ok > 0);
	MUST(ps.drops[UROCE_DROP_LATE] > 0);
	/* congestion: CNPs both ways (and dated 4 us apart), trimmed packets
	 * NACKed and TRIMs taken, RTSs and PULLs both ways, the EQDS sender's
	 * credit checked, QPs re-created */
	{
		uint64_t t[CCT__COUNT];

		cc_totals(t);
		MUST(t[CCT_CNPS_SENT] > 0);
		MUST(fz.st.cnps_checked > 0);
		MUST(t[CCT_CNPS_RCVD] > 0);
		MUST(t[CCT_TRIMMED] > 0);
		MUST(t[CCT_TRIM_NACKS] > 0);
		MUST(t[CCT_RTS_SENT] > 0);
		MUST(t[CCT_RTS_RCVD] > 0);
		MUST(t[CCT_PULLS_SENT] > 0);
		MUST(t[CCT_PULLS_RCVD] > 0);
		MUST(fz.st.eqds_checked > 0);
		MUST(fz.st.qp_recreated > 0);
	}
#undef MUST
	printf("fuzz_responder: %u corpus files, %u random inputs: %s\n", corpus, RANDOM_INPUTS,
	       fails ? "FAILED" : "no failure");
	fflush(stdout); /* LeakSanitizer's report at exit ends the process without flushing */
	return fails ? 1 : 0;
}
