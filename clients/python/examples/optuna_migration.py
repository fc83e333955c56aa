"""An Optuna script moved to bo by changing one line: the sampler (and, to prune with bo's
stopping rule, the pruner). The objective is Optuna's define-by-run code, unchanged: its
conditional parameter (``l1_ratio``, asked only for the elastic net) is placed under its branch
as the bo study's space grows.

    pip install ./clients/python optuna scikit-learn
    python clients/python/examples/optuna_migration.py --url http://127.0.0.1:8080
"""

import argparse

import optuna
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split

from bo_client.optuna import BoPruner, BoSampler

X, Y = load_breast_cancer(return_X_y=True)
X_TRAIN, X_VALID, Y_TRAIN, Y_VALID = train_test_split(X / X.max(axis=0), Y, random_state=0)


def objective(trial: optuna.Trial) -> float:
    alpha = trial.suggest_float("alpha", 1e-6, 1e-1, log=True)
    loss = trial.suggest_categorical("loss", ["hinge", "log_loss", "modified_huber"])
    penalty = trial.suggest_categorical("penalty", ["l2", "l1", "elasticnet"])
    l1_ratio = trial.suggest_float("l1_ratio", 0.05, 0.95) if penalty == "elasticnet" else 0.15
    clf = SGDClassifier(alpha=alpha, loss=loss, penalty=penalty, l1_ratio=l1_ratio, random_state=0)
    accuracy = 0.0
    for step in range(20):
        clf.partial_fit(X_TRAIN, Y_TRAIN, classes=[0, 1])
        accuracy = clf.score(X_VALID, Y_VALID)
        trial.report(accuracy, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--n-trials", type=int, default=30)
    args = parser.parse_args()

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Was: optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner())
    sampler = BoSampler(url=args.url)
    study = optuna.create_study(study_name="optuna-migration", direction="maximize", sampler=sampler, pruner=BoPruner())
    study.optimize(objective, n_trials=args.n_trials, n_jobs=2)
    pruned = sum(t.state == optuna.trial.TrialState.PRUNED for t in study.trials)
    print(f"best {study.best_params}: accuracy {study.best_value:.3f}; {pruned} of {len(study.trials)} trials pruned")
    bo_study = sampler.study
    assert bo_study is not None
    # Where the bo study placed the conditional parameter, as its space grew.
    under = [
        f"{p['parameterId']}={c['parentCategoricalValues']['values']}"
        for p in bo_study.refresh().spec["parameters"]
        for c in p.get("conditionalParameterSpecs", [])
        if c["parameterSpec"]["parameterId"] == "l1_ratio"
    ]
    print(f"bo study {bo_study.display_name}: l1_ratio under {under or 'the root'}")


if __name__ == "__main__":
    main()
