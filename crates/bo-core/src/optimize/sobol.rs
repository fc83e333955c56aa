//! The scrambled Sobol sequence every space-filling step draws from: quasi-random search, the
//! candidates of the acquisition maximisers, REMBO's design. Owen-scrambled (Burley 2020, through
//! the `sobol_burley` crate); beyond the crate's 2^16 points or 256 dimensions a further block is
//! drawn with its own scramble seed (the crate's documented way to extend it), which keeps each
//! block low-discrepancy and the blocks independent.

/// Point `index` of the scrambled Sobol sequence in `d` dimensions.
pub fn sobol_point(index: u64, d: usize, seed: u64) -> Vec<f64> {
    const MAX_POINTS: u64 = 1 << 16;
    const MAX_DIMS: usize = sobol_burley::NUM_DIMENSIONS as usize;
    let epoch = index / MAX_POINTS;
    (0..d)
        .map(|dim| {
            let block = (dim / MAX_DIMS) as u64;
            let block_seed = splitmix(seed ^ splitmix(block.wrapping_mul(0x9e37_79b9) ^ epoch.rotate_left(32)));
            let x = sobol_burley::sample((index % MAX_POINTS) as u32, (dim % MAX_DIMS) as u32, block_seed as u32);
            f64::from(x)
        })
        .collect()
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scrambled Sobol sequence stratifies: of its first 2^k points, exactly one falls in each
    /// of the 2^k equal intervals of any one dimension.
    #[test]
    fn first_points_stratify_each_dimension() {
        for seed in [0, 7, 12345] {
            let points: Vec<Vec<f64>> = (0..64).map(|i| sobol_point(i, 300, seed)).collect();
            for dim in [0, 1, 17, 255, 256, 299] {
                let mut cells: Vec<usize> = points.iter().map(|p| (p[dim] * 64.0) as usize).collect();
                cells.sort_unstable();
                assert_eq!(cells, (0..64).collect::<Vec<_>>(), "dimension {dim}, seed {seed}");
            }
        }
    }
}
