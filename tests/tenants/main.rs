//! The tenant-fairness tests, a test binary of their own: cargo runs test binaries one after
//! another, so nothing of the e2e suite runs beside them while they time another tenant's
//! suggests (on CI's two cores, an e2e test running beside `every_dashboard_read_at_once` made
//! one of bob's 91 suggest–complete calls take 1.16 s: the test measured the machine).
//! Among themselves they take the machine in turn (`harness::machine_to_myself`).

#[allow(dead_code)]
#[path = "../e2e/harness.rs"]
mod harness;
mod tenants;
