//! What an account sync collects, as the run's target: the projects named (every project the
//! token can read when none is), and whether the lists are re-read whole whatever the audit
//! log says (`full`). Written as readable text (`proj-a,proj-b`, `all projects; full`) and
//! read back exactly.

/// The target's text for "every project the token can read".
const ALL: &str = "all projects";
/// Written after the projects when the run re-lists everything.
const FULL: &str = "; full";

/// What an account sync collects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Project keys; empty for every project.
    pub projects: Vec<String>,
    /// Re-list projects, flags, segments, members and code references even when the audit
    /// log shows no change since the last completed run.
    pub full: bool,
}

impl Selection {
    /// The run's target: `proj-a,proj-b` or `all projects`, then `; full` when set.
    /// [`Selection::parse`] reads it back.
    pub fn target(&self) -> String {
        let mut out = if self.projects.is_empty() {
            ALL.to_owned()
        } else {
            self.projects.join(",")
        };
        if self.full {
            out.push_str(FULL);
        }
        out
    }

    /// Reads a target [`Selection::target`] wrote (or keys a person typed, separated by
    /// commas); `Err` says what is wrong. Duplicate keys are kept once.
    pub fn parse(target: &str) -> Result<Self, String> {
        let (head, full) = match target.trim().strip_suffix(FULL) {
            Some(head) => (head.trim(), true),
            None => (target.trim(), false),
        };
        if head.is_empty() || head == ALL {
            return Ok(Self {
                projects: Vec::new(),
                full,
            });
        }
        let mut projects: Vec<String> = Vec::new();
        for key in head.split(',').map(str::trim) {
            if !is_key(key) {
                return Err(format!(
                    "{key:?} is not a LaunchDarkly project key (letters, digits, '.', '_' and '-')"
                ));
            }
            if !projects.iter().any(|k| k == key) {
                projects.push(key.to_owned());
            }
        }
        Ok(Self { projects, full })
    }

    /// Whether the project `key` is selected.
    pub fn selects(&self, key: &str) -> bool {
        self.projects.is_empty() || self.projects.iter().any(|k| k == key)
    }

    /// Whether a completed run of `other` collected at least what this selection collects
    /// (every project, or the same ones), so that its audit high-water stands for this run.
    pub fn covered_by(&self, other: &Selection) -> bool {
        if other.projects.is_empty() {
            return true;
        }
        let mut mine = self.projects.clone();
        let mut theirs = other.projects.clone();
        mine.sort();
        theirs.sort();
        !mine.is_empty() && mine.iter().all(|k| theirs.binary_search(k).is_ok())
    }
}

/// A key as LaunchDarkly allows them (projects, environments, flags, segments): letters,
/// digits, `.`, `_` and `-`. Nothing else can reach a path segment.
pub(crate) fn is_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 256
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_target_reads_as_what_it_collects_and_refuses_what_is_no_key() {
        let s = Selection {
            projects: vec!["proj-a".into(), "b.2".into()],
            full: true,
        };
        assert_eq!(s.target(), "proj-a,b.2; full");
        assert_eq!(Selection::default().target(), "all projects");
        assert_eq!(Selection::parse("all projects"), Ok(Selection::default()));
        assert!(Selection::parse("all projects; full").expect("valid").full);
        assert_eq!(
            Selection::parse(" a, b ,a").expect("keys").projects,
            ["a", "b"]
        );
        assert!(Selection::parse("a,,b").is_err());
        assert!(Selection::parse("a/b").is_err());
        assert!(Selection::parse("a b").is_err());
        assert!(Selection::parse("a").expect("valid").selects("a"));
        assert!(!Selection::parse("a").expect("valid").selects("b"));
    }

    #[test]
    fn only_a_run_of_every_project_or_of_the_same_ones_covers_a_selection() {
        let all = Selection::default();
        let ab = Selection::parse("a,b").expect("keys");
        let ba = Selection::parse("b,a; full").expect("keys");
        let a = Selection::parse("a").expect("keys");
        assert!(ab.covered_by(&all));
        assert!(all.covered_by(&all));
        assert!(ab.covered_by(&ba));
        assert!(a.covered_by(&ab));
        assert!(!ab.covered_by(&a));
        assert!(!all.covered_by(&ab));
    }

    proptest! {
        #[test]
        fn any_selection_survives_its_target(
            keys in proptest::collection::btree_set("[a-z0-9][a-z0-9._-]{0,9}", 0..5),
            full in any::<bool>(),
        ) {
            let s = Selection { projects: keys.into_iter().collect(), full };
            prop_assert_eq!(Selection::parse(&s.target()), Ok(s));
        }
    }
}
