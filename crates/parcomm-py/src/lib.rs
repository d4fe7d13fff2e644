//! The thin Python binding of parcomm-core: coarse calls only. Platforms come
//! in as JSON, operations go in by host index, completions and counters come
//! back as plain Python data. Core errors become ValueError.

use parcomm_core::sim::{BusCounters, HostCounters, PortCounters, RouterCounters, TraceSample};
use parcomm_core::time::from_secs;
use parcomm_core::{CompletionKind, Simulation as CoreSim};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod heat;

fn err(e: String) -> PyErr {
    PyValueError::new_err(e)
}

fn limit_ns(limit_s: Option<f64>) -> PyResult<u64> {
    match limit_s {
        None => Ok(u64::MAX),
        Some(s) if s.is_finite() && s >= 0.0 => Ok(from_secs(s)),
        Some(s) => Err(err(format!("limit must be a non-negative number of seconds, got {s}"))),
    }
}

#[pyclass(module = "parcomm._core")]
struct Simulation {
    inner: CoreSim,
}

type CompletionTuple = (u64, &'static str, u32, u64);

fn completions(v: Vec<parcomm_core::Completion>) -> Vec<CompletionTuple> {
    v.into_iter()
        .map(|c| {
            let kind = match c.kind {
                CompletionKind::Sent => "sent",
                CompletionKind::Arrived => "arrived",
                CompletionKind::Computed => "computed",
                CompletionKind::Timer => "timer",
                CompletionKind::Received => "received",
            };
            (c.op, kind, c.host, c.time)
        })
        .collect()
}

macro_rules! columns {
    ($py:expr, $rows:expr, $($field:ident),+) => {{
        let d = PyDict::new($py);
        $( d.set_item(stringify!($field), $rows.iter().map(|r| r.$field.clone()).collect::<Vec<_>>())?; )+
        d
    }};
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (platform_json, seed=0))]
    fn new(platform_json: &str, seed: u64) -> PyResult<Self> {
        Ok(Simulation { inner: CoreSim::from_json(platform_json, seed).map_err(err)? })
    }

    /// Simulated time in nanoseconds.
    #[getter]
    fn now_ns(&self) -> u64 {
        self.inner.now()
    }

    #[getter]
    fn events_processed(&self) -> u64 {
        self.inner.events_processed()
    }

    #[getter]
    fn host_count(&self) -> usize {
        self.inner.host_count()
    }

    #[getter]
    fn is_idle(&self) -> bool {
        self.inner.is_idle()
    }

    fn host_index(&self, name: &str) -> PyResult<u32> {
        self.inner.host_index(name).ok_or_else(|| err(format!("no host named '{name}'")))
    }

    fn host_name(&self, host: u32) -> PyResult<String> {
        if (host as usize) < self.inner.host_count() {
            Ok(self.inner.host_name(host).to_string())
        } else {
            Err(err(format!("no host {host}")))
        }
    }

    fn send(&mut self, src: u32, dst: u32, nbytes: u64) -> PyResult<u64> {
        self.inner.send(src, dst, nbytes).map_err(err)
    }

    fn receive(&mut self, host: u32, nbytes: u64) -> PyResult<u64> {
        self.inner.receive(host, nbytes).map_err(err)
    }

    fn compute(&mut self, host: u32, seconds: f64) -> PyResult<u64> {
        self.inner.compute(host, seconds).map_err(err)
    }

    fn sleep(&mut self, host: u32, seconds: f64) -> PyResult<u64> {
        self.inner.sleep(host, seconds).map_err(err)
    }

    #[pyo3(signature = (limit_s=None))]
    fn run_until_completion(&mut self, py: Python<'_>, limit_s: Option<f64>) -> PyResult<Vec<CompletionTuple>> {
        let limit = limit_ns(limit_s)?;
        let inner = &mut self.inner;
        Ok(completions(py.allow_threads(|| inner.run_until_completion(limit))))
    }

    fn run_until(&mut self, py: Python<'_>, limit_s: f64) -> PyResult<Vec<CompletionTuple>> {
        let limit = limit_ns(Some(limit_s))?;
        let inner = &mut self.inner;
        Ok(completions(py.allow_threads(|| inner.run_until(limit))))
    }

    /// Record each sender's state after every ACK and timer, at most `limit` samples.
    #[pyo3(signature = (limit=1_000_000))]
    fn enable_trace(&mut self, limit: usize) {
        self.inner.enable_trace(limit);
    }

    /// The trace so far as columns (times in ns, windows in bytes) plus "dropped".
    fn take_trace<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (samples, dropped) = self.inner.take_trace();
        let s: &Vec<TraceSample> = &samples;
        let out = columns!(
            py,
            s,
            t,
            src,
            dst,
            cwnd,
            ssthresh,
            rto,
            srtt,
            in_flight,
            acked,
            in_recovery,
            segments_retransmitted,
            timeouts,
            fast_retransmits,
            tail_loss_probes
        );
        out.set_item("event", s.iter().map(|r| r.event.name()).collect::<Vec<_>>())?;
        out.set_item("dropped", dropped)?;
        Ok(out)
    }

    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.counters();
        let out = PyDict::new(py);
        out.set_item("time_s", c.time_s)?;
        out.set_item("events", c.events)?;
        let h: &Vec<HostCounters> = &c.hosts;
        out.set_item(
            "hosts",
            columns!(
                py,
                h,
                name,
                bytes_sent,
                bytes_retransmitted,
                segments_sent,
                segments_retransmitted,
                timeouts,
                fast_retransmits,
                tail_loss_probes,
                nic_drops,
                corrupt_discards,
                cpu_busy_s
            ),
        )?;
        let p: &Vec<PortCounters> = &c.ports;
        out.set_item(
            "ports",
            columns!(
                py,
                p,
                name,
                unit,
                capacity,
                tx_packets,
                drops,
                cell_drops,
                wire_losses,
                max_occupancy,
                mean_occupancy
            ),
        )?;
        let b: &Vec<BusCounters> = &c.buses;
        out.set_item("buses", columns!(py, b, name, frames, collisions, drops, utilization))?;
        let r: &Vec<RouterCounters> = &c.routers;
        out.set_item("routers", columns!(py, r, name, forwarded, drops, max_occupancy))?;
        Ok(out)
    }
}

