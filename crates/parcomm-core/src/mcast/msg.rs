//! What the protocol state machines exchange with their driver.

/// An acknowledgement travelling up one network: its sender holds every
/// packet below `cum`, and packet `seq` (the one this ACK answers).
///
/// Comet RM's ACK carries a cumulative sequence number and the receiver's
/// window (§2.2); `seq` is our addition so that a router can "forward an ACK
/// for s once all its children have acked s" and a repair point retransmits
/// only what is missing. The window is not modelled (receivers consume at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub cum: u64,
    pub seq: u64,
}

/// A transmission a state machine asks its driver for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// Data packet `seq` down to the child in `slot`; `retx` marks copies
    /// sent by a retransmission timer (and forwarded on by plain routers).
    Data { slot: u32, seq: u64, retx: bool },
    /// An ACK up to the parent.
    Ack(Ack),
}
