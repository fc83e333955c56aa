"""A PyTorch training loop reporting every epoch to bo, stopped early when the study's rule says so.

A small network learns a synthetic classification task on the CPU. The study chooses the
optimizer (SGD with its momentum, or Adam with its beta1: a conditional space), the learning
rate, the weight decay and the width; each epoch's validation accuracy — a torch tensor,
reported as it is — is a measurement, and ``trial.should_stop()`` asks the study's median rule
whether this trial is worth finishing.

    pip install ./clients/python
    pip install torch --index-url https://download.pytorch.org/whl/cpu   # the CPU wheel: PyPI's default brings gigabytes of CUDA
    python clients/python/examples/pytorch_training.py --url http://127.0.0.1:8080
"""

import argparse
from typing import Tuple

import torch
from torch import nn

import bo_client as bo

EPOCHS = 10
Data = Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def data(seed: int = 0) -> Data:
    """Two interleaved half-moons in 8 dimensions: 1,000 to train on, 400 to validate."""
    g = torch.Generator().manual_seed(seed)
    n = 1400
    t = torch.rand(n, generator=g) * torch.pi
    label = torch.randint(0, 2, (n,), generator=g)
    xy = torch.stack([torch.cos(t) + label, torch.sin(t) * (1 - 2 * label) + 0.5 * label], dim=1)
    x = torch.cat([xy, 0.3 * torch.randn(n, 6, generator=g)], dim=1) + 0.15 * torch.randn(n, 8, generator=g)
    return x[:1000], label[:1000], x[1000:], label[1000:]


def optimizer_for(trial: bo.Trial, model: nn.Module) -> torch.optim.Optimizer:
    lr, decay = float(trial["learning_rate"]), float(trial["weight_decay"])
    if trial["optimizer"] == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=float(trial["momentum"]), weight_decay=decay)
    return torch.optim.Adam(model.parameters(), lr=lr, betas=(float(trial["beta1"]), 0.999), weight_decay=decay)


def train(trial: bo.Trial, x: torch.Tensor, y: torch.Tensor, xv: torch.Tensor, yv: torch.Tensor) -> None:
    torch.manual_seed(trial.id)
    width = int(trial["width"])
    model = nn.Sequential(nn.Linear(x.shape[1], width), nn.ReLU(), nn.Linear(width, 2))
    optimizer = optimizer_for(trial, model)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, EPOCHS + 1):
        model.train()
        for batch in torch.split(torch.randperm(len(x)), 64):
            optimizer.zero_grad()
            loss = loss_fn(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(xv).argmax(dim=1) == yv).float().mean()  # a 0-d tensor
        trial.add_measurement(accuracy, step=epoch)
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
    torch.set_num_threads(1)

    space = bo.SearchSpace()
    optimizer = space.categorical("optimizer", ["sgd", "adam"])
    optimizer.when("sgd").float("momentum", 0.0, 0.99)
    optimizer.when("adam").float("beta1", 0.5, 0.999)
    space.float("learning_rate", 1e-4, 0.3, log=True)
    space.float("weight_decay", 1e-6, 1e-2, log=True)
    space.integer("width", 4, 64)
    client = bo.Client(args.url, api_key=args.api_key)
    study = client.create_study(
        "pytorch-training",
        space,
        metrics=[bo.Metric("accuracy", "MAXIMIZE")],
        stopping=bo.MedianStopping(),
    )
    x, y, xv, yv = data()
    for _ in range(args.trials):
        for trial in study.suggest(1, "trainer"):
            train(trial, x, y, xv, yv)
    best = study.best_trial()
    assert best is not None and best.value is not None
    print(f"best trial {best.id}: accuracy {best.value:.3f} with {best.parameters}")


if __name__ == "__main__":
    main()
