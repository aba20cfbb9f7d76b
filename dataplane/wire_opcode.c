/* SPDX-License-Identifier: MIT */
/* The BTH opcode table: one row per opcode with its name, the extension
 * headers that follow the BTH and their offsets, and whether it carries
 * payload. The parser and the builder read only this table. */
#include "dataplane/wire.h"

/*
 * Extension headers always appear in the IBTA order DETH, RETH, AtomicETH,
 * AETH, AtomicAckETH, ImmDt, IETH (RDETH is omitted with the RD opcodes),
 * so each offset follows from the mask alone. Computing them here, instead
 * of writing numbers per row, keeps rows from disagreeing with each other.
 */
#define HL(m, h, n) (((m) & ROCE_HAS(ROCE_HDR_##h)) ? (n) : 0u)
#define OFF_DETH(m) (BTH_LEN)
#define OFF_RETH(m) (OFF_DETH(m) + HL(m, DETH, DETH_LEN))
#define OFF_ATOMETH(m) (OFF_RETH(m) + HL(m, RETH, RETH_LEN))
#define OFF_AETH(m) (OFF_ATOMETH(m) + HL(m, ATOMETH, ATOMETH_LEN))
#define OFF_ATOMACKETH(m) (OFF_AETH(m) + HL(m, AETH, AETH_LEN))
#define OFF_IMMDT(m) (OFF_ATOMACKETH(m) + HL(m, ATOMACKETH, ATOMACKETH_LEN))
#define OFF_IETH(m) (OFF_IMMDT(m) + HL(m, IMMDT, IMMDT_LEN))
#define HDR_END(m) (OFF_IETH(m) + HL(m, IETH, IETH_LEN))
#define HDR_LEN(m) (HDR_END(m) + (((m) & ROCE_RSVD16) ? CNP_RSVD_LEN : 0u))
#define OFF(m, h) (((m) & ROCE_HAS(ROCE_HDR_##h)) ? OFF_##h(m) : 0u)

#define ROW(op, nm, m)                                                     \
	[op] = {                                                           \
		.name = nm,                                                \
		.mask = (m),                                               \
		.hdr_len = HDR_LEN(m),                                     \
		.offset = {                                                \
			[ROCE_HDR_RETH] = OFF(m, RETH),                    \
			[ROCE_HDR_AETH] = OFF(m, AETH),                    \
			[ROCE_HDR_IMMDT] = OFF(m, IMMDT),                  \
			[ROCE_HDR_DETH] = OFF(m, DETH),                    \
			[ROCE_HDR_IETH] = OFF(m, IETH),                    \
			[ROCE_HDR_ATOMETH] = OFF(m, ATOMETH),              \
			[ROCE_HDR_ATOMACKETH] = OFF(m, ATOMACKETH),        \
		},                                                         \
		.payload_offset = HDR_LEN(m),                              \
	}

#define RETH ROCE_HAS(ROCE_HDR_RETH)
#define AETH ROCE_HAS(ROCE_HDR_AETH)
#define IMM ROCE_HAS(ROCE_HDR_IMMDT)
#define DETH ROCE_HAS(ROCE_HDR_DETH)
#define IETH ROCE_HAS(ROCE_HDR_IETH)
#define ATOM ROCE_HAS(ROCE_HDR_ATOMETH)
#define ATOMACK ROCE_HAS(ROCE_HDR_ATOMACKETH)
#define PAY ROCE_PAYLOAD
#define REQ ROCE_REQ

