//! What the transfer handlers (`transfer.rs`) hold between requests on one replica: the turns
//! at streaming an export, and the commits of uploads running as tasks of their own. It owns
//! these limits and their bookkeeping; it knows nothing of what an export writes or a commit
//! does (the handlers pass the commit in).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bo_store::StudyRecord;

use super::error::{ApiError, Code};

/// Exports streaming at once, over every project (each holds a few pages in memory).
pub const MAX_EXPORTS: usize = 8;
/// Exports streaming at once in one project: one key's slow readers leave the rest to others.
pub const MAX_EXPORTS_PER_PROJECT: usize = 2;
/// The longest a `:commit` request waits for its commit (at most half the request timeout)
/// before answering 202 with the upload's progress; the commit runs on.
pub const COMMIT_WAIT: Duration = Duration::from_secs(20);

/// The turns at streaming an export: [`MAX_EXPORTS`] in all, at most
/// [`MAX_EXPORTS_PER_PROJECT`] of them one project's, so no project's slow readers hold them all.
#[derive(Default)]
pub struct ExportSlots {
    held: std::sync::Mutex<BTreeMap<String, usize>>,
}

/// An export's turn, given back when dropped (when its stream ends, however it ends).
pub struct ExportSlot {
    slots: Arc<ExportSlots>,
    project: String,
}

impl ExportSlots {
    /// A turn for an export of `project`, or a 429 saying whose limit was met.
    pub fn take(self: &Arc<Self>, project: &str) -> Result<ExportSlot, ApiError> {
        let mut held = crate::sync::lock(&self.held);
        let total: usize = held.values().sum();
        let mine = held.get(project).copied().unwrap_or(0);
        if mine >= MAX_EXPORTS_PER_PROJECT {
            return Err(ApiError::new(
                Code::ResourceExhausted,
                format!("project {project} has {mine} exports in progress, the most one project may have at once; retry when one ends"),
            ));
        }
        if total >= MAX_EXPORTS {
            return Err(ApiError::new(
                Code::ResourceExhausted,
                format!("{MAX_EXPORTS} exports are in progress, the most at once; retry when one ends"),
            ));
        }
        *held.entry(project.to_owned()).or_default() += 1;
        Ok(ExportSlot { slots: self.clone(), project: project.to_owned() })
    }
}

impl Drop for ExportSlot {
    fn drop(&mut self) {
        let mut held = crate::sync::lock(&self.slots.held);
        if let Some(n) = held.get_mut(&self.project) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.project);
            }
        }
    }
}

/// What a commit ends with: the study, or the error its requests answer.
pub type CommitAnswer = Option<Result<StudyRecord, ApiError>>;

/// The commits running on this replica, by upload id. Each runs as a task of its own, so a
/// request that gives up (or is cut by the request timeout) leaves it going; a second `:commit`
/// of the upload waits on the first's answer instead of taking steps beside it. (Replicas
/// share nothing here: one on another replica takes its steps in turn, under the upload's row
/// lock.)
#[derive(Default)]
pub struct Commits(std::sync::Mutex<std::collections::HashMap<String, tokio::sync::watch::Receiver<CommitAnswer>>>);

impl Commits {
    /// The answer of upload `id`'s running commit, starting `commit` as a task of its own if
    /// none runs.
    pub fn join_or_start<F>(self: &Arc<Self>, id: &str, commit: F) -> tokio::sync::watch::Receiver<CommitAnswer>
    where
        F: Future<Output = Result<StudyRecord, ApiError>> + Send + 'static,
    {
        let mut running = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(answer) = running.get(id) {
            return answer.clone();
        }
        let (tx, rx) = tokio::sync::watch::channel(None);
        running.insert(id.to_owned(), rx.clone());
        let ended = Ended { commits: self.clone(), id: id.to_owned() };
        tokio::spawn(async move {
            let answer = commit.await;
            tx.send_replace(Some(answer));
            drop(ended);
        });
        rx
    }
}

/// Takes a commit off the running list when its task ends, however it ends.
struct Ended {
    commits: Arc<Commits>,
    id: String,
}

impl Drop for Ended {
    fn drop(&mut self) {
        self.commits.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_holds_at_most_its_share_of_the_export_slots() {
        let slots = Arc::new(ExportSlots::default());
        let mine: Vec<ExportSlot> = (0..MAX_EXPORTS_PER_PROJECT).map(|_| slots.take("a").expect("a slot")).collect();
        let refused = format!("{:?}", slots.take("a").err().expect("a's share is used"));
        assert!(refused.contains("project a has 2 exports"), "{refused}");
        let others: Vec<ExportSlot> =
            (0..MAX_EXPORTS - MAX_EXPORTS_PER_PROJECT).map(|k| slots.take(&format!("p{k}")).expect("another project's slot")).collect();
        assert!(format!("{:?}", slots.take("b").err().expect("every slot is held")).contains("the most at once"));
        drop(mine);
        assert!(slots.take("b").is_ok(), "a's slots came back when its exports ended");
        drop(others);
        assert!(crate::sync::lock(&slots.held).is_empty());
    }
}
