/* placeholder: replaced by the dpdk backend work */
#include "dataplane/port.h"
const struct port_ops port_dpdk_ops;
