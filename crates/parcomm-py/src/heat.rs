//! The fused heat-equation step (parcomm_core::kernels::heat) on numpy arrays,
//! in place, through the buffer protocol: no copy, no numpy crate.

use parcomm_core::kernels::heat::{check_r, check_rect, update, Rect};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Grids at least this large are updated with the GIL released.
const RELEASE_GIL_POINTS: usize = 1 << 16;

fn shape2(b: &PyBuffer<f64>, name: &str) -> PyResult<(usize, usize)> {
    if b.dimensions() != 2 {
        return Err(PyValueError::new_err(format!("{name} must be 2-D, got {} dimensions", b.dimensions())));
    }
    if !b.is_c_contiguous() {
        return Err(PyValueError::new_err(format!("{name} must be C-contiguous")));
    }
    Ok((b.shape()[0], b.shape()[1]))
}

/// heat_update(u, v, r, i0, i1, j0, j1) -> points updated.
///
/// Writes the new values of the points rows i0..i1 x cols j0..j1 (padded
/// indices, half open) of the padded float64 grid ``u`` into ``v``; nothing
/// else of ``v`` changes. ``u`` and ``v``: C-contiguous 2-D float64 arrays of
/// one shape, distinct memory, ``v`` writable.
#[pyfunction]
#[pyo3(signature = (u, v, r, i0, i1, j0, j1))]
#[allow(clippy::too_many_arguments)]
pub fn heat_update(
    py: Python<'_>,
    u: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    r: f64,
    i0: usize,
    i1: usize,
    j0: usize,
    j1: usize,
) -> PyResult<usize> {
    check_r(r).map_err(PyValueError::new_err)?;
    let bu = PyBuffer::<f64>::get(u)?;
    let bv = PyBuffer::<f64>::get(v)?;
    let (ny, nx) = shape2(&bu, "u")?;
    if shape2(&bv, "v")? != (ny, nx) {
        return Err(PyValueError::new_err(format!("u is {ny}x{nx} but v is {:?}", bv.shape())));
    }
    if bv.readonly() {
        return Err(PyValueError::new_err("v must be writable"));
    }
    let len = ny * nx;
    let (pu, pv) = (bu.buf_ptr() as usize, bv.buf_ptr() as usize);
    let bytes = len * std::mem::size_of::<f64>();
    if len > 0 && pu < pv + bytes && pv < pu + bytes {
        return Err(PyValueError::new_err("u and v must not share memory"));
    }
    let rect = Rect { i0, i1, j0, j1 };
    if i1 <= i0 || j1 <= j0 {
        return Ok(0);
    }
    check_rect(ny, nx, rect).map_err(PyValueError::new_err)?;
    // SAFETY: both buffers are C-contiguous float64 with ny*nx items, held by
    // bu/bv for the whole call, and do not overlap (checked above); v is writable.
    let run = move || {
        let us = unsafe { std::slice::from_raw_parts(pu as *const f64, len) };
        let vs = unsafe { std::slice::from_raw_parts_mut(pv as *mut f64, len) };
        update(us, vs, ny, nx, rect, r)
    };
    let n = if (i1 - i0) * (j1 - j0) >= RELEASE_GIL_POINTS { py.allow_threads(run) } else { run() };
    drop(bu);
    drop(bv);
    Ok(n)
}
