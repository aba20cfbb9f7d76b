/* SPDX-License-Identifier: MIT */
/* Every tool's --version: "TOOL (uroce) X.Y.Z", GNU's form, which
 * help2man reads for the man pages. The version is meson's project
 * version (uroce_config.h), so uroce-impair, which does not link the
 * library, prints the same string as the others. */
#ifndef UROCE_APPS_APP_VERSION_H
#define UROCE_APPS_APP_VERSION_H

#include <stdio.h>

#include "uroce_config.h"

static inline void app_print_version(const char *tool)
{
	printf("%s (uroce) %s\n", tool, UROCE_VERSION);
}

#endif /* UROCE_APPS_APP_VERSION_H */
