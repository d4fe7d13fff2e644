//! Numerical kernels of the application workloads (pure Rust, no Python).
//!
//! * [`heat`]: the explicit five-point step of the 2D heat equation (seed 002).

pub mod heat;
