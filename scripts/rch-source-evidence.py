#!/usr/bin/env python3
"""Where rch's own sources print the words of rch-sweep's table of rch's
answers (src/rch/rch_says.rs), release by release: the evidence
tests/rch_sources.rs checks the table against.

Reads the published crates of rch 2.1.0-2.1.34 as cargo fetched them (no
build, no network): each `rch-2.1.N/src` with the `rch-common` its own
Cargo.lock pins (`rch-common-X/src`), in the cargo registry. Writes, into
tests/data/rch-sources/:

  phrases.tsv   phrase, release, file, line: the first place each phrase of
                the table (each `Rch("...")`, and `PRINTED`) stands in that
                release's sources, outside test code; `-` `-` where it does
                not stand at all.
  releases.tsv  release, the rch-common it pins, the .rs files searched.
  std.tsv       name, text: what Rust's std prints for the words rch prints
                inside its own (`TryLockError`), from the rustc on PATH.

Test code is left out: files named tests.rs, *_tests.rs, *_test.rs or
test_*.rs, files under a tests/ folder, and the inline test modules
(`#[cfg(test)] mod name { ... }`, found by their braces) of a file.

Usage (from the project root):
  python3 scripts/rch-source-evidence.py [REGISTRY_SRC]
REGISTRY_SRC defaults to the first ~/.cargo/registry/src/*/ holding rch-2.1.*.
To fetch the crates first (no build), see tests/data/rch-sources/README.md.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "src", "rch", "rch_says.rs")
OUT = os.path.join(ROOT, "tests", "data", "rch-sources")

STRING = r'"((?:[^"\\]|\\.)*)"'


def unescape(literal):
    out, chars = [], iter(literal)
    for c in chars:
        if c != "\\":
            out.append(c)
            continue
        n = next(chars, "")
        out.append({"n": "\n", "t": "\t", "0": "\0"}.get(n, n))
    return "".join(out)


def phrases():
    """The table's Rch words (literals, or consts they name) and PRINTED."""
    text = open(TABLE, encoding="utf-8").read()
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+tests", text)
    if cut:
        text = text[: cut.start()]
    consts = {
        name: unescape(value)
        for name, value in re.findall(r"const ([A-Z_][A-Z0-9_]*): &str =\s*" + STRING + r"\s*;", text)
    }
    found = []
    for literal, name in re.findall(r"Rch\(\s*(?:" + STRING + r"|([A-Z_][A-Z0-9_]*))\s*,?\s*\)", text):
        phrase = unescape(literal) if not name else consts[name]
        if phrase not in found:
            found.append(phrase)
    found.append(consts["PRINTED"])
    return found


def version_key(path):
    return tuple(int(part) for part in re.findall(r"(\d+)\.(\d+)\.(\d+)$", path)[0])


def pinned_common(crate):
    lock = open(os.path.join(crate, "Cargo.lock"), encoding="utf-8").read()
    match = re.search(r'name = "rch-common"\nversion = "([^"]+)"', lock)
    return match.group(1) if match else None


def is_test_file(path):
    name = os.path.basename(path)
    parts = path.split(os.sep)
    return (
        "tests" in parts
        or name == "tests.rs"
        or name.endswith("_tests.rs")
        or name.endswith("_test.rs")
        or name.startswith("test_")
    )


def code_only(text):
    """`text` with the insides of comments, strings and char literals
    blanked (newlines kept): what a brace count may read."""
    out, at, n = list(text), 0, len(text)

    def blank(start, stop):
        for k in range(start, min(stop, n)):
            if out[k] != "\n":
                out[k] = " "

    while at < n:
        c = text[at]
        if text.startswith("//", at):
            stop = text.find("\n", at)
            stop = n if stop < 0 else stop
            blank(at, stop)
            at = stop
        elif text.startswith("/*", at):
            stop = text.find("*/", at + 2)
            stop = n if stop < 0 else stop + 2
            blank(at, stop)
            at = stop
        elif c == "r" and re.match(r'r#*"', text[at:]) and (at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[at:]).group(1)
            stop = text.find('"' + hashes, at + len(hashes) + 2)
            stop = n if stop < 0 else stop + 1 + len(hashes)
            blank(at, stop)
            at = stop
        elif c == '"':
            k = at + 1
            while k < n and text[k] != '"':
                k += 2 if text[k] == "\\" else 1
            blank(at, k + 1)
            at = k + 1
        elif c == "'":
            match = re.match(r"'(\\.[^']*|[^\\'])'", text[at:])
            if match:
                blank(at, at + len(match.group(0)))
                at += len(match.group(0))
            else:
                at += 1  # a lifetime
        else:
            at += 1
    return "".join(out)


