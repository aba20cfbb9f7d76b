/* placeholder: replaced by the wire work */
#include "transport/wire.h"
