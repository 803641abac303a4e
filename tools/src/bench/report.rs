//! The figures of a benchmark as rows — what was measured, its value, the target an
//! issue names for it — so that `bench all` prints the whole picture as one table.

/// One measured figure.
#[derive(Debug, Clone)]
pub struct Figure {
    /// What was measured (the benchmark and its part).
    pub name: String,
    /// The value with its unit.
    pub value: String,
    /// The target an issue names, or `-`.
    pub target: String,
}

impl Figure {
    /// A row.
    pub fn new(
        name: impl Into<String>,
        value: impl Into<String>,
        target: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            target: target.into(),
        }
    }
}

/// The figures of one benchmark (or of all).
pub type Report = Vec<Figure>;

/// Prints the rows as an aligned table of figure, value and target.
pub fn print_table(figures: &[Figure]) {
    let width = |column: fn(&Figure) -> &str, title: &str| {
        figures
            .iter()
            .map(|f| column(f).chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let name = width(|f| &f.name, "figure");
    let value = width(|f| &f.value, "value");
    println!("{:<name$}  {:<value$}  target", "figure", "value");
    println!(
        "{}  {}  {}",
        "-".repeat(name),
        "-".repeat(value),
        "-".repeat(6)
    );
    for f in figures {
        println!("{:<name$}  {:<value$}  {}", f.name, f.value, f.target);
    }
}
