/* uroce: a pure-userspace RoCEv2 transport. The one public C API.
 *
 * This header grows with the project: today it carries the version, the
 * drop-reason codes every layer counts by, and the per-port statistics.
 * The verbs-shaped API (contexts, MRs, CQs, QPs) is added by the RC/UC/UD
 * work and keeps these names.
 */
#ifndef UROCE_UROCE_H
#define UROCE_UROCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Major, minor and patch version of this header. */
#define UROCE_VERSION_MAJOR 0
#define UROCE_VERSION_MINOR 1
#define UROCE_VERSION_PATCH 0

/**
 * Why a received frame was not delivered. Every drop in uroce is counted
 * under exactly one of these. Values are stable; new ones are appended
 * before UROCE_DROP__COUNT.
 */
enum uroce_drop_reason {
	UROCE_DROP_NONE = 0,        /**< not a drop: delivered */
	UROCE_DROP_SHORT_FRAME,     /**< frame ends before a header it needs */
	UROCE_DROP_NOT_IP,          /**< EtherType is not IPv4/IPv6 (after 802.1Q) */
	UROCE_DROP_NOT_UDP,         /**< IP protocol / next header is not UDP */
	UROCE_DROP_BAD_IP_HEADER,   /**< IP version, IHL, options or fragment bits */
	UROCE_DROP_BAD_IP_CSUM,     /**< IPv4 header checksum wrong */
	UROCE_DROP_BAD_LENGTH,      /**< IP or UDP length disagrees with the frame */
	UROCE_DROP_WRONG_PORT,      /**< UDP destination port is not RoCEv2's */
	UROCE_DROP_BAD_BTH,         /**< BTH transport version not 0 */
	UROCE_DROP_UNKNOWN_OPCODE,  /**< opcode has no row in the opcode table */
	UROCE_DROP_BAD_PAD,         /**< pad count impossible for the opcode/length */
	UROCE_DROP_BAD_ICRC,        /**< invariant CRC mismatch */
	UROCE_DROP_NO_BUFFER,       /**< no frame/ring space to take the packet */
	UROCE_DROP_TX_RING_FULL,    /**< transmit ring full, frame not sent */
	UROCE_DROP__COUNT
};

/** Short, stable, lower-case name of a drop reason ("bad_icrc"), or "unknown". */
const char *uroce_drop_reason_name(enum uroce_drop_reason reason);

/** Counters of one port. Bytes are whole Ethernet frames without FCS. */
struct uroce_port_stats {
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t tx_packets;
	uint64_t tx_bytes;
	uint64_t drops[UROCE_DROP__COUNT]; /**< indexed by enum uroce_drop_reason */
};

/** Text for a negative errno returned by any uroce call. */
const char *uroce_strerror(int err);

/** Version string of the library, "MAJOR.MINOR.PATCH". */
const char *uroce_version(void);

#ifdef __cplusplus
}
#endif
#endif /* UROCE_UROCE_H */
