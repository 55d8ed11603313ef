/* role.c - the roles' names and tensor names; the check of a magic, for
 * every format. */
#include "config.h"

#include "pack/role.h"

#include <stdio.h>
#include <string.h>

#include "base/errors.h"
#include "base/text.h"

static const char *const role_names[MP_ROLE_COUNT] = {"up", "gate", "down"};

const char *mp_role_name(enum mp_role role)
{
	return (unsigned)role < MP_ROLE_COUNT ? role_names[role] : NULL;
}

enum mp_role mp_role_from_name(const char *name)
{
	for (int r = 0; r < MP_ROLE_COUNT; r++)
		if (strcmp(name, role_names[r]) == 0)
			return r;
	return MP_ROLE_COUNT;
}

int mp_tensor_name(char *buf, size_t len, uint64_t layer_id, enum mp_role role)
{
	return snprintf(buf, len, "blk.%llu.ffn_%s_exps.weight", (unsigned long long)layer_id,
			mp_role_name(role) ? mp_role_name(role) : "?");
}

enum mp_err mp_check_magic(const unsigned char *field, const char *magic, size_t n,
			   const char *note, const char *must, struct mp_error *err)
{
	char shown[4 * 32 + 8];
	size_t len = n;

	if (memcmp(field, magic, n) == 0)
		return MP_OK;
	while (len && field[len - 1] == 0)
		len--;
	mp_text_escape(shown, sizeof shown, (const char *)field, len, 0);
	return mp_fail_escaped(err, MP_E_HEADER_MAGIC,
			       "bad pack magic%s: header magic is \"%s\", must be %s", note, shown,
			       must);
}
