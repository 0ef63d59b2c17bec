//! Numbers as an operator reads them: spans of time, byte counts, limits.

/// A coarse human span: "3d 4h", "2h 5m", "12m 3s", "45s".
pub fn span(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, hours, minutes) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{secs}s"),
        (0, 0, _) => format!("{minutes}m {}s", secs % 60),
        (0, _, _) => format!("{hours}h {minutes}m"),
        _ => format!("{days}d {hours}h"),
    }
}

/// `64 MiB`: a limit as it is documented (whole MiB), else in bytes.
pub fn mebibytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{} bytes", thousands(bytes))
    }
}

/// `2,481`: byte counts an operator can read at a glance.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_coarse() {
        assert_eq!(span(45_000), "45s");
        assert_eq!(span(723_000), "12m 3s");
        assert_eq!(span(7_500_000), "2h 5m");
        assert_eq!(span(4 * 86_400_000 + 3_600_000), "4d 1h");
    }

    #[test]
    fn byte_counts_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2481), "2,481");
        assert_eq!(thousands(1_572_864), "1,572,864");
    }
}
