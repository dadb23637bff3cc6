//! headroom's Linear knowledge (PROVIDER-FACTS.md, Linear): the GraphQL documents a workspace
//! sync sends ([`documents`]) and the complexity Linear will charge for each before it is sent
//! ([`complexity`]), and the store's rows of the nodes it answers ([`rows`]), all pure; and
//! the stages that collect a workspace on the shared sync runner ([`sync`]), which send through
//! the exit door.
//!
//! Linear meters two budgets per user: requests and complexity points, both leaky buckets. A
//! document's complexity is known before sending, so the governor can hold it against the
//! complexity bucket; the answer's `X-Complexity` is the truth calibration compares with.

pub mod complexity;
pub mod documents;
pub mod rows;
pub mod sync;
