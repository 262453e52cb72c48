//! The owner record of a dot-file lock (`<db>.lock`), written and read by the one lock protocol
//! (dot_lock/), in Node and natively: one format, so each side judges the other's records. Pure
//! text, no I/O.

/// What a complete record says about its owner.
// `thread` is read only by the Node package (a worker thread's lock, freed by its parent).
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) struct Owner {
    pub thread: Option<u32>,
    pub pid: u32,
    /// The owner's /proc start time, to tell a reused pid apart; None when it was unknown.
    pub start: Option<String>,
    pub host: String,
    /// The boot it was written under; records of earlier versions have none.
    pub boot: Option<String>,
    pub nonce: String,
}

/// A record for `pid`; `boot` is optional, so records of earlier versions still parse (and
/// theirs ours). It always ends with its nonce line and a newline.
pub(crate) fn format(
    pid: u32,
    start: Option<&str>,
    host: &str,
    thread: u32,
    boot: Option<&str>,
    nonce: &str,
) -> String {
    let boot = boot.map(|id| format!("boot={id}\n")).unwrap_or_default();
    format!(
        "leasefence-dotlock v1\npid={pid}\nstart={}\nhost={host}\nthread={thread}\n{boot}nonce={nonce}\n",
        start.unwrap_or("-")
    )
}

/// Reads a complete record; `None` for anything else (empty, NUL bytes, cut short).
pub(crate) fn parse(rec: &str) -> Option<Owner> {
    if !rec.ends_with('\n') {
        return None;
    }
    let mut lines = rec.lines();
    if lines.next()? != "leasefence-dotlock v1" {
        return None;
    }
    let (mut pid, mut start, mut host, mut nonce, mut thread) = (None, None, None, None, None);
    let mut boot = None;
    for l in lines {
        let (k, v) = l.split_once('=')?;
        match k {
            "pid" => pid = v.parse().ok(),
            "start" => start = Some(if v == "-" { None } else { Some(v.to_string()) }),
            "host" => host = Some(v.to_string()),
            "nonce" => nonce = Some(v.to_string()),
            "thread" => thread = v.parse().ok(),
            "boot" => boot = Some(v.to_string()),
            _ => {}
        }
    }
    let nonce: String = nonce?;
    if nonce.is_empty() || nonce.contains('/') {
        return None;
    }
    Some(Owner {
        pid: pid?,
        start: start?,
        host: host?,
        boot,
        nonce,
        thread,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_a_cut_one_does_not() {
        let rec = format(7, Some("123"), "h", 0, Some("b-1"), "7-ab-1");
        let owner = parse(&rec).unwrap();
        assert_eq!(
            (owner.pid, owner.start.as_deref(), owner.boot.as_deref()),
            (7, Some("123"), Some("b-1"))
        );
        assert_eq!(owner.nonce, "7-ab-1");
        assert!(parse(&rec[..rec.len() - 3]).is_none());
        assert!(parse("").is_none());
        assert!(parse(&"\0".repeat(64)).is_none());
        let old = format(7, None, "h", 0, None, "7-ab-1");
        assert!(parse(&old).unwrap().boot.is_none());
    }
}
