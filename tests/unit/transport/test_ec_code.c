/* SPDX-License-Identifier: MIT */
/* The erasure codes of transport/rel/sr/ec_code.c against independent references:
 * RS parity equals the Cauchy matrix product computed byte by byte with
 * gf_mul, XOR parity equals a bytewise XOR of each group; every data chunk
 * a decode rebuilds equals the original, for every erasure pattern of small
 * codes (all subsets of the k+m chunks) and random ones for (32,8), with
 * lengths 1, 63, 1024 and 4096 and buffers 64-byte aligned (ISA-L's
 * xor_gen), 16-byte aligned and at odd addresses (the plain loop).
 * Undecodable patterns give -EAGAIN and leave every buffer as it was; a
 * decode writes nothing past len and never touches a missing parity chunk.
 * A short last submessage (kk < k data chunks, the rest known zeros) with
 * the scaled parity count np < m decodes the same way; the decode-table
 * cache hits a repeated pattern, keeps EC_DEC_WAYS of them, and replaces the
 * least recently used. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l.h>

#include "transport/rel/sr/ec_code.h"

#define GUARD 32      /* bytes checked after every chunk */
#define MAXLEN 4096

static unsigned failures;
static unsigned long checks;

#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		checks++;                                                          \
		if (!(cond)) {                                                     \
			failures++;                                                \
			if (failures <= 20) {                                      \
				fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
				fprintf(stderr, __VA_ARGS__);                      \
				fputc('\n', stderr);                               \
			}                                                          \
		}                                                                  \
	} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* One code under test with its buffers: orig holds the encoded chunks
 * (data then parity), work the copy a decode runs on. Each chunk is at
 * offset off from a 64-byte boundary and followed by GUARD bytes. */
struct bed {
	struct ec_code c;
	unsigned k, m, n, np;   /* np: parity chunks encoded (m, fewer for a short submessage) */
	size_t len, off, stride;
	uint8_t *orig_mem, *work_mem;
	uint8_t *orig[EC_MAX_N], *work[EC_MAX_N];
};

static void bed_open(struct bed *b, enum ec_kind kind, unsigned k, unsigned m, size_t len, size_t off)
{
	memset(b, 0, sizeof(*b));
	if (ec_code_init(&b->c, kind, k, m) != 0) {
		fprintf(stderr, "ec_code_init(%d, %u, %u) failed\n", kind, k, m);
		exit(1);
	}
	b->k = k;
	b->m = m;
	b->n = k + m;
	b->np = m;
	b->len = len;
	b->off = off;
	b->stride = (off + len + GUARD + 63) & ~(size_t)63;
	b->orig_mem = aligned_alloc(64, b->stride * b->n);
	b->work_mem = aligned_alloc(64, b->stride * b->n);
	if (!b->orig_mem || !b->work_mem) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	fill(b->orig_mem, b->stride * b->n);
	for (unsigned i = 0; i < b->n; i++) {
		b->orig[i] = b->orig_mem + i * b->stride + off;
		b->work[i] = b->work_mem + i * b->stride + off;
	}
	ec_encode(&b->c, len, b->orig, b->orig + k, b->np);
}

/* Makes b a short submessage: data kk..k-1 zero (padding), the parity
 * count scaled to kk and re-encoded. */
static void bed_short(struct bed *b, unsigned kk)
{
	for (unsigned j = kk; j < b->k; j++)
		memset(b->orig[j], 0, b->len);
	b->np = ec_parity_for(&b->c, kk);
	ec_encode(&b->c, b->len, b->orig, b->orig + b->k, b->np);
}

static void bed_close(struct bed *b)
{
	ec_code_fini(&b->c);
	free(b->orig_mem);
	free(b->work_mem);
}

/* The parity of orig, recomputed byte by byte: the Cauchy rows 1/(i ^ j)
 * under an identity (ISA-L's gf_gen_cauchy1_matrix) for RS, the XOR of the
 * group j % m == i for XOR. Also checks the guard bytes were left alone. */
