//! ENAS learning curve and time per suggestion, for BENCHMARKS.md:
//! `cargo run --release -p vernier-algorithms --example enas_learning`.
//! A synthetic reward (operation id 0 best, higher ids worse; skips help a little) scores each
//! round's proposals; the controller learns from every finished trial between rounds.

use std::time::Instant;
use vernier_core::{
    Direction, NasConfig, NasOperation, NasParameter, Objective, SearchSpace, SuggestRequest,
    TrialRecord, TrialState,
};

fn nas(layers: i32) -> NasConfig {
    let cat = NasParameter::categorical;
    NasConfig {
        num_layers: layers,
        input_sizes: vec![32, 32, 3],
        output_sizes: vec![10],
        operations: vec![
            NasOperation {
                operation_type: "convolution".into(),
                parameters: vec![cat("filter_size", &["3", "5"]), cat("stride", &["1", "2"])],
            },
            NasOperation {
                operation_type: "reduction".into(),
                parameters: vec![cat("reduction_type", &["max_pooling", "avg_pooling"])],
            },
        ],
    }
}

fn reward(arch: &str) -> f64 {
    let rows: Vec<Vec<i64>> = serde_json::from_str(arch).expect("architecture is JSON");
    let ops: f64 = rows.iter().map(|r| 1.0 - r[0] as f64 / 5.0).sum::<f64>() / rows.len() as f64;
    let skips: Vec<i64> = rows.iter().flat_map(|r| r[1..].to_vec()).collect();
    let skip = skips.iter().sum::<i64>() as f64 / skips.len().max(1) as f64;
    0.8 * ops + 0.2 * skip
}

fn settings(seed: u64, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    extra
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .chain(std::iter::once(("random_state".into(), seed.to_string())))
        .collect()
}

/// Mean reward per round and mean seconds per suggestion call.
fn run(seed: u64, extra: &[(&str, &str)], rounds: usize, per_round: usize) -> (Vec<f64>, f64) {
    let space = SearchSpace::for_nas(nas(4));
    let objective = Objective::new("Validation-Accuracy", Direction::Maximize);
    let enas = vernier_algorithms::build("enas", &settings(seed, extra), &space, &objective)
        .expect("valid settings");
    let mut trials: Vec<TrialRecord> = Vec::new();
    let (mut curve, mut secs) = (Vec::new(), 0.0);
    for round in 0..rounds {
        let start = Instant::now();
        let out = enas
            .suggest(&SuggestRequest {
                space: &space,
                objective: &objective,
                trials: &trials,
                count: per_round,
                seed: seed * 1000 + round as u64,
                state: None,
            })
            .expect("suggests");
        secs += start.elapsed().as_secs_f64();
        let mut sum = 0.0;
        for p in out.proposals {
            let r = reward(
                &p.assignment
                    .get("architecture")
                    .expect("architecture")
                    .to_string(),
            );
            sum += r;
            trials.push(TrialRecord {
                name: format!("t{}", trials.len()),
                assignment: p.assignment,
                state: TrialState::Succeeded,
                objective: Some(r),
                labels: Default::default(),
                metrics: Default::default(),
            });
        }
        curve.push(sum / per_round as f64);
    }
    (curve, secs / rounds as f64)
}

fn main() {
    let (rounds, per_round) = (10, 6);
    for (label, extra) in [
        (
            "tuned (hidden 16, lr 0.02, 5 steps, decay 0.9)",
            &[
                ("controller_hidden_size", "16"),
                ("controller_learning_rate", "0.02"),
                ("controller_train_steps", "5"),
                ("controller_baseline_decay", "0.9"),
            ][..],
        ),
        ("Katib defaults (hidden 64, lr 5e-5, 50 steps)", &[][..]),
    ] {
        println!("{label}: mean reward of each round's {per_round} proposals");
        let mut per_call = 0.0;
        for seed in 1..=5 {
            let (curve, secs) = run(seed, extra, rounds, per_round);
            per_call += secs / 5.0;
            let shown: Vec<String> = curve.iter().map(|v| format!("{v:.3}")).collect();
            println!("  seed {seed}: {}", shown.join(" "));
        }
        println!(
            "  mean time per suggestion call over the run: {:.1} ms",
            per_call * 1e3
        );
    }
    for trials in [50, 200] {
        let space = SearchSpace::for_nas(nas(8));
        let objective = Objective::new("Validation-Accuracy", Direction::Maximize);
        let enas = vernier_algorithms::build("enas", &settings(1, &[]), &space, &objective)
            .expect("valid settings");
        let seed_out = enas
            .suggest(&SuggestRequest {
                space: &space,
                objective: &objective,
                trials: &[],
                count: trials,
                seed: 7,
                state: None,
            })
            .expect("suggests");
        let history: Vec<TrialRecord> = seed_out
            .proposals
            .into_iter()
            .enumerate()
            .map(|(i, p)| TrialRecord {
                name: format!("t{i}"),
                objective: Some(0.5 + (i % 7) as f64 / 20.0),
                assignment: p.assignment,
                state: TrialState::Succeeded,
                labels: Default::default(),
                metrics: Default::default(),
            })
            .collect();
        let start = Instant::now();
        enas.suggest(&SuggestRequest {
            space: &space,
            objective: &objective,
            trials: &history,
            count: 3,
            seed: 8,
            state: None,
        })
        .expect("suggests");
        println!(
            "Katib defaults, 8 layers, {trials} finished trials: {:.0} ms per GetSuggestions (3 proposals)",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    let darts = vernier_algorithms::build(
        "darts",
        &[],
        &SearchSpace::for_nas(nas(8)),
        &Objective::new("Best-Genotype", Direction::Maximize),
    )
    .expect("valid");
    let start = Instant::now();
    for _ in 0..1000 {
        let space = SearchSpace::for_nas(nas(8));
        let o = Objective::new("Best-Genotype", Direction::Maximize);
        darts
            .suggest(&SuggestRequest {
                space: &space,
                objective: &o,
                trials: &[],
                count: 1,
                seed: 1,
                state: None,
            })
            .expect("suggests");
    }
    println!(
        "darts: {:.3} ms per suggestion",
        start.elapsed().as_secs_f64()
    );
}
