//! The Git provider contract suite: ONE suite (contract/suite.rs, written over the
//! `GitProvider` trait) run against GitHub and GitLab on the in-process simulator — every
//! operation's success and each error kind, reads retried and idempotent, every mutation sent
//! exactly once against a 429, a 502 and a lost answer, and the opt-in re-check.

#![allow(clippy::expect_used)]

mod contract;

use contract::rig::{self, Fault, TOKEN};
use contract::suite::{self, MUTATIONS};
use headroom_core::provider::Recheck;

macro_rules! contract_suite {
    ($side:ident) => {
        mod $side {
            use super::*;

            #[tokio::test(start_paused = true)]
            async fn every_operation_succeeds_in_a_lifecycle() {
                suite::lifecycle(rig::$side(Recheck::Never, TOKEN).await).await;
            }

            #[tokio::test(start_paused = true)]
            async fn reads_are_idempotent() {
                suite::reads_are_idempotent(rig::$side(Recheck::Never, TOKEN).await).await;
            }

            #[tokio::test(start_paused = true)]
            async fn errors_say_what_happened() {
                let stranger = rig::$side(Recheck::Never, "glpat-nobodyknowsthistoken0000").await;
                suite::errors_say_what_happened(rig::$side(Recheck::Never, TOKEN).await, stranger)
                    .await;
            }

            #[tokio::test(start_paused = true)]
            async fn reads_are_retried() {
                suite::reads_are_retried(rig::$side(Recheck::Never, TOKEN).await).await;
            }

            #[tokio::test(start_paused = true)]
            async fn every_mutation_is_sent_once_against_a_429() {
                for m in MUTATIONS {
                    suite::mutation_is_sent_once(
                        rig::$side(Recheck::Never, TOKEN).await,
                        m,
                        Fault::Status(429),
                    )
                    .await;
                }
            }

            #[tokio::test(start_paused = true)]
            async fn every_mutation_is_sent_once_against_a_502() {
                for m in MUTATIONS {
                    suite::mutation_is_sent_once(
                        rig::$side(Recheck::Never, TOKEN).await,
                        m,
                        Fault::Status(502),
                    )
                    .await;
                }
            }

            #[tokio::test(start_paused = true)]
            async fn every_mutation_is_sent_once_against_a_timeout() {
                for m in MUTATIONS {
                    suite::mutation_is_sent_once(
                        rig::$side(Recheck::Never, TOKEN).await,
                        m,
                        Fault::LoseAnswer,
                    )
                    .await;
                }
            }

            #[tokio::test(start_paused = true)]
            async fn the_recheck_finds_what_a_lost_answer_made() {
                suite::the_recheck_finds_what_was_made(
                    rig::$side(Recheck::AfterAmbiguous, TOKEN).await,
                )
                .await;
            }

            #[tokio::test(start_paused = true)]
            async fn the_recheck_reports_a_mismatch_as_a_conflict() {
                suite::the_recheck_reports_a_mismatch_as_a_conflict(
                    rig::$side(Recheck::AfterAmbiguous, TOKEN).await,
                )
                .await;
            }
        }
    };
}

contract_suite!(github);
contract_suite!(gitlab);
