//! Stage declarations and the graph they form, checked when the graph is built.

use std::collections::{BTreeSet, HashMap};

use headroom_core::{Bucket, RequestKind};
use serde::Serialize;

/// The repository source's own cursor once its list of repositories is complete (its
/// per-repository work may still go on).
pub const LISTED_CURSOR: &str = "listed";

/// How many times a stage runs in one sync run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Once per run.
    Once,
    /// Once per repository the graph's repository source discovered in this run.
    PerRepository,
}

/// What a stage declares about itself. Dependencies are declared here, in code, and checked
/// by [`StageGraph::new`] and by tests: a stage run before its dependency would "succeed"
/// with zero rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageDecl {
    /// Stable name (checkpoints are keyed by it).
    pub name: &'static str,
    /// What a person calls it ("pull requests").
    pub title: &'static str,
    /// The quota bucket it spends (`core`, `graphql`, …).
    pub bucket: &'static str,
    /// What one of its requests is expected to cost in that bucket (the headroom check asks
    /// for this much).
    pub estimated_cost: u32,
    /// The stages that must be `done` in this run before it starts.
    pub depends_on: &'static [&'static str],
    /// Needs of its dependencies only the repositories the repository source has listed,
    /// not the source's own per-repository work (its rows refer to repositories alone): it
    /// starts once the list is complete ([`LISTED_CURSOR`]), beside the source's work.
    pub after_listing: bool,
    /// Once, or per repository.
    pub scope: Scope,
}

impl StageDecl {
    /// The bucket as the governor names it.
    pub fn bucket(&self) -> Bucket {
        Bucket::new(self.bucket)
    }

    /// The kind of request the headroom check assumes.
    pub fn request_kind(&self) -> RequestKind {
        if self.bucket == "graphql" {
            RequestKind::GRAPHQL_QUERY
        } else {
            RequestKind::REST_READ
        }
    }
}

/// Why a set of declarations is not a valid graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// Two stages share a name.
    #[error("stage {0:?} is declared twice")]
    Duplicate(String),
    /// A dependency names no declared stage.
    #[error("stage {stage:?} depends on {missing:?}, which is not declared")]
    UnknownDependency {
        /// The stage.
        stage: String,
        /// The name it depends on.
        missing: String,
    },
    /// A dependency is declared after its dependent (or is the stage itself): declarations
    /// must be in an order that runs every dependency first, which also rules out cycles.
    #[error("stage {stage:?} depends on {dependency:?}, which is not declared before it")]
    OutOfOrder {
        /// The stage.
        stage: String,
        /// The dependency declared later.
        dependency: String,
    },
    /// A per-repository stage that does not depend on the stage that lists repositories.
    #[error(
        "per-repository stage {stage:?} does not depend on {source_stage:?}, which lists the repositories"
    )]
    NoRepositorySource {
        /// The stage.
        stage: String,
        /// The repository source.
        source_stage: String,
    },
    /// A name given by a user is not a stage.
    #[error("no stage is called {0:?}")]
    UnknownStage(String),
    /// A stage that starts after the listing depends on a stage other than the repository
    /// source, whose listing alone could not stand for it being done.
    #[error(
        "stage {stage:?} starts after the listing but depends on {dependency:?}, which does not list repositories"
    )]
    ListingOfNonSource {
        /// The stage.
        stage: String,
        /// The dependency.
        dependency: String,
    },
}

/// A checked set of stage declarations, in declaration (topological) order.
#[derive(Debug, Clone)]
pub struct StageGraph {
    stages: Vec<StageDecl>,
    index: HashMap<&'static str, usize>,
    repository_source: Option<&'static str>,
}

impl StageGraph {
    /// Checks the declarations: unique names, known dependencies declared before their
    /// dependents, every per-repository stage depending (transitively) on
    /// `repository_source` — the stage whose per-repository checkpoints enumerate the
    /// repositories of a run (it is per-repository itself) — and stages that start after the
    /// listing depending on that source alone.
    pub fn new(
        stages: Vec<StageDecl>,
        repository_source: Option<&'static str>,
    ) -> Result<Self, GraphError> {
        let mut index = HashMap::new();
        for (i, s) in stages.iter().enumerate() {
            for dep in s.depends_on {
                match index.get(dep) {
                    Some(_) => {}
                    None if stages.iter().any(|o| o.name == *dep) => {
                        return Err(GraphError::OutOfOrder {
                            stage: s.name.to_owned(),
                            dependency: (*dep).to_owned(),
                        });
                    }
                    None => {
                        return Err(GraphError::UnknownDependency {
                            stage: s.name.to_owned(),
                            missing: (*dep).to_owned(),
                        });
                    }
                }
            }
            if index.insert(s.name, i).is_some() {
                return Err(GraphError::Duplicate(s.name.to_owned()));
            }
        }
        for s in stages.iter().filter(|s| s.after_listing) {
            if let Some(dep) = s.depends_on.iter().find(|d| Some(**d) != repository_source) {
                return Err(GraphError::ListingOfNonSource {
                    stage: s.name.to_owned(),
                    dependency: (*dep).to_owned(),
                });
            }
        }
        let graph = Self {
            stages,
            index,
            repository_source,
        };
        if let Some(source) = repository_source {
            if !graph.index.contains_key(source) {
                return Err(GraphError::UnknownStage(source.to_owned()));
            }
            for s in &graph.stages {
                if s.scope == Scope::PerRepository
                    && s.name != source
                    && !graph.dependencies_of(s.name).contains(source)
                {
                    return Err(GraphError::NoRepositorySource {
                        stage: s.name.to_owned(),
                        source_stage: source.to_owned(),
                    });
                }
            }
        } else if let Some(s) = graph
            .stages
            .iter()
            .find(|s| s.scope == Scope::PerRepository)
        {
            return Err(GraphError::NoRepositorySource {
                stage: s.name.to_owned(),
                source_stage: String::new(),
            });
        }
        Ok(graph)
    }

