#!/usr/bin/env bash
# rch-sweep against the real rch, end to end (issue 33).
#
#   scripts/real-rch-e2e.sh              install (once) and run every step
#   scripts/real-rch-e2e.sh --versions   print the pinned versions and where they live
#   scripts/real-rch-e2e.sh --install    only install (or find) the pinned binaries
#   scripts/real-rch-e2e.sh --keep-journals DIR
#                                        also copy the journals rch wrote (before and
#                                        after recovery), the stderr of the real rch
#                                        where a step provokes a refusal (stderr-*.txt)
#                                        and what `rch --capabilities` printed
#                                        (stdout-capabilities.txt) into DIR
#                                        (tests/data/real-rch-<version> was made so)
#   --rch-version 2.1.N                  the rch release to run against (default 2.1.34):
#                                        rch and rchd 2.1.N, rch-wkr 2.1.7; combines with
#                                        each of the above
#
# Steps whose behaviour differs by release expect each release's (rch-lease-format.md
# section 10): before 2.1.17 rch writes no daemon mark (no daemon_exit_code), takes no
# per-lease .recovery.lock (the manual-lock steps are skipped, said so) and has no 24-hour
# wait for a build its daemon forgot (the lease is recovered at once); 2.1.17 to 2.1.33
# never complete such a build (it must be reported stuck, not charged); 2.1.34 waits until
# the lease is 24 hours old, then completes it with daemon_record_absent. rchd 2.1.8 to
# 2.1.16 recover leases themselves with no lock: doctor's daemon check must warn of them.
# Every release names itself in `rch --capabilities`' "version", the release a run decides
# by (`rch --version` prints rch-common's version; both name the release for a --locked
# install of 2.1.16 and of 2.1.34).
#
# It installs the published rch, rchd and rch-wkr at pinned versions (and the rch 1.x
# line, which has no `jobs` command, when it can be had: it is not on crates.io, so
# RCH_E2E_RCH1=<path> names one from an older install, else its step is skipped) with
# `cargo +nightly install --locked` into a cache folder outside the checkout, once:
# later runs reuse it. The first install took 47 minutes on two busy cores (rch 38,
# rchd 7, rch-wkr 2: they share one target folder); a later run takes about 2.5 minutes.
#
# Then, as root, in a private mount namespace with loopback only (`unshare --mount
# --net`, `ip link set lo up`; tmpfs over /tmp, /run, /home and /srv; the two users
# exist only in a copy of /etc bound over it there; systemd is never started):
# a build user and a worker user, sshd on 127.0.0.1 with a key (in a mount namespace
# of its own, so the worker's /srv/projects is not the build user's), rchd as the build
# user at /run/user/<uid>/rch.sock, a tiny cargo project, and real `rch exec` builds
# that leave real leases. Each check is a named step with its verdict; the last line
# says `N passed, M failed` (and how many were skipped), and the exit status is 0 only
# when no step failed. rch's calls are recorded (~/.local/bin/rch runs the real rch and
# keeps each call's stderr and environment; `rch exec` is the real rch itself), so steps
# can hold rch-sweep's children to what the real rch printed.
# Everything it started is stopped, by process id, and its mounts go with the
# namespace.
set -uo pipefail

usage() {
  echo "usage: $0 [--rch-version 2.1.N] [--versions | --install | --keep-journals DIR]" >&2
  exit 2
}
MODE=run
KEEP_ARG=
RCH_LINE=2.1.34
while [ $# -gt 0 ]; do
  case "$1" in
    --versions) MODE=versions ;;
    --install) MODE=install ;;
    --inside) MODE=inside ;;
    --keep-journals) [ $# -ge 2 ] || usage; KEEP_ARG=$2; shift ;;
    --keep-journals=*) KEEP_ARG=${1#*=} ;;
    --rch-version) [ $# -ge 2 ] || usage; RCH_LINE=$2; shift ;;
    --rch-version=*) RCH_LINE=${1#*=} ;;
    -h|--help) sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
  shift
done
[[ "$RCH_LINE" =~ ^2\.1\.([0-9]|[12][0-9]|3[0-4])$ ]] \
  || { echo "real-rch-e2e: --rch-version takes a published 2.1 release, 2.1.0 to 2.1.34 (got: $RCH_LINE)" >&2; exit 2; }

