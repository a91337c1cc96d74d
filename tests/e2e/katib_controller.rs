//! `vernier serve` behind a simulated Katib v1beta1 controller: requests built the way
//! `suggestionclient.go` builds them (MetricsUnavailable trials left out, only the latest
//! condition, Min/Max/Latest values with `unavailable` for metrics never reported, running
//! trials with empty observations, empty times while unset, trials renamed by the controller),
//! replies refused unless they hold exactly `current_request_number` assignments, and returned
//! algorithm settings merged into the next request by name. Every algorithm runs to
//! `maxTrialCount`.

use crate::harness::Sandbox;
use crate::katib_interop::serve;
use std::collections::BTreeMap;
use tonic::Code;
use tonic::transport::Channel;
use vernier_api::proto::api::{
    AlgorithmSetting, AlgorithmSpec, Experiment, ExperimentSpec, FeasibleSpace,
    GetSuggestionsRequest, Metric, ObjectiveSpec, ObjectiveType, Observation, ParameterAssignment,
    ParameterSpec, ParameterType, Trial, TrialSpec, TrialStatus, ValidateAlgorithmSettingsRequest,
    experiment_spec::ParameterSpecs, suggestion_client::SuggestionClient, trial_spec,
    trial_status::TrialConditionType,
};

const PARALLEL: usize = 3;
const MAX_TRIALS: usize = 20;

fn param(
    name: &str,
    kind: ParameterType,
    min: &str,
    max: &str,
    step: &str,
    list: &[&str],
) -> ParameterSpec {
    ParameterSpec {
        name: name.into(),
        parameter_type: kind as i32,
        feasible_space: Some(FeasibleSpace {
            min: min.into(),
            max: max.into(),
            step: step.into(),
            list: list.iter().map(|s| s.to_string()).collect(),
            distribution: 0,
        }),
    }
}

fn settings_for(algorithm: &str) -> Vec<(&'static str, &'static str)> {
    match algorithm {
        "hyperband" => vec![("r_l", "9"), ("resource_name", "epochs"), ("eta", "3")],
        "asha" => vec![
            ("resource_name", "epochs"),
            ("max_resource", "9"),
            ("eta", "3"),
        ],
        "bohb" => vec![
            ("r_l", "9"),
            ("resource_name", "epochs"),
            ("eta", "3"),
            ("random_state", "7"),
        ],
        "pbt" => vec![
            ("suggestion_trial_dir", "/var/log/katib/checkpoints/"),
            ("n_population", "5"),
            ("truncation_threshold", "0.2"),
            ("random_state", "7"),
        ],
        _ => vec![("random_state", "7")],
    }
}

fn experiment(algorithm: &str, max_trials: usize) -> Experiment {
    Experiment {
        name: format!("katib-{algorithm}"),
        spec: Some(ExperimentSpec {
            parameter_specs: Some(ParameterSpecs {
                parameters: vec![
                    param("lr", ParameterType::Double, "0.0", "1.0", "0.25", &[]),
                    param("units", ParameterType::Int, "1", "8", "", &[]),
                    param("epochs", ParameterType::Int, "1", "9", "", &[]),
                    param(
                        "opt",
                        ParameterType::Categorical,
                        "",
                        "",
                        "",
                        &["sgd", "adam"],
                    ),
                ],
            }),
            objective: Some(ObjectiveSpec {
                r#type: ObjectiveType::Maximize as i32,
                goal: 0.0,
                objective_metric_name: "acc".into(),
                additional_metric_names: vec!["loss".into()],
            }),
            algorithm: Some(AlgorithmSpec {
                algorithm_name: algorithm.into(),
                algorithm_settings: settings_for(algorithm)
                    .into_iter()
                    .map(|(n, v)| AlgorithmSetting {
                        name: n.into(),
                        value: v.into(),
                    })
                    .collect(),
            }),
            early_stopping: None,
            parallel_trial_count: PARALLEL as i32,
            max_trial_count: max_trials as i32,
            nas_config: None,
        }),
    }
}

