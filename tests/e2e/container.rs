//! What the kubelet does to a trial's container before it starts, done locally too so the
//! trainer sees the same thing on a laptop: `$(VAR)` expansion in env, command and args, and
//! `workingDir` (used when this machine has it, warned about when it does not).

use crate::harness::{Sandbox, first_trial_log, text};

/// A one-trial experiment whose trainer records its working directory, argv and two variables.
fn experiment(name: &str, working_dir: &str) -> String {
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
spec:
  objective: {{type: minimize, objectiveMetricName: loss}}
  algorithm: {{algorithmName: random}}
  maxTrialCount: 1
  parallelTrialCount: 1
  parameters:
    - {{name: lr, parameterType: discrete, feasibleSpace: {{list: ["0.25"]}}}}
  trialTemplate:
    primaryContainerName: training
    trialParameters:
      - {{name: lr, reference: lr}}
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: training
                image: python:3.11
                workingDir: {working_dir}
                env:
                  - {{name: MY_LR, value: "${{trialParameters.lr}}"}}
                  - {{name: MY_NOTE, value: "lr is $(MY_LR), $(MY_LATER) later"}}
                  - {{name: MY_LATER, value: "x"}}
                command: [python3, -c]
                args:
                  - "import json, os, sys; json.dump([os.getcwd(), sys.argv[1:], os.environ['MY_NOTE']], open(os.path.join(os.environ['OUT'], 'seen.json'), 'w')); print('loss=' + sys.argv[1])"
                  - "$(MY_LR)"
                  - "$$(MY_LR)"
                  - "$(UNSET)"
"#
    )
}

/// `vernier run FILE` with `OUT` set to the sandbox, where the trainers write what they saw.
fn run_with_out(sb: &Sandbox, file: &std::path::Path) -> std::process::Output {
    sb.cmd(&["run", file.to_str().unwrap()])
        .env("OUT", sb.path())
        .output()
        .unwrap()
}

#[test]
fn variables_expand_and_the_working_directory_is_used() {
    let sb = Sandbox::new();
    let sub = sb.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let file = sb.write("e.yaml", &experiment("kubelet", &sub.display().to_string()));
    let out = run_with_out(&sb, &file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let seen: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.path().join("seen.json")).unwrap()).unwrap();
    let cwd = std::fs::canonicalize(seen[0].as_str().unwrap()).unwrap();
    assert_eq!(cwd, std::fs::canonicalize(&sub).unwrap());
    assert_eq!(seen[1], serde_json::json!(["0.25", "$(MY_LR)", "$(UNSET)"]));
    assert_eq!(seen[2], "lr is 0.25, $(MY_LATER) later");
    assert!(text(&out).contains("loss=0.25"), "{}", text(&out));
}

#[test]
fn a_working_directory_only_the_image_has_is_named_before_trials_start() {
    let sb = Sandbox::new();
    let file = sb.write("e.yaml", &experiment("image-dir", "/opt/image-only/src"));
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("workingDir /opt/image-only/src does not exist on this machine"),
        "{said}"
    );
    let out = run_with_out(&sb, &file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("workingDir /opt/image-only/src"),
        "{}",
        text(&out)
    );
    let seen: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.path().join("seen.json")).unwrap()).unwrap();
    let cwd = std::fs::canonicalize(seen[0].as_str().unwrap()).unwrap();
    assert_eq!(cwd, std::fs::canonicalize(sb.path()).unwrap());
}

