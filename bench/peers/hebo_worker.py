"""HEBO's optimiser behind a pipe, for bench.py: it runs in HEBO's own venv (HEBO pins an old
numpy), while the objectives are evaluated in the peers' venv, so every optimiser is measured on
the same function.

One JSON object a line on stdin, one answer a line on stdout:
  {"init": {"params": [...], "seed": N}}  -> {"ok": true}
  {"ask": true}                           -> {"values": {...}}   (every parameter: HEBO has no
                                             conditions, the objective reads the active ones)
  {"tell": value}                         -> {"ok": true}
The parameters are space.py's (name, kind, low, high, log, choices).
"""
import json
import sys

import numpy as np
import pandas as pd
from hebo.design_space.design_space import DesignSpace
from hebo.optimizers.hebo import HEBO


def design_space(params):
    spec = []
    for p in params:
        if p["kind"] == "cat":
            spec.append({"name": p["name"], "type": "cat", "categories": list(p["choices"])})
        elif p["kind"] == "int":
            spec.append({"name": p["name"], "type": "pow_int" if p["log"] else "int", "lb": int(p["low"]), "ub": int(p["high"])})
        else:
            spec.append({"name": p["name"], "type": "pow" if p["log"] else "num", "lb": float(p["low"]), "ub": float(p["high"])})
    return DesignSpace().parse(spec)


def main():
    # The libraries print progress to stdout: answers go to the real one, anything else to stderr.
    answers, sys.stdout = sys.stdout, sys.stderr
    opt, last = None, None
    for line in sys.stdin:
        msg = json.loads(line)
        if "init" in msg:
            np.random.seed(msg["init"]["seed"])
            import torch
            torch.manual_seed(msg["init"]["seed"])
            opt = HEBO(design_space(msg["init"]["params"]), scramble_seed=msg["init"]["seed"])
            answer = {"ok": True}
        elif "ask" in msg:
            last = opt.suggest(n_suggestions=1)
            row = last.iloc[0].to_dict()
            answer = {"values": {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}}
        else:
            opt.observe(last, np.array([[float(msg["tell"])]]))
            answer = {"ok": True}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    pd.options.mode.chained_assignment = None
    main()
