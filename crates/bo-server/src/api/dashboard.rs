//! The dashboard's files, embedded in the binary by `build.rs` (gzipped at build time): the
//! shell at `/dashboard/`, its assets at `/dashboard/assets/{version}/…` under a hash of them
//! all, kept by browsers for good. Every answer carries a Content-Security-Policy of
//! `default-src 'self'`: the page loads nothing from elsewhere and talks only to this server,
//! through the same `/v1` API as every client (with its key when the server has keys).
//!
//! Owns serving the files; what the pages show comes from the API.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

/// One embedded file.
pub struct Asset {
    /// Its path under `dashboard/`.
    pub path: &'static str,
    /// Its bytes.
    pub raw: &'static [u8],
    /// The same, gzipped.
    pub gzip: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/dashboard.rs"));

/// The policy on every dashboard answer: nothing from another origin, no framing.
const POLICY: &str = "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "text/plain; charset=utf-8",
    }
}

fn find(path: &str) -> Option<&'static Asset> {
    FILES.iter().find(|a| a.path == path)
}

fn serve(asset: &Asset, headers: &HeaderMap, cache: &'static str) -> Response {
    let gzip_ok = super::offload::accepts_gzip(headers);
    let mut response = if gzip_ok { asset.gzip.into_response() } else { asset.raw.into_response() };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(asset.path)));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if gzip_ok {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    secure(response)
}

fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// `GET /dashboard`: to the shell.
pub async fn redirect() -> Redirect {
    Redirect::permanent("/dashboard/")
}

/// `GET /`: a person who opens the server's address in a browser sees the dashboard (a
/// temporary redirect: the root may serve something else one day).
pub async fn to_dashboard() -> Redirect {
    Redirect::to("/dashboard/")
}

/// `GET /dashboard/`: the shell, never cached (it names the assets' version).
pub async fn index(headers: HeaderMap) -> Response {
    match find("index.html") {
        Some(asset) => serve(asset, &headers, "no-cache"),
        None => secure((StatusCode::NOT_FOUND, "this build has no dashboard").into_response()),
    }
}

/// `GET /dashboard/assets/{version}/{*file}`: an asset of this build, cached for good.
pub async fn asset(Path((version, file)): Path<(String, String)>, headers: HeaderMap) -> Response {
    match find(&file).filter(|_| version == VERSION && file != "index.html") {
        Some(asset) => serve(asset, &headers, "public, max-age=31536000, immutable"),
        None => secure((StatusCode::NOT_FOUND, "no such dashboard file in this build").into_response()),
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    /// The vendored files are byte for byte what `scripts/vendor-dashboard.sh` fetched and checked.
    #[test]
    fn vendored_files_match_their_checksums() {
        let sums = std::str::from_utf8(find("vendor/CHECKSUMS").expect("vendor/CHECKSUMS").raw).unwrap();
        let mut checked = 0;
        for line in sums.lines() {
            let (sum, name) = line.split_once("  ").expect("sha256sum's format");
            let asset = find(&format!("vendor/{name}")).unwrap_or_else(|| panic!("vendor/{name} is embedded"));
            let actual: String = Sha256::digest(asset.raw).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(actual, sum, "vendor/{name}");
            checked += 1;
        }
        assert!(checked >= 2);
    }

    /// The shell names this build's assets, and every module it loads is embedded.
    #[test]
    fn the_shell_names_this_builds_assets() {
        let index = std::str::from_utf8(find("index.html").unwrap().raw).unwrap();
        assert!(index.contains(&format!("assets/{VERSION}/app.js")), "{index}");
        assert!(!index.contains("http://") && !index.contains("https://"), "nothing from elsewhere");
        for a in FILES.iter().filter(|a| a.path.ends_with(".js")) {
            let text = std::str::from_utf8(a.raw).unwrap();
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let target = line.rsplit(['"', '\'']).nth(1).expect("an import names a file");
                let base = std::path::Path::new(a.path).parent().unwrap();
                let resolved = base.join(target);
                let normal: Vec<_> = resolved.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect();
                let mut parts: Vec<String> = Vec::new();
                for c in normal {
                    match c {
                        std::path::Component::ParentDir => {
                            parts.pop();
                        }
                        other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
                    }
                }
                assert!(find(&parts.join("/")).is_some(), "{} imports {target}, which is not embedded", a.path);
            }
        }
    }
}
