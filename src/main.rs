// Discovery allocates on every core at once; mimalloc's per-thread heaps make
// that ~20% cheaper than glibc's arenas (see the discovery bench in README).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cascade::cli::main()
}
