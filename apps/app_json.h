/* SPDX-License-Identifier: MIT */
/* The tools' JSON output: a string written with its quotes, escaped. */
#ifndef UROCE_APPS_APP_JSON_H
#define UROCE_APPS_APP_JSON_H

#include <stdio.h>

static inline void app_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

#endif /* UROCE_APPS_APP_JSON_H */
