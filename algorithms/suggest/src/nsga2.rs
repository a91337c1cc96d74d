//! NSGA-II (`nsga2`): the elitist multi-objective genetic algorithm of Deb, Pratap, Agarwal &
//! Meyarivan 2002, "A fast and elitist multiobjective genetic algorithm: NSGA-II" (IEEE TEVC
//! 6(2)), with Deb's constrained dominance (same paper, §VI) for experiments with constraints.
//!
//! Generations live in trial labels (`vernier.nsga2/generation`), never in memory: the parent
//! population of generation `g + 1` is rebuilt from history as `P_0 = select(G_0)`,
//! `P_{g+1} = select(P_g ∪ G_{g+1})`, where `G_g` are generation `g`'s finished trials and
//! `select` keeps `population_size` by non-dominated rank, then crowding distance. So a
//! restarted experiment continues mid-generation with the same parents. Trials without the
//! label (warm-start results with every objective, enqueued configurations) are members of
//! generation 0: they take its places, so it samples only the rest, and with as many as a
//! population the first children are bred from the best of them (a seeded initial population,
//! as pymoo's `sampling=` takes one).
//!
//! Generation 0 samples the priors. A later generation's children come from binary
//! tournaments on (rank, crowding), simulated binary crossover (SBX, Deb & Agrawal 1995) with
//! probability `crossover_prob` and polynomial mutation (Deb & Goyal 1996) with probability
//! `mutation_prob` per parameter, both on the unit-cube encoding of numeric parameters;
//! categorical parameters take either parent's choice and mutate to a uniform draw. A new
//! generation starts only when every trial of the current one has finished; until then the
//! algorithm proposes fewer trials than asked and the driver waits.

use crate::encode::{assignment_to_unit, unit_to_assignment};
use crate::error::AlgorithmError;
use crate::history::{fingerprint, is_explored, taken_fingerprints};
use crate::random::unused_points;
use crate::sample::{sample_assignment, sample_param};
use crate::settings::Settings;
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use vernier_core::pareto::{crowding_distance, non_dominated_sort};
use vernier_core::{
    Assignment, CoreError, Domain, Objective, Proposal, SearchSpace, SuggestRequest, Suggester,
    Suggestions, TrialRecord,
};

const NAME: &str = "nsga2";
/// The trial label holding the generation number.
pub(crate) const GENERATION_LABEL: &str = "vernier.nsga2/generation";
const SETTINGS: &[&str] = &[
    "population_size",
    "crossover_prob",
    "mutation_prob",
    "random_state",
];
/// Optuna's NSGAIISampler default.
const DEFAULT_POPULATION: usize = 50;
const DEFAULT_CROSSOVER_PROB: f64 = 0.9;
/// Distribution indices of SBX and polynomial mutation (pymoo's defaults).
const ETA_CROSSOVER: f64 = 15.0;
const ETA_MUTATION: f64 = 20.0;
/// Attempts at a child not proposed before.
const MAX_RETRIES: usize = 20;

/// NSGA-II with its validated settings.
#[derive(Debug, Clone)]
pub(crate) struct Nsga2 {
    population: usize,
    crossover_prob: f64,
    /// `None`: one over the number of parameters.
    mutation_prob: Option<f64>,
}

/// `population_size`, the trials of one generation (Optuna's default 50).
pub(crate) fn population(s: &Settings) -> Result<usize, AlgorithmError> {
    Ok(
        s.get::<i64>("population_size", |v| v >= 2, "an integer >= 2")?
            .map_or(DEFAULT_POPULATION, |v| v as usize),
    )
}

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    _space: &SearchSpace,
    _objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let s = Settings::new(name, settings, SETTINGS)?;
    let population = population(&s)?;
    let crossover_prob = s
        .get::<f64>(
            "crossover_prob",
            |v| (0.0..=1.0).contains(&v),
            "a number in [0, 1]",
        )?
        .unwrap_or(DEFAULT_CROSSOVER_PROB);
    let mutation_prob = s.get::<f64>(
        "mutation_prob",
        |v| (0.0..=1.0).contains(&v),
        "a number in [0, 1]",
    )?;
    s.random_state()?;
    Ok(Box::new(Nsga2 {
        population,
        crossover_prob,
        mutation_prob,
    }))
}

