/* Names and parsers of the reliability and ordering policies, for tools
 * and error messages. */
#include <errno.h>
#include <string.h>

#include <uroce/uroce.h>

static const char *const rel_names[UROCE_REL__COUNT] = {
	[UROCE_REL_RC] = "rc",
	[UROCE_REL_SR] = "sr",
	[UROCE_REL_EC] = "ec",
	[UROCE_REL_BE] = "be",
};

static const char *const ord_names[UROCE_ORDER__COUNT] = {
	[UROCE_ORDER_ORDERED] = "ordered",
	[UROCE_ORDER_UNORDERED] = "unordered",
};

const char *uroce_reliability_str(enum uroce_reliability rel)
{
	return (unsigned)rel < UROCE_REL__COUNT ? rel_names[rel] : NULL;
}

int uroce_reliability_parse(const char *s, enum uroce_reliability *out)
{
	for (unsigned i = 0; s && i < UROCE_REL__COUNT; i++)
		if (!strcmp(s, rel_names[i])) {
			*out = (enum uroce_reliability)i;
			return 0;
		}
	return -EINVAL;
}

const char *uroce_ordering_str(enum uroce_ordering ord)
{
	return (unsigned)ord < UROCE_ORDER__COUNT ? ord_names[ord] : NULL;
}

int uroce_ordering_parse(const char *s, enum uroce_ordering *out)
{
	for (unsigned i = 0; s && i < UROCE_ORDER__COUNT; i++)
		if (!strcmp(s, ord_names[i])) {
			*out = (enum uroce_ordering)i;
			return 0;
		}
	return -EINVAL;
}
