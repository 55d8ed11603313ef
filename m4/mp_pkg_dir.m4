# MP_PKG_DIR_UNDER_PREFIX(MODULE, VARIABLE)
# -----------------------------------------
# Sets mp_pkg_dir to pkg-config's VARIABLE of MODULE when that directory
# lies under the installation prefix, written relative to it
# ('${prefix}/...', so `make prefix=...` moves it along); else empty.
# `make install` must not write outside its prefix: a directory of
# systemd's or bash-completion's own, /lib/systemd/system or
# /usr/share/bash-completion/completions for a prefix of /usr/local, would
# overwrite a packaged copy, which `make uninstall` then deletes.
AC_DEFUN([MP_PKG_DIR_UNDER_PREFIX], [
  mp_prefix=$prefix
  test "x$mp_prefix" = xNONE && mp_prefix=$ac_default_prefix
  mp_prefix=`echo "$mp_prefix" | sed 's|/*$||'`
  mp_pkg_dir=`$PKG_CONFIG --variable=$2 $1 2>/dev/null`
  AS_CASE([$mp_pkg_dir],
    ["$mp_prefix"/*], [mp_pkg_dir='${prefix}'${mp_pkg_dir@%:@"$mp_prefix"}],
    [mp_pkg_dir=])
])
