//! headroom's Jira Cloud knowledge (PROVIDER-FACTS.md, Jira): the JQL a site sync asks
//! ([`jql`]) and the store's rows of what Jira answers ([`rows`]). Pure and synchronous: the exit door sends, the sync stages page.

pub mod jql;
pub mod rows;
