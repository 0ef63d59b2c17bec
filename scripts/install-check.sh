#!/bin/sh
# Proves the Debian package the way an operator meets it (issues 12 and 20):
# builds it with the one command (scripts/package.sh), lints it, installs it
# with dpkg, verifies and uses what it installed (the package route's cron
# line too, and doctor --as cron as a user who is not root), enables its
# timers as an administrator would, removes and purges it, and checks that
# none of its files, and no link to its units, stay behind: /etc/systemd is
# as it was before.
#
#   sudo scripts/install-check.sh        # by hand, as root
#
# CI runs it (.ci/run) on its clean machine. It installs what it needs: the
# pinned cargo-deb, and from Debian lintian, man-db, bash-completion and
# systemd (zsh and fish are checked when present; .ci/run installs them).
# Whatever fails is named on the last line, and a package it installed is
# purged again, and links it made are removed. Refuses to run where
# rch-sweep is installed already, so it never removes an operator's own
# installation.
set -eu
cd "$(dirname "$0")/.."

# The cargo-deb release the package is built with; scripts/package.sh names
# the same one.
CARGO_DEB_VERSION=3.8.0
PACKAGE=rch-sweep

fail() {
  echo "install-check: FAILED: $*" >&2
  exit 1
}
step() { printf '\n--- install-check: %s\n' "$*"; }

[ "$(id -u)" = 0 ] || fail "run me as root: I install and remove a package"
if dpkg-query -W -f '${db:Status-Status}' "$PACKAGE" 2>/dev/null | grep -qx installed; then
  fail "$PACKAGE is installed on this machine already; I check a clean install only (dpkg -r $PACKAGE first)"
fi

work=$(mktemp -d)
installed=no
# The enablement links this check makes (step "enable"), removed again after
# a failure, whatever the postrm did.
system_link=/etc/systemd/system/timers.target.wants/rch-sweep@nobody.timer
user_link=/etc/systemd/user/timers.target.wants/rch-sweep.timer
enabled=no
cleanup() {
  status=$?
  if [ "$installed" = yes ]; then
    echo "install-check: purging $PACKAGE after the failure above" >&2
    dpkg --purge "$PACKAGE" >/dev/null 2>&1 || true
  fi
  if [ "$enabled" = yes ]; then
    for link in "$system_link" "$user_link"; do
      if [ -L "$link" ]; then
        echo "install-check: removing $link after the failure above" >&2
        rm -f "$link"
      fi
      # Its folder too, if systemctl made it (empty, and not there before).
      if ! grep -qxF "${link%/*}" "$work/etc-systemd.before"; then
        rmdir "${link%/*}" 2>/dev/null || true
      fi
    done
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "tools"
missing=""
command -v lintian >/dev/null 2>&1 || missing="$missing lintian"
command -v man >/dev/null 2>&1 || missing="$missing man-db"
[ -f /usr/share/bash-completion/bash_completion ] || missing="$missing bash-completion"
command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
if [ -n "$missing" ]; then
  echo "installing from Debian:$missing"
  apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
    || fail "apt-get install$missing"
fi
if [ "$(cargo deb --version 2>/dev/null)" != "cargo-deb $CARGO_DEB_VERSION" ]; then
  echo "installing cargo-deb $CARGO_DEB_VERSION (cargo install --locked)"
  cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" \
    || fail "cargo install cargo-deb $CARGO_DEB_VERSION"
fi
cargo deb --version

step "build: scripts/package.sh"
deb=$(scripts/package.sh | tail -n 1) || fail "scripts/package.sh"
[ -f "$deb" ] || fail "scripts/package.sh named no package: $deb"
echo "$deb"
dpkg-deb --info "$deb"
version=$(dpkg-deb --field "$deb" Version)
upstream=${version%-*}
target_dir=$(dirname "$(dirname "$deb")")

step "every file Cargo.toml declares was there to build from, and is in the package"
dpkg-deb --contents "$deb" | awk '{ print $NF }' | sed 's|^\./|/|' > "$work/contents"
# The assets, one ["source", "dest", "mode"] a line in [package.metadata.deb].
sed -n '/^\[package\.metadata\.deb\]/,/^\[/p' Cargo.toml \
  | sed -n 's/^ *\["\([^"]*\)", *"\([^"]*\)", *"[0-7]*"\],\{0,1\} *$/\1 \2/p' > "$work/assets"
count=$(wc -l < "$work/assets")
[ "$count" -ge 12 ] || fail "read only $count assets from Cargo.toml; its format changed?"
while read -r source dest; do
  case $source in
    target/release/*) file="$target_dir/release/${source#target/release/}" ;;
    *) file=$source ;;
  esac
  [ -s "$file" ] || fail "declared asset $source is missing or empty ($file)"
  case $dest in
    */) path="/$dest$(basename "$source")" ;;
    *) path="/$dest" ;;
  esac
  case $path in /usr/share/man/*) path="$path.gz" ;; esac
  grep -qxF "$path" "$work/contents" || fail "$source is not in the package as $path"
  echo "ok  $source -> $path"
done < "$work/assets"
echo "$count assets"

step "lintian (fails on any error or warning not overridden in packaging/lintian-overrides)"
lintian --version
# (--show-overrides would make overridden tags fail the run too.)
lintian --fail-on error,warning --display-info "$deb" > "$work/lintian.out" 2>&1 \
  || { cat "$work/lintian.out"; fail "lintian found errors or warnings in $deb"; }
cat "$work/lintian.out"
if grep -q '^[EW]: ' "$work/lintian.out"; then
  fail "lintian printed errors or warnings in $deb"
fi

step "maintainer scripts: prerm and postrm only, so installing enables and starts nothing"
dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed 's|^\./||' | grep -v '^$' | sort > "$work/control-files"
cat "$work/control-files"
printf 'control\npostrm\nprerm\n' > "$work/control-expected"
cmp -s "$work/control-files" "$work/control-expected" \
  || fail "the control archive holds [$(tr '\n' ' ' < "$work/control-files")], expected control, postrm and prerm only"

step "dpkg path filters of this machine"
# Container images often keep dpkg from unpacking documentation
# (path-exclude=/usr/share/man/* in /etc/dpkg/dpkg.cfg.d/). Such a machine
# would silently get no man page: say so, and include our files for the
# check, since an operator's machine installs them.
include=""
excludes=$(cat /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/* 2>/dev/null \
  | sed -n 's/^[[:space:]]*path-exclude[[:space:]=]*\([^[:space:]]*\).*/\1/p')
