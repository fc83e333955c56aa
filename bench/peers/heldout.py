"""The held-out suite: problems no default of bo was chosen on, for judging whether a lead
generalises (issue: "a lead that holds on problems nobody tuned for").

Three kinds, each written define-by-run like problems.py (minimised, Optuna's `suggest_*`):

- **BBOB** (`bbob_f{F}_d{D}_i{I}`, e.g. `bbob_f15_d10_i2`): the 24 noiseless functions of COCO's
  `bbob` suite through `cocoex` (generated in code: rotated, ill-conditioned, multimodal; the
  box [-5, 5]^D; optimum `BareProblem.best_value()`).
- **Mixed-integer BBOB** (`mixint_f{F}_d{D}_i{I}`): COCO's `bbob-mixint` suite through `cocoex`
  (Tušar et al. 2019): the 24 functions with the first 80 % of the variables INTEGER, of 2, 4, 8
  and 16 values in turn (D = 5: 1,024 cells and one real in [-5, 5]). COCO rounds an integer
  variable itself and does not expose the optimum of a mixed-integer instance (it is not the
  `bbob` instance's), so, as for the real tuning tasks, `optimum` is null and regret is measured
  from the best value any optimiser found.
- **Low effective dimension, axis-aligned and rotated** (D = 25–100): a function of a few
  coordinates (`axis_*`) or of a few directions of a random rotation (`rotated_*`, an orthogonal
  matrix drawn with a fixed seed by numpy's QR), the rest of the inputs ignored. The rotated
  image is clipped to the function's box; the optimum stays reachable (its preimage of least
  norm lies inside the box), so the optimum is the function's own.
- **Real tuning tasks** (16, 5 conditional): scikit-learn models of seven families on bundled
  data sets and on two generated with fixed seeds (sklearn_problems.GENERATED), scored by
  3-fold cross-validation with the fold noise left in; none of them is in class 5. The optimum
  is not known: regret is measured from the best value any optimiser found (bench/classes.py).

Evaluations of the real tasks are cached by configuration in `target/peers/heldout-cache.sqlite`
(a problem and its parameters, rounded to 12 significant digits), so a seed that repeats a
configuration — random search's, an initial design's — costs nothing the second time.

HALVES splits every class into a tuning half (defaults may be chosen on it) and a validation half
(reported on its own; a default is adopted only if it does not lose there). The split was drawn
once — `random.Random(20261128).shuffle` of each class's sorted names, the first half tuning —
and is written out below so it never moves.
"""
import functools
import json
import math
import os
import sqlite3
import threading
import warnings

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.decomposition import PCA
from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier, HistGradientBoostingClassifier,
                              HistGradientBoostingRegressor, RandomForestClassifier)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, LogisticRegression, Ridge, SGDClassifier
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, QuantileTransformer, StandardScaler
from sklearn.svm import SVC, SVR

import problems
from sklearn_problems import FOLDS, _cv_log_loss, _cv_mse, _data

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "target", "peers", "heldout-cache.sqlite")


# -- BBOB -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _bbob(function, dimension, instance):
    import cocoex
    return cocoex.BareProblem("bbob", function, dimension, instance)


def bbob(function, dimension, instance):
    """(objective, optimum) of BBOB function `function` (1–24) in `dimension` dimensions."""
    fn = _bbob(function, dimension, instance)

    def objective(t):
        return float(fn(np.array([t.suggest_float(f"x{k}", -5.0, 5.0) for k in range(dimension)])))
    return objective, float(fn.best_value())


@functools.lru_cache(maxsize=None)
def _mixint(function, dimension, instance):
    import cocoex
    suite = cocoex.Suite("bbob-mixint", "", f"function_indices:{function} dimensions:{dimension} instance_indices:{instance}")
    # The suite is kept with its problem: the problem is freed with it.
    return suite, next(iter(suite))


