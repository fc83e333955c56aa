"""Numbers as real ML code produces them — numpy scalars of every width, 0-d and one-element
arrays, torch and jax scalars and one-element tensors, ``Decimal`` and ``Fraction`` — go in
wherever a value does, against the real server; booleans, strings, arrays and non-finite values are refused naming the metric; and an
objective's errors follow Optuna's contract (raised unless caught, logged when caught)."""
import decimal
import fractions
import logging
import math

import jax.numpy as jnp
import numpy as np
import pytest
import torch

import bo_client as bo
from bo_client._numbers import as_metric, as_number, as_parameter_value
from conftest import Server

NUMBERS = [
    (np.float16(0.5), 0.5),
    (np.float32(0.93), float(np.float32(0.93))),
    (np.float64(-1.25), -1.25),
    (np.int8(-3), -3),
    (np.int64(3), 3),
    (np.uint32(7), 7),
    (np.array(2.5), 2.5),
    (np.array([4.0]), 4.0),
    (np.mean(np.array([1.0, 2.0])), 1.5),
    (torch.tensor(0.25), 0.25),
    (torch.tensor([0.5], dtype=torch.float64), 0.5),
    (torch.tensor(3), 3),
    (torch.tensor(0.75, requires_grad=True) * 1, 0.75),
    (decimal.Decimal("0.125"), 0.125),
    (fractions.Fraction(3, 4), 0.75),
    (7, 7),
    (0.1, 0.1),
]


@pytest.mark.parametrize("value,expected", NUMBERS, ids=[type(v).__name__ + repr(v)[:20] for v, _ in NUMBERS])
def test_numbers_of_the_ml_stack_are_numbers(value: object, expected: float) -> None:
    got = as_number(value, "m")
    assert got == expected and type(got) in (int, float)
    assert type(as_metric(value, "m")) is float


def test_integers_stay_integers_and_floats_floats() -> None:
    assert type(as_number(np.int64(3), "p")) is int
    assert type(as_number(jnp.sum(jnp.array([1, 2])), "p")) is int
    assert type(as_number(np.float64(3.0), "p")) is float
    assert type(as_number(jnp.float32(0.5), "p")) is float
    assert type(as_number(torch.tensor(5, dtype=torch.int32), "p")) is int
    assert type(as_number(torch.tensor(0.5, dtype=torch.bfloat16), "p")) is float
    assert as_parameter_value("adam", "optimizer") == "adam"


@pytest.mark.parametrize(
    "value,says",
    [
        (True, "is a boolean"),
        (np.bool_(True), "is a boolean"),
        (np.array(True), "is a boolean"),
        ("0.5", "is a string"),
        (np.array([1.0, 2.0]), "an array of shape (2,)"),
        (torch.tensor(True), "is a boolean"),
        (torch.tensor([1.0, 2.0]), "shape (2,)"),
        (None, "is not a number"),
        ([0.5], "is not a number"),
        (complex(1, 2), "is not a number"),
    ],
)
def test_what_is_not_a_number_is_refused_naming_the_metric(value: object, says: str) -> None:
    with pytest.raises(ValueError) as e:
        as_metric(value, "accuracy")
    assert str(e.value).startswith("metric 'accuracy': ") and says in str(e.value)


@pytest.mark.parametrize("value", [float("nan"), np.float32("inf"), np.float64("-inf"), torch.tensor(float("nan")), decimal.Decimal("NaN")])
def test_non_finite_values_are_refused_naming_the_metric_and_the_value(value: object) -> None:
    with pytest.raises(ValueError, match=r"^metric 'loss': .* is not a finite number$"):
        as_metric(value, "loss")


def one_float() -> bo.SearchSpace:
    s = bo.SearchSpace()
    s.float("x", 0.0, 1.0)
    s.integer("n", 1, 8)
    return s


def test_an_objective_returning_numpy_torch_or_jax_numbers_succeeds(server: Server) -> None:
    client = bo.Client(server.url)
    x32 = lambda x: float(np.float32(x))  # noqa: E731
    same = lambda x: x  # noqa: E731
    returns = [
        (lambda x: np.float32(x), x32),
        (lambda x: np.float64(x), same),
        (lambda x: np.int64(round(x * 10)), lambda x: float(round(x * 10))),
        (lambda x: np.array(x), same),
        (lambda x: np.array([x], dtype=np.float32), x32),
        (lambda x: np.mean(np.array([x, x])), same),
        (lambda x: jnp.float32(x), x32),
        (lambda x: torch.tensor(x, dtype=torch.float32), x32),
        (lambda x: torch.nn.functional.mse_loss(torch.tensor([x]), torch.zeros(1)).sqrt(), x32),
        (lambda x: {"acc": torch.tensor([x], dtype=torch.float64)}, same),
        (lambda x: jnp.mean(jnp.array([x, x], dtype=jnp.float32)), x32),
        (lambda x: decimal.Decimal(repr(x)), same),
        (lambda x: {"acc": np.float32(x)}, x32),
    ]
    for k, (make, expect) in enumerate(returns):
        study = client.create_study(f"numbers-{k}", one_float(), metrics={"acc": "MAXIMIZE"})
        result = study.optimize(lambda trial: make(float(trial["x"])), n_trials=2, progress=False)
        trials = list(study.trials())
        assert [t.state for t in trials] == ["SUCCEEDED"] * 2, [(t.state, t.infeasible_reason) for t in trials]
        assert result.infeasible == 0
        for t in trials:
            assert t.value == pytest.approx(expect(float(t["x"])), rel=1e-6)


