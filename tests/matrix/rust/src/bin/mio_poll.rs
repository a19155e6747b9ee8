//! mio's Poll::poll(Some(D)) on an idle loopback listener, COUNT times: each
//! call is one fire, its lateness the elapsed time minus D. Also prints
//! early=N: polls that returned more than 100 us before D.
//!
//!   ef-mio [--us 50] [--count 300]
use epollfix_matrix::{arg, late_ns, micros, report_early};
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
