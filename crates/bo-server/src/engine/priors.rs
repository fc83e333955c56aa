//! Transfer learning's service half. At creation: which studies a new study stands on — those
//! its `algorithmConfig.priorStudies` names, each checked (in the caller's project, the same
//! parameters and objective, enough trials), or else, unless `disableTransferLearning`, the
//! [`AUTOMATIC_PRIORS`] most recent COMPLETED studies of its location that fit it (Vertex's
//! "previously completed studies"). At each fit: their trials completed before the study was
//! created, so what a study stands on never moves under it. The stack itself is bo-core's
//! (`designer::transfer`); nothing here fits.

use bo_core::designer::designer_for;
use bo_core::designer::gp::priors::{self, MAX_PRIOR_TRIALS, MIN_PRIOR_TRIALS, PriorStudy};
use bo_core::{ConfigError, Observation, StudySpec};
use bo_store::{Store, StoreError, StudyRecord};

use super::EngineError;

/// The most prior studies the service chooses for a study by itself.
pub const AUTOMATIC_PRIORS: usize = 3;

/// COMPLETED studies looked at when choosing.
const CANDIDATES: i64 = 50;

/// Where the client names prior studies.
const FIELD: &str = "priorStudies";

/// The project, location and number of a study's resource name.
fn parse_name(name: &str) -> Option<(&str, &str, i64)> {
    let rest = name.strip_prefix("projects/")?;
    let (project, rest) = rest.split_once("/locations/")?;
    let (location, number) = rest.split_once("/studies/")?;
    // Digits only, without a sign or leading zeros: the form a study's name has (`+5` or `05`
    // would name study 5 under another spelling).
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) || number.starts_with('0') {
        return None;
    }
    let number = number.parse().ok()?;
    (!project.is_empty() && !location.is_empty() && !project.contains('/') && !location.contains('/'))
        .then_some((project, location, number))
}

/// The resource name of `study`.
fn name_of(study: &StudyRecord) -> String {
    format!("projects/{}/locations/{}/studies/{}", study.project, study.location, study.number)
}

/// Fills `spec.transfer.priors` for a study about to be created in `project`/`location` at
/// `now_ms`: the named priors checked (a refusal names `algorithmConfig.priorStudies[i]`), else
/// the ones chosen. A designer that cannot stand on priors is refused when they are named, and
/// given none otherwise.
pub async fn choose_priors(store: &Store, project: &str, location: &str, spec: &mut StudySpec, now_ms: i64) -> Result<(), EngineError> {
    let invalid = |field: String, reason: String| EngineError::Config(ConfigError::Invalid { field, reason });
    if spec.open_space {
        // A prior study's space is fixed and the stack needs the same parameters: an open
        // study's space grows away from it.
        if spec.transfer.explicit {
            return Err(invalid(FIELD.into(), "an open search space grows as trials ask; it cannot stand on prior studies".into()));
        }
        return Ok(());
    }
    let takes = designer_for(spec)?.takes_priors();
    if spec.transfer.explicit {
        if !takes {
            return Err(invalid(
                FIELD.into(),
                format!(
                    "{} with {} cannot stand on prior studies; GP_BANDIT, BRANCHING_NESTED and AUTO over a space without conditions can, for a study of one metric",
                    spec.algorithm,
                    if spec.metrics.len() > 1 { "several metrics" } else { "this space" }
                ),
            ));
        }
        for (i, name) in spec.transfer.priors.iter().enumerate() {
            let field = format!("{FIELD}[{i}]");
            let shown = format!("{name:?}");
            let Some((p, l, number)) = parse_name(name) else {
                return Err(invalid(field, format!("{shown} is not a study name (projects/…/locations/…/studies/…)")));
            };
            // Another project's studies are as absent as missing ones.
            let prior = match store.get_study(project, l, number).await {
                Ok(s) if p == project => s,
                Ok(_) | Err(StoreError::NotFound(_)) => return Err(invalid(field, format!("no study {shown} in project {project:?}"))),
                Err(e) => return Err(e.into()),
            };
            priors::compatible(spec, &prior.spec).map_err(|why| invalid(field.clone(), format!("{shown}: {why}")))?;
            let n = store.measured_before(prior.id, now_ms).await?;
            if n < MIN_PRIOR_TRIALS as i64 {
                return Err(invalid(
                    field,
                    format!("{shown} has {n} trials that measured its objective; a prior study needs {MIN_PRIOR_TRIALS}"),
                ));
            }
        }
        return Ok(());
    }
    spec.transfer.priors.clear();
    if spec.transfer.disabled || !takes {
        return Ok(());
    }
    let mut chosen = Vec::new();
    for candidate in store.completed_studies(project, location, CANDIDATES).await? {
        if chosen.len() == AUTOMATIC_PRIORS {
            break;
        }
        if priors::compatible(spec, &candidate.spec).is_ok()
            && store.measured_before(candidate.id, now_ms).await? >= MIN_PRIOR_TRIALS as i64
        {
            chosen.push(name_of(&candidate));
        }
    }
    // The oldest at the base of the stack, the most recent just under the study.
    chosen.reverse();
    spec.transfer.priors = chosen;
    Ok(())
}

/// The prior studies `study` stands on, with their trials completed before it was created; a
/// prior deleted since is left out (logged).
pub(crate) async fn load_priors(store: &Store, study: &StudyRecord) -> Result<Vec<PriorStudy>, EngineError> {
    let mut priors = Vec::with_capacity(study.spec.transfer.priors.len());
    for name in &study.spec.transfer.priors {
        let Some((project, location, number)) = parse_name(name) else { continue };
        let prior = match store.get_study(project, location, number).await {
            Ok(s) => s,
            Err(StoreError::NotFound(_)) => {
                tracing::debug!(study = study.id, prior = %name, "a prior study was deleted; the study no longer stands on it");
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // A study imported from another database may name a study here that is another one.
        if let Err(why) = priors::compatible(&study.spec, &prior.spec) {
            tracing::debug!(study = study.id, prior = %name, %why, "a prior study no longer fits; left out");
            continue;
        }
        let trials = store.trials_completed_before(prior.id, study.create_time_ms, MAX_PRIOR_TRIALS as i64).await?;
        priors.push(PriorStudy { name: name.clone(), history: trials.iter().filter_map(Observation::from_trial).collect() });
    }
    Ok(priors)
}

#[cfg(test)]
mod tests {
    use super::parse_name;

    #[test]
    fn study_names_are_parsed_strictly() {
        assert_eq!(parse_name("projects/p/locations/us-central1/studies/12"), Some(("p", "us-central1", 12)));
        for bad in [
            "projects/p/locations/l/studies/0",
            "projects/p/locations/l/studies/x",
            "projects/p/locations/l/studies/+5",
            "projects/p/locations/l/studies/05",
            "projects/p/locations/l/studies/-1",
            "projects/p/locations/l/studies/99999999999999999999",
            "projects//locations/l/studies/1",
            "p/l/1",
            "projects/p/locations/l/studies/1/trials/2",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }
}
