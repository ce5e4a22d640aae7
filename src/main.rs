#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Logging is set up by `cli::run`, once the log format is known.
    let cli = mnemo::cli::parse();
    match mnemo::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
