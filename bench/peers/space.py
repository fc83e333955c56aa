"""A problem's search space read off its define-by-run objective, for the optimisers that want
one declared up front (SMAC3's ConfigSpace, HEBO's DesignSpace, bo's Vertex study spec).

The problems (problems.py, sklearn_problems.py) are functions of a trial with Optuna's
`suggest_float` / `suggest_int` / `suggest_categorical`. `discover` runs such a function with a
recording trial once for every combination of categorical choices it reaches (depth first), and
infers each parameter's condition: a parameter missing from some runs is the child of the latest
categorical parameter, decided before it in every run that has it, whose values tell exactly the
runs that have it. `Fixed` then evaluates the function at a given configuration.

Standard library only.
"""
from dataclasses import dataclass, field

# More runs than this to enumerate the categorical choices: the problem is refused (not one of
# bench's; none comes near).
MAX_PATHS = 5000


@dataclass
class Param:
    name: str
    kind: str  # "float" | "int" | "cat"
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple = ()
    # The categorical parent and the values of it under which this parameter is active.
    parent: str = None
    parent_values: tuple = ()
    children: list = field(default_factory=list)


class _Recorder:
    """A trial that records each suggestion: categoricals take the forced value or their first
    choice; numbers a value inside their range."""

    def __init__(self, forced):
        self.forced = forced
        self.calls = []  # (name, domain tuple)
        self.choices = {}  # categorical name -> value, in order

    def suggest_float(self, name, low, high, log=False):
        self.calls.append((name, ("float", low, high, log, ())))
        return (low * high) ** 0.5 if log else (low + high) / 2

    def suggest_int(self, name, low, high, log=False):
        self.calls.append((name, ("int", low, high, log, ())))
        return low

    def suggest_categorical(self, name, choices):
        choices = tuple(choices)
        self.calls.append((name, ("cat", 0, 0, False, choices)))
        value = self.forced.get(name, choices[0])
        self.choices[name] = value
        return value


def discover(fn):
    """The parameters of `fn`'s space, parents before children, each with its condition."""
    paths = []  # each: (ordered names, {categorical: value})
    domains = {}
    stack = [{}]
    seen = set()
    while stack:
        forced = stack.pop()
        key = tuple(sorted(forced.items()))
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > MAX_PATHS:
            raise SystemExit(f"more than {MAX_PATHS} combinations of categorical choices")
        rec = _Recorder(forced)
        fn(rec)
        names = [n for n, _ in rec.calls]
        for n, d in rec.calls:
            if domains.setdefault(n, d) != d:
                raise SystemExit(f"parameter {n} is suggested with two domains: {domains[n]} and {d}")
        paths.append((names, dict(rec.choices)))
        # Branch on every categorical reached whose value was not forced: the choices before it
        # as they were, it at each other value.
        prefix = {}
        for n in names:
            if n in rec.choices:
                if n not in forced:
                    for v in domains[n][4]:
                        if v != rec.choices[n]:
                            stack.append({**prefix, n: v})
                prefix[n] = rec.choices[n]
    order = []
    for names, _ in paths:
        for n in names:
            if n not in order:
                order.append(n)
    params = {}
    for n in order:
        kind, low, high, log, choices = domains[n]
        params[n] = Param(n, kind, low, high, log, choices)
    for n in order:
        having = [(names, ch) for names, ch in paths if n in names]
        if len(having) == len(paths):
            continue
        parent = None
        # The latest categorical decided before n in every run that has n.
        candidates = [c for c in order if c in params and params[c].kind == "cat"
                      and all(c in ch and names.index(c) < names.index(n) for names, ch in having)]
        for c in reversed(candidates):
            values = {ch[c] for _, ch in having}
            if all((n in names) == (c in ch and ch[c] in values) for names, ch in paths):
                parent = (c, tuple(v for v in params[c].choices if v in values))
                break
        if parent is None:
            raise SystemExit(f"parameter {n}: no categorical parent tells when it is active")
        params[n].parent, params[n].parent_values = parent
        params[parent[0]].children.append(n)
    return [params[n] for n in order]


class Fixed:
    """A trial answering every suggestion from `values` (the inactive parameters are never asked)."""

    def __init__(self, values):
        self.values = values

    def suggest_float(self, name, low, high, log=False):
        return float(self.values[name])

    def suggest_int(self, name, low, high, log=False):
        return int(round(float(self.values[name])))

    def suggest_categorical(self, name, choices):
        v = self.values[name]
        # A categorical's value comes back as given (strings throughout bench's problems).
        return v if v in choices else str(v)


def active(params, values):
    """The names of the parameters active under `values` (a full assignment of the flat space)."""
    by_name = {p.name: p for p in params}
    out = []
    for p in params:
        if p.parent is None or (p.parent in out and values.get(p.parent) in p.parent_values):
            out.append(p.name)
    return [n for n in out if n in by_name]


class Cells:
    """Forwards a trial's suggestions and keeps the integer and categorical answers: the cell of
    the discrete parameters the evaluation landed in (`cell()`; None when it asked none)."""

    def __init__(self, trial):
        self.trial, self.discrete = trial, {}

    def suggest_float(self, name, low, high, log=False):
        return self.trial.suggest_float(name, low, high, log=log)

    def suggest_int(self, name, low, high, log=False):
        v = self.trial.suggest_int(name, low, high, log=log)
        self.discrete[name] = v
        return v

    def suggest_categorical(self, name, choices):
        v = self.trial.suggest_categorical(name, choices)
        self.discrete[name] = v
        return v

    def cell(self):
        return tuple(sorted((k, repr(v)) for k, v in self.discrete.items())) or None
