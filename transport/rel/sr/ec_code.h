/* SPDX-License-Identifier: MIT */
/* Erasure codes over the chunks of one message: k data chunks and m parity
 * chunks of the same length, for a transport that rebuilds lost packets
 * instead of retransmitting them.
 *
 * Why each choice (one line each):
 * - RS is ISA-L's ec_encode_data: its SIMD GF(2^8) kernels are already linked in (the ICRC).
 * - Cauchy matrix (gf_gen_cauchy1_matrix): every k x k submatrix inverts, any k chunks decode.
 * - XOR is SDR-RDMA's code: parity i = XOR of data j with j % m == i, one loss per group.
 * - XOR runs ISA-L's xor_gen on 32-byte aligned buffers (2x our SSE2 loop), the loop elsewhere.
 * - Encode tables are built once at init: ec_init_tables(32,8) costs ~40% of a 32 x 1 KiB encode.
 * - The last pattern's decode tables are cached: a miss inverts k x k, 140-230 us at k=32.
 * - Decode rebuilds data chunks only: a lost parity chunk is of no use to the receiver.
 * - Decode scratch lives in struct ec_code: no allocation on the encode or decode path.
 * - A vzeroupper follows each ISA-L call: its AVX2 kernels leave YMM dirty, slowing SSE code 3x.
 *
 * Not thread-safe: ec_decode writes the cache in struct ec_code; use one
 * struct per thread (ec_encode and ec_can_decode only read it).
 * Chunk buffers may have any alignment (32-byte aligned ones take ISA-L's
 * xor_gen in the XOR code); len is at most INT_MAX (ISA-L takes an int).
 * Source and rebuilt buffers must not overlap. */
#ifndef UROCE_TRANSPORT_EC_CODE_H
#define UROCE_TRANSPORT_EC_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EC_MAX_K 64u
#define EC_MAX_M 32u
#define EC_MAX_N 96u   /* k + m */

enum ec_kind { EC_KIND_RS = 0, EC_KIND_XOR = 1 };

struct ec_code {
	enum ec_kind kind;
	unsigned k, m;
	/* RS only (NULL for XOR), one allocation made by ec_code_init: */
	uint8_t *encode_matrix;  /* (k+m) x k, identity on top of Cauchy rows */
	uint8_t *g_tbls;         /* 32*k*m: ec_init_tables of the parity rows */
	uint8_t *dec_tbls;       /* 32*k*m: tables of the cached decode rows */
	uint8_t *dec_work;       /* 2*k*k + m*k: matrix, inverse, decode rows */
	/* The erasure pattern dec_tbls was built for: present[] as a bitmap
	 * (bit i of word i/64), valid when dec_nlost != 0. */
	uint64_t dec_key[2];
	unsigned dec_nlost;                /* missing data chunks in the pattern */
	uint8_t dec_src[EC_MAX_K];         /* the k chunks decoded from */
	uint8_t dec_lost[EC_MAX_M];        /* the missing data chunks, ascending */
	uint64_t dec_hits, dec_misses;     /* decode-table cache, for tests */
};

/* 0, or -EINVAL for a bad kind or k, m out of range (1 <= k <= 64,
 * 1 <= m <= 32, k + m <= 96) or -ENOMEM; on error nothing is left allocated
 * and ec_code_fini is harmless. */
int ec_code_init(struct ec_code *c, enum ec_kind kind, unsigned k, unsigned m);
/* Frees what init allocated; safe to call twice. */
void ec_code_fini(struct ec_code *c);

/* Writes the m parity chunks of the k data chunks, each len bytes
 * (len <= INT_MAX: asserted). */
void ec_encode(const struct ec_code *c, size_t len, uint8_t *const *data, uint8_t *const *parity);

/* Whether ec_decode can rebuild every missing data chunk. present has k+m
 * flags (nonzero = present): data 0..k-1, then parity 0..m-1. */
bool ec_can_decode(const struct ec_code *c, const uint8_t *present);

/* Rebuilds every missing data chunk in place (into the buffer chunks[j]
 * points at) from the present ones; chunks has k+m pointers, data then
 * parity, and a missing parity chunk's pointer is not used. Returns the
 * number of data chunks rebuilt (0 when only parity is missing), -EAGAIN
 * when ec_can_decode is false, -EINVAL when len > INT_MAX (nothing written
 * in either case), or -EIO if the decode matrix is singular (cannot happen
 * with the Cauchy matrix). */
int ec_decode(struct ec_code *c, size_t len, uint8_t *const *chunks, const uint8_t *present);

#endif
