//! headroom's Jira Cloud knowledge (PROVIDER-FACTS.md, Jira): the JQL a site sync asks
//! ([`jql`]), the store's rows of what Jira answers ([`rows`]), both pure and synchronous,
//! and the site sync's stages on the shared runner ([`sync`]), which page through the exit
//! door. An OAuth app finds a site's gateway through [`gateway`].

pub mod gateway;
pub mod jql;
pub mod rows;
pub mod sync;
