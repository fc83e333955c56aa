//! Reads the checkout's own source to hold ARCHITECTURE.md's rules, as rust-analyzer's `tidy`
//! tests do: which crate depends on what, which module may name what, no import circles
//! between files (Rust crates and the Python client), every public function of bo-core
//! documented. `tests/tidy.rs` states the rules over this tree; the checks here are plain
//! functions of text, so each is also tested on a deliberately broken source.
//!
//! It reads text, never compiles or runs anything, and knows only as much Rust and Python as
//! imports need: comments and string literals are blanked first, `use` trees and `crate::` /
//! `super::` paths are resolved to the file that defines the name (through `pub use`
//! re-exports), and test code (`#[cfg(test)]` modules and files) is left out, as tests are not
//! part of the structure.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// One broken rule: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub file: String,
    pub line: usize,
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.what)
    }
}

/// The checkout's root (this crate is `crates/bo-tidy`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the checkout's root")
}

/// Every file under `dir` whose name ends with `ext`, as (path relative to `root`, text), sorted.
pub fn files(root: &Path, dir: &str, ext: &str) -> Vec<(String, String)> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, ext, out);
            } else if path.to_string_lossy().ends_with(ext) {
                out.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&root.join(dir), ext, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/"), text)
        })
        .collect()
}

