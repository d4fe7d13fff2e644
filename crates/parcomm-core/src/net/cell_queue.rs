//! The output buffer of a cell-switching ATM port, as a fluid of cells.
//!
//! A store-and-forward queue (`queue::PacketQueue`) admits a frame when its
//! last bit arrives. A real ATM switch switches cells: the frames from many
//! input ports arrive at one output port interleaved, each at its input
//! link's cell rate, and once the buffer is full every frame still arriving
//! loses cells. With many simultaneous senders nearly every frame is then
//! corrupted (Romanow & Floyd 1995), where store-and-forward would admit a few
//! whole frames and drop the rest.
//!
//! Here the buffer occupancy V (cells, f64) is piecewise linear between
//! events: inflow is the sum of the rates of the frames arriving, outflow the
//! output link's cell rate whenever V > 0 or inflow exceeds it, and V is
//! clipped to [0, capacity]. Inflow beyond a full buffer is dropped and
//! charged to the arriving frames in proportion to their rates (what
//! cell-level round robin across input ports does). V is brought up to date
//! lazily, at each event touching the port.

use crate::time::Time;

/// One frame arriving at the port, keyed by the upstream port that sends it.
#[derive(Clone, Debug)]
struct Arrival {
    key: u32,
    cells: u64,
    /// Cells per nanosecond (0 for a frame refused by early packet discard).
    rate: f64,
    /// Cells of this frame dropped so far.
    dropped: f64,
}

#[derive(Clone, Debug)]
pub struct CellQueue {
    capacity: f64,
    /// Output link cell rate, cells per nanosecond.
    out_rate: f64,
    /// Occupancy (cells) at `last`.
    v: f64,
    last: Time,
    /// In order of their start, so that sums (and results) never depend on
    /// hashing order.
    arrivals: Vec<Arrival>,
    max_v: f64,
    /// Integral of V over time (cell·ns), for the time-weighted mean.
    integral: f64,
}

impl CellQueue {
    /// A buffer of `capacity` cells drained by a link of `rate_bps` (53-byte cells).
    pub fn new(capacity: u64, rate_bps: f64) -> CellQueue {
        CellQueue {
            capacity: capacity as f64,
            out_rate: rate_bps / (53.0 * 8.0) / 1e9,
            v: 0.0,
            last: 0,
            arrivals: Vec::new(),
            max_v: 0.0,
            integral: 0.0,
        }
    }

    /// Occupancy (cells) as of the last event.
    pub fn occupancy(&self) -> f64 {
        self.v
    }

    /// Bring V (and the drops charged to each arriving frame) up to `now`.
    fn advance(&mut self, now: Time) {
        let dt = now.saturating_sub(self.last) as f64;
        self.last = self.last.max(now);
        if dt == 0.0 {
            return;
        }
        let inflow: f64 = self.arrivals.iter().map(|a| a.rate).sum();
        let net = inflow - self.out_rate;
        let v = self.v;
        if net > 0.0 {
            let room = self.capacity - v;
            let t_fill = room / net;
            if dt <= t_fill {
                self.integral += (v + net * dt / 2.0) * dt;
                self.v = (v + net * dt).min(self.capacity);
            } else {
                self.integral += (v + room / 2.0) * t_fill + self.capacity * (dt - t_fill);
                self.v = self.capacity;
                let excess = net * (dt - t_fill);
                for a in &mut self.arrivals {
                    a.dropped += excess * a.rate / inflow;
                }
            }
        } else if net < 0.0 && v > 0.0 {
            let t_empty = v / -net;
            if dt < t_empty {
                self.integral += (v + net * dt / 2.0) * dt;
                self.v = (v + net * dt).max(0.0);
            } else {
                self.integral += v * t_empty / 2.0;
                self.v = 0.0;
            }
        } else {
            self.integral += v * dt;
        }
        self.max_v = self.max_v.max(self.v);
    }

    /// The first cell of a frame of `cells` cells from upstream port `key`
    /// arrives; the rest follow evenly over `duration`. With early packet
    /// discard (`epd_threshold`), a frame whose first cell finds the buffer
    /// fuller than the threshold is refused whole: it brings no cells.
    /// Returns false if refused.
    pub fn start(&mut self, now: Time, key: u32, cells: u64, duration: Time, epd_threshold: Option<u64>) -> bool {
        self.advance(now);
        let refused = epd_threshold.is_some_and(|th| self.v > th as f64);
        let rate = if refused { 0.0 } else { cells as f64 / duration.max(1) as f64 };
        let dropped = if refused { cells as f64 } else { 0.0 };
        self.arrivals.push(Arrival { key, cells, rate, dropped });
        !refused
    }

    /// The last cell of the frame from `key` has arrived (or would have: a
    /// frame lost on the wire ends the same way). Returns the cells lost,
    /// rounded (at most the frame's cells), or None if no frame from `key` is
    /// arriving. At an instant where one frame from `key` ends and the next
    /// starts, the earlier one is the one that ends.
    pub fn finish(&mut self, now: Time, key: u32) -> Option<u64> {
        self.advance(now);
        let i = self.arrivals.iter().position(|a| a.key == key)?;
        let a = self.arrivals.remove(i);
        Some((a.dropped.round() as u64).min(a.cells))
    }

    /// Frames currently arriving.
    pub fn arriving(&self) -> usize {
        self.arrivals.len()
    }

    pub fn max_occupancy(&self) -> f64 {
        self.max_v
    }

