//! Dense linear algebra for Gaussian processes, on faer: Cholesky factorisation with a jitter
//! ladder, triangular solves, the log-determinant, the inverse, and the extension of a factor
//! in place when points are added (so a new observation or fantasy costs O(n²), not O(n³)).
//!
//! Owns no statistics: it does not know what the matrix is.

use faer::{Col, Mat, MatRef, Side};

/// Jitter added to the diagonal, as a fraction of its mean, on each retry.
const JITTER_LADDER: [f64; 7] = [0.0, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3];

/// The matrix could not be factorised.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum LinalgError {
    /// Still not positive definite with the largest jitter of the ladder.
    #[error("matrix is not positive definite (pivot {pivot}) even with jitter {jitter:e}")]
    NotPositiveDefinite {
        /// The first pivot that failed.
        pivot: usize,
        /// The last jitter tried (absolute).
        jitter: f64,
    },
    /// The matrix has a NaN or infinite entry.
    #[error("matrix has a non-finite entry")]
    NonFinite,
}

/// `Σᵢ aᵢ bᵢ`, summed in eight independent lanes so the compiler vectorises it (a plain `sum()`
/// is one dependent chain of additions).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca.remainder().iter().zip(cb.remainder()).map(|(u, v)| u * v).sum();
    for (u, v) in ca.zip(cb) {
        for k in 0..8 {
            lanes[k] += u[k] * v[k];
        }
    }
    ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])) + tail
}

/// How many threads each factorisation, solve and product may use (1: the calling thread), for
/// the whole process. Measured with `bo-bench latency` on 2 cores: one thread was as fast or
/// faster at every n ≤ 2,000 (cold fit at n = 200, D = 5: 0.22 s against 0.36 s with two; at
/// n = 1,000, D = 20: 0.81 s against 1.15 s) — rayon's hand-offs cost more than they gain on
/// these sizes — and a server's worker pool already keeps every core busy with one study each.
pub fn set_threads(threads: usize) {
    faer::set_global_parallelism(if threads <= 1 { faer::Par::Seq } else { faer::Par::rayon(threads) });
}

/// The lower Cholesky factor `L` of `K + jitter·I = L Lᵀ`.
#[derive(Debug)]
pub struct Cholesky {
    l: Mat<f64>,
    jitter: f64,
    /// Rows and columns `l` can grow to without reallocating.
    capacity: usize,
}

impl Clone for Cholesky {
    /// An exact-size copy (use [`Cholesky::with_room`] for one to extend).
    fn clone(&self) -> Cholesky {
        Cholesky { l: self.l.clone(), jitter: self.jitter, capacity: self.dim() }
    }
}

impl Cholesky {
    /// Factorises the symmetric `k`, adding the smallest jitter of the ladder that makes it
    /// positive definite.
    pub fn new(k: &Mat<f64>) -> Result<Cholesky, LinalgError> {
        let n = k.nrows();
        if (0..n).any(|j| (0..n).any(|i| !k[(i, j)].is_finite())) {
            return Err(LinalgError::NonFinite);
        }
        let mean_diag = if n == 0 { 1.0 } else { ((0..n).map(|i| k[(i, i)]).sum::<f64>() / n as f64).abs().max(1e-300) };
        let mut last = LinalgError::NonFinite;
        for step in JITTER_LADDER {
            let jitter = step * mean_diag;
            let mut kj = k.clone();
            for i in 0..n {
                kj[(i, i)] += jitter;
            }
            match kj.llt(Side::Lower) {
                Ok(llt) => return Ok(Cholesky { l: llt.L().to_owned(), jitter, capacity: n }),
                Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => {
                    last = LinalgError::NotPositiveDefinite { pivot: index, jitter };
                }
            }
        }
        Err(last)
    }

    /// The size `n`.
    pub fn dim(&self) -> usize {
        self.l.nrows()
    }

    /// The jitter that was added to the diagonal.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The factor `L`.
    pub fn l(&self) -> &Mat<f64> {
        &self.l
    }

    /// `L⁻¹ b`.
    pub fn solve_lower(&self, b: &[f64]) -> Vec<f64> {
        let mut col = Col::from_fn(b.len(), |i| b[i]);
        self.l.as_ref().solve_lower_triangular_in_place(col.as_mut());
        col.iter().copied().collect()
    }