static void check_parity(const struct bed *b, const char *what)
{
	unsigned k = b->k, m = b->np;
	uint8_t want[MAXLEN];
	unsigned bad = 0;

	for (unsigned i = 0; i < m; i++) {
		memset(want, 0, b->len);
		for (unsigned j = 0; j < k; j++) {
			if (b->c.kind == EC_KIND_XOR) {
				if (j % m != i)
					continue;
				for (size_t x = 0; x < b->len; x++)
					want[x] ^= b->orig[j][x];
			} else {
				uint8_t coef = gf_inv((uint8_t)((k + i) ^ j));

				if (b->c.encode_matrix[(k + i) * k + j] != coef)
					bad++;
				for (size_t x = 0; x < b->len; x++)
					want[x] ^= gf_mul(coef, b->orig[j][x]);
			}
		}
		if (memcmp(want, b->orig[k + i], b->len))
			bad++;
	}
	CHECK(!bad, "%s: %u parity chunks or matrix entries differ from the reference", what, bad);
}

/* The reference decodability of a pattern, written from the definitions. */
static bool want_decodable(const struct bed *b, const uint8_t *present)
{
	unsigned k = b->k, m = b->np, have = 0;

	if (b->c.kind == EC_KIND_RS) {
		for (unsigned i = 0; i < k + m; i++)
			have += present[i] != 0;
		return have >= k;
	}
	for (unsigned j = 0; j < k; j++) {
		if (present[j])
			continue;
		if (!present[k + j % m])
			return false;
		for (unsigned o = j % m; o < k; o += m)
			if (o != j && !present[o])
				return false;
	}
	return true;
}

/* Decodes one pattern on a fresh copy and checks everything: the return
 * value, the rebuilt data, that present chunks, missing parity and the
 * guards are untouched (and on -EAGAIN that nothing changed at all). */
static void try_pattern(struct bed *b, const uint8_t *present, const char *what)
{
	unsigned k = b->k, nlost = 0;
	bool can = want_decodable(b, present);

	memcpy(b->work_mem, b->orig_mem, b->stride * b->n);
	for (unsigned i = 0; i < b->n; i++)
		if (!present[i])
			fill(b->work[i], b->len);   /* garbage where the loss is */
	for (unsigned j = 0; j < k; j++)
		nlost += !present[j];

	uint8_t *before = malloc(b->stride * b->n);

	if (!before)
		exit(1);
	memcpy(before, b->work_mem, b->stride * b->n);
	CHECK(ec_can_decode(&b->c, present, b->np) == can, "%s: ec_can_decode says %d, want %d", what, !can, can);

	int rc = ec_decode(&b->c, b->len, b->work, present, b->np);

	if (!can) {
		CHECK(rc == -EAGAIN, "%s: ec_decode = %d, want -EAGAIN", what, rc);
		CHECK(!memcmp(before, b->work_mem, b->stride * b->n), "%s: -EAGAIN but buffers changed", what);
		free(before);
		return;
	}
	CHECK(rc == (int)nlost, "%s: ec_decode = %d, want %u", what, rc, nlost);
	for (unsigned i = 0; i < b->n; i++) {
		const uint8_t *want = i < k || present[i] ? b->orig[i] : before + i * b->stride + b->off;

		CHECK(!memcmp(b->work[i], want, b->len), "%s: chunk %u (%s) differs after decode", what, i,
		      i >= k ? "parity" : present[i] ? "present data" : "rebuilt data");
		CHECK(!memcmp(b->work[i] + b->len, b->orig[i] + b->len, GUARD),
		      "%s: chunk %u written past len", what, i);
	}
	free(before);
}

static void pattern_name(char *buf, size_t sz, const struct bed *b, const uint8_t *present)
{
	int n = snprintf(buf, sz, "%s(%u,%u) len %zu off %zu lost {", b->c.kind == EC_KIND_RS ? "RS" : "XOR",
			 b->k, b->m, b->len, b->off);

	for (unsigned i = 0; i < b->n && n > 0 && (size_t)n < sz; i++)
		if (!present[i])
			n += snprintf(buf + n, sz - (size_t)n, " %c%u", i < b->k ? 'd' : 'p',
				      i < b->k ? i : i - b->k);
	if (n > 0 && (size_t)n < sz)
		snprintf(buf + n, sz - (size_t)n, " }");
}

static unsigned long patterns;

/* Every subset of the k+m chunks as the lost set (small codes only). */
static void all_patterns(struct bed *b)
{
	uint8_t present[EC_MAX_N];
	char name[512];

	for (uint32_t mask = 0; mask < (1u << b->n); mask++) {
		for (unsigned i = 0; i < b->n; i++)
			present[i] = !(mask >> i & 1);
		pattern_name(name, sizeof(name), b, present);
		try_pattern(b, present, name);
		patterns++;
	}
}

