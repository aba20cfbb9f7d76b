/* SPDX-License-Identifier: MIT */
/* Library-wide names: version, drop-reason and completion-status names,
 * error text (uroce_last_error and the uroce_fail that sets it). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <uroce/uroce.h>

#include "uroce_config.h"
#include "dataplane/errbuf.h"
#include "transport/core/qp_internal.h"

static const char *const drop_reason_names[UROCE_DROP__COUNT] = {
	[UROCE_DROP_NONE] = "none",
	[UROCE_DROP_SHORT_FRAME] = "short_frame",
	[UROCE_DROP_NOT_IP] = "not_ip",
	[UROCE_DROP_NOT_UDP] = "not_udp",
	[UROCE_DROP_BAD_IP_HEADER] = "bad_ip_header",
	[UROCE_DROP_BAD_IP_CSUM] = "bad_ip_csum",
	[UROCE_DROP_BAD_LENGTH] = "bad_length",
	[UROCE_DROP_WRONG_PORT] = "wrong_port",
	[UROCE_DROP_BAD_BTH] = "bad_bth",
	[UROCE_DROP_UNKNOWN_OPCODE] = "unknown_opcode",
	[UROCE_DROP_BAD_PAD] = "bad_pad",
	[UROCE_DROP_BAD_ICRC] = "bad_icrc",
	[UROCE_DROP_NO_BUFFER] = "no_buffer",
	[UROCE_DROP_TX_RING_FULL] = "tx_ring_full",
	[UROCE_DROP_NO_QP] = "no_qp",
	[UROCE_DROP_QP_STATE] = "qp_state",
	[UROCE_DROP_BAD_OPCODE] = "bad_opcode",
	[UROCE_DROP_PSN_OUT_OF_WINDOW] = "psn_out_of_window",
	[UROCE_DROP_DUPLICATE] = "duplicate",
	[UROCE_DROP_BAD_RKEY] = "bad_rkey",
	[UROCE_DROP_OUT_OF_BOUNDS] = "out_of_bounds",
	[UROCE_DROP_ACCESS_DENIED] = "access_denied",
	[UROCE_DROP_BAD_QKEY] = "bad_qkey",
	[UROCE_DROP_NO_RECV_BUFFER] = "no_recv_buffer",
	[UROCE_DROP_BAD_LENGTH_MSG] = "bad_msg_length",
	[UROCE_DROP_UC_GAP] = "uc_gap",
	[UROCE_DROP_BAD_SRC_ADDR] = "bad_src_addr",
	[UROCE_DROP_BAD_DST_ADDR] = "bad_dst_addr",
	[UROCE_DROP_BAD_PKEY] = "bad_pkey",
	[UROCE_DROP_STALE_RESPONSE] = "stale_response",
	[UROCE_DROP_RD_ATOMIC_LIMIT] = "rd_atomic_limit",
	[UROCE_DROP_MISALIGNED] = "misaligned",
	[UROCE_DROP_STALE_MSG] = "stale_msg",
	[UROCE_DROP_BAD_CTRL] = "bad_ctrl",
	[UROCE_DROP_RKEY_REVOKED] = "rkey_revoked",
	[UROCE_DROP_LATE] = "late",
	[UROCE_DROP_BAD_TOKEN] = "bad_token",
	[UROCE_DROP_CTRL_SEQ] = "ctrl_seq",
	[UROCE_DROP_CTRL_RATE] = "ctrl_rate",
	[UROCE_DROP_BAD_VOTE] = "bad_vote",
	[UROCE_DROP_TABLE_FULL] = "table_full",
	[UROCE_DROP_NO_DESC] = "no_desc",
};

const char *uroce_drop_reason_name(enum uroce_drop_reason reason)
{
	if ((unsigned)reason >= UROCE_DROP__COUNT || !drop_reason_names[reason])
		return "unknown";
	return drop_reason_names[reason];
}

const char *uroce_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}

const char *uroce_version(void)
{
	return UROCE_VERSION;
}

/* A port's message (ERRBUF_LEN) and the call's words before it, whole. */
static __thread char last_error[ERRBUF_LEN + 512];

const char *uroce_last_error(void)
{
	return last_error;
}

int uroce_fail(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return rc;
}

static const char *const wc_status_names[] = {
	"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "Work Request Flushed Error", "memory management operation error",
	"bad response error", "local access error", "remote invalid request error", "remote access error",
	"remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
	"local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
	"invalid EE context state", "fatal error", "response timeout error", "general error",
};

const char *uroce_wc_status_str(enum uroce_wc_status status)
{
	if ((unsigned)status >= sizeof(wc_status_names) / sizeof(wc_status_names[0]))
		return "unknown";
	return wc_status_names[status];
}

uint32_t uroce_mtu_bytes(enum uroce_mtu mtu)
{
	if (mtu < UROCE_MTU_256 || mtu > UROCE_MTU_4096)
		return 0;
	return 128u << mtu;
}
