# MP_REQUIRE_PKG(VARIABLE-PREFIX, MODULE, DEBIAN-PACKAGE)
# -------------------------------------------------------
# Like PKG_CHECK_MODULES, but when the module is missing the error names the
# Debian package that provides it, so a user knows what to install.
AC_DEFUN([MP_REQUIRE_PKG], [
  PKG_CHECK_MODULES([$1], [$2], [],
    [AC_MSG_ERROR([$2 not found (pkg-config). On Debian: apt-get install $3])])
])
