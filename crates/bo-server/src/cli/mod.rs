//! `bo-server studies | export | import | backup`: an operator's tools on the database itself
//! (like `pg_dump`), beside the service: list the studies, write one out (bo's Vertex-shaped JSON
//! with the model state, CSV, or Optuna's journal), read one in (JSON, or an Optuna journal with
//! the search space supplied), copy a whole SQLite database. They share `--database-url` with
//! the server; on SQLite they may run while it serves.

use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use bo_store::{Store, StoreOptions, StudyRecord};

use crate::config::Config;
use crate::transfer::document::StudyExport;
use crate::transfer::{Format, optuna};
use crate::wire::study::study_name;
use crate::wire::study::{StudySpecW, StudyW};

// The command line: the service's settings, and a tool to run on its database instead of serving.
/// bo: a self-hosted Vertex AI Vizier service — Bayesian optimisation over REST.
#[derive(clap::Parser)]
#[command(name = "bo-server", version = crate::VERSION, about)]
pub struct CommandLine {
    /// The service's settings (the tools read `--database-url` and the limits).
    #[command(flatten)]
    pub config: Config,
    /// A tool to run on the database instead of serving (`studies`, `export`, `import`, `backup`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The tools.
#[derive(Clone, Debug, clap::Subcommand)]
pub enum Command {
    /// Lists the studies: name, display name, state, algorithm, trials (succeeded / all), best.
    Studies {
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
        /// Only this location.
        #[arg(long)]
        location: Option<String>,
    },
    /// Writes a study out: `projects/P/locations/L/studies/N` (or the display name in place of N).
    Export {
        /// The study.
        study: String,
        /// `json`: the whole study, trials and model state, for `import`; `csv`: one row per
        /// trial; `optuna-journal`: for optuna.load_study and optuna-dashboard.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// The file to write (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Reads a study in as a new study (`-` reads standard input); prints its name.
    Import {
        /// The file.
        file: PathBuf,
        /// `json` (from `export`) or `optuna-journal` (a journal bo wrote carries its spec; another needs --spec).
        #[arg(long, value_enum, default_value_t = ImportFormat::Json)]
        format: ImportFormat,
        /// The project to import into (default: the exported study's; `demo` for an Optuna journal).
        #[arg(long)]
        project: Option<String>,
        /// The location to import into (default: the exported study's; `local` for an Optuna journal).
        #[arg(long)]
        location: Option<String>,
        /// The new study's display name (default: the exported study's or the Optuna study's).
        #[arg(long)]
        display_name: Option<String>,
        /// optuna-journal: the search space and metrics, as a Vertex `StudySpec`, a whole
        /// `Study` or bo's JSON export (a file); its metrics are Optuna's objectives in order.
        /// Not needed for a journal bo wrote (it carries its spec).
        #[arg(long)]
        spec: Option<PathBuf>,
        /// optuna-journal: which study of the journal (default: its only one).
        #[arg(long)]
        optuna_study: Option<String>,
    },
    /// Copies a whole SQLite database, consistent, while the server uses it (`VACUUM INTO`);
    /// the copy is a database the server can be started on. (Postgres: pg_dump, see docs/deploy.md.)
    Backup {
        /// The file to write; it must not exist.
        #[arg(long, short)]
        output: PathBuf,
    },
}

/// What `import` reads.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ImportFormat {
    /// bo's export document.
    Json,
    /// Optuna's journal.
    OptunaJournal,
}

/// Runs one tool against `config`'s database.
pub async fn run(command: Command, config: &Config) -> anyhow::Result<()> {
    if matches!(command, Command::Studies { .. } | Command::Export { .. } | Command::Backup { .. })
        && let Some(path) = bo_store::sqlite_file(&config.database_url)
        && !path.exists()
    {
        // A misspelt path would otherwise become an empty database and an empty answer.
        bail!("there is no database at {}: the server creates it on its first start; check --database-url", path.display());
    }
    let options = StoreOptions { max_connections: 2, acquire_timeout: Duration::from_secs_f64(config.database_timeout) };
    let store = Store::connect(&config.database_url, &options).await.context("opening the database")?;
    let result = match command {
        Command::Backup { output } => {
            store.backup_to(&output).await.context("backing up")?;
            let bytes = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
            eprintln!("backed up to {} ({:.1} MB)", output.display(), bytes as f64 / 1e6);
            Ok(())
        }
        Command::Studies { project, location } => studies(&store, project.as_deref(), location.as_deref()).await,
        Command::Export { study, format, output } => export(&store, &study, format, output).await,
        Command::Import { file, format, project, location, display_name, spec, optuna_study } => {
            let text = read(&file)?;
            let limits = config.limits.limits();
            let now = chrono::Utc::now().timestamp_millis();
            let dump = match format {
                ImportFormat::Json => {
                    let doc: StudyExport = serde_json::from_str(&text).with_context(|| format!("{} is not a bo export", file.display()))?;
                    doc.into_dump(&limits).with_context(|| format!("{} cannot be imported", file.display()))?
                }
                ImportFormat::OptunaJournal => {
                    // A journal bo wrote carries its study's spec; another needs --spec.
                    let spec = spec.map(|file| read_spec(&file, &limits)).transpose()?;
                    let imported = optuna::import(
                        &text,
                        optuna_study.as_deref(),
                        spec,
                        optuna::Target {
                            project: project.as_deref().unwrap_or("demo"),
                            location: location.as_deref().unwrap_or("local"),
                            display_name: display_name.as_deref(),
                        },
                        now,
                        &limits,
                    )
                    .with_context(|| format!("{} cannot be imported", file.display()))?;
                    if imported.unfinished > 0 {
                        eprintln!("left out {} trial(s) that had not finished in Optuna (RUNNING or WAITING)", imported.unfinished);
                    }
                    imported.dump
                }
            };
            let project = project.unwrap_or_else(|| dump.study.project.clone());
            let location = location.unwrap_or_else(|| dump.study.location.clone());
            let name = display_name.unwrap_or_else(|| dump.study.display_name.clone());
            // The same rules as the API's names: length and no control characters.
            for (what, value) in [("project", &project), ("location", &location), ("display name", &name)] {
                if value.trim().is_empty() {
                    bail!("the {what} must not be empty");
                }
                limits.check_text(value, bo_core::limits::Text::Id).map_err(|e| anyhow::anyhow!("the {what}: {e}"))?;
            }
            limits.check_text(&name, bo_core::limits::Text::Name).map_err(|e| anyhow::anyhow!("the display name: {e}"))?;
            let study = store.restore_study(&project, &location, &name, &dump).await?;
            println!("{}", study_name(&study));
            eprintln!("imported {} trial(s){}", dump.trials.len(), if dump.model.is_some() { " and the model state" } else { "" });
            Ok(())
        }
    };
    store.close().await;
    // `bo-server export … | head` is not an error.
    match result {
        Err(e) if e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)) => {
            Ok(())
        }
        other => other,
    }
}

