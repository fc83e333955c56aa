//! Pending suggest operations: a suggest that outlived the server's wait answered with one
//! (`done: false`); a background task finishes it — the same suggest loop, computing first —
//! and marks it failed if the designer fails. A server that stopped first finishes them at
//! start-up ([`Engine::resume_pending`]).

use bo_store::{Operation, OperationKind, StoreError, StudyRecord};

use super::suggest::{Ask, Compute, Ended};
use super::{Engine, EngineError};

impl Engine {
    /// Finishes a pending suggest operation in the background: awaits `task` (or computes
    /// anew), hands the trials out, and on failure marks the operation failed. A stopping engine
    /// starts none, and one that the shutdown interrupts leaves its operation pending: the next
    /// start finishes it.
    pub(super) fn spawn_finisher(&self, study: StudyRecord, op: Operation, task: Option<Compute>) {
        let Some(running) = self.background_task() else { return };
        let engine = self.clone();
        tokio::spawn(async move {
            let _running = running;
            let result = engine.finish(&study, &op, task).await;
            if let Err(e) = &result
                && engine.stopping()
            {
                tracing::info!(study = study.id, operation = op.id, error = %e, "a pending suggest was interrupted by the shutdown; the next start finishes it");
            } else if let Err(e) = result {
                tracing::warn!(study = study.id, operation = op.id, error = %e, "a pending suggest failed");
                if let Err(e) =
                    engine.inner.store.fail_operation(study.id, op.id, &format!("the designer failed: {e}"), crate::clock::now_ms()).await
                {
                    tracing::warn!(study = study.id, operation = op.id, error = %e, "could not record the failure");
                }
            }
        });
    }

    async fn finish(&self, study: &StudyRecord, op: &Operation, task: Option<Compute>) -> Result<(), EngineError> {
        let OperationKind::Suggest { client_id, .. } = &op.kind else { return Ok(()) };
        let count = op.suggestion_count.max(1) as usize;
        let ask = Ask { study, client_id, count, api_version: &op.api_version, labels: &op.labels, finishing: Some(op.id) };
        match self.suggest_loop(ask, task, None).await? {
            Ended::Done { .. } => tracing::info!(study = study.id, operation = op.id, "pending suggest finished"),
            Ended::Waiting(_) => {} // finished elsewhere
            Ended::TimedOut(_) => unreachable!("finishing waits without a deadline"),
        }
        Ok(())
    }

    /// Finishes the suggest operations a stopped server left pending. Call once at start-up.
    pub async fn resume_pending(&self) -> Result<usize, EngineError> {
        let pending = self.inner.store.pending_operations().await?;
        let mut resumed = 0;
        for op in pending {
            match self.inner.store.study_by_id(op.study_id).await {
                Ok(study) => {
                    self.spawn_finisher(study, op, None);
                    resumed += 1;
                }
                Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(resumed)
    }
}