def mixint(function, dimension, instance):
    """(objective, None) of `bbob-mixint` function `function` in `dimension` dimensions: its
    integer variables asked for as integers, the rest as floats, each in COCO's bounds."""
    _, fn = _mixint(function, dimension, instance)
    lower, upper, integers = list(fn.lower_bounds), list(fn.upper_bounds), fn.number_of_integer_variables

    def objective(t):
        x = [t.suggest_int(f"x{k}", int(lower[k]), int(upper[k])) if k < integers else t.suggest_float(f"x{k}", lower[k], upper[k])
             for k in range(dimension)]
        return float(fn(np.array(x, dtype=float)))
    return objective, None


def parse_bbob(name):
    """(function, dimension, instance) of `bbob_f15_d10_i2` (or `mixint_f15_d10_i2`), or None."""
    parts = name.split("_")
    if len(parts) != 4 or parts[0] not in ("bbob", "mixint") or [p[0] for p in parts[1:]] != ["f", "d", "i"]:
        return None
    try:
        f, d, i = (int(p[1:]) for p in parts[1:])
    except ValueError:
        return None
    return (f, d, i) if 1 <= f <= 24 and 2 <= d <= 200 and i >= 1 else None


# -- low effective dimension ------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _rotation(d, seed):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return q * np.sign(np.diag(r))  # Haar-distributed


