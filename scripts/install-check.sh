#!/bin/sh
# Proves the Debian package the way an operator meets it (issues 12, 20 and
# 36): builds it with the one command (scripts/package.sh), lints it,
# installs it with dpkg, verifies and uses what it installed (the package
# route's cron line too, doctor --as cron as a user who is not root, and a
# user's metrics file served by the real node_exporter from Debian's textfile
# folder made writable the lasting way), enables its timers as an
# administrator would, upgrades it to a build whose timers differ, removes it
# with and without a policy-rc.d that forbids stopping services, purges it,
# and checks that none of its files, and no link to its units, stay behind:
# /etc/systemd is as it was before.
#
# No systemd runs here (nor in CI), so what the maintainer scripts ask of it
# is checked instead: every dpkg run of the package happens in a private
# mount namespace (unshare -m) where a tmpfs over /run/systemd has, or lacks,
# /run/systemd/system, and where /usr/sbin may hold a policy-rc.d of the
# check's own; recording stand-ins for systemctl, deb-systemd-helper and
# deb-systemd-invoke come first on PATH (the last two pass every call on to
# the real tools, whose own systemctl calls are recorded in turn). Nothing
# outside the namespace sees any of it.
#
#   sudo scripts/install-check.sh        # by hand, as root
#
# CI runs it (.ci/run) on its clean machine. It installs what it needs: the
# pinned cargo-deb, and from Debian lintian, man-db, bash-completion, systemd
# and curl (zsh and fish are checked when present; .ci/run installs them, and
# prometheus-node-exporter, which the textfile step needs).
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
# The throwaway account and group of the textfile step, and the state of
# Debian's textfile folder before it (restored after it, or after a failure).
check_user=rch-sweep-ic$$
made_user=no
textfile_dir=/var/lib/prometheus/node-exporter
textfile_override=no
textfile_before=
exporter_pid=
# The enablement links this check makes (step "enable"), removed again after
# a failure, whatever the postrm did.
system_link=/etc/systemd/system/timers.target.wants/rch-sweep@nobody.timer
user_link=/etc/systemd/user/timers.target.wants/rch-sweep.timer
enabled=no
cleanup() {
  status=$?
  # Undo all that can be undone, whatever fails on the way.
  set +e
  if [ -n "$exporter_pid" ]; then
    kill "$exporter_pid" 2>/dev/null || true
    wait "$exporter_pid" 2>/dev/null || true
  fi
  if [ "$textfile_override" = yes ]; then
    echo "install-check: removing the statoverride of $textfile_dir after the failure above" >&2
    dpkg-statoverride --remove "$textfile_dir" >/dev/null 2>&1 || true
    restore_textfile_dir
    dpkg --purge rch-sweep-ic-probe >/dev/null 2>&1 || true
    dpkg-statoverride --remove /var/lib/rch-sweep-ic-probe >/dev/null 2>&1 || true
  fi
  if [ "$made_user" = yes ]; then
    userdel "$check_user" >/dev/null 2>&1 || true
    groupdel "$check_user" >/dev/null 2>&1 || true
  fi
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
# Debian's textfile folder as it was: owner, group and mode, and files the
# step left there.
restore_textfile_dir() {
  [ -n "$textfile_before" ] || return 0
  # shellcheck disable=SC2086 # owner group mode, one a word
  set -- $textfile_before
  chown "$1:$2" "$textfile_dir" && chmod "$3" "$textfile_dir"
  rm -f "$textfile_dir/rch-sweep-$check_user.prom"
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
command -v curl >/dev/null 2>&1 || missing="$missing curl"
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

step "maintainer scripts: postinst, prerm and postrm"
dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed 's|^\./||' | grep -v '^$' | sort > "$work/control-files"
cat "$work/control-files"
printf 'control\npostinst\npostrm\nprerm\n' > "$work/control-expected"
cmp -s "$work/control-files" "$work/control-expected" \
  || fail "the control archive holds [$(tr '\n' ' ' < "$work/control-files")], expected control, postinst, postrm and prerm"
dpkg-deb --field "$deb" Depends | grep -q 'init-system-helpers (>= 1.58)' \
  || fail "the scripts call deb-systemd-helper --user and deb-systemd-invoke, but the package does not depend on init-system-helpers (>= 1.58)"

step "the upgrade: the same package, its timers firing every 7 minutes instead of 5"
# What a release that changes a timer looks like to dpkg and systemd: a
# higher version whose unit files differ. cargo-deb stamps every file with one
# fixed mtime, so nothing but a daemon-reload tells systemd.
dpkg-deb -R "$deb" "$work/upgrade"
for timer in usr/lib/systemd/system/rch-sweep@.timer usr/lib/systemd/user/rch-sweep.timer; do
  grep -qx 'OnUnitInactiveSec=5min' "$work/upgrade/$timer" || fail "$timer has no OnUnitInactiveSec=5min to change"
  sed -i 's/^OnUnitInactiveSec=5min$/OnUnitInactiveSec=7min/' "$work/upgrade/$timer"
done
upgrade_version="$version+timer7"
sed -i "s/^Version: .*/Version: $upgrade_version/" "$work/upgrade/DEBIAN/control"
upgrade_deb="$work/rch-sweep_${upgrade_version}_$(dpkg-deb --field "$deb" Architecture).deb"
dpkg-deb --root-owner-group --build "$work/upgrade" "$upgrade_deb" >/dev/null || fail "dpkg-deb --build the upgrade"
dpkg --compare-versions "$upgrade_version" gt "$version" || fail "$upgrade_version is not above $version"
echo "$upgrade_deb"

step "where systemd runs, or not: a private mount namespace and recording stand-ins"
# in_world SYSTEMD POLICY COMMAND...: COMMAND in a private mount namespace
# whose /run/systemd/system exists (SYSTEMD=yes) or not (no), and whose
# /usr/sbin holds no policy-rc.d (POLICY=none) or one that forbids every
# action (forbid: exit 101, as in containers and chroots). The calls made of
# systemctl, deb-systemd-helper and deb-systemd-invoke land in
# $work/calls.log, one a line; the systemctl stand-in answers list-units with
# the lines of $work/running (a sweep in progress) and does nothing else.
# Output in $work/world.out.
namespaces=no
if unshare --mount --propagation private true 2>/dev/null; then
  namespaces=yes
  mkdir "$work/shims" "$work/sbin-real" "$work/sbin-view"
  {
    echo '#!/bin/sh'
    echo "printf 'systemctl %s\\n' \"\$*\" >> '$work/calls.log'"
    echo "case \" \$* \" in *' list-units '*) cat '$work/running' 2>/dev/null ;; esac"
    echo 'exit 0'
  } > "$work/shims/systemctl"
  for tool in deb-systemd-helper deb-systemd-invoke; do
    {
      echo '#!/bin/sh'
      echo "printf '$tool %s\\n' \"\$*\" >> '$work/calls.log'"
      echo "exec /usr/bin/$tool \"\$@\""
    } > "$work/shims/$tool"
  done
  chmod 755 "$work/shims/systemctl" "$work/shims/deb-systemd-helper" "$work/shims/deb-systemd-invoke"
  # /usr/sbin as it is, seen through links, so that a policy-rc.d can be
  # added to the view without touching the real folder.
  for entry in /usr/sbin/*; do
    name=${entry##*/}
    [ "$name" = policy-rc.d ] || ln -s "$work/sbin-real/$name" "$work/sbin-view/$name"
  done
  if [ -d /run/systemd ]; then runtime_mount=/run/systemd; else runtime_mount=/run; fi
else
  echo "SKIPPED: unshare --mount is not permitted here: dpkg runs as it is, and the maintainer scripts' calls are not checked"
fi
in_world() {
  systemd=$1
  policy=$2
  shift 2
  : > "$work/calls.log"
  if [ "$namespaces" = no ]; then
    "$@" > "$work/world.out" 2>&1
    return
  fi
  rm -f "$work/sbin-view/policy-rc.d"
  if [ "$policy" = forbid ]; then
    printf '#!/bin/sh\nexit 101\n' > "$work/sbin-view/policy-rc.d"
    chmod 755 "$work/sbin-view/policy-rc.d"
  fi
  # shellcheck disable=SC2016 # the inner sh expands them
  unshare --mount --propagation private sh -eu -c '
    work=$1 systemd=$2 runtime=$3
    shift 3
    mount -t tmpfs tmpfs "$runtime"
    if [ "$systemd" = yes ]; then mkdir -p /run/systemd/system; else mkdir -p /run/systemd; fi
    mount --bind /usr/sbin "$work/sbin-real"
    mount --bind "$work/sbin-view" /usr/sbin
    PATH="$work/shims:$PATH" exec "$@"
  ' sh "$work" "$systemd" "$runtime_mount" "$@" > "$work/world.out" 2>&1
}
# The calls the last in_world recorded, joined with ";": all of them, or
# those of systemctl and deb-systemd-invoke alone.
all_calls() { tr '\n' ';' < "$work/calls.log"; }
service_calls() { grep -E '^(systemctl|deb-systemd-invoke) ' "$work/calls.log" | tr '\n' ';' || true; }
# expect_calls WHAT EXPECTED: the systemctl and deb-systemd-invoke calls of
# the last in_world were EXPECTED, in that order.
expect_calls() {
  [ "$namespaces" = yes ] || { echo "SKIPPED: $1: calls not recorded"; return 0; }
  got=$(service_calls)
  [ "$got" = "$2" ] || fail "$1: asked '$got', expected '$2' (all calls: $(all_calls); output: $(cat "$work/world.out"))"
  echo "ok: $1: ${2:-nothing asked of systemd}"
}
# expect_helper WHAT ARGS: deb-systemd-helper was called with ARGS.
expect_helper() {
  [ "$namespaces" = yes ] || return 0
  grep -qxF "deb-systemd-helper $2" "$work/calls.log" \
    || fail "$1: no 'deb-systemd-helper $2' among: $(all_calls)"
  echo "ok: $1: deb-systemd-helper $2"
}
reload='systemctl --system daemon-reload;'
try_restart='deb-systemd-invoke try-restart rch-sweep@*.timer;systemctl try-restart rch-sweep@*.timer;'
stop_asked='deb-systemd-invoke stop rch-sweep@*.timer rch-sweep@*.service;'
stop_done='systemctl stop rch-sweep@*.timer rch-sweep@*.service;'
list_sweeps='systemctl --system list-units --no-legend --plain --state=active,activating,deactivating,reloading rch-sweep@*.service;'
# What deb-systemd-helper keeps before the install: after the purge it must
# be as it was.
find /var/lib/systemd -path '*deb-systemd*' 2>/dev/null | sort > "$work/dsh-state.before"

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

step "dpkg -i, where systemd runs: systemd reloaded, nothing enabled or started"
# What /etc/systemd holds now; after the purge it must hold exactly that.
find /etc/systemd | sort > "$work/etc-systemd.before"
installed=yes
# shellcheck disable=SC2086 # one option a word
in_world yes none dpkg $include -i "$deb" || fail "dpkg -i $deb: $(cat "$work/world.out")"
cat "$work/world.out"
# A first install: the reload, and no try-restart (nothing of it runs yet).
expect_calls "dpkg -i (postinst configure)" "$reload"
expect_helper "dpkg -i (postinst configure)" "--user update-state rch-sweep.timer"
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

# An rch where its installer puts it, as doctor's rch check asks of it:
# its version line (rch-common's), its own release as the JSON object
# `--capabilities` prints (the two agree, as for an rch installed with
# --locked), and `jobs recover --help` exiting 0 (rch 2.1 and later; rch
# 1.x has no `jobs`). Anything else fails, as with no daemon to ask.
stand_in_rch() {
  printf '#!/bin/sh\ncase "$*" in\n  --version) echo "rch 2.1.34 (install-check stand-in)"; exit 0 ;;\n  --capabilities) printf "{\\n  \\"version\\": \\"2.1.34\\"\\n}\\n"; exit 0 ;;\n  "jobs recover --help") echo "usage: rch jobs recover <WRAPPER_ID>"; exit 0 ;;\nesac\nexit 1\n' > "$1"
  chmod 755 "$1"
}

step "doctor --as cron, as a user who is not root"
# What the operator runs after crontab -e: the installed binary re-executes
# itself with cron's HOME, LOGNAME, SHELL and PATH only, HOME and LOGNAME
# from the account's passwd entry, as Debian's cron gives them. As nobody,
# with a home of its own in the work folder: rch where its installer puts it
# (~/.local/bin, on no cron PATH), leases where rch writes them. nobody's
# passwd home (/nonexistent) is changed in a copy of /etc/passwd bound over
# the real one in a private mount namespace only: the host's stays as it is.
chmod 711 "$work"
user_home=$work/nobody-home
mkdir -p "$user_home/.local/bin" "$user_home/.local/state/rch/job-leases"
stand_in_rch "$user_home/.local/bin/rch"
chown -R nobody: "$user_home"
awk -F: -v OFS=: -v home="$user_home" '$1 == "nobody" { $6 = home } { print }' /etc/passwd > "$work/passwd"
chmod 644 "$work/passwd"
as_nobody() {
  unshare --mount --propagation private -- sh -c 'mount --bind "$1" /etc/passwd && shift && exec "$@"' \
    sh "$work/passwd" runuser -u nobody -- env -i HOME="$user_home" LOGNAME=nobody PATH=/usr/bin:/bin "$@" \
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

step "the maintainer scripts where no systemd runs: nothing asked of it"
# Called as dpkg calls them, in a world without /run/systemd/system (a
# container, a chroot): deb-systemd-helper's bookkeeping only.
run_script() {
  in_world "$1" "$2" env DPKG_MAINTSCRIPT_PACKAGE="$PACKAGE" DPKG_MAINTSCRIPT_NAME="${3##*.}" \
    "/var/lib/dpkg/info/$3" "$4" "${5:-}" || fail "$3 $4 ${5:-} (systemd: $1, policy-rc.d: $2): $(cat "$work/world.out")"
}
run_script no none "$PACKAGE.postinst" configure "$version"
expect_calls "postinst configure $version, no systemd" ""
expect_helper "postinst configure $version, no systemd" "--user update-state rch-sweep.timer"
run_script no none "$PACKAGE.prerm" remove
expect_calls "prerm remove, no systemd" ""
run_script yes none "$PACKAGE.prerm" upgrade "$upgrade_version"
expect_calls "prerm upgrade, systemd running" ""

step "textfile metrics: Debian's folder opened to a group with dpkg-statoverride, served by the real node_exporter"
# README, "The textfile folder": /var/lib/prometheus/node-exporter belongs
# to prometheus-node-exporter, root's and 0755; a statoverride opens it to
# the sweeping users' group in a way dpkg itself keeps. Here with a
# throwaway account whose group is the one let in; afterwards the folder is
# as it was.
[ -d "$textfile_dir" ] || fail "$textfile_dir does not exist: is prometheus-node-exporter installed? (.ci/run installs it)"
exporter=$(command -v prometheus-node-exporter) || fail "prometheus-node-exporter is not installed (.ci/run installs it)"
dpkg-statoverride --list "$textfile_dir" >/dev/null 2>&1 \
  && fail "$textfile_dir has a statoverride already; I check on a folder nobody configured"
textfile_before=$(stat -c '%U %G %a' "$textfile_dir")
mkdir -m 0755 "$work/check-home"
useradd --home-dir "$work/check-home/$check_user" --create-home --user-group --shell /bin/sh "$check_user" \
  || fail "useradd $check_user"
made_user=yes
# dpkg leaves an existing folder's owner and mode alone when it unpacks it
# again (an upgrade of node_exporter), but makes the folder root's and 0755
# whenever it is missing (a new host, a reinstall after a purge): then a
# chmod made by hand is gone, and only a statoverride, dpkg's own record of
# the owner and mode wanted, is applied. A package of the check's own that
# ships Debian's folder, as Debian ships it, makes dpkg unpack that folder
# again; for a folder made anew it ships one of its own beside it, under an
# override set before it is installed. (Never hide Debian's folder from dpkg
# to have it made anew: dpkg would take a listed folder it cannot find out of
# prometheus-node-exporter's file list.)
probe_dir=/var/lib/rch-sweep-ic-probe
[ ! -e "$probe_dir" ] || fail "$probe_dir exists already"
mkdir -p "$work/probe/DEBIAN" "$work/probe$textfile_dir" "$work/probe$probe_dir"
chmod 0755 "$work/probe$textfile_dir" "$work/probe$probe_dir"
printf 'Package: rch-sweep-ic-probe\nVersion: 1\nArchitecture: all\nMaintainer: install-check <ic@example.org>\nDescription: ships %s, as prometheus-node-exporter does\n' \
  "$textfile_dir" > "$work/probe/DEBIAN/control"
dpkg-deb --root-owner-group --build "$work/probe" "$work/probe.deb" >/dev/null || fail "dpkg-deb --build the probe"
# The commands the README gives, with the account's group for `rch-metrics`;
# the probe's own folder gets the same override, before it exists.
textfile_override=yes
dpkg-statoverride --update --add root "$check_user" 1775 "$textfile_dir" \
  || fail "dpkg-statoverride --update --add root $check_user 1775 $textfile_dir"
[ "$(stat -c '%U %G %a' "$textfile_dir")" = "root $check_user 1775" ] \
  || fail "after dpkg-statoverride --update: $(stat -c '%U %G %a' "$textfile_dir")"
dpkg-statoverride --add root "$check_user" 1775 "$probe_dir" || fail "dpkg-statoverride --add ... $probe_dir"
dpkg -i "$work/probe.deb" >/dev/null || fail "dpkg -i the probe"
after_unpack=$(stat -c '%U %G %a' "$textfile_dir")
made=$(stat -c '%U %G %a' "$probe_dir")
dpkg --purge rch-sweep-ic-probe >/dev/null || fail "dpkg --purge the probe"
dpkg-statoverride --remove "$probe_dir" || fail "dpkg-statoverride --remove $probe_dir"
[ -d "$textfile_dir" ] && dpkg-query -S "$textfile_dir" 2>/dev/null | grep -q prometheus-node-exporter \
  || fail "after the probe, $textfile_dir is gone or no longer prometheus-node-exporter's"
[ ! -e "$probe_dir" ] || fail "the probe left $probe_dir"
[ "$after_unpack" = "root $check_user 1775" ] \
  || fail "dpkg unpacking $textfile_dir again left it '$after_unpack', not 'root $check_user 1775'"
echo "ok: dpkg unpacked $textfile_dir again (as an upgrade of node_exporter does) and kept it: $after_unpack"
[ "$made" = "root $check_user 1775" ] \
  || fail "dpkg made a folder under an override as '$made', not 'root $check_user 1775'"
echo "ok: dpkg makes a folder anew (a new host, a reinstall after a purge) as its override says: $made"
# The account's sweep writes its file there, as its timer or cron line would.
check_home="$work/check-home/$check_user"
mkdir -p "$check_home/.local/bin" "$check_home/.local/state/rch/job-leases"
stand_in_rch "$check_home/.local/bin/rch"
chown -R "$check_user:" "$check_home"
prom="$textfile_dir/rch-sweep-$check_user.prom"
runuser -u "$check_user" -- env -i HOME="$check_home" LOGNAME="$check_user" PATH=/usr/bin:/bin \
  sh -c 'umask 077; rch-sweep --quiet --metrics-file "/var/lib/prometheus/node-exporter/rch-sweep-$LOGNAME.prom"' \
  || fail "rch-sweep --metrics-file as $check_user"
[ -f "$prom" ] || fail "the sweep of $check_user wrote no $prom"
# node_exporter as Debian's unit runs it (user prometheus), the textfile
# collector only, on a loopback port.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
runuser -u prometheus -- "$exporter" --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$textfile_dir" --web.listen-address="127.0.0.1:$port" \
  > "$work/exporter.log" 2>&1 &
exporter_pid=$!
scraped=no
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  if curl -sf "http://127.0.0.1:$port/metrics" > "$work/scrape.txt" 2>/dev/null; then
    scraped=yes
    break
  fi
  sleep 0.5
done
kill "$exporter_pid" 2>/dev/null || true
wait "$exporter_pid" 2>/dev/null || true
exporter_pid=
[ "$scraped" = yes ] || fail "node_exporter did not answer on 127.0.0.1:$port: $(cat "$work/exporter.log")"
grep -qF "rch_sweep_exit_code{lease_dir=\"$check_home/.local/state/rch/job-leases\"} 0" "$work/scrape.txt" \
  || fail "node_exporter does not serve $check_user's rch_sweep_exit_code: $(grep -E 'rch_sweep|textfile' "$work/scrape.txt")"
grep -qx 'node_textfile_scrape_error 0' "$work/scrape.txt" \
  || fail "node_exporter could not read a file of $textfile_dir: $(grep textfile "$work/scrape.txt")"
echo "ok: node_exporter (as prometheus) serves $check_user's $(grep -F rch_sweep_exit_code "$work/scrape.txt" | grep -v '^#')"
# Afterwards the folder is as it was, with no override left.
dpkg-statoverride --remove "$textfile_dir" || fail "dpkg-statoverride --remove $textfile_dir"
textfile_override=no
restore_textfile_dir
[ "$(stat -c '%U %G %a' "$textfile_dir")" = "$textfile_before" ] || fail "$textfile_dir is not as it was"
userdel "$check_user" 2>/dev/null || fail "userdel $check_user"
groupdel "$check_user" 2>/dev/null || true
made_user=no

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

step "upgrade to $upgrade_version, where systemd runs: reloaded, the active timers try-restarted"
in_world yes none dpkg -i "$upgrade_deb" || fail "dpkg -i $upgrade_deb: $(cat "$work/world.out")"
cat "$work/world.out"
# Old prerm upgrade asks nothing; the new postinst reloads, so systemd
# reads the new timers, and try-restarts the running instances, so their
# next elapse follows the new OnUnitInactiveSec= (nothing not running starts).
expect_calls "upgrade" "$reload$try_restart"
expect_helper "upgrade" "--user update-state rch-sweep.timer"
# The administrator's --global enable is recorded, so it is kept up to date.
expect_helper "upgrade" "--user enable rch-sweep.timer"
grep -q 'systemctl --user daemon-reload' "$work/world.out" \
  || fail "the upgrade did not tell users how their own managers pick up the new timer: $(cat "$work/world.out")"
for timer in /usr/lib/systemd/system/rch-sweep@.timer /usr/lib/systemd/user/rch-sweep.timer; do
  grep -qx 'OnUnitInactiveSec=7min' "$timer" || fail "after the upgrade $timer does not say OnUnitInactiveSec=7min"
done
for link in "$system_link" "$user_link"; do
  [ -L "$link" ] && [ -f "$(readlink "$link")" ] || fail "the upgrade broke $link"
done
[ "$(dpkg-query -W -f '${Version}' "$PACKAGE")" = "$upgrade_version" ] || fail "dpkg does not list $upgrade_version"
echo "ok: $upgrade_version installed, timers at 7 minutes, enablement kept"
if [ -d /run/systemd/system ]; then
  echo "NOTE: systemd runs on this machine, but the check's dpkg runs saw a private world; its own manager was not asked"
fi

step "dpkg -r where systemd runs: instances stopped, systemd reloaded, enablement kept for a reinstall"
in_world yes none dpkg -r "$PACKAGE" || fail "dpkg -r $PACKAGE: $(cat "$work/world.out")"
cat "$work/world.out"
expect_calls "dpkg -r" "$stop_asked$stop_done$list_sweeps$reload"
expect_helper "dpkg -r" "--user mask rch-sweep.timer"
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

step "dpkg -r where a policy-rc.d forbids stops, a sweep running: left to finish, no daemon-reload under it"
# As in a container: prerm's stop is refused by policy-rc.d (exit 101), so
# rch-sweep@nobody.service is still sweeping when postrm runs. A
# daemon-reload then would leave it without its unit file, on systemd's
# defaults (killed at the default timeout, not its own 25 minutes), so
# postrm reloads nothing and says what to run when the sweep is done.
in_world yes none dpkg -i "$upgrade_deb" || fail "reinstall $upgrade_deb: $(cat "$work/world.out")"
expect_calls "reinstall after dpkg -r" "$reload$try_restart"
expect_helper "reinstall after dpkg -r" "--user unmask rch-sweep.timer"
echo 'rch-sweep@nobody.service loaded activating start start Recover dead rch client leases of nobody (one sweep)' \
  > "$work/running"
in_world yes forbid dpkg -r "$PACKAGE" || fail "dpkg -r $PACKAGE under policy-rc.d 101: $(cat "$work/world.out")"
cat "$work/world.out"
expect_calls "dpkg -r, policy-rc.d 101, a sweep running" "$stop_asked$list_sweeps"
grep -q 'rch-sweep@nobody.service is still sweeping' "$work/world.out" \
  || fail "postrm did not say that it left rch-sweep@nobody.service to finish: $(cat "$work/world.out")"
grep -qF "systemctl stop 'rch-sweep@*.timer' && systemctl daemon-reload" "$work/world.out" \
  || fail "postrm did not say what to run when the sweep is done: $(cat "$work/world.out")"
echo "ok: the running sweep is left to finish under its own unit; the administrator is told to reload after it"
# With the sweep done, the same postrm reloads, policy-rc.d or not (a
# reload starts and stops nothing).
rm -f "$work/running"
run_script yes forbid "$PACKAGE.postrm" remove
expect_calls "postrm remove, policy-rc.d 101, no sweep running" "$list_sweeps$reload"
run_script no forbid "$PACKAGE.postrm" remove
expect_calls "postrm remove, no systemd" ""

step "dpkg --purge: nothing of the package stays, no link to its units, /etc/systemd as before"
in_world yes none dpkg --purge "$PACKAGE" || fail "dpkg --purge $PACKAGE: $(cat "$work/world.out")"
cat "$work/world.out"
expect_calls "dpkg --purge" "$list_sweeps$reload"
expect_helper "dpkg --purge" "--user purge rch-sweep.timer"
expect_helper "dpkg --purge" "--user unmask rch-sweep.timer"
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
find /var/lib/systemd -path '*deb-systemd*' 2>/dev/null | sort > "$work/dsh-state.after"
diff "$work/dsh-state.before" "$work/dsh-state.after" \
  || fail "deb-systemd-helper's state differs from before the install (< before, > after)"
echo "deb-systemd-helper's state as before"

printf '\ninstall-check: ok: %s built, linted, installed, verified, used, enabled, upgraded, removed (with and without a forbidding policy-rc.d), purged\n' "$(basename "$deb")"
