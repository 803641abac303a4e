//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!`
//! embeds the `migrations/` folder at compile time and does not track new files.

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
