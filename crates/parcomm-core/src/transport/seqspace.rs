//! The sender's sequence space: what the application wrote, what went out,
//! what came back acknowledged, and what the peer lets through.

/// Invariant: `snd_una <= snd_nxt <= snd_max <= written`. `snd_nxt < snd_max`
/// only after a timeout under NewReno recovery, while go-back-N resends what
/// was declared lost; with SACK the scoreboard picks what to resend and
/// `snd_nxt == snd_max`.
#[derive(Debug)]
pub struct SeqSpace {
    /// Payload bytes per segment.
    pub mss: u64,
    /// Bytes the application has written.
    pub written: u64,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub snd_max: u64,
    /// Window from the latest acceptable ACK, counted from `snd_una`.
    pub peer_wnd: u64,
}

impl SeqSpace {
    /// Sent and not yet cumulatively acknowledged.
    pub fn outstanding(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// At most one segment of new data that the peer's window admits at
    /// `snd_max`, if any: `(start, len)`.
    pub fn new_data_in_window(&self) -> Option<(u64, u64)> {
        let len = self.mss.min(self.written - self.snd_max);
        (len > 0 && self.snd_max + len - self.snd_una <= self.peer_wnd).then_some((self.snd_max, len))
    }
}
