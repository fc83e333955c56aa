//! A study as a file, out and in: bo's Vertex-shaped JSON document (`document`), CSV (`csv`)
//! and Optuna's journal (`optuna`). The operator's tools (`cli`) and the REST export and import
//! (`api::transfer`) share them.
//!
//! Writing goes a page of trials at a time: [`Encoder`] writes the study's head, then each page,
//! then the end, and [`Pages`] reads the trials that existed when the head was read, a page
//! (bounded in stored bytes) per short read, so a study of any size is written in bounded
//! memory. Each page is as it was when it was read: an export taken while trials complete is
//! not one snapshot (`bo-server backup` is).
//!
//! This module must not know HTTP; it reads the database only through `Store`.

pub mod csv;
pub mod document;
pub mod optuna;

use std::io::Write;

use bo_core::Trial;
use bo_store::{Store, StoreError, StudyHead};

use crate::wire::study::study_name;
use crate::wire::trial::TrialW;
use document::StudyExport;

/// The stored bytes of trials (parameters, measurements) one page holds at most.
pub const PAGE_BYTES: usize = 1 << 20;
/// The trials one page holds at most.
pub const PAGE_TRIALS: i64 = 1000;

/// What an export writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// bo's export document, for import into bo.
    Json,
    /// One row per trial, for spreadsheets and pandas.
    Csv,
    /// Optuna's journal, for `optuna.load_study` and optuna-dashboard.
    OptunaJournal,
}

impl Format {
    /// Every format, in the order messages list them.
    pub const ALL: [Format; 3] = [Format::Json, Format::Csv, Format::OptunaJournal];

    /// Its name in `--format` and `?format=`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::OptunaJournal => "optuna-journal",
        }
    }

    /// The format named `name`.
    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// Its media type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::OptunaJournal => "application/x-ndjson",
        }
    }

    /// The file name an export of study `number` is offered as.
    pub fn file_name(self, number: i64) -> String {
        match self {
            Format::Json => format!("study-{number}.json"),
            Format::Csv => format!("study-{number}.csv"),
            Format::OptunaJournal => format!("study-{number}.journal.log"),
        }
    }
}

/// Writes a study in one format: [`Encoder::new`] gives the opening, [`Encoder::page`] each
/// page of trials, [`Encoder::finish`] the end. JSON puts one trial per line.
pub struct Encoder {
    format: Format,
    head: StudyHead,
    name: String,
    first: bool,
}

impl Encoder {
    /// An encoder of `head`'s study and the bytes that open the file.
    pub fn new(format: Format, head: StudyHead, now_ms: i64) -> Result<(Encoder, Vec<u8>), std::io::Error> {
        let mut out = Vec::new();
        match format {
            Format::Json => {
                // `trials` is the document's last field: written empty, then reopened.
                let text = serde_json::to_string(&StudyExport::head(&head, now_ms))?;
                let open = text.strip_suffix("[]}").ok_or_else(|| std::io::Error::other("the document does not end with its trials"))?;
                out.extend_from_slice(open.as_bytes());
                out.extend_from_slice(b"[\n");
            }
            Format::Csv => csv::header(&head.study.spec, &mut out)?,
            Format::OptunaJournal => {
                for line in optuna::head(&head.study) {
                    serde_json::to_writer(&mut out, &line)?;
                    out.push(b'\n');
                }
            }
        }
        let name = study_name(&head.study);
        Ok((Encoder { format, head, name, first: true }, out))
    }

    /// The bytes of a page of trials.
    pub fn page(&mut self, trials: &[Trial]) -> Result<Vec<u8>, std::io::Error> {
        let mut out = Vec::with_capacity(trials.len() * 256);
        let spec = &self.head.study.spec;
        for t in trials {
            match self.format {
                Format::Json => {
                    if !self.first {
                        out.extend_from_slice(b",\n");
                    }
                    serde_json::to_writer(&mut out, &TrialW::from_domain(t, &self.name, &spec.space))?;
                }
                Format::Csv => csv::row(spec, t, &mut out)?,
                Format::OptunaJournal => {
                    serde_json::to_writer(&mut out, &optuna::trial_line(spec, t))?;
                    out.push(b'\n');
                }
            }
            self.first = false;
        }
        Ok(out)
    }

    /// The bytes that end the file.
    pub fn finish(self) -> Vec<u8> {
        match self.format {
            Format::Json if self.first => b"]}\n".to_vec(),
            Format::Json => b"\n]}\n".to_vec(),
            Format::Csv | Format::OptunaJournal => Vec::new(),
        }
    }
}

/// The trials of a study that existed when its head was read, a page at a time.
pub struct Pages {
    study_id: i64,
    after_id: i64,
    /// Trials from this id on were created after the head was read.
    end_id: i64,
    done: bool,
}

impl Pages {
    /// The pages of `head`'s study.
    pub fn of(head: &StudyHead) -> Pages {
        Pages { study_id: head.study.id, after_id: 0, end_id: head.next_trial_id, done: false }
    }

    /// The next page, or `None` after the last — once the study is seen to be still there: a
    /// study deleted part way is `NotFound`, never a shorter file that looks whole.
    pub async fn next(&mut self, store: &Store) -> Result<Option<Vec<Trial>>, StoreError> {
        if self.done {
            store.study_by_id(self.study_id).await?;
            return Ok(None);
        }
        let (mut trials, cut) = store.list_trials(self.study_id, self.after_id, PAGE_TRIALS, PAGE_BYTES).await?;
        let full = cut || trials.len() as i64 == PAGE_TRIALS;
        let before = trials.len();
        trials.retain(|t| t.id < self.end_id);
        self.done = !full || trials.len() < before;
        match trials.last() {
            Some(last) => self.after_id = last.id,
            None => {
                store.study_by_id(self.study_id).await?;
                return Ok(None);
            }
        }
        Ok(Some(trials))
    }
}

/// Writes the study `study_id` to `out` in `format` (the operator's tool; the server streams
/// through the same [`Encoder`] and [`Pages`]). Returns the trials written.
pub async fn write(store: &Store, study_id: i64, format: Format, out: &mut impl Write) -> anyhow::Result<usize> {
    let head = store.study_head(study_id).await?;
    let mut pages = Pages::of(&head);
    let (mut encoder, opening) = Encoder::new(format, head, crate::clock::now_ms())?;
    out.write_all(&opening)?;
    let mut written = 0;
    while let Some(trials) = pages.next(store).await? {
        written += trials.len();
        out.write_all(&encoder.page(&trials)?)?;
    }
    out.write_all(&encoder.finish())?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_a_name_that_parses_back() {
        for f in Format::ALL {
            assert_eq!(Format::parse(f.as_str()), Some(f));
        }
        assert_eq!(Format::parse("xml"), None);
    }
}
