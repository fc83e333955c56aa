"""bo-bench's problems (crates/bo-bench/src/problems/) for the Python peers: each a function of a
trial with Optuna's `suggest_float` / `suggest_int` / `suggest_categorical`, minimised, with its
known optimum.

Problem definitions mirror crates/bo-bench/src/problems/ (classic.rs, trees.rs, high_dim.rs;
constants from the Virtual Library of Simulation Experiments; the tree problems from
Ma & Blaschko 2020 and Zhang, Hung, Lin & Liu). Conditional problems are written
define-by-run: a parameter is suggested only on the branch that uses it (space.py reads the tree
off them for the optimisers that want it declared).

Standard library only.
"""
import math


# Each function once, of a vector; the problems below read their trial's values into it.
def branin_of(u, v):
    b, c, r, s, tt = 5.1 / (4 * math.pi**2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    return (v - b * u**2 + c * u - r) ** 2 + s * (1 - tt) * math.cos(u) + s


def branin(t):
    return branin_of(t.suggest_float("x0", -5, 10), t.suggest_float("x1", 0, 15))


def _hartmann(x, a, p):
    alpha = [1.0, 1.2, 3.0, 3.2]
    return -sum(alpha[i] * math.exp(-sum(a[i][j] * (x[j] - p[i][j]) ** 2 for j in range(len(x)))) for i in range(4))


def hartmann3_of(x):
    a = [[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]]
    p = [[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547], [0.03815, 0.5743, 0.8828]]
    return _hartmann(x, a, p)


def hartmann3(t):
    return hartmann3_of([t.suggest_float(f"x{i}", 0, 1) for i in range(3)])


def hartmann6_of(x):
    a = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
    p = [
        [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ]
    return _hartmann(x, a, p)


def hartmann6(t):
    return hartmann6_of([t.suggest_float(f"x{i}", 0, 1) for i in range(6)])


def ackley_of(x):
    d = len(x)
    return -20 * math.exp(-0.2 * math.sqrt(sum(v * v for v in x) / d)) - math.exp(sum(math.cos(2 * math.pi * v) for v in x) / d) + 20 + math.e


def ackley5(t):
    return ackley_of([t.suggest_float(f"x{i}", -32.768, 32.768) for i in range(5)])


def levy10(t):
    x = [t.suggest_float(f"x{i}", -10, 10) for i in range(10)]
    w = [1 + (v - 1) / 4 for v in x]
    f = math.sin(math.pi * w[0]) ** 2
    f += sum((wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2) for wi in w[:-1])
    return f + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)


def rosenbrock_of(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def rosenbrock4(t):
    return rosenbrock_of([t.suggest_float(f"x{i}", -5, 10) for i in range(4)])


def styblinski_of(x):
    return 0.5 * sum(v**4 - 16 * v * v + 5 * v for v in x)


def styblinski_tang8(t):
    return styblinski_of([t.suggest_float(f"x{i}", -5, 5) for i in range(8)])


def jenatton(t):
    if t.suggest_categorical("x1", ["0", "1"]) == "0":
        r8 = t.suggest_float("r8", 0, 1)
        if t.suggest_categorical("x2", ["0", "1"]) == "0":
            return t.suggest_float("x4", -1, 1) ** 2 + 0.1 + r8
        return t.suggest_float("x5", -1, 1) ** 2 + 0.2 + r8
    r9 = t.suggest_float("r9", 0, 1)
    if t.suggest_categorical("x3", ["0", "1"]) == "0":
        return t.suggest_float("x6", -1, 1) ** 2 + 0.3 + r9
    return t.suggest_float("x7", -1, 1) ** 2 + 0.4 + r9


def jenatton_small(t):
    leaf = lambda v: (v - 0.5) ** 2  # noqa: E731
    if t.suggest_categorical("x1", ["0", "1"]) == "0":
        r8 = t.suggest_float("r8", 0, 1)
        if t.suggest_categorical("x2", ["0", "1"]) == "0":
            return r8 + leaf(t.suggest_float("x4", 0, 1)) + 0.1
        return r8 + leaf(t.suggest_float("x5", 0, 1)) + 0.2
    r9 = t.suggest_float("r9", 0, 1)
    if t.suggest_categorical("x3", ["0", "1"]) == "0":
        return r9 + leaf(t.suggest_float("x6", 0, 1)) + 0.3
    return r9 + leaf(t.suggest_float("x7", 0, 1)) + 0.4


def addtree_toy(t):
    f = t.suggest_float("r0", -1, 1) ** 2 + t.suggest_float("r1", -1, 1) ** 2
    leaf = t.suggest_categorical("t", ["1", "2"])
    return f + sum(t.suggest_float(f"p{leaf}_{i}", -1, 1) ** 2 for i in range(2 if leaf == "1" else 3))


def jenatton3(t):
    f, path, choice = 0.05, "", "c"
    levels = [["A", "B"], ["1", "2"], ["a", "b"]]
    for depth, best in enumerate(["A", "1", "a"]):
        c = t.suggest_categorical(choice, levels[depth])
        f += 0.0 if c == best else 0.15
        path += c
        f += (t.suggest_float(f"v{path}", 0, 1) - 0.3) ** 2
        choice = f"c{path}"
    return f


def _vgg_centre(path, j):
    h = j * 7 + 3
    for b in path.encode():
        h = (h * 31 + b) % 2**64
    return 0.15 + 0.7 * ((h % 1000) / 999)


def vgg16_tree(t):
    weights, best = [1.0, 0.6, 0.3], ["L2", "L1", "L2"]
    f, path, choice = 0.0, "", "b2"
    for block in range(3):
        m = t.suggest_categorical(choice, ["L1", "L2"])
        f += 0.0 if m == best[block] else 0.08
        path += m
        f += weights[block] * sum((t.suggest_float(f"a{path}_{j}", 0, 1) - _vgg_centre(path, j)) ** 2 for j in range(3))
        choice = f"b{block + 3}{path}"
    return f


def branching_nested_synthetic(t):
    x1, x2 = t.suggest_float("x1", -10, 10), t.suggest_float("x2", -5, 5)
    z = t.suggest_categorical("z", ["1", "2"])
    v = float(t.suggest_categorical("v1", ["1", "2", "3"]) if z == "1" else t.suggest_categorical("v2", ["1", "2"]))
    c1, c2 = (3 - 0.5 * v, 5 - v) if z == "1" else (-1 + v, 7 - v)
    f = (v / 2) * math.exp(-((x1 - c1) ** 2)) + (2 / v) * math.exp(-((x1 - c2) ** 2) / 10) + 1 / (x2 * x2 + 1) + float(z)
    return -f


def michalewicz5(t):
    x = [t.suggest_float(f"x{i}", 0, math.pi) for i in range(5)]
    return -sum(math.sin(v) * math.sin((i + 1) * v * v / math.pi) ** 20 for i, v in enumerate(x))


def six_hump_camel(t):
    a, b = t.suggest_float("x0", -3, 3), t.suggest_float("x1", -2, 2)
    return (4 - 2.1 * a * a + a**4 / 3) * a * a + a * b + (-4 + 4 * b * b) * b * b


def mixed_styblinski_tang8(t):
    x = [t.suggest_int(f"x{i}", -5, 5) for i in range(4)] + [t.suggest_float(f"x{i}", -5, 5) for i in range(4, 8)]
    return styblinski_of(x)


_SHIFTS = {"a": ([0.2, 0.8, 0.5], 0.6), "b": ([0.7, 0.3, 0.1], 0.3), "c": ([0.5, 0.5, 0.9], 0.15), "d": ([0.85, 0.15, 0.35], 0.0)}


def categorical_shift(t):
    c = t.suggest_categorical("c", ["a", "b", "c", "d"])
    x = [t.suggest_float(f"x{i}", 0, 1) for i in range(3)]
    centre, lift = _SHIFTS[c]
    return lift + 4 * sum((x[i] - centre[i]) ** 2 for i in range(3))


def ackley_categorical(t):
    x = [float(t.suggest_categorical(f"x{i}", ["-2", "-1", "0", "1", "2"])) for i in range(2)]
    x += [t.suggest_float(f"x{i}", -5, 5) for i in range(2, 5)]
    return ackley_of(x)


def integer_rosenbrock(t):
    v = [t.suggest_int(f"x{i}", -5, 10) for i in range(4)] + [t.suggest_float(f"x{i}", 0, 1) for i in range(4, 6)]
    return rosenbrock_of(v[:4]) + (1 + abs(v[0])) * ((v[4] - 0.3) ** 2 + (v[5] - 0.6) ** 2)


# High-dimensional problems (crates/bo-bench/src/problems/high_dim.rs): which coordinates matter
# is a fixed SplitMix64 Fisher–Yates permutation, the same as bo-bench's.
_MASK = (1 << 64) - 1


def permutation(n, seed):
    state = seed

    def nxt():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = nxt() % (i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def _box(t, d, lo, hi):
    return [t.suggest_float(f"x{i}", lo, hi) for i in range(d)]


def _branin_embedded(t, d):
    x, p = _box(t, d, -1, 1), permutation(d, 1)
    return branin_of(-5 + 15 * (x[p[0]] + 1) / 2, 15 * (x[p[1]] + 1) / 2)


def hartmann6_d100(t):
    x, p = _box(t, 100, -1, 1), permutation(100, 2)
    return hartmann6_of([(x[i] + 1) / 2 for i in p[:6]])


def additive_hartmann3x8_d24(t):
    x, p = _box(t, 24, 0, 1), permutation(24, 3)
    return sum(hartmann3_of([x[i] for i in p[k:k + 3]]) for k in range(0, 24, 3))


def _three_modal(z):
    d = len(z)
    v = 0.01 * d**0.1
    centres = [[0.62, -0.38] + [-0.66] * (d - 2), [0.18, 0.58] + [-0.19] * (d - 2), [-0.58, -0.56] + [0.62] * (d - 2)]
    terms = [math.log(w) - 0.5 * d * math.log(2 * math.pi * v) - sum((a - b) ** 2 for a, b in zip(z, c)) / (2 * v)
             for c, w in zip(centres, [0.1, 0.8, 0.1])]
    m = max(terms)
    return max(m + math.log(sum(math.exp(x - m) for x in terms)), -700.0)


def _kandasamy(t, d, dp, m):
    x, p = _box(t, d, -1, 1), permutation(d, 4)
    return -sum(_three_modal([x[i] for i in p[k * dp:(k + 1) * dp]]) for k in range(m))


PROBLEMS = {
    "branin_d25": (lambda t: _branin_embedded(t, 25), 0.397887),
    "branin_d100": (lambda t: _branin_embedded(t, 100), 0.397887),
    "hartmann6_d100": (hartmann6_d100, -3.32237),
    "additive_hartmann3x8_d24": (additive_hartmann3x8_d24, -3.86278 * 8),
    "kandasamy_10_3_3": (lambda t: _kandasamy(t, 10, 3, 3), -11.289013),
    "kandasamy_24_11_2": (lambda t: _kandasamy(t, 24, 11, 2), -27.356252),
    "michalewicz5": (michalewicz5, -4.687658179),
    "six_hump_camel": (six_hump_camel, -1.0316284535),
    "hartmann6_noisy": (hartmann6, -3.32237),
    "mixed_styblinski_tang8": (mixed_styblinski_tang8, 4 * styblinski_of([-3]) + 4 * -39.16616570377142),
    "categorical_shift": (categorical_shift, 0.0),
    "ackley_categorical": (ackley_categorical, 0.0),
    "integer_rosenbrock": (integer_rosenbrock, 0.0),
    "branin": (branin, 0.397887),
    "hartmann3": (hartmann3, -3.86278),
    "hartmann6": (hartmann6, -3.32237),
    "ackley5": (ackley5, 0.0),
    "levy10": (levy10, 0.0),
    "rosenbrock4": (rosenbrock4, 0.0),
    "styblinski_tang8": (styblinski_tang8, -39.16616570377142 * 8),
    "jenatton": (jenatton, 0.1),
    "jenatton_small": (jenatton_small, 0.1),
    "addtree_toy": (addtree_toy, 0.0),
    "jenatton3": (jenatton3, 0.05),
    "vgg16_tree": (vgg16_tree, 0.0),
    "branching_nested_synthetic": (branching_nested_synthetic, -5.0),
}

# Observation noise (sd) of the noisy problems; regret is measured on the noise-free value.
NOISE = {"branching_nested_synthetic": 0.2, "hartmann6_noisy": 0.1}
