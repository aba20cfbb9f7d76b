/* SPDX-License-Identifier: MIT */
/* The reliability modes in the tools' TCP exchange, both ends checked to
 * agree, with the rc format left byte for byte as perftest's and
 * rdma-core's (uroce-perf talks to ib_*_bw/lat, uroce-pingpong to
 * ibv_rc_pingpong).
 *
 * Each tool exchanges a standard message of a fixed length S (pingpong:
 * the 52-byte "LID:QPN:PSN:GID"; perf: the first 108-byte key message).
 * An rc end sends exactly that. An sr/ec end sends, instead, a prefix of
 * REL_PREFIX_LEN (P = 52) bytes and then the standard message: P + S bytes.
 * The prefix is text, padded with spaces to 51 bytes and ended by '\n':
 *
 *   "UROCE-REL3 <reliability> <ordering> <ec code> <ec k> <ec m> <token> <keyed> <ctrl>   \n"
 *   e.g. "UROCE-REL3 sr ordered rs 32 8 5f03a2c1 - 3e8f21" + 4 spaces + "\n"
 *
 * (k and m as the QP uses them: the defaults 32 and 8 when not given;
 * token: the sender's QP's uroce_qp_token(), 8 hex digits, which the peer
 * gives as attr.dest_token; keyed: 'k' when the QP is keyed by immediate
 * (rel.imm_keyed), else '-', and both ends must agree; ctrl: its
 * uroce_qp_ctrl_num(), 6 hex digits, the peer's attr.dest_ctrl_qpn (a QP
 * on a verbs port has the NIC's numbers). uroce-perf's QPs carry their
 * tokens in the key message's srqn field instead, one per QP, and send
 * ctrl 0.)
 * Every end first reads S bytes (P <= S). If they start with "UROCE-REL3 "
 * the peer is sr/ec and P more bytes follow: the end reads them and
 * rebuilds the standard message from the S - P bytes after the prefix and
 * those P. An rc end that sees the prefix fails ("peer uses reliability
 * sr, this end rc: ..."); an sr/ec end that does not see it fails ("peer
 * uses reliability rc (or is not uroce), this end sr: ..."); two sr/ec ends
 * compare reliability, ordering and, for ec, the code, k and m, and fail
 * naming both values of each difference.
 */
#ifndef UROCE_APPS_REL_EXCHANGE_H
#define UROCE_APPS_REL_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include <uroce/uroce.h>

#include "tcp_exchange.h"

#define REL_MAGIC "UROCE-REL3" /* 2: the token; 3: keyed and the control QPN */
#define REL_PREFIX_LEN 52 /* P: no longer than the shortest standard message (pingpong's 52) */

/* rel_exchange_recv's answer when the modes differ (said on stderr). */
#define REL_EXCHANGE_MISMATCH 1

/* Send this end's standard message MSG of LEN bytes; an sr/ec end puts the
 * prefix of MINE in front. 0 or negative errno (tcp_exchange_send's). */
int rel_exchange_send(struct tcp_exchange *x, const struct uroce_rel_attr *mine, uint32_t token, uint32_t ctrl,
		      const void *msg, size_t len);

/* Read the peer's standard message into MSG (LEN bytes, LEN >= P) and check
 * its modes against MINE. 0: they agree (MSG holds the standard message);
 * REL_EXCHANGE_MISMATCH: they differ, or the prefix is unreadable (a line
 * on stderr says how); negative errno: the read failed (tcp_exchange_recv's
 * message, and a hint when an sr/ec end's peer closed on it). *token: the
 * peer's token and control QPN from its prefix (untouched when it sent
 * none). */
int rel_exchange_recv(struct tcp_exchange *x, const struct uroce_rel_attr *mine, uint32_t *token, uint32_t *ctrl,
		      void *msg, size_t len);

/* The prefix of MINE, exactly REL_PREFIX_LEN bytes (no NUL). */
void rel_prefix_format(const struct uroce_rel_attr *mine, uint32_t token, uint32_t ctrl, char out[REL_PREFIX_LEN]);
/* Parse a prefix into the reliability, ordering, ec and imm_keyed fields
 * of *out (k and m as sent: never 0). 0 or -EINVAL. */
int rel_prefix_parse(const char in[REL_PREFIX_LEN], struct uroce_rel_attr *out, uint32_t *token, uint32_t *ctrl);

#endif