def _levy_of(x):
    w = [1 + (v - 1) / 4 for v in x]
    head = math.sin(math.pi * w[0]) ** 2
    tail = (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
    return head + sum((wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2) for wi in w[:-1]) + tail


# name: (function of the effective vector, its box (lo, hi), effective dimension, optimum)
_EFFECTIVE = {
    "hartmann6": (problems.hartmann6_of, (0.0, 1.0), 6, -3.32237),
    "levy4": (_levy_of, (-10.0, 10.0), 4, 0.0),
    "styblinski5": (problems.styblinski_of, (-5.0, 5.0), 5, -39.16617 * 5),
    "rosenbrock4": (problems.rosenbrock_of, (-2.0, 2.0), 4, 0.0),
}


def embedded(kind, effective, d, seed=11):
    """`effective` (a key of _EFFECTIVE) hidden in `d` inputs on the same box: `axis` reads the
    effective coordinates at positions drawn with `seed`; `rotated` reads the first rows of a
    random rotation applied to the inputs (centred on the box's centre)."""
    fn, (lo, hi), k, optimum = _EFFECTIVE[effective]
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    if kind == "axis":
        where = sorted(np.random.default_rng(seed).choice(d, size=k, replace=False).tolist())

        def objective(t):
            x = [t.suggest_float(f"x{j}", lo, hi) for j in range(d)]
            return fn([x[j] for j in where])
    else:
        rows = _rotation(d, seed)[:k]

        def objective(t):
            u = np.array([(t.suggest_float(f"x{j}", lo, hi) - centre) / half for j in range(d)])
            z = np.clip(rows @ u, -1.0, 1.0)
            return float(fn([centre + half * float(v) for v in z]))
    return objective, optimum


EMBEDDED = {
    "axis_levy4_d40": ("axis", "levy4", 40),
    "axis_hartmann6_d60": ("axis", "hartmann6", 60),
    "axis_styblinski5_d25": ("axis", "styblinski5", 25),
    "rotated_hartmann6_d50": ("rotated", "hartmann6", 50),
    "rotated_levy4_d25": ("rotated", "levy4", 25),
    "rotated_rosenbrock4_d100": ("rotated", "rosenbrock4", 100),
    "rotated_styblinski5_d40": ("rotated", "styblinski5", 40),
}


# -- real tuning tasks ------------------------------------------------------------------------

def _cv_error(model, dataset):
    """Misclassification rate by stratified 3-fold cross-validation (for models without
    probabilities worth their cost)."""
    x, y = _data(dataset)
    errors = []
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(x, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x[train], y[train])
        errors.append(float(np.mean(model.predict(x[test]) != y[test])))
    return float(np.mean(errors))


def _hist_gb(t, p="", regressor=False):
    kind = HistGradientBoostingRegressor if regressor else HistGradientBoostingClassifier
    return kind(
        learning_rate=t.suggest_float(p + "learning_rate", 1e-3, 1.0, log=True),
        max_iter=t.suggest_int(p + "max_iter", 10, 200, log=True),
        max_leaf_nodes=t.suggest_int(p + "max_leaf_nodes", 4, 64, log=True),
        min_samples_leaf=t.suggest_int(p + "min_samples_leaf", 2, 64, log=True),
        l2_regularization=t.suggest_float(p + "l2_regularization", 1e-6, 10.0, log=True),
        max_features=t.suggest_float(p + "max_features", 0.2, 1.0),
        early_stopping=False, random_state=0)


def _forest_digits(t):
    return RandomForestClassifier(
        n_estimators=30,
        max_depth=t.suggest_int("max_depth", 2, 30),
        max_features=t.suggest_float("max_features", 0.02, 0.5),
        min_samples_leaf=t.suggest_int("min_samples_leaf", 1, 32, log=True),
        bootstrap=t.suggest_categorical("bootstrap", ["yes", "no"]) == "yes",
        criterion=t.suggest_categorical("criterion", ["gini", "entropy", "log_loss"]),
        random_state=0)


def _svc(t, p=""):
    return make_pipeline(StandardScaler(), SVC(
        C=t.suggest_float(p + "C", 1e-3, 1e3, log=True),
        gamma=t.suggest_float(p + "gamma", 1e-5, 1.0, log=True),
        random_state=0))


def _calibrated(svc):
    """An SVC with probabilities (Platt scaling by internal CV: what `probability=True` did
    before scikit-learn 1.9 deprecated it)."""
    return CalibratedClassifierCV(svc, ensemble=False)


def _elastic_net(t):
    return make_pipeline(
        PolynomialFeatures(degree=t.suggest_int("degree", 1, 3), include_bias=False), StandardScaler(),
        ElasticNet(alpha=t.suggest_float("alpha", 1e-5, 10.0, log=True), l1_ratio=t.suggest_float("l1_ratio", 0.0, 1.0),
                   max_iter=2000))


def _knn(t, p=""):
    return make_pipeline(StandardScaler(), KNeighborsClassifier(
        n_neighbors=t.suggest_int(p + "n_neighbors", 1, 60, log=True),
        weights=t.suggest_categorical(p + "weights", ["uniform", "distance"]),
        p=t.suggest_float(p + "minkowski_p", 1.0, 3.0)))


def _mlp2(t, p=""):
    return make_pipeline(StandardScaler(), MLPClassifier(
        hidden_layer_sizes=(t.suggest_int(p + "units_1", 4, 128, log=True), t.suggest_int(p + "units_2", 4, 128, log=True)),
        alpha=t.suggest_float(p + "alpha", 1e-6, 1.0, log=True),
        learning_rate_init=t.suggest_float(p + "learning_rate_init", 1e-4, 1e-1, log=True),
        batch_size=t.suggest_int(p + "batch_size", 16, 256, log=True),
        max_iter=30, random_state=0))


def _sgd(t):
    schedule = t.suggest_categorical("learning_rate", ["optimal", "adaptive"])
    penalty = t.suggest_categorical("penalty", ["l2", "l1", "elasticnet"])
    return make_pipeline(StandardScaler(), SGDClassifier(
        loss=t.suggest_categorical("loss", ["log_loss", "modified_huber"]),
        penalty=penalty,
        alpha=t.suggest_float("alpha", 1e-7, 1e-1, log=True),
        l1_ratio=t.suggest_float("l1_ratio", 0.0, 1.0) if penalty == "elasticnet" else 0.15,
        learning_rate=schedule,
        eta0=t.suggest_float("eta0", 1e-4, 1.0, log=True) if schedule == "adaptive" else 0.01,
        max_iter=50, tol=None, random_state=0))


def _extra_trees(t):
    return ExtraTreesClassifier(
        n_estimators=30,
        max_depth=t.suggest_int("max_depth", 1, 25),
        max_features=t.suggest_float("max_features", 0.05, 1.0),
        min_samples_split=t.suggest_int("min_samples_split", 2, 32, log=True),
        min_samples_leaf=t.suggest_int("min_samples_leaf", 1, 32, log=True),
        random_state=0)


def _logistic(t, p=""):
    return make_pipeline(StandardScaler(), LogisticRegression(
        C=t.suggest_float(p + "C", 1e-4, 1e3, log=True),
        fit_intercept=t.suggest_categorical(p + "fit_intercept", ["yes", "no"]) == "yes",
        max_iter=300))


def _gradient_boosting(t):
    return GradientBoostingClassifier(
        learning_rate=t.suggest_float("learning_rate", 1e-3, 1.0, log=True),
        n_estimators=t.suggest_int("n_estimators", 10, 120, log=True),
        max_depth=t.suggest_int("max_depth", 1, 5),
        subsample=t.suggest_float("subsample", 0.3, 1.0),
        random_state=0)


def _svr(t, p=""):
    return make_pipeline(StandardScaler(), SVR(
        C=t.suggest_float(p + "C", 1e-2, 1e3, log=True),
        gamma=t.suggest_float(p + "gamma", 1e-4, 10.0, log=True),
        epsilon=t.suggest_float(p + "epsilon", 1e-3, 10.0, log=True)))


def _pipeline_wine(t):
    """Preprocessing choice × classifier choice, each with its own parameters."""
    prep = t.suggest_categorical("preprocessing", ["none", "standard", "quantile", "pca"])
    steps = {"none": [], "standard": [StandardScaler()],
             "quantile": [QuantileTransformer(n_quantiles=t.suggest_int("quantile.n_quantiles", 10, 100, log=True)
                                              if prep == "quantile" else 10)],
             "pca": [StandardScaler(), PCA(n_components=t.suggest_int("pca.n_components", 2, 13) if prep == "pca" else 2)]}[prep]
    name = t.suggest_categorical("classifier", ["logistic", "svc", "knn"])
    if name == "logistic":
        model = LogisticRegression(C=t.suggest_float("logistic.C", 1e-4, 1e3, log=True), max_iter=500)
    elif name == "svc":
        model = _calibrated(SVC(C=t.suggest_float("svc.C", 1e-3, 1e3, log=True),
                                gamma=t.suggest_float("svc.gamma", 1e-5, 1.0, log=True), random_state=0))
    else:
        model = KNeighborsClassifier(n_neighbors=t.suggest_int("knn.n_neighbors", 1, 40, log=True),
                                     weights=t.suggest_categorical("knn.weights", ["uniform", "distance"]))
    return make_pipeline(*steps, model)


def _svm_kernels(t):
    """An SVM's kernel and its own parameters, after an optional PCA."""
    steps = [StandardScaler()]
    if t.suggest_categorical("pca", ["no", "yes"]) == "yes":
        steps.append(PCA(n_components=t.suggest_int("pca.n_components", 2, 30)))
    kernel = t.suggest_categorical("kernel", ["linear", "rbf", "poly", "sigmoid"])
    args = {"C": t.suggest_float("C", 1e-3, 1e3, log=True)}
    if kernel != "linear":
        args["gamma"] = t.suggest_float(kernel + ".gamma", 1e-5, 1.0, log=True)
    if kernel == "poly":
        args["degree"] = t.suggest_int("poly.degree", 2, 5)
    if kernel in ("poly", "sigmoid"):
        args["coef0"] = t.suggest_float(kernel + ".coef0", -1.0, 1.0)
    return make_pipeline(*steps, _calibrated(SVC(kernel=kernel, random_state=0, max_iter=20000, **args)))


def _which_digits(t):
    """Five model families, each with its parameters (scored by error: SVC without probabilities)."""
    name = t.suggest_categorical("model", ["svc", "random_forest", "logistic", "knn", "mlp"])
    p = name + "."
    if name == "svc":
        return _svc(t, p)
    if name == "random_forest":
        return RandomForestClassifier(n_estimators=30, max_depth=t.suggest_int(p + "max_depth", 2, 30),
                                      max_features=t.suggest_float(p + "max_features", 0.02, 0.5), random_state=0)
    if name == "logistic":
        return _logistic(t, p)
    if name == "knn":
        return _knn(t, p)
    return _mlp2(t, p)


def _which_regressor(t):
    name = t.suggest_categorical("model", ["svr", "hist_gb", "ridge", "knn"])
    p = name + "."
    if name == "svr":
        return _svr(t, p)
    if name == "hist_gb":
        return _hist_gb(t, p, regressor=True)
    if name == "ridge":
        return make_pipeline(PolynomialFeatures(degree=t.suggest_int(p + "degree", 1, 3), include_bias=False), StandardScaler(),
                             Ridge(alpha=t.suggest_float(p + "alpha", 1e-4, 1e4, log=True)))
    return make_pipeline(StandardScaler(), KNeighborsRegressor(n_neighbors=t.suggest_int(p + "n_neighbors", 1, 50, log=True),
                                                               weights=t.suggest_categorical(p + "weights", ["uniform", "distance"])))


# name: (the model, built from the trial's answers; how it is scored; on which data)
TASKS = {
    "hist_gb_breast_cancer": (_hist_gb, _cv_log_loss, "breast_cancer"),
    "random_forest_digits": (_forest_digits, _cv_log_loss, "digits"),
    "svm_digits": (_svc, _cv_error, "digits"),
    "elastic_net_friedman1": (_elastic_net, _cv_mse, "friedman1"),
    "knn_wine": (_knn, _cv_log_loss, "wine"),
    "mlp_breast_cancer": (_mlp2, _cv_log_loss, "breast_cancer"),
    "extra_trees_classification": (_extra_trees, _cv_log_loss, "classification"),
    "logistic_digits": (_logistic, _cv_log_loss, "digits"),
    "gradient_boosting_wine": (_gradient_boosting, _cv_log_loss, "wine"),
    "svr_friedman1": (_svr, _cv_mse, "friedman1"),
    "hist_gb_friedman1": (lambda t: _hist_gb(t, regressor=True), _cv_mse, "friedman1"),
    # Conditional: a parameter exists only on the branch that uses it.
    "sgd_classification": (_sgd, _cv_log_loss, "classification"),
    "pipeline_wine": (_pipeline_wine, _cv_log_loss, "wine"),
    "svm_kernels_breast_cancer": (_svm_kernels, _cv_log_loss, "breast_cancer"),
    "which_classifier_digits": (_which_digits, _cv_error, "digits"),
    "which_regressor_friedman1": (_which_regressor, _cv_mse, "friedman1"),
}
CONDITIONAL = ["sgd_classification", "pipeline_wine", "svm_kernels_breast_cancer", "which_classifier_digits",
               "which_regressor_friedman1"]


class _Recorder:
    """A trial that passes each question to the optimiser's trial and keeps the answer."""

    def __init__(self, inner):
        self.inner, self.params = inner, {}

    def _keep(self, name, value):
        self.params[name] = value
        return value

    def suggest_float(self, name, low, high, **kw):
        return self._keep(name, self.inner.suggest_float(name, low, high, **kw))

    def suggest_int(self, name, low, high, **kw):
        return self._keep(name, self.inner.suggest_int(name, low, high, **kw))

    def suggest_categorical(self, name, choices):
        return self._keep(name, self.inner.suggest_categorical(name, choices))


_lock = threading.Lock()


def _key(problem, params):
    def rounded(v):
        return float(f"{v:.12g}") if isinstance(v, float) else v
    return problem + " " + json.dumps({k: rounded(v) for k, v in params.items()}, sort_keys=True)


def _lookup(key):
    with _lock:
        os.makedirs(os.path.dirname(CACHE), exist_ok=True)
        with sqlite3.connect(CACHE) as db:
            db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, value REAL)")
            row = db.execute("SELECT value FROM v WHERE k = ?", (key,)).fetchone()
    return None if row is None else row[0]