/// A finished trial as selection sees it.
#[derive(Debug, Clone)]
struct Member<'a> {
    assignment: &'a Assignment,
    losses: Vec<f64>,
    violation: f64,
}

/// A member of the parent population with its rank and crowding distance.
#[derive(Debug, Clone)]
struct Parent<'a> {
    member: Member<'a>,
    rank: usize,
    crowding: f64,
}

fn generation_of(t: &TrialRecord) -> Option<usize> {
    t.labels.get(GENERATION_LABEL)?.parse().ok()
}

/// A trial without a generation label that holds a place in generation 0: an enqueued
/// configuration (not killed), or a warm-start result that has every objective (one without
/// them could never be selected, so it would only take a place from a sampled member).
fn seeds_generation_zero(t: &TrialRecord, objective: &Objective) -> bool {
    generation_of(t).is_none()
        && is_explored(t)
        && (!t.is_warm_start() || t.usable_losses(objective).is_some())
}

impl Nsga2 {
    /// Keeps `population_size` members: whole fronts while they fit, then the most crowded-out
    /// (largest distance) of the front that does not.
    fn select<'a>(&self, pool: Vec<Member<'a>>) -> Vec<Parent<'a>> {
        let points: Vec<Vec<f64>> = pool.iter().map(|m| m.losses.clone()).collect();
        let violations: Vec<f64> = pool.iter().map(|m| m.violation).collect();
        let fronts = non_dominated_sort(&points, Some(&violations));
        let mut out = Vec::with_capacity(self.population);
        for (rank, front) in fronts.iter().enumerate() {
            if out.len() >= self.population {
                break;
            }
            let crowding = crowding_distance(&points, front);
            let mut order: Vec<usize> = (0..front.len()).collect();
            if out.len() + front.len() > self.population {
                order.sort_by(|a, b| crowding[*b].total_cmp(&crowding[*a]).then(a.cmp(b)));
                order.truncate(self.population - out.len());
            }
            for k in order {
                out.push(Parent {
                    member: pool[front[k]].clone(),
                    rank,
                    crowding: crowding[k],
                });
            }
        }
        out
    }

    /// The parents of generation `generation` (≥ 1), rebuilt from history.
    fn parents<'a>(
        &self,
        objective: &Objective,
        trials: &'a [TrialRecord],
        generation: usize,
    ) -> Vec<Parent<'a>> {
        let member = |t: &'a TrialRecord| {
            Some(Member {
                assignment: &t.assignment,
                losses: t.usable_losses(objective)?,
                violation: t.violation(objective),
            })
        };
        let mut parents: Vec<Parent<'a>> = Vec::new();
        for g in 0..generation {
            let mut pool: Vec<Member<'a>> = parents.into_iter().map(|p| p.member).collect();
            pool.extend(
                trials
                    .iter()
                    .filter(|t| match generation_of(t) {
                        Some(tg) => tg == g,
                        None => g == 0,
                    })
                    .filter_map(member),
            );
            parents = self.select(pool);
        }
        parents
    }

    fn tournament<'p, 'a, R: Rng + ?Sized>(
        parents: &'p [Parent<'a>],
        rng: &mut R,
    ) -> &'p Parent<'a> {
        let a = &parents[rng.random_range(0..parents.len())];
        let b = &parents[rng.random_range(0..parents.len())];
        let a_wins = a.rank < b.rank || (a.rank == b.rank && a.crowding >= b.crowding);
        if a_wins { a } else { b }
    }

    fn child<R: Rng + ?Sized>(
        &self,
        space: &SearchSpace,
        parents: &[Parent<'_>],
        rng: &mut R,
    ) -> Assignment {
        let p1 = Self::tournament(parents, rng).member.assignment;
        let p2 = Self::tournament(parents, rng).member.assignment;
        let u1 = assignment_to_unit(space, p1);
        let u2 = assignment_to_unit(space, p2);
        let crossover = rng.random::<f64>() < self.crossover_prob;
        let d = space.parameters().len();
        let pm = self.mutation_prob.unwrap_or(1.0 / d.max(1) as f64);
        let mut child = u1.clone();
        let mut from_second = vec![false; d];
        for (k, p) in space.parameters().iter().enumerate() {
            let categorical = matches!(p.domain, Domain::Categorical { .. });
            if crossover && rng.random::<f64>() < 0.5 {
                if categorical {
                    from_second[k] = true;
                } else {
                    child[k] = sbx(u1[k], u2[k], rng);
                }
            }
            if !categorical && rng.random::<f64>() < pm {
                child[k] = polynomial_mutation(child[k], rng);
            }
        }
        let mut a = unit_to_assignment(space, &child);
        for (k, p) in space.parameters().iter().enumerate() {
            if !matches!(p.domain, Domain::Categorical { .. }) {
                continue;
            }
            let source = if from_second[k] { p2 } else { p1 };
            if let Some(v) = source.get(&p.name) {
                a.0[k].1 = v.clone();
            }
            if rng.random::<f64>() < pm {
                a.0[k].1 = sample_param(p, rng);
            }
        }
        a
    }
}