if [ -n "$excludes" ]; then
  echo "this machine's dpkg has path-exclude filters: $(echo "$excludes" | tr '\n' ' ')"
  set -f # the patterns are globs for `case`, not for the shell to expand
  while read -r path; do
    for pattern in $excludes; do
      # shellcheck disable=SC2254 # the pattern is a glob on purpose
      case $path in $pattern)
        echo "NOTE: dpkg here drops $path (so would an operator's machine with this filter); including it for the check"
        include="$include --path-include=$path"
        break ;;
      esac
    done
  done < "$work/contents"
  set +f
else
  echo "none: dpkg unpacks every file"
fi

step "dpkg -i"
# What /etc/systemd holds now; after the purge it must hold exactly that.
find /etc/systemd | sort > "$work/etc-systemd.before"
installed=yes
# shellcheck disable=SC2086 # one option a word
dpkg $include -i "$deb" || fail "dpkg -i $deb"
dpkg-query -W -f '${db:Status-Status}\n' "$PACKAGE" | grep -qx installed \
  || fail "dpkg does not list $PACKAGE as installed"
dpkg -L "$PACKAGE" | sort > "$work/listed"
while read -r path; do
  [ -e "$path" ] || fail "dpkg lists $path, but it is not on disk"
done < "$work/listed"
for path in \
  /usr/bin/rch-sweep \
  /usr/share/man/man1/rch-sweep.1.gz \
  /usr/lib/systemd/user/rch-sweep.service \
  /usr/lib/systemd/user/rch-sweep.timer \
  /usr/lib/systemd/system/rch-sweep@.service \
  /usr/lib/systemd/system/rch-sweep@.timer \
  /usr/share/bash-completion/completions/rch-sweep \
  /usr/share/zsh/vendor-completions/_rch-sweep \
  /usr/share/fish/vendor_completions.d/rch-sweep.fish \
  /usr/share/doc/rch-sweep/README.md \
  /usr/share/doc/rch-sweep/rch-sweep.rules.yml \
  /usr/share/doc/rch-sweep/copyright; do
  [ -f "$path" ] || fail "$path is not installed"
