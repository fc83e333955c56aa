//! Sums and products of kernels, and the additive kernel over groups of dimensions
//! (`Σ_g k_g(x_g, y_g)`, seed 004 §2): the parameters of the parts, concatenated in order.

use super::{Kernel, matern52};

/// `Σ kᵢ`.
#[derive(Clone, Debug)]
pub struct Sum(pub Vec<Box<dyn Kernel>>);

/// `Π kᵢ`.
#[derive(Clone, Debug)]
pub struct Product(pub Vec<Box<dyn Kernel>>);

/// An additive Matérn-5/2 kernel: one ARD term with its own amplitude per group of dimensions.
pub fn additive(groups: Vec<Vec<usize>>, length_scale: f64, bounds: (f64, f64)) -> Sum {
    Sum(groups.into_iter().map(|g| Box::new(matern52(g, length_scale, bounds)) as Box<dyn Kernel>).collect())
}

fn names(parts: &[Box<dyn Kernel>]) -> Vec<String> {
    parts.iter().enumerate().flat_map(|(i, k)| k.param_names().into_iter().map(move |n| format!("{i}.{n}"))).collect()
}

fn set(parts: &mut [Box<dyn Kernel>], p: &[f64]) {
    let mut at = 0;
    for k in parts {
        let n = k.n_params();
        k.set_params(&p[at..at + n]);
        at += n;
    }
}

fn prior(parts: &[Box<dyn Kernel>], grad: &mut [f64]) -> f64 {
    let mut at = 0;
    let mut lp = 0.0;
    for k in parts {
        let n = k.n_params();
        lp += k.log_prior(&mut grad[at..at + n]);
        at += n;
    }
    lp
}

/// The parameter methods shared by [`Sum`] and [`Product`]: the parts' parameters, in order.
macro_rules! composite_params {
    () => {
        fn param_names(&self) -> Vec<String> {
            names(&self.0)
        }
        fn params(&self) -> Vec<f64> {
            self.0.iter().flat_map(|k| k.params()).collect()
        }
        fn set_params(&mut self, p: &[f64]) {
            set(&mut self.0, p)
        }
        fn bounds(&self) -> Vec<(f64, f64)> {
            self.0.iter().flat_map(|k| k.bounds()).collect()
        }
        fn log_prior(&self, grad: &mut [f64]) -> f64 {
            prior(&self.0, grad)
        }
    };
}

impl Kernel for Sum {
    composite_params!();
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.0.iter().map(|k| k.eval(x, y)).sum()
    }
    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let mut at = 0;
        let mut total = 0.0;
        for k in &self.0 {
            let n = k.n_params();
            total += k.eval_grad(x, y, &mut grad[at..at + n]);
            at += n;
        }
        total
    }
    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]) {
        for k in &self.0 {
            k.grad_x(x, y, out);
        }
    }
    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
}

impl Kernel for Product {
    composite_params!();
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.0.iter().map(|k| k.eval(x, y)).product()
    }
    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        // ∂(Π kᵢ)/∂θ of part j = (Π_{i≠j} kᵢ) ∂kⱼ/∂θ.
        let values: Vec<f64> = self.0.iter().map(|k| k.eval(x, y)).collect();
        let mut at = 0;
        for (j, k) in self.0.iter().enumerate() {
            let n = k.n_params();
            k.eval_grad(x, y, &mut grad[at..at + n]);
            let others: f64 = values.iter().enumerate().filter(|(i, _)| *i != j).map(|(_, v)| v).product();
            grad[at..at + n].iter_mut().for_each(|g| *g *= others);
            at += n;
        }
        values.iter().product()
    }
    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]) {
        let values: Vec<f64> = self.0.iter().map(|k| k.eval(x, y)).collect();
        let mut part = vec![0.0; out.len()];
        for (j, k) in self.0.iter().enumerate() {
            part.iter_mut().for_each(|v| *v = 0.0);
            k.grad_x(x, y, &mut part);
            let others: f64 = values.iter().enumerate().filter(|(i, _)| *i != j).map(|(_, v)| v).product();
            for (o, p) in out.iter_mut().zip(&part) {
                *o += others * p;
            }
        }
    }
    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
}
