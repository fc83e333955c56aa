//! Kernel choice for the GP designers over the flat features: the numeric kernel's kind and the
//! product with the categorical kernel, shared by GP_BANDIT, its variants and the transfer stack.
//!
//! Must not: read `algorithmConfig` (a designer passes its settings in) or fit anything.

use serde::Deserialize;

use crate::kernel::{Categorical, InputWarped, Kernel, LENGTH_SCALE_BOUNDS, LengthScalePrior, Product, matern52, squared_exp};
use crate::space::features::Features;

/// Which stationary kernel for numeric parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum KernelKind {
    /// Matérn-5/2.
    #[default]
    Matern52,
    /// Squared exponential.
    SquaredExp,
}

/// The flat model's kernel over `features`: an ARD `kind` kernel over the numeric coordinates
/// (warped first when `input_warping`), times the exchangeable categorical kernel when there are
/// categorical parameters. GP_BANDIT's, and every level of a transfer stack's.
pub(crate) fn product_kernel(features: &Features, kind: KernelKind, prior: LengthScalePrior, input_warping: bool) -> Box<dyn Kernel> {
    let numeric = features.numeric_dims();
    let categorical = features.categorical_dims();
    // Under the dimension-scaled prior the fit starts from its median, as Hvarfner et al. do,
    // and the bounds leave room above it (the median is 41 at D = 100).
    let (start, bounds) = match prior {
        LengthScalePrior::Weak => (0.5, LENGTH_SCALE_BOUNDS),
        LengthScalePrior::DimensionScaled => {
            let median = prior.median(numeric.len());
            (median, (LENGTH_SCALE_BOUNDS.0, LENGTH_SCALE_BOUNDS.1.max(10.0 * median)))
        }
        // Under SAAS from ℓ = τ's scale^−½, as the fifth held-out pass found best for a sparse
        // prior, with room for irrelevant coordinates to go flatter than 20 (ρ down to 1e-4,
        // where the quadrature of τ starts).
        LengthScalePrior::Saas => (prior.median(numeric.len()), (LENGTH_SCALE_BOUNDS.0, 100.0)),
    };
    let numeric_kernel: Option<Box<dyn Kernel>> = (!numeric.is_empty()).then(|| {
        let stationary = match kind {
            KernelKind::Matern52 => Box::new(matern52(numeric.clone(), start, bounds).with_prior(prior)) as Box<dyn Kernel>,
            KernelKind::SquaredExp => Box::new(squared_exp(numeric.clone(), start, bounds).with_prior(prior)),
        };
        if input_warping { Box::new(InputWarped::new(stationary, numeric)) as Box<dyn Kernel> } else { stationary }
    });
    let categorical_kernel: Option<Box<dyn Kernel>> =
        (!categorical.is_empty()).then(|| Box::new(Categorical::new(categorical)) as Box<dyn Kernel>);
    match (numeric_kernel, categorical_kernel) {
        (Some(n), Some(c)) => Box::new(Product(vec![n, c])),
        (Some(k), None) | (None, Some(k)) => k,
        (None, None) => unreachable!("a search space has at least one parameter"),
    }
}