done
echo "$(wc -l < "$work/listed") paths installed, all on disk"
if find /etc/systemd -name 'rch-sweep*' 2>/dev/null | grep -q .; then
  fail "installing enabled or created units: $(find /etc/systemd -name 'rch-sweep*')"
fi
echo "no unit enabled"

step "dpkg --verify $PACKAGE: every installed file as the package has it"
# cargo-deb writes no md5sums; dpkg computes them when it unpacks. dpkg
# --verify exits 0 even when it reports a file, so its report must be empty.
[ -s "/var/lib/dpkg/info/$PACKAGE.md5sums" ] || fail "dpkg keeps no md5sums for $PACKAGE: --verify would check nothing"
report=$(dpkg --verify "$PACKAGE") || fail "dpkg --verify $PACKAGE failed"
[ -z "$report" ] || fail "dpkg --verify $PACKAGE: $report"
echo "ok: dpkg --verify $PACKAGE reports nothing ($(wc -l < "/var/lib/dpkg/info/$PACKAGE.md5sums") digests)"
# The same check sees a changed file.
doc=/usr/share/doc/rch-sweep/README.md
cp -p "$doc" "$work/README.md.orig"
echo changed >> "$doc"
report=$(dpkg --verify "$PACKAGE")
cp -p "$work/README.md.orig" "$doc"
case $report in
  *"$doc"*) echo "and it reports a changed file: $report" ;;
  *) fail "dpkg --verify did not notice a change to $doc; the check proves nothing" ;;
esac
[ -z "$(dpkg --verify "$PACKAGE")" ] || fail "dpkg --verify after restoring $doc"

step "rch-sweep --version"
got=$(env PATH=/usr/sbin:/usr/bin:/sbin:/bin rch-sweep --version) || fail "rch-sweep --version"
[ "$got" = "rch-sweep $upstream" ] || fail "rch-sweep --version says '$got', expected 'rch-sweep $upstream'"
echo "$got"

step "man -w rch-sweep"
page=$(man -w rch-sweep) || fail "man -w rch-sweep finds no page"
[ "$page" = /usr/share/man/man1/rch-sweep.1.gz ] || fail "man -w rch-sweep: $page"
echo "$page"
MANWIDTH=80 man rch-sweep 2>"$work/man.err" | grep -q 'completions SHELL' \
  || fail "man rch-sweep does not render the page: $(cat "$work/man.err")"

step "systemd-analyze verify of the installed units, nothing edited"
# With the man check on (the default): Documentation=man:rch-sweep(1) must
# resolve. Complaints about the host's own units are not ours to judge.
verify() {
  if ! "$@" > "$work/verify.out" 2>&1 || grep -q rch-sweep "$work/verify.out"; then
    cat "$work/verify.out" >&2
    fail "$*"
  fi
  echo "ok: $*"
}
verify systemd-analyze verify \
  /usr/lib/systemd/system/rch-sweep@root.service \
  /usr/lib/systemd/system/rch-sweep@root.timer
runtime=$work/runtime
mkdir -m 0700 "$runtime"
verify env XDG_RUNTIME_DIR="$runtime" systemd-analyze --user verify \
  /usr/lib/systemd/user/rch-sweep.service \
  /usr/lib/systemd/user/rch-sweep.timer
# The check itself sees a broken unit.
sed 's/^Type=oneshot$/Type=oneshot\nNoSuchSetting=yes/' /usr/lib/systemd/system/rch-sweep@.service \
  > "$work/rch-sweep@.service"
systemd-analyze verify "$work/rch-sweep@root.service" > "$work/verify.out" 2>&1 || true
grep -q "Unknown key 'NoSuchSetting'" "$work/verify.out" \
  || fail "systemd-analyze verify did not notice an unknown setting; the check proves nothing"

