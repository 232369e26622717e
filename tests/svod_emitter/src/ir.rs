//! Svod's UOps as its logs show them: hash-consed nodes with ids from one process-wide counter, and the tree text.
//!
//! Facts from npatsakula/svod (3e06443b): `ir/src/uop/hash_consing.rs` keeps one global table of live UOps keyed by
//! (op, dtype, arg, sources) and one `UOP_ID_COUNTER`: building a UOp equal to a live one returns that one, with its
//! id, from any thread; a dead one is gone and the next equal build gets a new id. `ir/src/uop/tree.rs`: a node is
//! `[id] OP : dtype shape=[..]` (no shape where there is none), children under `├── ` / `└── ` with `│   ` or
//! four spaces carried down, `[id] → (see above)` for a node already printed; every line ends in a newline.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

static UOP_ID_COUNTER: AtomicU64 = AtomicU64::new(0);

type Key = (String, &'static str, Option<String>, Vec<u64>);

fn table() -> &'static Mutex<HashMap<Key, Weak<UOp>>> {
    static TABLE: OnceLock<Mutex<HashMap<Key, Weak<UOp>>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

pub struct UOp {
    pub id: u64,
    head: String,
    dtype: &'static str,
    shape: Option<String>,
    pub src: Vec<Arc<UOp>>,
}

/// The node of this structure: the live one if there is one (any thread built it), else a new one with the next id.
pub fn uop(head: impl Into<String>, dtype: &'static str, shape: Option<&str>, src: Vec<Arc<UOp>>) -> Arc<UOp> {
    let head = head.into();
    let shape = shape.map(str::to_owned);
    let key = (head.clone(), dtype, shape.clone(), src.iter().map(|s| s.id).collect());
    let mut table = table().lock().unwrap();
    if let Some(live) = table.get(&key).and_then(Weak::upgrade) {
        return live;
    }
    let node = Arc::new(UOp { id: UOP_ID_COUNTER.fetch_add(1, Ordering::Relaxed), head, dtype, shape, src });
    table.insert(key, Arc::downgrade(&node));
    node
}

impl UOp {
    /// `UOp::tree()`: the graph as Svod prints it in events and dumps.
    pub fn tree(&self) -> String {
        let mut out = String::new();
        self.lines("", "", &mut HashSet::new(), &mut out);
        out
    }

    fn lines(&self, lead: &str, branch: &str, seen: &mut HashSet<u64>, out: &mut String) {
        if !seen.insert(self.id) {
            let _ = writeln!(out, "{lead}{branch}[{}] → (see above)", self.id);
            return;
        }
        let _ = write!(out, "{lead}{branch}[{}] {} : {}", self.id, self.head, self.dtype);
        if let Some(shape) = &self.shape {
            let _ = write!(out, " shape={shape}");
        }
        out.push('\n');
        let carried = match branch {
            "" => "",
            "├── " => "│   ",
            _ => "    ",
        };
        let child_lead = format!("{lead}{carried}");
        for (i, child) in self.src.iter().enumerate() {
            let branch = if i + 1 == self.src.len() { "└── " } else { "├── " };
            child.lines(&child_lead, branch, seen, out);
        }
    }

    /// Distinct nodes reachable from this one (Svod's `node_count()`).
    pub fn node_count(&self) -> usize {
        let mut seen = HashSet::new();
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            if seen.insert(node.id) {
                stack.extend(node.src.iter().map(|s| &**s));
            }
        }
        seen.len()
    }
}

/// The canonical document of a graph (`ir/src/uop/canonical.rs`, npatsakula/svod 3e06443b, schema 6: `CanonicalGraph`
/// {schema_version, stage, roots, nodes}, each node {id, op, dtype, shape, arg, src} in dependency-first order with
/// dense ids, serde's field order, `serde_json::to_string_pretty`). The SINK names its kernel (`name`).
pub fn canonical(stage: &str, root: &UOp, name: Option<&str>) -> String {
    use serde_json::{json, Value};
    let mut order: Vec<&UOp> = Vec::new();
    let mut ids: HashMap<u64, usize> = HashMap::new();
    fn visit<'a>(node: &'a UOp, order: &mut Vec<&'a UOp>, ids: &mut HashMap<u64, usize>) {
        if ids.contains_key(&node.id) {
            return;
        }
        for child in &node.src {
            visit(child, order, ids);
        }
        ids.insert(node.id, order.len());
        order.push(node);
    }
    visit(root, &mut order, &mut ids);
    let dtype = |d: &str| -> Value {
        let inner = d.trim_start_matches("Scalar(").trim_end_matches(')');
        json!({"kind": "scalar", "name": inner.to_lowercase()})
    };
    let nodes: Vec<Value> = order
        .iter()
        .map(|node| {
            let head = node.head.as_str();
            let (op, arg) = if let Some(rest) = head.strip_prefix("CONST(") {
                let inner = rest.trim_end_matches(')');
                let value = if let Some(i) = inner.strip_prefix("Int(") {
                    json!({"kind": "int", "value": i.trim_end_matches(')').parse::<i64>().unwrap_or(0)})
                } else {
                    let f: f64 = inner.trim_start_matches("Float(").trim_end_matches(')').parse().unwrap_or(0.0);
                    json!({"kind": "float", "bits": format!("0x{:016x}", f.to_bits())})
                };
                ("CONST", json!({"kind": "const", "value": value}))
            } else if let Some(rest) = head.strip_prefix("PARAM(slot=") {
                let slot: i64 = rest.trim_end_matches(')').parse().unwrap_or(0);
                ("PARAM", json!({"kind": "param", "slot": slot, "dtype": dtype(node.dtype), "vmin_vmax": null,
                                 "multiple_of": null, "name": null, "address_space": null, "axis": null,
                                 "device": null, "volatile": false}))
            } else if let Some(rest) = head.strip_prefix("RANGE(R") {
                let (axis, kind) = rest.trim_end_matches(')').split_once(", ").unwrap_or(("0", "Loop"));
                ("RANGE", json!({"kind": "range", "axis": [axis.parse::<usize>().unwrap_or(0)], "renumbered": false,
                                 "axis_type": kind.to_lowercase()}))
            } else if let Some(rest) = head.strip_prefix("REDUCE(") {
                let num_axes: usize = rest.split("num_axes=").nth(1).and_then(|s| s.split(',').next())
                    .and_then(|s| s.parse().ok()).unwrap_or(0);
                ("REDUCE", json!({"kind": "reduce", "op": "add", "axes": null, "num_axes": num_axes}))
            } else if head == "SINK[KERNEL]" {
                ("SINK", json!({"kind": "sink", "name": name, "opts_to_apply": null, "applied_opts": [],
                                "dont_use_locals": false}))
            } else {
                let op = match head { "Add" => "ADD", "Mul" => "MUL", "Max" => "MAX", other => other };
                (op, json!({"kind": "none"}))
            };
            let shape = match &node.shape {
                Some(s) if s.starts_with("[Const(") => {
                    json!([{"kind": "const", "value": s[7..s.len() - 2].parse::<usize>().unwrap_or(0)}])
                }
                _ => Value::Null,
            };
            let src: Vec<usize> = node.src.iter().map(|c| ids[&c.id]).collect();
            json!({"id": ids[&node.id], "op": op, "dtype": dtype(node.dtype), "shape": shape, "arg": arg,
                   "src": src})
        })
        .collect();
    let doc = json!({"schema_version": 6, "stage": stage, "roots": [ids[&root.id]], "nodes": nodes});
    serde_json::to_string_pretty(&doc).unwrap()
}
