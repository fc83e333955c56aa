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
    let mut point = Vec::with_capacity(d.next_multiple_of(4));
    // Four dimensions at a time (`sample_4d`, equal to `sample` per dimension and about four
    // times faster); a block of `MAX_DIMS` holds whole sets of four. The last set's surplus is
    // dropped.
    for first in (0..d).step_by(4) {
        let block = (first / MAX_DIMS) as u64;
        let block_seed = splitmix(seed ^ splitmix(block.wrapping_mul(0x9e37_79b9) ^ epoch.rotate_left(32)));
        let set = ((first % MAX_DIMS) / 4) as u32;
        point.extend(sobol_burley::sample_4d((index % MAX_POINTS) as u32, set, block_seed as u32).map(f64::from));
    }
    point.truncate(d);
    point
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

    /// The points are the crate's one-dimension samples, in every block and epoch.
    #[test]
    fn points_are_the_per_dimension_samples() {
        for (index, d, seed) in [(0, 1, 0), (5, 6, 9), (70_000, 7, 3), (123, 300, 11), (1, 513, 2)] {
            let point = sobol_point(index, d, seed);
            assert_eq!(point.len(), d);
            let epoch = index / (1 << 16);
            for (dim, v) in point.iter().enumerate() {
                let block = (dim / sobol_burley::NUM_DIMENSIONS as usize) as u64;
                let block_seed = splitmix(seed ^ splitmix(block.wrapping_mul(0x9e37_79b9) ^ epoch.rotate_left(32)));
                let want = sobol_burley::sample(
                    (index % (1 << 16)) as u32,
                    (dim % sobol_burley::NUM_DIMENSIONS as usize) as u32,
                    block_seed as u32,
                );
                assert_eq!(*v, f64::from(want), "index {index}, dimension {dim} of {d}");
            }
        }
    }

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