/// One child coordinate of bounded SBX on `[0, 1]` (Deb's reference implementation).
fn sbx<R: Rng + ?Sized>(a: f64, b: f64, rng: &mut R) -> f64 {
    let (y1, y2) = if a <= b { (a, b) } else { (b, a) };
    if y2 - y1 < 1e-14 {
        return a;
    }
    let u = rng.random::<f64>();
    let spread = |beta: f64| {
        let alpha = 2.0 - beta.powf(-(ETA_CROSSOVER + 1.0));
        if u <= 1.0 / alpha {
            (u * alpha).powf(1.0 / (ETA_CROSSOVER + 1.0))
        } else {
            (1.0 / (2.0 - u * alpha)).powf(1.0 / (ETA_CROSSOVER + 1.0))
        }
    };
    let low = 0.5 * ((y1 + y2) - spread(1.0 + 2.0 * y1 / (y2 - y1)) * (y2 - y1));
    let high = 0.5 * ((y1 + y2) + spread(1.0 + 2.0 * (1.0 - y2) / (y2 - y1)) * (y2 - y1));
    let c = if rng.random::<f64>() < 0.5 { low } else { high };
    c.clamp(0.0, 1.0)
}

/// Bounded polynomial mutation of a coordinate in `[0, 1]`.
fn polynomial_mutation<R: Rng + ?Sized>(y: f64, rng: &mut R) -> f64 {
    let u = rng.random::<f64>();
    let power = 1.0 / (ETA_MUTATION + 1.0);
    let delta = if u < 0.5 {
        let xy = 1.0 - y;
        let val = 2.0 * u + (1.0 - 2.0 * u) * xy.powf(ETA_MUTATION + 1.0);
        val.powf(power) - 1.0
    } else {
        let xy = y;
        let val = 2.0 * (1.0 - u) + 2.0 * (u - 0.5) * xy.powf(ETA_MUTATION + 1.0);
        1.0 - val.powf(power)
    };
    (y + delta).clamp(0.0, 1.0)
}

impl Suggester for Nsga2 {
    fn name(&self) -> &str {
        NAME
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        Ok(self.propose(req, false))
    }

    /// More members of the generation being filled, past `population_size`: the same draws
    /// as `suggest` (so `given` is their start), going on where it would wait.
    fn fill(&self, req: &SuggestRequest<'_>, given: &[Proposal]) -> Vec<Proposal> {
        let mut all = self.propose(req, true).proposals;
        all.drain(..given.len().min(all.len()));
        all
    }
}

