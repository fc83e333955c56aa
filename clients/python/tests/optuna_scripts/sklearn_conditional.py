"""An Optuna script in the shape of Optuna's own scikit-learn example: a define-by-run objective
that chooses a classifier and then that classifier's parameters (a conditional space), scored by
cross-validation. The one line that differs from an Optuna script is the sampler.

BO_URL names the server."""

import os

import optuna
import sklearn.datasets
import sklearn.ensemble
import sklearn.model_selection
import sklearn.svm

from bo_client.optuna import BoSampler


def objective(trial: optuna.Trial) -> float:
    x, y = sklearn.datasets.load_iris(return_X_y=True)
    classifier_name = trial.suggest_categorical("classifier", ["SVC", "RandomForest"])
    if classifier_name == "SVC":
        svc_c = trial.suggest_float("svc_c", 1e-10, 1e10, log=True)
        classifier_obj = sklearn.svm.SVC(C=svc_c, gamma="auto")
    else:
        rf_max_depth = trial.suggest_int("rf_max_depth", 2, 32, log=True)
        classifier_obj = sklearn.ensemble.RandomForestClassifier(max_depth=rf_max_depth, n_estimators=10)
    score = sklearn.model_selection.cross_val_score(classifier_obj, x, y, n_jobs=1, cv=3)
    return score.mean()


if __name__ == "__main__":
    study = optuna.create_study(direction="maximize", study_name="sklearn-conditional", sampler=BoSampler(url=os.environ["BO_URL"]))
    study.optimize(objective, n_trials=16)
    print(f"best {study.best_trial.params}: accuracy {study.best_value:.3f} after {len(study.trials)} trials")
