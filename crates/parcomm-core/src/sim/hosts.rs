//! Hosts: the CPU (busy while computing or paying per-message overheads),
//! one transport stream per ordered host pair, and the NIC they share.

use super::{Completion, CompletionKind, CpuThen, Event, OpId, Simulation, Stream};
use crate::net::packet::{Packet, Payload};
use crate::net::routing::Iface;
use crate::spec::Overhead;
use crate::time::{from_secs, Time};
use crate::transport::{Receiver, Sender};

fn overhead(o: &Overhead, bytes: u64, rng: &mut crate::rng::Rng) -> Time {
    // Draw only when there is jitter, so jitter-free runs consume no randomness.
    let noise = if o.jitter_s > 0.0 { o.jitter_s * rng.uniform() } else { 0.0 };
    from_secs(o.fixed_s + o.per_byte_s * bytes as f64 + noise)
}

impl Simulation {
    fn complete(&mut self, op: OpId, kind: CompletionKind, host: u32) {
        self.completions.push(Completion { op, kind, host, time: self.q.now() });
    }

    /// Queue a job on the host's CPU (FIFO), then do `then`.
    pub(crate) fn cpu_run(&mut self, host: u32, duration: Time, then: CpuThen) {
        let now = self.q.now();
        let h = &mut self.hosts[host as usize];
        let start = h.cpu_free.max(now);
        h.cpu_free = start + duration;
        h.cpu_busy += duration;
        self.q.schedule(h.cpu_free, Event::CpuDone { host, then });
    }

    pub(crate) fn cpu_done(&mut self, host: u32, then: CpuThen) {
        match then {
            CpuThen::Complete(op, kind) => self.complete(op, kind, host),
            CpuThen::Write { stream, op, bytes } => self.stream_write(stream, op, bytes),
        }
    }

    /// The application takes an arrived message of `bytes`: its CPU pays
    /// the host's receive overhead (PlogP's o_r, seed 001 §2.1.3).
    pub(crate) fn start_receive(&mut self, op: OpId, host: u32, bytes: u64) {
        let cost = {
            let h = &mut self.hosts[host as usize];
            overhead(&h.recv_overhead, bytes, &mut h.rng)
        };
        self.cpu_run(host, cost, CpuThen::Complete(op, CompletionKind::Received));
    }

    pub(crate) fn start_send(&mut self, op: OpId, src: u32, dst: u32, bytes: u64) -> Result<(), String> {
        let cost = {
            let h = &mut self.hosts[src as usize];
            overhead(&h.send_overhead, bytes, &mut h.rng)
        };
        if src == dst {
            // A message to oneself is a memory copy: no network, only the overheads.
            self.cpu_run(src, cost, CpuThen::Complete(op, CompletionKind::Sent));
            self.cpu_run(dst, 0, CpuThen::Complete(op, CompletionKind::Arrived));
            return Ok(());
        }
        let stream = self.stream(src, dst);
        self.cpu_run(src, cost, CpuThen::Write { stream, op, bytes });
        Ok(())
    }

    fn stream(&mut self, src: u32, dst: u32) -> u32 {
        if let Some(&s) = self.stream_of.get(&(src, dst)) {
            return s;
        }
        let mut cfg = self.hosts[src as usize].tcp.clone();
        let mut rcfg = self.hosts[dst as usize].tcp.clone();
        // The sender's first window is the receiver's buffer.
        cfg.rcvbuf = rcfg.rcvbuf;
        // SACK is used only when both ends permit it (SYN negotiation).
        let sack = cfg.sack && rcfg.sack;
        cfg.sack = sack;
        rcfg.sack = sack;
        // Timestamps likewise; with them every segment's header is 12 bytes
        // longer and its payload 12 bytes shorter (Linux's mss_cache).
        let timestamps = cfg.timestamps && rcfg.timestamps;
        cfg.timestamps = timestamps;
        rcfg.timestamps = timestamps;
        let tcp_options = if timestamps { crate::transport::TIMESTAMP_OPTION_BYTES } else { 0 };
        cfg.mss = cfg.mss.saturating_sub(tcp_options).max(1);
        rcfg.mss = rcfg.mss.saturating_sub(tcp_options).max(1);
        let id = self.streams.len() as u32;
        let mut sender = Sender::new(&cfg);
        // Ranks connect their sockets before communicating (MPI and socket
        // meshes set up at start), so the handshake already gave one sample.
        sender.seed_handshake_rtt(self.base_rtt(src, dst));
        self.streams.push(Stream {
            src,
            dst,
            sender,
            receiver: Receiver::new(&rcfg),
            pending: Default::default(),
            deliveries: Default::default(),
            enqueued: 0,
            in_ready: false,
            sender_timer: None,
            receiver_timer: None,
            tcp_options,
        });
        self.stream_of.insert((src, dst), id);
        id
    }

