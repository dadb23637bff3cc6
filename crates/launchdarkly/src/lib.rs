//! headroom's LaunchDarkly knowledge (PROVIDER-FACTS.md, LaunchDarkly REST API v2): the
//! store's rows of what LaunchDarkly answers ([`rows`]), pure and synchronous, and the
//! account sync's stages on the shared runner ([`sync`]), which page through the exit door.

pub mod rows;
pub mod sync;
