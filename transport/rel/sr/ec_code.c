/* SPDX-License-Identifier: MIT */
/* Erasure codes for the transport: ISA-L Reed-Solomon with a Cauchy matrix,
 * and SDR-RDMA's XOR code (see ec_code.h for the why). */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l.h>

#include "transport/rel/sr/ec_code.h"

/* ISA-L 2.30's AVX2 kernels (ec_encode_data's gf_*vect_dot_prod_avx2,
 * xor_gen_avx) return with the upper halves of the YMM registers dirty (no
 * vzeroupper), and every legacy-SSE instruction run after that is slowed
 * until something clears them: ec_bench measured 8 xor_gen calls and the
 * code around them 3x slower on this machine's AMD EPYC, and our code and
 * the caller's are SSE. So every ISA-L call is followed by a vzeroupper,
 * where the CPU has AVX (elsewhere the instruction does not exist). */
static inline void avx_clean(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroupper" ::: "memory");
#endif
}

/* GF(2^8) logarithms for the decode-row products of a cache miss: ISA-L's
 * gf_mul is a call per product, about 5 ns, and a miss at e = 8, k = 32
 * takes 1 536 of them. ISA-L's field (x^8+x^4+x^3+x^2+1) has generator 2;
 * the tables are filled once, at load, through gf_mul itself. */
static uint8_t gf_log[256], gf_exp[512];

__attribute__((constructor)) static void gf_tables_init(void)
{
	uint8_t x = 1;

	for (unsigned i = 0; i < 255; i++) {
		gf_exp[i] = gf_exp[i + 255] = x;
		gf_log[x] = (uint8_t)i;
		x = gf_mul(x, 2);
	}
}

static inline uint8_t gf_mul_fast(uint8_t a, uint8_t b)
{
	return a && b ? gf_exp[gf_log[a] + gf_log[b]] : 0;
}

/* inv = a^-1 for the n x n matrix a (destroyed), by Gauss-Jordan with the
 * log tables (ISA-L's gf_invert_matrix calls gf_mul per product). 0, or
 * -1 if a is singular. */
static int gf_invert(uint8_t *a, uint8_t *inv, unsigned n)
{
	memset(inv, 0, (size_t)n * n);
	for (unsigned i = 0; i < n; i++)
		inv[i * n + i] = 1;
	for (unsigned c = 0; c < n; c++) {
		unsigned p = c;

		while (p < n && !a[p * n + c])
			p++;
		if (p == n)
			return -1;
		if (p != c) {
			for (unsigned j = 0; j < n; j++) {
				uint8_t t = a[c * n + j];

				a[c * n + j] = a[p * n + j];
				a[p * n + j] = t;
				t = inv[c * n + j];
				inv[c * n + j] = inv[p * n + j];
				inv[p * n + j] = t;
			}
		}
		uint8_t piv = gf_exp[255 - gf_log[a[c * n + c]]];   /* 1 / a[c][c] */

		for (unsigned j = 0; j < n; j++) {
			a[c * n + j] = gf_mul_fast(a[c * n + j], piv);
			inv[c * n + j] = gf_mul_fast(inv[c * n + j], piv);
		}
		for (unsigned r = 0; r < n; r++) {
			uint8_t f = a[r * n + c];

			if (r == c || !f)
				continue;
			for (unsigned j = 0; j < n; j++) {
				a[r * n + j] ^= gf_mul_fast(f, a[c * n + j]);
				inv[r * n + j] ^= gf_mul_fast(f, inv[c * n + j]);
			}
		}
	}
	return 0;
}

/* Two 64-bit words: SSE2 on x86-64, NEON on arm64, a pair of words elsewhere. */
typedef uint64_t ec_vec __attribute__((vector_size(16)));

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