    /// Round trip of a header-only packet on an idle path, there and back.
    fn base_rtt(&self, src: u32, dst: u32) -> Time {
        self.one_way_idle(src, dst) + self.one_way_idle(dst, src)
    }

    fn one_way_idle(&self, src: u32, dst: u32) -> Time {
        let probe = Packet::ack(src, dst, 0, crate::transport::Ack::new(0, 0));
        let (mut node, mut total) = (src, 0);
        for _ in 0..self.nodes.len() {
            if node == dst {
                break;
            }
            let (next, hop) = match self.routes.next(node, &probe) {
                Iface::Port(p) => {
                    let port = &self.ports[p as usize];
                    (port.peer, port.wire_time(&probe) + port.propagation)
                }
                Iface::Bus { bus, to, .. } => {
                    let b = &self.buses[bus as usize];
                    (b.stations[to as usize].owner, b.frame_time(&probe) + b.propagation)
                }
                Iface::None => break,
            };
            total += hop
                + match self.nodes[next as usize] {
                    super::NodeKind::Switch { latency, .. } => latency,
                    super::NodeKind::Router(r) => self.routers[r as usize].service_time(&probe),
                    super::NodeKind::Host(_) => 0,
                };
            node = next;
        }
        total
    }

    fn stream_write(&mut self, s: u32, op: OpId, bytes: u64) {
        let st = &mut self.streams[s as usize];
        st.enqueued += bytes;
        st.deliveries.push_back((st.enqueued, op, bytes));
        st.pending.push_back((op, bytes));
        self.fill_socket_buffer(s);
    }

    /// Move pending message bytes into the socket buffer as room allows;
    /// a message is `Sent` once its last byte is in.
    fn fill_socket_buffer(&mut self, s: u32) {
        let mut done = Vec::new();
        let st = &mut self.streams[s as usize];
        while let Some((op, left)) = st.pending.front_mut() {
            let n = (*left).min(st.sender.buffer_space());
            if n == 0 {
                break;
            }
            st.sender.write(n);
            *left -= n;
            if *left == 0 {
                done.push(*op);
                st.pending.pop_front();
            }
        }
        let src = st.src;
        for op in done {
            self.complete(op, CompletionKind::Sent, src);
        }
        self.make_ready(s);
    }

    fn make_ready(&mut self, s: u32) {
        let st = &mut self.streams[s as usize];
        if !st.in_ready {
            st.in_ready = true;
            let src = st.src;
            self.hosts[src as usize].ready.push_back(s);
            self.pump(src);
        }
    }

    fn nic_has_room(&self, host: u32) -> bool {
        match self.hosts[host as usize].nic {
            Iface::Port(p) => {
                let q = &self.ports[p as usize].queue;
                q.occupancy < q.capacity
            }
            Iface::Bus { bus, station, .. } => {
                let q = &self.buses[bus as usize].stations[station as usize].queue;
                q.occupancy < q.capacity
            }
            Iface::None => false,
        }
    }

    /// Let ready streams hand segments to the NIC while it has room. Like
    /// Linux's tcp_write_xmit, a stream sends everything its window allows
    /// in one burst into the NIC's FIFO; a stream cut short by a full NIC
    /// keeps its place at the head and goes on when room frees.
    pub(crate) fn pump(&mut self, host: u32) {
        while let Some(&s) = self.hosts[host as usize].ready.front() {
            let now = self.q.now();
            let mut exhausted = false;
            while self.nic_has_room(host) {
                let st = &mut self.streams[s as usize];
                match st.sender.poll_transmit(now) {
                    Some(seg) => {
                        let pkt = Packet::data(st.src, st.dst, s, seg).with_options(st.tcp_options);
                        let iface = self.routes.next(host, &pkt);
                        self.enqueue(iface, pkt, super::NO_PORT);
                    }
                    None => {
                        exhausted = true;
                        break;
                    }
                }
            }
            self.arm_sender_timer(s);
            if !exhausted {
                break; // the NIC is full; resume this stream first
            }
            self.hosts[host as usize].ready.pop_front();
            self.streams[s as usize].in_ready = false;
        }
    }

