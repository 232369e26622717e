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