RCH_VERSION=$RCH_LINE
RCHD_VERSION=$RCH_LINE
WKR_VERSION=2.1.7
RCH1_VERSION=1.0.58
# What the release does (rch-lease-format.md section 10), 1 or 0:
REL=${RCH_LINE##*.}
DAEMON_MARK=0; [ "$REL" -ge 17 ] && DAEMON_MARK=1      # completion carries daemon_exit_code
RECOVERY_LOCK=0; [ "$REL" -ge 17 ] && RECOVERY_LOCK=1  # jobs recover flocks <id>.recovery.lock
WAIT_24H=0; [ "$REL" -ge 34 ] && WAIT_24H=1            # a forgotten build: wait 24 h, then record absent
CACHE=${RCH_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rch-sweep-e2e}
HERE=$(cd "$(dirname "$0")/.." && pwd)
SELF="$HERE/scripts/real-rch-e2e.sh"

# crate:version, and where `cargo install --root` puts its binary.
# The rch 1.x line is not on crates.io (it holds rch 2.1.0 to 2.1.34 only): its install is
# tried, and when it fails, an rch 1.x from an older install can be named with
# RCH_E2E_RCH1=<path>; without one, its step is skipped (and said so).
PINNED=("rch:$RCH_VERSION" "rchd:$RCHD_VERSION" "rch-wkr:$WKR_VERSION" "rch:$RCH1_VERSION")
bin_of() {
  local n=${1%%:*} v=${1##*:}
  if [ "$1" = "rch:$RCH1_VERSION" ] && [ -n "${RCH_E2E_RCH1:-}" ]; then echo "$RCH_E2E_RCH1"; return; fi
  echo "$CACHE/$n-$v/bin/$n"
}

versions() {
  for spec in "${PINNED[@]}"; do
    local path; path=$(bin_of "$spec")
    if [ -x "$path" ]; then state=installed; else state="not installed"; fi
    local n=${spec%%:*} v=${spec##*:}
    [ -x "$path" ] || [ ! -e "$CACHE/$n-$v.unavailable" ] || state="not installed: $(cat "$CACHE/$n-$v.unavailable")"
    printf '%-8s %-7s %s (%s)\n' "${spec%%:*}" "${spec##*:}" "$path" "$state"
  done
}

install() {
  mkdir -p "$CACHE"
  for spec in "${PINNED[@]}"; do
    local n=${spec%%:*} v=${spec##*:} path; path=$(bin_of "$spec")
    if [ -x "$path" ]; then echo "install: have $n $v ($path)"; continue; fi
    if [ "$spec" = "rch:$RCH1_VERSION" ] && [ -e "$CACHE/$n-$v.unavailable" ]; then
      echo "install: $n $v is not available ($(cat "$CACHE/$n-$v.unavailable")); its step is skipped (RCH_E2E_RCH1=<path> names one)"
      continue
    fi
    echo "install: $n $v (cargo +nightly install --locked; about 20 minutes on two cores)"
    local started=$SECONDS
    if ! CARGO_TARGET_DIR="$CACHE/target" nice -n 10 cargo +nightly install --locked --root "$CACHE/$n-$v" "$n" --version "$v" \
        >"$CACHE/install-$n-$v.log" 2>&1; then
      echo "install: $n $v failed; see $CACHE/install-$n-$v.log" >&2
      tail -3 "$CACHE/install-$n-$v.log" >&2
      if [ "$spec" = "rch:$RCH1_VERSION" ] && grep -q "could not find" "$CACHE/install-$n-$v.log"; then
        grep -m1 "could not find" "$CACHE/install-$n-$v.log" | sed 's/^error: //' >"$CACHE/$n-$v.unavailable"
        echo "install: $n $v is not published; its step is skipped (RCH_E2E_RCH1=<path> names one from an older install)"
        continue
      fi
      return 1
    fi
    echo "install: $n $v done in $(( (SECONDS - started) / 60 )) min"
  done
}

case "$MODE" in
  versions) versions; exit 0 ;;
  install) install; exit $? ;;
esac

if [ "${E2E_INSIDE:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "real-rch-e2e: run as root (users, sshd, a mount namespace)" >&2; exit 2; }
  KEEP=
  if [ -n "$KEEP_ARG" ]; then
    KEEP=$(mkdir -p "$KEEP_ARG" && cd "$KEEP_ARG" && pwd) || exit 2
  fi
  for tool in unshare ip sshd ssh ssh-keygen rsync python3 setpriv jq cargo; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] \
      || { echo "real-rch-e2e: $tool is missing (apt-get install openssh-server rsync iproute2 util-linux python3 jq)" >&2; exit 2; }
  done
  install || exit 1
  echo "build: rch-sweep (cargo build --release)"
  (cd "$HERE" && cargo build --release --quiet --bin rch-sweep) || exit 1
  [ -x "$HERE/target/release/rch-sweep" ] || { echo "real-rch-e2e: no $HERE/target/release/rch-sweep" >&2; exit 1; }
  export E2E_INSIDE=1 E2E_KEEP="$KEEP" E2E_CACHE="$CACHE" E2E_HERE="$HERE"
  exec unshare --mount --net --propagation private -- bash "$SELF" --inside --rch-version "$RCH_LINE"
fi

# ---------------------------------------------------------------- inside the namespace
[ -n "${E2E_TRACE:-}" ] && set -x
CACHE=$E2E_CACHE
HERE=$E2E_HERE
PASSED=0
FAILED=0
SKIPPED=0
STARTED_PIDS=()
T0=$SECONDS

say() { printf '%s\n' "$*"; }
detail() { printf '    %s\n' "$*" >>"$S/details.log"; }
# step NAME VERDICT(0 pass) [WHY]
verdict() {
  if [ "$2" = 0 ]; then PASSED=$((PASSED + 1)); say "PASS  $1${3:+: $3}"
  else FAILED=$((FAILED + 1)); say "FAIL  $1${3:+: $3}"; fi
}

ip link set lo up || { echo "real-rch-e2e: ip link set lo up failed" >&2; exit 1; }
# The folder for --keep-journals, held open: /tmp is covered next, and it may lie there.
if [ -n "${E2E_KEEP:-}" ]; then exec 9<"$E2E_KEEP" || exit 1; fi
# The binaries first: the cache or the checkout may lie under /tmp, which is covered next.
mount -t tmpfs -o mode=0755 rch-e2e-stage /srv || exit 1
for spec in "${PINNED[@]}"; do
  [ "$spec" = "rch:$RCH1_VERSION" ] && [ ! -x "$(bin_of "$spec")" ] && continue
  cp "$(bin_of "$spec")" "/srv/${spec%%:*}-${spec##*:}" || { echo "real-rch-e2e: $(bin_of "$spec") is missing" >&2; exit 1; }
done
cp "$HERE/target/release/rch-sweep" /srv/rch-sweep || exit 1
for dir in /tmp /run /home /var/spool/cron/crontabs; do
  [ -d "$dir" ] || continue
  mount -t tmpfs -o mode=0755 rch-e2e "$dir" || { echo "real-rch-e2e: cannot mount a tmpfs on $dir" >&2; exit 1; }
done
chmod 1777 /tmp
if [ -d /var/spool/cron/crontabs ]; then   # crontab(1) writes here: ours, not the host's
  chgrp crontab /var/spool/cron/crontabs 2>/dev/null; chmod 1730 /var/spool/cron/crontabs
fi
S=/tmp/rch-e2e
mkdir -p "$S/bin" "$S/etc" "$S/rust/rustup" "$S/rust/cargo-bin" "$S/sshd" "$S/out"
: >"$S/details.log"

stop_all() {
  # Every process this script started, by its id, then whatever else still runs
  # in this network namespace (only what it started can be in it).
  for pid in "${STARTED_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  sleep 1
  local mine; mine=$(readlink /proc/$$/ns/net)
  for proc in /proc/[0-9]*; do
    local pid=${proc#/proc/}
    [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] && continue
    [ "$(readlink "$proc/ns/net" 2>/dev/null)" = "$mine" ] || continue
    kill -KILL "$pid" 2>/dev/null
  done
}
finish() {
  local code=$?
  stop_all
  if [ -n "${E2E_KEEP:-}" ] && [ -d "$S/out" ]; then
    cp "$S/out/"*.json "$S/out/"*.txt "/proc/$$/fd/9/" 2>/dev/null
    chown root:root "/proc/$$/fd/9/"*.json "/proc/$$/fd/9/"*.txt 2>/dev/null
    say "kept in $E2E_KEEP: $(ls "$S/out" | grep -c '\.json$') journals, $(ls "$S/out" | grep -c '^stderr-.*\.txt$') stderr files of rch, $(ls "$S/out" | grep -c '^stdout-.*\.txt$') stdout files of rch"
  fi
  if [ "$FAILED" -gt 0 ] && [ -s "$S/details.log" ]; then
    say "--- details of the failed steps"
    cat "$S/details.log"
  fi
  say "$PASSED passed, $FAILED failed${SKIPPED:+$( [ "$SKIPPED" = 0 ] || echo ", $SKIPPED skipped")} ($(( (SECONDS - T0) / 60 )) min $(( (SECONDS - T0) % 60 )) s inside)"
  [ "$FAILED" = 0 ] && [ "$code" = 0 ] && exit 0
  exit 1
}
trap finish EXIT

# The binaries, where the users can run them (root's home is private).
cp "/srv/rch-$RCH_VERSION" "$S/bin/rch"
cp "/srv/rchd-$RCHD_VERSION" "$S/bin/rchd"
cp "/srv/rch-wkr-$WKR_VERSION" "$S/bin/rch-wkr"
[ -f "/srv/rch-$RCH1_VERSION" ] && cp "/srv/rch-$RCH1_VERSION" "$S/bin/rch-1"
cp /srv/rch-sweep "$S/bin/rch-sweep"
chmod 0755 "$S/bin"/*
umount /srv && mount -t tmpfs -o mode=0755 rch-e2e /srv || exit 1

# The toolchain both users build with: root's rustup, read-only.
mount --bind "${RUSTUP_HOME:-/root/.rustup}" "$S/rust/rustup" && mount -o remount,bind,ro "$S/rust/rustup"
mount --bind "${CARGO_HOME:-/root/.cargo}/bin" "$S/rust/cargo-bin" && mount -o remount,bind,ro "$S/rust/cargo-bin"

# Two users, in a copy of /etc bound over the real one. (A copy bound over each account file
# alone is lost the moment the host replaces that file: a `useradd` or `userdel` outside renames
# a new /etc/passwd over the old, and the kernel then detaches every namespace's mount on it,
# so the users vanish mid-run: "your UID isn't in the passwd file". Nothing outside renames
# /etc itself.)
free_id() { local id=$1; while getent passwd "$id" >/dev/null || getent group "$id" >/dev/null; do id=$((id + 1)); done; echo "$id"; }
B=rchb; B_UID=$(free_id 23301)
W=rchw; W_UID=$(free_id $((B_UID + 1)))
BH=/home/$B; WH=/home/$W
cp -a /etc/. "$S/etc/"
printf '%s:x:%s:%s:rch-sweep e2e build user:%s:/bin/bash\n' "$B" "$B_UID" "$B_UID" "$BH" >>"$S/etc/passwd"
printf '%s:x:%s:%s:rch-sweep e2e worker:%s:/bin/bash\n' "$W" "$W_UID" "$W_UID" "$WH" >>"$S/etc/passwd"
printf '%s:x:%s:\n%s:x:%s:\n' "$B" "$B_UID" "$W" "$W_UID" >>"$S/etc/group"
printf '%s:*:20000:0:99999:7:::\n%s:*:20000:0:99999:7:::\n' "$B" "$W" >>"$S/etc/shadow"
mount --bind "$S/etc" /etc || exit 1
mkdir -p "$BH" "$WH" "/run/user/$B_UID" /run/sshd
chmod 0755 /run/sshd

RUNTIME=/run/user/$B_UID
SOCK=$RUNTIME/rch.sock
LEASES=$BH/.local/state/rch/job-leases
STATE=$BH/.local/state/rch/rch-sweep/backoff.json
BPATH="$BH/.local/bin:$S/bin:$S/rust/cargo-bin:/usr/local/bin:/usr/bin:/bin"

# As the build user, in its login-like environment (XDG_RUNTIME_DIR set), from $HOME.
as_b() {
  (cd "$BH" && exec setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- env -i \
    HOME="$BH" USER="$B" LOGNAME="$B" SHELL=/bin/bash PATH="$BPATH" \
    RUSTUP_HOME="$S/rust/rustup" CARGO_HOME="$BH/.cargo" XDG_RUNTIME_DIR="$RUNTIME" \
    ${E2E_EXTRA_ENV:-} "$@")
}
# As cron runs a line for the build user: HOME, LOGNAME, SHELL=/bin/sh, PATH=/usr/bin:/bin.
as_cron() {
  (cd "$BH" && exec setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- env -i \
    HOME="$BH" LOGNAME="$B" SHELL=/bin/sh PATH=/usr/bin:/bin "$@")
}
# As the shipped user unit runs it: the account's variables, XDG_RUNTIME_DIR, the unit's PATH.
as_timer() {
  (cd "$BH" && exec setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- env -i \
    HOME="$BH" USER="$B" LOGNAME="$B" SHELL=/bin/bash XDG_RUNTIME_DIR="$RUNTIME" \
    PATH=/usr/local/bin:/usr/bin:/bin "$@")
}

py() { python3 - "$@"; }

# --- the worker: its own key, rch-wkr in ~/.local/bin, the toolchain on PATH
# (and where rustup's installer puts it, ~/.cargo/bin and ~/.rustup: rch's remote
# command looks for `rustup` there)
mkdir -p "$WH/.ssh" "$WH/.local/bin" "$WH/.cargo/bin" "$BH/.cargo/bin"
for home in "$WH" "$BH"; do
  for tool in "$S/rust/cargo-bin"/*; do ln -s "$tool" "$home/.cargo/bin/${tool##*/}"; done
  ln -s "$S/rust/rustup" "$home/.rustup"
done
cp "$S/bin/rch-wkr" "$WH/.local/bin/rch-wkr"
mkdir -p "$BH/.ssh" "$BH/.local/bin" "$BH/.config/rch" "$BH/.cache"
ssh-keygen -q -t ed25519 -N '' -C "$B@rch-e2e" -f "$BH/.ssh/id_ed25519"
cp "$BH/.ssh/id_ed25519.pub" "$WH/.ssh/authorized_keys"
cat >"$WH/.ssh/environment" <<EOF
PATH=$WH/.local/bin:$WH/.cargo/bin:/usr/local/bin:/usr/bin:/bin
RUSTUP_HOME=$S/rust/rustup
CARGO_HOME=$WH/.cargo
RCH_WKR_CANONICAL_ROOT=/srv/projects
RCH_WKR_ALIAS_ROOT=/srv/dp
EOF
# A login shell resets PATH from /etc/profile: ~/.profile adds the toolchain back,
# as rustup's installer does ("$HOME/.cargo/env").
cat >"$WH/.profile" <<EOF
export PATH="\$HOME/.local/bin:\$HOME/.cargo/bin:\$PATH"
export RUSTUP_HOME="$S/rust/rustup" CARGO_HOME="\$HOME/.cargo"
export RCH_WKR_CANONICAL_ROOT=/srv/projects RCH_WKR_ALIAS_ROOT=/srv/dp
EOF
cp "$WH/.profile" "$WH/.bashrc"
chmod 0700 "$WH/.ssh" "$BH/.ssh"; chmod 0600 "$WH/.ssh/authorized_keys" "$WH/.ssh/environment"
chown -R "$W:$W" "$WH"; chmod 0755 "$WH"

# --- sshd on 127.0.0.1, in a mount namespace of its own: the worker's /srv is not ours.
ssh-keygen -q -t ed25519 -N '' -f "$S/sshd/host_key"
cat >"$S/sshd/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port 22
HostKey $S/sshd/host_key
PidFile $S/sshd/sshd.pid
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin no
PermitUserEnvironment yes
AllowUsers $W
MaxStartups 200
MaxSessions 100
Subsystem sftp internal-sftp
EOF
unshare --mount --propagation private -- sh -c '
  mount -t tmpfs -o mode=0755,size=64g rch-e2e-worker /srv || exit 1
  mkdir -p /srv/projects /srv/rch-tmp && chown "$1:$1" /srv/projects /srv/rch-tmp
  ln -s /srv/projects /srv/dp
  exec /usr/sbin/sshd -D -e -f "$2"' sh "$W" "$S/sshd/sshd_config" 2>"$S/sshd.log" &
STARTED_PIDS+=($!)

# --- the build user: rch's configuration, the worker, the project
cat >"$BH/.config/rch/workers.toml" <<EOF
[[workers]]
id = "lo"
host = "127.0.0.1"
user = "$W"
identity_file = "~/.ssh/id_ed25519"
total_slots = 16
priority = 100
EOF
cat >"$BH/.config/rch/config.toml" <<EOF
[path_topology]
canonical_root = "/srv/projects"
alias_root = "/srv/dp"

[transfer]
remote_base = "/srv/rch-tmp"

# A killed wrapper's reservation holds its slots until its lease is recovered:
# one slot a build, so the dead ones do not queue the next.
[compilation]
build_slots = 1

# The worker's build folder is a tmpfs: reserve little (the project is tiny).
[selection]
min_free_gb = 1.0
disk_gb_per_slot = 1.0
EOF
# Where cron's rch-sweep finds rch ($HOME/.local/bin, first on the build user's PATH too):
# the real rch behind a recorder. `rch exec` is the real rch itself (exec: the same pid, so a
# lease's wrapper_pid is rch's); every other call runs the real rch and keeps its stderr, its
# arguments, who called it and the two variables rch-sweep sets, one file pair a call in
# $CALLS, so the steps can read what the real rch printed to rch-sweep's children.
CALLS=$S/rch-calls
mkdir -p "$CALLS"; chmod 1777 "$CALLS"
cat >"$BH/.local/bin/rch" <<EOF
#!/bin/sh
case "\${1:-}" in exec) exec "$S/bin/rch" "\$@" ;; esac
n=\$(date +%s%N)-\$\$
{
  printf 'args: %s\n' "\$*"
  printf 'caller: %s\n' "\$(readlink /proc/\$PPID/exe 2>/dev/null)"
  printf 'cwd: %s\n' "\$PWD"
  printf 'RCH_NO_UPDATE_CHECK=%s\n' "\${RCH_NO_UPDATE_CHECK-unset}"
  printf 'RCH_DISABLE_CONFIG_CACHE=%s\n' "\${RCH_DISABLE_CONFIG_CACHE-unset}"
  printf 'RCH_JSON=%s\n' "\${RCH_JSON-unset}"
} >"$CALLS/\$n.meta"
"$S/bin/rch" "\$@" 2>"$CALLS/\$n.err"
rc=\$?
cat "$CALLS/\$n.err" >&2
echo "exit: \$rc" >>"$CALLS/\$n.meta"
exit \$rc
EOF
chmod 0755 "$BH/.local/bin/rch"
PROJECT=/srv/projects/hello
mkdir -p "$PROJECT/src"
ln -s /srv/projects /srv/dp   # rch's canonical root and its alias, as on a real fleet
cat >"$PROJECT/Cargo.toml" <<'EOF'
[package]
name = "hello"
version = "0.1.0"
edition = "2021"
build = "build.rs"

[dependencies]
EOF
cat >"$PROJECT/build.rs" <<'EOF'
// Sleeps as long as `stamp` says: a remote build long enough to kill its wrapper in.
fn main() {
    println!("cargo:rerun-if-changed=stamp");
    let secs: u64 = std::fs::read_to_string("stamp")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0);
    std::thread::sleep(std::time::Duration::from_secs(secs));
}
EOF
printf 'fn main() {\n    println!("hello from rch");\n}\n' >"$PROJECT/src/main.rs"
echo 0 >"$PROJECT/stamp"
# An rsync that waits first: a window between admission and the remote launch.
cat >"$S/bin/slow-rsync" <<'EOF'
#!/bin/sh
case "$*" in *--version*) ;; *) sleep "${E2E_RSYNC_DELAY:-0}" ;; esac
exec /usr/bin/rsync "$@"
EOF
chmod 0755 "$S/bin/slow-rsync"
chown -R "$B:$B" "$BH" "$PROJECT" /srv/projects
chown "$B:$B" "$RUNTIME"; chmod 0700 "$RUNTIME"

