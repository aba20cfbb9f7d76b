/* SPDX-License-Identifier: MIT */
/* What sr_uc_send (host, uroce) and uc_sink (rxe guest, libibverbs) agree
 * on: the TCP exchange, the data pattern, and the sr immediate's layout.
 * and the records' I/O. Plain C with no uroce or verbs headers, so that uc_sink.c builds on its
 * own against the host's libibverbs for the guest.
 *
 * Exchange, over TCP to the guest (port SRUC_TCP_PORT), records of
 * SRUC_REC_LEN bytes, text, NUL padded:
 *   host  -> guest  "H QPN PSN GID"                      the sr QP's address
 *   guest -> host   "G QPN PSN GID RKEY WVA WLEN IVA ILEN SEED MTU MSG"
 *                                                        once its UC QP is in RTR
 *   host  -> guest  "D TX RETX ST1 ST2"                  both WRs completed
 *   guest -> host   "V PASS ..." or "V FAIL ..."         its verdict
 * QPN, PSN, RKEY in hex, GID as 32 hex digits, the rest decimal except the
 * two addresses (hex). MSG is the sr message number the guest expects in the
 * immediates of the WRITE_WITH_IMM's data packets (0: the QP's first slot
 * message).
 */
#ifndef UROCE_TESTS_INTEROP_SR_UC_COMMON_H
#define UROCE_TESTS_INTEROP_SR_UC_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "interop_io.h"

#define SRUC_TCP_PORT 18517
#define SRUC_REC_LEN 192

/* Region numbers in the pattern: the plain RDMA WRITE, the WRITE_WITH_IMM. */
enum { SRUC_REGION_WRITE = 1, SRUC_REGION_IMM = 2 };

/* Byte at offset off of a region: a different value for (nearly) every
 * offset, so a packet placed at the wrong address, twice, or not at all
 * shows. */
static inline uint8_t sruc_byte(uint32_t seed, unsigned region, uint64_t off)
{
	uint32_t x = seed * 0x9e3779b1u ^ (uint32_t)region << 28 ^ (uint32_t)off ^ (uint32_t)(off >> 32);

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	x *= 0x297a2d39u;
	x ^= x >> 15;
	return (uint8_t)x;
}

/* The sr immediate (transport/rel/sr/sr_wire.h, kept in step by hand: this file
 * must build without uroce): | msg 12 | kind 3 | idx 17 |, host order, sent
 * big-endian. */
#define SRUC_IMM_MSG(imm) ((imm) >> 20)
#define SRUC_IMM_KIND(imm) (((imm) >> 17) & 7u)
#define SRUC_IMM_IDX(imm) ((imm) & 0x1ffffu)
enum { SRUC_KIND_DATA = 0, SRUC_KIND_LAST = 1, SRUC_KIND_LAST_DESC = 2 };

/* One record within timeout_ms, NUL terminated: 0 or -errno. */
static inline int sruc_read_rec(int fd, char rec[SRUC_REC_LEN], int timeout_ms)
{
	int rc = io_read_full(fd, rec, SRUC_REC_LEN, timeout_ms);

	if (!rc)
		rec[SRUC_REC_LEN - 1] = 0;
	return rc;
}

static inline __attribute__((format(printf, 2, 3))) int sruc_write_rec(int fd, const char *fmt, ...)
{
	char rec[SRUC_REC_LEN];
	va_list ap;

	memset(rec, 0, sizeof(rec));
	va_start(ap, fmt);
	vsnprintf(rec, sizeof(rec), fmt, ap);
	va_end(ap);
	return write(fd, rec, sizeof(rec)) == (ssize_t)sizeof(rec) ? 0 : -EIO;
}

#endif
