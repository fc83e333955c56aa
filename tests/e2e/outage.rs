//! The database going away: requests answer 503 with `Retry-After` (never a 500, never a hang),
//! nothing half-done is left behind, and service resumes when the database returns. Postgres is
//! reached through a TCP proxy in this test that can cut every connection at will.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::conditional_study;
use crate::harness::{Database, Server, databases};

/// Forwards loopback connections to `upstream` until told to cut them.
pub struct Proxy {
    pub addr: String,
    down: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    pub fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().expect("address").to_string();
        let down = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (d, l) = (down.clone(), live.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if d.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream) else { continue };
                let mut live = l.lock().unwrap();
                live.push(client.try_clone().unwrap());
                live.push(server.try_clone().unwrap());
                pump(client.try_clone().unwrap(), server.try_clone().unwrap());
                pump(server, client);
            }
        });
        Proxy { addr, down, live }
    }

    pub fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

#[test]
fn a_database_outage_is_a_503_and_service_resumes() {
    let Some(pg) = databases("database_outage").into_iter().find(|d| d.name == "postgres") else {
        return; // `databases` has said that Postgres was skipped.
    };
    // postgres://user@HOST:PORT/db?… → the same through the proxy.
    let (head, rest) = pg.url.split_once('@').expect("a user in the URL");
    let (hostport, tail) = rest.split_once('/').expect("a database in the URL");
    let proxy = Proxy::start(hostport.to_owned());
    let db = Database { name: "postgres via proxy", url: format!("{head}@{}/{tail}", proxy.addr), fresh: pg.fresh.clone() };
    let s = Server::start_with(&db, &["--database-timeout", "1"]);
    let study = s.create_study(conditional_study("outage", "RANDOM_SEARCH"));
    let before = s.ok_get("/studies");

    proxy.cut();
    for (method, path, body) in [
        ("GET", format!("/studies/{study}"), None),
        ("POST", "/studies".to_owned(), Some(conditional_study("during-outage", "RANDOM_SEARCH").to_string())),
        ("POST", format!("/studies/{study}/trials:suggest"), Some(json!({"suggestionCount": 1, "clientId": "w"}).to_string())),
    ] {
        let (status, body) = s.raw(method, &s.url(&path), body);
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{method} {path}: {body}");
        assert_eq!(body["error"]["status"], "UNAVAILABLE");
    }
    let resp = reqwest::blocking::get(format!("{}/readyz", s.base)).unwrap();
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(resp.headers().contains_key("retry-after"));
    assert_eq!(reqwest::blocking::get(format!("{}/healthz", s.base)).unwrap().status(), StatusCode::OK, "alive while the database is not");

    proxy.restore();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while s.get("/studies").0 != StatusCode::OK {
        assert!(std::time::Instant::now() < deadline, "service did not resume");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(s.ok_get("/studies"), before, "nothing from the outage was stored");
    assert_eq!(s.suggest(&study, 1, "w").len(), 1);
}
