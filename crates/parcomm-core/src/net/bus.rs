//! A shared 10BaseT-style segment: one frame on the wire at a time.
//!
//! CSMA/CD (IEEE 802.3 §4.2): a station with a frame senses the medium; if it
//! is idle it transmits, if busy it defers and transmits as soon as it goes
//! idle (1-persistent). Stations that start within one propagation delay of
//! each other cannot hear each other and collide; each then waits a random
//! number of slot times drawn from [0, 2^min(n,10)) after its n-th collision,
//! and gives the frame up after 16 attempts. With `collisions = false` the
//! medium is an ideal FIFO (for closed-form checks).

use super::packet::Packet;
use super::queue::PacketQueue;
use crate::rng::Rng;
use crate::spec::{wire_bytes, Framing};
use crate::time::{tx_time, Time};
use std::collections::VecDeque;

const SLOT_BITS: u64 = 512;
const MAX_ATTEMPTS: u32 = 16;
const BACKOFF_LIMIT: u32 = 10;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum StationState {
    Idle,
    Contending,
    Deferring,
    BackingOff,
    Transmitting,
}

pub struct Station {
    pub owner: u32,
    pub queue: PacketQueue,
    state: StationState,
    attempts: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Medium {
    Idle,
    /// Collecting stations that start within one propagation delay.
    Window,
    Busy,
}

#[derive(Clone, Debug, Default)]
pub struct BusStats {
    pub frames: u64,
    pub collisions: u64,
    pub excessive_collision_drops: u64,
    pub busy_ns: u64,
}

pub enum BusAction {
    ResolveAt(Time),
    TxDoneAt(Time, u32),
    IdleAt(Time),
    BackoffDoneAt(Time, u32),
    /// A frame given up after too many collisions (its owner releases what it holds).
    Lost(Packet),
}

pub struct Bus {
    pub rate_bps: f64,
    pub propagation: Time,
    pub collisions: bool,
    pub stations: Vec<Station>,
    medium: Medium,
    contenders: Vec<u32>,
    deferring: VecDeque<u32>,
    pub rng: Rng,
    pub stats: BusStats,
}

impl Bus {
    pub fn new(rate_bps: f64, propagation: Time, collisions: bool, stations: Vec<Station>, rng: Rng) -> Bus {
        Bus {
            rate_bps,
            propagation,
            collisions,
            stations,
            medium: Medium::Idle,
            contenders: Vec::new(),
            deferring: VecDeque::new(),
            rng,
            stats: BusStats::default(),
        }
    }

    pub fn station(owner: u32, queue: PacketQueue) -> Station {
        Station { owner, queue, state: StationState::Idle, attempts: 0 }
    }

    fn slot(&self) -> Time {
        tx_time(SLOT_BITS / 8, self.rate_bps)
    }

    pub fn frame_time(&self, p: &Packet) -> Time {
        tx_time(wire_bytes(Framing::Ethernet, p.ip_bytes), self.rate_bps)
    }

    /// Station `st` may have a frame to send.
    pub fn ready(&mut self, now: Time, st: u32, out: &mut Vec<BusAction>) {
        let s = &mut self.stations[st as usize];
        if s.state != StationState::Idle || s.queue.is_empty() {
            return;
        }
        match self.medium {
            Medium::Idle => {
                s.state = StationState::Contending;
                self.medium = Medium::Window;
                self.contenders.push(st);
                out.push(BusAction::ResolveAt(now + self.propagation.max(1)));
            }
            Medium::Window => {
                s.state = StationState::Contending;
                self.contenders.push(st);
            }
            Medium::Busy => {
                s.state = StationState::Deferring;
                self.deferring.push_back(st);
            }
        }
    }

    /// The contention window closed: one station transmits, or they collide.
    pub fn resolve(&mut self, now: Time, out: &mut Vec<BusAction>) {
        let contenders = std::mem::take(&mut self.contenders);
        self.medium = Medium::Busy;
        if contenders.len() == 1 || !self.collisions {
            let winner = contenders[0];
            // Ideal medium: the others wait their turn in arrival order.
            for &c in contenders[1..].iter().rev() {
                self.stations[c as usize].state = StationState::Deferring;
                self.deferring.push_front(c);
            }
            self.stations[winner as usize].state = StationState::Transmitting;
            let head = *self.stations[winner as usize].queue.front().expect("contending station has a frame");
            let t = self.frame_time(&head);
            self.stats.busy_ns += t;
            out.push(BusAction::TxDoneAt(now + t, winner));
            return;
        }
        self.stats.collisions += 1;
        let jam = self.slot();
        self.stats.busy_ns += jam;
        for c in contenders {
            let s = &mut self.stations[c as usize];
            s.attempts += 1;
            if s.attempts >= MAX_ATTEMPTS {
                if let Some(p) = s.queue.pop(now) {
                    out.push(BusAction::Lost(p));
                }
                s.attempts = 0;
                s.state = StationState::Idle;
                self.stats.excessive_collision_drops += 1;
                // Its next frame (if any) contends when the medium is idle again.
                if !s.queue.is_empty() {
                    s.state = StationState::Deferring;
                    self.deferring.push_back(c);
                }
                continue;
            }
            s.state = StationState::BackingOff;
            let k = self.rng.below(1u64 << s.attempts.min(BACKOFF_LIMIT));
            out.push(BusAction::BackoffDoneAt(now + jam + k * self.slot(), c));
        }
        out.push(BusAction::IdleAt(now + jam));
    }

    /// The frame of station `st` is on the wire completely: hand it over.
    pub fn tx_done(&mut self, now: Time, st: u32, out: &mut Vec<BusAction>) -> Packet {
        let s = &mut self.stations[st as usize];
        let p = s.queue.pop(now).expect("transmitting station has a frame");
        s.attempts = 0;
        s.state = StationState::Idle;
        self.stats.frames += 1;
        self.medium_idle(now, out);
        self.ready(now, st, out);
        p
    }

    /// The medium went idle: every deferring station transmits now (1-persistent).
    pub fn medium_idle(&mut self, now: Time, out: &mut Vec<BusAction>) {
        self.medium = Medium::Idle;
        let waiting: Vec<u32> = self.deferring.drain(..).collect();
        for st in waiting {
            self.stations[st as usize].state = StationState::Idle;
            self.ready(now, st, out);
        }
    }

    pub fn backoff_done(&mut self, now: Time, st: u32, out: &mut Vec<BusAction>) {
        self.stations[st as usize].state = StationState::Idle;
        self.ready(now, st, out);
    }
}
