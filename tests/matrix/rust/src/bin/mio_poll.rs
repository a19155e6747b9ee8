//! mio's Poll::poll(Some(D)) on an idle loopback listener, COUNT times: each
//! call is one fire, its lateness the elapsed time minus D. Also prints
//! early=N: polls that returned more than 100 us before D.
//!
//! With --loop 1, a timer loop on mio as a runtime keeps one: each fire polls
//! with the time left until its deadline (mio rounds it up to whole ms) until
//! the deadline has passed, so after an early return it asks 1 ms again: a
//! stream of 1 ms requests that never ends. The line then adds vcsw= and
//! cpu_us= (getrusage of the timer phase).
//!
//!   ef-mio [--us 50] [--count 300] [--loop 0|1]
use epollfix_matrix::{arg, late_ns, micros, report_early, report_extra, usage};
use mio::{net::TcpListener, Events, Interest, Poll, Token};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let us = arg(&args, "--us", 50);
    let count = arg(&args, "--count", 300) as usize;
    let mut poll = Poll::new().expect("poll");
    let mut listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    poll.registry()
        .register(&mut listener, Token(0), Interest::READABLE)
        .expect("register");
    let mut events = Events::with_capacity(8);
    let started = Instant::now();
    let mut lateness = Vec::with_capacity(count);
    if arg(&args, "--loop", 0) != 0 {
        let (csw0, cpu0) = usage();
        for _ in 0..count {
            let deadline = Instant::now() + micros(us);
            loop {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                poll.poll(&mut events, Some(deadline - now)).expect("poll");
                if !events.is_empty() {
                    eprintln!("events on an idle listener");
                    std::process::exit(1);
                }
            }
            lateness.push(late_ns(deadline));
        }
        let (csw, cpu) = usage();
        let extra = format!(" vcsw={} cpu_us={}", csw - csw0, cpu - cpu0);
        report_extra(&mut lateness, started, false, &extra);
        return;
    }
    for _ in 0..count {
        let deadline = Instant::now() + micros(us);
        poll.poll(&mut events, Some(micros(us))).expect("poll");
        if !events.is_empty() {
            eprintln!("events on an idle listener");
            std::process::exit(1);
        }
        lateness.push(late_ns(deadline));
    }
    report_early(&mut lateness, started, true);
}