int ec_code_init(struct ec_code *c, enum ec_kind kind, unsigned k, unsigned m)
{
	memset(c, 0, sizeof(*c));
	if ((kind != EC_KIND_RS && kind != EC_KIND_XOR) || k < 1 || k > EC_MAX_K || m < 1 ||
	    m > EC_MAX_M || k + m > EC_MAX_N)
		return -EINVAL;
	c->kind = kind;
	c->k = k;
	c->m = m;
	if (kind == EC_KIND_XOR)
		return 0;

	size_t n = k + m;
	size_t sz_mat = round64(n * k), sz_tbl = round64(32 * (size_t)k * m);
	size_t sz_work = round64(2 * (size_t)m * m + (size_t)m * k);
	uint8_t *mem = aligned_alloc(64, sz_tbl * (1 + EC_DEC_WAYS) + sz_mat + sz_work);

	if (!mem) {
		memset(c, 0, sizeof(*c));
		return -ENOMEM;
	}
	c->g_tbls = mem;
	c->dec_tbls = mem + sz_tbl;
	c->encode_matrix = mem + (1 + EC_DEC_WAYS) * sz_tbl;
	c->dec_work = c->encode_matrix + sz_mat;
	gf_gen_cauchy1_matrix(c->encode_matrix, (int)n, (int)k);
	ec_init_tables((int)k, (int)m, c->encode_matrix + (size_t)k * k, c->g_tbls);
	return 0;
}

void ec_code_fini(struct ec_code *c)
{
	free(c->g_tbls);   /* the start of the one allocation */
	memset(c, 0, sizeof(*c));
}

/* v[n] = XOR of the n >= 1 sources v[0..n-1] (the array has n+1 entries,
 * as xor_gen takes it). ISA-L's xor_gen where it fits (two or more sources,
 * every buffer 32-byte aligned as it asks); else 64 bytes at a time in four
 * 16-byte vectors (memcpy loads: any alignment), then words, then bytes. */