/// A Trial custom resource as far as the controller's conversion reads it.
struct KatibTrial {
    name: String,
    assignments: Vec<ParameterAssignment>,
    conditions: Vec<TrialConditionType>,
    /// (name, min, max, latest) per metric, Katib's `status.observation`.
    observation: Option<Vec<(String, String, String, String)>>,
    start_time: String,
    completion_time: String,
}

impl KatibTrial {
    fn active(&self) -> bool {
        matches!(
            self.conditions.last(),
            Some(TrialConditionType::Created | TrialConditionType::Running)
        )
    }

    fn value(
        &self,
        strategy: &str,
    ) -> impl Fn(&(String, String, String, String)) -> String + use<'_> {
        let strategy = strategy.to_string();
        move |(_, min, max, latest)| {
            // convertTrialObservation: Min/Max fall back to Latest when unavailable.
            let pick = match strategy.as_str() {
                "min" => min,
                "max" => max,
                _ => latest,
            };
            if pick == "unavailable" {
                latest.clone()
            } else {
                pick.clone()
            }
        }
    }

    /// `ConvertTrials` for one trial (the caller skips MetricsUnavailable ones).
    fn to_wire(&self) -> Trial {
        let metrics = self
            .observation
            .iter()
            .flatten()
            .map(|m| Metric {
                name: m.0.clone(),
                // acc: max (Maximize's default strategy); loss: latest.
                value: self.value(if m.0 == "acc" { "max" } else { "latest" })(m),
            })
            .collect();
        Trial {
            name: self.name.clone(),
            spec: Some(TrialSpec {
                objective: Some(ObjectiveSpec {
                    r#type: ObjectiveType::Maximize as i32,
                    goal: 0.0,
                    objective_metric_name: "acc".into(),
                    additional_metric_names: vec!["loss".into()],
                }),
                parameter_assignments: Some(trial_spec::ParameterAssignments {
                    assignments: self.assignments.clone(),
                }),
                labels: Default::default(),
            }),
            status: Some(TrialStatus {
                start_time: self.start_time.clone(),
                completion_time: self.completion_time.clone(),
                condition: self
                    .conditions
                    .last()
                    .map_or(TrialConditionType::Created, |c| *c) as i32,
                observation: Some(Observation { metrics }),
            }),
        }
    }

    fn get(&self, name: &str) -> f64 {
        let v = &self
            .assignments
            .iter()
            .find(|a| a.name == name)
            .unwrap()
            .value;
        v.parse().unwrap_or(if v == "adam" { 1.0 } else { 0.0 })
    }
}

/// The simulated controller's Suggestion state: trials and `status.algorithmSettings`.
struct Controller {
    experiment: Experiment,
    settings: Vec<AlgorithmSetting>,
    trials: Vec<KatibTrial>,
    requests: usize,
    serial: u64,
}

impl Controller {
    /// `appendAlgorithmSettingsFromSuggestion`: returned settings overwrite by name.
    fn filled_experiment(&self) -> Experiment {
        let mut e = self.experiment.clone();
        let spec = e.spec.as_mut().unwrap().algorithm.as_mut().unwrap();
        for s in &self.settings {
            match spec
                .algorithm_settings
                .iter_mut()
                .find(|x| x.name == s.name)
            {
                Some(slot) => slot.value = s.value.clone(),
                None => spec.algorithm_settings.push(s.clone()),
            }
        }
        e
    }

    fn request(&self, current: usize) -> GetSuggestionsRequest {
        GetSuggestionsRequest {
            experiment: Some(self.filled_experiment()),
            trials: self
                .trials
                .iter()
                .filter(|t| t.conditions.last() != Some(&TrialConditionType::Metricsunavailable))
                .map(KatibTrial::to_wire)
                .collect(),
            current_request_number: current as i32,
            total_request_number: (self.requests) as i32,
        }
    }

