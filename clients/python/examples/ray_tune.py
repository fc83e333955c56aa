"""Ray Tune choosing hyperparameters with bo: an ordinary Tune script whose search algorithm is
``BoSearch`` and whose stopper is the study's median rule.

The trainable is a PyTorch logistic regression that reports its validation accuracy every
epoch; Tune's own ``param_space`` declares the space, which BoSearch maps onto the
bo study's parameters.

    pip install "./clients/python[ray]"
    pip install torch --index-url https://download.pytorch.org/whl/cpu   # the CPU wheel: PyPI's default brings gigabytes of CUDA
    python clients/python/examples/ray_tune.py --url http://127.0.0.1:8080
"""

import argparse
from typing import Any, Dict

import torch
from ray import tune

from bo_client.ray import BoSearch

EPOCHS = 8


def trainable(config: Dict[str, Any]) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(800, 6, generator=g)
    y = (x @ torch.tensor([1.0, -2.0, 0.5, 0.0, 1.5, -1.0]) + 0.3 * torch.randn(800, generator=g) > 0).float()
    model = torch.nn.Linear(6, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(EPOCHS):
        for batch in torch.split(torch.randperm(600, generator=g), config["batch_size"]):
            optimizer.zero_grad()
            loss = loss_fn(model(x[batch]).squeeze(1), y[batch])
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            accuracy = ((model(x[600:]).squeeze(1) > 0).float() == y[600:]).float().mean()
        # Tune refuses torch tensors in reported metrics (it cannot deserialise them): a number.
        tune.report({"accuracy": accuracy.item()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--storage", default=None, help="where Tune keeps its results (default: ~/ray_results)")
    args = parser.parse_args()

    search = BoSearch(metric="accuracy", mode="max", url=args.url, study="ray-tune-example")
    tuner = tune.Tuner(
        trainable,
        param_space={
            "lr": tune.loguniform(1e-4, 1.0),
            "momentum": tune.uniform(0.0, 0.95),
            "batch_size": tune.choice([16, 32, 64, 128]),
        },
        tune_config=tune.TuneConfig(search_alg=search, num_samples=args.samples, max_concurrent_trials=2),
        run_config=tune.RunConfig(stop=search.stopper(), verbose=0, storage_path=args.storage),
    )
    best = tuner.fit().get_best_result(metric="accuracy", mode="max")
    print(f"best {best.config}: accuracy {float(best.metrics['accuracy']):.3f}")


if __name__ == "__main__":
    main()
