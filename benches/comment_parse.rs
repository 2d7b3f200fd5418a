//! How long `cascade::command::parse_comment` takes on the comments that are hardest for
//! it, and that the time grows linearly with their length.
//!
//! ```text
//! cargo bench --bench comment_parse
//! ```
//!
//! Anyone who may comment on a pull request chooses the text cascade parses, before any
//! permission check. Each shape below is built at 16 KiB and at 64 KiB (GitHub's limit for
//! a comment is 65,536 characters; GitLab's is larger) and parsed several times; the table
//! shows the best time of each and the ratio between the two sizes. A parser that is linear
//! in the length gives a ratio near 4; the bench fails above 8, which a quadratic scan (16)
//! cannot pass. The `command` fuzz target checks what the parser returns; this checks how
//! long it takes.

use cascade::command::parse_comment;
use std::time::{Duration, Instant};

const SMALL: usize = 16 * 1024;
const LARGE: usize = 64 * 1024;
const RUNS: usize = 5;
/// Above this, time grows faster than the length: 4 is linear, 16 quadratic.
const MAX_RATIO: f64 = 8.0;

/// Each shape repeats a unit of text up to a size.
const SHAPES: &[(&str, &dyn Fn(usize) -> String)] = &[
    ("one code span per line", &|size| repeated("`a`\n", size)),
    ("one HTML comment per line", &|size| {
        repeated("<!--a-->\n", size)
    }),
    ("one command per line", &|size| {
        repeated("/plan a b c d e f g h\n", size)
    }),
    ("unclosed backtick runs, growing", &|size| {
        growing_backtick_runs(size)
    }),
    ("quoted lines", &|size| {
        repeated("> /apply 3f9a2c1b7d4e\n", size)
    }),
    ("lazy quote continuations", &|size| {
        repeated("> a\n/plan\n", size)
    }),
    ("fence lines", &|size| repeated("```\n/plan\n", size)),
];

fn main() {
    println!(
        "{:<34} {:>12} {:>12} {:>7}",
        "comment (16 KiB → 64 KiB)", "16 KiB", "64 KiB", "ratio"
    );
    let mut failures = Vec::new();
    for (name, build) in SHAPES {
        let small = best_of(&build(SMALL));
        let large = best_of(&build(LARGE));
        let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-9);
        println!("{name:<34} {small:>12.2?} {large:>12.2?} {ratio:>7.1}");
        if ratio > MAX_RATIO {
            failures.push(format!("{name}: ×{ratio:.1} for ×4 the text"));
        }
    }
    assert!(
        failures.is_empty(),
        "parsing time grows faster than the comment: {failures:?}"
    );
}

fn best_of(body: &str) -> Duration {
    (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(parse_comment(std::hint::black_box(body)));
            started.elapsed()
        })
        .min()
        .expect("at least one run")
}

fn repeated(unit: &str, size: usize) -> String {
    unit.repeat(size / unit.len())
}

/// `` ` `` then `` `` `` then `` ``` ``…: runs of distinct lengths, none of them closed.
fn growing_backtick_runs(size: usize) -> String {
    let mut body = String::new();
    for len in 1.. {
        if body.len() + len + 1 > size {
            break;
        }
        body.push_str(&"`".repeat(len));
        body.push(' ');
    }
    body
}
