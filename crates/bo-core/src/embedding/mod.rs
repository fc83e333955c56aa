//! REMBO's random embeddings (Wang et al. 2016, Alg. 2; first
//! published as Wang et al. 2013): a matrix `A ∈ R^{D×d}` of independent N(0, 1) entries maps a point
//! `y` of the low-dimensional box `Y = [−√d, √d]^d` to `p_X(A y)`, its coordinate-wise clip to
//! `[−1, 1]^D` (the Euclidean projection onto the box, §2.2).
//!
//! Row `i` of `A` is a pure function of the embedding's seed and `i` (SplitMix64 on a counter,
//! then Box–Muller), so a coordinate of `A y` costs O(d) time and no memory: at D = 10⁹ the
//! matrix (16 GB) is never formed, and an objective that reads two coordinates generates two
//! rows. SplitMix64 is written out so the embedding of a stored
//! seed never changes with a crate version.
//!
//! Also: recovering `y` from a point of the box (least squares on its unclipped coordinates).
//! This file must not know about search spaces, GPs or trials; [`search`] is REMBO's Bayesian
//! optimisation on the embeddings' coordinates, which the designer and bo-bench share.

mod search;

pub use search::{Embedded, EmbeddedFit, Settings};
pub(crate) use search::{isotropic, start};

/// One embedding `A` of `d` columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    seed: u64,
    d: usize,
}

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Embedding {
    /// The embedding of `d` columns drawn from `seed`.
    pub fn new(seed: u64, d: usize) -> Embedding {
        assert!(d >= 1, "an embedding has at least one column");
        Embedding { seed, d }
    }

    /// The `r`-th of several independent embeddings drawn from one seed (Wang et al. 2016 §3.1's
    /// interleaved runs).
    pub fn nth(seed: u64, r: usize, d: usize) -> Embedding {
        Embedding::new(mix(seed ^ mix((r as u64).wrapping_add(1).wrapping_mul(GOLDEN))), d)
    }

    /// Its number of columns.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Its seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Row `i` of `A`: `d` standard normal draws from (seed, i).
    pub fn row(&self, i: u64) -> Vec<f64> {
        let mut state = mix(self.seed ^ mix(i.wrapping_mul(GOLDEN).wrapping_add(GOLDEN)));
        let mut next = || {
            state = state.wrapping_add(GOLDEN);
            // 53 random bits in (0, 1].
            ((mix(state) >> 11) as f64 + 1.0) / (1u64 << 53) as f64
        };
        let mut out = Vec::with_capacity(self.d + 1);
        while out.len() < self.d {
            let (u1, u2) = (next(), next());
            let r = (-2.0 * u1.ln()).sqrt();
            let angle = std::f64::consts::TAU * u2;
            out.push(r * angle.cos());
            out.push(r * angle.sin());
        }
        out.truncate(self.d);
        out
    }

    /// Coordinate `i` of `p_X(A y)`: `clip(A_i · y, −1, 1)`.
    pub fn coordinate(&self, i: u64, y: &[f64]) -> f64 {
        self.row(i).iter().zip(y).map(|(a, y)| a * y).sum::<f64>().clamp(-1.0, 1.0)
    }

    /// The first `n` coordinates of `p_X(A y)`.
    pub fn project(&self, y: &[f64], n: usize) -> Vec<f64> {
        (0..n as u64).map(|i| self.coordinate(i, y)).collect()
    }

    /// The `y` with `p_X(A y)` equal to `x` on the coordinates `usable` (those a value is known
    /// exactly for), if there is one: least squares on the coordinates strictly inside the box,
    /// then a check on every usable one (clipped ones included) to `tolerance`. `None` when fewer
    /// than d coordinates are inside or the point is not in this embedding's image.
    pub fn recover(&self, x: &[f64], usable: &[usize], tolerance: f64) -> Option<Vec<f64>> {
        let rows: Vec<Vec<f64>> = usable.iter().map(|&i| self.row(i as u64)).collect();
        let values: Vec<f64> = usable.iter().map(|&i| x[i]).collect();
        recover_from_rows(&rows, &values, tolerance)
    }
}

/// [`Embedding::recover`] given the rows of `A` (each of length d) and the values `p_X(A y)`
/// should have on them — for a caller that keeps the rows it uses.
pub fn recover_from_rows(rows: &[Vec<f64>], values: &[f64], tolerance: f64) -> Option<Vec<f64>> {
    let d = rows.first()?.len();
    let inside: Vec<(&Vec<f64>, f64)> = rows.iter().zip(values.iter().copied()).filter(|(_, v)| v.abs() < 1.0 - 1e-9).collect();
    if inside.len() < d {
        return None;
    }
    // Normal equations AᵀA y = Aᵀx, solved by Gaussian elimination with partial pivoting.
    let mut m = vec![vec![0.0; d + 1]; d];
    for (a, v) in &inside {
        for p in 0..d {
            for q in 0..d {
                m[p][q] += a[p] * a[q];
            }
            m[p][d] += a[p] * v;
        }
    }
    for col in 0..d {
        let pivot = (col..d).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                row.iter_mut().zip(&pivot_row).skip(col).for_each(|(v, p)| *v -= f * p);
            }
        }
    }
    let y: Vec<f64> = (0..d).map(|p| m[p][d] / m[p][p]).collect();
    let fits =
        rows.iter().zip(values).all(|(a, v)| (a.iter().zip(&y).map(|(a, y)| a * y).sum::<f64>().clamp(-1.0, 1.0) - v).abs() <= tolerance);
    fits.then_some(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_standard_normal_and_reproducible() {
        let e = Embedding::new(7, 3);
        assert_eq!(e.row(12), Embedding::new(7, 3).row(12), "the same seed gives the same row");
        assert_ne!(e.row(12), e.row(13));
        let draws: Vec<f64> = (0..20_000u64).flat_map(|i| e.row(i)).collect();
        let n = draws.len() as f64;
        let mean = draws.iter().sum::<f64>() / n;
        let var = draws.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 0.02 && (var - 1.0).abs() < 0.03, "mean {mean}, variance {var}");
        assert_ne!(Embedding::nth(7, 0, 3).row(0), Embedding::nth(7, 1, 3).row(0), "interleaved embeddings are independent");
    }

    #[test]
    fn a_coordinate_of_a_billion_dimensional_embedding_costs_one_row() {
        // The reading's §7 item 2: O(d) time, nothing stored, bit-identical on repetition.
        let e = Embedding::new(1, 2);
        let y = [0.7, -1.1];
        let i = 999_999_999u64;
        let v = e.coordinate(i, &y);
        assert_eq!(v.to_bits(), Embedding::new(1, 2).coordinate(i, &y).to_bits());
        let row = e.row(i);
        assert_eq!(v, (row[0] * 0.7 - row[1] * 1.1).clamp(-1.0, 1.0));
        assert_eq!(std::mem::size_of::<Embedding>(), 16);
    }

    #[test]
    fn recovers_y_from_its_projection() {
        let e = Embedding::nth(3, 2, 2);
        let y = [0.4, -0.9];
        let x = e.project(&y, 25);
        assert!(x.iter().any(|v| v.abs() == 1.0), "some coordinates are clipped");
        let all: Vec<usize> = (0..25).collect();
        let back = e.recover(&x, &all, 1e-9).expect("in the image");
        assert!((back[0] - y[0]).abs() < 1e-10 && (back[1] - y[1]).abs() < 1e-10, "{back:?}");
        let other = Embedding::nth(3, 0, 2);
        assert_eq!(other.recover(&x, &all, 1e-6), None, "not in another embedding's image");
    }
}
