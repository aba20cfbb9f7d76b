/* SPDX-License-Identifier: MIT */
/* uroce_last_error() as a tool prints it. */
#ifndef UROCE_APPS_APP_ERROR_H
#define UROCE_APPS_APP_ERROR_H

#include <string.h>

#include <uroce/uroce.h>

/* The library's text without the API call's name in front
 * ("uroce_context_create: "): that names code, which a tool's user never
 * called; what follows says what went wrong. */
static inline const char *app_last_error(void)
{
	const char *e = uroce_last_error(), *p = e;

	if (strncmp(p, "uroce_", 6))
		return e;
	for (p += 6; (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'; p++)
		;
	return p[0] == ':' && p[1] == ' ' ? p + 2 : e;
}

#endif
