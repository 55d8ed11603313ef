/* errors.c - lookups into the error catalogue of errors.h. */
#include "config.h"

#include "base/errors.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"

struct mp_err_desc {
	const char *name;
	enum mp_err_class cls;
	int eno;
	const char *summary;
};

static const struct mp_err_desc catalogue[MP_ERR_COUNT] = {
#define MP_ERR_DESC(code, name, cls, eno, summary) [code] = {name, cls, eno, summary},
	MP_ERRORS(MP_ERR_DESC)
#undef MP_ERR_DESC
};

static const struct mp_err_desc *desc(enum mp_err code)
{
	if ((unsigned)code >= MP_ERR_COUNT)
		code = MP_E_USAGE;
	return &catalogue[code];
}

const char *mp_err_name(enum mp_err code) { return desc(code)->name; }
enum mp_err_class mp_err_class(enum mp_err code) { return desc(code)->cls; }
const char *mp_err_summary(enum mp_err code) { return desc(code)->summary; }

int mp_err_errno(enum mp_err code) { return desc(code)->eno; }
int mp_err_exit_status(enum mp_err code) { return (int)desc(code)->cls; }

static void escape_in_place(char *s, size_t cap, unsigned flags)
{
	char tmp[MP_MSG_MAX];
	size_t n = strnlen(s, cap);

	if (n > sizeof tmp)
		n = sizeof tmp;
	memcpy(tmp, s, n);
	mp_text_escape(s, cap, tmp, n, flags);
}

enum mp_err mp_fail(struct mp_error *err, enum mp_err code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		/* Messages quote untrusted names and paths: keep them one safe line,
		 * each name escaped so that it maps back to one name. */
		escape_in_place(err->msg, sizeof err->msg, 0);
	}
	return code;
}

enum mp_err mp_fail_escaped(struct mp_error *err, enum mp_err code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		escape_in_place(err->msg, sizeof err->msg, MP_TEXT_ESCAPED);
	}
	return code;
}