def test_measurements_completions_trials_and_predictions_take_numpy_numbers(server: Server) -> None:
    client = bo.Client(server.url)
    study = client.create_study("numbers-everywhere", one_float(), metrics={"acc": "MAXIMIZE"}, algorithm="GP_BANDIT")
    [trial] = study.suggest(1, "w")
    trial.add_measurement(np.float32(0.5), step=np.int64(1), elapsed_seconds=np.float64(2.5))
    trial.add_measurement({"acc": jnp.float32(0.6)}, step=torch.tensor(2))
    done = trial.complete({"acc": np.float64(0.7)}, step=np.int64(3))
    assert done.state == "SUCCEEDED" and done.value == 0.7
    assert [(m.step, m.metrics["acc"]) for m in done.measurements] == [(1, 0.5), (2, pytest.approx(0.6))]
    added = study.add_trial({"x": np.float32(0.25), "n": np.int64(3)}, np.float32(0.1))
    assert added.parameters == {"x": 0.25, "n": 3} and added.value == pytest.approx(0.1)
    for i in range(16):
        study.add_trial({"x": i / 16, "n": np.int16(i % 8 + 1)}, np.float64(i / 10))
    predictions = study.predict([{"x": np.float32(0.5), "n": np.int64(4)}, {"x": np.array(0.1), "n": 2}])
    assert len(predictions) == 2 and all(math.isfinite(p.mean) for p in predictions)


def test_unusable_values_are_refused_before_anything_is_sent(server: Server) -> None:
    study = bo.Client(server.url).create_study("numbers-refused", one_float(), metrics={"acc": "MAXIMIZE"})
    [trial] = study.suggest(1, "w")
    with pytest.raises(ValueError, match="metric 'acc': True is a boolean"):
        trial.add_measurement(True, step=1)
    with pytest.raises(ValueError, match=r"metric 'acc': nan is not a finite number"):
        trial.complete(np.float32("nan"))
    with pytest.raises(ValueError, match=r"parameter 'x': inf is not a finite number"):
        study.add_trial({"x": np.inf, "n": 1}, 0.5)
    with pytest.raises(ValueError, match=r"step: 1.5 is not a whole number"):
        trial.add_measurement(0.5, step=1.5)  # type: ignore[arg-type]
    assert trial.refresh().state == "ACTIVE" and trial.measurements == []


def test_an_uncaught_exception_marks_its_trial_and_is_raised(server: Server) -> None:
    study = bo.Client(server.url).create_study("numbers-typo", one_float(), metrics={"acc": "MAXIMIZE"})

    def objective(trial: bo.Trial) -> float:
        return acuracy  # type: ignore[name-defined]  # noqa: F821 - the typo under test

    with pytest.raises(NameError, match="acuracy"):
        study.optimize(objective, n_trials=20, n_workers=2, progress=False)
    trials = list(study.trials())
    assert trials and all(t.state == "INFEASIBLE" for t in trials)
    assert "NameError: name 'acuracy' is not defined" in {t.infeasible_reason for t in trials}
    assert len(trials) <= 2


def test_a_caught_exception_is_logged_with_its_traceback_and_the_loop_goes_on(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    study = bo.Client(server.url).create_study("numbers-caught", one_float(), metrics={"acc": "MAXIMIZE"})

    def objective(trial: bo.Trial) -> float:
        if trial.id % 2:
            raise ValueError(f"odd trial {trial.id}")
        return 1.0

    with caplog.at_level(logging.WARNING, logger="bo_client"):
        result = study.optimize(objective, n_trials=6, progress=False, catch=(ValueError,))
    assert len(result.trials) == 6 and result.infeasible == 3
    failed = [r for r in caplog.records if r.exc_info]
    assert len(failed) == 3 and all(r.name == "bo_client" for r in failed)
    assert "Traceback" in caplog.text and "ValueError: odd trial 1" in caplog.text