/* Random lost sets of each size 1..m+1 (m+1 must fail for RS). */
static void random_patterns(struct bed *b, unsigned per_size)
{
	uint8_t present[EC_MAX_N];
	char name[512];

	for (unsigned lose = 1; lose <= b->m + 1; lose++) {
		for (unsigned t = 0; t < per_size; t++) {
			memset(present, 1, b->n);
			for (unsigned l = 0; l < lose;) {
				unsigned i = (unsigned)(rnd() % b->n);

				if (present[i]) {
					present[i] = 0;
					l++;
				}
			}
			pattern_name(name, sizeof(name), b, present);
			try_pattern(b, present, name);
			/* the same pattern again: the cached tables */
			try_pattern(b, present, name);
			patterns += 2;
		}
	}
}

static const size_t lens[] = { 1, 63, 1024, 4096 };
static const size_t offs[] = { 0, 1, 16 };   /* 16: even but not the 32 xor_gen needs */

static void test_rs(void)
{
	static const unsigned small[][2] = { { 8, 2 }, { 4, 1 }, { 1, 1 }, { 6, 3 }, { 3, 5 } };

	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
			struct bed b;

			for (size_t s = 0; s < sizeof(small) / sizeof(small[0]); s++) {
				bed_open(&b, EC_KIND_RS, small[s][0], small[s][1], lens[l], offs[o]);
				check_parity(&b, "RS small");
				all_patterns(&b);
				bed_close(&b);
			}
			bed_open(&b, EC_KIND_RS, 32, 8, lens[l], offs[o]);
			check_parity(&b, "RS(32,8)");
			random_patterns(&b, lens[l] >= 1024 ? 8 : 24);
			bed_close(&b);
		}
	}
	/* the largest code: 32 lost data chunks out of 64 */
	struct bed b;
	uint8_t present[EC_MAX_N];

	bed_open(&b, EC_KIND_RS, 64, 32, 256, 0);
	check_parity(&b, "RS(64,32)");
	memset(present, 1, b.n);
	for (unsigned j = 0; j < 64; j += 2)
		present[j] = 0;
	try_pattern(&b, present, "RS(64,32) every even data chunk lost");
	present[1] = 0;
	try_pattern(&b, present, "RS(64,32) 33 lost");
	patterns += 2;
	bed_close(&b);
}

static void test_xor(void)
{
	static const unsigned small[][2] = { { 8, 2 }, { 4, 1 }, { 1, 1 }, { 6, 3 }, { 3, 5 }, { 7, 4 } };

	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
			struct bed b;
			uint8_t present[EC_MAX_N];
			char name[512];

			for (size_t s = 0; s < sizeof(small) / sizeof(small[0]); s++) {
				bed_open(&b, EC_KIND_XOR, small[s][0], small[s][1], lens[l], offs[o]);
				check_parity(&b, "XOR small");
				all_patterns(&b);
				bed_close(&b);
			}
			bed_open(&b, EC_KIND_XOR, 32, 8, lens[l], offs[o]);
			check_parity(&b, "XOR(32,8)");
			random_patterns(&b, 8);
			/* one loss in every group: recovers all 8 */
			for (unsigned t = 0; t < 4; t++) {
				memset(present, 1, b.n);
				for (unsigned g = 0; g < 8; g++)
					present[g + 8 * (unsigned)(rnd() % 4)] = 0;
				pattern_name(name, sizeof(name), &b, present);
				CHECK(ec_can_decode(&b.c, present, b.np), "%s: one loss per group not decodable", name);
				try_pattern(&b, present, name);
				/* a second loss in group 3: -EAGAIN */
				for (unsigned j = 3; j < 32; j += 8) {
					if (!present[j]) {
						present[(j + 8) % 32] = 0;
						break;
					}
				}
				pattern_name(name, sizeof(name), &b, present);
				CHECK(!ec_can_decode(&b.c, present, b.np), "%s: decodable", name);
				try_pattern(&b, present, name);
				patterns += 2;
			}
			bed_close(&b);
		}
	}
}

/* The decode-table cache: a repeated pattern hits, a new one misses, and a
 * pattern that comes back after another is rebuilt right. */