static void xor_sources(size_t len, void **v, unsigned n)
{
	uint8_t *dst = v[n];
	uintptr_t align = (uintptr_t)dst;

	if (n == 1) {
		memcpy(dst, v[0], len);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		align |= (uintptr_t)v[i];
	if (!(align & 31)) {
		int rc = xor_gen((int)n + 1, (int)len, v);

		avx_clean();
		if (rc == 0)
			return;
	}

	const uint8_t *const *src = (const uint8_t *const *)v;
	size_t off = 0;

	for (; off + 64 <= len; off += 64) {
		ec_vec a0, a1, a2, a3, t0, t1, t2, t3;

		memcpy(&a0, src[0] + off, 16);
		memcpy(&a1, src[0] + off + 16, 16);
		memcpy(&a2, src[0] + off + 32, 16);
		memcpy(&a3, src[0] + off + 48, 16);
		for (unsigned i = 1; i < n; i++) {
			memcpy(&t0, src[i] + off, 16);
			memcpy(&t1, src[i] + off + 16, 16);
			memcpy(&t2, src[i] + off + 32, 16);
			memcpy(&t3, src[i] + off + 48, 16);
			a0 ^= t0;
			a1 ^= t1;
			a2 ^= t2;
			a3 ^= t3;
		}
		memcpy(dst + off, &a0, 16);
		memcpy(dst + off + 16, &a1, 16);
		memcpy(dst + off + 32, &a2, 16);
		memcpy(dst + off + 48, &a3, 16);
	}
	for (; off + 8 <= len; off += 8) {
		uint64_t w, t;

		memcpy(&w, src[0] + off, 8);
		for (unsigned i = 1; i < n; i++) {
			memcpy(&t, src[i] + off, 8);
			w ^= t;
		}
		memcpy(dst + off, &w, 8);
	}
	for (; off < len; off++) {
		uint8_t b = src[0][off];

		for (unsigned i = 1; i < n; i++)
			b ^= src[i][off];
		dst[off] = b;
	}
}

unsigned ec_parity_for(const struct ec_code *c, unsigned kk)
{
	unsigned np = (kk * c->m + c->k - 1) / c->k;

	return np < 1 ? 1 : np > c->m ? c->m : np;
}

void ec_encode(const struct ec_code *c, size_t len, uint8_t *const *data, uint8_t *const *parity,
	       unsigned np)
{
	assert(len <= INT_MAX);
	assert(np >= 1 && np <= c->m);
	if (c->kind == EC_KIND_RS) {
		/* g_tbls holds 32*k bytes per parity row: the first np rows are a prefix */
		ec_encode_data((int)len, (int)c->k, (int)np, c->g_tbls, (unsigned char **)data,
			       (unsigned char **)parity);
		avx_clean();
		return;
	}
	for (unsigned g = 0; g < np; g++) {
		void *v[EC_MAX_K + 1];
		unsigned n = 0;

		for (unsigned j = g; j < c->k; j += np)
			v[n++] = data[j];
		v[n] = parity[g];
		if (n)
			xor_sources(len, v, n);
		else
			memset(parity[g], 0, len);   /* g >= k: an empty group */
	}
}

bool ec_can_decode(const struct ec_code *c, const uint8_t *present, unsigned np)
{
	unsigned k = c->k;

	if (np < 1 || np > c->m)
		return false;
	if (c->kind == EC_KIND_RS) {
		unsigned have = 0;

		for (unsigned i = 0; i < k + np; i++)
			have += present[i] != 0;
		return have >= k;
	}
	/* XOR: a group rebuilds one missing data chunk, from its parity. */
	for (unsigned g = 0; g < np && g < k; g++) {
		unsigned lost = 0;

		for (unsigned j = g; j < k; j += np)
			lost += !present[j];
		if (lost > 1 || (lost == 1 && !present[k + g]))
			return false;
	}
	return true;
}

static int xor_decode(const struct ec_code *c, size_t len, uint8_t *const *chunks,
		      const uint8_t *present, unsigned np)
{
	unsigned k = c->k;
	int rebuilt = 0;

	for (unsigned g = 0; g < np && g < k; g++) {
		void *v[EC_MAX_K + 1];
		unsigned n = 0, lost = k;

		for (unsigned j = g; j < k; j += np) {
			if (present[j])
				v[n++] = chunks[j];
			else
				lost = j;
		}
		if (lost == k)
			continue;
		v[n++] = chunks[k + g];
		v[n] = chunks[lost];
		xor_sources(len, v, n);
		rebuilt++;
	}
	return rebuilt;
}

/* The way holding key, or NULL. */
static struct ec_dec_way *way_find(struct ec_code *c, const uint64_t *key)
{
	for (unsigned w = 0; w < EC_DEC_WAYS; w++) {
		struct ec_dec_way *d = &c->dec_way[w];

		if (d->nlost && d->key[0] == key[0] && d->key[1] == key[1])
			return d;
	}
	return NULL;
}

/* An empty way, else the least recently used one. */
static struct ec_dec_way *way_victim(struct ec_code *c)
{
	struct ec_dec_way *v = &c->dec_way[0];

	for (unsigned w = 0; w < EC_DEC_WAYS; w++) {
		struct ec_dec_way *d = &c->dec_way[w];

		if (!d->nlost)
			return d;
		if (d->used < v->used)
			v = d;
	}
	return v;
}

static uint8_t *way_tbls(const struct ec_code *c, const struct ec_dec_way *d)
{
	return c->dec_tbls + (size_t)(d - c->dec_way) * round64(32 * (size_t)c->k * c->m);
}

/* Builds way d's decode tables (a cache miss) for the e data chunks in
 * lost[], rebuilt from the present data and the parity rows par[0..e-1].
 * With C the parity rows of the encode matrix, P the present data and L
 * the lost: C[par][L] d_L = p_par + C[par][P] d_P (GF(2^8): minus is plus),
 * so with S = C[par][L] (e x e, invertible: a square submatrix of a Cauchy
 * matrix) d_L = S^-1 p_par + (S^-1 C[par][P]) d_P. Only S is inverted:
 * e^3 + e^2 (k - e) multiplications, against k^3 for the whole matrix.
 * Sources: the present data ascending, then the parity. 0, or -EIO if S
 * is singular. */
static int rs_prepare(struct ec_code *c, struct ec_dec_way *d, const uint8_t *lost, unsigned e,
		      const uint8_t *par)
{
	unsigned k = c->k, nsrc = 0;
	uint8_t *sm = c->dec_work, *inv = sm + (size_t)e * e, *rows = inv + (size_t)e * e;
	const uint8_t *cm = c->encode_matrix + (size_t)k * k;   /* parity row r at cm + r*k */

	d->nlost = 0;   /* invalid until the tables are built */
	for (unsigned a = 0; a < e; a++)
		for (unsigned b = 0; b < e; b++)
			sm[a * e + b] = cm[(size_t)par[a] * k + lost[b]];
	if (gf_invert(sm, inv, e) != 0)
		return -EIO;
	for (unsigned j = 0, l = 0; j < k; j++) {
		if (l < e && lost[l] == j) {
			l++;
			continue;
		}
		/* column of present data chunk j: (S^-1 C[par][j]) */
		for (unsigned a = 0; a < e; a++) {
			uint8_t v = 0;

			for (unsigned b = 0; b < e; b++)
				v ^= gf_mul_fast(inv[a * e + b], cm[(size_t)par[b] * k + j]);
			rows[(size_t)a * k + nsrc] = v;
		}
		d->src[nsrc++] = (uint8_t)j;
	}
	for (unsigned b = 0; b < e; b++) {
		for (unsigned a = 0; a < e; a++)
			rows[(size_t)a * k + nsrc] = inv[a * e + b];
		d->src[nsrc++] = (uint8_t)(k + par[b]);
	}
	memcpy(d->lost, lost, e);
	ec_init_tables((int)k, (int)e, rows, way_tbls(c, d));
	d->nlost = e;
	return 0;
}

int ec_decode(struct ec_code *c, size_t len, uint8_t *const *chunks, const uint8_t *present,
	      unsigned np)
{
	unsigned k = c->k, nlost = 0, npar = 0;
	uint8_t lost[EC_MAX_M], par[EC_MAX_M];
	uint64_t key[2] = { 0, 0 };
	struct ec_dec_way *d;

	if (len > INT_MAX || np < 1 || np > c->m)
		return -EINVAL;
	if (!ec_can_decode(c, present, np))
		return -EAGAIN;
	for (unsigned j = 0; j < k; j++)
		if (!present[j])
			lost[nlost++] = (uint8_t)j;
	if (!nlost)
		return 0;
	if (c->kind == EC_KIND_XOR)
		return xor_decode(c, len, chunks, present, np);

	/* the first nlost parity chunks present decode: the key is what was
	 * lost and what decodes it, so a lost parity past them changes nothing */
	for (unsigned r = 0; r < np && npar < nlost; r++)
		if (present[k + r])
			par[npar++] = (uint8_t)r;
	for (unsigned a = 0; a < nlost; a++) {
		key[lost[a] / 64] |= (uint64_t)1 << (lost[a] % 64);
		key[(k + par[a]) / 64] |= (uint64_t)1 << ((k + par[a]) % 64);
	}
	d = way_find(c, key);
	if (d) {
		c->dec_hits++;
	} else {
		int rc;

		d = way_victim(c);
		rc = rs_prepare(c, d, lost, nlost, par);
		if (rc)
			return rc;
		d->key[0] = key[0];
		d->key[1] = key[1];
		c->dec_misses++;
	}
	d->used = ++c->dec_clock;

	uint8_t *src[EC_MAX_K], *dst[EC_MAX_M];

	for (unsigned i = 0; i < k; i++)
		src[i] = chunks[d->src[i]];
	for (unsigned r = 0; r < nlost; r++)
		dst[r] = chunks[d->lost[r]];
	ec_encode_data((int)len, (int)k, (int)nlost, way_tbls(c, d), src, dst);
	avx_clean();
	return (int)nlost;
}
