//! Who holds a lease, precisely enough to tell later that the holder is gone.
//!
//! A lease outlives a killed process by its TTL (the slowest request plus slack, half a minute
//! or more), which a restarted process would otherwise spend deferred behind its own ghost. A
//! [`ProcessMark`] names the process by what identifies it on one machine: the kernel's boot id,
//! the pid namespace, the pid and the process's start time (so a reused pid is not mistaken for
//! the holder). A process that reads a lease whose mark is from its own boot and namespace can
//! check whether the holder still runs; a lease from another machine, another container or a
//! holder string that is not a mark is left to expire by its TTL.
//!
//! Linux only: elsewhere [`ProcessMark::current`] is `None` and leases simply expire.

use std::fmt;

use headroom_core::governor::GovernorError;

use super::{GovernorPool, backend_error};
use crate::db::{DbTx, on_each_conn, on_each_pool};

/// The identity of one running process on one machine, as written in `governor_leases.holder`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessMark {
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): one machine, one boot.
    pub boot: String,
    /// The pid namespace's inode: processes in other containers have other pids.
    pub namespace: u64,
    pub pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat`, field 22).
    pub started: u64,
}

const PREFIX: &str = "headroom";

impl fmt::Display for ProcessMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX} pid={} started={} ns={} boot={}",
            self.pid, self.started, self.namespace, self.boot
        )
    }
}

impl ProcessMark {
    /// Reads a mark back from a holder string; `None` for anything else (an older holder
    /// format, a name a test chose).
    pub fn parse(holder: &str) -> Option<Self> {
        let rest = holder.strip_prefix(PREFIX)?.strip_prefix(' ')?;
        let mut fields = rest.split(' ');
        let mut next = |name: &str| fields.next()?.strip_prefix(name)?.strip_prefix('=');
        let pid = next("pid")?.parse().ok()?;
        let started = next("started")?.parse().ok()?;
        let namespace = next("ns")?.parse().ok()?;
        let boot = next("boot")?.to_owned();
        if boot.is_empty() || fields.next().is_some() {
            return None;
        }
        Some(Self {
            boot,
            namespace,
            pid,
            started,
        })
    }

    /// This process's mark, when the platform lets it be read.
    pub fn current() -> Option<Self> {
        let (boot, namespace) = machine()?;
        let pid = std::process::id();
        Some(Self {
            boot,
            namespace,
            pid,
            started: start_time(pid)?,
        })
    }

    /// Whether `holder` names a process of this machine and namespace that no longer runs.
    /// False whenever that cannot be known for sure.
    pub fn holder_is_gone(holder: &str) -> bool {
        let Some(mark) = Self::parse(holder) else {
            return false;
        };
        let Some((boot, namespace)) = machine() else {
            return false;
        };
        mark.boot == boot
            && mark.namespace == namespace
            && start_time(mark.pid).is_none_or(|started| started != mark.started)
    }
}

/// Deletes the leases of every holder that is gone and moves the version of each identity
/// they were counted in, so every process deciding on a cached state re-reads. Returns how
/// many leases were freed.
pub(super) async fn free_leases_of_gone_holders(pool: &GovernorPool) -> Result<u64, GovernorError> {
    let holders: Vec<String> = on_each_pool!(pool.pools(), |p| {
        sqlx::query_scalar("SELECT DISTINCT holder FROM governor_leases")
            .fetch_all(p)
            .await
    })
    .map_err(backend_error)?;
    let mut freed = 0;
    for holder in holders {
        if !ProcessMark::holder_is_gone(&holder) {
            continue;
        }
        let mut tx = DbTx::begin(pool.pools()).await.map_err(backend_error)?;
        let mut conn = tx.conn();
        on_each_conn!(&mut conn, |c| {
            sqlx::query(
                "UPDATE governor_identities SET version = version + 1 \
                 WHERE (host, subject_kind, subject_id) IN \
                 (SELECT host, subject_kind, subject_id FROM governor_leases WHERE holder = $1)",
            )
            .bind(&holder)
            .execute(c)
            .await
            .map(|_| ())
        })
        .map_err(backend_error)?;
        freed += on_each_conn!(&mut conn, |c| {
            sqlx::query("DELETE FROM governor_leases WHERE holder = $1")
                .bind(&holder)
                .execute(c)
                .await
                .map(|r| r.rows_affected())
        })
        .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)?;
    }
    Ok(freed)
}

/// The boot id and pid namespace of this process.
fn machine() -> Option<(String, u64)> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let namespace = parse_namespace(&link.to_string_lossy())?;
    Some((boot.trim().to_owned(), namespace))
}

/// `pid:[4026531836]` → 4026531836.
fn parse_namespace(link: &str) -> Option<u64> {
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// The start time of `pid`, or `None` when no such process runs.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// Field 22 of `/proc/PID/stat`. The command name (field 2) is in parentheses and may hold
/// spaces or parentheses itself, so fields are counted after its last `)`.
fn parse_start_time(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards; field 22 is the 20th of those.
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_start_time_is_read_after_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615";
        assert_eq!(parse_start_time(stat), Some(987_654));
        assert_eq!(parse_start_time("4242 (cut"), None);
    }

    #[test]
    fn a_namespace_link_reads_as_its_inode() {
        assert_eq!(parse_namespace("pid:[4026531836]"), Some(4_026_531_836));
        assert_eq!(parse_namespace("net:[4026531836]"), None);
    }

    #[test]
    fn other_holder_strings_are_not_marks() {
        for holder in [
            "headroom",
            "headroom:123",
            "headroom pid=1",
            "worker pid=1 started=2",
        ] {
            assert_eq!(ProcessMark::parse(holder), None, "{holder}");
            assert!(!ProcessMark::holder_is_gone(holder), "{holder}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_not_gone_and_a_finished_child_is() {
        let mark = ProcessMark::current().expect("Linux has /proc");
        assert!(!ProcessMark::holder_is_gone(&mark.to_string()));
        // The same pid with another start time is a reused pid: not the holder.
        let reused = ProcessMark {
            started: mark.started + 1,
            ..mark.clone()
        };
        assert!(ProcessMark::holder_is_gone(&reused.to_string()));
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        let gone = ProcessMark {
            pid,
            ..mark.clone()
        };
        assert!(ProcessMark::holder_is_gone(&gone.to_string()));
        // Another boot or another namespace: cannot be judged here, so never gone.
        let elsewhere = ProcessMark {
            boot: "another-boot".to_owned(),
            ..gone.clone()
        };
        assert!(!ProcessMark::holder_is_gone(&elsewhere.to_string()));
        let container = ProcessMark {
            namespace: mark.namespace + 1,
            ..gone
        };
        assert!(!ProcessMark::holder_is_gone(&container.to_string()));
    }

    proptest! {
        #[test]
        fn a_mark_reads_back_as_itself(
            boot in "[a-f0-9-]{1,36}",
            namespace: u64,
            pid: u32,
            started: u64,
        ) {
            let mark = ProcessMark { boot, namespace, pid, started };
            prop_assert_eq!(ProcessMark::parse(&mark.to_string()), Some(mark));
        }
    }
}