impl Nsga2 {
    /// Up to `req.count` members, generation by generation; a generation waits for the one
    /// before it to finish unless `overfill`, which adds to the unfinished one instead.
    fn propose(&self, req: &SuggestRequest<'_>, overfill: bool) -> Suggestions {
        let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
        let mut taken: HashSet<u64> = taken_fingerprints(req.space, req.trials);
        // A killed trial (an interrupted run) holds no place: a resumed run breeds another.
        let labelled: Vec<(usize, &TrialRecord)> = req
            .trials
            .iter()
            .filter(|t| is_explored(t))
            .filter_map(|t| Some((generation_of(t)?, t)))
            .collect();
        let seeds: Vec<&TrialRecord> = req
            .trials
            .iter()
            .filter(|t| seeds_generation_zero(t, req.objective))
            .collect();
        let mut generation = labelled.iter().map(|(g, _)| *g).max().unwrap_or(0);
        let in_gen = |g: usize| {
            let unlabelled = seeds.iter().filter(move |_| g == 0).copied();
            let labelled = labelled.iter().filter(move |(tg, _)| *tg == g);
            labelled.map(|(_, t)| *t).chain(unlabelled)
        };
        let mut created = in_gen(generation).count();
        let mut unfinished = in_gen(generation).filter(|t| t.state.is_active()).count();
        let mut parents: Option<Vec<Parent<'_>>> = None;
        let mut out = Suggestions::default();
        while out.proposals.len() < req.count {
            if created >= self.population && !(overfill && unfinished > 0) {
                if unfinished > 0 {
                    break;
                }
                generation += 1;
                created = 0;
                unfinished = 0;
                parents = None;
            }
            let ps = (generation > 0).then(|| {
                parents.get_or_insert_with(|| self.parents(req.objective, req.trials, generation))
            });
            let draw = |rng: &mut ChaCha8Rng| match &ps {
                Some(ps) if !ps.is_empty() => self.child(req.space, ps, rng),
                _ => sample_assignment(req.space, rng),
            };
            let mut a = draw(&mut rng);
            for _ in 0..MAX_RETRIES {
                if !taken.contains(&fingerprint(req.space, &a)) {
                    break;
                }
                a = draw(&mut rng);
            }
            // A finite space never repeats a point: an unseen one (listed only now, when the
            // draws kept repeating) replaces a repeat, and with none left the search is over
            // (as for every other algorithm).
            if taken.contains(&fingerprint(req.space, &a))
                && let Some(mut points) = unused_points(req.space, &taken)
            {
                if points.is_empty() {
                    break;
                }
                a = points.swap_remove(rng.random_range(0..points.len()));
            }
            taken.insert(fingerprint(req.space, &a));
            let mut p = Proposal::new(a);
            p.labels
                .insert(GENERATION_LABEL.to_string(), generation.to_string());
            out.proposals.push(p);
            created += 1;
            unfinished += 1;
        }
        // `taken` holds each distinct point of the trials and proposals: as many as the space
        // has means every one is used.
        out.exhausted = req
            .space
            .cardinality()
            .is_some_and(|size| taken.len() as u128 >= size);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::pairs;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use vernier_core::pareto::hypervolume;
    use vernier_core::{Direction, Distribution, ObjectiveTerm, Parameter, TrialState};
    use vernier_testfunctions::MultiProblem;

    fn two_objectives() -> Objective {
        let mut o = Objective::new("f1", Direction::Minimize);
        o.objectives.push(ObjectiveTerm {
            metric: "f2".into(),
            direction: Direction::Minimize,
            goal: None,
        });
        o
    }

    fn nsga(population: usize) -> Nsga2 {
        Nsga2 {
            population,
            crossover_prob: DEFAULT_CROSSOVER_PROB,
            mutation_prob: None,
        }
    }

    /// Runs `budget` trials of ZDT1 one proposal at a time; returns the trials.
    fn run(s: &dyn Suggester, p: &MultiProblem, budget: usize, seed: u64) -> Vec<TrialRecord> {
        run_from(s, p, budget, seed, Vec::new())
    }

    /// As [`run`], after the trials of `history`; returns them all.
    fn run_from(
        s: &dyn Suggester,
        p: &MultiProblem,
        budget: usize,
        seed: u64,
        history: Vec<TrialRecord>,
    ) -> Vec<TrialRecord> {
        let space = p.space();
        let o = two_objectives();
        let mut trials = history;
        for t in 0..budget {
            let req = SuggestRequest {
                space: &space,
                objective: &o,
                trials: &trials,
                count: 1,
                seed: seed * 1000 + t as u64,
                state: None,
            };
            let prop = s.suggest(&req).unwrap().proposals.remove(0);
            let f = p.eval_assignment(&prop.assignment);
            trials.push(TrialRecord {
                name: format!("t{t}"),
                assignment: prop.assignment,
                state: TrialState::Succeeded,
                objective: Some(f[0]),
                labels: prop.labels,
                metrics: BTreeMap::from([("f1".into(), f[0]), ("f2".into(), f[1])]),
            });
        }
        trials
    }

    fn hv(trials: &[TrialRecord], p: &MultiProblem) -> f64 {
        let o = two_objectives();
        let pts: Vec<Vec<f64>> = trials.iter().filter_map(|t| t.usable_losses(&o)).collect();
        hypervolume(&pts, &p.reference).unwrap()
    }

    #[test]
    fn settings_are_validated() {
        let space = MultiProblem::by_name("zdt1").unwrap().space();
        let o = two_objectives();
        let s = |k: &str, v: &str| pairs(&[(k, v)]);
        assert!(build(NAME, &s("population_size", "8"), &space, &o).is_ok());
        let e = build(NAME, &s("population_size", "1"), &space, &o).unwrap_err();
        assert!(e.to_string().contains("population_size"), "{e}");
        assert!(e.to_string().contains("\"1\""), "{e}");
        let e = build(NAME, &s("crossover_prob", "1.5"), &space, &o).unwrap_err();
        assert!(e.to_string().contains("a number in [0, 1]"), "{e}");
        let e = build(NAME, &s("eta", "3"), &space, &o).unwrap_err();
        assert!(e.to_string().contains("unknown setting \"eta\""), "{e}");
    }

    #[test]
    fn generations_are_labelled_and_wait_for_the_last_one() {
        let p = MultiProblem::by_name("zdt1").unwrap();
        let space = p.space();
        let o = two_objectives();
        let s = nsga(4);
        let mut trials = run(&s, &p, 4, 1);
        assert!(trials.iter().all(|t| t.labels[GENERATION_LABEL] == "0"));
        // One of generation 0 still running: nothing more can be proposed.
        trials[3].state = TrialState::Running;
        let req = SuggestRequest {
            space: &space,
            objective: &o,
            trials: &trials,
            count: 3,
            seed: 9,
            state: None,
        };
        let out = s.suggest(&req).unwrap();
        assert!(out.proposals.is_empty() && !out.exhausted);
        trials[3].state = TrialState::Succeeded;
        let req = SuggestRequest {
            space: &space,
            objective: &o,
            trials: &trials,
            count: 6,
            seed: 9,
            state: None,
        };
        let out = s.suggest(&req).unwrap();
        // Four children of generation 1, then a wait for them.
        assert_eq!(out.proposals.len(), 4);
        assert!(
            out.proposals
                .iter()
                .all(|p| p.labels[GENERATION_LABEL] == "1")
        );
    }

    /// An interrupted run leaves a member of generation 0 killed: resumed, the search breeds
    /// its replacement into generation 0 instead of starting generation 1 one member short.
    #[test]
    fn a_killed_member_leaves_its_place_to_fill() {
        let p = MultiProblem::by_name("zdt1").unwrap();
        let space = p.space();
        let o = two_objectives();
        let s = nsga(4);
        let mut trials = run(&s, &p, 4, 1);
        trials[2].state = TrialState::Killed;
        let req = SuggestRequest {
            space: &space,
            objective: &o,
            trials: &trials,
            count: 3,
            seed: 9,
            state: None,
        };
        let labels: Vec<String> = s
            .suggest(&req)
            .unwrap()
            .proposals
            .iter()
            .map(|p| p.labels[GENERATION_LABEL].clone())
            .collect();
        // The replacement, then a wait for it before generation 1 is bred.
        assert_eq!(labels, ["0"]);
        // A caller that must have all 3 gets two more members of generation 0.
        let given = s.suggest(&req).unwrap().proposals;
        let extra = s.fill(&req, &given);
        let extra_labels: Vec<&str> = extra
            .iter()
            .map(|p| p.labels[GENERATION_LABEL].as_str())
            .collect();
        assert_eq!(extra_labels, ["0", "0"]);
        assert_ne!(extra[0].assignment, given[0].assignment);
    }

    /// A finite space: no point twice, across generations, and the search ends once all
    /// four are taken.
    #[test]
    fn a_finite_space_is_covered_once_and_then_exhausted() {
        let space = SearchSpace::new(vec![
            Parameter {
                name: "x".into(),
                domain: Domain::Int {
                    min: 0,
                    max: 1,
                    step: None,
                },
                distribution: Distribution::Uniform,
            },
            Parameter {
                name: "c".into(),
                domain: Domain::Categorical {
                    values: vec!["a".into(), "b".into()],
                },
                distribution: Distribution::Uniform,
            },
        ])
        .unwrap();
        let o = two_objectives();
        let mut trials: Vec<TrialRecord> = Vec::new();
        let mut exhausted = false;
        for round in 0..6 {
            let req = SuggestRequest {
                space: &space,
                objective: &o,
                trials: &trials,
                count: 2,
                seed: round,
                state: None,
            };
            let out = nsga(2).suggest(&req).unwrap();
            exhausted = out.exhausted;
            for p in out.proposals {
                let metrics = BTreeMap::from([("f1".into(), 1.0), ("f2".into(), 1.0)]);
                trials.push(TrialRecord {
                    name: String::new(),
                    assignment: p.assignment,
                    state: TrialState::Succeeded,
                    objective: Some(1.0),
                    metrics,
                    labels: p.labels,
                });
            }
        }
        let distinct: HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
        assert_eq!((trials.len(), distinct.len()), (4, 4), "{trials:?}");
        assert!(exhausted);
    }

    #[test]
    fn seeded_runs_repeat_exactly() {
        let p = MultiProblem::by_name("zdt1").unwrap();
        let a = run(&nsga(6), &p, 20, 3);
        let b = run(&nsga(6), &p, 20, 3);
        assert_eq!(a, b);
        let x1 = a[19].assignment.get("x1").and_then(|v| v.as_f64()).unwrap();
        assert_eq!(x1, 0.5697790435063278);
    }

    #[test]
    fn parents_rebuild_from_history_and_respect_constraints() {
        let mut o = two_objectives();
        o.constraints.push(vernier_core::Constraint {
            metric: "c".into(),
            op: vernier_core::ConstraintOp::Le,
            bound: 0.0,
        });
        let rec = |g: usize, f1: f64, f2: f64, c: f64| TrialRecord {
            name: String::new(),
            assignment: Assignment(vec![("x".into(), vernier_core::ParamValue::Double(f1))]),
            state: TrialState::Succeeded,
            objective: Some(f1),
            labels: BTreeMap::from([(GENERATION_LABEL.to_string(), g.to_string())]),
            metrics: BTreeMap::from([("f1".into(), f1), ("f2".into(), f2), ("c".into(), c)]),
        };
        let trials = vec![
            rec(0, 0.0, 0.0, 5.0), // dominant but infeasible
            rec(0, 0.2, 0.8, 0.0),
            rec(0, 0.8, 0.2, 0.0),
            rec(1, 0.5, 0.5, 0.0),
            rec(1, 0.9, 0.9, 0.0),
        ];
        let s = nsga(3);
        let p1: Vec<f64> = s
            .parents(&o, &trials, 1)
            .iter()
            .map(|p| p.member.losses[0])
            .collect();
        assert_eq!(p1, vec![0.2, 0.8, 0.0]);
        let p2 = s.parents(&o, &trials, 2);
        let ranks: Vec<(f64, usize)> = p2.iter().map(|p| (p.member.losses[0], p.rank)).collect();
        assert_eq!(ranks, vec![(0.2, 0), (0.8, 0), (0.5, 0)]);
    }

    /// `trials` as the warm-start results of an earlier experiment: no generation label.
    fn as_warm_start(trials: Vec<TrialRecord>) -> Vec<TrialRecord> {
        let source = (
            vernier_core::WARM_START_SOURCE_LABEL.to_string(),
            "experiment/first".to_string(),
        );
        trials
            .into_iter()
            .map(|t| TrialRecord {
                labels: BTreeMap::from([source.clone()]),
                ..t
            })
            .collect()
    }

    #[test]
    fn warm_start_results_take_the_places_of_generation_zero() {
        let p = MultiProblem::by_name("zdt1").unwrap();
        let space = p.space();
        let o = two_objectives();
        let s = nsga(4);
        let mut warm = as_warm_start(run(&s, &p, 4, 1));
        // A result without the second objective can never be selected: it takes no place.
        warm[3].metrics.remove("f2");
        let ask = |trials: &[TrialRecord]| {
            let req = SuggestRequest {
                space: &space,
                objective: &o,
                trials,
                count: 10,
                seed: 5,
                state: None,
            };
            let out = s.suggest(&req).unwrap();
            let generations: Vec<String> = out
                .proposals
                .iter()
                .map(|p| p.labels[GENERATION_LABEL].clone())
                .collect();
            generations
        };
        assert_eq!(ask(&warm), ["0"]);
        assert_eq!(ask(&warm[..2]), ["0", "0"]);
        // As many results as a population: the first proposals are children of the best.
        warm[3].metrics.insert("f2".into(), 9.0);
        assert_eq!(ask(&warm), ["1", "1", "1", "1"]);
        // An enqueued configuration still running holds its place and the next generation.
        let mut enqueued = run(&s, &p, 1, 2).remove(0);
        enqueued.labels.clear();
        enqueued.state = TrialState::Running;
        let mut trials = warm[..3].to_vec();
        trials.push(enqueued);
        assert!(ask(&trials).is_empty());
    }

    /// A second run seeded with a first run's results breeds its first generation from the
    /// best of them, so that generation alone covers more of ZDT1's front than one drawn
    /// from the priors (which it was before: the results joined only the first selection).
    #[test]
    fn a_warm_started_first_generation_covers_more_of_the_front() {
        let p = MultiProblem::by_name("zdt1-6").unwrap();
        let s = nsga(20);
        let mut wins = 0;
        for seed in 1..=8 {
            let warm = as_warm_start(run(&s, &p, 200, seed));
            let seeded = run_from(&s, &p, 20, seed + 100, warm.clone());
            let cold = run(&s, &p, 20, seed + 100);
            let (hv_seeded, hv_cold) = (hv(&seeded[warm.len()..], &p), hv(&cold, &p));
            eprintln!("seed {seed}: warm-started {hv_seeded:.4}, from the priors {hv_cold:.4}");
            wins += usize::from(hv_seeded > hv_cold);
        }
        assert_eq!(wins, 8);
    }

    #[test]
    fn beats_random_search_on_zdt1() {
        let p = MultiProblem::by_name("zdt1-6").unwrap();
        let n = nsga(20);
        let random = crate::RandomSearch::new();
        // NSGA-II needs generations: 30 of 20 here.
        let hv_nsga = hv(&run(&n, &p, 600, 7), &p);
        let hv_random = hv(&run(&random, &p, 600, 7), &p);
        assert!(
            hv_nsga > hv_random + 0.05,
            "nsga2 {hv_nsga} vs random {hv_random}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn children_stay_in_the_space(seed in 0u64..1000, steps in 1u32..4) {
            let space = SearchSpace::new(vec![
                Parameter { name: "lr".into(), domain: Domain::Double { min: 1e-4, max: 1e-1, step: None }, distribution: Distribution::LogUniform },
                Parameter { name: "n".into(), domain: Domain::Int { min: 1, max: 9, step: Some(2) }, distribution: Distribution::Uniform },
                Parameter { name: "opt".into(), domain: Domain::Categorical { values: vec!["a".into(), "b".into(), "c".into()] }, distribution: Distribution::Uniform },
                Parameter { name: "d".into(), domain: Domain::Double { min: -1.0, max: 1.0, step: Some(0.25) }, distribution: Distribution::Uniform },
            ]).unwrap();
            let o = two_objectives();
            let s = nsga(3);
            let mut trials: Vec<TrialRecord> = Vec::new();
            for t in 0..(3 * (steps as usize + 1)) {
                let req = SuggestRequest { space: &space, objective: &o, trials: &trials, count: 1, seed: seed + t as u64, state: None };
                let prop = s.suggest(&req).unwrap().proposals.remove(0);
                prop_assert!(space.check(&prop.assignment).is_ok(), "{:?}", prop.assignment);
                let v = (t as f64 * 0.37).sin();
                trials.push(TrialRecord {
                    name: String::new(),
                    assignment: prop.assignment,
                    state: TrialState::Succeeded,
                    objective: Some(v),
                    labels: prop.labels,
                    metrics: BTreeMap::from([("f1".into(), v), ("f2".into(), -v * v)]),
                });
            }
        }
    }
}
