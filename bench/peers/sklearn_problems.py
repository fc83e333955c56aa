"""Class 5: real hyperparameter tuning, as Bayesmark does it — scikit-learn models on
scikit-learn's bundled datasets, each configuration scored by 3-fold cross-validation, minimised.
Classifiers are scored by their cross-validated log loss (Bayesmark's `nll`: smooth, unlike
accuracy's plateaus), regressors by their mean squared error (in the target's units², scaled
by the target's variance so every problem is of order 1).

Each objective is a deterministic function of its configuration (fixed folds, fixed model
seeds), written define-by-run like problems.py, so every optimiser sees the same function. The
optimum is not known: bench/classes.py measures regret against the best value any optimiser
found on the problem in the same run of the suite.

The search spaces follow Bayesmark's (`bayesmark/sklearn_funcs.py`) where it has the model — but
the random forest's minimum split and leaf sizes as counts, and its minimum impurity decrease
below 0.1: Bayesmark's fractions and 0.5 leave a forest of stumps on data this small (every
random configuration scored the constant prediction's log 3 on wine) — with scikit-learn's usual
ranges elsewhere; "which model" spaces nest each model's
parameters under a CATEGORICAL choice of model, as Auto-sklearn's and HEBO's benchmarks do.
"""
import functools
import warnings

import numpy as np
from sklearn import datasets
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import log_loss, mean_squared_error
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeRegressor

FOLDS = 3


# Data sets generated with fixed seeds, beside the bundled ones (heldout.py's tasks use them).
GENERATED = {
    # Friedman's regression problem #1: 5 informative inputs of 10, noise sd 1.
    "friedman1": lambda: datasets.make_friedman1(n_samples=400, n_features=10, noise=1.0, random_state=7),
    # A classification with 6 informative features of 20, 3 classes, 5 % of labels flipped.
    "classification": lambda: datasets.make_classification(
        n_samples=600, n_features=20, n_informative=6, n_redundant=4, n_classes=3, flip_y=0.05, random_state=7),
}


@functools.lru_cache(maxsize=None)
def _data(name):
    if name in GENERATED:
        x, y = GENERATED[name]()
        return x.astype(float), y
    loader = {"breast_cancer": datasets.load_breast_cancer, "wine": datasets.load_wine, "digits": datasets.load_digits,
              "diabetes": datasets.load_diabetes, "iris": datasets.load_iris}[name]
    x, y = loader(return_X_y=True)
    return x.astype(float), y