def test_lines(text):
    """The line numbers (1-based) inside `#[cfg(test)] mod name { ... }`."""
    code = code_only(text)
    skipped = set()
    for match in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        depth, at = 1, match.end()
        while at < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[at], 0)
            at += 1
        first = code.count("\n", 0, match.start()) + 1
        last = code.count("\n", 0, at) + 1
        skipped.update(range(first, last + 1))
    return skipped


def logical_lines(path):
    """(line number, text) of the file's non-test code, a line that ends in
    a backslash inside a string joined with the next, as rustc reads it."""
    text = open(path, encoding="utf-8", errors="replace").read()
    skipped = test_lines(text)
    lines = text.split("\n")
    at = 0
    while at < len(lines):
        start, line = at + 1, lines[at]
        while line.endswith("\\") and at + 1 < len(lines):
            at += 1
            line = line[:-1] + lines[at].lstrip()
        if start not in skipped:
            yield start, line
        at += 1


def sources(folders):
    files = []
    for folder in folders:
        for dirpath, _, names in os.walk(folder):
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                if name.endswith(".rs") and not is_test_file(os.path.relpath(path, folder)):
                    files.append(path)
    return sorted(files)


def std_texts():
    """What std prints for `TryLockError`, from the rustc on PATH."""
    program = (
        "fn main() {\n"
        '    println!("WOULD_BLOCK\\t{}", std::fs::TryLockError::WouldBlock);\n'
        '    let e = std::fs::TryLockError::Error(std::io::Error::from_raw_os_error(37));\n'
        '    println!("LOCK_IO_ERROR\\t{}", e);\n'
        "}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "std_texts.rs")
        binary = os.path.join(tmp, "std_texts")
        open(source, "w").write(program)
        subprocess.run(["rustc", "-O", "-o", binary, source], check=True)
        out = subprocess.run([binary], check=True, capture_output=True, text=True).stdout
        version = subprocess.run(["rustc", "--version"], check=True, capture_output=True, text=True).stdout.strip()
    return version, [line.split("\t", 1) for line in out.splitlines()]


def main():
    registry = sys.argv[1] if len(sys.argv) > 1 else None
    if registry is None:
        for candidate in sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/"))):
            if glob.glob(os.path.join(candidate, "rch-2.1.*")):
                registry = candidate
                break
    if registry is None:
        sys.exit("no rch-2.1.* crate in the cargo registry: fetch them first (tests/data/rch-sources/README.md)")
    crates = sorted(
        (path for path in glob.glob(os.path.join(registry, "rch-2.1.*")) if re.search(r"/rch-\d+\.\d+\.\d+$", path)),
        key=version_key,
    )
    words = phrases()
    os.makedirs(OUT, exist_ok=True)
    rows, releases = [], []
    for crate in crates:
        release = os.path.basename(crate)[len("rch-") :]
        common = pinned_common(crate)
        folders = [os.path.join(crate, "src")]
        common_dir = os.path.join(registry, f"rch-common-{common}")
        if common and os.path.isdir(common_dir):
            folders.append(os.path.join(common_dir, "src"))
        else:
            sys.exit(f"rch {release} pins rch-common {common}, which is not fetched")
        files = sources(folders)
        releases.append((release, common, str(len(files))))
        first = {}
        for path in files:
            shown = os.path.relpath(path, registry)
            for number, text in logical_lines(path):
                for phrase in words:
                    if phrase not in first and phrase in text:
                        first[phrase] = (shown, str(number))
        for phrase in words:
            file, line = first.get(phrase, ("-", "-"))
            rows.append((phrase, release, file, line))
    header = (
        "# made by scripts/rch-source-evidence.py from the published crates rch 2.1.0-2.1.34 and\n"
        "# the rch-common each pins (cargo registry, no build); do not edit: rerun it.\n"
    )
    with open(os.path.join(OUT, "phrases.tsv"), "w", encoding="utf-8") as out:
        out.write(header + "# phrase\trelease\tfile\tline\n")
        for row in rows:
            out.write("\t".join(row) + "\n")
    with open(os.path.join(OUT, "releases.tsv"), "w", encoding="utf-8") as out:
        out.write(header + "# release\trch-common\trs files searched\n")
        for row in releases:
            out.write("\t".join(row) + "\n")
    version, texts = std_texts()
    with open(os.path.join(OUT, "std.tsv"), "w", encoding="utf-8") as out:
        out.write(f"# made by scripts/rch-source-evidence.py with {version}\n# name\ttext\n")
        for name, text in texts:
            out.write(f"{name}\t{text}\n")
    found = sum(1 for row in rows if row[2] != "-")
    print(f"{len(words)} phrases x {len(crates)} releases: {found} found, {len(rows) - found} absent -> {OUT}")


if __name__ == "__main__":
    main()
