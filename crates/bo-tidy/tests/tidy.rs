//! ARCHITECTURE.md's rules, held over this checkout. Each test names every file and line that
//! breaks its rule.

use std::collections::BTreeMap;

use bo_tidy::{
    Violation, circles, dependencies, files, python_imports, repo_root, rust_code, rust_imports, undocumented_pub_fns, word_lines,
};

fn assert_none(rule: &str, violations: Vec<Violation>) {
    let shown: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(violations.is_empty(), "{rule}, broken at:\n{}", shown.join("\n"));
}

/// Every whole-word use of one of `words` in the code (comments and strings aside) of the Rust
/// files under `dir`.
fn words_in(dir: &str, words: &[&str], why: &str) -> Vec<Violation> {
    let mut found = Vec::new();
    for (file, text) in files(&repo_root(), dir, ".rs") {
        let code = rust_code(&text);
        for word in words {
            for line in word_lines(&code, word) {
                found.push(Violation { file: file.clone(), line, what: format!("`{word}`: {why}") });
            }
        }
    }
    found
}

#[test]
fn bo_core_depends_on_no_async_http_or_sql_crate() {
    const DENIED: [&str; 16] = [
        "tokio",
        "async-std",
        "smol",
        "futures",
        "futures-util",
        "futures-core",
        "async-trait",
        "axum",
        "hyper",
        "http",
        "reqwest",
        "tower",
        "tower-http",
        "sqlx",
        "rusqlite",
        "postgres",
    ];
    let file = "crates/bo-core/Cargo.toml";
    let toml = std::fs::read_to_string(repo_root().join(file)).expect("bo-core's manifest");
    let found = dependencies(&toml)
        .into_iter()
        .filter(|(_, name)| DENIED.contains(&name.as_str()))
        .map(|(line, name)| Violation {
            file: file.to_owned(),
            line,
            what: format!("bo-core depends on `{name}`: it knows no async, HTTP or SQL"),
        })
        .collect();
    assert_none("bo-core has no I/O and no async", found);
}

#[test]
fn bo_core_imports_no_async_http_or_sql_crate() {
    let why = "bo-core knows no async, HTTP or SQL";
    assert_none(
        "bo-core has no I/O and no async",
        words_in("crates/bo-core/src", &["tokio", "axum", "hyper", "reqwest", "sqlx", "futures"], why),
    );
}

#[test]
fn api_names_no_designer() {
    assert_none(
        "api/ never runs a designer",
        words_in("crates/bo-server/src/api", &["designer", "Designer"], "api/ asks the engine; it names no designer"),
    );
}

#[test]
fn engine_knows_no_axum() {
    assert_none(
        "engine/ knows no axum",
        words_in("crates/bo-server/src/engine", &["axum", "hyper", "tower", "tower_http"], "engine/ knows no HTTP"),
    );
}

#[test]
fn transfer_and_cli_know_no_http() {
    let words = ["axum", "hyper", "reqwest", "tower", "tower_http", "api"];
    let why = "transfer/ and cli/ know no HTTP (the wire types are in wire/)";
    let mut found = words_in("crates/bo-server/src/transfer", &words, why);
    found.extend(words_in("crates/bo-server/src/cli", &words, why));
    assert_none("transfer/ and cli/ know no HTTP", found);
}

#[test]
fn bo_store_knows_no_http_and_no_vertex_json() {
    let words = ["axum", "hyper", "reqwest", "tower", "bo_server", "wire"];
    assert_none(
        "bo-store knows no HTTP and no Vertex JSON",
        words_in("crates/bo-store/src", &words, "bo-store knows no HTTP and no Vertex JSON"),
    );
}

#[test]
fn no_import_circles_between_files() {
    let root = repo_root();
    let mut found = Vec::new();
    let mut report = |graph: BTreeMap<String, std::collections::BTreeSet<String>>| {
        for circle in circles(&graph) {
            let ties: Vec<String> =
                circle.iter().flat_map(|a| graph[a].iter().filter(|b| circle.contains(b)).map(move |b| format!("{a} -> {b}"))).collect();
            found.push(Violation {
                file: circle[0].clone(),
                line: 1,
                what: format!("an import circle of {} files: {}", circle.len(), ties.join(", ")),
            });
        }
    };
    for krate in ["bo-core", "bo-store", "bo-server", "bo-bench", "bo-tidy"] {
        let src = format!("crates/{krate}/src");
        report(rust_imports(&files(&root, &src, ".rs"), &src));
    }
    let package = "clients/python/src/bo_client";
    report(python_imports(&files(&root, package, ".py"), package, "bo_client"));
    assert_none("no import circles between files", found);
}

#[test]
fn every_public_function_of_bo_core_is_documented() {
    let mut found = Vec::new();
    for (file, text) in files(&repo_root(), "crates/bo-core/src", ".rs") {
        for line in undocumented_pub_fns(&text) {
            found.push(Violation { file: file.clone(), line, what: "a `pub fn` without a `///`".to_owned() });
        }
    }
    assert_none("every public function of bo-core says what it does", found);
}
