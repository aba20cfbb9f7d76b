/* SPDX-License-Identifier: MIT */
/* Erasure-code benchmark: transport/rel/sr/ec_code.c against the raw ISA-L calls
 * a bare ISA-L user would write, for RS(32,8) and XOR(32,8) with 1 KiB and
 * 4 KiB chunks, in one run.
 *
 *   encode        ec_encode            vs ec_encode_data, tables made once
 *                 (XOR: ec_encode      vs one xor_gen per parity group)
 *   decode        ec_decode, m data chunks lost, the same pattern each call
 *                 (its cached tables)  vs ec_encode_data with the decode
 *                 tables (gf_invert_matrix + ec_init_tables) made once
 *                 (XOR: ec_decode      vs one xor_gen per lost chunk)
 *   decode, new   RS only: ec_decode cycling through NPAT random patterns of
 *   pattern       m lost data chunks (more than its cache holds), so every
 *                 call builds tables; raw as in "decode"
 *
 * After the RS rows, the time of one new-pattern decode in microseconds, for
 * m lost and for 1 lost (the common case at 1% loss), with the part of it
 * that is the table build (the new-pattern time less the cached decode's).
 *
 * GB/s counts data bytes (k x chunk) per call, 1 GB = 1e9 bytes; ours/raw is
 * the ratio of the two rates (1.00 = as fast as ISA-L alone, below 1 = our
 * overhead). After a warm-up, ours and raw run in alternating batches of
 * about 0.2 ms for 0.3 s per row, and each side's best batch counts: this
 * machine has 2 shared cores, and a short batch is often left alone by the
 * neighbours where a long run is not (--median prints the median batch).
 * Outputs of both sides are checked equal. The raw side issues no
 * vzeroupper after ISA-L's AVX2 kernels, as a bare ISA-L user would not;
 * ours does (see transport/rel/sr/ec_code.c).
 *
 *   ec_bench [--quick] [--median]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l.h>

#include "transport/rel/sr/ec_code.h"

#define K 32u
#define M 8u
#define NPAT 32u   /* > EC_DEC_WAYS: a cycle through them misses every time */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One code with its buffers and the raw side's own tables. */
struct setup {
	struct ec_code c;
	size_t len;
	uint8_t *chunk[K + M];      /* ours: data then parity */
	uint8_t *raw_parity[M];     /* raw encode writes here */
	uint8_t *raw_out[M];        /* raw decode writes here */
	uint8_t *orig[M];           /* the lost data chunks as encoded */
	uint8_t present[K + M];
	uint8_t pat[NPAT][K + M];   /* new-pattern rows: m lost data chunks each */
	uint8_t pat1[NPAT][K + M];  /* ... one lost data chunk each */
	unsigned lost[M];
	unsigned pi;
	/* raw RS */
	uint8_t matrix[(K + M) * K], enc_tbls[32 * K * M], dec_tbls[32 * K * M];
	uint8_t *dec_src[K];
};

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);

	if (!p) {
		fprintf(stderr, "ec_bench: out of memory\n");
		exit(1);
	}
	return p;
}

static void setup_open(struct setup *s, enum ec_kind kind, size_t len)
{
	memset(s, 0, sizeof(*s));
	if (ec_code_init(&s->c, kind, K, M)) {
		fprintf(stderr, "ec_bench: ec_code_init failed\n");
		exit(1);
	}
	s->len = len;
	for (unsigned i = 0; i < K + M; i++) {
		s->chunk[i] = xalloc(len);
		for (size_t b = 0; b < len; b++)
			s->chunk[i][b] = (uint8_t)rand();
	}
	for (unsigned i = 0; i < M; i++) {
		s->raw_parity[i] = xalloc(len);
		s->raw_out[i] = xalloc(len);
		s->orig[i] = xalloc(len);
	}
	/* lose data chunks 0..m-1: m losses, one per XOR group */
	memset(s->present, 1, sizeof(s->present));
	for (unsigned i = 0; i < M; i++) {
		s->lost[i] = i;
		s->present[i] = 0;
	}
	/* distinct random patterns for the cache-miss rows */
	for (unsigned p = 0; p < NPAT; p++) {
		memset(s->pat[p], 1, K + M);
		memset(s->pat1[p], 1, K + M);
		s->pat1[p][p % K] = 0;
		for (unsigned n = 0; n < M;) {
			unsigned j = (unsigned)rand() % K;

			if (s->pat[p][j]) {
				s->pat[p][j] = 0;
				n++;
			}
		}
	}

	if (kind == EC_KIND_RS) {
		/* what a bare ISA-L user writes: matrix and tables once */
		uint8_t b[K * K], inv[K * K], rows[M * K];
		unsigned n = 0;

		gf_gen_cauchy1_matrix(s->matrix, K + M, K);
		ec_init_tables(K, M, s->matrix + K * K, s->enc_tbls);
		for (unsigned i = 0; i < K + M && n < K; i++) {
			if (!s->present[i])
				continue;
			memcpy(b + n * K, s->matrix + i * K, K);
			s->dec_src[n++] = s->chunk[i];
		}
		if (gf_invert_matrix(b, inv, K)) {
			fprintf(stderr, "ec_bench: singular decode matrix\n");
			exit(1);
		}
		for (unsigned r = 0; r < M; r++)
			memcpy(rows + r * K, inv + s->lost[r] * K, K);
		ec_init_tables(K, M, rows, s->dec_tbls);
	}
	ec_encode(&s->c, len, s->chunk, s->chunk + K, M);
	for (unsigned i = 0; i < M; i++)
		memcpy(s->orig[i], s->chunk[s->lost[i]], len);
}

