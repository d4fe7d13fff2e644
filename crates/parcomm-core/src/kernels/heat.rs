//! The explicit five-point step of the 2D heat equation (seed 002 §3), fused.
//!
//! Same contract as `python/parcomm/apps/heat/kernel.py`: a task's points live
//! in the interior of a *padded* row-major array of `ny x nx` values whose
//! outer ring holds the halo (neighbours' boundary values) or the fixed
//! boundary temperature. With `r = alpha dt / h^2` and `c0 = 1 - 4 r` every
//! updated point gets
//!
//! ```text
//! v[i][j] = r * (((u[i-1][j] + u[i+1][j]) + u[i][j-1]) + u[i][j+1]) + c0 * u[i][j]
//! ```
//!
//! in exactly this order of operations (4 additions, 2 multiplications, no
//! fused multiply-add: Rust never contracts `a * b + c`), which is the order
//! of the numpy kernel's passes, so both give the same bits and the parallel
//! solver equals the serial one whatever the cut.
//!
//! Speed: one pass per row, reading the three rows `i-1, i, i+1` of `u` (two
//! of them still in cache from the previous row) and writing row `i` of `v`:
//! main memory sees one read of `u` and one write of `v` per step, the traffic
//! of a STREAM copy. The inner loop runs over equal-length slices, so the
//! compiler drops the bounds checks and vectorizes it (AVX when the CPU has
//! it, chosen at run time). The stores are ordinary, so the hardware reads
//! each output line before writing it (24 bytes of traffic per point against
//! a copy's 16 when the copy avoids that read). Non-temporal stores
//! (`_mm256_stream_pd`, directly and through a cache-resident row buffer)
//! would avoid it, but measured slower on the machine this was tuned on
//! (1.25 against 0.93 ns per point at N = 4096; 1.8 against 1.5 at N = 6144),
//! so they are not used. glibc's `memcpy` does switch to them
//! for copies of a few hundred MB, which is why the copy bound of
//! `benchmarks/heat_kernel.py` jumps for the largest grid there.

/// Operations per grid point and step (the paper's C).
pub const FLOPS_PER_POINT: u64 = 6;
/// Explicit 5-point scheme in 2D: stable iff r <= 1/4 (von Neumann).
pub const STABILITY_LIMIT: f64 = 0.25;

/// A padded grid's shape and the rectangle of points to update (half-open,
/// padded indices).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub i0: usize,
    pub i1: usize,
    pub j0: usize,
    pub j1: usize,
}

/// Checks `r` as kernel.py's `check_r` does; returns `c0 = 1 - 4 r`.
pub fn check_r(r: f64) -> Result<f64, String> {
    if !r.is_finite() || r <= 0.0 {
        return Err(format!("r = alpha*dt/h^2 must be positive, got {r}"));
    }
    if r > STABILITY_LIMIT {
        return Err(format!(
            "r = alpha*dt/h^2 = {r} exceeds the stability limit 1/4 of the explicit 5-point scheme; \
             use a time step dt <= h^2/(4 alpha)"
        ));
    }
    Ok(1.0 - 4.0 * r)
}

/// Validates a rectangle of a padded `ny x nx` grid: every point updated must
/// have its four neighbours inside the array.
pub fn check_rect(ny: usize, nx: usize, rect: Rect) -> Result<(), String> {
    if ny < 3 || nx < 3 {
        return Err(format!("padded arrays need at least 3x3 entries, got {ny}x{nx}"));
    }
    let Rect { i0, i1, j0, j1 } = rect;
    if i0 < 1 || j0 < 1 || i1 > ny - 1 || j1 > nx - 1 {
        return Err(format!(
            "rectangle rows {i0}..{i1}, cols {j0}..{j1} leaves the interior 1..{}, 1..{} of a {ny}x{nx} padded array",
            ny - 1,
            nx - 1
        ));
    }
    Ok(())
}

