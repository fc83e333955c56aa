"""A training loop reporting every epoch to bo, stopped early when the study's rule says so.

The model is a logistic regression trained by mini-batch SGD in numpy (the loop is the shape of
a PyTorch one: epochs, a validation metric each epoch, ``trial.should_stop()``); its metrics are
numpy numbers, reported as they are.

    pip install ./clients/python numpy
    python clients/python/examples/training_loop.py --url http://127.0.0.1:8080
"""

import argparse

import numpy as np

import bo_client as bo

EPOCHS = 12


def data(seed: int = 0) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1200, 10))
    w = rng.normal(size=10)
    y = (x @ w + 0.5 * rng.normal(size=1200) > 0).astype(np.float64)
    return x[:900], y[:900], x[900:], y[900:]


def train(trial: bo.Trial, x: np.ndarray, y: np.ndarray, xv: np.ndarray, yv: np.ndarray) -> None:
    lr, l2, batch = float(trial["learning_rate"]), float(trial["l2"]), int(trial["batch_size"])
    rng = np.random.default_rng(trial.id)
    w = np.zeros(x.shape[1])
    for epoch in range(1, EPOCHS + 1):
        order = rng.permutation(len(x))
        for start in range(0, len(x), batch):
            i = order[start : start + batch]
            p = 1 / (1 + np.exp(-x[i] @ w))
            w -= lr * (x[i].T @ (p - y[i]) / len(i) + l2 * w)
        accuracy = np.mean(((xv @ w) > 0) == yv)  # a numpy float64
        trial.add_measurement({"accuracy": accuracy}, step=epoch)
        if trial.should_stop():
            print(f"trial {trial.id} stopped after epoch {epoch} at accuracy {accuracy:.3f}")
            break
    trial.complete()  # the last measurement is the result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args()

    space = bo.SearchSpace()
    space.float("learning_rate", 1e-4, 1.0, log=True)
    space.float("l2", 1e-6, 1e-1, log=True)
    space.discrete("batch_size", [16, 32, 64, 128])
    client = bo.Client(args.url, api_key=args.api_key)
    study = client.create_study(
        "training-loop",
        space,
        metrics=[bo.Metric("accuracy", "MAXIMIZE")],
        stopping=bo.MedianStopping(),
        study_stopping=bo.StudyStopping(max_num_trials=200),
    )
    x, y, xv, yv = data()
    for k in range(args.trials):
        for trial in study.suggest(1, "trainer"):
            train(trial, x, y, xv, yv)
    best = study.best_trial()
    assert best is not None and best.value is not None
    print(f"best trial {best.id}: accuracy {best.value:.3f} with {best.parameters}")


if __name__ == "__main__":
    main()
