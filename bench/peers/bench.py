"""The peers — Optuna's samplers, SMAC3, HEBO, random search — and bo over HTTP on the same
problems, seeds and budgets, writing JSON in `bo-bench run --out`'s shape:

    bash bench/peers/run.sh --problem hartmann6 --optimizer gp --budget 100 --seeds 5 --out out.json
    bash bench/peers/run.sh --problem svm_breast_cancer --optimizer bo:AUTO --budget 50 --seeds 10 --out bo.json
    bash bench/peers/run.sh --problem mlp_wine --optimizer bo:GP_BANDIT --bo-config '{"inputWarping": true}' --out iw.json

Optimisers: `tpe` (Optuna's default TPE; multivariate for one objective in Optuna 5), `tpe_mv`
(with group decomposition), `gp` (Optuna's GPSampler), `random` (Optuna's RandomSampler), `smac`
(SMAC3's hyperparameter-optimisation facade: a random forest with log-EI, conditions declared),
`hebo` (HEBO 0.3, in its own venv behind hebo_worker.py: no conditions, so a conditional space is
flattened and the objective reads its active parameters), `cma` (CMA-ES, spaces of numbers only),
`botorch` (BoTorch's SingleTaskGP + qLogNEI loop, spaces of numbers only), `turbo` (TuRBO-1 on
BoTorch's models) and `saasbo` (BoTorch's SAAS GP sampled by NUTS, with qLogNEI), `bo:ALGORITHM` (the bo server, started
here on a fresh SQLite file, driven through bo_client as a user would; `--bo-pace fitted` waits
before each suggest until the server's background fit has caught up with every completed trial,
as it has when an evaluation takes longer than a fit — the peers fit at every step — while
`free`, the default, asks at once, so with objectives of microseconds most suggestions come from a
model some trials behind). Each bo run records the server's `GET …/model` at its end (`model`:
the data versions, `AUTO`'s choice and scores, and the model's description).

The problems are problems.py's (bo-bench's, with known optima), heldout.py's (the held-out suite:
BBOB, low effective dimension, 16 real tuning tasks; never used to choose a default) and
sklearn_problems.py's (class 5; no known optimum: `optimum` is null and `regret` holds the best value so far, which
bench/classes.py turns into regret against the best any optimiser found). `suggest_seconds` is
the optimiser's time per trial — ask and tell, without the objective. In a space with integer or
categorical parameters each run's `cells` counts the distinct combinations of their values it
evaluated (bo-bench's `cells`).
"""
import argparse
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import problems  # noqa: E402
import space  # noqa: E402

OPTUNA = ("tpe", "tpe_mv", "gp", "random")


def problem(name):
    """(objective, optimum or None, observation noise sd)."""
    if name in problems.PROBLEMS:
        fn, optimum = problems.PROBLEMS[name]
        return fn, optimum, problems.NOISE.get(name, 0.0)
    import sklearn_problems
    if name in sklearn_problems.PROBLEMS:
        return sklearn_problems.PROBLEMS[name], None, 0.0
    import heldout
    found = heldout.problem(name)
    if found is not None:
        return found[0], found[1], 0.0
    raise SystemExit(f"unknown problem {name!r}")


class OptunaRun:
    def __init__(self, sampler, seed, fn):
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        samplers = {
            "tpe": lambda: optuna.samplers.TPESampler(seed=seed),
            # Multivariate TPE with group decomposition for conditional spaces (Optuna's
            # documented setting for them); on a space without conditions it is the default.
            "tpe_mv": lambda: optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True),
            "gp": lambda: optuna.samplers.GPSampler(seed=seed),
            "random": lambda: optuna.samplers.RandomSampler(seed=seed),
        }
        self.study = optuna.create_study(sampler=samplers[sampler](), direction="minimize")

    def ask(self):
        # Optuna's trials are define-by-run: the objective's suggestions are the sampling.
        trial = self.study.ask()
        return trial, trial

    def tell(self, handle, value):
        self.study.tell(handle, value)


