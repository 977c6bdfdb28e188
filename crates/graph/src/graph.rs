//! The network as a validated DAG: nodes in topological order, every shape known.

use crate::error::GraphError;
use crate::geometry::Shape;
use crate::ops::Op;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The name by which nodes refer to the image input.
pub const INPUT_NAME: &str = "input";

/// Where a node's input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The image batch fed to the network.
    Input,
    /// The output of the node at this index of [`Graph::nodes`].
    Node(usize),
}

/// A node as written by a person or a converter: inputs named, shapes unknown.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    pub op: Op,
    pub inputs: Vec<String>,
}

/// A validated node: inputs resolved, output shape inferred.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub op: Op,
    pub inputs: Vec<Source>,
    /// Output shape of one example (no batch dimension).
    pub shape: Shape,
}

/// Facts about a model that are not part of its computation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    /// Where the definition comes from, e.g. "torchvision resnet50".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The paper that introduced the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation: Option<String>,
    /// Published single-crop ImageNet top-1 error, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top1_error: Option<f64>,
    /// Published single-crop ImageNet top-5 error, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top5_error: Option<f64>,
}

/// A validated network with one image input `[C, H, W]` and one output.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    name: String,
    input: Shape,
    nodes: Vec<Node>,
    output: usize,
    info: ModelInfo,
}

impl Graph {
    /// Validates a network description: unique names, wiring, acyclicity, op parameters
    /// and shapes. Nodes may come in any order; the graph stores them topologically.
    pub fn new(
        name: impl Into<String>,
        input: [usize; 3],
        specs: Vec<NodeSpec>,
        output: Option<&str>,
        info: ModelInfo,
    ) -> Result<Self, GraphError> {
        let name = name.into();
        if input.iter().any(|&d| d > crate::ops::MAX_DIMENSION) {
            return Err(GraphError::BadInput(format!(
                "input size {}×{}×{} is implausibly large",
                input[0], input[1], input[2]
            )));
        }
        if input.contains(&0) {
            return Err(GraphError::BadInput(format!(
                "input size {}×{}×{} has a zero dimension",
                input[0], input[1], input[2]
            )));
        }
        if specs.is_empty() {
            return Err(GraphError::Empty);
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, spec) in specs.iter().enumerate() {
            if spec.name.is_empty() {
                return Err(GraphError::node(format!("#{i}"), "has an empty name"));
            }
            if spec.name == INPUT_NAME {
                return Err(GraphError::node(
                    &spec.name,
                    "uses the reserved name \"input\", which refers to the image input",
                ));
            }
            if index.insert(spec.name.as_str(), i).is_some() {
                return Err(GraphError::node(&spec.name, "is defined twice"));
            }
        }
        // Resolve names to spec indices.
        let mut wiring: Vec<Vec<Option<usize>>> = Vec::with_capacity(specs.len());
        for spec in &specs {
            let (min, max) = spec.op.arity();
            if spec.inputs.len() < min || spec.inputs.len() > max {
                let expected = if min == max {
                    format!("exactly {min}")
                } else {
                    format!("at least {min}")
                };
                return Err(GraphError::node(
                    &spec.name,
                    format!(
                        "({}) takes {expected} input(s), got {}",
                        spec.op.tag(),
                        spec.inputs.len()
                    ),
                ));
            }
            let mut resolved = Vec::with_capacity(spec.inputs.len());
            for input_name in &spec.inputs {
                if input_name == INPUT_NAME {
                    resolved.push(None);
                } else {
                    let i = index.get(input_name.as_str()).ok_or_else(|| {
                        GraphError::node(
                            &spec.name,
                            format!("reads \"{input_name}\", which is not a node of this model"),
                        )
                    })?;
                    resolved.push(Some(*i));
                }
            }
            wiring.push(resolved);
        }
        let order = topological_order(&specs, &wiring)?;
        let mut position = vec![0usize; specs.len()];
        for (pos, &i) in order.iter().enumerate() {
            position[i] = pos;
        }
        let output_spec = match output {
            Some(out) => *index.get(out).ok_or_else(|| {
                GraphError::BadOutput(format!("the output \"{out}\" is not a node of this model"))
            })?,
            None => *order.last().unwrap_or(&0),
        };
        check_all_reach_output(&specs, &wiring, output_spec)?;

        let mut specs: Vec<Option<NodeSpec>> = specs.into_iter().map(Some).collect();
        let mut nodes: Vec<Node> = Vec::with_capacity(order.len());
        let input_shape = Shape(input.to_vec());
        for &i in &order {
            let spec = specs[i].take().ok_or(GraphError::Empty)?;
            let inputs: Vec<Source> = wiring[i]
                .iter()
                .map(|w| match w {
                    None => Source::Input,
                    Some(j) => Source::Node(position[*j]),
                })
                .collect();
            spec.op
                .validate()
                .map_err(|e| GraphError::node(&spec.name, format!("({}) {e}", spec.op.tag())))?;
            let shapes: Vec<&Shape> = inputs
                .iter()
                .map(|s| match s {
                    Source::Input => &input_shape,
                    Source::Node(j) => &nodes[*j].shape,
                })
                .collect::<Vec<&Shape>>();
            let shape = spec.op.infer(&shapes).map_err(|e: String| {
                GraphError::node(&spec.name, format!("({}) {e}", spec.op.tag()))
            })?;
            nodes.push(Node {
                name: spec.name,
                op: spec.op,
                inputs,
                shape,
            });
        }
        Ok(Graph {
            name,
            input: input_shape,
            nodes,
            output: position[output_spec],
            info,
        })
    }