    /// `updateAlgorithmSettings`.
    fn merge(&mut self, returned: &[AlgorithmSetting]) {
        for s in returned {
            match self.settings.iter_mut().find(|x| x.name == s.name) {
                Some(slot) => slot.value = s.value.clone(),
                None => self.settings.push(s.clone()),
            }
        }
    }

    /// The controller's own trial name (`<suggestion>-<random 8>`), never the reply's.
    fn next_name(&mut self) -> String {
        self.serial = self
            .serial
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        format!("{}-{:08x}", self.experiment.name, self.serial >> 32)
    }

    /// Ends the oldest active trial: every 6th without metrics, the others Succeeded with an
    /// accuracy from the assignment; `loss` is reported by every other trial only.
    fn finish_one(&mut self, step: usize) {
        let Some(t) = self.trials.iter_mut().find(|t| t.active()) else {
            return;
        };
        t.completion_time = format!("2026-01-01T00:{:02}:{:02}Z", (step / 60) % 60, step % 60);
        if step % 6 == 5 {
            t.conditions.push(TrialConditionType::Metricsunavailable);
            t.observation = Some(vec![
                (
                    "acc".into(),
                    "unavailable".into(),
                    "unavailable".into(),
                    "unavailable".into(),
                ),
                (
                    "loss".into(),
                    "unavailable".into(),
                    "unavailable".into(),
                    "unavailable".into(),
                ),
            ]);
            return;
        }
        let acc =
            t.get("lr") * 0.5 + t.get("units") / 16.0 + t.get("epochs") / 90.0 + t.get("opt") * 0.1;
        let loss = if step.is_multiple_of(2) {
            let l = (1.0 - acc).to_string();
            (l.clone(), l.clone(), l)
        } else {
            (
                "unavailable".into(),
                "unavailable".into(),
                "unavailable".into(),
            )
        };
        t.observation = Some(vec![
            (
                "acc".into(),
                (acc / 2.0).to_string(),
                acc.to_string(),
                acc.to_string(),
            ),
            ("loss".into(), loss.0, loss.1, loss.2),
        ]);
        t.conditions.push(TrialConditionType::Succeeded);
    }
}

async fn run_to_max_trials(channel: Channel, algorithm: &str) -> Vec<KatibTrial> {
    let mut client = SuggestionClient::new(channel);
    let mut c = Controller {
        experiment: experiment(algorithm, MAX_TRIALS),
        settings: Vec::new(),
        trials: Vec::new(),
        requests: 0,
        serial: 1,
    };
    client
        .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
            experiment: Some(c.experiment.clone()),
        })
        .await
        .unwrap_or_else(|e| panic!("{algorithm}: validate: {e}"));
    let mut waits = 0;
    for step in 0..10 * MAX_TRIALS {
        let active = c.trials.iter().filter(|t| t.active()).count();
        if c.trials.len() == MAX_TRIALS && active == 0 {
            return c.trials;
        }
        let current = (PARALLEL - active).min(MAX_TRIALS - c.trials.len());
        if current > 0 {
            let request = c.request(current);
            match client.get_suggestions(request).await {
                Ok(reply) => {
                    let reply = reply.into_inner();
                    // "The response contains unexpected trials" otherwise.
                    assert_eq!(
                        reply.parameter_assignments.len(),
                        current,
                        "{algorithm} at step {step}"
                    );
                    c.requests += current;
                    for a in reply.parameter_assignments {
                        let name = c.next_name();
                        c.trials.push(KatibTrial {
                            name,
                            assignments: a.assignments,
                            conditions: vec![
                                TrialConditionType::Created,
                                TrialConditionType::Running,
                            ],
                            // A running trial: one reported an interim accuracy, others nothing.
                            observation: (step % 4 == 1).then(|| {
                                vec![("acc".into(), "0.01".into(), "0.02".into(), "0.02".into())]
                            }),
                            start_time: "2026-01-01T00:00:00Z".into(),
                            completion_time: String::new(),
                        });
                    }
                    if let Some(spec) = reply.algorithm {
                        c.merge(&spec.algorithm_settings);
                    }
                }
                // Waiting for running trials is retried by the controller's reconcile.
                Err(s) if s.code() == Code::Unavailable && active > 0 => waits += 1,
                Err(s) => panic!("{algorithm} at step {step}: {s:?}"),
            }
        }
        c.finish_one(step);
    }
    panic!(
        "{algorithm}: did not reach {MAX_TRIALS} trials ({} created, {waits} waits)",
        c.trials.len()
    );
}

