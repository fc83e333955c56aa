"""Learning curves from real training on this machine, for the multi-fidelity comparisons
(issue 45): scikit-learn models trained step by step on data that ship with scikit-learn or are
generated with a fixed seed, each step's validation error recorded.

    python bench/peers/real_curves.py warm --problem mlp_digits --configs 20   # fill the cache
    python bench/peers/real_curves.py show --problem sgd_classify             # one random curve
    python bench/peers/real_curves.py export --problem hgb_classify --configs 150 --out hgb.json

``export`` writes the problem's space and ``configs`` random configurations' curves (trained or
read from the cache) as one file, the form ``bo-bench curve-predictions --real`` reads.

A problem is a search space (the same for every optimiser: ``space()`` gives the parameters in
one neutral form that the bo and Optuna drivers translate) and ``curve(config)``: the whole
curve, validation error at each step 1..``steps``, lower is better. Training is deterministic
(the model's seed is the problem's), so a configuration has one curve, and curves are cached on
disk by problem and configuration (``target/real-curves/``, or ``BO_CURVE_CACHE``): a run asks
for each configuration's whole curve once and shows the optimiser only the steps it pays for.

- ``mlp_digits``: ``MLPClassifier`` (SGD with momentum) on the 8×8 digits, one epoch a step,
  30 epochs; learning rate, momentum, L2, width, depth, batch size.
- ``hgb_classify``: ``HistGradientBoostingClassifier`` with ``warm_start`` on a generated
  20-feature problem with label noise, 4 boosting rounds a step, 25 steps; learning rate,
  leaves, minimum leaf size, L2, features per split, bins.
- ``sgd_classify``: ``SGDClassifier`` with ``partial_fit`` on a generated problem, one epoch a
  step, 30 epochs; loss, penalty with its ``l1_ratio`` only under ``elasticnet`` (a conditional
  space), alpha, the learning-rate schedule and ``eta0``.

Nothing here knows an optimiser; ``real_curves_bench.py`` runs them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import pathlib
import random
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("BO_CURVE_CACHE", ROOT / "target" / "real-curves"))


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is ``float``, ``int`` or ``categorical``; ``when`` makes it
    conditional on a categorical parent's values."""

    name: str
    kind: str
    low: float = 0.0
    high: float = 1.0
    log: bool = False
    choices: Sequence[str] = ()
    when: Optional[tuple] = None  # (parent, (values…))


def declare(p: Param, categorical: Callable[..., Any], integer: Callable[..., Any], real: Callable[..., Any]) -> Any:
    """``p`` declared through an optimiser's three calls (Optuna's ``suggest_*``, bo_client's
    ``SearchSpace`` methods), which take the same arguments."""
    if p.kind == "categorical":
        return categorical(p.name, list(p.choices))
    if p.kind == "int":
        return integer(p.name, int(p.low), int(p.high), log=p.log)
    return real(p.name, p.low, p.high, log=p.log)


def bo_space(params: Sequence[Param], bo: Any) -> Any:
    """The parameters as a ``bo_client.SearchSpace`` (``bo`` is the imported client), conditions
    as ``when`` branches."""
    root = bo.SearchSpace()
    made: Dict[str, Any] = {}
    for p in params:
        at = root if p.when is None else made[p.when[0]].when(*p.when[1])
        made[p.name] = declare(p, at.categorical, at.integer, at.float)
    return root