/// Updates the points of `rect` of the padded `ny x nx` grid `u` into `v`
/// (both row-major, `ny * nx` long); returns the number of points updated.
/// Points outside `rect` are not touched. Panics if the slices are shorter
/// than `ny * nx` or the rectangle is invalid (see [`check_rect`]).
pub fn update(u: &[f64], v: &mut [f64], ny: usize, nx: usize, rect: Rect, r: f64) -> usize {
    let Rect { i0, i1, j0, j1 } = rect;
    if i1 <= i0 || j1 <= j0 {
        return 0;
    }
    check_rect(ny, nx, rect).expect("invalid rectangle");
    assert!(u.len() >= ny * nx && v.len() >= ny * nx, "arrays shorter than ny * nx");
    let c0 = 1.0 - 4.0 * r;
    let points = (i1 - i0) * (j1 - j0);
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU supports AVX (checked at run time).
            unsafe { rows_avx(u, v, nx, rect, r, c0) };
            return points;
        }
    }
    rows_portable(u, v, nx, rect, r, c0);
    points
}

/// The same loop compiled for AVX (4 doubles per instruction instead of
/// SSE2's 2). Only wider registers: no FMA is enabled, so every operation and
/// its rounding stay those of the portable loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn rows_avx(u: &[f64], v: &mut [f64], nx: usize, rect: Rect, r: f64, c0: f64) {
    rows_portable(u, v, nx, rect, r, c0)
}

