//! A toy controller that exists to prove the registry: a fixed window of
//! `initial_cwnd_segments` that only a timeout shrinks (to one segment,
//! until the next ACK). This file and its line in `REGISTRY` are all it
//! took; the tests in `transport/choice.rs` run a platform with it.

use super::{CongestionControl, CongestionEvent, Window};
use crate::time::Time;
use crate::transport::TcpConfig;

pub fn build(cfg: &TcpConfig) -> Box<dyn CongestionControl> {
    let w = Window::new(cfg.mss, cfg.initial_cwnd_segments);
    Box::new(Toy { fixed: w.cwnd, w })
}

#[derive(Debug)]
struct Toy {
    w: Window,
    fixed: u64,
}

impl CongestionControl for Toy {
    fn window(&self) -> &Window {
        &self.w
    }

    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    fn on_ack(&mut self, _now: Time, _bytes: u64, _srtt: Option<Time>) {
        self.w.cwnd = self.fixed;
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        if let CongestionEvent::Timeout { .. } = event {
            self.w.cwnd = self.w.mss;
        }
    }
}