    /// Time-weighted mean occupancy over [0, now], without changing the state.
    pub fn mean_occupancy(&self, now: Time) -> f64 {
        if now == 0 {
            return 0.0;
        }
        let mut q = self.clone();
        q.advance(now);
        q.integral / now as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 424 Gbit/s: exactly one 53-byte cell per nanosecond, so the numbers
    /// below can be worked out by hand.
    const ONE_CELL_PER_NS: f64 = 424e9;

    #[test]
    fn one_frame_into_an_empty_port_is_whole() {
        let mut q = CellQueue::new(100, ONE_CELL_PER_NS);
        // 192 cells at 1 cell/ns into a port draining 1 cell/ns: V stays 0.
        assert!(q.start(0, 7, 192, 192, None));
        assert_eq!(q.finish(192, 7), Some(0));
        assert_eq!(q.occupancy(), 0.0);
        assert_eq!(q.arriving(), 0);
    }

    #[test]
    fn a_frame_from_a_faster_link_fills_but_fits() {
        // 192 cells in 96 ns (2 cells/ns) into 1 cell/ns: V grows 1 cell/ns to 96.
        let mut q = CellQueue::new(100, ONE_CELL_PER_NS);
        q.start(0, 0, 192, 96, None);
        assert_eq!(q.finish(96, 0), Some(0));
        assert_eq!(q.occupancy(), 96.0);
        assert_eq!(q.max_occupancy(), 96.0);
        // Then it drains at 1 cell/ns: mean over [0, 192] = (96*96/2 + 96*96/2) / 192 = 48.
        assert_eq!(q.mean_occupancy(192), 48.0);
    }

    fn simultaneous(k: u32, capacity: u64) -> Vec<u64> {
        let mut q = CellQueue::new(capacity, ONE_CELL_PER_NS);
        for key in 0..k {
            q.start(0, key, 192, 192, None);
        }
        (0..k).map(|key| q.finish(192, key).unwrap()).collect()
    }

    #[test]
    fn simultaneous_frames_all_lose_cells_once_the_buffer_overflows() {
        // k frames of 192 cells, each at 1 cell/ns, into C = 2048 drained at
        // 1 cell/ns. In 192 ns they bring k*192 cells; the link drains 192, so
        // (k-1)*192 - C overflow, shared equally.
        // k = 11: 10*192 = 1920 <= 2048, nothing is lost.
        assert_eq!(simultaneous(11, 2048), vec![0; 11]);
        // k = 12: 11*192 - 2048 = 64 cells, 5.33 each -> 5.
        assert_eq!(simultaneous(12, 2048), vec![5; 12]);
        // k = 20: 19*192 - 2048 = 1600 cells, 80 each: every frame is corrupt.
        assert_eq!(simultaneous(20, 2048), vec![80; 20]);
        // k = 99: 98*192 - 2048 = 16768 cells, 169.37 each -> 169 of 192.
        assert_eq!(simultaneous(99, 2048), vec![169; 99]);
    }

    #[test]
    fn a_frame_that_starts_after_the_queue_drained_is_whole() {
        let mut q = CellQueue::new(200, ONE_CELL_PER_NS);
        // Three frames at once: net 2 cells/ns fills 200 cells at t = 100, then
        // 2*92 = 184 cells overflow, 61.33 per frame.
        for key in 0..3 {
            q.start(0, key, 192, 192, None);
        }
        for key in 0..3 {
            assert_eq!(q.finish(192, key), Some(61));
        }
        assert_eq!(q.occupancy(), 200.0);
        // Empty again at t = 392; a frame at 400 finds an empty buffer.
        q.start(400, 9, 192, 192, None);
        assert_eq!(q.finish(592, 9), Some(0));
        assert_eq!(q.occupancy(), 0.0);
        assert_eq!(q.max_occupancy(), 200.0);
    }

    #[test]
    fn staggered_frames_share_the_overflow_by_rate() {
        let mut q = CellQueue::new(100, ONE_CELL_PER_NS);
        // A: 200 cells over [0, 200] at 1 cell/ns; B: 400 cells over [0, 200]
        // at 2 cells/ns. Net 2 cells/ns fills 100 cells at t = 50; the next
        // 150 ns overflow 300 cells: 1/3 charged to A, 2/3 to B.
        q.start(0, 1, 200, 200, None);
        q.start(0, 2, 400, 200, None);
        assert_eq!(q.finish(200, 1), Some(100));
        assert_eq!(q.finish(200, 2), Some(200));
    }

    #[test]
    fn early_packet_discard_refuses_at_the_first_cell() {
        let mut q = CellQueue::new(1000, ONE_CELL_PER_NS);
        q.start(0, 0, 192, 96, None); // V = 96 at t = 96
        assert!(!q.start(96, 1, 192, 192, Some(50)));
        assert_eq!(q.finish(96, 0), Some(0));
        // The refused frame brings no cells and is lost whole.
        assert_eq!(q.finish(288, 1), Some(192));
        assert_eq!(q.occupancy(), 0.0);
    }

    #[test]
    fn the_earlier_frame_of_a_key_ends_first() {
        // At one instant the next frame from port 3 may start before the
        // previous one's end is handled: the end applies to the older frame.
        let mut q = CellQueue::new(100, ONE_CELL_PER_NS);
        q.start(0, 3, 10, 10, None);
        q.start(10, 3, 20, 20, None);
        assert_eq!(q.arriving(), 2);
        assert_eq!(q.finish(10, 3), Some(0));
        assert_eq!(q.finish(30, 3), Some(0));
        assert_eq!(q.finish(30, 3), None);
    }
}