# --- rchd as the build user, at /run/user/<uid>/rch.sock
health() { py "$1" <<'EOF'
import socket, sys
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(sys.argv[1])
    s.sendall(b"GET /health\n"); s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk: break
        data += chunk
    sys.exit(0 if b" 200 " in data.split(b"\n")[0] + b" " and b'"healthy"' in data else 1)
except OSError:
    sys.exit(1)
EOF
}
RCHD_PID=
start_rchd() {
  # (a subshell that execs: $! is rchd itself)
  (cd "$BH" && exec setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- env -i \
    HOME="$BH" USER="$B" LOGNAME="$B" SHELL=/bin/bash PATH="$BPATH" XDG_RUNTIME_DIR="$RUNTIME" \
    rchd --foreground --socket "$SOCK" --metrics-port 0) >>"$S/rchd.log" 2>&1 &
  RCHD_PID=$!
  STARTED_PIDS+=("$RCHD_PID")
  for _ in $(seq 1 150); do health "$SOCK" && return 0; sleep 0.2; done
  return 1
}
stop_rchd() {
  [ -n "$RCHD_PID" ] || return 0
  kill -TERM "$RCHD_PID" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$RCHD_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$RCHD_PID" 2>/dev/null
  wait "$RCHD_PID" 2>/dev/null
  RCHD_PID=
}

ssh_ok=1
for _ in $(seq 1 50); do
  if as_b ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o ConnectTimeout=3 \
      -i "$BH/.ssh/id_ed25519" "$W@127.0.0.1" 'rustup run stable cargo --version && rch-wkr --version' \
      >"$S/ssh-check.log" 2>&1; then ssh_ok=0; break; fi
  sleep 0.2
done
verdict "setup: sshd on 127.0.0.1, the worker reached with a key, its toolchain and rch-wkr" "$ssh_ok" \
  "$(tr '\n' ' ' <"$S/ssh-check.log" | cut -c1-160)"
[ "$ssh_ok" = 0 ] || exit 1
start_rchd; verdict "setup: rchd $RCHD_VERSION answers as $B at $SOCK" $?
[ -n "$RCHD_PID" ] || exit 1
said=$(as_b "$S/bin/rch" --version 2>&1 | head -1)
ok=1; [ "$said" = "rch $RCH_VERSION" ] && ok=0
verdict "setup: the rch that runs is the release asked for (rch --version)" $ok "$said"
# rch's own release: the "version" of the JSON object --capabilities prints before it reads
# any configuration (rch-lease-format.md section 10.x), kept for tests/data
as_b "$S/bin/rch" --capabilities >"$S/out/stdout-capabilities.txt" 2>"$S/capabilities.err"; rc=$?
caps=$(jq -r 'select(.contract_version == "rch.capabilities.v1") | .version // empty' "$S/out/stdout-capabilities.txt" 2>/dev/null)
ok=1; [ $rc = 0 ] && [ "$caps" = "$RCH_VERSION" ] && ok=0
verdict "setup: rch --capabilities names rch's own release, the one a run decides by" $ok \
  "exit $rc, \"version\": \"${caps:-none}\" ($(wc -c <"$S/out/stdout-capabilities.txt") bytes)"