    /// The same network for another input size: shapes, MACs and activations are
    /// recomputed, and a layer that can no longer be applied is named in the error.
    pub fn with_input(&self, input: [usize; 3]) -> Result<Self, GraphError> {
        Graph::new(
            self.name.clone(),
            input,
            self.specs(),
            Some(&self.nodes[self.output].name),
            self.info.clone(),
        )
    }

    /// The nodes as named specs (the inverse of [`Graph::new`]).
    pub fn specs(&self) -> Vec<NodeSpec> {
        self.nodes
            .iter()
            .map(|n| NodeSpec {
                name: n.name.clone(),
                op: n.op.clone(),
                inputs: n
                    .inputs
                    .iter()
                    .map(|s| self.source_name(*s).to_string())
                    .collect(),
            })
            .collect()
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }
    pub fn set_info(&mut self, info: ModelInfo) {
        self.info = info;
    }
    /// The image input `[C, H, W]`.
    pub fn input_shape(&self) -> [usize; 3] {
        let d = &self.input.0;
        [d[0], d[1], d[2]]
    }
    /// Nodes in topological order: every node's inputs come before it.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    /// Index of the output node in [`Graph::nodes`].
    pub fn output_index(&self) -> usize {
        self.output
    }
    pub fn output_shape(&self) -> &Shape {
        &self.nodes[self.output].shape
    }
    /// The name of an input source (`"input"` or the node's name).
    pub fn source_name(&self, s: Source) -> &str {
        match s {
            Source::Input => INPUT_NAME,
            Source::Node(i) => &self.nodes[i].name,
        }
    }
    /// Shape of an input source.
    pub fn source_shape(&self, s: Source) -> &Shape {
        match s {
            Source::Input => &self.input,
            Source::Node(i) => &self.nodes[i].shape,
        }
    }

