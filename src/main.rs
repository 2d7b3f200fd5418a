fn main() -> std::process::ExitCode {
    cascade::cli::main()
}