[ "${E2E_STOP_AFTER:-}" = setup ] && exit 0

# ---------------------------------------------------------------- builds and leases
# One `rch exec -- cargo build` in the project as the build user, in the background;
# sets BUILD_PID (the wrapper: rch itself, exec'd by setpriv and env).
BUILD_PID=
# Each build has a project of its own (a copy of hello): a dead lease keeps its source
# claimed on the worker until it is recovered, and rch fences overlapping builds off.
build() {
  local name=$1 sleep_secs=$2 project=/srv/projects/$1
  [ -d "$project" ] || cp -a "$PROJECT" "$project"
  echo "$sleep_secs" >"$project/stamp"; chown -R "$B_UID:$B_UID" "$project"
  (cd "$project" && exec setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- env -i \
    HOME="$BH" USER="$B" LOGNAME="$B" SHELL=/bin/bash PATH="$BPATH" \
    RUSTUP_HOME="$S/rust/rustup" CARGO_HOME="$BH/.cargo" XDG_RUNTIME_DIR="$RUNTIME" \
    RCH_REQUIRE_REMOTE=1 ${E2E_EXTRA_ENV:-} rch exec -- cargo build) >"$S/build-$name.log" 2>&1 &
  BUILD_PID=$!
}
# The journal of wrapper PID $1, once one names it (its path), within $2 seconds.
journal_of() {
  local pid=$1 until=$((SECONDS + $2))
  while [ $SECONDS -lt "$until" ]; do
    for f in "$LEASES"/rchw-*.json; do
      [ -f "$f" ] || continue
      if [ "$(jq -r .wrapper_pid "$f" 2>/dev/null)" = "$pid" ]; then echo "$f"; return 0; fi
    done
    sleep 0.05
  done
  return 1
}
# Waits up to $3 s until the jq filter $2 holds for journal $1.
wait_for() {
  local until=$((SECONDS + $3))
  while [ $SECONDS -lt "$until" ]; do
    jq -e "$2" "$1" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  return 1
}
id_of() { basename "$1" .json; }

# 0. A build that runs to its end: the setup works, and rch finishes its own lease.
# (rchd probes its worker first; until then a build may find none: tried again.)
for try in 1 2 3 4 5 6; do
  build ok 0
  wait "$BUILD_PID"; rc=$?
  [ "$rc" = 0 ] && break
  cp "$S/build-ok.log" "$S/build-ok-$try.log"
  sleep 5
done
OK_JOURNAL=$(journal_of "$BUILD_PID" 1)
ok=1
[ "$rc" = 0 ] && [ -n "$OK_JOURNAL" ] && jq -e '.terminal_acknowledged == true' "$OK_JOURNAL" >/dev/null && ok=0
verdict "build: a real rch exec -- cargo build on the worker over ssh finishes its lease" $ok \
  "exit $rc$( [ $ok = 0 ] || { echo "; $(tail -3 "$S/build-ok.log" | tr '\n' ' ' | cut -c1-300)"; })"
[ $ok = 0 ] || { detail "build-ok.log:"; sed 's/^/      /' "$S/build-ok.log" | tail -40 >>"$S/details.log"; exit 1; }
[ "${E2E_STOP_AFTER:-}" = build ] && exit 0

# 1. Killed mid-build: SIGKILL the wrapper while the remote build runs.
kill_mid_build() {
  build "$1" 30
  local pid=$BUILD_PID journal
  journal=$(journal_of "$pid" 60) || { detail "no journal for $1"; return 1; }
  wait_for "$journal" '.recovery.execution_started == true and .phase == "execute"' 90 \
    || { detail "$1 never reached execute: $(jq -c '{state,phase}' "$journal")"; return 1; }
  sleep 2
  kill -KILL "$pid"; wait "$pid" 2>/dev/null
  echo "$journal"
}
# 2. Killed before the remote launch: SIGKILL the wrapper while its source sync waits.
kill_before_launch() {
  E2E_EXTRA_ENV="RCH_RSYNC_BIN=$S/bin/slow-rsync E2E_RSYNC_DELAY=15" build "$1" 0
  local pid=$BUILD_PID journal
  journal=$(journal_of "$pid" 60) || { detail "no journal for $1"; return 1; }
  wait_for "$journal" '(.identity.remote_build_id // 0) > 0 and .recovery != null and (.recovery.execution_started | not)' 60 \
    || { detail "$1 was not admitted with a recipe before launch: $(jq -c '{state,phase}' "$journal")"; return 1; }
  sleep 1
  kill -KILL "$pid"; wait "$pid" 2>/dev/null
  echo "$journal"
}
# 3. Retained by rch itself: the wrapper's own ssh to the worker, carrying the running
# build, is cut (as a network drop would); rch exits without exact completion
# evidence and keeps the lease for `jobs recover`.
retained_by_rch() {
  build "$1" 30
  local pid=$BUILD_PID journal
  journal=$(journal_of "$pid" 60) || { detail "no journal for $1"; return 1; }
  wait_for "$journal" '.recovery.execution_started == true and .phase == "execute"' 90 \
    || { detail "$1 never reached execute"; return 1; }
  sleep 3
  # The ssh below the wrapper that carries the remote launch (it holds the source
  # activity lock on the worker), killed by id.
  local victims; victims=$(py "$pid" <<'PY'
import os, sys
children = {}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    children.setdefault(stat[stat.rindex(")") + 2:].split()[1], []).append(pid)
def below(pid):
    for child in children.get(pid, []):
        yield child
        yield from below(child)
for pid in below(sys.argv[1]):
    try:
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    if os.path.basename(args[0]) == b"ssh" and any(b"activity.lock" in a for a in args):
        print(pid)
PY
)
  [ -n "$victims" ] || detail "$1: no ssh below the wrapper carrying the build"
  for victim in $victims; do kill -KILL "$victim" 2>/dev/null; done
  local until=$((SECONDS + 90))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $until ]; do sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && { detail "$1: the wrapper did not exit after its ssh was cut"; kill -KILL "$pid"; }
  wait "$pid" 2>/dev/null
  echo "$journal"
}

# (while developing this script: E2E_DEBUG=FILE runs FILE here, with every helper above)
if [ -n "${E2E_DEBUG:-}" ]; then . "$E2E_DEBUG"; exit 0; fi
L1=$(kill_mid_build mid); r1=$?
verdict "lease: wrapper SIGKILLed while its remote build runs" $r1 "${L1:+$(id_of "$L1")}"
L2=$(kill_before_launch early); r2=$?
verdict "lease: wrapper SIGKILLed before the remote launch" $r2 "${L2:+$(id_of "$L2")}"
L3=$(retained_by_rch retained); r3=$?
ok=1; [ $r3 = 0 ] && jq -e '.terminal_acknowledged == false' "$L3" >/dev/null && ok=0
verdict "lease: one rch retains for recovery itself (its ssh session cut mid-build)" $ok \
  "${L3:+$(id_of "$L3"): $(grep -m1 -i 'recover' "$S/build-retained.log" | cut -c1-200)}"
L4=$(kill_mid_build mid2); r4=$?
verdict "lease: a fourth, for the daemon steps" $r4 "${L4:+$(id_of "$L4")}"
L5=$(kill_mid_build old); r5=$?
verdict "lease: a fifth, to be aged past 24 hours" $r5 "${L5:+$(id_of "$L5")}"
# The remote builds go on without their wrappers (rch launches them under nohup): wait
# until they have finished, so each recovery finds its durable completion on the worker.
worker_busy() {
  for proc in /proc/[0-9]*; do
    [ "$(stat -c %u "$proc" 2>/dev/null)" = "$W_UID" ] || continue
    case "$(cat "$proc/comm" 2>/dev/null)" in cargo|build-script-*|rustc) return 0 ;; esac
  done
  return 1
}
until=$((SECONDS + 180)); while worker_busy && [ $SECONDS -lt $until ]; do sleep 0.5; done
worker_busy && detail "the worker still builds after 180 s"
sleep 6   # every heartbeat is now older than --stale-after 5

keep() { # keep FILE NAME: a copy of a journal as rch wrote it, for tests/data
  [ -f "$1" ] && cp "$1" "$S/out/$2.json"
}
for pair in "L1:killed-mid-build" "L2:killed-before-launch" "L3:retained-by-rch" "L4:daemon-steps" "L5:aged"; do
  var=${pair%%:*}; f=${!var}; [ -n "$f" ] && keep "$f" "before-${pair##*:}"
done
[ -n "$OK_JOURNAL" ] && keep "$OK_JOURNAL" "finished-by-its-wrapper"

