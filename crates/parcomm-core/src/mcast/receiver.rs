//! A receiver: acknowledges every data packet it gets (duplicates too, so a
//! lost ACK is answered again) with its cumulative point and the packet.

use super::msg::Ack;
use super::seqset::SeqSet;

#[derive(Clone, Debug, Default)]
pub struct Receiver {
    have: SeqSet,
    pub received: u64,
    pub duplicates: u64,
}

impl Receiver {
    /// Packet `seq` arrived: the ACK to send, and whether the packet is new.
    pub fn on_data(&mut self, seq: u64) -> (Ack, bool) {
        let new = self.have.insert(seq);
        if new {
            self.received += 1;
        } else {
            self.duplicates += 1;
        }
        (Ack { cum: self.have.cum(), seq }, new)
    }
}
