#!/bin/sh
# Proves the Debian package the way an operator meets it (issue 12): builds
# it with the one command (scripts/package.sh), lints it, installs it with
# dpkg, uses what it installed, removes and purges it, and checks that none
# of its files stay behind.
#
#   sudo scripts/install-check.sh        # by hand, as root
#
# CI runs it (.ci/run) on its clean machine. It installs what it needs: the
# pinned cargo-deb, and from Debian lintian, man-db, bash-completion and
# systemd (zsh and fish are checked when present; .ci/run installs them).
# Whatever fails is named on the last line, and a package it installed is
# purged again. Refuses to run where rch-sweep is installed already, so it
# never removes an operator's own installation.
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
cleanup() {
  status=$?
  if [ "$installed" = yes ]; then
    echo "install-check: purging $PACKAGE after the failure above" >&2
    dpkg --purge "$PACKAGE" >/dev/null 2>&1 || true
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

step "installing enables nothing: no maintainer scripts"
dpkg-deb --ctrl-tarfile "$deb" | tar -t | sed 's|^\./||' | grep -v '^$' > "$work/control-files"
cat "$work/control-files"
if grep -Eqx 'preinst|postinst|prerm|postrm|config|triggers' "$work/control-files"; then
  fail "the package has maintainer scripts; installing it must enable and start nothing"
fi

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

step "dpkg -r, then --purge: nothing of the package stays"
dpkg -r "$PACKAGE" || fail "dpkg -r $PACKAGE"
# With no conffiles, -r already forgets the package; purge what may remain.
if dpkg-query -W -f '${db:Status-Status}' "$PACKAGE" 2>/dev/null | grep -qx config-files; then
  dpkg --purge "$PACKAGE" || fail "dpkg --purge $PACKAGE"
fi
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

printf '\ninstall-check: ok: %s built, linted, installed, used, removed\n' "$(basename "$deb")"