SWEEP="$S/bin/rch-sweep"
charged() { # how many leases the backoff state charges a failure (0 without a state file)
  [ -f "$STATE" ] || { echo 0; return; }
  jq '[(.leases // {})[] | select((.failures // 0) > 0)] | length' "$STATE" 2>/dev/null || echo unreadable
}
# The recorded calls of the real rch (the recorder in ~/.local/bin/rch): a mark before a step,
# then the .meta files of the calls made since whose arguments match an extended regex.
call_mark() { date +%s%N; }
calls_since() {
  local meta
  for meta in "$CALLS"/*.meta; do
    [ -e "$meta" ] || continue
    [[ "$(basename "$meta")" > "$1" ]] || continue
    grep -qE "^args: ($2)" "$meta" && echo "$meta"
  done
}
# keep_stderr META NAME: rch's stderr of that call, byte for byte, for --keep-journals DIR.
keep_stderr() { [ -n "$1" ] && [ -f "${1%.meta}.err" ] && cp "${1%.meta}.err" "$S/out/stderr-$2.txt"; }
one_line() { tr -d '\033' <"$1" | tr '\n' ' ' | cut -c1-240; }
journals_sum() { cat "$LEASES"/*.json 2>/dev/null | sha256sum | cut -c1-16; }

# ---------------------------------------------------------------- the steps
# dry run against rch --json jobs
as_b "$SWEEP" --dry-run --json --verbose --stale-after 5 >"$S/dry.json" 2>"$S/dry.err"
as_b rch --json jobs >"$S/jobs.json" 2>"$S/jobs.err"
py "$S/dry.json" "$S/jobs.json" >"$S/agree.txt" 2>&1 <<'EOF'
import json, sys
dry = json.load(open(sys.argv[1]))
jobs = json.load(open(sys.argv[2]))
listing = jobs.get("data", jobs)
rch = {}
for job in listing["jobs"]:
    lease = job["lease"]
    # rch before 2.1.17 lists no owner_presence, only wrapper_alive (true for Live, false for
    # Absent and Unknown alike): a live one is compared, otherwise only the terminal state.
    presence = job.get("owner_presence")
    if presence is None and job.get("wrapper_alive") is True:
        presence = "live"
    rch[lease["identity"]["local_wrapper_id"]] = (lease.get("terminal_acknowledged"), presence)
sweep = {}
for row in dry["leases"]:
    wid = row.get("wrapper_id") or row.get("file", "").removesuffix(".json")
    sweep[wid] = row["outcome"] if row["outcome"] != "skipped" else row["reason"]
bad = []
for wid, (terminal, presence) in sorted(rch.items()):
    verdict = sweep.get(wid)
    due = verdict in ("would_recover", "deferred")
    if terminal:
        ok = verdict == "terminal"
    elif presence is None:
        ok = verdict not in (None, "terminal")
    elif presence == "absent":
        ok = due
    elif presence == "live":
        ok = verdict == "owner_alive"
    else:
        ok = verdict in ("owner_unverified", "no_pid")
    if not ok:
        bad.append(f"{wid}: rch says terminal={terminal} owner={presence}, rch-sweep says {verdict}")
for wid in sorted(set(sweep) - set(rch)):
    bad.append(f"{wid}: judged by rch-sweep ({sweep[wid]}) but not listed by rch")
unlisted = sum(1 for _, presence in rch.values() if presence is None)
note = f" (rch listed no owner_presence for {unlisted}: terminal state compared)" if unlisted else ""
print(f"{len(rch)} journals, {sum(1 for v in sweep.values() if v in ('would_recover','deferred'))} due{note}")
for line in bad:
    print(line)
sys.exit(1 if bad else 0)
EOF
verdict "dry-run: rch-sweep --dry-run and rch --json jobs agree" $? "$(head -1 "$S/agree.txt")"
tail -n +2 "$S/agree.txt" | while read -r line; do detail "$line"; done

# rchd stopped → 75, nothing charged
stop_rchd
before=$(journals_sum)
as_b "$SWEEP" --json --stale-after 5 >"$S/down.json" 2>"$S/down.err"; rc=$?
ok=1
[ $rc = 75 ] && [ "$(journals_sum)" = "$before" ] \
  && jq -e '[.leases[] | select(.outcome != "skipped") | .outcome] | all(. == "deferred")' "$S/down.json" >/dev/null \
  && [ "$(charged)" = 0 ] && ok=0
[ $ok = 0 ] || detail "down: exit $rc; $(jq -c '{daemon, leases: [.leases[] | select(.outcome != "skipped") | {outcome, error}]}' "$S/down.json" | head -c 900)"
verdict "daemon down: rchd stopped gives 75, every lease deferred, nothing charged, no journal touched" $ok "exit $rc"
start_rchd || { verdict "rchd restarts" 1; exit 1; }

# cron's rch names ~/.cache/rch/rch.sock while rchd listens at /run/user/<uid> → 78
rm -f "$BH/.cache/rch/config.cache.json"
as_cron "$SWEEP" --json --stale-after 5 >"$S/cron78.json" 2>"$S/cron78.err"; rc=$?
err=$(jq -r '.error // ""' "$S/cron78.json" 2>/dev/null)
ok=1
[ $rc = 78 ] && grep -q "RCH_SOCKET_PATH=$SOCK" <<<"$err" && grep -q "$BH/.cache/rch/rch.sock" <<<"$err" \
  && [ "$(charged)" = 0 ] && ok=0
[ $ok = 0 ] || detail "cron 78: exit $rc; $err"
verdict "daemon elsewhere: cron's rch names ~/.cache/rch/rch.sock, rchd answers at $SOCK: 78 naming RCH_SOCKET_PATH, nothing charged" $ok "exit $rc"

# rch's own configuration broken for the build user (a TOML error in ~/.config/rch/config.toml):
# every `rch jobs recover` fails reading it, before it touches a journal. 78, no lease charged,
# no journal touched, the error naming the file and quoting rch's `Error:` line. Then the same
# with RCH_JSON=1 in the sweep's environment (with it, every rch 2.1 prints its error as JSON on
# stdout and nothing on stderr): every rch rch-sweep starts runs without it, so rch's answer is
# still read.
RCH_CONFIG=$BH/.config/rch/config.toml
cp -p "$RCH_CONFIG" "$S/config.toml.good"
printf '[general\nsocket_path = "%s"\n' "$SOCK" >"$RCH_CONFIG"
chown "$B:$B" "$RCH_CONFIG"
for extra in "" "RCH_JSON=1"; do
  name=config${extra:+-json}
  before=$(journals_sum)
  mark=$(call_mark)
  E2E_EXTRA_ENV="$extra" as_b "$SWEEP" --json --stale-after 5 >"$S/$name.json" 2>"$S/$name.err"; rc=$?
  err=$(jq -r '.error // ""' "$S/$name.json" 2>/dev/null)
  said=$(calls_since "$mark" "jobs recover " | tail -1)
  ok=1
  [ $rc = 78 ] && [ "$(journals_sum)" = "$before" ] && [ "$(charged)" = 0 ] \
    && grep -qF "configuration file $RCH_CONFIG" <<<"$err" && grep -qF "(rch: Error: Failed to parse \"$RCH_CONFIG\"" <<<"$err" \
    && [ -n "$said" ] && grep -q "^Error: Failed to parse" "${said%.meta}.err" && grep -qx 'RCH_JSON=unset' "$said" && ok=0
  [ $ok = 0 ] || detail "$name: exit $rc; $err; $(jq -c '[.leases[]? | {outcome, error}]' "$S/$name.json" 2>/dev/null | head -c 600); rch said: ${said:+$(one_line "${said%.meta}.err"); $(grep '^RCH_JSON' "$said")}"
  keep_stderr "$said" "$name"
  verdict "config: a broken ~/.config/rch/config.toml${extra:+, with $extra in the environment of the sweep}: 78, nothing charged, the error names the file and quotes rch" $ok \
    "exit $rc${said:+; rch: $(grep -m1 '^Error:' "${said%.meta}.err" | cut -c1-160)}"
done
cp -p "$S/config.toml.good" "$RCH_CONFIG"

# rch's config cache, flipped by an rch run from a project folder, changes nothing that
# doctor --as cron or a cron-like run sees: every rch rch-sweep starts has the cache off
# (RCH_DISABLE_CONFIG_CACHE=1), so each resolves the socket from cron's own environment
# (~/.cache/rch/rch.sock: no XDG_RUNTIME_DIR), and no sweep rewrites the user's cache.
# rch keeps one entry, keyed by the working folder's project config: first the build user's
# rch at a terminal (XDG_RUNTIME_DIR set, from $HOME) writes it with $SOCK, which a cached rch
# under cron would then name; then one from a project folder rewrites it for that folder.
CACHE_FILE=$BH/.cache/rch/config.cache.json
ROUTE_SOCK=$BH/.cache/rch/rch.sock
cache_sum() { sha256sum "$CACHE_FILE" 2>/dev/null | cut -c1-16; }
with_crontab() { # with_crontab FILE CMD...: CMD run while FILE is the build user's crontab
  command -v crontab >/dev/null || { echo "no crontab(1)" >"$S/crontab.err"; return 125; }
  setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- crontab "$1" 2>"$S/crontab.err" || return 125
  "${@:2}"; local rc=$?
  setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- crontab -r 2>/dev/null
  return $rc
}
doctor_socket() { # the socket doctor's daemon check names, from its JSON report $1
  jq -r '[.checks[]? | select(.check == "daemon") | .finding][0] // ""' "$1" 2>/dev/null \
    | sed -nE 's/^rch.s daemon (does not answer|answers) at ([^ ]+) \(.*/\2/p'
}
printf '*/5 * * * * %s --quiet --stale-after 5\n' "$SWEEP" >"$S/crontab-bare"
as_b rch --json --format json daemon status >/dev/null 2>&1
cached_then=$(cache_sum)
cron_cached=$(as_cron "$S/bin/rch" --json --format json daemon status 2>/dev/null | jq -r '.data.socket_path // ""')
with_crontab "$S/crontab-bare" as_b "$SWEEP" doctor --as cron --json >"$S/flip-doctor1.json" 2>"$S/flip-doctor1.err"
doctor1=$(doctor_socket "$S/flip-doctor1.json")
as_cron "$SWEEP" --json --stale-after 5 >"$S/flip-run1.json" 2>"$S/flip-run1.err"; rc1=$?
run1=$(jq -r '.daemon.socket // ""' "$S/flip-run1.json" 2>/dev/null)
swept_then=$(cache_sum)
# the flip: the build user's rch, run once from a project folder
(cd "$PROJECT" && exec setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- env -i \
  HOME="$BH" USER="$B" LOGNAME="$B" SHELL=/bin/bash PATH="$BPATH" XDG_RUNTIME_DIR="$RUNTIME" \
  rch --json --format json daemon status) >/dev/null 2>&1
