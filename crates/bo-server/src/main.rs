//! The `bo-server` binary: configuration, logging, then `bo_server::run`.

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = bo_server::Config::parse();
    tracing_subscriber::fmt().with_env_filter(EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"))).init();
    tracing::debug!(?config, "configuration");
    bo_core::linalg::set_threads(config.linalg_threads);
    bo_server::run(config).await
}