static void setup_close(struct setup *s)
{
	for (unsigned i = 0; i < K + M; i++)
		free(s->chunk[i]);
	for (unsigned i = 0; i < M; i++) {
		free(s->raw_parity[i]);
		free(s->raw_out[i]);
		free(s->orig[i]);
	}
	ec_code_fini(&s->c);
}

static void ours_encode(struct setup *s)
{
	ec_encode(&s->c, s->len, s->chunk, s->chunk + K, M);
}

static void ours_decode(struct setup *s)
{
	if (ec_decode(&s->c, s->len, s->chunk, s->present, M) != (int)M)
		abort();
}

static void ours_decode_new(struct setup *s)
{
	s->pi = (s->pi + 1) % NPAT;
	if (ec_decode(&s->c, s->len, s->chunk, s->pat[s->pi], M) != (int)M)
		abort();
}

static void ours_decode_new1(struct setup *s)
{
	s->pi = (s->pi + 1) % NPAT;
	if (ec_decode(&s->c, s->len, s->chunk, s->pat1[s->pi], M) != 1)
		abort();
}

static void ours_decode1(struct setup *s)
{
	if (ec_decode(&s->c, s->len, s->chunk, s->pat1[0], M) != 1)
		abort();
}

static void raw_rs_encode(struct setup *s)
{
	ec_encode_data((int)s->len, K, M, s->enc_tbls, s->chunk, s->raw_parity);
}

static void raw_rs_decode(struct setup *s)
{
	ec_encode_data((int)s->len, K, M, s->dec_tbls, s->dec_src, s->raw_out);
}

static void raw_xor_encode(struct setup *s)
{
	for (unsigned g = 0; g < M; g++) {
		void *v[K / M + 1];
		unsigned n = 0;

		for (unsigned j = g; j < K; j += M)
			v[n++] = s->chunk[j];
		v[n++] = s->raw_parity[g];
		xor_gen((int)n, (int)s->len, v);
	}
}

static void raw_xor_decode(struct setup *s)
{
	for (unsigned r = 0; r < M; r++) {
		unsigned g = s->lost[r] % M;
		void *v[K / M + 1];
		unsigned n = 0;

		for (unsigned j = g; j < K; j += M)
			if (j != s->lost[r])
				v[n++] = s->chunk[j];
		v[n++] = s->chunk[K + g];
		v[n++] = s->raw_out[r];
		xor_gen((int)n, (int)s->len, v);
	}
}

typedef void (*op_fn)(struct setup *);

struct timing {
	double row_s, warm_s;   /* measuring time per row (both sides), warm-up per side */
};

/* Calls fn in batches until secs have passed; returns calls per second. */
static double run_for(op_fn fn, struct setup *s, unsigned batch, double secs)
{
	double t0 = now_s(), t;
	unsigned long n = 0;

	do {
		for (unsigned i = 0; i < batch; i++)
			fn(s);
		n += batch;
		t = now_s();
	} while (t - t0 < secs);
	return (double)n / (t - t0);
}

/* Calls fn batch times; returns calls per second. */
static double run_batch(op_fn fn, struct setup *s, unsigned batch)
{
	double t0 = now_s();

	for (unsigned i = 0; i < batch; i++)
		fn(s);
	return (double)batch / (now_s() - t0);
}

#define MAX_SAMPLES 4096

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Calls/s of ours and raw: batches of about 0.2 ms, ours and raw
 * alternating, for row_s in all; the best batch of each side counts (the
 * median is printed with --median). The warm-up also sizes the batches. */
static void measure(op_fn ours, op_fn raw, struct setup *s, const struct timing *tm, bool median,
		    double *r_ours, double *r_raw)
{
	static double so[MAX_SAMPLES], sr[MAX_SAMPLES];
	double w = run_for(ours, s, 1, tm->warm_s);
	unsigned b_ours = (unsigned)(w * 2e-4) + 1;

	w = run_for(raw, s, 1, tm->warm_s);
	unsigned b_raw = (unsigned)(w * 2e-4) + 1;

	double t0 = now_s();
	unsigned n = 0;

	while (n < MAX_SAMPLES && now_s() - t0 < tm->row_s) {
		so[n] = run_batch(ours, s, b_ours);
		sr[n] = run_batch(raw, s, b_raw);
		n++;
	}
	qsort(so, n, sizeof(so[0]), cmp_double);
	qsort(sr, n, sizeof(sr[0]), cmp_double);
	*r_ours = median ? so[n / 2] : so[n - 1];
	*r_raw = median ? sr[n / 2] : sr[n - 1];
}