static void test_cache(void)
{
	struct bed b;
	uint8_t p1[EC_MAX_N], p2[EC_MAX_N];

	bed_open(&b, EC_KIND_RS, 8, 3, 1024, 0);
	memset(p1, 1, b.n);
	memset(p2, 1, b.n);
	p1[0] = p1[5] = 0;
	p2[1] = p2[8] = 0;
	try_pattern(&b, p1, "cache p1");
	CHECK(b.c.dec_misses == 1 && b.c.dec_hits == 0, "first decode: %llu misses %llu hits",
	      (unsigned long long)b.c.dec_misses, (unsigned long long)b.c.dec_hits);
	try_pattern(&b, p1, "cache p1 again");
	CHECK(b.c.dec_misses == 1 && b.c.dec_hits == 1, "repeat: %llu misses %llu hits",
	      (unsigned long long)b.c.dec_misses, (unsigned long long)b.c.dec_hits);
	try_pattern(&b, p2, "cache p2");
	try_pattern(&b, p1, "cache p1 after p2");
	CHECK(b.c.dec_misses == 2 && b.c.dec_hits == 2, "alternating: %llu misses %llu hits",
	      (unsigned long long)b.c.dec_misses, (unsigned long long)b.c.dec_hits);
	/* new data under the cached pattern */
	fill(b.orig_mem, b.stride * b.n);
	ec_encode(&b.c, b.len, b.orig, b.orig + b.k, b.np);
	try_pattern(&b, p1, "cache p1 with new data");
	CHECK(b.c.dec_hits == 3, "new data: %llu hits", (unsigned long long)b.c.dec_hits);
	/* a lost parity chunk past the ones decoded from is the same pattern */
	p1[10] = 0;
	try_pattern(&b, p1, "cache p1 with p1 lost too");
	CHECK(b.c.dec_hits == 4 && b.c.dec_misses == 2, "unused parity lost: %llu misses %llu hits",
	      (unsigned long long)b.c.dec_misses, (unsigned long long)b.c.dec_hits);
	patterns += 6;
	bed_close(&b);

	/* LRU: EC_DEC_WAYS patterns fit (a second round hits), one more
	 * evicts the least recently used (a round of EC_DEC_WAYS + 1 in the
	 * same order misses every time) */
	uint8_t pat[EC_DEC_WAYS + 1][EC_MAX_N];
	char name[64];

	bed_open(&b, EC_KIND_RS, 32, 8, 256, 0);
	for (unsigned p = 0; p <= EC_DEC_WAYS; p++) {
		memset(pat[p], 1, b.n);
		pat[p][p] = pat[p][p + 10] = 0;
	}
	for (unsigned round = 0; round < 2; round++)
		for (unsigned p = 0; p < EC_DEC_WAYS; p++) {
			snprintf(name, sizeof(name), "LRU round %u pattern %u", round, p);
			try_pattern(&b, pat[p], name);
		}
	CHECK(b.c.dec_misses == EC_DEC_WAYS && b.c.dec_hits == EC_DEC_WAYS, "%u ways: %llu misses %llu hits",
	      EC_DEC_WAYS, (unsigned long long)b.c.dec_misses, (unsigned long long)b.c.dec_hits);
	for (unsigned round = 0; round < 2; round++)
		for (unsigned p = 0; p <= EC_DEC_WAYS; p++) {
			snprintf(name, sizeof(name), "LRU+1 round %u pattern %u", round, p);
			try_pattern(&b, pat[(p + EC_DEC_WAYS) % (EC_DEC_WAYS + 1)], name);
		}
	CHECK(b.c.dec_misses == EC_DEC_WAYS + 2 * (EC_DEC_WAYS + 1) && b.c.dec_hits == EC_DEC_WAYS,
	      "%u + 1 patterns in a cycle: %llu misses %llu hits", EC_DEC_WAYS,
	      (unsigned long long)b.c.dec_misses, (unsigned long long)b.c.dec_hits);
	patterns += 4 * EC_DEC_WAYS + 2;
	bed_close(&b);
}

/* A short last submessage: parity scaled to kk data chunks, the padding
 * chunks present (known zeros) and parity np..m-1 never sent. */