@dataclass(frozen=True)
class Problem:
    name: str
    steps: int
    params: Sequence[Param]
    train: Callable[[Dict[str, Any]], List[float]]

    def active(self, config: Dict[str, Any]) -> Dict[str, Any]:
        """The configuration with only its active parameters, numbers as plain Python."""
        out: Dict[str, Any] = {}
        for p in self.params:
            if p.when is not None and config.get(p.when[0]) not in p.when[1]:
                continue
            v = config[p.name]
            out[p.name] = int(v) if p.kind == "int" else float(v) if p.kind == "float" else str(v)
        return out

    def curve(self, config: Dict[str, Any]) -> List[float]:
        """Validation error at steps 1..steps (cached by the active configuration)."""
        active = self.active(config)
        key = hashlib.sha256(json.dumps([self.name, active], sort_keys=True).encode()).hexdigest()[:32]
        path = CACHE / self.name / f"{key}.json"
        if path.exists():
            return json.loads(path.read_text())["curve"]
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            curve = [float(min(max(e, 0.0), 1.0)) if math.isfinite(e) else 1.0 for e in self.train(active)]
        assert len(curve) == self.steps, (self.name, len(curve))
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps({"config": active, "curve": curve, "seconds": time.perf_counter() - start}))
        os.replace(partial, path)
        return curve

    def sample(self, rng: random.Random) -> Dict[str, Any]:
        """A configuration drawn uniformly (log-uniformly where ``log``)."""
        config: Dict[str, Any] = {}
        for p in self.params:
            if p.kind == "categorical":
                config[p.name] = rng.choice(list(p.choices))
            elif p.log:
                x = math.exp(rng.uniform(math.log(p.low), math.log(p.high)))
                config[p.name] = int(round(x)) if p.kind == "int" else x
            else:
                config[p.name] = rng.randint(int(p.low), int(p.high)) if p.kind == "int" else rng.uniform(p.low, p.high)
        return self.active(config)


