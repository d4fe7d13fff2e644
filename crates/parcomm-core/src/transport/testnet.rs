//! Test harness: a Sender and a Receiver joined by a FIFO bottleneck of a
//! given rate plus a fixed one-way delay; ACKs return after the same delay
//! without a bottleneck. Segments can be dropped by (seq, n-th transmission)
//! or at random. Both paths are FIFO with constant delay, so two queues
//! ordered by arrival time replace a general event heap.

use super::{Ack, Receiver, Segment, Sender, TcpConfig};
use crate::time::{Time, SEC};
use std::collections::{HashMap, VecDeque};

pub struct Net {
    pub now: Time,
    pub tx: Sender,
    pub rx: Receiver,
    delay: Time,
    rate_bps: u64,
    link_free: Time,
    data: VecDeque<(Time, Segment)>,
    acks: VecDeque<(Time, Ack)>,
    /// Bytes the application still wants to write.
    app_pending: u64,
    drops: Vec<(u64, u32)>,
    tx_count: HashMap<u64, u32>,
    loss: Option<(f64, u64)>, // (probability, xorshift state)
    /// Data that would arrive in `[from, until)` arrives at `until` (a stalled
    /// path that buffers, in order).
    stall: Option<(Time, Time)>,
    /// Data sent in `[from, until)` is lost (an outage).
    outage: Option<(Time, Time)>,
    /// Every transmission, dropped or not, with its send time.
    pub sent: Vec<(Time, Segment)>,
    /// Every segment arrival at the receiver.
    pub arrived: Vec<(Time, Segment)>,
    /// Every ACK, with the time the receiver emitted it.
    pub acked: Vec<(Time, Ack)>,
}

impl Net {
    pub fn new(cfg: &TcpConfig, rate_bps: u64, one_way_delay: Time) -> Net {
        Net {
            now: 0,
            tx: Sender::new(cfg),
            rx: Receiver::new(cfg),
            delay: one_way_delay,
            rate_bps,
            link_free: 0,
            data: VecDeque::new(),
            acks: VecDeque::new(),
            app_pending: 0,
            drops: Vec::new(),
            tx_count: HashMap::new(),
            loss: None,
            stall: None,
            outage: None,
            sent: Vec::new(),
            arrived: Vec::new(),
            acked: Vec::new(),
        }
    }

    /// Drop the `nth` (1-based) transmission of the segment starting at `seq`.
    pub fn drop_nth(&mut self, seq: u64, nth: u32) -> &mut Self {
        self.drops.push((seq, nth));
        self
    }

    /// Data due to arrive in `[from, until)` arrives at `until` instead, in order.
    pub fn stall(&mut self, from: Time, until: Time) -> &mut Self {
        self.stall = Some((from, until));
        self
    }

    /// Data sent in `[from, until)` is lost.
    pub fn outage(&mut self, from: Time, until: Time) -> &mut Self {
        self.outage = Some((from, until));
        self
    }

    pub fn random_loss(&mut self, p: f64, seed: u64) -> &mut Self {
        self.loss = Some((p, seed | 1));
        self
    }

    /// The application writes `bytes` as fast as the send buffer allows.
    pub fn write(&mut self, bytes: u64) {
        self.app_pending += bytes;
        self.pump();
    }

    /// Runs until everything written is acked or `limit` is reached.
    /// Returns whether the transfer completed.
    pub fn run(&mut self, limit: Time) -> bool {
        self.pump();
        loop {
            if self.app_pending == 0 && self.tx.acked() == self.tx.written() {
                return true;
            }
            // Earliest event; ties go to arrivals before timers, so an ACK
            // due at the deadline still cancels the timeout.
            let candidates = [
                self.data.front().map(|d| d.0),
                self.acks.front().map(|a| a.0),
                self.rx.poll_timeout(),
                self.tx.poll_timeout(),
            ];
            let Some((which, t)) =
                candidates.iter().enumerate().filter_map(|(i, t)| t.map(|t| (i, t))).min_by_key(|&(i, t)| (t, i))
            else {
                return false; // stuck: nothing can happen any more
            };
            if t > limit {
                return false;
            }
            self.now = t;
            match which {
                0 => {
                    let (_, seg) = self.data.pop_front().unwrap();
                    self.arrived.push((t, seg));
                    self.rx.on_segment(t, seg);
                }
                1 => {
                    let (_, ack) = self.acks.pop_front().unwrap();
                    self.tx.on_ack(t, ack);
                }
                2 => self.rx.on_timeout(t),
                _ => self.tx.on_timeout(t),
            }
            self.pump();
        }
    }

