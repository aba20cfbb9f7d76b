/* placeholder: replaced by the loop backend work */
#include "dataplane/port.h"
const struct port_ops port_loop_ops;
