//! Katib's `nasConfig`: the graph and the candidate operations a neural architecture search
//! chooses from. Values stay as Katib's wire carries them (strings in feasible spaces), since
//! each NAS algorithm reads them its own way, exactly as Katib's services do.

use serde::{Deserialize, Serialize};

/// `nasConfig` as the NAS algorithms read it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NasConfig {
    /// `graphConfig.numLayers`; 0 when unset (proto3's default, which Katib also sees).
    pub num_layers: i32,
    pub input_sizes: Vec<i32>,
    pub output_sizes: Vec<i32>,
    pub operations: Vec<NasOperation>,
}

/// One `nasConfig.operations` entry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NasOperation {
    pub operation_type: String,
    pub parameters: Vec<NasParameter>,
}

/// The parameter types an operation's parameter may have (Katib's `parameterType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NasParameterKind {
    Double,
    Int,
    Discrete,
    Categorical,
}

impl NasParameterKind {
    /// Katib's YAML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NasParameterKind::Double => "double",
            NasParameterKind::Int => "int",
            NasParameterKind::Discrete => "discrete",
            NasParameterKind::Categorical => "categorical",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "double" => NasParameterKind::Double,
            "int" => NasParameterKind::Int,
            "discrete" => NasParameterKind::Discrete,
            "categorical" => NasParameterKind::Categorical,
            _ => return None,
        })
    }
}

/// One parameter of an operation, its feasible space kept as written (empty = unset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NasParameter {
    pub name: String,
    pub kind: NasParameterKind,
    pub min: String,
    pub max: String,
    pub step: String,
    pub list: Vec<String>,
}

impl NasParameter {
    /// A categorical parameter, the common case in Katib's examples.
    pub fn categorical(name: &str, list: &[&str]) -> Self {
        NasParameter {
            name: name.to_string(),
            kind: NasParameterKind::Categorical,
            min: String::new(),
            max: String::new(),
            step: String::new(),
            list: list.iter().map(|s| s.to_string()).collect(),
        }
    }
}
