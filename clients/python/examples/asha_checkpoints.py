"""ASHA with checkpoints: a PyTorch loop that pauses at each rung and is resumed when promoted.

With ``SuccessiveHalvingStopping(resume=True)`` every trial pauses at each rung (1, 3, 9 epochs
of 27 here): ``trial.should_stop()`` says so, the loop saves a checkpoint under the trial's id
and completes the trial. When a paused trial becomes one of the best third at its rung, the
next ``suggest`` hands it out again as a new trial whose ``resumed_from`` names it: the loop
loads that checkpoint and trains on from epoch ``resumed_at``. New configurations start only
when no paused trial is promoted. The budget is in epochs, as a cluster's is.

    pip install ./clients/python
    pip install torch --index-url https://download.pytorch.org/whl/cpu   # the CPU wheel: PyPI's default brings gigabytes of CUDA
    python clients/python/examples/asha_checkpoints.py --url http://127.0.0.1:8080
"""

import argparse
import pathlib
import tempfile

import torch
from torch import nn

import bo_client as bo

# The data of pytorch_training.py, beside this file (Python puts a script's folder on its path).
from pytorch_training import Data, data

EPOCHS = 27


def train(trial: bo.Trial, d: Data, checkpoints: pathlib.Path) -> int:
    """Trains `trial` from its start, or from the checkpoint of the trial it resumes, until it
    pauses or finishes; returns the epochs it trained."""
    x, y, xv, yv = d
    torch.manual_seed(trial.id)
    model = nn.Sequential(nn.Linear(x.shape[1], int(trial["width"])), nn.ReLU(), nn.Linear(int(trial["width"]), 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=float(trial["learning_rate"]), momentum=float(trial["momentum"]))
    first = 1
    if trial.resumed_from is not None:
        saved = torch.load(checkpoints / f"{trial.resumed_from}.pt")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if saved["epoch"] != trial.resumed_at:
            raise RuntimeError(f"trial {trial.id} resumes trial {trial.resumed_from} at {trial.resumed_at}, saved at {saved['epoch']}")
        first = saved["epoch"] + 1
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(first, EPOCHS + 1):
        model.train()
        for batch in torch.split(torch.randperm(len(x)), 64):
            optimizer.zero_grad()
            loss_fn(model(x[batch]), y[batch]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(xv).argmax(dim=1) == yv).float().mean()
        trial.add_measurement(accuracy, step=epoch)
        if epoch < EPOCHS and trial.should_stop():
            # Paused at a rung (or stopped): keep what it takes to go on.
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, checkpoints / f"{trial.id}.pt")
            break
    trial.complete()
    return epoch - first + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--epochs", type=int, default=300, help="the budget: epochs over all trials")
    args = parser.parse_args()
    torch.set_num_threads(1)

    space = bo.SearchSpace()
    space.float("learning_rate", 1e-4, 0.5, log=True)
    space.float("momentum", 0.0, 0.95)
    space.integer("width", 4, 64)
    client = bo.Client(args.url, api_key=args.api_key)
    study = client.create_study(
        "asha-checkpoints",
        space,
        metrics=[bo.Metric("accuracy", "MAXIMIZE")],
        stopping=bo.SuccessiveHalvingStopping(max_step_count=EPOCHS, resume=True),
    )
    d = data()
    spent, resumed, trials = 0, 0, 0
    with tempfile.TemporaryDirectory() as directory:
        while spent < args.epochs:
            for trial in study.suggest(1, "trainer"):
                trials += 1
                resumed += trial.resumed_from is not None
                spent += train(trial, d, pathlib.Path(directory))
    best = study.best_trial()
    assert best is not None and best.value is not None
    print(f"best trial {best.id}: accuracy {best.value:.3f} with {best.parameters}; {resumed} of {trials} trials resumed, {spent} epochs")


if __name__ == "__main__":
    main()
