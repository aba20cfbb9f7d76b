/* placeholder: replaced by the wire work */
#include "transport/wire.h"
const struct roce_opcode_table_placeholder { int x; } roce_opcode_placeholder;
const struct roce_opcode_info roce_opcode_table[256];