def _store(key, value):
    with _lock, sqlite3.connect(CACHE) as db:
        db.execute("INSERT OR REPLACE INTO v VALUES (?, ?)", (key, value))


def task(name):
    """The objective of the real tuning task `name`: the model is built from the trial's answers,
    and scored unless its configuration's value is in the cache."""
    build, score, dataset = TASKS[name]

    def objective(t):
        recorder = _Recorder(t)
        model = build(recorder)
        key = _key(name, recorder.params)
        value = _lookup(key)
        if value is None:
            value = score(model, dataset)
            _store(key, value)
        return value
    return objective


# -- the suite and its halves -----------------------------------------------------------------

BBOB_FUNCTIONS = list(range(1, 25))
CLASSES = {
    "bbob d5": [f"bbob_f{f:02d}_d5_i1" for f in BBOB_FUNCTIONS],
    "bbob d10": [f"bbob_f{f:02d}_d10_i1" for f in BBOB_FUNCTIONS],
    "mixint d5": [f"mixint_f{f:02d}_d5_i1" for f in BBOB_FUNCTIONS],
    "mixint d10": [f"mixint_f{f:02d}_d10_i1" for f in BBOB_FUNCTIONS],
    "low effective dimension": sorted(EMBEDDED),
    "real tuning": sorted(TASKS),
}