    /// Drains both endpoints' outputs at the current time.
    fn pump(&mut self) {
        let w = self.app_pending.min(self.tx.buffer_space());
        self.tx.write(w);
        self.app_pending -= w;
        while let Some(seg) = self.tx.poll_transmit(self.now) {
            self.send(seg);
        }
        while let Some(ack) = self.rx.poll_ack(self.now) {
            self.acked.push((self.now, ack));
            self.acks.push_back((self.now + self.delay, ack));
        }
    }

    fn send(&mut self, seg: Segment) {
        self.sent.push((self.now, seg));
        let n = self.tx_count.entry(seg.seq).or_insert(0);
        *n += 1;
        let in_outage = self.outage.is_some_and(|(a, b)| self.now >= a && self.now < b);
        if self.drops.contains(&(seg.seq, *n)) || in_outage || self.random_drop() {
            return;
        }
        let tx_time = (seg.len * 8 * SEC).div_ceil(self.rate_bps);
        self.link_free = self.link_free.max(self.now) + tx_time;
        let mut at = self.link_free + self.delay;
        if let Some((a, b)) = self.stall {
            if at >= a && at < b {
                at = b;
            }
        }
        self.data.push_back((at, seg));
    }

    fn random_drop(&mut self) -> bool {
        let Some((p, s)) = self.loss.as_mut() else {
            return false;
        };
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        ((*s >> 11) as f64) / ((1u64 << 53) as f64) < *p
    }

