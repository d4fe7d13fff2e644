//! Run parameters of a multicast simulation, as data (JSON).
//!
//! ```json
//! {"packets": 1000, "rate_pps": 1000, "window": 1024, "ack_loss": false,
//!  "ack_bytes": 40, "rto_factor": 1.0, "repair": "tree", "seed": 1}
//! ```

use super::fields::{parse, Obj};
use crate::time::{from_secs, Time};
use serde_json::Value;

/// Which routers repair: the tree's own `repair` flags, none of them (Comet RM)
/// or every router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepairMode {
    #[default]
    Tree,
    None,
    All,
}

/// The parameters as given; every field has a default.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamsSpec {
    /// Data packets the source sends (sequence numbers 0..packets); default 1000.
    pub packets: u64,
    /// Source pacing in packets/s; at most one of rate_pps and rate_bps.
    /// Neither: the source sends as fast as its window allows.
    pub rate_pps: Option<f64>,
    /// Source pacing in bits/s of data packets (packet_bytes * 8 bits each).
    pub rate_bps: Option<f64>,
    /// Sliding window at the source (packets; default 1024): packet s may be
    /// sent only once every child of the source holds every packet below s - window.
    pub window: u64,
    /// ACKs cross the reverse direction of each network with the same loss rate (default false).
    pub ack_loss: bool,
    /// Size of an ACK on the wire (bytes; default 40, an IPv4 header and a minimal transport header).
    pub ack_bytes: u64,
    /// Retransmission timeout of a repair point = rto_factor x the lossless
    /// round trip to its farthest next repair point or receiver (default 1).
    pub rto_factor: f64,
    /// A fixed timeout (s) for every repair point instead of the rule above.
    pub rto_s: Option<f64>,
    pub repair: RepairMode,
    pub seed: u64,
    /// Stop at this simulated time (s) even if packets are still missing.
    pub time_limit_s: Option<f64>,
    /// Stop when a network's queue holds more packets than this (default one
    /// million): retransmissions outrunning a link (a timeout shorter than the
    /// queueing delay, with no backoff) would otherwise grow it without bound.
    pub queue_limit_packets: u64,
}

impl Default for ParamsSpec {
    fn default() -> Self {
        ParamsSpec {
            packets: 1000,
            rate_pps: None,
            rate_bps: None,
            window: 1024,
            ack_loss: false,
            ack_bytes: 40,
            rto_factor: 1.0,
            rto_s: None,
            repair: RepairMode::Tree,
            seed: 0,
            time_limit_s: None,
            queue_limit_packets: 1_000_000,
        }
    }
}

impl ParamsSpec {
    /// Read parameters from parsed JSON (an object); errors name the field.
    pub fn from_value(v: &Value) -> Result<ParamsSpec, String> {
        let o = Obj::new(v, "")?;
        o.only(&[
            "packets",
            "rate_pps",
            "rate_bps",
            "window",
            "ack_loss",
            "ack_bytes",
            "rto_factor",
            "rto_s",
            "repair",
            "seed",
            "time_limit_s",
            "queue_limit_packets",
        ])?;
        let d = ParamsSpec::default();
        let repair = match o.opt_str("repair")? {
            None | Some("tree") => RepairMode::Tree,
            Some("none") => RepairMode::None,
            Some("all") => RepairMode::All,
            Some(x) => return Err(format!("repair: expected \"tree\", \"none\" or \"all\", got \"{x}\"")),
        };
        Ok(ParamsSpec {
            packets: o.opt_u64("packets")?.unwrap_or(d.packets),
            rate_pps: o.opt_f64("rate_pps")?,
            rate_bps: o.opt_f64("rate_bps")?,
            window: o.opt_u64("window")?.unwrap_or(d.window),
            ack_loss: o.opt_bool("ack_loss")?.unwrap_or(d.ack_loss),
            ack_bytes: o.opt_u64("ack_bytes")?.unwrap_or(d.ack_bytes),
            rto_factor: o.opt_f64("rto_factor")?.unwrap_or(d.rto_factor),
            rto_s: o.opt_f64("rto_s")?,
            repair,
            seed: o.opt_u64("seed")?.unwrap_or(d.seed),
            time_limit_s: o.opt_f64("time_limit_s")?,
            queue_limit_packets: o.opt_u64("queue_limit_packets")?.unwrap_or(d.queue_limit_packets),
        })
    }
}

/// Validated parameters, in core units.
#[derive(Debug, Clone)]
pub struct Params {
    pub packets: u64,
    /// Packets per second; None = unpaced.
    pub rate_pps: Option<f64>,
    pub window: u64,
    pub ack_loss: bool,
    pub ack_bytes: u64,
    pub rto_factor: f64,
    pub rto: Option<Time>,
    pub repair: RepairMode,
    pub seed: u64,
    pub time_limit: Time,
    pub queue_limit_packets: u64,
}

fn positive(v: f64, field: &str) -> Result<f64, String> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{field} must be a positive number, got {v}"))
    }
}

impl Params {
    pub fn from_json(text: &str, packet_bytes: u64) -> Result<Params, String> {
        Params::from_spec(&ParamsSpec::from_value(&parse(text, "params")?)?, packet_bytes)
    }

    pub fn from_spec(p: &ParamsSpec, packet_bytes: u64) -> Result<Params, String> {
        if p.packets == 0 {
            return Err("packets must be at least 1".into());
        }
        if p.window == 0 {
            return Err("window must be at least 1 packet".into());
        }
        if p.ack_bytes == 0 {
            return Err("ack_bytes must be at least 1".into());
        }
        let rate_pps = match (p.rate_pps, p.rate_bps) {
            (Some(_), Some(_)) => return Err("rate_pps and rate_bps: give at most one".into()),
            (Some(r), None) => Some(positive(r, "rate_pps")?),
            (None, Some(b)) => Some(positive(b, "rate_bps")? / (8.0 * packet_bytes as f64)),
            (None, None) => None,
        };
        positive(p.rto_factor, "rto_factor")?;
        let rto = match p.rto_s {
            Some(s) => {
                let t = from_secs(positive(s, "rto_s")?);
                if t == 0 {
                    return Err(format!("rto_s must be at least 1 ns, got {s}"));
                }
                Some(t)
            }
            None => None,
        };
        let time_limit = match p.time_limit_s {
            Some(s) => from_secs(positive(s, "time_limit_s")?),
            None => Time::MAX,
        };
        Ok(Params {
            packets: p.packets,
            rate_pps,
            window: p.window,
            ack_loss: p.ack_loss,
            ack_bytes: p.ack_bytes,
            rto_factor: p.rto_factor,
            rto,
            repair: p.repair,
            seed: p.seed,
            time_limit,
            queue_limit_packets: p.queue_limit_packets.max(1),
        })
    }
}
