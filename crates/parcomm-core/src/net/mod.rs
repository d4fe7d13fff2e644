//! Network elements: packets, finite queues (and the fluid cell buffer of a
//! cell-switching ATM port), point-to-point ports, shared buses (CSMA/CD
//! segments) and routers. Each element owns its state and
//! returns what should happen next; `crate::sim` schedules the events.

pub mod bus;
pub mod cell_queue;
pub mod packet;
pub mod policy;
pub mod port;
pub mod queue;
pub mod router;
pub mod routing;