def _cv_log_loss(model, dataset):
    x, y = _data(dataset)
    labels = np.unique(y)
    losses = []
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(x, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", UserWarning)
            model.fit(x[train], y[train])
            p = model.predict_proba(x[test])
        losses.append(log_loss(y[test], np.clip(p, 1e-15, 1.0), labels=labels))
    return float(np.mean(losses))


def _cv_mse(model, dataset):
    x, y = _data(dataset)
    errors = []
    for train, test in KFold(FOLDS, shuffle=True, random_state=0).split(x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x[train], y[train])
        errors.append(mean_squared_error(y[test], model.predict(x[test])))
    return float(np.mean(errors) / np.var(y))


# -- the models' spaces (define-by-run), each prefixed so several can share one tree ----------

def _svc(t, p=""):
    return make_pipeline(StandardScaler(), SVC(
        C=t.suggest_float(p + "C", 1e-2, 1e3, log=True),
        gamma=t.suggest_float(p + "gamma", 1e-5, 1e1, log=True),
        tol=t.suggest_float(p + "tol", 1e-5, 1e-1, log=True),
        probability=True, random_state=0))


def _random_forest(t, p=""):
    return RandomForestClassifier(
        n_estimators=30,
        max_depth=t.suggest_int(p + "max_depth", 1, 15),
        max_features=t.suggest_float(p + "max_features", 0.05, 1.0),
        min_samples_split=t.suggest_int(p + "min_samples_split", 2, 40, log=True),
        min_samples_leaf=t.suggest_int(p + "min_samples_leaf", 1, 40, log=True),
        min_impurity_decrease=t.suggest_float(p + "min_impurity_decrease", 0.0, 0.1),
        criterion=t.suggest_categorical(p + "criterion", ["gini", "entropy"]),
        random_state=0)


def _logistic(t, p=""):
    # One against the rest, as liblinear fits it (scikit-learn ≥ 1.8 no longer does it itself).
    return make_pipeline(StandardScaler(), OneVsRestClassifier(LogisticRegression(
        C=t.suggest_float(p + "C", 1e-4, 1e4, log=True),
        intercept_scaling=t.suggest_float(p + "intercept_scaling", 1e-2, 1e2, log=True),
        l1_ratio=1.0 if t.suggest_categorical(p + "penalty", ["l1", "l2"]) == "l1" else 0.0,
        class_weight=None if t.suggest_categorical(p + "class_weight", ["none", "balanced"]) == "none" else "balanced",
        solver="liblinear", max_iter=200, random_state=0)))


def _knn(t, p=""):
    return make_pipeline(StandardScaler(), KNeighborsClassifier(
        n_neighbors=t.suggest_int(p + "n_neighbors", 1, 50),
        weights=t.suggest_categorical(p + "weights", ["uniform", "distance"]),
        p=int(t.suggest_categorical(p + "p", ["1", "2"]))))


def _mlp(t, p=""):
    return make_pipeline(StandardScaler(), MLPClassifier(
        hidden_layer_sizes=(t.suggest_int(p + "hidden", 8, 128, log=True),),
        alpha=t.suggest_float(p + "alpha", 1e-5, 1e1, log=True),
        learning_rate_init=t.suggest_float(p + "learning_rate_init", 1e-4, 1e-1, log=True),
        batch_size=t.suggest_int(p + "batch_size", 16, 128, log=True),
        beta_1=t.suggest_float(p + "beta_1", 0.5, 0.99),
        max_iter=40, random_state=0))


def _gradient_boosting(t, p=""):
    return GradientBoostingRegressor(
        learning_rate=t.suggest_float(p + "learning_rate", 1e-3, 1.0, log=True),
        n_estimators=t.suggest_int(p + "n_estimators", 10, 150, log=True),
        max_depth=t.suggest_int(p + "max_depth", 1, 6),
        subsample=t.suggest_float(p + "subsample", 0.3, 1.0),
        min_samples_leaf=t.suggest_int(p + "min_samples_leaf", 1, 50, log=True),
        max_features=t.suggest_float(p + "max_features", 0.1, 1.0),
        random_state=0)


def _svr(t, p=""):
    return make_pipeline(StandardScaler(), SVR(
        C=t.suggest_float(p + "C", 1e-2, 1e4, log=True),
        gamma=t.suggest_float(p + "gamma", 1e-5, 1e1, log=True),
        epsilon=t.suggest_float(p + "epsilon", 1e-3, 1e2, log=True)))


def _ridge(t, p=""):
    return make_pipeline(StandardScaler(), Ridge(alpha=t.suggest_float(p + "alpha", 1e-4, 1e4, log=True)))


def _tree_regressor(t, p=""):
    return DecisionTreeRegressor(
        max_depth=t.suggest_int(p + "max_depth", 1, 15),
        min_samples_split=t.suggest_float(p + "min_samples_split", 0.01, 0.99),
        min_samples_leaf=t.suggest_float(p + "min_samples_leaf", 0.01, 0.49),
        max_features=t.suggest_float(p + "max_features", 0.01, 0.99),
        random_state=0)


def _knn_regressor(t, p=""):
    return make_pipeline(StandardScaler(), KNeighborsRegressor(
        n_neighbors=t.suggest_int(p + "n_neighbors", 1, 50),
        weights=t.suggest_categorical(p + "weights", ["uniform", "distance"])))


CLASSIFIERS = {"svm": _svc, "random_forest": _random_forest, "logistic": _logistic, "knn": _knn}
REGRESSORS = {"svr": _svr, "ridge": _ridge, "tree": _tree_regressor, "knn": _knn_regressor}


def _which(models, score, dataset):
    def objective(t):
        name = t.suggest_categorical("model", sorted(models))
        return score(models[name](t, name + "."), dataset)
    return objective


PROBLEMS = {
    "svm_breast_cancer": lambda t: _cv_log_loss(_svc(t), "breast_cancer"),
    "random_forest_wine": lambda t: _cv_log_loss(_random_forest(t), "wine"),
    "logistic_wine": lambda t: _cv_log_loss(_logistic(t), "wine"),
    "knn_breast_cancer": lambda t: _cv_log_loss(_knn(t), "breast_cancer"),
    "mlp_wine": lambda t: _cv_log_loss(_mlp(t), "wine"),
    "gradient_boosting_diabetes": lambda t: _cv_mse(_gradient_boosting(t), "diabetes"),
    "svr_diabetes": lambda t: _cv_mse(_svr(t), "diabetes"),
    # "Which model and its parameters": a conditional space.
    "which_classifier_breast_cancer": _which(CLASSIFIERS, _cv_log_loss, "breast_cancer"),
    "which_regressor_diabetes": _which(REGRESSORS, _cv_mse, "diabetes"),
}