/// A batch Job's `backoffLimit` and `activeDeadlineSeconds`, applied as the Job controller
/// applies them: a process that fails once runs again, and a job past its deadline fails.
#[test]
fn a_batch_jobs_retries_and_deadline_are_applied() {
    let sb = Sandbox::new();
    // Fails on its first attempt (no marker file yet), succeeds on its second.
    let flaky = "import os, sys; m = os.path.join(os.environ['OUT'], 'tried-' + os.environ['KATIB_TRIAL_NAME']); first = not os.path.exists(m); open(m, 'w').close(); print('attempt'); sys.exit(3) if first else print('loss=' + sys.argv[1])";
    let job = |name: &str, controls: &str, script: &str| {
        crate::harness::python_experiment(
            name,
            script,
            "  objective: {type: minimize, objectiveMetricName: loss}\n  parallelTrialCount: 1\n  maxTrialCount: 1\n  maxFailedTrialCount: 1",
        )
        .replace("      spec:\n        template:", &format!("      spec:\n{controls}        template:"))
    };
    let file = sb.write(
        "retry.yaml",
        &job("retry", "        backoffLimit: 2\n", flaky),
    );
    let out = run_with_out(&sb, &file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("Succeeded retry-"), "{}", text(&out));
    let log = first_trial_log(&sb, "retry");
    assert_eq!(log.matches("attempt").count(), 2, "{log}");
    assert!(
        log.contains("--- vernier: the process exited with code 3; retry 1 of the Job's spec.backoffLimit of 2 ---"),
        "{log}"
    );

    // Without a backoffLimit the first failure ends the trial, as documented.
    let file = sb.write("once.yaml", &job("once", "", flaky));
    let out = run_with_out(&sb, &file);
    assert!(text(&out).contains("Failed    once-"), "{}", text(&out));

    let slow = "import time, sys; time.sleep(30); print('loss=' + sys.argv[1])";
    let file = sb.write(
        "late.yaml",
        &job("late", "        activeDeadlineSeconds: 1\n", slow),
    );
    let out = run_with_out(&sb, &file);
    assert!(
        text(&out).contains("the Job was active longer than its spec.activeDeadlineSeconds of 1 s"),
        "{}",
        text(&out)
    );

    // The pod's own deadline fails each attempt; once backoffLimit is spent, the trial.
    let pod_deadline = job(
        "pod-late",
        "        backoffLimit: 1
",
        slow,
    )
    .replace(
        "            restartPolicy: Never
",
        "            restartPolicy: Never
            activeDeadlineSeconds: 1
",
    );
    let file = sb.write("pod-late.yaml", &pod_deadline);
    let out = run_with_out(&sb, &file);
    let said = "the pod was active longer than its spec.template.spec.activeDeadlineSeconds of 1 s";
    assert!(text(&out).contains("Failed    pod-late-"), "{}", text(&out));
    assert!(text(&out).contains(said), "{}", text(&out));
    let log = first_trial_log(&sb, "pod-late");
    assert!(
        log.contains(&format!("--- vernier: {said}; retry 1 of the Job's")),
        "{log}"
    );

    // A podFailurePolicy rule fails the job at the first failure, backoffLimit or not.
    let policy = "        backoffLimit: 3
        podFailurePolicy:
          rules:
            - {action: FailJob, onExitCodes: {operator: In, values: [3]}}
";
    let file = sb.write("policy.yaml", &job("policy", policy, flaky));
    let out = run_with_out(&sb, &file);
    assert!(
        text(&out).contains(
            "the process exited with code 3, which spec.podFailurePolicy.rules[0] fails the Job for"
        ),
        "{}",
        text(&out)
    );
    assert_eq!(first_trial_log(&sb, "policy").matches("attempt").count(), 1);
}

/// A one-trial experiment of `kind` (its `apiVersion` and `kind` lines) with job spec `spec`,
/// whose primary container is named `pytorch`.
fn downward(name: &str, kind: &str, spec: &str) -> String {
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
  namespace: team-a
spec:
  objective: {{type: minimize, objectiveMetricName: loss}}
  algorithm: {{algorithmName: random}}
  maxTrialCount: 1
  parallelTrialCount: 1
  parameters:
    - {{name: lr, parameterType: discrete, feasibleSpace: {{list: ["0.25"]}}}}
  trialTemplate:
    primaryContainerName: pytorch
    trialParameters:
      - {{name: lr, reference: lr}}
    trialSpec:
      apiVersion: {kind}
      spec:
{spec}"#
    )
}

/// The pod template of a container that writes the variables the downward API gave it to
/// `$OUT/<its pod name>.json`, then prints the loss (a PyTorchJob's master once the worker
/// has written, since the job ends with the master); each line indented by `indent`.
fn pod_template(indent: usize) -> String {
    let template = r#"metadata: {labels: {app: mnist}}
spec:
  restartPolicy: Never
  containers:
    - name: pytorch
      image: python:3.11
      resources: {limits: {cpu: "1500m", memory: 512Mi}}
      env:
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
        - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: THREADS, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
        - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
        - {name: RUN, value: "run-$(POD)"}
        - {name: LR, value: "${trialParameters.lr}"}
      command: [python3, -c]
      args:
        - "import json, os; e = os.environ; json.dump({k: e[k] for k in ['POD', 'NS', 'APP', 'IP', 'THREADS', 'MEM', 'RUN']}, open(os.path.join(e['OUT'], e['POD'] + '.json'), 'w')); import time; w = e['POD'].endswith('-master-0'); [time.sleep(0.05) for _ in range(400) if w and not os.path.exists(os.path.join(e['OUT'], e['POD'][:-8] + 'worker-0.json'))]; print('loss=0.5')"
"#;
    let pad = " ".repeat(indent);
    template.lines().map(|l| format!("{pad}{l}\n")).collect()
}

