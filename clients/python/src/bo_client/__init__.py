"""bo's Python client: studies, trials and a loop over an objective, over bo's REST API.

    import bo_client as bo

    space = bo.SearchSpace()
    space.float("learning_rate", 1e-5, 0.1, log=True)
    study = bo.Client("http://127.0.0.1:8080", project="demo").create_study(
        "my-study", space, metrics={"accuracy": "MAXIMIZE"})
    study.optimize(lambda trial: train(trial.parameters), n_trials=30)
    print(study.best_trial())

Pure Python, no dependencies; ``bo_client.ray`` adds a Ray Tune searcher when Ray is installed."""

from ._http import ApiError, ConnectionFailed, RetryPolicy
from .client import Client
from .measurement import Measurement, Prediction
from .optimize import Infeasible, OptimizeResult
from .study import AskedParameter, Study, Trial
from .space import Parameter, SearchSpace
from .spec import ConvexStopping, DecayCurveStopping, MedianStopping, Metric, StudyStopping, SuccessiveHalvingStopping

__all__ = [
    "ApiError",
    "AskedParameter",
    "Client",
    "ConnectionFailed",
    "ConvexStopping",
    "DecayCurveStopping",
    "Infeasible",
    "Measurement",
    "MedianStopping",
    "Metric",
    "OptimizeResult",
    "Parameter",
    "Prediction",
    "RetryPolicy",
    "SearchSpace",
    "Study",
    "StudyStopping",
    "SuccessiveHalvingStopping",
    "Trial",
]
__version__ = "0.2.0"
