//! `jobs`: every job and its lease, as a table for people or as JSON lines.

use leasefence::protocol::{Backend as _, Response, TargetBackend};
use leasefence::JobState;
use serde_json::json;

use crate::exit::EXIT_OK;

pub(crate) fn jobs(backend: &mut TargetBackend, json: bool, now: f64) -> i32 {
    let rows = match backend.leases().and_then(|store| store.jobs()) {
        Ok(rows) => rows,
        Err(err) => {
            println!(
                "{}",
                Response::Failed {
                    code: err.code(),
                    message: err.to_string()
                }
                .to_json()
            );
            return crate::exit::exit_status_of(err.error_code());
        }
    };
    if json {
        for row in &rows {
            println!("{}", json!(row));
        }
        return EXIT_OK;
    }
    print!("{}", table(&rows, now));
    EXIT_OK
}

fn lease_state(row: &JobState, now: f64) -> String {
    if row.done {
        "done".into()
    } else if row.until > now && row.owner.is_none() {
        format!("scheduled, in {:.1}s", row.until - now)
    } else if row.until > now {
        format!("live, {:.1}s left", row.until - now)
    } else if row.owner.is_some() {
        "expired".into()
    } else {
        "free".into()
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

fn table(rows: &[JobState], now: f64) -> String {
    let header = ["JOB", "OWNER", "FENCE", "UNTIL", "LEASE", "RESULT"].map(String::from);
    let mut cells: Vec<[String; 6]> = vec![header];
    for row in rows {
        cells.push([
            clip(&row.id, 24),
            clip(row.owner.as_deref().unwrap_or("-"), 16),
            row.fence.to_string(),
            row.until.to_string(),
            lease_state(row, now),
            clip(row.result.as_deref().unwrap_or("-"), 32),
        ]);
    }
    let widths: Vec<usize> = (0..6)
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