class SmacRun:
    def __init__(self, seed, params, budget):
        from ConfigSpace import Categorical, ConfigurationSpace, EqualsCondition, Float, InCondition, Integer
        from smac import HyperparameterOptimizationFacade, Scenario
        cs = ConfigurationSpace(seed=seed)
        hps = {}
        for p in params:
            if p.kind == "cat":
                hps[p.name] = Categorical(p.name, list(p.choices))
            elif p.kind == "int":
                hps[p.name] = Integer(p.name, (int(p.low), int(p.high)), log=p.log)
            else:
                hps[p.name] = Float(p.name, (p.low, p.high), log=p.log)
        cs.add(list(hps.values()))
        for p in params:
            if p.parent is not None:
                child, parent = hps[p.name], hps[p.parent]
                values = list(p.parent_values)
                cs.add(EqualsCondition(child, parent, values[0]) if len(values) == 1 else InCondition(child, parent, values))
        self.out = tempfile.mkdtemp(prefix="smac-")
        scenario = Scenario(cs, deterministic=True, n_trials=budget, seed=seed, output_directory=self.out)
        self.smac = HyperparameterOptimizationFacade(scenario, lambda config, seed=0: 0.0, overwrite=True, logging_level=40)

    def ask(self):
        info = self.smac.ask()
        return info, space.Fixed(dict(info.config))

    def tell(self, handle, value):
        from smac.runhistory.dataclasses import TrialValue
        self.smac.tell(handle, TrialValue(cost=value))