/// Rust source with comments, string and char literals blanked to spaces (newlines kept, so
/// lines and columns still match the file).
pub fn rust_code(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = s.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in out.iter_mut().take(to).skip(from) {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = s[i..].iter().position(|&c| c == '\n').map_or(s.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < s.len() && depth > 0 {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !s.get(i.wrapping_sub(1)).is_some_and(|p| is_ident(*p)) {
            let hashes = s[i + 1..].iter().take_while(|&&c| c == '#').count();
            if s.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let body = i + 2 + hashes;
            let rest: String = s[body..].iter().collect();
            let end = rest.find(&close).map_or(s.len(), |p| body + rest[..p].chars().count() + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '"'), or a lifetime ('a), which stays.
            if next == Some('\\') {
                let end = s[i + 2..].iter().position(|&c| c == '\'').map_or(s.len(), |p| i + 2 + p + 1);
                blank(&mut out, i, end);
                i = end;
            } else if s.get(i + 2) == Some(&'\'') {
                blank(&mut out, i, i + 3);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

/// Where `word` occurs in `code` as a whole identifier (not part of a longer one): line numbers.
pub fn word_lines(code: &str, word: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find(word) {
        let at = from + p;
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && !after.is_some_and(is_ident) {
            lines.push(line_of(code, at));
        }
        from = at + word.len();
    }
    lines
}

/// The dependencies a `Cargo.toml` declares for building the crate itself (`[dependencies]`
/// and `[target.….dependencies]`; not dev- or build-dependencies), by name.
pub fn dependencies(cargo_toml: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for (n, line) in cargo_toml.lines().enumerate() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_deps = section == "dependencies" || (section.starts_with("target.") && section.ends_with(".dependencies"));
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name: String = line.chars().take_while(|&c| is_ident(c) || c == '-').collect();
            if !name.is_empty() {
                out.push((n + 1, name));
            }
        }
    }
    out
}

/// The circles of a directed graph (its strongly connected components of two or more nodes,
/// and nodes with an edge to themselves), each sorted.
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                let looped = component.len() == 1 && self.graph.get(v).is_some_and(|out| out.contains(v));
                if component.len() > 1 || looped {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut t =
        Tarjan { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on_stack: BTreeSet::new(), found: Vec::new() };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.found.sort();
    t.found
}

/// One file of a Rust crate as the module graph sees it.
struct RustFile {
    path: String,
    module: Vec<String>,
    code: String,
    /// Names this file defines at its top level (items and modules).
    defines: BTreeSet<String>,
    /// `pub use` re-exports: the name exported and the path it names (glob ones as `*`).
    reexports: Vec<(String, Vec<String>)>,
}

/// The files of one Rust crate (`src` relative to `root`, e.g. `crates/bo-core/src`) and which
/// of them each imports, by path: a `use` or a `crate::` / `super::` path counts, resolved to
/// the file that defines the name, through `pub use` re-exports. A module's use of its own
/// submodules is not counted (they are its parts: a folder's `mod.rs` is its face, as a Python
/// package's `__init__.py` is), and test modules and files are left out.
pub fn rust_imports(sources: &[(String, String)], src: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root_file = if sources.iter().any(|(p, _)| *p == format!("{src}/lib.rs")) { "lib.rs" } else { "main.rs" };
    let mut files: Vec<RustFile> = Vec::new();
    for (path, text) in sources {
        let Some(rel) = path.strip_prefix(&format!("{src}/")) else { continue };
        if rel == "main.rs" && root_file == "lib.rs" {
            continue; // the binary of a crate with a library: a crate of its own.
        }
        let mut module: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
        if module.last().is_some_and(|m| m == "mod") || (module.len() == 1 && module[0] == root_file.trim_end_matches(".rs")) {
            module.pop();
        }
        let code = without_test_modules(&rust_code(text));
        let (defines, reexports) = definitions(&code);
        files.push(RustFile { path: path.clone(), module, code, defines, reexports });
    }
    // Files declared only under `#[cfg(test)] mod x;` are tests.
    let mut test_modules = BTreeSet::new();
    for (path, text) in sources {
        let Some(file) = files.iter().find(|f| f.path == *path) else { continue };
        for name in test_module_declarations(&rust_code(text)) {
            let mut m = file.module.clone();
            m.push(name);
            test_modules.insert(m);
        }
    }
    files.retain(|f| !test_modules.iter().any(|t| f.module.starts_with(t)));
    let by_module: BTreeMap<Vec<String>, usize> = files.iter().enumerate().map(|(i, f)| (f.module.clone(), i)).collect();

    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let edges = graph.entry(f.path.clone()).or_default();
        let inline = inline_modules(&f.code);
        for (at, path) in referenced_paths(&f.code) {
            let mut module = f.module.clone();
            module.extend(inline.iter().filter(|(open, close, _)| *open < at && at < *close).map(|(_, _, name)| name.clone()));
            if let Some(target) = resolve(&files, &by_module, &module, &path, 0) {
                // A module's own submodules are its parts, not its imports: a folder's face
                // (`mod.rs`, `lib.rs`) may use them as they use it.
                if files[target].path != f.path && !files[target].module.starts_with(&f.module) {
                    edges.insert(files[target].path.clone());
                }
            }
        }
    }
    graph
}

/// `code` with the bodies of `#[cfg(test)] mod name { … }` blanked.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_owned();
    let mut from = 0;
    while let Some(p) = out[from..].find("#[cfg(test)]") {
        let at = from + p;
        let after = &out[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let rest = trimmed.strip_prefix("pub(crate) ").or_else(|| trimmed.strip_prefix("pub(super) ")).unwrap_or(trimmed);
        if let Some(rest) = rest.strip_prefix("mod ") {
            let name_len = rest.chars().take_while(|&c| is_ident(c)).count();
            if rest[name_len..].trim_start().starts_with('{') {
                let open = out.len() - rest.len() + name_len + rest[name_len..].find('{').expect("an opening brace");
                let mut depth = 0usize;
                let mut end = out.len();
                for (i, c) in out[open..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let blanked: String = out[at..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
                out.replace_range(at..end, &blanked);
                from = at + blanked.len();
                continue;
            }
        }
        from = at + 1;
    }
    out
}

/// The names of `#[cfg(test)] mod name;` declarations.
fn test_module_declarations(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p + "#[cfg(test)]".len();
        let rest = code[at..].trim_start();
        let rest = rest.strip_prefix("pub(crate) ").or_else(|| rest.strip_prefix("pub ")).unwrap_or(rest);
        if let Some(rest) = rest.strip_prefix("mod ") {
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if rest[name.len()..].trim_start().starts_with(';') {
                names.push(name);
            }
        }
        from = at;
    }
    names
}

const ITEM_KEYWORDS: [&str; 10] = ["struct", "enum", "fn", "trait", "type", "const", "static", "mod", "union", "macro_rules!"];

/// The names a file defines at any depth (good enough for resolving a path's last name), and
/// its `pub use` re-exports.
fn definitions(code: &str) -> (BTreeSet<String>, Vec<(String, Vec<String>)>) {
    let mut defines = BTreeSet::new();
    let words: Vec<&str> = code.split(|c: char| c.is_whitespace() || c == '(' || c == '<' || c == '{' || c == ';' || c == ':').collect();
    for pair in words.windows(2) {
        if ITEM_KEYWORDS.contains(&pair[0]) {
            let name: String = pair[1].chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                defines.insert(name);
            }
        }
    }
    let mut reexports = Vec::new();
    for (_, is_pub, tree) in use_trees(code) {
        if is_pub {
            for path in expand_use_tree(&tree) {
                let exported = match path.last().map(String::as_str) {
                    Some(last) if last.contains(" as ") => last.rsplit(" as ").next().unwrap_or(last).trim().to_owned(),
                    Some(last) => last.to_owned(),
                    None => continue,
                };
                let path: Vec<String> = path.iter().map(|s| s.split(" as ").next().unwrap_or(s).trim().to_owned()).collect();
                reexports.push((exported, path));
            }
        }
    }
    (defines, reexports)
}

/// Every `use` declaration: where it is, whether it is `pub` (a re-export, `pub(crate)` and
/// the like included), and its tree (after `use`, before `;`).
fn use_trees(code: &str) -> Vec<(usize, bool, String)> {
    let mut out = Vec::new();
    for at in word_positions(code, "use") {
        let before = code[..at].trim_end();
        let is_pub = before.ends_with("pub") || before.ends_with(')') && before.rsplit("pub(").next().is_some_and(|s| !s.contains('\n'));
        let rest = &code[at + 3..];
        if let Some(end) = rest.find(';') {
            out.push((at, is_pub, rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    out
}

/// The inline modules of a file (`mod name { … }`): their spans and names, outermost first.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    for at in word_positions(code, "mod") {
        let rest = &code[at + 3..];
        let name: String = rest.trim_start().chars().take_while(|&c| is_ident(c)).collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0usize;
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        found.push((open, open + i, name));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    found
}

fn word_positions(code: &str, word: &str) -> Vec<usize> {
    let mut positions = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find(word) {
        let at = from + p;
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && after.is_some_and(char::is_whitespace) {
            positions.push(at);
        }
        from = at + word.len();
    }
    positions
}

/// A use tree (`crate::a::{b, c::{self, D as E}}`) as its paths; a renamed name keeps its
/// ` as ` in the last segment; `self` in braces names the path before them.
pub fn expand_use_tree(tree: &str) -> Vec<Vec<String>> {
    fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(prefix, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(prefix, &inner[start..], out);
            return;
        }
        if let Some(brace) = tree.find("::{") {
            let mut p = prefix.to_vec();
            p.extend(tree[..brace].split("::").map(|s| s.trim().to_owned()));
            expand(&p, &tree[brace + 2..], out);
            return;
        }
        let mut p = prefix.to_vec();
        for segment in tree.split("::") {
            let segment = segment.trim();
            if segment != "self" {
                p.push(segment.to_owned());
            }
        }
        out.push(p);
    }
    let mut out = Vec::new();
    expand(&[], tree, &mut out);
    out
}

/// The paths a file's code imports, each with where it is: every path of its private `use`
/// trees (a `pub use` hands a name on; it is read to resolve names, not drawn), and every
/// `crate::…` or `super::…` path written in its code.
fn referenced_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut paths: Vec<(usize, Vec<String>)> = Vec::new();
    for (at, is_pub, tree) in use_trees(code) {
        if is_pub {
            continue;
        }
        for path in expand_use_tree(&tree) {
            paths.push((at, path.iter().map(|s| s.split(" as ").next().unwrap_or(s).trim().to_owned()).collect()));
        }
    }
    let use_spans: Vec<(usize, usize)> =
        word_positions(code, "use").into_iter().filter_map(|at| Some((at, at + code[at..].find(';')?))).collect();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(p) = code[from..].find(start) {
            let at = from + p;
            from = at + start.len();
            if code[..at].chars().next_back().is_some_and(|c| is_ident(c) || c == ':') {
                continue; // inside a longer path (`super::super::x`, a use tree's), already read
            }
            if use_spans.iter().any(|(open, close)| *open < at && at < *close) {
                continue; // part of a `use`, read above
            }
            let mut path = Vec::new();
            let mut rest = &code[at..];
            loop {
                let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
                if name.is_empty() {
                    break;
                }
                rest = &rest[name.len()..];
                path.push(name);
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            paths.push((at, path));
        }
    }
    paths
}

/// The file a path names from `module`, or `None` when it leaves the crate (std, another
/// crate, a name brought into scope some other way).
fn resolve(
    files: &[RustFile],
    by_module: &BTreeMap<Vec<String>, usize>,
    module: &[String],
    path: &[String],
    depth: usize,
) -> Option<usize> {
    if depth > 8 || path.is_empty() {
        return None;
    }
    let (mut current, rest): (Vec<String>, &[String]) = match path[0].as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.to_vec(), &path[1..]),
        "super" => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            (module[..module.len().saturating_sub(supers)].to_vec(), &path[supers..])
        }
        first => {
            // A path relative to this module: one of its own submodules.
            let mut child = module.to_vec();
            child.push(first.to_owned());
            if !by_module.contains_key(&child) {
                return None;
            }
            (module.to_vec(), path)
        }
    };
    for segment in rest {
        if segment == "*" {
            break;
        }
        let mut child = current.clone();
        child.push(segment.clone());
        if by_module.contains_key(&child) {
            current = child;
            continue;
        }
        // `segment` is an item of `current`: where it is defined, through re-exports.
        let file = *by_module.get(&current)?;
        if files[file].defines.contains(segment.as_str()) {
            return Some(file);
        }
        for (name, target) in &files[file].reexports {
            if name == segment || name == "*" {
                let mut target = target.clone();
                if name == "*" {
                    target.pop();
                    target.push(segment.clone());
                }
                if let Some(found) = resolve(files, by_module, &files[file].module, &target, depth + 1) {
                    return Some(found);
                }
            }
        }
        return Some(file);
    }
    by_module.get(&current).copied()
}

/// Python source with comments and string literals (docstrings included) blanked.
pub fn python_code(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = s.clone();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == '#' {
            while i < s.len() && s[i] != '\n' {
                out[i] = ' ';
                i += 1;
            }
        } else if c == '"' || c == '\'' {
            let triple = s.get(i + 1) == Some(&c) && s.get(i + 2) == Some(&c);
            let mut j = if triple { i + 3 } else { i + 1 };
            while j < s.len() {
                if s[j] == '\\' {
                    j += 2;
                    continue;
                }
                if triple && s[j] == c && s.get(j + 1) == Some(&c) && s.get(j + 2) == Some(&c) {
                    j += 3;
                    break;
                }
                if !triple && (s[j] == c || s[j] == '\n') {
                    j += 1;
                    break;
                }
                j += 1;
            }
            for c in out.iter_mut().take(j.min(s.len())).skip(i) {
                if *c != '\n' {
                    *c = ' ';
                }
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Which modules of a Python package (`files`: paths under `package_dir`, which is the
/// package `package`) each imports: `from .x import …`, `from . import x`, `from package.x
/// import …`, `import package.x`, at any depth of the file.
pub fn python_imports(files: &[(String, String)], package_dir: &str, package: &str) -> BTreeMap<String, BTreeSet<String>> {
    let module_of = |path: &str| -> Option<String> {
        let rel = path.strip_prefix(&format!("{package_dir}/"))?.strip_suffix(".py")?;
        Some(rel.replace('/', "."))
    };
    let modules: BTreeMap<String, String> = files.iter().filter_map(|(p, _)| Some((module_of(p)?, p.clone()))).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in files {
        let Some(me) = module_of(path) else { continue };
        let edges = graph.entry(path.clone()).or_default();
        let code = python_code(text);
        let mut add = |module: &str| {
            let module = if module.is_empty() { "__init__" } else { module };
            if let Some(target) = modules.get(module).or_else(|| modules.get(&format!("{module}.__init__")))
                && target != path
            {
                edges.insert(target.clone());
            }
        };
        for line in code.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("from ") {
                let Some((from, names)) = rest.split_once(" import ") else { continue };
                let from = from.trim();
                let base = if let Some(relative) = from.strip_prefix('.') {
                    let parent = me.rsplit_once('.').map_or("", |(p, _)| p);
                    if relative.is_empty() {
                        parent.to_owned()
                    } else {
                        [parent, relative].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(".")
                    }
                } else if from == package {
                    String::new()
                } else if let Some(sub) = from.strip_prefix(&format!("{package}.")) {
                    sub.to_owned()
                } else {
                    continue;
                };
                // `from . import x`: x may be a module; otherwise the names come from `base`.
                let mut any_module = false;
                for name in names.trim_matches(|c| c == '(' || c == ')').split(',') {
                    let name = name.split(" as ").next().unwrap_or("").trim();
                    let candidate = if base.is_empty() { name.to_owned() } else { format!("{base}.{name}") };
                    if modules.contains_key(&candidate) {
                        add(&candidate);
                        any_module = true;
                    }
                }
                if !any_module {
                    add(&base);
                }
            } else if let Some(rest) = line.strip_prefix("import ") {
                for name in rest.split(',') {
                    let name = name.split(" as ").next().unwrap_or("").trim();
                    if let Some(sub) = name.strip_prefix(&format!("{package}.")) {
                        add(sub);
                    } else if name == package {
                        add("");
                    }
                }
            }
        }
    }
    graph
}

/// `pub fn` declarations (`pub const fn`, `pub async fn`, …; not `pub(crate)`) with no `///`
/// above them (attributes between are allowed): line numbers.
pub fn undocumented_pub_fns(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut missing = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let l = line.trim_start();
        let rest = l.strip_prefix("pub ").map(|r| {
            r.trim_start_matches("const ").trim_start_matches("async ").trim_start_matches("unsafe ").trim_start_matches("extern \"C\" ")
        });
        if !rest.is_some_and(|r| r.starts_with("fn ")) {
            continue;
        }
        let mut j = i;
        let documented = loop {
            if j == 0 {
                break false;
            }
            j -= 1;
            let above = lines[j].trim();
            if above.starts_with("#[")
                || above.starts_with(')')
                || above.starts_with(']')
                || above.ends_with(',') && !above.starts_with("///")
            {
                continue; // an attribute, possibly over several lines
            }
            break above.starts_with("///") || above.starts_with("#[doc");
        };
        if !documented {
            missing.push(i + 1);
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect()
    }

    #[test]
    fn comments_and_strings_are_blanked_lines_kept() {
        let code =
            rust_code("let a = \"use crate::x;\"; // use crate::y;\n/* crate::z */ let c = '\"'; let l: &'a str = r#\"crate::w\"#;\n");
        assert!(!code.contains("crate::"), "{code}");
        assert_eq!(code.lines().count(), 2);
        assert!(code.contains("&'a str"), "a lifetime stays: {code}");
    }

    #[test]
    fn use_trees_expand_to_their_paths() {
        let paths = expand_use_tree("crate::a::{b, c::{self, D as E}, *}");
        assert_eq!(
            paths,
            vec![vec!["crate", "a", "b"], vec!["crate", "a", "c"], vec!["crate", "a", "c", "D as E"], vec!["crate", "a", "*"],]
        );
    }

    #[test]
    fn a_circle_of_files_is_found_through_reexports_and_a_broken_rule_is_reported() {
        let files = src(&[
            ("s/lib.rs", "pub mod a;\npub mod b;\npub use b::Thing;\n"),
            ("s/a.rs", "use crate::Thing;\npub struct A;\n"),
            ("s/b.rs", "pub struct Thing;\nfn f() { let _ = crate::a::A; }\n"),
        ]);
        let graph = rust_imports(&files, "s");
        assert_eq!(graph["s/a.rs"], BTreeSet::from(["s/b.rs".to_owned()]), "the re-export resolves to the defining file");
        assert_eq!(circles(&graph), vec![vec!["s/a.rs".to_owned(), "s/b.rs".to_owned()]]);
        let fixed = src(&[
            ("s/lib.rs", "pub mod a;\npub mod b;\npub use b::Thing;\n"),
            ("s/a.rs", "use crate::Thing;\npub struct A;\n"),
            ("s/b.rs", "pub struct Thing;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n"),
        ]);
        assert!(circles(&rust_imports(&fixed, "s")).is_empty(), "a test module's import is no arrow");
    }

    #[test]
    fn super_and_relative_paths_resolve() {
        let files = src(&[
            ("s/lib.rs", "mod m;\n"),
            ("s/m/mod.rs", "mod x;\nmod y;\npub struct Top;\n"),
            ("s/m/x.rs", "use super::y::Y;\npub fn f() -> super::Top { todo() }\n"),
            ("s/m/y.rs", "pub struct Y;\n"),
        ]);
        let graph = rust_imports(&files, "s");
        assert_eq!(graph["s/m/x.rs"], BTreeSet::from(["s/m/y.rs".to_owned(), "s/m/mod.rs".to_owned()]));
    }

    #[test]
    fn python_circles_are_found() {
        let files = src(&[
            ("p/pkg/__init__.py", "from .a import A\n"),
            ("p/pkg/a.py", "\"\"\"from .b import B (a docstring)\"\"\"\nfrom .b import B\nA = 1\n"),
            ("p/pkg/b.py", "def f():\n    from pkg.a import A\n"),
        ]);
        let graph = python_imports(&files, "p/pkg", "pkg");
        assert_eq!(circles(&graph), vec![vec!["p/pkg/a.py".to_owned(), "p/pkg/b.py".to_owned()]]);
    }

    #[test]
    fn dependencies_are_read_from_the_building_sections_only() {
        let toml = "[dependencies]\nfaer.workspace = true\nserde = \"1\"\n\n[dev-dependencies]\ntokio.workspace = true\n[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n";
        let names: Vec<String> = dependencies(toml).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["faer", "serde", "libc"]);
    }

    #[test]
    fn an_undocumented_pub_fn_is_named() {
        let text = "/// Documented.\npub fn a() {}\n\n#[must_use]\npub const fn b() {}\n/// Documented,\n#[inline]\npub fn c() {}\npub(crate) fn d() {}\n";
        assert_eq!(undocumented_pub_fns(text), vec![5]);
    }

    #[test]
    fn words_are_whole() {
        assert_eq!(word_lines("use axum::Json;\nlet axumish = 1;\n", "axum"), vec![1]);
    }
}
