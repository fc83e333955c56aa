//! `bo-bench list`: the problems with their dimension and optimum.

use crate::{embedded, problems};

pub fn main() {
    println!("{:<18} {:>4} {:>14}", "problem", "dim", "optimum");
    for p in problems::all() {
        println!("{:<18} {:>4} {:>14.6}", p.name, p.dim, p.optimum);
    }
    for p in embedded::all() {
        println!("{:<18} {:>4.0e} {:>14.6}   (REMBO only)", p.name, p.dim as f64, p.optimum);
    }
}