class HeboRun:
    """HEBO in its own venv (target/peers/hebo-venv), behind hebo_worker.py."""

    def __init__(self, seed, params):
        python = os.path.join(ROOT, "target", "peers", "hebo-venv", "bin", "python")
        if not os.path.exists(python):
            raise SystemExit("HEBO's venv is missing: bench/peers/run.sh installs it")
        # Its warnings (old numpy against new torch) are not the run's business.
        self.proc = subprocess.Popen([python, "-W", "ignore", os.path.join(HERE, "hebo_worker.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        wire = [{"name": p.name, "kind": p.kind, "low": p.low, "high": p.high, "log": p.log, "choices": list(p.choices)} for p in params]
        self.call({"init": {"params": wire, "seed": seed}})

    def call(self, msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("HEBO's worker died")
        return json.loads(line)

    def ask(self):
        return None, space.Fixed(self.call({"ask": True})["values"])

    def tell(self, handle, value):
        self.call({"tell": value})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def _unit_box(params, who):
    """Maps a space of numbers onto [0, 1]^d (log scale where the parameter has it) and back;
    an integer is rounded on the way back. Categorical or conditional spaces are refused."""
    for p in params:
        if p.kind == "cat" or p.parent is not None:
            raise SystemExit(f"{who} runs on spaces of numbers only; {p.name!r} is {'categorical' if p.kind == 'cat' else 'conditional'}")

    def to_params(u):
        out = {}
        for p, v in zip(params, u):
            v = min(max(float(v), 0.0), 1.0)
            x = math.exp(math.log(p.low) + v * (math.log(p.high) - math.log(p.low))) if p.log else p.low + v * (p.high - p.low)
            out[p.name] = min(max(int(round(x)), int(p.low)), int(p.high)) if p.kind == "int" else x
        return out
    return to_params


class CmaRun:
    """CMA-ES (Hansen's `cma`) on the unit box, its default population, one candidate at a time:
    a generation is told once all its candidates are evaluated."""

    def __init__(self, seed, params):
        import cma
        self.to_params = _unit_box(params, "CMA-ES")
        self.es = cma.CMAEvolutionStrategy([0.5] * len(params), 0.3,
                                           {"bounds": [0.0, 1.0], "seed": seed + 1, "verbose": -9})
        self.pending, self.done = [], []

    def ask(self):
        if not self.pending:
            self.pending = list(self.es.ask())
            self.done = []
        u = self.pending.pop(0)
        return u, space.Fixed(self.to_params(u))

    def tell(self, handle, value):
        self.done.append((handle, value))
        if not self.pending:
            self.es.tell([u for u, _ in self.done], [v for _, v in self.done])


class BotorchRun:
    """BoTorch's standard loop: a SingleTaskGP (its default priors and input/output transforms)
    fitted by marginal likelihood, qLogNoisyExpectedImprovement with q = 1 optimised by
    `optimize_acqf` (10 restarts from 512 raw samples), after 2(d + 1) Sobol points. Integers are
    rounded after the continuous optimum is found. `turbo` and `saasbo` below are BoTorch's
    high-dimensional methods."""

    who = "BoTorch"

    def __init__(self, seed, params):
        import torch
        self.torch = torch
        self.to_params = _unit_box(params, self.who)
        self.d = len(params)
        self.seed = seed
        torch.manual_seed(seed)
        self.initial = self._design(seed)
        self.x, self.y = [], []

    def _design(self, seed):
        from torch.quasirandom import SobolEngine
        return SobolEngine(self.d, scramble=True, seed=seed).draw(2 * (self.d + 1)).double()

    def _model(self, x, y):
        """The GP on the data so far (`y` maximised), fitted."""
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from gpytorch.mlls import ExactMarginalLogLikelihood
        model = SingleTaskGP(x, y)
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model

    def _next(self):
        torch = self.torch
        if len(self.x) < len(self.initial):
            return self.initial[len(self.x)]
        from botorch.acquisition.logei import qLogNoisyExpectedImprovement
        from botorch.optim import optimize_acqf
        x = torch.stack(self.x)
        y = -torch.tensor(self.y, dtype=torch.double).unsqueeze(-1)  # BoTorch maximises
        acq = qLogNoisyExpectedImprovement(self._model(x, y), x, prune_baseline=True)
        bounds = torch.stack([torch.zeros(self.d, dtype=torch.double), torch.ones(self.d, dtype=torch.double)])
        candidate, _ = optimize_acqf(acq, bounds=bounds, q=1, num_restarts=10, raw_samples=512)
        return candidate[0].detach()

    def ask(self):
        u = self._next()
        return u, space.Fixed(self.to_params(u.tolist()))

    def tell(self, handle, value):
        self.x.append(handle)
        self.y.append(value)


def _initial_design(d, seed):
    """min(2(d + 1), 20) scrambled Sobol points of the unit cube: the high-dimensional methods'
    start (the low effective dimension class has D = 25-100 and a budget of 150, so 2(d + 1)
    would spend it all)."""
    from torch.quasirandom import SobolEngine
    return SobolEngine(d, scramble=True, seed=seed).draw(min(2 * (d + 1), 20)).double()


class TurboRun:
    """TuRBO-1 (Eriksson et al. 2019, "Scalable global optimization via local Bayesian
    optimization", section 2), written from the paper on BoTorch's models: one trust region, a
    box centred on the best point of the current run whose sides are L times the GP's ARD
    length scales over their geometric mean; L starts at 0.8, doubles (up to 1.6) after 3
    successes in a row, halves after max(4, d) failures in a row, and the run restarts from a
    fresh Sobol design when L falls below 0.5^7. A success improves the run's best by more than
    1e-3 |best|. The model is a Matérn-5/2 ARD GP (length scales in [0.005, 4]) fitted by
    marginal likelihood to the current run's standardised values; the next point is a Thompson
    sample over min(5000, max(2000, 200 d)) candidates in the box (`TURBO_CANDIDATES` sets
    another number: the exact joint sample costs the cube of it), each perturbing a random
    subset of the centre's coordinates (each with probability min(1, 20/d))."""

    def __init__(self, seed, params):
        import torch
        self.torch = torch
        self.to_params = _unit_box(params, "TuRBO")
        self.d = len(params)
        self.seed = seed
        self.restarts = 0
        torch.manual_seed(seed)
        self._restart()

    def _restart(self):
        self.initial = _initial_design(self.d, self.seed * 1000 + self.restarts)
        self.restarts += 1
        self.x, self.y = [], []
        self.length, self.successes, self.failures = 0.8, 0, 0

    def _next(self):
        torch = self.torch
        if len(self.x) < len(self.initial):
            return self.initial[len(self.x)]
        from botorch.fit import fit_gpytorch_mll
        from botorch.generation import MaxPosteriorSampling
        from botorch.models import SingleTaskGP
        from gpytorch.constraints import Interval
        from gpytorch.kernels import MaternKernel, ScaleKernel
        from gpytorch.likelihoods import GaussianLikelihood
        from gpytorch.mlls import ExactMarginalLogLikelihood
        from torch.quasirandom import SobolEngine
        d = self.d
        x = torch.stack(self.x)
        y = -torch.tensor(self.y, dtype=torch.double).unsqueeze(-1)  # maximised
        y = (y - y.mean()) / (y.std() if y.std() > 0 else 1.0)
        kernel = ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=d, lengthscale_constraint=Interval(0.005, 4.0)))
        model = SingleTaskGP(x, y, covar_module=kernel, likelihood=GaussianLikelihood(noise_constraint=Interval(1e-8, 1e-3)))
        try:
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        except Exception:  # a failed fit keeps the initial hyperparameters, as the paper's code does
            pass
        centre = x[y.argmax()]
        scales = model.covar_module.base_kernel.lengthscale.detach().view(-1)
        scales = scales / scales.log().mean().exp()
        low = (centre - scales * self.length / 2).clamp(0.0, 1.0)
        high = (centre + scales * self.length / 2).clamp(0.0, 1.0)
        n = int(os.environ.get("TURBO_CANDIDATES") or min(5000, max(2000, 200 * d)))
        sobol = SobolEngine(d, scramble=True, seed=int(torch.randint(1 << 30, (1,))))
        points = low + (high - low) * sobol.draw(n).double()
        mask = torch.rand(n, d, dtype=torch.double) <= min(1.0, 20.0 / d)
        empty = (mask.sum(dim=1) == 0).nonzero().view(-1)  # every candidate moves one coordinate at least
        mask[empty, torch.randint(d, (len(empty),))] = True
        candidates = torch.where(mask, points, centre.expand(n, d))
        with torch.no_grad():
            return MaxPosteriorSampling(model=model, replacement=False)(candidates, num_samples=1)[0]

    def ask(self):
        u = self._next()
        return u, space.Fixed(self.to_params(u.tolist()))

    def tell(self, handle, value):
        initial = len(self.x) < len(self.initial)
        best = min(self.y) if self.y else math.inf
        self.x.append(handle)
        self.y.append(value)
        if initial:
            return
        if value < best - 1e-3 * abs(best):
            self.successes, self.failures = self.successes + 1, 0
        else:
            self.successes, self.failures = 0, self.failures + 1
        if self.successes == 3:
            self.length, self.successes = min(2.0 * self.length, 1.6), 0
        elif self.failures == max(4, self.d):
            self.length, self.failures = self.length / 2.0, 0
        if self.length < 0.5 ** 7:
            self._restart()


class SaasboRun(BotorchRun):
    """SAASBO (Eriksson & Jankowiak 2021): BoTorch's SaasFullyBayesianSingleTaskGP — length
    scales under the sparse axis-aligned subspace prior (half-Cauchy on their inverse squares,
    a global shrinkage τ) — sampled by NUTS (`SAASBO_NUTS`, default "128,64,16": warm-up steps,
    samples, thinning; the paper's 512,256,16 take minutes a step here), with BoTorch's loop's
    qLogNoisyExpectedImprovement averaged over the samples, after min(2(d + 1), 20) Sobol
    points."""

    who = "SAASBO"

    def _design(self, seed):
        self.nuts = [int(v) for v in os.environ.get("SAASBO_NUTS", "128,64,16").split(",")]
        return _initial_design(self.d, seed)

    def _model(self, x, y):
        from botorch.fit import fit_fully_bayesian_model_nuts
        from botorch.models.fully_bayesian import SaasFullyBayesianSingleTaskGP
        from botorch.models.transforms.outcome import Standardize
        model = SaasFullyBayesianSingleTaskGP(x, y, outcome_transform=Standardize(m=1))
        warmup, samples, thinning = self.nuts
        fit_fully_bayesian_model_nuts(model, warmup_steps=warmup, num_samples=samples, thinning=thinning,
                                      disable_progbar=True)
        return model


class BoServer:
    """The bo server on a fresh SQLite file and a free port."""

    def __init__(self, binary):
        self.dir = tempfile.mkdtemp(prefix="bo-bench-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--database-url", f"sqlite://{self.dir}/bo.db"],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "log"), "w"))
        for _ in range(200):
            try:
                urllib.request.urlopen(self.url + "/readyz", timeout=1)
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("the bo server did not start")

    def close(self):
        self.proc.terminate()
        self.proc.wait()