#[inline(always)]
fn rows_portable(u: &[f64], v: &mut [f64], nx: usize, rect: Rect, r: f64, c0: f64) {
    let Rect { i0, i1, j0, j1 } = rect;
    let w = j1 - j0;
    for i in i0..i1 {
        let mid = i * nx + j0;
        let up = &u[mid - nx..mid - nx + w];
        let down = &u[mid + nx..mid + nx + w];
        let left = &u[mid - 1..mid - 1 + w];
        let right = &u[mid + 1..mid + 1 + w];
        let centre = &u[mid..mid + w];
        let out = &mut v[mid..mid + w];
        row(out, up, down, left, right, centre, r, c0);
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn row(out: &mut [f64], up: &[f64], down: &[f64], left: &[f64], right: &[f64], centre: &[f64], r: f64, c0: f64) {
    let n = out.len();
    let (up, down, left, right, centre) = (&up[..n], &down[..n], &left[..n], &right[..n], &centre[..n]);
    for k in 0..n {
        out[k] = r * (((up[k] + down[k]) + left[k]) + right[k]) + c0 * centre[k];
    }
}

/// Every interior point of the padded grid.
pub fn update_all(u: &[f64], v: &mut [f64], ny: usize, nx: usize, r: f64) -> usize {
    update(u, v, ny, nx, Rect { i0: 1, i1: ny - 1, j0: 1, j1: nx - 1 }, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random grid (xorshift), values in [0, 1).
    fn grid(ny: usize, nx: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..ny * nx)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    /// The formula written out point by point, in the documented order.
    fn reference(u: &[f64], ny: usize, nx: usize, r: f64) -> Vec<f64> {
        let c0 = 1.0 - 4.0 * r;
        let mut v = vec![0.0; ny * nx];
        for i in 1..ny - 1 {
            for j in 1..nx - 1 {
                let s = ((u[(i - 1) * nx + j] + u[(i + 1) * nx + j]) + u[i * nx + j - 1]) + u[i * nx + j + 1];
                v[i * nx + j] = r * s + c0 * u[i * nx + j];
            }
        }
        v
    }

    #[test]
    fn whole_grid_matches_the_reference_bit_for_bit() {
        for &(ny, nx) in &[(3, 3), (7, 9), (50, 33), (130, 131)] {
            let u = grid(ny, nx, 7);
            let mut v = vec![0.0; ny * nx];
            let n = update_all(&u, &mut v, ny, nx, 0.23);
            assert_eq!(n, (ny - 2) * (nx - 2));
            let want = reference(&u, ny, nx, 0.23);
            assert!(v.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{ny}x{nx}");
        }
    }

    #[test]
    fn portable_and_wide_loops_give_the_same_bits() {
        let (ny, nx) = (67, 45);
        let u = grid(ny, nx, 11);
        let mut a = vec![0.0; ny * nx];
        let mut b = vec![0.0; ny * nx];
        let rect = Rect { i0: 1, i1: ny - 1, j0: 1, j1: nx - 1 };
        update(&u, &mut a, ny, nx, rect, 0.17); // AVX when the CPU has it
        rows_portable(&u, &mut b, nx, rect, 0.17, 1.0 - 4.0 * 0.17);
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    }

    #[test]
    fn interior_plus_boundary_ring_equals_the_whole_and_leaves_the_halo_alone() {
        let (ny, nx) = (12, 10);
        let u = grid(ny, nx, 3);
        let mut v = vec![-1.0; ny * nx];
        let mut n = update(&u, &mut v, ny, nx, Rect { i0: 2, i1: ny - 2, j0: 2, j1: nx - 2 }, 0.2);
        n += update(&u, &mut v, ny, nx, Rect { i0: 1, i1: 2, j0: 1, j1: nx - 1 }, 0.2);
        n += update(&u, &mut v, ny, nx, Rect { i0: ny - 2, i1: ny - 1, j0: 1, j1: nx - 1 }, 0.2);
        n += update(&u, &mut v, ny, nx, Rect { i0: 2, i1: ny - 2, j0: 1, j1: 2 }, 0.2);
        n += update(&u, &mut v, ny, nx, Rect { i0: 2, i1: ny - 2, j0: nx - 2, j1: nx - 1 }, 0.2);
        assert_eq!(n, (ny - 2) * (nx - 2));
        let want = reference(&u, ny, nx, 0.2);
        for i in 0..ny {
            for j in 0..nx {
                let k = i * nx + j;
                if i == 0 || j == 0 || i == ny - 1 || j == nx - 1 {
                    assert_eq!(v[k], -1.0, "halo touched at {i},{j}");
                } else {
                    assert_eq!(v[k].to_bits(), want[k].to_bits(), "at {i},{j}");
                }
            }
        }
    }

    #[test]
    fn constant_field_is_a_fixed_point_and_sine_mode_decays_at_its_eigenvalue() {
        // away from the boundary a constant stays constant: r*4c + (1-4r)c = c up to rounding
        let (ny, nx) = (8, 8);
        let u = vec![1.0; ny * nx];
        let mut v = vec![0.0; ny * nx];
        update_all(&u, &mut v, ny, nx, 0.25);
        assert!((v[3 * nx + 3] - 1.0).abs() < 1e-15);
        // sin(pi x) sin(pi y) is an eigenvector with factor 1 - 8 r sin^2(pi h / 2)
        let n = 31;
        let (ny, nx) = (n + 2, n + 2);
        let h = 1.0 / (n as f64 + 1.0);
        let pi = std::f64::consts::PI;
        let mut u = vec![0.0; ny * nx];
        for i in 1..ny - 1 {
            for j in 1..nx - 1 {
                u[i * nx + j] = (pi * i as f64 * h).sin() * (pi * j as f64 * h).sin();
            }
        }
        let mut v = vec![0.0; ny * nx];
        update_all(&u, &mut v, ny, nx, 0.2);
        let factor = 1.0 - 8.0 * 0.2 * (pi * h / 2.0).sin().powi(2);
        for k in 0..ny * nx {
            assert!((v[k] - factor * u[k]).abs() < 1e-14);
        }
    }

    #[test]
    fn empty_rectangles_and_checks() {
        let u = grid(5, 5, 1);
        let mut v = vec![0.0; 25];
        assert_eq!(update(&u, &mut v, 5, 5, Rect { i0: 2, i1: 2, j0: 1, j1: 4 }, 0.2), 0);
        assert!(v.iter().all(|&x| x == 0.0));
        assert!(check_rect(5, 5, Rect { i0: 0, i1: 2, j0: 1, j1: 4 }).is_err());
        assert!(check_rect(5, 5, Rect { i0: 1, i1: 5, j0: 1, j1: 4 }).is_err());
        assert!(check_rect(2, 5, Rect { i0: 1, i1: 1, j0: 1, j1: 1 }).is_err());
        assert!(check_rect(5, 5, Rect { i0: 1, i1: 4, j0: 1, j1: 4 }).is_ok());
        assert!(
            check_r(0.25).is_ok() && check_r(0.2500001).is_err() && check_r(0.0).is_err() && check_r(f64::NAN).is_err()
        );
        assert_eq!(check_r(0.2).unwrap(), 1.0 - 4.0 * 0.2);
    }
}
