/* errors.c - lookups into the error catalogue of errors.h. */
#include "config.h"

#include "base/errors.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/text.h"

struct mp_err_desc {
	const char *name;
	enum mp_err_class cls;
	const char *summary;
};

static const struct mp_err_desc catalogue[MP_ERR_COUNT] = {
#define MP_ERR_DESC(code, name, cls, summary) [code] = {name, cls, summary},
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

int mp_err_exit_status(enum mp_err code) { return (int)desc(code)->cls; }

/* The message, kept one safe line: it quotes untrusted names and paths,
 * each escaped so that it maps back to one name (flags: mp_text_escape()). */
static enum mp_err vfail(struct mp_error *err, enum mp_err code, unsigned flags,
			 const char *fmt, va_list ap)
{
	if (err) {
		err->code = code;
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		mp_text_sanitize(err->msg, sizeof err->msg, flags);
	}
	return code;
}

enum mp_err mp_fail(struct mp_error *err, enum mp_err code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, code, 0, fmt, ap);
	va_end(ap);
	return code;
}

enum mp_err mp_fail_escaped(struct mp_error *err, enum mp_err code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(err, code, MP_TEXT_ESCAPED, fmt, ap);
	va_end(ap);
	return code;
}
