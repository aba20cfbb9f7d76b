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
	size_t sz_work = round64(2 * (size_t)k * k + (size_t)m * k);
	uint8_t *mem = aligned_alloc(64, sz_tbl * 2 + sz_mat + sz_work);

	if (!mem) {
		memset(c, 0, sizeof(*c));
		return -ENOMEM;
	}
	c->g_tbls = mem;
	c->dec_tbls = mem + sz_tbl;
	c->encode_matrix = mem + 2 * sz_tbl;
	c->dec_work = mem + 2 * sz_tbl + sz_mat;
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

void ec_encode(const struct ec_code *c, size_t len, uint8_t *const *data, uint8_t *const *parity)
{
	assert(len <= INT_MAX);
	if (c->kind == EC_KIND_RS) {
		ec_encode_data((int)len, (int)c->k, (int)c->m, c->g_tbls, (unsigned char **)data,
			       (unsigned char **)parity);
		avx_clean();
		return;
	}
	for (unsigned g = 0; g < c->m; g++) {
		void *v[EC_MAX_K + 1];
		unsigned n = 0;

		for (unsigned j = g; j < c->k; j += c->m)
			v[n++] = data[j];
		v[n] = parity[g];
		if (n)
			xor_sources(len, v, n);
		else
			memset(parity[g], 0, len);   /* g >= k: an empty group */
	}
}

bool ec_can_decode(const struct ec_code *c, const uint8_t *present)
{
	unsigned k = c->k, m = c->m;

	if (c->kind == EC_KIND_RS) {
		unsigned have = 0;

		for (unsigned i = 0; i < k + m; i++)
			have += present[i] != 0;
		return have >= k;
	}
	/* XOR: a group rebuilds one missing data chunk, from its parity. */
	for (unsigned g = 0; g < m && g < k; g++) {
		unsigned lost = 0;

		for (unsigned j = g; j < k; j += m)
			lost += !present[j];
		if (lost > 1 || (lost == 1 && !present[k + g]))
			return false;
	}
	return true;
}

static int xor_decode(const struct ec_code *c, size_t len, uint8_t *const *chunks,
		      const uint8_t *present)
{
	unsigned k = c->k, m = c->m;
	int rebuilt = 0;

	for (unsigned g = 0; g < m && g < k; g++) {
		void *v[EC_MAX_K + 1];
		unsigned n = 0, lost = k;

		for (unsigned j = g; j < k; j += m) {
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

/* Builds the decode tables for the pattern in present (called on a cache
 * miss): the first k present chunks are the sources, their rows of the
 * encode matrix form B (source = B x data), and the rows of B's inverse for
 * the missing data chunks rebuild them. 0, or -EIO if B is singular. */
static int rs_prepare(struct ec_code *c, const uint8_t *present)
{
	unsigned k = c->k, m = c->m, nsrc = 0, nlost = 0;
	uint8_t *b = c->dec_work, *inv = b + (size_t)k * k, *rows = inv + (size_t)k * k;

	for (unsigned i = 0; i < k + m && nsrc < k; i++) {
		if (!present[i])
			continue;
		memcpy(b + (size_t)nsrc * k, c->encode_matrix + (size_t)i * k, k);
		c->dec_src[nsrc++] = (uint8_t)i;
	}
	for (unsigned j = 0; j < k; j++)
		if (!present[j])
			c->dec_lost[nlost++] = (uint8_t)j;
	c->dec_nlost = 0;   /* invalid until the tables are built */
	if (gf_invert_matrix(b, inv, (int)k) != 0)
		return -EIO;
	for (unsigned r = 0; r < nlost; r++)
		memcpy(rows + (size_t)r * k, inv + (size_t)c->dec_lost[r] * k, k);
	ec_init_tables((int)k, (int)nlost, rows, c->dec_tbls);
	c->dec_nlost = nlost;
	return 0;
}

int ec_decode(struct ec_code *c, size_t len, uint8_t *const *chunks, const uint8_t *present)
{
	unsigned k = c->k, m = c->m, nlost = 0;
	uint64_t key[2] = { 0, 0 };

	if (len > INT_MAX)
		return -EINVAL;
	if (!ec_can_decode(c, present))
		return -EAGAIN;
	for (unsigned j = 0; j < k; j++)
		nlost += !present[j];
	if (!nlost)
		return 0;
	if (c->kind == EC_KIND_XOR)
		return xor_decode(c, len, chunks, present);

	for (unsigned i = 0; i < k + m; i++)
		if (present[i])
			key[i / 64] |= (uint64_t)1 << (i % 64);
	if (c->dec_nlost && key[0] == c->dec_key[0] && key[1] == c->dec_key[1]) {
		c->dec_hits++;
	} else {
		int rc = rs_prepare(c, present);

		if (rc)
			return rc;
		c->dec_key[0] = key[0];
		c->dec_key[1] = key[1];
		c->dec_misses++;
	}

	uint8_t *src[EC_MAX_K], *dst[EC_MAX_M];

	for (unsigned i = 0; i < k; i++)
		src[i] = chunks[c->dec_src[i]];
	for (unsigned r = 0; r < nlost; r++)
		dst[r] = chunks[c->dec_lost[r]];
	ec_encode_data((int)len, (int)k, (int)nlost, c->dec_tbls, src, dst);
	avx_clean();
	return (int)nlost;
}