async fn connect(addr: &str) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

#[test]
fn every_algorithm_serves_a_katib_controller_to_max_trial_count() {
    let sb = Sandbox::new();
    let (_server, addr) = serve(&sb);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let channel = connect(&addr).await;
        // DARTS and ENAS search spec.nasConfig, not parameters; tests/nas_rpc drives them.
        for algorithm in vernier_core::ALGORITHM_NAMES
            .iter()
            .filter(|a| !vernier_core::NAS_ALGORITHM_NAMES.contains(a))
        {
            let trials = run_to_max_trials(channel.clone(), algorithm).await;
            assert_eq!(trials.len(), MAX_TRIALS, "{algorithm}");
            // Grid enumerates: the controller leaves MetricsUnavailable trials out, so grid
            // may propose their assignment again (Katib's does too), but nothing else.
            let mut seen: BTreeMap<String, bool> = BTreeMap::new();
            for t in trials.iter().filter(|_| *algorithm == "grid") {
                let key = format!("{:?}", t.assignments);
                if let Some(unavailable) = seen.get(&key) {
                    assert!(unavailable, "{algorithm} repeated {key}");
                }
                let unavailable =
                    t.conditions.last() == Some(&TrialConditionType::Metricsunavailable);
                seen.insert(key, unavailable);
            }
            if *algorithm == "hyperband" {
                // Promotions happened although the controller renamed every trial: a trial at
                // epochs 3 continues the configuration of one at epochs 1.
                let config = |t: &KatibTrial| -> BTreeMap<String, String> {
                    t.assignments
                        .iter()
                        .filter(|a| a.name != "epochs")
                        .map(|a| (a.name.clone(), a.value.clone()))
                        .collect()
                };
                let promoted = trials.iter().filter(|t| t.get("epochs") == 3.0).any(|t| {
                    trials
                        .iter()
                        .any(|p| p.get("epochs") == 1.0 && config(p) == config(t))
                });
                assert!(promoted, "hyperband promoted nothing");
            }
        }
    });
}

#[test]
fn grid_and_hyperband_refuse_a_max_trial_count_they_cannot_reach() {
    let sb = Sandbox::new();
    let (_server, addr) = serve(&sb);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client = SuggestionClient::new(connect(&addr).await);
        // 5 x 8 x 9 x 2 = 720 combinations; hyperband r_l 9, eta 3: 22 trials.
        for (algorithm, fits, too_many, refusal) in [
            (
                "grid",
                720,
                721,
                "Max Trial Count: 721 > all possible search combinations: 720 (grid)",
            ),
            (
                "hyperband",
                22,
                23,
                "value \"23\" is more than the 22 trials",
            ),
        ] {
            client
                .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                    experiment: Some(experiment(algorithm, fits)),
                })
                .await
                .unwrap_or_else(|e| panic!("{algorithm}: {e}"));
            let e = client
                .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                    experiment: Some(experiment(algorithm, too_many)),
                })
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument);
            assert!(
                e.message()
                    .starts_with(&format!("experiment.spec.max_trial_count: {refusal}")),
                "{}",
                e.message()
            );
            assert!(
                e.message().contains("hint: set maxTrialCount to at most"),
                "{}",
                e.message()
            );
        }
    });
}

/// A Suggestion server that records every request and answers with Vernier's own service.
#[derive(Clone, Default)]
struct Recorder {
    seen: std::sync::Arc<std::sync::Mutex<Vec<GetSuggestionsRequest>>>,
}

