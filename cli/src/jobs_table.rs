//! `jobs` for people: one page of `list_jobs` as a table, with the cursor of the next page.

use leasefence::protocol::Response;
use serde_json::Value;

use crate::exit::EXIT_OK;

/// Prints the page in `response` (a `list_jobs` answer) as a table; `now` words the leases.
pub(crate) fn print(response: &Response, now: f64) -> i32 {
    let page = match response {
        Response::Answered { value, .. } => value,
        Response::Failed { .. } => &Value::Null,
    };
    let rows = page["jobs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    print!("{}", table(rows, now));
    if let Some(next) = page["next"].as_str() {
        println!("more: --after {}", shell_word(next));
    }
    EXIT_OK
}

/// `text` as one shell word (single-quoted when it holds anything but plain characters).
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.:/@=+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// What the lease of a listed job means at `now`.
fn lease_state(row: &Value, now: f64) -> String {
    let until = row["until"].as_f64().unwrap_or(0.0);
    match row["status"].as_str().unwrap_or("") {
        "done" => "done".into(),
        "dead" => "dead".into(),
        "scheduled" => format!("scheduled, in {:.1}s", until - now),
        "leased" => format!("live, {:.1}s left", until - now),
        _ if row["owner"].is_string() => "expired".into(),
        _ => "free".into(),
    }
}

fn clip(text: &str, width: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= width {
        flat
    } else {
        flat.chars().take(width - 1).collect::<String>() + "…"
    }
}

fn table(rows: &[Value], now: f64) -> String {
    let header = ["JOB", "QUEUE", "OWNER", "FENCE", "UNTIL", "LEASE", "RESULT"].map(String::from);
    let mut cells: Vec<[String; 7]> = vec![header];
    for row in rows {
        let text = |key: &str, width: usize| clip(row[key].as_str().unwrap_or("-"), width);
        cells.push([
            text("id", 24),
            text("queue", 12),
            text("owner", 16),
            row["fence"].to_string(),
            row["until"].to_string(),
            lease_state(row, now),
            text("result", 32),
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &cells {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no jobs; add one with `leasefence enqueue JOB`)\n");
    }
    out
}
