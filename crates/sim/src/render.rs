//! JSON bodies in GitHub's REST shapes. `base` is the API root the client used
//! (`https://api.github.com` or the simulator's own address), so that every URL in a body
//! leads back to the simulator.

mod actions;
mod branches;
mod commits;
mod issues;
mod pulls;
mod repos;
mod users;

pub use actions::*;
pub use branches::*;
pub use commits::*;
pub use issues::*;
pub use pulls::*;
pub use repos::*;
pub use users::*;

use headroom_core::clock::Timestamp;
use serde_json::{Value, json};

use crate::world::{
    BranchRec, CommentRec, CommitRec, FileRec, IssueRec, JobRec, OrgRec, PullRec, RepoContent,
    RepoRec, RunRec, TeamRec, UserRec, World,
};

/// GitHub's timestamp format (`2026-01-01T00:00:00Z`).
pub fn ts(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn node_id(prefix: &str, id: u64) -> String {
    format!("{prefix}_kgDO{id:08X}")
}
