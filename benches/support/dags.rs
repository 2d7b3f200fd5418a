//! Deterministic random DAGs with unit durations, for the walk benchmark.
//!
//! Unit `i` depends only on units before it, chosen uniformly among all of them, so every
//! graph is acyclic. Names are a random permutation of the indices, so path order (the
//! walk's tie-break) carries no hint of the graph's structure. The same
//! `(units, mean_deps, seed)` always gives the same DAG.

/// A xorshift64* generator: enough randomness for test shapes, no crate needed.
pub struct Xorshift(u64);

impl Xorshift {
    pub fn new(seed: u64) -> Xorshift {
        // Zero is xorshift's one fixed point; spread small seeds over the state.
        Xorshift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant at these sizes.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// A random DAG of units with durations.
#[derive(Clone, Debug)]
pub struct Dag {
    /// Unit `i`'s path.
    pub names: Vec<String>,
    /// What unit `i` depends on: distinct indices, all below `i`.
    pub deps: Vec<Vec<usize>>,
    /// How long unit `i` runs, in seconds.
    pub secs: Vec<u64>,
}

impl Dag {
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Total work in seconds.
    pub fn work(&self) -> u64 {
        self.secs.iter().sum()
    }

    /// The longest dependency chain, weighted by duration, in seconds.
    pub fn critical_path(&self) -> u64 {
        self.finish_times().into_iter().max().unwrap_or(0)
    }

    /// For each unit, the end of the longest chain ending with it (its earliest finish with
    /// unlimited workers). Index order is topological, so one pass suffices.
    pub fn finish_times(&self) -> Vec<u64> {
        let mut finish = vec![0; self.len()];
        for i in 0..self.len() {
            let start = self.deps[i].iter().map(|&d| finish[d]).max().unwrap_or(0);
            finish[i] = start + self.secs[i];
        }
        finish
    }

    /// For each unit, the longest chain starting with it, itself included (its "bottom
    /// level"): the classic priority for list scheduling.
    pub fn remaining_path(&self) -> Vec<u64> {
        let mut dependents = vec![Vec::new(); self.len()];
        for (i, deps) in self.deps.iter().enumerate() {
            for &d in deps {
                dependents[d].push(i);
            }
        }
        let mut rest = vec![0; self.len()];
        for i in (0..self.len()).rev() {
            let after = dependents[i].iter().map(|&d| rest[d]).max().unwrap_or(0);
            rest[i] = self.secs[i] + after;
        }
        rest
    }

    /// Kahn waves: wave `k` holds the units whose longest dependency chain has `k` edges.
    pub fn waves(&self) -> Vec<Vec<usize>> {
        let mut level = vec![0usize; self.len()];
        let mut waves: Vec<Vec<usize>> = Vec::new();
        for i in 0..self.len() {
            level[i] = self.deps[i]
                .iter()
                .map(|&d| level[d] + 1)
                .max()
                .unwrap_or(0);
            if waves.len() <= level[i] {
                waves.resize(level[i] + 1, Vec::new());
            }
            waves[level[i]].push(i);
        }
        waves
    }
}

/// `units` units, each with on average `mean_deps` dependencies (0 to `2 * mean_deps`,
/// uniform), picked uniformly among earlier units, lasting 1 to 60 seconds (uniform).
pub fn generate(units: usize, mean_deps: u64, seed: u64) -> Dag {
    let mut rng = Xorshift::new(seed);

    // Fisher-Yates: unit i is named after position perm[i].
    let mut perm: Vec<usize> = (0..units).collect();
    for i in (1..units).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        perm.swap(i, j);
    }
    let names = perm.iter().map(|p| format!("live/unit-{p:04}")).collect();

    let mut deps = Vec::with_capacity(units);
    let mut secs = Vec::with_capacity(units);
    for i in 0..units {
        let want = (rng.below(2 * mean_deps + 1) as usize).min(i);
        let mut mine: Vec<usize> = Vec::with_capacity(want);
        while mine.len() < want {
            let d = rng.below(i as u64) as usize;
            if !mine.contains(&d) {
                mine.push(d);
            }
        }
        mine.sort_unstable();
        deps.push(mine);
        secs.push(1 + rng.below(60));
    }
    Dag { names, deps, secs }
}