    fn arm_sender_timer(&mut self, s: u32) {
        let st = &mut self.streams[s as usize];
        if let Some(d) = st.sender.poll_timeout() {
            let d = self.hosts[st.src as usize].on_tick(d);
            if st.sender_timer.is_none_or(|armed| d < armed) {
                st.sender_timer = Some(d);
                self.q.schedule_timer(d, Event::SenderTimer(s));
            }
        }
    }

    fn arm_receiver_timer(&mut self, s: u32) {
        let st = &mut self.streams[s as usize];
        if let Some(d) = st.receiver.poll_timeout() {
            let d = self.hosts[st.dst as usize].on_tick(d);
            if st.receiver_timer.is_none_or(|armed| d < armed) {
                st.receiver_timer = Some(d);
                self.q.schedule_timer(d, Event::ReceiverTimer(s));
            }
        }
    }

    pub(crate) fn sender_timer(&mut self, s: u32) {
        let now = self.q.now();
        let st = &mut self.streams[s as usize];
        if st.sender_timer != Some(now) {
            return; // superseded by an earlier-armed timer event
        }
        st.sender_timer = None;
        match st.sender.poll_timeout() {
            Some(d) if d <= now => {
                st.sender.on_timeout(now);
                let src = st.src;
                self.trace_stream(s, super::TraceEvent::Timer);
                self.make_ready(s);
                self.pump(src);
            }
            _ => {}
        }
        self.arm_sender_timer(s);
    }

    pub(crate) fn receiver_timer(&mut self, s: u32) {
        let now = self.q.now();
        let st = &mut self.streams[s as usize];
        if st.receiver_timer != Some(now) {
            return;
        }
        st.receiver_timer = None;
        if matches!(st.receiver.poll_timeout(), Some(d) if d <= now) {
            st.receiver.on_timeout(now);
            self.send_acks(s);
        }
        self.arm_receiver_timer(s);
    }

    fn send_acks(&mut self, s: u32) {
        let now = self.q.now();
        while let Some(ack) = self.streams[s as usize].receiver.poll_ack(now) {
            let slot = self.store_sack(&ack);
            let st = &self.streams[s as usize];
            let pkt = Packet::ack_in_slot(st.dst, st.src, s, &ack, slot).with_options(st.tcp_options);
            let iface = self.routes.next(st.dst, &pkt);
            self.enqueue(iface, pkt, super::NO_PORT);
        }
    }

    /// Park an ACK's SACK blocks in the side table while the ACK travels
    /// (freed on arrival, or by `lost` when the network drops the ACK).
    fn store_sack(&mut self, ack: &crate::transport::Ack) -> u32 {
        if ack.sack.is_empty() {
            return crate::net::packet::NO_SACK;
        }
        match self.sack_free.pop() {
            Some(slot) => {
                self.sack_table[slot as usize] = ack.sack;
                slot
            }
            None => {
                self.sack_table.push(ack.sack);
                (self.sack_table.len() - 1) as u32
            }
        }
    }

    fn take_sack(&mut self, slot: u32) -> crate::transport::SackBlocks {
        if slot == crate::net::packet::NO_SACK {
            return Default::default();
        }
        self.sack_free.push(slot);
        self.sack_table[slot as usize]
    }

    /// The ACK holding `slot` is gone: the slot is free again.
    pub(crate) fn release_sack(&mut self, slot: u32) {
        if slot != crate::net::packet::NO_SACK {
            self.sack_free.push(slot);
        }
    }

    /// SACK-table slots held by ACKs in flight (the table's size less its free list).
    pub fn sack_slots_in_use(&self) -> usize {
        self.sack_table.len() - self.sack_free.len()
    }

