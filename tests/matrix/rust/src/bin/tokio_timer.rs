//! tokio::time::sleep(D) COUNT times on a current_thread runtime with IO and
//! time enabled (the time driver parks on mio's epoll_wait).
//!
//!   ef-tokio [--us 1000] [--count 300]
use epollfix_matrix::{arg, late_ns, micros, mono_ns, report, write_fires};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let us = arg(&args, "--us", 1000);
    let count = arg(&args, "--count", 300) as usize;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let mut lateness = Vec::with_capacity(count);
    let mut fires = Vec::with_capacity(count);
    rt.block_on(async {
        for _ in 0..count {
            let deadline = Instant::now() + micros(us);
            tokio::time::sleep(micros(us)).await;
            lateness.push(late_ns(deadline));
            fires.push(mono_ns());
        }
    });
    write_fires(&fires);
    report(&mut lateness, started);
}
