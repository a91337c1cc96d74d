//! Property tests for the spec parser: whatever text arrives (`vernier validate` and `run`
//! read any file they are given), `parse_experiment` returns a value or errors, never panics.
//! Lives here because the spec crate has no dev-dependencies to hang it on.

use proptest::prelude::*;
use vernier_spec::parse_experiment;

/// Real experiments, cut and mutated below, reach far deeper into the parser than random text.
const SEEDS: &[&str] = &[
    include_str!("../../examples/quickstart.yaml"),
    include_str!("../../examples/tfevent-metrics-collector.yaml"),
    include_str!("../../examples/prometheus-metrics-collector.yaml"),
    include_str!("../../examples/custom-metrics-format.yaml"),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = parse_experiment(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_experiment(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_examples_never_panic(
        seed in 0..SEEDS.len(),
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        insert in "[ -~\n]{0,12}",
    ) {
        let text = SEEDS[seed];
        let mut chars: Vec<char> = text.chars().collect();
        let end = cut.index(chars.len() + 1);
        chars.truncate(end);
        let pos = at.index(chars.len() + 1);
        let tail = chars.split_off(pos);
        chars.extend(insert.chars());
        chars.extend(tail);
        let _ = parse_experiment(&chars.into_iter().collect::<String>());
    }

    #[test]
    fn json_shaped_input_never_panics(text in r#"\{("(apiVersion|kind|metadata|spec|parameters|objective)": ?(\{\}|\[\]|"[a-z]{0,4}"|-?[0-9]{1,3}|null|\{"[a-zA-Z]{1,8}": ?[0-9a-z"\[\]{}]{0,6}\}),? ?){0,5}\}"#) {
        let _ = parse_experiment(&text);
    }
}
