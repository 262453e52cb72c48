//! The race harness of `claim_many`, shared by both native backends: one OS thread and
//! connection per lane, all released at once by a barrier so that the claims really race, and
//! the answers put back in input order.

use std::sync::Barrier;

use crate::error::{Error, Result};
use crate::outcome::{Fence, Outcome};

/// Claims for every owner on `lanes` threads: each thread connects with `connect` (before the
/// barrier, so connecting is not part of the race), waits at the barrier (even when connecting
/// failed, so no thread waits forever), then claims for the owners of its lane (owner `i`
/// belongs to lane `i % lanes`) with `claim`. The first error, in lane order, wins; otherwise the
/// outcomes come in input order. `lanes` is at least 1 and at most `owners.len()` (0 owners: no
/// threads, no answers).
pub(crate) fn claim_race<C>(
    owners: &[&str],
    lanes: usize,
    connect: impl Fn() -> Result<C> + Sync,
    claim: impl Fn(&C, &str) -> Result<Outcome<Fence>> + Sync,
) -> Result<Vec<Outcome<Fence>>> {
    let lanes = lanes.min(owners.len());
    if lanes == 0 {
        return Ok(Vec::new());
    }
    let barrier = Barrier::new(lanes);
    type LaneAnswers = Result<Vec<(usize, Result<Outcome<Fence>>)>>;
    let lane_answers: Vec<LaneAnswers> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..lanes)
            .map(|lane| {
                let (barrier, connect, claim) = (&barrier, &connect, &claim);
                scope.spawn(move || {
                    let connected = connect();
                    barrier.wait();
                    let connection = connected?;
                    Ok((lane..owners.len())
                        .step_by(lanes)
                        .map(|i| (i, claim(&connection, owners[i])))
                        .collect())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(Error::Internal {
                        message: "a claim_many thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let mut results: Vec<Option<Outcome<Fence>>> = owners.iter().map(|_| None).collect();
    for answers in lane_answers {
        for (i, answer) in answers? {
            results[i] = Some(answer?);
        }
    }
    results
        .into_iter()
        .map(|slot| {
            slot.ok_or_else(|| Error::Internal {
                message: "claim_many lost an owner's answer".into(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_come_in_input_order_whatever_the_lanes() {
        let owners = ["a", "b", "c", "d", "e"];
        for lanes in [1, 2, 5, 9] {
            let answers = claim_race(
                &owners,
                lanes,
                || Ok(()),
                |_, owner| Ok(Outcome::Granted(owner.as_bytes()[0] as Fence)),
            )
            .unwrap();
            let got: Vec<Fence> = answers.into_iter().filter_map(Outcome::granted).collect();
            assert_eq!(got, [97, 98, 99, 100, 101], "{lanes} lanes");
        }
        assert!(claim_race(&[], 4, || Ok(()), |_, _| unreachable!())
            .unwrap()
            .is_empty());
        let failed = claim_race(
            &owners,
            2,
            || Err::<(), _>(Error::invalid("x", "y")),
            |_, _| unreachable!(),
        );
        assert_eq!(failed.unwrap_err().code(), "invalid_argument");
    }
}