    /// The stages, dependencies first.
    pub fn stages(&self) -> &[StageDecl] {
        &self.stages
    }

    /// One stage.
    pub fn get(&self, name: &str) -> Option<&StageDecl> {
        self.index.get(name).map(|&i| &self.stages[i])
    }

    /// The 1-based position of a stage ("stage 5 of 8").
    pub fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).map(|i| i + 1)
    }

    /// The stage whose per-repository checkpoints list the repositories.
    pub fn repository_source(&self) -> Option<&'static str> {
        self.repository_source
    }

    /// Every stage `name` depends on, directly or not.
    pub fn dependencies_of(&self, name: &str) -> BTreeSet<&'static str> {
        let mut out = BTreeSet::new();
        let mut todo: Vec<&str> = vec![name];
        while let Some(n) = todo.pop() {
            if let Some(s) = self.get(n) {
                for d in s.depends_on {
                    if out.insert(*d) {
                        todo.push(d);
                    }
                }
            }
        }
        out
    }

    /// Whether a stage waits for `name` to be done (not only for its listing): the stages
    /// others wait on are the run's critical path, and their requests go first.
    pub fn is_awaited(&self, name: &str) -> bool {
        // A stage after the listing depends on the repository source alone, and only on
        // its list.
        self.stages
            .iter()
            .any(|s| !s.after_listing && s.depends_on.contains(&name))
    }

    /// Every stage that depends on `name`, directly or not.
    pub fn dependents_of(&self, name: &str) -> BTreeSet<&'static str> {
        self.stages
            .iter()
            .filter(|s| self.dependencies_of(s.name).contains(name))
            .map(|s| s.name)
            .collect()
    }

    /// The names asked for plus everything they depend on, in declaration order. A stage is
    /// never run without its dependencies: asking for "commit files" brings "pull requests".
    pub fn closure_of(&self, requested: &[String]) -> Result<Vec<&'static str>, GraphError> {
        let mut wanted = BTreeSet::new();
        for r in requested {
            let s = self
                .get(r)
                .ok_or_else(|| GraphError::UnknownStage(r.clone()))?;
            wanted.insert(s.name);
            wanted.extend(self.dependencies_of(s.name));
        }
        Ok(self
            .stages
            .iter()
            .map(|s| s.name)
            .filter(|n| wanted.contains(n))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(name: &'static str, deps: &'static [&'static str], scope: Scope) -> StageDecl {
        StageDecl {
            name,
            title: name,
            bucket: "graphql",
            estimated_cost: 1,
            depends_on: deps,
            after_listing: false,
            scope,
        }
    }

    #[test]
    fn declarations_are_checked() {
        let dup = StageGraph::new(
            vec![decl("a", &[], Scope::Once), decl("a", &[], Scope::Once)],
            None,
        );
        assert_eq!(dup.err(), Some(GraphError::Duplicate("a".into())));
        let unknown = StageGraph::new(vec![decl("a", &["z"], Scope::Once)], None);
        assert!(matches!(unknown, Err(GraphError::UnknownDependency { .. })));
        let late = StageGraph::new(
            vec![decl("a", &["b"], Scope::Once), decl("b", &[], Scope::Once)],
            None,
        );
        assert!(matches!(late, Err(GraphError::OutOfOrder { .. })));
        let selfdep = StageGraph::new(vec![decl("a", &["a"], Scope::Once)], None);
        assert!(matches!(selfdep, Err(GraphError::OutOfOrder { .. })));
        let orphan = StageGraph::new(
            vec![
                decl("repos", &[], Scope::PerRepository),
                decl("x", &[], Scope::PerRepository),
            ],
            Some("repos"),
        );
        assert!(matches!(orphan, Err(GraphError::NoRepositorySource { .. })));
        let early = StageGraph::new(
            vec![
                decl("org", &[], Scope::Once),
                decl("repos", &["org"], Scope::PerRepository),
                StageDecl {
                    after_listing: true,
                    ..decl("x", &["org", "repos"], Scope::PerRepository)
                },
            ],
            Some("repos"),
        );
        assert!(matches!(
            early,
            Err(GraphError::ListingOfNonSource { dependency, .. }) if dependency == "org"
        ));
    }

    #[test]
    fn closures_bring_dependencies() {
        let g = StageGraph::new(
            vec![
                decl("a", &[], Scope::Once),
                decl("b", &["a"], Scope::Once),
                decl("c", &["b"], Scope::Once),
                decl("d", &["a"], Scope::Once),
            ],
            None,
        )
        .expect("valid");
        assert_eq!(
            g.closure_of(&["c".into()]).expect("known"),
            vec!["a", "b", "c"]
        );
        assert_eq!(
            g.dependents_of("b").into_iter().collect::<Vec<_>>(),
            vec!["c"]
        );
        assert_eq!(g.position("d"), Some(4));
        assert!(g.closure_of(&["nope".into()]).is_err());
    }
}