fn seen(sb: &Sandbox, pod: &str) -> serde_json::Value {
    let path = sb.path().join(format!("{pod}.json"));
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap()
}

/// `fieldRef` and `resourceFieldRef` variables get what the pod would give on a cluster:
/// the pod's name (the trial's, or the training operator's per replica), namespace, labels,
/// IP, and the container's limits rounded up as the kubelet rounds them.
#[test]
fn the_downward_api_gives_each_pod_its_own_values() {
    let sb = Sandbox::new();
    let job_spec = format!("        template:\n{}", pod_template(10));
    let job = downward("dapi-job", "batch/v1\n      kind: Job", &job_spec);
    let file = sb.write("job.yaml", &job);
    let out = run_with_out(&sb, &file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let trial = sb.report("dapi-job")["trials"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let got = seen(&sb, &trial);
    let want = serde_json::json!({"POD": trial, "NS": "team-a", "APP": "mnist",
        "IP": "127.0.0.1", "THREADS": "2", "MEM": "512", "RUN": format!("run-{trial}")});
    assert_eq!(got, want);

    let replica = format!(
        "            replicas: 1\n            template:\n{}",
        pod_template(14)
    );
    let pytorch_spec = format!(
        "        pytorchReplicaSpecs:\n          Master:\n{replica}          Worker:\n{replica}"
    );
    let pytorch = downward(
        "dapi-pt",
        "kubeflow.org/v1\n      kind: PyTorchJob",
        &pytorch_spec,
    );
    let file = sb.write("pytorch.yaml", &pytorch);
    let out = run_with_out(&sb, &file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let trial = sb.report("dapi-pt")["trials"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    for replica in ["master-0", "worker-0"] {
        let pod = format!("{trial}-{replica}");
        assert_eq!(seen(&sb, &pod)["POD"], pod.as_str());
    }
}

/// Each pod has its own `emptyDir`, so a trainer that resumes from a checkpoint in one starts
/// afresh in every trial; a `hostPath` mounted elsewhere is read where it is on this machine.
#[test]
fn an_empty_dir_is_each_trials_own_and_a_host_path_is_this_machines() {
    let sb = Sandbox::new();
    let data = sb.path().join("host-data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("offset.txt"), "3").unwrap();
    let trainer = "import os, sys, json\nckpt, lr = sys.argv[1], float(sys.argv[2])\nstate = os.path.join(ckpt, 'state.json')\nseen = json.load(open(state)) if os.path.exists(state) else None\njson.dump(lr, open(state, 'w'))\noffset = float(open(os.environ['DATA'] + '/offset.txt').read())\nopen('here.txt', 'w').write(os.getcwd())\nprint(f'loss={offset + lr} resumed={0 if seen is None else 1}')\n";
    let yaml = format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: volumes
spec:
  objective: {{type: minimize, objectiveMetricName: loss, additionalMetricNames: [resumed]}}
  algorithm: {{algorithmName: random}}
  maxTrialCount: 3
  parallelTrialCount: 1
  parameters:
    - {{name: lr, parameterType: double, feasibleSpace: {{min: "0.1", max: "0.9"}}}}
  trialTemplate:
    primaryContainerName: main
    trialParameters:
      - {{name: lr, reference: lr}}
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            volumes:
              - {{name: ckpt, emptyDir: {{}}}}
              - {{name: data, hostPath: {{path: {data}}}}}
            containers:
              - name: main
                image: python:3.11
                workingDir: /ckpt/work
                volumeMounts:
                  - {{name: ckpt, mountPath: /ckpt}}
                  - {{name: data, mountPath: /data}}
                env:
                  - {{name: DATA, value: /data}}
                command: [python3, -c, {trainer}, /ckpt, "${{trialParameters.lr}}"]
"#,
        data = data.display(),
        trainer = serde_json::to_string(trainer).unwrap(),
    );
    let file = sb.write("volumes.yaml", &yaml);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    let said = text(&out);
    assert!(
        said.contains("emptyDir \"ckpt\" mounted at /ckpt: each trial"),
        "{said}"
    );
    assert!(
        said.contains(&format!("{} is given where /data appears", data.display())),
        "{said}"
    );
    assert!(
        !said.contains("workingDir /ckpt/work does not exist"),
        "{said}"
    );
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let trials = sb.report("volumes")["trials"].as_array().unwrap().clone();
    assert_eq!(trials.len(), 3);
    for t in &trials {
        let metrics = t["status"]["observation"]["metrics"].as_array().unwrap();
        let value = |name: &str| {
            let m = metrics.iter().find(|m| m["name"] == name).unwrap();
            m["latest"].as_str().unwrap().parse::<f64>().unwrap()
        };
        assert_eq!(
            value("resumed"),
            0.0,
            "a trial found another's checkpoint: {t}"
        );
        assert!(value("loss") > 3.0, "{t}");
        // The workingDir inside the emptyDir is the trial's own directory, made for it.
        let name = t["metadata"]["name"].as_str().unwrap();
        let work = sb
            .path()
            .join(format!("vernier-logs/volumes/{name}/volumes/ckpt/work"));
        assert!(work.join("here.txt").is_file(), "{}", work.display());
    }
    assert!(!std::path::Path::new("/ckpt/state.json").exists());
}

/// A Job's GPU request is honoured as a replica's: with GPUs here (a stand-in `nvidia-smi`
/// lists two) the trial sees as many as it asks for, a trial that asks for none sees none,
/// and without GPUs the run warns before the first trial.
#[test]
fn a_jobs_gpu_request_picks_its_devices() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(
        &smi,
        "#!/bin/sh\necho 'GPU 0: Tesla T4 (UUID: GPU-a)'\necho 'GPU 1: Tesla T4 (UUID: GPU-b)'\n",
    )
    .unwrap();
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let script = "import os; open(os.path.join(os.environ['OUT'], os.environ['KATIB_TRIAL_NAME']), 'w').write(os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')); print('loss=0.5')";
    let job = |name: &str, gpus: &str| {
        crate::harness::python_experiment(
            name,
            script,
            "  objective: {type: minimize, objectiveMetricName: loss}\n  parallelTrialCount: 1\n  maxTrialCount: 1",
        )
        .replace(
            "                image: python:3.11\n",
            &format!("                image: python:3.11\n{gpus}"),
        )
    };
    let seen = |name: &str, path: &str| {
        let gpus = match name {
            "cpu" => "",
            _ => "                resources: {limits: {nvidia.com/gpu: 2}}\n",
        };
        let file = sb.write(&format!("{name}.yaml"), &job(name, gpus));
        let out = sb
            .cmd(&["run", file.to_str().unwrap()])
            .env("OUT", sb.path())
            .env("PATH", path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let trial = sb.report(name)["trials"][0]["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string();
        (
            std::fs::read_to_string(sb.path().join(trial)).unwrap(),
            text(&out),
        )
    };
    let (visible, said) = seen("gpu", &path);
    assert_eq!(visible, "0,1");
    assert!(
        said.contains("the Job template requests GPUs (2 GPU(s)); this machine has 2 (0,1)"),
        "{said}"
    );
    assert_eq!(seen("cpu", &path).0, "");
    let (visible, said) = seen("no-gpu-here", &std::env::var("PATH").unwrap());
    assert!(
        said.contains("the Job template requests GPUs (2 GPU(s)) but this machine has none"),
        "{said}"
    );
    assert_ne!(visible, "0,1");
}

/// Every replica's missing `workingDir` is named before the first trial, not the primary's
/// alone.
#[test]
fn a_replicas_missing_working_dir_is_named() {
    let sb = Sandbox::new();
    let replica = |dir: &str| {
        format!(
            "            replicas: 1\n            template:\n              spec:\n                containers:\n                  - name: pytorch\n                    image: python:3.11\n                    workingDir: {dir}\n                    command: [python3, -c, \"print('loss=${{trialParameters.lr}}')\"]\n"
        )
    };
    let spec = format!(
        "        pytorchReplicaSpecs:\n          Master:\n{}          Worker:\n{}",
        replica(&sb.path().display().to_string()),
        replica("/opt/image-only/worker")
    );
    let yaml = downward(
        "replica-dirs",
        "kubeflow.org/v1\n      kind: PyTorchJob",
        &spec,
    );
    let file = sb.write("replica-dirs.yaml", &yaml);
    let out = sb.run(&["validate", file.to_str().unwrap()]);
    let said = text(&out);
    assert!(
        said.contains(
            "the Worker replicas' workingDir /opt/image-only/worker does not exist on this machine"
        ),
        "{said}"
    );
    assert!(!said.contains("primary container's workingDir"), "{said}");
}