    /// Cache hints for the stream state that handling `pkt` at its
    /// destination will touch; called when the packet starts its last hop.
    /// The lines of the `Stream` itself only: following its pointers would
    /// wait for them (`prefetch_next_event` does that, later).
    pub(crate) fn prefetch_stream(&self, pkt: &Packet) {
        let Some(st) = self.streams.get(pkt.stream as usize) else {
            return;
        };
        let (from, to): (*const u8, *const u8) = match pkt.payload {
            Payload::Data(_) => ((&st.receiver as *const Receiver).cast(), (&st.enqueued as *const u64).cast()),
            Payload::Ack(h) => {
                if let Some(b) = self.sack_table.get(h.sack_slot as usize) {
                    crate::prefetch::value(b);
                }
                ((&st.sender as *const Sender).cast(), (&st.in_ready as *const bool).cast())
            }
        };
        crate::prefetch::span(from, to as usize - from as usize + 1);
    }

    /// Cache hints for the event after the one being handled, one pointer
    /// deeper than `prefetch_stream` (whose lines should be in by now): the
    /// stream's own allocations.
    pub(crate) fn prefetch_next_event(&mut self) {
        match self.q.peek().copied() {
            Some(Event::PortDone(p)) => {
                let port = &self.ports[p as usize];
                if !matches!(self.nodes[port.peer as usize], super::NodeKind::Host(_)) {
                    return;
                }
                let Some(pkt) = port.queue.front() else {
                    return;
                };
                let Some(st) = self.streams.get(pkt.stream as usize) else {
                    return;
                };
                match pkt.payload {
                    Payload::Data(_) => {
                        st.receiver.prefetch();
                        if let Some(d) = st.deliveries.front() {
                            crate::prefetch::line(d);
                        }
                    }
                    Payload::Ack(_) => {
                        st.sender.prefetch();
                        if let Some(m) = st.pending.front() {
                            crate::prefetch::line(m);
                        }
                    }
                }
            }
            Some(Event::SenderTimer(s)) => {
                if let Some(st) = self.streams.get(s as usize) {
                    crate::prefetch::value(&st.sender);
                    crate::prefetch::line(&st.sender_timer);
                }
            }
            Some(Event::ReceiverTimer(s)) => {
                if let Some(st) = self.streams.get(s as usize) {
                    crate::prefetch::value(&st.receiver);
                    crate::prefetch::line(&st.receiver_timer);
                }
            }
            _ => {}
        }
    }

    pub(crate) fn host_receive(&mut self, h: u32, pkt: Packet) {
        if pkt.corrupt {
            // AAL5 reassembly fails: the packet is lost.
            self.hosts[h as usize].corrupt_discards += 1;
            self.lost(pkt);
            return;
        }
        let now = self.q.now();
        let s = pkt.stream;
        match pkt.payload {
            Payload::Data(seg) => {
                self.streams[s as usize].receiver.on_segment(now, seg);
                self.send_acks(s);
                self.arm_receiver_timer(s);
                self.deliver(s);
            }
            Payload::Ack(header) => {
                self.streams[s as usize].sender.prefetch_deep();
                let mut ack = crate::transport::Ack::new(header.ack, header.window);
                ack.sack = self.take_sack(header.sack_slot);
                ack.tsecr = header.tsecr;
                let st = &mut self.streams[s as usize];
                let una = st.sender.acked();
                st.sender.on_ack(now, ack);
                self.trace_stream(s, super::TraceEvent::Ack);
                let st = &mut self.streams[s as usize];
                // tcp_check_space(): the ACK freed room a blocked writer waits for.
                if st.sender.acked() > una && !st.pending.is_empty() {
                    st.sender.expand_sndbuf();
                }
                self.fill_socket_buffer(s);
                let st = &mut self.streams[s as usize];
                if !st.in_ready {
                    st.in_ready = true;
                    self.hosts[st.src as usize].ready.push_back(s);
                }
                let src = self.streams[s as usize].src;
                self.pump(src);
                self.arm_sender_timer(s);
            }
        }
    }

    /// Messages whose last byte has arrived in order are `Arrived` (the
    /// receive overhead is paid when the application takes the message: `receive`).
    fn deliver(&mut self, s: u32) {
        loop {
            let st = &mut self.streams[s as usize];
            let delivered = st.receiver.delivered();
            match st.deliveries.front() {
                Some(&(end, op, bytes)) if end <= delivered => {
                    st.deliveries.pop_front();
                    let dst = st.dst;
                    let _ = bytes;
                    self.complete(op, CompletionKind::Arrived, dst);
                }
                _ => break,
            }
        }
    }
}