    /// `K⁻¹ b = L⁻ᵀ L⁻¹ b`.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut col = Col::from_fn(b.len(), |i| b[i]);
        self.l.as_ref().solve_lower_triangular_in_place(col.as_mut());
        self.l.as_ref().transpose().solve_upper_triangular_in_place(col.as_mut());
        col.iter().copied().collect()
    }

    /// `K⁻¹ B` for a matrix `B` (columns solved at once).
    pub fn solve_mat(&self, b: &Mat<f64>) -> Mat<f64> {
        self.solve_columns(b.clone(), true)
    }

    /// `L⁻¹ B` for a matrix `B` (columns solved at once), in `B`'s own storage.
    pub fn solve_lower_mat(&self, b: Mat<f64>) -> Mat<f64> {
        self.solve_columns(b, false)
    }

    /// `L⁻¹ B`, then `L⁻ᵀ` of that when `both`, in `B`'s storage. faer solves a lone column by
    /// another kernel than several, rounding differently in the last bit; a lone column is solved
    /// beside a zero one, so each column's result is the same whatever else is solved with it
    /// (what lets a candidate search split a batch over threads, `gp/tests.rs`).
    fn solve_columns(&self, mut b: Mat<f64>, both: bool) -> Mat<f64> {
        let lone = b.ncols() == 1;
        if lone {
            b.resize_with(b.nrows(), 2, |_, _| 0.0);
        }
        self.l.as_ref().solve_lower_triangular_in_place(b.as_mut());
        if both {
            self.l.as_ref().transpose().solve_upper_triangular_in_place(b.as_mut());
        }
        if lone {
            b.truncate(b.nrows(), 1);
        }
        b
    }

    /// `log |K| = 2 Σ log Lᵢᵢ`.
    pub fn log_det(&self) -> f64 {
        2.0 * (0..self.dim()).map(|i| self.l[(i, i)].ln()).sum::<f64>()
    }

    /// `K⁻¹` (symmetric, both triangles filled), from the factor in about n³ flops.
    pub fn inverse(&self) -> Mat<f64> {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::linalg::cholesky::llt;
        let n = self.dim();
        let par = faer::get_global_parallelism();
        let mut out = Mat::zeros(n, n);
        let mut mem = MemBuffer::new(llt::inverse::inverse_scratch::<f64>(n, par));
        llt::inverse::inverse(out.as_mut(), self.l.as_ref(), par, MemStack::new(&mut mem));
        // faer writes the lower triangle.
        for j in 0..n {
            for i in j + 1..n {
                out[(j, i)] = out[(i, j)];
            }
        }
        out
    }

    /// The heap the factor holds, in bytes (at the size it can grow to without reallocating).
    pub fn memory_bytes(&self) -> usize {
        8 * self.capacity.max(self.dim()).pow(2)
    }

    /// A copy of the factor with room to be extended by `extra` rows and columns without
    /// reallocating (see [`Cholesky::extend`]).
    pub fn with_room(&self, extra: usize) -> Cholesky {
        let n = self.dim();
        let mut l = Mat::with_capacity(n + extra, n + extra);
        l.resize_with(n, n, |i, j| self.l[(i, j)]);
        Cholesky { l, jitter: self.jitter, capacity: n + extra }
    }

    /// Extends the factor in place to that of `[[K, B], [Bᵀ, C]]` (`B`: n×p, `C`: p×p; the
    /// factor's jitter is added to `C`'s diagonal too) in O(n²p + p³): `L₂₁ = (L⁻¹B)ᵀ`,
    /// `L₂₂ = chol(C − L₂₁L₂₁ᵀ)`. Storage grows geometrically, so extending point by point
    /// does not copy the factor each time. On error the factor is unchanged.
    pub fn extend(&mut self, b: MatRef<'_, f64>, c: MatRef<'_, f64>) -> Result<(), LinalgError> {
        let (n, p) = (self.dim(), c.nrows());
        assert_eq!((b.nrows(), b.ncols(), c.ncols()), (n, p, p), "extend: B must be n×p and C p×p");
        if p == 0 {
            return Ok(());
        }
        let mut w = b.to_owned();
        self.l.as_ref().solve_lower_triangular_in_place(w.as_mut());
        let mut schur = c.to_owned() - w.transpose() * &w;
        for i in 0..p {
            schur[(i, i)] += self.jitter;
        }
        if (0..p).any(|j| (0..p).any(|i| !schur[(i, j)].is_finite())) {
            return Err(LinalgError::NonFinite);
        }
        let l22 = match schur.llt(Side::Lower) {
            Ok(llt) => llt.L().to_owned(),
            Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => {
                return Err(LinalgError::NotPositiveDefinite { pivot: n + index, jitter: self.jitter });
            }
        };
        if n + p > self.capacity {
            self.capacity = (n + p).max(self.capacity + self.capacity / 4 + 16);
            self.l.reserve(self.capacity, self.capacity);
        }
        self.l.resize_with(n + p, n + p, |i, j| match (i >= n, j >= n) {
            (true, false) => w[(j, i - n)],
            (true, true) if i >= j => l22[(i - n, j - n)],
            _ => 0.0,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> Mat<f64> {
        // A Gram matrix of a squared-exponential kernel on a grid, plus a little noise.
        Mat::from_fn(n, n, |i, j| {
            let d = (i as f64 - j as f64) / n as f64;
            (-d * d * 8.0).exp() + if i == j { 1e-3 } else { 0.0 }
        })
    }

    #[test]
    fn solve_inverts_and_log_det_matches_the_product_of_pivots() {
        let k = spd(30);
        let c = Cholesky::new(&k).unwrap();
        assert_eq!(c.jitter(), 0.0);
        let b: Vec<f64> = (0..30).map(|i| (i as f64).sin()).collect();
        let x = c.solve(&b);
        let kx: Vec<f64> = (0..30).map(|i| (0..30).map(|j| k[(i, j)] * x[j]).sum()).collect();
        for (u, v) in kx.iter().zip(&b) {
            assert!((u - v).abs() < 1e-8, "{u} vs {v}");
        }
        let inv = c.inverse();
        let id = &k * &inv;
        for i in 0..30 {
            for j in 0..30 {
                assert!((id[(i, j)] - f64::from(u8::from(i == j))).abs() < 1e-7);
            }
        }
        // log|K| of a 2×2 by hand.
        let small = Mat::from_fn(2, 2, |i, j| [[4.0, 2.0], [2.0, 3.0]][i][j]);
        assert!((Cholesky::new(&small).unwrap().log_det() - 8.0f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn extending_a_factor_equals_factorising_the_larger_matrix() {
        let k = spd(14);
        let block =
            |r: std::ops::Range<usize>, c: std::ops::Range<usize>| Mat::from_fn(r.len(), c.len(), |i, j| k[(r.start + i, c.start + j)]);
        let direct = Cholesky::new(&k).unwrap();
        // One point at a time (growing past the capacity) and three at once.
        let mut grown = Cholesky::new(&block(0..10, 0..10)).unwrap();
        for m in 10..14 {
            grown.extend(block(0..m, m..m + 1).as_ref(), block(m..m + 1, m..m + 1).as_ref()).unwrap();
        }
        let mut at_once = Cholesky::new(&block(0..11, 0..11)).unwrap().with_room(3);
        at_once.extend(block(0..11, 11..14).as_ref(), block(11..14, 11..14).as_ref()).unwrap();
        for extended in [&grown, &at_once] {
            assert_eq!(extended.dim(), 14);
            for i in 0..14 {
                for j in 0..14 {
                    assert!((extended.l()[(i, j)] - direct.l()[(i, j)]).abs() < 1e-10, "({i}, {j})");
                }
            }
        }
        // A repeat of row 3 with less than its variance on the diagonal is indefinite: reported,
        // and the factor is left as it was.
        let mut same = Cholesky::new(&block(0..10, 0..10)).unwrap();
        let before = same.l().clone();
        let c = Mat::from_fn(1, 1, |_, _| k[(3, 3)] - 0.5);
        let err = same.extend(block(0..10, 3..4).as_ref(), c.as_ref()).unwrap_err();
        assert_eq!(err, LinalgError::NotPositiveDefinite { pivot: 10, jitter: 0.0 });
        assert_eq!(same.l(), &before);
    }

    #[test]
    fn a_singular_matrix_gets_jitter_and_an_indefinite_one_a_clear_error() {
        let ones = Mat::from_fn(5, 5, |_, _| 1.0);
        let c = Cholesky::new(&ones).unwrap();
        assert!(c.jitter() > 0.0);
        let indefinite = Mat::from_fn(2, 2, |i, j| if i == j { 1.0 } else { 3.0 });
        assert!(matches!(Cholesky::new(&indefinite), Err(LinalgError::NotPositiveDefinite { .. })));
        let nan = Mat::from_fn(2, 2, |_, _| f64::NAN);
        assert_eq!(Cholesky::new(&nan).unwrap_err(), LinalgError::NonFinite);
    }
}
