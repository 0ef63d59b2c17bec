//! An environment as a list of `NAME=value` pairs in the order each name
//! was first set: what cron and systemd build up line by line before they
//! start a job, and what `doctor --as` hands the run it re-executes.
//! Setting a name again replaces its value in place, as both do.

/// Variables in the order they were first set.
pub type Vars = Vec<(String, String)>;

/// Sets `name`, in place when it is there already.
pub fn set(vars: &mut Vars, name: &str, value: &str) {
    match vars.iter_mut().find(|(key, _)| key == name) {
        Some(entry) => value.clone_into(&mut entry.1),
        None => vars.push((name.to_owned(), value.to_owned())),
    }
}

/// The value of `name`.
pub fn get<'a>(vars: &'a Vars, name: &str) -> Option<&'a str> {
    vars.iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// Removes `name`.
pub fn unset(vars: &mut Vars, name: &str) {
    vars.retain(|(key, _)| key != name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_set_again_keeps_its_place() {
        let mut vars = Vars::new();
        set(&mut vars, "A", "1");
        set(&mut vars, "B", "2");
        set(&mut vars, "A", "3");
        assert_eq!(
            vars,
            [("A".to_owned(), "3".to_owned()), ("B".into(), "2".into())]
        );
        assert_eq!(get(&vars, "B"), Some("2"));
        unset(&mut vars, "A");
        assert_eq!(get(&vars, "A"), None);
    }
}
