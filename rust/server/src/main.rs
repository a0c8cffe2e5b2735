//! `pulsar-rs-server`: the standalone broker as a plain binary (the Python package's
//! `pulsar-rs standalone` runs the same server in-process).

use std::path::PathBuf;

use clap::Parser;
use pulsar_rs_broker::BrokerConfig;
use pulsar_rs_server::Server;

/// Command-line flags; they override the TOML file.
#[derive(Parser, Debug)]
#[command(
    name = "pulsar-rs-server",
    about = "Pulsar-compatible broker (standalone)"
)]
struct Args {
    /// Pulsar's broker.conf / standalone.conf (Java properties) or TOML with the same keys.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Data directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Bind address.
    #[arg(long)]
    bind: Option<String>,
    /// Binary protocol port.
    #[arg(long)]
    port: Option<u16>,
    /// Admin REST port.
    #[arg(long)]
    admin_port: Option<u16>,
    /// Log lines as text or as one JSON object per line.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// `--log-format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LogFormat {
    Text,
    Json,
}

fn main() -> anyhow_free::Result<()> {
    let args = Args::parse();
    let logs = tracing_subscriber::fmt().with_env_filter(
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
    );
    match args.log_format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
    let mut cfg = match &args.config {
        Some(p) => BrokerConfig::from_file(p)?,
        None => BrokerConfig::default(),
    };
    if let Some(b) = args.bind {
        cfg.bind_address = b;
    }
    if let Some(p) = args.port {
        cfg.broker_service_port = p;
    }
    if let Some(p) = args.admin_port {
        cfg.web_service_port = p;
    }
    if let Some(w) = cfg.unimplemented_warning() {
        tracing::warn!("{w}");
    }
    let dir = args
        .data_dir
        .or_else(|| cfg.data_dir.clone().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("data"));
    let rt = pulsar_rs_server::io_runtime(&cfg)?;
    let io_threads = rt.metrics().num_workers();
    rt.block_on(async move {
        tracing::info!(io_threads, "starting the broker");
        let server = Server::start(cfg, dir).await?;
        println!("READY {} {}", server.service_url(), server.admin_url());
        wait_for_signal().await;
        server.shutdown().await?;
        Ok(())
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("installing SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// `main`'s error type: any error, displayed.
mod anyhow_free {
    pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;
}
