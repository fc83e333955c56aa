"""bo from Python in one file: a conditional search space, 30 trials of a toy objective on two
workers, the best trial.

    pip install ./clients/python
    python clients/python/examples/quickstart.py --url http://127.0.0.1:8080 [--api-key KEY]
"""

import argparse
import math

import bo_client as bo


def objective(trial: bo.Trial) -> float:
    """A stand-in for training: 'accuracy' of an optimiser, a learning rate and a depth."""
    lr = float(trial["learning_rate"])
    layers = int(trial["layers"])
    if trial["optimizer"] == "sgd":
        fit = 0.9 - 0.05 * (math.log10(lr) + 1.5) ** 2 + 0.05 * float(trial["momentum"])
    else:
        fit = 0.92 - 0.04 * (math.log10(lr) + 3.0) ** 2 - 0.2 * (float(trial["beta1"]) - 0.9) ** 2
    return fit - 0.01 * abs(layers - 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--project", default="demo")
    args = parser.parse_args()

    space = bo.SearchSpace()
    optimizer = space.categorical("optimizer", ["sgd", "adam"])
    optimizer.when("sgd").float("momentum", 0.0, 0.99)
    optimizer.when("adam").float("beta1", 0.8, 0.999)
    space.float("learning_rate", 1e-5, 0.1, log=True)
    space.integer("layers", 1, 8)

    client = bo.Client(args.url, project=args.project, api_key=args.api_key)
    study = client.create_study("quickstart", space, metrics={"accuracy": "MAXIMIZE"})
    study.optimize(objective, n_trials=30, n_workers=2)

    best = study.best_trial()
    assert best is not None
    print(f"best trial {best.id}: accuracy {best.value:.4f} with {best.parameters}")


if __name__ == "__main__":
    main()
