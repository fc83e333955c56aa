#!/usr/bin/env bash
# The held-out suite (bench/peers/heldout.py) for bo and its peers, one class at a time, into DIR;
# bench/heldout_report.py makes the tables.
#   bash bench/peers/heldout.sh DIR CLASS [OPTIMISER...]
# CLASS: bbob5, bbob10, mixint5, mixint10, low-dim, tuning. Optimisers default to the class's set
# below; budgets are the suite's (20·D for BBOB and mixed-integer BBOB, 150 for low effective
# dimension, 60 for real tuning); seeds:
# SEEDS (5), SLOW_SEEDS (3) for GPSampler, BoTorch (botorch, turbo, saasbo) and HEBO, which take 0.1-8 s a step; HALF
# (tuning or validation) runs one half of the class; BO_PACE (free or fitted) is bench.py's
# --bo-pace, and fitted runs are written as bo-AUTO@fitted; BO_CONFIG (JSON) is bo's
# algorithmConfig (bench.py's --bo-config), its runs written as bo-AUTO+<the config's letters and
# digits>-<its hash> and reported under the config; ONLY (names separated by spaces) keeps
# those of the class's problems, the slow peers' fixed subset; BO_SERVER names the bo-server
# binary (default target/release/bo-server, cargo build --release -p bo-server), so that a run can
# go on from a copy while the tree is rebuilt; BUDGET replaces the class's budget (a study that
# stops early; give it a DIR of its own, as a file's name does not say its budget);
# BO_DECLARE_BUDGET=1 creates bo's studies with maxNumTrials = the budget (bench.py's
# --bo-declare-budget), its runs written as bo-AUTO#<budget>.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1 class=$2
shift 2
mkdir -p "$dir"
seeds=${SEEDS:-5} slow_seeds=${SLOW_SEEDS:-3}
# One thread per evaluation: scikit-learn's OpenMP models (HistGradientBoosting) spin a thread per
# core, and two runs side by side then took ten times as long per evaluation.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
py=target/peers/venv/bin/python
# HALF=tuning or HALF=validation runs that half of the class only (the slow peers' budget).
problems() {
    (cd bench/peers && "../../$py" -c "
import heldout, sys
names = heldout.CLASSES[sys.argv[1]]
half = sys.argv[2]
only = sys.argv[3].split()
print(' '.join(n for n in names if (not half or heldout.half(n) == half) and (not only or n in only)))" "$1" "${HALF:-}" "${ONLY:-}")
}
case "$class" in
    bbob5) list=$(problems "bbob d5"); budget=100; default="bo:AUTO random tpe cma gp botorch" ;;
    bbob10) list=$(problems "bbob d10"); budget=200; default="bo:AUTO random tpe cma gp botorch" ;;
    mixint5) list=$(problems "mixint d5"); budget=100; default="bo:AUTO random tpe smac gp hebo" ;;
    mixint10) list=$(problems "mixint d10"); budget=200; default="bo:AUTO random tpe smac gp hebo" ;;
    low-dim) list=$(problems "low effective dimension"); budget=150; default="bo:AUTO bo:GP_BANDIT random tpe cma gp" ;;
    tuning) list=$(problems "real tuning"); budget=60; default="bo:AUTO random tpe smac gp" ;;
    *) echo "unknown class $class (bbob5, bbob10, mixint5, mixint10, low-dim, tuning)" >&2; exit 2 ;;
esac
budget=${BUDGET:-$budget}
optimisers=${*:-$default}
for problem in $list; do
    for opt in $optimisers; do
        pace=${BO_PACE:-free} extra=()
        out="$dir/${problem}_${opt/:/-}.json"
        if [ "${opt%%:*}" = bo ] && [ "$pace" != free ]; then
            out="$dir/${problem}_${opt/:/-}@$pace.json" extra=(--bo-pace "$pace")
        fi
        if [ "${opt%%:*}" = bo ] && [ -n "${BO_CONFIG:-}" ]; then
            # The letters say which config; the hash keeps two that differ only in punctuation
            # ({"a":1.5} and {"a":15}) from sharing a file, which the skip above would reuse.
            tag="$(printf %s "$BO_CONFIG" | tr -cd '[:alnum:]' | cut -c1-60)-$(printf %s "$BO_CONFIG" | sha256sum | cut -c1-8)"
            out="${out%.json}+$tag.json" extra+=(--bo-config "$BO_CONFIG")
        fi
        if [ "${opt%%:*}" = bo ] && [ -n "${BO_DECLARE_BUDGET:-}" ]; then
            out="${out%.json}#$budget.json" extra+=(--bo-declare-budget)
        fi
        if [ "${opt%%:*}" = bo ] && [ -n "${BO_SERVER:-}" ]; then
            extra+=(--bo-server "$BO_SERVER")
        fi
        [ -f "$out" ] && continue
        n=$seeds
        case "$opt" in gp|botorch|hebo|turbo|saasbo) n=$slow_seeds ;; esac
        echo "== $problem $opt ($n seeds, budget $budget)"
        bash bench/peers/run.sh --problem "$problem" --optimizer "$opt" --budget "$budget" --seeds "$n" --out "$out.tmp" "${extra[@]}" \
            && mv "$out.tmp" "$out" || echo "!! $problem $opt failed"
    done
done
