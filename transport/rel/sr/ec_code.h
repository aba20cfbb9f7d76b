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
 * - Decode tables are cached per pattern (an LRU of EC_DEC_WAYS): a loss pattern repeats.
 * - A miss inverts only the lost part: e x e for e lost (the present data folded in), not k x k.
 * - A short last submessage may carry fewer parity chunks (np < m): RS sends the first np
 *   rows, XOR groups data j by j % np; the receiver passes the same np to decode.
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
#define EC_DEC_WAYS 8u /* decode patterns cached (RS) */

enum ec_kind { EC_KIND_RS = 0, EC_KIND_XOR = 1 };

struct ec_code {
	enum ec_kind kind;
	unsigned k, m;
	/* RS only (NULL for XOR), one allocation made by ec_code_init: */
	uint8_t *encode_matrix;  /* (k+m) x k, identity on top of Cauchy rows */
	uint8_t *g_tbls;         /* 32*k*m: ec_init_tables of the parity rows */
	uint8_t *dec_tbls;       /* EC_DEC_WAYS x 32*k*m: each cache way's tables */
	uint8_t *dec_work;       /* 2*m*m + m*k: the lost part, its inverse, decode rows */
	/* Decode tables per pattern, least recently used replaced. A way's key
	 * has bit j for lost data chunk j and bit k+r for parity r decoded
	 * from (word i/64, bit i%64); valid when nlost != 0. */
	struct ec_dec_way {
		uint64_t key[2];
		uint64_t used;                 /* dec_clock at its last use */
		unsigned nlost;                /* missing data chunks in the pattern */
		uint8_t src[EC_MAX_K];         /* the k chunks decoded from */
		uint8_t lost[EC_MAX_M];        /* the missing data chunks, ascending */
	} dec_way[EC_DEC_WAYS];
	uint64_t dec_clock;
	uint64_t dec_hits, dec_misses;     /* decode-table cache, for tests and benches */
};

/* 0, or -EINVAL for a bad kind or k, m out of range (1 <= k <= 64,
 * 1 <= m <= 32, k + m <= 96) or -ENOMEM; on error nothing is left allocated
 * and ec_code_fini is harmless. */
int ec_code_init(struct ec_code *c, enum ec_kind kind, unsigned k, unsigned m);
/* Frees what init allocated; safe to call twice. */
void ec_code_fini(struct ec_code *c);

/* How many parity chunks a submessage of kk <= k data chunks (the rest
 * known zeros) carries: m scaled to its data, rounded up, at least 1. */
unsigned ec_parity_for(const struct ec_code *c, unsigned kk);

/* Writes the first np (1 <= np <= m, asserted) parity chunks of the k data
 * chunks, each len bytes (len <= INT_MAX: asserted). */
void ec_encode(const struct ec_code *c, size_t len, uint8_t *const *data, uint8_t *const *parity,
	       unsigned np);

/* Whether ec_decode can rebuild every missing data chunk of a submessage
 * encoded with np parity chunks. present has k+m flags (nonzero =
 * present): data 0..k-1, then parity 0..m-1; flags of parity np..m-1 are
 * not read. */
bool ec_can_decode(const struct ec_code *c, const uint8_t *present, unsigned np);

/* Rebuilds every missing data chunk in place (into the buffer chunks[j]
 * points at) from the present ones; chunks has k+m pointers, data then
 * parity, and a missing parity chunk's pointer is not used. Returns the
 * number of data chunks rebuilt (0 when only parity is missing), -EAGAIN
 * when ec_can_decode is false, -EINVAL when len > INT_MAX or np is not in
 * 1..m (nothing written
 * in either case), or -EIO if the decode matrix is singular (cannot happen
 * with the Cauchy matrix). */
int ec_decode(struct ec_code *c, size_t len, uint8_t *const *chunks, const uint8_t *present,
	      unsigned np);

#endif
