"""The real tuning task knn_wine on a grid (docs/journal/benchmarks.md, the held-out suite's fifth pass):
every n_neighbors from 1 to 60, both weightings and seven Minkowski p, scored as heldout.py
scores a trial (5-fold CV log-loss); prints the best configurations and the best value per k.

    OMP_NUM_THREADS=1 target/peers/venv/bin/python bench/peers/knn_wine_grid.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from heldout import _cv_log_loss, _knn  # noqa: E402


class _Fixed:
    """A trial whose answers are given."""

    def __init__(self, values):
        self.values = values

    def suggest_int(self, name, *_args, **_kwargs):
        return self.values[name]

    suggest_float = suggest_categorical = suggest_int


def main():
    scored = []
    for k in range(1, 61):
        for weights in ("uniform", "distance"):
            for p in (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0):
                values = {"n_neighbors": k, "weights": weights, "minkowski_p": p}
                scored.append((_cv_log_loss(_knn(_Fixed(values)), "wine"), k, weights, p))
    scored.sort()
    for value, k, weights, p in scored[:10]:
        print(f"{value:.4f}  n_neighbors={k} weights={weights} p={p}")
    best = {}
    for value, k, _, _ in scored:
        best.setdefault(k, value)
    print("best per n_neighbors:", ", ".join(f"{k}: {best[k]:.3f}" for k in sorted(best) if k <= 12 or k % 12 == 0))


if __name__ == "__main__":
    main()