#[tonic::async_trait]
impl vernier_api::proto::api::suggestion_server::Suggestion for Recorder {
    async fn get_suggestions(
        &self,
        request: tonic::Request<GetSuggestionsRequest>,
    ) -> Result<tonic::Response<vernier_api::proto::api::GetSuggestionsReply>, tonic::Status> {
        self.seen.lock().unwrap().push(request.get_ref().clone());
        vernier_api::SuggestionService::default()
            .get_suggestions(request)
            .await
    }

    async fn validate_algorithm_settings(
        &self,
        request: tonic::Request<ValidateAlgorithmSettingsRequest>,
    ) -> Result<
        tonic::Response<vernier_api::proto::api::ValidateAlgorithmSettingsReply>,
        tonic::Status,
    > {
        vernier_api::SuggestionService::default()
            .validate_algorithm_settings(request)
            .await
    }
}

#[test]
fn the_plugin_client_sends_trials_as_katib_controller_does() {
    use vernier_api::proto::api::suggestion_server::SuggestionServer;
    let recorder = Recorder::default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tonic::transport::Server::builder()
        .add_service(SuggestionServer::new(recorder.clone()))
        .serve_with_incoming(tokio_stream_of(listener));
    rt.spawn(server);

    let sb = Sandbox::new();
    // Trials with x <= 0.4 print nothing: they end MetricsUnavailable. The warm start's
    // results are not this experiment's trials, so they are never sent, and the run says so.
    sb.write("known.csv", "x,score\n0.5,0.5\n");
    let yaml = crate::harness::python_experiment(
        "shaped",
        "import sys\nx = float(sys.argv[1])\nif x > 0.4: print('score=' + sys.argv[1])",
        "  objective:\n    type: maximize\n    objectiveMetricName: score\n  parallelTrialCount: 2\n  maxTrialCount: 8\n  warmStart:\n    file: known.csv",
    );
    let file = sb.write("shaped.yaml", &yaml);
    let flag = format!("random={addr}");
    let out = sb.run(&["run", file.to_str().unwrap(), "--suggestion-plugin", &flag]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::harness::text(&out));
    assert!(
        crate::harness::text(&out).contains("the 1 earlier result(s) steer nothing"),
        "{}",
        crate::harness::text(&out)
    );
    let report = sb.report("shaped");
    assert!(
        !crate::harness::trials_in(&report, "MetricsUnavailable").is_empty(),
        "no MetricsUnavailable trial to leave out: {report:#}"
    );
    let seen = recorder.seen.lock().unwrap();
    assert!(seen.len() >= 4, "{} requests", seen.len());
    let mut succeeded = 0;
    for request in seen.iter() {
        for t in &request.trials {
            let status = t.status.as_ref().unwrap();
            let condition = TrialConditionType::try_from(status.condition).unwrap();
            assert!(
                !matches!(
                    condition,
                    TrialConditionType::Metricsunavailable | TrialConditionType::Unknown
                ),
                "{t:?}"
            );
            assert!(t.name.starts_with("shaped-"), "{}", t.name);
            assert!(t.spec.as_ref().unwrap().labels.is_empty(), "{t:?}");
            let time = |s: &str| s.len() == 20 && s.ends_with('Z') && !s.starts_with("0001");
            match condition {
                TrialConditionType::Succeeded => {
                    succeeded += 1;
                    assert!(
                        time(&status.start_time) && time(&status.completion_time),
                        "{status:?}"
                    );
                }
                TrialConditionType::Running => {
                    assert!(
                        time(&status.start_time),
                        "{status:?} {}: {report:#}",
                        t.name
                    );
                    assert_eq!(status.completion_time, "");
                }
                _ => {}
            }
        }
    }
    assert!(succeeded > 0, "no succeeded trial was ever sent");
}

fn tokio_stream_of(
    listener: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    tokio_stream::wrappers::TcpListenerStream::new(listener)
}