fn read(file: &PathBuf) -> anyhow::Result<String> {
    let mut text = String::new();
    if file.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).context("reading standard input")?;
    } else {
        text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    }
    Ok(text)
}

/// A `StudySpec`, or the `studySpec` of a `Study`, from a JSON file, with the service's settings
/// its `algorithmConfig` holds.
fn read_spec(file: &PathBuf, limits: &bo_core::Limits) -> anyhow::Result<(bo_core::StudySpec, bo_store::StudySettings)> {
    let text = read(file)?;
    let value: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    // bo's JSON export holds the study whole: its spec is the study's.
    let value = match value.get("study") {
        Some(study) if value.get("boExportFormat").is_some() => study.clone(),
        _ => value,
    };
    let spec: StudySpecW = if value.get("studySpec").is_some() {
        serde_json::from_value::<StudyW>(value).with_context(|| format!("{} is not a Vertex Study", file.display()))?.study_spec
    } else {
        serde_json::from_value(value).with_context(|| format!("{} is not a Vertex StudySpec", file.display()))?
    };
    spec.into_domain(limits).map_err(|e| anyhow::anyhow!("{}: {}: {}", file.display(), e.path, e.reason))
}

/// `projects/P/locations/L/studies/N-or-display-name` → the study.
async fn find(store: &Store, name: &str) -> anyhow::Result<StudyRecord> {
    let parts: Vec<&str> = name.splitn(6, '/').collect();
    let ["projects", project, "locations", location, "studies", study] = parts.as_slice() else {
        bail!("{name:?} is not projects/P/locations/L/studies/N (N a number or a display name)");
    };
    let found = match study.parse::<i64>() {
        Ok(n) => store.get_study(project, location, n).await,
        Err(_) => store.lookup_study(project, location, study).await,
    };
    found.with_context(|| format!("study {name}"))
}

async fn export(store: &Store, name: &str, format: Format, output: Option<PathBuf>) -> anyhow::Result<()> {
    let study = find(store, name).await?;
    let mut out: Box<dyn Write> = match &output {
        Some(path) => Box::new(BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?)),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let written = crate::transfer::write(store, study.id, format, &mut out).await?;
    out.flush()?;
    if output.is_some() {
        eprintln!("exported {written} trial(s) of {}", study_name(&study));
    }
    Ok(())
}

async fn studies(store: &Store, project: Option<&str>, location: Option<&str>) -> anyhow::Result<()> {
    let filter = project.map(|p| vec![p.to_owned()]);
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "NAME\tDISPLAY NAME\tSTATE\tALGORITHM\tSUCCEEDED/TRIALS\tBEST")?;
    for (p, l, _) in store.locations(filter.as_deref(), i64::MAX).await? {
        if location.is_some_and(|want| want != l) {
            continue;
        }
        let mut after = 0;
        loop {
            let page = store.study_overview(&p, &l, after, 500).await?;
            for s in &page {
                let total: i64 = s.counts.iter().sum();
                let succeeded = s.counts[bo_core::TrialState::ALL.iter().position(|x| *x == bo_core::TrialState::Succeeded).unwrap_or(3)];
                let best = s.best.map(|b| format!("{b}")).unwrap_or_else(|| "-".into());
                // The server's default, ALGORITHM_UNSPECIFIED on the wire, is AUTO.
                let algorithm = if s.study.algorithm == "ALGORITHM_UNSPECIFIED" { "AUTO" } else { s.study.algorithm.as_str() };
                writeln!(
                    out,
                    "{}\t{}\t{}\t{algorithm}\t{succeeded}/{total}\t{best}",
                    format!("projects/{}/locations/{}/studies/{}", s.study.project, s.study.location, s.study.number),
                    s.study.display_name,
                    s.study.state.as_str()
                )?;
            }
            match page.last() {
                Some(last) if page.len() == 500 => after = last.study.number,
                _ => break,
            }
        }
    }
    out.flush()?;
    Ok(())
}
