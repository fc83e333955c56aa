//! The `bo-server` binary: configuration, logging, then `bo_server::run`.

use std::io::IsTerminal;

use bo_server::config::LogFormat;
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// mimalloc rather than the C library's allocator: a proposal allocates matrices of candidates
/// by trials (2.4 MB at 500 trials) on threads whose glibc arenas hand freed memory back to the
/// system and fault it in again on the next proposal; measured 20 % of a suggestion at 500
/// trials (docs/journal/benchmarks.md, issue 22).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bo_server::cli::CommandLine { config, command } = bo_server::cli::CommandLine::parse();
    if let Some(command) = command {
        // A tool's output is its standard output; its warnings go to standard error.
        let filter = EnvFilter::try_new("warn").unwrap_or_else(|_| EnvFilter::new("warn"));
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal()).init();
        if let Err(e) = bo_server::cli::run(command, &config).await {
            // The message and its causes on one line; a tool's user needs no backtrace.
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
        return Ok(());
    }
    let filter = EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"));
    match config.log_format {
        // Colour only on a terminal: a log file or a collector gets plain text.
        LogFormat::Text => tracing_subscriber::fmt().with_env_filter(filter).with_ansi(std::io::stdout().is_terminal()).init(),
        LogFormat::Json => tracing_subscriber::fmt().json().with_current_span(true).with_span_list(false).with_env_filter(filter).init(),
    }
    tracing::debug!(?config, "configuration");
    bo_core::linalg::set_threads(config.linalg_threads);
    let result = bo_server::run(config).await;
    // The server has stopped: the engine's background work ended or gave its leases back and
    // the pool is closed. A fit or a structure search still running on a blocking thread has
    // nothing left to write to, and the runtime would wait for it on the way out (minutes, for
    // a structure search): the process ends here instead.
    let code = match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("Error: {e:?}");
            1
        }
    };
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::process::exit(code)
}
