/* placeholder: replaced by the dataplane work */
#include "dataplane/port.h"