step "bash completes rch-sweep st to status, through bash-completion's loader"
# A login shell loads bash_completion, which finds the installed script by
# the command's name the first time it completes it.
bash --norc --noprofile -c '
  . /usr/share/bash-completion/bash_completion
  __load_completion rch-sweep || { echo "bash-completion found no script for rch-sweep"; exit 1; }
  func=$(complete -p rch-sweep | sed -n "s/.*-F \([^ ]*\).*/\1/p")
  [ -n "$func" ] || { echo "no completion function for rch-sweep"; exit 1; }
  COMP_WORDS=(rch-sweep st); COMP_CWORD=1; COMP_LINE="rch-sweep st"; COMP_POINT=${#COMP_LINE}
  "$func" rch-sweep st rch-sweep
  [ "${COMPREPLY[*]}" = status ] || { echo "COMPREPLY is [${COMPREPLY[*]}]"; exit 1; }
  COMP_WORDS=(rch-sweep status --); COMP_CWORD=2; COMP_LINE="rch-sweep status --"; COMP_POINT=${#COMP_LINE}
  "$func" rch-sweep -- status
  case " ${COMPREPLY[*]} " in *" --json "*) ;; *) echo "status -- offers [${COMPREPLY[*]}]"; exit 1 ;; esac
  echo "rch-sweep st -> ${COMPREPLY[*]:+status}; rch-sweep status -- -> ${COMPREPLY[*]}"
' || fail "bash completion of the installed script"

step "zsh and fish"
if command -v zsh >/dev/null 2>&1; then
  zsh -n /usr/share/zsh/vendor-completions/_rch-sweep || fail "zsh -n _rch-sweep"
  zsh -fc 'print -l $fpath' | grep -qx /usr/share/zsh/vendor-completions \
    || fail "zsh does not look in /usr/share/zsh/vendor-completions"
  echo "zsh: parses, on zsh's fpath"
else
  echo "skipped: zsh is not installed"
fi
if command -v fish >/dev/null 2>&1; then
  fish -n /usr/share/fish/vendor_completions.d/rch-sweep.fish || fail "fish -n rch-sweep.fish"
  # As a user's fish: its own search path (--no-config would empty it), run
  # in an empty folder so no file name can match.
  mkdir "$work/fish"
  offered=$(cd "$work/fish" && HOME=$work/fish fish -c 'complete -C"rch-sweep st"' | cut -f1)
  [ "$offered" = status ] || fail "fish completes 'rch-sweep st' to '$offered'"
  echo "fish: rch-sweep st -> $offered"
else
  echo "skipped: fish is not installed"
fi

step "cron: the package route's line in README.md finds its program"
# cron runs a line with /bin/sh, PATH=/usr/bin:/bin, HOME, LOGNAME and SHELL
# only. A HOME with no lease directory makes the outcome certain: exit 0,
# nothing printed with --quiet (so cron mails nothing), nothing created.
# tests/operate.rs checks that README.md, the man page and systemd/README.md
# carry the same lines.
cron_line=$(grep -E '^\*/5 \* \* \* \* rch-sweep( |$)' README.md | sort -u)
[ "$(printf '%s\n' "$cron_line" | grep -c .)" = 1 ] \
  || fail "README.md should have one cron line for the package, '*/5 * * * * rch-sweep ...'; found: $cron_line"