flipped=$(cache_sum)
with_crontab "$S/crontab-bare" as_b "$SWEEP" doctor --as cron --json >"$S/flip-doctor2.json" 2>"$S/flip-doctor2.err"
doctor2=$(doctor_socket "$S/flip-doctor2.json")
as_cron "$SWEEP" --json --stale-after 5 >"$S/flip-run2.json" 2>"$S/flip-run2.err"; rc2=$?
run2=$(jq -r '.daemon.socket // ""' "$S/flip-run2.json" 2>/dev/null)
swept_after=$(cache_sum)
ok=1
[ "$doctor1" = "$ROUTE_SOCK" ] && [ "$doctor2" = "$ROUTE_SOCK" ] && [ "$run1" = "$ROUTE_SOCK" ] \
  && [ "$run2" = "$ROUTE_SOCK" ] && [ $rc1 = 78 ] && [ $rc2 = 78 ] && [ "$(charged)" = 0 ] \
  && [ "$swept_then" = "$cached_then" ] && [ "$swept_after" = "$flipped" ] && ok=0
flip_said="the cache rewritten by the project run: $([ -n "$flipped" ] && [ "$flipped" != "$cached_then" ] && echo yes || echo no); cron's rch with its cache on named ${cron_cached:-nothing}"
[ $ok = 0 ] || detail "cache flip: doctor --as cron saw '$doctor1' then '$doctor2', the cron-like runs '$run1' (exit $rc1) then '$run2' (exit $rc2), want $ROUTE_SOCK; cache $cached_then -> $swept_then (sweeps) -> $flipped (project run) -> $swept_after (sweeps); $flip_said; $(head -c 300 "$S/crontab.err" 2>/dev/null)"
verdict "cache flip: after rch ran from a project folder, doctor --as cron and a cron-like run still see cron's own socket ($ROUTE_SOCK, 78), and no sweep rewrote rch's config cache" $ok "$flip_said"

# rch 1.x as --rch → 78, nothing charged
if [ ! -x "$S/bin/rch-1" ]; then
  SKIPPED=$((SKIPPED + 1))
  say "SKIP  rch $RCH1_VERSION (no jobs command) as --rch: 78, nothing charged: no rch 1.x here (not on crates.io; RCH_E2E_RCH1=<path> names one)"
else
before=$(journals_sum)
as_b "$SWEEP" --json --stale-after 5 --rch "$S/bin/rch-1" >"$S/rch1.json" 2>"$S/rch1.err"; rc=$?
ok=1
[ $rc = 78 ] && [ "$(journals_sum)" = "$before" ] && [ "$(charged)" = 0 ] && ok=0
[ $ok = 0 ] || detail "rch 1.x: exit $rc; $(jq -c '{error, leases: [.leases[]? | {outcome, error}]}' "$S/rch1.json" 2>/dev/null | head -c 700); state: $(cat "$STATE" 2>/dev/null | head -c 300)"
verdict "rch $RCH1_VERSION (no jobs command) as --rch: 78, nothing charged" $ok "exit $rc"
fi
# whatever that run charged must not hold back the steps below
as_b "$SWEEP" forget --all >/dev/null 2>&1

# a manual rch jobs recover holds rch's lock → deferred; the same run recovers the rest
# (the lease killed mid-build: its recovery fetches the outputs, with an rsync that waits).
# rch before 2.1.17 takes no recovery lock: the run then recovers all three itself.
l1=$(id_of "$L1")
MANUAL=
if [ "$RECOVERY_LOCK" = 0 ]; then
  SKIPPED=$((SKIPPED + 2))
  say "SKIP  lock: a manual rch jobs recover holding rch's lock leaves its lease deferred: rch $RCH_VERSION takes no per-lease .recovery.lock (rch-lease-format.md section 10: from 2.1.17), so no manual recovery can be seen holding one"
  say "SKIP  lock: rch's own refusal while another recovery holds the lock (stderr kept): rch $RCH_VERSION has no such lock, hence no such refusal"
  as_b "$SWEEP" --json --stale-after 5 --max-recoveries 3 >"$S/lock.json" 2>"$S/lock.err"; rc=$?
  recovered_by_run="L1:killed-mid-build L2:killed-before-launch L3:retained-by-rch"
else
E2E_EXTRA_ENV="RCH_RSYNC_BIN=$S/bin/slow-rsync E2E_RSYNC_DELAY=20" \
  as_b rch jobs recover "$l1" --timeout-secs 120 >"$S/manual.log" 2>&1 &
MANUAL=$!
STARTED_PIDS+=("$MANUAL")
lock_held() { # the recovery lock of journal $1 appears in /proc/locks
  local ino; ino=$(stat -c %i "${1%.json}.recovery.lock" 2>/dev/null) || return 1
  grep -q ":$ino " /proc/locks
}
until=$((SECONDS + 30)); while ! lock_held "$L1" && [ $SECONDS -lt $until ]; do sleep 0.1; done
lock_held "$L1" || detail "lock: the manual recovery's lock never appeared in /proc/locks"
# rch's own refusal while the lock is held: its stderr (run as rch-sweep runs rch), kept for
# the phrase table
mark=$(call_mark)
E2E_EXTRA_ENV="RCH_NO_UPDATE_CHECK=1 RCH_DISABLE_CONFIG_CACHE=1" \
  as_b rch jobs recover "$l1" --timeout-secs 10 >/dev/null 2>&1; busy_rc=$?
busy=$(calls_since "$mark" "jobs recover $l1" | tail -1)
keep_stderr "$busy" busy-lock
ok=1
[ $busy_rc = 1 ] && [ -n "$busy" ] && grep -q "cannot acquire exclusive job recovery" "${busy%.meta}.err" && ok=0
verdict "lock: rch's own refusal while another recovery holds the lock (stderr kept)" $ok \
  "exit $busy_rc${busy:+: $(one_line "${busy%.meta}.err")}"
# (three attempts: the first three leases; the fourth and fifth wait for the steps below)
as_b "$SWEEP" --json --stale-after 5 --max-recoveries 3 >"$S/lock.json" 2>"$S/lock.err"; rc=$?
ok=1
jq -e --arg id "$l1" '.leases[] | select(.wrapper_id == $id) | .outcome == "deferred" and (.error | test("another process"))' "$S/lock.json" >/dev/null \
  && ! jq -e --arg id "$l1" '.leases[$id] | select((.failures // 0) > 0)' "$STATE" >/dev/null 2>&1 && ok=0
[ $ok = 0 ] || detail "lock: exit $rc; $(jq -c '[.leases[] | select(.outcome != "skipped") | {wrapper_id, outcome, error}]' "$S/lock.json" 2>/dev/null | head -c 800)"
verdict "lock: a manual rch jobs recover holding rch's lock leaves its lease deferred, nothing charged" $ok "exit $rc"
wait "$MANUAL"; manual_rc=$?
recovered_by_run="L2:killed-before-launch L3:retained-by-rch"
fi

