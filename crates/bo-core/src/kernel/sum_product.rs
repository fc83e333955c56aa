//! Sums and products of kernels, and the additive kernel over groups of dimensions
//! (`Σ_g k_g(x_g, y_g)`, Kandasamy et al. 2015 §2): the parameters of the parts, concatenated in order.

use faer::{Mat, MatRef};

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

/// `a ∘= b`, elementwise.
fn hadamard_in_place(a: &mut Mat<f64>, b: &Mat<f64>) {
    for j in 0..a.ncols() {
        for (u, v) in a.col_as_slice_mut(j).iter_mut().zip(b.col_as_slice(j)) {
            *u *= v;
        }
    }
}

/// `a += b`, elementwise.
fn add_in_place(a: &mut Mat<f64>, b: &Mat<f64>) {
    for j in 0..a.ncols() {
        for (u, v) in a.col_as_slice_mut(j).iter_mut().zip(b.col_as_slice(j)) {
            *u += v;
        }
    }
}

/// Folds the parts' matrices with `combine`.
fn fold(parts: &[Box<dyn Kernel>], matrix: impl Fn(&dyn Kernel) -> Mat<f64>, combine: fn(&mut Mat<f64>, &Mat<f64>)) -> Mat<f64> {
    let mut iter = parts.iter();
    let mut acc = matrix(iter.next().expect("a composite kernel has parts").as_ref());
    for k in iter {
        combine(&mut acc, &matrix(k.as_ref()));
    }
    acc
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
    fn gram(&self, xs: &[Vec<f64>]) -> Mat<f64> {
        fold(&self.0, |k| k.gram(xs), add_in_place)
    }
    fn cross(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> Mat<f64> {
        fold(&self.0, |k| k.cross(a, b), add_in_place)
    }
    fn grad_x_dot(&self, x: &[f64], data: &[Vec<f64>], w: MatRef<'_, f64>, out: &mut [Vec<f64>]) {
        for k in &self.0 {
            k.grad_x_dot(x, data, w, out);
        }
    }
    fn gram_grad_dot(&self, xs: &[Vec<f64>], w: &Mat<f64>, out: &mut [f64]) {
        let mut at = 0;
        for k in &self.0 {
            let n = k.n_params();
            k.gram_grad_dot(xs, w, &mut out[at..at + n]);
            at += n;
        }
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
    fn gram(&self, xs: &[Vec<f64>]) -> Mat<f64> {
        fold(&self.0, |k| k.gram(xs), hadamard_in_place)
    }
    fn cross(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> Mat<f64> {
        fold(&self.0, |k| k.cross(a, b), hadamard_in_place)
    }
    fn grad_x_dot(&self, x: &[f64], data: &[Vec<f64>], w: MatRef<'_, f64>, out: &mut [Vec<f64>]) {
        // ∇ₓ(Π kᵢ) = Σⱼ (Π_{i≠j} kᵢ) ∇ₓkⱼ: part j contracts with W scaled row-wise by the others.
        let at = [x.to_vec()];
        let values: Vec<Mat<f64>> = self.0.iter().map(|k| k.cross(data, &at)).collect();
        for (j, k) in self.0.iter().enumerate() {
            let wj = Mat::from_fn(data.len(), w.ncols(), |i, c| {
                w[(i, c)] * values.iter().enumerate().filter(|(g, _)| *g != j).map(|(_, v)| v[(i, 0)]).product::<f64>()
            });
            k.grad_x_dot(x, data, wj.as_ref(), out);
        }
    }
    fn gram_grad_dot(&self, xs: &[Vec<f64>], w: &Mat<f64>, out: &mut [f64]) {
        // ∂K/∂θ of part j is (∂Kⱼ/∂θ) ∘ Π_{i≠j} Kᵢ, so part j contracts with W ∘ Π_{i≠j} Kᵢ.
        let grams: Vec<Mat<f64>> = self.0.iter().map(|k| k.gram(xs)).collect();
        let mut at = 0;
        for (j, k) in self.0.iter().enumerate() {
            let mut wj = w.clone();
            for (_, g) in grams.iter().enumerate().filter(|(i, _)| *i != j) {
                hadamard_in_place(&mut wj, g);
            }
            let n = k.n_params();
            k.gram_grad_dot(xs, &wj, &mut out[at..at + n]);
            at += n;
        }
    }
}
