#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Logging is set up by `cli::run`, once the log format is known.
    let cli = mnemo::cli::parse();
    match mnemo::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // anyhow's contexts, then the crate error (whose message is
            // already its whole chain).
            let chain = mnemo::error::Chain(e.as_ref());
            eprintln!("error: {chain}");
            std::process::ExitCode::FAILURE
        }
    }
}
