//! `EnvironmentFile=` patterns, expanded as systemd expands them: it hands
//! the path to glob(3) with no flags (systemd 252, `safe_glob` in
//! `exec_context_load_environment`), so `*`, `?` and `[...]` match within
//! one path component, a leading `.` only matches a literal `.`, `\` quotes
//! the next character, and the matches come sorted. A pattern that matches
//! nothing is a missing file. What lies in a folder is asked through the
//! caller's functions, so the expansion is tested without a file system.

use std::path::{Path, PathBuf};

/// Whether `text` holds an unquoted `*`, `?` or `[`: glob(3) then lists
/// folders; otherwise the path is taken as written.
pub fn has_magic(text: &str) -> bool {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// `text` with glob(3)'s `\` quoting taken off.
fn unquote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            other => out.push(other),
        }
    }
    out
}

/// Whether `name` (one path component) matches `pattern`, as fnmatch(3)
/// with `FNM_PERIOD` (what glob(3) uses): a leading `.` must be matched
/// by a literal `.`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    if name.first() == Some(&'.') && pattern.first() != Some(&'.') {
        return false;
    }
    match_from(&pattern, &name)
}

fn match_from(pattern: &[char], name: &[char]) -> bool {
    let Some((&first, rest)) = pattern.split_first() else {
        return name.is_empty();
    };
    match first {
        '*' => (0..=name.len()).any(|skip| match_from(rest, &name[skip..])),
        '?' => !name.is_empty() && match_from(rest, &name[1..]),
        '[' => match (bracket(rest, name.first().copied()), name.is_empty()) {
            (Some((true, used)), false) => match_from(&rest[used..], &name[1..]),
            (Some(_), _) => false,
            // No closing `]`: a literal `[`.
            (None, _) => name.first() == Some(&'[') && match_from(rest, &name[1..]),
        },
        '\\' if !rest.is_empty() => {
            name.first() == Some(&rest[0]) && match_from(&rest[1..], &name[1..])
        }
        literal => name.first() == Some(&literal) && match_from(rest, &name[1..]),
    }
}

/// A bracket expression after its `[`: whether `c` is in it, and how many
/// pattern characters it used (its `]` included); `None` when it never
/// closes.
fn bracket(pattern: &[char], c: Option<char>) -> Option<(bool, usize)> {
    let mut at = 0;
    let negated = matches!(pattern.first(), Some('!' | '^'));
    if negated {
        at += 1;
    }
    let mut found = false;
    let mut first = true;
    loop {
        let &low = pattern.get(at)?;
        if low == ']' && !first {
            at += 1;
            break;
        }
        first = false;
        let low = if low == '\\' {
            at += 1;
            *pattern.get(at)?
        } else {
            low
        };
        at += 1;
        if pattern.get(at) == Some(&'-') && pattern.get(at + 1).is_some_and(|&h| h != ']') {
            let high = pattern[at + 1];
            at += 2;
            found |= c.is_some_and(|c| low <= c && c <= high);
        } else {
            found |= c == Some(low);
        }
    }
    Some((found != negated, at))
}

/// The paths `pattern` (absolute) stands for, sorted: `list` names the
/// entries of a folder (none when it is missing or no folder), `exists`
/// says whether a path exists. A pattern without magic characters is
/// itself when it exists.
pub fn expand(
    pattern: &str,
    list: &dyn Fn(&Path) -> Vec<String>,
    exists: &dyn Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("/")];
    let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    for component in &components {
        let mut next = Vec::new();
        for base in &found {
            if has_magic(component) {
                let mut names = list(base);
                names.sort();
                next.extend(
                    names
                        .iter()
                        .filter(|name| matches(component, name))
                        .map(|name| base.join(name)),
                );
            } else {
                next.push(base.join(unquote(component)));
            }
        }
        found = next;
    }
    found.retain(|path| exists(path));
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_as_glob_uses_it() {
        assert!(matches("*.env", "lease.env"));
        assert!(!matches("*.env", "lease.env~"));
        assert!(!matches("*.env", ".hidden.env"), "a leading dot is literal");
        assert!(matches(".*.env", ".hidden.env"));
        assert!(matches("?.conf", "a.conf"));
        assert!(!matches("?.conf", "ab.conf"));
        assert!(matches("[ab]-x", "b-x"));
        assert!(!matches("[!ab]-x", "b-x"));
        assert!(matches("[^ab]-x", "c-x"));
        assert!(matches("[0-9][0-9]-*", "10-lease"));
        assert!(!matches("[0-9][0-9]-*", "1a-lease"));
        assert!(matches("[]]", "]"));
        assert!(matches("a\\*", "a*"));
        assert!(!matches("a\\*", "ab"));
        assert!(matches("[unclosed", "[unclosed"));
        assert!(matches("*", ""));
        assert!(has_magic("/etc/*.env") && has_magic("/a/[b]") && has_magic("/a?"));
        assert!(!has_magic("/etc/a\\*b") && !has_magic("/etc/default/rch-sweep"));
    }

    #[test]
    fn a_pattern_expands_to_the_sorted_existing_paths() {
        let tree = [
            "/h/.config/rch-sweep/b.env",
            "/h/.config/rch-sweep/a.env",
            "/h/.config/rch-sweep/.x.env",
            "/h/.config/rch-sweep/notes",
            "/h/.config/other/c.env",
        ];
        let list = |dir: &Path| -> Vec<String> {
            let mut names: Vec<String> = tree
                .iter()
                .filter_map(|file| {
                    let rest = Path::new(file).strip_prefix(dir).ok()?;
                    rest.iter().next().map(|n| n.to_string_lossy().into_owned())
                })
                .collect();
            names.dedup();
            names
        };
        let exists = |path: &Path| {
            tree.iter()
                .any(|file| Path::new(file).starts_with(path) && !path.as_os_str().is_empty())
        };
        let strings = |paths: Vec<PathBuf>| -> Vec<String> {
            paths.iter().map(|p| p.display().to_string()).collect()
        };
        assert_eq!(
            strings(expand("/h/.config/rch-sweep/*.env", &list, &exists)),
            ["/h/.config/rch-sweep/a.env", "/h/.config/rch-sweep/b.env"]
        );
        assert_eq!(
            strings(expand("/h/.config/*/[bc].env", &list, &exists)),
            ["/h/.config/other/c.env", "/h/.config/rch-sweep/b.env"]
        );
        assert!(expand("/h/.config/rch-sweep/*.conf", &list, &exists).is_empty());
        assert_eq!(
            strings(expand("/h/.config/rch-sweep/notes", &list, &exists)),
            ["/h/.config/rch-sweep/notes"]
        );
        assert!(expand("/h/missing", &list, &exists).is_empty());
    }
}
