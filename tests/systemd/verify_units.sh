#!/usr/bin/env bash
# The systemd units as installed: 'cmake --install' into a scratch root, then
# 'systemd-analyze verify' against that root (ExecStart must exist there and be
# executable, the directives must parse, no man: page it cannot find), and
# every file:// Documentation= page, the config file the unit names and fad-exec
# (where fadd looks for it) must be installed. Prints "SKIP: ..." and exits 0
# where systemd-analyze cannot run.
# Usage: verify_units.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: verify_units.sh BUILD_DIR}
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed (Debian package systemd); the units were not verified"
  exit 0
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/fad-units.XXXXXX")
trap 'rm -rf "$root"' EXIT
DESTDIR="$root" cmake --install "$build" >/dev/null
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
system_dir=$(sed -n 's/^FAD_SYSTEMD_SYSTEM_UNIT_DIR:PATH=//p' "$build/CMakeCache.txt")
user_dir=$(sed -n 's/^FAD_SYSTEMD_USER_UNIT_DIR:PATH=//p' "$build/CMakeCache.txt")
# verify resolves the units a service pulls in (sysinit.target, ...) inside the
# root: give it the host's stock units.
stock=""
for d in /usr/lib/systemd/system /lib/systemd/system; do
  [[ -f "$d/sysinit.target" ]] && stock=$d && break
done
if [[ -z "$stock" ]]; then
  echo "SKIP: no stock systemd units (sysinit.target) on this machine; the units were not verified"
  exit 0
fi
mkdir -p "$root/usr/lib/systemd/system"
cp -rn "$stock/." "$root/usr/lib/systemd/system/"  # never over what the install put there

fail=0
check_unit() {  # unit file inside the root, systemd-analyze scope flag
  local unit=$1 scope=$2
  [[ -f "$root$unit" ]] || { echo "FAIL: $unit was not installed"; fail=1; return; }
  local out
  if ! out=$(systemd-analyze $scope verify --root="$root" "$root$unit" 2>&1) || [[ -n "$out" ]]; then
    echo "FAIL: systemd-analyze $scope verify $unit:"
    echo "$out"
    fail=1
  fi
  grep -q '^Type=notify$' "$root$unit" || { echo "FAIL: $unit is not Type=notify"; fail=1; }
  grep -q '^Documentation=.*man:' "$root$unit" && { echo "FAIL: $unit names a man page fad does not install"; fail=1; }
  for doc in $(sed -n 's/^Documentation=//p' "$root$unit"); do
    [[ "$doc" == file://* ]] || continue
    [[ -f "$root${doc#file://}" ]] || { echo "FAIL: $unit documents $doc, which is not installed"; fail=1; }
  done
  local exe
  exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$root$unit")
  [[ "$exe" == "$prefix"/* ]] || { echo "FAIL: $unit runs $exe, outside the install prefix $prefix"; fail=1; }
  # fadd starts every compiler through fad-exec, which it looks for in ../libexec/fad.
  [[ -x "$root$(dirname "$exe")/../libexec/fad/fad-exec" ]] ||
    { echo "FAIL: fad-exec is not installed where $exe looks for it (../libexec/fad)"; fail=1; }
  echo "ok: $unit"
}
check_unit "$system_dir/fadd.service" ""
# A user unit: systemd-analyze --user cannot take --root, so it verifies a
# copy whose ExecStart points into the scratch root (every other line as
# installed), under a runtime dir of its own.
user_unit="$root$user_dir/fadd.service"
if [[ -f "$user_unit" ]]; then
  mkdir -p -m 0700 "$root/run-user"
  sed "s|^ExecStart=/|ExecStart=$root/|" "$user_unit" >"$root/fadd.service"
  if ! out=$(XDG_RUNTIME_DIR="$root/run-user" systemd-analyze --user verify "$root/fadd.service" 2>&1) || [[ -n "$out" ]]; then
    echo "FAIL: systemd-analyze --user verify $user_dir/fadd.service:"
    echo "$out"
    fail=1
  fi
  grep -q '^Type=notify$' "$user_unit" || { echo "FAIL: the user unit is not Type=notify"; fail=1; }
  grep -q '^Documentation=.*man:' "$user_unit" && { echo "FAIL: the user unit names a man page"; fail=1; }
  echo "ok: $user_dir/fadd.service"
else
  echo "FAIL: $user_dir/fadd.service was not installed"
  fail=1
fi
# The claims directory as systemd-tmpfiles makes it at boot: root's and
# sticky, the only shared one launchers use.
tmpfiles_dir=$(sed -n 's/^FAD_TMPFILES_DIR:PATH=//p' "$build/CMakeCache.txt")
if [[ ! -f "$root$tmpfiles_dir/fad.conf" ]]; then
  echo "FAIL: $tmpfiles_dir/fad.conf was not installed"
  fail=1
elif ! command -v systemd-tmpfiles >/dev/null; then
  echo "SKIP: systemd-tmpfiles is not installed; $tmpfiles_dir/fad.conf was not applied"
elif ! out=$(systemd-tmpfiles --root="$root" --create "$root$tmpfiles_dir/fad.conf" 2>&1); then
  echo "FAIL: systemd-tmpfiles --create $tmpfiles_dir/fad.conf:"
  echo "$out"
  fail=1
elif [[ "$(stat -c '%a %U' "$root/tmp/fad-claims" 2>/dev/null)" != "1777 root" ]]; then
  echo "FAIL: $tmpfiles_dir/fad.conf made /tmp/fad-claims $(stat -c '%a %U' "$root/tmp/fad-claims" 2>&1), not 1777 root"
  fail=1
else
  echo "ok: $tmpfiles_dir/fad.conf"
fi
# The config file the system unit's fadd reads when present (fadd starts with
# the defaults when it is absent): the install creates it.
config=$(sed -n 's/^# Configuration: \([^ ]*\) when present.*/\1/p' "$root$system_dir/fadd.service")
[[ -n "$config" && -f "$root$config" ]] || { echo "FAIL: the system unit's config file '$config' is not installed"; fail=1; }
exit $fail
