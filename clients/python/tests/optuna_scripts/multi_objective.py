"""An Optuna script in the shape of Optuna's own multi-objective example: a network's size and
its error, both minimised, with ``study.best_trials`` the Pareto front. The one line that
differs from an Optuna script is the sampler.

BO_URL names the server."""

import os
import warnings

import optuna
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from bo_client.optuna import BoSampler

X, Y = load_digits(return_X_y=True)
X_TRAIN, X_VALID, Y_TRAIN, Y_VALID = train_test_split(X / 16.0, Y, random_state=0, train_size=600, test_size=400)


def objective(trial: optuna.Trial) -> "tuple[float, int]":
    n_layers = trial.suggest_int("n_layers", 1, 3)
    units = trial.suggest_int("units", 4, 64, log=True)
    alpha = trial.suggest_float("alpha", 1e-6, 1e-1, log=True)
    model = MLPClassifier(hidden_layer_sizes=(units,) * n_layers, alpha=alpha, max_iter=60, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_TRAIN, Y_TRAIN)
    error = 1.0 - model.score(X_VALID, Y_VALID)
    n_params = sum(w.size + b.size for w, b in zip(model.coefs_, model.intercepts_))
    return error, n_params


if __name__ == "__main__":
    study = optuna.create_study(directions=["minimize", "minimize"], study_name="multi-objective", sampler=BoSampler(url=os.environ["BO_URL"]))
    study.optimize(objective, n_trials=16, timeout=300)
    front = sorted((int(t.values[1]), round(t.values[0], 3)) for t in study.best_trials)
    print(f"{len(study.best_trials)} trials on the front of {len(study.trials)}: (parameters, error) {front}")
