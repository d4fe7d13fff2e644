//! parcomm-core: a deterministic packet-level discrete-event simulator of
//! communication in parallel and distributed systems.
//!
//! Layers, bottom up: `time` and `rng` (integer nanoseconds, per-component
//! seeded streams), `engine` (the event queue), `transport` (a sans-IO
//! TCP-like stream), `net` (queues, ports, buses, routers, routing), `spec`
//! (platforms as data) and `sim` (one `Simulation` tying them together).

pub mod engine;
pub mod kernels;
pub mod mcast;
pub mod net;
pub mod prefetch;
pub mod rng;
pub mod sim;
pub mod spec;
pub mod spec_check;
pub mod time;
pub mod transport;

pub use sim::{Completion, CompletionKind, Counters, OpId, Simulation};
pub use spec::PlatformSpec;
