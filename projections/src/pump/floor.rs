//! The seal floor: an `append_seq` below which no row is unsealed, now or later
//! (docs/decisions/0013-the-seal-floor.md).
//!
//! A sealed row's entry stays in the partial index of unsealed rows until VACUUM, so
//! a pass that read from the start of the index walked everything sealed since the
//! last VACUUM. Passes read from the floor instead, and the pump moves it up here.
//!
//! Why a floor is safe: an append's transaction holds its id before it draws an
//! `append_seq` (the `txid` column's default, `pg_current_xact_id()`, comes before
//! the identity column), and each value is handed out when drawn (the sequence
//! caches one). So every row numbered up to `L`, the sequence's last value read in
//! one cycle, belongs to a transaction whose id is below the `xmax` of any snapshot
//! taken later. Once a cycle's snapshot has an `xmin` at or past that `xmax`, all of
//! those transactions have ended: their rows are visible to the cycle, or aborted.
//! When the cycle reads every unsealed row from the old floor up to `L` (its read
//! was not cut short before `L`) and commits their seal, nothing up to `L` can be
//! unsealed any more, and the floor moves to `L + 1` in the same commit.
//!
//! A transaction held open anywhere in the cluster keeps `xmin` back: the floor
//! waits (passes walk more sealed entries), sealing does not.

/// What a cycle's opening read saw of the log's writers: its snapshot's bounds and
/// the sequence's last value, read after the snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Horizon {
    /// The oldest transaction id still running for the snapshot.
    pub xmin: i64,
    /// The first transaction id not yet assigned when the snapshot was taken.
    pub xmax: i64,
    /// The last `append_seq` handed out (0 when none was).
    pub last_seq: i64,
}

/// What a cycle read of the unsealed rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Read {
    /// Whether it read every unsealed row from the floor on (not cut by its limit).
    pub complete: bool,
    /// The `append_seq` of the last row it read.
    pub last: Option<i64>,
}

/// The pump's next floor in the making: the sequence's last value seen by one cycle
/// and, from the next cycle's snapshot, the transaction id all of its rows lie below.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Floor {
    candidate: Option<Candidate>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    last_seq: i64,
    below_xid: Option<i64>,
}

impl Floor {
    /// Takes in a cycle's horizon, whether or not the cycle commits: a candidate's
    /// bound comes from the first snapshot after its sequence read, and the first
    /// candidate from the first cycle.
    pub(super) fn observe(&mut self, horizon: &Horizon) {
        match &mut self.candidate {
            None => {
                self.candidate = Some(Candidate {
                    last_seq: horizon.last_seq,
                    below_xid: None,
                })
            }
            Some(candidate) if candidate.below_xid.is_none() => {
                candidate.below_xid = Some(horizon.xmax)
            }
            Some(_) => {}
        }
    }

    /// The floor a cycle with this horizon and read may write with its seal, if it
    /// may move it.
    pub(super) fn next(&self, horizon: &Horizon, read: Read) -> Option<i64> {
        let candidate = self.candidate?;
        if horizon.xmin < candidate.below_xid? {
            return None;
        }
        match (read.complete, read.last) {
            (true, _) => Some(candidate.last_seq + 1),
            (false, Some(last)) => Some(candidate.last_seq.min(last) + 1),
            (false, None) => None,
        }
    }

    /// After a cycle committed `floor` (from [`Self::next`]): a candidate reached in
    /// full makes way for the sequence's value this cycle read.
    pub(super) fn moved(&mut self, floor: i64, horizon: &Horizon) {
        if self.candidate.is_some_and(|c| floor > c.last_seq) {
            self.candidate = Some(Candidate {
                last_seq: horizon.last_seq,
                below_xid: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn horizon(xmin: i64, xmax: i64, last_seq: i64) -> Horizon {
        Horizon {
            xmin,
            xmax,
            last_seq,
        }
    }

    const COMPLETE: Read = Read {
        complete: true,
        last: None,
    };

    #[test]
    fn the_floor_follows_one_cycle_behind_when_no_transaction_is_open() {
        let mut floor = Floor::default();
        let first = horizon(100, 100, 7);
        floor.observe(&first);
        assert_eq!(floor.next(&first, COMPLETE), None, "no bound yet");
        let second = horizon(102, 102, 9);
        floor.observe(&second);
        assert_eq!(floor.next(&second, COMPLETE), Some(8));
        floor.moved(8, &second);
        let third = horizon(104, 104, 12);
        floor.observe(&third);
        assert_eq!(floor.next(&third, COMPLETE), Some(10));
    }

    #[test]
    fn an_open_transaction_holds_the_floor_until_it_ends() {
        let mut floor = Floor::default();
        floor.observe(&horizon(100, 105, 7));
        let open = horizon(101, 110, 9);
        floor.observe(&open);
        assert_eq!(
            floor.next(&open, COMPLETE),
            None,
            "101 may hold a row up to 7"
        );
        let still = horizon(101, 120, 30);
        floor.observe(&still);
        assert_eq!(floor.next(&still, COMPLETE), None);
        let ended = horizon(110, 125, 31);
        floor.observe(&ended);
        assert_eq!(
            floor.next(&ended, COMPLETE),
            Some(8),
            "bound from 110, not 125"
        );
    }

    #[test]
    fn a_read_cut_short_moves_the_floor_only_past_what_it_read() {
        let mut floor = Floor::default();
        floor.observe(&horizon(1, 1, 50_000));
        let busy = horizon(2, 2, 60_000);
        floor.observe(&busy);
        let cut = Read {
            complete: false,
            last: Some(5_000),
        };
        assert_eq!(floor.next(&busy, cut), Some(5_001));
        floor.moved(5_001, &busy);
        let cut_again = Read {
            complete: false,
            last: Some(10_000),
        };
        assert_eq!(
            floor.next(&busy, cut_again),
            Some(10_001),
            "the candidate stays"
        );
        let nothing = Read {
            complete: false,
            last: None,
        };
        assert_eq!(floor.next(&busy, nothing), None);
    }

    #[test]
    fn a_cycle_that_did_not_commit_leaves_the_candidate() {
        let mut floor = Floor::default();
        floor.observe(&horizon(1, 1, 7));
        let second = horizon(2, 2, 9);
        floor.observe(&second);
        assert_eq!(floor.next(&second, COMPLETE), Some(8));
        // rolled back: `moved` is not called
        let third = horizon(3, 3, 11);
        floor.observe(&third);
        assert_eq!(floor.next(&third, COMPLETE), Some(8));
    }
}