# the real run's recoveries read back as rch's completion
completion() { # rch's completion, as the release's rchd verifies it (one journal)
  if [ "$DAEMON_MARK" = 1 ]; then
    jq -e '.terminal_acknowledged == true and .state == "finished" and .recovery.retired == true
      and (.recovery.returned | type == "number") and .recovery.returned == .exit_code
      and ((.recovery.daemon_exit_code | type == "number") or .recovery.daemon_record_absent == true)' "$1" >/dev/null
  else # before 2.1.17: no daemon handoff, so no daemon mark of either kind
    jq -e '.terminal_acknowledged == true and .state == "finished" and .recovery.retired == true
      and (.recovery.returned | type == "number") and .recovery.returned == .exit_code
      and (.recovery | has("daemon_exit_code") or has("daemon_record_absent") | not)' "$1" >/dev/null
  fi
}
ok=0; why=
for pair in $recovered_by_run; do
  var=${pair%%:*}; f=${!var}
  jq -e --arg id "$(id_of "$f")" '.leases[] | select(.wrapper_id == $id) | .outcome == "recovered"' "$S/lock.json" >/dev/null \
    && completion "$f" || { ok=1; why="$why $(id_of "$f") $(jq -r --arg id "$(id_of "$f")" '.leases[] | select(.wrapper_id == $id) | "\(.outcome) \(.error // "")"' "$S/lock.json" | cut -c1-200)"; }
  keep "$f" "after-${pair##*:}"
done
[ "$rc" = 0 ] || { ok=1; why="$why exit $rc"; }
if [ -n "$MANUAL" ]; then
  completion "$L1" || { ok=1; why="$why manual recovery of $l1 (exit $manual_rc) not complete"; }
  keep "$L1" "after-killed-mid-build"
fi
mark_said="with daemon_exit_code"; [ "$DAEMON_MARK" = 1 ] || mark_said="with no daemon mark (rch $RCH_VERSION writes none)"
verdict "recover: a real run recovers them, and the journals read back as rch's completion, $mark_said" $ok "${why:-exit $rc}"
# that run decided by rch's own release (--capabilities) and kept --version's line
ok=1
jq -e --arg v "$RCH_VERSION" '.rch.release == $v and (.rch.version | startswith("rch " + $v))' "$S/lock.json" >/dev/null && ok=0
verdict "release: the run's summary names rch's own release ($RCH_VERSION, from rch --capabilities) beside rch --version's line" $ok \
  "$(jq -c '.rch // "no rch object"' "$S/lock.json" 2>/dev/null | cut -c1-200)"

# doctor on the healthy host
as_b "$SWEEP" doctor --json >"$S/doctor.json" 2>&1; rc=$?
verdict "doctor: ok on the healthy host" $([ $rc = 0 ] && echo 0 || echo 1) \
  "exit $rc$( [ $rc = 0 ] || echo "; $(jq -r '[.checks[] | select(.status == "fail") | "\(.check): \(.finding)"] | join("; ")' "$S/doctor.json" 2>/dev/null | cut -c1-300)")"
# doctor names the release both answers agree on, and rchd's own from its /health reply,
# warning of an rchd 2.1.8 to 2.1.16 (it recovers leases itself, unlocked) and of no other
row_of() { jq -c --arg c "$1" '[.checks[]? | select(.check == $c)][0] // {}' "$S/doctor.json" 2>/dev/null; }
rch_row=$(row_of rch); daemon_row=$(row_of daemon)
UNLOCKED_RCHD=0; [ "${RCHD_VERSION##*.}" -ge 8 ] && [ "${RCHD_VERSION##*.}" -le 16 ] && UNLOCKED_RCHD=1
ok=1
if jq -e --arg v "$RCH_VERSION" '.finding | contains("(rch " + $v) and (contains("--capabilities") | not)' <<<"$rch_row" >/dev/null \
  && jq -e --arg v "$RCHD_VERSION" '.finding | contains("(rchd " + $v + ")")' <<<"$daemon_row" >/dev/null; then
  if [ "$UNLOCKED_RCHD" = 1 ]; then
    jq -e --arg v "$RCHD_VERSION" '.status == "warn" and (.finding | contains("rchd " + $v + " recovers dead leases itself"))' <<<"$daemon_row" >/dev/null && ok=0
  else
    jq -e '.finding | contains("recovers dead leases itself") | not' <<<"$daemon_row" >/dev/null && ok=0
  fi
fi
rchd_said="no warning for rchd $RCHD_VERSION"; [ "$UNLOCKED_RCHD" = 1 ] && rchd_said="a warning for rchd $RCHD_VERSION (it recovers leases itself, unlocked)"
verdict "doctor: rch $RCH_VERSION named by both answers, rchd's release from its /health reply, $rchd_said" $ok \
  "$(jq -r '.finding' <<<"$rch_row" | cut -c1-120) | $(jq -r '"\(.status) \(.finding)"' <<<"$daemon_row" | cut -c1-200)"
# doctor --as cron: with the fix in the crontab (the build user's)
printf 'RCH_SOCKET_PATH=%s\n*/5 * * * * %s --quiet\n' "$SOCK" "$SWEEP" >"$S/crontab"
if command -v crontab >/dev/null && setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- crontab "$S/crontab" 2>"$S/crontab.err"; then
  as_b "$SWEEP" doctor --as cron --json >"$S/doctor-cron.json" 2>&1; rc=$?
  setpriv --reuid="$B_UID" --regid="$B_UID" --clear-groups -- crontab -r 2>/dev/null
  verdict "doctor --as cron: ok with RCH_SOCKET_PATH on the crontab line" $([ $rc = 0 ] && echo 0 || echo 1) \
    "exit $rc$( [ $rc = 0 ] || echo "; $(jq -r '[(.reports // [.])[] | .checks[]? | select(.status == "fail") | "\(.check): \(.finding)"] | join("; ")' "$S/doctor-cron.json" 2>/dev/null | cut -c1-300)")"
else
  verdict "doctor --as cron: ok with RCH_SOCKET_PATH on the crontab line" 1 "crontab could not be installed: $(head -c 200 "$S/crontab.err")"
fi

# a cron-like run with the fix recovers the fourth lease (one attempt: the fifth waits)
as_cron env RCH_SOCKET_PATH="$SOCK" "$SWEEP" --json --stale-after 5 --max-recoveries 1 >"$S/cron.json" 2>"$S/cron.err"; rc=$?
ok=1; [ $rc = 0 ] && completion "$L4" && ok=0
keep "$L4" "after-daemon-steps"
verdict "cron: a cron-like run with RCH_SOCKET_PATH recovers" $ok "exit $rc"

# The fifth lease's build forgotten by rchd (restarted with its build history moved aside)
# and its heartbeat moved back, as an old lease's would be:
# - 2.1.34: rch waits until the lease is 24 h old ("acknowledgement waits until the lease is
#   24h old"): deferred, not charged, its next attempt at heartbeat + 24 h + 1 min; then,
#   past that, rch finishes it with daemon_record_absent and it is recovered;
# - 2.1.17 to 2.1.33: "no exact terminal receipt", forever: stuck, not charged;
# - before 2.1.17: no daemon handoff at all, so it is simply recovered, with no daemon mark.
stop_rchd
mkdir -p "$S/history-aside"
mv "$RUNTIME"/rch.history* "$S/history-aside/" 2>/dev/null
start_rchd || { verdict "rchd restarts without its history" 1; exit 1; }
set_heartbeat() { # set_heartbeat JOURNAL UNIX_MS: the one edit a journal gets here
  py "$1" "$2" <<'EOF'
import re, sys
path, aged = sys.argv[1], sys.argv[2]
text = open(path).read()
text, n = re.subn(r'("heartbeat_unix_ms": )\d+', lambda m: m.group(1) + aged, text, count=1)
assert n == 1
open(path, "w").write(text)
EOF
}
now_ms() { date +%s%3N; }
l5=$(id_of "$L5")
entry_of() { jq -c --arg id "$1" '(.leases // {})[$id] // empty' "$STATE" 2>/dev/null; }
outcome_of() { jq -r --arg id "$2" '[.leases[]? | select(.wrapper_id == $id) | .outcome][0] // "none"' "$1" 2>/dev/null; }
if [ "$WAIT_24H" = 1 ]; then
  # 45 s short of 24 hours: rch's answer comes well before the lease turns 24 h old.
  hb=$(( $(now_ms) - 24 * 3600 * 1000 + 45 * 1000 ))
  set_heartbeat "$L5" "$hb"
  keep "$L5" "before-aged-24h"
  next=$(( hb + 24 * 3600 * 1000 + 60 * 1000 ))
  mark=$(call_mark)
  as_b "$SWEEP" --json --stale-after 5 >"$S/wait.json" 2>"$S/wait.err"; rc=$?
  waited=$(calls_since "$mark" "jobs recover $l5" | tail -1)
  keep_stderr "$waited" 24h-wait
  keep "$L5" "waiting-24h"   # (not after-*: no completion)
  entry=$(entry_of "$l5")
  ok=1
  [ "$(outcome_of "$S/wait.json" "$l5")" = deferred ] && [ "$(charged)" = 0 ] \
    && jq -e --argjson next "$next" '(.failures // 0) == 0 and .next_attempt_unix_ms == $next' <<<"${entry:-null}" >/dev/null \
    && jq -e '.terminal_acknowledged == false' "$L5" >/dev/null \
    && [ -n "$waited" ] && grep -q "acknowledgement waits until the lease is 24h old" "${waited%.meta}.err" && ok=0
  [ $ok = 0 ] || detail "24 h wait: exit $rc; $(jq -c --arg id "$l5" '[.leases[]? | select(.wrapper_id == $id) | {outcome, error, next_attempt_unix_ms}]' "$S/wait.json" 2>/dev/null | head -c 600); entry ${entry:-none}, want next_attempt_unix_ms $next; rch said: ${waited:+$(one_line "${waited%.meta}.err")}"
  verdict "24 h wait: a lease under 24 h old whose build rchd forgot is deferred, not charged, next attempt at heartbeat + 24 h + 1 min (stderr kept)" $ok \
    "exit $rc${waited:+; rch: $(tail -1 "${waited%.meta}.err" | tr -d '\033' | cut -c1-160)}"
  # not started again before its time
  mark=$(call_mark)
  as_b "$SWEEP" --json --stale-after 5 >"$S/wait2.json" 2>"$S/wait2.err"; rc=$?
  ok=1
  [ "$(outcome_of "$S/wait2.json" "$l5")" = backing_off ] && [ -z "$(calls_since "$mark" "jobs recover $l5")" ] && ok=0
  verdict "24 h wait: a run before heartbeat + 24 h + 1 min starts no recovery of it" $ok "exit $rc, $(outcome_of "$S/wait2.json" "$l5")"
  # past it: rch finishes the journal with daemon_record_absent
  while [ "$(now_ms)" -le $((next + 1000)) ]; do sleep 1; done
  as_b "$SWEEP" --json --stale-after 5 >"$S/absent.json" 2>"$S/absent.err"; rc=$?
  ok=1
  [ $rc = 0 ] && [ "$(outcome_of "$S/absent.json" "$l5")" = recovered ] && completion "$L5" \
    && jq -e '.recovery.daemon_record_absent == true and (.recovery | has("daemon_exit_code") | not)' "$L5" >/dev/null \
    && [ -z "$(entry_of "$l5")" ] && ok=0
  [ $ok = 0 ] || detail "record absent: exit $rc; $(jq -c '[.leases[] | select(.outcome != "skipped") | {outcome, error}]' "$S/absent.json" 2>/dev/null | head -c 600); entry $(entry_of "$l5")"
  keep "$L5" "after-aged-24h-daemon-record-absent"
  verdict "24 h wait: once 24 h old it is recovered (daemon_record_absent), counted a success, its entry gone" $ok "exit $rc"
else
  SKIPPED=$((SKIPPED + 1))
  say "SKIP  24 h wait: a lease under 24 h old whose build rchd forgot is deferred until heartbeat + 24 h + 1 min: rch $RCH_VERSION has no 24-hour wait (from 2.1.34; rch-lease-format.md section 10)"
  set_heartbeat "$L5" $(( $(now_ms) - 25 * 3600 * 1000 ))
  keep "$L5" "before-aged-24h"
  mark=$(call_mark)
  as_b "$SWEEP" --json --stale-after 5 >"$S/absent.json" 2>"$S/absent.err"; rc=$?
  said=$(calls_since "$mark" "jobs recover $l5" | tail -1)
  ok=1
  if [ "$DAEMON_MARK" = 0 ]; then
    [ $rc = 0 ] && [ "$(outcome_of "$S/absent.json" "$l5")" = recovered ] && completion "$L5" \
      && [ -z "$(entry_of "$l5")" ] && ok=0
    keep "$L5" "after-aged-24h"
    what="recovered at once with no daemon mark (rch $RCH_VERSION has no daemon handoff), counted a success"
  else
    keep_stderr "$said" no-terminal-receipt
    [ "$(outcome_of "$S/absent.json" "$l5")" = stuck ] && [ "$(charged)" = 0 ] \
      && jq -e '.terminal_acknowledged == false' "$L5" >/dev/null && ok=0
    keep "$L5" "stuck-aged-24h"   # (not after-*: no completion)
    what="stuck, not charged (rch $RCH_VERSION never completes a build its daemon forgot; stderr kept)"
  fi
  [ $ok = 0 ] || detail "aged: exit $rc; $(jq -c '[.leases[] | select(.outcome != "skipped") | {outcome, error}]' "$S/absent.json" 2>/dev/null | head -c 600); rch said: ${said:+$(one_line "${said%.meta}.err")}"
  verdict "aged: a lease past 24 h whose build rchd forgot is $what" $ok "exit $rc"
fi

# A lease whose wrapper still runs: rch (2.1.16 and 2.1.34 alike, rch/src/commands/jobs.rs)
# refuses nothing there. It leaves the live wrapper a `.recover` receipt asking it to re-drive
# its own retrieval and answers recover_requested, exit 0. (Its refusal "original wrapper is
# still present or unverified" comes later, from recovery_owner.rs, only for an owner jobs.rs
# took for gone that rch's stricter check cannot prove gone: no live wrapper shows it.) rch-sweep
# never hands such a lease over: a live owner is owner_alive, or still heartbeat_fresh.
build live 25
LIVE_PID=$BUILD_PID
ok=1; why=
if L6=$(journal_of "$LIVE_PID" 60) && wait_for "$L6" '.recovery.execution_started == true and .phase == "execute"' 90; then
  l6=$(id_of "$L6")
  E2E_EXTRA_ENV="RCH_NO_UPDATE_CHECK=1 RCH_DISABLE_CONFIG_CACHE=1" \
    as_b rch --json jobs recover "$l6" --timeout-secs 10 >"$S/owner.out" 2>/dev/null; owner_rc=$?
  as_b "$SWEEP" --dry-run --json --verbose --stale-after 5 >"$S/live.json" 2>"$S/live.err"
  judged=$(jq -r --arg id "$l6" '[.leases[]? | select((.wrapper_id // (.file // "" | rtrimstr(".json"))) == $id) | (.reason // .outcome)][0] // "none"' "$S/live.json" 2>/dev/null)
  [ "$owner_rc" = 0 ] && grep -q recover_requested "$S/owner.out" \
    && { [ "$judged" = owner_alive ] || [ "$judged" = heartbeat_fresh ]; } && ok=0
  why="rch exit $owner_rc, $(grep -o 'recover_requested' "$S/owner.out" | head -1 || echo 'no recover_requested'); rch-sweep: $judged"
else
  why="the live build never reached its remote execution"
fi
wait "$LIVE_PID" 2>/dev/null
verdict "owner: rch leaves a lease whose wrapper still runs to that wrapper (recover_requested, exit 0), and rch-sweep does not hand it over" $ok "$why"

# No stderr of an rch that rch-sweep started holds an update-check warning (rch 2.1.34's
# background check would try GitHub from this network namespace without one, and print its
# retries in front of the error), and every such rch was given RCH_NO_UPDATE_CHECK=1 and
# RCH_DISABLE_CONFIG_CACHE=1. The script's own rch calls without the variable are the control.
UPDATE_WORDS='fetching releases?|update[ _-]?check|api\.github\.com|github api|newer version|update available'
by_sweep=0; warned=0; unset_vars=0; control=0; control_warned=0
n_status=0; n_recover=0; n_version=0; n_caps=0; n_help=0
for meta in "$CALLS"/*.meta; do
  [ -e "$meta" ] || continue
  err=${meta%.meta}.err
  if grep -qx "caller: $SWEEP" "$meta"; then
    by_sweep=$((by_sweep + 1))
    case "$(sed -n 's/^args: //p' "$meta")" in
      "--json --format json daemon status") n_status=$((n_status + 1)) ;;
      "jobs recover --help") n_help=$((n_help + 1)) ;;
      "jobs recover "*) n_recover=$((n_recover + 1)) ;;
      "--version") n_version=$((n_version + 1)) ;;
      "--capabilities") n_caps=$((n_caps + 1)) ;;
    esac
    { grep -qx 'RCH_NO_UPDATE_CHECK=1' "$meta" && grep -qx 'RCH_DISABLE_CONFIG_CACHE=1' "$meta"; } \
      || { unset_vars=$((unset_vars + 1)); detail "update check: rch $(sed -n 's/^args: //p' "$meta") was started by rch-sweep without both variables: $(grep '^RCH_' "$meta" | tr '\n' ' ')"; }
    if grep -qaiE "$UPDATE_WORDS" "$err" 2>/dev/null; then
      warned=$((warned + 1))
      detail "update check: rch $(sed -n 's/^args: //p' "$meta") (started by rch-sweep) printed: $(grep -aiE "$UPDATE_WORDS" "$err" | head -2 | tr -d '\033' | tr '\n' ' ' | cut -c1-300)"
    fi
  elif grep -qx 'RCH_NO_UPDATE_CHECK=unset' "$meta"; then
    control=$((control + 1))
    grep -qaiE "$UPDATE_WORDS" "$err" 2>/dev/null && control_warned=$((control_warned + 1))
  fi
done
ok=1; [ $by_sweep -gt 0 ] && [ $warned = 0 ] && [ $unset_vars = 0 ] && [ $n_status -gt 0 ] && [ $n_recover -gt 0 ] && [ $n_caps -gt 0 ] && ok=0
verdict "update check: no stderr of the $by_sweep rch calls rch-sweep made holds an update-check warning, each had RCH_NO_UPDATE_CHECK=1 and RCH_DISABLE_CONFIG_CACHE=1" $ok \
  "daemon status $n_status, jobs recover $n_recover, --version $n_version, --capabilities $n_caps, jobs recover --help $n_help; $warned warned, $unset_vars without the variables (the control: $control_warned of the script's $control own calls without them warned)"

# Everything rch-sweep now sees is terminal.
as_b "$SWEEP" --check --stale-after 5 >/dev/null 2>&1; rc=$?
verdict "check: nothing left due" $([ $rc = 0 ] && echo 0 || echo 1) "exit $rc"
exit 0