/// Reliable multicast over a tree (seed 003): parse and validate the tree and
/// the run parameters (both JSON), simulate, and return the report as plain
/// data: summaries, per-packet columns and per-receiver/buffer/network tables.
#[pyfunction]
fn mcast_simulate<'py>(py: Python<'py>, tree_json: &str, params_json: &str) -> PyResult<Bound<'py, PyDict>> {
    use parcomm_core::mcast::{simulate, Params, Tree};
    let tree = Tree::from_json(tree_json).map_err(err)?;
    let params = Params::from_json(params_json, tree.packet_bytes).map_err(err)?;
    let r = py.allow_threads(|| simulate(&tree, &params));
    let out = PyDict::new(py);
    out.set_item("complete", r.complete)?;
    out.set_item("stopped", &r.stopped)?;
    out.set_item("packets", r.packets)?;
    out.set_item("delivered", r.delivered)?;
    for (key, d) in [("delay", &r.delay), ("release", &r.release)] {
        let x = PyDict::new(py);
        x.set_item("count", d.count)?;
        x.set_item("mean_s", d.mean_s)?;
        x.set_item("p50_s", d.p50_s)?;
        x.set_item("p95_s", d.p95_s)?;
        x.set_item("p99_s", d.p99_s)?;
        x.set_item("max_s", d.max_s)?;
        out.set_item(key, x)?;
    }
    let p = PyDict::new(py);
    p.set_item("first_tx_s", &r.packet_first_tx_s)?;
    p.set_item("delay_s", &r.packet_delay_s)?;
    p.set_item("release_s", &r.packet_release_s)?;
    out.set_item("packet", p)?;
    let rx = &r.receivers;
    out.set_item("receivers", columns!(py, rx, name, mean_delay_s, received, duplicates))?;
    let b = &r.buffers;
    out.set_item(
        "buffers",
        columns!(
            py,
            b,
            name,
            kind,
            repair,
            rto_s,
            peak_packets,
            peak_bytes,
            mean_packets,
            mean_bytes,
            timeouts,
            retransmissions
        ),
    )?;
    let n = &r.networks;
    out.set_item(
        "networks",
        columns!(
            py,
            n,
            name,
            parent,
            child,
            data_sent,
            data_retransmitted,
            data_lost,
            data_redundant,
            acks_sent,
            acks_lost
        ),
    )?;
    out.set_item("end_time_s", r.end_time_s)?;
    out.set_item("events", r.events)?;
    out.set_item("wall_s", r.wall_s)?;
    Ok(out)
}

/// Parse and validate a platform (JSON) as the simulator would, without building it;
/// ValueError names the field.
#[pyfunction]
fn check_platform(platform_json: &str) -> PyResult<()> {
    parcomm_core::PlatformSpec::from_json(platform_json).map(|_| ()).map_err(err)
}

/// The platform schema as JSON: per element kind every field at its default, which fields are
/// optional, and the upper bounds (parcomm_core::spec_check).
#[pyfunction]
fn platform_schema() -> String {
    parcomm_core::spec_check::schema_json()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(mcast_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(check_platform, m)?)?;
    m.add_function(wrap_pyfunction!(platform_schema, m)?)?;
    m.add_function(wrap_pyfunction!(heat::heat_update, m)?)?;
    Ok(())
}
