//! Simulated time: an integer number of nanoseconds, so that event order never
//! depends on floating-point rounding.

/// Nanoseconds since the start of a simulation.
pub type Time = u64;

pub const NS: Time = 1;
pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const SEC: Time = 1_000_000_000;

/// Seconds (as given by users and platform files) to nanoseconds, rounded to nearest.
pub fn from_secs(s: f64) -> Time {
    (s * 1e9).round() as Time
}

pub fn to_secs(t: Time) -> f64 {
    t as f64 * 1e-9
}

/// Time to serialize `bytes` at `rate_bps` bits per second, rounded up so that a
/// link is never faster than its rate.
pub fn tx_time(bytes: u64, rate_bps: f64) -> Time {
    ((bytes as f64 * 8.0 * 1e9) / rate_bps).ceil() as Time
}