class BoRun:
    def __init__(self, server, algorithm, config, seed, params, name, pace="free", declared_budget=None):
        self.pace = pace
        sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
        import bo_client as bo
        root = bo.SearchSpace()
        made = {}
        for p in params:
            at = root if p.parent is None else made[p.parent].when(*p.parent_values)
            if p.kind == "cat":
                made[p.name] = at.categorical(p.name, list(p.choices))
            elif p.kind == "int":
                made[p.name] = at.integer(p.name, int(p.low), int(p.high), log=p.log)
            else:
                made[p.name] = at.float(p.name, p.low, p.high, log=p.log)
        client = bo.Client(server.url, project="bench")
        # The study's name seeds its random stream, as a seed does for the other optimisers.
        # A declared budget is the study's maxNumTrials, as a user who knows it would set it.
        stopping = bo.StudyStopping(max_num_trials=declared_budget) if declared_budget else None
        self.study = client.create_study(f"{name}-seed{seed}", root, metrics={"value": "MINIMIZE"},
                                          algorithm=algorithm, algorithm_config=config, study_stopping=stopping)

    def ask(self):
        if self.pace == "fitted":
            self.wait_for_fit()
        (trial,) = self.study.suggest(1, client_id="bench")
        return trial, space.Fixed(dict(trial.parameters))

    def tell(self, handle, value):
        handle.complete(value)

    def wait_for_fit(self, timeout=120.0):
        """Waits until the server's model is fitted on every completed trial, as it is when an
        evaluation takes longer than a fit (a training job, not a synthetic function of
        microseconds); the peers fit at every step."""
        deadline = time.monotonic() + timeout
        while True:
            model = self.study.model()
            if model["fittedDataVersion"] >= model["dataVersion"] or time.monotonic() > deadline:
                return
            time.sleep(0.01)

    def about(self):
        """What the server's model says of itself at the end: the fit's data version, `AUTO`'s
        choice and scores, and the whole description (output warp, trust region, θ)."""
        model = self.study.model()
        description = model.get("model") if isinstance(model.get("model"), dict) else {}
        auto = description.get("auto")
        return {k: model.get(k) for k in ("fittedDataVersion", "dataVersion", "fittedOnTrials") if k in model} | (
            {"auto": auto} if auto else {}) | {"description": {k: v for k, v in description.items() if k != "auto"}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True)
    ap.add_argument("--optimizer", "--sampler", dest="optimizer", required=True,
                    help="tpe, tpe_mv, gp, random, smac, hebo, cma, botorch, turbo, saasbo, or bo:ALGORITHM")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds run are FIRST_SEED … FIRST_SEED + SEEDS − 1")
    ap.add_argument("--bo-config", type=json.loads, help="bo:ALGORITHM's algorithmConfig, as JSON")
    ap.add_argument("--bo-server", default=os.path.join(ROOT, "target", "release", "bo-server"))
    ap.add_argument("--bo-pace", choices=("free", "fitted"), default="free",
                    help="free: ask as soon as the last value is told (bo's model may lag behind); fitted: "
                         "wait until bo's model is fitted on every completed trial, as when an evaluation "
                         "takes longer than a fit")
    ap.add_argument("--bo-declare-budget", action="store_true",
                    help="create bo's studies with studyStoppingConfig.maxNumTrials = --budget, as a study "
                         "that knows how many trials it will run declares it")
    ap.add_argument("--out")
    args = ap.parse_args()
    fn, optimum, noise_sd = problem(args.problem)
    params = space.discover(fn)
    server = BoServer(args.bo_server) if args.optimizer.startswith("bo:") else None
    runs = []
    try:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            if args.optimizer in OPTUNA:
                opt = OptunaRun(args.optimizer, seed, fn)
            elif args.optimizer == "smac":
                opt = SmacRun(seed, params, args.budget)
            elif args.optimizer == "hebo":
                opt = HeboRun(seed, params)
            elif args.optimizer == "cma":
                opt = CmaRun(seed, params)
            elif args.optimizer == "botorch":
                opt = BotorchRun(seed, params)
            elif args.optimizer == "turbo":
                opt = TurboRun(seed, params)
            elif args.optimizer == "saasbo":
                opt = SaasboRun(seed, params)
            elif server is not None:
                opt = BoRun(server, args.optimizer[3:], args.bo_config, seed, params, args.problem, args.bo_pace,
                            args.budget if args.bo_declare_budget else None)
            else:
                raise SystemExit(f"unknown optimiser {args.optimizer}")
            noise = random.Random(seed)
            best, regret, seconds, best_observed, observed_min = math.inf, [], [], [], math.inf
            cells = set()  # distinct cells of the integer and categorical parameters evaluated
            for _ in range(args.budget):
                start = time.perf_counter()
                handle, trial = opt.ask()
                asked = time.perf_counter()
                recorded = space.Cells(trial)
                value = fn(recorded)
                if recorded.cell() is not None:
                    cells.add(recorded.cell())
                observed = value + noise_sd * noise.gauss(0, 1) if noise_sd else value
                evaluated = time.perf_counter()
                opt.tell(handle, observed)
                # Optuna samples inside the objective (define-by-run): its objective time is the
                # sampler's too, and the synthetic objectives take microseconds.
                told = time.perf_counter()
                seconds.append(told - start if args.optimizer in OPTUNA else (asked - start) + (told - evaluated))
                best = min(best, value)
                regret.append(max(best - optimum, 0.0) if optimum is not None else best)
                observed_min = min(observed_min, observed)
                best_observed.append(observed_min)
            if isinstance(opt, HeboRun):
                opt.close()
            run = {"seed": seed, "regret": regret, "suggest_seconds": seconds}
            if isinstance(opt, BoRun):
                run["model"] = opt.about()
            if noise_sd:
                run["best_observed"] = best_observed
            if cells:
                run["cells"] = len(cells)
            runs.append(run)
            print(f"seed {seed}: final {regret[-1]:.3e}, mean {1e3 * statistics.mean(seconds):.1f} ms per trial"
                  + (f", {len(cells)} distinct cells" if cells else ""), flush=True)
    finally:
        if server is not None:
            server.close()
    for at in sorted({a for a in (10, 25, 50, 100, 200, 300) if a <= args.budget} | {args.budget}):
        print(f"  after {at:>4}: {statistics.median(r['regret'][at - 1] for r in runs):.3e}")
    report = {"problem": args.problem, "algorithm": args.optimizer, "budget": args.budget, "optimum": optimum, "runs": runs}
    if server is not None:
        report["pace"] = args.bo_pace
    if args.bo_config:
        report["config"] = args.bo_config
    if server is not None and args.bo_declare_budget:
        report["declared_budget"] = args.budget
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f)


if __name__ == "__main__":
    main()
