//! Per-stream transport trace: each sender's state after every ACK it takes
//! and every timer that fires, so a disagreement with the kernel can be seen
//! over time (`parcomm conformance --trace`). Off unless asked for; bounded.

use super::Simulation;
use crate::time::Time;

/// The sender of stream `src -> dst` at time `t` (all times in ns, windows in bytes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceSample {
    pub t: Time,
    pub src: u32,
    pub dst: u32,
    /// What happened just before: an ACK arrived, or a timer (RTO or probe) fired.
    pub event: TraceEvent,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Current RTO, backoff included.
    pub rto: Time,
    /// Smoothed RTT, 0 before the first sample.
    pub srtt: Time,
    pub in_flight: u64,
    /// Bytes cumulatively acknowledged (snd_una as an offset).
    pub acked: u64,
    pub in_recovery: bool,
    /// Running totals, as the kernel's counters are.
    pub segments_retransmitted: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub tail_loss_probes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceEvent {
    #[default]
    Ack,
    Timer,
}

impl TraceEvent {
    pub fn name(self) -> &'static str {
        match self {
            TraceEvent::Ack => "ack",
            TraceEvent::Timer => "timer",
        }
    }
}

/// Samples kept until `limit`; later ones are counted, not stored.
#[derive(Debug, Default)]
pub(crate) struct StreamTrace {
    samples: Vec<TraceSample>,
    limit: usize,
    dropped: u64,
}

impl Simulation {
    /// Record every sender's state after each ACK and timer from now on, at
    /// most `limit` samples (a trace of a long run would otherwise grow without bound).
    pub fn enable_trace(&mut self, limit: usize) {
        self.trace = Some(StreamTrace { samples: Vec::new(), limit, dropped: 0 });
    }

    /// The samples so far and how many did not fit; tracing stays on.
    pub fn take_trace(&mut self) -> (Vec<TraceSample>, u64) {
        match self.trace.as_mut() {
            Some(tr) => (std::mem::take(&mut tr.samples), std::mem::replace(&mut tr.dropped, 0)),
            None => (Vec::new(), 0),
        }
    }

    pub(crate) fn trace_stream(&mut self, s: u32, event: TraceEvent) {
        let Some(tr) = self.trace.as_mut() else {
            return;
        };
        if tr.samples.len() >= tr.limit {
            tr.dropped += 1;
            return;
        }
        let st = &self.streams[s as usize];
        let snd = &st.sender;
        let stats = snd.stats();
        tr.samples.push(TraceSample {
            t: self.q.now(),
            src: st.src,
            dst: st.dst,
            event,
            cwnd: snd.cwnd(),
            ssthresh: snd.ssthresh(),
            rto: snd.rto(),
            srtt: snd.srtt().unwrap_or(0),
            in_flight: snd.in_flight(),
            acked: snd.acked(),
            in_recovery: snd.in_recovery(),
            segments_retransmitted: stats.segments_retransmitted,
            timeouts: stats.timeouts,
            fast_retransmits: stats.fast_retransmits,
            tail_loss_probes: stats.tail_loss_probes,
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::PlatformSpec;
    use crate::Simulation;

    /// `n` hosts on a 100 Mbit/s switch with a byte buffer per port, Linux-like TCP at rto_min 200 ms.
    fn star(n: usize, buffer_bytes: u64) -> String {
        let tcp = r#"{"rto_min_s": 0.2, "rto_max_s": 120.0, "rto_initial_s": 1.0, "clock_granularity_s": 0.001,
            "initial_cwnd_segments": 10, "sndbuf_bytes": 262144, "rcvbuf_bytes": 262144,
            "delayed_ack": false, "delayed_ack_timeout_s": 0.04, "dupack_threshold": 3}"#;
        let hosts: Vec<String> = (0..n).map(|i| format!(r#"{{"name":"h{i}","tcp":{tcp}}}"#)).collect();
        let links: Vec<String> = (0..n).map(|i| format!(r#"{{"a":"h{i}","b":"sw","rate_bps":1e8}}"#)).collect();
        format!(
            r#"{{"hosts":[{}],"switches":[{{"name":"sw","buffer":{{"unit":"bytes","size":{buffer_bytes}}}}}],"links":[{}]}}"#,
            hosts.join(","),
            links.join(",")
        )
    }

    #[test]
    fn trace_is_off_by_default_and_bounded_when_on() {
        let spec = PlatformSpec::from_json(&star(3, 1 << 20)).unwrap();
        let mut sim = Simulation::new(&spec, 1).unwrap();
        sim.send(1, 0, 200_000).unwrap();
        sim.run_until_completion(u64::MAX);
        assert_eq!(sim.take_trace(), (vec![], 0));

        let mut sim = Simulation::new(&spec, 1).unwrap();
        sim.enable_trace(10);
        sim.send(1, 0, 200_000).unwrap();
        while !sim.is_idle() {
            sim.run_until_completion(u64::MAX);
        }
        let (samples, dropped) = sim.take_trace();
        assert_eq!(samples.len(), 10);
        assert!(dropped > 0, "200 kB in 1448-byte segments takes more than 10 ACKs");
        assert!(samples.windows(2).all(|w| w[0].t <= w[1].t));
        assert!(samples.iter().all(|s| s.src == 1 && s.dst == 0));
        assert!(samples.windows(2).all(|w| w[0].acked <= w[1].acked));
    }

    #[test]
    fn trace_shows_the_timeouts_of_an_incast() {
        // 8 senders of 64 KiB into a 16 KiB port: drops, so some sender times out.
        let spec = PlatformSpec::from_json(&star(9, 16 * 1024)).unwrap();
        let mut sim = Simulation::new(&spec, 1).unwrap();
        sim.enable_trace(1 << 20);
        for src in 1..9 {
            sim.send(src, 0, 64 * 1024).unwrap();
        }
        while !sim.is_idle() {
            sim.run_until_completion(u64::MAX);
        }
        let c = sim.counters();
        let total_timeouts: u64 = c.hosts.iter().map(|h| h.timeouts).sum();
        let (samples, dropped) = sim.take_trace();
        assert_eq!(dropped, 0);
        let mut last = std::collections::HashMap::new();
        for s in &samples {
            last.insert(s.src, s.timeouts);
        }
        assert!(total_timeouts > 0);
        assert_eq!(last.values().sum::<u64>(), total_timeouts);
        assert!(samples.iter().any(|s| s.event == super::TraceEvent::Timer));
    }
}
