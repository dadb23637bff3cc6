//! The provider contract suite's shared parts: the rig, and the suite written once over
//! [`headroom_core::provider::GitProvider`].

pub mod rig;
pub mod suite;
