//! Counted nouns for what a person reads: "1 attempt", "4 attempts", never "attempt(s)".

/// `n` and the noun that agrees with it: `counted(1, "run", "runs")` is "1 run".
pub fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn the_noun_agrees_with_the_count() {
        assert_eq!(counted(0u32, "attempt", "attempts"), "0 attempts");
        assert_eq!(counted(1u32, "attempt", "attempts"), "1 attempt");
        assert_eq!(counted(4u64, "sync run", "sync runs"), "4 sync runs");
    }
}
