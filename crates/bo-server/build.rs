//! Embeds the dashboard (`dashboard/`) in the binary: every file read, gzipped at build time, and
//! listed in `$OUT_DIR/dashboard.rs` with its bytes; the assets' URLs are versioned by a hash of
//! all of them (the index names the version), so a browser may keep an asset for good. Also
//! names the commit built (`BO_COMMIT`: the variable when set, as a container build passes it,
//! else `git rev-parse`, else `unknown`) for `--version` and `/healthz`.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("the dashboard folder").map(|e| e.expect("an entry").path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            files(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/");
            out.push((rel, path));
        }
    }
}

/// The commit being built: `BO_COMMIT` when set, else the checkout's HEAD, else `unknown`.
fn commit() -> String {
    println!("cargo:rerun-if-env-changed=BO_COMMIT");
    if let Ok(commit) = std::env::var("BO_COMMIT")
        && !commit.trim().is_empty()
    {
        return commit.trim().to_owned();
    }
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(&manifest)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    // Built again when HEAD moves (a commit, a checkout).
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head}");
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned())
}

fn main() {
    println!("cargo:rustc-env=BO_COMMIT={}", commit());
    // Read when the script runs, not when it was compiled: a compiled script may be reused for
    // another checkout of the same sources (one target directory shared between clones).
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("dashboard");
    println!("cargo:rerun-if-changed=dashboard");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let mut list = Vec::new();
    files(&root, &root, &mut list);
    for (_, path) in &list {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let mut hasher = Sha256::new();
    for (rel, path) in &list {
        hasher.update(rel.as_bytes());
        hasher.update(std::fs::read(path).expect("a dashboard file"));
    }
    let version: String = hasher.finalize()[..6].iter().map(|b| format!("{b:02x}")).collect();
    let mut code = format!("/// A hash of every dashboard file: the assets' URLs carry it.\npub const VERSION: &str = {version:?};\n\n");
    code.push_str("/// Every dashboard file, as served.\npub static FILES: &[Asset] = &[\n");
    for (k, (rel, path)) in list.iter().enumerate() {
        let mut raw = std::fs::read(path).expect("a dashboard file");
        if rel == "index.html" {
            raw = String::from_utf8(raw).expect("index.html is UTF-8").replace("__VERSION__", &version).into_bytes();
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&raw).expect("gzip");
        let (raw_path, gz_path) = (out.join(format!("dashboard-{k}")), out.join(format!("dashboard-{k}.gz")));
        std::fs::write(&raw_path, &raw).expect("write");
        std::fs::write(&gz_path, gz.finish().expect("gzip")).expect("write");
        code.push_str(&format!(
            "    Asset {{ path: {rel:?}, raw: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/dashboard-{k}\")), gzip: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/dashboard-{k}.gz\")) }},\n"
        ));
    }
    code.push_str("];\n");
    std::fs::write(out.join("dashboard.rs"), code).expect("write dashboard.rs");
}
