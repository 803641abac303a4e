//! A seeded, deterministic simulation of the executor queue and the projector
//! (issue 27, item 2). Workers claim, start, finish and lose runs; clients submit
//! and cancel; transactions commit late and out of order; workers crash, their
//! heartbeats go stale and another worker's recovery ends their runs; a sealer
//! gives committed events their log positions and a projector folds them into a
//! read model the workers pick their claims from, lagging behind.
//!
//! Every run transition is decided by the real [`Run`] aggregate; the store is
//! modelled the way postgres-es uses PostgreSQL (an append carries the version it
//! was decided on and fails at commit when the stream moved on), and the sealer
//! and projector as decision 0006 describes them (positions in commit order, a
//! checkpoint per projection). After every step the invariants are checked:
//!
//! - a run is claimed at most once, and held by at most one live worker;
//! - a cancelled run never starts; a run starts at most once;
//! - a terminal run never changes (only its contents may expire);
//! - the sealer gives every committed event exactly one position, in commit order;
//! - the projector applies positions 1..=checkpoint, each once, in order, and
//!   never passes the sealed end; drained, its read model equals the streams.
//!
//! `SIM_SEEDS` (default 2000) seeds run in `cargo test`; `SIM_SEED=<n>` replays one;
//! `scripts/simulate.sh` runs many more. A failure names its seed.

mod invariants;
mod model;

use invariants::Coverage;
use model::{STEPS, World};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn simulate(seed: u64, coverage: &mut Coverage) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut world = World::new();
    for step in 0..STEPS {
        world.step(&mut rng);
        world
            .check()
            .map_err(|e| format!("step {step}: {e}\nlast steps:\n{}", tail(&world.trace)))?;
    }
    world.drain(&mut rng);
    world.check().and_then(|()| world.check_drained())?;
    coverage.add(&world);
    Ok(())
}

fn tail(trace: &[String]) -> String {
    trace[trace.len().saturating_sub(20)..].join("\n")
}

#[test]
fn the_queue_and_the_projector_keep_their_invariants_under_every_schedule() {
    let mut coverage = Coverage::default();
    if let Some(seed) = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        simulate(seed, &mut coverage).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        println!("seed {seed}: {coverage:?}");
        return;
    }
    let seeds: u64 = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let first: u64 = std::env::var("SIM_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    for seed in first..first + seeds {
        if let Err(error) = simulate(seed, &mut coverage) {
            panic!("seed {seed} (replay with SIM_SEED={seed}): {error}");
        }
    }
    println!("{seeds} seeds from {first}: every invariant held; {coverage:?}");
    let Coverage {
        conflicts,
        crashes,
        claims,
        starts,
        lost,
        cancels_of_started_runs,
    } = coverage;
    assert!(
        [
            conflicts,
            crashes,
            claims,
            starts,
            lost,
            cancels_of_started_runs
        ]
        .iter()
        .all(|&n| n > 0),
        "the schedules never reached some case: {coverage:?}"
    );
}

#[test]
fn a_schedule_replays_from_its_seed() {
    let run = |seed| {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut world = World::new();
        for _ in 0..STEPS {
            world.step(&mut rng);
        }
        world.trace
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}
