//! How a record becomes SQL: [`RowSpec`] (its table, identity and columns) and the upsert
//! text for one row or many of one shape, rendered once and kept.

use super::SqlValue;

/// How one record is written: the table, the identity it conflicts on, and the columns.
#[derive(Debug, Clone)]
pub(crate) struct RowSpec {
    pub table: &'static str,
    pub conflict: &'static [&'static str],
    /// Written on insert, never overwritten by a later upsert.
    pub insert_only: &'static [&'static str],
    /// Overwritten only by a greater value (or when the stored one is NULL): an upsert
    /// carrying an older instant keeps the newer one, whatever order writers commit in.
    pub never_backwards: &'static [&'static str],
    /// Whether the table has a surrogate `id` to return.
    pub returns_id: bool,
    pub values: Vec<(&'static str, SqlValue)>,
}

/// Rows one multi-row upsert carries at most: with the widest table's columns, far under
/// either backend's limit on bound parameters (SQLite 32,766, PostgreSQL 65,535).
pub(crate) const ROWS_PER_STATEMENT: usize = 100;

/// The identity of an upsert statement's text: everything [`RowSpec::render`] reads.
pub(crate) type ShapeKey = (
    &'static str,
    Vec<&'static str>,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
    bool,
);

impl RowSpec {
    /// The upsert of `rows` rows of this shape in one statement (`VALUES (…), (…)`), rendered
    /// once per shape (a table and its column list) and row count, and kept for the process:
    /// a sync writes thousands of rows of a handful of shapes, at most
    /// [`ROWS_PER_STATEMENT`] a statement, so the texts kept stay bounded.
    pub fn sql_rows(&self, rows: usize) -> &'static str {
        static CACHE: std::sync::OnceLock<
            std::sync::Mutex<std::collections::HashMap<(ShapeKey, usize), &'static str>>,
        > = std::sync::OnceLock::new();
        let key = (self.shape(), rows);
        let mut cache = CACHE
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(sql) = cache.get(&key) {
            return sql;
        }
        // Shapes are compile-time constants of this module, so the texts kept are bounded.
        let sql: &'static str = Box::leak(self.render(rows).into_boxed_str());
        cache.insert(key, sql);
        sql
    }

    /// What decides the statement's text: two specs of one shape share one statement.
    pub fn shape(&self) -> ShapeKey {
        (
            self.table,
            self.values.iter().map(|(c, _)| *c).collect(),
            self.conflict,
            self.insert_only,
            self.never_backwards,
            self.returns_id,
        )
    }

    /// The row's identity: its values of the conflict columns, as text.
    pub fn conflict_key(&self) -> Vec<String> {
        self.values
            .iter()
            .filter(|(c, _)| self.conflict.contains(c))
            .map(|(_, v)| format!("{v:?}"))
            .collect()
    }

    /// `INSERT INTO t (…) VALUES ($1…) ON CONFLICT (…) DO UPDATE SET c = excluded.c …`, a
    /// [`RowSpec::never_backwards`] column kept unless the new value is greater (a `CASE` both
    /// backends accept). Table and column names are compile-time constants of this module,
    /// never input.
    fn render(&self, rows: usize) -> String {
        let columns: Vec<&str> = self.values.iter().map(|(c, _)| *c).collect();
        let width = columns.len();
        let params: Vec<String> = (0..rows.max(1))
            .map(|r| {
                let row: Vec<String> = (1..=width).map(|i| format!("${}", r * width + i)).collect();
                row.join(", ")
            })
            .collect();
        let t = self.table;
        let updates: Vec<String> = columns
            .iter()
            .filter(|c| !self.conflict.contains(c) && !self.insert_only.contains(c))
            .map(|c| {
                if self.never_backwards.contains(c) {
                    format!(
                        "{c} = CASE WHEN {t}.{c} IS NULL OR excluded.{c} > {t}.{c} \
                         THEN excluded.{c} ELSE {t}.{c} END"
                    )
                } else {
                    format!("{c} = excluded.{c}")
                }
            })
            .collect();
        let action = if updates.is_empty() {
            "NOTHING".to_owned()
        } else {
            format!("UPDATE SET {}", updates.join(", "))
        };
        let returning = if self.returns_id { " RETURNING id" } else { "" };
        format!(
            "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO {}{}",
            self.table,
            columns.join(", "),
            params.join("), ("),
            self.conflict.join(", "),
            action,
            returning
        )
    }
}