/* Operations shared by RC and UC (same low 5 bits, transport in the top 3). */
#define SEND_WRITE_ROWS(tr, pfx)                                                              \
	ROW(tr | ROCE_OP_SEND_FIRST, pfx "_SEND_FIRST", PAY | REQ | ROCE_FIRST),                \
	ROW(tr | ROCE_OP_SEND_MIDDLE, pfx "_SEND_MIDDLE", PAY | REQ | ROCE_MIDDLE),             \
	ROW(tr | ROCE_OP_SEND_LAST, pfx "_SEND_LAST", PAY | REQ | ROCE_LAST),                   \
	ROW(tr | ROCE_OP_SEND_LAST_IMM, pfx "_SEND_LAST_WITH_IMMEDIATE",                        \
	    IMM | PAY | REQ | ROCE_LAST),                                                       \
	ROW(tr | ROCE_OP_SEND_ONLY, pfx "_SEND_ONLY", PAY | REQ | ROCE_ONLY),                   \
	ROW(tr | ROCE_OP_SEND_ONLY_IMM, pfx "_SEND_ONLY_WITH_IMMEDIATE",                        \
	    IMM | PAY | REQ | ROCE_ONLY),                                                       \
	ROW(tr | ROCE_OP_WRITE_FIRST, pfx "_RDMA_WRITE_FIRST", RETH | PAY | REQ | ROCE_FIRST),  \
	ROW(tr | ROCE_OP_WRITE_MIDDLE, pfx "_RDMA_WRITE_MIDDLE", PAY | REQ | ROCE_MIDDLE),      \
	ROW(tr | ROCE_OP_WRITE_LAST, pfx "_RDMA_WRITE_LAST", PAY | REQ | ROCE_LAST),            \
	ROW(tr | ROCE_OP_WRITE_LAST_IMM, pfx "_RDMA_WRITE_LAST_WITH_IMMEDIATE",                 \
	    IMM | PAY | REQ | ROCE_LAST),                                                       \
	ROW(tr | ROCE_OP_WRITE_ONLY, pfx "_RDMA_WRITE_ONLY", RETH | PAY | REQ | ROCE_ONLY),     \
	ROW(tr | ROCE_OP_WRITE_ONLY_IMM, pfx "_RDMA_WRITE_ONLY_WITH_IMMEDIATE",                 \
	    RETH | IMM | PAY | REQ | ROCE_ONLY)

const struct roce_opcode_info roce_opcode_table[256] = {
	SEND_WRITE_ROWS(ROCE_TR_RC, "RC"),
	ROW(ROCE_TR_RC | ROCE_OP_READ_REQUEST, "RC_RDMA_READ_REQUEST", RETH | REQ | ROCE_ONLY),
	ROW(ROCE_TR_RC | ROCE_OP_READ_RESP_FIRST, "RC_RDMA_READ_RESPONSE_FIRST",
	    AETH | PAY | ROCE_FIRST),
	ROW(ROCE_TR_RC | ROCE_OP_READ_RESP_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE",
	    PAY | ROCE_MIDDLE),
	ROW(ROCE_TR_RC | ROCE_OP_READ_RESP_LAST, "RC_RDMA_READ_RESPONSE_LAST",
	    AETH | PAY | ROCE_LAST),
	ROW(ROCE_TR_RC | ROCE_OP_READ_RESP_ONLY, "RC_RDMA_READ_RESPONSE_ONLY",
	    AETH | PAY | ROCE_ONLY),
	ROW(ROCE_TR_RC | ROCE_OP_ACK, "RC_ACKNOWLEDGE", AETH | ROCE_ONLY),
	ROW(ROCE_TR_RC | ROCE_OP_ATOMIC_ACK, "RC_ATOMIC_ACKNOWLEDGE", AETH | ATOMACK | ROCE_ONLY),
	ROW(ROCE_TR_RC | ROCE_OP_CMP_SWAP, "RC_COMPARE_SWAP", ATOM | REQ | ROCE_ONLY),
	ROW(ROCE_TR_RC | ROCE_OP_FETCH_ADD, "RC_FETCH_ADD", ATOM | REQ | ROCE_ONLY),
	ROW(ROCE_TR_RC | ROCE_OP_SEND_LAST_INV, "RC_SEND_LAST_WITH_INVALIDATE",
	    IETH | PAY | REQ | ROCE_LAST),
	ROW(ROCE_TR_RC | ROCE_OP_SEND_ONLY_INV, "RC_SEND_ONLY_WITH_INVALIDATE",
	    IETH | PAY | REQ | ROCE_ONLY),

	SEND_WRITE_ROWS(ROCE_TR_UC, "UC"),

	ROW(ROCE_TR_UD | ROCE_OP_SEND_ONLY, "UD_SEND_ONLY", DETH | PAY | REQ | ROCE_ONLY),
	ROW(ROCE_TR_UD | ROCE_OP_SEND_ONLY_IMM, "UD_SEND_ONLY_WITH_IMMEDIATE",
	    DETH | IMM | PAY | REQ | ROCE_ONLY),

	/* Annex A17.9.3: sent by the notification point, carries no payload
	 * but 16 reserved bytes, which the row counts as header. */
	ROW(ROCE_OP_CNP, "CNP", ROCE_RSVD16 | ROCE_ONLY),
};

/* The largest row must fit ROCE_MAX_HDR_LEN's assumption (AtomicETH). */
_Static_assert(HDR_LEN(ATOM) == BTH_LEN + ATOMETH_LEN, "AtomicETH row");
_Static_assert(HDR_LEN(AETH | ATOMACK) <= BTH_LEN + ATOMETH_LEN, "largest row");
_Static_assert(HDR_LEN(ROCE_RSVD16) <= BTH_LEN + ATOMETH_LEN, "CNP row");
