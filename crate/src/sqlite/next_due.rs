//! `next_due`: when an idle worker has something to look at again without being woken
//! (docs/contract.md section 11, waking), by index probes only.

use rusqlite::{Connection, OptionalExtension};

use crate::error::{Error, Result};
use crate::rules::queues::check_queues;

/// The earliest `until` among the open jobs (not done, fence not exhausted) of `queues` (`None`:
/// every queue), due already or not; `None` when there is no open job. Every queue: one probe of
/// `leasefence_claimable`; named queues: one probe of `leasefence_next` per (queue, priority)
/// with an open job, the pairs found as `claim_next` finds them.
pub(crate) fn next_due(conn: &Connection, queues: Option<&[&str]>) -> Result<Option<f64>> {
    check_queues(queues)?;
    let Some(queues) = queues else {
        return value(conn, include_str!("sql/next_due_any.sql"), &[]);
    };
    let mut earliest: Option<f64> = None;
    for queue in queues {
        let mut priority: Option<i64> =
            value(conn, include_str!("sql/top_priority.sql"), &[queue])?;
        while let Some(p) = priority {
            let until: Option<f64> =
                value(conn, include_str!("sql/next_due_bucket.sql"), &[queue, &p])?;
            if let Some(until) = until {
                earliest = Some(earliest.map_or(until, |e: f64| e.min(until)));
            }
            priority = value(conn, include_str!("sql/lower_priority.sql"), &[queue, &p])?;
        }
    }
    Ok(earliest)
}

fn value<T: rusqlite::types::FromSql>(
    conn: &Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
) -> Result<Option<T>> {
    conn.prepare_cached(sql)
        .and_then(|mut stmt| stmt.query_row(args, |row| row.get(0)).optional())
        .map_err(Error::storage("next_due"))
}

#[cfg(test)]
mod tests {
    use crate::{LeaseStore, Leases, NewJob};

    #[test]
    fn earliest_open_until_of_the_queues() {
        let store = LeaseStore::open_in_memory().unwrap();
        assert_eq!(store.next_due_in(None).unwrap(), None);
        store
            .enqueue_many(&[
                NewJob::new("a").queue("mail").run_at(50.0),
                NewJob::new("b").queue("mail").priority(3).run_at(40.0),
                NewJob::new("c").queue("bill").run_at(30.0),
                NewJob::new("d").queue("bill").priority(-1).run_at(20.0),
            ])
            .unwrap();
        assert_eq!(store.next_due_in(None).unwrap(), Some(20.0));
        assert_eq!(store.next_due_in(Some(&["mail"])).unwrap(), Some(40.0));
        assert_eq!(store.next_due_in(Some(&["bill"])).unwrap(), Some(20.0));
        assert_eq!(store.next_due_in(Some(&["none"])).unwrap(), None);
        // A done job is not due; a leased one is due when its lease ends.
        let lease = store
            .claim("d", "me", 25.0, 100.0)
            .unwrap()
            .lease("d", "me")
            .unwrap();
        assert_eq!(store.next_due_in(Some(&["bill"])).unwrap(), Some(30.0));
        assert_eq!(store.next_due_in(None).unwrap(), Some(30.0));
        assert!(store.complete(&lease, 26.0, None).unwrap().is_granted());
        let c = store
            .claim("c", "me", 31.0, 10.0)
            .unwrap()
            .lease("c", "me")
            .unwrap();
        assert_eq!(store.next_due_in(Some(&["bill"])).unwrap(), Some(41.0));
        assert!(store.complete(&c, 32.0, None).unwrap().is_granted());
        assert_eq!(store.next_due_in(Some(&["bill"])).unwrap(), None);
        assert!(store.next_due_in(Some(&[])).is_err());
    }

    #[test]
    fn next_due_reads_indexes_only() {
        let store = LeaseStore::open_in_memory().unwrap();
        let conn = store.connection();
        let plans = [
            (include_str!("sql/next_due_any.sql"), vec![]),
            (include_str!("sql/next_due_bucket.sql"), vec!["q", "0"]),
        ];
        for (sql, args) in plans {
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap()
                .query_map(rusqlite::params_from_iter(args), |row| {
                    row.get::<_, String>(3)
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let plan = plan.join(" | ");
            // "SEARCH ... USING (COVERING) INDEX" or "SCAN ... USING INDEX" (an index walked in order
            // and stopped at the first row by LIMIT 1), never the table, never a sort.
            assert!(plan.contains("INDEX leasefence_"), "{plan}");
            assert!(!plan.contains("TEMP B-TREE"), "a sort: {plan}");
        }
    }
}
