#!/bin/sh
# Builds the Debian package in one command: target/debian/rch-sweep_<version>-1_<arch>.deb
#
#   scripts/package.sh
#
# 1. builds the release binary (cargo build --release --locked);
# 2. writes the files the package declares that are not checked in (the
#    completion scripts) from that very binary into target/release/deb/;
# 3. runs `cargo deb --no-build`, which takes the rest of the package from
#    [package.metadata.deb] in Cargo.toml and gzips the man page.
#
# Needs cargo-deb, at the version CI pins (CARGO_DEB_VERSION in
# scripts/install-check.sh):
#   cargo install cargo-deb --locked --version 3.8.0
# Prints the path of the .deb as its last line.
set -eu
cd "$(dirname "$0")/.."

fail() { echo "package.sh: $*" >&2; exit 1; }

command -v cargo-deb >/dev/null 2>&1 \
  || fail "cargo-deb is not installed: cargo install cargo-deb --locked --version 3.8.0"

cargo build --release --locked

# Where cargo put the binary: the target folder may be moved by
# CARGO_TARGET_DIR or a config file; cargo-deb maps target/release/ there too.
target_dir=$(cargo metadata --format-version 1 --no-deps --locked \
  | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[ -n "$target_dir" ] || fail "cannot tell cargo's target folder"
bin="$target_dir/release/rch-sweep"
out="$target_dir/release/deb"
[ -x "$bin" ] || fail "no binary at $bin after the build"

# The package's version is Cargo's plus "-1"; its changelog must have an
# entry for it, or the package would describe another release.
version=$("$bin" --version | sed -n 's/^rch-sweep //p')
newest=$(sed -n '1s/^rch-sweep (\([^)]*\)).*/\1/p' packaging/changelog)
[ "$newest" = "$version-1" ] \
  || fail "packaging/changelog's newest entry is '$newest'; add one for $version-1"

rm -rf "$out"
mkdir -p "$out"
"$bin" completions bash > "$out/rch-sweep.bash"
"$bin" completions zsh > "$out/_rch-sweep"
"$bin" completions fish > "$out/rch-sweep.fish"
for file in rch-sweep.bash _rch-sweep rch-sweep.fish; do
  [ -s "$out/$file" ] || fail "$out/$file is empty"
done

# cargo deb prints its progress on stderr and the package's path on stdout.
deb=$(cargo deb --no-build --locked --output "$target_dir/debian/") \
  || fail "cargo deb failed (see above)"
[ -f "$deb" ] || fail "cargo deb printed no package path: $deb"
echo "$deb"