    /// Trainable parameters (saturating, as each node's count does).
    pub fn params(&self) -> u64 {
        saturating_sum(self.nodes.iter().map(|n| n.op.params()))
    }
    /// Non-trainable buffers (batch-norm running statistics), saturating.
    pub fn buffers(&self) -> u64 {
        saturating_sum(self.nodes.iter().map(|n| n.op.buffers()))
    }
    /// Multiply-accumulates of one forward pass of one example. Saturates at
    /// `u64::MAX` like each node's count: a plain sum of a model file's saturated node
    /// and a 1-MAC node wrapped to 0 MACs.
    pub fn macs(&self) -> u64 {
        saturating_sum(self.nodes.iter().map(|n| n.op.macs(&n.shape)))
    }
    /// Output elements of every node for one example (what a forward pass must hold for
    /// backward in training), saturating.
    pub fn activation_elements(&self) -> u64 {
        saturating_sum(self.nodes.iter().map(|n| n.shape.elements()))
    }
    /// The largest number of Conv2d/Linear nodes on any path from input to output: the
    /// "Layers" column of the original suite (8 for AlexNet, 50 for ResNet-50).
    pub fn depth(&self) -> usize {
        let mut depth = vec![0usize; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            let before = node
                .inputs
                .iter()
                .map(|s| match s {
                    Source::Input => 0,
                    Source::Node(j) => depth[*j],
                })
                .max()
                .unwrap_or(0);
            depth[i] = before + usize::from(node.op.counts_for_depth());
        }
        depth[self.output]
    }
    /// For each node, the index of the last node that reads it (the output node reads
    /// itself), so an interpreter can free each intermediate after its last use.
    pub fn last_uses(&self) -> Vec<usize> {
        let mut last: Vec<usize> = (0..self.nodes.len()).collect();
        for (i, node) in self.nodes.iter().enumerate() {
            for s in &node.inputs {
                if let Source::Node(j) = s {
                    last[*j] = last[*j].max(i);
                }
            }
        }
        last[self.output] = usize::MAX;
        last
    }

    /// For each node, the nodes whose values can be dropped once it has run (their last
    /// reader), so interpreters keep only live values.
    pub fn values_to_free(&self) -> Vec<Vec<usize>> {
        let mut frees = vec![Vec::new(); self.nodes.len()];
        for (node, &last) in self.last_uses().iter().enumerate() {
            if last != usize::MAX {
                frees[last].push(node);
            }
        }
        frees
    }

    /// For each node, how many times later nodes read its value (a node reading it twice
    /// counts twice), so an engine knows which values it may overwrite.
    pub fn reader_counts(&self) -> Vec<usize> {
        let mut readers = vec![0usize; self.nodes.len()];
        for node in &self.nodes {
            for s in &node.inputs {
                if let Source::Node(j) = s {
                    readers[*j] += 1;
                }
            }
        }
        readers
    }
}

/// Kahn's algorithm, taking ready nodes in their written order so a file already in
/// order keeps it. A cycle is reported by naming one node on it.
fn topological_order(
    specs: &[NodeSpec],
    wiring: &[Vec<Option<usize>>],
) -> Result<Vec<usize>, GraphError> {
    let n = specs.len();
    let mut pending = vec![0usize; n];
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, inputs) in wiring.iter().enumerate() {
        for j in inputs.iter().flatten() {
            pending[i] += 1;
            readers[*j].push(i);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> =
        (0..n).filter(|&i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &r in &readers[i] {
            pending[r] -= 1;
            if pending[r] == 0 {
                ready.insert(r);
            }
        }
    }
    if order.len() < n {
        let stuck = (0..n).find(|&i| pending[i] > 0).unwrap_or(0);
        return Err(GraphError::node(
            &specs[stuck].name,
            "is part of a cycle: a network must be acyclic",
        ));
    }
    Ok(order)
}

fn check_all_reach_output(
    specs: &[NodeSpec],
    wiring: &[Vec<Option<usize>>],
    output: usize,
) -> Result<(), GraphError> {
    let mut live = vec![false; specs.len()];
    let mut stack = vec![output];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut live[i], true) {
            continue;
        }
        stack.extend(wiring[i].iter().flatten());
    }
    if let Some(dead) = live.iter().position(|l| !l) {
        return Err(GraphError::node(
            &specs[dead].name,
            format!(
                "does not lead to the output \"{}\"; remove it or rewire it",
                specs[output].name
            ),
        ));
    }
    Ok(())
}

/// A sum of counts that stops at `u64::MAX`: the per-node counts saturate (dimensions up
/// to 2²⁰ multiply past it), so their total must too, or it wraps to a small number.
pub fn saturating_sum(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}