def problem(name):
    """(objective, optimum or None) of a held-out problem, or None if `name` is not one."""
    parsed = parse_bbob(name)
    if parsed is not None:
        return mixint(*parsed) if name.startswith("mixint_") else bbob(*parsed)
    if name in EMBEDDED:
        return embedded(*EMBEDDED[name])
    if name in TASKS:
        return task(name), None
    return None

# Drawn once (see the module docs); BBOB's by function, the same for every dimension.
BBOB_TUNING = [3, 5, 7, 9, 10, 11, 14, 16, 19, 21, 22, 24]
HALVES = {
    "low effective dimension": (["axis_levy4_d40", "axis_styblinski5_d25", "rotated_levy4_d25", "rotated_styblinski5_d40"],
                                ["axis_hartmann6_d60", "rotated_hartmann6_d50", "rotated_rosenbrock4_d100"]),
    "real tuning": (["gradient_boosting_wine", "hist_gb_breast_cancer", "hist_gb_friedman1", "knn_wine", "mlp_breast_cancer",
                     "pipeline_wine", "sgd_classification", "svr_friedman1"],
                    ["elastic_net_friedman1", "extra_trees_classification", "logistic_digits", "random_forest_digits",
                     "svm_digits", "svm_kernels_breast_cancer", "which_classifier_digits", "which_regressor_friedman1"]),
}
for _cls in ("bbob d5", "bbob d10", "mixint d5", "mixint d10"):
    _tuning = [n for n in CLASSES[_cls] if parse_bbob(n)[0] in BBOB_TUNING]
    HALVES[_cls] = (_tuning, [n for n in CLASSES[_cls] if n not in _tuning])


def half(name):
    """"tuning" or "validation": the half of its class `name` is in."""
    for tuning, validation in HALVES.values():
        if name in tuning:
            return "tuning"
        if name in validation:
            return "validation"
    raise KeyError(name)