cron_command=${cron_line#'*/5 * * * * '}
mkdir -m 0700 "$work/cron-home"
as_cron() {
  env -i HOME="$work/cron-home" LOGNAME=root SHELL=/bin/sh PATH=/usr/bin:/bin \
    /bin/sh -c "$cron_command" > "$work/cron.out" 2>&1
}
status=0
as_cron || status=$?
[ "$status" = 0 ] || fail "cron's '$cron_command' exited $status: $(cat "$work/cron.out")"
[ ! -s "$work/cron.out" ] || fail "cron's '$cron_command' printed (cron would mail it): $(cat "$work/cron.out")"
[ -z "$(ls -A "$work/cron-home")" ] || fail "cron's '$cron_command' created files in HOME: $(ls -A "$work/cron-home")"
echo "ok: $cron_line -> exit 0, silent"

step "doctor --as cron, as a user who is not root"
# What the operator runs after crontab -e: the installed binary re-executes
# itself with cron's HOME, LOGNAME, SHELL and PATH only. As nobody, with a
# home of its own in the work folder: rch where its installer puts it
# (~/.local/bin, on no cron PATH), leases where rch writes them.
chmod 711 "$work"
user_home=$work/nobody-home
mkdir -p "$user_home/.local/bin" "$user_home/.local/state/rch/job-leases"
printf '#!/bin/sh\nif [ "$1" = --version ]; then echo "rch 0.0.0 (install-check stand-in)"; exit 0; fi\nexit 1\n' \
  > "$user_home/.local/bin/rch"
chmod 755 "$user_home/.local/bin/rch"
chown -R nobody: "$user_home"
as_nobody() {
  runuser -u nobody -- env -i HOME="$user_home" LOGNAME=nobody PATH=/usr/bin:/bin "$@" \
    rch-sweep doctor --as cron --json > "$work/doctor.out" 2> "$work/doctor.err"
}
status=0
as_nobody || status=$?
[ "$status" = 0 ] || fail "doctor --as cron as nobody exited $status: $(cat "$work/doctor.out" "$work/doctor.err")"
for expected in '{"version":1,"as":"cron","checks":[' \
  '"check":"lease_dir","status":"ok"' '"check":"rch","status":"ok"' '"check":"environment","status":"ok"'; do
  grep -qF "$expected" "$work/doctor.out" || fail "doctor --as cron as nobody: no $expected in $(cat "$work/doctor.out")"
done
if grep -q '"status":"fail"' "$work/doctor.out"; then
  fail "doctor --as cron as nobody failed a check: $(cat "$work/doctor.out")"
fi
echo "ok: doctor --as cron as nobody: $(grep -o '"check":"rch","status":"ok","finding":"[^"]*"' "$work/doctor.out")"
# The check sees what cron would miss: a .profile that moved rch's state
# (XDG_STATE_HOME) leaves cron sweeping a folder that does not exist.
mv "$user_home/.local/state" "$user_home/.state"
as_nobody XDG_STATE_HOME="$user_home/.state" || fail "doctor --as cron with XDG_STATE_HOME: $(cat "$work/doctor.err")"
grep -qF "\"finding\":\"lease directory $user_home/.local/state/rch/job-leases does not exist" "$work/doctor.out" \
  || fail "doctor --as cron did not warn that cron sweeps a missing folder: $(cat "$work/doctor.out")"
echo "and it warns that cron would sweep the missing $user_home/.local/state/rch/job-leases"

step "prerm and postrm where systemd runs, in a private mount namespace with systemctl stubbed"
# No systemd runs here, so what the scripts ask of it is recorded by a stub
# systemctl (deb-systemd-invoke runs the first systemctl on PATH) under a
# private /run that has, or lacks, /run/systemd/system. Where a
# policy-rc.d exists, one that allows is mounted over it.
if unshare --mount --propagation private true 2>/dev/null; then
  mkdir "$work/stubs"
  printf '#!/bin/sh\nprintf "%%s\\n" "$*" >> "%s/systemctl.log"\n' "$work" > "$work/stubs/systemctl"
  printf '#!/bin/sh\nexit 0\n' > "$work/stubs/policy-rc.d"
  chmod 755 "$work/stubs/systemctl" "$work/stubs/policy-rc.d"
  # asks SYSTEMD SCRIPT ARG: what SCRIPT ARG asked of systemctl, one call a line.
  asks() {
    : > "$work/systemctl.log"
    # shellcheck disable=SC2016 # the inner sh expands them
    unshare --mount --propagation private sh -eu -c '
      mount -t tmpfs tmpfs /run
      [ "$1" = no ] || mkdir -p /run/systemd/system
      [ ! -e /usr/sbin/policy-rc.d ] || mount --bind "$2/policy-rc.d" /usr/sbin/policy-rc.d
      PATH="$2:$PATH" "/var/lib/dpkg/info/$3" "$4" >/dev/null
    ' sh "$1" "$work/stubs" "$2" "$3" || fail "$2 $3 (systemd running: $1) failed"
    tr '\n' ';' < "$work/systemctl.log"
  }
  expect() {
    got=$(asks "$1" "$2" "$3")
    [ "$got" = "$4" ] || fail "$2 $3, systemd running: $1: asked systemctl '$got', expected '$4'"
    echo "ok: $2 $3, systemd running: $1: ${4:-nothing asked}"
  }
  expect yes "$PACKAGE.prerm" remove 'stop rch-sweep@*.timer rch-sweep@*.service;'
  expect yes "$PACKAGE.prerm" upgrade ''
  expect no "$PACKAGE.prerm" remove ''
  expect yes "$PACKAGE.postrm" remove '--system daemon-reload;'
  expect no "$PACKAGE.postrm" remove ''
else
  echo "SKIPPED: unshare --mount is not permitted here; the real dpkg -r below still runs the scripts"
fi

step "enable as an administrator would, without a running systemd"
enabled=yes
systemctl enable rch-sweep@nobody.timer || fail "systemctl enable rch-sweep@nobody.timer"
systemctl --global enable rch-sweep.timer || fail "systemctl --global enable rch-sweep.timer"
for link in "$system_link" "$user_link"; do
  [ -L "$link" ] || fail "systemctl made no link $link"
  target=$(readlink "$link")
  [ -f "$target" ] || fail "$link points at $target, which is no file"
  echo "ok: $link -> $target"
done

step "dpkg -r: instances stopped where systemd runs, enablement kept for a reinstall"
dpkg -r "$PACKAGE" || fail "dpkg -r $PACKAGE"
dpkg-query -W -f '${db:Status-Status}' "$PACKAGE" | grep -qx config-files \
  || fail "after dpkg -r, dpkg should keep $PACKAGE's postrm for the purge (status config-files)"
[ ! -e /usr/bin/rch-sweep ] || fail "/usr/bin/rch-sweep remains after dpkg -r"
for link in "$system_link" "$user_link"; do
  [ -L "$link" ] || fail "dpkg -r removed $link; only a purge should"
done
echo "ok: both enablement links remain, now dangling"
# The cron line's success above came from the package's binary.
status=0
as_cron || status=$?
[ "$status" = 127 ] || fail "with the package removed, cron's '$cron_command' exited $status, not 127: the check above proves nothing"
echo "ok: without the package, the cron line exits 127 (command not found)"

step "dpkg --purge: nothing of the package stays, no link to its units, /etc/systemd as before"
dpkg --purge "$PACKAGE" || fail "dpkg --purge $PACKAGE"
installed=no
if dpkg-query -W -f '${db:Status-Status}' "$PACKAGE" 2>/dev/null | grep -qvx not-installed; then
  fail "dpkg still knows $PACKAGE after the purge"
fi
left=0
while read -r path; do
  if [ "$path" = /. ]; then
    continue
  elif [ -d "$path" ] && [ ! -L "$path" ]; then
    # A folder may stay only while another package owns it.
    if ! dpkg-query -S "$path" >/dev/null 2>&1; then
      echo "left behind: $path/ (owned by no package)" >&2
      left=$((left + 1))
    fi
  elif [ -e "$path" ] || [ -L "$path" ]; then
    echo "left behind: $path" >&2
    left=$((left + 1))
  fi
done < "$work/listed"
[ "$left" = 0 ] || fail "$left paths of $PACKAGE remain after dpkg -r and --purge"
[ ! -e /usr/share/doc/rch-sweep ] || fail "/usr/share/doc/rch-sweep remains"
echo "all $(wc -l < "$work/listed") paths gone (folders other packages own stay)"
links=$(find /etc/systemd \( -name 'rch-sweep.*' -o -name 'rch-sweep@*' \) -print)
[ -z "$links" ] || fail "after the purge, /etc/systemd still names units of $PACKAGE: $links"
find /etc/systemd | sort > "$work/etc-systemd.after"
diff "$work/etc-systemd.before" "$work/etc-systemd.after" \
  || fail "/etc/systemd differs from before the install (< before, > after)"
enabled=no
echo "no link to a unit of $PACKAGE, /etc/systemd as before"

printf '\ninstall-check: ok: %s built, linted, installed, verified, used, enabled, removed, purged\n' "$(basename "$deb")"
