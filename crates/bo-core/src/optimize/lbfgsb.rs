//! Box-constrained minimisation: a projected L-BFGS in the spirit of L-BFGS-B (Byrd, Lu,
//! Nocedal & Zhu 1995). Variables at a bound whose gradient pushes outward are held fixed; the
//! quasi-Newton direction (two-loop recursion, Nocedal & Wright 2006, Alg. 7.4) is taken over
//! the free variables; a backtracking Armijo search runs along the projected path.
//!
//! Written here rather than taken from a crate because none fitted, measured on this machine:
//! `lbfgsb-rs-pure` 0.1.2 stopped on Rosenbrock at f = 3.3 with a line-search failure after 8
//! iterations; the `lbfgsb` bindings need libclang at build time; argmin's L-BFGS has no bounds.
//! This one passes the tests below (Rosenbrock, active bounds, non-finite values).

/// The result of a minimisation.
#[derive(Clone, Debug)]
pub struct Minimum {
    /// The best point found.
    pub x: Vec<f64>,
    /// Its value.
    pub f: f64,
}

/// Corrections kept.
const MEMORY: usize = 10;
/// Armijo's sufficient-decrease constant.
const C1: f64 = 1e-4;
/// Stop when the projected gradient's largest entry is below this.
const PG_TOL: f64 = 1e-8;
/// Halvings of the step before a line search gives up.
const MAX_HALVINGS: usize = 40;
/// Stop when an iteration improves f by less than this, relatively, by default (scipy's
/// L-BFGS-B default `factr = 1e7` is 2.2e-9).
pub const F_TOL: f64 = 1e-12;

/// Minimises `f_and_grad` (value and gradient) from `x0` within `[lower, upper]` (clamped
/// first), for at most `max_iter` iterations. A non-finite value counts as +∞.
pub fn minimize(f_and_grad: impl FnMut(&[f64]) -> (f64, Vec<f64>), x0: &[f64], lower: &[f64], upper: &[f64], max_iter: usize) -> Minimum {
    minimize_with_tolerance(f_and_grad, x0, lower, upper, max_iter, F_TOL)
}

/// [`minimize`], stopping once an iteration improves f by less than `f_tol` relatively.
pub fn minimize_with_tolerance(
    mut f_and_grad: impl FnMut(&[f64]) -> (f64, Vec<f64>),
    x0: &[f64],
    lower: &[f64],
    upper: &[f64],
    max_iter: usize,
    f_tol: f64,
) -> Minimum {
    let mut run = Lbfgsb::new(x0, lower, upper, max_iter, f_tol);
    while let Some(x) = run.point() {
        crate::pace::checkpoint();
        let (f, g) = f_and_grad(x);
        run.tell(f, g);
    }
    run.minimum()
}

/// Runs several minimisations in lock-step: each round asks `f_and_grad_batch` for the values
/// and gradients at every unfinished run's next point at once (with the runs' indices), so a
/// caller whose evaluations share work — a GP posterior reads its whole factor per call — pays
/// for it once per round.
pub fn minimize_batch(
    mut f_and_grad_batch: impl FnMut(&[usize], &[Vec<f64>]) -> Vec<(f64, Vec<f64>)>,
    mut runs: Vec<Lbfgsb>,
) -> Vec<Minimum> {
    loop {
        let active: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].point().is_some()).collect();
        if active.is_empty() {
            break;
        }
        let points: Vec<Vec<f64>> = active.iter().map(|&i| runs[i].point().expect("active").to_vec()).collect();
        crate::pace::checkpoint();
        let results = f_and_grad_batch(&active, &points);
        for (&i, (f, g)) in active.iter().zip(results) {
            runs[i].tell(f, g);
        }
    }
    runs.into_iter().map(Lbfgsb::minimum).collect()
}

/// Where a run is.
#[derive(Clone, Debug)]
enum Phase {
    /// The starting point needs its value.
    Start,
    /// Backtracking along the projected path `P(x + t d)`: `trial` needs its value.
    Search { d: Vec<f64>, t: f64, halvings: usize, trial: Vec<f64>, decrease: f64 },
    /// Finished.
    Done,
}

