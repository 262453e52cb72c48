//! Waiting for a SIGSTOP to take effect: kill(2) returns before the process's threads stop, so a
//! test that checks what a stopped process holds must wait until every thread has stopped.

use std::time::{Duration, Instant};

/// Waits until every thread of process `pid` is stopped (state `T` in /proc), at most 10 s.
pub fn wait_stopped(pid: u32) {
    let tasks = format!("/proc/{pid}/task");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let all_stopped = std::fs::read_dir(&tasks).unwrap().all(|task| {
            let stat =
                std::fs::read_to_string(task.unwrap().path().join("stat")).unwrap_or_default();
            // The state follows the command name in parentheses.
            stat.rsplit(") ")
                .next()
                .and_then(|rest| rest.chars().next())
                == Some('T')
        });
        if all_stopped {
            return;
        }
        assert!(Instant::now() < deadline, "{tasks}: not stopped");
        std::thread::sleep(Duration::from_millis(2));
    }
}
