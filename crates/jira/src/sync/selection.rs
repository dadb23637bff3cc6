//! What a site sync collects, as the run's target: the projects named (every visible one when
//! none is), a narrowing JQL, and whether worklogs are collected. Written as readable text
//! (`PA,PB`, `all projects; worklogs; jql: status = Done`) and read back exactly.

/// The target's text for "every project the credential can browse".
const ALL: &str = "all projects";
/// Written after the projects when worklogs are collected.
const WORKLOGS: &str = "; worklogs";
/// Written before the JQL, which is last and kept verbatim (it may hold any character).
const JQL: &str = "; jql: ";

/// What a site sync collects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Project keys; empty for every project the credential can browse.
    pub projects: Vec<String>,
    /// A JQL condition narrowing every project's issues (`--jql`).
    pub jql: Option<String>,
    /// Collect each issue's worklogs too.
    pub worklogs: bool,
}

impl Selection {
    /// The run's target: `PA,PB` or `all projects`, then `; worklogs` and `; jql: JQL` when
    /// set. [`Selection::parse`] reads it back.
    pub fn target(&self) -> String {
        let mut out = if self.projects.is_empty() {
            ALL.to_owned()
        } else {
            self.projects.join(",")
        };
        if self.worklogs {
            out.push_str(WORKLOGS);
        }
        if let Some(jql) = &self.jql {
            out.push_str(JQL);
            out.push_str(jql);
        }
        out
    }

    /// Reads a target [`Selection::target`] wrote; `Err` says what is wrong.
    pub fn parse(target: &str) -> Result<Self, String> {
        let (head, jql) = match target.split_once(JQL) {
            Some((head, jql)) => (head, Some(jql.to_owned())),
            None => (target, None),
        };
        let (head, worklogs) = match head.strip_suffix(WORKLOGS) {
            Some(head) => (head, true),
            None => (head, false),
        };
        let projects = if head == ALL {
            Vec::new()
        } else {
            head.split(',')
                .map(|key| {
                    if is_project_key(key) {
                        Ok(key.to_owned())
                    } else {
                        Err(format!(
                            "{key:?} is not a Jira project key (a letter, then letters, digits \
                             or underscores)"
                        ))
                    }
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(Self {
            projects,
            jql,
            worklogs,
        })
    }

    /// Whether the project `key` is selected (Jira's keys are matched without case).
    pub fn selects(&self, key: &str) -> bool {
        self.projects.is_empty() || self.projects.iter().any(|k| k.eq_ignore_ascii_case(key))
    }

    /// The JQL condition, when one narrows the search.
    pub(crate) fn narrower(&self) -> Option<&str> {
        self.jql.as_deref().map(str::trim).filter(|j| !j.is_empty())
    }
}

/// A project key as Jira allows them: a letter, then letters, digits or underscores.
fn is_project_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= 255
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_target_reads_as_what_it_collects() {
        let s = Selection {
            projects: vec!["PA".into(), "PB".into()],
            jql: Some("status = Done; labels = x".into()),
            worklogs: true,
        };
        assert_eq!(
            s.target(),
            "PA,PB; worklogs; jql: status = Done; labels = x"
        );
        assert_eq!(Selection::default().target(), "all projects");
        assert!(Selection::parse("PA,,PB").is_err());
        assert!(Selection::parse("").is_err());
        assert!(Selection::parse("P A").is_err());
        assert!(Selection::parse("PA").expect("valid").selects("pa"));
        assert!(!Selection::parse("PA").expect("valid").selects("PB"));
        assert!(Selection::default().selects("ANY"));
        let blank = Selection {
            jql: Some("  ".into()),
            ..Selection::default()
        };
        assert_eq!(blank.narrower(), None);
    }

    proptest! {
        /// Whatever is selected, the target reads back as the same selection.
        #[test]
        fn a_selection_survives_its_target(
            projects in proptest::collection::vec("[A-Z][A-Z0-9_]{0,9}", 0..5),
            jql in proptest::option::of(".{0,60}"),
            worklogs in any::<bool>(),
        ) {
            let s = Selection { projects, jql, worklogs };
            prop_assert_eq!(Selection::parse(&s.target()), Ok(s));
        }
    }
}
