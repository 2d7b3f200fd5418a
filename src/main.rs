// Discovery allocates on every core at once; mimalloc's per-thread heaps make
// that ~20% cheaper than glibc's arenas (see the discovery bench in README).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cascade::cli::main()
}

/// mimalloc's `mi_option_arena_eager_commit`: its place in mimalloc v3's
/// `mi_option_e` (include/mimalloc.h), which libmimalloc-sys names only for v2.
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Commits arena memory as it is used rather than up front. On Linux
/// mimalloc commits its first 1 GiB arena eagerly and frees pages lazily, so
/// the resident set of `cascade graph` on 10,000 units was ~90 MiB for ~26 MiB
/// of heap; committed on demand it is ~56 MiB, at the same speed. An option
/// must be set before the arena is reserved, i.e. before the first
/// allocation, which Rust's runtime makes before `main`: hence a constructor.
#[cfg(target_os = "linux")]
extern "C" fn commit_on_demand() {
    // SAFETY: runs before `main`, on the only thread there is.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) };
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static COMMIT_ON_DEMAND: extern "C" fn() = commit_on_demand;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_is_eager_commit_and_it_is_off() {
        // SAFETY: reading an option is a plain load.
        let now = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_ARENA_EAGER_COMMIT) };
        assert_eq!(now, 0, "the constructor ran before the tests");
        // The next one is `purge_decommits`, on by default: a renumbered
        // enum would most likely move it.
        // SAFETY: as above.
        let next = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_ARENA_EAGER_COMMIT + 1) };
        assert_eq!(next, 1);
    }
}