static unsigned mismatches;

/* Both sides wrote the same bytes, and decodes rebuilt the originals. */
static void verify(struct setup *s, const char *what, bool encode)
{
	for (unsigned i = 0; i < M; i++) {
		const uint8_t *ours = encode ? s->chunk[K + i] : s->chunk[s->lost[i]];
		const uint8_t *raw = encode ? s->raw_parity[i] : s->raw_out[i];

		if (memcmp(ours, raw, s->len) || (!encode && memcmp(ours, s->orig[i], s->len))) {
			fprintf(stderr, "ec_bench: %s: chunk %u differs between ours and raw ISA-L\n", what,
				encode ? K + i : s->lost[i]);
			mismatches++;
			return;
		}
	}
}

static void row(const char *code, size_t len, const char *op, double r_ours, double r_raw)
{
	double bytes = (double)K * (double)len;

	printf("%-9s  %5zu  %-19s  %9.2f  %8.2f  %8.2f\n", code, len, op, r_ours * bytes / 1e9,
	       r_raw * bytes / 1e9, r_ours / r_raw);
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ec_bench [--quick] [--median]\n"
		"  Times transport/rel/sr/ec_code.c's encode and decode against raw ISA-L for\n"
		"  RS(32,8) and XOR(32,8), chunks of 1024 and 4096 bytes.\n"
		"  --quick     measure 0.03 s per row instead of 0.3 s\n"
		"  --median    the median batch of each side instead of the best\n"
		"  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
	struct timing tm = { .row_s = 0.3, .warm_s = 0.02 };
	bool median = false;
	static const size_t lens[] = { 1024, 4096 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			tm = (struct timing){ .row_s = 0.03, .warm_s = 0.005 };
		} else if (!strcmp(argv[i], "--median")) {
			median = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "ec_bench: unknown argument '%s' (accepted: --quick, --median, -h, --help)\n",
				argv[i]);
			usage(stderr);
			return 2;
		}
	}
	struct new_row {
		size_t len;
		double us8, build8, us1, build1;
	} new_rows[2];
	unsigned nnew = 0;

	srand(1);
	printf("%-9s  %5s  %-19s  %9s  %8s  %8s\n", "code", "chunk", "op", "ours GB/s", "raw GB/s",
	       "ours/raw");
	for (int kind = EC_KIND_RS; kind <= EC_KIND_XOR; kind++) {
		const char *code = kind == EC_KIND_RS ? "RS(32,8)" : "XOR(32,8)";

		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			struct setup *s = xalloc(sizeof(*s));
			double a, b;
			char what[64];

			setup_open(s, (enum ec_kind)kind, lens[l]);
			snprintf(what, sizeof(what), "%s %zu", code, lens[l]);
			measure(ours_encode, kind == EC_KIND_RS ? raw_rs_encode : raw_xor_encode, s, &tm, median, &a, &b);
			verify(s, what, true);
			row(code, lens[l], "encode", a, b);
			measure(ours_decode, kind == EC_KIND_RS ? raw_rs_decode : raw_xor_decode, s, &tm, median, &a, &b);
			verify(s, what, false);
			row(code, lens[l], "decode, 8 lost", a, b);
			if (kind == EC_KIND_RS) {
				double cached = a, n8, n1, c1;

				measure(ours_decode_new, raw_rs_decode, s, &tm, median, &a, &b);
				verify(s, what, false);
				row(code, lens[l], "decode, new pattern", a, b);
				n8 = a;
				measure(ours_decode_new1, ours_decode1, s, &tm, median, &n1, &c1);
				new_rows[nnew++] = (struct new_row){ lens[l], 1e6 / n8, 1e6 / n8 - 1e6 / cached,
				                                     1e6 / n1, 1e6 / n1 - 1e6 / c1 };
			}
			setup_close(s);
			free(s);
		}
	}
	printf("\nRS(32,8), a new loss pattern each call (every call builds tables):\n");
	printf("%5s  %-7s  %12s  %15s\n", "chunk", "lost", "us per call", "us table build");
	for (unsigned i = 0; i < nnew; i++) {
		printf("%5zu  %-7u  %12.2f  %15.2f\n", new_rows[i].len, M, new_rows[i].us8, new_rows[i].build8);
		printf("%5zu  %-7u  %12.2f  %15.2f\n", new_rows[i].len, 1u, new_rows[i].us1, new_rows[i].build1);
	}
	if (mismatches) {
		fprintf(stderr, "ec_bench: %u outputs differ\n", mismatches);
		return 1;
	}
	return 0;
}
