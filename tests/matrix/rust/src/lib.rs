//! The report line every matrix program prints.
use std::time::{Duration, Instant};

/// Prints "fires=N lateness_p50_us=.. lateness_p90_us=.. elapsed_ms=..";
/// lateness holds, per fire, nanoseconds past the requested deadline.
pub fn report(lateness: &mut [i64], started: Instant) {
    lateness.sort_unstable();
    let n = lateness.len();
    let pick = |q: usize| if n == 0 { 0 } else { lateness[(n * q / 100).min(n - 1)] / 1000 };
    println!(
        "fires={} lateness_p50_us={} lateness_p90_us={} elapsed_ms={}",
        n,
        pick(50),
        pick(90),
        started.elapsed().as_millis()
    );
}

/// "--name value" pairs with numeric values; unknown options end the program.
pub fn arg(args: &[String], name: &str, default: u64) -> u64 {
    let mut i = 1;
    while i < args.len() {
        if args[i] == name && i + 1 < args.len() {
            return args[i + 1].parse().unwrap_or_else(|_| {
                eprintln!("{}: not a number: {}", name, args[i + 1]);
                std::process::exit(2)
            });
        }
        i += 2;
    }
    default
}

/// Nanoseconds from `deadline` to now (negative if early).
pub fn late_ns(deadline: Instant) -> i64 {
    let now = Instant::now();
    if now >= deadline {
        now.duration_since(deadline).as_nanos() as i64
    } else {
        -(deadline.duration_since(now).as_nanos() as i64)
    }
}

pub fn micros(us: u64) -> Duration {
    Duration::from_micros(us)
}