/// One box-constrained L-BFGS minimisation as a state machine: [`Lbfgsb::point`] is where it
/// needs the function next, [`Lbfgsb::tell`] gives the value and gradient there.
#[derive(Clone, Debug)]
pub struct Lbfgsb {
    lower: Vec<f64>,
    upper: Vec<f64>,
    max_iter: usize,
    f_tol: f64,
    iter: usize,
    x: Vec<f64>,
    f: f64,
    g: Vec<f64>,
    s_hist: Vec<Vec<f64>>,
    y_hist: Vec<Vec<f64>>,
    phase: Phase,
}

impl Lbfgsb {
    /// A run from `x0` (clamped into the box).
    pub fn new(x0: &[f64], lower: &[f64], upper: &[f64], max_iter: usize, f_tol: f64) -> Lbfgsb {
        let x = x0.iter().zip(lower.iter().zip(upper)).map(|(x, (l, u))| x.clamp(*l, *u)).collect();
        Lbfgsb {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
            max_iter,
            f_tol,
            iter: 0,
            x,
            f: f64::INFINITY,
            g: vec![0.0; x0.len()],
            s_hist: Vec::new(),
            y_hist: Vec::new(),
            phase: Phase::Start,
        }
    }

    /// The point whose value and gradient the run needs, or `None` when it has finished.
    pub fn point(&self) -> Option<&[f64]> {
        match &self.phase {
            Phase::Start => Some(&self.x),
            Phase::Search { trial, .. } => Some(trial),
            Phase::Done => None,
        }
    }

    /// The value and gradient at [`Lbfgsb::point`]. A non-finite value counts as +∞.
    pub fn tell(&mut self, f: f64, g: Vec<f64>) {
        let (f, g) = if f.is_finite() && g.iter().all(|v| v.is_finite()) { (f, g) } else { (f64::INFINITY, vec![0.0; self.x.len()]) };
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Start => {
                self.f = f;
                self.g = g;
                if f.is_finite() {
                    self.next_iteration();
                }
            }
            Phase::Search { d, t, halvings, trial, decrease } => {
                if f <= self.f + C1 * decrease {
                    self.accept(trial, f, g);
                } else {
                    self.search(d, 0.5 * t, halvings + 1);
                }
            }
            Phase::Done => {}
        }
    }

    /// The best point so far (the current iterate: every accepted step decreases f).
    pub fn minimum(self) -> Minimum {
        Minimum { x: self.x, f: self.f }
    }

    /// Starts an iteration from the current iterate, or finishes.
    fn next_iteration(&mut self) {
        let n = self.x.len();
        if self.iter >= self.max_iter {
            self.phase = Phase::Done;
            return;
        }
        let (x, g) = (&self.x, &self.g);
        // Variables held at a bound: the gradient pushes them out of the box.
        let free: Vec<bool> = (0..n).map(|i| !((x[i] <= self.lower[i] && g[i] > 0.0) || (x[i] >= self.upper[i] && g[i] < 0.0))).collect();
        let pg_max = (0..n).filter(|&i| free[i]).map(|i| g[i].abs()).fold(0.0, f64::max);
        if pg_max < PG_TOL {
            self.phase = Phase::Done;
            return;
        }
        let mut d = two_loop(g, &free, &self.s_hist, &self.y_hist);
        let slope: f64 = (0..n).map(|i| g[i] * d[i]).sum();
        if slope >= 0.0 || self.s_hist.is_empty() {
            // Steepest descent over the free variables, scaled to a unit step.
            let norm = (0..n).filter(|&i| free[i]).map(|i| g[i] * g[i]).sum::<f64>().sqrt().max(1e-300);
            d = (0..n).map(|i| if free[i] { -g[i] / norm.max(1.0) } else { 0.0 }).collect();
            self.s_hist.clear();
            self.y_hist.clear();
        }
        self.search(d, 1.0, 0);
    }

    /// The next trial step of the backtracking search along `d`, skipping steps whose projection
    /// does not point downhill (they could never be accepted).
    fn search(&mut self, d: Vec<f64>, mut t: f64, mut halvings: usize) {
        let n = self.x.len();
        while halvings < MAX_HALVINGS {
            let trial: Vec<f64> = (0..n).map(|i| (self.x[i] + t * d[i]).clamp(self.lower[i], self.upper[i])).collect();
            let decrease: f64 = (0..n).map(|i| self.g[i] * (trial[i] - self.x[i])).sum();
            if decrease < 0.0 {
                self.phase = Phase::Search { d, t, halvings, trial, decrease };
                return;
            }
            t *= 0.5;
            halvings += 1;
        }
        // No decrease along d.
        self.iter += 1;
        if self.s_hist.is_empty() {
            self.phase = Phase::Done; // even steepest descent failed: a (local) minimum within tolerance
        } else {
            self.s_hist.clear();
            self.y_hist.clear();
            self.next_iteration();
        }
    }

    /// Moves to an accepted step and starts the next iteration, or finishes.
    fn accept(&mut self, x_new: Vec<f64>, f_new: f64, g_new: Vec<f64>) {
        let n = self.x.len();
        let s: Vec<f64> = (0..n).map(|i| x_new[i] - self.x[i]).collect();
        let y: Vec<f64> = (0..n).map(|i| g_new[i] - self.g[i]).collect();
        let sy: f64 = s.iter().zip(&y).map(|(a, b)| a * b).sum();
        if sy > 1e-12 * s.iter().map(|v| v * v).sum::<f64>().sqrt() * y.iter().map(|v| v * v).sum::<f64>().sqrt() {
            if self.s_hist.len() == MEMORY {
                self.s_hist.remove(0);
                self.y_hist.remove(0);
            }
            self.s_hist.push(s);
            self.y_hist.push(y);
        }
        let improvement = self.f - f_new;
        self.x = x_new;
        self.f = f_new;
        self.g = g_new;
        self.iter += 1;
        if improvement <= self.f_tol * self.f.abs().max(1.0) {
            self.phase = Phase::Done;
        } else {
            self.next_iteration();
        }
    }
}

