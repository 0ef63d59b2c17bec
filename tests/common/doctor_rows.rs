//! Reading doctor's JSON document.

use serde_json::Value;

/// The row of `check` in a doctor document (or in one of its reports).
pub fn row<'a>(document: &'a Value, check: &str) -> &'a Value {
    document["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|row| row["check"] == check)
        .unwrap_or_else(|| panic!("no {check} row in {document}"))
}