static void test_short(void)
{
	static const unsigned codes[][2] = { { 32, 8 }, { 8, 2 }, { 4, 2 }, { 6, 3 } };
	uint8_t present[EC_MAX_N];
	char name[512];

	{
		struct ec_code c;

		CHECK(ec_code_init(&c, EC_KIND_RS, 32, 8) == 0, "init(RS, 32, 8)");
		CHECK(ec_parity_for(&c, 32) == 8 && ec_parity_for(&c, 1) == 1 && ec_parity_for(&c, 4) == 1 &&
		      ec_parity_for(&c, 5) == 2 && ec_parity_for(&c, 31) == 8 && ec_parity_for(&c, 16) == 4,
		      "ec_parity_for(32, 8): %u %u %u %u %u %u", ec_parity_for(&c, 32), ec_parity_for(&c, 1),
		      ec_parity_for(&c, 4), ec_parity_for(&c, 5), ec_parity_for(&c, 31), ec_parity_for(&c, 16));
		ec_code_fini(&c);
	}
	for (int kind = EC_KIND_RS; kind <= EC_KIND_XOR; kind++) {
		for (size_t ci = 0; ci < sizeof(codes) / sizeof(codes[0]); ci++) {
			unsigned k = codes[ci][0], m = codes[ci][1];

			for (unsigned kk = 1; kk <= k; kk += k > 8 ? 3 : 1) {
				struct bed b;

				bed_open(&b, (enum ec_kind)kind, k, m, 1024, kk % 2);
				bed_short(&b, kk);
				check_parity(&b, "short submessage");
				for (unsigned t = 0; t < 24; t++) {
					unsigned lose = 1 + (unsigned)(rnd() % (b.np + 1));

					memset(present, 1, b.n);
					for (unsigned j = b.np; j < m; j++)
						present[k + j] = 0;   /* not sent */
					for (unsigned l = 0; l < lose && l < kk + b.np; ) {
						unsigned i = (unsigned)(rnd() % (kk + b.np));

						i = i < kk ? i : k + (i - kk);
						if (present[i]) {
							present[i] = 0;
							l++;
						}
					}
					pattern_name(name, sizeof(name), &b, present);
					snprintf(name + strlen(name), sizeof(name) - strlen(name), " kk %u np %u", kk, b.np);
					try_pattern(&b, present, name);
					patterns++;
				}
				bed_close(&b);
			}
		}
	}
}

static void test_init(void)
{
	static const struct { int kind; unsigned k, m; int rc; } cases[] = {
		{ EC_KIND_RS, 0, 1, -EINVAL }, { EC_KIND_RS, 1, 0, -EINVAL },
		{ EC_KIND_RS, 65, 1, -EINVAL }, { EC_KIND_RS, 1, 33, -EINVAL },
		{ EC_KIND_XOR, 65, 1, -EINVAL }, { EC_KIND_XOR, 4, 0, -EINVAL },
		{ 2, 4, 2, -EINVAL }, { -1, 4, 2, -EINVAL },
		{ EC_KIND_RS, 64, 32, 0 }, { EC_KIND_XOR, 64, 32, 0 }, { EC_KIND_RS, 1, 1, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ec_code c;
		int rc = ec_code_init(&c, (enum ec_kind)cases[i].kind, cases[i].k, cases[i].m);

		CHECK(rc == cases[i].rc, "init(%d, %u, %u) = %d, want %d", cases[i].kind, cases[i].k,
		      cases[i].m, rc, cases[i].rc);
		if (rc)
			CHECK(!c.encode_matrix && !c.g_tbls && !c.dec_tbls && !c.dec_work,
			      "init(%d, %u, %u) failed but left memory", cases[i].kind, cases[i].k, cases[i].m);
		if (!rc)
			CHECK((cases[i].kind == EC_KIND_RS) == (c.g_tbls != NULL),
			      "init(%d, %u, %u): tables only for RS", cases[i].kind, cases[i].k, cases[i].m);
		ec_code_fini(&c);
		ec_code_fini(&c);   /* twice is harmless */
	}

	/* len past ISA-L's int: refused before anything is read */
	struct ec_code c;
	uint8_t present[3] = { 0, 1, 1 };
	uint8_t *chunks[3] = { NULL, NULL, NULL };

	CHECK(ec_code_init(&c, EC_KIND_RS, 2, 1) == 0, "init(RS, 2, 1)");
	CHECK(ec_decode(&c, (size_t)INT_MAX + 1, chunks, present, 1) == -EINVAL, "len > INT_MAX accepted");
	CHECK(ec_decode(&c, 16, chunks, present, 0) == -EINVAL && ec_decode(&c, 16, chunks, present, 2) == -EINVAL,
	      "np outside 1..m accepted");
	ec_code_fini(&c);
}

int main(void)
{
	test_init();
	test_rs();
	test_xor();
	test_cache();
	test_short();
	printf("test_ec_code: %lu patterns, %lu checks, %u failed\n", patterns, checks, failures);
	return failures ? 1 : 0;
}