/// `−H g` over the free variables by the two-loop recursion, `H₀ = γI` with `γ = sᵀy / yᵀy` of
/// the latest pair; zero on the fixed variables.
fn two_loop(g: &[f64], free: &[bool], s_hist: &[Vec<f64>], y_hist: &[Vec<f64>]) -> Vec<f64> {
    let dot = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).zip(free).filter(|(_, f)| **f).map(|((x, y), _)| x * y).sum() };
    let mut q: Vec<f64> = g.iter().zip(free).map(|(v, f)| if *f { *v } else { 0.0 }).collect();
    let mut alphas = Vec::with_capacity(s_hist.len());
    for (s, y) in s_hist.iter().zip(y_hist).rev() {
        let rho = 1.0 / dot(y, s);
        if !rho.is_finite() || rho <= 0.0 {
            alphas.push(0.0);
            continue;
        }
        let a = rho * dot(s, &q);
        for i in 0..q.len() {
            if free[i] {
                q[i] -= a * y[i];
            }
        }
        alphas.push(a);
    }
    let gamma = match (s_hist.last(), y_hist.last()) {
        (Some(s), Some(y)) => {
            let yy = dot(y, y);
            if yy > 0.0 { dot(s, y) / yy } else { 1.0 }
        }
        _ => 1.0,
    };
    let mut r: Vec<f64> = q.iter().map(|v| gamma * v).collect();
    for ((s, y), a) in s_hist.iter().zip(y_hist).zip(alphas.iter().rev()) {
        let rho = 1.0 / dot(y, s);
        if !rho.is_finite() || rho <= 0.0 {
            continue;
        }
        let b = rho * dot(y, &r);
        for i in 0..r.len() {
            if free[i] {
                r[i] += s[i] * (a - b);
            }
        }
    }
    r.iter().zip(free).map(|(v, f)| if *f { -v } else { 0.0 }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_rosenbrock_minimum_inside_the_box() {
        let rosen = |p: &[f64]| {
            let (x, y) = (p[0], p[1]);
            let f = (1.0 - x).powi(2) + 100.0 * (y - x * x).powi(2);
            (f, vec![-2.0 * (1.0 - x) - 400.0 * x * (y - x * x), 200.0 * (y - x * x)])
        };
        let m = minimize(rosen, &[-1.2, 1.0], &[-2.0, -2.0], &[2.0, 2.0], 500);
        assert!((m.x[0] - 1.0).abs() < 1e-4 && (m.x[1] - 1.0).abs() < 1e-4, "{m:?}");
    }

    #[test]
    fn stops_on_an_active_bound() {
        let m = minimize(
            |p| ((p[0] - 2.0).powi(2) + p[1] * p[1], vec![2.0 * (p[0] - 2.0), 2.0 * p[1]]),
            &[0.5, 0.5],
            &[0.0, -1.0],
            &[1.0, 1.0],
            100,
        );
        assert!((m.x[0] - 1.0).abs() < 1e-9 && m.x[1].abs() < 1e-6, "{m:?}");
    }

    #[test]
    fn solves_a_ten_dimensional_problem_with_some_bounds_active() {
        // Σ i (x_i − c_i)² + extended Rosenbrock coupling; c outside the box for half the coordinates.
        let c: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 1.5 } else { 0.3 }).collect();
        let f = |p: &[f64]| {
            let mut v = 0.0;
            let mut g = vec![0.0; 10];
            for i in 0..10 {
                let w = (i + 1) as f64;
                v += w * (p[i] - c[i]).powi(2);
                g[i] += 2.0 * w * (p[i] - c[i]);
            }
            (v, g)
        };
        let m = minimize(f, &[0.5; 10], &[0.0; 10], &[1.0; 10], 200);
        for i in 0..10 {
            let want = if i % 2 == 0 { 1.0 } else { 0.3 };
            assert!((m.x[i] - want).abs() < 1e-6, "x[{i}] = {}", m.x[i]);
        }
        let rosen = |p: &[f64]| {
            let mut v = 0.0;
            let mut g = vec![0.0; p.len()];
            for i in 0..p.len() - 1 {
                v += 100.0 * (p[i + 1] - p[i] * p[i]).powi(2) + (1.0 - p[i]).powi(2);
                g[i] += -400.0 * p[i] * (p[i + 1] - p[i] * p[i]) - 2.0 * (1.0 - p[i]);
                g[i + 1] += 200.0 * (p[i + 1] - p[i] * p[i]);
            }
            (v, g)
        };
        // (From x₁ ≈ −1 it converges to the local minimum f ≈ 3.93 of the 5-D function instead.)
        let m = minimize(rosen, &[0.2, 0.5, -0.5, 0.8, 0.0], &[-2.0; 5], &[2.0; 5], 2000);
        assert!(m.f < 1e-8, "{m:?}");
    }

    #[test]
    fn a_batch_of_runs_finds_what_each_run_finds_alone() {
        let quad = |p: &[f64]| ((p[0] - 0.3).powi(2) + 3.0 * (p[1] + 0.2).powi(2), vec![2.0 * (p[0] - 0.3), 6.0 * (p[1] + 0.2)]);
        let starts = [[0.9, 0.9], [-0.9, 0.1], [0.0, -1.0]];
        let (lower, upper) = ([-1.0, -1.0], [1.0, 1.0]);
        let runs = starts.iter().map(|s| Lbfgsb::new(s, &lower, &upper, 100, F_TOL)).collect();
        let mut calls = 0;
        let batch = minimize_batch(
            |_, xs| {
                calls += 1;
                xs.iter().map(|x| quad(x)).collect()
            },
            runs,
        );
        for (start, m) in starts.iter().zip(&batch) {
            let alone = minimize(quad, start, &lower, &upper, 100);
            assert_eq!(alone.x, m.x, "lock-step changes nothing for one run");
            assert!((m.x[0] - 0.3).abs() < 1e-6 && (m.x[1] + 0.2).abs() < 1e-6, "{m:?}");
        }
        assert!(calls > 0);
    }

    #[test]
    fn survives_non_finite_values() {
        let m = minimize(
            |p| if p[0] > 0.5 { (f64::NAN, vec![f64::NAN]) } else { ((p[0] - 0.2).powi(2), vec![2.0 * (p[0] - 0.2)]) },
            &[0.4],
            &[0.0],
            &[1.0],
            100,
        );
        assert!((m.x[0] - 0.2).abs() < 1e-5, "{m:?}");
    }
}
