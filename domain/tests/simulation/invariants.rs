//! What must hold after every step and once the schedule is drained, and what
//! the schedules reached.

use crate::model::{World, fold};
use domain::runs::run::RunEvent;
use std::collections::BTreeSet;

impl World {
    pub(crate) fn check(&self) -> Result<(), String> {
        for (run, events) in &self.streams {
            let claims = events
                .iter()
                .filter(|e| matches!(e, RunEvent::RunClaimed { .. }))
                .count();
            let starts = events
                .iter()
                .filter(|e| matches!(e, RunEvent::RunStarted))
                .count();
            if claims > 1 || starts > 1 {
                return Err(format!("run {run}: {claims} claims, {starts} starts"));
            }
            let mut cancelled = false;
            let mut ended = false;
            for event in events {
                match event {
                    RunEvent::RunStarted if cancelled || ended => {
                        return Err(format!("run {run} started after a cancel or its end"));
                    }
                    RunEvent::RunContentExpired => {}
                    _ if ended => {
                        return Err(format!("run {run} changed after its end: {event:?}"));
                    }
                    RunEvent::RunCancelRequested => cancelled = true,
                    RunEvent::RunFinished(_) => ended = true,
                    _ => {}
                }
            }
            let holders = self
                .workers
                .iter()
                .filter(|w| w.alive && w.holds.contains(run))
                .count();
            if holders > 1 {
                return Err(format!("run {run} held by {holders} live workers"));
            }
        }
        let mut seen = BTreeSet::new();
        for reference in self.sealed.iter().chain(&self.unsealed) {
            if !seen.insert(*reference) {
                return Err(format!("event {reference:?} sealed twice"));
            }
        }
        let committed: usize = self.streams.values().map(Vec::len).sum();
        if seen.len() != committed {
            return Err(format!("{committed} committed, {} in the log", seen.len()));
        }
        if self.checkpoint > self.sealed.len() {
            return Err("the checkpoint passed the sealed end".into());
        }
        if !self.applied.iter().copied().eq(1..=self.checkpoint) {
            return Err("the projector skipped or repeated a position".into());
        }
        Ok(())
    }

    pub(crate) fn check_drained(&self) -> Result<(), String> {
        for (run, events) in &self.streams {
            let run_state = fold(events);
            let projected = self.read_model.get(run).cloned();
            if projected != Some((run_state.status, run_state.worker_id.clone())) {
                return Err(format!(
                    "run {run}: read model {projected:?}, stream {:?}",
                    run_state.status
                ));
            }
        }
        Ok(())
    }
}

/// What the schedules did, summed: proof that they reach the cases that matter.
#[derive(Debug, Default)]
pub(crate) struct Coverage {
    pub(crate) conflicts: usize,
    pub(crate) crashes: usize,
    pub(crate) claims: usize,
    pub(crate) starts: usize,
    pub(crate) lost: usize,
    pub(crate) cancels_of_started_runs: usize,
}

impl Coverage {
    pub(crate) fn add(&mut self, world: &World) {
        let count = |text: &str| world.trace.iter().filter(|t| t.contains(text)).count();
        self.conflicts += count("conflict");
        self.crashes += count("crash");
        self.claims += count("RunClaimed");
        self.starts += count("RunStarted");
        self.lost += count("worker_lost");
        self.cancels_of_started_runs += count("RunCancelRequested");
    }
}
