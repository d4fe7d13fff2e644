//! What travels through the simulated network: IP packets carrying either a
//! data segment or a pure ACK of one transport stream. No payload bytes exist.

use crate::transport::{Ack, Segment};

/// TCP/IP header bytes (20 IP + 20 TCP, no options; ACKs add SACK options).
pub const HEADER_BYTES: u64 = 40;

#[derive(Clone, Copy, Debug)]
pub enum Payload {
    Data(Segment),
    Ack(AckHeader),
}

/// No SACK blocks travel with this ACK.
pub const NO_SACK: u32 = u32::MAX;

/// An ACK as it sits in queues: its SACK blocks (up to 64 bytes) wait in the
/// simulation's side table (`sack_slot`), so every queued packet stays small
/// whether or not SACK is in use.
#[derive(Clone, Copy, Debug)]
pub struct AckHeader {
    pub ack: u64,
    pub window: u64,
    pub sack_slot: u32,
    /// The RFC 7323 TSecr the receiver echoed (`Ack::tsecr`); the sender's
    /// timestamp checks (tcp_packet_delayed(), the RACK echo check) read it.
    pub tsecr: Option<crate::time::Time>,
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Host indices.
    pub src: u32,
    pub dst: u32,
    /// Transport stream the packet belongs to (data goes src->dst on it, ACKs dst->src).
    pub stream: u32,
    pub payload: Payload,
    /// IP packet size (header + segment bytes).
    pub ip_bytes: u64,
    /// ATM: cells of this packet still alive (fewer than needed means it is lost).
    pub cells: u64,
    /// ATM: a cell was dropped on the way; the receiver's AAL5 check will discard it.
    pub corrupt: bool,
}

impl Packet {
    pub fn data(src: u32, dst: u32, stream: u32, seg: Segment) -> Packet {
        Packet::new(src, dst, stream, Payload::Data(seg), HEADER_BYTES + seg.len)
    }

    /// A pure ACK; SACK blocks add their TCP option bytes to the header.
    /// The blocks themselves are in slot `sack_slot` of the side table (or
    /// `NO_SACK`).
    pub fn ack_in_slot(src: u32, dst: u32, stream: u32, ack: &Ack, sack_slot: u32) -> Packet {
        let header = AckHeader { ack: ack.ack, window: ack.window, sack_slot, tsecr: ack.tsecr };
        Packet::new(src, dst, stream, Payload::Ack(header), HEADER_BYTES + ack.sack.option_bytes())
    }

    /// An ACK whose size counts its SACK option but which carries no blocks.
    pub fn ack(src: u32, dst: u32, stream: u32, ack: Ack) -> Packet {
        Packet::ack_in_slot(src, dst, stream, &ack, NO_SACK)
    }

    /// The same packet with `bytes` more TCP options in its header (0: unchanged).
    pub fn with_options(self, bytes: u64) -> Packet {
        if bytes == 0 {
            return self;
        }
        Packet::new(self.src, self.dst, self.stream, self.payload, self.ip_bytes + bytes)
    }

    fn new(src: u32, dst: u32, stream: u32, payload: Payload, ip_bytes: u64) -> Packet {
        Packet { src, dst, stream, payload, ip_bytes, cells: crate::spec::atm_cells(ip_bytes), corrupt: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::SackBlocks;

    #[test]
    fn ack_size_counts_the_sack_option() {
        let mut ack = Ack::new(0, 0);
        let mut sizes = vec![Packet::ack(0, 1, 0, ack).ip_bytes];
        for i in 0..4 {
            let mut b = ack.sack;
            b.push(100 * i + 10, 100 * i + 20);
            ack.sack = b;
            sizes.push(Packet::ack(0, 1, 0, ack).ip_bytes);
        }
        assert_eq!(sizes, vec![40, 52, 60, 68, 76]);
        assert_eq!(SackBlocks::default().option_bytes(), 0);
    }

    #[test]
    fn an_ack_carries_its_timestamp_echo() {
        // Without it the sender's timestamp checks (tcp_packet_delayed()) never fire.
        let mut ack = Ack::new(1000, 65535);
        ack.tsecr = Some(42_000);
        let pkt = Packet::ack(1, 0, 7, ack);
        match pkt.payload {
            Payload::Ack(h) => assert_eq!((h.ack, h.tsecr), (1000, Some(42_000))),
            Payload::Data(_) => panic!("an ACK became data"),
        }
    }
}
