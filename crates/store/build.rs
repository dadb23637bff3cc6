//! The migrations are embedded at compile time (`sqlx::migrate!`): rebuild when a migration
//! file is added or changed, not only when Rust code changes.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
