//! The eight stages, one file each, over [`connection`], the paging they share. Each one
//! continues from its checkpoints: a done scope is skipped, a running one continues from its
//! cursor, so a resumed stage redoes at most the page that was in flight when it stopped.

/// The fields of a project item, the same in every query that reads items.
macro_rules! project_item_fields {
    () => {
        "id databaseId type content { __typename \
         ... on Issue { id number title } \
         ... on PullRequest { id number title } \
         ... on DraftIssue { id title } }"
    };
}

macro_rules! connection_stage {
    ($(#[$doc:meta])* $name:ident, $spec:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name {
            decl: StageDecl,
            size: PageSize,
            nested: PageSize,
        }

        impl $name {
            /// The stage.
            pub fn new(decl: StageDecl) -> Self {
                Self {
                    decl,
                    size: PageSize::new(MIN_PAGE, MAX_PAGE),
                    nested: PageSize::new(MIN_PAGE, NESTED_PAGE),
                }
            }

            /// The page size its next outer query asks for (shrinks on timeouts, grows back).
            pub fn page_size(&self) -> u32 {
                self.size.get()
            }
        }

        #[async_trait]
        impl Stage for $name {
            fn decl(&self) -> &StageDecl {
                &self.decl
            }

            async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
                collect_per_repository(ctx, &self.size, &self.nested, &$spec).await
            }
        }
    };
}

mod connection;
mod documents;

mod branches;
mod commit_files;
mod issue_comments;
mod org;
mod projects;
mod pull_requests;
mod repositories;
mod workflow_runs;

pub use branches::BranchesStage;
pub use commit_files::CommitFilesStage;
pub(crate) use documents::documents;
pub use issue_comments::IssueCommentsStage;
pub use org::OrgStage;
pub use projects::ProjectsStage;
pub use pull_requests::PullRequestsStage;
pub use repositories::RepositoriesStage;
pub use workflow_runs::WorkflowRunsStage;
