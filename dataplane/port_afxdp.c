/* placeholder: replaced by the afxdp backend work */
#include "dataplane/port.h"
const struct port_ops port_afxdp_ops;