    /// Send times of every transmission of the segment starting at `seq`.
    pub fn sends_of(&self, seq: u64) -> Vec<Time> {
        self.sent.iter().filter(|s| s.1.seq == seq).map(|s| s.0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn cfg() -> TcpConfig {
        TcpConfig { mss: 1000, delayed_ack: false, sndbuf: 2 << 20, rcvbuf: 2 << 20, ..Default::default() }
    }

    #[test]
    fn lossless_bulk_transfer_reaches_bottleneck_rate() {
        let total = 10_000_000;
        let rate = 100_000_000; // BDP at 10 ms RTT = 125 kB, far below the buffers
        let mut net = Net::new(&cfg(), rate, 5 * MS);
        net.write(total);
        assert!(net.run(10 * SEC));
        assert_eq!(net.rx.delivered(), total);
        let st = net.tx.stats();
        assert_eq!((st.bytes_retransmitted, st.timeouts, st.fast_retransmits), (0, 0, 0));
        assert_eq!(st.bytes_sent, total);
        let last_arrival = net.arrived.last().unwrap().0;
        let goodput = total as f64 * 8.0 / crate::time::to_secs(last_arrival);
        assert!(goodput > 0.93 * rate as f64, "goodput {goodput}");
    }

    #[test]
    fn small_receive_window_limits_throughput() {
        // rcvbuf = BDP/2: one window per RTT, i.e. about half the rate.
        let cfg = TcpConfig { rcvbuf: 62_000, ..cfg() };
        let mut net = Net::new(&cfg, 100_000_000, 5 * MS);
        net.write(2_000_000);
        assert!(net.run(10 * SEC));
        let goodput = 2e6 * 8.0 / crate::time::to_secs(net.arrived.last().unwrap().0);
        assert!(goodput > 0.4e8 && goodput < 0.55e8, "goodput {goodput}");
    }

    #[test]
    fn delayed_ack_halves_ack_count() {
        let cfg = TcpConfig { delayed_ack: true, ..cfg() };
        let mut net = Net::new(&cfg, 100_000_000, 5 * MS);
        net.write(1_000_000);
        assert!(net.run(10 * SEC));
        let segs = net.tx.stats().segments_sent;
        let acks = net.acked.len() as u64;
        assert_eq!(segs, 1000);
        assert!(acks >= segs / 2 && acks <= segs / 2 + 10, "{acks} acks for {segs} segments");
        assert_eq!(net.tx.stats().bytes_retransmitted, 0);
    }

    #[test]
    fn lone_segment_acked_after_delayed_ack_timeout() {
        let cfg = TcpConfig { delayed_ack: true, ..cfg() };
        let mut net = Net::new(&cfg, 100_000_000, 5 * MS);
        net.write(100);
        assert!(net.run(SEC));
        assert_eq!(net.acked.len(), 1);
        assert_eq!(net.acked[0].0 - net.arrived[0].0, cfg.delayed_ack_timeout);
    }

    #[test]
    fn random_loss_transfer_completes() {
        for (seed, delack) in [(1, false), (7, true), (12345, false), (99, true)] {
            let cfg = TcpConfig { delayed_ack: delack, rcvbuf: 100_000, ..cfg() };
            let mut net = Net::new(&cfg, 50_000_000, 2 * MS);
            net.random_loss(0.03, seed);
            net.write(2_000_000);
            assert!(net.run(600 * SEC), "seed {seed} stuck at {}", net.rx.delivered());
            assert_eq!(net.rx.delivered(), 2_000_000);
            let st = net.tx.stats();
            assert!(st.fast_retransmits > 0, "{st:?}");
        }
    }

    /// With SACK and TLP off, lossy transfers give exactly the counters and
    /// times recorded before either option existed.
    #[test]
    fn options_off_match_the_recorded_baseline() {
        // (seed, delayed ACK, rcvbuf, loss) -> (end, ACKs, sender counters)
        type Run = ((u64, bool, u64, f64), (Time, usize, [u64; 6]));
        let runs: [Run; 5] = [
            ((1, false, 100_000, 0.03), (2187360000, 2000, [2060000, 60000, 2060, 60, 4, 47])),
            ((7, true, 100_000, 0.03), (4491200000, 1189, [2065000, 65000, 2065, 65, 11, 39])),
            ((12345, false, 2 << 20, 0.01), (683360000, 2000, [2016000, 16000, 2016, 16, 0, 16])),
            ((99, true, 60_000, 0.05), (10352320000, 1214, [2113000, 113000, 2113, 113, 37, 46])),
            ((5, false, 30_000, 0.1), (18361120000, 2015, [2214000, 214000, 2214, 214, 61, 84])),
        ];
        for ((seed, delayed_ack, rcvbuf, p), want) in runs {
            let cfg = TcpConfig { delayed_ack, rcvbuf, ..cfg() };
            assert!(!cfg.sack && !cfg.tail_loss_probe);
            let mut net = Net::new(&cfg, 50_000_000, 2 * MS);
            net.random_loss(p, seed);
            net.write(2_000_000);
            assert!(net.run(600 * SEC));
            let s = net.tx.stats();
            let got = [
                s.bytes_sent,
                s.bytes_retransmitted,
                s.segments_sent,
                s.segments_retransmitted,
                s.timeouts,
                s.fast_retransmits,
            ];
            assert_eq!((net.now, net.acked.len(), got), want, "seed {seed}");
            assert_eq!(s.tail_loss_probes, 0);
            assert!(net.acked.iter().all(|a| a.1.sack.is_empty()));
        }
    }

    #[test]
    fn random_loss_transfer_completes_with_sack_and_tlp() {
        for (seed, delack) in [(1, false), (7, true), (12345, false), (99, true)] {
            let cfg = TcpConfig { delayed_ack: delack, rcvbuf: 100_000, sack: true, tail_loss_probe: true, ..cfg() };
            let mut net = Net::new(&cfg, 50_000_000, 2 * MS);
            net.random_loss(0.03, seed);
            net.write(2_000_000);
            assert!(net.run(600 * SEC), "seed {seed} stuck at {}", net.rx.delivered());
            assert_eq!(net.rx.delivered(), 2_000_000);
            assert!(net.acked.iter().any(|a| !a.1.sack.is_empty()));
        }
    }
}
