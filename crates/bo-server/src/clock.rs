//! The one clock of the service: wall time in milliseconds since the Unix epoch, as every
//! stored time and deadline is kept. It owns nothing else; timers and timeouts use tokio's
//! monotonic clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in milliseconds since the Unix epoch (0 on a clock set before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
