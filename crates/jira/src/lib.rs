//! headroom's Jira Cloud knowledge (PROVIDER-FACTS.md, Jira): the JQL a site sync asks
//! ([`jql`]). Pure and synchronous: the exit door sends, the sync stages page.

pub mod jql;
