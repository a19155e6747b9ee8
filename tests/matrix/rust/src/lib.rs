//! The report line every matrix program prints.
use std::time::{Duration, Instant};

/// Prints "fires=N lateness_p50_us=.. lateness_p90_us=.. lateness_p99_us=.. lateness_min_us=..
/// elapsed_ms=..";
/// lateness holds, per fire, nanoseconds past the requested deadline.
pub fn report(lateness: &mut [i64], started: Instant) {
    report_early(lateness, started, false)
}

/// report, plus " early=N" when `early`: the fires more than 100 us before
/// their deadline (a wait that returned before its timeout).
pub fn report_early(lateness: &mut [i64], started: Instant, early: bool) {
    report_extra(lateness, started, early, "")
}

/// report_early, then `extra` (" key=value" fields) at the end of the line.
pub fn report_extra(lateness: &mut [i64], started: Instant, early: bool, extra_fields: &str) {
    lateness.sort_unstable();
    let n = lateness.len();
    let pick = |q: usize| if n == 0 { 0 } else { lateness[(n * q / 100).min(n - 1)] / 1000 };
    let extra = if early {
        format!(" early={}", lateness.iter().filter(|&&x| x < -100_000).count())
    } else {
        String::new()
    };
    println!(
        "fires={} lateness_p50_us={} lateness_p90_us={} lateness_p99_us={} lateness_min_us={} \
         elapsed_ms={}{}{}",
        n,
        pick(50),
        pick(90),
        pick(99),
        pick(0),
        started.elapsed().as_millis(),
        extra,
        extra_fields
    );
}

/// (voluntary context switches, user+system CPU in us) of this process, from
/// getrusage(RUSAGE_SELF): its wake-ups and what they cost.
pub fn usage() -> (i64, i64) {
    // SAFETY: an all-zero rusage is valid for getrusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as i64 * 1_000_000 + t.tv_usec as i64;
    (ru.ru_nvcsw as i64, us(ru.ru_utime) + us(ru.ru_stime))
}

/// CLOCK_MONOTONIC in ns, the clock of the countwaits trace.
pub fn mono_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

/// With MX_FIRES=PATH, writes the fire times (CLOCK_MONOTONIC ns), one a line,
/// for tests/matrix/pattern.
pub fn write_fires(fires: &[i64]) {
    if let Some(path) = std::env::var_os("MX_FIRES") {
        let text: String = fires.iter().map(|t| format!("{}\n", t)).collect();
        let _ = std::fs::write(path, text);
    }
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