def _split(x: np.ndarray, y: np.ndarray, seed: int):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    x_train, x_valid, y_train, y_valid = train_test_split(x, y, test_size=0.3, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(x_train)
    return scaler.transform(x_train), scaler.transform(x_valid), y_train, y_valid


_DATA: Dict[str, Any] = {}


def _digits():
    if "digits" not in _DATA:
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        _DATA["digits"] = _split(x, y, 0)
    return _DATA["digits"]


def _generated(name: str, **kw: Any):
    if name not in _DATA:
        from sklearn.datasets import make_classification

        x, y = make_classification(random_state=7, **kw)
        _DATA[name] = _split(x, y, 1)
    return _DATA[name]


def _train_mlp(c: Dict[str, Any]) -> List[float]:
    from sklearn.neural_network import MLPClassifier

    x_train, x_valid, y_train, y_valid = _digits()
    # One epoch per fit (warm_start, max_iter=1): scikit-learn's own loop over the mini-batches,
    # shuffled by its random_state.
    model = MLPClassifier(
        hidden_layer_sizes=(c["width"],) * c["layers"], solver="sgd", learning_rate_init=c["learning_rate"],
        momentum=c["momentum"], nesterovs_momentum=True, alpha=c["alpha"], batch_size=c["batch_size"], random_state=0,
        warm_start=True, max_iter=1, shuffle=True,
    )
    out: List[float] = []
    for _ in range(30):
        try:
            model.fit(x_train, y_train)
        except ValueError:
            # Diverged ("non-finite parameter weights"): as a training job would report it, the
            # error of a classifier that knows nothing from here on.
            return out + [1.0] * (30 - len(out))
        out.append(1.0 - model.score(x_valid, y_valid))
    return out


def _train_hgb(c: Dict[str, Any]) -> List[float]:
    from sklearn.ensemble import HistGradientBoostingClassifier

    x_train, x_valid, y_train, y_valid = _generated("hgb", n_samples=4000, n_features=20, n_informative=8, n_redundant=4, flip_y=0.08, class_sep=0.8)
    model = HistGradientBoostingClassifier(
        learning_rate=c["learning_rate"], max_leaf_nodes=c["max_leaf_nodes"], min_samples_leaf=c["min_samples_leaf"],
        l2_regularization=c["l2_regularization"], max_features=c["max_features"], max_bins=c["max_bins"],
        warm_start=True, early_stopping=False, random_state=0, max_iter=0,
    )
    out = []
    for step in range(1, 26):
        model.set_params(max_iter=4 * step)
        model.fit(x_train, y_train)
        out.append(1.0 - model.score(x_valid, y_valid))
    return out


def _train_sgd(c: Dict[str, Any]) -> List[float]:
    from sklearn.linear_model import SGDClassifier

    x_train, x_valid, y_train, y_valid = _generated("sgd", n_samples=8000, n_features=40, n_informative=12, n_redundant=8, flip_y=0.05, class_sep=0.6, n_classes=3, n_clusters_per_class=2)
    kw: Dict[str, Any] = {"l1_ratio": c["l1_ratio"]} if c["penalty"] == "elasticnet" else {}
    model = SGDClassifier(
        loss=c["loss"], penalty=c["penalty"], alpha=c["alpha"], learning_rate=c["schedule"], eta0=c["eta0"], random_state=0, **kw,
    )
    classes = np.unique(y_train)
    out = []
    for _ in range(30):
        model.partial_fit(x_train, y_train, classes=classes)
        out.append(1.0 - model.score(x_valid, y_valid))
    return out


PROBLEMS: Dict[str, Problem] = {
    "mlp_digits": Problem("mlp_digits", 30, (
        Param("learning_rate", "float", 1e-4, 0.5, log=True),
        Param("momentum", "float", 0.0, 0.99),
        Param("alpha", "float", 1e-6, 1e-1, log=True),
        Param("width", "int", 8, 256, log=True),
        Param("layers", "int", 1, 3),
        Param("batch_size", "int", 16, 512, log=True),
    ), _train_mlp),
    "hgb_classify": Problem("hgb_classify", 25, (
        Param("learning_rate", "float", 0.005, 0.5, log=True),
        Param("max_leaf_nodes", "int", 4, 128, log=True),
        Param("min_samples_leaf", "int", 2, 200, log=True),
        Param("l2_regularization", "float", 1e-6, 10.0, log=True),
        Param("max_features", "float", 0.2, 1.0),
        Param("max_bins", "int", 16, 255, log=True),
    ), _train_hgb),
    "sgd_classify": Problem("sgd_classify", 30, (
        Param("loss", "categorical", choices=("hinge", "log_loss", "modified_huber")),
        Param("penalty", "categorical", choices=("l2", "l1", "elasticnet")),
        Param("l1_ratio", "float", 0.05, 0.95, when=("penalty", ("elasticnet",))),
        Param("alpha", "float", 1e-7, 1e-1, log=True),
        Param("schedule", "categorical", choices=("constant", "optimal", "invscaling", "adaptive")),
        Param("eta0", "float", 1e-5, 1.0, log=True),
    ), _train_sgd),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["warm", "show", "export"])
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--configs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="export: the file to write")
    args = ap.parse_args()
    if args.command == "export" and not args.out:
        ap.error("export needs --out")
    problem = PROBLEMS[args.problem]
    rng = random.Random(args.seed)
    samples = []
    for _ in range(args.configs):
        config = problem.sample(rng)
        start = time.perf_counter()
        curve = problem.curve(config)
        samples.append({"config": config, "curve": curve})
        if args.command == "show" or (args.command == "warm" and args.configs <= 5):
            print(json.dumps(config), " ".join(f"{e:.3f}" for e in curve), f"({time.perf_counter() - start:.1f} s)")
    print(f"{args.problem}: {len(list((CACHE / args.problem).glob('*.json')))} curves cached in {CACHE / args.problem}")
    if args.command == "export":
        params = [{"name": p.name, "kind": p.kind, "low": p.low, "high": p.high, "log": p.log, "choices": list(p.choices),
                   "when": None if p.when is None else {"parent": p.when[0], "values": list(p.when[1])}} for p in problem.params]
        with open(args.out, "w") as f:
            json.dump({"problem": problem.name, "steps": problem.steps, "goal": "MINIMIZE", "params": params, "samples": samples}, f)
        print(f"wrote {len(samples)} curves to {args.out}")


if __name__ == "__main__":
    main()
